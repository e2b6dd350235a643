"""Scale-out at equal quality: per-edge SGD MF in strata on 2 worker processes and on
2 threads of one process (sharing its partition tile by tile, and, for comparison, each
running one of 2 partitions), against one worker of one thread, the machine's own ceiling and LibMF's
FPSGD with 1 and 2 threads, all in one run; and test RMSE after 10 epochs for
P = 1, 2, 4, 8 in each MF form (the slack sweep of Figures 10–11 is bench/slack.py).

Every tux2 run is the real CLI (`tux2 run mf …`): worker processes over ZeroMQ on
loopback. Epoch times are rank 0's `engine.run(1)`, median over the epochs after the
first (test evaluation is done once after the last epoch, outside the timing). The
stratified runs of 1, 2 workers and 2 threads write the same model bit for bit, so
their test RMSEs are equal by construction; LibMF's is reported beside them.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

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


def epoch_rate(metrics, m):
    times = [x["time_s"] for x in metrics[1:]] or [metrics[0]["time_s"]]
    return m / float(np.median(times))


def trace_split(traces):
    """Rank 0's seconds per epoch (median over the epochs after the first) in the
    trace's compute / sync / wait, and its bytes sent per epoch."""
    mine = [t for t in traces if t["rank"] == 0]
    its = sorted({t["iteration"] for t in mine})
    its = its[1:] or its
    per = {k: float(np.median([sum(t[k] for t in mine if t["iteration"] == i) for i in its]))
           for k in ("compute_s", "sync_s", "wait_s", "bytes_sent")}
    return {k: round(v, 4) if k != "bytes_sent" else int(v) for k, v in per.items()}


def together(cmds):
    """Start the commands at once; wait; return each one's metrics records."""
    dirs = [tempfile.mkdtemp(prefix="tux2-bench-ceiling-") for _ in cmds]
    procs = [subprocess.Popen([sys.executable, "-m", "tux2.cli", "run", "mf", *c, "--quiet",
                               "--metrics", os.path.join(d, "m.jsonl")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
             for c, d in zip(cmds, dirs)]
    out = []
    try:
        for p, d in zip(procs, dirs):
            _, err = p.communicate(timeout=3600)
            if p.returncode != 0:
                raise RuntimeError(f"concurrent run failed: {err[-1000:]}")
            out.append([json.loads(x) for x in open(os.path.join(d, "m.jsonl"))])
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    return out


def main(args):
    quick = getattr(args, "quick", False)
    size = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    epochs = 4 if quick else 6
    tr, te, m = text_files(*size)
    npz = netflix_cached(*size)[2]
    info = {"bench": "distributed", "users": size[0], "items": size[1], "train_ratings": m, **machine()}
    emit({**info, "event": "dataset"}, LOG)

    # 1. speed-up of stratified per-edge SGD: workers, threads, and the machine's ceiling
    sgd = [tr, "--test", te, "--k", "50", "--epochs", str(epochs), "--eval-every", "0"]
    runs = {}
    for name, extra in (("1_worker", ["--threads", "1"]), ("2_workers", ["--workers", "2", "--threads", "1"]),
                        ("2_threads", ["--threads", "2"]),
                        ("2_threads_2_partitions", ["--threads", "2", "--partitions", "2"])):
        metrics, traces, wall = tux2_cli("mf", sgd + extra)
        rec = {"edges_per_s": epoch_rate(metrics, m), "test_rmse": metrics[-1]["test_rmse"], "wall_s": wall,
               "epoch_seconds": [x["time_s"] for x in metrics]}
        rec["trace_split_per_epoch"] = trace_split(traces)
        if name == "2_workers":
            clocks = [t for t in traces if not t.get("epoch_stages")]
            rec["bytes_sent"] = sum(t["bytes_sent"] for t in clocks)
            rec["min_bytes"] = sum(t["min_bytes"] for t in clocks)
            rec["clocks"] = len({(t["iteration"], t["clock"]) for t in clocks})
        runs[name] = rec
        emit({"bench": "distributed", "part": "sgd", "run": name, **rec}, LOG)
    one = sgd + ["--threads", "1"]
    alone = together([one])[0]
    pair = together([one, one])
    one_alone = epoch_rate(alone, m)
    ceiling = sum(epoch_rate(x, m) for x in pair) / one_alone
    emit({"bench": "distributed", "part": "ceiling", "edges_per_s_alone": one_alone,
          "edges_per_s_together": [epoch_rate(x, m) for x in pair], "ceiling_2_independent": ceiling}, LOG)

    # 2. LibMF's FPSGD, 1 and 2 threads, same data, same epochs
    from bench.mf import libmf_epoch_seconds
    from bench.peers import libmf
    lib = {}
    try:
        so = libmf.build()
        for t in (1, 2):
            per_epoch, res = libmf_epoch_seconds(so, npz, epochs, 50, 0.1, 0.05, threads=t)
            lib[t] = {"edges_per_s": m / per_epoch, "test_rmse": res["test_rmse"]}
            emit({"bench": "distributed", "part": "libmf", "threads": t, **lib[t]}, LOG)
    except RuntimeError as e:
        emit({"bench": "distributed", "system": "libmf", "skipped": str(e)}, LOG)

    # 3. quality after 10 epochs: P partitions in each MF form
    forms = {"sgd, strata": [], "sgd, summed replicas (old)": ["--order", "blocked", "--partitioner", "bicut",
                                                              "--overlap", "allow"],
             "minibatch (adagrad, 5000)": ["--mode", "minibatch"]}
    quality = {}
    for form, extra in forms.items():
        for p in (1, 2, 4, 8):
            try:
                metrics, _, _ = tux2_cli("mf", [tr, "--test", te, "--k", "50", "--epochs", "10", "--eval-every", "0",
                                                "--partitions", str(p), *extra])
                quality[(form, p)] = metrics[-1]["test_rmse"]
            except RuntimeError as e:          # the old form may diverge: that is the finding
                quality[(form, p)] = float("nan")
                emit({"bench": "distributed", "part": "quality", "form": form, "partitions": p,
                      "failed": str(e)[-300:]}, LOG)
            emit({"bench": "distributed", "part": "quality", "form": form, "partitions": p,
                  "test_rmse_10_epochs": quality[(form, p)]}, LOG)

    w, t1, t2, tp = runs["2_workers"], runs["1_worker"], runs["2_threads"], runs["2_threads_2_partitions"]
    final = {"bench": "distributed", "speedup_2_workers": w["edges_per_s"] / t1["edges_per_s"],
             "speedup_2_threads": t2["edges_per_s"] / t1["edges_per_s"], "ceiling_2_independent": ceiling,
             "test_rmse_1_worker": t1["test_rmse"], "test_rmse_2_workers": w["test_rmse"],
             "test_rmse_2_threads": t2["test_rmse"],
             "speedup_2_threads_2_partitions": tp["edges_per_s"] / t1["edges_per_s"],
             "edges_per_s_1_worker": t1["edges_per_s"], "edges_per_s_2_workers": w["edges_per_s"],
             "edges_per_s_2_threads": t2["edges_per_s"],
             "bytes_over_minimum": w["bytes_sent"] / max(w["min_bytes"], 1),
             "bytes_per_clock": w["bytes_sent"] / max(w["clocks"], 1), "train_ratings": m, "epochs": epochs}
    if lib:
        final.update({"libmf_edges_per_s_1_thread": lib[1]["edges_per_s"],
                      "libmf_edges_per_s_2_threads": lib[2]["edges_per_s"],
                      "libmf_test_rmse_2_threads": lib[2]["test_rmse"],
                      "tux2_2_threads_over_libmf_2_threads_edges_per_s": t2["edges_per_s"] / lib[2]["edges_per_s"]})
    rows = [["1 worker", t1["edges_per_s"] / 1e6, t1["test_rmse"], 1.0],
            ["2 workers", w["edges_per_s"] / 1e6, w["test_rmse"], final["speedup_2_workers"]],
            ["2 threads (sharing 1 partition's tiles)", t2["edges_per_s"] / 1e6, t2["test_rmse"],
             final["speedup_2_threads"]],
            ["2 threads, 2 partitions", tp["edges_per_s"] / 1e6, tp["test_rmse"],
             final["speedup_2_threads_2_partitions"]],
            ["2 independent 1-worker runs (ceiling)", None, None, ceiling]]
    rows += [[f"LibMF {libmf.VERSION}, {t} thread{'s' * (t > 1)}", lib[t]["edges_per_s"] / 1e6, lib[t]["test_rmse"],
              lib[t]["edges_per_s"] / lib[1]["edges_per_s"]] for t in sorted(lib)]
    report("distributed", "Scale-out at equal quality: per-edge SGD MF in strata",
           f"{m:,} train ratings ({size[0]:,} users × {size[1]:,} items), k=50, {epochs} epochs, 16 strata",
           ["run", "M edges/s", "test RMSE", "speed-up"], rows,
           peers={"LibMF": libmf.VERSION},
           notes=[f"2 workers / 1: **{final['speedup_2_workers']:.2f}×**, 2 threads / 1: "
                  f"**{final['speedup_2_threads']:.2f}×**, with the same model bit for bit; this machine's ceiling "
                  f"(two independent runs together): **{ceiling:.2f}×**. Bytes sent = "
                  f"**{final['bytes_over_minimum']:.3f}×** the minimum the replicas imply."])
    report("distributed_quality", "Test RMSE after 10 epochs by MF form and partitions",
           f"{m:,} train ratings, k=50; 'summed replicas' is the pre-strata per-edge SGD on bicut "
           "(--order blocked --overlap allow)",
           ["form"] + [f"P={p}" for p in (1, 2, 4, 8)],
           [[form] + [quality[(form, p)] for p in (1, 2, 4, 8)] for form in forms])
    emit(final, LOG)
    return 0
