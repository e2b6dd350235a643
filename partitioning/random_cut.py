"""Random (hash) vertex-cut, PowerGraph's ``random``: place(u,v) = He(u,v) mod p,
m(v) = Hv(v) mod p (reference/partitioning.md §1a)."""
import numpy as np

from tux2.partitioning import Assignment, register
from tux2.partitioning.hashing import edge_hash, vertex_hash


@register("random")
def random_cut(src, dst, n_src, n_dst, parts, seed=0, edge_hash_fn=edge_hash,
               vertex_hash_fn=vertex_hash):
    p = np.uint32(parts)
    edge_part = (edge_hash_fn(src, dst, seed=seed) % p).astype(np.int32)
    master = tuple((vertex_hash_fn(np.arange(n), vtype=t, seed=seed) % p).astype(np.int32)
                   for t, n in enumerate((n_src, n_dst)))
    return Assignment(edge_part, master, parts)
