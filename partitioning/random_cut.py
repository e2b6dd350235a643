"""Random (hash) vertex-cut, PowerGraph's ``random`` (reference/partitioning.md §1a):
place(u, v) = He(u, v) mod p, m(v) = Hv(v) mod p. Parallel and reverse edges
share He, so they land together."""
import numpy as np

from tux2.partitioning.registry import strategy


@strategy("random")
def random_cut(g, parts, hasher):
    edge_part = (hasher.edge(g.s, g.t) % np.uint32(parts)).astype(np.int32)
    return edge_part, hasher.vertex_part(g.n, parts)
