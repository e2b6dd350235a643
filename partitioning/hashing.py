"""Vertex and edge hashes: the placement every hash-based strategy builds on.

Two families, both seeded and deterministic (reference/partitioning.md §0):

* ``"jenkins"`` (default) — PowerLyra's ``graph_hash.hpp``: Hv(v) = Jenkins
  32-bit mix of v, He(u, v) = mix(min ^ K5) ^ mix(max ^ K6). With seed 0 and a
  homogeneous graph the placements are bit-compatible with PowerGraph/PowerLyra.
  A seed is XOR-ed into the ids before mixing.
* ``"uniform"`` — splitmix64 of (id, seed): indistinguishable from the uniform
  random placement the closed-form oracles of §2.3 assume.

A strategy receives a :class:`Hasher`. Users may inject their own placement
with ``Hasher(vertex=fn, edge=fn)`` where ``fn`` are vectorised functions
returning unsigned integers (``vertex(ids)``, ``edge(u, v)``).

Ids are global: in a bipartite graph the second type's ids are offset by the
number of first-type vertices before hashing, so user 7 and item 7 differ.
"""
import numpy as np
from numba import njit

_M32 = np.uint64(0xFFFFFFFF)
# PowerLyra integer_mix.hpp constants, truncated to 32 bits as the code does
K5 = 0x9E3779B9
K6 = 0x7F4A7C15


@njit(inline="always", nogil=True)
def _mix32(a):
    """Jenkins 32-bit mix on a uint64 holding a 32-bit value (masking keeps it 32-bit)."""
    m = np.uint64(0xFFFFFFFF)
    a = (a - (a << np.uint64(6))) & m
    a ^= a >> np.uint64(17)
    a = (a - (a << np.uint64(9))) & m
    a = (a ^ (a << np.uint64(4))) & m
    a = (a - (a << np.uint64(3))) & m
    a = (a ^ (a << np.uint64(10))) & m
    a ^= a >> np.uint64(15)
    return a


@njit(inline="always", nogil=True)
def _splitmix(x):
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(nogil=True, cache=True)
def _jenkins_vertex(ids, salt, out):
    for i in range(ids.shape[0]):
        out[i] = _mix32((np.uint64(ids[i]) & np.uint64(0xFFFFFFFF)) ^ salt)


@njit(nogil=True, cache=True)
def _jenkins_edge(u, v, off, salt, out):
    m = np.uint64(0xFFFFFFFF)
    for i in range(u.shape[0]):
        a = np.uint64(u[i])
        b = np.uint64(v[i] + off)
        lo = a if a < b else b
        hi = b if a < b else a
        out[i] = _mix32(((lo & m) ^ np.uint64(K5)) ^ salt) ^ _mix32(((hi & m) ^ np.uint64(K6)) ^ salt)


@njit(nogil=True, cache=True)
def _uniform_vertex(ids, seed, out):
    for i in range(ids.shape[0]):
        out[i] = _splitmix(np.uint64(ids[i]) ^ seed) >> np.uint64(32)


@njit(nogil=True, cache=True)
def _uniform_edge(u, v, off, seed, out):
    for i in range(u.shape[0]):
        a = np.uint64(u[i])
        b = np.uint64(v[i] + off)
        lo = a if a < b else b
        hi = b if a < b else a
        out[i] = _splitmix(_splitmix(lo ^ seed) ^ hi) >> np.uint64(32)


def _salt(seed):
    if not seed:
        return np.uint64(0)
    return np.uint64(int(_splitmix(np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF))) & 0xFFFFFFFF)


class Hasher:
    """Vertex and edge hashes for one seed. ``kind`` is "jenkins", "uniform", or
    "custom" when ``vertex``/``edge`` callables are given."""

    def __init__(self, kind="jenkins", seed=0, vertex=None, edge=None):
        if vertex is not None or edge is not None:
            kind = "custom"
        elif kind not in ("jenkins", "uniform"):
            from tux2.errors import PartitionError
            raise PartitionError(f"hash must be 'jenkins', 'uniform' or a Hasher, got {kind!r}")
        self.kind, self.seed = kind, int(seed)
        self._vertex, self._edge = vertex, edge

    def vertex(self, ids):
        """Hv of global vertex ids (uint32 values in a uint32 array)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if self._vertex is not None:
            return np.asarray(self._vertex(ids)).astype(np.uint64).astype(np.uint32)
        out = np.empty(len(ids), np.uint32)
        if self.kind == "jenkins":
            _jenkins_vertex(ids, _salt(self.seed), out)
        else:
            _uniform_vertex(ids, np.uint64(self.seed * 0x2545F491 + 1), out)
        return out

    def edge(self, u, v, offset=0):
        """He of edges (u, v + offset); symmetric in its two endpoints."""
        u = np.ascontiguousarray(u, dtype=np.int64)
        v = np.ascontiguousarray(v, dtype=np.int64)
        if self._edge is not None:
            return np.asarray(self._edge(u, v + offset)).astype(np.uint64).astype(np.uint32)
        out = np.empty(len(u), np.uint32)
        if self.kind == "jenkins":
            _jenkins_edge(u, v, np.int64(offset), _salt(self.seed), out)
        else:
            _uniform_edge(u, v, np.int64(offset), np.uint64(self.seed * 0x2545F491 + 1), out)
        return out

    def vertex_part(self, n, parts):
        """Hv(v) mod p for v = 0 … n−1, as int32."""
        return (self.vertex(np.arange(n, dtype=np.int64)) % np.uint32(parts)).astype(np.int32)


def make_hasher(hash="jenkins", seed=0):
    """A :class:`Hasher` from a name or an existing Hasher."""
    if isinstance(hash, Hasher):
        return hash
    return Hasher(hash, seed)


def mix32(a):
    """Jenkins 32-bit integer mix, vectorised numpy (the plain reference of the kernel)."""
    a = np.asarray(a).astype(np.uint32, copy=True)
    with np.errstate(over="ignore"):
        a -= a << np.uint32(6)
        a ^= a >> np.uint32(17)
        a -= a << np.uint32(9)
        a ^= a << np.uint32(4)
        a -= a << np.uint32(3)
        a ^= a << np.uint32(10)
        a ^= a >> np.uint32(15)
    return a
