"""The wire format between workers: a small fixed header plus raw array buffers.

Never pickle. A message is a list of ZeroMQ frames::

    frame 0   header: struct ``<4sBBH 16s q i i H`` = magic, version, kind, tag
              length, token, clock, sender rank, world size, number of parts;
              then the tag (ASCII); then per part: src, dst, number of arrays;
              per array: dtype code, ndim, shape (int64 each); zero bytes up to
              a multiple of 8; then the small arrays' bytes, each padded so
    frame 1…  one raw buffer per large array, in order (sent zero-copy)

An array is small, and travels inside frame 0, while the arrays of the message
placed there so far and it stay under ``INLINE_MAX`` bytes. An Apply round's
message of a few KiB is then one frame: one send and one receive, where a frame
per array cost ZeroMQ and Python a call, an allocation and a copy each.

The token is the run's random number, made by rank 0 at rendezvous and handed
out with the address table: a frame without it is stray traffic (another run,
a port scanner, an attacker who cannot read the wire) and the transport drops
it. Rendezvous messages carry a token derived from the run's secret instead.

Only plain numeric dtypes travel (``DTYPES``); structured records are sent as
bytes and viewed with the dtype the receiver already knows. ``decode`` checks
everything before it touches a buffer: magic, version, kind, sender, world,
frame count, dtype codes, shapes against buffer lengths, and the expected
clock and tag when given. A bad message raises :class:`WireError`.
"""
import hmac
import struct

import numpy as np

from tux2.errors import Tux2Error

MAGIC = b"TUX2"
VERSION = 3
DATA, HEARTBEAT, ABORT, HELLO, TABLE = 1, 2, 3, 4, 5
KINDS = {DATA: "data", HEARTBEAT: "heartbeat", ABORT: "abort", HELLO: "hello", TABLE: "table"}
DTYPES = [np.dtype(x) for x in ("u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8")]
_CODE = {d: i for i, d in enumerate(DTYPES)}
_HEAD = struct.Struct("<4sBBH16sqiiH")
TOKEN_BYTES = 16
NO_TOKEN = bytes(TOKEN_BYTES)
MAX_CLOCK = 1 << 62
MAX_SPAN = 1 << 48          # bytes: larger than any array a worker could hold
_PART = struct.Struct("<iiH")
_ARR = struct.Struct("<BB")
MAX_NDIM = 4
_SHAPE = [struct.Struct(f"<{n}q") for n in range(MAX_NDIM + 1)]
INLINE_MAX = 64 * 1024      # bytes of small arrays carried inside frame 0


class WireError(Tux2Error):
    """A malformed, truncated or unexpected message."""


def encode(kind, clock, sender, world, tag="", parts=(), token=NO_TOKEN):
    """Frames for a message. ``parts`` is a list of (src, dst, [arrays])."""
    tag_b = tag.encode("ascii")
    head = [_HEAD.pack(MAGIC, VERSION, kind, len(tag_b), token, clock, sender, world, len(parts)), tag_b]
    size = len(head[0]) + len(tag_b)
    small, big, inline = [], [], 0
    for src, dst, arrays in parts:
        head.append(_PART.pack(src, dst, len(arrays)))
        size += _PART.size
        for a in arrays:
            a = np.ascontiguousarray(a)
            code = _CODE.get(a.dtype)
            if code is None:
                raise WireError(f"dtype {a.dtype} cannot be sent; send records as bytes (arr.view('u1'))")
            if a.ndim > MAX_NDIM:
                raise WireError(f"arrays of more than {MAX_NDIM} dimensions cannot be sent")
            head.append(_ARR.pack(code, a.ndim) + _SHAPE[a.ndim].pack(*a.shape))
            size += _ARR.size + 8 * a.ndim
            n = a.nbytes
            if inline + n < INLINE_MAX:
                inline += n + (-n % 8)
                small += [a, bytes(-n % 8)]
            else:
                big.append(a)
    if small:                   # (empty arrays too: the padding then comes all the same)
        head.append(bytes(-size % 8))
        head += small
    return [b"".join(head)] + big


class Message:
    __slots__ = ("kind", "clock", "sender", "world", "tag", "parts")

    def __init__(self, kind, clock, sender, world, tag, parts):
        self.kind, self.clock, self.sender, self.world, self.tag, self.parts = kind, clock, sender, world, tag, parts

    def __repr__(self):
        return f"Message({KINDS[self.kind]}, clock={self.clock}, sender={self.sender}, tag={self.tag!r})"


def decode(frames, world, expect_clock=None, expect_tag=None, token=None, max_bytes=None):
    """Parse and check ``frames`` (bytes or zmq Frames); arrays are zero-copy views.
    ``token``: the run's token, checked when given; ``max_bytes``: the largest
    legal array buffer; ``world=None`` takes any world size (the rendezvous checks
    it itself, to name a worker started with another ``--world``)."""
    if not frames:
        raise WireError("empty message")
    head = frames[0]
    head = memoryview(head if isinstance(head, bytes) else getattr(head, "buffer", head)).cast("B")
    size = len(head)
    if size < _HEAD.size:
        raise WireError(f"truncated header: {size} bytes, need at least {_HEAD.size}")
    magic, version, kind, tlen, tok, clock, sender, w, nparts = _HEAD.unpack_from(head, 0)
    if magic != MAGIC:
        raise WireError(f"not a tux2 message (magic {bytes(magic)!r})")
    if version != VERSION:
        raise WireError(f"wire version {version}, this tux2 speaks {VERSION}")
    if token is not None and not hmac.compare_digest(tok, token):
        raise WireError("message without this run's token (stray traffic or another run)")
    if not -1 <= clock <= MAX_CLOCK:
        raise WireError(f"impossible clock {clock}")
    if kind not in KINDS:
        raise WireError(f"unknown message type {kind}")
    if w < 1 or (world is not None and w != world) or not 0 <= sender < w:
        raise WireError(f"message from rank {sender} of a world of {w}; this world has {world} workers")
    off = _HEAD.size
    if off + tlen > size:
        raise WireError("truncated header: tag runs past the end")
    try:
        tag = bytes(head[off:off + tlen]).decode("ascii")
    except UnicodeDecodeError:
        raise WireError("tag is not ASCII") from None
    off += tlen
    if expect_clock is not None and clock != expect_clock:
        raise WireError(f"message from rank {sender} for clock {clock}, expected clock {expect_clock}")
    if expect_tag is not None and tag != expect_tag:
        raise WireError(f"message from rank {sender} tagged {tag!r}, expected {expect_tag!r}")
    # the descriptors first: where the small arrays start depends on where they end
    parts, layout = [], []
    for _ in range(nparts):
        if off + _PART.size > size:
            raise WireError("truncated header: part descriptor missing")
        src, dst, narr = _PART.unpack_from(head, off)
        off += _PART.size
        parts.append((src, dst, narr))
        for _ in range(narr):
            if off + _ARR.size > size:
                raise WireError("truncated header: array descriptor missing")
            code, ndim = _ARR.unpack_from(head, off)
            off += _ARR.size
            if code >= len(DTYPES):
                raise WireError(f"unknown dtype code {code}")
            if ndim > MAX_NDIM or off + 8 * ndim > size:
                raise WireError(f"bad array rank {ndim}")
            shape = _SHAPE[ndim].unpack_from(head, off)
            off += 8 * ndim
            dt = DTYPES[code]
            need = span = dt.itemsize
            for s in shape:                 # Python ints: no int64 overflow can hide a huge shape
                if s < 0:
                    raise WireError(f"negative array shape {shape}")
                need, span = need * s, span * max(s, 1)
            if span > MAX_SPAN:             # even an empty array may not have an absurd shape
                raise WireError(f"impossible array shape {list(shape)}")
            if max_bytes is not None and need > max_bytes:
                raise WireError(f"a {dt}{list(shape)} array of {need} bytes is larger than the "
                                f"{max_bytes}-byte limit")
            layout.append((dt, shape, need))
    at = off + (-off % 8)                   # the small arrays' bytes
    inline, n_small, fi, arrays = 0, 0, 1, []
    for dt, shape, need in layout:
        if inline + need < INLINE_MAX:
            inline += need + (-need % 8)
            n_small += 1
            if at + need > size:
                raise WireError(f"truncated message: a {dt}{list(shape)} array runs past the end of frame 0")
            a = np.frombuffer(head, dt, need // dt.itemsize, at).reshape(shape) if need else np.zeros(shape, dt)
            at += need + (-need % 8)
        else:
            if fi >= len(frames):
                raise WireError(f"message declares more buffers than the {len(frames) - 1} it carries")
            data = frames[fi]
            fi += 1
            data = memoryview(getattr(data, "buffer", data))
            if data.nbytes != need:
                raise WireError(f"buffer of {data.nbytes} bytes for a {dt}{list(shape)} array ({need} bytes)")
            a = np.frombuffer(data, dtype=dt).reshape(shape)
        arrays.append(a if a.flags.aligned else a.copy())
    end = at if n_small else off
    if end != size:
        raise WireError(f"{size - end} stray bytes after the header and its arrays" if end < size else
                        f"truncated message: frame 0 ends {end - size} bytes early")
    if fi != len(frames):
        raise WireError(f"message carries {len(frames) - fi} buffers more than it declares")
    out, k = [], 0
    for src, dst, narr in parts:
        out.append((src, dst, arrays[k:k + narr]))
        k += narr
    return Message(kind, clock, sender, w, tag, out)
