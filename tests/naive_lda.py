"""Plain-Python LDA samplers over token lists: the references of udfs/lda.py."""
import math

import numpy as np

from tux2.udfs.lda import uniform


def tokens(src, dst, count, seed, K):
    """(doc, word, edge id, slot, initial topic) per token, in edge order."""
    from tux2.udfs.lda import _initial_topics
    out = []
    for e in range(len(src)):
        for t in range(int(count[e])):
            out.append([int(src[e]), int(dst[e]), e, t, int(_initial_topics(np.array([e]), t, seed, K)[0])])
    return out


def counts(toks, D, V, K):
    nd, nw, nk = np.zeros((D, K), int), np.zeros((V, K), int), np.zeros(K, int)
    for d, w, _, _, k in toks:
        nd[d, k] += 1
        nw[w, k] += 1
        nk[k] += 1
    return nd, nw, nk


def sync_iterations(toks, D, V, K, alpha, beta, seed, iters, start=1):
    """Every token drawn from the iteration-start counts with itself excluded; ``alpha``
    a number or K numbers; iterations ``start`` … ``start + iters - 1``."""
    alpha = np.broadcast_to(alpha, K)
    for it in range(start, start + iters):
        nd, nw, nk = counts(toks, D, V, K)
        new = []
        for d, w, e, t, old in toks:
            p = [(alpha[j] + nd[d, j] - (j == old)) * (beta + nw[w, j] - (j == old)) / (V * beta + nk[j] - (j == old))
                 for j in range(K)]
            x = uniform(seed, it, e, t) * sum(p)
            k, acc = K - 1, 0.0
            for j in range(K):
                acc += p[j]
                if x < acc:
                    k = j
                    break
            new.append([d, w, e, t, k])
        toks = new
    return toks


def sparse_iterations(toks, D, V, K, alpha, beta, seed, iters, start=1, strata=None, tiles=None):
    """Sequential collapsed Gibbs in document order, drawing with SparseLDA's bucket
    order (word bucket q, then document bucket r, then smoothing s), all recomputed.
    The word bucket walks the word's topic list: built in topic order when the
    iteration starts, a topic dropped (the last one moved into its place) when its
    count reaches 0 and appended when it becomes non-zero.

    With ``strata`` and ``tiles`` (edge positions, lda.tiled_order's): the tokens in edge
    order; the word lists are built again when a stratum starts, and each tile samples
    against the topic totals of its stratum's start plus its own changes, all of the
    stratum's changes entering the totals when it ends."""
    if strata is None:
        order = sorted(range(len(toks)), key=lambda i: (toks[i][0], toks[i][2], toks[i][3]))
        strata = tiles = [0, len(toks)]
        edge = None
    else:
        order = list(range(len(toks)))          # tokens come in edge order
        edge = [tk[2] for tk in toks]
    alpha = np.broadcast_to(alpha, K)
    for it in range(start, start + iters):
        nd, nw, nk = counts(toks, D, V, K)
        for a, b in zip(strata[:-1], strata[1:]):
            topics = [[j for j in range(K) if nw[w, j] > 0] for w in range(V)]
            start_nk, change = nk.copy(), np.zeros(K, int)
            cuts = [x for x in tiles if a <= x <= b]
            for ta, tb in zip(cuts[:-1], cuts[1:]):
                nk = start_nk.copy()
                for i in order:
                    if edge is not None and not ta <= edge[i] < tb:
                        continue
                    k = _draw(toks[i], nd, nw, nk, topics, alpha, beta, V, K, seed, it, change)
                    toks[i][4] = k
            nk = start_nk + change
    return toks


def _draw(tok, nd, nw, nk, topics, alpha, beta, V, K, seed, it, change):
    d, w, e, t, k = tok
    nd[d, k] -= 1
    nw[w, k] -= 1
    nk[k] -= 1
    change[k] -= 1
    lst = topics[w]
    if nw[w, k] == 0:
        pos = lst.index(k)
        lst[pos] = lst[-1]
        lst.pop()
    inv = [1.0 / (nk[j] + V * beta) for j in range(K)]
    q = [(alpha[j] + nd[d, j]) * inv[j] * nw[w, j] for j in lst]
    r = [nd[d, j] * beta * inv[j] for j in range(K)]
    s = [alpha[j] * beta * inv[j] for j in range(K)]
    x = uniform(seed, it, e, t) * (sum(s) + sum(r) + sum(q))
    k = K - 1
    for bucket, ids in ((q, lst), (r, range(K)), (s, range(K))):
        if x < sum(bucket):
            k = ids[-1]
            for j, mass in zip(ids, bucket):
                x -= mass
                if x < 0:
                    k = j
                    break
            break
        x -= sum(bucket)
    if nw[w, k] == 0:
        lst.append(k)
    nd[d, k] += 1
    nw[w, k] += 1
    nk[k] += 1
    change[k] += 1
    return k


def log_likelihood(nd, nw, alpha, beta):
    """log p(w, z) (Griffiths & Steyvers) from the count matrices; ``alpha`` a number or
    K numbers."""
    K = nd.shape[1]
    alpha = np.broadcast_to(alpha, K)
    V = nw.shape[0]
    D = nd.shape[0]
    nk = nw.sum(0)
    lw = K * (math.lgamma(V * beta) - V * math.lgamma(beta)) + sum(
        math.lgamma(x + beta) for x in nw.ravel()) - sum(math.lgamma(x + V * beta) for x in nk)
    A = float(alpha.sum())
    lz = D * (math.lgamma(A) - sum(math.lgamma(a) for a in alpha)) + sum(
        math.lgamma(nd[d, k] + alpha[k]) for d in range(D) for k in range(K)) - sum(math.lgamma(x + A) for x in nd.sum(1))
    return lw + lz


def minka_alpha(nd, alpha, steps, tol, shape, scale):
    """Minka's fixed point for a Dirichlet α from the D × K document–topic counts, with a
    Gamma(shape, scale) prior on each α_k, in digammas over the documents."""
    from scipy.special import digamma
    alpha, N = np.array(alpha, np.float64), nd.sum(1)
    for _ in range(steps):
        den = np.sum(digamma(N + alpha.sum()) - digamma(alpha.sum())) + 1 / scale
        new = np.array([(a * np.sum(digamma(nd[:, k] + a) - digamma(a)) + shape - 1) / den
                        for k, a in enumerate(alpha)])
        change, alpha = np.max(np.abs(new - alpha) / alpha), new
        if change < tol:
            break
    return alpha



def doc_log_likelihood(docs, theta, word_topic, totals, beta):
    """Σ over the tokens w of each document d of log Σ_k θ_dk φ_kw, φ_kw =
    (β + n_kw)/(Vβ + n_k): ``docs`` lists each document's word ids, one per token."""
    K, V = len(word_topic), len(word_topic[0])
    ll = 0.0
    for d, words in enumerate(docs):
        for w in words:
            ll += math.log(sum(theta[d][k] * (beta + word_topic[k][w]) / (V * beta + totals[k]) for k in range(K)))
    return ll
