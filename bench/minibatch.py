"""Fig. 12: mini-batch size, objective vs time for MF and BlockPG, each epoch a
point, on 2 worker processes with slack 4 (the real CLI over ZeroMQ).

Smaller mini-batches make more progress per epoch but pay more clocks (SSP
gates, Apply rounds, messages) per epoch, so each epoch costs more: the curves
show where that trade-off lands on this machine. MF is the paper's gradient
form (``--mode minibatch``, one Apply per mini-batch of edges); BlockPG's
mini-batch is a block of features.
Final line: {"bench": "minibatch", "best": {"mf": size, "blockpg": size}, ...}.
"""
import os

from bench.common import RESULTS, emit, figure, machine, report, tux2_cli

LOG = "minibatch"


def run(algo, args, key, sizes, flag):
    out = {}
    for b in sizes:
        metrics, _, wall = tux2_cli(algo, args + [flag, str(b), "--workers", "2", "--slack", "4"])
        t, curve = 0.0, []
        for m in metrics:
            t += m["time_s"]
            curve.append((t, m[key]))
        out[b] = curve
        emit({"bench": "minibatch", "algo": algo, "batch": b, "seconds": [c[0] for c in curve],
              key: [c[1] for c in curve], "clocks": metrics[-1].get("clock"), "wall_s": wall}, LOG)
    return out


def main(args):
    from bench.distributed import text_files
    from bench.slack import blockpg_input
    quick = getattr(args, "quick", False)
    size = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    tr, _, m = text_files(*size)
    emit({"bench": "minibatch", "event": "dataset", "mf_ratings": m, **machine()}, LOG)
    mf_sizes = (10_000, 100_000, 1_000_000) if quick else (40_000, 400_000, 4_000_000)
    mf = run("mf", [tr, "--k", "50", "--epochs", "4" if quick else "6", "--mode", "minibatch", "--step", "plain",
                    "--lr", "0.0005" if quick else "0.0001", "--partitioner", "bicut", "--eval-every", "0"],
             "train_rmse", mf_sizes, "--batch-size")
    bp_input, bp_data = blockpg_input(quick)
    bp_sizes = (100, 1_000, 10_000) if quick else (100, 1_000, 10_000, 100_000)
    bp = run("blockpg", [bp_input, "--epochs", "8" if quick else "12", "--partitioner", "bicut"],
             "objective", bp_sizes, "--block-size")
    png = plot(mf, bp, os.path.join(RESULTS, "minibatch.png"))
    rows = [[algo, b, len(c), c[-1][0], c[-1][1]] for algo, res in (("mf", mf), ("blockpg", bp))
            for b, c in res.items()]
    report("minibatch", "Fig. 12 analogue: mini-batch size (2 workers, slack 4)",
           f"MF: {m:,} ratings ({size[0]:,} users × {size[1]:,} items), k=50, batch = edges; {bp_data}, "
           "batch = features per block",
           ["algorithm", "mini-batch", "epochs", "time (s)", "final objective (MF train RMSE, BlockPG f)"], rows,
           pngs=[png])
    best = {algo: min(res, key=lambda b: res[b][-1][1]) for algo, res in (("mf", mf), ("blockpg", bp))}
    emit({"bench": "minibatch", "best": best, "png": png}, LOG)
    return 0


def plot(mf, bp, path):
    with figure(path, ncols=2, figsize=(11, 4), dpi=110) as axes:
        if axes is None:
            return None
        for ax, res, title, ylab, unit in ((axes[0], mf, "MF (mini-batch gradient)", "training RMSE", "edges"),
                                           (axes[1], bp, "BlockPG", "objective f(w)", "features")):
            for b, c in res.items():
                ax.plot([x[0] for x in c], [x[1] for x in c], marker="o", ms=4, label=f"{b:,} {unit}")
            ax.set_xlabel("training time (s)")
            ax.set_ylabel(ylab)
            ax.set_title(title)
            ax.legend(title="mini-batch")
    return path
