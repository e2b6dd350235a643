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


def loader_bounds(m, loaders):
    """Edge ranges of ``loaders`` oblivious loaders (PowerGraph: one per machine)."""
    from tux2.errors import PartitionError
    if int(loaders) != loaders or loaders < 1:
        raise PartitionError(f"loaders must be an integer >= 1, got {loaders!r}")
    return np.linspace(0, m, int(loaders) + 1).astype(np.int64)


def bitset(n, parts):
    return np.zeros((n, (parts + 63) // 64), np.uint64)
