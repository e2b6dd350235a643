"""Distributed runtime: speed-up of 2 workers over 1 for per-edge SGD MF, bytes sent
against the minimum the replicas imply (the slack sweep of the paper's Figures
10–11 is bench/slack.py).

Every run is the real CLI (`tux2 run mf … --workers W`): worker processes over
ZeroMQ on loopback. Epoch times are rank 0's `engine.run(1)` (test evaluation is
done once after the last epoch, outside the timing).
"""
import os

import numpy as np

from bench.common import emit, machine, netflix_cached, report, tux2_cli

LOG = "distributed"


def text_files(n_users, n_items, n_ratings):
    from tux2.io import write_edge_list
    train, test, path = netflix_cached(n_users, n_items, n_ratings)
    base = path[:-4]
    tr, te = base + ".train.txt", base + ".test.txt"
    for g, f in ((train, tr), (test, te)):
        if not os.path.exists(f):
            write_edge_list(f + ".tmp", g)
            os.replace(f + ".tmp", f)
    return tr, te, train.num_edges


def main(args):
    quick = getattr(args, "quick", False)
    size = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    epochs = 3 if quick else 5
    tr, te, m = text_files(*size)
    info = {"bench": "distributed", "users": size[0], "items": size[1], "train_ratings": m, **machine()}
    emit({**info, "event": "dataset"}, LOG)

    # 1. speed-up of per-edge SGD
    sgd = [tr, "--test", te, "--k", "50", "--epochs", str(epochs), "--eval-every", "0", "--partitioner", "bicut"]
    eps, rmse, nbytes, nmin = {}, {}, 0, 0
    for w in (1, 2):
        metrics, traces, wall = tux2_cli("mf", sgd + ["--workers", str(w)])
        times = [x["time_s"] for x in metrics[1:]] or [metrics[0]["time_s"]]
        eps[w] = m / float(np.median(times))
        rmse[w] = metrics[-1]["test_rmse"]
        if w == 2:
            nbytes = sum(t["bytes_sent"] for t in traces)
            nmin = sum(t["min_bytes"] for t in traces)
        emit({"bench": "distributed", "part": "sgd", "workers": w, "edges_per_s": eps[w],
              "epoch_seconds": times, "test_rmse": rmse[w], "wall_s": wall,
              **({"bytes_sent": nbytes, "min_bytes": nmin} if w == 2 else {})}, LOG)

    report("distributed", "Distributed runtime: 2 workers vs 1 (per-edge SGD MF)",
           f"{m:,} train ratings ({size[0]:,} users × {size[1]:,} items), k=50, {epochs} epochs, bicut",
           ["workers", "M edges/s", "test RMSE", "bytes sent", "minimum bytes"],
           [[1, eps[1] / 1e6, rmse[1], None, None], [2, eps[2] / 1e6, rmse[2], nbytes, nmin]],
           notes=[f"Speed-up 2 workers / 1: **{eps[2] / eps[1]:.2f}×**; bytes sent = **{nbytes / max(nmin, 1):.3f}×** "
                  "the minimum (the synced fields of the replicas that changed, both directions). The slack "
                  "sweep is `python -m bench slack`."])
    emit({"bench": "distributed", "speedup_2_workers": eps[2] / eps[1], "bytes_over_minimum": nbytes / max(nmin, 1),
          "edges_per_s_1_worker": eps[1], "edges_per_s_2_workers": eps[2], "test_rmse_1_worker": rmse[1],
          "test_rmse_2_workers": rmse[2], "bytes_sent": nbytes, "min_bytes": nmin,
          "train_ratings": m, "epochs": epochs}, LOG)
    return 0
