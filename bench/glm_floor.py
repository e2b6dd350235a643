"""How fast can one core run the GLM bench's algorithms at all? tux2's Adam
(PS2's update, lazy on the touched features of each mini-batch) against the same
algorithm written by hand as one numba loop with no engine, and per-sample SGD (what
scikit-learn's SGDClassifier runs) written the same way, on the glm bench's problem.

The hand-written Adam loop does what tux2's stage sequence does per mini-batch —
partial margins, the loss derivative per sample, gradient sums per feature, the Adam
step per touched feature — over the same records (w, m1, m2, β₁ᵗ, β₂ᵗ, deg, scale) and the
same accumulators (g, c), and gives the same iterates (checked: the objective after
each epoch matches tux2's to 1e-9 relative). Its time per epoch is what an engine
could at best reach for this algorithm on one core; times the epochs Adam needs to
reach the gap, it bounds tux2's time to gap on one core from below. The same is
done for per-sample AdaGrad (modelavg with optimizer 'adagrad', one partition, one
sample per mini-batch), which needs fewer epochs than either.
Final line: {"bench": "glm_floor", "engine_over_hand_written": R,
"adagrad_engine_over_hand_written": R2, ...}.
"""
import json
import math
import os
import time

import numpy as np
from numba import njit

from bench.common import CACHE, classification_cached, emit, machine, report, sklearn_or_skip, timed

LOG = "glm_floor"
LAM = 1e-6
GAP = 1e-2
JIT = dict(fastmath={"reassoc", "contract", "nsz", "arcp"}, error_model="numpy", boundscheck=False)
FEATURE = np.dtype([("w", "f8"), ("m1", "f8"), ("m2", "f8"), ("b1t", "f8"), ("b2t", "f8"), ("deg", "f8"),
                    ("scale", "f8")])
ACCUM = np.dtype([("g", "f8"), ("c", "f8")])


@njit(**JIT)
def adam_epoch(bounds, indptr, idx, val, y, d, F, A, stamp, touched, epoch, rate, lam, n, B, b1, b2, eps):
    """One epoch of mini-batch lazy Adam; mini-batch c is samples [bounds[c], bounds[c+1])."""
    for c in range(bounds.shape[0] - 1):
        for i in range(bounds[c], bounds[c + 1]):
            m = 0.0
            for e in range(indptr[i], indptr[i + 1]):
                m += val[e] * F[idx[e]].w
            d[i] = -y[i] / (1.0 + math.exp(y[i] * m))
        nt = 0
        for i in range(bounds[c], bounds[c + 1]):
            for e in range(indptr[i], indptr[i + 1]):
                j = idx[e]
                A[j].g += val[e] * d[i]
                A[j].c += 1.0
                if stamp[j] != epoch:
                    stamp[j] = epoch
                    touched[nt] = j
                    nt += 1
        for t in range(nt):
            v = F[touched[t]]
            a = A[touched[t]]
            v.b1t *= b1
            v.b2t *= b2
            g = (a.g + lam * n / v.deg * a.c * v.w) / B
            v.m1 = b1 * v.m1 + (1.0 - b1) * g
            v.m2 = b2 * v.m2 + (1.0 - b2) * g * g
            v.w -= rate * v.scale * (v.m1 / (1.0 - v.b1t)) / (math.sqrt(v.m2 / (1.0 - v.b2t)) + eps)
            a.g = 0.0
            a.c = 0.0
        epoch += 1
    return epoch


@njit(inline="always", **JIT)
def logistic_d(indptr, idx, val, y, w, i):
    """ℓ'(x_i·w) of the logistic loss, for sample i of a CSR matrix and a plain weight array."""
    m = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        m += val[e] * w[idx[e]]
    return -y[i] / (1.0 + math.exp(y[i] * m))


@njit(**JIT)
def sgd_epoch(indptr, idx, val, y, w, eta):
    """One epoch of per-sample SGD on a plain weight array (no regulariser, constant step)."""
    for i in range(y.shape[0]):
        d = logistic_d(indptr, idx, val, y, w, i)
        for e in range(indptr[i], indptr[i + 1]):
            w[idx[e]] -= eta * val[e] * d


@njit(**JIT)
def adagrad_epoch(indptr, idx, val, y, w, G, deg, scale, rate, lam, n, eps):
    """One epoch of per-sample AdaGrad with the l2 term spread over a feature's samples
    (tux2's modelavg local step with optimizer 'adagrad' on one partition, batch 1)."""
    for i in range(y.shape[0]):
        d = logistic_d(indptr, idx, val, y, w, i)
        for e in range(indptr[i], indptr[i + 1]):
            j = idx[e]
            g = val[e] * d + lam * n / deg[j] * w[j]
            G[j] += g * g
            w[j] -= rate * scale[j] * g / (math.sqrt(G[j]) + eps)


def main(args):
    from tux2.udfs import glm
    quick = getattr(args, "quick", False)
    n, d = (100_000, 100_000) if quick else (400_000, 500_000)
    B, eta, decay, epochs = (2000, 0.15, 0.25, 3) if quick else (8000, 0.15, 0.25, 3)
    g, y, X, path = classification_cached(n, d, 32)
    fpath = os.path.join(CACHE, f"glm_fstar_{os.path.basename(path).removesuffix('.npz')}_{LAM:g}.json")
    f_star = json.load(open(fpath))["f_star"] if os.path.exists(fpath) else None
    info = {"bench": "glm_floor", "samples": n, "features": d, "nonzeros": g.num_edges, "batch": B, "eta": eta,
            "decay": decay, **machine()}
    emit({**info, "event": "dataset"}, LOG)

    # the engine's sample order: glm.engine relabels samples by a seeded permutation
    perm = np.random.default_rng(0).permutation(n)
    inv = np.argsort(perm)
    Xs = X[inv]
    ys = np.where(np.asarray(y)[inv] > 0, 1.0, -1.0)
    bounds = np.r_[np.arange(0, n, B), n].astype(np.int64)

    def objective(w):
        return glm.objective_value(w, X, y, "logistic", "l2", LAM)

    def epochs_of(step, weights):
        """Seconds of each epoch ``step(e)`` and the objective of ``weights()`` after it (untimed)."""
        ts, fs = [], []
        for e in range(epochs):
            t = time.perf_counter()
            step(e)
            ts.append(time.perf_counter() - t)
            fs.append(objective(weights()))
        return ts, fs

    def engine_epochs(eng):
        """A tux2 engine's epochs (one partition: the fused loop)."""
        return epochs_of(lambda e: eng.run(1), lambda: glm.weights(eng)[:, 0])

    tux2_t, tux2_f = engine_epochs(glm.engine(g, y, "logistic", "adam", parts=1, batch=B, eta=eta, decay=decay,
                                              lam=LAM)[0])

    # the same algorithm by hand
    F = np.zeros(d, FEATURE)
    F["b1t"], F["b2t"] = 1.0, 1.0
    F["deg"] = np.maximum(np.bincount(g.dst, minlength=d), 1)
    F["scale"] = glm.feature_scale(g.dst, g.values, d)
    A = np.zeros(d, ACCUM)
    dd, stamp, touched = np.zeros(n), np.full(d, -1, np.int64), np.zeros(d, np.int64)
    args0 = (bounds, Xs.indptr, Xs.indices, Xs.data, ys, dd, F, A, stamp, touched)
    adam_epoch(bounds[:1], *args0[1:], 0, 0.0, LAM, float(n), float(B), 0.9, 0.999, 1e-8)   # compile
    ep = [0]                                  # the stamp epoch the loop carries over

    def hand_adam(e):
        ep[0] = adam_epoch(*args0, ep[0], eta / (1.0 + decay * e), LAM, float(n), float(B), 0.9, 0.999, 1e-8)
    hand_t, hand_f = epochs_of(hand_adam, lambda: F["w"])
    same = bool(np.allclose(hand_f, tux2_f, rtol=1e-9, atol=0.0))

    # per-sample SGD by hand (sklearn's algorithm without its schedule and scaling)
    w = np.zeros(d)
    sgd_epoch(Xs.indptr[:1], Xs.indices, Xs.data, ys[:0], w, 0.5)
    sgd_t = timed(lambda: sgd_epoch(Xs.indptr, Xs.indices, Xs.data, ys, w, 0.5), epochs, warmup=False)

    # per-sample AdaGrad: tux2 (modelavg, one partition, one sample per mini-batch) and by hand
    ada_eta = 0.5
    ada_t, ada_f = engine_epochs(glm.engine(g, y, "logistic", "modelavg", parts=1, batch=1, eta=ada_eta, decay=0.0,
                                            lam=LAM, optimizer="adagrad")[0])
    w, G = np.zeros(d), np.zeros(d)
    feats = (F["deg"], F["scale"], ada_eta, LAM, float(n), 1e-8)
    adagrad_epoch(Xs.indptr[:1], Xs.indices, Xs.data, ys[:0], w, G, *feats)
    hada_t, hada_f = epochs_of(lambda e: adagrad_epoch(Xs.indptr, Xs.indices, Xs.data, ys, w, G, *feats), lambda: w)
    same_ada = bool(np.allclose(hada_f, ada_f, rtol=1e-9, atol=0.0))

    sk = sklearn_or_skip("glm_floor", "sklearn", LOG)
    sk_t = []
    if sk is not None:
        from sklearn.linear_model import SGDClassifier
        clf = SGDClassifier(loss="log_loss", alpha=LAM, fit_intercept=False, random_state=0)
        sk_t = timed(lambda: clf.partial_fit(X, y, classes=np.array([-1.0, 1.0])), epochs, warmup=False)
    med = {k: float(np.median(v)) if v else None
           for k, v in (("tux2", tux2_t), ("hand", hand_t), ("sgd", sgd_t), ("sklearn", sk_t), ("ada", ada_t),
                        ("hada", hada_t))}
    gaps = [(f - f_star) / f_star for f in tux2_f] if f_star else None
    ada_gaps = [(f - f_star) / f_star for f in ada_f] if f_star else None
    rows = [["tux2 adam, one partition (fused loop)", med["tux2"], med["tux2"] / med["hand"],
             gaps[-1] if gaps else None],
            ["hand-written numba loop, same Adam", med["hand"], 1.0, gaps[-1] if gaps else None],
            ["hand-written numba loop, per-sample SGD on a w array", med["sgd"], med["sgd"] / med["hand"], None],
            ["scikit-learn SGDClassifier.partial_fit", med["sklearn"],
             med["sklearn"] / med["hand"] if med["sklearn"] else None, None],
            [f"tux2 per-sample AdaGrad (modelavg+adagrad, one partition, B=1, η={ada_eta})", med["ada"],
             med["ada"] / med["hand"], ada_gaps[-1] if ada_gaps else None],
            ["hand-written numba loop, same per-sample AdaGrad", med["hada"], med["hada"] / med["hand"],
             ada_gaps[-1] if ada_gaps else None]]
    report("glm_floor", "GLM on one core: tux2's Adam and AdaGrad vs the same loops written by hand",
           f"{n:,} samples × {d:,} features, {g.num_edges:,} non-zeros (the glm bench's problem); Adam with "
           f"B = {B}, η = {eta}, decay {decay}, {epochs} epochs",
           ["loop", "s per epoch (median)", "vs hand-written Adam", f"gap after {epochs} epochs"], rows,
           notes=[f"Same iterates as tux2: **{same}** for Adam, **{same_ada}** for AdaGrad (objective after "
                  "each epoch, 1e-9 relative). A hand-written loop is a lower bound on the engine's epoch on one "
                  "core for its algorithm; per-sample SGD touches one 8-byte weight per non-zero and no "
                  "optimiser state, per-sample AdaGrad also its G."])
    emit({"bench": "glm_floor", "engine_over_hand_written": med["tux2"] / med["hand"], "same_iterates": same,
          "adagrad_engine_over_hand_written": med["ada"] / med["hada"], "adagrad_same_iterates": same_ada,
          "adagrad_gap_per_epoch": ada_gaps, "tux2_adagrad_epoch_s": ada_t, "hand_adagrad_epoch_s": hada_t,
          "tux2_epoch_s": tux2_t, "hand_adam_epoch_s": hand_t, "hand_sgd_epoch_s": sgd_t, "sklearn_epoch_s": sk_t,
          "objective_per_epoch": tux2_f, "hand_objective_per_epoch": hand_f, "gap_per_epoch": gaps,
          **{k: v for k, v in info.items() if k != "bench"}}, LOG)
    return 0 if same and same_ada else 1
