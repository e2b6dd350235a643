"""Fig. 14: tux2 vs a parameter-server implementation of the same algorithm
(per-edge SGD MF with LibMF's adaptive step, mini-batches of edges, slack 0),
time per iteration on 2 worker processes.

The PS peer (bench/peers/ps.py) keeps the item rows in a hash table on a server
process and has each worker pull the rows its slice of a mini-batch touches and
push their deltas; users stay local to the worker that owns their ratings.
tux2 runs the real CLI (`tux2 run mf --mode sgd --batch-size B --workers 2
--slack 0`, bicut: users mirror-free, items cut): the master/mirror replicas
play the server's part, and only the replicas that changed are synced.
Petuum and ps-lite themselves are C++ builds not on the package registries;
they are reported as skipped. Final line: {"bench": "ps", "ps_over_tux2_time_per_iteration": r, ...}.
"""
import json
import os
import subprocess
import sys

import numpy as np

from bench.common import RESULTS, emit, figure, machine, report, tux2_cli

LOG = "ps"


def main(args):
    from bench.distributed import text_files
    from bench.common import netflix_cached
    quick = getattr(args, "quick", False)
    size = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    batch, epochs, k = (100_000, 4, 50) if quick else (400_000, 5, 50)
    tr, _, m = text_files(*size)
    _, _, npz = netflix_cached(*size)
    emit({"bench": "ps", "event": "dataset", "ratings": m, "batch": batch, **machine()}, LOG)
    metrics, _, wall = tux2_cli("mf", [tr, "--k", str(k), "--epochs", str(epochs), "--mode", "sgd", "--batch-size",
                                       str(batch), "--eval-every", "0", "--workers", "2", "--slack", "0"])
    tux = [(x["time_s"], x["train_rmse"]) for x in metrics]
    emit({"bench": "ps", "system": "tux2", "epoch_seconds": [t for t, _ in tux], "train_rmse": [r for _, r in tux],
          "wall_s": wall}, LOG)
    r = subprocess.run([sys.executable, "-m", "bench.peers.ps", "--data", npz, "--workers", "2", "--batch",
                        str(batch), "--epochs", str(epochs), "--k", str(k)], capture_output=True, text=True,
                       timeout=3600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if r.returncode != 0:
        raise RuntimeError(f"PS peer failed:\n{r.stderr[-2000:]}")
    ps = [(x["seconds"], x["train_rmse"]) for x in map(json.loads, r.stdout.splitlines())]
    emit({"bench": "ps", "system": "ps (hash-table server)", "epoch_seconds": [t for t, _ in ps],
          "train_rmse": [r for _, r in ps]}, LOG)
    for peer in ("Petuum", "ps-lite"):
        emit({"bench": "ps", "system": peer, "skipped": "C++ build, not on PyPI/Debian/npm"}, LOG)
    # the first epoch of either side includes first-touch costs: the median of the rest
    t_tux, t_ps = float(np.median([t for t, _ in tux[1:]])), float(np.median([t for t, _ in ps[1:]]))
    png = plot(tux, ps, os.path.join(RESULTS, "ps.png"))
    report("ps", "Fig. 14 analogue: tux2 vs a parameter-server implementation (MF, 2 workers, slack 0)",
           f"{m:,} ratings ({size[0]:,} users × {size[1]:,} items), k = {k}, mini-batch {batch:,} edges "
           f"({-(-m // batch)} clocks per epoch), {epochs} epochs",
           ["system", "s / iteration (median after the first)", "train RMSE after each epoch"],
           [["tux2 (master/mirror, array layout)", t_tux, ", ".join(f"{r:.4f}" for _, r in tux)],
            ["parameter server (hash table, pull/push)", t_ps, ", ".join(f"{r:.4f}" for _, r in ps)]],
           peers={"Petuum": None, "ps-lite": None},
           notes=[f"PS / tux2 time per iteration: **{t_ps / t_tux:.2f}×**. Same update rule; the two start "
                  "from different random factors and visit edges in different orders, so RMSE agrees only "
                  "roughly."], pngs=[png])
    emit({"bench": "ps", "ps_over_tux2_time_per_iteration": t_ps / t_tux, "tux2_s": t_tux, "ps_s": t_ps,
          "png": png}, LOG)
    return 0


def plot(tux, ps, path):
    with figure(path, figsize=(6.5, 4)) as ax:
        if ax is None:
            return None
        for label, c in (("tux2", tux), ("parameter server (hash table)", ps)):
            ax.plot(np.cumsum([t for t, _ in c]), [r for _, r in c], marker="o", label=label)
        ax.set_xlabel("training time (s), slowest worker")
        ax.set_ylabel("training RMSE")
        ax.set_title("MF, 2 workers, slack 0")
        ax.legend()
    return path
