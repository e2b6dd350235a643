"""The wire format rejects anything malformed before touching a buffer."""
import struct

import numpy as np
import pytest

from tux2.wire import DATA, HEARTBEAT, WireError, decode, encode


def frames(**kw):
    parts = kw.pop("parts", [(0, 1, [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([7], np.int64)])])
    return encode(DATA, kw.pop("clock", 5), kw.pop("sender", 1), kw.pop("world", 3), kw.pop("tag", "apply-up-0"), parts)


def as_bytes(fr):
    return [bytes(f) if isinstance(f, bytes) else f.tobytes() for f in fr]


def test_round_trip_is_exact_and_zero_copy():
    fr = as_bytes(frames())
    m = decode(fr, world=3, expect_clock=5, expect_tag="apply-up-0")
    assert (m.kind, m.clock, m.sender, m.tag) == (DATA, 5, 1, "apply-up-0")
    (src, dst, arrays), = m.parts
    assert (src, dst) == (0, 1)
    np.testing.assert_array_equal(arrays[0], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert arrays[1].dtype == np.int64 and arrays[1][0] == 7
    assert not arrays[0].flags.owndata            # a view on the received buffer
    hb = decode(as_bytes(encode(HEARTBEAT, 0, 2, 3)), world=3)
    assert hb.kind == HEARTBEAT and hb.parts == []


@pytest.mark.parametrize("mutate,match", [
    (lambda f: [b"XXXX" + f[0][4:]] + f[1:], "magic"),
    (lambda f: [f[0][:10]] + f[1:], "truncated header"),
    (lambda f: [f[0][:4] + b"\x01\x09" + f[0][6:]] + f[1:], "unknown message type"),
    (lambda f: [f[0]] + [f[1][:-4]] + f[2:], "buffer of"),
    (lambda f: f[:-1], "more buffers"),
    (lambda f: f + [b"extra"], "buffers more"),
    (lambda f: [f[0] + b"\x00"] + f[1:], "stray bytes"),
    (lambda f: [], "empty"),
])
def test_malformed_messages_are_rejected(mutate, match):
    with pytest.raises(WireError, match=match):
        decode(mutate(as_bytes(frames())), world=3)


def test_wrong_dtype_code_clock_tag_and_world_are_rejected():
    fr = as_bytes(frames())
    head = bytearray(fr[0])
    # first array descriptor sits after the fixed header, the tag and the part descriptor
    off = struct.calcsize("<4sBBHqiiH") + len("apply-up-0") + struct.calcsize("<iiH")
    head[off] = 200
    with pytest.raises(WireError, match="dtype code"):
        decode([bytes(head)] + fr[1:], world=3)
    with pytest.raises(WireError, match="expected clock 6"):
        decode(fr, world=3, expect_clock=6)
    with pytest.raises(WireError, match="expected 'ctx'"):
        decode(fr, world=3, expect_tag="ctx")
    with pytest.raises(WireError, match="world"):
        decode(fr, world=2)
    with pytest.raises(WireError, match="cannot be sent"):
        encode(DATA, 0, 0, 1, "x", [(0, 0, [np.zeros(2, [("a", "f4")])])])
