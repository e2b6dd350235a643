"""Distributed runtime: speed-up of 2 workers over 1 for per-edge SGD MF, bytes sent
against the minimum the replicas imply, and the compute/sync/wait breakdown per
clock for slack 0, 1, 2, 4, 8 (the analogue of the paper's Figures 10–11).

Every run is the real CLI (`tux2 run mf … --workers W`): worker processes over
ZeroMQ on loopback. Epoch times are rank 0's `engine.run(1)` (test evaluation is
done once after the last epoch, outside the timing).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench.common import RESULTS, emit, machine, netflix_cached

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


def run_cli(args, timeout=3600):
    d = tempfile.mkdtemp(prefix="tux2-bench-dist-")
    cmd = [sys.executable, "-m", "tux2.cli", "run", "mf", *args, "--metrics", os.path.join(d, "m.jsonl"),
           "--trace", os.path.join(d, "trace"), "--quiet"]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    metrics = [json.loads(x) for x in open(os.path.join(d, "m.jsonl"))]
    traces = []
    tdir = os.path.join(d, "trace")
    ingress = []
    for f in sorted(os.listdir(tdir)):
        if f.startswith("trace-"):
            traces += [json.loads(x) for x in open(os.path.join(tdir, f))]
        elif f.startswith("ingress-"):
            ingress.append(json.load(open(os.path.join(tdir, f))))
    traces.sort(key=lambda t: (t["rank"], t["clock"]))
    if ingress:
        print(json.dumps({"bench": "distributed", "event": "ingress", "workers": ingress}), file=sys.stderr)
    return metrics, traces, wall


def breakdown(traces):
    ranks = sorted({t["rank"] for t in traces})
    out = {}
    for r in ranks:
        ts = [t for t in traces if t["rank"] == r and not t.get("epoch_stages")]   # per mini-batch clock
        out[r] = {k: float(np.mean([t[k] for t in ts])) for k in ("compute_s", "sync_s", "wait_s")}
        out[r]["clocks"] = len(ts)
    return out


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
        metrics, traces, wall = run_cli(sgd + ["--workers", str(w)])
        times = [x["time_s"] for x in metrics[1:]] or [metrics[0]["time_s"]]
        eps[w] = m / float(np.median(times))
        rmse[w] = metrics[-1]["test_rmse"]
        if w == 2:
            nbytes = sum(t["bytes_sent"] for t in traces)
            nmin = sum(t["min_bytes"] for t in traces)
        emit({"bench": "distributed", "part": "sgd", "workers": w, "edges_per_s": eps[w],
              "epoch_seconds": times, "test_rmse": rmse[w], "wall_s": wall,
              **({"bytes_sent": nbytes, "min_bytes": nmin} if w == 2 else {})}, LOG)

    # 2. slack sweep, paper-style mini-batch MF on 2 workers
    batch = 100_000 if quick else 400_000
    mb = [tr, "--test", te, "--k", "50", "--epochs", str(epochs), "--mode", "minibatch", "--batch-size", str(batch),
          "--lr", "0.0005" if quick else "0.0001", "--partitioner", "bicut", "--workers", "2"]
    sweep = []
    for slack in (0, 1, 2, 4, 8):
        metrics, traces, wall = run_cli(mb + ["--slack", str(slack)])
        bd = breakdown(traces)
        rec = {"bench": "distributed", "part": "slack", "slack": slack, "batch_size": batch,
               "epoch_seconds": [x["time_s"] for x in metrics], "test_rmse": [x["test_rmse"] for x in metrics],
               "train_rmse": [x["train_rmse"] for x in metrics], "per_clock_mean": bd, "wall_s": wall}
        emit(rec, LOG)
        sweep.append(rec)
    png = plot(sweep, os.path.join(RESULTS, "distributed.png"))
    write_markdown(info, eps, rmse, nbytes, nmin, sweep, png)
    emit({"bench": "distributed", "speedup_2_workers": eps[2] / eps[1], "bytes_over_minimum": nbytes / max(nmin, 1),
          "edges_per_s_1_worker": eps[1], "edges_per_s_2_workers": eps[2], "test_rmse_1_worker": rmse[1],
          "test_rmse_2_workers": rmse[2], "bytes_sent": nbytes, "min_bytes": nmin, "png": png,
          "train_ratings": m, "epochs": epochs}, LOG)
    return 0


def plot(sweep, path):
    from bench.common import figure
    with figure(path, ncols=2, figsize=(11, 4), dpi=110) as axes:
        if axes is None:
            return None
        a1, a2 = axes
        x = np.arange(len(sweep))
        bottom = np.zeros(len(sweep))
        for key, label in (("compute_s", "compute"), ("sync_s", "sync"), ("wait_s", "wait")):
            v = np.array([np.mean([w[key] for w in r["per_clock_mean"].values()]) * 1e3 for r in sweep])
            a1.bar(x, v, bottom=bottom, label=label)
            bottom += v
        a1.set_xticks(x, [str(r["slack"]) for r in sweep])
        a1.set_xlabel("slack (clocks)")
        a1.set_ylabel("time per clock, mean of 2 workers (ms)")
        a1.set_title("MF mini-batch: per-clock breakdown")
        a1.legend()
        for r in sweep:
            a2.plot(np.cumsum(r["epoch_seconds"]), r["test_rmse"], marker="o", label=f"slack {r['slack']}")
        a2.set_xlabel("training time (s)")
        a2.set_ylabel("test RMSE")
        a2.set_title("objective vs time, 2 workers")
        a2.legend()
    return path


def write_markdown(info, eps, rmse, nbytes, nmin, sweep, png):
    lines = [f"# Distributed ({time.strftime('%Y-%m-%d')}, {info['platform']}, {info['cpus']} cpus)", "",
             f"Per-edge SGD MF, k=50, {info['train_ratings']:,} train ratings, bicut:", "",
             "| workers | M edges/s | test RMSE |", "|---|---|---|"]
    for w in (1, 2):
        lines.append(f"| {w} | {eps[w] / 1e6:.1f} | {rmse[w]:.4f} |")
    lines += ["", f"speed-up 2 workers / 1 worker: **{eps[2] / eps[1]:.2f}×**; bytes sent {nbytes:,} = "
              f"**{nbytes / max(nmin, 1):.3f}×** the minimum ({nmin:,}: synced fields of the replicas that "
              "changed, both directions)", "",
              "Mini-batch MF, 2 workers, mean per clock (ms):", "",
              "| slack | compute | sync | wait | epoch s (mean) | final test RMSE |", "|---|---|---|---|---|---|"]
    for r in sweep:
        b = r["per_clock_mean"]
        mean = {k: np.mean([w[k] for w in b.values()]) * 1e3 for k in ("compute_s", "sync_s", "wait_s")}
        lines.append(f"| {r['slack']} | {mean['compute_s']:.1f} | {mean['sync_s']:.1f} | {mean['wait_s']:.1f} | "
                     f"{np.mean(r['epoch_seconds']):.2f} | {r['test_rmse'][-1]:.4f} |")
    if png:
        lines += ["", f"![slack breakdown]({os.path.basename(png)})"]
    with open(os.path.join(RESULTS, "distributed.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
