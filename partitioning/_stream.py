"""Shared machinery of the streaming strategies (greedy, HDRF): per-vertex part
sets as bitsets, loaders that each see a contiguous share of the edge stream."""
import numpy as np
from numba import njit


@njit(inline="always", nogil=True)
def has(A, v, i):
    return (A[v, i >> 6] >> np.uint64(i & 63)) & np.uint64(1)


@njit(inline="always", nogil=True)
def add(A, v, i):
    A[v, i >> 6] |= np.uint64(1) << np.uint64(i & 63)


@njit(inline="always", nogil=True)
def load_range(load):
    """(max load, min load) over the parts."""
    mx = load[0]
    mn = load[0]
    for i in range(1, load.shape[0]):
        mx = max(mx, load[i])
        mn = min(mn, load[i])
    return mx, mn


@njit(inline="always", nogil=True)
def pick(score, best, ties, h):
    """Among parts whose score is within 1e-5 of the best, the (h mod count)-th
    in index order (PowerGraph's edge-hash tie-break)."""
    nt = 0
    for i in range(score.shape[0]):
        if abs(score[i] - best) < 1e-5:
            ties[nt] = i
            nt += 1
    return ties[h % np.uint32(nt)]


@njit(inline="always", nogil=True)
def place(A, load, out, e, u, v, p):
    """Record edge e (u, v) on part p."""
    out[e] = p
    add(A, u, p)
    add(A, v, p)
    load[p] += 1


def loader_bounds(m, loaders):
    """Edge ranges of ``loaders`` oblivious loaders (PowerGraph: one per machine)."""
    from tux2.errors import PartitionError
    if int(loaders) != loaders or loaders < 1:
        raise PartitionError(f"loaders must be an integer >= 1, got {loaders!r}")
    return np.linspace(0, m, int(loaders) + 1).astype(np.int64)


def bitset(n, parts):
    return np.zeros((n, (parts + 63) // 64), np.uint64)
