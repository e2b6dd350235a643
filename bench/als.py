"""ALS: tux2's ``MF(mode="als")`` vs Spark MLlib's ALS (explicit ratings) and the
``implicit`` package's ALS (implicit feedback), same data, same k, λ and iterations.

* Explicit: the Netflix-shaped set (tux2.datasets.netflix_like), test RMSE after N
  iterations and seconds per iteration. Spark's ALS has no biases and no mean: it trains
  on the ratings less the training mean μ (μ added back to its predictions), and tux2
  runs ``biases=False`` (r̂ = μ + p·q), so both minimise the same weighted-λ loss
  Σ(r − μ − p·q)² + λ(Σ n_u|p_u|² + Σ n_i|q_i|²). tux2's default form (with damped
  biases) is a third row. Spark runs local[2] (both cores), tux2 one thread and two
  (2 partitions × 2 threads: the same model up to float order), implicit one thread.
* Implicit: the training pairs rated 4 or 5 as events (value 1, confidence 1 + α), the
  test pairs rated 4 or 5 held out; precision@10 and NDCG@10 of each test user's held-out items, unseen
  items ranked, computed by the same function (tux2.estimators.mf.ranking_at) from each
  system's factors. ``implicit`` takes the confidence matrix itself (its c = alpha·value):
  it is given 1 + α·r with alpha=1, Hu et al.'s c. Rows: tux2's and implicit's exact solver
  (Cholesky; implicit's use_cg=False) and their conjugate gradient (3 steps per solve from
  the last epoch's factors: tux2's ``solver="cg"``, implicit's default), each beside the other.

Seconds per iteration: (t(N iterations) − t(1 iteration)) / (N − 1) for the peers, whose
fit includes setup; tux2's is engine.run(1), timed per epoch (implicit rows: the mean over the
epochs after the first, whose time includes the kernels' first calls, as the peers' leave out
their first iteration). Final line:
{"bench": "als", "tux2_over_spark_s_per_iter": …, "tux2_over_implicit_s_per_iter": … (Cholesky against
Cholesky), "tux2_cg_over_implicit_cg_s_per_iter": …, quality beside}.
"""
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from bench.common import emit, ensure, machine, netflix_cached, report, version

LOG = "als"


def tux2_run(train, test, iters, implicit, parts=1, **params):
    """tux2 ALS on ``parts`` partitions, a thread each: (seconds per epoch list, final
    metric, per-epoch metrics)."""
    from tux2 import MF, Dataset, Engine
    from tux2.estimators.mf import ranking_at, seen_csr, vertex_model
    from tux2.udfs import mf
    s = MF(mode="als", implicit=implicit, epochs=iters, **params).prepare(Dataset(train), parts)
    eng = Engine(s.program, s.graph, partitions=parts, threads=parts, seed=0, **s.engine)
    seen = seen_csr(train) if implicit else None
    times, curve = [], []
    for _ in range(iters):
        t = time.perf_counter()
        eng.run(1)
        times.append(time.perf_counter() - t)
        U, I = vertex_model(eng, s)
        curve.append(ranking_at(U, I, seen, test, 10, cold=np.bincount(seen[1], minlength=len(I["p"])))
                     if implicit else mf.rmse(U, I, test, s.mu))     # (cold: as MF's epochs rank new users)
    return times, curve[-1], curve


def spark_als(train, test, mu, k, reg, iters):
    """Spark MLlib's ALS (DataFrame API, local[2]) on ratings − μ: (seconds per iteration,
    test RMSE, version) or (None, reason, None)."""
    if shutil.which("java") is None:
        return None, "no java on PATH", None
    try:
        ensure("pyspark", "pyspark>=3.5,<4")
    except RuntimeError as e:
        return None, str(e), None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.ml.recommendation import ALS
    from pyspark.sql import SparkSession, functions as F
    d = tempfile.mkdtemp(prefix="tux2-bench-als-")
    try:
        for name, g in (("train", train), ("test", test)):
            np.savetxt(os.path.join(d, f"{name}.csv"), np.c_[g.src, g.dst, g.values - mu], fmt="%d,%d,%.6f")
        spark = (SparkSession.builder.master("local[2]").appName("tux2-bench-als")
                 .config("spark.driver.memory", "6g").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        schema = "user INT, item INT, rating DOUBLE"
        tr = spark.read.csv(os.path.join(d, "train.csv"), schema=schema).cache()
        te = spark.read.csv(os.path.join(d, "test.csv"), schema=schema).cache()
        tr.count(), te.count()
        fits = {}
        for n in (1, iters):
            als = ALS(rank=k, maxIter=n, regParam=reg, implicitPrefs=False, userCol="user", itemCol="item",
                      ratingCol="rating", coldStartStrategy="drop", seed=0)
            t = time.perf_counter()
            model = als.fit(tr)
            model.userFactors.count()           # fit is lazy in part: the factors materialised
            fits[n] = (time.perf_counter() - t, model)
        pred = fits[iters][1].transform(te)
        rmse = pred.select(F.sqrt(F.avg((F.col("rating") - F.col("prediction")) ** 2))).first()[0]
        spark.stop()
        return (fits[iters][0] - fits[1][0]) / (iters - 1), float(rmse), pyspark.__version__
    finally:
        shutil.rmtree(d, ignore_errors=True)


def implicit_als(train, test, k, reg, alpha, iters, use_cg):
    """The implicit package's ALS, one thread: (seconds per iteration, ranking metrics at
    10, version) or (None, reason, None)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        ensure("implicit")
    except RuntimeError as e:
        return None, str(e), None
    import scipy.sparse as sp
    from implicit.cpu.als import AlternatingLeastSquares
    from tux2.estimators.mf import ranking_at, seen_csr
    C = sp.csr_matrix((1.0 + alpha * np.abs(train.values.astype(np.float32)), (train.src, train.dst)),
                      shape=(train.n_src, train.n_dst), dtype=np.float32)
    secs = {}
    for n in (1, iters):
        m = AlternatingLeastSquares(factors=k, regularization=reg, alpha=1.0, iterations=n, use_cg=use_cg,
                                    num_threads=1, random_state=0, calculate_training_loss=False)
        t = time.perf_counter()
        m.fit(C, show_progress=False)
        secs[n] = time.perf_counter() - t
    zeros = (np.zeros(train.n_src), np.zeros(train.n_dst))
    metrics = ranking_at({"p": m.user_factors, "b": zeros[0]}, {"p": m.item_factors, "b": zeros[1]},
                         seen_csr(train), test, 10)
    return (secs[iters] - secs[1]) / (iters - 1), metrics, version("implicit")


def main(args):
    from tux2.graph import BipartiteGraph
    quick = getattr(args, "quick", False)
    n_users, n_items, n_ratings = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    k, iters, reg, reg_i, alpha = 50, 10, 0.05, 0.1, 40.0
    train, test, path = netflix_cached(n_users, n_items, n_ratings)
    mu = float(train.values.mean(dtype=np.float64))
    info = {"bench": "als", "users": n_users, "items": n_items, "train_ratings": train.num_edges,
            "test_ratings": test.num_edges, "k": k, "iterations": iters, "reg": reg, **machine()}
    emit({**info, "event": "dataset", "path": path}, LOG)

    # --- explicit
    rows, out = [], {}
    for label, biases, parts in (("tux2 ALS (no biases, as Spark), 1 thread", False, 1),
                                 ("tux2 ALS (no biases), 2 partitions × 2 threads", False, 2),
                                 ("tux2 ALS (damped biases, the default), 1 thread", True, 1)):
        times, rmse, curve = tux2_run(train, test, iters, False, parts, k=k, reg=reg, biases=biases)
        s_it = float(np.mean(times))
        emit({"bench": "als", "system": "tux2", "explicit": True, "biases": biases, "threads": parts,
              "s_per_iter": s_it, "test_rmse": rmse, "test_rmse_per_iter": curve}, LOG)
        rows.append([label, "explicit", s_it, f"test RMSE {rmse:.4f}"])
        out.setdefault("tux2", (s_it, rmse))
        out.setdefault(f"tux2_{parts}", (s_it, rmse))
    s_spark, rmse_spark, spark_v = spark_als(train, test, mu, k, reg, iters)
    if s_spark is None:
        emit({"bench": "als", "system": "spark-mllib", "skipped": rmse_spark}, LOG)
    else:
        emit({"bench": "als", "system": "spark-mllib", "explicit": True, "s_per_iter": s_spark,
              "test_rmse": rmse_spark, "version": spark_v}, LOG)
        rows.append([f"Spark MLlib {spark_v} ALS (local[2])", "explicit", s_spark, f"test RMSE {rmse_spark:.4f}"])

    # --- implicit: the training pairs as events
    def liked(g):               # the pairs rated 4 or 5, as events (MovieLens' usual implicit set)
        keep = g.values >= 4
        return BipartiteGraph(g.src[keep], g.dst[keep], np.ones(int(keep.sum()), np.float32), g.n_src, g.n_dst,
                              g.type_names)
    events, test = liked(train), liked(test)
    tux2_i = {}
    for solver in ("cholesky", "cg"):
        times, m_tux2, curve = tux2_run(events, test, iters, True, k=k, reg=reg_i, alpha=alpha,
                                          confidence="linear", solver=solver)     # implicit's c = 1 + α·r
        s_tux2_i = float(np.mean(times[1:]))      # (the first epoch's includes the kernels' first calls)
        tux2_i[solver] = (s_tux2_i, m_tux2)
        emit({"bench": "als", "system": "tux2", "implicit": True, "solver": solver, "s_per_iter": s_tux2_i,
              "alpha": alpha, "reg": reg_i, **{f"{m}@10": m_tux2[m] for m in ("precision", "ndcg")},
              "ndcg@10_per_iter": [c["ndcg"] for c in curve]}, LOG)
        rows.append([f"tux2 ALS --implicit --solver {solver}" + (" (3 steps)" if solver == "cg" else "") +
                     ", 1 thread", "implicit", s_tux2_i,
                     f"P@10 {m_tux2['precision']:.4f}, NDCG@10 {m_tux2['ndcg']:.4f}"])
    from tux2.estimators.mf import popular_at, seen_csr
    m_pop = popular_at(seen_csr(events), test, 10)          # no model: what the metrics are read against
    emit({"bench": "als", "system": "most-popular", "implicit": True,
          **{f"{m}@10": m_pop[m] for m in ("precision", "ndcg")}}, LOG)
    rows.append(["most-popular (training counts, no model)", "implicit", None,
                 f"P@10 {m_pop['precision']:.4f}, NDCG@10 {m_pop['ndcg']:.4f}"])
    peers_i = {}
    for cg in (False, True):
        s_imp, m_imp, imp_v = implicit_als(events, test, k, reg_i, alpha, iters, cg)
        if s_imp is None:
            emit({"bench": "als", "system": "implicit", "skipped": m_imp}, LOG)
            break
        peers_i[cg] = (s_imp, m_imp)
        emit({"bench": "als", "system": "implicit", "use_cg": cg, "s_per_iter": s_imp, "version": imp_v,
              **{f"{m}@10": m_imp[m] for m in ("precision", "ndcg")}}, LOG)
        rows.append([f"implicit {imp_v} ALS ({'conjugate gradient' if cg else 'Cholesky'}, 1 thread)", "implicit",
                     s_imp, f"P@10 {m_imp['precision']:.4f}, NDCG@10 {m_imp['ndcg']:.4f}"])
    ratio_spark = out["tux2"][0] / s_spark if s_spark else None
    s_tux2_i, m_tux2 = tux2_i["cholesky"]
    ratio_imp = s_tux2_i / peers_i[False][0] if False in peers_i else None
    ratio_cg = tux2_i["cg"][0] / peers_i[True][0] if True in peers_i else None
    report("als", "Peer: ALS, tux2 vs Spark MLlib (explicit) and implicit (implicit feedback)",
           f"{train.num_edges:,} train / {info['test_ratings']:,} test ratings ({n_users:,} users × {n_items:,} "
           f"items), k = {k}, {iters} iterations; explicit λ = {reg} weighted (per rating); implicit λ = {reg_i} "
           f"plain, α = {alpha}, the pairs rated ≥ 4 as events ({events.num_edges:,} train, {test.num_edges:,} "
           "test)", ["system", "feedback", "s / iteration", "quality"], rows,
           peers={"Spark MLlib": spark_v, "implicit": version("implicit")},
           notes=[f"tux2 / Spark seconds per iteration: **{ratio_spark:.2f}×** (same model: no biases, ratings − μ)"
                  if ratio_spark else "Spark could not be had: skipped (the reason is in als.jsonl).",
                  f"tux2 / implicit seconds per iteration: Cholesky **{ratio_imp:.2f}×**, conjugate gradient "
                  f"**{ratio_cg:.2f}×**" if ratio_imp and ratio_cg else
                  "implicit could not be had: skipped (the reason is in als.jsonl)."])
    emit({"bench": "als", "tux2_over_spark_s_per_iter": ratio_spark,
          "tux2_2threads_over_spark_s_per_iter": out["tux2_2"][0] / s_spark if s_spark else None, "tux2_test_rmse": out["tux2"][1],
          "spark_test_rmse": rmse_spark if s_spark else None, "tux2_over_implicit_s_per_iter": ratio_imp,
          "tux2_ndcg@10": m_tux2["ndcg"], "implicit_ndcg@10": peers_i[False][1]["ndcg"] if ratio_imp else None,
          "tux2_precision@10": m_tux2["precision"], "most_popular_ndcg@10": m_pop["ndcg"],
          "implicit_precision@10": peers_i[False][1]["precision"] if ratio_imp else None,
          "tux2_cg_over_implicit_cg_s_per_iter": ratio_cg, "tux2_cg_ndcg@10": tux2_i["cg"][1]["ndcg"],
          "implicit_cg_ndcg@10": peers_i[True][1]["ndcg"] if ratio_cg else None,
          "train_ratings": train.num_edges}, LOG)
    return 0
