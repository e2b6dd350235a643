"""PowerGraph's greedy vertex-cut (reference/partitioning.md §1c, ``edge_to_proc_greedy``).

Each edge (u, v) goes to the part maximising
    [i ∈ A(u)] + [i ∈ A(v)] + (max load − load_i) / (1 + max load − min load),
ties (within 1e−5) broken by He(u, v) among the tied parts in index order.
``loaders`` = number of independent loaders, each with its own A and loads over a
contiguous share of the stream: PowerGraph's *oblivious* mode (one loader per
machine); ``loaders=1`` is the *coordinated* mode. m(v) = Hv(v) mod p.
"""
import numpy as np
from numba import njit

from tux2.partitioning.registry import strategy
from tux2.partitioning._stream import bitset, has, load_range, loader_bounds, pick, place


@njit(nogil=True, cache=True)
def _greedy(s, t, he, parts, bounds, A, out):
    load = np.zeros(parts, np.int64)
    score = np.zeros(parts)
    ties = np.zeros(parts, np.int64)
    for L in range(bounds.shape[0] - 1):
        A[:, :] = 0
        load[:] = 0
        for e in range(bounds[L], bounds[L + 1]):
            u = s[e]
            v = t[e]
            mx, mn = load_range(load)
            best = -1.0
            for i in range(parts):
                sc = np.float64(has(A, u, i) + has(A, v, i)) + (mx - load[i]) / (1.0 + mx - mn)
                score[i] = sc
                best = max(best, sc)
            place(A, load, out, e, u, v, pick(score, best, ties, he[e]))


@strategy("greedy")
def greedy(g, parts, hasher, loaders=1):
    bounds = loader_bounds(g.m, loaders)
    out = np.empty(g.m, np.int32)
    _greedy(g.s, g.t, hasher.edge(g.s, g.t), parts, bounds, bitset(g.n, parts), out)
    return out, hasher.vertex_part(g.n, parts)
