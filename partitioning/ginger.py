"""PowerLyra's Ginger (reference/partitioning.md §1f): hybrid-cut whose low-degree
targets are placed by a Fennel-like greedy heuristic instead of by hash.

Phase 1 is hybrid's: every low-degree target t (in-degree ≤ θ) starts on machine
Hv(t) mod p, which then decides where t and all its in-edges go:

    i* = argmax_i  cnt_i − α_g·γ·bal_i^(γ−1),   α_g = √p·|E| / |V|^γ
    cnt_i = #in-neighbours s of t whose placement (mht[s]) is i

(strict >, ties → lowest i), then bal[i*] += 1 + indeg(t)·|V|/|E|. Machines work
concurrently on their own targets (in id order) and exchange their placements
and balance every ``interval`` targets (default None: only at the end, as
PowerLyra's default). In-edges of high-degree targets go to mht[s] if s was
placed, else Hv(s). m(v) = mht[v] for placed vertices, else Hv(v).
Options: ``theta`` (100), ``gamma`` (1.5), ``interval``, ``nverts``/``nedges``
(|V|, |E| in α_g; default: this graph's), ``target`` as in hybrid.
"""
import math

import numpy as np
from numba import njit

from tux2.errors import PartitionError
from tux2.partitioning.registry import strategy
from tux2.partitioning.hybrid import oriented


@njit(nogil=True, cache=True)
def _ginger(s, t, n, parts, indeg, theta, hv, order, mstart, in_ptr, in_src, interval,
            alpha, gamma, v_over_e, mht):
    placed_round = np.full(n, -1, np.int64)
    placed_by = np.full(n, -1, np.int64)
    bal = np.zeros(parts)
    bal_local = np.zeros((parts, parts))
    cnt = np.zeros(parts, np.int64)
    cur = mstart[:-1].copy()
    r = 0
    remaining = mstart[-1]
    while remaining > 0:
        for j in range(parts):
            k = 0
            while cur[j] < mstart[j + 1] and (interval <= 0 or k < interval):
                v = order[cur[j]]
                cnt[:] = 0
                for q in range(in_ptr[v], in_ptr[v + 1]):
                    w = in_src[q]
                    pr = placed_round[w]
                    if pr >= 0 and (pr < r or placed_by[w] == j):
                        cnt[mht[w]] += 1
                best = 0
                bs = -1e300
                for i in range(parts):
                    b = bal[i] + bal_local[j, i]
                    sc = cnt[i] - alpha * gamma * b ** (gamma - 1.0)
                    if sc > bs:
                        bs = sc
                        best = i
                mht[v] = best
                placed_round[v] = r
                placed_by[v] = j
                bal_local[j, best] += 1.0 + indeg[v] * v_over_e
                cur[j] += 1
                k += 1
                remaining -= 1
        for j in range(parts):
            for i in range(parts):
                bal[i] += bal_local[j, i]
                bal_local[j, i] = 0.0
        r += 1
    out = np.empty(s.shape[0], np.int32)
    for e in range(s.shape[0]):
        v = t[e]
        if indeg[v] <= theta:
            out[e] = mht[v]
        else:
            u = s[e]
            out[e] = mht[u] if placed_round[u] >= 0 else hv[u]
    master = hv.copy()
    for v in range(n):
        if placed_round[v] >= 0:
            master[v] = mht[v]
    return out, master


@strategy("ginger")
def ginger(g, parts, hasher, theta=100, gamma=1.5, interval=None, nverts=None, nedges=None,
           target="dst"):
    if theta < 0 or gamma <= 1:
        raise PartitionError(f"ginger needs theta >= 0 and gamma > 1, got theta={theta}, gamma={gamma}")
    s, t = oriented(g, target)
    V = float(nverts or max(g.n, 1))
    E = float(nedges or max(g.m, 1))
    indeg = (g.in_degree() if target == "dst" else g.out_degree()).astype(np.int64)
    hv = hasher.vertex_part(g.n, parts)
    low = np.flatnonzero((indeg > 0) & (indeg <= theta))
    order = low[np.lexsort((low, hv[low]))]                 # by machine, then id
    mstart = np.searchsorted(hv[order], np.arange(parts + 1)).astype(np.int64)
    by_t = np.argsort(t, kind="stable")
    in_src = s[by_t]
    in_ptr = np.concatenate([[0], np.cumsum(indeg)]).astype(np.int64)
    alpha = math.sqrt(parts) * E / V ** gamma
    return _ginger(s, t, g.n, parts, indeg, np.int64(theta), hv, order, mstart, in_ptr, in_src,
                   np.int64(interval or 0), alpha, float(gamma), V / E, np.zeros(g.n, np.int32))
