"""LDA scale-out at equal quality: the sparse sampler in its default tiled schedule on
1 thread, 2 threads of one process (sharing its partition tile by tile) and 2 worker
processes, against the untiled schedule on one partition (tomotopy's single-thread
form, bench/lda.py) and on 2 partitions × 2 threads (replicas combined lda.CLOCKS times
an iteration), and the machine's own ceiling (two 1-thread runs started together), all
in one run.

Every run is ``tux2.LDA(...).fit`` on one corpus from tux2.datasets.lda_corpus. Times
are the median of the per-iteration ``time_s`` of ``history_`` over the iterations after
the first; quality is log p(w, z) per token after the last iteration. The tiled runs
give the same model bit for bit (tests/test_lda.py), so their log-likelihoods are equal
by construction.
Final line: {"bench": "lda_threads", "tiled_2_threads_over_untiled_1": R, ...}.
"""
import multiprocessing
import time

import numpy as np

from bench.common import emit, machine, report
from bench.lda import corpus_cached

LOG = "lda_threads"


def run(data, iterations, topics, blocks=None, **fit):
    import tux2
    t = time.perf_counter()
    m = tux2.LDA(topics=topics, iterations=iterations, seed=0, blocks=blocks).fit(data, **fit)
    wall = time.perf_counter() - t
    times = [r["time_s"] for r in m.history_[1:]] or [m.history_[0]["time_s"]]
    return {"s_per_iteration": float(np.median(times)), "ll_per_token": m.history_[-1]["ll_per_token"],
            "fit_wall_s": wall}


def _alone(args):
    return run(*args)["s_per_iteration"]


def main(args):
    quick = getattr(args, "quick", False)
    D, V, K, L = (5_000, 10_000, 50, 100) if quick else (20_000, 20_000, 100, 100)
    iterations = 10 if quick else 30
    docs, words, counts, V, path = corpus_cached(D, V, K, L, 0.1, 0.01, seed=1)
    data = (docs, words, counts)
    info = {"bench": "lda_threads", "docs": D, "vocabulary": V, "tokens": int(counts.sum()), "K": K,
            "iterations": iterations, **machine()}
    emit({**info, "event": "dataset", "path": path}, LOG)
    run(data, 2, K, threads=1)                          # kernels compiled before anything is timed
    systems = [("untiled, 1 partition, 1 thread", dict(blocks=0, threads=1)),
               ("tiled, 1 thread", dict(threads=1)),
               ("tiled, 2 threads", dict(threads=2)),
               ("tiled, 2 workers", dict(workers=2)),
               ("untiled, 2 partitions x 2 threads", dict(blocks=0, partitions=2, threads=2))]
    got = {}
    for name, opts in systems:
        got[name] = run(data, iterations, K, **opts)
        emit({"bench": "lda_threads", "system": name, **got[name]}, LOG)
    # the ceiling: two independent 1-thread tiled runs at once against one alone
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pair = pool.map(_alone, [(data, iterations, K, None)] * 2)
    ceiling = 2 * got["tiled, 1 thread"]["s_per_iteration"] / float(np.mean(pair))
    emit({"bench": "lda_threads", "event": "ceiling", "two_at_once_s_per_iteration": pair, "ceiling": ceiling}, LOG)
    base = got["untiled, 1 partition, 1 thread"]
    rows = [[name, r["s_per_iteration"], base["s_per_iteration"] / r["s_per_iteration"], r["ll_per_token"]]
            for name, r in got.items()]
    report("lda_threads", "LDA scale-out: tiled sparse sampler on threads and workers, at equal quality",
           f"{info['tokens']:,} tokens, {D:,} documents, {V:,} words (planted LDA corpus), K = {K}, "
           f"{iterations} iterations", ["run", "s / iteration", "speed-up over untiled 1 thread",
                                        f"log p(w, z) per token after {iterations}"], rows,
           notes=[f"Machine ceiling (two 1-thread runs started together against one alone): **{ceiling:.2f}×**."])
    tiled2 = got["tiled, 2 threads"]
    emit({"bench": "lda_threads", "tiled_2_threads_over_untiled_1": base["s_per_iteration"] / tiled2["s_per_iteration"],
          "tiled_2_threads_over_tiled_1": got["tiled, 1 thread"]["s_per_iteration"] / tiled2["s_per_iteration"],
          "ceiling": ceiling, "tiled_ll": tiled2["ll_per_token"], "untiled_ll": base["ll_per_token"],
          "untiled_2x2_ll": got["untiled, 2 partitions x 2 threads"]["ll_per_token"]}, LOG)
    return 0
