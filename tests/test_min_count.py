"""Tail-feature filtering, ``--min-count N`` (``min_count=N``): the linear models drop the
features with fewer than N non-zero entries in the training set (parameter-server's
tail_feature_filter, Vowpal Wabbit's and xLearn's likewise), and score them, in test
and predict input, as features unseen in training. The reference is the training file
with those features deleted by hand (tests.naive_io.tail_filtered, counted in a dict)."""
import json
import os

import numpy as np
import pytest

import tux2
from tests import naive_io
from tests.conftest import run_cli
from tux2 import loaders

H = 1 << 24


def _lines(rng, n, fields=6, hashed=False):
    """libsvm lines of Zipf(1.4) feature popularity per field (most features once or
    twice), values mostly 1 with some 2.5 and an explicit 0 now and then; the labels
    from the features' weights. ``hashed``: indices spread over 2^24, as Criteo's."""
    out = []
    for _ in range(n):
        ids = {f * 97 + min(int(rng.zipf(1.4)), 90) for f in range(fields)}
        ids = sorted((i * 2654435761) % H + 1 if hashed else i + 1 for i in ids)
        vals = rng.choice([1.0, 1.0, 1.0, 2.5, 0.0], len(ids))
        m = sum(((i * 40503) % 17 - 8) / 4 * v for i, v in zip(ids, vals))
        y = int(rng.random() < 1 / (1 + np.exp(-m)))
        out.append(f"{y} " + " ".join(f"{i}:{v:g}" for i, v in zip(ids, vals)) + "\n")
    return "".join(out)


def _files(d, hashed):
    rng = np.random.default_rng(3)
    train, test = d / "train.svm", d / "test.svm"
    train.write_text(_lines(rng, 300, hashed=hashed))
    test.write_text(_lines(rng, 100, hashed=hashed))
    return dict(train=str(train), test=str(test), text=train.read_bytes())


@pytest.fixture(scope="module", params=["dense", "hashed"])
def data(request, tmp_path_factory):
    """Training and test files of indices up to 600 (a row per index), and hashed into 2^24."""
    return _files(tmp_path_factory.mktemp(f"tail_{request.param}"), request.param == "hashed")


@pytest.fixture(scope="module")
def hashed(tmp_path_factory):
    """The hashed files alone (the command line's tests)."""
    return _files(tmp_path_factory.mktemp("tail_hashed"), True)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_filter_keeps_the_features_the_naive_count_keeps(data, n):
    """The features kept, their dense numbers (sorted indices), and the entries that stay
    (row, original index, value) are the naive filter's; explicit zeros count for nothing."""
    g, _ = loaders.load_samples(data["train"], sparse=True)
    text, kept = naive_io.tail_filtered(data["text"], n)
    f, features = loaders.frequent_features(g, n)
    np.testing.assert_array_equal(features, np.array(kept) - 1)       # 1-based file, 0-based inside
    np.testing.assert_array_equal(f.ids[1].tokens, features)
    assert f.n_dst == len(kept) and f.n_src == g.n_src == 300
    _, rows, cols, vals = naive_io.libsvm(text.encode())
    got = sorted(zip(f.src.tolist(), (features[f.dst] + 1).tolist(), f.values.tolist()))
    assert got == sorted(zip(rows, cols, vals))
    assert f.tail == (int(np.unique(g.dst[g.values != 0]).size), g.num_edges)


def test_min_count_1_keeps_every_feature_that_occurs(data):
    g, _ = loaders.load_samples(data["train"], sparse=True)
    f, features = loaders.frequent_features(g, 1)
    np.testing.assert_array_equal(features, np.unique(g.dst[g.values != 0]))
    assert f.num_edges == int(np.isin(g.dst, features).sum())


def _renumbered(text, kept):
    """libsvm ``text`` with the ``kept`` indices numbered 1 … k in their order and every other
    index k + 1 … in order of appearance (features unseen by the reference's training)."""
    where = {j: r + 1 for r, j in enumerate(kept)}
    out = []
    for line in text.splitlines():
        toks = line.split()
        feats = []
        for t in toks[1:]:
            j, v = t.split(":")
            feats.append(f"{where.setdefault(int(j), len(where) + 1)}:{v}")
        out.append(" ".join(toks[:1] + feats) + "\n")
    return "".join(out)


@pytest.mark.filterwarnings("ignore:the test log-loss ended at")
@pytest.mark.parametrize("name", ["lr", "fm", "blockpg"])
def test_a_filtered_model_is_the_model_of_the_file_filtered_by_hand(data, tmp_path, name):
    """min_count=2 on the file trains the model of the file with the tail deleted by hand
    (and the kept indices numbered 1 … k, as the model numbers them): the same weights, a
    row per kept feature (``features_``, the naive filter's), coef_ 0 at the others; the same
    test metrics on the unfiltered test file, whose dropped features score as unseen ones."""
    make = {"lr": lambda **k: tux2.LogisticRegression(epochs=3, **k),
            "fm": lambda **k: tux2.FM(epochs=3, factors=4, **k),
            "blockpg": lambda **k: tux2.BlockPG(epochs=3, reg=0.5, bias=True, **k)}[name]
    text, kept = naive_io.tail_filtered(data["text"], 2)
    hand_train, hand_test = tmp_path / "hand.svm", tmp_path / "hand_test.svm"
    hand_train.write_text(_renumbered(text, kept))
    hand_test.write_text(_renumbered(open(data["test"]).read(), kept))
    m = make(min_count=2).fit(data["train"], data["test"])
    hand = make().fit(str(hand_train), str(hand_test))
    np.testing.assert_array_equal(m.features_, np.array(kept) - 1)
    assert len(m.weights_) == len(kept) + (name != "fm") == len(hand.weights_)   # a row per kept feature, the intercept
    np.testing.assert_allclose(m.weights_, hand.weights_, rtol=1e-12, atol=1e-15)
    if m.n_features_in_ < 1000:             # (coef_ of hashed indices is 2^24 rows: tests.test_sparse_features')
        dropped = np.ones(m.n_features_in_, bool)
        dropped[m.features_] = False
        assert dropped.any() and not m.coef_[dropped].any()
    for a, b in zip(m.history_, hand.history_, strict=True):
        for k in ("objective", "test_logloss", "test_auc"):
            if k in a:
                assert a[k] == pytest.approx(b[k], rel=1e-9), (k, a, b)
    # the test file's dropped features deleted by hand: the same scores
    keep = set(kept)
    pruned = tmp_path / "test_pruned.svm"
    pruned.write_text("".join(" ".join(ln.split()[:1] + [t for t in ln.split()[1:] if int(t.split(":")[0]) in keep])
                              + "\n" for ln in open(data["test"])))
    np.testing.assert_allclose(m.decision_function(str(pruned)), m.decision_function(data["test"]), rtol=1e-12)
    if name == "lr":       # by hand: the kept features' weights times their values, plus the intercept
        labels, r, c, v = naive_io.libsvm(open(data["test"], "rb").read())
        w = dict(zip((m.features_ + 1).tolist(), m.weights_[:-1].tolist()))
        want = np.full(len(labels), m.intercept_)
        for i, j, x in zip(r, c, v):
            want[i] += w.get(j, 0.0) * x
        np.testing.assert_allclose(m.decision_function(data["test"]), want, rtol=1e-9, atol=1e-12)


def test_min_count_1_is_the_model_of_before(data, tmp_path):
    """min_count=1 (the default) changes nothing: the files of `--min-count 1` are those of
    a run without the flag, byte for byte but for model.json's own record."""
    outs = []
    for extra in ([], ["--min-count", "1"]):
        out = tmp_path / f"m{len(extra)}"
        r = run_cli("run", "lr", data["train"], "--test", data["test"], "--epochs", "2", "--out", str(out), *extra)
        assert r.returncode == 0, r.stderr
        assert "--min-count" not in r.stdout
        outs.append(out)
    for name in ("weights.npz", "weights.txt"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    assert json.loads((outs[1] / "model.json").read_text())["min_count"] == 1
    a = tux2.LogisticRegression(epochs=2).fit(data["train"])
    b = tux2.LogisticRegression(epochs=2, min_count=1).fit(data["train"])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert ("features_" in vars(a)) == ("features_" in vars(b))


def test_cli_python_and_saved_model_agree(hashed, tmp_path):
    """`tux2 run lr --min-count 2` writes LogisticRegression(min_count=2).fit()'s model;
    model.json records the setting, the loaded model predicts alike, tux2 predict counts
    the dropped features among the unknown ones, and a model.json without min_count (an
    older tux2's) loads as min_count 1."""
    out = tmp_path / "cli"
    r = run_cli("run", "lr", hashed["train"], "--test", hashed["test"], "--epochs", "3", "--min-count", "2",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    m = tux2.LogisticRegression(epochs=3, min_count=2).fit(hashed["train"], hashed["test"])
    g = loaders.load_samples(hashed["train"], sparse=True)[0]
    occur = len(np.unique(g.dst[g.values != 0]))
    assert f"{len(m.features_)} features (--min-count 2 dropped {occur - len(m.features_):,} of the {occur:,} that " \
           "occur, seen fewer times" in r.stdout
    z = np.load(out / "weights.npz")
    np.testing.assert_array_equal(z["index"], m.features_)
    np.testing.assert_allclose(z["w"], m.weights_, rtol=1e-12, atol=1e-15)
    meta = json.loads((out / "model.json").read_text())
    assert meta["min_count"] == 2
    back = tux2.LogisticRegression.load(str(out))
    assert back.min_count == 2
    np.testing.assert_allclose(back.predict_proba(hashed["test"]), m.predict_proba(hashed["test"]), rtol=1e-9)
    res = run_cli("predict", str(out), hashed["test"], "-o", str(tmp_path / "p.txt"))
    assert res.returncode == 0, res.stderr
    test_idx = {int(t.split(":")[0]) - 1 for ln in open(hashed["test"]) for t in ln.split()[1:]}
    assert json.loads(res.stdout.strip().splitlines()[-1])["unknown_features"] == len(test_idx - set(m.features_))
    from tests.test_hardening import _rewrite_meta
    meta.pop("min_count")
    (out / "model.json").write_text(json.dumps(meta))
    _rewrite_meta(str(out))
    old = tux2.LogisticRegression.load(str(out))
    assert old.min_count == 1
    np.testing.assert_array_equal(old.coef_, back.coef_)


@pytest.mark.slow       # two worker processes over ZeroMQ (~10 s)
def test_two_workers_give_the_one_process_filtered_model(hashed):
    one = tux2.LogisticRegression(epochs=3, min_count=2).fit(hashed["train"], hashed["test"])
    two = tux2.LogisticRegression(epochs=3, min_count=2).fit(hashed["train"], hashed["test"], workers=2)
    np.testing.assert_array_equal(two.features_, one.features_)
    np.testing.assert_allclose(two.weights_, one.weights_, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("value, says", [("0", "must be >= 1, got 0"), ("-1", "must be >= 1, got -1"),
                                         ("x", "expected an integer, got 'x'"), ("1.5", "expected an integer")])
def test_bad_values_are_refused_by_name(hashed, value, says):
    for algo in ("lr", "fm", "blockpg") if value == "0" else ("lr",):
        r = run_cli("run", algo, hashed["train"], f"--min-count={value}")
        assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: run {algo}: argument --min-count: {says}"), \
            r.stderr
    with pytest.raises(ValueError, match="min_count must be an integer >= 1"):
        tux2.LogisticRegression(min_count=int(value) if value.lstrip("-").isdigit() else value).fit(hashed["train"])


def test_a_filter_that_leaves_no_feature_is_an_error_not_a_crash(hashed):
    r = run_cli("run", "lr", hashed["train"], "--min-count", "100000")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"tux2: error: {hashed['train']}: no feature has 100000 or more non-zero entries"), \
        r.stderr
    with pytest.raises(tux2.InputError, match=r"the most frequent has \d+\): min_count=100000 leaves nothing"):
        tux2.FM(min_count=100000).fit(hashed["train"])


def test_a_resume_with_another_min_count_is_refused(hashed, tmp_path):
    ck = tmp_path / "ck"
    args = ("run", "lr", hashed["train"], "--epochs", "2", "--quiet", "--checkpoint-every", "1",
            "--checkpoint-dir", str(ck))
    r = run_cli(*args, "--min-count", "2")
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lr", hashed["train"], "--epochs", "3", "--quiet", "--resume", str(ck), "--min-count", "3")
    assert r.returncode == 2 and "--min-count 2 there, --min-count 3 now" in r.stderr, r.stderr
    r = run_cli("run", "lr", hashed["train"], "--epochs", "3", "--quiet", "--resume", str(ck), "--min-count", "2")
    assert r.returncode == 0, r.stderr
    ck2 = tmp_path / "ck2"
    tux2.LogisticRegression(epochs=1, min_count=2).fit(hashed["train"], checkpoint=str(ck2))
    with pytest.raises(tux2.CheckpointError, match="min_count"):
        tux2.LogisticRegression(epochs=2, min_count=3).fit(hashed["train"], checkpoint=str(ck2))


def test_a_checkpoint_from_before_min_count_resumes_at_1(hashed, tmp_path):
    """A checkpoint of a run before --min-count existed (no 'min_count' in its params)
    resumes without the flag (min count 1 trains as runs did), not with another."""
    from tux2 import files
    ck = tmp_path / "ck"
    r = run_cli("run", "lr", hashed["train"], "--epochs", "1", "--quiet", "--checkpoint-every", "1",
                "--checkpoint-dir", str(ck))
    assert r.returncode == 0, r.stderr
    state = ck / "ckpt-00000001" / "state.json"
    saved = json.loads(state.read_text())
    del saved["params"]["min_count"]
    state.write_text(json.dumps(saved))
    manifest = json.loads((state.parent / "manifest.json").read_text())
    manifest["files"]["state.json"] = files.describe(str(state))
    (state.parent / "manifest.json").write_text(json.dumps(manifest))
    r = run_cli("run", "lr", hashed["train"], "--epochs", "2", "--quiet", "--resume", str(ck))
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lr", hashed["train"], "--epochs", "2", "--quiet", "--resume", str(ck), "--min-count", "2")
    assert r.returncode == 2 and "before --min-count existed" in r.stderr, r.stderr


def test_help_and_builtin_set():
    r = run_cli("run", "lr", "--help")
    assert r.returncode == 0 and "--min-count N" in r.stdout
    r = run_cli("run", "lr", "--min-count", "2")
    assert r.returncode == 2 and "--min-count says how INPUT is read" in r.stderr, r.stderr


def test_predict_input_of_dropped_features_alone_warns(hashed, tmp_path):
    """tux2 predict of a file whose every feature the model has no weight for (dropped by
    --min-count, or unseen in training) scores each line with the intercept alone: a
    warning says so, as for an MF test set of new users; the predictions are still written.
    It was counted in the JSON line alone."""
    out = tmp_path / "m"
    assert run_cli("run", "lr", hashed["train"], "--epochs", "1", "--min-count", "3", "--out", str(out)).returncode == 0
    m = tux2.LogisticRegression.load(str(out))
    dropped = sorted({int(t.split(":")[0]) for ln in open(hashed["train"]) for t in ln.split()[1:]}
                     - set((m.features_ + 1).tolist()))[:3]
    rare = tmp_path / "rare.svm"
    rare.write_text(f"1 {dropped[0]}:1 {dropped[1]}:1\n0 {dropped[2]}:1\n")
    r = run_cli("predict", str(out), str(rare))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3, r.stderr
    assert f"tux2: warning: no feature of {rare} is one the model has a weight for (3 features: unseen in " \
           "training or dropped by its --min-count 3): every line scores as an empty one" in r.stderr, r.stderr
    r = run_cli("predict", str(out), hashed["test"])
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
