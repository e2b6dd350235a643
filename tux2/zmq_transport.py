"""ZeroMQ transport: symmetric workers, one PULL socket each, PUSH to every peer.

* Rendezvous: rank 0 binds ``rendezvous`` (ROUTER); every other worker sends
  its data address (HELLO) and receives the table of all addresses (TABLE).
* Data: per (clock, tag) every worker sends exactly one message to every
  other worker (possibly empty), so a receiver knows when it has everything.
  Header + raw buffers (tux2.wire), zero-copy for large buffers, no pickle. Zero-copy
  means ZeroMQ's I/O thread reads a buffer after ``send`` returns: the arrays of a
  message are handed over, never written again by the sender (tux2.transport).
* Liveness: a heartbeat thread (own sockets) pings every peer; a receive
  gives up when a peer it waits for has been silent for ``timeout`` seconds
  and raises :class:`PeerLost` naming the rank. A worker that fails sends
  ABORT with its reason, so the others stop at once. A worker that dies without
  a word (SIGKILL, the OOM killer) has its connections closed by the kernel: a
  receive waiting for it gives up once the connection to its data port has been
  down for ``LINK_GRACE`` seconds (ZeroMQ reconnects at once to a peer that is
  still there); a hung peer or a cut network closes nothing and is found by the
  heartbeat. A worker that closes normally first lets its queued messages leave (at
  most ``timeout`` seconds: a rank's last message, e.g. its piece of a gather, must
  not die with it) and closes its data port only then, so that a peer waiting for
  that message does not take it for dead. A last word (a refusal or the table at the
  rendezvous, an ABORT) is waited for, not slept for: its socket closes with a linger of
  at most ``LAST_WORD_GRACE`` seconds (after an ABORT, none for a peer whose connection is
  down). A fixed sleep, then LINGER 0, dropped it on a busy machine, and the peer waited
  out its deadline or said 'lost worker' instead of why.
* Stray traffic: every message carries the run's random token (tux2.wire), which
  rank 0 makes and hands out with the table; the HELLO that asks for the table
  carries a token derived from the run's secret (the launcher's, ``TUX2_SECRET``,
  or the CURVE key). A frame that fails to decode, lacks the token, or claims an
  impossible rank or a repeated (clock, tag) is dropped and counted
  (``dropped``), never fatal; no socket takes a frame over ``max_frame`` bytes.
* Authentication: with a secret and no CURVE key, every socket speaks ZeroMQ's
  PLAIN mechanism with a password derived from the secret, checked by a ZAP
  handler: a connection that does not know it is refused during the handshake,
  before libzmq buffers any frame (a multi-part message that never completes
  could otherwise grow without bound). Refused handshakes are counted
  (``refused``). PLAIN does not encrypt: off loopback, use CURVE.
"""
import collections
import hashlib
import hmac
import json
import os
import secrets
import socket
import threading
import time

import numpy as np
import zmq
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

from tux2.errors import Tux2Error
from tux2.wire import ABORT, DATA, HEARTBEAT, HELLO, INLINE_MAX, TABLE, TOKEN_BYTES, WireError, decode, encode

ZERO_COPY_MIN = 64 * 1024
MAX_FRAME = 2 << 30             # default for the largest array one message may carry (a model gather)
RENDEZVOUS_MAX = 1 << 20        # a HELLO or TABLE: addresses and options, never this large
LINK_GRACE = 1.0                # seconds a peer's data port may stay unreachable after a disconnect
CHECK_EVERY = 0.05              # seconds between looks at the links while messages keep coming
LAST_WORD_GRACE = 5.0           # seconds a refusal, the table or an ABORT may take to leave at close
# a CURVE peer with another key: the server cannot decrypt (PROTOCOL) or ZAP refuses it (AUTH); the
# client only sees the server hang up mid-handshake (NO_DETAIL). A server counts the first two only:
# NO_DETAIL there is a peer that hung up mid-handshake (a worker closing), which it did not refuse
_REFUSED = zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
_HANDSHAKE_FAILED = _REFUSED | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL


class PeerLost(Tux2Error):
    """A peer died, failed, or stopped answering."""


def hello_token(secret):
    """The rendezvous token: proof that a HELLO (or the TABLE answering it) comes
    from a holder of the run's secret (bytes; empty when the run has none)."""
    return hmac.new(secret, b"tux2 rendezvous", hashlib.sha256).digest()[:TOKEN_BYTES]


def plain_password(secret):
    """The PLAIN password of a run with ``secret``: derived, so the secret itself never
    crosses the wire."""
    return hmac.new(secret, b"tux2 plain", hashlib.sha256).hexdigest().encode()


def load_curve_keys(path):
    """(public, secret) of a key file made by ``tux2 keys`` (secret b"" in a public-only
    file), each 40 Z85 characters; a ValueError names what is wrong (libzmq would say
    only "Invalid argument" when the key is set on a socket)."""
    import zmq.auth
    public, secret = zmq.auth.load_certificate(path)
    for what, key in (("public", public), ("secret", secret)):
        if key is None or (what == "secret" and not key):
            continue
        try:
            ok = len(key) == 40 and len(z85.decode(key)) == 32
        except (KeyError, ValueError, TypeError):
            ok = False
        if not ok:
            raise ValueError(f"its {what} key is not 40 Z85 characters")
    return public, secret


def options_diff(a, b):
    """'--epochs 1 (rank 0: 5), ...': how option dicts ``a`` and ``b`` differ (a key with a
    space in it, such as the input's size, is named as it is, not as a flag)."""
    keys = sorted(set(a) | set(b))
    return ", ".join(f"{k if ' ' in k else '--' + k.replace('_', '-')} {a.get(k)} (rank 0: {b.get(k)})"
                     for k in keys if a.get(k) != b.get(k))


def _check_address(address, whose):
    """Tux2Error unless ``address`` (tcp://HOST:PORT) names a host that resolves: a bad
    --advertise made its peers' connect fail with a traceback, or wait --timeout."""
    host, _, port = address[len("tcp://"):].rpartition(":")
    try:
        socket.getaddrinfo(host[1:-1] if host.startswith("[") else host, int(port), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as e:
        raise Tux2Error(f"{whose} data address {address} cannot be reached: {e} (--advertise names the host "
                        "the other workers connect to)") from None


class Gatekeeper:
    """A ZAP handler (RFC 27) in a thread of its own: admits a PLAIN peer that gives
    ``password`` or a CURVE peer whose public key is ``curve_key`` (the run's shared
    pair), refuses every other. It keeps nothing per request, so a flood of refused
    connections costs no memory (pyzmq's ThreadAuthenticator grew ~12 KB with each)."""

    def __init__(self, ctx, password=None, curve_key=None):
        self.password = password
        self.curve_key = None if curve_key is None else z85.decode(curve_key)
        self.refusals = 0
        self._sock = ctx.socket(zmq.REP)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind("inproc://zeromq.zap.01")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="tux2-zap")
        self._thread.start()

    def _admits(self, mechanism, credentials):
        if mechanism == b"PLAIN" and self.password is not None and len(credentials) == 2:
            return credentials[0] == b"tux2" and hmac.compare_digest(credentials[1], self.password)
        if mechanism == b"CURVE" and self.curve_key is not None and len(credentials) == 1:
            return hmac.compare_digest(credentials[0], self.curve_key)
        return False

    def _serve(self):
        try:
            while not self._stop.is_set():
                if not self._sock.poll(100):
                    continue
                frames = self._sock.recv_multipart()
                if len(frames) < 6:
                    self._sock.send_multipart([b"1.0", b"", b"500", b"malformed request", b"", b""])
                    continue
                ok = frames[0] == b"1.0" and self._admits(frames[5], frames[6:])
                self.refusals += not ok
                self._sock.send_multipart([b"1.0", frames[1], b"200" if ok else b"400",
                                           b"OK" if ok else b"refused", b"tux2" if ok else b"", b""])
        except zmq.ZMQError:
            pass

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


class ZmqTransport:
    def __init__(self, rank, world, rendezvous, parts, timeout=30.0, connect_timeout=120.0,
                 bind_host="127.0.0.1", advertise_host=None, heartbeat=1.0, curve=None,
                 secret=b"", options=None, max_frame=MAX_FRAME):
        """``secret``: bytes every worker of the run knows (rank 0 answers only a HELLO
        made with it); ``options``: a JSON-able dict of the options that must agree on
        every worker (rank 0 refuses a worker started with others); ``max_frame``: the
        largest array (bytes) a message may carry, on both sides."""
        if not 0 <= rank < world:
            raise Tux2Error(f"rank {rank} is outside a world of {world} workers")
        if parts < world:
            raise Tux2Error(f"{parts} partitions for {world} workers: need at least one partition per worker")
        self.rank, self.world, self.parts = int(rank), int(world), int(parts)
        self.local_parts = [p for p in range(parts) if p % world == rank]
        self.timeout = float(timeout)
        self.bytes_sent = 0
        self.wait_seconds = 0.0
        self.messages_sent = 0
        self.dropped = 0                # frames dropped as malformed, foreign or repeated
        self.refused = 0                # connections refused in the handshake (no key or wrong secret)
        self.drop_reasons = {}          # the first few reasons, with counts
        self.max_frame = int(max_frame)
        self._pending = {}
        self._gathers = {}              # allgather's calls per tag: each call a round of its own
        self._local = {}
        self._done = collections.deque(maxlen=4096)
        self._done_set = set()
        self._closed = False
        self._aborted = False
        self.ctx = zmq.Context()        # the data port, ZAP and the rendezvous
        self._out = zmq.Context()       # the sockets to the peers: closed (and drained) first
        self._auth = None
        self._keys = None
        self._plain = None
        self._secret = bytes(secret)
        try:
            if curve:
                self._start_curve(curve)
            elif self._secret:
                self._start_plain()
            self._options = json.dumps(options or {}, sort_keys=True, default=str)
            self.pull = self._socket(zmq.PULL, server=True, max_bytes=self.max_frame)
            self._pull_monitor = self._monitor(self.pull)
            try:
                port = self.pull.bind_to_random_port(f"tcp://{bind_host}")
            except zmq.ZMQError as e:       # an address of another host, a name that is no interface
                raise Tux2Error(f"cannot bind a data port on {bind_host} (--bind): {e.strerror}; give an "
                                "address of this host's interfaces (0.0.0.0: all)") from None
            self.address = f"tcp://{advertise_host or bind_host}:{port}"
            _check_address(self.address, "this worker's")
            self.token = None
            self.table = self._rendezvous(rendezvous, connect_timeout)
            self.push, self._links = {}, {}
            self.down_since = {}            # rank: when its data port was lost, while it is
            for r, addr in enumerate(self.table):
                if r != self.rank:
                    _check_address(addr, f"rank {r}'s")
                    s = self._socket(zmq.PUSH, ctx=self._out)
                    self.push[r] = s
                    self._links[r] = s.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
                    s.connect(addr)
        except BaseException:          # a failed rendezvous (or bind): nothing left open behind it
            if self._auth is not None:
                self._auth.stop()
            self._out.destroy(linger=0)
            self.ctx.destroy(linger=0)
            raise
        now = time.monotonic()
        self.last_seen = {r: now for r in range(world) if r != rank}
        self._stop = threading.Event()
        self._hb = threading.Thread(target=self._heartbeat, args=(heartbeat,), daemon=True,
                                    name=f"tux2-heartbeat-{rank}")
        self._hb.start()

    # ----------------------------------------------------------------- setup
    def _socket(self, kind, server=False, max_bytes=None, ctx=None):
        s = (ctx or self.ctx).socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        if max_bytes is not None:       # a peer sending a larger frame is disconnected before it is buffered
            s.setsockopt(zmq.MAXMSGSIZE, max_bytes + 4096 + INLINE_MAX)    # + the small arrays in frame 0
        if self._keys is not None:
            public, secret = self._keys
            s.curve_publickey, s.curve_secretkey = public, secret
            if server:
                s.curve_server = True
            else:
                s.curve_serverkey = public
        elif self._plain is not None:
            if server:
                s.plain_server = True
            else:
                s.plain_username, s.plain_password = b"tux2", self._plain
        return s

    def _start_plain(self):
        """PLAIN with a password derived from the run's secret, checked by ZAP."""
        self._plain = plain_password(self._secret)
        self._auth = Gatekeeper(self.ctx, password=self._plain)

    def _start_curve(self, directory):
        """CURVE with one shared key pair (``tux2 keys DIR``): traffic is encrypted and
        only holders of the secret key get in (ZAP checks the client key)."""
        secret_file = os.path.join(directory, "tux2.key_secret")
        if not zmq.has("curve"):
            raise Tux2Error("this libzmq has no CURVE support")
        if not os.path.exists(secret_file):
            raise Tux2Error(f"no CURVE key in {directory}: create one with 'tux2 keys {directory}' "
                            "and copy the directory to every host")
        try:
            public, secret = load_curve_keys(secret_file)
        except (OSError, ValueError) as e:
            raise Tux2Error(f"{secret_file}: not a usable CURVE key ({e}); make a pair with 'tux2 keys DIR'") from None
        self._keys = (public, secret)
        self._secret += secret          # holders of the key pass the rendezvous token check too
        self._auth = Gatekeeper(self.ctx, curve_key=public)

    def owner(self, part):
        return part % self.world

    def _drop(self, why):
        """Count a frame that is not a valid message of this run; keep the first reasons."""
        self.dropped += 1
        why = str(why)
        if why in self.drop_reasons or len(self.drop_reasons) < 8:
            self.drop_reasons[why] = self.drop_reasons.get(why, 0) + 1

    def _monitor(self, sock, events=_REFUSED):
        """A PAIR socket reporting ``sock``'s failed handshakes (CURVE or PLAIN), or None."""
        if self._keys is None and self._plain is None:
            return None
        return sock.get_monitor_socket(events)

    @property
    def credential(self):
        return "key (--curve)" if self._keys is not None else "secret (TUX2_SECRET)"

    @staticmethod
    def _handshake_failures(mon):
        """Failed handshakes reported on monitor ``mon`` since the last call."""
        n = 0
        while mon is not None and mon.poll(0):
            recv_monitor_message(mon)
            n += 1
        return n

    def _rendezvous(self, address, deadline_s):
        if self.world == 1:
            self.token = secrets.token_bytes(TOKEN_BYTES)
            return [self.address]
        if self.rank == 0:
            return self._serve_table(address, deadline_s)
        return self._ask_table(address, deadline_s)

    def _serve_table(self, address, deadline_s):
        """Rank 0: wait for every rank's HELLO (dropping anything else), check that its
        world and options agree, then send every rank the table and the run's token."""
        deadline = time.monotonic() + deadline_s
        hello = hello_token(self._secret)
        sock = self._socket(zmq.ROUTER, server=True, max_bytes=RENDEZVOUS_MAX)
        mon = self._monitor(sock)
        try:
            sock.bind(address)
        except zmq.ZMQError as e:
            sock.close()
            raise Tux2Error(f"rank 0 cannot bind the rendezvous address {address}: {e}") from None
        table = {0: self.address}
        idents = {}
        failed = 0

        def refuse(reason, ident=None, error=Tux2Error):
            """Tell the ranks that arrived (and ``ident``) why the run stops; the error to raise."""
            frames = encode(ABORT, 0, 0, self.world, "abort", [(0, 0, [np.frombuffer(reason.encode(), np.uint8)])],
                            token=hello)
            for ident in {*idents.values(), ident} - {None}:
                sock.send_multipart([ident] + frames)
            return error(reason)

        try:
            while len(table) < self.world:
                left = deadline - time.monotonic()
                if left <= 0 or not sock.poll(int(min(left, 0.5) * 1000)):
                    failed += self._handshake_failures(mon)
                    if left > 0:
                        continue
                    missing = sorted(set(range(self.world)) - set(table))
                    same = "key directory (--curve)" if self._keys is not None else "TUX2_SECRET"
                    keys = (f"; {failed} handshake(s) failed: a worker with another {self.credential}? Every "
                            f"worker needs the same {same}" if failed else "")
                    if self.dropped:
                        keys += (f"; {self.dropped} message(s) dropped, malformed or made with another secret: "
                                 f"a worker with another TUX2_SECRET? ({next(iter(self.drop_reasons))})")
                    # the ranks that came would otherwise wait out their own deadline and blame rank 0
                    raise refuse(f"rendezvous at {address}: rank(s) {missing} never arrived at rank 0 "
                                 f"within {deadline_s:.0f}s{keys}", error=PeerLost)
                ident, *frames = sock.recv_multipart()
                try:
                    m = decode(frames, None, token=hello, max_bytes=RENDEZVOUS_MAX)
                    if m.kind != HELLO or m.sender == 0 or len(m.parts) != 1 or len(m.parts[0][2]) != 2:
                        raise WireError(f"unexpected {m!r} during rendezvous")
                    addr = bytes(m.parts[0][2][0]).decode("ascii")
                    try:
                        opts = json.loads(bytes(m.parts[0][2][1]).decode("utf-8"))
                    except RecursionError:          # JSON nested deeper than Python's stack: a stranger's
                        raise WireError("options in a HELLO nested too deep") from None
                    if not isinstance(opts, dict):
                        raise WireError("options in a HELLO are not a table")
                except (WireError, UnicodeDecodeError, ValueError) as e:
                    self._drop(e)
                    continue
                if m.world != self.world:
                    raise refuse(f"rank {m.sender} was started with --world {m.world}, rank 0 with "
                                 f"--world {self.world}", ident)
                if m.sender in table and table[m.sender] != addr:
                    raise refuse(f"two workers claim rank {m.sender} ({table[m.sender]} and {addr}): "
                                 "give each worker its own --rank", ident)
                mine = json.loads(self._options)
                if opts != mine:
                    raise refuse(f"rank {m.sender} was started with other options than rank 0: "
                                 f"{options_diff(opts, mine)}; start every worker with the same options", ident)
                table[m.sender] = addr
                idents[m.sender] = ident
            self.token = secrets.token_bytes(TOKEN_BYTES)
            parts = [(r, 0, [np.frombuffer(table[r].encode(), np.uint8)]) for r in range(self.world)]
            parts.append((-1, 0, [np.frombuffer(self.token, np.uint8)]))
            for ident in idents.values():
                sock.send_multipart([ident] + encode(TABLE, 0, 0, self.world, "table", parts, token=hello))
        finally:
            self.refused += failed + self._handshake_failures(mon)
            if mon is not None:
                sock.disable_monitor()
                mon.close()
            # the tables (or refusals) leave after the close, from the I/O thread: the context
            # lives on, so this does not block; a failed rendezvous waits for them in ctx.destroy
            sock.close(linger=int(1000 * LAST_WORD_GRACE))
        return [table[r] for r in range(self.world)]

    def _ask_table(self, address, deadline_s):
        """Ranks > 0: send HELLO (address and options) to rank 0, wait for the table."""
        deadline = time.monotonic() + deadline_s
        hello = hello_token(self._secret)
        sock = self._socket(zmq.DEALER, max_bytes=RENDEZVOUS_MAX)
        mon = self._monitor(sock, _HANDSHAKE_FAILED)
        me = [np.frombuffer(self.address.encode(), np.uint8), np.frombuffer(self._options.encode(), np.uint8)]
        failed = 0
        try:
            sock.connect(address)
            sock.send_multipart(encode(HELLO, 0, self.rank, self.world, "hello", [(self.rank, 0, me)], token=hello))
            while True:
                left = deadline - time.monotonic()
                failed += self._handshake_failures(mon)
                # CURVE: every retry fails, not a passing glitch; PLAIN: the refusal is final (no retry)
                if failed >= (3 if self._keys is not None else 1):
                    remedy = ("Copy one key directory made by 'tux2 keys DIR' to every host" if self._keys is not None
                              else "Give every worker the same TUX2_SECRET")
                    raise PeerLost(f"rendezvous at {address}: the handshake with rank 0 failed; this worker's "
                                   f"{self.credential} is not rank 0's, or what answers there is not a tux2 rank 0. "
                                   f"{remedy}")
                if left <= 0:
                    raise PeerLost(f"rendezvous at {address}: no answer from rank 0 within {deadline_s:.0f}s "
                                   f"(4 × --timeout, at least 10 s). Is rank 0 running there? A rank 0 with "
                                   f"TUX2_SECRET or --curve answers only workers with the same")
                if not sock.poll(int(min(left, 0.5) * 1000)):
                    continue
                try:
                    m = decode(sock.recv_multipart(), None, token=hello, max_bytes=RENDEZVOUS_MAX)
                    if m.kind == ABORT and m.sender == 0 and m.parts and m.parts[0][2]:
                        raise Tux2Error(bytes(m.parts[0][2][0]).decode("utf-8", "replace"))
                    if (m.kind != TABLE or m.world != self.world or len(m.parts) != self.world + 1
                            or any(len(p[2]) != 1 for p in m.parts) or m.parts[-1][2][0].nbytes != TOKEN_BYTES):
                        raise WireError(f"unexpected {m!r} during rendezvous")
                    table = [bytes(p[2][0]).decode("ascii") for p in m.parts[:-1]]
                except (WireError, UnicodeDecodeError) as e:
                    self._drop(e)
                    continue
                self.token = bytes(m.parts[-1][2][0])
                return table
        finally:
            if mon is not None:
                sock.disable_monitor()
                mon.close()
            sock.close()

    def _heartbeat(self, period):
        socks = {}
        try:
            for r, addr in enumerate(self.table):
                if r != self.rank:
                    s = self._socket(zmq.PUSH, ctx=self._out)
                    s.setsockopt(zmq.SNDHWM, 4)
                    s.connect(addr)
                    socks[r] = s
            frames = encode(HEARTBEAT, 0, self.rank, self.world, "hb", token=self.token)
            while not self._stop.wait(period):
                for s in socks.values():
                    try:
                        s.send_multipart(frames, flags=zmq.NOBLOCK)
                    except zmq.Again:
                        pass
        except zmq.ZMQError:
            pass
        finally:
            for s in socks.values():
                s.close()

    # ----------------------------------------------------------------- send / receive
    def _send(self, r, frames):
        size = big = len(frames[0])
        for f in frames[1:]:
            size += f.nbytes
            big = max(big, f.nbytes)
        if big > self.max_frame:        # frame 0 may hold small arrays: the largest array is what counts
            big = max((a.nbytes for p in decode(frames, None).parts for a in p[2]), default=0)
            if big > self.max_frame:
                raise Tux2Error(f"a message carries an array of {big} bytes, over the limit of {self.max_frame} "
                                f"bytes per array (--max-frame-mb {self.max_frame / (1 << 20):g}); raise it on every "
                                "worker")
        self.bytes_sent += size
        self.messages_sent += 1
        self.push[r].send_multipart(frames, copy=size < ZERO_COPY_MIN)

    def _receive(self, clock, tag):
        """Messages from every other worker for (clock, tag): {sender: Message}. What has
        arrived is taken without a poll; the links and the peers' silence are looked at
        when the wait goes on (a poll ran out) and at least every ``CHECK_EVERY`` seconds."""
        key = (clock, tag)
        got = self._pending.setdefault(key, {})
        t0 = time.perf_counter()
        start = checked = time.monotonic()
        try:
            while len(got) < self.world - 1:
                try:
                    self._take(self.pull.recv_multipart(zmq.NOBLOCK, copy=False))
                    queued = True
                except zmq.Again:
                    queued = bool(self.pull.poll(200))
                    if queued:
                        continue
                now = time.monotonic()
                if queued and now - checked < CHECK_EVERY:
                    continue
                checked = now
                self.refused += self._handshake_failures(self._pull_monitor)
                self._watch_links()
                for r in range(self.world):
                    if r == self.rank or r in got:
                        continue
                    # while frames queue (heartbeats from a long compute, or a flood of junk),
                    # silence counts from the start of this wait: a dead peer still shows
                    heard = max(self.last_seen.get(r, 0.0), start) if queued else self.last_seen.get(r, 0.0)
                    if now - heard > self.timeout:
                        why = f"nothing heard from it for {self.timeout:g}s"
                    elif now - self.down_since.get(r, now) > LINK_GRACE:
                        why = (f"its connection closed and did not come back within {LINK_GRACE:g}s "
                               "(its process ended or was killed)")
                    else:
                        continue
                    if not self._heard_after(r):
                        raise PeerLost(f"lost worker {r}: {why} (rank {self.rank} waiting at clock {clock} "
                                       f"for {tag!r})")
        finally:
            self.wait_seconds += time.perf_counter() - t0
        del self._pending[key]
        if len(self._done) == self._done.maxlen:
            self._done_set.discard(self._done[0])
        self._done.append(key)
        self._done_set.add(key)
        return got

    def _watch_links(self):
        """Note when the connection to a peer's data port goes down (``down_since``) and
        comes back (a new handshake)."""
        for r, mon in self._links.items():
            while mon.poll(0):
                event = recv_monitor_message(mon)["event"]
                if event == zmq.EVENT_DISCONNECTED:
                    self.down_since.setdefault(r, time.monotonic())
                elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                    self.down_since.pop(r, None)

    def _heard_after(self, r, most=10_000):
        """Before rank ``r`` counts as lost: take what is queued (at most ``most`` frames,
        until 0.1 s passes with none). True when ``r`` spoke meanwhile. A worker that was
        itself stopped (SIGSTOP, a paused VM) finds its peers' messages there, and an
        ABORT among them, telling it that they gave up on it, is the error it reports
        (PeerLost from _take). The 0.1 s: resumed, ZeroMQ's I/O thread may not have
        read every connection's bytes into the queue yet."""
        before = self.last_seen.get(r)
        for _ in range(most):
            if not self.pull.poll(100):
                break
            self._take(self.pull.recv_multipart(copy=False))
        return self.last_seen.get(r) != before

    def _take(self, frames):
        """File one received message; drop (and count) anything that is not a
        message of this run from a peer, or that repeats one already taken."""
        try:
            m = decode(frames, self.world, token=self.token, max_bytes=self.max_frame)
            if m.sender == self.rank:
                raise WireError(f"message claims to come from this worker (rank {self.rank})")
            if m.kind not in (DATA, HEARTBEAT, ABORT):
                raise WireError(f"unexpected {m!r}")
            key = (m.clock, m.tag)
            if m.kind == DATA and (key in self._done_set or m.sender in self._pending.get(key, ())):
                raise WireError(f"late or repeated message from rank {m.sender}: clock {m.clock}, tag {m.tag!r}")
        except WireError as e:
            self._drop(e)
            return
        self.last_seen[m.sender] = time.monotonic()
        if m.kind == ABORT:
            reason = bytes(m.parts[0][2][0]).decode("utf-8", "replace") if m.parts else "no reason given"
            lost = PeerLost(f"worker {m.sender} failed: {reason}")
            lost.relayed = True         # that worker says so itself (a local launch shows both on one stderr)
            raise lost
        if m.kind == DATA:
            self._pending.setdefault(key, {})[m.sender] = m

    # ----------------------------------------------------------------- the engine's calls
    @staticmethod
    def _tag(tag):
        return tag if isinstance(tag, str) else "-".join(map(str, tag))

    def send(self, clock, tag, outgoing):
        """One message to every other worker for (clock, tag), possibly empty. The arrays
        are handed over: a large message leaves zero-copy from ZeroMQ's I/O thread after
        this returns, so the caller must not write them afterwards (send a copy of live
        state: tux2.transport)."""
        tag = self._tag(tag)
        by_worker = {r: [] for r in range(self.world)}
        for (src, dst), arrays in outgoing.items():
            by_worker[self.owner(dst)].append((src, dst, arrays))
        for r in range(self.world):
            if r != self.rank:
                self._send(r, encode(DATA, clock, self.rank, self.world, tag, by_worker[r], token=self.token))
        self._local[(clock, tag)] = {(src, dst): arrays for src, dst, arrays in by_worker[self.rank]}

    def complete(self, clock, tag):
        """Take whatever has arrived (never blocks); True when (clock, tag) is complete."""
        while self.pull.poll(0):
            self._take(self.pull.recv_multipart(copy=False))
        return len(self._pending.get((clock, self._tag(tag)), ())) == self.world - 1

    def collect(self, clock, tag):
        tag = self._tag(tag)
        inbox = self._local.pop((clock, tag))
        for m in self._receive(clock, tag).values():
            for src, dst, arrays in m.parts:
                if self.owner(dst) != self.rank or self.owner(src) != m.sender:
                    raise WireError(f"rank {m.sender} sent a message for partition {src}→{dst}, "
                                    f"which is not between its and this worker's partitions")
                inbox[(src, dst)] = arrays
        return inbox

    def alltoall(self, clock, tag, outgoing):
        self.send(clock, tag, outgoing)
        return self.collect(clock, tag)

    def allgather(self, tag, arrays, clock=-1):
        """[arrays of every worker] in rank order (a setup-time collective). A tag used
        again is another round: a fast worker's second message no longer lands in a slower
        peer's box before it took the first (which then waited for ever; seen: an implicit
        run with workers gathered its 'seen' pairs twice)."""
        n = self._gathers[tag] = self._gathers.get(tag, -1) + 1
        out = {(self.rank, r): list(arrays) for r in range(self.world)}
        inbox = self.alltoall(clock, tag if not n else f"{tag}#{n}", out)
        return [inbox[(r, self.rank)] for r in range(self.world)]

    def allreduce_context(self, clock, local_contexts, fold, tag="ctx"):
        """Every worker gets every partition's context and folds them in partition order."""
        dtype = local_contexts[0].dtype
        # copies: the engine writes its contexts as soon as this returns, maybe before a large
        # one (e.g. LDA's with many topics) has left through the I/O thread
        mine = [(part, -1, [c.copy().view(np.uint8)]) for part, c in zip(self.local_parts, local_contexts)]
        for r in range(self.world):
            if r != self.rank:
                self._send(r, encode(DATA, clock, self.rank, self.world, tag, mine, token=self.token))
        ctxs = dict(zip(self.local_parts, local_contexts))
        for m in self._receive(clock, tag).values():
            for part, _, arrays in m.parts:
                raw = arrays[0]
                if raw.dtype != np.uint8 or raw.nbytes != dtype.itemsize or self.owner(part) != m.sender:
                    raise WireError(f"bad context from rank {m.sender} for partition {part}: "
                                    f"{raw.nbytes} bytes, expected {dtype.itemsize}")
                ctxs[part] = raw.view(dtype).copy()
        if sorted(ctxs) != list(range(self.parts)):
            raise WireError(f"contexts of partitions {sorted(set(range(self.parts)) - set(ctxs))} missing")
        acc = ctxs[0].copy()
        for p in range(1, self.parts):
            fold(acc, ctxs[p])
        return acc

    def abort(self, reason):
        """Tell every peer this worker is failing (never blocks; ``close`` lets it leave)."""
        self._aborted = True
        text = np.frombuffer(str(reason).encode("utf-8", "replace")[:2000], np.uint8)
        frames = encode(ABORT, 0, self.rank, self.world, "abort", [(self.rank, 0, [text])], token=self.token)
        for s in self.push.values():
            try:
                s.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    def close(self):
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._hb.join(timeout=5)
        self._watch_links()
        for r, s in self.push.items():
            # deliver what is queued (term waits for it, bounded); after an ABORT only so long
            # that it leaves, and not at all to a peer that is gone
            if not self._aborted:
                s.setsockopt(zmq.LINGER, int(1000 * self.timeout))
            elif r not in self.down_since:
                s.setsockopt(zmq.LINGER, int(1000 * min(self.timeout, LAST_WORD_GRACE)))
            s.disable_monitor()
            self._links[r].close()
            s.close()
        # the data port closes only once the messages have left: a peer sees it close when this
        # worker is done or dead, never while its last message is still on the way
        self._out.term()
        self.refused += self._handshake_failures(self._pull_monitor)
        if self._pull_monitor is not None:
            self.pull.disable_monitor()
            self._pull_monitor.close()
        self.pull.close()
        if self._auth is not None:
            self._auth.stop()
        self.ctx.term()
