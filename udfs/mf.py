"""Matrix factorisation by SGD on a user–item graph (paper §4, Fig. 5).

Two forms:

* ``minibatch`` (the paper's): Exchange accumulates ∂loss/∂p into a_u, a_v;
  Apply steps at the masters. ``step="adagrad"`` (default): p ← p − η·a/√G with
  G += |a|²/k per vertex, and b with its own G_b += a_b², so a hot vertex, whose
  summed gradient grows with its edges in the batch, takes a bounded step (with
  p's G, b stepped by about √m·mean(err)/sd(err) on m edges of a batch);
  ``step="plain"``: p ← p − η·a, the paper's Fig. 5 (diverges
  on power-law degrees unless η is tiny). Slack 0 gives the same model for any
  partitioning.
* ``sgd`` (LibMF's): Exchange updates both endpoints in place, with LibMF's
  row-wise adaptive step η/√G (G = running mean of squared gradients); Apply
  only synchronises replicas; each bias has a G_b of its own, G_b += (c·b − err)²
  (with p's G, which grows little when λ holds p near 0, a bias kept a step near η).
  Run it in strata (tux2.graph.stratified_order)
  on several partitions: each replica's own steps are then the only ones.

Prediction r̂ = μ + b_u + b_v + p_u·q_v; loss ½(r − r̂)² + ½λ(|p_u|² + |q_v|²) per rating
plus ½D·b² per user and item (``damping`` D): a bias is shrunk as if its vertex had D
more ratings at the mean, b = Σ(r − r̂ + b)/(n + D) at the optimum, as LensKit's and
surprise's baselines damp them (an L2 term per rating divides every bias by the same
1 + λ, so an item rated once, 5 stars, kept nearly all of its 1.5 above the mean). Each
edge carries 1/n of it: c = D/n, the vertex's local field, with the step on b taken
implicitly, b ← (b + η·err)/(1 + η·c), stable for any c (an explicit step
b ← b + η(err − c·b) diverges on a vertex rated once when η·D > 2: D > 20 at η = 0.1).
The mini-batch form accumulates Σc over a vertex's edges in the batch beside Σerr
and steps b ← (b − η·a_b)/(1 + η·a_c). Without ``damping``, c = λ (a term per rating).
"""
import math

import numpy as np
from numba import njit, prange

from tux2.program import Program
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch


def sgd_exchange(u, v, e, a_u, a_v, ctx):
    p, q, k, reg, lr = u.p, v.p, ctx.k, ctx.reg, ctx.lr      # locals: lets LLVM vectorise the loops
    err = e.rating - (ctx.mu + u.b + v.b)
    for j in range(k):
        err -= p[j] * q[j]
    ctx.loss += err * err
    ctx.n += 1
    # each bias with an AdaGrad sum of its own: stepped with the factors' (which grows little
    # when λ holds them near 0) it kept a step near η and never settled. First: after the
    # factors' loop, whose writes LLVM cannot tell from these fields, the epoch took 10-20% longer
    if ctx.biases:
        bu, bv, su, sv = u.b, v.b, np.sqrt(u.gb), np.sqrt(v.gb)
        u.b = (bu * su + lr * err) / (su + lr * u.c)        # (b + η·err)/(1 + η·c), η = lr/√G_b
        v.b = (bv * sv + lr * err) / (sv + lr * v.c)
        if ctx.adaptive:
            du, dv = u.c * bu - err, v.c * bv - err
            u.gb += du * du
            v.gb += dv * dv
    eta_u, eta_v = lr / np.sqrt(u.g), lr / np.sqrt(v.g)   # np.sqrt stays float32;
    gu = gv = np.float32(0.0)           # math.sqrt would promote the loop to float64 (half the SIMD lanes)
    for j in range(k):
        pj, qj = p[j], q[j]
        dp, dq = reg * pj - err * qj, reg * qj - err * pj
        gu += dp * dp
        gv += dq * dq
        p[j] = pj - eta_u * dp
        q[j] = qj - eta_v * dq
    if ctx.adaptive:
        u.g += gu / k
        v.g += gv / k


def grad_exchange(u, v, e, a_u, a_v, ctx):
    err = e.rating - (ctx.mu + u.b + v.b)
    for j in range(ctx.k):
        err -= u.p[j] * v.p[j]
    ctx.loss += err * err
    ctx.n += 1
    for j in range(ctx.k):
        a_u.p[j] += ctx.reg * u.p[j] - err * v.p[j]
        a_v.p[j] += ctx.reg * v.p[j] - err * u.p[j]
    if ctx.biases:
        a_u.b -= err
        a_v.b -= err
        a_u.c += u.c
        a_v.c += v.c


def grad_apply(v, a, ctx):
    for j in range(ctx.k):
        v.p[j] -= ctx.lr * a.p[j]
    v.b = (v.b - ctx.lr * a.b) / (np.float32(1.0) + ctx.lr * a.c)     # the batch's Σc·b²/2 implicitly


def adagrad_apply(v, a, ctx):
    g2 = np.float32(0.0)
    for j in range(ctx.k):
        g2 += a.p[j] * a.p[j]
    v.g += g2 / ctx.k
    eta = ctx.lr / np.sqrt(v.g + np.float32(1e-8))
    for j in range(ctx.k):
        v.p[j] -= eta * a.p[j]
    v.gb += a.b * a.b
    eta = ctx.lr / np.sqrt(v.gb + np.float32(1e-8))
    v.b = (v.b - eta * a.b) / (np.float32(1.0) + eta * a.c)


def rmse_finalize(ctx):
    ctx.rmse = math.sqrt(ctx.loss / max(ctx.n, 1.0))


MINIBATCH_SIZE = 5000     # edges per clock of the mini-batch form when none is given


def program(k=50, mode="sgd", lr=None, reg=0.05, batch_size=None, batch_unit="edge",
            enumerate="item", biases=True, adaptive=True, mu=0.0, init_std=None, types=("user", "item"),
            overlap="error", step="adagrad", damping=None, degrees=None):
    """The MF program. ``mu`` is the global mean rating (set it from the data).
    ``damping`` D: each bias regularised as D ratings at the mean; it needs ``degrees``,
    the (users', items') rating counts (None: λ per rating, as the factors).
    ``batch_size``: edges (or vertices) per clock; None: the whole epoch with ``sgd``,
    MINIBATCH_SIZE edges with ``minibatch``. ``overlap="allow"`` lets per-edge SGD sum
    the steps of several replicas of a vertex in one clock (not recommended: run it
    in strata instead). ``step``: the mini-batch form's update, "adagrad" or "plain"."""
    if mode not in ("sgd", "minibatch"):
        raise ValueError(f"mode must be 'sgd' or 'minibatch', got {mode!r}")
    if step not in ("adagrad", "plain"):
        raise ValueError(f"step must be 'adagrad' or 'plain', got {step!r}")
    if damping is not None and degrees is None:
        raise ValueError("damping needs the vertices' degrees")
    sgd = mode == "sgd"
    fields = {"p": ("f4", k), "b": "f4"}
    if sgd:
        fields.update(g="f4", gb="f4")
    else:
        batch_size = batch_size or (MINIBATCH_SIZE if batch_unit == "edge" else None)
    ada = not sgd and step == "adagrad"
    vt = [VertexType(n, sync=fields, master={"g": "f4", "gb": "f4"} if ada else None, local={"c": "f4"},
                     accum={} if sgd else {"p": ("f4", k), "b": "f4", "c": "f4"}) for n in types]
    ctx = ContextSpec(
        fields={"k": "i8", "lr": "f4", "reg": "f4", "mu": "f4", "biases": "i8", "adaptive": "i8",
                "loss": "f8", "n": "f8", "rmse": "f8"},
        sum=("loss", "n"),
        init={"k": k, "lr": lr if lr is not None else (0.01 if step == "plain" and not sgd else 0.1), "reg": reg,
              "mu": mu,
              "biases": int(biases), "adaptive": int(adaptive and sgd)})
    std = init_std if init_std is not None else (0.3 if step == "plain" and not sgd else 0.1 if not sgd else 0.03)
    def init_vertices(name, data, rng):
        data["p"] = rng.normal(0.0, std, (len(data), k))
        data["c"] = reg if damping is None else damping / np.maximum(degrees[types.index(name)], 1)
        if sgd:
            data["g"] = data["gb"] = 1.0

    if sgd:
        stages = [Exchange(sgd_exchange), Apply(overlap=overlap)]
    else:
        stages = [Exchange(grad_exchange), Apply(adagrad_apply if ada else grad_apply)]
    unit_enum = enumerate if batch_unit == "vertex" else None
    stages = [MiniBatch(batch_size, stages, unit=batch_unit, enumerate=unit_enum),
              GlobalSync(finalize=rmse_finalize)]
    return Program(vt, edge={"rating": "f4"}, context=ctx, stages=stages,
                   init_vertices=init_vertices, name=f"mf-{mode}")


def predict(user_data, item_data, users, items, mu=0.0, unknown=None, chunk=1 << 15, clip=None):
    """r̂ for (users[i], items[i]) from gathered master data. ``unknown``: (user mask,
    item mask) of pairs whose user or item has no training ratings: the baseline μ
    plus the known side's bias (μ alone when both are unknown), as surprise and LibMF
    predict them. ``clip``: (lo, hi), the training ratings' range, which no prediction
    leaves (as surprise clips to its rating scale). ``chunk`` pairs at a time: the
    factor rows gathered for the dot products take chunk × k floats, not pairs × k."""
    def part(u, i):
        return mu + user_data["b"][u] + item_data["b"][i] + np.einsum("ij,ij->i", user_data["p"][u],
                                                                        item_data["p"][i])
    first = part(users[:chunk], items[:chunk])
    out = np.empty(len(users), first.dtype)
    out[:chunk] = first
    for lo in range(chunk, len(users), chunk):
        out[lo:lo + chunk] = part(users[lo:lo + chunk], items[lo:lo + chunk])
    out = baseline_where(out, user_data["b"][users], item_data["b"][items], mu, unknown)
    return out if clip is None else np.clip(out, *clip)


def baseline_where(pred, bu, bi, mu, unknown):
    """``pred`` with the pairs ``unknown`` marks replaced by μ + the known side's bias."""
    if unknown is None:
        return pred
    nu, ni = unknown
    base = mu + np.where(nu, 0.0, bu) + np.where(ni, 0.0, bi)
    return np.where(nu | ni, base, pred)


def rmse(user_data, item_data, graph, mu=0.0, clip=None):
    if graph is None or graph.num_edges == 0:
        return float("nan")
    # in float64: the float32 errors of ratings near 1e20 and above squared to inf
    err = graph.values.astype(np.float64) - predict(user_data, item_data, graph.src, graph.dst, mu, graph.unknown,
                                            clip=clip)
    return float(np.sqrt(np.mean(err * err)))


@njit(cache=True, nogil=True)
def leave_out(S, users, indptr, indices):
    """S[r, j] = -inf for every item j of user users[r] (a CSR of each user's items);
    none for a negative user (the baseline's row). The seen items, never densified."""
    for r in range(S.shape[0]):
        if users[r] >= 0:
            for p in range(indptr[users[r]], indptr[users[r] + 1]):
                S[r, indices[p]] = -np.inf


@njit(cache=True, nogil=True, parallel=True)
def top_k(S, k, row_add, col_add):
    """(columns (n × k), scores (n × k)) of the k highest finite scores S[r, j] + col_add[j]
    + row_add[r] of each row r, in descending order, the lower column first on a tie;
    -1 and nan where a row has fewer. One pass per row keeping the k best (25× numpy's
    argpartition on 20k items); the sums are never stored."""
    top = np.full((S.shape[0], k), -1, np.int64)
    score = np.full((S.shape[0], k), np.nan)
    if k == 0:
        return top, score
    for r in prange(S.shape[0]):
        n = 0
        for j in range(S.shape[1]):
            v = S[r, j] + col_add[j] + row_add[r]
            if not v > -np.inf or v == np.inf or (n == k and v <= score[r, k - 1]):   # excluded, or not in the top
                continue
            p = min(n, k - 1)
            while p > 0 and score[r, p - 1] < v:
                score[r, p] = score[r, p - 1]
                top[r, p] = top[r, p - 1]
                p -= 1
            score[r, p] = v
            top[r, p] = j
            n = min(n + 1, k)
    return top, score
