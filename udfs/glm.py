"""Generalised linear models on a sample–feature graph, trained the way the
companion papers' systems train them — each system is a stage sequence, a
combine rule and a partitioning in the MEGA model.

    minimise  f(W) = (1/n) Σ_i s_i ℓ(x_i·W, y_i) + λ R(W),   R = ½‖W‖² (l2) or ‖W‖₁ (l1)

with sample weights s_i (1 unless given: scikit-learn's ``sample_weight``, C Σ s_i ℓ_i + R at
C = 1/(nλ); a weight 2 is the sample twice, n counting the samples as given).

Losses: ``logistic`` (y ±1), ``hinge`` (linear SVM, y ±1), ``softmax`` (y in 0…K−1,
W has K columns), ``squared`` (regression: ℓ = ½(m − y)², y any real number; the
estimators centre and scale y, tux2.estimators.linear). Samples (type 0) hold the label, the margins' accumulator and
the loss derivative d_i = ∂ℓ/∂m at the current margins; features (type 1) hold the
weights (K per feature). One mini-batch = B samples (a range of shuffled sample
ids, ``shuffle_samples``) = one clock:

* Exchange ``margin``:   a_u.m += x_ij · w_j                 (partial dot products)
* Apply at the samples: d_i = ℓ'(m_i)                        (needs the whole margin)
* Exchange ``gradient``: a_v.g += x_ij · d_i, a_v.c += 1
* Apply at the features: the update.

The regulariser is spread over the samples that hold a feature: a batch edge of
feature j adds λ (n / n_j) ∂R/∂w_j (the feature's ``pen``), so a mini-batch gradient is an
unbiased estimate of ∇f and touches only the batch's features, and a full batch is exactly ∇f.
An intercept (``free``: the constant feature every sample holds) has ``pen`` 0: R leaves it
out, as scikit-learn's lbfgs, Spark MLlib and glmnet do (liblinear's ``-B 1`` penalises it).

A factorization machine (``factors=F`` > 0, binary losses) is the same stage
sequence with a wider record: feature j holds w_j = (linear weight, v_j1 … v_jF),
the margin Exchange accumulates m_i = (Σ x w, s_i = Σ x v, q_i = Σ x² v²), the
sample Apply forms ŷ_i = m + ½ Σ_f (s_f² − q_f) and keeps (ℓ'(ŷ_i), s_i), and the
gradient Exchange adds d_i (x, x s_if − v_jf x²). The regulariser covers w and V.

Strategies (``STRATEGIES``):

* ``sendgradient`` (Spark MLlib): samples mirror-free (row partitioning); feature
  replicas send gradient sums to the masters, one SGD step per mini-batch, new
  weights go back to the mirrors. ``driver=True`` puts every feature master on
  partition 0, as Spark's driver holds the model.
* ``adam`` (PS2): the same traffic; Adam's moments are master-only fields beside the
  weight (co-located) and the element-wise update runs in Apply at the masters.
  ``optimizer="adam"`` gives the other one-step strategies (sendgradient, column)
  the same update: with ``column`` the moments sit beside the mirror-free weights.
* ``column`` (ColumnSGD): features mirror-free (column partitioning), samples
  replicated: partial margins go up to the sample masters, derivatives come down,
  and the gradient and update stay local. Traffic grows with B, not with the model.
* ``modelavg`` (MLlib*): every partition runs SGD over its own samples on its own
  replicas (the gradient Exchange writes the weights directly, local steps of
  P/B), and once per epoch Apply averages the replicas' changes (``combine="mean"``):
  reduce-scatter to the masters and all-gather back, no central node.
* ``modelsum`` (Petuum-style): the same with the changes summed.

Optimizers (``OPTIMIZERS``, ``optimizer=``): ``sgd``; ``adam`` (PS2's, one-step
strategies); ``adagrad``: G += g², w −= η g / (√G + ε) per weight. The one-step
strategies keep G at the masters beside the weight; ``modelavg``/``modelsum`` keep
one G per replica and take the step in their local Exchange, edge by edge, so with
one sample per worker per mini-batch (``batch`` = workers) it is per-sample AdaGrad,
Vowpal Wabbit's adaptive update. Its step is scale-free: ``local_scale`` does not
enter.

AdaGrad's and Adam's steps η g/√G are ±η per weight whatever the units of a feature,
so a feature whose values are typically s_j > 1 (pixels 0-255, distances, an age
column) would move x·w by about η s_j per step. Both divide feature j's step by
s_j = max(1, √(mean of x_ij² over the samples i that hold it)) (the ``scale`` field;
Vowpal Wabbit's normalised update divides by the largest |x_ij|, which cost 14 points
of accuracy on a Zipf bag-of-words whose frequent words reach counts of 300, against
4 with the root mean square): such features then train as they would in units of
their typical value, and features within [−1, 1] (tf-idf, one-hot, scaled sets) are
unchanged. The objective is unchanged too; only the steps are. Plain ``sgd`` keeps
the papers' step. An FM's factors v_j start as N(0, init_std²) / s_j, so that v_j x_j
starts alike for every feature (without that, values up to 7,000 made the first
interactions ~10³ and the FM diverged).
"""
import functools
import math

import numpy as np
from numba import njit

from tux2.program import Program
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch

LOSSES = ("logistic", "hinge", "softmax", "squared")
STRATEGIES = ("sendgradient", "modelavg", "modelsum", "column", "adam")
ROW_STRATEGIES = ("sendgradient", "modelavg", "modelsum", "adam")
OPTIMIZERS = ("sgd", "adagrad", "adam")


# ---------------------------------------------------------------- helpers (inlined into the UDFs)
@njit(inline="always")
def soft(z, t):
    """Soft threshold S(z, t) = sign(z) max(|z| − t, 0)."""
    return z - t if z > t else (z + t if z < -t else 0.0)


@njit(inline="always")
def softplus(z):
    """log(1 + e^z) without overflow."""
    return z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))


@njit(inline="always")
def keep_sums(d, m):
    """d[1:] = s: an FM sample keeps its Σ x v for the gradient Exchange."""
    for f in range(1, d.shape[0]):
        d[f] = m[f]


@njit(inline="always")
def logsumexp(m):
    top = m[0]
    for k in range(1, m.shape[0]):
        top = max(top, m[k])
    s = 0.0
    for k in range(m.shape[0]):
        s += math.exp(m[k] - top)
    return top + math.log(s)


# ---------------------------------------------------------------- Exchanges
def margin(u, v, e, a_u, a_v, ctx):
    for k in range(v.w.shape[0]):
        a_u.m[k] += e.x * v.w[k]


def gradient(u, v, e, a_u, a_v, ctx):
    for k in range(v.w.shape[0]):
        a_v.g[k] += e.x * u.d[k]
    a_v.c += 1.0


def local_step_l2(u, v, e, a_u, a_v, ctx):
    s = ctx.rate * ctx.local_scale
    r = ctx.lam * v.pen
    for k in range(v.w.shape[0]):
        v.w[k] -= s * (e.x * u.d[k] + r * v.w[k])


def local_step_l1(u, v, e, a_u, a_v, ctx):
    s = ctx.rate * ctx.local_scale
    t = s * ctx.lam * v.pen
    for k in range(v.w.shape[0]):
        v.w[k] = soft(v.w[k] - s * e.x * u.d[k], t)


def local_adagrad_l2(u, v, e, a_u, a_v, ctx):
    # AdaGrad per replica (G: that replica's sum of squared gradients); the step
    # η/√G is scale-free, so no local_scale
    r = ctx.lam * v.pen
    for k in range(v.w.shape[0]):
        g = e.x * u.d[k] + r * v.w[k]
        v.G[k] += g * g
        v.w[k] -= ctx.rate * v.scale * g / (math.sqrt(v.G[k]) + ctx.eps)


def local_adagrad_l1(u, v, e, a_u, a_v, ctx):
    t = ctx.lam * v.pen
    for k in range(v.w.shape[0]):
        g = e.x * u.d[k]
        v.G[k] += g * g
        s = ctx.rate * v.scale / (math.sqrt(v.G[k]) + ctx.eps)
        v.w[k] = soft(v.w[k] - s * g, s * t)


# ---------------------------------------------------------------- factorization machine Exchanges
# feature record w = (w_j, v_j1 … v_jF); sample accumulator m = (Σ x w, s_1 … s_F, q_1 … q_F);
# sample sync d = (ℓ'(ŷ), s_1 … s_F)
def fm_margin(u, v, e, a_u, a_v, ctx):
    F = v.w.shape[0] - 1
    a_u.m[0] += e.x * v.w[0]
    for f in range(1, F + 1):
        t = e.x * v.w[f]
        a_u.m[f] += t
        a_u.m[F + f] += t * t


def fm_gradient(u, v, e, a_u, a_v, ctx):
    d = u.d[0]
    a_v.g[0] += e.x * d
    for f in range(1, v.w.shape[0]):
        a_v.g[f] += d * e.x * (u.d[f] - v.w[f] * e.x)
    a_v.c += 1.0


def fm_local_step_l2(u, v, e, a_u, a_v, ctx):
    s = ctx.rate * ctx.local_scale
    r = ctx.lam * v.pen
    d = u.d[0]
    v.w[0] -= s * (e.x * d + r * v.w[0])
    for f in range(1, v.w.shape[0]):
        v.w[f] -= s * (d * e.x * (u.d[f] - v.w[f] * e.x) + r * v.w[f])


def fm_local_step_l1(u, v, e, a_u, a_v, ctx):
    s = ctx.rate * ctx.local_scale
    t = s * ctx.lam * v.pen
    d = u.d[0]
    v.w[0] = soft(v.w[0] - s * e.x * d, t)
    for f in range(1, v.w.shape[0]):
        v.w[f] = soft(v.w[f] - s * d * e.x * (u.d[f] - v.w[f] * e.x), t)


def fm_local_adagrad_l2(u, v, e, a_u, a_v, ctx):
    r = ctx.lam * v.pen
    d = u.d[0]
    for f in range(v.w.shape[0]):
        g = (e.x * d if f == 0 else d * e.x * (u.d[f] - v.w[f] * e.x)) + r * v.w[f]
        v.G[f] += g * g
        v.w[f] -= ctx.rate * v.scale * g / (math.sqrt(v.G[f]) + ctx.eps)


def fm_local_adagrad_l1(u, v, e, a_u, a_v, ctx):
    t = ctx.lam * v.pen
    d = u.d[0]
    for f in range(v.w.shape[0]):
        g = e.x * d if f == 0 else d * e.x * (u.d[f] - v.w[f] * e.x)
        v.G[f] += g * g
        s = ctx.rate * v.scale / (math.sqrt(v.G[f]) + ctx.eps)
        v.w[f] = soft(v.w[f] - s * g, s * t)


@njit(inline="always")
def fm_output(m):
    """ŷ = m_0 + ½ Σ_f (s_f² − q_f) from the accumulator (m_0, s, q)."""
    F = (m.shape[0] - 1) // 2
    out = m[0]
    for f in range(1, F + 1):
        out += 0.5 * (m[f] * m[f] - m[F + f])
    return out


def fm_logistic_d(v, a, ctx):
    v.d[0] = -v.y / (1.0 + math.exp(v.y * fm_output(a.m)))
    keep_sums(v.d, a.m)


def fm_hinge_d(v, a, ctx):
    v.d[0] = -v.y if v.y * fm_output(a.m) < 1.0 else 0.0
    keep_sums(v.d, a.m)


def fm_squared_d(v, a, ctx):
    v.d[0] = fm_output(a.m) - v.y
    keep_sums(v.d, a.m)


def fm_squared_loss(v, a, ctx):
    r = fm_output(a.m) - v.y
    ctx.loss += 0.5 * r * r


def fm_logistic_loss(v, a, ctx):
    ctx.loss += softplus(-v.y * fm_output(a.m))


def fm_hinge_loss(v, a, ctx):
    ctx.loss += max(0.0, 1.0 - v.y * fm_output(a.m))


# ---------------------------------------------------------------- loss derivatives (Apply at samples)
def logistic_d(v, a, ctx):
    v.d[0] = -v.y / (1.0 + math.exp(v.y * a.m[0]))          # −y σ(−y m)


def hinge_d(v, a, ctx):
    v.d[0] = -v.y if v.y * a.m[0] < 1.0 else 0.0


def softmax_d(v, a, ctx):
    lse = logsumexp(a.m)
    for k in range(a.m.shape[0]):
        v.d[k] = math.exp(a.m[k] - lse) - (1.0 if k == v.y else 0.0)


def squared_d(v, a, ctx):
    v.d[0] = a.m[0] - v.y


def squared_loss(v, a, ctx):
    r = a.m[0] - v.y
    ctx.loss += 0.5 * r * r


def logistic_loss(v, a, ctx):
    ctx.loss += softplus(-v.y * a.m[0])


def hinge_loss(v, a, ctx):
    ctx.loss += max(0.0, 1.0 - v.y * a.m[0])


def softmax_loss(v, a, ctx):
    ctx.loss += logsumexp(a.m) - a.m[int(v.y)]


DERIVATIVE = {"logistic": logistic_d, "hinge": hinge_d, "softmax": softmax_d, "squared": squared_d}
LOSS = {"logistic": logistic_loss, "hinge": hinge_loss, "softmax": softmax_loss, "squared": squared_loss}
FM_DERIVATIVE = {"logistic": fm_logistic_d, "hinge": fm_hinge_d, "squared": fm_squared_d}
FM_LOSS = {"logistic": fm_logistic_loss, "hinge": fm_hinge_loss, "squared": fm_squared_loss}


# ---------------------------------------------------------------- sample weights (closure factories, memoised)
@functools.cache
def weighted_derivative(deriv, k):
    """The sample Apply ``deriv`` with d_i's first ``k`` entries times the sample's weight s_i:
    d_i = s_i ℓ'(m_i), so sample i counts s_i times in every gradient (an FM's kept sums Σ x v,
    d[1:], stay as they are)."""
    inner = njit(inline="always")(deriv)

    def weighted_d(v, a, ctx):
        inner(v, a, ctx)
        for j in range(k):
            v.d[j] *= v.s
    return weighted_d


@functools.cache
def weighted_loss(loss):
    """The evaluation Apply ``loss`` adding s_i ℓ(m_i, y_i) in place of ℓ(m_i, y_i)."""
    inner = njit(inline="always")(loss)

    def weighted_l(v, a, ctx):
        before = ctx.loss
        ctx.loss = 0.0
        inner(v, a, ctx)
        ctx.loss = before + v.s * ctx.loss
    return weighted_l


# ---------------------------------------------------------------- updates (Apply at feature masters)
def sgd_l2(v, a, ctx):
    r = ctx.lam * v.pen * a.c
    for k in range(v.w.shape[0]):
        v.w[k] -= ctx.rate * (a.g[k] + r * v.w[k]) / ctx.batch


def sgd_l1(v, a, ctx):
    t = ctx.rate * ctx.lam * v.pen * a.c / ctx.batch
    for k in range(v.w.shape[0]):
        v.w[k] = soft(v.w[k] - ctx.rate * a.g[k] / ctx.batch, t)


def adam_l2(v, a, ctx):
    v.b1t *= ctx.beta1                     # β^t kept as running products: no pow per feature
    v.b2t *= ctx.beta2
    r = ctx.lam * v.pen * a.c
    c1 = 1.0 - v.b1t
    c2 = 1.0 - v.b2t
    for k in range(v.w.shape[0]):
        g = (a.g[k] + r * v.w[k]) / ctx.batch
        v.m1[k] = ctx.beta1 * v.m1[k] + (1.0 - ctx.beta1) * g
        v.m2[k] = ctx.beta2 * v.m2[k] + (1.0 - ctx.beta2) * g * g
        v.w[k] -= ctx.rate * v.scale * (v.m1[k] / c1) / (math.sqrt(v.m2[k] / c2) + ctx.eps)


def adam_l1(v, a, ctx):
    v.b1t *= ctx.beta1
    v.b2t *= ctx.beta2
    c1 = 1.0 - v.b1t
    c2 = 1.0 - v.b2t
    for k in range(v.w.shape[0]):
        g = a.g[k] / ctx.batch
        v.m1[k] = ctx.beta1 * v.m1[k] + (1.0 - ctx.beta1) * g
        v.m2[k] = ctx.beta2 * v.m2[k] + (1.0 - ctx.beta2) * g * g
        step = ctx.rate * v.scale / (math.sqrt(v.m2[k] / c2) + ctx.eps)
        v.w[k] = soft(v.w[k] - step * v.m1[k] / c1, step * ctx.lam * v.pen * a.c / ctx.batch)


def adagrad_l2(v, a, ctx):
    r = ctx.lam * v.pen * a.c
    for k in range(v.w.shape[0]):
        g = (a.g[k] + r * v.w[k]) / ctx.batch
        v.G[k] += g * g
        v.w[k] -= ctx.rate * v.scale * g / (math.sqrt(v.G[k]) + ctx.eps)


def adagrad_l1(v, a, ctx):
    for k in range(v.w.shape[0]):
        g = a.g[k] / ctx.batch
        v.G[k] += g * g
        s = ctx.rate * v.scale / (math.sqrt(v.G[k]) + ctx.eps)
        v.w[k] = soft(v.w[k] - s * g, s * ctx.lam * v.pen * a.c / ctx.batch)


# ---------------------------------------------------------------- GlobalSync
def regulariser_l2(v, ctx):
    for k in range(v.w.shape[0]):
        if v.pen > 0.0:
            ctx.reg += 0.5 * v.w[k] * v.w[k]
        if v.w[k] != 0.0:
            ctx.nnz += 1.0


def regulariser_l1(v, ctx):
    for k in range(v.w.shape[0]):
        if v.pen > 0.0:
            ctx.reg += abs(v.w[k])
        if v.w[k] != 0.0:
            ctx.nnz += 1.0


def objective(ctx):
    ctx.objective = ctx.loss / ctx.n + ctx.lam * ctx.reg
    ctx.epoch += 1.0
    ctx.rate = ctx.eta / (1.0 + ctx.decay * ctx.epoch)


def next_epoch(ctx):
    ctx.epoch += 1.0
    ctx.rate = ctx.eta / (1.0 + ctx.decay * ctx.epoch)


# ---------------------------------------------------------------- data preparation
def shuffle_samples(samples, n_samples, seed=0):
    """Random relabelling of sample ids, so id ranges (mini-batches) are random
    samples. Returns (new ids for ``samples``, perm) with new id = perm[old id]."""
    perm = np.random.default_rng(seed).permutation(n_samples)
    return perm[np.asarray(samples, np.int64)], perm


def labels_for(loss, labels, classes=None, source=None):
    """Labels as the program stores them: ±1 for binary losses (0/1 accepted),
    0 … K−1 for softmax, the real targets for ``squared``. Returns (labels, K). A bad
    label: tux2.io.sample_error (FILE:LINE when ``source`` is the labels' libsvm file)."""
    from tux2.io import sample_error
    y = np.asarray(labels, np.float64)
    if loss == "squared":
        bad = ~np.isfinite(y)
        if bad.any():
            i = int(np.argmax(bad))
            raise sample_error(f"regression targets must be finite numbers, got {y[i]:g}", source, i)
        return y, 1
    if loss == "softmax":
        bad = (y < 0) | (y != np.round(y))
        if bad.any():
            i = int(np.argmax(bad))
            raise sample_error(f"softmax labels must be class numbers 0, 1, …, got {y[i]:g}", source, i)
        k = int(classes or (int(y.max()) + 1 if len(y) else 2))
        if len(y) and y.max() >= k:
            i = int(np.argmax(y))
            raise sample_error(f"label {y[i]:g} is not below the number of classes {k}", source, i)
        return y, max(k, 2)
    bad = ~np.isin(y, (-1.0, 0.0, 1.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise sample_error(f"{loss} is binary: labels must be ±1 or 0/1, got {y[i]:g}", source, i)
    return np.where(y > 0, 1.0, -1.0), 1


def feature_scale(features, values, n_features, weights=None):
    """1 / max(1, the root mean square of each feature's values over the samples that
    hold it, each sample ``weights`` times (per edge; None: once)): the factor of its AdaGrad
    and Adam steps and of an FM's first factors."""
    if values is None:
        return np.ones(n_features)
    # in units of the feature's largest |value|, whose square does not overflow: the squares of
    # values of 1e200 were inf (numpy's overflow warning), a scale of 0 and a weight that never moved
    a = np.abs(np.asarray(values, np.float64))
    top = np.zeros(n_features)
    np.maximum.at(top, features, a)
    unit = np.where(top > 0, top, 1.0)
    w = np.ones(len(a)) if weights is None else weights
    count = np.bincount(features, weights=w, minlength=n_features)
    count = np.where(count > 0, count, 1.0)
    rms = unit * np.sqrt(np.bincount(features, weights=w * np.square(a / unit[features]), minlength=n_features) / count)
    return 1.0 / np.maximum(rms, 1.0)


def unit_rows(graph):
    """Each sample's values divided by its Euclidean length (xLearn's and libffm's default
    for factorization machines): an FM's output is quadratic in x, and on raw counts one
    AdaGrad step of every factor of a long document moved it by hundreds. Empty rows stay."""
    from tux2.graph import BipartiteGraph
    vals = np.ones(graph.num_edges) if graph.values is None else np.asarray(graph.values, np.float64)
    length = np.sqrt(np.bincount(graph.src, weights=vals * vals, minlength=graph.n_src))
    out = vals / np.where(length > 0, length, 1.0)[graph.src]
    return BipartiteGraph(graph.src, graph.dst, out, graph.n_src, graph.n_dst, graph.type_names, graph.source)


def centre(graph, share=0.5, weights=None):
    """The columns that at least ``share`` of the samples hold (dense columns: an age, a
    glucose level, a pixel), centred: x_ij − μ_j, μ_j the column's mean over all samples,
    their missing zeros made edges of value −μ_j. Returns (graph, μ) with μ_j = 0 for the
    other columns, or (graph, None) when none is dense. With an intercept b, training on
    x − μ and then taking b − μ·w is the same linear model; only the intercept's
    penalty (on b, now the centred one) and the conditioning differ: an uncentred column
    of values ~120 moves with the intercept, and AdaGrad's diagonal steps crawl along that
    valley (UCI breast cancer: 10 epochs ended at 0.26, the optimum is 0.11). A column
    that holds a sample twice (a duplicate feature kept) is left as it is. ``weights`` (per
    sample): μ_j is the weighted mean, each sample counted as often as it weighs."""
    from tux2.graph import BipartiteGraph
    n, d = graph.n_src, graph.n_dst
    if graph.values is None or not graph.num_edges:
        return graph, None
    src, dst, vals = graph.src, graph.dst, np.asarray(graph.values, np.float64)
    held = np.bincount(dst, minlength=d)
    dense = held >= max(share * n, 1)
    pick = np.flatnonzero(dense[dst])
    pick = pick[np.argsort(dst[pick], kind="stable")]            # the dense columns' edges, column by column
    ends = np.cumsum(held[dense])
    mu, new_src, new_dst = np.zeros(d), [], []
    for j, lo, hi in zip(np.flatnonzero(dense), ends - held[dense], ends):
        at = pick[lo:hi]
        has = np.zeros(n, bool)
        has[src[at]] = True
        if has.sum() < len(at):                  # a duplicate: shifting each copy would shift the sample twice
            continue
        mu[j] = vals[at].sum() / n if weights is None else (weights[src[at]] * vals[at]).sum() / weights.sum()
        missing = np.flatnonzero(~has)
        new_src.append(missing)
        new_dst.append(np.full(len(missing), j))
    if not mu.any():
        return graph, None
    out = np.concatenate([vals - mu[dst], -mu[np.concatenate(new_dst)]]) if new_dst else vals - mu[dst]
    return BipartiteGraph(np.concatenate([src, *new_src]).astype(src.dtype),
                          np.concatenate([dst, *new_dst]).astype(dst.dtype), out, n, d, graph.type_names,
                          graph.source), mu


def uncentred(W, mu, fm=False):
    """The weights (features + intercept, K) of the raw values from those of the values
    ``centre`` gave (μ: None for none): the intercept, last, less μ·w. ``fm``: W = (w, V)
    of a factorization machine whose last row is the constant feature (μ 0). Its pairwise
    term on x − μ is the raw one, ½(|s(x)|² − Σ|v_j|²x_j²) with s(x) = Σ v_j x_j, plus
    x_j (|v_j|² μ_j − v_j·s_μ) (s_μ = Σ v_j μ_j) and the constant ½(|s_μ|² − Σ|v_j|²μ_j²):
    V stays, w takes the linear part and the constant feature's weight the constant."""
    if W is None or mu is None:
        return W
    W = W.copy()
    if not fm:
        W[-1] -= mu @ W[:-1]
        return W
    w, V = W[:-1, 0].copy(), W[:, 1:]
    s = mu @ V[:-1]
    sq = (V[:-1] * V[:-1]).sum(axis=1)
    W[:, 0] -= V @ s
    W[:-1, 0] += sq * mu
    W[-1, 0] += 0.5 * (s @ s - sq @ (mu * mu)) - w @ mu
    return W


def mismatch(strategy, optimizer):
    """Why ``optimizer`` does not go with ``strategy``, or ''."""
    if optimizer in OPTIMIZERS and not (optimizer == "adam" and strategy in ("modelavg", "modelsum")) and \
            not (strategy == "adam" and optimizer != "adam"):
        return ""
    return (f"optimizer {optimizer!r} does not go with strategy {strategy!r}: sendgradient and column take "
            "'sgd', 'adagrad' or 'adam', adam takes 'adam', modelavg and modelsum take 'sgd' or 'adagrad'")


def program(labels, samples, features, values, n_samples, n_features, loss="logistic", reg="l2", lam=1e-6,
            strategy="sendgradient", batch=1000, eta=0.1, decay=0.0, classes=None, parts=1, evaluate=False,
            beta1=0.9, beta2=0.999, eps=1e-8, optimizer=None, factors=0, init_std=0.01, types=("sample", "feature"),
            epoch=0, weights=None, free=None):
    """A GLM program on edges (samples[i], features[i]) with values ``values``
    (sample ids already shuffled, see ``shuffle_samples``). ``parts`` is only used
    by the model-averaging strategies (local steps are P/B: each partition's
    mini-batch holds about B/P samples). ``evaluate`` adds a pass per epoch that
    puts f(W) in the context (``objective``, ``loss``, ``reg``, ``nnz``). ``factors``
    F > 0 makes it a factorization machine (binary losses; factors start as
    N(0, init_std²) draws of the engine's seed divided by max(1, the feature's largest
    |value|), the linear weights at 0). ``epoch``: the epochs trained before (a warm start), where
    the step schedule eta / (1 + decay t) goes on. ``weights``: each sample's weight s_i (by
    engine sample id; None: every s_i 1, and no weight field). ``free``: the feature whose weights
    are not penalised (the intercept's constant feature; None: every one is)."""
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if reg not in ("l1", "l2"):
        raise ValueError(f"reg must be 'l1' or 'l2', got {reg!r}")
    if lam < 0 or eta <= 0 or decay < 0:
        raise ValueError(f"need lam >= 0, eta > 0, decay >= 0; got {lam}, {eta}, {decay}")
    opt = optimizer or ("adam" if strategy == "adam" else "sgd")
    if mismatch(strategy, opt):
        raise ValueError(mismatch(strategy, opt))
    F = int(factors)
    if F < 0 or (F and loss == "softmax"):
        raise ValueError(f"a factorization machine needs factors >= 1 and a binary or squared loss, got {factors}, {loss!r}")
    y, K = labels_for(loss, labels, classes)
    if len(y) != n_samples:
        raise ValueError(f"{len(y)} labels for {n_samples} samples")
    B = int(batch or n_samples or 1)
    features = np.asarray(features, np.int64)
    # λ's weight per edge of each feature: n / n_j (the penalty spread over the samples holding it)
    pen = max(n_samples, 1) / np.maximum(np.bincount(features, minlength=n_features), 1).astype(np.float64)
    if free is not None:
        pen[free] = 0.0
    local = strategy in ("modelavg", "modelsum")
    wk = ("f8", K + F)                     # FM: (w_j, v_j1 … v_jF); K = 1
    sample = VertexType(types[0], sync={"d": wk}, master={"y": "f8", **({"s": "f8"} if weights is not None else {})},
                        accum={"m": ("f8", K + 2 * F)})
    fmaster = {"m1": wk, "m2": wk, "b1t": "f8", "b2t": "f8"} if opt == "adam" else {}
    flocal = {"pen": "f8"}
    if opt == "adagrad":                   # one-step: beside the master's weight; local: per replica
        (flocal if local else fmaster)["G"] = wk
    if weights is not None and len(weights) != n_samples:
        raise ValueError(f"{len(weights)} weights for {n_samples} samples")
    scale = feature_scale(features, values, n_features,
                          None if weights is None else np.asarray(weights, np.float64)[np.asarray(samples, np.int64)])
    if opt != "sgd":
        flocal["scale"] = "f8"
    feature = VertexType(types[1], sync={"w": wk}, master=fmaster, local=flocal,
                         accum={} if local else {"g": wk, "c": "f8"})
    ctx = ContextSpec(fields={"lam": "f8", "n": "f8", "batch": "f8", "eta": "f8", "decay": "f8", "rate": "f8",
                              "local_scale": "f8", "beta1": "f8", "beta2": "f8", "eps": "f8", "epoch": "f8",
                              "loss": "f8", "reg": "f8", "nnz": "f8", "objective": "f8"},
                      sum=("loss", "reg", "nnz"), state=("rate", "epoch"),
                      init={"lam": lam, "n": max(n_samples, 1), "batch": B, "eta": eta, "decay": decay, "epoch": float(epoch),
                            "rate": eta / (1.0 + decay * epoch),
                            "local_scale": max(int(parts), 1) / B, "beta1": beta1, "beta2": beta2, "eps": eps})

    def init_vertices(name, data, rng):
        if name == types[0]:
            data["y"] = y
            if weights is not None:
                data["s"] = weights
        else:
            data["pen"] = pen
            if opt != "sgd":
                data["scale"] = scale
            if F:
                # in a feature's units, as the steps: v_j x_j starts as N(0, init_std²) x_j / s_j
                data["w"][:, 1:] = rng.normal(0.0, init_std, (len(data), F)) * scale[:, None]
            if opt == "adam":
                data["b1t"], data["b2t"] = 1.0, 1.0

    margin_x, deriv, grad, loss_f = ((fm_margin, FM_DERIVATIVE[loss], fm_gradient, FM_LOSS[loss]) if F else
                                     (margin, DERIVATIVE[loss], gradient, LOSS[loss]))
    if weights is not None:
        deriv, loss_f = weighted_derivative(deriv, 1 if F else K), weighted_loss(loss_f)
    if local:
        step = {(0, "sgd", "l2"): local_step_l2, (0, "sgd", "l1"): local_step_l1,
                (0, "adagrad", "l2"): local_adagrad_l2, (0, "adagrad", "l1"): local_adagrad_l1,
                (1, "sgd", "l2"): fm_local_step_l2, (1, "sgd", "l1"): fm_local_step_l1,
                (1, "adagrad", "l2"): fm_local_adagrad_l2, (1, "adagrad", "l1"): fm_local_adagrad_l1}[bool(F), opt, reg]
        mb = MiniBatch(B, [Exchange(margin_x, writes=types[0]), Apply(deriv, types=types[0]),
                           Exchange(step, writes=types[1])], unit="vertex", enumerate=types[0])
        stages = [mb, Apply(combine="mean" if strategy == "modelavg" else "sum", types=types[1],
                            overlap="allow")]          # modelsum: the replicas' local models add up
    else:
        update = {("sgd", "l2"): sgd_l2, ("sgd", "l1"): sgd_l1, ("adam", "l2"): adam_l2,
                  ("adam", "l1"): adam_l1, ("adagrad", "l2"): adagrad_l2, ("adagrad", "l1"): adagrad_l1}[opt, reg]
        mb = MiniBatch(B, [Exchange(margin_x, writes=types[0]), Apply(deriv, types=types[0]),
                           Exchange(grad, writes=types[1]), Apply(update, types=types[1])],
                       unit="vertex", enumerate=types[0])
        stages = [mb]
    if evaluate:
        stages += [Exchange(margin_x, enumerate=types[0], writes=types[0], name="eval_margin"),
                   Apply(loss_f, types=types[0], name="eval_loss"),
                   GlobalSync(aggregate=regulariser_l2 if reg == "l2" else regulariser_l1, over=types[1],
                              finalize=objective)]
    else:
        stages += [GlobalSync(finalize=next_epoch)]
    return Program((sample, feature), edge={"x": "f8"}, context=ctx, stages=stages,
                   init_vertices=init_vertices,
                   name=f"{'fm' if F else 'glm'}-{loss}-{strategy}{'-weighted' if weights is not None else ''}")


def partitioning(strategy):
    """(partitioner, options) of a strategy: rows (samples mirror-free) or columns."""
    if strategy == "column":
        return "bicut", {"favorite": 1}
    return "bicut", {"favorite": 0}


def setup(graph, labels, loss="logistic", strategy="sendgradient", parts=1, driver=False, seed=0, weights=None,
          **options):
    """Shuffle the samples and build the strategy's program and partitioning:
    (program, graph, assignment, edge data, perm) with perm[old sample id] = engine
    sample id. ``weights``: the samples' weights (None: 1 each)."""
    from tux2 import partitioning as parting
    from tux2.graph import BipartiteGraph
    samples, perm = shuffle_samples(graph.src, graph.n_src, seed=seed)
    y = np.empty(graph.n_src)
    y[perm] = np.asarray(labels, np.float64)
    s = None
    if weights is not None:
        s = np.empty(graph.n_src)
        s[perm] = np.asarray(weights, np.float64)
    prog = program(y, samples, graph.dst, graph.values, graph.n_src, graph.n_dst, loss=loss, strategy=strategy,
                   parts=parts, weights=s, **options)
    g = BipartiteGraph(samples, graph.dst, None, graph.n_src, graph.n_dst, tuple(t.name for t in prog.types))
    name, opts = partitioning(strategy)
    assignment = parting.partition(name, g.src, g.dst, g.n_src, g.n_dst, parts, seed=seed, strict=False, **opts)
    if driver:
        if strategy != "sendgradient":
            raise ValueError("driver=True (every feature master on partition 0) is MLlib's sendgradient")
        assignment.master[1][:] = 0
    edata = np.zeros(graph.num_edges, prog.edge_dtype)
    edata["x"] = np.asarray(graph.values, np.float64) if graph.values is not None else np.ones(graph.num_edges)
    return prog, g, assignment, edata, perm


def engine(graph, labels, loss="logistic", strategy="sendgradient", parts=1, driver=False, seed=0,
           transport=None, slack=0, threads=None, **options):
    """``setup``'s program on an Engine: (Engine, perm)."""
    from tux2.engine import Engine
    prog, g, assignment, edata, perm = setup(graph, labels, loss, strategy, parts, driver, seed, **options)
    return Engine(prog, g, partitions=parts, assignment=assignment, seed=seed, edge_data=edata,
                  transport=transport, slack=slack, threads=threads), perm


def weights(eng):
    """The model as an (n_features, K) array (gathered on rank 0; None elsewhere)."""
    fd = eng.vertex_data(eng.program.types[1].name)
    return None if fd is None else np.asarray(fd["w"]).reshape(len(fd), -1)


# ---------------------------------------------------------------- references (numpy)
def scores(W, X):
    """Margins X·W, (n, K)."""
    return np.asarray(X @ np.asarray(W).reshape(X.shape[1], -1))


def fm_scores(W, X):
    """A factorization machine's outputs, (n, 1): W = (w, V) as (d, 1 + F)."""
    W = np.asarray(W).reshape(X.shape[1], -1)
    S = np.asarray(X @ W[:, 1:])
    Q = np.asarray(X.multiply(X) @ (W[:, 1:] ** 2))
    return (np.asarray(X @ W[:, 0]) + 0.5 * (S * S - Q).sum(axis=1))[:, None]


def graph_scores(W, graph, fm=False):
    """Scores (n, K) of every sample of a graph (a libsvm file read as samples ×
    features) under W; features beyond W's rows count as 0."""
    import scipy.sparse as sp
    W = np.asarray(W, np.float64)
    W = W.reshape(len(W), -1)
    keep = graph.dst < len(W)
    vals = graph.values[keep] if graph.values is not None else np.ones(int(keep.sum()))
    X = sp.csr_matrix((vals, (graph.src[keep], graph.dst[keep])), shape=(graph.n_src, len(W)))
    return fm_scores(W, X) if fm else scores(W, X)


def classification_metrics(score, labels, loss="logistic", weights=None):
    """accuracy, mean log-loss and ROC AUC of scores x·w against labels ±1 / 0/1; for the
    ``hinge`` loss, whose scores are no probabilities, the mean hinge loss in place of the
    log-loss (scikit-learn's hinge_loss). ``weights``: each sample counted as often as it
    weighs (scikit-learn's ``sample_weight``; the AUC's pairs weigh w_pos · w_neg)."""
    y = np.asarray(labels) > 0
    margin = np.where(y, 1.0, -1.0) * score
    s = None if weights is None else np.asarray(weights, np.float64)
    some = len(y) and (s is None or s.sum() > 0)
    with np.errstate(invalid="ignore"):           # a NaN score: a NaN loss, as the AUC below, no warning
        ell = np.maximum(0.0, 1.0 - margin) if loss == "hinge" else np.logaddexp(0.0, -margin)
        mean_loss = float(np.average(ell, weights=s)) if some else float("nan")
    acc = float(np.average((score > 0) == y, weights=s)) if some else float("nan")
    auc = float("nan")
    if s is not None:
        if (s[y] > 0).any() and (s[~y] > 0).any() and not np.isnan(score).any():
            auc = weighted_auc(score, y, s)
    elif y.any() and not y.all() and not np.isnan(score).any():
        pos, neg = int(y.sum()), int((~y).sum())
        r = average_ranks(score)
        auc = float((r[y].sum() - pos * (pos + 1) / 2) / (pos * neg))
    return {"accuracy": acc, "hinge_loss" if loss == "hinge" else "logloss": mean_loss, "auc": auc}


def weighted_auc(score, positive, weights):
    """ROC AUC with each sample weighing ``weights`` (scikit-learn's roc_auc_score with
    sample_weight): Σ over (positive, negative) pairs of w_p w_n [s_p > s_n] (½ for a tie),
    over (Σ w_p)(Σ w_n)."""
    order = np.argsort(score, kind="stable")
    xs, pos, w = np.asarray(score)[order], positive[order], weights[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])     # runs of equal scores
    wp = np.add.reduceat(np.where(pos, w, 0.0), starts)
    wn = np.add.reduceat(np.where(pos, 0.0, w), starts)
    below = np.cumsum(wn) - wn                                   # negative weight under each run
    return float((wp * (below + 0.5 * wn)).sum() / (wp.sum() * wn.sum()))


def average_ranks(x):
    """1-based ranks of ``x``, equal values sharing their mean rank (scipy.stats.rankdata's
    default, without importing scipy.stats: ~1 s of a warm run's start)."""
    order = np.argsort(x, kind="stable")
    xs = np.asarray(x)[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])     # runs of equal values
    ends = np.r_[starts[1:], len(xs)]
    ranks = np.empty(len(xs))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def regression_metrics(pred, target, weights=None):
    """RMSE, MAE and R² (1 − Σ(ŷ − y)² / Σ(y − ȳ)², scikit-learn's r2_score; NaN when y
    is constant) of predictions against real targets; each sample ``weights`` times (the
    weighted means, as scikit-learn's ``sample_weight``)."""
    pred, target = np.asarray(pred, np.float64), np.asarray(target, np.float64)
    if not len(target):
        return {"rmse": float("nan"), "mae": float("nan"), "r2": float("nan")}
    s = None if weights is None else np.asarray(weights, np.float64)
    r = pred - target
    mean = lambda x: np.average(x, weights=s)       # noqa: E731 (np.mean without weights)
    total = float(np.sum(np.square(target - mean(target)) * (1.0 if s is None else s)))
    with np.errstate(invalid="ignore", over="ignore"):
        return {"rmse": float(np.sqrt(mean(r * r))), "mae": float(mean(np.abs(r))),
                "r2": 1.0 - float(np.sum(r * r * (1.0 if s is None else s))) / total if total > 0 else float("nan")}


def score_metrics(M, labels, loss, weights=None):
    """accuracy and log-loss, or hinge loss, (binary: and AUC) of scores M (n, K) against
    labels; RMSE, MAE and R² of predictions M (n, 1) against targets for ``squared``;
    ``weights``: each sample counted as often as it weighs (None: once)."""
    if loss == "squared":
        return regression_metrics(M[:, 0], labels, weights)
    if loss != "softmax":
        return classification_metrics(M[:, 0], labels, loss, weights)
    y = np.asarray(labels, np.int64)
    s = None if weights is None else np.asarray(weights, np.float64)
    top = M.max(axis=1)
    lse = top + np.log(np.exp(M - top[:, None]).sum(axis=1))
    inside = (y < M.shape[1]) & (True if s is None else s > 0)
    ll = float(np.average(lse[inside] - M[np.flatnonzero(inside), y[inside]], weights=None if s is None else
                          s[inside])) if inside.any() else float("nan")
    return {"accuracy": float(np.average(M.argmax(axis=1) == y, weights=s)) if len(y) and (s is None or s.sum() > 0)
            else float("nan"), "logloss": ll}


def softmax(M):
    """Row-wise softmax of scores M (n, K): class probabilities."""
    P = np.exp(M - M.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True)


def objective_value(W, X, y, loss="logistic", reg="l2", lam=1e-6, fm=False, weights=None, free=None):
    """f(W) for a scipy.sparse X: the reference the programs are checked against
    (``fm``: W = (w, V) of a factorization machine; ``weights``: each sample's s_i; ``free``:
    the row of W that R leaves out, an intercept's)."""
    M = fm_scores(W, X) if fm else scores(W, X)
    W = np.asarray(W).reshape(X.shape[1], -1)
    if loss == "softmax":
        y = np.asarray(y, np.int64)
        top = M.max(axis=1)
        data = top + np.log(np.exp(M - top[:, None]).sum(axis=1)) - M[np.arange(len(y)), y]
    elif loss == "squared":
        data = 0.5 * np.square(M[:, 0] - np.asarray(y, np.float64))
    else:
        ys = np.where(np.asarray(y) > 0, 1.0, -1.0)
        m = M[:, 0]
        data = np.logaddexp(0.0, -ys * m) if loss == "logistic" else np.maximum(0.0, 1.0 - ys * m)
    P = penalised(W, free)
    r = 0.5 * float((P * P).sum()) if reg == "l2" else float(np.abs(P).sum())
    if weights is not None:
        data = data * np.asarray(weights, np.float64)
    return float(data.mean()) + lam * r


def zero_objective(loss="logistic", classes=2, targets=None, weights=None):
    """f(0), the objective of the all-zero model (every score 0, no penalty): ln 2 per
    sample for logistic, 1 for hinge, ln K for softmax over K ``classes`` (an FM with
    w = 0 and V = 0 scores 0 too), ½ mean(y²) of the ``targets`` for squared; each sample
    ``weights`` times (the mean weight times as much for the others). A trained
    model above it has learned less than nothing."""
    if loss == "squared":
        if targets is None or not len(targets):
            return 0.0
        sq = np.square(targets)
        return 0.5 * float(np.mean(sq if weights is None else sq * weights))
    mean = 1.0 if weights is None or not len(weights) else float(np.mean(weights))
    return mean * {"logistic": math.log(2.0), "hinge": 1.0, "softmax": math.log(classes)}[loss]


def zero_loss(loss, labels, classes=2, weights=None):
    """Σ s_i ℓ(0, y_i) over ``labels`` (``weights`` s_i; None: 1): the loss of samples whose every
    score is 0 (samples without features, which the evaluation pass's Exchange and Apply never reach)."""
    y = np.asarray(labels, np.float64)
    s = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
    if loss == "squared":
        return 0.5 * float((s * np.square(y)).sum())
    return float(s.sum()) * {"logistic": math.log(2.0), "hinge": 1.0, "softmax": math.log(max(classes, 2))}[loss]


def penalised(W, free=None):
    """W (d, K) with row ``free`` (the intercept's; None: none) zeroed: the weights R covers."""
    if free is None:
        return W
    P = np.array(W, np.float64)
    P[free] = 0.0
    return P


def gradient_value(W, X, y, loss="logistic", reg="l2", lam=1e-6, fm=False, free=None):
    """∇f(W) (a subgradient for hinge and l1), (d, K): the reference (``free`` as objective_value's)."""
    M = fm_scores(W, X) if fm else scores(W, X)
    W = np.asarray(W).reshape(X.shape[1], -1)
    n = X.shape[0]
    if loss == "softmax":
        D = softmax(M)
        D[np.arange(n), np.asarray(y, np.int64)] -= 1.0
    elif loss == "squared":
        D = (M[:, 0] - np.asarray(y, np.float64))[:, None]
    else:
        ys = np.where(np.asarray(y) > 0, 1.0, -1.0)
        m = M[:, 0]
        D = (-ys / (1.0 + np.exp(ys * m)) if loss == "logistic" else np.where(ys * m < 1.0, -ys, 0.0))[:, None]
    if fm:                                 # ∂ŷ_i/∂w_j = x_ij, ∂ŷ_i/∂v_jf = x_ij s_if − v_jf x_ij²
        S = np.asarray(X @ W[:, 1:])
        Gv = (np.asarray(X.T @ (D * S)) - np.asarray(X.multiply(X).T @ D) * W[:, 1:]) / n
        G = np.column_stack([np.asarray(X.T @ D) / n, Gv])
    else:
        G = np.asarray(X.T @ D) / n
    P = penalised(W, free)
    return G + lam * (P if reg == "l2" else np.sign(P))
