"""UDFs → numba kernels (one kernel, many drivers: the loops live here once).

User UDFs are plain Python. Each is compiled with numba and called from a
generated edge or vertex loop; LLVM inlines it. Under NUMBA_DISABLE_JIT=1 the
same loops and UDFs run as Python over ``np.recarray`` views: the reference.
"""
import ast
import atexit
import contextlib
import dis
import hashlib
import inspect
import json
import os
import shutil
import sys
import textwrap
import threading
import time
import types
import weakref

import numba
import numpy as np
from numba import njit
from llvmlite import ir
from numba.core import event
from numba.core import types as nbtypes
from numba.core.caching import NullCache
from numba.core.errors import NumbaError
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

from tux2.config import _HELPERS, JIT, cache_helpers, cores, default_cache_dir, jit_disabled
from tux2.errors import UDFCompileError
from tux2.version import __version__


def jit_udf(fn, tag=""):
    """numba-compile a user function for one loop, under its name plus ``tag`` (a digest
    of the UDF and the loop's record types). numba names compiled code by the
    function's name, a counter and its argument types, whose record types are numbered
    by another counter; both restart in every process. A loop loaded from the cache
    calls its UDF by that name, and when two loaded loops name different code alike the
    process keeps the first: seen, an MF loop for k = 4 ran the UDF compiled for k = 3
    (NaN). With the tag in the name, alike names are alike code.

    Inlined by numba (``inline="always"``), so each loop's code is one unit: called
    across libraries, the UDF was optimised (fastmath reassociation) with the loop when
    this process compiled it and apart when numba loaded the loop from its cache, and a
    mini-batch MF run compiling its loops ended ~2e-9 off the RMSE of every later run."""
    py = getattr(fn, "py_func", fn)
    if not tag or not isinstance(py, types.FunctionType):
        return fn if isinstance(fn, CPUDispatcher) else njit(**JIT)(fn)
    named = types.FunctionType(py.__code__, py.__globals__, py.__name__, py.__defaults__, py.__closure__)
    named.__kwdefaults__, named.__module__ = py.__kwdefaults__, py.__module__
    named.__qualname__ = f"{py.__qualname__}__{tag}"
    options = {k: v for k, v in (fn.targetoptions if isinstance(fn, CPUDispatcher) else JIT).items()
               if k != "nopython"}
    return njit(inline="always", **options)(named)


# ---------------------------------------------------------------- compile once per machine
# A loop that calls a UDF cannot use numba's cache as a closure over the UDF. So each
# loop is generated as source text, written once to a file under the cache directory
# named by a hash of everything its machine code depends on (the text, the UDF's
# fingerprint, the record dtypes, numba/tux2/Python versions), and exec'd from that
# real file with the UDF as a global: numba's file-based cache then applies, and a
# second process with the same program loads the loops instead of compiling them.
# numba's cache files are trusted only if their sha256 matches the manifest written
# after this process compiled them; anything else is deleted and compiled afresh.
# Every changed UDF or tux2 version makes new loops, so the cache is trimmed as Go's
# build cache is: a loop's directory time says when it was last used (updated at most
# once an hour), and at most once a day the loops unused for KEEP_DAYS are deleted.

_CACHE = {"dir": default_cache_dir()}
_KEYS = weakref.WeakKeyDictionary()     # cached loop → (key, directory of its files)
KEEP_DAYS = 5                           # a loop unused this long is deleted (_trim)


def set_cache_dir(path):
    """Keep compiled loops under ``path`` (None: compile them in every process, as
    ``tux2 run --no-cache`` does, and then tux2's numba helpers are neither loaded
    from nor saved to numba's cache either)."""
    _CACHE["dir"] = path
    cache_helpers(path is not None)


def cache_dir():
    return _CACHE["dir"]


def cache_unwritable():
    """The cache directory when a loop or a helper could not be kept there in this
    process (read-only, or a file in its place: every run compiles), else None."""
    if _CACHE["dir"] is not None and (_CACHE.get("unwritable") == _CACHE["dir"] or _HELPERS.get("unwritable")):
        return _CACHE["dir"]
    return None


_FILES = {}
SETTLED = 2.0       # seconds after which a file's mtime tells its edits apart (clock ticks are 1-4 ms)


def _file_digest(path):
    """sha256 of the file at ``path``, remembered by (path, mtime, size) once the file is
    ``SETTLED``: the clock that stamps mtimes may tick only every few ms, and a file
    rewritten within one tick at the same size (a module generated twice) looked unchanged."""
    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key in _FILES:
        return _FILES[key]
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if time.time_ns() - st.st_mtime_ns > SETTLED * 1e9:
        _FILES[key] = digest
    return digest


def _code_digest():
    """One digest of every source file of tux2 and its built-in UDFs: the loops are
    called by the engine, layout and stages with arrays those modules shape, so a
    cache filled by other code (another checkout, an edited install) is never used."""
    import glob
    import importlib.util
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    spec = importlib.util.find_spec("tux2.udfs")          # udfs/ beside tux2/ in a checkout
    dirs += list(spec.submodule_search_locations or []) if spec is not None else []
    paths = sorted({p for d in dirs for p in glob.glob(os.path.join(d, "**", "*.py"), recursive=True)})
    return hashlib.sha256("".join(f"{os.path.basename(p)} {_file_digest(p)}\n" for p in paths).encode()).hexdigest()


def _names(code):
    """Global (and attribute) names a code object and its nested functions use."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def fingerprint(obj, seen=None):
    """Text standing for what ``obj`` contributes to compiled code: for a function, its
    module's source file (hash), qualified name, defaults, closure cells and the
    globals it names, recursively; numbers, strings, dtypes and arrays by value.
    None when that cannot be known (a function without a source file, an object of
    another kind): such a UDF's loops are compiled in every process."""
    seen = set() if seen is None else seen
    if isinstance(obj, (type(None), bool, int, float, complex, str, bytes, np.generic)):
        return f"{type(obj).__name__}:{obj!r}"
    if isinstance(obj, np.dtype):
        return f"dtype:{obj.descr!r}:{obj.itemsize}"
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            return None
        return f"array:{obj.dtype.str}:{obj.shape}:{hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest()}"
    if isinstance(obj, (tuple, list)):
        parts = [fingerprint(x, seen) for x in obj]
        return None if None in parts else f"{type(obj).__name__}({','.join(parts)})"
    if isinstance(obj, types.ModuleType):
        f = getattr(obj, "__file__", None)
        return f"module:{obj.__name__}:{_file_digest(f) if f and f.endswith('.py') else ''}"
    if isinstance(obj, CPUDispatcher):
        inner = fingerprint(obj.py_func, seen)
        return None if inner is None else f"jit{_options(obj.targetoptions)}:{inner}"
    if isinstance(obj, numba.core.types.Type):
        return f"numba:{obj}"
    if not isinstance(obj, types.FunctionType):
        return None
    name = f"{obj.__module__}.{obj.__qualname__}:{obj.__code__.co_firstlineno}"
    if obj in seen:
        return f"fn:{name}"
    seen.add(obj)
    digest = _file_digest(obj.__code__.co_filename)
    if digest is None:
        return None
    parts = [f"fn:{name}:{digest}", fingerprint(obj.__defaults__, seen)]
    for cell in obj.__closure__ or ():
        try:
            parts.append(fingerprint(cell.cell_contents, seen))
        except ValueError:              # an empty cell
            parts.append("empty")
    for g in sorted(_names(obj.__code__)):
        if g in obj.__globals__:
            parts.append(f"{g}={fingerprint(obj.__globals__[g], seen)}")
            if parts[-1].endswith("=None") and obj.__globals__[g] is not None:
                return None
    return None if None in parts else "\n".join(parts)


def _options(opts):
    """numba options as text that is the same in every process (sets sorted)."""
    return repr(sorted((k, sorted(v) if isinstance(v, (set, frozenset)) else v) for k, v in opts.items()))


_ENV = []


def _environment():
    """What every loop's machine code depends on besides its own text and UDFs."""
    if not _ENV:
        _ENV.append(f"numba {numba.__version__}, numpy {np.__version__}, python {sys.version}, "
                    f"tux2 {__version__} {_code_digest()}, {_options(JIT)}, "
                    f"{numba.config.CPU_NAME or ''} {numba.config.CPU_FEATURES or ''}")
    return _ENV[0]


def _kernel(kind, src, name, env, deps):
    """Compile the loop ``name`` that ``src`` defines, with ``env`` as its globals.
    ``deps``: fingerprints of the compiled code it calls (any None: not cached)."""
    env = {"np": np, **env}
    root = _CACHE["dir"]
    if root is not None and not _utf8(root):     # numba's errors, raised and caught while it types a loop, encode the
        _CACHE["unwritable"], root = root, None  # source path as UTF-8: 'numba could not compile UDF …'. As unwritable
    if root is not None and not jit_disabled() and None not in deps:
        key = hashlib.sha256("\n\0".join([kind, src, _environment(), *deps]).encode()).hexdigest()
        where = os.path.join(root, "kernels", f"{kind}-{key[:40]}")
        try:
            path = _source_file(where, src)
            # a module numba can import again when it loads the loop's environment
            mod = types.ModuleType(f"tux2_kernel_{kind}_{key[:40]}")
            mod.__file__ = path
            mod.__dict__.update(env)
            sys.modules[mod.__name__] = mod
            exec(compile(src, path, "exec"), mod.__dict__)
            k = njit(cache=True, **JIT)(mod.__dict__[name])
            if k._cache.cache_path is not None and os.path.isdir(k._cache.cache_path):
                _verify(where, k._cache.cache_path)
                _mark_used(where)
                with _SEAL_LOCK:
                    _KEYS[k] = (key, where)
                return k
        except (OSError, RuntimeError):  # an unwritable cache directory (numba finds no locator): compile here only
            _CACHE["unwritable"] = root
    exec(compile(src, f"<tux2 {kind} loop>", "exec"), env)
    return njit(**JIT)(env[name])


def _utf8(path):
    """Whether ``path`` is UTF-8 (a name of other bytes decodes to lone surrogates, 'cache\\udcff')."""
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _atomic_write(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _source_file(where, src):
    """The loop's source file under ``where``, written unless it is there with this text."""
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, "kernel.py")
    try:
        with open(path) as f:
            same = f.read() == src
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        _atomic_write(path, src)        # a new mtime: numba's index of the old text is void
    return path


def _verify(where, numba_dir):
    """Delete numba's cache files for this loop unless each matches the manifest."""
    try:
        with open(os.path.join(where, "manifest.json")) as f:
            sums = json.load(f)
    except (OSError, ValueError):
        sums = {}
    files = sorted(n for n in os.listdir(numba_dir) if n.endswith((".nbi", ".nbc")))
    if all(isinstance(sums, dict) and sums.get(n) == _sha(os.path.join(numba_dir, n)) for n in files):
        with contextlib.suppress(OSError):    # sealed as they are: a run that compiles nothing rewrites nothing
            _SEALED[where] = [(n, os.stat(os.path.join(numba_dir, n)).st_mtime_ns) for n in files]
        return
    for n in files:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(numba_dir, n))
    with contextlib.suppress(OSError):
        os.remove(os.path.join(where, "manifest.json"))


def _sha(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


_SEALED = {}                            # loop directory → listing its manifest was made from


_SEAL_LOCK = threading.Lock()


def _seal():
    """Record the sha256 of numba's files for every cached loop of this process (the
    only files a later process will load): after each compile_call (which may also
    compile the loops a fused loop calls) and at exit."""
    with _SEAL_LOCK:
        kernels = list(_KEYS.items())
    for kernel, (_, where) in kernels:
        numba_dir = kernel._cache.cache_path
        with contextlib.suppress(OSError):
            names = sorted(n for n in os.listdir(numba_dir) if n.endswith((".nbi", ".nbc")))
            listing = [(n, os.stat(os.path.join(numba_dir, n)).st_mtime_ns) for n in names]
            if _SEALED.get(where) == listing:
                continue
            sums = {n: _sha(os.path.join(numba_dir, n)) for n in names}
            _atomic_write(os.path.join(where, "manifest.json"), json.dumps(sums, sort_keys=True))
            _SEALED[where] = listing


def _mark_used(where):
    """The loop in ``where`` is used now: its directory's time says so, kept from
    _trim (written once an hour at most, so a warm run rewrites next to nothing)."""
    with contextlib.suppress(OSError):
        if time.time() - os.stat(where).st_mtime > 3600:
            os.utime(where)


def _trim(now=None):
    """Delete the cached loops unused for KEEP_DAYS days, at most once a day (the
    time of ``kernels/trimmed``), in a process that used the cache."""
    now = time.time() if now is None else now
    kernels = os.path.join(_CACHE["dir"] or "", "kernels")
    stamp = os.path.join(kernels, "trimmed")
    try:
        if 0 <= now - os.stat(stamp).st_mtime < 86400:         # (a stamp from the future does not count)
            return
    except OSError:
        pass
    try:
        open(stamp, "a").close()
        os.utime(stamp, (now, now))
        entries = list(os.scandir(kernels))
    except OSError:                     # a read-only or vanished cache: nothing to trim here
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False) and now - os.stat(entry.path).st_mtime > KEEP_DAYS * 86400:
                shutil.rmtree(entry.path, ignore_errors=True)


def _at_exit():
    _seal()
    if _KEYS and _CACHE["dir"] is not None:
        _trim()


atexit.register(_at_exit)


def _forget(kernel):
    """Delete a loop's cache files and compile it without the cache in this process."""
    with _SEAL_LOCK:
        _KEYS.pop(kernel)
    numba_dir = kernel._cache.cache_path
    for n in os.listdir(numba_dir):
        if n.endswith((".nbi", ".nbc")):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(numba_dir, n))
    kernel._cache = NullCache()


class _Compiles(event.Listener):
    n = 0

    def __init__(self, first=None):
        self.first = first

    def on_start(self, ev):
        self.n += 1
        if self.n == 1 and self.first is not None:
            self.first()

    def on_end(self, ev):
        pass


@contextlib.contextmanager
def counting_compiles(first=None):
    """``with counting_compiles() as c:``: c.n functions numba compiled inside the block
    (loops, UDFs, helpers; not those loaded from the kernel cache). ``first()`` is
    called when the first of them starts compiling (a run's note that it compiles)."""
    counter = _Compiles(first)
    with event.install_listener("numba:compile", counter):
        yield counter


_MEMO = weakref.WeakKeyDictionary()   # udf → {kernel kind: compiled loop}
_FUSED = {}                           # (steps, accumulator dtypes) → fused loop


def _udf_fingerprint(udf):
    try:
        per = _MEMO.setdefault(udf, {})
    except TypeError:
        return fingerprint(udf)
    if "fingerprint" not in per:
        per["fingerprint"] = fingerprint(udf)
    return per["fingerprint"]


def _memo(kind):
    """Build a UDF's kernel once per process: engines of the same program (every
    test, every grid point of a bench) reuse numba's compiled specialisations.
    ``dtypes``: the record dtypes the loop will see. A loop per set of dtypes keeps
    numba from passing one record type where it compiled another (record
    subtyping, an experimental numba feature). As with any numba function, globals
    a UDF reads are frozen when it compiles. The decorated function returns the
    loop's (name, source) for the UDF (whose reads decide what it prefetches); the
    loop calls the UDF as ``f``."""
    def wrap(template):
        def build(udf, dtypes):
            name, src = template(udf)
            deps = [_udf_fingerprint(udf), *(fingerprint(d) for d in dtypes)]
            tag = hashlib.sha256("\0".join(map(str, deps)).encode()).hexdigest()[:16]
            return _kernel(kind, src, name, {"f": jit_udf(udf, tag), "append_run": append_run,
                                             "prefetch": _no_prefetch if jit_disabled() else prefetch}, deps)

        def get(udf, dtypes=()):
            try:
                per = _MEMO.setdefault(udf, {})
            except TypeError:              # not weak-referenceable: no memo
                return build(udf, dtypes)
            key = (kind, jit_disabled(), cache_dir(), dtypes)
            if key not in per:
                per[key] = build(udf, dtypes)
            return per[key]
        get.__doc__, get.__name__ = template.__doc__, template.__name__
        return get
    return wrap


PREFETCH_LINES = 4      # a record's first 256 bytes
PREFETCH_AHEAD = 16     # edges: the vertex records of edge e + 16 are asked for at edge e


@intrinsic
def prefetch(typingctx, arr, idx):
    """Ask the CPU to bring the record ``arr[idx]`` (its first PREFETCH_LINES cache
    lines) into cache: a hint, which never faults and changes no value. An edge
    loop's vertex reads are random; with a UDF of any length between them (an exp is
    a call) the CPU has few of them in flight, and asking ahead restores that: BlockPG's
    gradient over 12.7 M edges ran ~2.5x faster in a loop with it."""
    if not isinstance(arr, nbtypes.Array) or not isinstance(idx, nbtypes.Integer):
        return None

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, nbtypes.intp)
        i8p = ir.IntType(8).as_pointer()
        base = builder.bitcast(builder.gep(ary.data, [i]), i8p)
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(),
                                                                                    [i8p, i32, i32, i32]))
        size = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
        for off in range(0, min(size, 64 * PREFETCH_LINES), 64):
            addr = builder.gep(base, [ir.Constant(ir.IntType(64), off)])
            builder.call(fn, [addr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return nbtypes.void(arr, idx), codegen


def _no_prefetch(arr, idx):
    """prefetch without the JIT (NUMBA_DISABLE_JIT=1): nothing to ask for."""


def _reads(udf, n):
    """Which of the first ``n`` parameters of ``udf`` its body reads (all when its
    code cannot be inspected)."""
    code = getattr(getattr(udf, "py_func", udf), "__code__", None)
    if code is None or code.co_argcount < n:
        return set(range(n))
    used = {ins.argval for ins in dis.get_instructions(code) if ins.opname.startswith(("LOAD_FAST", "LOAD_DEREF"))}
    return {k for k, name in enumerate(code.co_varnames[:n]) if name in used or name in code.co_cellvars}


def _ahead(udf, records, upcoming):
    """A loop's lines asking for the records ``udf`` will read PREFETCH_AHEAD
    iterations on: ``upcoming`` (an expression) sets q, then one prefetch per
    (parameter position, array, index of q) in ``records`` whose parameter the UDF
    reads; no lines when it reads none of them."""
    reads = _reads(udf, max(k for k, _, _ in records) + 1)
    asks = [f"prefetch({arr}, {index})" for k, arr, index in records if k in reads]
    return [f"q = {upcoming}", *asks] if asks else []


@_memo("exchange")
def exchange_kernel(udf):
    """Loop ``udf(u, v, e, a_u, a_v, ctx)`` over segments [los[k], his[k]) of
    positions in an edge order (``perm`` maps them to storage; empty: identity),
    prefetching the records the UDF reads of the vertices PREFETCH_AHEAD edges on."""
    records = ((0, "A", "ea[q]"), (1, "B", "eb[q]"), (3, "AA", "ea[q]"), (4, "AB", "eb[q]"))

    def loop(position, index):
        ahead = _ahead(udf, records, position(f"min({index} + {PREFETCH_AHEAD}, hi - 1)"))
        lines = [f"for {index} in range(los[k], hi):", *(f"    {a}" for a in ahead),
                 *([f"    pos = {position(index)}"] if index != "pos" else []),
                 "    i = ea[pos]", "    j = eb[pos]", "    f(A[i], B[j], E[pos], AA[i], AB[j], ctx)"]
        return "".join(f"            {line}\n" for line in lines)
    return "exchange", f"""
def exchange(los, his, n_seg, perm, ea, eb, A, B, E, AA, AB, ctx_arr):
    ctx = ctx_arr[0]
    for k in range(n_seg):
        hi = his[k]
        if perm.shape[0] == 0:
{loop(lambda x: x, "pos")}        else:
{loop(lambda x: f"perm[{x}]", "t")}"""


@_memo("active")
def active_kernel(udf):
    """Segments of a vertex mini-batch's edges whose vertex passes ``udf(v, ctx)``:
    runs k in [k_lo, k_hi) (run k = one vertex's edges, positions
    [run_start[k], run_start[k+1])); adjacent selected runs merge into one segment."""
    return "select", """
def select(k_lo, k_hi, run_start, run_lid, V, ctx_arr, los, his):
    ctx = ctx_arr[0]
    n = 0
    for k in range(k_lo, k_hi):
        if f(V[run_lid[k]], ctx):
            n = append_run(k, run_start, los, his, n)
    return n
"""


@njit(cache=True, nogil=True, boundscheck=False)
def append_run(k, run_start, los, his, n):
    """Add run k (positions [run_start[k], run_start[k + 1])) to the n segments in
    los/his, merged with the last when adjacent; returns the new count."""
    if n > 0 and his[n - 1] == run_start[k]:
        his[n - 1] = run_start[k + 1]
        return n
    los[n] = run_start[k]
    his[n] = run_start[k + 1]
    return n + 1


@_memo("reselect")
def reselect_kernel(udf):
    """The segments [los[i], his[i]), i < n, of a clock (whole runs of one vertex
    each, see active_kernel) narrowed to the runs whose vertex passes ``udf(v, ctx)``
    now, into los2/his2 (adjacent runs merged); returns their count."""
    return "reselect", """
def reselect(los, his, n, run_start, run_lid, V, ctx_arr, los2, his2):
    ctx = ctx_arr[0]
    m = 0
    for i in range(n):
        k = np.searchsorted(run_start, los[i])
        while run_start[k] < his[i]:
            if f(V[run_lid[k]], ctx):
                m = append_run(k, run_start, los2, his2, m)
            k += 1
    return m
"""


@_memo("apply")
def apply_kernel(udf):
    """Loop ``udf(v, a, ctx)`` over the given local master indices (in the order the
    clock touched them: random), prefetching the records the UDF reads PREFETCH_AHEAD on."""
    ahead = _ahead(udf, ((0, "V", "q"), (1, "Acc", "q")), f"idx[min(t + {PREFETCH_AHEAD}, n - 1)]")
    body = "".join(f"        {line}\n" for line in [*ahead, "i = idx[t]", "f(V[i], Acc[i], ctx)"])
    return "apply", f"""
def apply(idx, V, Acc, ctx_arr):
    ctx = ctx_arr[0]
    n = idx.shape[0]
    for t in range(n):
{body}"""


@_memo("aggregate")
def aggregate_kernel(udf):
    """Loop ``udf(v, ctx)`` over local masters 0 … n_master−1."""
    return "aggregate", """
def aggregate(n_master, V, ctx_arr):
    ctx = ctx_arr[0]
    for i in range(n_master):
        f(V[i], ctx)
"""


@_memo("combine")
def combine_kernel(udf):
    """``udf(a, b)`` on two one-record contexts."""
    return "combine", """
def combine(a_arr, b_arr):
    f(a_arr[0], b_arr[0])
"""


@_memo("finalize")
def finalize_kernel(udf):
    """``udf(ctx)`` on a one-record context."""
    return "finalize", """
def finalize(ctx_arr):
    f(ctx_arr[0])
"""


def minibatch_kernel(steps, accum_dtypes, select=None, enumerated=0):
    """One compiled loop over a run of mini-batches, for a partition that owns every
    vertex it touches (one partition, nothing replicated): what the engine does per
    clock — each Exchange, then the touched-vertex bookkeeping and each Apply — with
    no return to Python between mini-batches.

    ``steps``: ("exchange", kernel, mark types, reselect kernel or None) or ("apply",
    type, kernel or None), in stage order; an Exchange with a reselect kernel (its
    own active predicate) visits the segments it keeps (``los2``/``his2``: room).
    ``accum_dtypes``: the two types' accumulator dtypes (an Apply zeroes its
    vertices' accumulators). Mini-batch c covers positions
    [pos[0, c], pos[1, c]) of the order ``perm``; with ``select`` (the mini-batch's
    active_kernel, over vertices of type ``enumerated``) it covers runs
    [pos[0, c], pos[1, c]) of the engine's per-vertex runs (``run_start``,
    ``run_lid``), and its Exchanges visit the segments of the vertices the predicate
    passes at the start of the clock, as unfused clocks do. ``los``/``his``: room for
    a clock's segments (one without ``select``). Returns the touched counts and stamp epochs of both types, which the
    caller stores back.
    """
    key = (tuple(steps), tuple(accum_dtypes), select, enumerated, jit_disabled(), cache_dir())
    if key not in _FUSED:
        _FUSED[key] = _minibatch_kernel(steps, accum_dtypes, select, enumerated)
    return _FUSED[key]


def _minibatch_kernel(steps, accum_dtypes, select, enumerated):
    body, env, deps = [], {"mark_touched": mark_touched}, [fingerprint(d) for d in accum_dtypes]
    for k, step in enumerate(steps):
        if step[0] == "exchange":
            _, kern, marks, again = step
            env[f"k{k}"] = kern
            deps.append(_KEYS.get(kern, (None,))[0])
            lo, hi, n = "los", "his", "ns"
            if again is not None:          # its own predicate, now
                env[f"r{k}"] = again
                deps.append(_KEYS.get(again, (None,))[0])
                lo, hi, n = "los2", "his2", f"ns{k}"
                body += [f"{n} = 0", "if ns > 0:",
                         f"    {n} = r{k}(los, his, ns, run_start, run_lid, {'AB'[enumerated]}, ctx_arr, los2, his2)"]
            body += [f"if {n} > 0:", f"    k{k}({lo}, {hi}, {n}, perm, ea, eb, A, B, E, AA, AB, ctx_arr)"]
            for t in marks:
                body.append(f"    n{t} = mark_touched({lo}, {hi}, {n}, perm, {'eb' if t else 'ea'}, s{t}, ep{t}, "
                            f"tch{t}, n{t})")
        else:
            _, t, kern = step
            V, ACC = ("B", "AB") if t else ("A", "AA")
            if kern is not None:
                env[f"k{k}"] = kern
                deps.append(_KEYS.get(kern, (None,))[0])
                body += [f"if n{t} > 0:", f"    k{k}(tch{t}[:n{t}], {V}, {ACC}, ctx_arr)"]
            names = [f for f in accum_dtypes[t].names if f != "_"] if accum_dtypes[t].names else []
            if names:
                body += [f"for q in range(n{t}):", f"    r = {ACC}[tch{t}[q]]"]
                body += [f"    r.{f}{'[:]' if accum_dtypes[t][f].shape else ''} = 0" for f in names]
            body += [f"ep{t} += 1", f"n{t} = 0"]
    if select is None:
        clock = ["los[0] = pos[0, c]", "his[0] = pos[1, c]", "ns = 1 if his[0] > los[0] else 0"]
    else:
        env["select"] = select
        deps.append(_KEYS.get(select, (None,))[0])
        clock = [f"ns = select(pos[0, c], pos[1, c], run_start, run_lid, {'AB'[enumerated]}, ctx_arr, los, his)"]
    src = ("def fused(c0, c1, pos, perm, ea, eb, A, B, E, AA, AB, ctx_arr, s0, tch0, n0, ep0, s1, tch1, n1, ep1, "
           "run_start, run_lid, los, his, los2, his2):\n" +
           "    for c in range(c0, c1):\n" + "".join(f"        {line}\n" for line in clock + body) +
           "    return n0, ep0, n1, ep1\n")
    return _kernel("fused", src, "fused", env, deps)


@njit(cache=True, nogil=True, boundscheck=False)
def tiles_conflict(ends, stratum, tile, n):
    """The first edge (in order) whose vertex ``ends[e]`` already had an edge in another
    tile of the same stratum, or -1 (then threads may share the tiles)."""
    last_s = np.full(n, -1, np.int64)
    last_t = np.full(n, -1, np.int64)
    for e in range(ends.shape[0]):
        v = ends[e]
        if last_s[v] == stratum[e] and last_t[v] != tile[e]:
            return e
        last_s[v] = stratum[e]
        last_t[v] = tile[e]
    return -1


@njit(cache=True, nogil=True, boundscheck=False)
def ranges_waiting(starts, perm, ends, stamp, epoch, alone, out):
    """Per range [starts[i], starts[i + 1]) of an order's positions: out[i] = 1 when one
    of its edges has an endpoint ``ends[e]`` not stamped ``epoch`` that has other
    replicas (``alone`` False), whose value another worker may still be sending."""
    for i in range(starts.shape[0] - 1):
        if out[i]:
            continue
        for t in range(starts[i], starts[i + 1]):
            v = ends[t] if perm.shape[0] == 0 else ends[perm[t]]
            if stamp[v] != epoch and not alone[v]:
                out[i] = 1
                break


@njit(cache=True, nogil=True, boundscheck=False)
def mark_touched(los, his, n_seg, perm, ends, stamp, epoch, buf, count):
    """Append endpoints of the edges in the segments not yet stamped with ``epoch`` to buf."""
    for k in range(n_seg):
        for t in range(los[k], his[k]):
            i = ends[t] if perm.shape[0] == 0 else ends[perm[t]]
            if stamp[i] != epoch:
                stamp[i] = epoch
                buf[count] = i
                count += 1
    return count


@njit(cache=True, nogil=True, boundscheck=False)
def append_unstamped(ids, stamp, epoch, buf, count):
    """Append the ids not yet stamped with ``epoch`` to buf[count:] (stamping them); the new count."""
    for t in range(ids.shape[0]):
        i = ids[t]
        if stamp[i] != epoch:
            stamp[i] = epoch
            buf[count] = i
            count += 1
    return count


@njit(cache=True, nogil=True, boundscheck=False)
def _append_unmarked(ids, mark, buf, count):
    """Append the ids not yet marked to buf[count:] (marking them); the new count."""
    for t in range(ids.shape[0]):
        i = ids[t]
        if not mark[i]:
            mark[i] = True
            buf[count] = i
            count += 1
    return count


@njit(cache=True, nogil=True, boundscheck=False)
def union_positions(n, own, lids, mark, where):
    """An Apply round's masters: M = sorted unique of ``own`` ∪ ``lids`` (local
    indices < n), each lid's position in M, and per position the number of
    replicas that contributed (1 if in ``own``, +1 per lid). ``mark`` (bool, n)
    must be all False and is left so; ``where`` (n) is scratch."""
    buf = np.empty(own.shape[0] + lids.shape[0], np.int64)
    n_own = _append_unmarked(own, mark, buf, 0)
    cnt = _append_unmarked(lids, mark, buf, n_own)
    if cnt * 16 > n:                       # dense: a scan is cheaper than a sort
        M = np.empty(cnt, np.int64)
        k = 0
        for i in range(n):
            if mark[i]:
                M[k] = i
                k += 1
    else:
        M = np.sort(buf[:cnt])
    reps = np.zeros(cnt)
    for k in range(cnt):
        mark[M[k]] = False
        where[M[k]] = k
    for t in range(n_own):
        reps[where[buf[t]]] = 1.0
    pos = np.empty(lids.shape[0], np.int64)
    for t in range(lids.shape[0]):
        q = where[lids[t]]
        pos[t] = q
        reps[q] += 1.0
    return M, pos, reps


@njit(cache=True, nogil=True, boundscheck=False)
def group_by_part(part, n_parts):
    """Stable counting sort of positions by ``part`` (values < n_parts): (order,
    starts) with the positions of part q at order[starts[q]:starts[q + 1]]."""
    starts = np.zeros(n_parts + 1, np.int64)
    for t in range(part.shape[0]):
        starts[part[t] + 1] += 1
    for q in range(n_parts):
        starts[q + 1] += starts[q]
    fill = starts[:-1].copy()
    order = np.empty(part.shape[0], np.int64)
    for t in range(part.shape[0]):
        q = part[t]
        order[fill[q]] = t
        fill[q] += 1
    return order, starts


@njit(cache=True, nogil=True, boundscheck=False)
def mirror_fanout(M, mm_ptr, mm_part, mm_lid, n_parts):
    """Every mirror of the masters M, grouped by the part holding it (stable: M's
    order, then each master's mirror order): (master rows, mirror lids, starts)
    with part q's at [starts[q], starts[q + 1])."""
    n = 0
    for t in range(M.shape[0]):
        n += mm_ptr[M[t] + 1] - mm_ptr[M[t]]
    rows = np.empty(n, np.int64)
    at = np.empty(n, np.int64)
    n = 0
    for t in range(M.shape[0]):
        for k in range(mm_ptr[M[t]], mm_ptr[M[t] + 1]):
            rows[n] = M[t]
            at[n] = k
            n += 1
    order, starts = group_by_part(mm_part[at], n_parts)
    return rows[order], mm_lid[at[order]], starts


_META = {"shape", "size", "ndim", "dtype", "itemsize"}


def writes_records(udf, position, dtype):
    """Whether ``udf`` may write the record passed as its argument number
    ``position`` (whose numpy dtype is ``dtype``), by reading its source. Only
    reads are proven: a field read whole into arithmetic, a scalar element
    (``v.w[k]`` on a 1-D field), or array metadata (``v.w.shape``). Anything else
    — an assignment to it, the record or a field view passed to a call, stored in
    a name or returned — counts as a write, as does a UDF whose source cannot be
    read. The engine uses this to skip sending unchanged replica values (read
    once per UDF, position and dtype)."""
    try:
        per = _MEMO.setdefault(udf, {})
    except TypeError:
        per = {}
    key = ("writes", position, dtype)
    if key not in per:
        per[key] = _writes_records(udf, position, dtype)
    return per[key]


def _writes_records(udf, position, dtype):
    fn = getattr(udf, "py_func", udf)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        params = inspect.signature(fn).parameters
    except (OSError, TypeError, SyntaxError, ValueError):
        return True
    names = list(params)
    if position >= len(names) or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return True
    name = names[position]
    parent = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    for node in ast.walk(tree.body[0]):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if not isinstance(node.ctx, ast.Load):
            return True                    # rebinding the parameter: give up
        top, field, meta = node, None, False
        while True:
            up = parent.get(top)
            if isinstance(up, ast.Attribute) and up.value is top:
                if top is node:
                    field = up.attr
                meta = meta or up.attr in _META
                top = up
            elif isinstance(up, ast.Subscript) and up.value is top:
                top = up
            else:
                break
        if meta:
            continue
        if field is None:
            return True                    # the record itself, passed or stored
        up = parent.get(top)
        if getattr(top, "ctx", None) is not None and not isinstance(top.ctx, ast.Load):
            return True                    # an assignment target
        if isinstance(up, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
            continue
        if isinstance(up, ast.IfExp) and up.test is top:
            continue
        if isinstance(up, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Call, ast.Return, ast.keyword, ast.IfExp)) \
                and _is_element(top, node, field, dtype):
            continue                       # a scalar copied into a name, an argument or a branch value
        return True
    return False


def _is_element(top, node, field, dtype):
    """``top`` is ``node.field[i, …]`` with one plain index per dimension of the field."""
    if dtype is None or dtype.names is None or field not in dtype.names:
        return False
    ndim = len(dtype[field].shape)
    if ndim == 0:
        return isinstance(top, ast.Attribute) and top.value is node
    if not (isinstance(top, ast.Subscript) and isinstance(top.value, ast.Attribute) and top.value.value is node):
        return False
    idx = top.slice
    items = idx.elts if isinstance(idx, ast.Tuple) else [idx]
    # a slice, ``...`` or ``None`` (a new axis) gives a view of the record, not a value
    view = (ast.Slice, ast.Starred)
    return len(items) == ndim and not any(
        isinstance(i, view) or (isinstance(i, ast.Constant) and (i.value is None or i.value is Ellipsis))
        for i in items)


def view(arr):
    """What kernels receive: the array itself when compiled, a recarray view
    (attribute access on records) when running as plain Python."""
    if jit_disabled() and arr.dtype.names:
        return arr.view(np.recarray)
    return arr


def _where(fn):
    fn = getattr(fn, "py_func", fn)
    try:
        return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
    except (OSError, TypeError):
        return "<unknown location>"


def compile_call(kernel, args, stage, udf):
    """Run ``kernel(*args)`` (normally on an empty range, to compile it) and turn
    numba's typing errors into one that names the UDF and the stage."""
    try:
        try:
            out = kernel(*args)
        except Exception:
            if kernel not in _KEYS:
                raise
            _forget(kernel)                # an unusable cache entry: compile afresh, here
            out = kernel(*args)
        _seal()
        return out
    except (NumbaError, KeyError, AttributeError, TypeError, ValueError) as e:
        # the range is empty, so any failure here happens while numba types the UDF
        # (numba raises a bare KeyError for an unknown record field)
        name = getattr(udf, "__qualname__", getattr(udf, "__name__", repr(udf)))
        text = f"unknown record field {e}" if isinstance(e, KeyError) else str(e)
        msg = text.strip().splitlines()
        short = "\n    ".join(line for line in msg[:12] if line.strip())
        raise UDFCompileError(
            f"{stage.kind} stage {stage.name!r}: numba could not compile UDF {name!r} "
            f"({_where(udf)}).\n  numba says:\n    {short}\n"
            "  UDFs must be numba-compatible Python: record fields, numpy scalars and arrays, "
            "no Python objects. Run with NUMBA_DISABLE_JIT=1 to debug it as plain Python.") from None


# --------------------------------------------------------------------------- edge placement
_PLACE = {}                           # (record dtype, columns' dtypes, jit off, cache dir) → loop


PLACE_SHARED = 1 << 20       # edges from which place shares its passes out among threads


def place(dtype, columns, key, start, shift, other, like, key_like, rows_out, threads=1):
    """The scatter of a one-part transpose, writing whole edge records of ``dtype``:
    moves edge e to position ``start[key[e]]`` (then advanced; ties in global edge
    order), with its ``other`` end (in like's dtype) and its record: field f from
    column ``columns[f]`` (a 1-element array is a constant), every other field 0; or,
    with ``columns`` a record array, its whole record e (no loop over its words, no
    permutation array). Returns (the keys, in key_like's dtype, and the other ends)
    in the new order.

    In two passes when ``shift`` > 0 (a radix sort's, in the outputs' own memory):
    first by bucket key >> shift into the bucket's final range, whose ~n >> shift
    write positions stay in cache where n scattered ones do not; then each bucket by
    key through a copy of its range, a scatter that stays in cache too. On 12.7 M
    BlockPG edges over 500 k features this is ~1.3x faster than one pass, for one
    bucket's copy of extra memory. With ``threads`` > 1 (and two passes) each pass
    is shared out: the first by ranges of edges, each writing behind the earlier
    ranges' edges of every bucket (so ties keep their order), the second by ranges
    of buckets; the result does not depend on the threads."""
    record = not isinstance(columns, dict)
    cols = [columns] if record else list(columns.values())
    kernel = place_kernel(dtype, None if record else columns)
    m, n = key.shape[0], start.shape[0] - 1
    keys_out, other_out = empty(m, key_like.dtype), empty(m, like.dtype)
    nb = (n >> shift) + 1
    first = start[np.minimum(np.arange(nb + 1, dtype=np.int64) << shift, n)]     # where each bucket starts
    threads = max(1, min(int(threads), 64)) if shift > 0 and m >= PLACE_SHARED else 1
    cuts = [m * t // threads for t in range(threads + 1)]
    counts = in_threads(threads - 1, lambda t: bucket_counts(key, cuts[t], cuts[t + 1], shift, nb))
    cursors = [first[:-1].copy()]
    for c in counts:
        cursors.append(cursors[-1] + c)
    in_threads(threads, lambda t: kernel(1, cuts[t], cuts[t + 1], key, start, shift, cursors[t], other, keys_out,
                                    other_out, rows_out, *cols))
    if shift > 0:
        edges = np.searchsorted(first, [m * t // threads for t in range(threads + 1)])
        edges[0], edges[-1] = 0, nb
        in_threads(threads, lambda t: kernel(2, int(edges[t]), int(max(edges[t], edges[t + 1])), key, start, shift,
                                        first, other, keys_out, other_out, rows_out, *cols))
    return keys_out, other_out


def in_threads(count, fn):
    """[fn(0), …, fn(count − 1)], in that many threads (numba loops release the GIL)."""
    if count <= 1:
        return [fn(t) for t in range(count)]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(fn, range(count)))


@njit(cache=True, nogil=True)
def is_sorted(a):
    """Whether a[k - 1] <= a[k] throughout."""
    for k in range(1, a.shape[0]):
        if a[k] < a[k - 1]:
            return False
    return True


@njit(cache=True, nogil=True, boundscheck=False)
def bucket_counts(key, lo, hi, shift, nb):
    """Edges per bucket (key >> shift) among key[lo:hi]."""
    out = np.zeros(nb, np.int64)
    for e in range(lo, hi):
        out[key[e] >> shift] += 1
    return out


def place_kernel(dtype, columns):
    """The loop under ``place``, per record dtype and column set (a field's name is in
    its source; one loop per dtype also keeps numba from passing one record type
    where it compiled another): ``place(1, lo, hi, …)`` scatters edges [lo, hi) by
    bucket through ``cur`` (advanced); ``place(2, lo, hi, …)`` orders buckets [lo, hi)
    by key, each between ``cur[b]`` and ``cur[b + 1]`` (bucket starts that no thread
    changes: ``start``, which this phase advances, belongs to the next bucket's thread
    there). With ``shift`` 0, phase 1 alone places by key."""
    names = list(columns) if columns is not None else ["*"]
    key = (dtype, None if columns is None else tuple((f, columns[f].dtype, len(columns[f]) == 1) for f in names),
           jit_disabled(), cache_dir())
    if key not in _PLACE:
        cols = ", ".join(f"c{i}" for i in range(len(names)))
        lines = ["            r = rows_out[k]"] if columns is not None else ["            rows_out[k] = c0[e]"]
        for f in dtype.names if columns is not None else ():
            if f in columns:
                i = names.index(f)
                lines.append(f"            r[{f!r}] = c{i}[0]" if len(columns[f]) == 1 else
                             f"            r[{f!r}] = c{i}[e]")
            else:
                lines.append(f"            r[{f!r}] = 0")
        src = f"""
def place(phase, lo, hi, key, start, shift, cur, other, keys_out, other_out, rows_out, {cols}):
    if phase == 1:
        for e in range(lo, hi):
            v = key[e]
            b = v >> shift
            k = cur[b]
            cur[b] = k + 1
            keys_out[k] = v
            other_out[k] = other[e]
{chr(10).join(lines)}
        return
    big = 0                                   # phase 2: cur holds where each bucket starts (and the end)
    for b in range(lo, hi):
        big = max(big, cur[b + 1] - cur[b])
    sk = np.empty(big, keys_out.dtype)
    so = np.empty(big, other_out.dtype)
    sr = np.empty(big, rows_out.dtype)
    for b in range(lo, hi):
        first = cur[b]
        last = cur[b + 1]
        for j in range(last - first):
            sk[j] = keys_out[first + j]
            so[j] = other_out[first + j]
            sr[j] = rows_out[first + j]
        for j in range(last - first):
            v = sk[j]
            k = start[v]
            start[v] = k + 1
            keys_out[k] = v
            other_out[k] = so[j]
            rows_out[k] = sr[j]
"""
        deps = [fingerprint(dtype), *(fingerprint(columns[f].dtype) for f in names if columns is not None)]
        _PLACE[key] = _kernel("place", src, "place", {}, deps)
    return _PLACE[key]


def place_shift(n_keys, n_edges):
    """The bucket shift of ``place``: ~1024 buckets; 0 (one pass) when the keys or the
    edges are few enough for one pass's write positions to stay in cache."""
    if n_keys <= 4096 or n_edges <= 1 << 20:
        return 0
    return max(0, int(n_keys).bit_length() - 10)


# --------------------------------------------------------------------------- fixed-point sums
@njit(cache=True, nogil=True, boundscheck=False)
def residual_fixed_sums(index, r, mu, other, b, scale, out):
    """out[index[e]] += rint((r[e] − mu − b[other[e]]) · scale) for every edge e: the bias
    baseline's per-vertex sums of residuals in fixed point (``scale`` a power of two, so
    the product is exact as numpy's ldexp), int64 sums exact in any order."""
    for e in range(index.shape[0]):
        out[index[e]] += np.int64(np.rint((r[e] - mu - b[other[e]]) * scale))


# --------------------------------------------------------------------------- replica rows
# An Apply round moves the sync bytes of whole records (rounds.sync_block views: n × bytes);
# these loops copy them without numpy's per-row fancy-indexing overhead.
@njit(cache=True, nogil=True, boundscheck=False)
def gather_rows(src, rows):
    out = np.empty((rows.shape[0], src.shape[1]), src.dtype)
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(src.shape[1]):
            out[i, j] = src[r, j]
    return out


@njit(cache=True, nogil=True, boundscheck=False)
def ids_within(idx, lo, hi):
    """Whether every id is in [lo, hi) (a message's local indices, checked in one pass)."""
    for i in range(idx.shape[0]):
        if idx[i] < lo or idx[i] >= hi:
            return False
    return True


@njit(cache=True, nogil=True, boundscheck=False)
def as_int32(idx):
    """(idx as int32, whether every value fits): one pass."""
    out = np.empty(idx.shape[0], np.int32)
    fits = True
    for i in range(idx.shape[0]):
        v = idx[i]
        if v >= 2 ** 31 or v < -2 ** 31:
            fits = False
        out[i] = v
    return out, fits


@njit(cache=True, nogil=True, boundscheck=False)
def scatter_rows(dst, rows, src):
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(dst.shape[1]):
            dst[r, j] = src[i, j]


@njit(cache=True, nogil=True, boundscheck=False)
def copy_rows(dst, src, rows):
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(dst.shape[1]):
            dst[r, j] = src[r, j]


@njit(cache=True, nogil=True, boundscheck=False)
def combine_changes(cur, snap, rows, at, vals):
    """A mirror's values ``vals`` into its masters' rows ``rows[at[i]]`` of ``cur``: an
    element no replica changed yet since the sync snapshot ``snap`` takes the value,
    one already changed adds the mirror's change (replicas' changes add up)."""
    for i in range(at.shape[0]):
        r = rows[at[i]]
        for j in range(cur.shape[1]):
            c, s = cur[r, j], snap[r, j]
            if c != s:
                cur[r, j] = c + (vals[i, j] - s)
            else:
                cur[r, j] = vals[i, j]


@njit(cache=True, nogil=True, boundscheck=False)
def add_rows(dst, rows, at, src):
    """dst[rows[at[i]]] += src[i]: a message's accumulators added at its masters
    (each named once per message, so the sums are numpy's fancy-index adds)."""
    for i in range(at.shape[0]):
        r = rows[at[i]]
        for j in range(dst.shape[1]):
            dst[r, j] += src[i, j]


@njit(cache=True, nogil=True, boundscheck=False)
def zero_rows(dst, rows):
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(dst.shape[1]):
            dst[r, j] = 0


@njit(cache=True, nogil=True, boundscheck=False)
def split_touched(idx, n_master, mirror_part, mirror_lid, n_parts):
    """A touched list cut for an Apply round: its masters (in touched order), and its
    mirrors grouped by their master's part (stable, in touched order): (masters,
    mirror rows, their masters' lids, starts), part q's at [starts[q], starts[q + 1])."""
    n_own = 0
    for t in range(idx.shape[0]):
        n_own += idx[t] < n_master
    masters = np.empty(n_own, np.int64)
    part = np.empty(idx.shape[0] - n_own, np.int32)
    mir = np.empty(idx.shape[0] - n_own, np.int64)
    a = b = 0
    for t in range(idx.shape[0]):
        v = idx[t]
        if v < n_master:
            masters[a] = v
            a += 1
        else:
            mir[b] = v
            part[b] = mirror_part[v - n_master]
            b += 1
    order, starts = group_by_part(part, n_parts)
    rows = np.empty(b, np.int64)
    lids = np.empty(b, np.int64)
    for k in range(b):
        v = mir[order[k]]
        rows[k] = v
        lids[k] = mirror_lid[v - n_master]
    return masters, rows, lids, starts


@njit(cache=True, nogil=True, boundscheck=False)
def fanout_rows(M, mm_ptr, mm_part, mm_lid, n_parts, src):
    """mirror_fanout with the masters' rows of ``src`` gathered: (mirror lids,
    values, starts), part q's at [starts[q], starts[q + 1])."""
    rows, lids, starts = mirror_fanout(M, mm_ptr, mm_part, mm_lid, n_parts)
    return lids, gather_rows(src, rows), starts


@njit(cache=True, nogil=True, boundscheck=False)
def copy_rows_between(dst, dst2, dst_rows, src, src_rows):
    """dst[dst_rows[i]] = dst2[dst_rows[i]] = src[src_rows[i]]: one replica's rows into
    another's values and sync snapshot (an Apply round inside one process)."""
    for i in range(dst_rows.shape[0]):
        r, q = dst_rows[i], src_rows[i]
        for j in range(dst.shape[1]):
            v = src[q, j]
            dst[r, j] = v
            dst2[r, j] = v


# --------------------------------------------------------------------------- setup arrays
@njit(cache=True, nogil=True)
def _bytes(n):
    return np.empty(n, np.uint8)


def zeros(n, dtype):
    """np.zeros(n, dtype) in memory numba allocates. numpy asks the kernel for huge
    pages for arrays of 4 MB and more, and on a VM whose free memory goes back to its
    host (free page reporting) their first touch costs ~6x that of small pages (2.5
    against 0.4 ms per MB measured here): the setup's edge-sized arrays are made here
    or inside its kernels instead. Its pages are in place (see empty), then zeroed."""
    out = empty(n, dtype)
    out.view(np.uint8).fill(0)
    return out


def empty(n, dtype):
    """np.empty(n, dtype) in memory numba allocates (see zeros), its pages already in
    place for writing (``populate``) when it is 4 MB or more. For records a kernel
    fills: a kernel returning a record array numba made may give it the dtype of
    another record type of the same layout (seen with numba 0.68 and two one-field
    dtypes), so kernels fill these instead."""
    dtype = np.dtype(dtype)
    out = _bytes(int(n) * dtype.itemsize).view(dtype)
    if out.nbytes >= 1 << 22:
        populate(out)
    return out


_MADV_POPULATE_WRITE = 23        # Linux 5.14+
POPULATE_SHARED = 32 << 20       # bytes from which populate shares its range out among threads
_MADVISE = []


def populate(a):
    """Fault in the pages of a new array in one system call (madvise
    MADV_POPULATE_WRITE), before a kernel writes it in scattered order: the layout's
    transpose of the BlockPG bench's 12.7 M edges (356 MB) took 0.15 s less in
    four of four interleaved runs than with a page fault per first write. Elsewhere
    (another system, an older kernel) the writes fault the pages in as before."""
    if not _MADVISE:
        fn = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes
                fn = ctypes.CDLL(None, use_errno=True).madvise
                fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
            except (OSError, AttributeError):
                fn = None
        _MADVISE.append(fn)
    if _MADVISE[0] is None:
        return
    page = 4096
    lo = (a.ctypes.data + page - 1) // page * page
    hi = (a.ctypes.data + a.nbytes) // page * page
    if hi <= lo:
        return
    # in page-aligned ranges, one per core (ctypes lets go of the GIL; the faults of
    # different ranges go on at once)
    threads = max(1, min(cores(), (hi - lo) // POPULATE_SHARED))
    cuts = [lo + (hi - lo) // page * t // threads * page for t in range(threads)] + [hi]
    done = in_threads(threads, lambda t: _MADVISE[0](cuts[t], cuts[t + 1] - cuts[t], _MADV_POPULATE_WRITE))
    if any(done) and _MADVISE[0] is not None:
        _MADVISE[0] = None               # refused (EINVAL before 5.14): not asked again
