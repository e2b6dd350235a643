"""numba flags in one place (STYLE: stumpy keeps them in one config module).

``fastmath`` lets LLVM reassociate reductions (dot products vectorise) but keeps
NaN/inf semantics ('nnan'/'ninf' are left out) so divergence stays detectable.

Also: numba's cache files get a lock (``_lock_numba_caches``, below), tux2's own
cached functions keep their machine code in the kernel cache directory, not in the
installed package (``_cache_outside_the_package``), and loading them from numba's
cache skips the compiler's registries (``_quick_cache_loads``, below).
"""
import fcntl
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


# numba names a new overload's data file by the first number its index does not list,
# reading the index, then writing it and the data, unlocked: two processes compiling two
# signatures of one function at once both take ``….1.nbc``, and the index can then name
# the other signature's machine code (seen: workers and tests compiling in parallel; a
# wrong record stride, NaN, heap corruption). Each cache's index file gets an flock:
# exclusive while an overload is saved, shared while one is loaded. For every numba
# cache of the process (tux2's loops and @njit(cache=True) helpers): each tux2 module
# with cached numba functions imports this one, directly or through tux2.compile.
def _locked(method, mode):
    def call(self, *args, **kwargs):
        try:
            fd = os.open(self._index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:                           # an unwritable cache directory: numba copes as before
            return method(self, *args, **kwargs)
        try:
            fcntl.flock(fd, mode)
            return method(self, *args, **kwargs)
        finally:
            os.close(fd)                          # releases the lock
    call.__wrapped__ = method
    return call


def _lock_numba_caches():
    from numba.core.caching import IndexDataCacheFile as F
    if hasattr(F, "save") and hasattr(F, "load") and not hasattr(F.save, "__wrapped__"):
        F.save = _locked(F.save, fcntl.LOCK_EX)
        F.load = _locked(F.load, fcntl.LOCK_SH)


_lock_numba_caches()


# numba keeps a cached function's machine code beside its source (__pycache__) when it
# can write there: for an installed tux2, inside site-packages, in files pip does not
# own. The README's two lines (`pip install .`, then `pip install -e .`) then left
# site-packages/tux2/ holding only that __pycache__: a namespace package that hid the
# editable install (`import tux2` gave an empty module). tux2's own modules' functions
# keep it under the kernel cache directory instead, in numba/ (one directory per source
# directory, as numba names them under NUMBA_CACHE_DIR, which still wins when set). With
# the cache directory off (TUX2_CACHE_DIR=""), numba's own places as before.
def _cache_outside_the_package():
    from numba.core import caching
    base = getattr(caching, "UserProvidedCacheLocator", None) or getattr(caching, "_UserProvidedCacheLocator", None)
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if base is None or not isinstance(getattr(impl, "_locator_classes", None), list) \
            or any(getattr(c, "tux2", False) for c in impl._locator_classes):
        return

    class KernelCacheLocator(base):
        tux2 = True

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(os.path.abspath(default_cache_dir()), "numba",
                                            self.get_suitable_cache_subpath(py_file))

        def get_source_stamp(self):
            # tux2.io's number parsers are inlined into other modules' kernels (tux2.tables):
            # an edit of io.py alone must not leave those kernels' old machine code in use
            io_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "io.py")
            st = os.stat(io_py) if os.path.exists(io_py) else None
            return (super().get_source_stamp(), st and (st.st_mtime, st.st_size))

        @classmethod
        def from_function(cls, py_func, py_file):
            module = getattr(py_func, "__module__", None) or ""
            if _numba_config.CACHE_DIR or not default_cache_dir() or not (module == "tux2"
                                                                         or module.startswith("tux2.")):
                return None
            # the directory is made when numba first saves there, not at import: a run
            # with --no-cache (read after the imports) saves nothing (_quick_cache_loads)
            return cls(py_func, py_file) if os.path.exists(py_file) else None

    impl._locator_classes.insert(0, KernelCacheLocator)


_HELPERS = {"cached": True}


def cache_helpers(on):
    """Whether tux2's own numba functions are loaded from and saved to numba's cache
    in this process (off: ``tux2 run --no-cache``, see tux2.compile.set_cache_dir)."""
    _HELPERS["cached"] = bool(on)


_cache_outside_the_package()


# Those files of tux2's helpers have no manifest (the generated loops' do: tux2.compile),
# and numba trusts what it reads: 8 bytes overwritten in one made every later run stop
# with a traceback (LLVM "bitcode parsing error"), or could have run damaged machine
# code. Each data file there gets a .sha256 beside it when numba writes it; one that does
# not match (or has none) is a miss, compiled again and written over, and an index that
# cannot be read is an empty one.
def _checked_helper_files():
    import hashlib
    from numba.core.caching import IndexDataCacheFile as F
    if not all(hasattr(F, a) for a in ("_load_index", "_save_data", "_load_data", "_data_path")) \
            or hasattr(F._load_data, "__wrapped__"):
        return
    load_index, save_data, load_data = F._load_index, F._save_data, F._load_data

    def ours(self):
        root = default_cache_dir()
        return bool(root) and str(getattr(self, "_cache_path", "")).startswith(
            os.path.join(os.path.abspath(root), "numba") + os.sep)

    def digest(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def _load_index(self):
        try:
            return load_index(self)
        except Exception:
            if not ours(self):
                raise
            return {}                             # damaged: written afresh by the next save

    def _save_data(self, name, data):
        save_data(self, name, data)
        if ours(self):
            path = self._data_path(name)
            tmp = f"{path}.sha256.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(digest(path))
            os.replace(tmp, path + ".sha256")

    def _load_data(self, name):
        if ours(self):
            path = self._data_path(name)
            with open(path + ".sha256") as f:    # none: OSError, which numba's load takes for a miss
                if f.read().strip() != digest(path):
                    raise OSError(f"{path} does not match its sha256")
        return load_data(self, name)

    _load_data.__wrapped__ = load_data
    F._load_index, F._save_data, F._load_data = _load_index, _save_data, _load_data


_checked_helper_files()


# numba's Cache.load_overload first refreshes the target context: it imports and
# registers everything numba's compiler can lower (~0.3 s of imports, most of a warm
# `tux2 run`'s start), though an overload rebuilt from its cache file needs only the
# runtime (NRT) its machine code calls. For tux2's functions (its modules and generated
# loops, all named tux2…) a cache load initialises the runtime alone; anything that has
# to be compiled still gets the full refresh from numba's compiler, and other code's
# cached functions load as numba loads them. Older or newer numba without these
# methods keeps its own load. A cache file that cannot be loaded (damaged on disk) is a
# miss for tux2's functions: compiled again and saved over it, where numba's own load
# raised, in every later run (LLVM "bitcode parsing error"), with no flag to get past it.
def _quick_cache_loads():
    from numba.core.caching import Cache
    from numba.core.runtime import rtsys
    full = Cache.load_overload
    if hasattr(full, "__wrapped__") or not all(hasattr(Cache, a) for a in (
            "_load_overload", "_guard_against_spurious_io_errors")) or not hasattr(rtsys, "initialize"):
        return

    def tux2s(cache):
        return (getattr(getattr(cache, "_py_func", None), "__module__", None) or "").startswith("tux2")

    def load_overload(self, sig, target_context):
        if not tux2s(self):
            return full(self, sig, target_context)
        if not _HELPERS["cached"]:
            return None
        rtsys.initialize(target_context)
        try:
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        except Exception:       # a damaged cache file (LLVM bitcode, pickle): a miss, compiled and saved over it
            return None
    load_overload.__wrapped__ = full
    Cache.load_overload = load_overload
    save = Cache.save_overload

    def save_overload(self, sig, data):
        if not tux2s(self):
            return save(self, sig, data)
        if not _HELPERS["cached"]:
            return None
        try:
            return save(self, sig, data)
        except OSError:             # a cache directory that cannot be written (a file in its place): not kept
            _HELPERS["unwritable"] = True
            return None
    Cache.save_overload = save_overload


_quick_cache_loads()
