"""Stratified placement for per-edge SGD: DSGD's strata (Gemulla et al., KDD'11),
as LibMF's FPSGD grid runs them.

Each side's ids are cut into B contiguous ranges of nearly equal edge count (so a
tile's vertices are neighbours in memory, as in LibMF's grid). Tile
(r, c) holds the edges from row block r to column block c; stratum s is the B
tiles (r, (r + s) mod B), which share no vertex. Part q owns the row blocks r with
r·p // B = q and every edge of their vertices, so the row side has no mirrors and,
inside one stratum, every column vertex is written by one part only: per-edge SGD
over a stratum's edges runs on the parts in parallel and gives the sequential result.

The blocks depend on the degrees and B only, never on p, so one stratified edge
order (tux2.graph.stratified_order) serves every p. Item masters are hashed.
"""
import numpy as np

from tux2.errors import PartitionError
from tux2.partitioning.registry import strategy
from tux2.partitioning.bicut import choose_favorite


def balanced_blocks(deg, blocks):
    """Block of each vertex (int32 < blocks): contiguous id ranges holding nearly equal
    numbers of edges (so a tile's vertices are neighbours in memory, as in LibMF's grid)."""
    deg = np.asarray(deg, np.int64)
    if len(deg) == 0:
        return np.zeros(0, np.int32)
    before = np.cumsum(deg) - deg                  # edges of the vertices with smaller ids
    total = max(int(deg.sum()), 1)
    return np.minimum(before * blocks // total, blocks - 1).astype(np.int32)


def tiles(g, blocks, favorite="auto"):
    """(row side 0/1, row block per row vertex, column block per column vertex) of an
    EdgeView. The row side is bicut's favourite for B parts (independent of p)."""
    if int(blocks) < 1:
        raise PartitionError(f"stratified: blocks must be >= 1, got {blocks}")
    row = choose_favorite(g, int(blocks), favorite)
    deg = g.degree()
    sides = [slice(0, g.n_src), slice(g.n_src, g.n)]
    return row, balanced_blocks(deg[sides[row]], blocks), balanced_blocks(deg[sides[1 - row]], blocks)


def owner(block, blocks, parts):
    """The part owning a row block: contiguous runs of B / p blocks."""
    return (np.asarray(block, np.int64) * parts // blocks).astype(np.int32)


@strategy("stratified", bipartite_only=True)
def stratified(g, parts, hasher, blocks=16, favorite="auto"):
    if parts > blocks:
        raise PartitionError(f"stratified: {parts} parts need at least as many blocks (blocks={blocks})")
    row, rb, _ = tiles(g, blocks, favorite)
    row_part = owner(rb, blocks, parts)
    edge_part = row_part[g.s if row == 0 else g.t - g.n_src]
    master = hasher.vertex_part(g.n, parts)
    rows = np.arange(g.n_src) if row == 0 else np.arange(g.n_src, g.n)
    has_edges = g.degree()[rows] > 0                # vertices without edges keep their hash
    master[rows[has_edges]] = row_part[has_edges]
    return edge_part, master
