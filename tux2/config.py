"""numba flags in one place (STYLE: stumpy keeps them in one config module).

``fastmath`` lets LLVM reassociate reductions (dot products vectorise) but keeps
NaN/inf semantics ('nnan'/'ninf' are left out) so divergence stays detectable.
"""
import os

from numba.core import config as _numba_config

FASTMATH = {"reassoc", "contract", "nsz", "arcp"}

JIT = dict(fastmath=FASTMATH, boundscheck=False, error_model="numpy", nogil=True)

# Leaf kernels that do not close over user code may be cached on disk.
CACHE = os.environ.get("TUX2_NUMBA_CACHE", "1") != "0"


def jit_disabled() -> bool:
    """True when numba runs functions as plain Python (the reference mode)."""
    return bool(_numba_config.DISABLE_JIT)
