"""Stray and hostile traffic against a running distributed job: real workers on
loopback, free ports, timeouts. Junk, an HTTP POST, forged frames (fuzzed with
hypothesis) and a fake HELLO must not kill or fool the run: it finishes with the
model an undisturbed run makes and reports how many frames it dropped."""
import json
import os
import socket
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
import zmq
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.test_distributed import _children, _model
from tux2 import wire
from tux2.runtime import free_port

# minibatch SGD, slack 0: two workers give the same model on every run
OPTIONS = ["--mode", "minibatch", "--batch-size", "1500", "--lr", "0.003", "--k", "4", "--epochs", "3",
           "--partitioner", "random", "--quiet", "--timeout", "20", "--max-frame-mb", "1"]


@pytest.fixture(scope="module")
def reference(ratings_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "model"
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, *OPTIONS, "--workers", "2",
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "dropped" not in r.stderr, r.stderr
    return _model(out)


def _listening_ports(pid):
    """TCP ports process ``pid`` listens on (its socket inodes in /proc/net/tcp)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        with open(f"/proc/{pid}/net/tcp") as f:
            rows = [line.split() for line in f.readlines()[1:]]
    except OSError:
        return []
    return [int(r[1].split(":")[1], 16) for r in rows if r[3] == "0A" and r[9] in inodes]


def _attacked_run(ratings_file, out, trace, attack):
    """Start ``tux2 run mf --workers 2``, call ``attack(ports)`` once both workers listen
    (they then still have to set up and train), wait for the end: (rc, stderr)."""
    cmd = [sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, *OPTIONS, "--workers", "2",
           "--out", str(out), "--trace", str(trace)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            kids = _children(p.pid)
            ports = {k: _listening_ports(k) for k in kids}
            if len(kids) == 2 and all(ports.values()):
                break
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1]
            time.sleep(0.02)
        attack(sorted(x for v in ports.values() for x in v))
        _, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, err


def _dropped(err, trace):
    """Dropped-frame counts: from the stderr notes, and the largest in each rank's trace."""
    noted = sum(int(line.split("dropped ")[1].split()[0]) for line in err.splitlines() if "dropped " in line)
    traced = []
    for r in range(2):
        with open(os.path.join(trace, f"trace-{r}.jsonl")) as f:
            traced.append(max(json.loads(line)["dropped_frames"] for line in f))
    return noted, traced


def _same_model(out, reference):
    got = _model(out)
    for t in ("user", "item"):
        for f in ("p", "b"):
            np.testing.assert_allclose(got[t][f], reference[t][f], rtol=1e-6, atol=1e-7)


def _push(ctx, port):
    """A PUSH socket to ``port`` whose sends give up after 1 s (once the job has ended,
    a PUSH without a peer would block for ever)."""
    z = ctx.socket(zmq.PUSH)
    z.setsockopt(zmq.LINGER, 1000)
    z.setsockopt(zmq.SNDTIMEO, 1000)
    z.connect(f"tcp://127.0.0.1:{port}")
    return z


def _send(z, frames):
    try:
        z.send_multipart(frames)
    except zmq.Again:
        pass


def _forged(kind, sender, token=bytes(16), world=2, clock=0, tag="x", parts=()):
    return wire.encode(kind, clock, sender, world, tag, parts, token=token)


def test_junk_an_http_post_and_forged_aborts_do_not_kill_the_run(ratings_file, reference, tmp_path):
    """Before the token, any of these ended the job (an ABORT from 'rank 0' even said why)."""
    def attack(ports):
        ctx = zmq.Context()
        for port in ports:
            for junk in (np.random.default_rng(port).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
                         b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello=world"):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:    # plain TCP bytes
                        s.sendall(junk)
                except ConnectionRefusedError:      # the rendezvous port, closed once every rank arrived
                    pass
            z = _push(ctx, port)
            reason = [(0, 0, [np.frombuffer(b"forged", np.uint8)])]
            for sender in (0, 1):
                _send(z, _forged(wire.ABORT, sender, parts=reason))
                _send(z, _forged(wire.ABORT, sender, token=os.urandom(16), parts=reason))
                _send(z, _forged(wire.HEARTBEAT, sender))
            _send(z, [b"TUX2\x02\x01\x00\x00" + b"\x00" * 4, b"junk"])            # truncated header
            _send(z, [b"x" * (2 << 20)])                       # over --max-frame-mb: disconnected
            z.close()
        ctx.term()

    out, trace = tmp_path / "model", tmp_path / "trace"
    rc, err = _attacked_run(ratings_file, out, trace, attack)
    assert rc == 0, err
    assert "Traceback" not in err and "failed" not in err, err
    _same_model(out, reference)
    noted, traced = _dropped(err, trace)
    assert noted > 0 and sum(traced) > 0, (err, traced)
    assert "malformed or foreign frames" in err


# valid-looking messages: a real magic and version, any kind, clock, rank, world, token, tag,
# arrays of any dtype code and shape, buffers of the declared size or not
_arrays = st.lists(st.tuples(st.integers(0, 12),
                             st.lists(st.one_of(st.integers(0, 8), st.integers(-2, 2 ** 63 - 1)), max_size=5),
                             st.one_of(st.none(), st.integers(0, 300))), max_size=3)


@st.composite
def _message(draw):
    kind = draw(st.one_of(st.sampled_from(sorted(wire.KINDS)), st.integers(0, 255)))
    clock = draw(st.one_of(st.integers(-1, 40), st.integers(-2 ** 63, 2 ** 63 - 1)))
    sender, world = draw(st.integers(-2, 3)), draw(st.one_of(st.just(2), st.integers(-1, 4)))
    token = draw(st.one_of(st.just(bytes(16)), st.binary(min_size=16, max_size=16)))
    tag = draw(st.one_of(st.sampled_from(["start", "hb", "abort", "ingress-stats", "gather-user-1", "ctx0"]),
                         st.text(st.characters(max_codepoint=127), max_size=12))).encode()
    parts = draw(st.lists(st.tuples(st.integers(-2, 3), st.integers(-2, 3), _arrays), max_size=3))
    head = [struct.pack("<4sBBH16sqiiH", wire.MAGIC, wire.VERSION, kind, len(tag), token, clock, sender, world,
                        len(parts)), tag]
    bufs = []
    for src, dst, arrays in parts:
        head.append(struct.pack("<iiH", src, dst, len(arrays)))
        for code, shape, length in arrays:
            head.append(struct.pack("<BB", code, len(shape)) + struct.pack(f"<{len(shape)}q", *shape))
            if length is None:          # the declared size when it is small, else a short buffer
                size = 8
                for s in shape:
                    size *= s
                length = size if 0 <= size <= 4096 else 16
            bufs.append(bytes(length))
    frames = [b"".join(head)] + bufs
    cut = draw(st.one_of(st.none(), st.integers(0, len(frames[0]))))
    if cut is not None:                 # a truncated header
        frames[0] = frames[0][:cut]
    return frames


_frames = st.one_of(_message(), st.lists(st.binary(max_size=3000), min_size=1, max_size=4))


def test_fuzzed_frames_do_not_change_the_model_and_are_counted(ratings_file, reference, tmp_path):
    sent = []

    def attack(ports):
        ctx = zmq.Context()
        socks = [_push(ctx, port) for port in ports]

        @settings(max_examples=300, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(frames=_frames, which=st.integers(0, len(socks) - 1))
        def send(frames, which):
            _send(socks[which], frames)
            sent.append(1)

        send()
        for z in socks:
            z.close()
        ctx.term()

    out, trace = tmp_path / "model", tmp_path / "trace"
    rc, err = _attacked_run(ratings_file, out, trace, attack)
    assert rc == 0, err
    assert "Traceback" not in err and "failed" not in err, err
    assert len(sent) >= 100
    _same_model(out, reference)
    noted, traced = _dropped(err, trace)
    assert noted > 0 and sum(traced) > 0, (err, traced)


def test_a_fake_hello_gets_no_table_and_junk_does_not_kill_the_rendezvous(ratings_file, reference, tmp_path):
    """Rank 0 waits at the rendezvous; an intruder without the run's secret sends junk and
    a well-formed HELLO for rank 1. The real rank 1 then joins and the run ends as usual;
    the intruder never hears back (before: it got the table, and the real rank 1 killed
    the run with 'unexpected hello')."""
    rv_port = free_port()
    rv = f"tcp://127.0.0.1:{rv_port}"
    env = {**os.environ, "TUX2_SECRET": "s3cret-shared-by-the-two-workers"}

    def worker(rank):
        return subprocess.Popen([sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, *OPTIONS,
                                 "--rank", str(rank), "--world", "2", "--rendezvous", rv,
                                 "--out", str(tmp_path / "model")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    procs = [worker(0)]
    ctx = zmq.Context()
    fake = ctx.socket(zmq.DEALER)
    fake.setsockopt(zmq.LINGER, 0)
    fake.setsockopt(zmq.SNDTIMEO, 5000)
    try:
        deadline = time.monotonic() + 60
        while rv_port not in _listening_ports(procs[0].pid):
            assert procs[0].poll() is None and time.monotonic() < deadline, procs[0].communicate()[1]
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", rv_port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(256)) * 8)
        fake.connect(rv)
        fake.send_multipart([b"junk"])
        fake.send_multipart([b""])
        addr = np.frombuffer(b"tcp://127.0.0.1:1", np.uint8)
        opts = np.frombuffer(b"{}", np.uint8)
        fake.send_multipart(wire.encode(wire.HELLO, 0, 1, 2, "hello", [(1, 0, [addr, opts])]))
        assert not fake.poll(1000), "an intruder got an answer at the rendezvous"
        procs.append(worker(1))
        errs = [p.communicate(timeout=240)[1] for p in procs]
        assert not fake.poll(100), "an intruder got an answer at the rendezvous"
    finally:
        fake.close()
        ctx.term()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert [p.returncode for p in procs] == [0, 0], errs
    assert "dropped" in errs[0] and "malformed or foreign frames" in errs[0], errs[0]
    _same_model(tmp_path / "model", reference)
