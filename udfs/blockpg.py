"""L1-regularised logistic regression by block proximal gradient (paper §4, Fig. 7;
Li, Andersen, Smola 2013/2014).

    minimise  f(w) = Σ_i log(1 + exp(−y_i x_i·w)) + λ ‖w‖₁      (y_i ∈ {−1, +1})

which is liblinear's L1 objective with C = 1/λ. Samples (type 0) hold their label
and margin m_i = x_i·w; features (type 1) hold the weight. Features are shuffled
into blocks (``shuffle_features``) and each block is a mini-batch, one clock:

* Exchange0: each edge adds its share of the gradient g_j = Σ_i −y_i x_ij σ(−y_i m_i)
  and of the diagonal curvature h_j = Σ_i x_ij² σ(m_i)σ(−m_i), times κ_ij, the number
  of the sample's features in this block (a separable upper bound of the block's
  curvature, so a whole block can move at once and f still decreases);
* Apply at the feature masters: the proximal Newton step
  w_j ← S(w_j − g_j/h_j, λ/h_j) with S the soft threshold; ``w`` (with ``moved``, the
  epoch it last changed, and ``skip``) is synced;
* Exchange1: margins follow the weight deltas, from the features that moved (its
  ``active=moved``: in the first epoch ~3% of them; the edges of the rest are not
  read). Each edge remembers the weight it last folded into its sample's margin
  (``e.ws``), so the margin is exact even when a replica saw a new weight late
  (slack > 0): it catches up on its next visit, the gradient's included;
* GlobalSync after the last block: loss over samples, ‖w‖₁ over features, f.

Shrinking (as liblinear's CDN): a feature that stays at 0 with |g_j| < shrink·λ is
far inside its subgradient; it sits out the next ``rest`` epochs (``skip``, a sync
field, names the epoch it returns), and the MiniBatch's ``active`` predicate drops
its edges from both Exchanges. Two thirds of the edges of a typical sparse problem
belong to such features. Every feature is examined at least every rest + 1 epochs,
so the fixed point is the same as without shrinking (``shrink=0``).

``form="newton"`` (``newton_program``, below) replaces the κ bound with one proximal
Newton step per epoch (newGLMNET); it converges on raw counts, where κ is loose.

Samples are the favourite (mirror-free) side; with another partitioner their
margins are synced at an Apply over samples, so every partitioning gives the
same iterates at slack 0.
"""
import math

import numpy as np
from numba import njit

from tux2.compile import empty, group_by_part, in_threads, is_sorted
from tux2.config import cores
from tux2.program import Program
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch


def gradient(u, v, e, a_u, a_v, ctx):
    if e.ws != v.w:                              # a weight change not yet in this margin
        u.m += e.x * (v.w - e.ws)
        e.ws = v.w
    p = 1.0 / (1.0 + math.exp(u.y * u.m))        # σ(−y m)
    a_v.g -= u.y * e.x * p
    a_v.h += e.x * e.x * p * (1.0 - p) * e.kappa


def active(v, ctx):
    return v.skip <= ctx.epoch


def moved(v, ctx):
    return v.moved == ctx.epoch                  # its weight changed at this clock's proximal step


def proximal(v, a, ctx):
    if v.skip > ctx.epoch:                       # sitting out: a late mirror's share (slack > 0) is dropped
        return
    h = a.h + ctx.h_min
    z = v.w - a.g / h
    t = ctx.lam / h
    w = 0.0
    if z > t:
        w = z - t
    elif z < -t:
        w = z + t
    elif v.w == 0.0 and abs(a.g) < ctx.shrink * ctx.lam:
        v.skip = ctx.epoch + 1 + ctx.rest        # well inside the subgradient: shrink it for a while
    if w != v.w:
        v.moved = ctx.epoch
    v.w = w


def margins(u, v, e, a_u, a_v, ctx):
    if e.ws != v.w:
        u.m += e.x * (v.w - e.ws)
        e.ws = v.w


def loss(u, ctx):
    z = -u.y * u.m                                # log(1 + e^z), stable
    ctx.loss += z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))


def keep_loss(ctx):
    ctx.loss_total = ctx.loss                     # sum fields restart at every GlobalSync


def l1(v, ctx):
    ctx.l1 += abs(v.w)
    if v.w != 0.0:
        ctx.nnz += 1


def objective(ctx):
    ctx.objective = ctx.loss_total + ctx.lam * ctx.l1
    ctx.epoch += 1


def shuffle_features(features, n_features, seed=0, threads=None):
    """Random relabelling of feature ids, so contiguous id ranges are random blocks.
    Returns (new ids for ``features``, perm) with new id = perm[old id]; ranges of the
    edges in ``threads`` threads (default: the cores)."""
    perm = np.random.default_rng(seed).permutation(n_features)
    if n_features < 2**31:                      # int32 ids: half the bytes to move in the layout
        perm = perm.astype(np.int32)
    ids = np.asarray(features)
    out = empty(len(ids), perm.dtype)
    cuts = _cuts(len(ids), threads)
    in_threads(len(cuts) - 1, lambda t: _relabel(perm, ids, cuts[t], cuts[t + 1], out))
    return out, perm


def _cuts(m, threads=None, at=None):
    """Where ``threads`` (default: the cores; one below 2^20 items) ranges of m items
    start, plus m; with ``at`` (sorted keys), moved forward to where a key starts."""
    t = 1 if m < 1 << 20 else max(1, int(threads or cores()))
    cuts = [m * k // t for k in range(t + 1)]
    if at is not None:
        cuts = [0, *(int(np.searchsorted(at, at[c])) for c in cuts[1:-1]), m]
    return cuts


@njit(cache=True, nogil=True)
def _relabel(perm, ids, lo, hi, out):
    """out[e] = perm[ids[e]] for e in [lo, hi)."""
    n = perm.shape[0]
    for e in range(lo, hi):
        v = ids[e]
        if v < 0 or v >= n:
            raise IndexError("feature id out of range")
        out[e] = perm[v]


def block_counts(samples, features, block_size, threads=None):
    """κ per edge: how many of its sample's features fall in its feature's block.
    Edges grouped by sample (a CSR/libsvm input) go in ranges of whole samples, in
    ``threads`` threads (default: the cores)."""
    samples, features = np.asarray(samples), np.asarray(features)
    if not len(samples):
        return np.zeros(0, np.float32)
    size, n = int(block_size), int(samples.max()) + 1
    n_blocks = int(features.max()) // size + 1
    if not is_sorted(samples):
        return _block_counts(samples, features, size, n, n_blocks)
    out = empty(len(samples), np.float32)
    cuts = _cuts(len(samples), threads, at=samples)
    in_threads(len(cuts) - 1, lambda t: _grouped_block_counts(samples, features, size, n_blocks, cuts[t],
                                                         cuts[t + 1], out))
    return out


@njit(cache=True, nogil=True)
def _grouped_block_counts(samples, features, size, n_blocks, lo, hi, out):
    """κ for edges [lo, hi), grouped by sample (whole samples): per sample a tally
    per block. ``out`` doubles as the store of each edge's block between the two
    passes over a sample, and a stamp per block replaces clearing the tally."""
    keep = n_blocks < 2**31                      # blocks fit the output's 4 bytes (else: divide again)
    block = out.view(np.int32)
    tally = np.zeros(n_blocks, np.int64)
    stamp = np.full(n_blocks, -1, np.int64)
    a = lo
    while a < hi:
        i = samples[a]
        b_end = a
        while b_end < hi and samples[b_end] == i:
            b_end += 1
        for e in range(a, b_end):
            b = features[e] // size
            if keep:
                block[e] = b
            if stamp[b] != i:
                stamp[b] = i
                tally[b] = 0
            tally[b] += 1
        for e in range(a, b_end):
            out[e] = tally[block[e] if keep else features[e] // size]
        a = b_end


@njit(cache=True, nogil=True)
def _block_counts(samples, features, size, n, n_blocks):
    """κ for edges in any order: grouped by sample first (a counting sort)."""
    m = samples.shape[0]
    by_sample, start = group_by_part(samples, n)
    out = np.empty(m, np.float32)
    tally = np.zeros(n_blocks, np.int64)
    for i in range(n):
        for k in range(start[i], start[i + 1]):
            tally[features[by_sample[k]] // size] += 1
        for k in range(start[i], start[i + 1]):
            out[by_sample[k]] = tally[features[by_sample[k]] // size]
        for k in range(start[i], start[i + 1]):
            tally[features[by_sample[k]] // size] = 0
    return out


def _inputs(labels, values, samples, features, n_features, lam, block_size, shrink, rest, kappa=None):
    """Checked labels as ±1, the block size, κ per edge for it (``kappa`` when given), the values."""
    y = np.asarray(labels, np.float64)
    if len(y) and not np.isin(y, (-1.0, 0.0, 1.0)).all():
        bad = y[~np.isin(y, (-1.0, 0.0, 1.0))][0]
        raise ValueError(f"BlockPG is binary: labels must be ±1 or 0/1, got {bad:g}")
    if lam < 0:
        raise ValueError(f"λ must be >= 0, got {lam}")
    if not 0 <= shrink < 1 or int(rest) != rest or rest < 0:
        raise ValueError(f"shrink must be in [0, 1) and rest a whole number >= 0, got {shrink}, {rest}")
    size = int(block_size or n_features or 1)
    kappa = block_counts(samples, features, size) if kappa is None else kappa
    return np.where(y > 0, 1.0, -1.0), size, kappa, np.asarray(values, np.float64)


def even_rows(samples, values, n_samples):
    """Whether every sample's values are equal in size (0/1 and one-hot rows, or such rows
    scaled, as 1/√nnz): the setting where κ, a count, is the bound's natural weight. Where
    a sample's values differ (unscaled columns, tf-idf, counts) it is loose for the large
    ones."""
    if values is None or not len(values):
        return True
    a = np.abs(np.asarray(values, np.float64))
    top = np.zeros(n_samples)
    np.maximum.at(top, samples, a)
    return bool(np.all(a == top[samples]))


INNER = 10          # the newton form's coordinate-descent sweeps per epoch (a proximal Newton step)


def program(labels, values, samples, features, n_features, lam=1.0, block_size=None, h_min=1e-12,
            shrink=0.9, rest=2, types=("sample", "feature"), form="kappa", inner=INNER, kappa=None, start=None):
    """BlockPG on edges (samples[i], features[i]) with values ``values`` (feature ids
    already shuffled, see ``shuffle_features``); ``labels`` ±1 (0/1 accepted) per sample.
    ``form``: "kappa" (blocks of ``block_size`` under the κ bound, above) or "newton"
    (``newton_program``: one proximal Newton step per epoch, ``inner`` sweeps over
    blocks of ``block_size`` on its quadratic model, a line search). ``kappa``: κ per
    edge for ``block_size``, when the caller has it (``block_counts``); ``start``: the weights
    to begin at, by (shuffled) feature id (a warm start; default 0), the margins and the
    edges' folded weights made to match."""
    if form not in ("kappa", "newton"):
        raise ValueError(f"BlockPG form must be 'kappa' or 'newton', got {form!r}")
    if form == "newton":
        return newton_program(labels, values, samples, features, n_features, lam, block_size or 1, inner, h_min,
                              shrink, rest, types, start)
    y, size, kappa, x = _inputs(labels, values, samples, features, n_features, lam, block_size, shrink, rest, kappa)
    vt = [VertexType(types[0], sync={"m": "f8"}, master={"y": "f8"}, accum={}),
          VertexType(types[1], sync={"w": "f8", "skip": "i4", "moved": "i4"}, accum={"g": "f8", "h": "f8"})]
    ctx = ContextSpec(fields={"lam": "f8", "h_min": "f8", "loss": "f8", "l1": "f8", "nnz": "f8",
                              "loss_total": "f8", "objective": "f8", "shrink": "f8", "rest": "i4",
                              "epoch": "i4"},
                      sum=("loss", "l1", "nnz"), init={"lam": lam, "h_min": h_min, "shrink": shrink, "rest": rest})

    w, m, ws = _started(start, x, samples, features, len(y), n_features)

    def init_vertices(name, data, rng):
        if name == types[0]:
            data["y"], data["m"] = y, m
        else:
            data["moved"], data["w"] = -1, w     # (epochs count from 0)

    block = MiniBatch(size, [Exchange(gradient), Apply(proximal, types=(types[1],)),
                             Exchange(margins, writes=types[0], active=moved),
                             Apply(types=(types[0],), overlap="allow")],       # partial margins add up
                      unit="vertex", enumerate=types[1], active=active)
    stages = [block, GlobalSync(aggregate=loss, over=types[0], finalize=keep_loss),
              GlobalSync(aggregate=l1, over=types[1], finalize=objective)]
    return Program(vt, edge={"x": "f8", "ws": "f8", "kappa": "f4"}, context=ctx, stages=stages,
                   init_vertices=init_vertices, edge_values={"x": x, "kappa": kappa, **({} if ws is None else {"ws": ws})},
                   name="blockpg")


def _started(start, x, samples, features, n_samples, n_features):
    """(weights, margins X·w, each edge's weight as folded into its margin) to begin at:
    zeros (the edges' then left to the layout's zeros), or a warm start's ``start``."""
    if start is None:
        return 0.0, 0.0, None
    w = np.asarray(start, np.float64)
    if w.shape != (n_features,):
        raise ValueError(f"BlockPG's start weights must be one per feature, shape ({n_features},); got {w.shape}")
    ws = w[np.asarray(features)]
    return w, np.bincount(np.asarray(samples), x * ws, minlength=n_samples), ws


# ---- form="newton": newGLMNET's proximal Newton step (Yuan, Ho, Lin 2012), one per epoch.
# The κ bound above is loose on raw term counts; the exact sequential coordinate steps
# (blocks of 1) are tight but need ~100 epochs on text, as correlated frequent words
# slow any coordinate method. One epoch here: the gradient and D_i = σ(1−σ) at fresh
# margins; ``inner`` sweeps of coordinate descent on the quadratic model
#     q(d) = ∇L·d + ½ dᵀXᵀDXd + λ‖w + d‖₁
# with trial weights wt = w + d at the features and t = X·wt at the samples (so
# t − m = X d), which cost no exp; a line search over α = 1, ½, … on f(w + α d);
# and the step, folded into the margins. Blocks of 1 feature make the sweeps exact
# coordinate descent; larger blocks (for many workers) use κ as above.
TRIALS = 8                                        # α = 1, ½, …, 2^−7


def newton_gradient(u, v, e, a_u, a_v, ctx):
    p = 1.0 / (1.0 + math.exp(u.y * u.m))        # margins are exact: the last epoch's step was folded
    u.D = p * (1.0 - p)                          # a local field: every replica computes the same
    a_v.g -= u.y * e.x * p
    a_v.h += e.x * e.x * u.D * e.kappa


def newton_start(v, a, ctx):
    if v.skip > ctx.epoch:
        return
    v.grad = a.g
    v.hd = a.h + ctx.h_min
    if v.w == 0.0 and abs(a.g) < ctx.shrink * ctx.lam:
        v.skip = ctx.epoch + 1 + ctx.rest        # as in the κ form: sits out this epoch and ``rest`` more


def model_gradient(u, v, e, a_u, a_v, ctx):
    a_v.g += u.D * e.x * (u.t - u.m)             # ∂q/∂d_j − ∇L_j = Σ_i D_i x_ij (X d)_i


def model_step(v, a, ctx):
    if v.skip > ctx.epoch:
        return
    g = v.grad + a.g
    wt = v.wt
    z = -wt                                      # the coordinate minimiser of q, soft-thresholded
    if g + ctx.lam <= v.hd * wt:
        z = -(g + ctx.lam) / v.hd
    elif g - ctx.lam >= v.hd * wt:
        z = -(g - ctx.lam) / v.hd
    v.wt = wt + z


def trial_margins(u, v, e, a_u, a_v, ctx):
    if e.ts != v.wt:
        u.t += e.x * (v.wt - e.ts)
        e.ts = v.wt


def trial_loss(u, ctx):
    for k in range(TRIALS):
        z = -u.y * (u.m + 0.5 ** k * (u.t - u.m))
        ctx.trial_loss[k] += z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
    z = -u.y * u.m
    ctx.loss += z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))


def keep_trial_loss(ctx):
    ctx.loss_total = ctx.loss
    for k in range(TRIALS):
        ctx.trial_kept[k] = ctx.trial_loss[k]


def trial_l1(v, ctx):
    d = v.wt - v.w
    ctx.l1 += abs(v.w)
    if v.w != 0.0:
        ctx.nnz += 1
    ctx.decrease += v.grad * d + ctx.lam * (abs(v.wt) - abs(v.w))
    for k in range(TRIALS):
        w = v.w + 0.5 ** k * d
        ctx.trial_l1[k] += abs(w)
        if w != 0.0:
            ctx.trial_nnz[k] += 1


def line_search(ctx):
    """Armijo (σ = 0.01) as newGLMNET: the largest α with f(w + αd) − f(w) ≤ σ α Δ,
    Δ = ∇L·d + λ(‖w + d‖₁ − ‖w‖₁); none (only on a direction of no descent): α = 0."""
    f0 = ctx.loss_total + ctx.lam * ctx.l1
    ctx.alpha = 0.0
    ctx.objective = f0
    for k in range(TRIALS):
        f = ctx.trial_kept[k] + ctx.lam * ctx.trial_l1[k]
        if f - f0 <= 0.01 * 0.5 ** k * ctx.decrease:
            ctx.alpha = 0.5 ** k
            ctx.objective = f
            ctx.loss_total = ctx.trial_kept[k]
            ctx.l1 = ctx.trial_l1[k]
            ctx.nnz = ctx.trial_nnz[k]
            break
    ctx.epoch += 1


def take_step(u, v, e, a_u, a_v, ctx):
    if v.wt != v.w:                              # the same on every replica and edge: a second visit keeps it
        v.w = v.w + ctx.alpha * (v.wt - v.w)
        v.wt = v.w
    if e.ws != v.w:
        u.m += e.x * (v.w - e.ws)
        e.ws = v.w
    if e.ts != v.wt:
        u.t += e.x * (v.wt - e.ts)
        e.ts = v.wt


def newton_program(labels, values, samples, features, n_features, lam=1.0, block_size=1, inner=INNER, h_min=1e-12,
                   shrink=0.9, rest=2, types=("sample", "feature"), start=None):
    """BlockPG's form="newton" (see above): ``inner`` sweeps per epoch over blocks of
    ``block_size`` features. Every stage accumulates, then applies (the step's direct
    writes are the same on all replicas, so they are averaged), so any partitioning
    gives the one-partition iterates up to summation order. Meant for slack 0: the
    gradient pass takes the margins as exact, which a late replica's step breaks."""
    y, size, kappa, x = _inputs(labels, values, samples, features, n_features, lam, block_size, shrink, rest)
    if int(inner) != inner or inner < 1:
        raise ValueError(f"inner sweeps must be a whole number >= 1, got {inner}")
    vt = [VertexType(types[0], sync={"m": "f8", "t": "f8"}, master={"y": "f8"}, local={"D": "f8"}, accum={}),
          VertexType(types[1], sync={"w": "f8", "wt": "f8", "skip": "i4"}, master={"grad": "f8", "hd": "f8"},
                     accum={"g": "f8", "h": "f8"})]
    ctx = ContextSpec(fields={"lam": "f8", "h_min": "f8", "shrink": "f8", "rest": "i4", "epoch": "i4",
                              "loss": "f8", "l1": "f8", "nnz": "f8", "decrease": "f8", "loss_total": "f8",
                              "objective": "f8", "alpha": "f8", "trial_loss": ("f8", TRIALS),
                              "trial_kept": ("f8", TRIALS), "trial_l1": ("f8", TRIALS), "trial_nnz": ("f8", TRIALS)},
                      sum=("loss", "l1", "nnz", "decrease", "trial_loss", "trial_l1", "trial_nnz"),
                      init={"lam": lam, "h_min": h_min, "shrink": shrink, "rest": rest})
    sweep = MiniBatch(size, [Exchange(model_gradient, writes=types[1]), Apply(model_step, types=(types[1],)),
                             Exchange(trial_margins, writes=types[0]), Apply(types=(types[0],), overlap="allow")],
                      unit="vertex", enumerate=types[1], shuffle=True,    # a fixed order is 4x slower on text
                      active=active)            # shrunk features' steps are 0: their edges are skipped
    stages = [MiniBatch(None, [Exchange(newton_gradient, writes=types[1]), Apply(newton_start, types=(types[1],))],
                        unit="vertex", enumerate=types[1], active=active),
              *[sweep] * int(inner),
              GlobalSync(aggregate=trial_loss, over=types[0], finalize=keep_trial_loss),
              GlobalSync(aggregate=trial_l1, over=types[1], finalize=line_search),
              MiniBatch(None, [Exchange(take_step), Apply(types=(types[1],), combine="mean", overlap="allow"),
                               Apply(types=(types[0],), overlap="allow")],
                        unit="vertex", enumerate=types[1], active=active)]

    w, m, ws = _started(start, x, samples, features, len(y), n_features)

    def init_vertices(name, data, rng):
        if name == types[0]:
            data["y"], data["m"], data["t"] = y, m, m
        else:
            data["w"], data["wt"] = w, w

    return Program(vt, edge={"x": "f8", "ws": "f8", "ts": "f8", "kappa": "f4"}, context=ctx, stages=stages,
                   init_vertices=init_vertices, edge_values={"x": x, "kappa": kappa, **({} if ws is None else {"ws": ws, "ts": ws})},
                   name="blockpg")


def objective_value(w, X, y, lam):
    """f(w) for a scipy.sparse X (rows = samples) and labels ±1 or 0/1: the reference."""
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    z = -y * (X @ w)
    return float(np.sum(np.logaddexp(0.0, z)) + lam * np.abs(w).sum())
