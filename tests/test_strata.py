"""Scale-out that keeps the model (DESIGN: the central invariant, per-edge SGD).

Per-edge SGD in strata is the one-partition run bit for bit on partitions, threads
and worker processes; direct writes that several replicas make in one clock stop
the run; the mini-batch form converges with its defaults on power-law degrees;
divergence is never silent.
"""
import json

import numpy as np
import pytest

import tux2
from tests import naive
from tests.conftest import random_graph, run_cli
from tux2 import Apply, ContextSpec, Engine, Exchange, GlobalSync, MiniBatch, Program, VertexType
from tux2.datasets import netflix_like
from tux2.graph import blocked_order, stratified_order
from tux2.io import write_edge_list
from tux2.partitioning import EdgeView
from tux2.partitioning.stratified import tiles
from tux2.udfs import mf


@pytest.fixture(scope="module")
def skewed():
    """Power-law degrees (rank exponent 1.4 on both sides: the hottest item has ~4 % of
    the ratings), ids in no particular order."""
    return netflix_like(n_users=3000, n_items=500, n_ratings=60_000, user_exponent=1.4, item_exponent=1.4,
                        rank=4, seed=7)


def _stratified(train, blocks=16, seed=0):
    order, bounds = stratified_order(train.src, train.dst, train.n_src, train.n_dst, blocks, seed=seed)
    return train.permuted(order), bounds


def _model(eng):
    return {t: eng.vertex_data(t) for t in ("user", "item")}


def _same(a, b):
    for t in a:
        for f in a[t].dtype.names:
            assert np.array_equal(a[t][f], b[t][f]), (t, f)


# --- the order itself
def test_a_stratum_never_shares_a_vertex_between_its_tiles(skewed):
    """Inside a stratum, the edges of different row blocks touch disjoint users and items,
    strata follow one another, and every tile holds a contiguous id range per side."""
    train, _ = skewed
    g, bounds = _stratified(train, blocks=8)
    row, rb, cb = tiles(EdgeView(g.src, g.dst, g.n_src, g.n_dst), 8)
    r, c = (rb[g.src], cb[g.dst]) if row == 0 else (rb[g.dst], cb[g.src])
    assert bounds[0] == 0 and bounds[-1] == g.num_edges and len(bounds) == 9
    for s in range(8):
        lo, hi = bounds[s], bounds[s + 1]
        assert len(np.unique((c[lo:hi].astype(np.int64) - r[lo:hi]) % 8)) == 1       # one diagonal
        for side in (g.src[lo:hi], g.dst[lo:hi]):
            owners = {}
            for v, tile in zip(side.tolist(), r[lo:hi].tolist()):
                assert owners.setdefault(v, tile) == tile                          # one tile per vertex
    assert (np.diff(rb) >= 0).all() and (np.diff(cb) >= 0).all()                   # ranges of ids
    per_block = np.bincount(r, minlength=8)
    assert per_block.max() < 1.5 * per_block.mean()                                 # balanced edges


def test_clocks_never_span_two_strata():
    g = random_graph(n_a=40, n_b=30, m=600, seed=2)
    g, bounds = _stratified(g, blocks=4)
    prog = Program([VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})], edge={"w": "f8"},
                   context=ContextSpec({"n": "f8"}, sum=("n",)),
                   stages=[MiniBatch(50, [Exchange(_count_edge), Apply()])])
    eng = Engine(prog, g, partitions=2, partitioner="stratified", partitioner_options={"blocks": 4},
                 strata=bounds, fuse=False)
    eng.run(1)
    sizes = np.diff(bounds)
    assert eng.clock == int(sum(-(-s // 50) for s in sizes if s))


def _count_edge(u, v, e, a_u, a_v, ctx):
    ctx.n += 1


# --- bit-identical scale-out
@pytest.mark.parametrize("parts,threads", [(2, 1), (3, 2), (4, 1), (8, 1), (2, 2), (4, 2)])
def test_stratified_sgd_is_the_one_partition_model_bit_for_bit(skewed, parts, threads):
    train, _ = skewed
    g, bounds = _stratified(train)
    prog = mf.program(k=8, mu=float(g.values.mean()))
    one = Engine(prog, g, partitions=1, strata=bounds).run(3)
    eng = Engine(prog, g, partitions=parts, partitioner="stratified", strata=bounds, threads=threads).run(3)
    assert eng.threads == threads
    assert any(p.types[1].n_mirror for p in eng.parts)            # items really are replicated
    _same(_model(one), _model(eng))
    assert eng.context()["rmse"] == pytest.approx(one.context()["rmse"], rel=1e-12)


@pytest.mark.parametrize("parts,threads", [(1, 2), (1, 3), (2, 4), (2, 3), (3, 6)])
def test_threads_sharing_a_partitions_tiles_give_the_one_thread_model(skewed, parts, threads):
    """Engine(tiles=...): each partition's clock is cut at tile starts into one range per
    thread, and the threads update one copy of the model (no replicas between them),
    as FPSGD's threads do: the one-partition, one-thread model bit for bit."""
    train, _ = skewed
    order, bounds, tile_bounds = stratified_order(train.src, train.dst, train.n_src, train.n_dst, 16, tiles=True)
    g = train.permuted(order)
    prog = mf.program(k=8, mu=float(g.values.mean()))
    one = Engine(prog, g, partitions=1, strata=bounds).run(3)
    eng = Engine(prog, g, partitions=parts, partitioner="stratified", strata=bounds, tiles=tile_bounds,
                 threads=threads).run(3)
    assert eng.threads == threads
    cut = [len(v) for k, v in eng._run_cache.items() if k[0] == "groups"]
    assert cut and max(cut) == -(-threads // parts)                 # the clocks really were shared out
    _same(_model(one), _model(eng))
    assert eng.context()["rmse"] == pytest.approx(one.context()["rmse"], rel=1e-12)


def _count_and_keep(u, v, e, a_u, a_v, ctx):
    ctx.n += 1
    ctx.last = e.w


def test_threads_sharing_tiles_add_their_sums_and_refuse_other_context_writes():
    g = random_graph(n_a=40, n_b=30, m=600, seed=2)
    order, bounds, tile_bounds = stratified_order(g.src, g.dst, g.n_src, g.n_dst, 4, tiles=True)
    g = g.permuted(order)
    types = [VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})]
    counting = Program(types, edge={"w": "f8"}, context=ContextSpec({"n": "f8"}, sum=("n",)),
                       stages=[MiniBatch(None, [Exchange(_count_edge), Apply()]), GlobalSync()])
    eng = Engine(counting, g, partitions=1, strata=bounds, tiles=tile_bounds, threads=2).run(2)
    assert eng._groups == [2] and eng.context()["n"] == g.num_edges
    keeping = Program(types, edge={"w": "f8"}, context=ContextSpec({"n": "f8", "last": "f8"}, sum=("n",)),
                      stages=[MiniBatch(None, [Exchange(_count_and_keep), Apply()]), GlobalSync()])
    with pytest.raises(tux2.SchemaError, match=r"'last'.*threads of one partition"):
        Engine(keeping, g, partitions=1, strata=bounds, tiles=tile_bounds, threads=2).run(1)
    Engine(keeping, g, partitions=1, strata=bounds, tiles=tile_bounds, threads=1).run(1)
    with pytest.raises(tux2.SchemaError, match="every stratum start is a tile start"):
        Engine(counting, g, partitions=1, strata=bounds, tiles=[0, g.num_edges])
    with pytest.raises(tux2.SchemaError, match="tiles come with strata"):
        Engine(counting, g, partitions=1, tiles=tile_bounds)
    # tiles that put a vertex's edges of one stratum in two tiles would let threads race on it
    with pytest.raises(tux2.SchemaError, match=r"vertex \d+ has edges in two tiles of stratum"):
        Engine(counting, g, partitions=1, strata=bounds, tiles=np.arange(g.num_edges + 1), threads=2)


def test_every_form_of_the_apply_round_gives_the_same_model(skewed):
    """In one process a stratum's round copies rows between the replicas' arrays; where
    no vertex has more than two replicas (2 partitions) it goes in one phase; else the
    master/mirror protocol. The first two hold back rows the partition writes again in
    the next clock. Forced one by one, each is the one-partition model."""
    train, _ = skewed
    g, bounds = _stratified(train)
    prog = mf.program(k=8, mu=float(g.values.mean()))
    one = _model(Engine(prog, g, partitions=1, strata=bounds).run(2))
    for form in ("copies", "one phase", "master/mirror"):
        eng = Engine(prog, g, partitions=2, partitioner="stratified", strata=bounds)
        if form != "copies":
            eng._plan_room = 0                     # no room for copy plans: messages
        if form == "master/mirror":
            eng._pairs = [False, False]
        eng.run(1)
        first = eng.min_bytes
        eng.run(1)
        if form != "master/mirror":   # from the 2nd epoch, rows written again in the next clock wait
            assert eng.min_bytes - first < 0.8 * first
        assert bool(eng._local_plans) == (form == "copies"), form
        assert eng._pairs[1] is {"copies": None, "one phase": True, "master/mirror": False}[form], form
        _same(one, _model(eng))


@pytest.mark.parametrize("threads", [1, 4])
def test_a_clock_runs_the_tiles_no_value_in_flight_reaches_first(skewed, threads):
    """Between two worker processes (here: the one-phase round's messages in one), a
    clock starts with the tiles whose replicated vertices this partition wrote in the
    last clock, while the other's values are on their way, then takes them and runs
    the rest (with threads: each part shared out): the one-partition model bit for bit,
    with tiles on both sides of the cut."""
    train, _ = skewed
    order, bounds, tile_bounds = stratified_order(train.src, train.dst, train.n_src, train.n_dst, 16, tiles=True)
    g = train.permuted(order)
    prog = mf.program(k=8, mu=float(g.values.mean()))
    one = Engine(prog, g, partitions=1, strata=bounds).run(3)
    eng = Engine(prog, g, partitions=2, partitioner="stratified", strata=bounds, tiles=tile_bounds, threads=threads)
    eng._plan_room = 0                     # no copy plans: the round goes as messages
    assert max(eng._groups) == -(-threads // 2)             # threads share each part's tiles, or not
    eng.run(3)
    splits = [v for k, v in eng._run_cache.items() if k[0] == "waiting"]
    assert splits and all(early[2] + late[2] for early, late in splits)
    assert sum(early[2] for early, _ in splits) and sum(late[2] for _, late in splits)
    _same(_model(one), _model(eng))
    assert eng.context()["rmse"] == pytest.approx(one.context()["rmse"], rel=1e-12)


def _init_touch(name, data, rng):
    if name == "a":
        data["x"] = [3.0, 5.0]
    else:
        data["y"] = 1.0


def _touch_both(u, v, e, a_u, a_v, ctx):
    v.y += e.w * (u.x - v.y)          # w = 0: the replica touches v and leaves it as it was


def test_a_vertex_both_replicas_touched_but_one_changed_takes_that_value():
    """Two replicas of b0 touch it in one clock, only one changes it: no overlap, in
    the one-phase round as in the master/mirror one; both changing it is one."""
    from tux2.partitioning import Assignment
    g = tux2.BipartiteGraph([0, 1], [0, 0], [0.5, 0.0], 2, 1)
    types = [VertexType(n, sync={f: "f8"}, accum={}) for n, f in (("a", "x"), ("b", "y"))]
    prog = Program(types, edge={"w": "f8"}, stages=[MiniBatch(None, [Exchange(_touch_both), Apply()])],
                   init_vertices=_init_touch)
    out = []
    for pairs in (None, [False, False]):
        for b0_master in (0, 1):
            a = Assignment(np.array([0, 1], np.int32), (np.array([0, 1], np.int32),
                                                        np.array([b0_master], np.int32)), 2)
            eng = Engine(prog, g, partitions=2, assignment=a)
            eng._plan_room = 0
            if pairs is not None:
                eng._pairs = pairs
            eng.run(1)
            assert eng._pairs[1] is (pairs is None)
            out.append(eng.vertex_data("b")["y"][0])
    assert out == [2.0] * 4                    # y = 1 + 0.5 (3 - 1); the w = 0 replica changed nothing
    g2 = tux2.BipartiteGraph([0, 1], [0, 0], [0.5, 0.25], 2, 1)
    for pairs in (None, [False, False]):
        eng = Engine(prog, g2, partitions=2, assignment=Assignment(
            np.array([0, 1], np.int32), (np.array([0, 1], np.int32), np.array([0], np.int32)), 2))
        eng._plan_room = 0
        if pairs is not None:
            eng._pairs = pairs
        with pytest.raises(tux2.OverlapError, match="written by up to 2 replicas"):
            eng.run(1)


def test_stratified_sgd_on_four_partitions_is_sequential_sgd():
    """The slow reference: a plain Python loop over the stratified order."""
    train, _ = netflix_like(n_users=150, n_items=40, n_ratings=2000, rank=3, seed=3)
    g, bounds = _stratified(train, blocks=4)
    eng = Engine(mf.program(k=3, mu=3.0, lr=0.05, reg=0.1, adaptive=False), g, partitions=4,
                 partitioner="stratified", partitioner_options={"blocks": 4}, strata=bounds, threads=2)
    P, Q, _, _ = naive.sequential_sgd(g, eng.vertex_data("user")["p"], eng.vertex_data("item")["p"], 3.0, 0.05, 0.1)
    eng.run(1)
    np.testing.assert_allclose(eng.vertex_data("user")["p"], P, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(eng.vertex_data("item")["p"], Q, rtol=2e-3, atol=2e-4)


@pytest.mark.slow
def test_workers_and_threads_give_the_one_partition_model(tmp_path, skewed):
    """Real worker processes over ZeroMQ (distributed ingress builds the strata from
    global degrees): 2 and 4 workers, 2 workers x 2 threads and 4 partitions in one
    process write the model of one partition, bit for bit."""
    train, _ = skewed
    path = tmp_path / "r.txt"
    write_edge_list(path, train)
    models = {}
    for name, extra in (("one", []), ("p4", ["--partitions", "4"]), ("w2", ["--workers", "2"]),
                        ("w4", ["--workers", "4"]), ("w2t2", ["--workers", "2", "--threads", "2"])):
        out = tmp_path / name
        r = run_cli("run", "mf", str(path), "--k", "6", "--epochs", "2", "--quiet", "--timeout", "20",
                    "--out", str(out), *extra, timeout=240)
        assert r.returncode == 0, r.stderr
        models[name] = {f: dict(np.load(out / f)) for f in ("user.npz", "item.npz")}
    for name in ("p4", "w2", "w4", "w2t2"):
        for f in ("user.npz", "item.npz"):
            for key in ("p", "b"):
                assert np.array_equal(models[name][f][key], models["one"][f][key]), (name, f, key)


# --- no silent over-stepping
def test_summed_replica_steps_are_refused_and_accumulating_is_not(skewed):
    train, _ = skewed
    g = train.permuted(blocked_order(train.src, train.dst, train.n_src, train.n_dst))
    mu = float(g.values.mean())
    with pytest.raises(tux2.OverlapError, match=r"(?s)item vertices.*replicas.*stratified_order"):
        Engine(mf.program(k=4, mu=mu), g, partitions=4, partitioner="bicut").run(1)
    # opting in runs (the old summed form), accumulate-only programs never trip the check
    Engine(mf.program(k=4, mu=mu, overlap="allow"), g, partitions=4, partitioner="bicut").run(1)
    Engine(mf.program(k=4, mu=mu, mode="minibatch"), g, partitions=4, partitioner="random").run(1)


def _direct(u, v, e, a_u, a_v, ctx):
    d = e.w - (u.x - v.y)
    u.x -= 0.1 * d
    v.y += 0.1 * d


def test_a_hand_written_direct_write_program_is_refused_on_overlapping_replicas():
    g = random_graph(n_a=30, n_b=20, m=300, seed=5)
    types = [VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})]
    def prog(overlap):
        return Program(types, edge={"w": "f8"}, stages=[MiniBatch(100, [Exchange(_direct), Apply(overlap=overlap)])])
    with pytest.raises(tux2.OverlapError, match="written by up to"):
        Engine(prog("error"), g, partitions=3, partitioner="random").run(1)
    Engine(prog("error"), g, partitions=1).run(1)                   # one replica each: fine
    Engine(prog("allow"), g, partitions=3, partitioner="random").run(1)


# --- mini-batch defaults on power-law degrees
@pytest.mark.parametrize("batch", [1000, 5000, 50_000])
def test_minibatch_defaults_converge_on_power_law_degrees(skewed, batch):
    train, test = skewed
    assert np.bincount(train.dst).max() > 0.03 * train.num_edges      # a hot item
    mu = float(train.values.mean())
    eng = Engine(mf.program(k=8, mode="minibatch", batch_size=batch, mu=mu), train, partitions=1)
    curve = []
    for _ in range(10):
        eng.run(1)
        curve.append(mf.rmse(eng.vertex_data("user"), eng.vertex_data("item"), test, mu))
    assert all(b < a for a, b in zip(curve, curve[1:])), curve


def test_the_papers_plain_step_diverges_there_and_says_so(skewed):
    train, _ = skewed
    prog = mf.program(k=8, mode="minibatch", step="plain", batch_size=5000, mu=float(train.values.mean()))
    with pytest.raises(tux2.DivergenceError, match=r"iteration \d+ .*'loss'.*lower the learning rate"):
        Engine(prog, train, partitions=1).run(10)


def test_a_custom_program_that_diverges_stops_with_the_iteration_named():
    def blow_up(u, v, e, a_u, a_v, ctx):
        ctx.s += ctx.s * 1e300 + 1.0
    prog = Program([VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})], edge={"w": "f8"},
                   context=ContextSpec({"s": "f8"}), stages=[Exchange(blow_up), GlobalSync()])
    with pytest.raises(tux2.DivergenceError, match=r"iteration 1 .*'s'"):
        Engine(prog, random_graph(seed=1)).run(5)


def test_the_cli_says_which_partitioner_strata_need(tmp_path, skewed):
    train, _ = skewed
    write_edge_list(tmp_path / "r.txt", train)
    r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--partitions", "2", "--partitioner", "random")
    assert r.returncode == 2 and "--partitioner stratified" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--partitions", "2", "--order", "blocked",
                "--partitioner", "bicut", "--epochs", "1")
    assert r.returncode == 2 and "replicas" in r.stderr and "Traceback" not in r.stderr
    assert "leave out --order" in r.stderr                          # the command line's remedies
    r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--workers", "3", "--partitions", "2")
    assert r.returncode == 2 and "fewer than the 3 workers" in r.stderr
    r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--batch-unit", "vertex", "--partitions", "2")
    assert r.returncode == 2 and "--batch-unit vertex" in r.stderr


def test_more_partitions_than_the_default_blocks_say_whose_model_they_give(tmp_path, skewed):
    """Above 16 partitions the blocks follow P: the header says so, and the model is that
    of --blocks P on one partition (bit for bit), which is not the default one's."""
    train, _ = skewed
    write_edge_list(tmp_path / "r.txt", train)
    args = ("run", "mf", str(tmp_path / "r.txt"), "--k", "4", "--epochs", "2", "--threads", "1")
    many, same, default = (run_cli(*args, *more) for more in (("--partitions", "17"), ("--blocks", "17"), ()))
    assert many.returncode == same.returncode == default.returncode == 0, many.stderr + same.stderr
    assert "note: 17 partitions take 17 row and column blocks" in many.stdout
    assert "note:" not in same.stdout and "row and column blocks" not in default.stdout
    last = [[x for x in r.stdout.splitlines() if x.startswith("epoch")][-1].split("time")[0]
            for r in (many, same, default)]
    assert last[0] == last[1] != last[2], last


def test_slack_trades_staleness_for_speed_without_false_overlaps(tmp_path, skewed):
    """With slack a worker runs ahead: a master's values then hold later clocks' changes
    and an earlier round may already have synced this round's masters. Neither counts
    as two replicas writing in one clock; the model stays close to the exact one."""
    train, test = skewed
    write_edge_list(tmp_path / "r.txt", train)
    write_edge_list(tmp_path / "t.txt", test)
    rmse = {}
    for name, extra in (("exact", []), ("slack", ["--workers", "2", "--slack", "2"])):
        r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--test", str(tmp_path / "t.txt"), "--k", "6",
                    "--epochs", "3", "--quiet", "--timeout", "20", "--metrics", str(tmp_path / f"{name}.jsonl"),
                    *extra, timeout=240)
        assert r.returncode == 0, r.stderr
        rmse[name] = [json.loads(x)["test_rmse"] for x in open(tmp_path / f"{name}.jsonl")][-1]
    assert abs(rmse["slack"] - rmse["exact"]) < 0.02, rmse


def test_a_parameter_that_is_not_a_number_is_named_before_training():
    prog = Program([VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"})], edge={"w": "f8"},
                   context=ContextSpec({"lr": "f8"}, init={"lr": float("nan")}), stages=[GlobalSync()])
    with pytest.raises(tux2.SchemaError, match="'lr'.*starts at nan"):
        Engine(prog, random_graph(seed=1))


def _lexsort_blocked(src, dst, n_src, n_dst, blocks, seed, within):
    """blocked_order as np.lexsort over whole-edge keys (the definition)."""
    rng = np.random.default_rng(seed)
    tile = rng.permutation(blocks * blocks)[(src.astype(np.int64) * blocks // max(n_src, 1)) * blocks
                                            + dst.astype(np.int64) * blocks // max(n_dst, 1)]
    if within == "shuffle":
        return np.lexsort((rng.random(len(src)), tile))
    if within == "input":
        return np.argsort(tile, kind="stable")
    major, minor = (src, dst) if n_src >= n_dst else (dst, src)
    return np.lexsort((minor, major, tile))


def _lexsort_stratified(src, dst, n_src, n_dst, blocks, seed):
    stratum, r = tux2.graph.strata_tiles(EdgeView(src.astype(np.int64), dst.astype(np.int64), n_src, n_dst),
                                         blocks, seed)
    major, minor = (src, dst) if n_src >= n_dst else (dst, src)
    return np.lexsort((minor, major, r, stratum)), np.r_[0, np.cumsum(np.bincount(stratum, minlength=blocks))]


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_edge_orders_are_the_lexsort_orders(dtype):
    """blocked_order and stratified_order (counting sort by tile, then a sort inside
    each tile) equal np.lexsort over the whole edge arrays, for int32 and int64 ids."""
    rng = np.random.default_rng(5)
    for trial in range(12):
        ns, nd, m = int(rng.integers(1, 200)), int(rng.integers(1, 200)), int(rng.integers(0, 2000))
        src, dst = rng.integers(0, ns, m).astype(dtype), rng.integers(0, nd, m).astype(dtype)
        for within in ("sorted", "shuffle", "input"):
            for b in (1, 3, 8):
                np.testing.assert_array_equal(blocked_order(src, dst, ns, nd, b, trial, within),
                                              _lexsort_blocked(src, dst, ns, nd, b, trial, within))
        if m:
            for b in (1, 4, 16):
                got, want = stratified_order(src, dst, ns, nd, b, trial), _lexsort_stratified(src, dst, ns, nd, b,
                                                                                               trial)
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])


def test_stratified_order_with_more_tiles_than_edges():
    """B² tiles far above the edge count (B = 3000 for 50 edges) sort the tile numbers
    instead of counting them: the lexsort order, without B² memory."""
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 40, 50), rng.integers(0, 30, 50)
    got, want = stratified_order(src, dst, 40, 30, 3000, 1), _lexsort_stratified(src, dst, 40, 30, 3000, 1)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_stratified_order_takes_any_integer_sequences():
    """Lists and narrow integer dtypes give the int64 arrays' order (the group kernel
    gets arrays, not reflected lists)."""
    rng = np.random.default_rng(0)
    s, d = rng.integers(0, 100, 1000), rng.integers(0, 50, 1000)
    want = stratified_order(s, d, 100, 50, blocks=4, seed=3)
    for src, dst in ((s.tolist(), d.tolist()), (s.astype(np.int32), d.astype(np.uint16))):
        got = stratified_order(src, dst, 100, 50, blocks=4, seed=3)
        assert all(np.array_equal(x, y) for x, y in zip(want, got))


def test_small_calls_run_their_partitions_in_the_calling_thread():
    """A call whose work (rows or edges) is below SERIAL_BELOW runs every partition
    in this thread (a hand-over to a pool thread costs more than such a task, which
    made a 4-partition GLM at batch 64 2.5x slower with 2 threads than with 1);
    larger calls, or calls of unknown size, still use the pool."""
    import threading
    from tux2.engine import SERIAL_BELOW
    g = random_graph(60, 40, 600, seed=3)
    eng = Engine(mf.program(k=2, mu=float(g.values.mean())), g, partitions=4, threads=2)
    me = threading.get_ident()

    def who(p):
        return threading.get_ident()
    assert set(eng._each_part(who, eng.parts, SERIAL_BELOW - 1)) == {me}
    for work in (SERIAL_BELOW, None):
        assert set(eng._each_part(who, eng.parts, work)) - {me}
