"""BlockPG on text-like data (tux2.datasets.text_like: Zipf word frequencies,
log-normal document lengths, raw term counts, labels from a sparse planted
model): the relative gap to liblinear's optimum per epoch, 30 epochs, at
λ = 1 and λ = 10, for the default program (blocks of 500 features, the
separable κ bound), for blocks of one feature (then each step is an exact
coordinate Newton step on fresh margins: liblinear's older CDN without its line
search), which bounds what any per-feature curvature can do, and for
form="newton" (newGLMNET's proximal Newton step per epoch: 1 pass with exp, K
coordinate-descent sweeps on the quadratic model, a line search, 1 pass to take
the step: K + 2 passes over the edges, only the first with exp).

The target of issue 23 is a gap <= 1e-4 within 30 epochs.
Final line: {"bench": "blockpg_text", "epochs_to_1e-4": {...}, "gap_at_30": {...}}.
"""
import time
import warnings

import numpy as np

from bench.common import emit, machine, report, sklearn_or_skip

LOG = "blockpg_text"
EPOCHS, TARGET = 30, 1e-4


def main(args):
    import scipy.sparse as sp
    import tux2
    from tux2.datasets import text_like
    from tux2.udfs import blockpg
    quick = getattr(args, "quick", False)
    docs = 200 if quick else 400
    d, w, c, y = text_like(n_docs=docs, seed=0)
    n, V = int(d.max()) + 1, int(w.max()) + 1
    X = sp.csr_matrix((c, (d, w)), shape=(n, V))
    emit({"bench": LOG, "event": "dataset", "docs": n, "words": V, "nonzeros": X.nnz, "max_count": float(c.max()),
          **machine()}, LOG)
    sk = sklearn_or_skip(LOG, "liblinear", LOG)
    if sk is None:
        return 1
    from sklearn.linear_model import LogisticRegression
    to_target, at_end, rows = {}, {}, []
    for lam in (1.0, 10.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            clf = LogisticRegression(penalty="l1", solver="liblinear", C=1.0 / lam, tol=1e-8, fit_intercept=False,
                                     max_iter=1000).fit(X, y)
            lib_s = time.perf_counter() - t
        f_star = blockpg.objective_value(clf.coef_.ravel(), X, y, lam)
        emit({"bench": LOG, "system": "liblinear", "lam": lam, "objective": f_star, "seconds": lib_s}, LOG)
        for name, block, opts in (("blocks of 500, κ bound", 500, {}), ("blocks of 1 (coordinate Newton)", 1, {}),
                                  ("newton, 5 sweeps", 1, {"form": "newton", "inner": 5}),
                                  ("newton, 10 sweeps", 1, {"form": "newton", "inner": 10})):
            feat, _ = blockpg.shuffle_features(w, V, seed=0)
            prog = blockpg.program(y, c, d, feat, V, lam=lam, block_size=block, **opts)
            eng = tux2.Engine(prog, tux2.BipartiteGraph(d, feat, None, n, V, ("sample", "feature")), partitions=1,
                              partitioner="bicut", partitioner_options={"favorite": 0})
            gaps, seconds, each = [], 0.0, []
            for epoch in range(1, EPOCHS + 1):
                t = time.perf_counter()
                eng.run(1)
                each.append(time.perf_counter() - t)
                seconds += each[-1]
                gaps.append((float(eng.context()["objective"]) - f_star) / f_star)
                emit({"bench": LOG, "system": name, "lam": lam, "epoch": epoch, "gap": gaps[-1], "seconds": seconds},
                     LOG)
            key = f"{name}, λ={lam:g}"
            to_target[key] = next((i + 1 for i, g in enumerate(gaps) if g <= TARGET), None)
            at_end[key] = gaps[-1]
            rows.append([name, lam, gaps[0], gaps[9], gaps[-1], to_target[key], float(np.median(each))])
    report(LOG, "BlockPG on text-like data: gap to liblinear's optimum per epoch",
           f"{n} documents, {V:,} words, {X.nnz:,} non-zeros (raw counts up to {c.max():.0f})",
           ["program", "λ", "gap epoch 1", "gap epoch 10", f"gap epoch {EPOCHS}", f"first epoch <= {TARGET:g}",
            "s per epoch (median)"],
           rows)
    emit({"bench": LOG, "epochs_to_1e-4": to_target, "gap_at_30": at_end, "docs": n, "words": V}, LOG)
    return 0
