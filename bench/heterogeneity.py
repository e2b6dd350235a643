"""Fig. 9: heterogeneity, BlockPG time per iteration under four data models.

The same UDFs (udfs/blockpg.py) and the same data on P = 4 partitions (bicut:
samples mirror-free, features cut), one process; only the declarations differ:

* Homo-Vertices: one vertex record for both sides (margin, label, weight, skip,
  all synced; accumulators g, h on both), every Exchange tracks both sides and
  both Applies run over every touched vertex, as a homogeneous engine must;
* Skip-Sample: the same record, but samples (mirror-free) are neither tracked
  nor applied: the mini-batch enumerates features only;
* Feature-Sample: a record per type (samples: margin, label; features: weight,
  skip, accumulators), every field synced;
* Master-Mirror: the shipped program: the label is master-only, only what
  mirrors need is synced.

Every variant gives the same objective (checked and printed). Final line:
{"bench": "heterogeneity", "homo_over_master_mirror": r, ...}.
"""
import os
import time

import numpy as np

from bench.common import RESULTS, classification_cached, emit, figure, machine, report, timed

LOG = "heterogeneity"
P = 4
VARIANTS = ("Homo-Vertices", "Skip-Sample", "Feature-Sample", "Master-Mirror")


def keep(v, a, ctx):
    """An Apply that changes nothing: a homogeneous engine applies every touched vertex."""
    pass


def variant(kind):
    """A program builder with udfs.blockpg.program's signature for data model ``kind``."""
    from tux2 import Apply, Exchange, MiniBatch, Program, VertexType
    from tux2.udfs import blockpg

    def build(labels, values, samples, features, n_features, lam=1.0, block_size=None):
        prog = blockpg.program(labels, values, samples, features, n_features, lam=lam, block_size=block_size)
        if kind == "Master-Mirror":
            return prog
        S, F = prog.types[0].name, prog.types[1].name
        if kind == "Feature-Sample":
            vt = [VertexType(S, sync={"m": "f8", "y": "f8"}),
                  VertexType(F, sync={"w": "f8", "skip": "i4"}, accum={"g": "f8", "h": "f8"})]
            stages = prog.stages
        else:
            union = {"m": "f8", "y": "f8", "w": "f8", "skip": "i4"}
            vt = [VertexType(n, sync=union, accum={"g": "f8", "h": "f8"}) for n in (S, F)]
            if kind == "Skip-Sample":
                stages = prog.stages
            else:
                block = MiniBatch(prog.stages[0].size, [Exchange(blockpg.gradient), Apply(blockpg.proximal),
                                                        Exchange(blockpg.margins), Apply(keep)],
                                  unit="vertex", enumerate=F, active=blockpg.active)
                stages = [block] + list(prog.stages[1:])
        return Program(vt, prog.edge_fields, prog.context, stages, prog.init_vertices, prog.init_edges,
                       name=f"blockpg-{kind}", edge_values=prog.edge_values)
    return build


def main(args):
    from bench.blockpg import engine
    quick = getattr(args, "quick", False)
    n, d, nnz = (100_000, 100_000, 32) if quick else (400_000, 500_000, 32)
    iters = 3 if quick else 5
    g, y, _, _ = classification_cached(n, d, nnz)
    emit({"bench": "heterogeneity", "event": "dataset", "samples": n, "features": d, "nonzeros": g.num_edges,
          "partitions": P, **machine()}, LOG)
    res = {}
    for kind in VARIANTS:
        t = time.perf_counter()
        eng = engine(g, y, 1.0, 500, parts=P, program=variant(kind))
        setup = time.perf_counter() - t
        times = timed(lambda: eng.run(1), iters, warmup=False)
        nbytes = sum(tl.data.nbytes + tl.accum.nbytes + (tl.snapshot.nbytes if tl.snapshot is not None else 0)
                     for p in eng.parts for tl in p.types)
        rec = {"bench": "heterogeneity", "variant": kind, "iteration_s": float(np.mean(times)),
               "iteration_seconds": times, "vertex_mib": nbytes / 2**20, "min_bytes": eng.min_bytes,
               "objective": float(eng.context()["objective"]), "setup_s": setup}
        emit(rec, LOG)
        res[kind] = rec
    objs = [r["objective"] for r in res.values()]
    same = max(objs) - min(objs) <= 1e-9 * abs(objs[0])
    png = plot(res, os.path.join(RESULTS, "heterogeneity.png"))
    base = res["Homo-Vertices"]["iteration_s"]
    report("heterogeneity", "Fig. 9 analogue: data-model heterogeneity (BlockPG, time per iteration)",
           f"{n:,} samples × {d:,} power-law features, {g.num_edges:,} non-zeros; P = {P} partitions (bicut, "
           f"samples mirror-free) in one process; mean of {iters} iterations",
           ["variant", "s / iteration", "vs Homo-Vertices", "vertex data (MiB)", "replica bytes (min)", "objective"],
           [[k, r["iteration_s"], r["iteration_s"] / base, r["vertex_mib"], r["min_bytes"], r["objective"]]
            for k, r in res.items()],
           notes=[f"Same objective in every variant: {'yes' if same else 'NO'}."], pngs=[png])
    emit({"bench": "heterogeneity", "homo_over_master_mirror": base / res["Master-Mirror"]["iteration_s"],
          "same_objective": same, "png": png}, LOG)
    return 0 if same else 1


def plot(res, path):
    with figure(path, figsize=(6.5, 4)) as ax:
        if ax is None:
            return None
        x = np.arange(len(res))
        ax.bar(x, [r["iteration_s"] for r in res.values()], color="tab:blue", label="BlockPG, P = 4")
        ax.set_xticks(x, list(res))
        ax.set_ylabel("time per iteration (s)")
        ax.set_xlabel("vertex data model")
        ax.set_title("Effect of heterogeneity")
        ax.legend()
    return path
