"""Model-size scaling of the GLM strategies, the analogue of ColumnSGD Fig. 10: per-step
time and bytes per step of ``column`` against the row strategies (``sendgradient``,
with and without ``--driver``, and ``modelavg``) as the number of features grows
from 10⁴ to 10⁷ at a fixed number of samples, non-zeros per sample and batch.

Every run is P = 2 partitions in one process (bytes counted by the transport, as
a 2-worker run would send them); the time is one epoch after a warm-up epoch,
divided by its clocks. Column's traffic per step is the batch's partial margins
and derivatives; a row strategy's is the batch's touched features, which grows
with the model until every batch touches distinct features.
"""
import os
import time

from bench.common import RESULTS, emit, figure, machine, report

LOG = "glm_scaling"
STRATEGIES = [("column", False), ("sendgradient", False), ("sendgradient", True), ("modelavg", False)]


def main(args):
    from tux2.datasets import sparse_classification
    from tux2.udfs import glm
    quick = getattr(args, "quick", False)
    n, nnz, batch, parts = (20_000, 32, 1000, 2) if quick else (100_000, 32, 1000, 2)
    sizes = [10_000, 100_000, 1_000_000] + ([] if quick else [10_000_000])
    emit({"bench": "glm_scaling", "samples": n, "nnz_per_sample": nnz, "batch": batch, "partitions": parts,
          "features": sizes, **machine()}, LOG)
    rows = []
    for d in sizes:
        t = time.perf_counter()
        g, y, _ = sparse_classification(n_samples=n, n_features=d, nnz_per_sample=nnz, seed=0)
        gen = time.perf_counter() - t
        for strategy, driver in STRATEGIES:
            t = time.perf_counter()
            eng, _ = glm.engine(g, y, "logistic", strategy, parts=parts, driver=driver, batch=batch, eta=10.0,
                                lam=1e-6)
            setup = time.perf_counter() - t
            eng.run(1)                                          # warm-up (and compilation)
            c0, b0 = eng.clock, eng.transport.bytes_sent
            t = time.perf_counter()
            eng.run(1)
            sec = time.perf_counter() - t
            steps = eng.clock - c0
            rec = {"bench": "glm_scaling", "strategy": strategy + ("-driver" if driver else ""), "features": d,
                   "ms_per_step": 1e3 * sec / steps, "bytes_per_step": (eng.transport.bytes_sent - b0) / steps,
                   "steps": steps, "setup_seconds": setup, "generate_seconds": gen}
            emit(rec, LOG)
            rows.append(rec)
            del eng
    names = [s + ("-driver" if drv else "") for s, drv in STRATEGIES]
    growth = {}
    for name in names:
        r = sorted((x for x in rows if x["strategy"] == name), key=lambda x: x["features"])
        growth[name] = {"time": r[-1]["ms_per_step"] / r[0]["ms_per_step"],
                        "bytes": r[-1]["bytes_per_step"] / max(r[0]["bytes_per_step"], 1.0)}
    with figure("glm_scaling", ncols=2, figsize=(10, 4)) as axes:
        if axes is not None:
            for name in names:
                r = sorted((x for x in rows if x["strategy"] == name), key=lambda x: x["features"])
                xs = [x["features"] for x in r]
                axes[0].plot(xs, [x["ms_per_step"] for x in r], marker="o", label=name)
                axes[1].plot(xs, [x["bytes_per_step"] / 1e3 for x in r], marker="o", label=name)
            for ax, lab in zip(axes, ("time per step (ms)", "bytes per step (kB)")):
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("number of features (model size)")
                ax.set_ylabel(lab)
                ax.legend()
            axes[0].set_title(f"L2-LR, {n // 1000}k samples × {nnz} nnz, B={batch}, P={parts}")
    report("glm_scaling", "ColumnSGD Fig. 10 analogue: GLM per-step time and traffic vs model size",
           f"{n:,} samples × {nnz} non-zeros each, features {sizes[0]:,} → {sizes[-1]:,}; batch {batch}, "
           f"P = {parts} partitions in one process", ["strategy", "features", "ms / step", "bytes / step"],
           [[r["strategy"], r["features"], r["ms_per_step"], r["bytes_per_step"]]
            for r in sorted(rows, key=lambda x: (x["strategy"], x["features"]))],
           notes=["Growth smallest → largest model: " + "; ".join(
               f"{k} time ×{v['time']:.2f}, bytes ×{v['bytes']:.2f}" for k, v in growth.items())],
           pngs=[os.path.join(RESULTS, "glm_scaling.png")])
    emit({"bench": "glm_scaling", "growth_smallest_to_largest": growth, "features": [sizes[0], sizes[-1]],
          "results": RESULTS}, LOG)
    return 0
