"""Implicit ALS's confidence form: linear c = 1 + α·r against Hu et al.'s log scaling
c = 1 + α·log(1 + r/ε) (ε = 1), tux2's defaults otherwise (k 50, λ 0.07, 10 epochs), with
the ``implicit`` package at its own defaults (k 100, λ 0.01, α 1, 15 iterations, conjugate
gradient; c = 1 + α·value) as the peer, on two kinds of implicit data:

* play counts (tux2.datasets.plays_like: Last.fm-shaped, per-user activity Zipf 1.5,
  heavy-tailed counts) whose counts carry taste (more plays, a higher preference score;
  ``count_taste`` 1 and 0.4) or none (0), 20 % of each user's items held out;
* the Netflix-shaped set's pairs rated 4 or 5 as events of value 1 (bench.als's implicit
  data; 20k users × 2k items; full: generator seeds 0 and 1), where log at α is linear at α·log 2.

Quality only (NDCG@10 and precision@10 of the held-out items, tux2.estimators.mf.ranking_at
for every system, most-popular beside): this is what the README's table of confidence
forms comes from. Final line: {"bench": "als_confidence", "best": {data: setting}}.
"""
import os
import time

import numpy as np

from bench.common import emit, netflix_cached, report, version

LOG = "als_confidence"
SETTINGS = [("linear", 1.0), ("linear", 10.0), ("linear", 40.0), ("log", 1.0), ("log", 3.0), ("log", 10.0),
            ("log", 40.0)]


def datasets(quick):
    from tux2.datasets import plays_like
    from tux2.graph import BipartiteGraph

    def liked(g):
        keep = g.values >= 4
        return BipartiteGraph(g.src[keep], g.dst[keep], np.ones(int(keep.sum()), np.float32), g.n_src, g.n_dst,
                              g.type_names)
    yield "plays, counts carry taste (plays_like seed 0)", plays_like(seed=0)
    if not quick:
        yield "plays, counts carry taste (seed 1)", plays_like(seed=1)
        yield "plays, counts carry less taste (count_taste 0.4, seed 2)", plays_like(seed=2, count_taste=0.4)
        yield "plays, counts carry no taste (count_taste 0, seed 3)", plays_like(seed=3, count_taste=0.0)
    for seed in (0,) if quick else (0, 1):
        tr, te, _ = netflix_cached(20_000, 2_000, 1_000_000, seed=seed)
        yield f"Netflix-shaped, pairs rated >= 4 as events (value 1), seed {seed}", (liked(tr), liked(te))


def peer(train, test, seen):
    """The implicit package's ALS at its defaults, one thread: ranking metrics, or None."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        import scipy.sparse as sp
        from implicit.cpu.als import AlternatingLeastSquares
    except ImportError:
        return None
    from tux2.estimators.mf import ranking_at
    M = sp.csr_matrix((train.values.astype(np.float32), (train.src, train.dst)), shape=(train.n_src, train.n_dst))
    m = AlternatingLeastSquares(random_state=0, num_threads=1)
    m.fit(M, show_progress=False)
    zeros = (np.zeros(train.n_src), np.zeros(train.n_dst))
    return ranking_at({"p": m.user_factors, "b": zeros[0]}, {"p": m.item_factors, "b": zeros[1]}, seen, test, 10,
                      cold=np.bincount(seen[1], minlength=train.n_dst))


def main(args):
    import warnings
    from tux2 import MF
    from tux2.estimators.mf import popular_at, seen_csr
    quick = getattr(args, "quick", False)
    rows, best = [], {}
    for name, (train, test) in datasets(quick):
        seen = seen_csr(train)
        pop = popular_at(seen, test, 10)
        v = train.values
        emit({"bench": LOG, "data": name, "system": "most-popular", "train": int(train.num_edges),
              "test": int(test.num_edges), "median_count": float(np.median(v)), "max_count": float(v.max()),
              "ndcg@10": pop["ndcg"], "precision@10": pop["precision"]}, LOG)
        row = [name, f"{pop['ndcg']:.4f}"]
        scores = {}
        for form, alpha in SETTINGS:
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")         # the runs' notes (overfitting, heavy tails)
                m = MF(mode="als", implicit=True, confidence=form, alpha=alpha, epochs=10).fit(train, test)
            h = m.history_[-1]
            scores[f"{form} {alpha:g}"] = h["ndcg@10"]
            emit({"bench": LOG, "data": name, "system": "tux2", "confidence": form, "alpha": alpha,
                  "ndcg@10": h["ndcg@10"], "precision@10": h["precision@10"],
                  "ndcg@10_per_epoch": [r["ndcg@10"] for r in m.history_], "seconds": time.perf_counter() - t}, LOG)
            row.append(f"{h['ndcg@10']:.4f} / {h['precision@10']:.4f}")
        p = peer(train, test, seen)
        if p is not None:
            emit({"bench": LOG, "data": name, "system": "implicit", "version": version("implicit"),
                  "ndcg@10": p["ndcg"], "precision@10": p["precision"]}, LOG)
        row.append(f"{p['ndcg']:.4f} / {p['precision']:.4f}" if p is not None else None)
        best[name] = max(scores, key=scores.get)
        rows.append(row)
    report(LOG, "Implicit ALS: linear vs log confidence (NDCG@10 / precision@10 of held-out items)",
           "tux2.datasets.plays_like (4,000 users × 6,000 items, ~220k plays) and the Netflix-shaped set's pairs "
           "rated >= 4 (20k users × 2k items); tux2 k 50, λ 0.07, 10 epochs; log with ε = 1",
           ["data", "most-popular NDCG", *[f"{f} α={a:g}" for f, a in SETTINGS], "implicit (its defaults)"], rows,
           peers={"implicit": version("implicit")},
           notes=["Best tux2 setting per data set: " + "; ".join(f"{k}: {v}" for k, v in best.items())])
    emit({"bench": LOG, "best": best}, LOG)
    return 0
