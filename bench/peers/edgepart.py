"""Offline edge (vertex-cut) partitioners from PyPI, as quality baselines
(reference/partitioning.md §3): KaHIP's SPAC ``edge_partitioning`` binary and
Mt-KaHyPar (KM1 on the hypergraph whose nodes are edges and whose nets are
vertices). Both minimise Σ(|A(v)| − 1), i.e. λ without master-only replicas.

Installed on demand with pip; each run happens in a subprocess with a time
limit. Run as a module for one partition: prints a JSON line.
"""
import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np


def ensure(package):
    """Version of ``package`` (kahip or mtkahypar), installing it from PyPI if needed."""
    from bench.common import ensure as install
    install({"kahip": "kahip", "mtkahypar": "mtkahypar"}[package], package)
    from importlib.metadata import version
    return version(package)


def simple_undirected(s, t):
    """Unique undirected edges without self-loops: (lo, hi) arrays and, per input
    edge, the index of its undirected edge (−1 for a self-loop)."""
    lo, hi = np.minimum(s, t), np.maximum(s, t)
    n = int(max(hi.max(), 0)) + 1
    key = lo * n + hi
    uniq, inv = np.unique(key, return_inverse=True)
    idx = inv.astype(np.int64)
    u_lo, u_hi = uniq // n, uniq % n
    keep = u_lo != u_hi
    remap = np.cumsum(keep) - 1
    idx = np.where(keep[idx], remap[idx], -1)
    return u_lo[keep], u_hi[keep], idx


def _kahip(s, t, n, k, seed, preconfiguration):
    lo, hi, idx = simple_undirected(s, t)
    site = sysconfig.get_paths()["purelib"]
    binary = os.path.join(site, "bin", "edge_partitioning")
    if not os.path.exists(binary):
        raise RuntimeError(f"KaHIP's edge_partitioning binary not found at {binary}")
    # adjacency lists, 1-based, each undirected edge in both lists
    a = np.concatenate([lo, hi])
    b = np.concatenate([hi, lo])
    eid = np.concatenate([np.arange(len(lo)), np.arange(len(lo))])
    o = np.lexsort((b, a))
    a, b, eid = a[o], b[o], eid[o]
    ptr = np.searchsorted(a, np.arange(n + 1))
    with tempfile.TemporaryDirectory() as d:
        gpath, opath = os.path.join(d, "g.graph"), os.path.join(d, "parts")
        with open(gpath, "w") as f:
            f.write(f"{n} {len(lo)}\n")
            nb = (b + 1).astype(str)
            for v in range(n):
                f.write(" ".join(nb[ptr[v]:ptr[v + 1]]) + "\n")
        env = {**os.environ, "LD_LIBRARY_PATH": os.path.join(site, "kahip.libs") + ":" + os.path.join(site, "lib")}
        t0 = time.perf_counter()
        r = subprocess.run([binary, gpath, f"--k={k}", f"--seed={seed}", f"--preconfiguration={preconfiguration}",
                            f"--output_filename={opath}"], capture_output=True, text=True, env=env)
        secs = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"edge_partitioning failed: {r.stderr[-300:]} {r.stdout[-300:]}")
        blocks = np.loadtxt(opath, dtype=np.int64)
    per_undirected = np.empty(len(lo), np.int64)
    per_undirected[eid] = blocks                     # both directions agree
    return per_undirected, idx, secs


def _mtkahypar(s, t, n, k, seed, threads=2):
    import mtkahypar
    lo, hi, idx = simple_undirected(s, t)
    m = len(lo)
    mk = mtkahypar.initialize(threads)
    ctx = mk.context_from_preset(mtkahypar.PresetType.DEFAULT)
    ctx.set_partitioning_parameters(k, 0.03, mtkahypar.Objective.KM1)
    mtkahypar.set_seed(seed)
    ctx.logging = False
    ends = np.concatenate([lo, hi])
    eid = np.concatenate([np.arange(m), np.arange(m)])
    o = np.argsort(ends, kind="stable")
    ends, eid = ends[o], eid[o]
    ptr = np.searchsorted(ends, np.arange(n + 1))
    nets = [eid[ptr[v]:ptr[v + 1]].tolist() for v in range(n) if ptr[v + 1] > ptr[v]]
    t0 = time.perf_counter()
    hg = mk.create_hypergraph(ctx, m, len(nets), nets)
    ph = hg.partition(ctx)
    secs = time.perf_counter() - t0
    parts = np.array([ph.block_id(e) for e in range(m)], np.int64)
    return parts, idx, secs


def run(peer, s, t, n, k, seed=0, timeout=1800):
    """Edge parts of the input edges (self-loops go to part 0) and seconds, run in a subprocess."""
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "g.npz"), s=s, t=t)
        r = subprocess.run([sys.executable, "-m", "bench.peers.edgepart", peer, os.path.join(d, "g.npz"),
                            str(n), str(k), str(seed), os.path.join(d, "out.npy")],
                           capture_output=True, text=True, timeout=timeout,
                           cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        if r.returncode != 0:
            raise RuntimeError(f"{peer} failed: {r.stderr.strip()[-400:]}")
        info = json.loads(r.stdout.strip().splitlines()[-1])
        return np.load(os.path.join(d, "out.npy")), info["seconds"]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=("kahip", "mtkahypar"))
    ap.add_argument("graph")
    ap.add_argument("n", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("out")
    a = ap.parse_args(argv)
    g = np.load(a.graph)
    if a.peer == "kahip":
        per, idx, secs = _kahip(g["s"], g["t"], a.n, a.k, a.seed, "fast")
    else:
        per, idx, secs = _mtkahypar(g["s"], g["t"], a.n, a.k, a.seed)
    np.save(a.out, np.where(idx >= 0, per[np.maximum(idx, 0)], 0).astype(np.int32))
    print(json.dumps({"seconds": secs}))


if __name__ == "__main__":
    main()
