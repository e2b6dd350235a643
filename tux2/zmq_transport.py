"""ZeroMQ transport: symmetric workers, one PULL socket each, PUSH to every peer.

* Rendezvous: rank 0 binds ``rendezvous`` (ROUTER); every other worker sends
  its data address (HELLO) and receives the table of all addresses (TABLE).
* Data: per (clock, tag) every worker sends exactly one message to every
  other worker (possibly empty), so a receiver knows when it has everything.
  Header + raw buffers (tux2.wire), zero-copy for large buffers, no pickle.
* Liveness: a heartbeat thread (own sockets) pings every peer; a receive
  gives up when a peer it waits for has been silent for ``timeout`` seconds
  and raises :class:`PeerLost` naming the rank. A worker that fails sends
  ABORT with its reason, so the others stop at once. A worker that closes
  normally first lets its queued messages leave (at most ``timeout`` seconds: a
  rank's last message, e.g. its piece of a gather, must not die with it); after
  an ABORT sockets close with LINGER 0.
"""
import collections
import threading
import time

import numpy as np
import zmq

from tux2.errors import Tux2Error
from tux2.wire import ABORT, DATA, HEARTBEAT, HELLO, TABLE, WireError, decode, encode

ZERO_COPY_MIN = 64 * 1024


class PeerLost(Tux2Error):
    """A peer died, failed, or stopped answering."""


class ZmqTransport:
    def __init__(self, rank, world, rendezvous, parts, timeout=30.0, connect_timeout=120.0,
                 bind_host="127.0.0.1", advertise_host=None, heartbeat=1.0, curve=None):
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
        self._pending = {}
        self._local = {}
        self._done = collections.deque(maxlen=4096)
        self._done_set = set()
        self._closed = False
        self._aborted = False
        self.ctx = zmq.Context()
        self._auth = None
        self._keys = None
        if curve:
            self._start_curve(curve)
        self.pull = self._socket(zmq.PULL, server=True)
        port = self.pull.bind_to_random_port(f"tcp://{bind_host}")
        self.address = f"tcp://{advertise_host or bind_host}:{port}"
        self.table = self._rendezvous(rendezvous, connect_timeout)
        self.push = {}
        for r, addr in enumerate(self.table):
            if r != self.rank:
                s = self._socket(zmq.PUSH)
                s.connect(addr)
                self.push[r] = s
        now = time.monotonic()
        self.last_seen = {r: now for r in range(world) if r != rank}
        self._stop = threading.Event()
        self._hb = threading.Thread(target=self._heartbeat, args=(heartbeat,), daemon=True,
                                    name=f"tux2-heartbeat-{rank}")
        self._hb.start()

    # ----------------------------------------------------------------- setup
    def _socket(self, kind, server=False):
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        if self._keys is not None:
            public, secret = self._keys
            s.curve_publickey, s.curve_secretkey = public, secret
            if server:
                s.curve_server = True
            else:
                s.curve_serverkey = public
        return s

    def _start_curve(self, directory):
        """CURVE with one shared key pair (``tux2 keys DIR``): traffic is encrypted and
        only holders of the secret key get in (ZAP checks the client key)."""
        import os
        import zmq.auth
        from zmq.auth.thread import ThreadAuthenticator
        secret_file = os.path.join(directory, "tux2.key_secret")
        if not zmq.has("curve"):
            raise Tux2Error("this libzmq has no CURVE support")
        if not os.path.exists(secret_file):
            raise Tux2Error(f"no CURVE key in {directory}: create one with 'tux2 keys {directory}' "
                            "and copy the directory to every host")
        public, secret = zmq.auth.load_certificate(secret_file)
        self._keys = (public, secret)
        self._auth = ThreadAuthenticator(self.ctx)
        self._auth.start()
        self._auth.configure_curve(domain="*", location=directory)

    def owner(self, part):
        return part % self.world

    def _rendezvous(self, address, deadline_s):
        deadline = time.monotonic() + deadline_s
        me = np.frombuffer(self.address.encode(), np.uint8)
        if self.world == 1:
            return [self.address]
        if self.rank == 0:
            sock = self._socket(zmq.ROUTER, server=True)
            try:
                sock.bind(address)
            except zmq.ZMQError as e:
                raise Tux2Error(f"rank 0 cannot bind the rendezvous address {address}: {e}") from None
            table = {0: self.address}
            idents = {}
            try:
                while len(table) < self.world:
                    left = deadline - time.monotonic()
                    if left <= 0 or not sock.poll(int(left * 1000)):
                        missing = sorted(set(range(self.world)) - set(table))
                        raise PeerLost(f"rendezvous at {address}: rank(s) {missing} never arrived "
                                       f"within {deadline_s:.0f}s")
                    ident, *frames = sock.recv_multipart()
                    m = decode(frames, self.world)
                    if m.kind != HELLO or m.sender in table:
                        raise WireError(f"unexpected {m!r} during rendezvous")
                    table[m.sender] = bytes(m.parts[0][2][0]).decode()
                    idents[m.sender] = ident
                parts = [(r, 0, [np.frombuffer(table[r].encode(), np.uint8)]) for r in range(self.world)]
                for r, ident in idents.items():
                    sock.send_multipart([ident] + encode(TABLE, 0, 0, self.world, "table", parts))
                # the ROUTER must not close before the tables are out (LINGER 0 would drop them)
                time.sleep(0.05)
            finally:
                sock.close()
            return [table[r] for r in range(self.world)]
        sock = self._socket(zmq.DEALER)
        try:
            sock.connect(address)
            sock.send_multipart(encode(HELLO, 0, self.rank, self.world, "hello", [(self.rank, 0, [me])]))
            left = deadline - time.monotonic()
            if not sock.poll(int(max(left, 0) * 1000)):
                raise PeerLost(f"rendezvous at {address}: no answer from rank 0 within {deadline_s:.0f}s")
            m = decode(sock.recv_multipart(), self.world)
            if m.kind != TABLE or len(m.parts) != self.world:
                raise WireError(f"unexpected {m!r} during rendezvous")
            return [bytes(p[2][0]).decode() for p in m.parts]
        finally:
            sock.close()

    def _heartbeat(self, period):
        socks = {}
        try:
            for r, addr in enumerate(self.table):
                if r != self.rank:
                    s = self._socket(zmq.PUSH)
                    s.setsockopt(zmq.SNDHWM, 4)
                    s.connect(addr)
                    socks[r] = s
            frames = encode(HEARTBEAT, 0, self.rank, self.world, "hb")
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
        size = sum(len(f) if isinstance(f, bytes) else f.nbytes for f in frames)
        self.bytes_sent += size
        self.messages_sent += 1
        self.push[r].send_multipart(frames, copy=size < ZERO_COPY_MIN)

    def _receive(self, clock, tag):
        """Messages from every other worker for (clock, tag): {sender: Message}."""
        key = (clock, tag)
        got = self._pending.setdefault(key, {})
        t0 = time.perf_counter()
        try:
            while len(got) < self.world - 1:
                if self.pull.poll(200):
                    self._take(self.pull.recv_multipart(copy=False))
                    continue
                now = time.monotonic()
                for r in range(self.world):
                    if r != self.rank and r not in got and now - self.last_seen[r] > self.timeout:
                        raise PeerLost(f"lost worker {r}: nothing heard from it for {self.timeout:.0f}s "
                                       f"(rank {self.rank} waiting at clock {clock} for {tag!r})")
        finally:
            self.wait_seconds += time.perf_counter() - t0
        del self._pending[key]
        if len(self._done) == self._done.maxlen:
            self._done_set.discard(self._done[0])
        self._done.append(key)
        self._done_set.add(key)
        return got

    def _take(self, frames):
        m = decode(frames, self.world)
        if m.sender == self.rank:
            raise WireError(f"message claims to come from this worker (rank {self.rank})")
        self.last_seen[m.sender] = time.monotonic()
        if m.kind == HEARTBEAT:
            return
        if m.kind == ABORT:
            reason = bytes(m.parts[0][2][0]).decode("utf-8", "replace") if m.parts else "no reason given"
            raise PeerLost(f"worker {m.sender} failed: {reason}")
        if m.kind != DATA:
            raise WireError(f"unexpected {m!r}")
        key = (m.clock, m.tag)
        if key in self._done_set:
            raise WireError(f"late or repeated message from rank {m.sender}: clock {m.clock}, tag {m.tag!r}")
        slot = self._pending.setdefault(key, {})
        if m.sender in slot:
            raise WireError(f"two messages from rank {m.sender} for clock {m.clock}, tag {m.tag!r}")
        slot[m.sender] = m

    # ----------------------------------------------------------------- the engine's calls
    @staticmethod
    def _tag(tag):
        return tag if isinstance(tag, str) else "-".join(map(str, tag))

    def send(self, clock, tag, outgoing):
        """One message to every other worker for (clock, tag), possibly empty."""
        tag = self._tag(tag)
        by_worker = {r: [] for r in range(self.world)}
        for (src, dst), arrays in outgoing.items():
            by_worker[self.owner(dst)].append((src, dst, arrays))
        for r in range(self.world):
            if r != self.rank:
                self._send(r, encode(DATA, clock, self.rank, self.world, tag, by_worker[r]))
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
        """[arrays of every worker] in rank order (a setup-time collective)."""
        out = {(self.rank, r): list(arrays) for r in range(self.world)}
        inbox = self.alltoall(clock, tag, out)
        return [inbox[(r, self.rank)] for r in range(self.world)]

    def allreduce_context(self, clock, local_contexts, fold, tag="ctx"):
        """Every worker gets every partition's context and folds them in partition order."""
        dtype = local_contexts[0].dtype
        mine = [(part, -1, [np.ascontiguousarray(c).view(np.uint8)])
                for part, c in zip(self.local_parts, local_contexts)]
        for r in range(self.world):
            if r != self.rank:
                self._send(r, encode(DATA, clock, self.rank, self.world, tag, mine))
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
        """Tell every peer this worker is failing (best effort, never blocks)."""
        self._aborted = True
        text = np.frombuffer(str(reason).encode("utf-8", "replace")[:2000], np.uint8)
        frames = encode(ABORT, 0, self.rank, self.world, "abort", [(self.rank, 0, [text])])
        for s in self.push.values():
            try:
                s.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        time.sleep(0.1)     # let the messages leave before the sockets close with LINGER 0

    def close(self):
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._hb.join(timeout=5)
        for s in self.push.values():
            if not self._aborted:           # deliver what is queued (ctx.term waits for it, bounded)
                s.setsockopt(zmq.LINGER, int(1000 * self.timeout))
            s.close()
        self.pull.close()
        if self._auth is not None:
            self._auth.stop()
        self.ctx.term()
