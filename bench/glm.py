"""L2 logistic regression: every tux2 GLM strategy vs scikit-learn's SGDClassifier
(and Spark MLlib's LogisticRegressionWithSGD when pyspark and Java are present),
objective gap vs time on one problem, as in MLlib* Fig. 4/5 and ColumnSGD Fig. 8.

    f(w) = (1/n) Σ log(1 + exp(−y x·w)) + λ/2 ‖w‖²      (sklearn's SGD objective, alpha = λ)

f* comes from a tight liblinear solve (C = 1/(nλ), tol 1e-8), cached beside the
data. The gap is relative, (f − f*)/f*. Each system's time is its training time;
objectives are computed between epochs, outside the clock. tux2 strategies run in
one process on P partitions (single-threaded: what differs is each strategy's
work and traffic, reported as bytes per step); their step size is picked from a
small grid by the objective after one epoch, as the MLlib* paper grid-searched
MLlib's, and decays as eta / (1 + 0.5 t) in epoch t. sklearn keeps its default
'optimal' schedule. Runs stop at half the target gap. Final line: {"bench": "glm", "tux2_over_sklearn_time_to_1e-2": R, ...}.
"""
import json
import os
import time
import warnings

import numpy as np

from bench.common import CACHE, classification_cached, emit, ensure, gap_plot, machine, time_to_gap

LOG = "glm"
GAP = 1e-2
LAM = 1e-6
DECAY = 0.5          # every tux2 strategy: step eta / (1 + 0.5 epoch)


def f_star_cached(X, y, lam, key):
    from tux2.udfs import glm
    path = os.path.join(CACHE, f"glm_fstar_{key}_{lam:g}.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    from sklearn.linear_model import LogisticRegression
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(solver="liblinear", C=1.0 / (X.shape[0] * lam), tol=1e-8, fit_intercept=False,
                                 max_iter=1000).fit(X, y)
    out = {"f_star": glm.objective_value(clf.coef_.ravel(), X, y, "logistic", "l2", lam),
           "seconds": time.perf_counter() - t}
    os.makedirs(CACHE, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(path + ".tmp", path)
    return out


def sklearn_sgd(X, y, lam, epochs, f_star):
    from sklearn.linear_model import SGDClassifier
    from tux2.udfs import glm
    clf = SGDClassifier(loss="log_loss", alpha=lam, fit_intercept=False, random_state=0)
    curve, total = [], 0.0
    for epoch in range(1, epochs + 1):
        t = time.perf_counter()
        clf.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
        total += time.perf_counter() - t
        f = glm.objective_value(clf.coef_.ravel(), X, y, "logistic", "l2", lam)
        curve.append((total, f))
        emit({"bench": "glm", "system": "sklearn-sgd", "epoch": epoch, "seconds": total, "objective": f,
              "gap": (f - f_star) / f_star}, LOG)
        if (f - f_star) / f_star <= GAP / 2:
            break
    return curve


def tux2_strategy(g, y, X, strategy, parts, etas, epochs, f_star, batch, driver=False, decay=DECAY):
    from tux2.udfs import glm
    label = f"{strategy}{'-driver' if driver else ''} P={parts}"

    def build(eta):
        return glm.engine(g, y, "logistic", strategy, parts=parts, driver=driver, batch=batch, eta=eta, lam=LAM,
                          decay=decay)[0]

    best = None
    for eta in etas:                                   # grid: objective after one epoch
        eng = build(eta)
        eng.run(1)
        f = glm.objective_value(glm.weights(eng), X, y, "logistic", "l2", LAM)
        emit({"bench": "glm", "system": "tux2", "strategy": label, "grid_eta": eta, "objective_1_epoch": f}, LOG)
        if np.isfinite(f) and (best is None or f < best[1]):
            best = (eta, f)
    eta = best[0]
    t = time.perf_counter()
    eng = build(eta)
    setup = time.perf_counter() - t
    curve, total, steps = [], 0.0, 0
    for epoch in range(1, epochs + 1):
        c0, b0 = eng.clock, eng.transport.bytes_sent
        t = time.perf_counter()
        eng.run(1)
        total += time.perf_counter() - t
        f = glm.objective_value(glm.weights(eng), X, y, "logistic", "l2", LAM)
        curve.append((total, f))
        steps = eng.clock - c0
        emit({"bench": "glm", "system": "tux2", "strategy": label, "eta": eta, "epoch": epoch, "seconds": total,
              "objective": f, "gap": (f - f_star) / f_star, "bytes_per_step": (eng.transport.bytes_sent - b0) / steps,
              "setup_seconds": setup, "decay": decay}, LOG)
        if (f - f_star) / f_star <= GAP / 2:
            break
    return label, eta, curve


def main(args):
    quick = getattr(args, "quick", False)
    n, d = (100_000, 100_000) if quick else (400_000, 500_000)
    epochs = 15 if quick else 12
    g, y, X, path = classification_cached(n, d, 32)
    info = {"bench": "glm", "samples": n, "features": d, "nonzeros": g.num_edges, "lam": LAM, "gap": GAP,
            **machine()}
    emit({**info, "event": "dataset", "path": path}, LOG)
    try:
        sk = ensure("sklearn", "scikit-learn")
    except RuntimeError as e:
        emit({"bench": "glm", "system": "sklearn", "skipped": str(e)}, LOG)
        return 1
    opt = f_star_cached(X, y, LAM, os.path.basename(path).removesuffix(".npz"))
    f_star = opt["f_star"]
    emit({"bench": "glm", "system": "liblinear", "event": "optimum", "f_star": f_star, "seconds": opt["seconds"],
          "version": sk.__version__}, LOG)
    curves = {"sklearn SGDClassifier": sklearn_sgd(X, y, LAM, 60 if not quick else 80, f_star)}
    batch = 1000
    sgd_etas, adam_etas = [30.0, 100.0, 300.0], [0.1, 0.2, 0.4]
    runs = [("sendgradient", 1, sgd_etas, False), ("sendgradient", 2, sgd_etas, False),
            ("sendgradient", 2, sgd_etas, True), ("column", 2, sgd_etas, False),
            ("modelavg", 2, sgd_etas, False), ("modelsum", 2, sgd_etas, False), ("adam", 1, adam_etas, False),
            ("adam", 2, adam_etas, False)]
    etas = {}
    for strategy, parts, grid, driver in runs:
        label, eta, curve = tux2_strategy(g, y, X, strategy, parts, grid, epochs, f_star, batch, driver)
        curves[f"tux2 {label}"] = curve
        etas[label] = eta
    times = {k: time_to_gap(c, f_star, GAP) for k, c in curves.items()}
    sk_time = times["sklearn SGDClassifier"]
    tux2_times = {k: v for k, v in times.items() if k.startswith("tux2") and v is not None}
    best = min(tux2_times, key=tux2_times.get) if tux2_times else None
    gap_plot("glm", curves, f_star, GAP, f"L2 logistic regression, λ={LAM:g}, {n // 1000}k × {d // 1000}k, "
             f"{g.num_edges / 1e6:.1f} M non-zeros", figsize=(7, 4.5))
    emit({"bench": "glm", "tux2_over_sklearn_time_to_1e-2": tux2_times[best] / sk_time if best and sk_time else None,
          "best_strategy": best, "tux2_seconds_to_gap": tux2_times.get(best), "sklearn_seconds_to_gap": sk_time,
          "seconds_to_gap": times, "etas": etas, "gap": GAP, "f_star": f_star, "samples": n, "features": d,
          "nonzeros": g.num_edges, "lam": LAM, "batch": batch, "decay": DECAY, "sklearn_version": sk.__version__}, LOG)
    return 0
