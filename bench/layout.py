"""Fig. 8: array layout vs a hash-table layout, time per iteration of MF, LDA and
BlockPG.

Both layouts run the same numba loop over the same edges in the same order; only
the way an edge reaches its vertex data differs:

* array (TuX²'s): an edge holds the local index of its endpoints; vertex data are
  rows of contiguous arrays;
* hash table (a parameter server's): an edge holds the global key of its model
  vertex; the model lives in a hash map key → value (numba's typed Dict, keys
  scrambled as a PS's would be), one lookup per access. As in the PS
  implementations the paper measured: MF keeps users and items in the store
  (Petuum), LDA its word–topic counts, BlockPG its feature weights and gradients;
  the data-parallel side (documents, sample margins) stays in local arrays.

The algorithms are plain per-edge SGD (MF, k = 50), O(K) collapsed Gibbs sampling
(LDA, K = 100) and block proximal gradient by sample rows (BlockPG, blocks of 500
features). The tux2 engine's own program on the same data (``Engine.run(1)``,
1 partition) is listed beside them for scale; its programs are richer (LibMF's
adaptive step, the SparseLDA sampler, BlockPG with shrinking), so only the two
layout columns are like for like. Final line: {"bench": "layout", "hash_over_array": {algo: r}, ...}.
"""
import math
import os

import numba
import numpy as np
from numba import njit, types
from numba.typed import Dict

from bench.common import RESULTS, classification_cached, emit, figure, machine, netflix_cached, report, timed

LOG = "layout"
SCRAMBLE = np.int64(0x9E3779B97F4A7C15 & 0x7FFFFFFFFFFFFFFF)


def keys_of(ids, salt):
    """Global keys as a PS would see them: unique, scattered 63-bit integers."""
    return (np.asarray(ids, np.int64) * SCRAMBLE + salt) & np.int64(0x7FFFFFFFFFFFFFFF)


def vec_store(keys, rows):
    """A hash-table parameter store: key → its own row (a copy of ``rows[i]``, any dtype)."""
    d = Dict.empty(key_type=types.int64, value_type=types.Array(numba.from_dtype(rows.dtype), 1, "C"))
    _fill_rows(d, np.asarray(keys, np.int64), rows)
    return d


@njit(cache=True)
def _fill_rows(d, keys, rows):
    for i in range(len(keys)):
        d[keys[i]] = rows[i].copy()


@njit(cache=True)
def _scalar_dict(keys):
    d = Dict.empty(key_type=types.int64, value_type=types.float64)
    for i in range(len(keys)):
        d[keys[i]] = 0.0
    return d


# ---------------------------------------------------------------- MF: per-edge SGD
@njit(cache=True, fastmath=True)
def _mf_step(p, q, r, mu, lr, reg):
    err = r - mu
    for j in range(len(p)):
        err -= p[j] * q[j]
    for j in range(len(p)):
        pj, qj = p[j], q[j]
        p[j] = pj - lr * (reg * pj - err * qj)
        q[j] = qj - lr * (reg * qj - err * pj)
    return err * err


@njit(cache=True)
def mf_array(u, i, r, P, Q, mu, lr, reg):
    loss = 0.0
    for e in range(len(u)):
        loss += _mf_step(P[u[e]], Q[i[e]], r[e], mu, lr, reg)
    return math.sqrt(loss / len(u))


@njit(cache=True)
def mf_hash(uk, ik, r, PD, QD, mu, lr, reg):
    loss = 0.0
    for e in range(len(uk)):
        loss += _mf_step(PD[uk[e]], QD[ik[e]], r[e], mu, lr, reg)
    return math.sqrt(loss / len(uk))


# ---------------------------------------------------------------- LDA: O(K) collapsed Gibbs
@njit(cache=True)
def _lda_token(nw, nd, nk, z, alpha, beta, vbeta, p):
    K = len(nk)
    nw[z] -= 1
    nd[z] -= 1
    nk[z] -= 1
    tot = 0.0
    for k in range(K):
        tot += (nd[k] + alpha) * (nw[k] + beta) / (nk[k] + vbeta)
        p[k] = tot
    x = np.random.random() * tot
    k = 0
    while k < K - 1 and p[k] < x:
        k += 1
    nw[k] += 1
    nd[k] += 1
    nk[k] += 1
    return k


@njit(cache=True)
def lda_array(doc, word, z, NW, ND, nk, alpha, beta, vbeta, seed):
    np.random.seed(seed)
    p = np.empty(len(nk))
    for t in range(len(doc)):
        z[t] = _lda_token(NW[word[t]], ND[doc[t]], nk, z[t], alpha, beta, vbeta, p)


@njit(cache=True)
def lda_hash(doc, wkey, z, NWD, ND, nk, alpha, beta, vbeta, seed):
    np.random.seed(seed)
    p = np.empty(len(nk))
    for t in range(len(doc)):
        z[t] = _lda_token(NWD[wkey[t]], ND[doc[t]], nk, z[t], alpha, beta, vbeta, p)


# ---------------------------------------------------------------- BlockPG by sample rows
@njit(cache=True)
def _prox(w, g, h, lam):
    h = h + 1e-12
    zz = w - g / h
    t = lam / h
    return zz - t if zz > t else (zz + t if zz < -t else 0.0)


@njit(cache=True)
def blockpg_array(bptr, samp, feat, x, y, m, w, G, H, bfeat_ptr, bfeat, lam):
    """Edges grouped by block, then sample; ``feat`` local feature index."""
    for b in range(len(bptr) - 1):
        for e in range(bptr[b], bptr[b + 1]):
            i, j = samp[e], feat[e]
            p = 1.0 / (1.0 + math.exp(y[i] * m[i]))
            G[j] -= y[i] * x[e] * p
            H[j] += x[e] * x[e] * p * (1.0 - p)
        for f in range(bfeat_ptr[b], bfeat_ptr[b + 1]):
            j = bfeat[f]
            new = _prox(w[j], G[j], H[j], lam)
            G[j] = new - w[j]                   # G now holds the step
            w[j] = new
        for e in range(bptr[b], bptr[b + 1]):
            m[samp[e]] += x[e] * G[feat[e]]
        for f in range(bfeat_ptr[b], bfeat_ptr[b + 1]):
            G[bfeat[f]] = 0.0
            H[bfeat[f]] = 0.0


@njit(cache=True)
def blockpg_hash(bptr, samp, fkey, x, y, m, WD, GD, HD, bfeat_ptr, bkey, lam):
    """The same with the feature weights, gradients and curvatures in hash maps."""
    for b in range(len(bptr) - 1):
        for e in range(bptr[b], bptr[b + 1]):
            i, k = samp[e], fkey[e]
            p = 1.0 / (1.0 + math.exp(y[i] * m[i]))
            GD[k] = GD[k] - y[i] * x[e] * p
            HD[k] = HD[k] + x[e] * x[e] * p * (1.0 - p)
        for f in range(bfeat_ptr[b], bfeat_ptr[b + 1]):
            k = bkey[f]
            w = WD[k]
            new = _prox(w, GD[k], HD[k], lam)
            GD[k] = new - w
            WD[k] = new
        for e in range(bptr[b], bptr[b + 1]):
            m[samp[e]] += x[e] * GD[fkey[e]]
        for f in range(bfeat_ptr[b], bfeat_ptr[b + 1]):
            GD[bkey[f]] = 0.0
            HD[bkey[f]] = 0.0


def bench_mf(quick, iters):
    from bench.mf import sgd_engine
    size = (20_000, 2_000, 1_000_000) if quick else (100_000, 10_000, 8_000_000)
    train, _, _ = netflix_cached(*size)
    k = 50
    eng, s = sgd_engine(train, k)               # its blocked edge order serves both layouts too
    tr, mu = s.graph, s.mu / s.scale            # the engine's units: ratings / scale
    rng = np.random.default_rng(0)
    P0 = rng.normal(0, 0.1, (tr.n_src, k)).astype(np.float32)
    Q0 = rng.normal(0, 0.1, (tr.n_dst, k)).astype(np.float32)
    u, i, r = tr.src.astype(np.int64), tr.dst.astype(np.int64), tr.values.astype(np.float32)
    P, Q = P0.copy(), Q0.copy()
    arr = timed(lambda: mf_array(u, i, r, P, Q, mu, 0.01, 0.05), iters)
    uk, ik = keys_of(u, 1), keys_of(i, 2)
    PD = vec_store(keys_of(np.arange(tr.n_src), 1), P0)
    QD = vec_store(keys_of(np.arange(tr.n_dst), 2), Q0)
    hsh = timed(lambda: mf_hash(uk, ik, r, PD, QD, mu, 0.01, 0.05), iters)
    e = timed(lambda: eng.run(1), iters)
    return (f"MF: {tr.num_edges:,} ratings ({size[0]:,} users × {size[1]:,} items), k = {k}", tr.num_edges,
            arr, hsh, e)


def bench_lda(quick, iters):
    from bench.lda import corpus_cached, engine
    D, Vmax, L = (10_000, 10_000, 100) if quick else (50_000, 20_000, 100)
    K, alpha, beta = 100, 0.1, 0.01
    docs, words, counts, V, _ = corpus_cached(D, Vmax, K, L, alpha, beta)
    doc = np.repeat(docs, counts).astype(np.int64)
    word = np.repeat(words, counts).astype(np.int64)
    rng = np.random.default_rng(0)
    z0 = rng.integers(0, K, len(doc)).astype(np.int64)
    NW0 = np.zeros((V, K), np.int32)
    ND0 = np.zeros((D, K), np.int32)
    np.add.at(NW0, (word, z0), 1)
    np.add.at(ND0, (doc, z0), 1)
    nk0 = NW0.sum(0).astype(np.int32)
    vbeta = V * beta
    z, NW, ND, nk = z0.copy(), NW0.copy(), ND0.copy(), nk0.copy()
    arr = timed(lambda: lda_array(doc, word, z, NW, ND, nk, alpha, beta, vbeta, 1), iters)
    z, ND, nk = z0.copy(), ND0.copy(), nk0.copy()
    NWD = vec_store(keys_of(np.arange(V), 3), NW0)
    wk = keys_of(word, 3)
    hsh = timed(lambda: lda_hash(doc, wk, z, NWD, ND, nk, alpha, beta, vbeta, 1), iters)
    eng = engine(docs, words, counts, D, V, K, alpha, beta)
    e = timed(lambda: eng.run(1), iters)
    return f"LDA: {len(doc):,} tokens, {D:,} documents, {V:,} words, K = {K}", len(doc), arr, hsh, e


def bench_blockpg(quick, iters):
    from bench.blockpg import engine
    from tux2.udfs.blockpg import shuffle_features
    n, d, nnz = (100_000, 100_000, 32) if quick else (400_000, 500_000, 32)
    block = 500
    g, y, _, _ = classification_cached(n, d, nnz)
    feat, _ = shuffle_features(g.dst, d, seed=0)                 # shuffled blocks, as the engine's
    b = feat // block
    o = np.lexsort((g.src, b))
    samp, feat, x = g.src[o].astype(np.int64), feat[o].astype(np.int64), g.values[o].astype(np.float64)
    nb = -(-d // block)
    bptr = np.searchsorted(b[o], np.arange(nb + 1))
    bfeat = np.arange(d, dtype=np.int64)
    bfeat_ptr = np.minimum(np.arange(nb + 1) * block, d)
    yy = np.where(y > 0, 1.0, -1.0)
    m, w, G, H = np.zeros(n), np.zeros(d), np.zeros(d), np.zeros(d)
    arr = timed(lambda: blockpg_array(bptr, samp, feat, x, yy, m, w, G, H, bfeat_ptr, bfeat, 1.0), iters)
    allk = keys_of(np.arange(d), 4)
    WD, GD, HD = _scalar_dict(allk), _scalar_dict(allk), _scalar_dict(allk)
    m, fk = np.zeros(n), keys_of(feat, 4)
    hsh = timed(lambda: blockpg_hash(bptr, samp, fk, x, yy, m, WD, GD, HD, bfeat_ptr, allk, 1.0), iters)
    eng = engine(g, y, 1.0, block)
    e = timed(lambda: eng.run(1), iters)
    return f"BlockPG: {n:,} samples × {d:,} features, {g.num_edges:,} non-zeros, blocks of {block}", g.num_edges, \
        arr, hsh, e


def main(args):
    quick = getattr(args, "quick", False)
    emit({"bench": "layout", "event": "start", "threads": numba.get_num_threads(), **machine()}, LOG)
    res = {}
    for algo, fn, iters in (("MF", bench_mf, 3), ("LDA", bench_lda, 3 if quick else 5), ("BlockPG", bench_blockpg, 3)):
        data, size, arr, hsh, eng = fn(quick, iters)
        rec = {"bench": "layout", "algo": algo, "data": data, "array_s": float(np.median(arr)),
               "hash_s": float(np.median(hsh)), "engine_s": float(np.median(eng)), "size": size}
        rec["hash_over_array"] = rec["hash_s"] / rec["array_s"]
        emit(rec, LOG)
        res[algo] = rec
    png = plot(res, os.path.join(RESULTS, "layout.png"))
    report("layout", "Fig. 8 analogue: array layout vs hash-table layout (time per iteration, 1 thread)",
           "; ".join(r["data"] for r in res.values()),
           ["algorithm", "array layout (s/iter)", "hash-table layout (s/iter)", "hash / array",
            "tux2 engine, own program (s/iter)"],
           [[a, r["array_s"], r["hash_s"], r["hash_over_array"], r["engine_s"]] for a, r in res.items()],
           notes=["Median of the timed iterations after a warm-up one. The layout columns run the same loop; "
                  "the engine column runs tux2's full program (different update rules), for scale."],
           pngs=[png])
    emit({"bench": "layout", "hash_over_array": {a: r["hash_over_array"] for a, r in res.items()}, "png": png}, LOG)
    return 0


def plot(res, path):
    with figure(path, figsize=(6.5, 4)) as ax:
        if ax is None:
            return None
        x = np.arange(len(res))
        ax.bar(x - 0.2, [r["array_s"] for r in res.values()], width=0.4, label="array layout (TuX²)")
        ax.bar(x + 0.2, [r["hash_s"] for r in res.values()], width=0.4, label="hash-table layout (PS-style)")
        for xi, r in zip(x, res.values()):
            ax.text(xi + 0.2, r["hash_s"], f"{r['hash_over_array']:.1f}×", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x, list(res))
        ax.set_xlabel("algorithm (one thread, quick or full data: see the table)")
        ax.set_ylabel("time per iteration (s)")
        ax.set_title("Data layout: same loop, array index vs hash lookup")
        ax.legend()
    return path
