"""The strategy registry and what every strategy shares: the ``Assignment`` it returns,
the ``EdgeView`` it sees, input checks (see tux2.partitioning)."""
import inspect
import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from tux2.errors import PartitionError
from tux2.partitioning.hashing import make_hasher


@dataclass
class Assignment:
    """Output of a partitioner: edge → part, vertex → master part (per type)."""

    edge_part: np.ndarray      # int32, one per edge, in [0, parts) (one part: a read-only view of a 0)
    master: tuple              # int32 arrays: (n_src, n_dst), or (n,) for a homogeneous graph
    parts: int
    strategy: str = ""
    seconds: float = 0.0
    options: dict = field(default_factory=dict)


class EdgeView:
    """The edges as one directed graph over global ids 0 … n−1 (what a strategy
    core sees). ``t`` is ``dst`` offset by ``n_src`` in a bipartite graph."""

    def __init__(self, src, dst, n_src, n_dst):
        self.bipartite = n_dst is not None
        self.n_src = int(n_src)
        self.n_dst = int(n_dst) if self.bipartite else 0
        self.n = self.n_src + self.n_dst if self.bipartite else self.n_src
        self.s = src
        if self.bipartite:     # int32 ids stay int32 while the offset ids fit
            self.t = dst + self.n_src if self.n < 2**31 else np.add(dst, self.n_src, dtype=np.int64)
        else:
            self.t = dst
        self.m = len(src)
        self._deg = {}

    def in_degree(self):
        if "in" not in self._deg:
            self._deg["in"] = np.bincount(self.t, minlength=self.n).astype(np.int64)
        return self._deg["in"]

    def out_degree(self):
        if "out" not in self._deg:
            self._deg["out"] = np.bincount(self.s, minlength=self.n).astype(np.int64)
        return self._deg["out"]

    def degree(self):
        return self.in_degree() + self.out_degree()

    def split(self, master):
        """Per-type master arrays from a global one."""
        if not self.bipartite:
            return (master,)
        return master[: self.n_src], master[self.n_src:]

    def type_of(self, v):
        """0 for first-type (or homogeneous) global ids, 1 for second-type."""
        return (np.asarray(v) >= self.n_src).astype(np.int8) if self.bipartite else np.zeros(len(v), np.int8)


_REGISTRY = {}


def _check_options(name, core, options):
    """Refuse an option value the core cannot use, before it turns into an overflow or a
    NaN cast deep in a numba call: a numeric option (its default a number, or None as
    ginger's counts) must be a finite number, below 2^62 where the default is an integer
    or None; a pair (vertex_bytes) must be two finite numbers."""
    params = inspect.signature(core).parameters
    for key, value in options.items():
        default = params[key].default if key in params else ""    # unknown: the core names it
        if isinstance(default, (bool, str)) or default is value is None:
            continue                                # checked by the strategy (favorite, target)
        pair = isinstance(default, tuple)
        values = tuple(value) if pair and isinstance(value, (tuple, list)) else (value,)
        bound = math.inf if pair or isinstance(default, float) else 2**62
        if (pair and len(values) != len(default)) or not all(
                isinstance(x, numbers.Real) and not isinstance(x, bool) and abs(x) < bound for x in values):
            what = f"{len(default)} finite numbers" if pair else "a finite number" + (
                " below 2^62" if bound < math.inf else "")
            raise PartitionError(f"{name} option {key} must be {what}, got {value!r}")


def strategy(name, bipartite_only=False):
    """Register a strategy core ``core(g: EdgeView, parts, hasher, **options)
    -> (edge_part, master)`` under ``name`` and return the public function."""
    def deco(core):
        def run(src, dst, n_src, n_dst, parts, seed=0, hash="jenkins", strict=True, **options):
            one = not isinstance(parts, bool) and isinstance(parts, (int, np.integer)) and parts == 1
            src, dst = check_input(src, dst, n_src, n_dst, parts, strict=strict, convert=not one)
            if bipartite_only and n_dst is None:
                raise PartitionError(f"strategy {name!r} needs a bipartite graph (two vertex types); "
                                     "give n_dst")
            _check_options(name, core, options)
            hasher = make_hasher(hash, seed)
            t0 = time.perf_counter()
            if one:             # every edge and vertex on the one part: no strategy to run, no copies
                try:
                    inspect.signature(core).bind(None, 1, hasher, **options)
                except TypeError as e:
                    raise PartitionError(f"strategy {name!r}: {e}") from None
                n = (int(n_src), int(n_dst)) if n_dst is not None else (int(n_src),)
                edge_part = np.broadcast_to(np.int32(0), (len(src),))      # read-only zeros, no memory
                return Assignment(edge_part, tuple(np.zeros(k, np.int32) for k in n), 1, name,
                                  time.perf_counter() - t0, dict(options, seed=seed, hash=hasher.kind))
            g = EdgeView(src, dst, n_src, n_dst)
            try:
                edge_part, master = core(g, int(parts), hasher, **options)
            except TypeError as e:
                if "unexpected keyword" in str(e):
                    raise PartitionError(f"strategy {name!r}: {e}".replace(core.__name__ + "()", "")) from None
                raise
            seconds = time.perf_counter() - t0
            return Assignment(np.ascontiguousarray(edge_part, np.int32),
                              tuple(np.ascontiguousarray(x, np.int32) for x in g.split(master)),
                              int(parts), name, seconds, dict(options, seed=seed, hash=hasher.kind))
        run.__name__ = core.__name__
        run.__qualname__ = core.__qualname__
        run.__doc__ = core.__doc__
        run.__module__ = core.__module__
        run.core = core
        run.bipartite_only = bipartite_only
        _REGISTRY[name] = run
        return run
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


def check_input(src, dst, n_src, n_dst, parts, strict=True, convert=True):
    """Validate the common arguments; return src, dst as int64 arrays (``convert``
    False: as they are).

    ``strict`` (the default for users) also rejects an empty graph and more
    parts than edges; the engine passes False, since a partition may be empty.
    """
    src = np.asarray(src)
    dst = np.asarray(dst)
    if src.shape != dst.shape or src.ndim != 1:
        raise PartitionError(f"src and dst must be 1-D arrays of equal length, got {src.shape} and {dst.shape}")
    for name, a in (("src", src), ("dst", dst)):
        if len(a) and not np.issubdtype(a.dtype, np.integer):
            raise PartitionError(f"{name} ids must be integers, got dtype {a.dtype}")
    if convert:
        src = src.astype(np.int64, copy=False)
        dst = dst.astype(np.int64, copy=False)
    if isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
        raise PartitionError(f"number of parts must be an integer >= 1, got {parts!r}")
    if strict:
        if len(src) == 0:
            raise PartitionError("the graph has no edges: nothing to partition")
        if parts > len(src):
            raise PartitionError(f"{parts} parts for {len(src)} edges: some parts would be empty; "
                                 "use at most as many parts as edges")
    for name, n in (("n_src", n_src), ("n_dst", n_dst)):
        if n is not None and (int(n) != n or n < 0):
            raise PartitionError(f"{name} must be a non-negative integer, got {n!r}")
    if len(src):
        n_t = n_dst if n_dst is not None else n_src
        for name, ids, n in (("src", src, n_src), ("dst", dst, n_t)):
            lo, hi = int(ids.min()), int(ids.max())
            if lo < 0 or hi >= n:
                bad = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
                raise PartitionError(
                    f"{name} id {int(ids[bad])} at edge {bad} is out of range [0, {n})")
    return src, dst


def partition(name, src, dst, n_src, n_dst, parts, seed=0, **options):
    """Run strategy ``name``; see the module docstring for the signature."""
    return get(name)(src, dst, n_src, n_dst, parts, seed=seed, **options)
