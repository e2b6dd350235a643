"""Vertex-cut partitioning strategies behind one registry (tux2.partitioning).

Every strategy has the same signature::

    strategy(src, dst, n_src, n_dst, parts, seed=0, hash="jenkins", **options) -> Assignment

``src`` holds ids of the first vertex type, ``dst`` ids of the second. The
result gives the part of every edge and the master part of every vertex of
both types. With ``n_dst=None`` the graph is homogeneous (one id space of
``n_src`` vertices, directed edges src → dst) and ``master`` has one array.

Internally a strategy sees one id space: the second type's ids are offset by
``n_src`` (see :class:`EdgeView`). Strategies are pure numpy/numba: no engine
import. ``quality`` reports replication factors and balance for any assignment.
"""
import tux2.config  # noqa: F401 (locks numba's cache files before any strategy compiles)
from tux2.partitioning.hashing import Hasher
from tux2.partitioning.registry import Assignment, EdgeView, available, check_input, get, partition, strategy

# strategies register themselves on import
from tux2.partitioning import random_cut, grid, greedy, dbh, hdrf, hybrid, ginger, bicut, aweto, stratified  # noqa: F401,E501
from tux2.partitioning.quality import quality, format_table  # noqa: F401

__all__ = ["Assignment", "EdgeView", "Hasher", "available", "get", "partition", "quality",
           "format_table", "strategy", "check_input"]
