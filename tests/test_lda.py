"""LDA: planted topics, count invariants, the central invariant (sync sampler),
both samplers against plain-Python references, and the log-likelihood."""
import numpy as np
import pytest

import tux2
from tux2 import BipartiteGraph, Engine
from tux2.errors import InputError
from tux2.udfs import lda
from tests import naive_lda


def planted_corpus(D=300, V=200, K=5, L=80, seed=0):
    rng = np.random.default_rng(seed)
    phi = np.full((K, V), 1e-3)
    for k in range(K):
        phi[k, k * (V // K):(k + 1) * (V // K)] = rng.random(V // K) + 0.5
    phi /= phi.sum(1, keepdims=True)
    docs, words = [], []
    for d in range(D):
        zs = rng.choice(K, L, p=rng.dirichlet([0.1] * K))
        for z in zs:
            docs.append(d)
            words.append(rng.choice(V, p=phi[z]))
    pairs, cnt = np.unique(np.array(docs) * V + np.array(words), return_counts=True)
    s, t, c = lda.token_edges(pairs // V, pairs % V, cnt)
    return s, t, c, D, V, phi


@pytest.fixture(scope="module")
def corpus():
    return planted_corpus()


def _check_counts(eng, c):
    docs, words = eng.vertex_data("doc")["nk"], eng.vertex_data("word")["nk"]
    nk = np.array(eng.context()["nk"])
    assert docs.sum() == words.sum() == c.sum() == nk.sum()
    assert (docs >= 0).all() and (words >= 0).all()
    np.testing.assert_array_equal(docs.sum(0), nk)
    np.testing.assert_array_equal(words.sum(0), nk)


@pytest.mark.parametrize("sampler,parts", [("sparse", 1), ("sparse", 3), ("sync", 2)])
def test_recovers_planted_topics_and_keeps_counts(corpus, sampler, parts):
    s, t, c, D, V, phi = corpus
    prog = lda.program(s, t, c, D, V, K=5, alpha=0.1, beta=0.01, seed=1, sampler=sampler)
    g = BipartiteGraph(s, t, None, D, V)
    eng = Engine(prog, g, partitions=parts, partitioner="bicut", partitioner_options={"favorite": 0}, seed=1)
    lls = []
    def check(e):
        _check_counts(e, c)
        lls.append(e.context()["ll_per_token"])
    eng.run(40, callback=check)
    nwk = lda.topic_word(eng.vertex_data("word"), 5).astype(float)
    est = nwk / np.linalg.norm(nwk, axis=1, keepdims=True)
    ref = phi / np.linalg.norm(phi, axis=1, keepdims=True)
    assert (est @ ref.T).max(axis=0).min() >= 0.9
    assert lls[-1] > lls[0]


def test_sync_sampler_gives_identical_counts_for_any_partitioning(corpus):
    s, t, c, D, V, _ = corpus
    prog = lda.program(s, t, c, D, V, K=5, seed=3, sampler="sync")
    g = BipartiteGraph(s, t, None, D, V)
    ref = Engine(prog, g, partitions=1, seed=3).run(5)
    for parts, strategy in ((2, "random"), (4, "bicut"), (3, "hdrf")):
        eng = Engine(prog, g, partitions=parts, partitioner=strategy, seed=3).run(5)
        np.testing.assert_array_equal(eng.vertex_data("doc")["nk"], ref.vertex_data("doc")["nk"])
        np.testing.assert_array_equal(eng.vertex_data("word")["nk"], ref.vertex_data("word")["nk"])
        np.testing.assert_array_equal(eng.edge_data()["z"], ref.edge_data()["z"])


def _small():
    s, t, c, D, V, _ = planted_corpus(D=25, V=30, K=3, L=12, seed=4)
    return s, t, c, D, V


def _engine_tokens(eng, src, count):
    ed = eng.edge_data()
    return [int(ed["z"][e, j]) for e in range(len(src)) for j in range(int(count[e]))]


@pytest.mark.parametrize("sampler", ["sync", "sparse"])
def test_samplers_equal_plain_python(sampler):
    s, t, c, D, V = _small()
    K, alpha, beta, seed = 3, 0.3, 0.05, 7
    prog = lda.program(s, t, c, D, V, K=K, alpha=alpha, beta=beta, seed=seed, sampler=sampler)
    eng = Engine(prog, BipartiteGraph(s, t, None, D, V), partitions=1, seed=0).run(3)
    toks = naive_lda.tokens(s, t, c, seed, K)
    fn = naive_lda.sync_iterations if sampler == "sync" else naive_lda.sparse_iterations
    toks = fn(toks, D, V, K, alpha, beta, seed, 3)
    assert _engine_tokens(eng, s, c) == [tk[4] for tk in toks]
    nd, nw, _ = naive_lda.counts(toks, D, V, K)
    assert eng.context()["ll"] == pytest.approx(naive_lda.log_likelihood(nd, nw, alpha, beta), rel=1e-9)


def _tiled(s, t, c, D, V, blocks=4, seed=0):
    order, strata, tiles, doc_block = lda.tiled_order(s, t, D, V, blocks, seed=seed)
    return s[order], t[order], c[order], strata, tiles, doc_block


@pytest.mark.parametrize("shape", [dict(D=25, V=30), dict(D=12, V=40)])     # tiles sorted by document either way
def test_tiled_sampler_equals_plain_python(shape):
    """The tiled schedule: each tile samples against its stratum's starting topic totals
    plus its own changes, the word lists rebuilt per stratum (naive_lda's reference)."""
    s, t, c, D, V, _ = planted_corpus(K=3, L=12, seed=4, **shape)
    s, t, c, strata, tiles, blk = _tiled(s, t, c, D, V)
    assert len(tiles) > len(strata) > 2
    K, alpha, beta, seed = 3, 0.3, 0.05, 7
    prog = lda.program(s, t, c, D, V, K=K, alpha=alpha, beta=beta, seed=seed, doc_block=blk)
    eng = Engine(prog, BipartiteGraph(s, t, None, D, V), partitions=1, seed=0, strata=strata, tiles=tiles,
                 threads=1).run(3)
    toks = naive_lda.sparse_iterations(naive_lda.tokens(s, t, c, seed, K), D, V, K, alpha, beta, seed, 3,
                                       strata=list(strata), tiles=list(tiles))
    assert _engine_tokens(eng, s, c) == [tk[4] for tk in toks]
    nd, nw, _ = naive_lda.counts(toks, D, V, K)
    assert eng.context()["ll"] == pytest.approx(naive_lda.log_likelihood(nd, nw, alpha, beta), rel=1e-9)


def test_tiled_sampler_gives_the_same_model_for_any_partitions_and_threads(corpus):
    """The central invariant for the sparse sampler in tiles: a stratum's tiles share no
    document and no word, and each starts from the stratum's topic totals, so partitions
    (stratified) and threads up to the blocks change no count and no topic."""
    s, t, c, strata, tiles, blk = _tiled(*corpus[:5], blocks=4, seed=3)
    D, V = corpus[3], corpus[4]
    prog = lda.program(s, t, c, D, V, K=5, seed=3, doc_block=blk)
    g = BipartiteGraph(s, t, None, D, V)
    runs = [Engine(prog, g, partitions=p, partitioner="stratified", partitioner_options={"blocks": 4}, seed=3,
                   strata=strata, tiles=tiles, threads=th).run(5) for p, th in ((1, 1), (1, 2), (1, 4), (2, 1), (2, 2),
                                                                               (4, 1))]
    ref = runs[0]
    _check_counts(ref, c)
    for eng in runs[1:]:
        for typ in ("doc", "word"):
            np.testing.assert_array_equal(eng.vertex_data(typ)["nk"], ref.vertex_data(typ)["nk"])
        np.testing.assert_array_equal(eng.edge_data()["z"], ref.edge_data()["z"])
        np.testing.assert_array_equal(eng.context()["nk"], ref.context()["nk"])


def test_every_form_of_the_tiled_round_gives_the_same_model_and_rows_wait_for_their_block(corpus):
    """Between 2 partitions a stratum's round copies rows between the replicas' arrays (one
    process), goes in one phase (2 workers) or as master/mirror messages; in the first
    two a word row this partition samples again in the next stratum waits (its block stays
    here), so it moves once its block moves on: fewer bytes, the one-partition model."""
    s, t, c, strata, tiles, blk = _tiled(*corpus[:5], blocks=4, seed=3)
    D, V = corpus[3], corpus[4]
    prog = lda.program(s, t, c, D, V, K=5, seed=3, doc_block=blk)
    g = BipartiteGraph(s, t, None, D, V)
    kw = dict(partitioner="stratified", partitioner_options={"blocks": 4}, seed=3, strata=strata, tiles=tiles)
    ref = Engine(prog, g, partitions=1, **kw).run(3)
    sent = {}
    for form in ("copies", "one phase", "master/mirror"):
        eng = Engine(prog, g, partitions=2, **kw)
        if form != "copies":
            eng._plan_room = 0                     # no room for copy plans: messages
        if form == "master/mirror":
            eng._pairs = [False, False]
        eng.run(3)
        sent[form] = eng.min_bytes
        for typ in ("doc", "word"):
            np.testing.assert_array_equal(eng.vertex_data(typ)["nk"], ref.vertex_data(typ)["nk"], err_msg=form)
        np.testing.assert_array_equal(eng.edge_data()["z"], ref.edge_data()["z"], err_msg=form)
    assert sent["copies"] == sent["one phase"] < 0.8 * sent["master/mirror"], sent


@pytest.mark.parametrize("sampler", ["sparse", "sync"])
def test_a_new_number_of_topics_compiles_nothing(sampler):
    """Topic vectors have room for lda.room(K) topics and the UDFs read K from the
    context: K = 3 and K = 7 share one set of kernels, and the room stays 0."""
    from tux2.compile import counting_compiles
    s, t, c, D, V = _small()
    g = BipartiteGraph(s, t, None, D, V)
    Engine(lda.program(s, t, c, D, V, K=3, seed=1, sampler=sampler), g, partitions=2, seed=0).run(1)
    with counting_compiles() as compiled:
        eng = Engine(lda.program(s, t, c, D, V, K=7, seed=1, sampler=sampler), g, partitions=2, seed=0).run(2)
    assert compiled.n == 0
    _check_counts(eng, c)
    assert (eng.vertex_data("doc")["nk"][:, 7:] == 0).all() and (eng.vertex_data("word")["nk"][:, 7:] == 0).all()
    assert lda.topic_word(eng.vertex_data("word"), 7).shape == (7, V) and eng.edge_data()["z"].max() <= 6


def test_a_large_corpus_keeps_topic_vectors_of_exactly_K():
    """Past ROOM_TOKENS an iteration costs more than a compile: no room beyond K."""
    m = lda.ROOM_TOKENS // lda.TOKENS
    for edges, R in ((m - 1, lda.MIN_ROOM), (m, 5)):
        prog = lda.program(np.arange(edges) % 50, np.arange(edges) % 70, np.full(edges, lda.TOKENS), 50, 70, K=5)
        assert [t.dtype["nk"].shape for t in prog.types] == [(R,), (R,)]
        assert prog.context.dtype["inv"].shape == (R,)


def test_token_edges_split_large_counts():
    s, t, c = lda.token_edges([0, 0, 1], [2, 3, 2], [1, 9, 4])
    assert c.tolist() == [1, 4, 4, 1, 4] and s.tolist() == [0, 0, 0, 0, 1] and t.tolist() == [2, 3, 3, 3, 2]
    with pytest.raises(ValueError, match="positive"):
        lda.token_edges([0], [0], [0])


def _texts(D, V, K, L, seed):
    """Documents drawn from K planted topics, each over its own V // K words."""
    rng = np.random.default_rng(seed)
    return [" ".join(f"w{rng.integers(V // K) + z * (V // K)}" for z in rng.choice(K, L, p=rng.dirichlet([0.2] * K)))
            for _ in range(D)]


def test_score_and_perplexity_are_the_plain_python_log_likelihood():
    """score = Σ n_dw log Σ_k θ_dk φ_kw with transform's θ (same iterations and seed) and
    the model's smoothed φ; unknown words are left out of it and of the token count."""
    train, held = _texts(60, 24, 3, 20, seed=1), _texts(8, 24, 3, 15, seed=2)
    held[0] += " neverseen neverseen"
    est = tux2.LDA(topics=3, iterations=30, alpha=0.2, beta=0.05, seed=1).fit(train)
    index = {w: i for i, w in enumerate(est.vocab_)}
    docs = [[index[w] for w in t.split() if w in index] for t in held]
    theta = est.transform(held, iterations=20, seed=5)
    ll = naive_lda.doc_log_likelihood(docs, theta, est.word_topic_, est.topic_totals_, 0.05)
    assert est.score(held, iterations=20, seed=5) == pytest.approx(ll, rel=1e-12)
    tokens = sum(len(d) for d in docs)
    assert tokens == 8 * 15
    assert est.perplexity(held, iterations=20, seed=5) == pytest.approx(np.exp(-ll / tokens), rel=1e-12)
    untrained = tux2.LDA(topics=3, iterations=0, alpha=0.2, beta=0.05, seed=1).fit(train)
    assert est.perplexity(held) < untrained.perplexity(held)
    with pytest.raises(ValueError, match="no word of the model's vocabulary"):
        est.score(["neverseen"])


def test_grid_search_by_score_picks_the_planted_number_of_topics():
    from sklearn.model_selection import GridSearchCV
    gs = GridSearchCV(tux2.LDA(iterations=10), {"topics": [1, 3]}, cv=2).fit(_texts(60, 24, 3, 12, seed=3))
    assert gs.best_params_ == {"topics": 3}


def _optimised(sampler, alpha, beta, seed, iters, interval):
    """Plain Python: the sampler's iterations, α learnt from the document–topic counts
    after every ``interval``-th; the tokens, α and log p(w, z | α) after each."""
    s, t, c, D, V = _small()
    K = 3
    toks = naive_lda.tokens(s, t, c, seed, K)
    fn = naive_lda.sync_iterations if sampler == "sync" else naive_lda.sparse_iterations
    alpha, out = np.full(K, alpha), []
    for it in range(1, iters + 1):
        toks = fn(toks, D, V, K, alpha, beta, seed, 1, start=it)
        nd, nw, _ = naive_lda.counts(toks, D, V, K)
        if it % interval == 0:
            alpha = naive_lda.minka_alpha(nd, alpha, lda.ALPHA_STEPS, lda.ALPHA_TOL, lda.ALPHA_SHAPE, lda.ALPHA_SCALE)
        out.append(([tk[4] for tk in toks], alpha, naive_lda.log_likelihood(nd, nw, alpha, beta)))
    return out


@pytest.mark.parametrize("sampler", ["sync", "sparse"])
def test_optimised_alpha_and_samplers_equal_plain_python(sampler):
    """--optimize-interval 2: after iterations 2 and 4 α is Minka's fixed point on the
    document–topic counts (the reference: digammas per document, no histograms); the
    samplers then draw with the asymmetric α, and the log-likelihood uses it."""
    s, t, c, D, V = _small()
    ref = _optimised(sampler, 0.3, 0.05, 7, 5, 2)
    prog = lda.program(s, t, c, D, V, K=3, alpha=0.3, beta=0.05, seed=7, sampler=sampler, optimize_interval=2)
    got = []
    Engine(prog, BipartiteGraph(s, t, None, D, V), partitions=1, seed=0).run(
        5, callback=lambda e: got.append((_engine_tokens(e, s, c), np.array(e.context()["alpha"][:3]),
                                          e.context()["ll"])))
    assert not np.allclose(ref[-1][1], 0.3)                       # α moved, and differs by topic
    assert np.ptp(ref[-1][1]) > 1e-3
    for (tz, ta, tl), (gz, ga, gl) in zip(ref, got):
        assert gz == tz
        np.testing.assert_allclose(ga, ta, rtol=1e-9)
        assert gl == pytest.approx(tl, rel=1e-9)


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_optimised_alpha_is_the_same_for_any_partitioning():
    """α comes from integer histograms summed over partitions: bit for bit the same
    α and counts with the sync sampler for any partitioning (and from 2 real workers,
    below)."""
    s, t, c, D, V, _ = planted_corpus(D=120, V=100, L=40, seed=2)
    prog = lda.program(s, t, c, D, V, K=5, seed=3, sampler="sync", optimize_interval=1)
    g = BipartiteGraph(s, t, None, D, V)
    ref = Engine(prog, g, partitions=1, seed=3).run(4)
    assert np.ptp(ref.context()["alpha"][:5]) > 0
    for parts, strategy in ((2, "random"), (4, "bicut"), (3, "hdrf")):
        eng = Engine(prog, g, partitions=parts, partitioner=strategy, seed=3).run(4)
        np.testing.assert_array_equal(eng.context()["alpha"], ref.context()["alpha"])
        np.testing.assert_array_equal(eng.vertex_data("doc")["nk"], ref.vertex_data("doc")["nk"])
        assert eng.context()["ll"] == pytest.approx(ref.context()["ll"], rel=1e-12)


@pytest.mark.slow
def test_optimised_alpha_is_the_same_from_2_real_workers():
    texts = _texts(80, 30, 3, 25, seed=6)
    make = lambda: tux2.LDA(topics=3, iterations=6, sampler="sync", optimize_interval=2, seed=1)   # noqa: E731
    one = make().fit(texts, partitions=1)
    two = make().fit(texts, partitions=3, workers=2)
    np.testing.assert_array_equal(two.alpha_, one.alpha_)
    np.testing.assert_array_equal(two.word_topic_, one.word_topic_)
    assert np.ptp(one.alpha_) > 0


@pytest.mark.slow
def test_the_learnt_alpha_is_saved_and_used_by_transform_and_old_models_load_symmetric(tmp_path):
    import json
    import os
    texts = _texts(80, 30, 3, 25, seed=6)
    est = tux2.LDA(topics=3, iterations=10, optimize_interval=5, seed=1).fit(texts)
    est.save(tmp_path / "m")
    back = tux2.LDA.load(tmp_path / "m")
    np.testing.assert_array_equal(back.alpha_, est.alpha_)
    assert np.ptp(est.alpha_) > 0 and est.history_[-1]["alpha_sum"] == pytest.approx(est.alpha_.sum())
    theta = back.transform(texts[:5], iterations=20, seed=2)
    docs = est.documents(texts[:5])[0]
    np.testing.assert_array_equal(theta, lda.infer(est.word_topic_, est.topic_totals_, docs, est.alpha_, est.beta,
                                                   20, 2))
    assert not np.array_equal(theta, lda.infer(est.word_topic_, est.topic_totals_, docs, est.alpha, est.beta, 20, 2))
    old = tmp_path / "old"                  # a model written before α was learnt: no alpha in lda.npz
    est.save(old)
    arrays = dict(np.load(old / "lda.npz"))
    del arrays["alpha"]
    np.savez(old / "lda.npz", **arrays)
    manifest = [f for f in os.listdir(old) if "manifest" in f.lower()]
    for f in manifest:
        os.remove(old / f)
    meta = json.loads((old / "model.json").read_text())
    assert "optimize_interval" in meta
    prior = tux2.LDA.load(old)
    np.testing.assert_array_equal(prior.alpha_, np.full(3, est.alpha))
    np.savez(old / "lda.npz", **arrays, alpha=-est.alpha_)
    with pytest.raises(tux2.model_check.ModelError, match="alpha holds a number that is not positive"):
        tux2.LDA.load(old)


def test_alpha_waits_for_the_burn_in_and_a_histogram_too_large_is_an_error():
    s, t, c, D, V = _small()
    prog = lda.program(s, t, c, D, V, K=3, alpha=0.3, seed=7, optimize_interval=1, optimize_burn_in=2)
    alphas = []
    Engine(prog, BipartiteGraph(s, t, None, D, V), partitions=1).run(
        3, callback=lambda e: alphas.append(np.array(e.context()["alpha"][:3])))
    assert (alphas[0] == 0.3).all() and (alphas[1] == 0.3).all() and not (alphas[2] == 0.3).all()
    n = lda.HIST_MAX // lda.MIN_ROOM
    with pytest.raises(InputError, match=rf"longest document \({n} tokens\): 32 × {2 * n} counts"):
        lda.program([0, 0], [0, 1], [n - 1, 1], 1, 2, K=3, optimize_interval=10)
    assert lda.program([0, 0], [0, 1], [n - 2, 1], 1, 2, K=3, optimize_interval=10).context.dtype["hist"].shape \
        == (32 * n,)


def test_a_vectorizers_vocabulary_names_the_words_of_its_matrix_and_a_string_is_no_document():
    """LDA(vocab=cv.get_feature_names_out()) on cv's matrix (a list gave TypeError, an
    array 'truth value ... ambiguous'); transform('some words') said 'cannot read input'."""
    from sklearn.feature_extraction.text import CountVectorizer
    docs = ["apple banana apple fruit", "car engine wheel car", "banana fruit apple", "wheel engine car road"] * 5
    cv = CountVectorizer()
    X = cv.fit_transform(docs)
    for vocab in (list(cv.get_feature_names_out()), cv.get_feature_names_out()):
        m = tux2.LDA(topics=2, iterations=5, vocab=vocab).fit(X)
        assert m.vocab_ == list(cv.get_feature_names_out())
        assert {w for topic in m.topic_words(3) for w, _ in topic} <= set(m.vocab_)
    with pytest.raises(InputError, match="vocab= lists 1 words, and the corpus has word ids up to 6"):
        tux2.LDA(vocab=["apple"]).fit(X)
    with pytest.raises(InputError, match=r"documents as text go in a list.*transform\(\[text\]\)"):
        m.transform("apple car road")
    # fit said only 'apple banana: cannot read input: No such file or directory' (trial leftover)
    with pytest.raises(InputError, match=r"no file 'apple banana': fit reads a string as a file's path; documents "
                                         r"as text go in a list.*fit\(\[text\]\)"):
        tux2.LDA().fit("apple banana")


def test_four_partitions_learn_as_fast_as_one():
    """AD-LDA's staleness: a partition samples against word–topic counts and topic totals
    that miss the other partitions' changes until they are combined. In one clock per
    sweep, 4 partitions lag one by three times the spread of 5 seeds early in the burn-in
    (3 iterations here: -7.83 against -7.18 per token, spread 0.22); with the sweep in
    lda.CLOCKS mini-batches the lag is within the spread (0.14), and the counts add up. (The
    untiled schedule, blocks=0; in tiles, the default, any partitions give the one-partition model.)"""
    s, t, c, D, V, _ = planted_corpus(D=600, V=400, K=10, L=40)
    def lls(parts):
        out = []
        for seed in range(5):
            m = tux2.LDA(topics=10, iterations=3, seed=seed, blocks=0).fit((s, t, c), partitions=parts)
            np.testing.assert_array_equal(m.word_topic_.sum(1), m.topic_totals_)
            np.testing.assert_array_equal(m.doc_topic_.sum(0), m.topic_totals_)
            out.append(m.history_[-1]["ll_per_token"])
        return np.array(out)
    one, four = lls(1), lls(4)
    assert abs(four.mean() - one.mean()) <= one.max() - one.min()


def test_combining_replicas_changes_in_a_kernel_equals_the_record_by_record_numpy_form(corpus, monkeypatch):
    """An Apply(overlap="allow") round at slack 0 adds up the replicas' changes to each word's
    counts: compiled over rows of one number type (rounds.combine_changes), the same counts,
    topics and topic totals as field by field with numpy (the general form) on 3 partitions."""
    from tux2 import rounds
    s, t, c, D, V, _ = corpus
    prog = lda.program(s, t, c, D, V, K=5, seed=2, clocks=4)
    g = BipartiteGraph(s, t, None, D, V)
    base = rounds._uniform_base(prog.types[1].sync_dtype, ("nk",), prog.types[1].sync_dtype.itemsize)
    assert base == np.int32                                     # the kernel's form is the one taken
    fast = Engine(prog, g, partitions=3, partitioner="random", seed=2, threads=1).run(4)
    monkeypatch.setattr(rounds, "_uniform_base", lambda *a: None)
    slow = Engine(prog, g, partitions=3, partitioner="random", seed=2, threads=1).run(4)
    for typ in ("doc", "word"):
        np.testing.assert_array_equal(fast.vertex_data(typ)["nk"], slow.vertex_data(typ)["nk"])
    np.testing.assert_array_equal(fast.edge_data()["z"], slow.edge_data()["z"])
    np.testing.assert_array_equal(fast.context()["nk"], slow.context()["nk"])
    _check_counts(fast, c)


@pytest.mark.slow
def test_lda_default_model_is_the_same_on_one_partition_threads_and_two_real_workers(corpus):
    """The estimator's default (sparse sampler in 8 × 8 tiles): one partition in one thread,
    three partitions in two threads and two worker processes give one model."""
    s, t, c, D, V, _ = corpus
    make = lambda: tux2.LDA(topics=5, iterations=4, seed=1)
    one = make().fit((s, t, c), threads=1)
    assert one.history_[-1]["ll_per_token"] > one.history_[0]["ll_per_token"]
    for other in (make().fit((s, t, c), partitions=3, threads=2), make().fit((s, t, c), workers=2)):
        np.testing.assert_array_equal(other.word_topic_, one.word_topic_)
        np.testing.assert_array_equal(other.doc_topic_, one.doc_topic_)
        np.testing.assert_array_equal(other.topic_totals_, one.topic_totals_)


def test_umass_coherence_is_tomotopys_and_a_planted_model_scores_above_random_topics(tmp_path):
    """lda.umass against a by-hand loop of its definition (tomotopy's u_mass: on a
    tomotopy 0.14 model's own topics and corpus it matched Coherence(coherence='u_mass')
    to 1e-11), and fit's coherence_, history and saved model."""
    import math
    from tux2 import LDA
    from tux2.datasets import lda_corpus
    from tux2.graph import BipartiteGraph
    d, w, c, _ = lda_corpus(n_docs=300, n_words=400, n_topics=5, doc_length=50, seed=6)
    g = BipartiteGraph(d, w, c.astype(float), 300, int(w.max()) + 1, ("doc", "word"))
    wt = np.random.default_rng(1).random((4, g.n_dst))
    got = lda.umass(wt, g, 6)
    sets = [set(w[d == i].tolist()) for i in range(300)]
    for k in range(4):
        top = np.argsort(-wt[k], kind="stable")[:6].tolist()
        vals = []
        for i in range(1, 6):
            for j in range(i):
                dj = sum(top[j] in s for s in sets)
                both = sum(top[i] in s and top[j] in s for s in sets)
                vals.append(math.log((both / 300 + 1e-12) / (dj / 300)))
        assert got[k] == pytest.approx(np.mean(vals), rel=1e-12)
    m = LDA(topics=5, iterations=30).fit(g)
    assert m.coherence_.shape == (5,) and np.nanmean(m.coherence_) > np.nanmean(lda.umass(wt, g, 10)) + 1
    assert m.history_[-1]["coherence_umass"] == pytest.approx(np.nanmean(m.coherence_))
    np.testing.assert_allclose(m.coherence(g), m.coherence_)
    with pytest.raises(ValueError, match="pass the documents"):
        m.coherence(top_n=5)
    m.save(tmp_path / "m")
    np.testing.assert_array_equal(LDA.load(tmp_path / "m").coherence_, m.coherence_)


def test_umass_scores_only_the_words_a_topic_holds():
    """A topic's words are those it holds (count > 0): an empty topic or one of a single
    word has no coherence (NaN), one of 3 words scores their 3 pairs only. Before, the
    top 10 were padded with words of count 0 in id order, so on 'w1 w2 / w1' with 8
    topics the 6 empty ones each scored -0.69 (brk50)."""
    import math
    from tux2.graph import BipartiteGraph
    docs = [[0, 1, 2], [0, 1], [0, 3], [1, 2, 3, 4], [4]]
    d = np.array([i for i, ws in enumerate(docs) for _ in ws])
    w = np.array([x for ws in docs for x in ws])
    g = BipartiteGraph(d, w, np.ones(len(d)), len(docs), 5, ("doc", "word"))
    wt = np.array([[0, 0, 0, 0, 0], [0, 0, 7, 0, 0], [5, 3, 0, 0, 1], [1, 1, 1, 1, 1]], float)
    got = lda.umass(wt, g, 10)
    assert np.isnan(got[0]) and np.isnan(got[1])
    sets = [set(ws) for ws in docs]

    def pair(a, b):         # w_i = a after w_j = b in the topic's order
        return math.log((sum(a in s and b in s for s in sets) / 5 + 1e-12) / (sum(b in s for s in sets) / 5))
    assert got[2] == pytest.approx(np.mean([pair(1, 0), pair(4, 0), pair(4, 1)]), rel=1e-12)
    assert got[3] == pytest.approx(np.mean([pair(a, b) for a in range(5) for b in range(a)]), rel=1e-12)


def test_a_model_with_topics_of_no_coherence_loads_and_warm_starts(tmp_path):
    """A topic of fewer than 2 words has coherence NaN, saved so in lda.npz: loading such a
    model failed with 'coherence holds NaN or infinite values' (brk50), so did --init-model."""
    from tests.conftest import run_cli
    from tux2 import LDA
    (tmp_path / "c.txt").write_text("apple pear apple\npear\napple fig\n")
    m = LDA(topics=6, iterations=5, seed=1).fit(str(tmp_path / "c.txt"))
    assert np.isnan(m.coherence_).any()
    m.save(tmp_path / "m")
    np.testing.assert_array_equal(LDA.load(tmp_path / "m").coherence_, m.coherence_)
    r = run_cli("run", "lda", str(tmp_path / "c.txt"), "--init-model", str(tmp_path / "m"), "--iterations", "2")
    assert r.returncode == 0, r.stderr
    # the loader's limit is 1e-3 (log(1 + εD) > 0 for large D): a value up to it loads, one above is named so
    # (the message said 'above 0', which 5e-4 is and loads)
    import json
    from tux2 import files
    for value, ok in ((5e-4, True), (1e-3, True), (2e-3, False)):
        arrays = dict(np.load(tmp_path / "m" / "lda.npz"))
        arrays["coherence"] = np.r_[np.nan, np.full(len(m.coherence_) - 1, value)]
        np.savez(tmp_path / "m" / "lda.npz", **arrays)
        manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
        manifest["files"]["lda.npz"] = files.describe(tmp_path / "m" / "lda.npz")
        (tmp_path / "m" / "manifest.json").write_text(json.dumps(manifest))
        if ok:
            assert np.nanmax(LDA.load(tmp_path / "m").coherence_) == value
        else:
            with pytest.raises(Exception, match="coherence holds a number above 1e-3 or infinite"):
                LDA.load(tmp_path / "m")


def _gensim_umass(top, sets):
    """gensim's u_mass of one topic's top word ids on documents (sets of word ids), as its
    log_conditional_probability loops: s_one_pre pairs, w_star in no document scoring 0.0,
    the mean of the pairs' values; no pair: None (gensim's np.mean([]), NaN)."""
    import math
    D, vals = len(sets), []
    for i in range(1, len(top)):
        for j in range(i):
            star = sum(top[j] in s for s in sets)
            both = sum(top[i] in s and top[j] in s for s in sets)
            vals.append(math.log((both / D + 1e-12) / (star / D)) if star else 0.0)
    return sum(vals) / len(vals) if vals else None


def test_umass_on_other_documents_is_gensims_and_topics_of_no_pair_are_left_out_of_the_mean(tmp_path):
    """On documents that lack some top words (coherence(docs) of new ones), a pair whose
    w_j no document holds scores 0 as in gensim; before it was left out, and a topic whose
    every pair was so was NaN. A topic of fewer than 2 words has no pair: NaN, left out of
    every mean (the report says so instead of 'UMass nan'); the model loader took values
    only up to 1e-9, while log(1 + εD) > 1e-9 for D > 1000 documents (a pair whose words are
    in the same documents only) and refused such a model."""
    from tests.conftest import run_cli
    docs = [[0, 1, 2], [0, 1], [0, 3], [1, 2, 3, 4], [4]]
    d = np.array([i for i, ws in enumerate(docs) for _ in ws])
    w = np.array([x for ws in docs for x in ws])
    g = BipartiteGraph(d, w, np.ones(len(d)), len(docs), 7, ("doc", "word"))
    wt = np.array([[0, 0, 0, 0, 0, 6, 5], [4, 0, 0, 0, 0, 3, 0], [5, 3, 0, 0, 1, 0, 2], [0, 0, 0, 0, 0, 0, 8]],
                  float)       # words 5, 6 in no document
    sets = [set(ws) for ws in docs]
    got = lda.umass(wt, g, 10)
    for k in range(3):
        top = [int(x) for x in np.argsort(-wt[k], kind="stable") if wt[k, x] > 0]
        assert got[k] == pytest.approx(_gensim_umass(top, sets), rel=1e-12, abs=1e-300), k
    assert got[0] == 0.0 and np.isnan(got[3]) and lda.mean_umass(got) == pytest.approx(np.mean(got[:3]))
    assert lda.mean_umass([np.nan, np.nan]) is None
    np.testing.assert_array_equal(lda.umass(wt, g, 1), [np.nan] * 4)      # top_n=1: no pair (gensim: NaN)
    big = BipartiteGraph(np.r_[0, 0, np.arange(1, 20000)], np.r_[0, 1, np.full(19999, 2)], np.ones(20001), 20000, 3,
                         ("doc", "word"))
    c = lda.umass(np.array([[5, 5, 0], [0, 0, 9]]), big)
    assert c[0] == pytest.approx(np.log1p(1e-12 * 20000)) and c[0] > 1e-9
    m = tux2.LDA(topics=2, iterations=2).fit(big)
    m.coherence_ = c
    m.save(tmp_path / "m")
    np.testing.assert_array_equal(tux2.LDA.load(tmp_path / "m").coherence_, c)
    (tmp_path / "one.txt").write_text("apple apple\napple\n" * 3)
    r = run_cli("run", "lda", str(tmp_path / "one.txt"), "--topics", "2", "--iterations", "3")
    assert r.returncode == 0, r.stderr
    assert "nan" not in r.stdout and r.stdout.count("no UMass: <2 words") == 2, r.stdout
    assert "coherence (UMass): none, no topic holds 2 words" in r.stdout
    (tmp_path / "c.txt").write_text("apple pear apple\npear fig\napple fig pear\nkiwi plum\n" * 3 + "lone\n")
    r = run_cli("run", "lda", str(tmp_path / "c.txt"), "--topics", "8", "--iterations", "5", "--out",
                str(tmp_path / "c"))
    c = np.load(tmp_path / "c" / "lda.npz")["coherence"]
    assert r.returncode == 0 and np.isnan(c).any() and not np.isnan(c).all(), r.stdout
    assert "nan" not in r.stdout and r.stdout.count("no UMass: <2 words") == np.isnan(c).sum()
    n = int((~np.isnan(c)).sum())
    assert f"coherence (UMass): {np.nanmean(c):.4f}, the mean over the {n} of 8 topics holding 2 words" in r.stdout


def test_umass_top_words_are_a_stable_argsorts_first_n_ties_included():
    """umass picks each topic's top words without sorting whole rows (K = 1000 topics of
    50,000 words: 8.3 s to argsort): the same ids, in the same order, as a stable argsort,
    ties at the n-th count and rows of zeros included."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        K, V = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        wt = rng.integers(0, 4, (K, V)).astype(rng.choice([np.int32, np.float64]))
        wt[0] = 0
        n = int(rng.integers(1, V + 2))
        want = np.argsort(-wt, axis=1, kind="stable")[:, :n]
        np.testing.assert_array_equal(lda._top_ids(wt, min(n, V)), want)


def test_documents_as_token_lists_are_texts_split_already():
    """gensim's and tomotopy's input, lists of tokens: the tokens are kept as given (not
    split, not lower-cased), the filters apply, and fit, transform and coherence read them as
    they read the texts the tokens come from; a tuple of id arrays is still arrays."""
    docs = [["Apple", "pie", "Apple"], ["goal", "team", "coach"]] * 15 + [[]]
    tokens = tux2.LDA(topics=2, iterations=20, stop_words="none").fit(docs)
    texts = tux2.LDA(topics=2, iterations=20, stop_words="none").fit([" ".join(d) for d in docs])
    assert tokens.vocab_ == ["Apple", "pie", "goal", "team", "coach"]
    assert texts.vocab_ == ["apple", "pie", "goal", "team", "coach"]
    np.testing.assert_array_equal(tokens.word_topic_, texts.word_topic_)
    np.testing.assert_array_equal(tokens.transform([["pie", "Apple", "new word"]]), texts.transform(["pie apple"]))
    assert np.allclose(tokens.coherence(docs, top_n=2), texts.coherence([" ".join(d) for d in docs], top_n=2))
    with pytest.raises(ValueError, match="no documents to count"):
        tokens.coherence([])
    with pytest.raises(InputError, match="the document at position 1 holds 3, not a token string"):
        tux2.LDA(topics=2).fit([["a", "b"], ["c", 3]])
    held = tux2.LDA(topics=2, iterations=2, stop_words="none").fit(docs, test=[["pie", "Apple"], ["coach"]])
    assert held.history_[-1]["test_perplexity"] > 0               # (ragged lists: not labels)
    arrays = tux2.LDA(topics=2, iterations=2).fit(([0, 0, 1], [0, 1, 1], [2, 1, 3]))
    assert arrays.vocab_ is None and arrays.word_topic_.shape == (2, 2)


def test_documents_from_any_iterable_of_token_sequences():
    """A generator, a map, a tuple of token lists, numpy arrays of strings (a list of them,
    or a 2-D array a document a row) and generators of texts are read as the list of lists
    is, each read once: fit, a held-out set, transform, coherence, score and fit_transform
    (which would transform nothing had fit used the generator up)."""
    docs = [["apple", "pie", "sweet"], ["banana", "bread", "sweet"], ["apple", "banana", "fruit"]] * 5

    def lda():
        return tux2.LDA(topics=2, iterations=5, stop_words="none")
    ref = lda().fit(docs, test=docs[:3])
    forms = {"generator": (d for d in docs), "map": map(list, docs), "tuple": tuple(docs),
             "tuples": [tuple(d) for d in docs], "arrays": [np.array(d) for d in docs],
             "object arrays": [np.array(d, dtype=object) for d in docs], "2-D array": np.array(docs),
             "generator of generators": (iter(d) for d in docs), "generator of texts": (" ".join(d) for d in docs),
             "open file": None}
    for name, data in forms.items():
        if name == "open file":
            import io
            data = io.StringIO("".join(" ".join(d) + "\n" for d in docs))
        m = lda().fit(data, test=(np.array(d) for d in docs[:3]))
        np.testing.assert_array_equal(m.word_topic_, ref.word_topic_, err_msg=name)
        assert m.vocab_ == ref.vocab_ and m.history_[-1]["test_ll_per_token"] == ref.history_[-1]["test_ll_per_token"]
    theta = ref.transform(docs[:3])
    np.testing.assert_array_equal(ref.transform(np.array(d) for d in docs[:3]), theta)
    np.testing.assert_array_equal(ref.transform(iter(docs[:3])), theta)
    np.testing.assert_array_equal(ref.transform(tuple(docs[:3])), theta)     # 3 documents of one length
    np.testing.assert_array_equal(ref.transform(tuple(docs[:2]) + (["apple"],)), ref.transform(docs[:2] + [["apple"]]))
    with pytest.raises(InputError, match=r"two documents split into tokens, or \(docs, words\) arrays\?"):
        ref.transform(tuple(docs[:2]))
    assert lda().fit(([0, 0, 1, 2], ["apple", "pie", "apple", "pie"])).word_topic_.shape == (2, 2)   # (ids, words)
    np.testing.assert_array_equal(ref.coherence((d for d in docs), top_n=2), ref.coherence(docs, top_n=2))
    assert ref.score(d for d in docs[:3]) == ref.score(docs[:3])
    assert ref.perplexity(iter(docs[:3])) == ref.perplexity(docs[:3])
    np.testing.assert_array_equal(lda().fit_transform(d for d in docs), lda().fit_transform(docs))
    used = (d for d in docs)
    list(used)
    for empty in (used, []):                    # a generator already read (a gensim Dictionary built from it)
        with pytest.raises(InputError, match="no documents: an empty list, or a generator read to its end"):
            lda().fit(empty)


def test_new_documents_none_at_all_are_the_error_fit_gives():
    """transform, score, perplexity and fold_in of no documents (a generator read before,
    [], a matrix of 0 rows, an empty graph) stop as fit does, as scikit-learn's transform of
    0 rows does: transform gave a (0, K) array, silently, for an exhausted generator."""
    import scipy.sparse as sp
    from tux2.graph import BipartiteGraph
    docs = [["apple", "pie", "sweet"], ["goal", "team", "coach"]] * 5
    texts = tux2.LDA(topics=2, iterations=3, stop_words="none").fit(docs)
    counts = tux2.LDA(topics=2, iterations=3).fit(sp.csr_matrix(np.ones((4, 3))))
    used = (d for d in docs)
    list(used)
    for model, empty in ((texts, used), (texts, []), (texts, iter([])), (texts, np.array([], str)),
                         (counts, sp.csr_matrix((0, 3))), (counts, BipartiteGraph([], [], [], 0, 3))):
        for call in (model.transform, model.score, model.perplexity, model.fold_in):
            with pytest.raises(InputError, match="no documents: an empty list, or a generator read to its end"):
                call(empty)
    assert texts.transform([[]]).shape == (1, 2) and counts.transform(sp.csr_matrix((1, 3))).shape == (1, 2)


def test_docs_and_word_strings_arrays_keep_the_words_as_the_vocabulary(tmp_path):
    """(doc ids, words[, counts]) arrays whose words are strings: the words are the model's
    vocabulary (sorted, as loaders.from_arrays numbers them), as a text corpus's are; the
    model is the one fitted on the same counts as a matrix named by vocab=; new documents
    as such arrays, texts or token lists map by word, unknown words left out. Before,
    vocab_ was None and topics showed the words' ids ('0', '3'); a matrix to a model whose
    vocab= named its columns was refused as if it had been fitted on texts."""
    import scipy.sparse as sp
    docs = [["pie", "apple", "pie"], ["team", "goal"], ["apple", "melon"]] * 10
    d = np.array([i for i, ws in enumerate(docs) for _ in ws])
    w = np.array([x for ws in docs for x in ws])
    words = sorted(set(w.tolist()))
    X = sp.csr_matrix((np.ones(len(d)), (d, [words.index(x) for x in w])), shape=(len(docs), len(words)))

    def lda(**kw):
        return tux2.LDA(topics=2, iterations=10, **kw)
    named = lda(vocab=words).fit(X)
    assert named.transform(X).shape == (len(docs), 2)             # its columns are the model's word ids
    for form in ((d, w), (d.tolist(), w.tolist()), (d, w, np.ones(len(d), int)), (d, w.astype(object))):
        m = lda().fit(form)
        assert m.vocab_ == words and m.run_["format"] == "arrays of words"
        np.testing.assert_array_equal(m.word_topic_, named.word_topic_)
        assert {x for ws in m.topic_words(3) for x, _ in ws} == set(words)
    theta = m.transform([["pie", "apple"], ["goal", "unknown"]])
    np.testing.assert_array_equal(m.transform(([0, 0, 1, 1], ["pie", "apple", "goal", "unknown"])), theta)
    np.testing.assert_array_equal(m.transform(["pie apple", "goal unknown"]), theta)
    with pytest.raises(ValueError, match="fitted on arrays of words: .* pass the words themselves"):
        m.transform(X)
    # none at all in that form: fit's 'no documents', not 'pass the words themselves' (they were words)
    for empty in ((np.array([], int), np.array([], str)), ([], []), (np.zeros(0, int), np.zeros(0, object))):
        for call in (m.transform, m.score):
            with pytest.raises(InputError, match="no documents"):
                call(empty)
    with pytest.raises(InputError, match="numeric word ids .*these documents' words are strings"):
        lda().fit((d, [words.index(x) for x in w])).transform(([0], ["pie"]))
    with pytest.raises(InputError, match="a vocabulary names numeric word ids, and this corpus has words"):
        lda(vocab=words).fit((d, w))
    m.save(tmp_path / "m")
    back = tux2.LDA.load(tmp_path / "m")
    assert back.vocab_ == words and np.array_equal(back.transform(["pie apple", "goal unknown"]), theta)
    (tmp_path / "ids.txt").write_text("0 1 2\n")
    with pytest.raises(InputError, match="a triples corpus, and this model was fitted on arrays of words"):
        back.transform(str(tmp_path / "ids.txt"))
    warm = lda(warm_start=True).start_from(m).fit(["pie apple apple", "goal team"] * 5)
    assert warm.vocab_ == ["pie", "apple", "goal", "team"]
    pd = pytest.importorskip("pandas")
    rows = pd.DataFrame({"doc": [f"d{i:02d}" for i in d], "word": w, "count": 1})     # long form, string doc ids
    np.testing.assert_array_equal(lda().fit(rows).word_topic_, named.word_topic_)   # was refused as texts
    np.testing.assert_array_equal(m.transform(pd.DataFrame({"doc": [0, 0, 1, 1], "word": ["pie", "apple", "goal",
                                                                                         "unknown"]})), theta)
    with pytest.raises(InputError, match="a DataFrame with text .*no column named text"):
        lda().fit(pd.DataFrame({"id": [1, 2], "word": ["apple pie", "goal team"]}))     # texts, not words
    with pytest.raises(InputError, match="a DataFrame with text .*no column named text"):
        lda().fit(pd.DataFrame({"id": [1, 2], "Title": ["apple", "goal"], "label": [0, 1]}))  # no word column


def test_token_lists_of_numpy_strings_give_plain_str_words():
    """Tokens that are np.str_ (list(array)) are words as str: vocab_, topic_words and the
    model's files list plain strings (numpy 2 prints np.str_('apple') otherwise)."""
    docs = [list(np.array(d)) for d in [["apple", "pie"], ["goal", "team"]] * 10]
    assert type(docs[0][0]) is np.str_
    m = tux2.LDA(topics=2, iterations=3, stop_words="none").fit(docs)
    assert m.vocab_ == ["apple", "pie", "goal", "team"] and all(type(w) is str for w in m.vocab_)
    assert all(type(w) is str for ws in m.topic_words(4) for w, _ in ws)
    assert "np.str_" not in repr(m.topic_words(4))


@pytest.mark.parametrize("make, said", [
    (lambda: [1, 2, 3], "a list of int: LDA takes texts"),
    (lambda: np.array([1, 2, 3]), "a 1-D array of int64: LDA takes texts"),
    (lambda: None, "None: LDA takes texts"),
    (lambda: {"doc": "apple pie"}, "a dict: LDA takes texts"),
    (lambda: (x for x in [1.5, 2.5]), "a list of float: LDA takes texts"),
    (lambda: [[1, 2], [3]], "the document at position 0 holds 1, not a token string"),
    (lambda: [["a", "b"], np.array([3, 4])], "the document at position 1 holds 3, not a token string"),
    (lambda: [[(0, 1), (1, 2)]], r"holds \(0, 1\), not a token string.*gensim's \(word id, count\) pairs"),
    (lambda: [["apple", None, "pie"]], "the document at position 0 holds None, not a token string"),   # was an
    (lambda: (d for d in [["a"], np.array(["b", None], dtype=object)]), "position 1 holds None"),    # AttributeError
])
def test_what_is_no_corpus_is_named_with_what_lda_takes(make, said):
    """Input in no form of documents gets an error naming the forms LDA takes (not the edge
    loader's list of graph forms), in fit and in transform."""
    with pytest.raises(InputError, match=said):
        tux2.LDA(topics=2, iterations=1).fit(make())
    model = tux2.LDA(topics=2, iterations=1).fit([["apple", "pie"], ["goal", "team"]])
    with pytest.raises(InputError, match=said):
        model.transform(make())
    with pytest.raises(InputError, match=r"a 2-D array of object \(1, 2\): .*documents split into tokens"):
        tux2.LDA(topics=2, iterations=1).fit(np.array([["a", 1]], dtype=object))


def test_token_lists_drop_stop_words_in_any_case():
    """Stop words are lower case (as the tokenizer writes words), and token lists keep their
    case: 'The' and 'OF' from line.split() are stop words all the same, as a stop-word
    list's 'Pie' drops 'pie' and 'Pie'; other words keep their case, and new documents
    are filtered as the training ones."""
    docs = [["The", "Apple", "OF", "pie", "Pie"], ["the", "goal", "team", "of"]] * 10
    m = tux2.LDA(topics=2, iterations=3).fit(docs)
    assert m.vocab_ == ["Apple", "pie", "Pie", "goal", "team"]
    own = tux2.LDA(topics=2, iterations=3, stop_words=["Pie", "THE"]).fit(docs)
    assert own.vocab_ == ["Apple", "OF", "goal", "team", "of"]
    assert own.documents([["Pie", "pie", "Apple", "OF", "the"]])[0].num_edges == 2


def test_filters_that_drop_every_word_are_named():
    # 'tux2 run lda d.txt --max-df 0.5' on a corpus whose words are all in most documents said
    # 'no words found (empty file, or every word was filtered out)'
    from tux2.io import text_docs
    with pytest.raises(InputError, match=r"^texts: no words left: each of the 2 distinct words was filtered out; "
                                         r"2 by --max-df 0.5 \(max_df=\): in more than 1.5 of the 3 documents$"):
        text_docs(["aa bb", "aa bb", "bb aa"], max_df=0.5)
    with pytest.raises(InputError, match=r"3 by --min-count 9 \(min_count=\): seen fewer times; 1 by the stop "
                                         r"words \(--stop-words, stop_words=\)$"):
        text_docs(["aa bb", "aa the", "bb aa"], min_count=9, stopwords={"the"})
    with pytest.raises(InputError, match=r"no words found \(empty file"):
        text_docs(["", " "])
