"""PowerLyra's hybrid-cut (reference/partitioning.md §1f).

A target t is high-degree iff its in-degree exceeds θ (strictly). Edge (s, t)
goes to Hv(t) mod p when t is low-degree (all in-edges of a low-degree vertex
sit on its master's part: edge-cut for the many small vertices) and to
Hv(s) mod p when t is high-degree (vertex-cut for the few hubs).
m(v) = Hv(v) mod p. ``theta`` (θ, default 100); ``target`` = "dst" (default) or
"src" picks which endpoint plays the target, e.g. for a bipartite graph whose
hubs are on the first side.
"""
import numpy as np
from numba import njit

from tux2.errors import PartitionError
from tux2.partitioning.registry import strategy


def oriented(g, target):
    """(sources, targets) for the chosen target side."""
    if target == "dst":
        return g.s, g.t
    if target == "src":
        return g.t, g.s
    raise PartitionError(f"target must be 'dst' or 'src', got {target!r}")


@njit(nogil=True, cache=True)
def _place(s, t, indeg, theta, hv, out):
    for i in range(s.shape[0]):
        out[i] = hv[t[i]] if indeg[t[i]] <= theta else hv[s[i]]


@strategy("hybrid")
def hybrid(g, parts, hasher, theta=100, target="dst"):
    if theta < 0:
        raise PartitionError(f"hybrid theta must be >= 0, got {theta}")
    s, t = oriented(g, target)
    indeg = g.in_degree() if target == "dst" else g.out_degree()     # global under distributed ingress
    hv = hasher.vertex_part(g.n, parts)
    out = np.empty(g.m, np.int32)
    _place(s, t, indeg, np.int64(theta), hv, out)
    return out, hv
