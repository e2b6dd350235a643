"""Stray and hostile traffic against a running distributed job: real workers on
loopback, free ports, timeouts. Junk, an HTTP POST, forged frames (fuzzed with
hypothesis), a fake HELLO and an endless multi-part message must not kill or fool
the run: it finishes with the model an undisturbed run makes and reports how many
connections it refused (no secret) and frames it dropped (a peer that knows the
secret but sends garbage)."""
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
from tux2.zmq_transport import plain_password

# minibatch SGD, slack 0: two workers give the same model on every run
OPTIONS = ["--mode", "minibatch", "--batch-size", "1500", "--lr", "0.003", "--k", "4", "--epochs", "3",
           "--partitioner", "random", "--quiet", "--timeout", "20", "--max-frame-mb", "1"]


# as OPTIONS, with epochs enough that the run still trains when a loaded machine's attack lands
# (the handshakes of 3 epochs' run came after its end now and then: 'refused' 0 in 2 of 5 runs)
LONG = [o if o != "3" else "40" for o in OPTIONS]


def _undisturbed(ratings_file, out, options):
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, *options, "--workers", "2",
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "dropped" not in r.stderr, r.stderr
    return _model(out)


@pytest.fixture(scope="module")
def reference(ratings_file, tmp_path_factory):
    return _undisturbed(ratings_file, tmp_path_factory.mktemp("reference") / "model", OPTIONS)


@pytest.fixture(scope="module")
def long_reference(ratings_file, tmp_path_factory):
    return _undisturbed(ratings_file, tmp_path_factory.mktemp("long_reference") / "model", LONG)


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


def _attacked_run(ratings_file, out, trace, attack, secret=None, options=OPTIONS):
    """Start ``tux2 run mf --workers 2``, call ``attack(ports)`` (or ``attack(ports, pids)``
    once both workers listen (they then still have to set up and train), wait for the
    end: (rc, stderr). ``secret``: the run's TUX2_SECRET (default: the launcher's own)."""
    cmd = [sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, *options, "--workers", "2",
           "--out", str(out), "--trace", str(trace)]
    env = {k: v for k, v in os.environ.items() if k != "TUX2_SECRET"}
    if secret is not None:
        env["TUX2_SECRET"] = secret
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            kids = _children(p.pid)
            ports = {k: _listening_ports(k) for k in kids}
            if len(kids) == 2 and all(ports.values()):
                break
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1]
            time.sleep(0.02)
        flat = sorted(x for v in ports.values() for x in v)
        attack(flat, kids) if attack.__code__.co_argcount == 2 else attack(flat)
        _, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, err


def _refused(err):
    """Connections the workers refused in the handshake, from their stderr notes."""
    return sum(int(line.split("refused ")[1].split()[0]) for line in err.splitlines() if "refused " in line)


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


def _push(ctx, port, secret=None):
    """A PUSH socket to ``port`` whose sends give up after 1 s (once the job has ended,
    a PUSH without a peer would block for ever); with ``secret``, one that passes the
    run's handshake."""
    z = ctx.socket(zmq.PUSH)
    z.setsockopt(zmq.LINGER, 1000)
    z.setsockopt(zmq.SNDTIMEO, 1000)
    if secret is not None:
        z.plain_username, z.plain_password = b"tux2", plain_password(secret.encode())
    z.connect(f"tcp://127.0.0.1:{port}")
    return z


def _send(z, frames):
    try:
        z.send_multipart(frames)
    except zmq.Again:
        pass


def _forged(kind, sender, token=bytes(16), world=2, clock=0, tag="x", parts=()):
    return wire.encode(kind, clock, sender, world, tag, parts, token=token)


@pytest.mark.slow
@pytest.mark.parametrize("knows_secret", [False, True], ids=["stranger", "insider"])
def test_junk_an_http_post_and_forged_aborts_do_not_kill_the_run(ratings_file, long_reference, tmp_path,
                                                                knows_secret):
    """Before the token, any of these ended the job (an ABORT from 'rank 0' even said why).
    A stranger is refused in the handshake; a peer that knows the secret (but not the
    run's token) gets its frames dropped."""
    secret = "a-secret-the-insider-knows"

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
        # every port's handshake starts now, while the run lives: a stranger's sends wait up to 1 s each,
        # so a port attacked after the first one's (the rendezvous, closed by then) came after the run
        pushes = [_push(ctx, port, secret if knows_secret else None) for port in ports]
        for z in pushes:
            reason = [(0, 0, [np.frombuffer(b"forged", np.uint8)])]
            for sender in (0, 1):
                _send(z, _forged(wire.ABORT, sender, parts=reason))
                _send(z, _forged(wire.ABORT, sender, token=os.urandom(16), parts=reason))
                _send(z, _forged(wire.HEARTBEAT, sender))
            _send(z, [b"TUX2\x02\x01\x00\x00" + b"\x00" * 4, b"junk"])            # truncated header
            _send(z, [b"x" * (2 << 20)])                       # over --max-frame-mb: disconnected
            z.close()
        ctx.term()

    # The stranger's refusals are counted from the data ports' monitors, which now and then report
    # none of them (1 run in 7 to 1 in 22, seen in one run whose attack landed during the rendezvous;
    # cause not found): the count must show in one of three attacked runs (two failed CI once in ~50).
    # Every run must end well, with the undisturbed model.
    for attempt in range(3 if not knows_secret else 1):
        out, trace = tmp_path / f"model{attempt}", tmp_path / f"trace{attempt}"
        rc, err = _attacked_run(ratings_file, out, trace, attack, secret=secret, options=LONG)
        assert rc == 0, err
        assert "Traceback" not in err and "failed" not in err, err
        _same_model(out, long_reference)
        noted, traced = _dropped(err, trace)
        if knows_secret:
            assert noted > 0 and sum(traced) > 0, (err, traced)
            assert "malformed or foreign frames" in err
            break
        assert noted == 0 and sum(traced) == 0, (err, traced)   # the stranger's socket fails the handshake
        if _refused(err) > 0:
            break
    else:
        assert _refused(err) > 0, err


@pytest.mark.slow
def test_a_peer_that_hangs_up_mid_handshake_is_not_called_refused(ratings_file, tmp_path):
    """A connection that knows the secret and closes before its handshake ends (as a worker
    does when it shuts down) is not a refusal: the run notes none (it once said 'refused 1
    connection(s) that did not know the run's secret' after ordinary runs)."""
    secret = "a-secret-both-know"

    def attack(ports):
        ctx = zmq.Context()
        for port in ports:
            for _ in range(20):
                z = _push(ctx, port, secret)
                z.close(0)
        ctx.term()

    rc, err = _attacked_run(ratings_file, tmp_path / "model", tmp_path / "trace", attack, secret=secret)
    assert rc == 0, err
    assert "refused" not in err, err


@pytest.mark.slow
def test_an_endless_multipart_message_is_never_buffered(ratings_file, tmp_path):
    """libzmq queues the parts of a multi-part message until its last part, whatever
    their number; before authentication a stranger could stream parts for ever into a
    worker's memory. Now the handshake refuses it before any part is taken."""
    grew = []

    def attack(ports, pids):
        def rss():                                  # both workers' resident memory
            total = 0
            for pid in pids:
                with open(f"/proc/{pid}/status") as f:
                    total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) * 1024
            return total
        before = rss()
        # raw ZMTP 3.0: a NULL greeting, READY as a PUSH, then 1 MB parts that all say "more"
        # (a libzmq sender would hold them itself until the last part)
        greeting = b"\xff" + bytes(8) + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00") + bytes(32)
        ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 4) + b"PUSH"
        part = b"\x03" + struct.pack(">Q", 1 << 20) + bytes(1 << 20)
        for port in ports:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(greeting + bytes([0x04, len(ready)]) + ready)
                    for _ in range(1000):           # 1 GB per port
                        s.sendall(part)
            except OSError:                         # refused, reset, or the closed rendezvous port
                pass
        time.sleep(2)
        grew.append(rss() - before)

    options = [o if o != "3" else "1000" for o in OPTIONS]      # still training while attacked
    rc, err = _attacked_run(ratings_file, tmp_path / "model", tmp_path / "trace", attack, options=options)
    assert rc == 0, err
    assert "Traceback" not in err and "failed" not in err, err
    assert _refused(err) > 0, err                   # a NULL greeting fails the handshake
    assert grew and grew[0] < 400 << 20, grew       # (the workers grow by themselves while they compile)


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
    body, bufs, inline = [], [], 0
    for src, dst, arrays in parts:
        head.append(struct.pack("<iiH", src, dst, len(arrays)))
        for code, shape, length in arrays:
            head.append(struct.pack("<BB", code, len(shape)) + struct.pack(f"<{len(shape)}q", *shape))
            size = 8
            for s in shape:
                size *= s
            if length is None:          # the declared size when it is small, else a short buffer
                length = size if 0 <= size <= 4096 else 16
            if 0 <= size and inline + size < wire.INLINE_MAX:      # where the decoder looks for it
                inline += size + (-size % 8)
                body.append(bytes(length + (-length % 8)))
            else:
                bufs.append(bytes(length))
    n = sum(map(len, head))
    frames = [b"".join(head + ([bytes(-n % 8)] + body if body else []))] + bufs
    cut = draw(st.one_of(st.none(), st.integers(0, len(frames[0]))))
    if cut is not None:                 # a truncated header
        frames[0] = frames[0][:cut]
    return frames


_frames = st.one_of(_message(), st.lists(st.binary(max_size=3000), min_size=1, max_size=4))


@pytest.mark.slow
def test_fuzzed_frames_do_not_change_the_model_and_are_counted(ratings_file, reference, tmp_path):
    sent = []

    secret = "fuzzing-from-inside"

    def attack(ports):
        ctx = zmq.Context()
        socks = [_push(ctx, port, secret) for port in ports]

        @settings(max_examples=300, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(frames=_frames, which=st.integers(0, len(socks) - 1))
        def send(frames, which):
            _send(socks[which], frames)
            sent.append(1)

        for z in socks:             # first a burst the workers meet as soon as they train: some frames are
            for _ in range(20):     # counted even when a loaded machine makes the drawn ones arrive after the end
                _send(z, [b"\x00" * 7])
        send()
        for z in socks:
            z.close()
        ctx.term()

    out, trace = tmp_path / "model", tmp_path / "trace"
    rc, err = _attacked_run(ratings_file, out, trace, attack, secret=secret)
    assert rc == 0, err
    assert "Traceback" not in err and "failed" not in err, err
    assert len(sent) >= 100
    _same_model(out, reference)
    noted, traced = _dropped(err, trace)
    assert noted > 0 and sum(traced) > 0, (err, traced)


@pytest.mark.slow          # 21 s cold: its module's 2-worker reference run is only the slow pass's otherwise
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
    fake.setsockopt(zmq.SNDTIMEO, 1000)
    try:
        deadline = time.monotonic() + 60
        while rv_port not in _listening_ports(procs[0].pid):
            assert procs[0].poll() is None and time.monotonic() < deadline, procs[0].communicate()[1]
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", rv_port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(256)) * 8)
        fake.connect(rv)
        addr = np.frombuffer(b"tcp://127.0.0.1:1", np.uint8)
        opts = np.frombuffer(b"{}", np.uint8)
        for frames in ([b"junk"], [b""], wire.encode(wire.HELLO, 0, 1, 2, "hello", [(1, 0, [addr, opts])])):
            _send(fake, frames)             # (a refused DEALER may not even get them out)
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
    # How many refusals rank 0 reports is not checked here: libzmq's monitor may report the
    # stranger's failed handshakes after the rendezvous socket has closed (rank 0's note then
    # says nothing; CI on 2026-11-28 saw 0), and counting accepted connections instead counted
    # peers that hang up mid-handshake (da3491f). The refusal itself is what is checked: the
    # intruder never hears back and the run ends with the reference model.
    _same_model(tmp_path / "model", reference)


def test_a_flood_of_refused_connections_costs_no_memory():
    """Each connection that fails the PLAIN check is refused by tux2's own ZAP handler,
    which keeps nothing per request (pyzmq's ThreadAuthenticator grew ~12 KB a refusal,
    without bound); a peer with the password still gets in."""
    from tux2.zmq_transport import Gatekeeper

    def rss():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) * 1024

    greeting = b"\xff" + bytes(8) + b"\x7f" + bytes([3, 0]) + b"PLAIN".ljust(20, b"\x00") + bytes(32)
    body = b"\x05HELLO" + b"\x05admin\x05admin"
    hello = b"\x04" + bytes([len(body)]) + body
    ctx = zmq.Context()
    gate = Gatekeeper(ctx, password=plain_password(b"the run's secret"))
    pull = ctx.socket(zmq.PULL)
    pull.plain_server = True
    pull.setsockopt(zmq.LINGER, 0)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    try:
        def flood(n):
            for _ in range(n):
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(greeting + hello)
                    try:
                        s.recv(100)
                    except OSError:
                        pass
            time.sleep(0.3)
        flood(1000)                     # libzmq's own buffers settle
        before = rss()
        flood(6000)
        # pyzmq's ThreadAuthenticator kept ~12 KB a refusal: 70 MiB for these 6000; a clean-clone run of
        # this process measured 25 MiB of other growth (libzmq, malloc arenas), so the bound sits between
        assert rss() - before < 45 << 20, (rss() - before) >> 20
        assert gate.refusals >= 7000
        push = ctx.socket(zmq.PUSH)
        push.plain_username, push.plain_password = b"tux2", plain_password(b"the run's secret")
        push.setsockopt(zmq.LINGER, 0)
        push.connect(f"tcp://127.0.0.1:{port}")
        push.send(b"in")
        assert pull.poll(5000) and pull.recv() == b"in"
        push.close()
    finally:
        gate.stop()
        pull.close()
        ctx.term()


def test_a_hello_of_deeply_nested_options_is_dropped_not_fatal():
    """A run without a secret: a stranger's HELLO whose options are JSON nested 100 000
    deep raised RecursionError out of rank 0's rendezvous ('tux2: internal error'), where
    any other malformed HELLO is dropped. Now it is dropped and counted, and the real
    rank 1 still joins."""
    import threading
    from tux2.zmq_transport import ZmqTransport, hello_token
    rv = f"tcp://127.0.0.1:{free_port()}"
    got = {}

    def rank0():
        try:
            got[0] = ZmqTransport(0, 2, rv, parts=2, timeout=5, connect_timeout=30)
        except BaseException as e:              # noqa: B902 - reported below, in the test's thread
            got["error"] = e
    th = threading.Thread(target=rank0)
    th.start()
    ctx = zmq.Context()
    fake = ctx.socket(zmq.DEALER)
    fake.setsockopt(zmq.LINGER, 1000)
    try:
        fake.connect(rv)
        deep = b"[" * 100_000 + b"]" * 100_000
        addr = b"tcp://127.0.0.1:1"
        fake.send_multipart(wire.encode(wire.HELLO, 0, 1, 2, "hello", [(1, 0, [np.frombuffer(addr, np.uint8),
                                                                               np.frombuffer(deep, np.uint8)])],
                                        token=hello_token(b"")))
        time.sleep(0.5)
        assert th.is_alive(), got
        one = ZmqTransport(1, 2, rv, parts=2, timeout=5, connect_timeout=30)
        th.join(30)
        assert 0 in got, got
        assert got[0].drop_reasons == {"options in a HELLO nested too deep": 1}, got[0].drop_reasons
        one.close()
    finally:
        fake.close()
        ctx.term()
        th.join(30)
        if 0 in got:
            got[0].close()
