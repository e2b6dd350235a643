"""Deterministic synthetic datasets (no downloads needed)."""
import numpy as np

from tux2.graph import BipartiteGraph


def _powerlaw_ids(rng, n, size, exponent):
    """Ids in [0, n) drawn with weight (rank+1)^−exponent, ranks randomly permuted."""
    w = (np.arange(1, n + 1, dtype=np.float64)) ** (-exponent)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    rank = np.searchsorted(cdf, rng.random(size), side="right")
    return rng.permutation(n)[np.minimum(rank, n - 1)]


def netflix_like(n_users=20_000, n_items=2_000, n_ratings=500_000, rank=10, noise=0.5,
                 test_fraction=0.1, user_exponent=0.5, item_exponent=0.6, mu=3.6, seed=0):
    """A Netflix-shaped rating set with a planted low-rank model.

    Users and items have power-law popularity; r = μ + b_u + b_i + x_u·y_i + ε with
    ε ~ N(0, noise²), so ``noise`` is the best achievable test RMSE (the noise
    floor). Returns (train, test) BipartiteGraphs with types ("user", "item"),
    no duplicate (user, item) pairs, int32 ids (int64 from 2³¹ vertices on) and
    float64 ratings.
    """
    rng = np.random.default_rng(seed)
    draw = int(n_ratings * 1.3) + 1000
    while True:
        key = _powerlaw_ids(rng, n_users, draw, user_exponent) * np.int64(n_items)
        key += _powerlaw_ids(rng, n_items, draw, item_exponent)
        key.sort()                                          # distinct pairs (np.unique's hashing is ~50× slower)
        key = key[np.r_[True, key[1:] != key[:-1]]]
        if len(key) >= n_ratings or draw > 50 * n_ratings:
            break
        draw *= 2
    key = key[rng.permutation(len(key))[:n_ratings]]
    ids = np.int32 if max(n_users, n_items) < 2**31 else np.int64
    u, i = (key // n_items).astype(ids), (key % n_items).astype(ids)
    del key
    scale = 1.0 / np.sqrt(np.sqrt(rank))
    x = rng.normal(0, scale, (n_users, rank))
    y = rng.normal(0, scale, (n_items, rank))
    bu = rng.normal(0, 0.3, n_users)
    bi = rng.normal(0, 0.3, n_items)
    r = np.empty(len(u))
    step = 1 << 22  # chunks: x[u] whole would take n_ratings × rank × 8 bytes (8 GB at 10⁸)
    for s in range(0, len(u), step):
        us, its = u[s:s + step], i[s:s + step]
        r[s:s + step] = mu + bu[us] + bi[its] + np.einsum("ij,ij->i", x[us], y[its])
    r += rng.normal(0, noise, len(u))
    is_test = rng.random(len(u)) < test_fraction
    names = ("user", "item")
    test = BipartiteGraph(u[is_test], i[is_test], r[is_test], n_users, n_items, names, "netflix_like")
    keep = ~is_test
    del is_test
    train = BipartiteGraph(u[keep], i[keep], r[keep], n_users, n_items, names, "netflix_like")
    return train, test


def plays_like(n_users=4_000, n_items=6_000, rank=10, taste=1.5, count_taste=1.0, tail=1.2, activity=1.5,
               item_exponent=0.9, test_fraction=0.2, seed=0):
    """Play counts shaped like Last.fm 360K's (user, artist, plays) whose counts carry taste.

    Users and items have latent factors x_u, y_i ~ N(0, I_rank); a pair's preference score
    is s = x_u·y_i / √rank (standard deviation 1). User u plays n_u = min(400, 5·Zipf(``activity``)
    + 5) distinct items drawn without replacement with weight popularity_i · exp(``taste``·s)
    (popularity (rank+1)^−``item_exponent``), and plays each ⌈A_u · exp(``count_taste``·s) · W⌉
    times: A_u a user's own volume (lognormal), W Pareto(``tail``) (heavy-tailed: a median in
    the tens, a few in the millions), so more plays mean a more liked item
    (``count_taste=0``: counts say nothing of taste). Each user with 3 or more items has
    ``test_fraction`` of them held out. Returns (train, test) BipartiteGraphs ("user",
    "item"), float32 counts."""
    rng = np.random.default_rng(seed)
    logpop = -item_exponent * np.log(np.arange(1, n_items + 1, dtype=np.float64))[rng.permutation(n_items)]
    x, y = rng.normal(0, 1, (n_users, rank)), rng.normal(0, 1, (n_items, rank))
    n_u = np.minimum(np.minimum(400, n_items - 1), rng.zipf(activity, n_users) * 5 + 5)
    volume = np.exp(rng.normal(1.0, 1.0, n_users))
    parts = ([], [])
    for u in range(n_users):
        s = y @ x[u] / np.sqrt(rank)
        items = np.argpartition(-(logpop + taste * s + rng.gumbel(size=n_items)), n_u[u])[:n_u[u]]  # Gumbel top-k
        plays = np.ceil(volume[u] * np.exp(count_taste * s[items]) * (rng.pareto(tail, len(items)) + 1.0))
        held = np.zeros(len(items), bool)
        if len(items) >= 3:
            held[rng.permutation(len(items))[:max(1, int(round(test_fraction * len(items))))]] = True
        for keep, out in ((~held, parts[0]), (held, parts[1])):
            out.append(np.c_[np.full(int(keep.sum()), u), items[keep], plays[keep]])
    out = []
    for rows in parts:
        a = np.concatenate(rows)
        out.append(BipartiteGraph(a[:, 0].astype(np.int32), a[:, 1].astype(np.int32),
                                  np.minimum(a[:, 2], 3.4e38).astype(np.float32), n_users, n_items, ("user", "item")))
    return out[0], out[1]


def lda_corpus(n_docs=2_000, n_words=5_000, n_topics=20, doc_length=100, alpha=0.1, beta=0.01, seed=0):
    """A corpus drawn from a known LDA model: θ_d ~ Dir(α), φ_k ~ Dir(β), document
    lengths Poisson(doc_length) (at least 1), z ~ θ_d, w ~ φ_z.

    Returns (docs, words, counts, phi): the bag-of-words triples (one per distinct
    (doc, word), sorted by doc then word) and the planted topic–word matrix. Words
    that never occur are dropped and the rest renumbered, as a vocabulary built
    from the corpus would be, so V = phi.shape[1] ≤ n_words.
    """
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(n_topics, alpha), n_docs)
    phi = rng.dirichlet(np.full(n_words, beta), n_topics)
    lengths = np.maximum(rng.poisson(doc_length, n_docs), 1)
    doc = np.repeat(np.arange(n_docs), lengths)
    z = _rowwise_draw(theta, doc, rng)
    w = _rowwise_draw(phi, z, rng)
    used, w = np.unique(w, return_inverse=True)
    V = len(used)
    key, counts = np.unique(doc.astype(np.int64) * V + w, return_counts=True)
    return key // V, key % V, counts, phi[:, used]


def _rowwise_draw(probs, rows, rng):
    """One draw from the categorical distribution probs[r] for every r in ``rows``."""
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0 + 1e-9
    n = probs.shape[1]
    out = np.empty(len(rows), np.int64)
    order = np.argsort(rows, kind="stable")
    r = rows[order]
    starts = np.searchsorted(r, np.arange(len(probs)))
    ends = np.searchsorted(r, np.arange(len(probs)), side="right")
    u = rng.random(len(rows))
    for i in range(len(probs)):
        if ends[i] > starts[i]:
            out[order[starts[i]:ends[i]]] = np.minimum(np.searchsorted(cdf[i], u[starts[i]:ends[i]]), n - 1)
    return out


def _sparse_rows(rng, n_samples, n_features, nnz_per_sample, exponent):
    """Distinct power-law features per sample, values 1/√nnz: (rows, cols, vals)."""
    draw = rng.poisson(nnz_per_sample, n_samples).clip(1, n_features)
    rows = np.repeat(np.arange(n_samples, dtype=np.int64), draw)
    cols = _powerlaw_ids(rng, n_features, len(rows), exponent)
    key = np.sort(rows * n_features + cols)                 # distinct pairs, as netflix_like finds them
    key = key[np.r_[True, key[1:] != key[:-1]]]
    rows, cols = key // n_features, key % n_features
    nnz = np.bincount(rows, minlength=n_samples)
    return rows, cols, 1.0 / np.sqrt(nnz[rows])


def sparse_classification(n_samples=20_000, n_features=10_000, nnz_per_sample=30, exponent=0.8,
                          informative=0.1, scale=10.0, noise=1.0, seed=0, classes=2):
    """A kdd-shaped sparse problem: each sample has about ``nnz_per_sample``
    distinct features drawn with power-law frequencies (weight ∝ rank^−exponent),
    values 1/√nnz. Labels come from a linear model with sparse planted weights
    (``informative`` share of features non-zero, N(0, scale²)) plus Gumbel/logistic
    noise scaled by ``noise``: ±1 from a logistic model for ``classes=2``, else
    0 … classes−1 from a softmax model (W has one column per class).
    Returns (BipartiteGraph sample → feature, labels, planted weights)."""
    rng = np.random.default_rng(seed)
    rows, cols, vals = _sparse_rows(rng, n_samples, n_features, nnz_per_sample, exponent)
    g = BipartiteGraph(rows, cols, vals, n_samples, n_features, ("sample", "feature"), "sparse_classification")
    if classes == 2:
        w = np.where(rng.random(n_features) < informative, rng.normal(0, scale, n_features), 0.0)
        margin = np.bincount(rows, vals * w[cols], minlength=n_samples)
        u = rng.random(n_samples)
        return g, np.where(margin + noise * np.log(u / (1 - u)) > 0, 1.0, -1.0), w
    W = np.where(rng.random((n_features, classes)) < informative, rng.normal(0, scale, (n_features, classes)), 0.0)
    M = np.zeros((n_samples, classes))
    for k in range(classes):
        M[:, k] = np.bincount(rows, vals * W[cols, k], minlength=n_samples)
    M -= noise * np.log(-np.log(rng.random((n_samples, classes))))
    return g, M.argmax(axis=1).astype(np.float64), W


def text_like(n_docs=400, n_words=15_000, zipf=1.1, mean_length=150, sigma_length=1.0, planted=0.02,
              noise=1.0, seed=0):
    """A bag-of-words classification set shaped like real text: word frequencies
    ∝ rank^−zipf (Zipf), document lengths log-normal (median ``mean_length``,
    log-sd ``sigma_length``), raw term counts as values (not normalised), and labels
    from a sparse planted linear model: ``planted`` of the words carry a weight
    ~ N(0, 1), y = sign(x·w / √length + N(0, noise²)).

    Returns (docs, words, counts, labels ±1): triples sorted by doc then word, words
    that never occur dropped and the rest renumbered (a vocabulary built from the
    corpus)."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, n_words + 1, dtype=np.float64) ** -zipf
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    lengths = np.maximum(np.round(mean_length * rng.lognormal(0.0, sigma_length, n_docs)).astype(np.int64), 1)
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    word = rng.permutation(n_words)[np.minimum(np.searchsorted(cdf, rng.random(len(doc)), side="right"),
                                               n_words - 1)]
    key = np.sort(doc * n_words + word)
    first = np.r_[True, key[1:] != key[:-1]]
    counts = np.diff(np.r_[np.flatnonzero(first), len(key)]).astype(np.float64)
    key = key[first]
    used, w = np.unique(key % n_words, return_inverse=True)
    d = key // n_words
    weights = np.where(rng.random(len(used)) < planted, rng.normal(0.0, 1.0, len(used)), 0.0)
    score = np.bincount(d, weights=counts * weights[w], minlength=n_docs) / np.sqrt(lengths)
    labels = np.where(score + rng.normal(0.0, noise, n_docs) > np.median(score), 1.0, -1.0)
    return d, w, counts, labels
