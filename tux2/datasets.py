"""Deterministic synthetic datasets (no downloads needed)."""
import numpy as np

from tux2.graph import BipartiteGraph


def _powerlaw_ids(rng, n, size, exponent):
    """Ids in [0, n) drawn with weight (rank+1)^−exponent, ranks randomly permuted."""
    w = (np.arange(1, n + 1, dtype=np.float64)) ** (-exponent)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    rank = np.searchsorted(cdf, rng.random(size), side="right")
    return rng.permutation(n)[np.minimum(rank, n - 1)]


def netflix_like(n_users=20_000, n_items=2_000, n_ratings=500_000, rank=10, noise=0.5,
                 test_fraction=0.1, user_exponent=0.5, item_exponent=0.6, mu=3.6, seed=0):
    """A Netflix-shaped rating set with a planted low-rank model.

    Users and items have power-law popularity; r = μ + b_u + b_i + x_u·y_i + ε with
    ε ~ N(0, noise²), so ``noise`` is the best achievable test RMSE (the noise
    floor). Returns (train, test) BipartiteGraphs with types ("user", "item"),
    no duplicate (user, item) pairs.
    """
    rng = np.random.default_rng(seed)
    draw = int(n_ratings * 1.3) + 1000
    while True:
        u = _powerlaw_ids(rng, n_users, draw, user_exponent)
        i = _powerlaw_ids(rng, n_items, draw, item_exponent)
        key = np.unique(u.astype(np.int64) * n_items + i)
        if len(key) >= n_ratings or draw > 50 * n_ratings:
            break
        draw *= 2
    key = key[rng.permutation(len(key))[:n_ratings]]
    u, i = key // n_items, key % n_items
    scale = 1.0 / np.sqrt(np.sqrt(rank))
    x = rng.normal(0, scale, (n_users, rank))
    y = rng.normal(0, scale, (n_items, rank))
    bu = rng.normal(0, 0.3, n_users)
    bi = rng.normal(0, 0.3, n_items)
    r = mu + bu[u] + bi[i] + np.einsum("ij,ij->i", x[u], y[i]) + rng.normal(0, noise, len(u))
    is_test = rng.random(len(u)) < test_fraction
    names = ("user", "item")
    train = BipartiteGraph(u[~is_test], i[~is_test], r[~is_test], n_users, n_items, names, "netflix_like")
    test = BipartiteGraph(u[is_test], i[is_test], r[is_test], n_users, n_items, names, "netflix_like")
    return train, test
