"""BiGraph's BiCut (reference/partitioning.md §1g): every edge goes to the part of
its favourite-side endpoint, place(u, v) = Hv(f) mod p, so favourite vertices
have exactly one replica (no mirrors, no synchronisation); m(x) = Hv(x) mod p.

``favorite``: 0 / "src" (first type), 1 / "dst" (second type), or "auto" (the
default): the side whose replication would cost more stays mirror-free. The
cost of replicating side X is its expected mirror count under the other side's
hashing, Σ_x [p − (p−1)(1−1/p)^d(x) − 1], times ``vertex_bytes[X]`` (bytes
per replica; default 1 each, i.e. plain replica counts).
"""
import numpy as np

from tux2.errors import PartitionError
from tux2.partitioning.registry import strategy


def mirror_cost(deg, parts):
    """Expected mirrors of vertices with these degrees when their edges are spread by hash."""
    deg = np.asarray(deg, np.float64)
    return float(np.sum((parts - 1) * (1.0 - (1.0 - 1.0 / parts) ** deg)))


def choose_favorite(g, parts, favorite="auto", vertex_bytes=(1, 1)):
    """0 or 1: the favourite side of a bipartite EdgeView."""
    if favorite in (0, 1):
        return int(favorite)
    if favorite in ("src", "source"):
        return 0
    if favorite in ("dst", "target"):
        return 1
    if favorite not in ("auto", None):
        raise PartitionError(f"bicut favorite must be 0, 1, 'src', 'dst' or 'auto', got {favorite!r}")
    deg = g.degree()
    cost0 = mirror_cost(deg[: g.n_src], parts) * vertex_bytes[0]   # replicate side 0 (F = 1)
    cost1 = mirror_cost(deg[g.n_src:], parts) * vertex_bytes[1]
    if cost0 == cost1:
        return 0 if g.n_src >= g.n_dst else 1
    return 0 if cost0 > cost1 else 1


def bicut_place(g, parts, hasher, favorite, vertex_bytes):
    fav = choose_favorite(g, parts, favorite, vertex_bytes)
    hv = hasher.vertex_part(g.n, parts)
    edge_part = hv[g.s if fav == 0 else g.t]
    return fav, edge_part, hv


@strategy("bicut", bipartite_only=True)
def bicut(g, parts, hasher, favorite="auto", vertex_bytes=(1, 1)):
    _, edge_part, hv = bicut_place(g, parts, hasher, favorite, vertex_bytes)
    return edge_part, hv
