"""A parameter-server implementation of per-edge SGD MF, the comparison point of
Fig. 14 (Petuum / Parameter Server style), written for this benchmark.

* One server process keeps the model's item rows (p, b, G) in a hash table
  (numba typed Dict, scrambled 63-bit keys → float32 row), as a PS does.
* W worker processes each own the ratings of the users that hash to them and
  keep those users' rows locally (the data-parallel side: the fixed Petuum
  layout the paper mentions, which avoids a round trip per user update).
* Per mini-batch (clock c): a worker pulls the rows of the items its slice of
  the batch touches, runs the same per-edge SGD as tux2's MF program (LibMF's
  row-wise adaptive step, biases) on the pulled copy, and pushes the row deltas;
  the server sums them. Slack 0: the server answers a pull of clock c only
  after every worker's push of clock c − 1 (BSP, as tux2 with slack 0).

Wire format: raw little-endian int64/float32 frames over ZeroMQ, never pickle.

    python -m bench.peers.ps --data NPZ --workers 2 --batch B --epochs E --k K
prints one JSON line per epoch: {"epoch", "seconds" (slowest worker), "train_rmse"}.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import zmq
from numba import njit

from bench import layout
from bench.layout import vec_store



def keys_of(ids):
    return layout.keys_of(ids, 7)


@njit(cache=True)
def pull_rows(store, keys, out):
    for i in range(len(keys)):
        out[i] = store[keys[i]]


@njit(cache=True)
def push_rows(store, keys, deltas):
    for i in range(len(keys)):
        row = store[keys[i]]
        row += deltas[i]


@njit(cache=True, fastmath=True)
def sgd_slice(u, it, r, U, Q, mu, lr, reg, k):
    """tux2's mf.sgd_exchange on rows U[u] (local users) and Q[it] (pulled items):
    columns 0..k−1 p, k bias, k+1 running mean squared gradient G."""
    loss = 0.0
    for e in range(len(u)):
        p, q = U[u[e]], Q[it[e]]
        err = r[e] - (mu + p[k] + q[k])
        for j in range(k):
            err -= p[j] * q[j]
        loss += err * err
        eta_u, eta_v = lr / np.sqrt(p[k + 1]), lr / np.sqrt(q[k + 1])
        gu = gv = np.float32(0.0)
        for j in range(k):
            pj, qj = p[j], q[j]
            dp, dq = reg * pj - err * qj, reg * qj - err * pj
            gu += dp * dp
            gv += dq * dq
            p[j] = pj - eta_u * dp
            q[j] = qj - eta_v * dq
        p[k + 1] += gu / k
        q[k + 1] += gv / k
        p[k] += eta_u * (err - reg * p[k])
        q[k] += eta_v * (err - reg * q[k])
    return loss


def server(args):
    d = np.load(args.data)
    n_items, k, W = int(d["tr_i"].max()) + 1, args.k, args.workers
    rows = np.zeros((n_items, k + 2), np.float32)
    rows[:, :k] = np.random.default_rng(1).normal(0, 0.1, (n_items, k))
    rows[:, k + 1] = 1.0
    store = vec_store(keys_of(np.arange(n_items)), rows)
    pull_rows(store, keys_of(np.arange(0)), np.zeros((0, k + 2), np.float32))      # compile before clock 1
    push_rows(store, keys_of(np.arange(0)), np.zeros((0, k + 2), np.float32))
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind(args.address)
    pushed, pending, done = {}, [], 0

    def answer(ident, keys):
        out = np.empty((len(keys), k + 2), np.float32)
        pull_rows(store, keys, out)
        sock.send_multipart([ident, out.tobytes()])

    while done < W:
        ident, cmd, *rest = sock.recv_multipart()
        if cmd == b"pull":
            c, keys = int(np.frombuffer(rest[0], np.int64)[0]), np.frombuffer(rest[1], np.int64)
            if c == 1 or pushed.get(c - 1, 0) == W:
                answer(ident, keys)
            else:
                pending.append((ident, c, keys))
        elif cmd == b"push":
            c = int(np.frombuffer(rest[0], np.int64)[0])
            keys = np.frombuffer(rest[1], np.int64)
            push_rows(store, keys, np.frombuffer(rest[2], np.float32).reshape(len(keys), k + 2))
            pushed[c] = pushed.get(c, 0) + 1
            if pushed[c] == W:
                ready = [p for p in pending if p[1] == c + 1]
                pending = [p for p in pending if p[1] != c + 1]
                for ident2, _, keys2 in ready:
                    answer(ident2, keys2)
        elif cmd == b"done":
            done += 1
            sock.send_multipart([ident, b"bye"])
        else:
            raise SystemExit(f"ps server: unknown command {cmd[:20]!r}")
    sock.close(linger=0)
    ctx.term()


def worker(args):
    d = np.load(args.data)
    src, dst, val = d["tr_u"].astype(np.int64), d["tr_i"].astype(np.int64), d["tr_r"].astype(np.float32)
    mu, k, W, rank = float(val.mean()), args.k, args.workers, args.rank
    M = len(src)
    clocks = -(-M // args.batch)
    mine = (src * 2654435761 % (2**32)) % W == rank          # users hashed to workers
    pos = np.flatnonzero(mine)
    n_users = int(src.max()) + 1
    U = np.zeros((n_users, k + 2), np.float32)
    U[:, :k] = np.random.default_rng(2).normal(0, 0.1, (n_users, k))
    U[:, k + 1] = 1.0
    # per clock: this worker's edges of the global range, their items' keys and local row numbers
    chunks = []
    for c in range(clocks):
        a, b = np.searchsorted(pos, [c * args.batch, (c + 1) * args.batch])
        e = pos[a:b]
        items, local = np.unique(dst[e], return_inverse=True)
        chunks.append((src[e], local.astype(np.int64), val[e], keys_of(items)))
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(args.address)
    lr, reg, mu = np.float32(args.lr), np.float32(args.reg), np.float32(mu)
    sgd_slice(src[:0], dst[:0], val[:0], U, np.zeros((0, k + 2), np.float32), mu, lr, reg, k)   # compile
    pull_rows(vec_store(keys_of(np.arange(0)), np.zeros((0, k + 2), np.float32)), keys_of(np.arange(0)),
              np.zeros((0, k + 2), np.float32))
    clock = 0
    for epoch in range(1, args.epochs + 1):
        t0, loss = time.perf_counter(), 0.0
        for u, it, r, keys in chunks:
            clock += 1
            c = np.array([clock], np.int64).tobytes()
            sock.send_multipart([b"pull", c, keys.tobytes()])
            Q = np.frombuffer(sock.recv(), np.float32).reshape(len(keys), k + 2).copy()
            before = Q.copy()
            loss += sgd_slice(u, it, r, U, Q, mu, lr, reg, k)
            sock.send_multipart([b"push", c, keys.tobytes(), (Q - before).tobytes()])
        print(json.dumps({"rank": rank, "epoch": epoch, "seconds": time.perf_counter() - t0, "loss": loss,
                          "n": int(len(pos))}), flush=True)
    sock.send_multipart([b"done"])
    sock.recv()
    sock.close(linger=0)
    ctx.term()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--reg", type=float, default=0.05)
    ap.add_argument("--role", choices=("launch", "server", "worker"), default="launch")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--address")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args(argv)
    if args.role == "server":
        return server(args)
    if args.role == "worker":
        return worker(args)
    from tux2.runtime import free_port
    address = f"tcp://127.0.0.1:{free_port()}"
    base = [sys.executable, "-m", "bench.peers.ps", "--data", args.data, "--workers", str(args.workers),
            "--batch", str(args.batch), "--epochs", str(args.epochs), "--k", str(args.k), "--lr", str(args.lr),
            "--reg", str(args.reg), "--address", address]
    cwd = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import tempfile
    logs = [tempfile.TemporaryFile("w+") for _ in range(2 * (args.workers + 1))]
    roles = [["--role", "server"]] + [["--role", "worker", "--rank", str(r)] for r in range(args.workers)]
    procs = [subprocess.Popen(base + role, cwd=cwd, stdout=logs[2 * i], stderr=logs[2 * i + 1])
             for i, role in enumerate(roles)]
    deadline = time.monotonic() + args.timeout
    try:                # a failed process stops the others at once: no hang on a dead peer
        while any(p.poll() is None for p in procs):
            if any(p.returncode not in (None, 0) for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for f in logs:
        f.seek(0)
    outs = [(logs[2 * i].read(), logs[2 * i + 1].read()) for i in range(len(procs))]
    bad = [(i, p.returncode, o[1]) for i, (p, o) in enumerate(zip(procs, outs)) if p.returncode != 0]
    if bad:
        raise SystemExit(f"ps: process {bad[0][0]} failed (rc {bad[0][1]}):\n{bad[0][2][-1500:]}")
    recs = [json.loads(x) for o in outs[1:] for x in o[0].splitlines() if x.startswith("{")]
    for e in range(1, args.epochs + 1):
        es = [r for r in recs if r["epoch"] == e]
        print(json.dumps({"epoch": e, "seconds": max(r["seconds"] for r in es),
                          "train_rmse": math.sqrt(sum(r["loss"] for r in es) / sum(r["n"] for r in es))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
