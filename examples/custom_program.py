"""Write your own algorithm as UDFs and a stage sequence (paper Fig. 5).

Matrix factorisation in its mini-batch form, spelled out: Exchange accumulates
gradients on every edge of a mini-batch, Apply updates the masters, GlobalSync
turns the summed squared error into an RMSE. Run: python examples/custom_program.py
"""
import math

from tux2 import Apply, ContextSpec, Engine, Exchange, GlobalSync, MiniBatch, Program, VertexType
from tux2.datasets import netflix_like

K = 16


def exchange(u, v, e, a_u, a_v, ctx):           # on every edge of the mini-batch
    err = e.rating - ctx.mu
    for j in range(ctx.k):
        err -= u.p[j] * v.p[j]
    ctx.loss += err * err
    ctx.n += 1
    for j in range(ctx.k):                       # (a_user, a_item) += Gradient(loss, ...)
        a_u.p[j] += ctx.reg * u.p[j] - err * v.p[j]
        a_v.p[j] += ctx.reg * v.p[j] - err * u.p[j]


def apply(v, a, ctx):                            # at each touched master
    for j in range(ctx.k):
        v.p[j] -= ctx.lr * a.p[j]


def finalize(ctx):                               # after contexts are combined
    ctx.rmse = math.sqrt(ctx.loss / max(ctx.n, 1.0))


def init(type_name, data, rng):
    data["p"] = rng.normal(0, 0.3, (len(data), K))


train, test = netflix_like(n_users=5000, n_items=500, n_ratings=200_000, seed=0)
program = Program(
    types=(VertexType("user", sync={"p": ("f4", K)}), VertexType("item", sync={"p": ("f4", K)})),
    edge={"rating": "f4"},
    context=ContextSpec({"k": "i8", "lr": "f4", "reg": "f4", "mu": "f4", "loss": "f8", "n": "f8", "rmse": "f8"},
                        sum=("loss", "n"), init={"k": K, "lr": 0.02, "reg": 0.05, "mu": float(train.values.mean())}),
    stages=[MiniBatch(2000, [Exchange(exchange), Apply(apply)]), GlobalSync(finalize=finalize)],
    init_vertices=init)

engine = Engine(program, train, partitions=4, partitioner="bicut")
for epoch in range(1, 11):
    engine.run(1)
    print(f"epoch {epoch:2d}  train RMSE {engine.context()['rmse']:.4f}")
