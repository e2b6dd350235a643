"""Partitioning library: every strategy against its plain-Python transcription,
the closed-form oracles of reference/partitioning.md §2, and the properties
every vertex cut must have."""
import math

import numpy as np
import pytest

from tux2 import partitioning as P
from tux2.errors import PartitionError
from tux2.partitioning.hashing import Hasher, mix32
from tux2.partitioning.powerlaw import expected_replication, powerlaw_graph, powerlyra_model
from tests import naive_partitioning as naive
from tests.conftest import random_graph

HOMOGENEOUS = [n for n in P.available() if not P.get(n).bipartite_only]
ALL = P.available()


def _graph(name, g):
    """(src, dst, n_src, n_dst) for strategy ``name`` on bipartite graph g
    (homogeneous strategies run on it bipartitely too)."""
    return g.src, g.dst, g.n_src, g.n_dst


@pytest.fixture(scope="module")
def small_powerlaw():
    s, t = powerlaw_graph(3000, 2.0, in_degree=True, seed=3)
    return s, t, 3000


# ---------------------------------------------------------------- hashes, generator

def test_jenkins_kernel_equals_numpy_mix_and_powergraph_at_seed_0():
    ids = np.arange(0, 5_000_000, 9973, dtype=np.int64)
    np.testing.assert_array_equal(Hasher("jenkins").vertex(ids), mix32(ids.astype(np.uint32)))
    u, v = ids[:200], ids[::-1][:200]
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    expect = mix32(lo.astype(np.uint32) ^ np.uint32(0x9E3779B9)) ^ mix32(hi.astype(np.uint32) ^ np.uint32(0x7F4A7C15))
    np.testing.assert_array_equal(Hasher("jenkins").edge(u, v), expect)
    np.testing.assert_array_equal(Hasher("jenkins").edge(u, v), Hasher("jenkins").edge(v, u))
    assert (Hasher("jenkins", seed=1).vertex(ids) != Hasher("jenkins").vertex(ids)).mean() > 0.99
    h = Hasher("uniform", seed=5).vertex(np.arange(200_000)) % 48
    counts = np.bincount(h, minlength=48)
    assert counts.min() > 0.9 * counts.mean() and counts.max() < 1.1 * counts.mean()


def test_powerlaw_generator_matches_the_loop_and_its_expected_size():
    n, alpha = 500, 2.1
    s, t = powerlaw_graph(n, alpha, seed=1)
    # PowerGraph's loop, one process
    pdf = np.arange(1, n + 1, dtype=float) ** -alpha
    cdf = np.cumsum(pdf) / pdf.sum()
    U = np.random.default_rng(1).random(n)
    es, et, tt = [], [], 0
    for src in range(n):
        d = int(np.searchsorted(cdf, U[src], side="right")) + 1
        for _ in range(d):
            tt = (tt + 2654435761) % n
            while tt == src:
                tt = (tt + 2654435761) % n
            es.append(src)
            et.append(tt)
    np.testing.assert_array_equal(s, es)
    np.testing.assert_array_equal(t, et)
    s2, t2 = powerlaw_graph(n, alpha, in_degree=True, seed=1)
    np.testing.assert_array_equal(s2, t)
    np.testing.assert_array_equal(t2, s)
    big = np.mean([len(powerlaw_graph(20000, 2.5, seed=k)[0]) for k in range(5)])
    H = lambda n, a: np.sum(np.arange(1, n + 1, dtype=float) ** -a)  # noqa: E731
    assert big == pytest.approx(20000 * H(20000, 1.5) / H(20000, 2.5), rel=0.05)


@pytest.mark.slow                     # 7 s (.ci/run runs it)
def test_powerlyra_model_reproduces_table_1():
    # reference/partitioning.md §2.2, V = 10^7 (random / grid / hybrid)
    for p, alpha, expect in ((48, 2.0, (12.41, 8.55, 4.28)), (16, 2.2, (5.57, 4.39, 3.20))):
        got = powerlyra_model(10 ** 7, p, alpha)
        assert (got["random"], got["grid"], got["hybrid"]) == pytest.approx(expect, abs=0.006)


# ---------------------------------------------------------------- against the references

def _check_same(name, a, ref, n_src=None):
    edge_part, master = ref
    np.testing.assert_array_equal(a.edge_part, edge_part, err_msg=f"{name}: edge placement")
    np.testing.assert_array_equal(np.concatenate(a.master), master, err_msg=f"{name}: masters")


@pytest.mark.parametrize("p", [1, 4, 9, 12])
def test_homogeneous_strategies_equal_plain_python(small_powerlaw, p):
    s, t, n = small_powerlaw
    s, t = s[:4000], t[:4000]
    refs = {"random": naive.random_cut(s, t, n, p), "dbh": naive.dbh(s, t, n, p),
            "grid": naive.grid(s, t, n, p), "greedy": naive.greedy(s, t, n, p),
            "hdrf": naive.hdrf(s, t, n, p), "hybrid": naive.hybrid(s, t, n, p, theta=3),
            "ginger": naive.ginger(s, t, n, p, theta=3)}
    for name, ref in refs.items():
        opts = {"theta": 3} if name in ("hybrid", "ginger") else {}
        _check_same(name, P.partition(name, s, t, n, None, p, **opts), ref)


@pytest.mark.parametrize("fav", [0, 1])
def test_bipartite_strategies_equal_plain_python(fav):
    g = random_graph(n_a=400, n_b=60, m=3000, seed=5)
    s, t, n = g.src, g.dst + g.n_src, g.n_src + g.n_dst
    for name, fn in (("bicut", naive.bicut), ("aweto", naive.aweto)):
        a = P.partition(name, g.src, g.dst, g.n_src, g.n_dst, 6, favorite=fav)
        _check_same(name, a, fn(s, t, n, 6, g.n_src, fav))
    # the homogeneous strategies treat the second type's ids as offset global ids
    a = P.partition("hdrf", g.src, g.dst, g.n_src, g.n_dst, 5)
    _check_same("hdrf", a, naive.hdrf(s, t, n, 5))


def test_quality_report_equals_set_counting():
    g = random_graph(n_a=300, n_b=80, m=2500, seed=6)
    g_n = g.n_src + g.n_dst
    a = P.partition("hdrf", g.src, g.dst, g.n_src, g.n_dst, 7)
    # an isolated vertex of each type (no edges): counted with one replica
    rep = P.quality(a, g.src, g.dst, g.n_src, g.n_dst, type_names=("a", "b"))
    R, Acnt = naive.replicas(a.edge_part, g.src, g.dst + g.n_src, np.concatenate(a.master))
    assert rep["replication_factor"] == pytest.approx(sum(R) / g_n)
    assert rep["replication_factor_no_master_only"] == pytest.approx(sum(max(x, 1) for x in Acnt) / g_n)
    assert rep["replication_factor_a"] == pytest.approx(sum(R[: g.n_src]) / g.n_src)
    assert rep["replication_factor_b"] == pytest.approx(sum(R[g.n_src:]) / g.n_dst)
    edges = np.bincount(a.edge_part, minlength=7)
    assert rep["edge_balance"] == pytest.approx(edges.max() / edges.mean())
    assert rep["mirrors"] == sum(R) - g_n
    assert sum(rep["mirrors_per_part"]) == rep["mirrors"] and sum(rep["edges_per_part"]) == g.num_edges
    table = P.format_table([rep, rep])
    assert "replication factor λ" in table and f"{rep['replication_factor']:.4f}" in table


# ---------------------------------------------------------------- properties of every cut

@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("p", [1, 3, 8])
def test_every_strategy_is_valid_and_deterministic(name, p):
    g = random_graph(n_a=200, n_b=50, m=2000, seed=1)
    n_a, n_b = g.n_src + 5, g.n_dst + 3          # a few vertices without edges
    a = P.partition(name, g.src, g.dst, n_a, n_b, p, seed=4)
    assert a.edge_part.shape == (g.num_edges,) and a.edge_part.min() >= 0 and a.edge_part.max() < p
    hashed = Hasher("jenkins", seed=4).vertex_part(n_a + n_b, p)
    for t, n in enumerate((n_a, n_b)):
        assert a.master[t].shape == (n,) and a.master[t].min() >= 0 and a.master[t].max() < p
    master = np.concatenate(a.master)
    ends = np.concatenate([g.src, g.dst + n_a])
    parts = np.concatenate([a.edge_part, a.edge_part])
    isolated = np.setdiff1d(np.arange(n_a + n_b), ends)
    np.testing.assert_array_equal(master[isolated], hashed[isolated])
    moved = np.flatnonzero(master != hashed)
    # a master away from its hash is always on a part holding one of the vertex's edges
    held = set(zip(ends.tolist(), parts.tolist()))
    assert all((v, master[v]) in held for v in moved.tolist())
    b = P.partition(name, g.src, g.dst, n_a, n_b, p, seed=4)
    np.testing.assert_array_equal(a.edge_part, b.edge_part)
    np.testing.assert_array_equal(np.concatenate(a.master), np.concatenate(b.master))
    c = P.partition(name, g.src, g.dst, n_a, n_b, p, seed=5)
    if p > 1 and name != "stratified":           # stratified places by degree ranges, not by hash
        assert (a.edge_part != c.edge_part).any()


@pytest.mark.parametrize("name", ["bicut", "aweto"])
def test_favourite_side_has_exactly_one_replica(name):
    g = random_graph(n_a=300, n_b=40, m=3000, seed=2)
    for fav, ends in ((0, g.src), (1, g.dst)):
        a = P.partition(name, g.src, g.dst, g.n_src, g.n_dst, 6, favorite=fav)
        assert (a.edge_part == a.master[fav][ends]).all()
        rep = P.quality(a, g.src, g.dst, g.n_src, g.n_dst)
        assert rep[f"replication_factor_{('src', 'dst')[fav]}"] == 1.0


def test_bicut_auto_keeps_the_costlier_side_mirror_free():
    g = random_graph(n_a=300, n_b=40, m=3000, seed=2)
    a = P.partition("bicut", g.src, g.dst, g.n_src, g.n_dst, 6)
    assert (a.edge_part == a.master[0][g.src]).all()        # 300 low-degree users cost more
    # …unless the 40 items are much bigger records
    a = P.partition("bicut", g.src, g.dst, g.n_src, g.n_dst, 6, vertex_bytes=(1, 100))
    assert (a.edge_part == a.master[1][g.dst]).all()


def test_hybrid_keeps_in_edges_of_low_degree_vertices_at_their_master(small_powerlaw):
    s, t, n = small_powerlaw
    a = P.partition("hybrid", s, t, n, None, 12, theta=20)
    indeg = np.bincount(t, minlength=n)
    low = indeg[t] <= 20
    assert low.any() and (~low).any()
    assert (a.edge_part[low] == a.master[0][t[low]]).all()
    assert (a.edge_part[~low] == a.master[0][s[~low]]).all()


# ---------------------------------------------------------------- closed forms (§2.3)

@pytest.mark.parametrize("alpha", [pytest.param(2.0, marks=pytest.mark.slow), 2.2])    # 2.0: 5 s each
@pytest.mark.parametrize("hash", ["jenkins", "uniform"])
def test_replication_matches_closed_form(alpha, hash):
    n, p = 200_000, 48
    s, t = powerlaw_graph(n, alpha, in_degree=True, seed=0)
    for name in ("random", "hybrid"):
        a = P.partition(name, s, t, n, None, p, hash=hash)
        got = P.quality(a, s, t, n, None)["replication_factor"]
        assert got == pytest.approx(expected_replication(name, s, t, n, p), rel=0.005), name
    a = P.partition("bicut", s, t, n, n, p, hash=hash, favorite=0)
    got = P.quality(a, s, t, n, n)["replication_factor"]
    assert got == pytest.approx(expected_replication("bicut", s, t + n, 2 * n, p, n_src=n), rel=0.005)


@pytest.mark.slow
def test_replication_matches_closed_form_at_one_million():
    n, p = 1_000_000, 48
    s, t = powerlaw_graph(n, 2.0, in_degree=True, seed=0)
    for name in ("random", "hybrid"):
        a = P.partition(name, s, t, n, None, p)
        got = P.quality(a, s, t, n, None)["replication_factor"]
        assert got == pytest.approx(expected_replication(name, s, t, n, p), rel=0.005), name
    a = P.partition("bicut", s, t, n, n, p, favorite=0)
    got = P.quality(a, s, t, n, n)["replication_factor"]
    assert got == pytest.approx(expected_replication("bicut", s, t + n, 2 * n, p, n_src=n), rel=0.005)


@pytest.mark.parametrize("p", [16, 48])
def test_literature_ordering_on_power_law_graphs(p):
    n = 100_000
    s, t = powerlaw_graph(n, 2.0, in_degree=True, seed=1)
    lam = {}
    for name in ("random", "dbh", "hdrf", "grid", "greedy"):
        rep = P.quality(P.partition(name, s, t, n, None, p), s, t, n, None)
        lam[name] = rep
    # orderings as the edge-partitioning literature counts λ (|A(v)|, no master-only replicas)
    nm = {k: v["replication_factor_no_master_only"] for k, v in lam.items()}
    assert nm["random"] > nm["dbh"] > nm["hdrf"], nm
    assert nm["random"] > nm["greedy"], nm
    assert lam["grid"]["replication_factor"] <= 2 * math.sqrt(p) - 1
    assert lam["grid"]["replication_factor"] < lam["random"]["replication_factor"]


# ---------------------------------------------------------------- bad input

def test_bad_arguments_give_clear_errors():
    g = random_graph(seed=3)
    args = (g.src, g.dst, g.n_src, g.n_dst)
    with pytest.raises(PartitionError, match=">= 1"):
        P.partition("random", *args, 0)
    with pytest.raises(PartitionError, match="at most as many parts as edges"):
        P.partition("random", *args, g.num_edges + 1)
    with pytest.raises(PartitionError, match="no edges"):
        P.partition("hdrf", [], [], 3, 3, 2)
    with pytest.raises(PartitionError, match="out of range"):
        P.partition("random", g.src, g.dst, 5, g.n_dst, 2)
    with pytest.raises(PartitionError, match="out of range"):
        P.partition("greedy", [0, -1], [0, 1], 3, 3, 2)
    with pytest.raises(PartitionError, match="unknown partitioner"):
        P.get("metis")
    with pytest.raises(PartitionError, match="does not factor"):
        P.partition("grid", *args, 7)
    with pytest.raises(PartitionError, match="bipartite"):
        P.partition("bicut", g.src, g.dst, max(g.n_src, g.n_dst), None, 2)
    with pytest.raises(PartitionError, match="unexpected keyword"):
        P.partition("hybrid", *args, 2, lambda_=3)
    with pytest.raises(PartitionError, match="hash must be"):
        P.partition("random", *args, 2, hash="md5")
    # the engine may build empty partitions: strict=False allows them, for every strategy and
    # with no vertices at all (ginger divided by the vertex count)
    a = P.partition("random", [], [], 3, 3, 2, strict=False)
    assert a.edge_part.shape == (0,)
    for name in P.available():
        a = P.partition(name, [], [], 0, 0, 2, strict=False)
        assert a.edge_part.shape == (0,) and all(len(m) == 0 for m in a.master), name


def test_numeric_options_must_be_finite_numbers():
    # a NaN, an infinity, a number past int64 or a word reached the numba cores as a
    # cast that failed with ValueError/OverflowError/ZeroDivisionError (an internal error
    # from 'tux2 partition -o theta=nan'); each is now a PartitionError naming the option
    g = random_graph(seed=3)
    args = (g.src, g.dst, g.n_src, g.n_dst, 3)
    for name, key, value in [("hybrid", "theta", float("nan")), ("hybrid", "theta", 1e20),
                             ("hybrid", "theta", "abc"), ("ginger", "theta", float("inf")),
                             ("ginger", "interval", 1e30), ("ginger", "gamma", float("inf")),
                             ("hdrf", "lam", float("inf")), ("hdrf", "lam", float("nan")),
                             ("greedy", "loaders", float("nan")), ("bicut", "vertex_bytes", 0),
                             ("aweto", "vertex_bytes", (1, float("nan"))),
                             ("stratified", "blocks", float("nan"))]:
        with pytest.raises(PartitionError, match=f"{name} option {key} must be"):
            P.partition(name, *args, **{key: value})
    # in range they still run, numpy scalars and None (ginger's default) included
    P.partition("hdrf", *args, lam=np.float32(2.0), loaders=np.int64(2))
    P.partition("ginger", *args, interval=None, theta=1e3)
    P.partition("bicut", *args, vertex_bytes=[1, 2.5])
