"""Vertex-cut partitioning strategies behind one registry (tux2.partitioning).

Every strategy has the same signature::

    strategy(src, dst, n_src, n_dst, parts, seed=0, **options) -> Assignment

``src`` holds ids of the first vertex type, ``dst`` ids of the second. The
result gives the part of every edge and the master part of every vertex of
both types. Strategies are pure numpy: no engine import.
"""
from dataclasses import dataclass

import numpy as np

from tux2.errors import PartitionError


@dataclass
class Assignment:
    """Output of a partitioner: edge → part, vertex → master part (per type)."""

    edge_part: np.ndarray      # int32, one per edge, in [0, parts)
    master: tuple              # (int32 array of n_src, int32 array of n_dst)
    parts: int
    strategy: str = ""


_REGISTRY = {}


def register(name):
    def deco(fn):
        _REGISTRY[name] = fn
        return fn
    return deco


def available():
    """Names of the registered strategies."""
    return sorted(_REGISTRY)


def get(name):
    """The strategy function registered under ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise PartitionError(
            f"unknown partitioner {name!r}; available: {', '.join(available())}") from None


def check_input(src, dst, n_src, n_dst, parts):
    """Validate the common arguments; return them as int64 arrays."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape or src.ndim != 1:
        raise PartitionError(f"src and dst must be 1-D arrays of equal length, got {src.shape} and {dst.shape}")
    if int(parts) != parts or parts < 1:
        raise PartitionError(f"number of parts must be an integer >= 1, got {parts!r}")
    if len(src):
        for name, ids, n in (("src", src, n_src), ("dst", dst, n_dst)):
            lo, hi = int(ids.min()), int(ids.max())
            if lo < 0 or hi >= n:
                bad = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
                raise PartitionError(
                    f"{name} id {int(ids[bad])} at edge {bad} is out of range [0, {n})")
    return src, dst


def partition(name, src, dst, n_src, n_dst, parts, seed=0, **options):
    """Run strategy ``name``; see the module docstring for the signature."""
    src, dst = check_input(src, dst, n_src, n_dst, parts)
    a = get(name)(src, dst, int(n_src), int(n_dst), int(parts), seed=seed, **options)
    a.strategy = name
    return a


from tux2.partitioning import random_cut as _random_cut  # noqa: E402,F401  (registers)
from tux2.partitioning import bicut as _bicut  # noqa: E402,F401
