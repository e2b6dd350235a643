"""The two starting strategies: properties every vertex cut must have."""
import numpy as np
import pytest

from tux2 import partitioning
from tux2.errors import PartitionError
from tests.conftest import random_graph


@pytest.mark.parametrize("name", ["random", "bicut"])
@pytest.mark.parametrize("p", [1, 3, 8])
def test_assignment_is_valid_and_deterministic(name, p):
    g = random_graph(n_a=200, n_b=50, m=2000, seed=1)
    a = partitioning.partition(name, g.src, g.dst, g.n_src, g.n_dst, p, seed=4)
    assert a.edge_part.shape == (g.num_edges,) and a.edge_part.min() >= 0 and a.edge_part.max() < p
    for t, n in enumerate(g.n):
        assert a.master[t].shape == (n,) and a.master[t].min() >= 0 and a.master[t].max() < p
    b = partitioning.partition(name, g.src, g.dst, g.n_src, g.n_dst, p, seed=4)
    np.testing.assert_array_equal(a.edge_part, b.edge_part)
    c = partitioning.partition(name, g.src, g.dst, g.n_src, g.n_dst, p, seed=5)
    if p > 1:
        assert (a.edge_part != c.edge_part).any()


def test_bicut_favourite_side_has_exactly_one_replica():
    g = random_graph(n_a=300, n_b=40, m=3000, seed=2)
    a = partitioning.partition("bicut", g.src, g.dst, g.n_src, g.n_dst, 6)
    # favourite = the side with more vertices (type 0 here): all its edges on its master's part
    assert (a.edge_part == a.master[0][g.src]).all()
    a1 = partitioning.partition("bicut", g.src, g.dst, g.n_src, g.n_dst, 6, favorite=1)
    assert (a1.edge_part == a1.master[1][g.dst]).all()


def test_random_cut_replication_matches_expectation():
    """λ of the hash cut against E|R(v)| = p − (p−1)(1−1/p)^D(v) (partitioning.md §2.3)."""
    g = random_graph(n_a=3000, n_b=2000, m=60000, seed=3)
    p = 8
    a = partitioning.partition("random", g.src, g.dst, g.n_src, g.n_dst, p)
    reps = 0.0
    exp = 0.0
    for t, ends in enumerate((g.src, g.dst)):
        n = g.n[t]
        pairs = np.unique(np.concatenate([a.edge_part.astype(np.int64) * n + ends,
                                          a.master[t].astype(np.int64) * n + np.arange(n)]))
        reps += len(pairs)
        d = np.bincount(ends, minlength=n)
        exp += (p - (p - 1) * (1 - 1 / p) ** d).sum()
    assert reps / sum(g.n) == pytest.approx(exp / sum(g.n), rel=0.01)


def test_bad_arguments():
    g = random_graph(seed=3)
    with pytest.raises(PartitionError, match=">= 1"):
        partitioning.partition("random", g.src, g.dst, g.n_src, g.n_dst, 0)
    with pytest.raises(PartitionError, match="out of range"):
        partitioning.partition("random", g.src, g.dst, 5, g.n_dst, 2)
    with pytest.raises(PartitionError, match="unknown partitioner"):
        partitioning.get("metis")
