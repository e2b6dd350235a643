"""``MF.fold_in`` and ``tux2 predict --fold-in``: users fitted to a trained model's items
from their ratings alone, against the least-squares problem solved by brute force."""
import json

import numpy as np
import pytest

import tux2
from tests.conftest import run_cli
from tux2.datasets import netflix_like


@pytest.fixture(scope="module")
def planted():
    tr, _ = netflix_like(n_users=600, n_items=150, n_ratings=15000, rank=5, seed=4)
    return tr.src, tr.dst, tr.values.astype(np.float64)


def _ridge(model, items, ratings):
    """argmin over (p, b) of Σ (r − μ − b_i − b − p·q_i)² + λ·s·n|p|² + D·b², by lstsq on
    the stacked system [A; √Λ] x = [t; 0] (λ per rating in the units the ratings trained in)."""
    params = model.get_params()
    Q, n = model.item_factors_[items], len(items)
    A = np.column_stack([Q, np.ones(n)]) if params["biases"] else Q
    ridge = np.full(A.shape[1], params["reg"] * n * model.rating_scale_)
    if params["biases"]:
        ridge[-1] = params["damping"]
    t = ratings - model.mu_ - model.item_bias_[items]
    return np.linalg.lstsq(np.vstack([A, np.diag(np.sqrt(ridge))]), np.concatenate([t, np.zeros(A.shape[1])]),
                           rcond=None)[0]


@pytest.mark.parametrize("kw", [dict(), dict(mode="als"), dict(biases=False), dict(scale=10.0)],
                         ids=["sgd", "als", "no-biases", "ratings-x10"])
def test_a_folded_in_user_is_the_exact_ridge_solve(planted, kw):
    kw = dict(kw)
    scale = kw.pop("scale", 1.0)
    src, dst, val = planted
    model = tux2.MF(k=6, epochs=3, **kw).fit((src, dst, val * scale))
    assert (model.rating_scale_ > 1) == (scale > 1)           # (ratings × 10 train divided by 16)
    known_user = int(src[0])
    new_items, new_r = np.array([1, 7, 20, 33]), np.array([5.0, 3.0, 4.0, 1.0]) * scale
    mine = dst[src == known_user]
    model.fold_in((np.r_[np.full(4, 10_000), np.full(len(mine), known_user)], np.r_[new_items, mine],
                   np.r_[new_r, val[src == known_user] * scale]))
    for user, items, r in ((10_000, new_items, new_r), (known_user, mine, val[src == known_user] * scale)):
        d = model.lookup(0, [user])[0]
        x = _ridge(model, model.lookup(1, items), r)
        np.testing.assert_allclose(model.user_factors_[d], x[:6], rtol=1e-9, atol=1e-12)
        assert model.user_bias_[d] == pytest.approx(x[6] if model.biases else 0.0, abs=1e-12)
    names, top, _ = model.recommend([10_000], k=150)
    assert not np.isin(new_items, top[0]).any()             # its fold-in items are its seen ones


def test_implicit_fold_in_is_hu_et_al_s_solve_over_every_item(planted):
    src, dst, val = planted
    model = tux2.MF(k=6, epochs=3, mode="als", implicit=True).fit((src, dst, val))
    items, counts = np.array([2, 9, 40]), np.array([3.0, 1.0, 12.0])
    model.fold_in((np.full(3, 777), items, counts))
    Q, lam, alpha = model.item_factors_, model.reg, model.alpha
    c, pref = np.ones(len(Q)), np.zeros(len(Q))
    at = model.lookup(1, items)
    assert model.confidence == "log" and model.epsilon == 1.0           # the defaults: c = 1 + α·log(1 + r)
    c[at], pref[at] = 1 + alpha * np.log(1 + counts), 1.0
    ref = np.linalg.solve(Q.T @ (Q * c[:, None]) + lam * np.eye(6), Q.T @ (c * pref))
    np.testing.assert_allclose(model.user_factors_[model.lookup(0, [777])[0]], ref, rtol=1e-9, atol=1e-12)


def test_log_confidence_fold_in_is_kept_by_the_saved_model_and_the_cli(planted, tmp_path):
    """confidence="log": the folded-in user is Hu et al.'s solve with C = 1 + α·log(1 + r/ε),
    from the fitted model, from the model saved and loaded, and from ``tux2 predict
    --fold-in`` on that directory (its top-k is the one recommend gives)."""
    src, dst, val = planted
    model = tux2.MF(k=6, epochs=3, mode="als", implicit=True, alpha=3.0, confidence="log", epsilon=0.5)
    model.fit((src, dst, val * 100))                     # counts up to 500
    model.save(tmp_path / "m")
    items, counts = np.array([2, 9, 40]), np.array([3.0, 1.0, 1200.0])
    Q = model.item_factors_
    c, pref = np.ones(len(Q)), np.zeros(len(Q))
    at = model.lookup(1, items)
    c[at], pref[at] = 1 + 3.0 * np.log(1 + counts / 0.5), 1.0
    ref = np.linalg.solve(Q.T @ (Q * c[:, None]) + model.reg * np.eye(6), Q.T @ (c * pref))
    c_linear = np.ones(len(Q))
    c_linear[at] = 1 + 3.0 * counts
    linear = np.linalg.solve(Q.T @ (Q * c_linear[:, None]) + model.reg * np.eye(6), Q.T @ (c_linear * pref))
    assert np.abs(linear - ref).max() > 1e-3            # (the linear form's solve is another)
    model.fold_in((np.full(3, 777), items, counts))
    np.testing.assert_allclose(model.user_factors_[model.lookup(0, [777])[0]], ref, rtol=1e-9, atol=1e-12)
    back = tux2.MF.load(tmp_path / "m")
    assert (back.confidence, back.epsilon) == ("log", 0.5)
    back.fold_in((np.full(3, 777), items, counts))
    Qf = back.item_factors_                             # (float32 on file)
    c32 = np.ones(len(Qf))
    c32[at] = 1 + 3.0 * np.log(1 + counts / 0.5)
    ref32 = np.linalg.solve(Qf.T @ (Qf * c32[:, None]) + back.reg * np.eye(6), Qf.T @ (c32 * pref))
    np.testing.assert_allclose(back.user_factors_[back.lookup(0, [777])[0]], ref32, rtol=1e-9, atol=1e-12)
    (tmp_path / "new.tsv").write_text("".join(f"777\t{i}\t{n:g}\n" for i, n in zip(items, counts)))
    r = run_cli("predict", str(tmp_path / "m"), "--fold-in", str(tmp_path / "new.tsv"), "--top-k", "5")
    assert r.returncode == 0, r.stderr
    top = back.recommend([777], k=5)[1][0]
    assert [x.split(":")[0] for x in r.stdout.split()[1:]] == [str(i) for i in top]


def test_users_left_out_of_training_predict_their_other_ratings_from_a_fold_in(planted):
    """Users 500 … 599 out of training: 80 % of their ratings folded in predict the other
    20 % far better than the baseline μ + b_i, and about as well as training on them."""
    src, dst, val = planted
    new = src >= 500
    fold = new & (np.random.default_rng(0).random(len(src)) < 0.8)
    held = new & ~fold
    model = tux2.MF(k=10, epochs=10).fit((src[~new], dst[~new], val[~new]))
    rmse = lambda m: float(np.sqrt(np.mean((m.predict(src[held], dst[held]) - val[held]) ** 2)))
    baseline = rmse(model)
    folded = rmse(model.fold_in((src[fold], dst[fold], val[fold])))
    trained = rmse(tux2.MF(k=10, epochs=10).fit((src[~held], dst[~held], val[~held])))
    assert folded < 0.75 * baseline and folded < 1.1 * trained, (baseline, folded, trained)


def test_fold_in_from_a_file_of_string_ids_saves_and_the_cli_lists_the_same(tmp_path):
    """A MovieLens-like file of string user ids: new users appended, known ones refitted,
    items without training ratings counted and left out; the model saves and loads with
    them; ``tux2 predict MODEL --fold-in FILE --top-k K`` lists what ``recommend`` does."""
    rng = np.random.default_rng(5)
    items = np.minimum(rng.zipf(1.5, 4000), 60)
    rows = sorted({(f"u{rng.integers(200):03d}", int(i)) for i in items})
    train = tmp_path / "train.tsv"
    train.write_text("userId\tmovieId\trating\ttimestamp\n" + "".join(
        f"{u}\t{i}\t{rng.integers(1, 6)}\t97830{n:04d}\n" for n, (u, i) in enumerate(rows)))
    new = tmp_path / "new.tsv"
    new.write_text("userId\tmovieId\trating\ttimestamp\nnew a\t1\t5\t1\nnew a\t2\t4\t2\nnew a\t9999\t3\t3\n"
                   "u000\t3\t1\t4\n")
    r = run_cli("run", "mf", str(train), "--k", "4", "--epochs", "3", "--out", str(tmp_path / "m"), "-q")
    assert r.returncode == 0, r.stderr
    model = tux2.MF.load(tmp_path / "m")
    with pytest.warns(RuntimeWarning, match="1 ratings are of items without training ratings, left out"):
        model.fold_in(str(new))
    assert model.n_users == 201 and model.user_ids(0, [200])[0] == "new a"
    model.save(tmp_path / "m2")
    again = tux2.MF.load(tmp_path / "m2")
    np.testing.assert_array_equal(again.user_factors_, model.user_factors_.astype(np.float32))   # (files: float32)
    names, top, score = again.recommend(["new a", "u000"], k=5)
    assert top.dtype.kind == "U" and not np.isin(["1", "2"], top[0]).any() and "3" not in top[1]   # (string ids)
    r = run_cli("predict", str(tmp_path / "m"), "--fold-in", str(new), "--top-k", "5")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.splitlines()[0]) == {"model": "mf", "folded_in_users": 2,
                                                    "ratings_of_items_without_training_ratings": 1}
    lines = r.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["new a", "u000"]
    assert [x.split(":")[0] for x in lines[0].split("\t")[1:]] == top[0].tolist()
    r = run_cli("predict", str(tmp_path / "m"), "--fold-in", str(new), "--out", str(tmp_path / "m3"))
    assert r.returncode == 0 and r.stdout == "" and json.loads(r.stderr.splitlines()[0])["out"] == str(tmp_path / "m3")
    for name in ("user_factors_", "user_bias_", "item_factors_"):
        np.testing.assert_array_equal(getattr(tux2.MF.load(tmp_path / "m3"), name), getattr(again, name), err_msg=name)
    r = run_cli("predict", str(tmp_path / "m"), "--out", str(tmp_path / "m4"), "--top-k", "5")
    assert r.returncode == 2 and "--out writes the model with the users of --fold-in" in r.stderr


def test_a_fold_in_user_without_known_items_or_with_fewer_ratings_than_factors_at_reg_0(planted, tmp_path):
    """A user none of whose items the model knows (the system is all zeros) and, at λ = 0, one
    with fewer ratings than factors (singular) ended fold_in and 'tux2 predict --fold-in' in
    LinAlgError ('internal error', exit 70). The first gets zero factors and bias (the baseline
    predicts it), the second the least-squares solution of least norm (brute force here)."""
    src, dst, val = planted
    model = tux2.MF(k=4, epochs=2).fit((src, dst, val))
    with pytest.warns(RuntimeWarning, match="1 ratings are of items without training ratings"):
        model.fold_in(([9999], [9999], [3.0]))
    d = model.lookup(0, [9999])[0]
    assert not model.user_factors_[d].any() and model.user_bias_[d] == 0
    assert model.predict([9999], [int(dst[0])])[0] == pytest.approx(
        model.mu_ + model.item_bias_[model.lookup(1, [int(dst[0])])[0]], abs=1e-6)
    flat = tux2.MF(k=4, epochs=2, reg=0.0, biases=False).fit((src, dst, val))
    flat.fold_in(([8888], [int(dst[0])], [4.0]))
    q = flat.item_factors_[flat.lookup(1, [int(dst[0])])[0]].astype(np.float64)
    expect = np.linalg.pinv(q[None, :]) @ [4.0 - flat.mu_ - flat.item_bias_[flat.lookup(1, [int(dst[0])])[0]]]
    np.testing.assert_allclose(flat.user_factors_[flat.lookup(0, [8888])[0]], expect, rtol=1e-5, atol=1e-6)
    model.save(tmp_path / "m")
    (tmp_path / "new.txt").write_text("9999 9999 3\n")
    (tmp_path / "users.txt").write_text("9999\n")
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "users.txt"), "--fold-in", str(tmp_path / "new.txt"),
                "--top-k", "2")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr


def test_fold_in_refusals(planted, tmp_path):
    src, dst, val = planted
    model = tux2.MF(k=4, epochs=1).fit((src, dst, val))
    with pytest.raises(tux2.InputError, match="user ids are integers; the new users' \\('x'\\) are not"):
        model.fold_in((np.array(["x"]), np.array([1]), np.array([3.0])))
    (tmp_path / "alice.tsv").write_text("user\titem\trating\nalice\t1\t5\n")
    saved = tmp_path / "m"
    model.save(saved)
    r = run_cli("predict", str(saved), "--fold-in", str(tmp_path / "alice.tsv"), "--top-k", "3")
    assert r.returncode == 2 and "this model's user ids are integers; the new users' ('alice') are not" in r.stderr
    with pytest.raises(tux2.NotFittedError if hasattr(tux2, "NotFittedError") else Exception):
        tux2.MF().fold_in((src, dst, val))
    (tmp_path / "in.txt").write_text("0 1 5\n")
    r = run_cli("predict", str(tmp_path / "nowhere"), "--fold-in", str(tmp_path / "in.txt"))
    assert r.returncode != 0 and "Traceback" not in r.stderr


def test_predict_out_into_the_model_itself_keeps_its_summary_and_says_what_was_folded_in(tmp_path):
    """``tux2 predict MODEL --fold-in NEW --out MODEL`` rewrites the model in place: it
    loads and predicts for the new users, and the training run's summary.txt (which a
    rewrite without it would delete, as a file the old manifest named) is kept, with a
    line for the fold-in; into another directory the summary goes along the same way."""
    rng = np.random.default_rng(11)
    train = tmp_path / "train.csv"
    train.write_text("user,item,rating\n" + "".join(
        f"{u},{i},{rng.integers(1, 6)}\n" for u in range(1, 60) for i in rng.choice(30, 4, replace=False) + 1))
    new = tmp_path / "new.csv"
    new.write_text("500,1,5\n500,2,4\n500,77,3\n")
    m = tmp_path / "m"
    assert run_cli("run", "mf", str(train), "--k", "4", "--epochs", "2", "--out", str(m), "-q").returncode == 0
    trained = (m / "summary.txt").read_text()
    for out in (tmp_path / "m2", m):
        r = run_cli("predict", str(m), "--fold-in", str(new), "--out", str(out))
        assert r.returncode == 0, r.stderr
        text = (out / "summary.txt").read_text()
        assert text.startswith(trained) and text[len(trained):] == (
            f"folded in 1 user from {new} (1 rating of an item without training ratings left out)\n"), text
        assert "summary.txt" in json.loads((out / "manifest.json").read_text())["files"]
        assert tux2.MF.load(out).n_users == 60
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("500,3\n1,3\n")
    r = run_cli("predict", str(m), str(pairs))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3, r.stderr


def test_predict_out_refuses_an_output_file_that_is_one_of_the_model_s_files(tmp_path):
    """-o or --metrics naming a file the model of --out is written to (``-o m2/user.npz``)
    would overwrite it after the save: refused before anything is read or written."""
    rng = np.random.default_rng(12)
    train = tmp_path / "train.csv"
    train.write_text("".join(f"{u},{i},{rng.integers(1, 6)}\n" for u in range(1, 30) for i in range(1, 6)))
    new, pairs = tmp_path / "new.csv", tmp_path / "pairs.csv"
    new.write_text("500,1,5\n500,2,4\n")
    pairs.write_text("500,3\n")
    m, m2 = tmp_path / "m", tmp_path / "m2"
    assert run_cli("run", "mf", str(train), "--k", "2", "--epochs", "1", "--out", str(m), "-q").returncode == 0
    for flag, name in (("-o", "user.npz"), ("--metrics", "model.json"), ("-o", "summary.txt")):
        r = run_cli("predict", str(m), str(pairs), "--fold-in", str(new), "--out", str(m2), flag, str(m2 / name))
        assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: {m2 / name}: {flag} names a file the model "
                                                         f"in --out {m2} is written to"), r.stderr
        assert not m2.exists()
    r = run_cli("predict", str(m), str(pairs), "--fold-in", str(new), "--out", str(m2), "-o", str(m2 / "pred.txt"))
    assert r.returncode == 0 and tux2.MF.load(m2).n_users == 30 and (m2 / "pred.txt").read_text().count("500 3") == 1
    ratings = new.read_text()
    for flag in ("-o", "--metrics"):        # nor the ratings file of --fold-in, which is read first
        r = run_cli("predict", str(m), "--fold-in", str(new), "--top-k", "2", flag, str(new))
        assert r.returncode == 2 and f"names the input file {new}" in r.stderr, r.stderr
        assert new.read_text() == ratings


def test_stdin_as_both_the_pairs_and_the_fold_in_ratings_is_refused_by_name(tmp_path):
    """``tux2 predict MODEL - --fold-in -``: standard input is read once, so one of the two
    would find it empty ('no edges found', naming neither flag): refused as given twice."""
    import subprocess
    import sys
    train = tmp_path / "train.csv"
    train.write_text("".join(f"{u},{i},{1 + (u * i) % 5}\n" for u in range(1, 20) for i in range(1, 6)))
    m = tmp_path / "m"
    assert run_cli("run", "mf", str(train), "--k", "2", "--epochs", "1", "--out", str(m), "-q").returncode == 0
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "predict", str(m), "-", "--fold-in", "-", "--out",
                        str(tmp_path / "m2")], input="500,1,5\n500,2,4\n", capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("tux2: error: <stdin>: given as both the input and --fold-in: "
                                                     "standard input can be read only once"), r.stderr
    assert not (tmp_path / "m2").exists()
