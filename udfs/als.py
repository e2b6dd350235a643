"""Matrix factorisation by alternating least squares on a user–item graph.

Each epoch solves every user given the items, then every item given the users, as
accumulate-then-Apply: an Exchange adds each edge's outer product and right-hand
side into the accumulators of the side being solved (a packed upper triangle of its
normal equations, float64), and an Apply at the master solves the small system by
Cholesky. Each half enumerates the edges of the side it solves vertex by vertex
(a MiniBatch over all of its vertices, one clock), so a vertex's accumulator stays in
cache while its edges add to it. Every replica's sums reach the master before it solves, so any number of
partitions, workers and threads gives the one-partition model up to the order of the
float sums (DESIGN.md, the central invariant).

* Explicit ratings (``implicit=False``): r̂ = μ + b_u + b_i + p_u·q_i, the loss of
  tux2.udfs.mf's SGD form, ½(r − r̂)² + ½λ(|p_u|² + |q_i|²) per rating + ½D(b_u² + b_i²).
  λ per rating is Spark MLlib's weighted-λ: user u's system carries λ·n_u on p_u
  (n_u its ratings). The bias rides along: [p_u, b_u] is solved against [q_i, 1]
  with target r − μ − b_i, damped by D on b_u (``damping``; None: λ·n_u, a term per
  rating), so one solve minimises the loss over p_u and b_u exactly.
* Implicit feedback (``implicit=True``, Hu, Koren & Volinsky 2008, as the
  ``implicit`` package and Spark's implicitPrefs): every (user, item) pair counts,
  preference 1 on an edge of value r > 0, else 0, confidence c = 1 + α|r| on an
  edge (``confidence="log"``: Hu et al.'s log scaling, c = 1 + α·log(1 + |r|/ε)) and 1
  elsewhere; minimise Σ_all c (pref − p_u·q_i)² + λ(Σ|p_u|² + Σ|q_i|²)
  (plain λ, as the paper and ``implicit``). User u solves
  (YᵀY + Σ_edges (c − 1) q qᵀ + λI) p_u = Σ_edges c·pref·q: YᵀY over all items is
  a GlobalSync aggregate into the context before the user half (XᵀX before the
  item half). No biases, no μ. The epoch's objective is reported: the edges' part
  from an Exchange, the rest (Σ_all (p·q)² = Σ (XᵀX)∘(YᵀY)) from the grams.
  ``solver="cg"`` solves these systems approximately instead, by ``cg_steps``
  conjugate-gradient steps from the last epoch's factors (Takács, Pilászy & Tikk 2011;
  ``implicit``'s default): an Exchange + Apply pair per step, no normal equations. Its
  item half enumerates the edges in user order, the layout's stored order (the item order
  is a permutation of it, whose random reads of the edges took 1.3 s of a 2 s epoch on
  926k plays): its accumulators are k floats, which random access can afford, where the
  Cholesky half's packed systems (10 kB at k = 50) want their vertex's edges together.
"""
import math

import numpy as np
from numba import njit

from tux2.program import Program
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch


@njit(inline="always")
def add_outer(A, y, x, k, bias, w, t):
    """A += w·[x, 1][x, 1]ᵀ (packed upper triangle, rows of [x, 1] when ``bias``),
    y += t·[x, 1]. x is copied to float64 first: the row loops then vectorise."""
    dim = k + bias
    xs = np.empty(dim)
    for a in range(k):
        xs[a] = x[a]
    if bias:
        xs[k] = 1.0
    at = 0
    for a in range(dim):
        wa = w * xs[a]
        row = A[at: at + dim - a]
        for b in range(dim - a):
            row[b] += wa * xs[a + b]
        at += dim - a
        y[a] += t * xs[a]


@njit(inline="always")
def dot(p, q, k):
    s = np.float64(0.0)
    for j in range(k):
        s += np.float64(p[j]) * q[j]
    return s


PIVOT_TOL = 1e-9     # a Cholesky pivot at or below this share of its diagonal is singular: rounding of
                     # float32 factors' products leaves ~k·1e-16 there, a genuine λ·n ≥ 1e-6 of it


# ---------------------------------------------------------------- explicit
def user_rows(u, v, e, a_u, a_v, ctx):
    add_outer(a_u.A, a_u.y, v.p, ctx.k, ctx.biases, 1.0, e.rating - ctx.mu - v.b)
    a_u.n += 1.0


def item_rows(u, v, e, a_u, a_v, ctx):
    add_outer(a_v.A, a_v.y, u.p, ctx.k, ctx.biases, 1.0, e.rating - ctx.mu - u.b)
    a_v.n += 1.0


def squared_error(u, v, e, a_u, a_v, ctx):
    err = e.rating - ctx.mu - u.b - v.b - dot(u.p, v.p, ctx.k)
    ctx.loss += err * err
    ctx.n += 1.0


@njit(inline="always")
def unpack(A, dim):
    M = np.empty((dim, dim))
    at = 0
    for a in range(dim):
        for b in range(a, dim):
            M[a, b] = A[at]
            M[b, a] = A[at]
            at += 1
    return M


@njit(inline="always")
def cholesky_solve(M, x):
    """x ← a minimiser of ½zᵀMz − xᵀz for a symmetric positive (semi)definite M (overwritten
    by its factor): M⁻¹x when M is well conditioned. A pivot at or below ``PIVOT_TOL`` of its
    diagonal (a singular system: λ = 0 and fewer ratings than factors, or a confidence so
    large that the rest of the system is lost below double precision) is a direction the
    earlier ones already span: its unknown is set to 0 and its column dropped, so the others
    solve the system exactly and nothing grows from rounding noise (raising such a pivot to
    a floor instead divided that noise by it: factors of 10⁴, then inf)."""
    n = M.shape[0]
    for j in range(n):
        d0 = M[j, j]
        d = d0
        for t in range(j):
            d -= M[j, t] * M[j, t]
        if not d > PIVOT_TOL * abs(d0):          # (also a nan pivot)
            M[j, j] = 0.0
            for i in range(j + 1, n):
                M[i, j] = 0.0
            continue
        d = math.sqrt(d)
        M[j, j] = d
        for i in range(j + 1, n):
            s = M[i, j]
            for t in range(j):
                s -= M[i, t] * M[j, t]
            M[i, j] = s / d
    for i in range(n):
        if M[i, i] == 0.0:
            x[i] = 0.0
            continue
        s = x[i]
        for t in range(i):
            s -= M[i, t] * x[t]
        x[i] = s / M[i, i]
    for i in range(n - 1, -1, -1):
        if M[i, i] == 0.0:
            continue
        s = x[i]
        for t in range(i + 1, n):
            s -= M[t, i] * x[t]
        x[i] = s / M[i, i]


def solve(v, a, ctx):
    k, y = ctx.k, a.y
    dim = k + ctx.biases
    M = unpack(a.A, dim)
    x = np.empty(dim)
    for j in range(dim):
        x[j] = y[j]
    for j in range(k):
        M[j, j] += ctx.reg * a.n                # weighted-λ: λ per rating
    if ctx.biases:
        M[k, k] += ctx.reg * a.n if ctx.damp < 0 else ctx.damp
    cholesky_solve(M, x)
    p = v.p
    for j in range(k):
        p[j] = x[j]
    if ctx.biases:
        v.b = x[k]


def rmse_finalize(ctx):
    ctx.rmse = math.sqrt(ctx.loss / max(ctx.n, 1.0))


# ---------------------------------------------------------------- implicit
CONFIDENCE = ("linear", "log")      # c = 1 + α|r|, or Hu et al.'s log scaling c = 1 + α·log(1 + |r|/ε)


LOG_RATIO_CUT = 1e300       # above this r/ε, log1p(r/ε) is log(r) − log(ε) to the last bit


@njit(inline="always")
def log_ratio(a, eps):
    """log(1 + a/ε) for a ≥ 0, ε > 0, finite where a/ε overflows float64 (ε = 1e-310)."""
    q = a / eps
    return math.log1p(q) if q < LOG_RATIO_CUT else math.log(a) - math.log(eps)


@njit(inline="always")
def confidence(r, alpha, eps):
    """(c − 1, c·pref) of an edge of value r: pref 1 when r > 0, c = 1 + α|r|, or with
    ``eps`` > 0 (``confidence="log"``) c = 1 + α·log(1 + |r|/ε); 1 for r = 0 either way."""
    w = alpha * (log_ratio(abs(r), eps) if eps > 0 else abs(r))
    return w, (1.0 + w) if r > 0 else 0.0


def confidences(r, alpha, confidence="linear", epsilon=1.0):
    """c of edges of values ``r`` (numpy, float64): ``confidence``'s form, as ``confidence``
    computes it per edge (fold-in, the reports)."""
    r = np.abs(np.asarray(r, np.float64))
    if confidence != "log":
        return 1.0 + alpha * r
    with np.errstate(divide="ignore", over="ignore"):   # log(0) in the branch that q < cut takes; r/ε beyond
        q = r / epsilon                                 # float64 (ε = 1e-307): the other branch's
        return 1.0 + alpha * np.where(q < LOG_RATIO_CUT, np.log1p(q), np.log(r) - np.log(epsilon))


def user_rows_implicit(u, v, e, a_u, a_v, ctx):
    w, t = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    add_outer(a_u.A, a_u.y, v.p, ctx.k, 0, w, t)


def item_rows_implicit(u, v, e, a_u, a_v, ctx):
    w, t = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    add_outer(a_v.A, a_v.y, u.p, ctx.k, 0, w, t)


def solve_implicit(v, a, ctx):
    k, G, y = ctx.k, ctx.gram, a.y          # the record's arrays taken once: a view per access costs
    M = unpack(a.A, k)
    x = np.empty(k)
    for i in range(k):
        x[i] = y[i]
        for j in range(k):
            M[i, j] += G[i, j]
        M[i, i] += ctx.reg
    cholesky_solve(M, x)
    p = v.p
    for j in range(k):
        p[j] = x[j]


# ---------------------------------------------------------------- implicit, conjugate gradient
# Takács, Pilászy & Tikk 2011, as ``implicit``'s default solver: instead of forming and
# factoring each vertex's system M = G + Σ_edges (c − 1) q qᵀ + λI (O(n·k²) to form,
# O(k³) to factor), a few conjugate-gradient steps on M x = b from the vertex's factors of
# the last epoch, each needing only M·d: G·d + λd at the master, Σ_edges (c − 1)(q·d) q
# over the edges, O(n·k). In MEGA terms one Exchange + Apply starts (the residual
# b − M x) and one Exchange + Apply per step: the direction d is a sync field, so the
# mirrors hold the master's d when the next step's Exchange reads it; the residual and
# r·r stay at the master. Every replica's sums reach the master before each Apply, so
# the central invariant holds as for the Cholesky solve.
SOLVERS = ("cholesky", "cg")
CG_TOL = 1e-20          # r·r below this: solved (implicit's test), the remaining steps leave x as it is


def user_residual(u, v, e, a_u, a_v, ctx):
    """Σ_edges (c·pref − (c − 1)(q·x)) q: b − Σ_edges (c − 1) q qᵀ x."""
    w, t = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    add_scaled(a_u.s, v.p, t - w * dot(u.p, v.p, ctx.k), ctx.k)


def item_residual(u, v, e, a_u, a_v, ctx):
    w, t = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    add_scaled(a_v.s, u.p, t - w * dot(v.p, u.p, ctx.k), ctx.k)


def user_product(u, v, e, a_u, a_v, ctx):
    """Σ_edges (c − 1)(q·d) q: the edges' part of M·d."""
    w, _ = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    add_scaled(a_u.s, v.p, w * dot(u.d, v.p, ctx.k), ctx.k)


def item_product(u, v, e, a_u, a_v, ctx):
    w, _ = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    add_scaled(a_v.s, u.p, w * dot(v.d, u.p, ctx.k), ctx.k)


@njit(inline="always")
def add_scaled(s, q, t, k):
    for j in range(k):
        s[j] += t * q[j]


def cg_start(v, a, ctx):
    """r = b − M x (the edges' part in ``a.s``, G x + λx here), d = r."""
    k, G, s, p, r, d = ctx.k, ctx.gram, a.s, v.p, v.r, v.d
    rs = 0.0
    for i in range(k):
        g = s[i] - ctx.reg * p[i]
        for j in range(k):
            g -= G[i, j] * p[j]
        r[i] = g
        d[i] = g
        rs += g * g
    if rs < CG_TOL:                 # solved already: d = 0 makes the steps leave x alone
        rs = 0.0
        for i in range(k):
            d[i] = 0.0
    v.rs = rs


def cg_step(v, a, ctx):
    """One CG step: M·d from ``a.s`` (the edges' part) + G d + λd; x += α d, r −= α M·d,
    d = r + (r·r / r·r before) d."""
    if v.rs == 0.0:
        return
    k, G, s, p, r, d = ctx.k, ctx.gram, a.s, v.p, v.r, v.d
    Ad = np.empty(k)
    dAd = 0.0
    for i in range(k):
        g = s[i] + ctx.reg * d[i]
        for j in range(k):
            g += G[i, j] * d[j]
        Ad[i] = g
        dAd += d[i] * g
    if not dAd > 0.0:               # (λ = 0 and a direction the system cannot see)
        v.rs = 0.0
        for i in range(k):
            d[i] = 0.0
        return
    step = v.rs / dAd
    rs = 0.0
    for i in range(k):
        p[i] = np.float32(p[i] + step * d[i])
        r[i] -= step * Ad[i]
        rs += r[i] * r[i]
    if rs < CG_TOL:
        v.rs = 0.0
        for i in range(k):
            d[i] = 0.0
        return
    beta = rs / v.rs
    for i in range(k):
        d[i] = r[i] + beta * d[i]
    v.rs = rs


def edge_objective(u, v, e, a_u, a_v, ctx):
    """An edge's c(pref − s)² less the s² that Σ_all s² counts for it."""
    w, t = confidence(np.float64(e.rating), ctx.alpha, ctx.eps)
    s = dot(u.p, v.p, ctx.k)
    pref = 1.0 if e.rating > 0 else 0.0
    ctx.loss += (1.0 + w) * (pref - s) * (pref - s) - s * s
    ctx.n += 1.0


def gram(v, ctx):
    """Σ q qᵀ over the masters (upper triangle; ``keep_gram`` mirrors it)."""
    S, p, k = ctx.gsum, v.p, ctx.k
    for a in range(k):
        pa = np.float64(p[a])
        for b in range(a, k):
            S[a, b] += pa * p[b]


def keep_gram(ctx):
    G, S = ctx.gram, ctx.gsum
    for a in range(ctx.k):
        for b in range(a, ctx.k):
            G[a, b] = S[a, b]
            G[b, a] = S[a, b]


def objective_finalize(ctx):
    """Hu et al.'s objective: the edges' part + Σ_all (p·q)² = Σ (XᵀX)∘(YᵀY) + λ(|X|² + |Y|²);
    ``gram`` holds XᵀX (the users', from before the item half), ``gsum`` YᵀY's upper triangle."""
    s, G, S = ctx.loss, ctx.gram, ctx.gsum
    tr = 0.0
    for a in range(ctx.k):
        tr += G[a, a] + S[a, a]
        for b in range(a, ctx.k):
            s += G[a, b] * S[a, b] * (1.0 if a == b else 2.0)
    ctx.objective = s + ctx.reg * tr


# ---------------------------------------------------------------- the program
def program(k=50, reg=0.07, biases=True, mu=0.0, damping=None, degrees=None, implicit=False, alpha=1.0,
            confidence="linear", epsilon=1.0, solver="cholesky", cg_steps=3, init_std=0.1, types=("user", "item")):
    """The ALS program. ``mu``: the mean rating (explicit); ``damping`` D on the biases
    (None: λ per rating); ``degrees``: the (users', items') edge counts, whose
    vertices without edges start at 0 (they stay there: no edge, no solve);
    ``alpha``: the confidence slope of implicit feedback, ``confidence`` its form
    (``CONFIDENCE``: linear, c = 1 + α|r|, or log, c = 1 + α·log(1 + |r|/``epsilon``));
    ``solver`` of implicit feedback's systems (``SOLVERS``): cholesky, exact, or cg,
    ``cg_steps`` conjugate-gradient steps from the last epoch's factors (``cg_steps`` ≥ k:
    exact up to rounding). Explicit ratings are always solved by Cholesky."""
    if confidence not in CONFIDENCE:
        raise ValueError(f"confidence must be one of {', '.join(CONFIDENCE)}; got {confidence!r}")
    if confidence == "log" and not epsilon > 0:
        raise ValueError(f"epsilon of log confidence must be > 0; got {epsilon!r}")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(SOLVERS)}; got {solver!r}")
    if int(cg_steps) != cg_steps or cg_steps < 1:
        raise ValueError(f"cg_steps must be an integer >= 1; got {cg_steps!r}")
    biases = bool(biases) and not implicit
    cg = implicit and solver == "cg"
    dim = k + biases
    if cg:      # the direction at every replica; the residual and r·r at the master; M·d's edge sums
        vt = [VertexType(n, sync={"p": ("f4", k), "b": "f4", "d": ("f8", k)}, master={"r": ("f8", k), "rs": "f8"},
                         accum={"s": ("f8", k)}) for n in types]
    else:
        vt = [VertexType(n, sync={"p": ("f4", k), "b": "f4"},
                         accum={"A": ("f8", dim * (dim + 1) // 2), "y": ("f8", dim), "n": "f8"}) for n in types]

    def init_vertices(name, data, rng):
        data["p"] = rng.normal(0.0, init_std, (len(data), k))
        if degrees is not None:
            data["p"][np.asarray(degrees[types.index(name)])[:len(data)] == 0] = 0.0

    fields = {"k": "i8", "biases": "i8", "mu": "f8", "reg": "f8", "damp": "f8", "alpha": "f8",
              "eps": "f8", "loss": "f8", "n": "f8", "rmse": "f8"}
    init = {"k": k, "biases": int(biases), "mu": 0.0 if implicit else mu, "reg": reg,
            "damp": -1.0 if damping is None else damping, "alpha": alpha,
            "eps": float(epsilon) if confidence == "log" else 0.0}      # 0: linear
    user, item = types
    if not implicit:
        ctx = ContextSpec(fields=fields, sum=("loss", "n"), init=init)
        stages = [MiniBatch(None, [Exchange(user_rows, writes=user), Apply(solve, types=user)], unit="vertex",
                            enumerate=user),
                  MiniBatch(None, [Exchange(item_rows, writes=item), Apply(solve, types=item),
                                   Exchange(squared_error, writes=())], unit="vertex", enumerate=item),
                  GlobalSync(finalize=rmse_finalize)]
        name = "mf-als"
    else:
        ctx = ContextSpec(fields={**fields, "objective": "f8", "gram": ("f8", (k, k)), "gsum": ("f8", (k, k))},
                          sum=("loss", "n"), scratch=("gsum",), state=("gram",), init=init)
        if cg:
            def half(t, residual, product):
                steps = [[Exchange(product, writes=t), Apply(cg_step, types=t)] for _ in range(int(cg_steps))]
                return [Exchange(residual, writes=t), Apply(cg_start, types=t)] + sum(steps, [])
            users = half(user, user_residual, user_product)
            items = half(item, item_residual, item_product)
        else:
            users = [Exchange(user_rows_implicit, writes=user), Apply(solve_implicit, types=user)]
            items = [Exchange(item_rows_implicit, writes=item), Apply(solve_implicit, types=item)]
        stages = [GlobalSync(aggregate=gram, over=item, finalize=keep_gram, record=False, name="item_gram"),
                  MiniBatch(None, users, unit="vertex", enumerate=user),
                  GlobalSync(aggregate=gram, over=user, finalize=keep_gram, record=False, name="user_gram"),
                  MiniBatch(None, items + [Exchange(edge_objective, writes=())], unit="vertex",
                            enumerate=user if cg else item),        # (cg: the stored order, module docstring)
                  GlobalSync(aggregate=gram, over=item, finalize=objective_finalize, name="objective")]
        name = "mf-als-implicit" + ("-cg" if cg else "")
    return Program(vt, edge={"rating": "f4"}, context=ctx, stages=stages, init_vertices=init_vertices, name=name)
