"""Cost growth: MF (per-edge SGD, k = 50, one process, 1 partition) time per
epoch and peak memory as the ratings grow 10⁵ → 10⁸ (quick: → 10⁷), with the
log–log slope (1 = linear in the edges).

Each size runs in a fresh process, so its peak resident memory (ru_maxrss) is
its own: the cached ratings (int32 ids, float32 ratings; generated beforehand in
a process of their own), their blocked-order copy (the ratings as loaded are
dropped once it exists), the engine's layout, the model and everything numba needs.
Netflix-shaped data (tux2.datasets.netflix_like: power-law popularity, rank-10
model plus noise) with users = ratings / 50 and items = ratings / 500.

The command line's path is measured too, up to 10⁷ ratings (quick: 10⁶): the peak
resident memory of ``tux2 run mf FILE --epochs 1`` on the training ratings written
as a 'user item rating' text file (parse, held-out split, order, layout, one epoch,
test RMSE, the model read out), per rating, and again with the process's fixed
part (the same command on 10⁵ ratings: Python, numba, compiled code) taken off.
Final line: {"bench": "growth", "time_slope": s, "memory_slope": s, ...}.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

from bench.common import RESULTS, emit, figure, machine, report, timed

LOG = "growth"


def shape(n):
    return max(n // 50, 100), max(n // 500, 20), n


def child(n, epochs=3):
    """One size, in this process: prints a JSON line."""
    from bench.common import netflix_cached, peak_rss_mib
    from bench.mf import setup_engine, sgd_setup
    users, items, _ = shape(n)
    t = time.perf_counter()
    train, _, _ = netflix_cached(users, items, n)      # int32 ids, float32 ratings: 12 bytes per rating
    load = time.perf_counter() - t
    rss_data = peak_rss_mib()
    m = train.num_edges
    t = time.perf_counter()
    s = sgd_setup(train)
    del train               # the ratings as loaded: the run needs only their reordered copy
    eng, scale = setup_engine(s), s.scale
    del s
    setup = time.perf_counter() - t
    times = timed(lambda: eng.run(1), epochs, warmup=False)
    print(json.dumps({"ratings": n, "train_edges": m, "users": users, "items": items, "load_s": load,
                      "setup_s": setup, "epoch_s": float(np.median(times[1:] if len(times) > 1 else times)),
                      "epoch_seconds": times, "peak_rss_mib": peak_rss_mib(), "data_rss_mib": rss_data,
                      "train_rmse": float(eng.context()["rmse"]) * scale}), flush=True)


def cli_peak_mib(n):
    """Peak resident memory (MiB) of ``tux2 run mf FILE --epochs 1`` on the training
    ratings of size ``n`` as a text file, in a process of its own."""
    from bench.common import netflix_cached
    from bench.setup import ratings_text
    users, items, _ = shape(n)
    train, _, path = netflix_cached(users, items, n)
    text = ratings_text(train, path[:-4] + ".txt")
    del train
    code = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'tux2.cli', 'run', 'mf', "
            "sys.argv[1], '--epochs', '1', '-q'], check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, timeout=7200,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if r.returncode != 0:
        raise RuntimeError(f"tux2 run mf on {n:,} ratings failed:\n{r.stderr[-2000:]}")
    return int(r.stdout.split()[-1]) / 1024


def slope(x, y):
    return float(np.polyfit(np.log10(x), np.log10(y), 1)[0])


def main(args):
    quick = getattr(args, "quick", False)
    sizes = (10**5, 10**6, 10**7) if quick else (10**5, 10**6, 10**7, 10**8)
    emit({"bench": "growth", "event": "start", "sizes": sizes, **machine()}, LOG)
    res = []
    for n in sizes:
        r = subprocess.run([sys.executable, "-c", f"from bench.growth import child; child({n})"],
                           capture_output=True, text=True, timeout=7200,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if r.returncode != 0:
            raise RuntimeError(f"growth at {n:,} ratings failed:\n{r.stderr[-2000:]}")
        rec = json.loads(r.stdout.strip().splitlines()[-1])
        rec["ns_per_edge"] = rec["epoch_s"] / rec["train_edges"] * 1e9
        rec["bytes_per_edge"] = rec["peak_rss_mib"] * 2**20 / rec["train_edges"]
        emit({"bench": "growth", **rec}, LOG)
        res.append(rec)
    e = [r["train_edges"] for r in res]
    # slopes over the sizes where fixed costs no longer dominate (10^6 and up)
    big = [i for i, r in enumerate(res) if r["ratings"] >= 10**6] or list(range(len(res)))
    ts = slope([e[i] for i in big], [res[i]["epoch_s"] for i in big])
    ms = slope([e[i] for i in big], [res[i]["peak_rss_mib"] for i in big])
    png = plot(res, os.path.join(RESULTS, "growth.png"))
    report("growth", "Cost growth: MF per-edge SGD, time and memory per epoch vs edges",
           f"Netflix-shaped ratings {sizes[0]:,} → {sizes[-1]:,} (90% train), users = ratings/50, items = "
           "ratings/500; k = 50; one process, 1 partition",
           ["train edges", "users × items", "s / epoch", "ns / edge", "train RMSE after it", "peak RSS (MiB)",
            "bytes / edge", "layout setup (s)"],
           [[r["train_edges"], f"{r['users']:,} × {r['items']:,}", r["epoch_s"], r["ns_per_edge"], r["train_rmse"],
             r["peak_rss_mib"], r["bytes_per_edge"], r["setup_s"]] for r in res],
           notes=[f"log–log slope from 10⁶ ratings up: time **{ts:.2f}**, memory **{ms:.2f}** (1 = linear); "
                  "the memory slope is of the whole process's peak, whose fixed part (Python, numpy, numba, "
                  "~140 MiB) dominates at 10⁶, so bytes / edge at the largest size is the number to read.",
                  "The train RMSE after the timed epoch is its quality check (planted data of the same "
                  "shape at every size: about 45 training ratings per user and 450 per item)."],
           pngs=[png])
    fixed = cli_peak_mib(10**5)
    cli = []
    for n in (10**6,) if quick else (10**6, 10**7):
        train_edges = next((r["train_edges"] for r in res if r["ratings"] == n), None)
        peak = cli_peak_mib(n)
        rec = {"bench": "growth", "path": "tux2 run mf FILE --epochs 1", "ratings": n, "train_edges": train_edges,
               "peak_rss_mib": peak, "fixed_rss_mib": fixed,
               "bytes_per_edge": peak * 2**20 / train_edges,
               "bytes_per_edge_over_fixed": (peak - fixed) * 2**20 / train_edges}
        emit(rec, LOG)
        cli.append(rec)
    report("growth_cli", "Cost growth: memory of the command line (tux2 run mf FILE --epochs 1)",
           "the same training ratings as a 'user item rating' text file; k = 50 (the default); fixed part: the "
           "same command on 10⁵ ratings",
           ["train edges", "peak RSS (MiB)", "bytes / edge", "bytes / edge over the fixed part"],
           [[r["train_edges"], r["peak_rss_mib"], r["bytes_per_edge"], r["bytes_per_edge_over_fixed"]] for r in cli],
           notes=[f"fixed part (10⁵ ratings): {fixed:.0f} MiB"])
    emit({"bench": "growth", "time_slope": ts, "memory_slope": ms, "largest_edges": e[-1], "png": png,
          "cli_bytes_per_edge": cli[-1]["bytes_per_edge"],
          "cli_bytes_per_edge_over_fixed": cli[-1]["bytes_per_edge_over_fixed"]}, LOG)
    return 0


def plot(res, path):
    with figure(path, ncols=2, figsize=(11, 4), dpi=110) as axes:
        if axes is None:
            return None
        e = [r["train_edges"] for r in res]
        for ax, key, lab in ((axes[0], "epoch_s", "time per epoch (s)"), (axes[1], "peak_rss_mib", "peak memory (MiB)")):
            y = [r[key] for r in res]
            ax.loglog(e, y, marker="o", label="tux2 MF (measured)")
            ax.loglog(e, [y[-1] * x / e[-1] for x in e], ls="--", color="grey", label="linear (slope 1)")
            ax.set_xlabel("training edges")
            ax.set_ylabel(lab)
            ax.legend()
        axes[0].set_title("time per epoch")
        axes[1].set_title("peak resident memory")
    return path
