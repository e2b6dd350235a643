"""Your own program as an estimator: the runner, the metrics records, checkpoints and
``fit(workers=N)`` come with it. Three hooks (tux2.estimator):

* ``prepare(data, parts)``: the data (``data.train``, a user → item graph) → a
  ``tux2.Setup`` with the graph, the program and the Engine's options;
* ``record(eng, setup)``: the metrics of the epoch just run;
* ``read_model(eng, setup)``: the learned state, read out of the engine.

Run: python examples/own_estimator.py
"""
import math

import tux2
from tux2 import Apply, ContextSpec, Exchange, GlobalSync, MiniBatch, Program, Setup, VertexType


def exchange(u, v, e, a_u, a_v, ctx):            # per edge: accumulate the gradient of ½(r − p·q)²
    err = e.rating - ctx.mu
    for j in range(ctx.k):
        err -= u.p[j] * v.p[j]
    ctx.loss += err * err
    ctx.n += 1
    for j in range(ctx.k):
        a_u.p[j] += ctx.reg * u.p[j] - err * v.p[j]
        a_v.p[j] += ctx.reg * v.p[j] - err * u.p[j]


def apply(v, a, ctx):                             # at each touched master
    for j in range(ctx.k):
        v.p[j] -= ctx.lr * a.p[j]


def finalize(ctx):
    ctx.rmse = math.sqrt(ctx.loss / max(ctx.n, 1.0))


class TinyMF(tux2.Estimator):
    """Mini-batch MF without biases, the paper's Fig. 5."""

    def __init__(self, k=8, lr=0.02, reg=0.05, batch=2000, epochs=5, seed=0):
        self.k, self.lr, self.reg, self.batch, self.epochs, self.seed = k, lr, reg, batch, epochs, seed

    def prepare(self, data, parts):
        k = self.k

        def init(type_name, records, rng):
            records["p"] = rng.normal(0, 0.3, (len(records), k))
        mu = float(data.train.values.mean())
        program = Program(
            types=(VertexType("user", sync={"p": ("f4", k)}), VertexType("item", sync={"p": ("f4", k)})),
            edge={"rating": "f4"},
            context=ContextSpec({"k": "i8", "lr": "f4", "reg": "f4", "mu": "f4", "loss": "f8", "n": "f8",
                                 "rmse": "f8"}, sum=("loss", "n"),
                                init={"k": k, "lr": self.lr, "reg": self.reg, "mu": mu}),
            stages=[MiniBatch(self.batch, [Exchange(exchange), Apply(apply)]), GlobalSync(finalize=finalize)],
            init_vertices=init)
        return Setup(data.train, program, {"partitioner": "bicut"}, mu=mu)

    def record(self, eng, setup):
        return {"train_rmse": eng.context()["rmse"]}

    def read_model(self, eng, setup):
        users, items = eng.vertex_data("user"), eng.vertex_data("item")     # gathered on rank 0
        if users is not None:
            self.user_factors_, self.item_factors_, self.mu_ = users["p"], items["p"], setup.mu


if __name__ == "__main__":          # fit(workers=2) starts processes that import this file
    from tux2.datasets import netflix_like
    train, _ = netflix_like(n_users=2000, n_items=300, n_ratings=50_000, seed=0)
    one = TinyMF().fit(train, partitions=2)               # two partitions in this process
    two = TinyMF().fit(train, workers=2)                  # one in each of two worker processes
    for rec in one.history_:
        print(f"epoch {rec['epoch']}  train RMSE {rec['train_rmse']:.4f}")
    same = bool((one.item_factors_ == two.item_factors_).all())
    print("2 workers give the 2-partition model bit for bit:", same)
    assert same
