"""LDA by collapsed Gibbs sampling: tux2 (SparseLDA program, 1 partition: untiled on 1
thread, and in tux2.LDA's default 8 × 8 tiles on 1 and 2 threads) vs tomotopy
(``tp.LDAModel``, workers=1 and 2), same corpus, K, α, β, iterations.

The corpus is drawn from a planted LDA model (tux2.datasets.lda_corpus: θ ~ Dir(α),
φ ~ Dir(β), Poisson document lengths), its vocabulary restricted to words that occur,
as tomotopy's is; so both report the same log p(w, z) per token. tomotopy's α
optimisation is switched off (``optim_interval = 0``) so both keep the same α.

All run in alternating blocks of 10 iterations so load on this shared machine hits
them alike. tux2's time includes its per-iteration log-likelihood GlobalSync; tomotopy
computes its log-likelihood outside the timed ``train`` calls.
Final line: {"bench": "lda", "tux2_over_tomotopy_tokens_per_s": R, "tux2_ll": ..., "tomotopy_ll": ...}.
"""
import os
import sys
import time

import numpy as np

from bench.common import CACHE, RESULTS, emit, ensure, figure, machine, report

LOG = "lda"
BLOCK = 10


def corpus_cached(n_docs, n_words, n_topics, doc_length, alpha, beta, seed=0):
    from tux2.datasets import lda_corpus
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"lda_{n_docs}_{n_words}_{n_topics}_{doc_length}_{alpha}_{beta}_{seed}.npz")
    if not os.path.exists(path):
        t = time.perf_counter()
        d, w, c, phi = lda_corpus(n_docs, n_words, n_topics, doc_length, alpha, beta, seed)
        np.savez(path + ".tmp.npz", docs=d, words=w, counts=c, V=phi.shape[1])
        os.replace(path + ".tmp.npz", path)
        print(f"# generated {path} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    z = np.load(path)
    return z["docs"], z["words"], z["counts"], int(z["V"]), path


def engine(docs, words, counts, D, V, K, alpha, beta, threads=None):
    """tux2's SparseLDA program on one partition over (doc, word, count) triples: untiled
    (``threads`` None), or in the default 8 × 8 tiles (tux2.LDA's) on ``threads`` threads."""
    from tux2 import BipartiteGraph, Engine
    from tux2.udfs import lda
    s, w, c = lda.token_edges(docs, words, counts)
    if threads is None:
        return Engine(lda.program(s, w, c, D, V, K=K, alpha=alpha, beta=beta, seed=0),
                      BipartiteGraph(s, w, None, D, V, ("doc", "word")), partitions=1, partitioner="bicut",
                      partitioner_options={"favorite": 0}, seed=0)
    order, strata, tiles, blk = lda.tiled_order(s, w, D, V)
    s, w, c = s[order], w[order], c[order]
    return Engine(lda.program(s, w, c, D, V, K=K, alpha=alpha, beta=beta, seed=0, doc_block=blk),
                  BipartiteGraph(s, w, None, D, V, ("doc", "word")), partitions=1, partitioner="stratified",
                  partitioner_options={"blocks": lda.BLOCKS}, strata=strata, tiles=tiles, threads=threads, seed=0)


def main(args):
    quick = getattr(args, "quick", False)
    D, Vmax, L = (10_000, 10_000, 100) if quick else (50_000, 20_000, 100)
    K, alpha, beta = 100, 0.1, 0.01
    iters = 30 if quick else 100
    docs, words, counts, V, path = corpus_cached(D, Vmax, K, L, alpha, beta)
    tokens = int(counts.sum())
    info = {"bench": "lda", "docs": D, "vocabulary": V, "tokens": tokens, "pairs": len(counts), "K": K,
            "alpha": alpha, "beta": beta, "iterations": iters, **machine()}
    emit({**info, "event": "dataset", "path": path}, LOG)

    # --- tux2: untiled on one thread (the peer's form), and the default tiles on 1 and 2 threads
    engines = {}
    for name, threads in (("tux2", None), ("tux2 tiled", 1), ("tux2 tiled 2 threads", 2)):
        t = time.perf_counter()
        engines[name] = engine(docs, words, counts, D, V, K, alpha, beta, threads)
        emit({"bench": "lda", "system": name, "event": "setup", "seconds": time.perf_counter() - t}, LOG)

    # --- tomotopy: a peer that cannot be had is reported as skipped (bench/README.md); tux2's rows stay
    try:
        tp = ensure("tomotopy")
    except RuntimeError as e:
        emit({"bench": "lda", "system": "tomotopy", "skipped": str(e)}, LOG)
        tp = None
    models = {}
    if tp is not None:
        vocab = [str(i) for i in range(V)]
        bounds = np.searchsorted(docs, np.arange(D + 1))
        for name, workers in (("tomotopy", 1), ("tomotopy 2 workers", 2)):
            t = time.perf_counter()
            mdl = tp.LDAModel(k=K, alpha=alpha, eta=beta, seed=0)
            mdl.optim_interval = 0
            for d in range(D):
                a, b = bounds[d], bounds[d + 1]
                mdl.add_doc([vocab[x] for x, n in zip(words[a:b], counts[a:b]) for _ in range(n)])
            mdl.train(0, workers=workers)
            models[name] = (mdl, workers)
            emit({"bench": "lda", "system": name, "event": "setup", "seconds": time.perf_counter() - t,
                  "version": tp.__version__}, LOG)

    systems = list(engines) + list(models)
    curves = {name: [] for name in systems}
    total = {name: 0.0 for name in systems}
    done = 0
    while done < iters:             # alternating blocks, so load on this shared machine hits all alike
        n = min(BLOCK, iters - done)
        lls = {}
        for name, eng in engines.items():
            t = time.perf_counter()
            eng.run(n)
            total[name] += time.perf_counter() - t
            lls[name] = float(eng.context()["ll_per_token"])
        for name, (mdl, workers) in models.items():
            t = time.perf_counter()
            mdl.train(n, workers=workers)
            total[name] += time.perf_counter() - t
            lls[name] = float(mdl.ll_per_word)
        done += n
        for name, ll in lls.items():
            curves[name].append((done, total[name], ll))
            emit({"bench": "lda", "system": name, "iteration": done, "seconds": total[name],
                  "tokens_per_s": tokens * done / total[name], "ll_per_token": ll}, LOG)
    _plot(curves, tokens, K)
    rate = {name: tokens * iters / total[name] for name in systems}
    labels = {"tux2": "tux2 (SparseLDA, untiled, 1 thread)", "tux2 tiled": "tux2 (default 8 × 8 tiles, 1 thread)",
              "tux2 tiled 2 threads": "tux2 (default 8 × 8 tiles, 2 threads)"}
    rows = [[labels.get(name, f"{name} {tp.__version__}" if tp else name), rate[name] / 1e6, curves[name][-1][2]]
            for name in systems]
    tll = curves["tux2"][-1][2]
    if not models:
        r = pll = None
        notes = ["tomotopy could not be had: skipped (the reason is in lda.jsonl)."]
    else:
        r = total["tomotopy"] / total["tux2"]
        pll = curves["tomotopy"][-1][2]
        notes = [f"tux2 / tomotopy tokens per second, 1 thread: **{r:.2f}×** (tiled: "
                 f"{total['tomotopy'] / total['tux2 tiled']:.2f}×); 2 threads against tomotopy's 2 workers: "
                 f"**{total['tomotopy 2 workers'] / total['tux2 tiled 2 threads']:.2f}×**."]
    report("lda", "Peer: LDA by collapsed Gibbs sampling, tux2 vs tomotopy (1 and 2 threads)",
           f"{tokens:,} tokens, {D:,} documents, {V:,} words (planted LDA corpus), K = {K}, α = {alpha}, "
           f"β = {beta}, {iters} iterations", ["system", "M tokens/s", "log p(w, z) per token"], rows,
           peers={"tomotopy": tp.__version__ if tp is not None else "not installed: skipped"},
           notes=notes, pngs=[os.path.join(RESULTS, "lda.png")])
    two = models and {"tux2_2_threads_over_tomotopy_2_workers": total["tomotopy 2 workers"] / total["tux2 tiled 2 threads"],
                      "tux2_tiled_2_threads_ll": curves["tux2 tiled 2 threads"][-1][2],
                      "tomotopy_2_workers_ll": curves["tomotopy 2 workers"][-1][2]}
    emit({"bench": "lda", "tux2_over_tomotopy_tokens_per_s": r, "tux2_ll": tll, "tomotopy_ll": pll,
          "ll_relative_difference": None if pll is None else abs(tll - pll) / abs(pll),
          "tux2_tiled_over_tomotopy_tokens_per_s": None if not models else total["tomotopy"] / total["tux2 tiled"],
          "tux2_tiled_ll": curves["tux2 tiled"][-1][2], **(two or {}),
          "tux2_tokens_per_s": rate["tux2"], "tomotopy_tokens_per_s": rate.get("tomotopy"), "tokens": tokens,
          "iterations": iters, "tomotopy_version": tp.__version__ if tp is not None else None}, LOG)
    return 0


def _plot(curves, tokens, K):
    with figure("lda") as ax:
        if ax is None:
            return
        for name, pts in curves.items():
            ax.plot([p[1] for p in pts], [p[2] for p in pts], marker="o", ms=3, label=name)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("log p(w, z) per token")
        ax.set_title(f"LDA, K={K}, {tokens / 1e6:.1f} M tokens")
        ax.legend()
