"""Degree-Based Hashing (Xie et al., NIPS'14; reference/partitioning.md §1d): each
edge follows its lower-degree endpoint, place(u, v) = Hv(u) mod p if
d(u) < d(v) else Hv(v) mod p (ties → v), with d the total degree (in + out) in
a first pass. High-degree vertices are the ones cut. m(v) = Hv(v) mod p."""
import numpy as np
from numba import njit

from tux2.partitioning.registry import strategy


@njit(nogil=True, cache=True)
def _place(s, t, deg, hv, out):
    for i in range(s.shape[0]):
        u = s[i]
        v = t[i]
        out[i] = hv[u] if deg[u] < deg[v] else hv[v]


@strategy("dbh")
def dbh(g, parts, hasher):
    hv = hasher.vertex_part(g.n, parts)
    out = np.empty(g.m, np.int32)
    _place(g.s, g.t, g.degree(), hv, out)
    return out, hv
