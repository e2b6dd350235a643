"""UDFs → numba kernels (one kernel, many drivers: the loops live here once).

User UDFs are plain Python. Each is compiled with numba and called from a
generated edge or vertex loop; LLVM inlines it. Under NUMBA_DISABLE_JIT=1 the
same loops and UDFs run as Python over ``np.recarray`` views: the reference.
"""
import inspect
import weakref

import numpy as np
from numba import njit
from numba.core.errors import NumbaError
from numba.core.registry import CPUDispatcher

from tux2.config import JIT, jit_disabled
from tux2.errors import UDFCompileError


def jit_udf(fn):
    """numba-compile a user function (idempotent)."""
    if isinstance(fn, CPUDispatcher):
        return fn
    return njit(**JIT)(fn)


_MEMO = weakref.WeakKeyDictionary()   # udf → {kernel kind: compiled loop}
_FUSED = {}                           # (steps, accumulator dtypes) → fused loop


def _memo(kind):
    """Build a UDF's kernel once per process: engines of the same program (every
    test, every grid point of a bench) reuse numba's compiled specialisations.
    ``dtypes``: the record dtypes the loop will see. A loop per set of dtypes keeps
    numba from passing one record type where it compiled another (record
    subtyping, an experimental numba feature). As with any numba function, globals
    a UDF reads are frozen when it compiles."""
    def wrap(build):
        def get(udf, dtypes=()):
            try:
                per = _MEMO.setdefault(udf, {})
            except TypeError:              # not weak-referenceable: no memo
                return build(udf)
            key = (kind, jit_disabled(), dtypes)
            if key not in per:
                per[key] = build(udf)
            return per[key]
        get.__doc__, get.__name__ = build.__doc__, build.__name__
        return get
    return wrap


@_memo("exchange")
def exchange_kernel(udf):
    """Loop ``udf(u, v, e, a_u, a_v, ctx)`` over segments [los[k], his[k]) of
    positions in an edge order (``perm`` maps them to storage; empty: identity)."""
    f = jit_udf(udf)

    @njit(**JIT)
    def exchange(los, his, n_seg, perm, ea, eb, A, B, E, AA, AB, ctx_arr):
        ctx = ctx_arr[0]
        for k in range(n_seg):
            if perm.shape[0] == 0:
                for pos in range(los[k], his[k]):
                    i = ea[pos]
                    j = eb[pos]
                    f(A[i], B[j], E[pos], AA[i], AB[j], ctx)
            else:
                for t in range(los[k], his[k]):
                    pos = perm[t]
                    i = ea[pos]
                    j = eb[pos]
                    f(A[i], B[j], E[pos], AA[i], AB[j], ctx)
    return exchange


@_memo("active")
def active_kernel(udf):
    """Segments of a vertex mini-batch's edges whose vertex passes ``udf(v, ctx)``:
    runs k in [k_lo, k_hi) (run k = one vertex's edges, positions
    [run_start[k], run_start[k+1])); adjacent selected runs merge into one segment."""
    f = jit_udf(udf)

    @njit(**JIT)
    def select(k_lo, k_hi, run_start, run_lid, V, ctx_arr, los, his):
        ctx = ctx_arr[0]
        n = 0
        for k in range(k_lo, k_hi):
            if f(V[run_lid[k]], ctx):
                if n > 0 and his[n - 1] == run_start[k]:
                    his[n - 1] = run_start[k + 1]
                else:
                    los[n] = run_start[k]
                    his[n] = run_start[k + 1]
                    n += 1
        return n
    return select


@_memo("apply")
def apply_kernel(udf):
    """Loop ``udf(v, a, ctx)`` over the given local master indices."""
    f = jit_udf(udf)

    @njit(**JIT)
    def apply(idx, V, Acc, ctx_arr):
        ctx = ctx_arr[0]
        for t in range(idx.shape[0]):
            i = idx[t]
            f(V[i], Acc[i], ctx)
    return apply


@_memo("aggregate")
def aggregate_kernel(udf):
    """Loop ``udf(v, ctx)`` over local masters 0 … n_master−1."""
    f = jit_udf(udf)

    @njit(**JIT)
    def aggregate(n_master, V, ctx_arr):
        ctx = ctx_arr[0]
        for i in range(n_master):
            f(V[i], ctx)
    return aggregate


@_memo("combine")
def combine_kernel(udf):
    f = jit_udf(udf)

    @njit(**JIT)
    def combine(a_arr, b_arr):
        f(a_arr[0], b_arr[0])
    return combine


@_memo("finalize")
def finalize_kernel(udf):
    f = jit_udf(udf)

    @njit(**JIT)
    def finalize(ctx_arr):
        f(ctx_arr[0])
    return finalize


def minibatch_kernel(steps, accum_dtypes):
    """One compiled loop over a run of mini-batches, for a partition that owns every
    vertex it touches (one partition, nothing replicated): what the engine does per
    clock — each Exchange, then the touched-vertex bookkeeping and each Apply — with
    no return to Python between mini-batches.

    ``steps``: ("exchange", kernel, mark types) or ("apply", type, kernel or None),
    in stage order. ``accum_dtypes``: the two types' accumulator dtypes (an Apply
    zeroes its vertices' accumulators). Mini-batch c covers positions
    [pos[c], pos[c+1]) of the order ``perm``. Returns the touched counts and stamp
    epochs of both types, which the caller stores back.
    """
    key = (tuple(steps), tuple(accum_dtypes), jit_disabled())
    if key not in _FUSED:
        _FUSED[key] = _minibatch_kernel(steps, accum_dtypes)
    return _FUSED[key]


def _minibatch_kernel(steps, accum_dtypes):
    body, env = [], {"mark_touched": mark_touched, "np": np}
    for k, step in enumerate(steps):
        if step[0] == "exchange":
            _, kern, marks = step
            env[f"k{k}"] = kern
            body += ["if his[0] > los[0]:",
                     f"    k{k}(los, his, 1, perm, ea, eb, A, B, E, AA, AB, ctx_arr)"]
            for t in marks:
                body.append(f"    n{t} = mark_touched(los, his, 1, perm, {'eb' if t else 'ea'}, s{t}, ep{t}, "
                            f"tch{t}, n{t})")
        else:
            _, t, kern = step
            V, ACC = ("B", "AB") if t else ("A", "AA")
            if kern is not None:
                env[f"k{k}"] = kern
                body += [f"if n{t} > 0:", f"    k{k}(tch{t}[:n{t}], {V}, {ACC}, ctx_arr)"]
            names = [f for f in accum_dtypes[t].names if f != "_"] if accum_dtypes[t].names else []
            if names:
                body += [f"for q in range(n{t}):", f"    r = {ACC}[tch{t}[q]]"]
                body += [f"    r.{f}{'[:]' if accum_dtypes[t][f].shape else ''} = 0" for f in names]
            body += [f"ep{t} += 1", f"n{t} = 0"]
    src = ("def fused(c0, c1, pos, perm, ea, eb, A, B, E, AA, AB, ctx_arr, s0, tch0, n0, ep0, s1, tch1, n1, ep1):\n"
           "    los = np.empty(1, np.int64)\n    his = np.empty(1, np.int64)\n"
           "    for c in range(c0, c1):\n        los[0] = pos[c]\n        his[0] = pos[c + 1]\n"
           + "".join(f"        {line}\n" for line in body) + "    return n0, ep0, n1, ep1\n")
    exec(compile(src, "<tux2 fused mini-batch loop>", "exec"), env)
    return njit(**JIT)(env["fused"])


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
        return kernel(*args)
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
