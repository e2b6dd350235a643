"""Does slack hide a straggler? The TuX² paper's SSP claim, reproduced with
``--straggler RANK:FACTOR``: 2 worker processes (the real CLI, ZeroMQ on loopback),
rank 1 slowed 1.5× and 3× (it sleeps (factor − 1) × its last clock's compute after
each SSP gate), and every rank slowed 2× ± 90 % a clock (``all:2:0.9``: slowness that
comes and goes, each rank by its own draws), slack 0, 1, 2, 4, 8, on bench.slack's
workloads (mini-batch MF and BlockPG; quick: MF for 10 epochs, BlockPG at 3× and the
jittered case at slack 0, 2 only).

Target and time as in bench.slack: the objective the no-straggler slack-0 run
reaches halfway through its epochs; time to it = per-clock compute + sync + wait of
each rank's trace up to the first epoch at or below it (mean of the 2 ranks, clock 1
left out), next to the epoch seconds rank 0 measured to it (each epoch ends in a
GlobalSync, so it waits for the slow rank there). Every run's final objective and
test RMSE (MF) stand beside the no-straggler run's, with each rank's staleness
histogram (clocks started 0, 1, … clocks ahead of the updates it had, from the trace).
Also rank 0's median seconds per epoch. Final line: {"bench": "straggler", "hidden":
{algo: {straggler: {slack: fraction}}}, ...}: the share of the straggler's slack-0 cost
in seconds per epoch that slack s removes (1: fully hidden).
"""
import os

import numpy as np

from bench.common import RESULTS, emit, figure, machine, report, tux2_cli
from bench.slack import time_to, workloads
from tux2.runner import staleness_histogram

LOG = "straggler"
SLACKS = (0, 1, 2, 4, 8)
SPECS = ("1:1.5", "1:3", "all:2:0.9")  # rank 1 slowed 1.5× and 3×; every rank 2× ± 90 % (transient)


def one(algo, args, key, slack, spec, target=None):
    """One 2-worker run with ``--straggler spec`` (None: none): its record (time to
    ``target`` when given) and its metrics."""
    extra = ["--workers", "2", "--slack", str(slack)] + (["--straggler", spec] if spec else [])
    metrics, traces, wall = tux2_cli(algo, args + extra)
    target = metrics[(len(metrics) - 1) // 2][key] if target is None else target
    ep, secs, bd = time_to(metrics, traces, key, target)
    rec = {"bench": "straggler", "algo": algo, "straggler": spec or "none", "slack": slack, "target": target,
           "epochs_to_target": ep, "seconds_to_target": secs, "wait_s_to_target": bd.get("wait_s"),
           "epoch_seconds_to_target": sum(m["time_s"] for m in metrics[:ep]) if ep else None,
           "s_per_epoch": float(np.median([m["time_s"] for m in metrics[1:]] or [metrics[0]["time_s"]])),
           "epochs": len(metrics), key: metrics[-1][key], "test_rmse": metrics[-1].get("test_rmse"),
           "injected_s": sum(t.get("injected_s", 0.0) for t in traces), "wall_s": wall,
           "staleness": {r: staleness_histogram([t for t in traces if t["rank"] == r]) for r in (0, 1)},
           "curve": [m[key] for m in metrics]}
    emit(rec, LOG)
    return rec


def sweep(algo, args, key, specs, slacks):
    base = one(algo, args, key, 0, None)
    runs = [base] + [one(algo, args, key, s, f, base["target"]) for f in specs for s in slacks]
    hidden = {}
    for f in specs:
        at0 = next(r for r in runs if r["straggler"] == f and r["slack"] == 0)["s_per_epoch"]
        for r in runs:
            if r["straggler"] == f and at0 > base["s_per_epoch"]:
                r["hidden"] = (at0 - r["s_per_epoch"]) / (at0 - base["s_per_epoch"])
                hidden.setdefault(f, {})[r["slack"]] = round(r["hidden"], 3)
    return runs, hidden


def main(args):
    quick = getattr(args, "quick", False)
    runs, facts = workloads(quick)
    emit({"bench": "straggler", "event": "dataset", **facts, **machine()}, LOG)
    res, hidden = {}, {}
    for algo, (a, key, _) in runs.items():
        few = quick and algo == "blockpg"       # quick: 3 min on 2 cores
        if quick and algo == "mf":              # 10 epochs of ~0.05 s, not 4: a steadier s per epoch, a finer target
            a = a[:a.index("--epochs") + 1] + ["10"] + a[a.index("--epochs") + 2:]
        res[algo], hidden[algo] = sweep(algo, a, key, SPECS[1:] if few else SPECS, (0, 2) if few else SLACKS)
    png = plot(res, os.path.join(RESULTS, "straggler.png"))
    rows = []
    for algo, rs in res.items():
        key = runs[algo][1]
        for r in rs:
            who = label(r["straggler"])
            rows.append([algo, who, r["slack"], r["epochs_to_target"],
                         r["seconds_to_target"], r["wait_s_to_target"], r["epoch_seconds_to_target"], r["s_per_epoch"],
                         r.get("hidden"),
                         r[key], r["test_rmse"], " ".join(map(str, r["staleness"][0])),
                         " ".join(map(str, r["staleness"][1]))])
    report("straggler", "Straggler: rank 1 slowed, slack 0…8, time to a common objective (2 workers)",
           f"{runs['mf'][2]}; {runs['blockpg'][2]}. Target: the no-straggler slack-0 run's objective halfway through "
           f"its epochs (MF train RMSE {res['mf'][0]['target']:.4f}, BlockPG f = {res['blockpg'][0]['target']:.1f}; "
           "— : not reached)",
           ["algorithm", "straggler", "slack", "epochs to target", "time to target (s, mean of ranks)", "wait (s)",
            "rank 0's epoch seconds to target", "s per epoch", "share of the slack-0 cost hidden", "final objective",
            "final test RMSE", "staleness of rank 0 (clocks at 0, 1, …)", "staleness of rank 1"], rows,
           notes=["Time to target: per-clock compute + sync + wait summed to the epoch that reaches the target, "
                  "mean of the 2 ranks (bench.slack's definition; the straggler's sleep counts as its compute). "
                  "s per epoch: rank 0's median epoch time after the first (an epoch ends in a GlobalSync, so it "
                  "includes waiting for the slow rank). Hidden: (E(straggler, slack 0) − E(straggler, slack s)) / "
                  "(E(straggler, slack 0) − E(none, slack 0)) with E the s per epoch (1: the straggler costs nothing "
                  "at that slack, 0: slack does not help). Staleness: how many clocks a rank started ahead of the "
                  "updates it had received."],
           pngs=[png])
    emit({"bench": "straggler", "hidden": hidden,
          "seconds_to_target": {a: {f"{r['straggler']}@{r['slack']}": r["seconds_to_target"] for r in rs}
                                for a, rs in res.items()}, "png": png}, LOG)
    return 0


def label(spec):
    """``1:3`` → "rank 1 slowed 3×", ``all:2:0.9`` → "every rank 2× ± 90 %"."""
    if spec == "none":
        return "none"
    rank, factor, *jitter = spec.split(":")
    who = "every rank" if rank == "all" else f"rank {rank} slowed"
    return f"{who} {factor}×" + (f" ± {float(jitter[0]):.0%}".replace("%", " %") if jitter else "")


def plot(res, path):
    with figure(path, ncols=len(res) + 1, figsize=(5 * (len(res) + 1), 4), dpi=110) as axes:
        if axes is None:
            return None
        for ax, (algo, rs) in zip(axes, res.items()):
            base = rs[0]
            for f in dict.fromkeys(r["straggler"] for r in rs[1:]):
                pts = [r for r in rs[1:] if r["straggler"] == f]
                line, = ax.plot([r["slack"] for r in pts], [r["s_per_epoch"] for r in pts], label=label(f))
                missed = [r for r in pts if r["seconds_to_target"] is None]
                hit = [r for r in pts if r not in missed]
                ax.plot([r["slack"] for r in hit], [r["s_per_epoch"] for r in hit], "o", color=line.get_color())
                ax.plot([r["slack"] for r in missed], [r["s_per_epoch"] for r in missed], "x", ms=9,
                        color=line.get_color(), label="× : did not reach the target" if missed else None)
            ax.axhline(base["s_per_epoch"], color="grey", ls="--", lw=0.8, label="no straggler, slack 0")
            ax.set_xlabel("slack (clocks)")
            ax.set_ylabel("rank 0's seconds per epoch (median)")
            ax.set_title({"mf": "MF (mini-batch)", "blockpg": "BlockPG"}[algo])
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
        ax = axes[-1]
        rs = res["mf"]
        top = "1:3"
        for r in (r for r in rs if r["straggler"] == top):
            h = np.array(r["staleness"][0], float)
            ax.plot(np.arange(len(h)), h / max(h.sum(), 1), marker="o", label=f"slack {r['slack']}")
        ax.set_xlabel("staleness at a clock's start (clocks)")
        ax.set_ylabel("share of rank 0's clocks")
        ax.set_title(f"MF, {label(top)}: the fast rank's staleness")
        ax.legend(fontsize=8)
    return path
