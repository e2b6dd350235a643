"""Every stage against a slow reference (tests/naive.py), on small random graphs,
for several partition counts and both partitioners."""

import numpy as np
import pytest

from tux2 import Apply, ContextSpec, Engine, Exchange, GlobalSync, MiniBatch, Program, VertexType
from tests.conftest import random_graph
from tests import naive

PARTS = [(1, "random"), (2, "random"), (4, "random"), (3, "bicut"), (4, "bicut")]


# --- a toy program with accumulators: a_u.x += w·y_v, a_v.y += w·x_u[0]
def acc_exchange(u, v, e, a_u, a_v, ctx):
    a_u.x[0] += e.w * v.y
    a_u.x[1] += 1.0
    a_v.y += e.w * u.x[0]
    ctx.s += e.w


def apply_a(v, a, ctx):
    v.x[0] += 0.5 * a.x[0]
    v.x[1] = a.x[1]          # degree seen in this clock


def apply_b(v, a, ctx):
    v.y += 0.25 * a.y


def toy_types():
    return (VertexType("a", sync={"x": ("f8", 2)}), VertexType("b", sync={"y": "f8"}))


def toy_init(name, data, rng):
    if name == "a":
        data["x"][:, 0] = np.arange(len(data)) * 0.1 + 1
    else:
        data["y"] = np.cos(np.arange(len(data)))


def naive_accumulate(g, A, B, edges):
    aA, aB = np.zeros((g.n_src, 2)), np.zeros(g.n_dst)
    tA, tB = set(), set()
    for e in edges:
        u, v, w = int(g.src[e]), int(g.dst[e]), g.values[e]
        aA[u, 0] += w * B[v]
        aA[u, 1] += 1.0
        aB[v] += w * A[u, 0]
        tA.add(u)
        tB.add(v)
    A, B = A.copy(), B.copy()
    for u in tA:
        A[u, 0] += 0.5 * aA[u, 0]
        A[u, 1] = aA[u, 1]
    for v in tB:
        B[v] += 0.25 * aB[v]
    return A, B


@pytest.mark.parametrize("parts,partitioner", PARTS)
@pytest.mark.parametrize("unit,size", [("edge", None), ("edge", 17), ("vertex", 4)])
def test_exchange_apply_accumulators_match_reference(parts, partitioner, unit, size):
    g = random_graph(seed=parts)
    mb = MiniBatch(size, [Exchange(acc_exchange), Apply(apply_a, types="a"), Apply(apply_b, types="b")],
                   unit=unit, enumerate="b" if unit == "vertex" else None)
    prog = Program(toy_types(), edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                   stages=[mb, GlobalSync()], init_vertices=toy_init)
    eng = Engine(prog, g, partitions=parts, partitioner=partitioner, seed=5)
    eng.run(2)
    A = np.zeros((g.n_src, 2))
    A[:, 0] = np.arange(g.n_src) * 0.1 + 1
    B = np.cos(np.arange(g.n_dst))
    total = g.num_edges if unit == "edge" else g.n_dst
    step = size or total
    for _ in range(2):
        for lo in range(0, total, step):
            A, B = naive_accumulate(g, A, B, naive.batch_edges(g.src, g.dst, unit, 1, lo, lo + step))
    np.testing.assert_allclose(eng.vertex_data("a")["x"], A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eng.vertex_data("b")["y"], B, rtol=1e-12, atol=1e-12)
    # GlobalSync summed the context over partitions: Σ w over the last epoch
    assert eng.history[-1]["s"] == pytest.approx(g.values.sum(), rel=1e-12)
    # every replica holds its master's value after Apply
    for p in eng.parts:
        tl = p.types[0]
        np.testing.assert_allclose(tl.data["x"], A[tl.gid], rtol=1e-12, atol=1e-12)


def b_small(v, ctx):
    return abs(v.y) < 0.6


@pytest.mark.parametrize("unit,size,active", [("edge", 17, None), ("vertex", 4, None), ("vertex", None, None),
                                              ("vertex", 4, b_small)])
def test_fused_minibatch_loop_gives_the_per_clock_result(unit, size, active):
    """One partition: the mini-batches run in one compiled loop (Engine fuse=True),
    with the same vertex data, context and clock count as the per-clock driver; the
    trace has one record per run of clocks and progress callbacks still fire. With
    an active predicate (whose answer the Applies change from epoch to epoch) the
    loop visits the same vertices' edges as the per-clock driver."""
    g = random_graph(seed=3)
    mb = MiniBatch(size, [Exchange(acc_exchange), Apply(apply_a, types="a"), Apply(apply_b, types="b")],
                   unit=unit, enumerate="b" if unit == "vertex" else None, active=active)
    prog = Program(toy_types(), edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                   stages=[mb, GlobalSync()], init_vertices=toy_init)
    engs, seen = [], []
    for fuse in (True, False):
        eng = Engine(prog, g, partitions=1, seed=5, fuse=fuse)
        assert bool(eng._fused) == fuse
        eng.on_clock = lambda e: seen.append((fuse, e.clock))
        eng.run(3)
        engs.append(eng)
    fused, plain = engs
    for t, f in (("a", "x"), ("b", "y")):
        np.testing.assert_array_equal(fused.vertex_data(t)[f], plain.vertex_data(t)[f])
    if active is not None:                 # the predicate left some vertices out
        every = Engine(Program(prog.types, prog.edge_fields, prog.context,
                               [MiniBatch(size, mb.stages, unit=unit, enumerate="b"), GlobalSync()],
                               init_vertices=toy_init), g, partitions=1, seed=5).run(3)
        assert not np.array_equal(every.vertex_data("b")["y"], fused.vertex_data("b")["y"])
    assert fused.history == plain.history and fused.clock == plain.clock
    recs = [r for r in fused.trace if not r.get("epoch_stages")]
    per_epoch = plain.clock // 3
    assert sum(r["clocks"] for r in recs) == 3 * per_epoch and all(r["clocks"] >= 1 for r in recs)
    assert [c for f, c in seen if f][-1] == plain.clock == [c for f, c in seen if not f][-1]
    assert len([r for r in plain.trace if not r.get("epoch_stages")]) == 3 * per_epoch
    fused.fuse = False                     # switched off after construction: one record per clock again
    n = len(fused.trace)
    fused.run(1)
    assert len([r for r in fused.trace[n:] if not r.get("epoch_stages")]) == per_epoch


def test_fused_loop_is_skipped_where_it_cannot_apply():
    """An Apply inside the mini-batch of a type with mirrors (here: two random
    partitions) or a GlobalSync inside it keep the per-clock driver."""
    g = random_graph(seed=3)
    step = [Exchange(acc_exchange), Apply(apply_a, types="a")]
    ctx = ContextSpec({"s": "f8"}, sum=("s",))
    def prog(mb):
        return Program(toy_types(), edge={"w": "f8"}, context=ctx, stages=[mb], init_vertices=toy_init)
    assert Engine(prog(MiniBatch(5, step, unit="vertex", enumerate="a")), g, partitions=1)._fused
    two = Engine(prog(MiniBatch(5, step, unit="vertex", enumerate="a")), g, partitions=2)
    assert two._replicated[0] and not two._fused
    assert not Engine(prog(MiniBatch(5, step + [GlobalSync()], unit="vertex", enumerate="a")), g,
                      partitions=1)._fused


# --- direct writes to sync fields: the engine derives deltas and combines them
def direct_exchange(u, v, e, a_u, a_v, ctx):
    d = e.w * (u.x[0] - v.y)
    u.x[0] -= 0.1 * d
    v.y += 0.1 * d


def _direct_step(a_row, b_row, w):
    d = w * (a_row[0] - b_row)
    a_row[0] -= 0.1 * d
    b_row += 0.1 * d     # b_row is a 0-d array view


@pytest.mark.parametrize("parts,partitioner", PARTS)
@pytest.mark.parametrize("combine", ["sum", "mean"])
def test_direct_writes_derive_deltas(parts, partitioner, combine):
    g = random_graph(seed=11 + parts)
    prog = Program(toy_types(), edge={"w": "f8"}, context=ContextSpec({"s": "f8"}),
                   stages=[MiniBatch(40, [Exchange(direct_exchange), Apply(combine=combine, overlap="allow")])],
                   init_vertices=toy_init)
    eng = Engine(prog, g, partitions=parts, partitioner=partitioner, seed=3)
    eng.run(2)
    A = np.zeros((g.n_src, 2))
    A[:, 0] = np.arange(g.n_src) * 0.1 + 1
    B = np.cos(np.arange(g.n_dst)).reshape(-1, 1)
    ep = eng.assignment.edge_part
    for _ in range(2):
        for lo in range(0, g.num_edges, 40):
            by_part = {}
            for e in range(lo, min(lo + 40, g.num_edges)):
                by_part.setdefault(int(ep[e]), []).append((e, int(g.src[e]), int(g.dst[e]), g.values[e]))
            A, B = naive.run_direct_write(lambda a, b, w: _direct_step(a, b.reshape(()), w),
                                          (A, B), by_part, combine)
    np.testing.assert_allclose(eng.vertex_data("a")["x"], A, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eng.vertex_data("b")["y"], B[:, 0], rtol=1e-10, atol=1e-12)


# --- GlobalSync: aggregate over masters, custom combine, finalize; delta fields
def agg(v, ctx):
    ctx.total += v.y
    ctx.count += 1
    if v.y > ctx.biggest:
        ctx.biggest = v.y


def comb(a, b):
    a.biggest = max(a.biggest, b.biggest)


def fin(ctx):
    ctx.mean = ctx.total / ctx.count


def hist_agg(v, ctx):
    ctx.hist[int(v.y > 0)] += 1


def hist_fin(ctx):
    ctx.positive = ctx.hist[1]


def test_scratch_context_fields_are_summed_for_finalize_and_left_out_of_the_history():
    """ContextSpec(scratch=...): summed over partitions like a sum field, seen by the
    finalize, not copied into the per-GlobalSync history (LDA's histograms)."""
    g = random_graph(seed=2)
    ctx = ContextSpec({"hist": ("i8", 2), "positive": "i8"}, scratch=("hist",))
    prog = Program(toy_types(), edge={"w": "f8"}, context=ctx, stages=[GlobalSync(hist_agg, finalize=hist_fin,
                                                                                  over="b")],
                   init_vertices=toy_init)
    eng = Engine(prog, g, partitions=3, partitioner="random").run(2)
    assert eng.history[-1]["positive"] == int((np.cos(np.arange(g.n_dst)) > 0).sum())
    assert "hist" not in eng.history[-1] and "positive" in eng.history[-1]



def count_sync(ctx):
    ctx.syncs += 1


def no_exchange(u, v, e, a_u, a_v, ctx):
    pass


def test_history_leaves_out_unrecorded_syncs_and_settings_as_they_started():
    """GlobalSync(record=False) (LDA's sync after every mini-batch) adds no history record,
    and a setting is left out of the records while it has its starting value (LDA's
    lgamma tables, which would otherwise be copied at every sync)."""
    g = random_graph(seed=2)
    ctx = ContextSpec({"total": "f8", "count": "f8", "biggest": "f8", "mean": "f8", "table": ("f8", 3),
                       "syncs": "i8"}, sum=("total", "count"), state=("syncs",),
                      init={"biggest": -1e300, "table": [1.0, 2.0, 3.0]})
    mb = MiniBatch(max(g.n_src // 3, 1), [Exchange(no_exchange), GlobalSync(finalize=count_sync, record=False)],
                   unit="vertex", enumerate="a")
    prog = Program(toy_types(), edge={"w": "f8"}, context=ctx, stages=[mb, GlobalSync(agg, comb, fin, over="b")],
                   init_vertices=toy_init)
    eng = Engine(prog, g, partitions=2, partitioner="random").run(2)
    assert [r["iteration"] for r in eng.history] == [1, 2]
    assert eng.history[-1]["syncs"] == 2 * (len(range(0, g.n_src, max(g.n_src // 3, 1))))
    assert "table" not in eng.history[-1] and eng.history[-1]["biggest"] == pytest.approx(np.cos(np.arange(g.n_dst)).max())

def bump_exchange(u, v, e, a_u, a_v, ctx):
    ctx.shared[0] += 1.0


@pytest.mark.parametrize("parts,partitioner", PARTS)
def test_global_sync_aggregate_combine_finalize(parts, partitioner):
    g = random_graph(seed=2)
    ctx = ContextSpec({"total": "f8", "count": "f8", "biggest": "f8", "mean": "f8", "shared": ("f8", 2)},
                      sum=("total", "count"), delta=("shared",), init={"biggest": -1e300})
    prog = Program(toy_types(), edge={"w": "f8"}, context=ctx,
                   stages=[Exchange(bump_exchange), GlobalSync(agg, comb, fin, over="b")], init_vertices=toy_init)
    eng = Engine(prog, g, partitions=parts, partitioner=partitioner)
    eng.run(3)
    y = np.cos(np.arange(g.n_dst))
    h = eng.history[-1]
    assert h["count"] == g.n_dst                      # every vertex once: masters only
    assert h["total"] == pytest.approx(y.sum(), rel=1e-12)
    assert h["biggest"] == pytest.approx(y.max())
    assert h["mean"] == pytest.approx(y.mean(), rel=1e-12)
    assert h["shared"][0] == 3 * g.num_edges         # delta field: old + Σ(local − old)
    assert [r["clock"] for r in eng.history] == [1, 2, 3]
    for p in eng.parts:                               # sum fields restart at 0 locally
        assert p.ctx["total"][0] == 0 and p.ctx["shared"][0][0] == 3 * g.num_edges


def test_master_only_and_mirror_only_fields_are_not_synchronised():
    g = random_graph(seed=4)
    types = (VertexType("a", sync={"x": ("f8", 2)}, master={"m": "f8"}, mirror={"r": "f8"}),
             VertexType("b", sync={"y": "f8"}))

    def ex(u, v, e, a_u, a_v, ctx):
        u.r += 1.0
        a_u.x[0] += 1.0

    def ap(v, a, ctx):
        v.m += a.x[0]

    prog = Program(types, edge={"w": "f8"}, stages=[Exchange(ex), Apply(ap, types="a")])
    eng = Engine(prog, g, partitions=4, partitioner="random", seed=1)
    eng.run(1)
    deg = np.bincount(g.src, minlength=g.n_src)
    np.testing.assert_array_equal(eng.vertex_data("a")["m"], deg)   # Apply saw the summed accumulators
    for p in eng.parts:
        tl = p.types[0]
        assert (tl.data["m"][tl.n_master:] == 0).all()             # never sent to mirrors
        local_deg = np.bincount(p.ea, minlength=tl.n_local)
        np.testing.assert_array_equal(tl.data["r"], local_deg)      # stays local


def _read_only(u, v, e, a_u, a_v, ctx):
    u.x += v.x


def _count(v, a, ctx):
    v.n += 1


def test_exchange_writes_limits_which_vertices_apply_visits():
    """An Exchange declared to write only type 'u' leaves type 'v' untouched: the
    Apply of 'v' after it visits no vertex, while a default Exchange makes it visit all."""
    from tux2 import Apply, ContextSpec, Exchange, Program, VertexType, BipartiteGraph, Engine
    g = BipartiteGraph(np.array([0, 1, 1, 2]), np.array([0, 0, 1, 1]), None, 3, 2, ("u", "v"))
    for writes, visits in ((("u",), 0), (None, 1)):
        prog = Program([VertexType("u", sync={"x": "f8"}), VertexType("v", sync={"x": "f8", "n": "f8"})],
                       edge={}, context=ContextSpec(), stages=[Exchange(_read_only, writes=writes), Apply(_count, types=("v",))])
        for parts in (1, 2):
            eng = Engine(prog, g, partitions=parts, partitioner="random").run(2)
            assert eng.vertex_data("v")["n"].tolist() == [2 * visits] * 2


# --- an active set: a vertex mini-batch holds only the vertices that pass active(v, ctx)
def apply_b_toggle(v, a, ctx):
    v.y += 0.25 * a.y
    v.on = 1 if v.y > 0 else 0


def b_on(v, ctx):
    return v.on != 0


@pytest.mark.parametrize("parts,partitioner", PARTS)
def test_active_minibatch_visits_only_active_vertices(parts, partitioner):
    g = random_graph(seed=parts + 10)
    types = (VertexType("a", sync={"x": ("f8", 2)}), VertexType("b", sync={"y": "f8", "on": "i4"}))

    def init(name, data, rng):
        toy_init(name, data, rng)
        if name == "b":
            data["on"] = np.arange(len(data)) % 3 != 0

    mb = MiniBatch(4, [Exchange(acc_exchange), Apply(apply_a, types="a"), Apply(apply_b_toggle, types="b")],
                   unit="vertex", enumerate="b", active=b_on)
    prog = Program(types, edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                   stages=[mb, GlobalSync()], init_vertices=init)
    eng = Engine(prog, g, partitions=parts, partitioner=partitioner, seed=5).run(3)
    A = np.zeros((g.n_src, 2))
    A[:, 0] = np.arange(g.n_src) * 0.1 + 1
    B = np.cos(np.arange(g.n_dst))
    on = np.arange(g.n_dst) % 3 != 0
    visited = 0
    for _ in range(3):
        for lo in range(0, g.n_dst, 4):
            edges = [e for e in naive.batch_edges(g.src, g.dst, "vertex", 1, lo, lo + 4) if on[g.dst[e]]]
            visited += len(edges)
            A, B = naive_accumulate(g, A, B, edges)
            on = np.where(np.isin(np.arange(g.n_dst), g.dst[edges]), B > 0, on)
    assert 0 < visited < 3 * g.num_edges            # the set shrinks and is not empty
    np.testing.assert_allclose(eng.vertex_data("a")["x"], A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eng.vertex_data("b")["y"], B, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(eng.vertex_data("b")["on"], on)


# --- an Exchange's own active set: evaluated when it starts, after the clock's earlier Applies
def count_b(u, v, e, a_u, a_v, ctx):
    a_v.n += 1.0


def flip_b(v, a, ctx):
    v.k += 1
    v.on = 1 if v.k % 3 != 0 else 0


@pytest.mark.parametrize("parts,partitioner,fuse", [(p, s, True) for p, s in PARTS] + [(1, "random", False)])
def test_an_exchange_with_its_own_active_set_visits_only_its_vertices(parts, partitioner, fuse):
    g = random_graph(seed=parts + 20)
    types = (VertexType("a", sync={"x": ("f8", 2)}),
             VertexType("b", sync={"y": "f8", "on": "i4", "k": "i4"}, accum={"y": "f8", "n": "f8"}))

    def init(name, data, rng):
        toy_init(name, data, rng)
        if name == "b":
            data["k"] = np.arange(len(data)) % 3

    mb = MiniBatch(4, [Exchange(count_b, writes="b"), Apply(flip_b, types="b"),
                       Exchange(acc_exchange, active=b_on), Apply(apply_a, types="a"), Apply(apply_b, types="b")],
                   unit="vertex", enumerate="b")
    prog = Program(types, edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                   stages=[mb, GlobalSync()], init_vertices=init)
    eng = Engine(prog, g, partitions=parts, partitioner=partitioner, seed=5, fuse=fuse)
    assert bool(eng._fused) == (fuse and parts == 1)
    eng.run(3)
    A = np.zeros((g.n_src, 2))
    A[:, 0] = np.arange(g.n_src) * 0.1 + 1
    B = np.cos(np.arange(g.n_dst))
    k = np.arange(g.n_dst) % 3
    on = np.zeros(g.n_dst, bool)
    visited = 0
    for _ in range(3):
        for lo in range(0, g.n_dst, 4):
            block = naive.batch_edges(g.src, g.dst, "vertex", 1, lo, lo + 4)
            ids = np.unique(g.dst[block]).astype(np.int64)
            k[ids] += 1
            on[ids] = k[ids] % 3 != 0
            edges = [e for e in block if on[g.dst[e]]]
            visited += len(edges)
            A, B = naive_accumulate(g, A, B, edges)
    assert 0 < visited < 3 * g.num_edges
    np.testing.assert_allclose(eng.vertex_data("a")["x"], A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eng.vertex_data("b")["y"], B, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(eng.vertex_data("b")["k"], k)


def test_an_exchange_active_set_needs_a_vertex_minibatch():
    from tux2.errors import SchemaError
    with pytest.raises(SchemaError, match="unit='vertex'"):
        MiniBatch(4, [Exchange(acc_exchange, active=b_on)], unit="edge")
    with pytest.raises(SchemaError, match="MiniBatch"):
        Program(toy_types(), edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                stages=[Exchange(acc_exchange, active=b_on)])
    with pytest.raises(SchemaError, match="callable"):
        Exchange(acc_exchange, active=1)


def test_active_needs_a_vertex_minibatch():
    from tux2.errors import SchemaError
    with pytest.raises(SchemaError, match="active"):
        MiniBatch(4, [Exchange(acc_exchange)], unit="edge", active=b_on)


@pytest.mark.parametrize("parts", [1, 2])
def test_epoch_stages_records_name_their_iteration_and_no_clock(parts):
    """The stages outside the mini-batches (a GlobalSync before them and one after) get
    trace records of their own, marked ``epoch_stages``, with the iteration they belong
    to and no clock: they run in none, and the clock counter then holds the previous
    iteration's last clock or this one's (which those records repeated, so two records
    of one rank had clock 4). Every other record's clock is its own: 1, 2, … once each."""
    g = random_graph(seed=3)
    mb = MiniBatch(40, [Exchange(acc_exchange), Apply(apply_a, types="a"), Apply(apply_b, types="b")])
    prog = Program(toy_types(), edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                   stages=[GlobalSync(), mb, GlobalSync()], init_vertices=toy_init)
    eng = Engine(prog, g, partitions=parts, seed=5, fuse=False).run(3)
    epoch = [r for r in eng.trace if r.get("epoch_stages")]
    assert [r["iteration"] for r in epoch] == [1, 1, 2, 2, 3, 3] and not any("clock" in r for r in epoch)
    clocked = [r for r in eng.trace if not r.get("epoch_stages")]
    assert [r["clock"] for r in clocked] == list(range(1, eng.clock + 1)) and eng.clock % 3 == 0
    assert [r["iteration"] for r in clocked] == [c * 3 // eng.clock + 1 for c in range(eng.clock)]
    assert [bool(r.get("epoch_stages")) for r in eng.trace[:eng.clock // 3 + 2]] == \
        [True] + [False] * (eng.clock // 3) + [True]            # before the mini-batches, they, after them
    whole = Engine(Program(toy_types(), edge={"w": "f8"}, context=ContextSpec({"s": "f8"}, sum=("s",)),
                           stages=[Exchange(acc_exchange), Apply(apply_a, types="a"), GlobalSync()],
                           init_vertices=toy_init), g, partitions=parts, seed=5).run(2)
    assert [(r["clock"], r["iteration"]) for r in whole.trace] == [(1, 1), (2, 2)]   # an iteration is a clock
