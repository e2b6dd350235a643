"""BiGraph's BiCut (reference/partitioning.md §1g): every edge goes to the part of
its favourite-side endpoint, so favourite vertices have exactly one replica and
need no synchronisation; masters are hashed.

``favorite`` is 0 (first type), 1 (second type) or "auto": the side whose
replication would cost more, i.e. keep the side with MORE vertices mirror-free
(replicating the smaller side minimises the sum of replicas).
"""
import numpy as np

from tux2.partitioning import Assignment, register
from tux2.partitioning.hashing import vertex_hash
from tux2.errors import PartitionError


def choose_favorite(n_src, n_dst, favorite="auto"):
    if favorite in ("auto", None):
        return 0 if n_src >= n_dst else 1
    if favorite in (0, 1):
        return int(favorite)
    if favorite in ("src", "source"):
        return 0
    if favorite in ("dst", "target"):
        return 1
    raise PartitionError(f"bicut favorite must be 0, 1 or 'auto', got {favorite!r}")


@register("bicut")
def bicut(src, dst, n_src, n_dst, parts, seed=0, favorite="auto", vertex_hash_fn=vertex_hash):
    fav = choose_favorite(n_src, n_dst, favorite)
    p = np.uint32(parts)
    master = tuple((vertex_hash_fn(np.arange(n), vtype=t, seed=seed) % p).astype(np.int32)
                   for t, n in enumerate((n_src, n_dst)))
    edge_part = master[fav][src if fav == 0 else dst]
    return Assignment(edge_part.astype(np.int32), master, parts)
