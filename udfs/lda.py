"""LDA by collapsed Gibbs sampling on a document–word graph (paper §4, Fig. 6).

An edge joins a document and a word and carries up to ``TOKENS`` tokens of that
word in that document: their count and the topic of each. Documents and words
hold topic-count vectors; the topic totals n_k live in the GlobalSync context, and
the samplers add their changes to its ``dnk`` sum, which enters n_k at each sync
(the sparse sampler works on its own running copy, ``wk``, between syncs).

Two samplers:

* ``sparse`` (default) — SparseLDA (Yao, Mimno, McCallum 2009): the mass of
  p(z = k) ∝ (α + n_dk)(β + n_wk)/(Vβ + n_k) splits into the smoothing bucket
  s = Σ αβ/(Vβ + n_k), the document bucket r = Σ n_dk β/(Vβ + n_k) and the word
  bucket q = Σ (α + n_dk) n_wk/(Vβ + n_k); s and r are kept up to date token by
  token, the coefficients (α + n_dk)/(Vβ + n_k) per document. Counts change in
  place (replicas are reconciled at Apply), as in the paper. tux2.LDA runs the edges
  in tiles by default (``tiled_order``, ``program(doc_block=...)``), whose threads,
  partitions and workers give one model.
* ``sync`` — every token is drawn from the counts of the iteration start (its
  own token excluded) and count changes go to accumulators: the result does
  not depend on the partitioning (the central invariant), at the price of a
  Jacobi-style chain.

Random numbers come from a hash of (seed, iteration, edge id, token), so a
token's draw does not depend on which worker samples it.

α is per topic (the context's ``alpha``): symmetric as given, or learnt every
``optimize_interval`` iterations from exactly summed histograms (``optimize_alpha``).
"""
import math

import numpy as np
from numba import njit

import tux2.config  # noqa: F401 (locks numba's cache files)
from tux2.errors import InputError
from tux2.graph import stratified_order
from tux2.partitioning import EdgeView
from tux2.partitioning.stratified import tiles as tile_blocks
from tux2.program import Program
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch

TOKENS = 4          # tokens per edge; a (doc, word) pair with more becomes several edges
MIN_ROOM = 32       # topic-count vectors hold at least this many topics (see room) …
ROOM_TOKENS = 1 << 20   # … in corpora of fewer tokens
CLOCKS = 8          # mini-batches (clocks) per iteration of the sparse sampler on several partitions (see program)
HIST_MAX = 1 << 24      # entries of the n_dk histograms (topics × longest document) that α optimisation may keep
_M32 = 0xFFFFFFFF


@njit(inline="always")
def _h32(x):
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    return (x >> 16) ^ x


@njit(inline="always")
def uniform(seed, it, eid, t):
    """A uniform draw in [0, 1) from (seed, iteration, edge id, token): the same in
    numba and in Python (32-bit arithmetic in int64, no overflow)."""
    h = _h32((eid & _M32) ^ 0x2545F491)
    h = _h32(h ^ ((eid >> 32) & _M32))
    h = _h32(h ^ (it & _M32))
    h = _h32(h ^ ((t * 0x9E3779B1 + seed) & _M32))
    return h / 4294967296.0


def token_edges(docs, words, counts, per_edge=TOKENS):
    """(doc, word, count) triples → edges of at most ``per_edge`` tokens each."""
    docs, words, counts = (np.asarray(a, np.int64) for a in (docs, words, counts))
    if len(counts) and counts.min() < 1:
        i = int(np.argmin(counts))
        raise ValueError(f"token count {counts[i]} at triple {i} is not a positive integer")
    pieces = (counts + per_edge - 1) // per_edge
    idx = np.repeat(np.arange(len(counts)), pieces)
    first = np.repeat(np.cumsum(pieces) - pieces, pieces)
    within = np.arange(len(idx)) - first
    cnt = np.minimum(counts[idx] - within * per_edge, per_edge)
    return docs[idx], words[idx], cnt


# --------------------------------------------------------------------------- samplers
def sparse_gibbs(u, v, e, a_u, a_v, ctx):
    nd, nw, nk, inv, coef, qb = u.nk, v.nk, ctx.wk, ctx.inv, ctx.coef, ctx.qbuf
    K, alpha, beta, vbeta = ctx.K, ctx.alpha, ctx.beta, ctx.vbeta
    nz = v.nz                                             # the word's topics with n_wk > 0 (unordered)
    if v.stamp != ctx.sweep:                              # first visit since a sync: counts may have
        v.stamp = ctx.sweep                               # been reconciled since the index was built
        m = 0
        for j in range(K):                                # (no branch: n_wk > 0 is a coin toss per topic)
            nz[m] = j
            m += nw[j] > 0
        v.nnz = m
    if u.id != ctx.cur:                                   # a new document: its bucket and coefficients
        if u.blk != ctx.blk:                              # a new tile, or the first document since a sync:
            ctx.blk = u.blk                               # the topic totals as synced, the tile's changes on them
            s = 0.0
            for j in range(K):
                nk[j] = ctx.nk[j]
                inv[j] = 1.0 / (nk[j] + vbeta)
                s += alpha[j] * beta * inv[j]
            ctx.s = s
        ctx.cur = u.id
        r = 0.0
        for j in range(K):
            r += nd[j] * beta * inv[j]
            coef[j] = (alpha[j] + nd[j]) * inv[j]
        ctx.r = r
    s, r = ctx.s, ctx.r
    for t in range(e.count):
        k = e.z[t]
        s -= alpha[k] * beta * inv[k]
        r -= nd[k] * beta * inv[k]
        nd[k] -= 1
        nw[k] -= 1
        nk[k] -= 1
        ctx.dnk[k] -= 1
        inv[k] = 1.0 / (nk[k] + vbeta)
        s += alpha[k] * beta * inv[k]
        r += nd[k] * beta * inv[k]
        coef[k] = (alpha[k] + nd[k]) * inv[k]
        m = v.nnz
        if nw[k] == 0:                                    # drop k from the word's index
            for i in range(m):
                if nz[i] == k:
                    m -= 1
                    nz[i] = nz[m]
                    break
            v.nnz = m
        q = 0.0
        for i in range(m):
            x = coef[nz[i]] * nw[nz[i]]
            qb[i] = x
            q += x
        x = uniform(ctx.seed, ctx.it, e.id, t) * (s + r + q)
        k = K - 1
        if x < q:
            k = nz[m - 1]
            for i in range(m):
                x -= qb[i]
                if x < 0.0:
                    k = nz[i]
                    break
        elif x < q + r:
            x -= q
            for j in range(K):
                x -= nd[j] * beta * inv[j]
                if x < 0.0:
                    k = j
                    break
        else:
            x -= q + r
            for j in range(K):
                x -= alpha[j] * beta * inv[j]
                if x < 0.0:
                    k = j
                    break
        if nw[k] == 0:
            nz[m] = k
            v.nnz = m + 1
        s -= alpha[k] * beta * inv[k]
        r -= nd[k] * beta * inv[k]
        nd[k] += 1
        nw[k] += 1
        nk[k] += 1
        ctx.dnk[k] += 1
        inv[k] = 1.0 / (nk[k] + vbeta)
        s += alpha[k] * beta * inv[k]
        r += nd[k] * beta * inv[k]
        coef[k] = (alpha[k] + nd[k]) * inv[k]
        e.z[t] = k
    ctx.s = s
    ctx.r = r


def sync_gibbs(u, v, e, a_u, a_v, ctx):
    nd, nw, nk, p = u.nk, v.nk, ctx.nk, ctx.qbuf
    K, alpha, beta, vbeta = ctx.K, ctx.alpha, ctx.beta, ctx.vbeta
    for t in range(e.count):
        old = e.z[t]
        total = 0.0
        for j in range(K):
            own = 1 if j == old else 0
            x = (alpha[j] + nd[j] - own) * (beta + nw[j] - own) / (vbeta + nk[j] - own)
            total += x
            p[j] = total
        x = uniform(ctx.seed, ctx.it, e.id, t) * total
        k = K - 1
        for j in range(K):
            if x < p[j]:
                k = j
                break
        if k != old:
            a_u.nk[old] -= 1
            a_v.nk[old] -= 1
            ctx.dnk[old] -= 1
            a_u.nk[k] += 1
            a_v.nk[k] += 1
            ctx.dnk[k] += 1
            e.z[t] = k


def add_counts(v, a, ctx):
    for j in range(ctx.K):
        v.nk[j] += a.nk[j]


# --------------------------------------------------------------------------- log-likelihood
LGAMMA_TABLE = 1024    # lgamma(n + α) and lgamma(n + β) for n below this come from a table


def ll_words(v, ctx):
    x = 0.0
    for j in range(ctx.K):
        n = v.nk[j]
        x += ctx.lgb[n] if n < LGAMMA_TABLE else math.lgamma(n + ctx.beta)
    ctx.llw += x


def ll_docs(u, ctx):
    n = 0
    x = 0.0
    L = ctx.L
    for j in range(ctx.K):
        c = u.nk[j]
        n += c
        if L > 1:                                         # α optimised: the histogram of n_dk per topic
            if c > 0:
                ctx.hist[j * L + c] += 1
        else:
            x += ctx.lga[c] if c < LGAMMA_TABLE else math.lgamma(c + ctx.alpha[0])
    if L == 1:
        ctx.lld += x - math.lgamma(n + ctx.asum)


ALPHA_STEPS, ALPHA_TOL = 1000, 1e-10       # fixed-point steps at most, and the relative change that ends them
ALPHA_SHAPE, ALPHA_SCALE = 1.001, 1.0      # a weak Gamma prior on each α_k (MALLET's): keeps α finite and > 0


@njit(cache=True)
def optimize_alpha(alpha, hist, lens, K, L):
    """Minka's fixed point for an asymmetric Dirichlet α given the topics z (Wallach,
    Mimno, McCallum 2009; MALLET's ``--optimize-interval``), with a Gamma(a, b) prior:
    α_k ← (α_k Σ_d [ψ(n_dk + α_k) − ψ(α_k)] + a − 1) / (Σ_d [ψ(N_d + Σα) − ψ(Σα)] + 1/b),
    stepped until α changes by less than ALPHA_TOL, from ``hist[k L + n]``, the number of
    documents with n_dk = n (n ≥ 1), and ``lens[n]``, the number of length n, as
    ψ(n + x) − ψ(x) = Σ_{i<n} 1/(x + i). The counts are exact integer sums, so every
    partitioning computes the same α, bit for bit. Without the prior, counts spread
    no more than a multinomial's (random topics) would send α to infinity."""
    top = np.zeros(K, np.int64)                           # the largest n_dk of each topic
    for k in range(K):
        for n in range(1, L):
            if hist[k * L + n] > 0:
                top[k] = n
    for _ in range(ALPHA_STEPS):
        a0 = 0.0
        for k in range(K):
            a0 += alpha[k]
        den, dg = 0.0, 0.0
        for n in range(1, L):
            dg += 1.0 / (a0 + n - 1)
            den += lens[n] * dg
        change = 0.0
        for k in range(K):
            num, dg = 0.0, 0.0
            for n in range(1, top[k] + 1):
                dg += 1.0 / (alpha[k] + n - 1)
                num += hist[k * L + n] * dg
            a = (alpha[k] * num + ALPHA_SHAPE - 1.0) / (den + 1.0 / ALPHA_SCALE)
            change = max(change, abs(a - alpha[k]) / alpha[k])
            alpha[k] = a
        if change < ALPHA_TOL:
            return


@njit(cache=True)
def doc_log_likelihood(alpha, hist, lens, K, L):
    """Σ_d [log Γ(Σα) − log Γ(N_d + Σα) + Σ_k log Γ(n_dk + α_k) − log Γ(α_k)] from the
    histograms of ``optimize_alpha``."""
    a0 = 0.0
    for k in range(K):
        a0 += alpha[k]
    x = 0.0
    for n in range(1, L):
        if lens[n] > 0:
            x += lens[n] * (math.lgamma(a0) - math.lgamma(n + a0))
        for k in range(K):
            if hist[k * L + n] > 0:
                x += hist[k * L + n] * (math.lgamma(n + alpha[k]) - math.lgamma(alpha[k]))
    return x


def settle(ctx):
    """After the word pass: the count changes since the last sync (``dnk``, summed over
    partitions and threads) enter the topic totals, and the word part of the
    log-likelihood is kept for the document pass."""
    for j in range(ctx.K):
        ctx.nk[j] += ctx.dnk[j]
        ctx.dnk[j] = 0
    ctx.llw_keep = ctx.llw


def refresh(ctx):
    """After a mini-batch's Apply: the topic totals take every partition's and thread's
    changes; the next document starts the sampler's working totals from them
    (``blk`` −1), and every word's topic index is rebuilt at its next visit."""
    for j in range(ctx.K):
        ctx.nk[j] += ctx.dnk[j]
        ctx.dnk[j] = 0
    ctx.blk = -1
    ctx.cur = -1
    ctx.sweep += 1


def finish_iteration(ctx):
    """Topic summary and buckets for the next iteration; joint log-likelihood
    log p(w, z) (Griffiths & Steyvers) per token."""
    K, V, D = ctx.K, ctx.V, ctx.D
    if ctx.L > 1:              # α optimised every ``opt`` iterations after ``burn``; log p(z | α) with the new α
        if ctx.it > ctx.burn and ctx.it % ctx.opt == 0:
            optimize_alpha(ctx.alpha, ctx.hist, ctx.lens, K, ctx.L)
            ctx.asum = 0.0
            for j in range(K):
                ctx.asum += ctx.alpha[j]
        lz = doc_log_likelihood(ctx.alpha, ctx.hist, ctx.lens, K, ctx.L)
    else:
        lz = D * (math.lgamma(K * ctx.alpha[0]) - K * math.lgamma(ctx.alpha[0])) + ctx.lld
    s = 0.0
    lk = 0.0
    for j in range(K):
        ctx.inv[j] = 1.0 / (ctx.nk[j] + ctx.vbeta)
        s += ctx.alpha[j] * ctx.beta * ctx.inv[j]
        lk += math.lgamma(ctx.nk[j] + ctx.vbeta)
    ctx.s = s
    ctx.cur = -1
    ctx.blk = -1
    ll = K * (math.lgamma(V * ctx.beta) - V * math.lgamma(ctx.beta)) + ctx.llw_keep - lk + lz
    ctx.ll = ll
    ctx.ll_per_token = ll / max(ctx.tokens, 1.0)
    ctx.it += 1
    ctx.sweep += 1


# --------------------------------------------------------------------------- the program
def room(K, tokens=0):
    """Length of the topic-count vectors in the records. numba compiles a loop per
    record type, so a length of K compiles every kernel again for each new K (~2-5 s,
    once per machine: the kernel cache keeps them). Below ROOM_TOKENS tokens, where
    that dwarfs the iterations, the length is K rounded up to a power of two, at
    least MIN_ROOM: the UDFs read K from the context and leave the rest at 0, so K up
    to MIN_ROOM, then each doubling, share one set of kernels. Above, K exactly: the
    room cost 5-20% CPU time per sparse iteration on 2 M tokens (K = 10 … 100, same
    samples; 2-7% on 200 k tokens), more than a compile paid once per K."""
    return max(MIN_ROOM, 1 << (int(K) - 1).bit_length()) if tokens < ROOM_TOKENS else int(K)


def program(src, dst, count, n_docs, n_words, K=100, alpha=0.1, beta=0.01, seed=0, sampler="sparse",
            types=("doc", "word"), optimize_interval=0, optimize_burn_in=0, clocks=1, doc_block=None,
            word_topics=None):
    """LDA on token edges (``token_edges``): initial topics are drawn from the same
    hash as the sampler, so every worker can compute them. ``optimize_interval`` N > 0:
    an asymmetric α is learnt after every N-th iteration past ``optimize_burn_in``
    (``optimize_alpha``; the context's ``alpha``). ``clocks`` C > 1 (sparse sampler): each
    iteration is C mini-batches of documents, after each of which the word–topic counts
    (Apply) and topic totals (GlobalSync) of all partitions are combined. A partition
    samples against the others' changes of the last mini-batch only, not of the whole
    sweep (AD-LDA's staleness, as Yahoo! LDA and LightLDA narrow it): on the Debian
    descriptions (K = 20, 100 iterations) 4 partitions reach -8.440 per token in one clock
    per iteration and -8.388 in 8, against -8.383 ± 0.011 on one (6 seeds).

    ``doc_block`` (sparse sampler, the edges in ``tiled_order``'s order, run with its strata
    and tiles): each document's row block. An iteration is then one clock per stratum; a
    tile shares no document and no word with the others of its stratum, and samples
    against the topic totals of the stratum's start plus its own changes, so the tiles
    of a stratum can run in any number of threads, partitions or workers and give the
    one-thread model bit for bit.

    ``word_topics`` (a warm start): n_words × K weights, each word's tokens' first topics
    drawn in proportion to its row (a row of zeros, a word new to the model: at random),
    by the same hash, so every worker draws the same."""
    if sampler not in ("sparse", "sync"):
        raise ValueError(f"sampler must be 'sparse' or 'sync', got {sampler!r}")
    if K < 1 or K > 32767:
        raise ValueError(f"K must be in 1 … 32767, got {K}")
    src, dst, count = (np.asarray(a, np.int64) for a in (src, dst, count))
    m, R = len(src), room(K, int(count.sum()))
    z = np.full((m, TOKENS), -1, np.int16)
    eid = np.arange(m, dtype=np.int64)
    cdf = None if word_topics is None else np.cumsum(np.asarray(word_topics, np.float64), axis=1)
    if cdf is not None and cdf.shape != (n_words, K):
        raise ValueError(f"word_topics must be n_words × K = {n_words} × {K}, got {cdf.shape}")
    for t in range(TOKENS):
        has = count > t
        z[has, t] = _initial_topics(eid[has], t, seed, K, None if cdf is None else (dst[has], cdf))
    flat_k = z[z >= 0].astype(np.int64)
    rows = np.nonzero(z >= 0)[0]
    ndk = np.zeros((n_docs, R), np.int32)
    nwk = np.zeros((n_words, R), np.int32)
    np.add.at(ndk, (src[rows], flat_k), 1)
    np.add.at(nwk, (dst[rows], flat_k), 1)
    nk = np.bincount(flat_k, minlength=R).astype(np.int64)
    vbeta = n_words * beta
    inv = np.where(np.arange(R) < K, 1.0 / (nk + vbeta), 0.0)
    alphas = np.where(np.arange(R) < K, float(alpha), 0.0)
    # the histograms' width: a power of two above the longest document (fewer kernels), 1 without optimising
    lengths = np.bincount(src, count, minlength=n_docs).astype(np.int64)
    L = 1 << int(lengths.max(initial=0)).bit_length() if optimize_interval > 0 else 1
    if R * L > HIST_MAX:
        raise InputError(f"learning α (optimize_interval) keeps per topic a histogram as wide as the longest document "
                         f"({int(lengths.max())} tokens): {R} × {L} counts, over the {HIST_MAX} allowed; split the "
                         f"longest documents, or keep α symmetric")
    sync = sampler == "sync"
    acc = {"nk": ("i4", R)} if sync else {}
    vt = [VertexType(types[0], sync={"nk": ("i4", R)}, master={"id": "i8", "blk": "i4"}, accum=acc),
          VertexType(types[1], sync={"nk": ("i4", R)}, accum=acc,
                     local={} if sync else {"nz": ("i2", R), "nnz": "i4", "stamp": "i4"})]
    ctx = ContextSpec(
        fields={"K": "i8", "V": "i8", "D": "i8", "alpha": "f8", "beta": "f8", "vbeta": "f8", "seed": "i8",
                "it": "i8", "sweep": "i8", "nk": ("i8", R), "dnk": ("i8", R), "inv": ("f8", R), "coef": ("f8", R),
                "qbuf": ("f8", R), "s": "f8", "r": "f8", "cur": "i8", "wk": ("i8", R), "blk": "i8",
                "llw": "f8", "lld": "f8",
                "llw_keep": "f8", "tokens": "f8", "ll": "f8", "ll_per_token": "f8",
                "lga": ("f8", LGAMMA_TABLE), "lgb": ("f8", LGAMMA_TABLE), "asum": "f8", "opt": "i8", "burn": "i8",
                "L": "i8", "alpha": ("f8", R), "hist": ("i4", R * L), "lens": ("i8", L)},
        sum=("llw", "lld", "dnk"), scratch=("hist",), private=("wk", "blk", "inv", "coef", "qbuf", "s", "r", "cur"),
        state=("it", "sweep", "nk") + (("alpha", "asum") if L > 1 else ()),
        bounds={"nk": (0, 2 ** 62), "wk": (0, 2 ** 62), "it": (1, 2 ** 62), "sweep": (1, 2 ** 62),
                "cur": (-1, 2 ** 62), "blk": (-1, 2 ** 62), "inv": (0.0, np.inf),
                "alpha": (0.0, np.inf)},
        init={"K": K, "V": n_words, "D": n_docs, "alpha": alphas, "asum": K * alpha, "beta": beta, "vbeta": vbeta,
              "seed": seed, "opt": optimize_interval, "burn": optimize_burn_in, "L": L,
              "lens": np.bincount(lengths, minlength=L)[:L] if L > 1 else [0],
              "it": 1, "sweep": 1, "nk": nk, "wk": nk, "blk": -1, "inv": inv, "s": float(np.sum(alphas * beta * inv)), "cur": -1,
              "tokens": float(count.sum()),
              "lga": [math.lgamma(n + alpha) for n in range(LGAMMA_TABLE)],
              "lgb": [math.lgamma(n + beta) for n in range(LGAMMA_TABLE)]})

    def init_vertices(name, data, rng):
        if name == types[0]:
            data["nk"] = ndk
            data["id"] = np.arange(len(data))
            data["blk"] = 0 if doc_block is None else doc_block
        else:
            data["nk"] = nwk

    def init_edges(edata, rng):
        edata["count"] = count
        edata["id"] = eid
        edata["z"] = z

    tiled = doc_block is not None and not sync
    # count changes add up, but a stratum's tiles share no document and no word: one replica writes each
    stages = [Exchange(sync_gibbs if sync else sparse_gibbs, enumerate=None if tiled else types[0]),
              Apply(add_counts if sync else None, overlap="error" if tiled else "allow")]
    if tiled:                                           # a clock per stratum (Engine(strata=...))
        stages = [MiniBatch(None, stages + [GlobalSync(finalize=refresh, record=False)], unit="edge")]
    elif clocks > 1 and not sync:
        stages = [MiniBatch(-(-n_docs // clocks), stages + [GlobalSync(finalize=refresh, record=False)], unit="vertex",
                            enumerate=types[0])]
    stages += [GlobalSync(aggregate=ll_words, over=types[1], finalize=settle),
              GlobalSync(aggregate=ll_docs, over=types[0], finalize=finish_iteration)]
    return Program(vt, edge={"count": "i4", "id": "i8", "z": ("i2", TOKENS)}, context=ctx, stages=stages,
                   init_vertices=init_vertices, init_edges=init_edges, name=f"lda-{sampler}",
                   bounds={"z": (-1, K - 1), "nz": (0, K - 1), "nnz": (0, K), "nk": (0, 2 ** 31 - 1),
                           "count": (0, TOKENS), "id": (0, max(m, n_docs) - 1)})


BLOCKS = 8          # row and column blocks of the tiled schedule: 8 tiles a stratum, 8 strata an iteration


def tiled_order(src, dst, n_docs, n_words, blocks=BLOCKS, seed=0):
    """The tiled schedule of ``program(doc_block=...)``: DSGD's strata of B × B tiles
    (tux2.graph.stratified_order), each tile's edges by document, then word.
    Returns (order, strata, tiles, doc_block): the edge order, the strata and tile
    starts for ``Engine(strata=..., tiles=...)``, and each document's row block."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    order, strata, tiles = stratified_order(src, dst, n_docs, n_words, blocks, seed=seed, tiles=True, src_major=True)
    row, rb, cb = tile_blocks(EdgeView(src, dst, n_docs, n_words), blocks)
    return order, strata, tiles, np.asarray(rb if row == 0 else cb, np.int32)


@njit(cache=True)
def _topics(eid, t, seed, K, out):
    for i in range(eid.shape[0]):
        out[i] = int(uniform(seed, 0, eid[i], t) * K)


@njit(cache=True)
def _warm_topics(eid, words, t, seed, cdf, out):
    K = cdf.shape[1]
    for i in range(eid.shape[0]):
        u = uniform(seed, 0, eid[i], t)
        row = cdf[words[i]]
        if row[K - 1] > 0.0:
            out[i] = min(np.searchsorted(row, u * row[K - 1], side="right"), K - 1)
        else:
            out[i] = int(u * K)


def _initial_topics(eid, t, seed, K, warm=None):
    """``uniform(seed, 0, eid, t) * K`` for an array of edge ids: iteration 0's draw;
    ``warm`` = (each edge's word, cumulative word × topic weights): the same uniform draw
    taken through the word's row (a row of zeros: as without)."""
    out = np.empty(len(eid), np.int16)
    eid = np.ascontiguousarray(eid, np.int64)
    if warm is None:
        _topics(eid, int(t), int(seed), int(K), out)
    else:
        _warm_topics(eid, np.ascontiguousarray(warm[0], np.int64), int(t), int(seed), warm[1], out)
    return out


def topic_counts(data, K):
    """The K topic counts of records (vertex data or the context) without the room
    beyond them: n × K for vertex data, K for a context."""
    return np.ascontiguousarray(np.asarray(data["nk"])[..., :K])


def topic_word(word_data, K):
    """K × V word–topic counts from gathered word master data."""
    return np.ascontiguousarray(topic_counts(word_data, K).T)


def umass(word_topic, docs, n=10, eps=1e-12):
    """Per topic, the UMass coherence of its ``n`` most frequent words (Mimno et al. 2011, as
    tomotopy's and gensim's ``u_mass``): the mean over word pairs (w_i, w_j), j before i in
    the topic's order, of log((D(w_i, w_j) / D + eps) / (D(w_j) / D)), D(·) counting the
    documents of ``docs`` (a doc → word graph in the model's word ids) that hold the words.
    Only words the topic holds (count > 0) are its words: a topic of fewer than two (or
    ``n`` = 1) has no pair and no coherence, NaN, which every mean leaves out (``mean_umass``;
    padding it with words of no count, ties in id order, scored empty topics). A pair whose
    w_j no document holds scores 0, as in gensim's ``log_conditional_probability``."""
    import scipy.sparse as sp
    wt = np.asarray(word_topic)
    K, V = wt.shape
    m = max(1, min(int(n), V))
    top = _top_ids(wt, m)
    held = (np.take_along_axis(wt, top, axis=1) > 0).sum(axis=1)
    keep = docs.dst < V
    X = sp.csr_matrix((np.ones(int(keep.sum())), (docs.src[keep], docs.dst[keep])), shape=(docs.n_src, V))
    X.data[:] = 1.0                                     # (a doc, word) pair on several edges: one document
    X = X.tocsc()
    nd = max(docs.n_src, 1)
    out = np.full(K, np.nan)
    i, j = np.tril_indices(m, -1)
    step = max(1, 2048 // m)        # topics at a time: their words' co-occurrence counts dense, ≤ 2048² (32 MB)
    for lo in range(0, K, step):
        used, at = np.unique(top[lo:lo + step], return_inverse=True)
        at = at.reshape(-1, m)
        M = X[:, used]
        co = (M.T @ M).toarray()
        for k in range(lo, min(K, lo + step)):
            a, b = at[k - lo, i], at[k - lo, j]
            dj = co[b, b]
            pair = i < held[k]                          # (i > j: both words held)
            if pair.any():
                seen = dj[pair] > 0                     # (w_j in no document: 0, gensim's value)
                logs = np.log((co[a, b][pair][seen] / nd + eps) / (dj[pair][seen] / nd))
                out[k] = float(logs.sum() / pair.sum())
    return out


def mean_umass(c):
    """The mean of topics' UMass coherences (``umass``) over the topics that have one;
    None when none has (every topic holds fewer than two words)."""
    c = np.asarray(c, np.float64)
    return float(np.mean(c[~np.isnan(c)])) if (~np.isnan(c)).any() else None


def _top_ids(wt, m):
    """Per row of ``wt``, the ids of its ``m`` largest values, largest first, ties in id
    order (a stable argsort's first ``m``) without sorting whole rows: K = 1000 topics of
    V = 50,000 words took 8.3 s to argsort."""
    if m >= wt.shape[1]:
        return np.argsort(-wt, axis=1, kind="stable")
    V = wt.shape[1]
    top = np.empty((wt.shape[0], m), np.int64)
    for k, row in enumerate(wt):
        thr = np.partition(row, V - m)[V - m]                   # the row's m-th largest value (a row's copy)
        cand = np.flatnonzero(row >= thr)                       # (all the ties at the m-th, in id order)
        top[k] = cand[np.argsort(-row[cand], kind="stable")[:m]]
    return top


def top_words(word_topic, n, vocab=None, base=0):
    """Per topic, the ``n`` most frequent (word, count) pairs, most frequent first;
    without ``vocab`` a word is its id in the corpus file (dense id + ``base``)."""
    out = []
    for row in word_topic:
        idx = np.argsort(-row, kind="stable")[:n]
        out.append([(vocab[i] if vocab is not None else str(i + base), int(row[i])) for i in idx if row[i] > 0])
    return out


# --------------------------------------------------------------------------- inference
def topic_word_probabilities(word_topic, topic_totals, beta):
    """φ (K × V): p(word w | topic k) = (β + n_kw)/(Vβ + n_k), as the sampler smooths the counts."""
    wt = np.asarray(word_topic, np.float64)
    return (beta + wt) / (wt.shape[1] * beta + np.asarray(topic_totals, np.float64)[:, None])


@njit(cache=True, nogil=True)
def _infer(indptr, words, counts, phi, alpha, iterations, seed, theta):
    """Fold-in Gibbs sampling of new documents with the trained counts fixed: token
    topics drawn from p(k) ∝ (α_k + n_dk) φ_kw (``phi``: V × K, ``alpha``: K); θ_d is
    the mean of (n_dk + α_k)/(N_d + Σα) over the second half of the sweeps."""
    K = phi.shape[1]
    a0 = alpha.sum()
    np.random.seed(seed)
    p = np.empty(K)
    for d in range(len(indptr) - 1):
        n_tok = 0
        for e in range(indptr[d], indptr[d + 1]):
            n_tok += counts[e]
        z = np.empty(n_tok, np.int64)
        tw = np.empty(n_tok, np.int64)
        ndk = np.zeros(K)
        t = 0
        for e in range(indptr[d], indptr[d + 1]):
            for _ in range(counts[e]):
                tw[t] = words[e]
                z[t] = np.random.randint(0, K)
                ndk[z[t]] += 1
                t += 1
        kept = 0
        for it in range(iterations):
            for t in range(n_tok):
                ndk[z[t]] -= 1
                acc = 0.0
                for k in range(K):
                    acc += (alpha[k] + ndk[k]) * phi[tw[t], k]
                    p[k] = acc
                u = np.random.random() * acc
                k = 0
                while k < K - 1 and p[k] <= u:
                    k += 1
                z[t] = k
                ndk[k] += 1
            if it >= iterations // 2:
                for k in range(K):
                    theta[d, k] += (ndk[k] + alpha[k]) / (n_tok + a0)
                kept += 1
        for k in range(K):
            theta[d, k] = theta[d, k] / kept if kept else 1.0 / K


def infer(word_topic, topic_totals, graph, alpha, beta, iterations=50, seed=0):
    """Topic mixtures θ (D × K) of the documents of a doc → word count graph under a
    trained model's word–topic counts (the model is not changed); ``alpha``: a number
    (symmetric) or K numbers."""
    K, V = word_topic.shape
    o = np.argsort(graph.src, kind="stable")
    indptr = np.zeros(graph.n_src + 1, np.int64)
    np.cumsum(np.bincount(graph.src, minlength=graph.n_src), out=indptr[1:])
    words = graph.dst[o].astype(np.int64)
    if len(words) and words.max() >= V:
        raise ValueError(f"word id {int(words.max())} is beyond the model's {V} words")
    theta = np.zeros((graph.n_src, K))
    phi = np.ascontiguousarray(topic_word_probabilities(word_topic, topic_totals, beta).T)
    alpha = np.ascontiguousarray(np.broadcast_to(np.asarray(alpha, np.float64), (K,)))
    _infer(indptr, words, graph.values[o].astype(np.int64), phi, alpha, int(max(iterations, 1)), int(seed), theta)
    return theta


def fold_in(word_topic, topic_totals, graph, alpha, beta, iterations=50, seed=0):
    """(θ as ``infer`` gives it, Σ_d Σ_w n_dw log Σ_k θ_dk φ_kw) of held-out documents: their
    plug-in log-likelihood under the model's φ and their own folded-in θ (one inference)."""
    theta = infer(word_topic, topic_totals, graph, alpha, beta, iterations, seed)
    return theta, log_likelihood(topic_word_probabilities(word_topic, topic_totals, beta), theta, graph)


def log_likelihood(phi, theta, graph, chunk=1 << 15):
    """Σ_d Σ_w n_dw log Σ_k θ_dk φ_kw over the (doc, word, count) edges of ``graph``:
    log p(w | θ, φ) of its documents under topic mixtures θ (D × K) and φ (K × V)."""
    ll = 0.0
    for lo in range(0, len(graph.src), chunk):
        d, w = graph.src[lo:lo + chunk], graph.dst[lo:lo + chunk]
        ll += float(np.dot(graph.values[lo:lo + chunk], np.log(np.einsum("ek,ke->e", theta[d], phi[:, w]))))
    return ll
