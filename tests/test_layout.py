"""The layout builder (counting sorts) against the reference builder it replaced
(tests/naive_layout.py: np.unique, lexsort, searchsorted): the same partitions,
array for array, for every partitioning strategy, several P, every edge order a
program can ask for, and sharded graphs (distributed ingress) whose mirrors are
registered with their masters through ``share``."""
import threading

import numpy as np
import pytest

from tux2 import ContextSpec, Exchange, MiniBatch, Program, VertexType
from tux2 import partitioning
from tux2.graph import BipartiteGraph
from tux2.layout import build_partitions
from tests.naive_layout import build_partitions_naive


def noop(u, v, e, a_u, a_v, ctx):
    pass


def program(orders):
    """A program whose edge orders are ``orders`` (None: global edge order; 0/1: by type)."""
    stages = []
    for o in orders:
        if o is None:
            stages.append(Exchange(noop))
        else:
            stages.append(MiniBatch(7, [Exchange(noop)], unit="vertex", enumerate="ab"[o]))
    return Program([VertexType("a", sync={"x": "f8"}, master={"k": "i4"}), VertexType("b", sync={"y": ("f4", 2)})],
                   edge={"w": "f8"}, context=ContextSpec(fields={"s": "f8"}), stages=stages)


def powerlaw_graph(n_a, n_b, m, seed):
    """Power-law degrees on both sides, duplicates kept, a few isolated vertices."""
    rng = np.random.default_rng(seed)
    wa = np.arange(1, n_a + 1) ** -0.8
    wb = np.arange(1, n_b + 1) ** -1.1
    src = rng.permutation(n_a)[rng.choice(n_a, m, p=wa / wa.sum())]
    dst = rng.permutation(n_b)[rng.choice(n_b, m, p=wb / wb.sum())]
    return BipartiteGraph(src, dst, rng.normal(size=m), n_a + 3, n_b + 2, ("a", "b"))


def inputs(prog, g, seed=0):
    rng = np.random.default_rng(seed)
    vdata = prog.init_data(g.n, rng)
    for t, f in ((0, "x"), (1, "y")):
        vdata[t][f] = rng.normal(size=vdata[t][f].shape)
    vdata[0]["k"] = np.arange(g.n_src)
    edata = np.zeros(g.num_edges, prog.edge_dtype)
    edata["w"] = g.values
    return vdata, edata


def assert_same(new, old):
    assert [p.rank for p in new] == [p.rank for p in old]
    for a, b in zip(new, old):
        for ta, tb in zip(a.types, b.types):
            assert ta.n_master == tb.n_master
            for f in ("gid", "data", "mirror_master_part", "mirror_master_lid", "mm_ptr", "mm_part", "mm_lid"):
                np.testing.assert_array_equal(getattr(ta, f), getattr(tb, f), err_msg=f)
                assert getattr(ta, f).dtype == getattr(tb, f).dtype, f
            assert (ta.snapshot is None) == (tb.snapshot is None)
            if ta.snapshot is not None:
                np.testing.assert_array_equal(ta.snapshot, tb.snapshot)
        for f in ("ea", "eb", "eid", "edata"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
        assert list(a.orders) == list(b.orders)
        for o in a.orders:
            for x, y in zip(a.orders[o], b.orders[o]):
                np.testing.assert_array_equal(x, y, err_msg=f"order {o}")
                # one part stored by vertex: the sorted keys (that type's edge ends) in 4 bytes
                assert x.dtype == y.dtype or (len(new) == 1 and o == next(iter(a.orders)) and
                                              (x.dtype, y.dtype) == (np.int32, np.int64)), (o, x.dtype, y.dtype)


ORDERS = [[None], [0], [1], [1, None], [None, 0, 1]]


@pytest.mark.parametrize("strategy", partitioning.available())
@pytest.mark.parametrize("parts", [1, 2, 3, 4, 6])
def test_layout_equals_the_reference_builder(strategy, parts):
    g = powerlaw_graph(60, 40, 400, seed=parts)
    a = partitioning.partition(strategy, g.src, g.dst, g.n_src, g.n_dst, parts, seed=1, strict=False)
    for orders in ORDERS:
        prog = program(orders)
        vdata, edata = inputs(prog, g)
        old = build_partitions_naive(prog, g, a, [v.copy() for v in vdata], edata.copy(), prog.context.new())
        new = build_partitions(prog, g, a, vdata, edata, prog.context.new())
        assert_same(new, old)


@pytest.mark.parametrize("shift,threads", [(1, 1), (3, 1), (9, 1), (1, 3), (3, 2), (9, 3)])
def test_the_two_pass_transpose_lays_out_what_one_pass_does(monkeypatch, shift, threads):
    """Large one-part transposes go by buckets of 2^shift keys, then by key inside
    each bucket (compile.place), each pass shared out among threads; forced onto a
    small graph here, from records and from columns, they give the reference
    builder's layout (ties in edge order) whatever the threads."""
    from tux2 import compile, layout
    from tux2.layout import EdgeColumns
    monkeypatch.setattr(layout, "place_shift", lambda n, m: shift)
    monkeypatch.setattr(layout, "cores", lambda: threads)
    monkeypatch.setattr(compile, "PLACE_SHARED", 1)
    g = powerlaw_graph(60, 40, 400, seed=shift)
    a = partitioning.partition("bicut", g.src, g.dst, g.n_src, g.n_dst, 1, seed=1, strict=False)
    for orders in ORDERS:
        prog = program(orders)
        vdata, edata = inputs(prog, g)
        old = build_partitions_naive(prog, g, a, [v.copy() for v in vdata], edata.copy(), prog.context.new())
        assert_same(build_partitions(prog, g, a, [v.copy() for v in vdata], edata, prog.context.new()), old)
        cols = EdgeColumns(g.num_edges, prog.edge_dtype, {"w": g.values})
        assert_same(build_partitions(prog, g, a, vdata, cols, prog.context.new()), old)


def test_one_part_with_int32_ids_lays_out_the_same_values():
    """Loaded files keep int32 ids; the one-part transpose narrows the other end to
    int32 where it fits: the same values as the reference, edge ids made on demand."""
    g = powerlaw_graph(60, 40, 400, seed=9)
    g32 = BipartiteGraph(g.src.astype(np.int32), g.dst.astype(np.int32), g.values, g.n_src, g.n_dst, ("a", "b"))
    a = partitioning.partition("random", g.src, g.dst, g.n_src, g.n_dst, 1, seed=0, strict=False)
    for orders in ORDERS:
        prog = program(orders)
        vdata, edata = inputs(prog, g)
        old = build_partitions_naive(prog, g, a, [v.copy() for v in vdata], edata.copy(), prog.context.new())
        new = build_partitions(prog, g32, a, vdata, edata, prog.context.new())
        assert new[0].n_edges == g.num_edges
        for f in ("ea", "eb", "eid", "edata"):
            np.testing.assert_array_equal(getattr(new[0], f), getattr(old[0], f), err_msg=f)
        for o in old[0].orders:
            for x, y in zip(new[0].orders[o], old[0].orders[o]):
                np.testing.assert_array_equal(x, y, err_msg=f"order {o}")


def test_edge_records_keep_their_program_s_dtype():
    """Two programs whose edge records have the same layout but other field names, laid
    out in one process: each partition's records have its own program's dtype (a
    layout kernel returning records numba made once gave a later program the first
    one's dtype when its code came from numba's cache: tests/test_glm.py after this file)."""
    g = powerlaw_graph(30, 20, 200, seed=3)
    a = partitioning.partition("random", g.src, g.dst, g.n_src, g.n_dst, 1, seed=0, strict=False)
    for name in ("w", "x", "w"):
        prog = Program([VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})], edge={name: "f8"},
                       context=ContextSpec(fields={"s": "f8"}),
                       stages=[MiniBatch(7, [Exchange(noop)], unit="vertex", enumerate="a")])
        edata = np.zeros(g.num_edges, prog.edge_dtype)
        edata[name] = g.values
        part = build_partitions(prog, g, a, prog.init_data(g.n, np.random.default_rng(0)), edata,
                                prog.context.new())[0]
        assert part.edata.dtype == prog.edge_dtype
        np.testing.assert_array_equal(part.edata[name], g.values[part.eid])


def column_program(orders):
    """Edge fields of several kinds: columns for some, a constant, one left at 0."""
    stages = [Exchange(noop) if o is None else MiniBatch(7, [Exchange(noop)], unit="vertex", enumerate="ab"[o])
              for o in orders]
    return Program([VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})],
                   edge={"w": "f8", "ws": "f8", "k": "f4", "c": "i4", "z": "i8"},
                   context=ContextSpec(fields={"s": "f8"}), stages=stages)


@pytest.mark.parametrize("parts", [1, 3])
def test_edge_columns_lay_out_as_the_records_they_stand_for(parts):
    """EdgeColumns (a program's edge_values) give the partitions the records a global
    record array of the same values gives: written straight into place by the one-part
    transpose, through records() for every other layout; float32 and int64 columns
    converted to their fields, a scalar broadcast, a field without a column 0."""
    from tux2.layout import EdgeColumns
    g = powerlaw_graph(60, 40, 400, seed=11)
    rng = np.random.default_rng(5)
    cols = {"w": g.values, "k": rng.random(g.num_edges).astype(np.float32) * 7,
            "c": rng.integers(0, 100, g.num_edges), "z": -3}
    a = partitioning.partition("bicut", g.src, g.dst, g.n_src, g.n_dst, parts, seed=1, strict=False)
    for orders in ORDERS:
        prog = column_program(orders)
        vdata = prog.init_data(g.n, np.random.default_rng(0))
        records = np.zeros(g.num_edges, prog.edge_dtype)
        for f, c in cols.items():
            records[f] = c
        old = build_partitions(prog, g, a, [v.copy() for v in vdata], records, prog.context.new())
        new = build_partitions(prog, g, a, vdata, EdgeColumns(g.num_edges, prog.edge_dtype, cols),
                               prog.context.new())
        assert_same(new, old)
        assert (new[0].edata["z"] == -3).all() and (new[0].edata["ws"] == 0).all()


def test_edge_columns_are_checked_and_engines_apply_them_before_init_edges():
    from tux2 import Engine
    from tux2.errors import SchemaError
    from tux2.layout import EdgeColumns
    g = powerlaw_graph(30, 20, 200, seed=12)
    prog = column_program([1])
    with pytest.raises(SchemaError, match="'q' is not an edge field"):
        EdgeColumns(g.num_edges, prog.edge_dtype, {"q": g.values})
    with pytest.raises(SchemaError, match="'w' has shape \\(199,\\)"):
        EdgeColumns(g.num_edges, prog.edge_dtype, {"w": g.values[1:]})

    def init_edges(edata, rng):
        edata["c"] = edata["k"] * 2                     # sees the columns already in place
    both = Program(prog.types, prog.edge_fields, prog.context, prog.stages, init_edges=init_edges,
                   edge_values={"k": np.arange(g.num_edges) % 5})
    part = Engine(both, g).parts[0]
    eid = part.eid
    np.testing.assert_array_equal(part.edata["w"], g.values[eid])        # the graph's values: first field
    np.testing.assert_array_equal(part.edata["k"], eid % 5)
    np.testing.assert_array_equal(part.edata["c"], 2 * (eid % 5))
    from tux2.ingress import Shard                     # a worker's shard: columns are over the whole edge list
    shard = Shard(g.src, g.dst, g.values, np.arange(g.num_edges), None, g.n_src, g.n_dst, g.num_edges, ("a", "b"),
                  (False, False), None, None)
    with pytest.raises(SchemaError, match="edge_values cannot use distributed ingress"):
        Engine(Program(prog.types, prog.edge_fields, prog.context, prog.stages, edge_values={"k": 1.0}), shard,
               assignment=object())                  # not reached: the program is refused first


def test_layout_of_a_subset_of_parts_and_of_an_empty_graph():
    g = powerlaw_graph(30, 20, 200, seed=4)
    a = partitioning.partition("hdrf", g.src, g.dst, g.n_src, g.n_dst, 4, seed=0, strict=False)
    prog = program([1, None])
    vdata, edata = inputs(prog, g)
    old = build_partitions_naive(prog, g, a, vdata, edata, prog.context.new(), only=[1, 3])
    assert_same(build_partitions(prog, g, a, vdata, edata, prog.context.new(), only=[1, 3]), old)
    e = BipartiteGraph(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), 5, 3, ("a", "b"))
    a = partitioning.partition("random", e.src, e.dst, e.n_src, e.n_dst, 2, seed=0, strict=False)
    vdata, edata = inputs(prog, e)
    assert_same(build_partitions(prog, e, a, vdata, edata, prog.context.new()),
                build_partitions_naive(prog, e, a, vdata, edata, prog.context.new()))


class FakeShard:
    """One worker's share of a graph as tux2.ingress.Shard holds it: its edges in
    arrival order, their global edge ids, the global sizes."""

    def __init__(self, g, sel, eid, replicated, share):
        self.src, self.dst, self.values, self.eid = g.src[sel], g.dst[sel], g.values[sel], eid
        self.n, self.replicated, self.share = g.n, replicated, share


def sharded(builder, prog, g, a, world, seed):
    """Run ``builder`` on ``world`` threads, each with the shard of the parts it owns
    (part % world), edges in a shuffled arrival order, mirrors shared by a barrier."""
    rng = np.random.default_rng(seed)
    inbox = [dict() for _ in range(world)]
    barrier = threading.Barrier(world)
    lock = threading.Lock()
    replicated = tuple(bool((a.edge_part != a.master[t][e]).any()) for t, e in ((0, g.src), (1, g.dst)))

    def share_for(rank):
        def share(t, records):
            with lock:
                for q, rec in records.items():
                    box = inbox[q % world].setdefault((t, q), [])
                    box.append(rec)
            barrier.wait()
            got = {q: tuple(np.concatenate([r[i] for r in recs]) for i in range(3))
                   for (tt, q), recs in inbox[rank].items() if tt == t}
            barrier.wait()
            return got
        return share

    out, errors = [None] * world, []

    def work(rank):
        try:
            sel = np.flatnonzero(a.edge_part % world == rank)
            sel = sel[rng.permutation(len(sel))] if rank else sel
            shard = FakeShard(g, sel, sel.astype(np.int64), replicated, share_for(rank))
            sa = partitioning.Assignment(a.edge_part[sel], a.master, a.parts)
            vdata, edata = inputs(prog, g)
            out[rank] = builder(prog, shard, sa, vdata, edata[sel], prog.context.new(),
                                only=[p for p in range(a.parts) if p % world == rank], share=shard.share)
        except Exception as e:          # surfaced below, with the barrier broken for the others
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(world)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    if errors:
        raise errors[0]
    return out


@pytest.mark.parametrize("strategy,parts,world", [("hdrf", 4, 2), ("random", 5, 3), ("bicut", 3, 3),
                                                  ("grid", 4, 2)])
def test_sharded_layout_equals_the_reference_builder(strategy, parts, world):
    g = powerlaw_graph(50, 30, 300, seed=7)
    a = partitioning.partition(strategy, g.src, g.dst, g.n_src, g.n_dst, parts, seed=2, strict=False)
    for orders in ([None], [1, None], [0]):
        prog = program(orders)
        new = sharded(build_partitions, prog, g, a, world, seed=3)
        old = sharded(build_partitions_naive, prog, g, a, world, seed=3)
        for n, o in zip(new, old):
            assert_same(n, o)
