"""HDRF, High-Degree (are) Replicated First (Petroni et al., CIKM'15;
reference/partitioning.md §1e). Streaming, with partial degrees δ:

    θ_u = (δ_u+1) / (δ_u+δ_v+2),  g(x, i) = 1 + (1 − θ_x) if i ∈ A(x) else 0
    C(i) = g(u, i) + g(v, i) + λ · max(0, (max load − load_i) / (ε + max load − min load))

Each edge goes to argmax C; ties (within 1e−5) broken by He(u, v) as in
PowerGraph's port. ``lam`` (λ, default 1.1), ``epsilon`` (ε, default 1),
``loaders`` as in greedy. m(v) = Hv(v) mod p.

λ defaults to 1.1, not PowerGraph's and VGP's 1: the balance term is at most λ,
while a part already holding one endpoint scores at least 1, so with λ <= 1 an
ordered stream (a rating file sorted by item, as Netflix's is) sends every edge to
the first part (edge balance = p); with λ a little above 1 an empty part outbids a
replica of a high-degree endpoint (θ > 0.9), which is what HDRF means to replicate.
``lam=1`` gives PowerGraph's placements.
"""
import numpy as np
from numba import njit

from tux2.errors import PartitionError
from tux2.partitioning.registry import strategy
from tux2.partitioning._stream import bitset, has, load_range, loader_bounds, pick, place


@njit(nogil=True, cache=True)
def _hdrf(s, t, he, parts, bounds, A, delta, lam, eps, out):
    load = np.zeros(parts, np.int64)
    score = np.zeros(parts)
    ties = np.zeros(parts, np.int64)
    for L in range(bounds.shape[0] - 1):
        A[:, :] = 0
        load[:] = 0
        delta[:] = 0
        for e in range(bounds[L], bounds[L + 1]):
            u = s[e]
            v = t[e]
            du = delta[u] + 1.0
            dv = delta[v] + 1.0
            th_u = du / (du + dv)
            th_v = 1.0 - th_u
            mx, mn = load_range(load)
            best = -1e300
            for i in range(parts):
                sc = lam * max(0.0, (mx - load[i]) / (eps + mx - mn))
                if has(A, u, i):
                    sc += 2.0 - th_u
                if has(A, v, i):
                    sc += 2.0 - th_v
                score[i] = sc
                best = max(best, sc)
            p = pick(score, best, ties, he[e])
            place(A, load, out, e, u, v, p)
            delta[u] += 1
            delta[v] += 1


@strategy("hdrf")
def hdrf(g, parts, hasher, lam=1.1, epsilon=1.0, loaders=1):
    if lam < 0 or epsilon <= 0:
        raise PartitionError(f"hdrf needs lam >= 0 and epsilon > 0, got lam={lam}, epsilon={epsilon}")
    bounds = loader_bounds(g.m, loaders)
    out = np.empty(g.m, np.int32)
    _hdrf(g.s, g.t, hasher.edge(g.s, g.t), parts, bounds, bitset(g.n, parts),
          np.zeros(g.n, np.int64), float(lam), float(epsilon), out)
    return out, hasher.vertex_part(g.n, parts)
