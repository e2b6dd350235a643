"""numba flags in one place (STYLE: stumpy keeps them in one config module).

``fastmath`` lets LLVM reassociate reductions (dot products vectorise) but keeps
NaN/inf semantics ('nnan'/'ninf' are left out) so divergence stays detectable.
"""
import os

from numba.core import config as _numba_config

FASTMATH = {"reassoc", "contract", "nsz", "arcp"}

JIT = dict(fastmath=FASTMATH, boundscheck=False, error_model="numpy", nogil=True)



def default_cache_dir():
    """Where compiled kernels are kept across processes: $TUX2_CACHE_DIR, else the
    user cache directory ($XDG_CACHE_HOME/tux2 or ~/.cache/tux2). TUX2_CACHE_DIR=""
    (empty) disables the cache."""
    if "TUX2_CACHE_DIR" in os.environ:
        return os.environ["TUX2_CACHE_DIR"] or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tux2")


def cores() -> int:
    """The cores this process may run on (its affinity mask), the default for threads."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def jit_disabled() -> bool:
    """True when numba runs functions as plain Python (the reference mode)."""
    return bool(_numba_config.DISABLE_JIT)
