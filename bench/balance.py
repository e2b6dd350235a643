"""Fig. 15: per-worker mini-batch time with vertex-cut vs edge-cut (BlockPG).

P = 8 partitions stand for the paper's 8 worker threads of one server. Each
mini-batch (a block of 500 shuffled features) visits the edges of its features:

* edge-cut: every feature lives whole in one partition (bicut keeping features
  mirror-free), so a block's work in a partition is the summed degree of the
  block's features that landed there, and a popular feature makes one straggler;
* vertex-cut: features are cut (bicut keeping samples mirror-free; and random
  edge placement), so a popular feature's edges spread over every partition.

The engine times each partition's Exchange work in every clock (``time_parts``);
partitions run one after another in this process, so each time is that
partition's own compute. Balance of a clock = max / mean over partitions; a
synchronous worker group waits for the max. Edge counts per partition and block
are the deterministic side of the same story.
Final line: {"bench": "balance", "edge_cut_max_over_mean": r, "vertex_cut_max_over_mean": r, ...}.
"""
import os

import numpy as np

from bench.common import RESULTS, classification_cached, emit, figure, machine, report

LOG = "balance"
P = 8
BLOCK = 500
LAYOUTS = (("edge-cut (features whole)", "bicut", {"favorite": 1}),
           ("vertex-cut (bicut, samples whole)", "bicut", {"favorite": 0}),
           ("vertex-cut (random edges)", "random", {}))


def block_edge_balance(eng):
    """max / mean edges per partition, per block, from the assignment (first epoch: all active)."""
    blocks = eng.graph.dst // BLOCK                # feature ids are already shuffled
    counts = np.zeros((int(blocks.max()) + 1, eng.P), np.int64)
    np.add.at(counts, (blocks, eng.assignment.edge_part), 1)
    return counts.max(1) / np.maximum(counts.mean(1), 1e-9)


def main(args):
    from bench.blockpg import engine
    quick = getattr(args, "quick", False)
    n, d, nnz = (100_000, 100_000, 32) if quick else (400_000, 500_000, 32)
    epochs = 2
    g, y, _, _ = classification_cached(n, d, nnz)
    info = {"bench": "balance", "samples": n, "features": d, "nonzeros": g.num_edges, "partitions": P,
            "block_size": BLOCK, **machine()}
    emit({**info, "event": "dataset"}, LOG)
    res = {}
    for label, strategy, opts in LAYOUTS:
        eng = engine(g, y, 1.0, BLOCK, parts=P, partitioner=strategy, options=opts)
        eng.time_parts = True
        eng.run(epochs)
        clocks = [t for t in eng.trace if "part_exchange_s" in t and not t.get("epoch_stages")]
        per = np.array([[t["part_exchange_s"][r] for r in range(P)] for t in clocks])   # clock × partition
        busy = per.sum(1) > 0
        per = per[busy]
        ratio = per.max(1) / np.maximum(per.mean(1), 1e-12)
        eb = block_edge_balance(eng)
        rec = {"bench": "balance", "layout": label, "strategy": strategy, **opts, "clocks": int(len(per)),
               "time_max_over_mean": float(ratio.mean()), "time_max_over_mean_p90": float(np.quantile(ratio, 0.9)),
               "edges_max_over_mean": float(eb.mean()), "sum_max_s": float(per.max(1).sum()),
               "sum_mean_s": float(per.mean(1).sum()), "objective": float(eng.context()["objective"])}
        emit(rec, LOG)
        res[label] = (rec, per)
    png = plot(res, os.path.join(RESULTS, "balance.png"))
    rows = [[k, r["time_max_over_mean"], r["time_max_over_mean_p90"], r["edges_max_over_mean"], r["sum_max_s"],
             r["sum_mean_s"], r["objective"]] for k, (r, _) in res.items()]
    report("balance", "Fig. 15 analogue: mini-batch balance across partitions, vertex-cut vs edge-cut (BlockPG)",
           f"{n:,} samples × {d:,} power-law features, {g.num_edges:,} non-zeros; P = {P} partitions in one "
           f"process; blocks of {BLOCK} features; {epochs} epochs",
           ["layout", "time max/mean (mean over clocks)", "p90", "edges max/mean", "Σ max (s)", "Σ mean (s)",
            "objective"], rows,
           notes=["Σ max is what a synchronous group of P workers would spend; Σ mean is the balanced ideal. "
                  "The objective is the same at slack 0 for every layout (the central invariant)."],
           pngs=[png])
    (ec, _), (vc, _) = res[LAYOUTS[0][0]], res[LAYOUTS[1][0]]
    emit({"bench": "balance", "edge_cut_max_over_mean": ec["time_max_over_mean"],
          "vertex_cut_max_over_mean": vc["time_max_over_mean"],
          "edge_cut_over_vertex_cut_sync_time": ec["sum_max_s"] / vc["sum_max_s"], "png": png}, LOG)
    return 0


def plot(res, path):
    with figure(path, ncols=2, figsize=(11, 4), dpi=110) as axes:
        if axes is None:
            return None
        a1, a2 = axes
        # one representative mini-batch (the median clock by edge-cut imbalance), as in Fig. 15
        _, per0 = next(iter(res.values()))
        r0 = per0.max(1) / np.maximum(per0.mean(1), 1e-12)
        c = int(np.argsort(r0)[len(r0) // 2])
        w = 0.8 / len(res)
        for i, (label, (_, per)) in enumerate(res.items()):
            a1.bar(np.arange(P) + i * w, per[min(c, len(per) - 1)] * 1e3, width=w, label=label)
            ratio = per.max(1) / np.maximum(per.mean(1), 1e-12)
            a2.plot(np.sort(ratio), np.linspace(0, 1, len(ratio)), label=label)
        a1.set_xlabel("partition (worker)")
        a1.set_ylabel("Exchange time in one mini-batch (ms)")
        a1.set_title(f"one mini-batch (clock {c + 1})")
        a1.legend(fontsize=7)
        a2.set_xlabel("max / mean partition time per mini-batch")
        a2.set_ylabel("fraction of mini-batches (CDF)")
        a2.set_title("imbalance over all mini-batches")
        a2.legend(fontsize=7)
    return path
