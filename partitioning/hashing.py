"""Vertex and edge hashes as in PowerLyra's graph_hash.hpp (Jenkins 32-bit mix).

Both vertex types have their own id space starting at 0, so each type gets its
own salt: otherwise user 7 and item 7 would always land on the same part.
"""
import numpy as np

_K5 = np.uint32(0x9E3779B9 & 0xFFFFFFFF)
_K6 = np.uint32(0x7F4A7C15)
_TYPE_SALT = (np.uint32(0), np.uint32(0x85EBCA6B))


def mix32(a):
    """Jenkins 32-bit integer mix (uint32 in, uint32 out), vectorised."""
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


def _seed_salt(seed):
    return mix32(np.uint32((int(seed) * 0x9E3779B1) & 0xFFFFFFFF))


def vertex_hash(ids, vtype=0, seed=0):
    """Hv(v): hash of vertex ids of type ``vtype`` (0 or 1)."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint32)
    salt = _TYPE_SALT[vtype] ^ (_seed_salt(seed) if seed else np.uint32(0))
    return mix32(ids ^ salt)


def edge_hash(src, dst, seed=0):
    """He(u, v) = mix(u ^ K5) ^ mix(v ^ K6); u of type 0, v of type 1."""
    s = np.asarray(src, dtype=np.int64).astype(np.uint32)
    d = np.asarray(dst, dtype=np.int64).astype(np.uint32)
    salt = _seed_salt(seed) if seed else np.uint32(0)
    return mix32(s ^ _K5 ^ salt) ^ mix32(d ^ _K6 ^ salt)
