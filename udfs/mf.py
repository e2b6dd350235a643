"""Matrix factorisation by SGD on a user–item graph (paper §4, Fig. 5).

Two forms:

* ``minibatch`` (the paper's): Exchange accumulates ∂loss/∂p into a_u, a_v;
  Apply steps at the masters. ``step="adagrad"`` (default): p ← p − η·a/√G with
  G += |a|²/k per vertex, so a hot vertex, whose summed gradient grows with its
  edges in the batch, takes a bounded step; ``step="plain"``: p ← p − η·a, the
  paper's Fig. 5 (diverges on power-law degrees unless η is tiny). Slack 0 gives
  the same model for any partitioning.
* ``sgd`` (LibMF's): Exchange updates both endpoints in place, with LibMF's
  row-wise adaptive step η/√G (G = running mean of squared gradients); Apply
  only synchronises replicas. Run it in strata (tux2.graph.stratified_order)
  on several partitions: each replica's own steps are then the only ones.

Prediction r̂ = μ + b_u + b_v + p_u·q_v; loss ½(r − r̂)² + ½λ(|p_u|² + |q_v|²).
"""
import math
import os

import numpy as np

from tux2 import Apply, ContextSpec, Exchange, GlobalSync, MiniBatch, Program, VertexType


def sgd_exchange(u, v, e, a_u, a_v, ctx):
    p, q, k, reg = u.p, v.p, ctx.k, ctx.reg      # locals: lets LLVM vectorise the loops
    err = e.rating - (ctx.mu + u.b + v.b)
    for j in range(k):
        err -= p[j] * q[j]
    ctx.loss += err * err
    ctx.n += 1
    eta_u, eta_v = ctx.lr / np.sqrt(u.g), ctx.lr / np.sqrt(v.g)   # np.sqrt stays float32;
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
    if ctx.biases:
        u.b += eta_u * (err - reg * u.b)
        v.b += eta_v * (err - reg * v.b)


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
        a_u.b += ctx.reg * u.b - err
        a_v.b += ctx.reg * v.b - err


def grad_apply(v, a, ctx):
    for j in range(ctx.k):
        v.p[j] -= ctx.lr * a.p[j]
    v.b -= ctx.lr * a.b


def adagrad_apply(v, a, ctx):
    g2 = np.float32(0.0)
    for j in range(ctx.k):
        g2 += a.p[j] * a.p[j]
    v.g += g2 / ctx.k
    eta = ctx.lr / np.sqrt(v.g + np.float32(1e-8))
    for j in range(ctx.k):
        v.p[j] -= eta * a.p[j]
    v.b -= eta * a.b


def rmse_finalize(ctx):
    ctx.rmse = math.sqrt(ctx.loss / max(ctx.n, 1.0))


MINIBATCH_SIZE = 5000     # edges per clock of the mini-batch form when none is given


def program(k=50, mode="sgd", lr=None, reg=0.05, batch_size=None, batch_unit="edge",
            enumerate="item", biases=True, adaptive=True, mu=0.0, init_std=None, types=("user", "item"),
            overlap="error", step="adagrad"):
    """The MF program. ``mu`` is the global mean rating (set it from the data).
    ``batch_size``: edges (or vertices) per clock; None: the whole epoch with ``sgd``,
    MINIBATCH_SIZE edges with ``minibatch``. ``overlap="allow"`` lets per-edge SGD sum
    the steps of several replicas of a vertex in one clock (not recommended: run it
    in strata instead). ``step``: the mini-batch form's update, "adagrad" or "plain"."""
    if mode not in ("sgd", "minibatch"):
        raise ValueError(f"mode must be 'sgd' or 'minibatch', got {mode!r}")
    if step not in ("adagrad", "plain"):
        raise ValueError(f"step must be 'adagrad' or 'plain', got {step!r}")
    sgd = mode == "sgd"
    fields = {"p": ("f4", k), "b": "f4"}
    if sgd:
        fields["g"] = "f4"
    else:
        batch_size = batch_size or (MINIBATCH_SIZE if batch_unit == "edge" else None)
    ada = not sgd and step == "adagrad"
    vt = [VertexType(n, sync=fields, master={"g": "f4"} if ada else None,
                     accum={} if sgd else {"p": ("f4", k), "b": "f4"}) for n in types]
    ctx = ContextSpec(
        fields={"k": "i8", "lr": "f4", "reg": "f4", "mu": "f4", "biases": "i8", "adaptive": "i8",
                "loss": "f8", "n": "f8", "rmse": "f8"},
        sum=("loss", "n"),
        init={"k": k, "lr": lr if lr is not None else (0.01 if step == "plain" and not sgd else 0.1), "reg": reg,
              "mu": mu,
              "biases": int(biases), "adaptive": int(adaptive and sgd)})
    std = init_std if init_std is not None else (0.3 if step == "plain" and not sgd else 0.1)
    def init_vertices(name, data, rng):
        data["p"] = rng.normal(0.0, std, (len(data), k))
        if sgd:
            data["g"] = 1.0

    if sgd:
        stages = [Exchange(sgd_exchange), Apply(overlap=overlap)]
    else:
        stages = [Exchange(grad_exchange), Apply(adagrad_apply if ada else grad_apply)]
    unit_enum = enumerate if batch_unit == "vertex" else None
    stages = [MiniBatch(batch_size, stages, unit=batch_unit, enumerate=unit_enum),
              GlobalSync(finalize=rmse_finalize)]
    return Program(vt, edge={"rating": "f4"}, context=ctx, stages=stages,
                   init_vertices=init_vertices, name=f"mf-{mode}")


def predict(user_data, item_data, users, items, mu=0.0, unknown=None):
    """r̂ for (users[i], items[i]) from gathered master data. ``unknown``: (user mask,
    item mask) of pairs whose user or item has no training ratings: the baseline μ
    plus the known side's bias (μ alone when both are unknown), as surprise and LibMF
    predict them."""
    return baseline_where(mu + user_data["b"][users] + item_data["b"][items]
                          + np.einsum("ij,ij->i", user_data["p"][users], item_data["p"][items]),
                          user_data["b"][users], item_data["b"][items], mu, unknown)


def baseline_where(pred, bu, bi, mu, unknown):
    """``pred`` with the pairs ``unknown`` marks replaced by μ + the known side's bias."""
    if unknown is None:
        return pred
    nu, ni = unknown
    base = mu + np.where(nu, 0.0, bu) + np.where(ni, 0.0, bi)
    return np.where(nu | ni, base, pred)


def rmse(user_data, item_data, graph, mu=0.0):
    if graph is None or graph.num_edges == 0:
        return float("nan")
    err = graph.values - predict(user_data, item_data, graph.src, graph.dst, mu, graph.unknown)
    return float(np.sqrt(np.mean(err * err)))


# --------------------------------------------------------------------------- Python API
class MFModel:
    """A trained MF model, r̂(u, i) = μ + b_u + b_i + p_u·q_i, that speaks the user's ids.

    ``users``/``items``: master data (fields ``p``, ``b``) in dense-id order; ``ids``:
    the two IdMaps (None: dense ids are the user's); ``seen``: CSR (indptr, indices) of
    each user's training items, left out of recommendations."""

    FILES = ("user.npz", "item.npz", "model.json")

    def __init__(self, users, items, mu=0.0, ids=(None, None), seen=None, meta=None, history=None):
        self.P, self.bu = np.asarray(users["p"], np.float64), np.asarray(users["b"], np.float64)
        self.Q, self.bi = np.asarray(items["p"], np.float64), np.asarray(items["b"], np.float64)
        self.mu = float(mu)
        self.ids = tuple(ids)
        self.seen = seen
        self.meta = dict(meta or {})
        self.history = history or []

    @property
    def n_users(self):
        return len(self.P)

    @property
    def n_items(self):
        return len(self.Q)

    def _dense(self, side, x, what):
        from tux2.errors import InputError
        m = self.ids[side]
        x = np.atleast_1d(np.asarray(x))
        if m is not None:
            return m.encode(x.astype(m.tokens.dtype) if x.dtype.kind != m.tokens.dtype.kind else x, what)
        n = (self.n_users, self.n_items)[side]
        if x.dtype.kind not in "iu" or (len(x) and (x.min() < 0 or x.max() >= n)):
            bad = (x[(x < 0) | (x >= n)][0] if x.dtype.kind in "iu" else x[0]).item()
            raise InputError(f"unknown {what} {bad!r} (the model has {n}, ids 0 … {n - 1})", path="predict")
        return x.astype(np.int64)

    def _user_ids(self, side, dense):
        m = self.ids[side]
        return dense if m is None else m.decode(dense)

    def predict(self, users, items):
        """Predicted ratings for the pairs (users[i], items[i]), in the user's ids."""
        u, i = self._dense(0, users, "user"), self._dense(1, items, "item")
        if len(u) != len(i):
            raise ValueError(f"{len(u)} users but {len(i)} items")
        return self.score(u, i)

    def score(self, u, i, unknown=None):
        """Predicted ratings for dense user and item ids; ``unknown``: (user mask, item
        mask) of ids without training ratings, predicted by the baseline (see predict)."""
        return baseline_where(self.mu + self.bu[u] + self.bi[i] + np.einsum("ij,ij->i", self.P[u], self.Q[i]),
                              self.bu[u], self.bi[i], self.mu, unknown)

    @property
    def known(self):
        """(users, items): which dense ids have training ratings (from ``seen``; all of
        them for models saved without it). The others are never scored or recommended."""
        if self.seen is None:
            return np.ones(self.n_users, bool), np.ones(self.n_items, bool)
        indptr, indices = self.seen
        return np.diff(indptr) > 0, np.bincount(indices, minlength=self.n_items) > 0

    def recommend(self, users=None, k=10, exclude_seen=True, chunk=1024):
        """Top-``k`` items per user (by default every user with training ratings) by
        predicted rating, leaving out the user's training items and items nobody rated:
        (users, items (n × k), scores (n × k)) in the user's ids; a row has fewer than
        k entries (item None / score nan) only when the user has seen nearly every item.
        A user without training ratings gets the items of highest μ + b_i."""
        known_u, known_i = self.known
        u = np.flatnonzero(known_u) if users is None else self._dense(0, users, "user")
        k = int(min(k, self.n_items))
        top = np.full((len(u), k), -1, np.int64)
        score = np.full((len(u), k), np.nan)
        for lo in range(0, len(u), chunk):
            uu = u[lo: lo + chunk]
            S = self.P[uu] @ self.Q.T + self.bi[None, :] + (self.mu + self.bu[uu])[:, None]
            S[:, ~known_i] = -np.inf                   # items without ratings: never recommended
            S[~known_u[uu]] = np.where(known_i, self.mu + self.bi, -np.inf)    # a user without: the baseline
            if exclude_seen and self.seen is not None:
                indptr, indices = self.seen
                starts, ends = indptr[uu], indptr[uu + 1]
                rows = np.repeat(np.arange(len(uu)), ends - starts)
                cols = indices[np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])] \
                    if len(rows) else np.zeros(0, np.int64)
                S[rows, cols] = -np.inf
            part = np.argpartition(-S, k - 1, axis=1)[:, :k] if k < S.shape[1] else np.tile(np.arange(k), (len(uu), 1))
            ps = np.take_along_axis(S, part, axis=1)
            o = np.argsort(-ps, axis=1, kind="stable")
            part, ps = np.take_along_axis(part, o, axis=1), np.take_along_axis(ps, o, axis=1)
            ok = np.isfinite(ps)
            top[lo: lo + len(uu)] = np.where(ok, part, -1)
            score[lo: lo + len(uu)] = np.where(ok, ps, np.nan)
        items = self._user_ids(1, np.maximum(top, 0)).astype(object)
        items[top < 0] = None
        return self._user_ids(0, u), items, score

    # ---------------------------------------------------------------- files
    def save(self, directory):
        """user.npz, item.npz (arrays p, b and the user's ids), seen.npz and model.json:
        the files ``tux2 run mf --out`` writes (together, with a manifest: tux2.files)."""
        import json
        from tux2 import __version__, files
        from tux2.loaders import save_ids
        out = {}
        for name, p, b, m in (("user", self.P, self.bu, self.ids[0]), ("item", self.Q, self.bi, self.ids[1])):
            out[f"{name}.npz"] = files.npz({"p": p.astype(np.float32), "b": b.astype(np.float32),
                                           "ids": save_ids(m, len(p))})
        if self.seen is not None:
            out["seen.npz"] = files.npz({"indptr": self.seen[0], "indices": self.seen[1]})
        meta = {"algorithm": "mf", "k": int(self.P.shape[1]), "mu": self.mu, "tux2_version": __version__,
                "vertex_types": ["user", "item"], **{k: v for k, v in self.meta.items() if k not in ("mu",)}}
        out["model.json"] = files.text(json.dumps(meta, indent=2))
        files.write_dir(directory, out)

    @classmethod
    def load(cls, directory):
        """The model in ``directory``, its files checked against its manifest and
        their arrays against model.json (tux2.files, tux2.model_check)."""
        from tux2 import model_check
        from tux2.loaders import loaded_ids
        meta, arrays = model_check.read_model(directory, "mf", ("user.npz", "item.npz"), ("seen.npz",))
        model_check.check_mf(directory, meta, arrays)
        seen = arrays.get("seen.npz")
        return cls(arrays["user.npz"], arrays["item.npz"], meta.get("mu", 0.0),
                   (loaded_ids(arrays["user.npz"]["ids"]), loaded_ids(arrays["item.npz"]["ids"])),
                   (seen["indptr"], seen["indices"]) if seen is not None else None, meta)


def seen_csr(graph):
    """(indptr, indices) of each user's items in a user → item graph."""
    o = np.argsort(graph.src, kind="stable")
    indptr = np.zeros(graph.n_src + 1, np.int64)
    np.cumsum(np.bincount(graph.src, minlength=graph.n_src), out=indptr[1:])
    return indptr, graph.dst[o].astype(np.int32)


class MF:
    """Matrix factorisation, scikit-learn style: ``MF(k=50).fit(data)`` → MFModel.

    ``data``: anything ``tux2.loaders.load`` takes — an edge-list path, (users, items,
    ratings) arrays with any ids, a scipy.sparse matrix, a pandas DataFrame, a
    networkx bipartite graph. Parameters are those of ``tux2 run mf``."""

    def __init__(self, k=50, epochs=10, lr=None, reg=0.05, mode="sgd", batch_size=None, biases=True,
                 partitions=1, partitioner=None, order=None, blocks=16, threads=None, seed=0, duplicates="error"):
        self.params = dict(k=k, epochs=epochs, lr=lr, reg=reg, mode=mode, batch_size=batch_size, biases=biases,
                           partitions=partitions, partitioner=partitioner, order=order, blocks=blocks,
                           threads=threads, seed=seed, duplicates=duplicates)

    def fit(self, data, test=None, callback=None):
        """Train; ``test`` (same kinds of input, same ids) adds test RMSE to the history.
        ``callback(epoch, record)`` is called after each epoch."""
        from tux2 import loaders
        from tux2.engine import Engine
        from tux2.errors import InputError
        from tux2.graph import BipartiteGraph, blocked_order, stratified_order
        p = self.params
        g = loaders.load(data, duplicates=p["duplicates"]) if not isinstance(data, BipartiteGraph) else data
        if g.values is None:
            raise InputError("MF needs ratings: a value per edge", path=g.source)
        g = BipartiteGraph(g.src, g.dst, g.values, g.n_src, g.n_dst, ("user", "item"), g.source, g.ids)
        if test is not None and not isinstance(test, BipartiteGraph):
            test = _encode_like(g, test)
        order = p["order"] or ("strata" if p["mode"] == "sgd" else "blocked")
        partitioner = p["partitioner"] or ("stratified" if order == "strata" else "bicut")
        strata = None
        if order == "strata":        # per-edge SGD: conflict-free on any number of partitions
            perm, strata = stratified_order(g.src, g.dst, g.n_src, g.n_dst, p["blocks"], seed=p["seed"])
            g = g.permuted(perm)
        elif order == "blocked":
            g = g.permuted(blocked_order(g.src, g.dst, g.n_src, g.n_dst, seed=p["seed"],
                                         within="sorted" if p["batch_size"] is None else "input"))
        elif order == "shuffle":
            g = g.permuted(np.random.default_rng(p["seed"]).permutation(g.num_edges))
        mu = float(g.values.mean())
        prog = program(k=p["k"], mode=p["mode"], lr=p["lr"], reg=p["reg"], batch_size=p["batch_size"],
                       biases=p["biases"], mu=mu)
        eng = Engine(prog, g, partitions=p["partitions"], partitioner=partitioner, seed=p["seed"],
                     partitioner_options={"blocks": p["blocks"]} if partitioner == "stratified" else None,
                     strata=strata, threads=p["threads"])
        history = []
        for epoch in range(1, p["epochs"] + 1):
            eng.run(1)
            rec = {"epoch": epoch, "train_rmse": eng.context()["rmse"]}
            if test is not None:
                rec["test_rmse"] = rmse(eng.vertex_data("user"), eng.vertex_data("item"), test, mu)
            history.append(rec)
            if callback is not None:
                callback(epoch, rec)
        return MFModel(eng.vertex_data("user"), eng.vertex_data("item"), mu, g.ids, seen_csr(g),
                       {**{k: v for k, v in p.items()}, "lr": float(prog.context.init["lr"]), "clock": eng.clock},
                       history)


def _encode_like(train, data):
    """A test set in the training set's ids: (users, items, ratings) or a loadable input."""
    from tux2 import loaders
    from tux2.graph import BipartiteGraph
    if isinstance(data, tuple):
        u, i, r = data
        su = train.ids[0].encode(np.asarray(u), "user") if train.ids[0] is not None else np.asarray(u, np.int64)
        si = train.ids[1].encode(np.asarray(i), "item") if train.ids[1] is not None else np.asarray(i, np.int64)
        return BipartiteGraph(su, si, r, train.n_src, train.n_dst, ("user", "item"), "test")
    if isinstance(data, (str, os.PathLike)):       # read in the training ids; unknown ids: the baseline
        known = tuple(np.bincount(a, minlength=n) > 0 for a, n in ((train.src, train.n_src),
                                                                   (train.dst, train.n_dst)))
        return loaders.load_edges(data, type_names=("user", "item"), id_maps=train.ids, known=known,
                                  unknown="baseline")
    t = loaders.load(data)
    return BipartiteGraph(t.src, t.dst, t.values, train.n_src, train.n_dst, ("user", "item"), t.source)
