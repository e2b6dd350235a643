"""The wire format rejects anything malformed before touching a buffer."""
import struct

import numpy as np
import pytest

from tux2.wire import DATA, HEARTBEAT, INLINE_MAX, VERSION, WireError, decode, encode


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


def big_frames():
    """A message whose second array is too large to travel inside frame 0."""
    return as_bytes(frames(parts=[(0, 1, [np.arange(3.0), np.zeros(INLINE_MAX // 8)])]))


def test_small_arrays_travel_inside_the_header_frame_large_ones_in_their_own():
    assert len(frames()) == 1                     # an Apply round's message: one frame
    fr = big_frames()
    assert len(fr) == 2 and len(fr[1]) == INLINE_MAX
    (_, _, (a, b)), = decode(fr, world=3).parts
    assert a.tolist() == [0.0, 1.0, 2.0] and b.shape == (INLINE_MAX // 8,) and not b.any()
    # arrays after one that would overflow frame 0's room still fit there, each in order
    parts = [(0, 1, [np.ones(3, np.int8), np.full(INLINE_MAX // 8 - 1, 2.0), np.array([7], np.int16)])]
    fr = as_bytes(frames(parts=parts))
    assert len(fr) == 2 and len(fr[1]) == INLINE_MAX - 8
    (_, _, got), = decode(fr, world=3).parts
    assert [g.tolist()[:2] for g in got] == [[1, 1], [2.0, 2.0], [7]]
    assert all(g.flags.aligned for g in got)
    empty = as_bytes(frames(parts=[(0, 1, [np.zeros((0, 3)), np.zeros(0, np.int32)])]))
    assert [g.shape for g in decode(empty, world=3).parts[0][2]] == [(0, 3), (0,)]


@pytest.mark.parametrize("mutate,match", [
    (lambda f: [b"XXXX" + f[0][4:]] + f[1:], "magic"),
    (lambda f: [f[0][:10]] + f[1:], "truncated header"),
    (lambda f: [f[0][:4] + bytes([VERSION, 9]) + f[0][6:]] + f[1:], "unknown message type"),
    (lambda f: [f[0][:-4]], "runs past the end|ends 4 bytes early"),
    (lambda f: [f[0][:-8]], "runs past the end"),
    (lambda f: [f[0] + b"\x00"] + f[1:], "stray bytes"),
    (lambda f: f + [b"extra"], "buffers more"),
    (lambda f: [], "empty"),
])
def test_malformed_messages_are_rejected(mutate, match):
    with pytest.raises(WireError, match=match):
        decode(mutate(as_bytes(frames())), world=3)


@pytest.mark.parametrize("mutate,match", [
    (lambda f: [f[0]] + [f[1][:-4]], "buffer of"),
    (lambda f: f[:-1], "more buffers"),
    (lambda f: f + [b"extra"], "buffers more"),
    (lambda f: [f[0][:-8]] + f[1:], "runs past the end"),
])
def test_malformed_messages_with_large_arrays_are_rejected(mutate, match):
    with pytest.raises(WireError, match=match):
        decode(mutate(big_frames()), world=3)


def test_wrong_dtype_code_clock_tag_and_world_are_rejected():
    fr = as_bytes(frames())
    head = bytearray(fr[0])
    # first array descriptor sits after the fixed header, the tag and the part descriptor
    off = struct.calcsize("<4sBBH16sqiiH") + len("apply-up-0") + struct.calcsize("<iiH")
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


TOKEN = bytes(range(16))


def test_a_message_without_the_runs_token_is_foreign():
    fr = as_bytes(encode(DATA, 5, 1, 3, "x", [(0, 1, [np.ones(3)])], token=TOKEN))
    assert decode(fr, world=3, token=TOKEN).clock == 5
    with pytest.raises(WireError, match="token"):
        decode(fr, world=3, token=bytes(16))
    with pytest.raises(WireError, match="token"):
        decode(as_bytes(frames()), world=3, token=TOKEN)      # no token at all


def _one_array_head(shape, code=9, clock=0):
    """A header declaring one float64 array of ``shape`` (written by hand: any int64s),
    padded to where a small array's bytes would start."""
    head = struct.pack("<4sBBH16sqiiH", b"TUX2", VERSION, DATA, 0, TOKEN, clock, 0, 2, 1)
    head += struct.pack("<iiH", 0, 1, 1) + struct.pack("<BB", code, len(shape)) + struct.pack(
        f"<{len(shape)}q", *shape)
    return head + bytes(-len(head) % 8)


@pytest.mark.parametrize("shape", [(1 << 62, 4), (1 << 32, 1 << 32, 1 << 32), (0, (1 << 63) - 1), (3, 1 << 61)])
def test_a_shape_whose_size_overflows_int64_is_refused_not_a_traceback(shape):
    # int64 products wrap: 2^62 * 4 * 8 bytes == 0 in int64 and used to pass the size check
    with pytest.raises(WireError, match="shape|larger"):
        decode([_one_array_head(shape), b""], world=2, token=TOKEN)


def test_arrays_over_the_byte_limit_and_impossible_clocks_are_refused():
    with pytest.raises(WireError, match="larger than the 1000-byte limit"):
        decode([_one_array_head((200,)) + bytes(1600)], world=2, token=TOKEN, max_bytes=1000)
    assert decode([_one_array_head((100,)) + bytes(800)], world=2, token=TOKEN, max_bytes=1000).parts
    with pytest.raises(WireError, match="impossible clock"):
        decode([_one_array_head((1,), clock=-7), bytes(8)], world=2, token=TOKEN)


def test_world_none_accepts_any_world_and_reports_it():
    m = decode(as_bytes(frames(world=5, sender=4)), world=None)
    assert (m.world, m.sender) == (5, 4)
    with pytest.raises(WireError, match="world"):
        decode(as_bytes(frames(world=5, sender=4)), world=3)
