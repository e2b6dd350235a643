"""Python API models and ``tux2 predict`` for MF and LDA: round trips in the user's ids,
top-k against brute force, LDA fold-in against the exact one-token posterior."""
import json

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2.datasets import netflix_like
from tux2.errors import InputError
from tux2 import LDA, MF
from tux2.udfs import lda


@pytest.fixture(scope="module")
def ratings_file(tmp_path_factory):
    """A rating file in string ids, with users and items in a scrambled first-appearance order."""
    tr, _ = netflix_like(n_users=300, n_items=60, n_ratings=6000, seed=3)
    key = np.unique(tr.src * tr.n_dst + tr.dst, return_index=True)[1]       # no duplicate pairs
    path = tmp_path_factory.mktemp("mf") / "ratings.txt"
    with open(path, "w") as f:
        for i in np.sort(key):
            f.write(f"user-{tr.src[i] * 7 % 300}\titem {tr.dst[i]}".replace(" ", "_") + f"\t{tr.values[i]:.1f}\n")
    return path


def test_mf_cli_model_equals_python_api_in_user_ids(ratings_file, tmp_path):
    out = tmp_path / "model"
    r = run_cli("run", "mf", str(ratings_file), "--k", "6", "--epochs", "4", "--test-fraction", "0", "--out",
                str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "model.json").read_text())
    assert meta["ids"] == "string"
    cli_model = MF.load(out)
    api_model = MF(k=6, epochs=4).fit(str(ratings_file))
    assert cli_model.ids_[0].tokens.tolist() == api_model.ids_[0].tokens.tolist()
    assert cli_model.ids_[0].tokens[0] == open(ratings_file).readline().split("\t")[0]   # first appearance
    users, items = ["user-7", "user-14", "user-0"], ["item_3", "item_0", "item_59"]
    np.testing.assert_allclose(cli_model.predict(users, items), api_model.predict(users, items), rtol=1e-6)
    # tux2 predict writes the same numbers, in the user's ids, and RMSE when ratings are given
    q = tmp_path / "q.txt"
    q.write_text("".join(f"{u} {i} 3\n" for u, i in zip(users, items)))
    r = run_cli("predict", str(out), str(q), "-o", str(tmp_path / "p.txt"))
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in (tmp_path / "p.txt").read_text().splitlines()[1:]]
    assert [row[:2] for row in rows] == [list(p) for p in zip(users, items)]
    pred = np.array([float(row[2]) for row in rows])
    np.testing.assert_allclose(pred, api_model.predict(users, items), rtol=1e-5)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["rmse"] == pytest.approx(np.sqrt(np.mean((3 - pred) ** 2)), rel=1e-5)
    # a user the model has never seen: the baseline μ + b_item by default, an error naming the line on request
    q.write_text("user-7 item_3\nnobody item_3\n")
    r = run_cli("predict", str(out), str(q))
    assert r.returncode == 0 and r.stdout.splitlines()[2].startswith("nobody item_3 ")
    r = run_cli("predict", str(out), str(q), "--unknown", "error")
    assert r.returncode == 2 and f"{q}:2: unknown user id 'nobody'" in r.stderr


def test_top_k_is_brute_force_over_unseen_items(ratings_file, tmp_path):
    model = MF(k=5, epochs=3).fit(str(ratings_file))
    users = model.ids_[0].tokens[:25]
    got_u, got_items, got_scores = model.recommend(users, k=7)
    seen = {}
    for line in open(ratings_file):
        u, i, _ = line.split("\t")
        seen.setdefault(u, set()).add(i)
    all_items = model.ids_[1].tokens
    for u, row, srow in zip(got_u, got_items, got_scores):
        scores = model.predict(np.full(len(all_items), u), all_items)
        cand = sorted(((-s, j) for j, (it, s) in enumerate(zip(all_items, scores)) if it not in seen[u]))[:7]
        assert list(row) == [all_items[j] for _, j in cand]
        np.testing.assert_allclose(srow, [-s for s, _ in cand], rtol=1e-9)
    # the CLI writes the same lists; users named in a file, in the user's ids
    out = tmp_path / "m"
    model.save(out)
    (tmp_path / "users.txt").write_text("\n".join(users[:3]) + "\n")
    r = run_cli("predict", str(out), str(tmp_path / "users.txt"), "--top-k", "7")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == list(users[:3])
    assert [t.split(":")[0] for t in lines[0].split()[1:]] == list(got_items[0])
    # options before the positional INPUT too (argparse alone leaves INPUT empty there)
    r = run_cli("predict", str(out), "--top-k", "7", str(tmp_path / "users.txt"))
    assert r.returncode == 0 and r.stdout == "\n".join(lines) + "\n", r.stderr


def test_top_k_with_min_ratings_leaves_out_items_rated_fewer_times(ratings_file, tmp_path):
    """``min_ratings`` (``--min-ratings``), as surprise's min_support: an item with fewer
    training ratings is never recommended; the lists are the brute-force ones over the
    others, and the CLI writes them."""
    model = MF(k=5, epochs=3).fit(str(ratings_file))
    count = {}
    for line in open(ratings_file):
        count[line.split("\t")[1]] = count.get(line.split("\t")[1], 0) + 1
    n = int(np.percentile(list(count.values()), 75))          # a quarter of the items stay
    users, items, scores = model.recommend(k=5, min_ratings=n)
    lists = [[it for it in row if it] for row in items.tolist()]     # "": a row short of 5 such items, padded
    assert sum(map(len, lists)) > 4 * len(lists) and min(count[it] for row in lists for it in row) >= n
    _, everything, all_scores = model.recommend(k=60)
    for row, srow, full, fscores in zip(lists, scores.tolist(), everything.tolist(), all_scores.tolist()):
        kept = [(it, s) for it, s in zip(full, fscores) if it and count[it] >= n][:5]
        assert row == [it for it, _ in kept] and srow[:len(row)] == [s for _, s in kept]
    model.save(tmp_path / "m")
    r = run_cli("predict", str(tmp_path / "m"), "--top-k", "5", "--min-ratings", str(n))
    assert r.returncode == 0, r.stderr
    assert [[t.split(":")[0] for t in ln.split()[1:]] for ln in r.stdout.splitlines()] == lists


def test_min_ratings_that_leaves_no_item_is_an_error_naming_it(ratings_file, tmp_path):
    """`tux2 predict MODEL --top-k 3 --min-ratings 100000` printed every user with an
    empty list, and recommend() rows of nothing, without a word."""
    model = MF(k=2, epochs=1).fit(str(ratings_file))
    with pytest.raises(InputError, match=r"min_ratings=100000 \(--min-ratings\) leaves no item to recommend: none "
                                         r"of the \d+ items has that many training ratings \(the most: \d+\)"):
        model.recommend(k=3, min_ratings=100000)
    model.save(tmp_path / "m")
    r = run_cli("predict", str(tmp_path / "m"), "--top-k", "3", "--min-ratings", "100000")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("tux2: error: min_ratings=100000 "
                                                                        "(--min-ratings) leaves no item"), r.stderr


def test_predict_metrics_is_written_or_refused_never_silently_missing(ratings_file, tmp_path):
    """`tux2 predict MODEL PAIRS --metrics m.json` on pairs without ratings, and with --top-k,
    exited 0 and wrote no m.json, without a word."""
    MF(k=2, epochs=1).fit(str(ratings_file)).save(tmp_path / "m")
    (tmp_path / "pairs.txt").write_text("user-0\titem_1\nuser-7\titem_2\n")
    m = tmp_path / "m.json"
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "pairs.txt"), "-o", str(tmp_path / "p.txt"),
                "--metrics", str(m))
    assert r.returncode == 0 and json.loads(m.read_text()) == {"model": "mf", "pairs": 2}, r.stderr
    assert m.read_text().endswith("}\n"), m.read_text()     # a text line, as run's --metrics lines (wc -l, cat a b)
    r = run_cli("predict", str(tmp_path / "m"), "--top-k", "2", "--metrics", str(tmp_path / "k.json"))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("tux2: error: --metrics: --top-k "), r.stderr


def test_top_k_rows_short_of_k_are_padded_with_minus_one_and_nan(tmp_path):
    """A user with fewer unseen items than k: the row ends in item -1 ("" for string ids)
    and score nan, in an array of the model's id type; predict --top-k lists the real ones."""
    rows = [(1, 1, 5), (1, 2, 4), (1, 3, 3), (2, 1, 2), (2, 4, 5), (3, 2, 1), (3, 3, 4), (3, 4, 2)]
    for kind, name in ((int, lambda x: x), (str, lambda x: f"x{x}")):
        data = "".join(f"{name(u)} {name(i)} {r}\n" for u, i, r in rows)
        (tmp_path / "r.txt").write_text(data)
        model = MF(k=2, epochs=1).fit(str(tmp_path / "r.txt"))
        users, items, scores = model.recommend(k=3)
        pad = -1 if kind is int else ""
        assert items.dtype.kind == ("i" if kind is int else "U") and items.shape == scores.shape == (3, 3)
        assert [[it for it in row if it != pad] for row in items.tolist()] == \
            [[name(4)], sorted([name(2), name(3)], key=lambda it: -model.predict([name(2)], [it])[0]), [name(1)]]
        assert (np.isfinite(scores) == (items != pad)).all() and np.isnan(scores[0, 1:]).all()
        model.save(tmp_path / "m")
        r = run_cli("predict", str(tmp_path / "m"), "--top-k", "3")
        assert r.returncode == 0 and [len(ln.split()) for ln in r.stdout.splitlines()] == [2, 3, 2], r.stdout


def test_mf_model_errors():
    model = MF(k=2, epochs=1).fit((np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([1.0, 2.0, 3.0])))
    assert model.ids_ == (None, None)
    # a user the model has never seen: μ + the item's bias by default, nan with skip, an error on request
    np.testing.assert_allclose(model.predict([5, 1], [0, 1])[:1], model.mu_ + model.item_bias_[0])
    assert np.isnan(model.predict([5], [0], unknown="skip")[0])
    with pytest.raises(InputError, match="unknown user 5"):
        model.predict([5], [0], unknown="error")
    with pytest.raises(InputError, match="unknown item 7"):
        model.set_params(unknown="error").predict([0], [7])
    with pytest.raises(InputError, match="needs a rating column"):
        MF().fit((np.array([0, 1]), np.array([0, 0])))


def test_lda_fold_in_matches_the_one_token_posterior():
    """A one-token document's θ under fold-in sampling is (p(k | w) + α)/(1 + Kα),
    with p(k | w) ∝ (β + n_wk)/(Vβ + n_k): the sampler's average is within 3σ of it."""
    rng = np.random.default_rng(0)
    K, V, alpha, beta = 4, 6, 0.1, 0.01
    word_topic = rng.integers(0, 50, (K, V)).astype(np.float64)
    totals = word_topic.sum(axis=1)
    from tux2.graph import BipartiteGraph
    g = BipartiteGraph(np.arange(V), np.arange(V), np.ones(V), V, V, ("doc", "word"))
    its = 4000
    theta = lda.infer(word_topic, totals, g, alpha, beta, iterations=its, seed=1)
    p = (beta + word_topic.T) / (V * beta + totals)            # V × K
    p /= p.sum(axis=1, keepdims=True)
    want = (p + alpha) / (1 + K * alpha)
    sd = np.sqrt(p * (1 - p) / (its // 2)) / (1 + K * alpha)
    assert np.all(np.abs(theta - want) <= 3 * sd + 1e-9), (theta, want)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)


def test_lda_predict_cli_on_text(tmp_path):
    words = ["apple banana cherry grape melon", "goal match team score coach"]
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(words[i % 2].split(), 30)) for i in range(100)]
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    r = run_cli("run", "lda", str(tmp_path / "docs.txt"), "--topics", "2", "--iterations", "30", "--out",
                str(tmp_path / "lda"), "--quiet")
    assert r.returncode == 0, r.stderr
    (tmp_path / "new.txt").write_text("the apple melon banana zebra\ncoach goal team goal\n")
    r = run_cli("predict", str(tmp_path / "lda"), str(tmp_path / "new.txt"))
    assert r.returncode == 0, r.stderr
    theta = np.array([[float(x) for x in ln.split()[1:]] for ln in r.stdout.splitlines()[1:]])
    assert theta.shape == (2, 2) and np.allclose(theta.sum(axis=1), 1, atol=1e-3)
    assert theta[0].argmax() != theta[1].argmax() and theta.max(axis=1).min() > 0.8
    report = json.loads(r.stderr.strip().splitlines()[-1])
    assert report["unknown_words_dropped"] == 1                 # 'zebra'; 'the' is a stop word, dropped as in training
    import tux2                                                 # held-out fit, as fold-in scores it from Python
    model = tux2.LDA.load(tmp_path / "lda")
    assert report["tokens"] == 7 and report["ll_per_token"] == pytest.approx(model.score(tmp_path / "new.txt") / 7, abs=1e-6)
    assert report["perplexity"] == pytest.approx(model.perplexity(tmp_path / "new.txt"), abs=1e-4)


def test_lda_python_api_equals_the_cli(tmp_path):
    rng = np.random.default_rng(2)
    vocab = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    docs = [" ".join(rng.choice(vocab[:4] if i % 3 else vocab[4:], 20)) for i in range(60)]
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    r = run_cli("run", "lda", str(tmp_path / "docs.txt"), "--topics", "3", "--iterations", "8", "--out",
                str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    cli_model = LDA.load(tmp_path / "m")
    api_model = LDA(topics=3, iterations=8).fit(docs)
    np.testing.assert_array_equal(cli_model.word_topic_, api_model.word_topic_)
    assert cli_model.vocab_ == api_model.vocab_
    np.testing.assert_array_equal(cli_model.transform(["alpha beta", "zeta eta"], seed=4),
                                  api_model.transform(["alpha beta", "zeta eta"], seed=4))


def _raw(m, u, i):
    """r̂ = μ + b_u + b_i + p_u·q_i of dense ids, unclipped (the formula, written out)."""
    return m.mu_ + m.user_bias_[u] + m.item_bias_[i] + np.einsum("ij,ij->i", m.user_factors_[u], m.item_factors_[i])


@pytest.mark.filterwarnings("ignore:the test RMSE was lowest")     # 20 epochs: factors large enough to leave 1-5
def test_mf_predictions_stay_in_the_training_ratings_range_and_old_models_are_not_clipped(tmp_path):
    """As surprise clips to its rating scale, predictions stay in the training ratings'
    [min, max] (kept in model.json): a fan of five-star items predicted 5, not 6; the
    test RMSE is that of those predictions; recommend ranks before clipping (no ties at
    5) and reports predict's scores. A model saved without the range (before tux2 kept
    one) predicts unclipped, as before."""
    # 1-based stars, tab-separated, a timestamp column: user 1 rates everything 5 and items 1-3 get 5 from all
    lines = [(u, i, 5 if u == 1 or i <= 3 else 1 + (u * 3 + i) % 4, 881250949 + 7 * u + i)
             for u in range(1, 31) for i in range(1, 21) if u == 1 or i <= 3 or (u + i) % 3]
    path = tmp_path / "u.data"
    path.write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in lines))
    test = tmp_path / "u.test"
    test.write_text("1\t2\t5\t881250950\n2\t2\t5\t881250951\n5\t7\t1\t881250952\n")
    m = MF(k=4, epochs=20, seed=0).fit(str(path), str(test))
    assert m.rating_range_ == (1.0, 5.0)
    users, items = [1, 2, 5, 1], [2, 2, 7, 1]
    d = [m.lookup(0, users), m.lookup(1, items)]
    raw, pred = _raw(m, *d), m.predict(users, items)
    assert raw.max() > 5 and pred.max() == 5 and pred.min() >= 1
    np.testing.assert_allclose(pred, np.clip(raw, 1, 5))
    rows = np.loadtxt(test)
    assert m.history_[-1]["test_rmse"] == pytest.approx(-m.score((rows[:, 0], rows[:, 1], rows[:, 2])))
    assert m.history_[-1]["test_rmse"] < np.sqrt(np.mean((_raw(m, m.lookup(0, rows[:, 0]), m.lookup(1, rows[:, 1]))
                                                          - rows[:, 2]) ** 2))
    names, top, score = m.recommend([1], k=5, exclude_seen=False)
    ranked = _raw(m, m.lookup(0, [1] * 5), m.lookup(1, top[0]))
    assert np.all(np.diff(ranked) <= 0) and (ranked > 5).sum() >= 2 and score.max() == 5
    np.testing.assert_allclose(score[0], m.predict([1] * 5, top[0]))
    m.save(tmp_path / "new")
    assert json.loads((tmp_path / "new" / "model.json").read_text())["rating_range"] == [1.0, 5.0]
    np.testing.assert_allclose(MF.load(tmp_path / "new").predict(users, items), pred)
    m.rating_range_ = None                      # what a model saved before the range was kept holds
    m.save(tmp_path / "old")
    assert "rating_range" not in json.loads((tmp_path / "old" / "model.json").read_text())
    old = MF.load(tmp_path / "old")
    assert old.rating_range_ is None
    np.testing.assert_allclose(old.predict(users, items), raw)
    r = run_cli("predict", str(tmp_path / "new"), str(test))
    assert r.returncode == 0 and max(float(x.split()[2]) for x in r.stdout.splitlines()[1:4]) == 5, r.stdout + r.stderr


def test_top_k_lines_are_the_user_by_user_ones_for_a_list_with_repeats(tmp_path):
    """`tux2 predict MODEL USERS --top-k` scores each distinct user once and writes each
    line from it: the file is byte for byte the one a user-by-user reference writes, for a
    list that repeats users (as a request log does), names unknown ones (the baseline),
    one who has seen all but two items (a short line) and scores that tie (the factors are
    quarters, so every sum is exact and ties are exact)."""
    from tests.naive import top_k_lines
    rng = np.random.default_rng(7)
    n_u, n_i = 30, 20
    rows = {(int(a), int(b)) for a, b in zip(rng.integers(0, n_u, 300), rng.integers(0, n_i - 1, 300))}
    rows |= {(0, j) for j in range(n_i - 3)}                      # user 0: all but items 17, 18 (19: nobody's)
    u, i = np.array(sorted(rows)).T
    m = MF(k=3, epochs=1).fit((u, i, rng.integers(1, 6, len(u)).astype(float)))
    for a in (m.user_factors_, m.item_factors_, m.user_bias_, m.item_bias_):
        a[...] = rng.integers(-4, 5, a.shape) / 4                 # quarters: exact sums, many ties
    m.mu_ = 3.0
    m.save(tmp_path / "m")
    users = [str(x) for x in rng.zipf(1.5, 400) % (n_u + 5)] + ["0", "1000", "0"]      # 30…34, 1000: unknown
    (tmp_path / "users.txt").write_text("\n".join(users) + "\n")
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "users.txt"), "--top-k", "6")
    assert r.returncode == 0, r.stderr
    seen = [set(i[u == x].tolist()) for x in range(n_u)]
    assert r.stdout == top_k_lines(m.user_factors_, m.item_factors_, m.user_bias_, m.item_bias_, m.mu_, seen, users,
                                   6, m.rating_range_)
    assert len(set(users)) < len(users) and len(r.stdout.splitlines()[-1].split()) == 3     # user 0: two items
    got_u, items, scores = m.recommend(np.array(users, dtype=np.int64), k=6)      # the Python API: the same lists
    assert [f"{x}" + "".join(f" {j}:{s:.6g}" for j, s in zip(row, srow) if j >= 0) for x, row, srow
            in zip(got_u.tolist(), items.tolist(), scores.tolist())] == r.stdout.splitlines()


def test_an_lda_model_of_arrays_or_the_built_in_corpus_loads(tmp_path):
    """model.json's "format" is the corpus's ('arrays', 'built-in'), not a value of the
    format parameter: such a model loads (it stopped with 'format must be one of …')."""
    from tux2 import LDA
    counts = np.random.default_rng(0).integers(0, 3, (40, 25))
    m = LDA(topics=3, iterations=2).fit(counts)
    m.save(tmp_path / "m")
    back = LDA.load(tmp_path / "m")
    np.testing.assert_array_equal(back.word_topic_, m.word_topic_)
    assert back.format == "auto" and back.transform(counts[:3]).shape == (3, 3)


def test_a_model_path_that_is_no_directory_is_named_as_such(tmp_path):
    """tux2 predict of a mistyped model path said 'no model.json here', as for a directory
    without one; a missing path and a file are now said as what they are."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "f.txt").write_text("1 2 3\n")
    for path, what in ((tmp_path / "nope", "no such directory"), (tmp_path / "f.txt", "a file, not a model directory"),
                       (tmp_path / "empty", "no model.json here")):
        r = run_cli("predict", str(path), str(tmp_path / "f.txt"))
        assert r.returncode != 0 and r.stderr.startswith(f"tux2: error: {path}: {what};"), r.stderr


def _seen_pairs(model):
    """(dense user, dense item) pairs of a model's seen.npz."""
    z = np.load(model / "seen.npz")
    return set(zip(np.repeat(np.arange(len(z["indptr"]) - 1), np.diff(z["indptr"])).tolist(), z["indices"].tolist()))


def test_a_model_written_without_its_held_out_ratings_says_so(ratings_file, tmp_path):
    """`tux2 run mf r.txt --out m` trains on the 90 % left after the default --test-fraction
    hold-out, where MF().fit(r.txt) trains on all. The run says so, and how to train on
    everything; the held-out ratings are the user's all the same: seen.npz has them, so
    --top-k leaves them out (it recommended items a user rated there)."""
    r = run_cli("run", "mf", str(ratings_file), "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert "note: the model leaves out the 10% of INPUT held out" in r.stdout, r.stdout
    lines = open(ratings_file).read().splitlines()           # no pair twice; every id has training ratings
    assert len(_seen_pairs(tmp_path / "m")) == len(lines) == 5385
    # the run's ranking metrics rank the held-out items among the unseen: training items alone are left out
    r = run_cli("run", "mf", str(ratings_file), "--implicit", "--epochs", "2", "--k", "4", "--out", str(tmp_path / "i"))
    assert r.returncode == 0, r.stderr
    assert len(_seen_pairs(tmp_path / "i")) == 5385 and float(r.stdout.split("ndcg@10 ")[1].split()[0]) > 0.05, r.stdout
    assert "--test-fraction 0 trains on every rating" in r.stdout
    for more in (["--test-fraction", "0"], ["--test", str(ratings_file)]):
        r = run_cli("run", "mf", str(ratings_file), "--epochs", "1", "--k", "2", "--out", str(tmp_path / "n"), *more)
        assert r.returncode == 0 and "held out" not in r.stdout, r.stdout


@pytest.mark.slow
def test_two_workers_keep_the_held_out_ratings_as_seen_too(tmp_path):
    """As above, with distributed ingress: each worker holds out its share of the lines."""
    rng = np.random.default_rng(0)
    pairs = np.unique(np.c_[rng.zipf(1.4, 5000) % 200, rng.integers(0, 50, 5000)], axis=0)
    np.savetxt(tmp_path / "r.txt", np.c_[pairs, rng.integers(1, 6, len(pairs))], fmt="%d")
    r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--epochs", "1", "--k", "2", "--workers", "2",
                "--out", str(tmp_path / "m"), timeout=300)
    assert r.returncode == 0 and "distributed ingress" in r.stdout, r.stdout + r.stderr
    seen, rated = _seen_pairs(tmp_path / "m"), set(map(tuple, pairs.tolist()))     # (0-based ids: dense as written)
    assert seen <= rated and len(seen) > 0.97 * len(rated), (len(seen), len(rated))    # (was 90 %: training alone)


def test_explicit_models_and_checkpoints_keep_the_confidence_they_always_recorded(tmp_path):
    """Log confidence at α 1 became implicit feedback's default after models and checkpoints of
    explicit ratings had recorded linear and 40 (settings without effect there). Such a
    model.json still loads (with the defaults it has now), a model.json or checkpoint of an
    explicit fit records what they did (so an old checkpoint resumes), and a setting that has
    no effect is still refused when given."""
    from tux2.estimators.mf import NO_CONFIDENCE
    g = netflix_like(300, 60, 3000, seed=2)[0]
    src, dst, val = g.src, g.dst, g.values
    m = MF(k=3, epochs=1).fit((src, dst, val), checkpoint=str(tmp_path / "ck"))
    m.save(str(tmp_path / "m"))
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert {k: meta[k] for k in NO_CONFIDENCE} == NO_CONFIDENCE == {"alpha": 40.0, "confidence": "linear"}
    state = json.loads(next((tmp_path / "ck").glob("ckpt-*/state.json")).read_text())
    assert {k: state["params"][k] for k in NO_CONFIDENCE} == NO_CONFIDENCE
    back = MF.load(str(tmp_path / "m"))
    assert (back.alpha, back.confidence) == (1.0, "log")        # (the defaults: they do nothing here)
    np.testing.assert_array_equal(back.predict(src[:50], dst[:50]), m.predict(src[:50], dst[:50]))
    with pytest.raises(ValueError, match="alpha=40 has no effect with explicit ratings"):
        MF(alpha=40).fit((src, dst, val))


def test_mf_score_refuses_a_rating_that_is_not_finite():
    """fit refuses a NaN rating; score returned nan for one, saying nothing."""
    g = netflix_like(300, 60, 3000, seed=1)[0]
    m = MF(k=2, epochs=1).fit(g)
    with pytest.raises(ValueError, match="rating nan at row 1 is not finite"):
        m.score(np.array([[int(g.src[0]), int(g.dst[0]), 3.0], [int(g.src[1]), int(g.dst[1]), np.nan]]))
    assert np.isfinite(m.score(np.c_[g.src[:20], g.dst[:20], g.values[:20]]))


def test_mf_predict_warns_of_ratings_of_another_scale_and_of_mostly_new_pairs(tmp_path, capsys):
    """A MovieLens model's 'tux2 predict' on Last.fm's user_artists.dat (play counts, 1 … 352,698;
    78 % of its pairs with a user or item the model never saw) printed RMSE 3823 and nothing
    else, where MF.score and 'tux2 run' say when most pairs are cold. It now warns when the
    ratings lie outside the training range (another data set, or another column) and when
    COLD_SHARE of the pairs are new; an ordinary held-out file gets neither warning."""
    from tux2 import cli
    rng = np.random.default_rng(0)
    u, i = rng.integers(1, 41, 2000), rng.integers(1, 31, 2000)
    key = rng.permutation(np.unique(u * 100 + i, return_index=True)[1])      # the held-out lines: any users
    lines = [f"{u[j]}\t{i[j]}\t{rng.integers(1, 6)}\n" for j in key]
    train, held = tmp_path / "train.tsv", tmp_path / "held.tsv"
    train.write_text("".join(lines[:-50]))
    held.write_text("".join(lines[-50:]))
    assert cli.main(["run", "mf", str(train), "--test-fraction", "0", "--epochs", "2", "--out", str(tmp_path / "m"),
                     "--quiet"]) == 0
    plays, cold = tmp_path / "plays.tsv", tmp_path / "cold.tsv"
    plays.write_text("".join(f"{a}\t{b}\t{100 * int(r)}\n" for a, b, r in (x.split() for x in lines[-50:])))
    cold.write_text("".join(f"{500 + k}\t{k % 30 + 1}\t3\n" for k in range(95)) + "".join(lines[-5:]))
    capsys.readouterr()
    for f, scale, new in ((held, False, False), (plays, True, False), (cold, False, True)):
        assert cli.main(["predict", str(tmp_path / "m"), str(f), "-o", str(tmp_path / "p.txt")]) == 0
        out, err = capsys.readouterr()
        assert ("lie outside the model's training ratings (1 … 5)" in err) == scale, err
        assert ("95 of the 100 pairs (95%) have a user or item the model was not trained on" in err) == new, err
        assert json.loads(out.strip().splitlines()[-1])["pairs"] in (50, 100)
