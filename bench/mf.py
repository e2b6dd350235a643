"""MF by SGD: tux2 per-edge SGD vs LibMF (AVX build), same data, same epochs, 1 thread.

Prints per-epoch lines for both and a final
{"bench": "mf_sgd", "tux2_over_libmf_edges_per_s": R, "tux2_test_rmse": ..., "libmf_test_rmse": ...}.
Per-epoch training time excludes setup on both sides: for tux2 it is the time of
engine.run(1); for LibMF it is (t(N epochs) − t(1 epoch)) / (N − 1), since LibMF
only reports the total of setup + training.
"""
import json
import os
import re
import subprocess
import sys
import time


import numpy as np

from bench.common import RESULTS, emit, figure, machine, netflix_cached, report

LOG = "mf"


def run_libmf(so, data, epochs, k, eta, reg, verbose, threads=1):
    cmd = [sys.executable, "-m", "bench.peers.libmf", "--so", so, "--data", data, "--epochs", str(epochs),
           "--k", str(k), "--eta", str(eta), "--reg", str(reg), "--threads", str(threads)] + \
        (["--verbose"] if verbose else [])
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if r.returncode != 0:
        raise RuntimeError(f"LibMF run failed: {r.stderr[-500:]}")
    res = json.loads(r.stdout.split("RESULT ", 1)[1].splitlines()[0])
    iters = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isdigit() and re.match(r"^[\d.]+$", f[2]):
            iters.append({"iter": int(f[0]), "tr_rmse": float(f[1]), "va_rmse": float(f[2])})
    res["iters"] = iters
    return res


def libmf_epoch_seconds(so, path, epochs, k, lr, reg, threads=1):
    """LibMF's seconds per epoch, (t(N epochs) − t(1 epoch)) / (N − 1) (it reports only
    setup + training), and the N-epoch run's result (test_rmse)."""
    t1 = run_libmf(so, path, 1, k, lr, reg, verbose=False, threads=threads)["seconds"]
    tn = run_libmf(so, path, epochs, k, lr, reg, verbose=False, threads=threads)
    return (tn["seconds"] - t1) / (epochs - 1), tn


def libmf_run(so, path, m, epochs, k, lr, reg):
    """LibMF on the bench's data (``m`` training ratings), its epochs emitted as lines:
    (seconds per epoch, the N-epoch run's result, the test RMSE of each epoch)."""
    verbose = run_libmf(so, path, epochs, k, lr, reg, verbose=True)
    per_epoch, tn = libmf_epoch_seconds(so, path, epochs, k, lr, reg)
    for it in verbose["iters"]:
        emit({"bench": "mf_sgd", "system": "libmf", "epoch": it["iter"] + 1, "train_rmse": it["tr_rmse"],
              "test_rmse": it["va_rmse"]}, LOG)
    emit({"bench": "mf_sgd", "system": "libmf", "event": "timing", f"seconds_{epochs}_epochs": tn["seconds"],
          "seconds_per_epoch": per_epoch, "edges_per_s": m / per_epoch, "test_rmse": tn["test_rmse"]}, LOG)
    return per_epoch, tn, [it["va_rmse"] for it in verbose["iters"]]


def sgd_setup(train, k=50, lr=0.1, reg=0.05):
    """tux2.MF's preparation of per-edge SGD on one partition, edges in blocked order
    (a reordered copy of ``train``)."""
    from tux2 import MF, Dataset
    return MF(k=k, lr=lr, reg=reg, order="blocked").prepare(Dataset(train), 1)


def setup_engine(s):
    """The one-partition Engine of an ``sgd_setup``."""
    from tux2 import Engine
    return Engine(s.program, s.graph, partitions=1, seed=0, **s.engine)


def sgd_engine(train, k=50, lr=0.1, reg=0.05):
    """tux2's per-edge SGD MF on one partition, edges in blocked order (tux2.MF's
    preparation): (engine, its setup: the reordered training graph of ratings / scale,
    the mean rating mu, scale)."""
    s = sgd_setup(train, k, lr, reg)
    return setup_engine(s), s


def main(args):
    from tux2.estimators.mf import vertex_model
    from tux2.udfs import mf

    quick = getattr(args, "quick", False)
    n_users, n_items, n_ratings = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    epochs, k, lr, reg = (5 if quick else 10), 50, 0.1, 0.05
    train, test, path = netflix_cached(n_users, n_items, n_ratings)
    m = train.num_edges
    info = {"bench": "mf_sgd", "users": n_users, "items": n_items, "train_ratings": m,
            "test_ratings": test.num_edges, "k": k, "epochs": epochs, "lr": lr, "reg": reg, **machine()}
    emit({**info, "event": "dataset", "path": path}, LOG)

    # --- tux2: per-edge SGD, 1 partition, blocked edge order
    t = time.perf_counter()
    eng, s = sgd_engine(train, k, lr, reg)
    emit({"bench": "mf_sgd", "system": "tux2", "event": "setup", "seconds": time.perf_counter() - t}, LOG)
    times, tux2_curve = [], []
    for epoch in range(1, epochs + 1):
        t = time.perf_counter()
        eng.run(1)
        dt = time.perf_counter() - t
        times.append(dt)
        rm = mf.rmse(*vertex_model(eng, s), test, s.mu)
        tux2_curve.append(rm)
        emit({"bench": "mf_sgd", "system": "tux2", "epoch": epoch, "seconds": dt, "edges_per_s": m / dt,
              "train_rmse": eng.context()["rmse"] * s.scale, "test_rmse": rm}, LOG)
    tux2_rmse = rm
    tux2_eps = m * epochs / sum(times)

    # --- LibMF: a peer that cannot be had is reported as skipped (bench/README.md); tux2's row stays
    from bench.peers import libmf
    try:
        so = libmf.build()
    except RuntimeError as e:
        emit({"bench": "mf_sgd", "system": "libmf", "skipped": str(e)}, LOG)
        so = None
    peer = libmf_run(so, path, m, epochs, k, lr, reg) if so else None
    libmf_eps, libmf_rmse = (m / peer[0], peer[1]["test_rmse"]) if peer else (None, None)
    png = None
    with figure("mf", figsize=(6.5, 4)) as ax:
        if ax is not None:
            ax.plot(np.cumsum(times), tux2_curve, marker="o", label="tux2 (per-edge SGD, 1 partition)")
            if peer:
                ax.plot(peer[0] * np.arange(1, len(peer[2]) + 1), peer[2], marker="s",
                        label=f"LibMF {libmf.VERSION} (AVX, 1 thread)")
            ax.set_xlabel("training time (s; LibMF: epochs × its per-epoch time)")
            ax.set_ylabel("test RMSE")
            ax.set_title(f"MF, k={k}, {m / 1e6:.1f} M ratings")
            ax.legend()
            png = os.path.join(RESULTS, "mf.png")
    report("mf", "Peer: MF by per-edge SGD, tux2 vs LibMF (1 thread)",
           f"{m:,} train / {test.num_edges:,} test ratings ({n_users:,} users × {n_items:,} items), k = {k}, "
           f"{epochs} epochs, η = {lr}, λ = {reg}", ["system", "M edges/s", "test RMSE"],
           [["tux2", tux2_eps / 1e6, tux2_rmse]] + ([[f"LibMF {libmf.VERSION}", libmf_eps / 1e6, libmf_rmse]]
                                                    if peer else []),
           peers={"LibMF": libmf.VERSION if peer else None},
           notes=[f"tux2 / LibMF edges per second: **{tux2_eps / libmf_eps:.2f}×**." if peer else
                  "LibMF could not be had: skipped (the reason is in mf.jsonl)."], pngs=[png])
    emit({"bench": "mf_sgd", "tux2_over_libmf_edges_per_s": tux2_eps / libmf_eps if peer else None,
          "tux2_edges_per_s": tux2_eps, "libmf_edges_per_s": libmf_eps,
          "tux2_test_rmse": tux2_rmse, "libmf_test_rmse": libmf_rmse, "epochs": epochs,
          "train_ratings": m}, LOG)
    return 0
