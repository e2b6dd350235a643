"""Grid (constrained) vertex-cut, PowerGraph's ``grid`` (reference/partitioning.md §1b).

The p parts form a rows × cols grid with rows = ⌊√p⌋ and cols ∈ {rows, rows+1,
rows+2}; S(i) is the row and the column through part i. An edge (u, v) goes to
C[He(u, v) mod |C|] with C = sorted(S(Hv(u)) ∩ S(Hv(v))), which is never empty.
All edges of v lie in S(Hv(v)), so |R(v)| ≤ rows + cols − 1 (≈ 2√p − 1).
m(v) = Hv(v) mod p.
"""
import math

import numpy as np
from numba import njit

from tux2.errors import PartitionError
from tux2.partitioning.registry import strategy


def grid_shape(p):
    """(rows, cols) of PowerGraph's grid for p parts; PartitionError if p does not factor."""
    rows = math.isqrt(p)
    for cols in (rows, rows + 1, rows + 2):
        if rows * cols == p:
            return rows, cols
    ok = sorted({r * c for r in range(1, math.isqrt(p) + 3) for c in (r, r + 1, r + 2)})
    near = [q for q in ok if abs(q - p) <= max(4, p // 4)]
    raise PartitionError(
        f"grid needs p = r × c with r = ⌊√p⌋ and c ∈ {{r, r+1, r+2}}; {p} does not factor so "
        f"(nearby valid p: {', '.join(map(str, near))})")


def constraint_sets(p):
    """S(i) for every part i, as sorted lists."""
    rows, cols = grid_shape(p)
    sets = []
    for i in range(p):
        r0 = (i // cols) * cols
        sets.append(sorted({i} | {r0 + j for j in range(cols)} | {i % cols + r * cols for r in range(rows)}))
    return sets


def _intersections(p):
    sets = [set(s) for s in constraint_sets(p)]
    width = max(len(s) for s in sets)
    table = np.zeros((p, p, width), np.int32)
    size = np.zeros((p, p), np.int32)
    for a in range(p):
        for b in range(p):
            c = sorted(sets[a] & sets[b])
            table[a, b, : len(c)] = c
            size[a, b] = len(c)
    return table, size


@njit(nogil=True, cache=True)
def _place(s, t, hv, he, table, size, out):
    for i in range(s.shape[0]):
        a = hv[s[i]]
        b = hv[t[i]]
        out[i] = table[a, b, he[i] % np.uint32(size[a, b])]


@strategy("grid")
def grid(g, parts, hasher):
    table, size = _intersections(parts)
    hv = hasher.vertex_part(g.n, parts)
    out = np.empty(g.m, np.int32)
    _place(g.s, g.t, hv, hasher.edge(g.s, g.t), table, size, out)
    return out, hv
