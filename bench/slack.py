"""Fig. 10–11: SSP slack 0 … 16, time to converge to the same point, with the
compute / sync / wait breakdown, for mini-batch MF and BlockPG on 2 worker
processes (the real CLI, ZeroMQ on loopback).

The common point is the objective slack 0 reaches halfway through its epochs
(training RMSE for MF, f(w) for BlockPG); a run that does not reach it in the
same number of epochs is reported as not reaching it. A run's time to it is the sum
of the per-clock compute, sync and wait of each rank's trace up to the first
epoch at or below it (mean of the 2 ranks; clock 1, which absorbs start-up
skew, left out).
Final line: {"bench": "slack", "best_slack": {"mf": s, "blockpg": s}, ...}.
"""
import os

import numpy as np

from bench.common import RESULTS, emit, figure, machine, report, tux2_cli

LOG = "slack"
SLACKS = (0, 1, 2, 4, 8, 16)
PARTS = ("compute_s", "sync_s", "wait_s")


def blockpg_input(quick):
    """A cached libsvm file of a kdd-shaped problem and its description."""
    from bench.common import classification_cached
    from bench.glm import libsvm_cached
    n, d, nnz = (100_000, 100_000, 32) if quick else (400_000, 500_000, 32)
    g, y, _, path = classification_cached(n, d, nnz)
    return libsvm_cached(g, y, path), f"BlockPG: {n:,} samples × {d:,} features, {g.num_edges:,} non-zeros"


def time_to(metrics, traces, key, target):
    """(epochs, seconds, {compute_s, sync_s, wait_s}) to the first epoch with metrics[key] <= target:
    each rank's per-clock records summed, then the mean of the ranks. Clock 1 is left out:
    it absorbs the workers' start-up skew, not SSP waiting."""
    hit = next((m["epoch"] for m in metrics if m[key] <= target * (1 + 1e-12)), None)
    if hit is None:
        return None, None, {}
    ranks = sorted({t["rank"] for t in traces})
    bd = {k: float(np.mean([sum(t[k] for t in traces if t["rank"] == r and t.get("clock") != 1 and t["iteration"] <= hit)
                            for r in ranks])) for k in PARTS}
    return hit, sum(bd.values()), bd


def sweep(algo, args, key, slacks):
    runs = {}
    for s in slacks:
        metrics, traces, wall = tux2_cli(algo, args + ["--workers", "2", "--slack", str(s)])
        runs[s] = (metrics, traces)
        emit({"bench": "slack", "algo": algo, "slack": s, "epochs": len(metrics),
              key: [m[key] for m in metrics], "epoch_seconds": [m["time_s"] for m in metrics], "wall_s": wall}, LOG)
    ref = runs[slacks[0]][0]                        # slack 0's value halfway through its epochs
    target = ref[(len(ref) - 1) // 2][key]
    out = []
    for s, (metrics, traces) in runs.items():
        ep, secs, bd = time_to(metrics, traces, key, target)
        rec = {"bench": "slack", "algo": algo, "slack": s, "target": target, "epochs_to_target": ep,
               "seconds_to_target": secs, **{k[:-2] + "_s_to_target": v for k, v in bd.items()},
               "final": metrics[-1][key]}
        emit(rec, LOG)
        out.append(rec)
    return out


def workloads(quick):
    """The slack experiment's two runs (also bench.straggler's): {algo: (tux2 run args without --workers and
    --slack, the objective key, what the data is)} and facts of the MF data, for 2 workers."""
    from bench.distributed import text_files
    size = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    tr, _, m = text_files(*size)
    batch = 100_000 if quick else 400_000
    epochs = 4 if quick else 6
    mf = [tr, "--k", "50", "--epochs", str(epochs), "--mode", "minibatch", "--step", "plain", "--batch-size", str(batch),
          "--lr", "0.0005" if quick else "0.0001", "--partitioner", "bicut", "--eval-every", "0"]
    bp_input, bp_data = blockpg_input(quick)
    bp = [bp_input, "--epochs", "8" if quick else "12", "--block-size", "500", "--partitioner", "bicut"]
    mf_data = f"MF: {m:,} ratings ({size[0]:,} users × {size[1]:,} items), k=50, mini-batch {batch:,} edges"
    return {"mf": (mf, "train_rmse", mf_data), "blockpg": (bp, "objective", f"{bp_data}, block 500 features")}, \
        {"mf_ratings": m, "mf_batch": batch}


def main(args):
    quick = getattr(args, "quick", False)
    runs, facts = workloads(quick)
    info = {"bench": "slack", **facts, **machine()}
    emit({**info, "event": "dataset"}, LOG)
    res = {a: sweep(a, args_, key, SLACKS) for a, (args_, key, _) in runs.items()}
    png = plot(res, os.path.join(RESULTS, "slack.png"))
    rows = [[a, r["slack"], r["epochs_to_target"], r["seconds_to_target"], r.get("compute_s_to_target"),
             r.get("sync_s_to_target"), r.get("wait_s_to_target"), r["final"]] for a, rs in res.items() for r in rs]
    report("slack", "Fig. 10–11 analogue: slack vs time to a common objective (2 workers)",
           f"{runs['mf'][2]}; {runs['blockpg'][2]}. Target: MF train RMSE {res['mf'][0]['target']:.4f}, BlockPG "
           f"f = {res['blockpg'][0]['target']:.1f} (slack 0's value halfway through its epochs; — : not reached)",
           ["algorithm", "slack", "epochs to target", "time to target (s)", "compute (s)", "sync (s)", "wait (s)",
            "final objective"], rows, pngs=[png])
    best = {a: min((r for r in rs if r["seconds_to_target"] is not None), key=lambda r: r["seconds_to_target"])["slack"]
            for a, rs in res.items()}
    emit({"bench": "slack", "best_slack": best,
          "seconds_to_target": {a: {r["slack"]: r["seconds_to_target"] for r in rs} for a, rs in res.items()},
          "png": png}, LOG)
    return 0


def plot(res, path):
    with figure(path, ncols=2, figsize=(11, 4), dpi=110) as axes:
        if axes is None:
            return None
        for ax, (algo, rs) in zip(axes, res.items()):
            x = np.arange(len(rs))
            bottom = np.zeros(len(rs))
            for k, label in (("compute_s_to_target", "compute"), ("sync_s_to_target", "sync"),
                             ("wait_s_to_target", "wait")):
                v = np.array([r.get(k) or 0.0 for r in rs])
                ax.bar(x, v, bottom=bottom, label=label)
                bottom += v
            for xi, r in zip(x, rs):
                if r["seconds_to_target"] is None:
                    ax.text(xi, 0, "not\nreached", ha="center", va="bottom", fontsize=7)
            ax.set_xticks(x, [str(r["slack"]) for r in rs])
            ax.set_xlabel("slack (clocks)")
            ax.set_ylabel("time to common objective, mean of 2 workers (s)")
            ax.set_title({"mf": "MF (mini-batch)", "blockpg": "BlockPG"}[algo])
            ax.legend()
    return path
