"""PowerGraph's synthetic power-law graphs and the closed forms they are checked
against (reference/partitioning.md §2).

* :func:`powerlaw_graph` — ``distributed_graph::load_synthetic_powerlaw`` run as
  one process: vertex s draws a Zipf(α) degree d on 1 … n and connects to the
  next d targets of the sequence t ← (t + 2654435761) mod n (skipping s);
  ``in_degree=True`` reverses the edges (Zipf in-degree, as PowerLyra's model).
* :func:`powerlyra_model` — PowerLyra's analytic replication factors (its
  ``tests/simulate_powerlaw_replica.cpp``, the paper's Table 1) for random,
  grid and hybrid-cut.
* :func:`expected_replication` — the per-graph expectation of λ under uniform
  hashing for ``random``, ``hybrid`` and ``bicut``: exact for any graph, so it
  is a unit-test oracle.
"""
import numpy as np
from numba import njit

from tux2.errors import PartitionError

_H = 2654435761


@njit(nogil=True, cache=True)
def _targets(deg, n, out_s, out_t):
    t = 0
    h = _H % n
    e = 0
    for s in range(n):
        for _ in range(deg[s]):
            t = (t + h) % n
            while t == s:
                t = (t + h) % n
            out_s[e] = s
            out_t[e] = t
            e += 1


def powerlaw_graph(n, alpha=2.1, in_degree=False, truncate=None, seed=0):
    """Edges (s, t) of a power-law graph on n vertices, as int64 arrays."""
    if int(n) != n or n < 2:
        raise PartitionError(f"power-law graph needs n >= 2 vertices, got {n!r}")
    if alpha <= 1:
        raise PartitionError(f"power-law alpha must be > 1, got {alpha}")
    n = int(n)
    kmax = n if truncate is None else min(n, int(truncate))
    pdf = np.arange(1, kmax + 1, dtype=np.float64) ** -alpha
    cdf = np.cumsum(pdf)
    cdf /= cdf[-1]
    u = np.random.default_rng(seed).random(n)
    deg = np.minimum(np.searchsorted(cdf, u, side="right"), kmax - 1) + 1
    m = int(deg.sum())
    s = np.empty(m, np.int64)
    t = np.empty(m, np.int64)
    _targets(deg.astype(np.int64), n, s, t)
    return (t, s) if in_degree else (s, t)


def _harmonic(n, a):
    return float(np.sum(np.arange(1, n + 1, dtype=np.float64) ** -a))


def _rep(f, x):
    q = (1.0 - 1.0 / f) ** x
    return f * (1.0 - q) + q


def powerlyra_model(V, p, alpha, theta=100):
    """PowerLyra's Table 1: expected λ of random, grid and hybrid-cut for a Zipf(α)
    in-degree graph of V vertices on p machines (a dict of the three)."""
    i = np.arange(1, V + 1, dtype=np.float64)
    hv_a = _harmonic(V, alpha)
    ev = _harmonic(V, alpha - 1) / hv_a
    w = V * i ** -alpha / hv_a
    random = float(np.sum(w * _rep(p, i + ev)) / V)
    grid = float(np.sum(w * _rep(2 * np.sqrt(p) - 1, i + ev)) / V)
    R = 1.0 - _harmonic(theta, alpha - 1) / _harmonic(V, alpha - 1)
    x = np.where(i <= theta, ev * (1 - R), i + ev * (1 - R))
    hybrid = float(np.sum(w * _rep(p, x)) / V)
    return {"random": random, "grid": grid, "hybrid": hybrid}


def _distinct_pairs(a, b, n):
    """Unique (a, b) pairs with a != b, as (a, b) arrays sorted by a."""
    keep = a != b
    key = np.unique(a[keep] * np.int64(n) + b[keep])
    return key // n, key % n


def _spread(p, d):
    return p - (p - 1) * (1.0 - 1.0 / p) ** d


def expected_replication(strategy, s, t, n, parts, theta=100, n_src=None, favorite=0):
    """E[λ] under uniform hashing (reference/partitioning.md §2.3).

    ``s``, ``t`` are global ids in one space of ``n`` vertices (for ``bicut``
    the first ``n_src`` ids are the first type and ``favorite`` the side kept
    mirror-free). Returns the expected replication factor, master-only
    replicas counted.
    """
    s = np.asarray(s, np.int64)
    t = np.asarray(t, np.int64)
    p = float(parts)
    if strategy == "random":
        # D(v) = distinct neighbours (parallel and reverse edges share He)
        lo, hi = np.minimum(s, t), np.maximum(s, t)
        a, b = _distinct_pairs(lo, hi, n)
        D = np.bincount(a, minlength=n) + np.bincount(b, minlength=n)
        return float(np.sum(_spread(p, D)) / n)
    if strategy == "hybrid":
        indeg = np.bincount(t, minlength=n)
        high = indeg[t] > theta
        # K(v): in-sources of a high-degree v, and low-degree targets of v's out-edges
        a = np.concatenate([t[high], s[~high]])
        b = np.concatenate([s[high], t[~high]])
        a, _ = _distinct_pairs(a, b, n)
        K = np.bincount(a, minlength=n)
        return float(np.sum(1.0 + (p - 1) * (1.0 - (1.0 - 1.0 / p) ** K)) / n)
    if strategy == "bicut":
        if n_src is None:
            raise PartitionError("expected_replication('bicut') needs n_src")
        f_ends, w_ends = (s, t) if favorite == 0 else (t, s)
        n_fav = n_src if favorite == 0 else n - n_src
        w, _ = _distinct_pairs(w_ends, f_ends, n)
        d = np.bincount(w, minlength=n)
        others = np.arange(n_src, n) if favorite == 0 else np.arange(n_src)
        return float((n_fav + np.sum(_spread(p, d[others]))) / n)
    raise PartitionError(f"no closed form for strategy {strategy!r} (random, hybrid, bicut)")
