"""UDFs numba cannot compile fail with the UDF and the stage named; the same UDFs
run as plain Python under NUMBA_DISABLE_JIT=1 and give the same model."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tux2
from tux2 import Apply, Engine, Exchange, MiniBatch, Program, VertexType


def bad_exchange(u, v, e, a_u, a_v, ctx):
    thing = object()                   # arbitrary Python objects are not numba-typable
    a_u.x += len(str(thing))


def unknown_field_apply(v, a, ctx):
    v.nonexistent += 1.0


def types():
    return (VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"}))


def test_uncompilable_exchange_names_udf_and_stage():
    g = tux2.BipartiteGraph([0, 1], [0, 1], [1.0, 1.0])
    prog = Program(types(), edge={"w": "f8"}, stages=[Exchange(bad_exchange)])
    with pytest.raises(tux2.UDFCompileError) as ei:
        Engine(prog, g)
    msg = str(ei.value)
    assert "exchange stage 'bad_exchange'" in msg and "test_compile.py" in msg and "NUMBA_DISABLE_JIT" in msg


def test_unknown_field_in_apply_names_udf():
    g = tux2.BipartiteGraph([0, 1], [0, 1], [1.0, 1.0])
    prog = Program(types(), edge={"w": "f8"}, stages=[Exchange(lambda u, v, e, au, av, c: None),
                                                      Apply(unknown_field_apply, types="a")])
    with pytest.raises(tux2.UDFCompileError, match="(?s)apply stage 'unknown_field_apply'.*unknown record field 'nonexistent'"):
        Engine(prog, g)


def test_uncompilable_udf_inside_a_fused_minibatch_is_named():
    """A UDF numba cannot type inside a fused mini-batch fails at Engine() with its
    own stage named (not the fused loop's)."""
    g = tux2.BipartiteGraph([0, 1], [0, 1], [1.0, 1.0])
    good = MiniBatch(1, [Exchange(lambda u, v, e, au, av, c: None), Apply(unknown_field_apply, types="a")],
                     unit="vertex", enumerate="a")
    with pytest.raises(tux2.UDFCompileError, match="(?s)apply stage 'unknown_field_apply'.*unknown record field"):
        Engine(Program(types(), edge={"w": "f8"}, stages=[good]), g)


def add_up(u, v, e, a_u, a_v, ctx):
    a_u.x += e.w * (v.y + 1.0)


def step(v, a, ctx):
    v.x = 0.5 * v.x + a.x


def test_a_fused_minibatch_on_its_per_clock_path_gives_the_fused_result():
    """Engine.time_parts sends a fusable mini-batch through the per-clock driver:
    the same records as the fused loop."""
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 30, 300)
    g = tux2.BipartiteGraph(src, dst, rng.random(300), 40, 30)
    out = []
    for per_clock in (False, True):
        prog = Program(types(), edge={"w": "f8"},
                       stages=[MiniBatch(7, [Exchange(add_up), Apply(step, types="a")], unit="vertex",
                                         enumerate="a")])
        eng = Engine(prog, g, partitions=1)
        assert eng._fused
        eng.time_parts = per_clock
        eng.run(3)
        out.append(eng.vertex_data("a")["x"])
    assert out[0].any()
    np.testing.assert_array_equal(out[0], out[1])


SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from tux2 import Engine
    from tux2.datasets import netflix_like
    from tux2.udfs import mf
    tr, _ = netflix_like(n_users=60, n_items=25, n_ratings=600, seed=4)
    mode = sys.argv[1]
    kw = dict(batch_size=97) if mode == "minibatch" else {}
    how = dict(partitioner="random")
    if mode == "sgd":                  # per-edge SGD on 3 partitions runs in strata
        from tux2.graph import stratified_order
        o, strata = stratified_order(tr.src, tr.dst, tr.n_src, tr.n_dst, 6)
        tr, how = tr.permuted(o), dict(partitioner="stratified", partitioner_options={"blocks": 6}, strata=strata)
    eng = Engine(mf.program(k=6, mode=mode, mu=3.6, **kw), tr, partitions=3, seed=2, **how)
    eng.run(3)
    print(json.dumps({"p": eng.vertex_data("user")["p"].tolist(), "q": eng.vertex_data("item")["p"].tolist(),
                      "rmse": eng.context()["rmse"]}))
""")


@pytest.mark.parametrize("mode", ["minibatch", "sgd"])
def test_reference_mode_matches_compiled(mode):
    out = {}
    for disable in ("0", "1"):
        env = {**os.environ, "NUMBA_DISABLE_JIT": disable}
        r = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, env=env,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        out[disable] = json.loads(r.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(out["0"]["p"], out["1"]["p"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["0"]["q"], out["1"]["q"], rtol=1e-4, atol=1e-5)
    assert out["0"]["rmse"] == pytest.approx(out["1"]["rmse"], rel=1e-5)


def copy_exchange(u, v, e, a_u, a_v, ctx):
    a_u.x += e.w * v.y


def test_kernels_are_built_once_per_udf_and_record_types():
    """Engines of the same program reuse its compiled loops; other record dtypes
    get loops of their own (no numba record subtyping between them)."""
    from tux2 import MiniBatch
    from tests.conftest import random_graph
    g = random_graph(seed=1)

    def engine(extra):
        a = VertexType("a", sync={"x": "f8", **extra})
        prog = Program((a, VertexType("b", sync={"y": "f8"})), edge={"w": "f8"},
                       stages=[MiniBatch(7, [Exchange(copy_exchange), Apply(types="a")])])
        return Engine(prog, g, partitions=1), prog.stages[0].stages[0]
    (e1, s1), (e2, s2), (e3, s3) = engine({}), engine({}), engine({"z": "i4"})
    assert e1._kernels[id(s1)] is e2._kernels[id(s2)]
    assert next(iter(e1._fused.values()))[0] is next(iter(e2._fused.values()))[0]
    assert e3._kernels[id(s3)] is not e1._kernels[id(s1)]
    for e in (e1, e3):
        e.run(1)
    np.testing.assert_array_equal(e1.vertex_data("a")["x"], e3.vertex_data("a")["x"])


# ---------------------------------------------------------------- which Exchanges write replica values
def reads_only(u, v, e, a_u, a_v, ctx):
    d = u.d[0]                                   # a scalar element copied into a name
    for k in range(v.w.shape[0]):                # metadata
        a_v.g[k] += e.x * d * v.w[k] + abs(v.s)  # fields as operands, a scalar to a call
    a_u.m += v.s if v.s > 0 else -v.s
    a_u.m += v.s


def augments_field(u, v, e, a_u, a_v, ctx):
    v.w[0] -= e.x


def aliases_field(u, v, e, a_u, a_v, ctx):
    w = v.w                                      # a view: writes through it reach the record
    w[0] = e.x


def passes_record(u, v, e, a_u, a_v, ctx):
    helper(v, e.x)


def passes_field(u, v, e, a_u, a_v, ctx):
    helper(v.w, e.x)


def iterates_field(u, v, e, a_u, a_v, ctx):
    for x in v.w:
        a_u.m += x


def views_by_ellipsis(u, v, e, a_u, a_v, ctx):
    w = v.d[...]                                 # one index, but a view
    w[0] = e.x


def views_by_new_axis(u, v, e, a_u, a_v, ctx):
    w = v.d[None]
    w[0, 0] = e.x


def helper(w, x):
    pass


REC = np.dtype([("w", "f8", (2,)), ("s", "f8"), ("d", "f8", (1,))])


@pytest.mark.parametrize("udf, writes_v", [(reads_only, False), (augments_field, True), (aliases_field, True),
                                           (passes_record, True), (passes_field, True), (iterates_field, True),
                                           (views_by_ellipsis, True), (views_by_new_axis, True)])
def test_writes_records_proves_reads_and_suspects_the_rest(udf, writes_v):
    from tux2.compile import jit_udf, writes_records
    assert writes_records(udf, 1, REC) is writes_v
    assert writes_records(jit_udf(udf), 1, REC) is writes_v       # through numba's dispatcher
    assert writes_records(udf, 0, REC) is False                   # u is only read in all of them
    ns = {}
    exec("def f(u, v, e, a_u, a_v, ctx):\n    a_u.m += v.s\n", ns)  # no source to read: suspected
    assert writes_records(ns["f"], 1, REC) is True


def test_round_helpers_match_numpy():
    from tux2.compile import group_by_part, mirror_fanout, union_positions
    rng = np.random.default_rng(0)
    n = 1000
    for dense in (False, True):
        own = rng.choice(n, 600 if dense else 20, replace=False)
        lids = rng.choice(n, 300 if dense else 30, replace=False).astype(np.int32)
        mark, where = np.zeros(n, np.bool_), np.empty(n, np.int64)
        M, pos, cnt = union_positions(n, own, lids, mark, where)
        np.testing.assert_array_equal(M, np.union1d(own, lids))
        np.testing.assert_array_equal(M[pos], lids)
        np.testing.assert_array_equal(cnt, np.isin(M, own).astype(int) + np.isin(M, lids))
        assert not mark.any()
    part = rng.integers(0, 4, 50).astype(np.int32)
    order, starts = group_by_part(part, 5)
    np.testing.assert_array_equal(order, np.argsort(part, kind="stable"))
    np.testing.assert_array_equal(starts, np.r_[0, np.cumsum(np.bincount(part, minlength=5))])
    counts = rng.integers(0, 3, 40)
    mm_ptr = np.r_[0, np.cumsum(counts)]
    mm_part, mm_lid = rng.integers(0, 3, mm_ptr[-1]).astype(np.int32), rng.integers(0, 99, mm_ptr[-1])
    M = np.sort(rng.choice(40, 25, replace=False))
    rows, lids, starts = mirror_fanout(M, mm_ptr, mm_part, mm_lid, 3)
    ref = [(q, m, mm_lid[k]) for m in M for k in range(mm_ptr[m], mm_ptr[m + 1]) for q in [mm_part[k]]]
    ref.sort(key=lambda r: r[0])                                  # stable: M order within a part
    assert [(int(r), int(x)) for r, x in zip(rows, lids)] == [(int(m), int(x)) for _, m, x in ref]
    np.testing.assert_array_equal(np.diff(starts), np.bincount([r[0] for r in ref], minlength=3))


def test_round_kernels_match_numpy():
    from tux2.compile import add_rows, fanout_rows, mirror_fanout, split_touched, zero_rows
    rng = np.random.default_rng(1)
    n_master, n_local = 30, 50
    mirror_part = rng.integers(0, 3, n_local - n_master).astype(np.int32)
    mirror_lid = rng.integers(0, 99, n_local - n_master)
    for idx in (rng.permutation(n_local)[:35], np.zeros(0, np.int64), np.arange(n_master, n_local)):
        masters, rows, lids, starts = split_touched(idx, n_master, mirror_part, mirror_lid, 3)
        np.testing.assert_array_equal(masters, idx[idx < n_master])          # touched order
        mir = idx[idx >= n_master]
        ref = mir[np.argsort(mirror_part[mir - n_master], kind="stable")]      # by part, then touched order
        np.testing.assert_array_equal(rows, ref)
        np.testing.assert_array_equal(lids, mirror_lid[ref - n_master])
        np.testing.assert_array_equal(starts, np.r_[0, np.cumsum(np.bincount(mirror_part[mir - n_master],
                                                                             minlength=3))])
    counts = rng.integers(0, 3, 40)
    mm_ptr = np.r_[0, np.cumsum(counts)]
    mm_part, mm_lid = rng.integers(0, 3, mm_ptr[-1]).astype(np.int32), rng.integers(0, 99, mm_ptr[-1])
    M = np.sort(rng.choice(40, 25, replace=False))
    src = rng.random((40, 3))
    lids, vals, starts = fanout_rows(M, mm_ptr, mm_part, mm_lid, 3, src)
    rows, lids_ref, starts_ref = mirror_fanout(M, mm_ptr, mm_part, mm_lid, 3)
    np.testing.assert_array_equal(lids, lids_ref)
    np.testing.assert_array_equal(starts, starts_ref)
    np.testing.assert_array_equal(vals, src[rows])
    dst, at = rng.random((40, 3)), rng.permutation(25)[:10]
    ref = dst.copy()
    ref[M[at]] += src[:10]
    add_rows(dst, M, at, src[:10])
    np.testing.assert_array_equal(dst, ref)
    zero_rows(dst, M)
    ref[M] = 0
    np.testing.assert_array_equal(dst, ref)


def test_same_type_rows_views_records_of_one_numeric_type():
    from tux2.layout import same_type_rows
    recs = np.zeros(4, np.dtype([("g", "f8", (2,)), ("c", "f8")], align=True))
    block = same_type_rows(recs)
    assert block.shape == (4, 3) and block.dtype == np.float64
    block[1] = [1, 2, 3]                                           # a view: writes go to the records
    assert recs["g"][1].tolist() == [1, 2] and recs["c"][1] == 3
    assert same_type_rows(np.zeros(4, np.dtype([("a", "f4"), ("b", "f8")], align=True))) is None   # two types
    assert same_type_rows(np.zeros(4, np.dtype([("a", "i4"), ("b", "u1")], align=True))) is None   # padding


def test_zeros_and_empty_in_numba_memory_are_numpy_arrays():
    from tux2.compile import empty, zeros
    rec = np.dtype([("x", "f8"), ("k", "f4")], align=True)
    for dt in (rec, np.dtype("f8"), np.dtype([("_", "u1")]), np.dtype([("a", "i4"), ("b", "u1")])):
        for n in (0, 1, 7):
            z = zeros(n, dt)
            assert z.dtype == dt and z.shape == (n,) and z.flags.writeable and z.flags.c_contiguous
            assert z.flags.aligned
            np.testing.assert_array_equal(z, np.zeros(n, dt))
            e = empty(n, dt)
            assert e.dtype == dt and e.shape == (n,) and e.flags.writeable and e.flags.aligned


def _reads_u_and_a_v(u, v, e, a_u, a_v, ctx):
    a_v.g += u.x * e.w


def _reads_all_through_a_closure(u, v, e, a_u, a_v, ctx):
    def inner():
        return a_u.g + u.x
    v.y = inner() + e.w + a_v.g


def test_exchange_loops_prefetch_only_what_the_udf_reads():
    """The edge loop asks ahead for the vertex and accumulator records its UDF reads
    (parameters read in its body, or by a closure in it), never for the others; and
    prefetch compiles on record and number arrays, changing nothing."""
    from numba import njit
    from tux2.compile import _reads, prefetch
    assert _reads(_reads_u_and_a_v, 5) == {0, 2, 4}
    assert _reads(_reads_all_through_a_closure, 5) == {0, 1, 2, 3, 4}
    assert _reads(njit(_reads_u_and_a_v), 5) == {0, 2, 4}
    assert _reads(len, 5) == {0, 1, 2, 3, 4}                  # no Python code to read: all of them

    @njit
    def touch(a, idx):
        for i in idx:
            prefetch(a, i)
        return a[idx[0]]
    rec = np.zeros(100, [("x", "f8"), ("pad", "f8", 40)])
    rec["x"] = np.arange(100)
    idx = np.array([3, 99, 0, 50])
    assert touch(rec, idx)["x"] == 3.0 and touch(rec["x"].copy(), idx.astype(np.int32)) == 3.0
    assert (rec["x"] == np.arange(100)).all()


def test_a_udf_is_compiled_under_a_name_of_its_loop_s_record_types():
    """numba names compiled code by name, a per-process counter and argument types
    numbered by another per-process counter, and a loop loaded from the cache calls its
    UDF by that name: two loaded loops of one UDF for other record types could name
    different code alike, and the process ran the first one loaded (an MF loop for k = 4
    ran k = 3's UDF: NaN). Each loop's UDF carries a digest of the UDF and the record
    types in its name, so alike names are alike code."""
    from tux2.compile import exchange_kernel
    dts = [np.dtype([("x", "f8", (k,))]) for k in (3, 4)]
    acc, e, ctx = np.dtype([("s", "f8")]), np.dtype([("w", "f8")]), np.dtype([("c", "f8")])
    names = []
    for dt in dts:
        k = exchange_kernel(_reads_u_and_a_v, (dt, dt, e, acc, acc, ctx))
        f = k.py_func.__globals__["f"]
        assert f.py_func.__qualname__.startswith("_reads_u_and_a_v__")
        names.append(f.py_func.__qualname__)
    assert names[0] != names[1]
    again = exchange_kernel(_reads_u_and_a_v, (dts[0], dts[0], e, acc, acc, ctx)).py_func.__globals__["f"]
    assert again.py_func.__qualname__ == names[0]


def test_setup_arrays_of_numba_memory():
    """compile.empty and zeros (the layout's edge-sized arrays): the dtype and length
    asked for, zeros zeroed, also above the 4 MB from which the pages are populated
    in advance."""
    from tux2.compile import empty, zeros
    rec = np.dtype([("x", "f8"), ("ws", "f8"), ("kappa", "f4")])
    for n in (0, 3, (5 << 20) // rec.itemsize + 7):
        e, z = empty(n, rec), zeros(n, rec)
        assert e.dtype == rec and z.dtype == rec and len(e) == len(z) == n
        assert not z.view(np.uint8).any()
        e["x"] = 1.5
        assert (e["x"] == 1.5).all()


def test_ids_within_and_as_int32_against_numpy():
    from tux2.compile import as_int32, ids_within
    rng = np.random.default_rng(0)
    for _ in range(50):
        idx = rng.integers(-3, 40, rng.integers(0, 20)).astype(np.int64)
        lo, hi = int(rng.integers(-2, 5)), int(rng.integers(20, 45))
        assert ids_within(idx, lo, hi) == bool(np.all((idx >= lo) & (idx < hi)))
        small, fits = as_int32(idx)
        assert fits and small.dtype == np.int32 and np.array_equal(small, idx)
    big = np.array([1, 2 ** 31, 5], np.int64)
    assert not as_int32(big)[1]
    assert not as_int32(np.array([-2 ** 31 - 1], np.int64))[1]
