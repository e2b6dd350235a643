"""``tux2.MF``: matrix factorisation (tux2.udfs.mf) as an estimator — the one place
where a rating set becomes an MF run: rating checks, test ids, the edge order
(strata, blocked, shuffled), μ, the program; then predictions in the user's ids."""
import numpy as np

from tux2 import files, loaders
from tux2.errors import InputError, Tux2Error
from tux2.estimator import Estimator
from tux2.graph import BipartiteGraph, blocked_order, stratified_order
from tux2.runner import Dataset, Setup
from tux2.udfs import mf
from tux2.version import __version__

NAMES = ("user", "item")


def ratings(g, path=None, what="MF needs a rating column: expected 'user item rating'"):
    """``g`` as a user → item graph, refused without a rating per edge."""
    if g.values is None:
        raise InputError(what, path=path or g.source)
    return BipartiteGraph(g.src, g.dst, g.values, g.n_src, g.n_dst, NAMES, g.source, g.ids)


def seen_csr(graph):
    """(indptr, indices) of each user's items in a user → item graph."""
    o = np.argsort(graph.src, kind="stable")
    indptr = np.zeros(graph.n_src + 1, np.int64)
    np.cumsum(np.bincount(graph.src, minlength=graph.n_src), out=indptr[1:])
    return indptr, graph.dst[o].astype(np.int32)


class MF(Estimator):
    """Matrix factorisation by SGD, r̂(u, i) = μ + b_u + b_i + p_u·q_i (paper §4).

    Parameters are those of ``tux2 run mf`` (``reg`` is λ). ``fit(data, test)``:
    ``data`` is anything ``tux2.loaders.load`` takes (a 'user item rating' file,
    (users, items, ratings) arrays with any ids, an (n, 3) array, a scipy.sparse
    matrix, a DataFrame), ``test`` the same in the same ids (test RMSE per epoch).
    Learned: ``user_factors_``, ``item_factors_``, ``user_bias_``, ``item_bias_``,
    ``mu_``, ``ids_`` (the two IdMaps, None where dense ids are the user's) and
    ``seen_`` (each user's training items, left out of ``recommend``)."""

    algorithm = "mf"
    _resumable = ("eval_every",)
    _watch = "train_rmse"

    def __init__(self, k=50, epochs=10, lr=None, reg=0.05, mode="sgd", batch_size=None, batch_unit="edge",
                 enumerate="item", step="adagrad", biases=True, order=None, blocks=None, overlap="error",
                 partitioner=None, seed=0, eval_every=1, duplicates="error"):
        self.k, self.epochs, self.lr, self.reg, self.mode = k, epochs, lr, reg, mode
        self.batch_size, self.batch_unit, self.enumerate, self.step = batch_size, batch_unit, enumerate, step
        self.biases, self.order, self.blocks, self.overlap = biases, order, blocks, overlap
        self.partitioner, self.seed, self.eval_every, self.duplicates = partitioner, seed, eval_every, duplicates

    # ------------------------------------------------------------ data → program
    def load_data(self, data, test=None, ids="auto"):
        """Training ratings and, when given, test ratings encoded in the training ids
        (the vertex counts cover both)."""
        if isinstance(data, np.ndarray) and data.ndim == 2 and data.shape[1] == 3:
            data = (data[:, 0].astype(np.int64), data[:, 1].astype(np.int64), data[:, 2])
        if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
            g = loaders.load_edges(data, ids=ids, duplicates=self.duplicates, type_names=NAMES)
        else:
            g = loaders.load(data, **({} if isinstance(data, BipartiteGraph) else {"duplicates": self.duplicates}))
        train = ratings(g)
        if test is None:
            return Dataset(train)
        mapped = any(m is not None for m in train.ids)
        if isinstance(test, tuple):
            u, i, r = (np.asarray(x) for x in test)
            t = BipartiteGraph(*(m.encode(x, n) if m is not None else x.astype(np.int64)
                                 for m, x, n in zip(train.ids, (u, i), NAMES)), r, source="test")
        elif isinstance(test, (str, bytes)) or hasattr(test, "__fspath__"):
            t = loaders.load_edges(test, ids="string" if mapped else "int", duplicates=self.duplicates,
                                   type_names=NAMES, id_maps=train.ids if mapped else None)
        else:
            t = loaders.load(test)
        t = ratings(t, what="test file needs a rating column")
        n_u, n_i = max(train.n_src, t.n_src), max(train.n_dst, t.n_dst)
        return Dataset(BipartiteGraph(train.src, train.dst, train.values, n_u, n_i, NAMES, train.source, train.ids),
                       BipartiteGraph(t.src, t.dst, t.values, n_u, n_i, NAMES, t.source, train.ids))

    def schedule(self, parts):
        """(order, blocks, partitioner): per-edge SGD runs in strata on the stratified
        partitioner, so every P up to ``blocks`` gives the one-partition model; the
        mini-batch form accumulates and needs no strata."""
        order = self.order or ("strata" if self.mode == "sgd" else "blocked")
        blocks = self.blocks if self.blocks is not None else max(16, parts)   # the model depends on B only
        partitioner = self.partitioner or ("stratified" if order == "strata" else "bicut")
        if order == "strata" and self.batch_unit == "vertex":
            raise Tux2Error("--batch-unit vertex does not cut clocks at strata: per-edge SGD (--mode sgd) runs in "
                            "strata of edges; use --batch-unit edge, or --mode minibatch")
        if order == "strata" and partitioner != "stratified" and parts > 1:
            raise Tux2Error(f"--order strata needs --partitioner stratified (got {partitioner}): its parts own "
                            "whole row blocks, which is what makes the strata conflict-free; leave --partitioner "
                            "out, or use --mode minibatch, whose Exchange only accumulates")
        if partitioner == "stratified" and parts > blocks:
            raise Tux2Error(f"{parts} partitions need --blocks >= {parts} (got {blocks})")
        return order, blocks, partitioner

    def single_clock(self):
        """One clock per epoch (per-edge SGD without --batch-size)."""
        return self.batch_size is None and self.mode == "sgd"

    def order_edges(self, train, order, blocks):
        """(train in the global edge order, strata bounds or None)."""
        if order == "strata":
            perm, strata = stratified_order(train.src, train.dst, train.n_src, train.n_dst, blocks, seed=self.seed)
            return train.permuted(perm), strata
        if order == "blocked":       # one clock per epoch: LibMF's order inside tiles; several: file order
            return train.permuted(blocked_order(train.src, train.dst, train.n_src, train.n_dst, seed=self.seed,
                                                within="sorted" if self.single_clock() else "input")), None
        if order == "shuffle":
            return train.permuted(np.random.default_rng(self.seed).permutation(train.num_edges)), None
        return train, None

    def prepare(self, data, parts):
        order, blocks, partitioner = self.schedule(parts)
        train = data.train
        if "assignment" in data.facts:           # tux2.ingress: this worker's share, placed and ordered
            strata, mu, engine = train.strata, data.facts["mu"], {"assignment": data.facts["assignment"]}
        else:
            train, strata = self.order_edges(train, order, blocks)
            mu = float(train.values.mean()) if train.num_edges else 0.0
            engine = {"partitioner": partitioner}
        batch = self.batch_size
        if batch is None and self.mode == "minibatch" and self.batch_unit == "vertex":
            # about MINIBATCH_SIZE edges' worth of the enumerated vertices (a whole epoch in one step
            # takes one AdaGrad step per epoch, and its first one is large)
            n_enum = train.n_src if self.enumerate == "user" else train.n_dst
            batch = max(1, round(mf.MINIBATCH_SIZE * n_enum / max(train.num_edges, 1)))
        prog = mf.program(k=self.k, mode=self.mode, lr=self.lr, reg=self.reg, batch_size=batch,
                          batch_unit=self.batch_unit, enumerate=self.enumerate, overlap=self.overlap,
                          step=self.step, biases=self.biases, mu=mu)
        engine.update(strata=strata, partitioner_options={"blocks": blocks} if partitioner == "stratified" else None)
        mapped = any(m is not None for m in getattr(data.train, "ids", ()))
        return Setup(train, prog, engine, test=data.test, evaluate=data.test is not None or "assignment" in data.facts,
                     mu=mu, source=data.source, partitioner=partitioner,
                     ingress="assignment" in data.facts, ids=getattr(data.train, "ids", (None, None)),
                     meta={"partitioner": partitioner, "lr": prog.context.init["lr"], "mu": mu,
                           "ids": "string" if mapped else "int"})

    # ------------------------------------------------------------ the run
    def record(self, eng, s):
        i = eng.iteration
        rec = {"train_rmse": eng.context()["rmse"]}
        if s.evaluate:                          # rank 0 evaluates; the gathers are collective
            evaluate = i == self.epochs or (self.eval_every > 0 and i % self.eval_every == 0)
            U, I = (eng.vertex_data("user"), eng.vertex_data("item")) if evaluate else (None, None)
            rec["test_rmse"] = mf.rmse(U, I, s.test, s.mu) if U is not None and s.test is not None else None
        rec["clock"] = eng.clock
        return rec

    def _rates(self, s):
        return {"edges_per_s": s.graph.num_edges}

    def _header(self, s, parts, world):
        test = s.test.num_edges if s.test is not None else 0
        return [f"tux2 {__version__} mf ({self.mode}): {s.source}",
                f"  train {s.graph.num_edges} ratings, test {test}; {s.graph.n_src} users × {s.graph.n_dst} items; "
                f"k={self.k}, P={parts} ({s.partitioner})" + (f", {world} workers" if world > 1 else "")
                + (", distributed ingress" if s.ingress else "")]

    def _line(self, rec, n):
        return (f"epoch {rec['epoch']:3d}/{n}  train_rmse {rec['train_rmse']:.4f}  "
                + (f"test_rmse {rec['test_rmse']:.4f}  " if rec.get("test_rmse") is not None else "")
                + f"time {rec['time_s']:.3f}s  ({rec['edges_per_s'] / 1e6:.1f} M edges/s)")

    def _diverged(self, rec):
        if not np.isfinite(rec["train_rmse"]):
            return f"training diverged at epoch {rec['epoch']} (RMSE is not finite); lower --lr"
        return None

    def read_model(self, eng, s):
        U, I = eng.vertex_data("user"), eng.vertex_data("item")
        g = s.graph
        if s.ingress:                             # each worker holds some edges: the rated items, gathered
            pieces = eng.transport.allgather("seen", [g.src, g.dst])
            g = BipartiteGraph(np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]),
                               None, g.n_src, g.n_dst, NAMES)
        if U is None:
            return
        self._set(U, I, s.mu, s.ids, seen_csr(g))

    def _set(self, users, items, mu, ids, seen):
        self.user_factors_, self.user_bias_ = np.asarray(users["p"], np.float64), np.asarray(users["b"], np.float64)
        self.item_factors_, self.item_bias_ = np.asarray(items["p"], np.float64), np.asarray(items["b"], np.float64)
        self.mu_, self.ids_, self.seen_ = float(mu), tuple(ids), seen

    # ------------------------------------------------------------ files
    def _files(self):
        out = {f"{name}.npz": files.npz({"p": p.astype(np.float32), "b": b.astype(np.float32),
                                         "ids": loaders.save_ids(m, len(p))})
               for name, p, b, m in (("user", self.user_factors_, self.user_bias_, self.ids_[0]),
                                     ("item", self.item_factors_, self.item_bias_, self.ids_[1]))}
        if self.seen_ is not None:
            out["seen.npz"] = files.npz({"indptr": self.seen_[0], "indices": self.seen_[1]})
        return out

    def _meta(self):
        return {**super()._meta(), "mu": self.mu_, "vertex_types": list(NAMES)}

    def _restore(self, directory, meta):
        from tux2 import model_check
        meta, arrays = model_check.read_model(directory, "mf", ("user.npz", "item.npz"), ("seen.npz",))
        model_check.check_mf(directory, meta, arrays)
        seen = arrays.get("seen.npz")
        self._set(arrays["user.npz"], arrays["item.npz"], meta.get("mu", 0.0),
                  (loaders.loaded_ids(arrays["user.npz"]["ids"]), loaders.loaded_ids(arrays["item.npz"]["ids"])),
                  (seen["indptr"], seen["indices"]) if seen is not None else None)

    # ------------------------------------------------------------ predictions
    @property
    def n_users(self):
        return len(self.user_factors_)

    @property
    def n_items(self):
        return len(self.item_factors_)

    def dense(self, side, x, what):
        """Dense ids of the user's ids ``x`` of one side (0 users, 1 items)."""
        m = self.ids_[side]
        x = np.atleast_1d(np.asarray(x))
        if m is not None:
            return m.encode(x.astype(m.tokens.dtype) if x.dtype.kind != m.tokens.dtype.kind else x, what)
        n = (self.n_users, self.n_items)[side]
        if x.dtype.kind not in "iu" or (len(x) and (x.min() < 0 or x.max() >= n)):
            bad = (x[(x < 0) | (x >= n)][0] if x.dtype.kind in "iu" else x[0]).item()
            raise InputError(f"unknown {what} {bad!r} (the model has {n}, ids 0 … {n - 1})", path="predict")
        return x.astype(np.int64)

    def user_ids(self, side, dense):
        """The user's ids of dense ids of one side."""
        m = self.ids_[side]
        return dense if m is None else m.decode(dense)

    def predict(self, users, items):
        """Predicted ratings for the pairs (users[i], items[i]), in the user's ids."""
        u, i = self.dense(0, users, "user"), self.dense(1, items, "item")
        if len(u) != len(i):
            raise ValueError(f"{len(u)} users but {len(i)} items")
        return self.score_dense(u, i)

    def score_dense(self, u, i):
        """Predicted ratings for dense user and item ids."""
        return (self.mu_ + self.user_bias_[u] + self.item_bias_[i]
                + np.einsum("ij,ij->i", self.user_factors_[u], self.item_factors_[i]))

    def score(self, X, y=None):
        """−RMSE on the (user, item, rating) rows of ``X`` (scikit-learn's "higher is
        better"); ids the model has not seen are predicted from μ and the known bias."""
        X = np.asarray(X)
        u, i, r = X[:, 0].astype(np.int64), X[:, 1].astype(np.int64), np.asarray(X[:, 2], np.float64)
        ku, ki = (u >= 0) & (u < self.n_users), (i >= 0) & (i < self.n_items)
        uu, ii = np.where(ku, u, 0), np.where(ki, i, 0)
        pred = (self.mu_ + np.where(ku, self.user_bias_[uu], 0) + np.where(ki, self.item_bias_[ii], 0)
                + np.where(ku & ki, np.einsum("ij,ij->i", self.user_factors_[uu], self.item_factors_[ii]), 0))
        return -float(np.sqrt(np.mean((r - pred) ** 2)))

    def recommend(self, users=None, k=10, exclude_seen=True, chunk=1024):
        """Top-``k`` items per user (all users by default) by predicted rating, leaving
        out the user's training items: (users, items (n × k), scores (n × k)) in the
        user's ids; a row has fewer than k entries (item None / score nan) only when
        the user has seen nearly every item."""
        u = np.arange(self.n_users) if users is None else self.dense(0, users, "user")
        k = int(min(k, self.n_items))
        top = np.full((len(u), k), -1, np.int64)
        score = np.full((len(u), k), np.nan)
        for lo in range(0, len(u), chunk):
            uu = u[lo: lo + chunk]
            S = self.user_factors_[uu] @ self.item_factors_.T + self.item_bias_[None, :] \
                + (self.mu_ + self.user_bias_[uu])[:, None]
            if exclude_seen and self.seen_ is not None:
                indptr, indices = self.seen_
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
        items = self.user_ids(1, np.maximum(top, 0)).astype(object)
        items[top < 0] = None
        return self.user_ids(0, u), items, score
