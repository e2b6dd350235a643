"""Regression: the squared loss of the GLM (tux2 run linreg, tux2.LinearRegression) and of
the factorization machine (--loss squared), against numpy and scikit-learn references, on
the CLI with real-valued labels, predictions, warm starts and several workers."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

from tests.conftest import run_cli
from tux2.graph import BipartiteGraph
from tux2.udfs import glm


def _small(n=60, d=12, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, random_state=seed + 1, format="csr")
    X.data = rng.normal(size=X.nnz)
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n) + 0.5
    c = X.tocoo()
    return BipartiteGraph(c.row.astype(np.int64), c.col.astype(np.int64), c.data, n, d, ("sample", "feature")), X, y


def _loop_squared(W, X, y, lam, fm):
    """f(W) = (1/n) Σ ½(ŷ_i − y_i)² + λ ½|W|², one sample at a time in plain Python."""
    X = X.tocsr()
    W = np.asarray(W).reshape(X.shape[1], -1)
    total = 0.0
    for i in range(X.shape[0]):
        idx = X.indices[X.indptr[i]:X.indptr[i + 1]]
        val = X.data[X.indptr[i]:X.indptr[i + 1]]
        out = sum(x * W[j, 0] for j, x in zip(idx, val))
        if fm:
            for a in range(len(idx)):
                for b in range(a + 1, len(idx)):
                    out += float(W[idx[a], 1:] @ W[idx[b], 1:]) * val[a] * val[b]
        total += 0.5 * (out - y[i]) ** 2
    return total / X.shape[0] + lam * 0.5 * float((W * W).sum())


@pytest.mark.parametrize("factors", [0, 3])
@pytest.mark.parametrize("strategy", ["sendgradient", "column"])
def test_squared_loss_objective_and_step_match_the_plain_reference(factors, strategy):
    """Full-batch SGD: each epoch's objective is the loop reference's at the weights before
    the next step, and the step is W − η ∇f with the numpy gradient."""
    g, X, y = _small()
    eng, _ = glm.engine(g, y, loss="squared", strategy=strategy, batch=0, eta=0.1, lam=1e-2, evaluate=True,
                        factors=factors, optimizer="sgd", **({"init_std": 0.1} if factors else {}))
    for _ in range(3):
        W0 = glm.weights(eng).copy()
        eng.run(1)
        W1 = glm.weights(eng)
        G = glm.gradient_value(W0, X, y, "squared", "l2", 1e-2, fm=bool(factors))
        np.testing.assert_allclose(W1, W0 - 0.1 * G, rtol=1e-10, atol=1e-12)
        assert eng.context()["objective"] == pytest.approx(_loop_squared(W1, X, y, 1e-2, bool(factors)), rel=1e-10)


def _regression_file(path, n, seed, d=400):
    """A LIBSVM regression file as real ones are: no header, 1-based, Zipf(1.4) feature frequencies,
    raw counts, targets around 2000 (years) with noise."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(99).normal(0, 3, d) * (np.random.default_rng(98).random(d) < 0.3)
    lines = []
    for _ in range(n):
        f = np.minimum(rng.zipf(1.4, rng.integers(3, 30)), d) - 1
        fu, c = np.unique(f, return_counts=True)
        y = 2000 + float(c @ w[fu]) + rng.normal(0, 2)
        lines.append(f"{y:.3f} " + " ".join(f"{j + 1}:{v}" for j, v in zip(fu, c)))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("reg")
    return _regression_file(d / "train.svm", 1500, 1), _regression_file(d / "test.svm", 400, 2)


def test_linear_regression_beats_the_mean_and_nears_ridge(files):
    """Years-like targets (~2000) train without diverging at the defaults; the test RMSE is far
    below the mean predictor's and within 10 % of scikit-learn's Ridge (alpha = nλ = 1)."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import Ridge
    from tux2 import LinearRegression
    train, test = files
    est = LinearRegression(epochs=30, optimizer="adam", eta=0.05).fit(str(train), str(test))
    Xtr, ytr = load_svmlight_file(str(train), n_features=400)
    Xte, yte = load_svmlight_file(str(test), n_features=400)
    ridge = np.sqrt(np.mean((Ridge(alpha=1.0).fit(Xtr, ytr).predict(Xte) - yte) ** 2))
    mean = np.sqrt(np.mean((ytr.mean() - yte) ** 2))
    rmse = est.history_[-1]["test_rmse"]
    assert rmse < 1.1 * ridge < 0.5 * mean
    pred = est.predict(str(test))
    assert np.sqrt(np.mean((pred - yte) ** 2)) == pytest.approx(rmse, rel=1e-9)
    assert est.score(str(test)) == pytest.approx(1 - np.sum((pred - yte) ** 2) / np.sum((yte - yte.mean()) ** 2))
    assert est._estimator_type == "regressor"


@pytest.mark.slow
@pytest.mark.parametrize("model", [["linreg"], ["fm", "--loss", "squared", "--factors", "4"]])
def test_cli_trains_predicts_and_warm_starts_as_the_longer_fit(tmp_path, files, model):
    train, test = files
    r = run_cli("run", *model, str(train), "--test", str(test), "--epochs", "4", "--out", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    assert "test rmse" in r.stdout and "Traceback" not in r.stderr
    r2 = run_cli("run", *model, str(train), "--epochs", "4", "--init-model", str(tmp_path / "a"),
                 "--out", str(tmp_path / "b"))
    r8 = run_cli("run", *model, str(train), "--epochs", "8", "--out", str(tmp_path / "c"))
    assert r2.returncode == 0 and r8.returncode == 0, r2.stderr + r8.stderr
    last = lambda out: [ln for ln in out.splitlines() if ln.startswith("epoch")][-1].split("time")[0]
    assert last(r2.stdout).split("objective")[1] == last(r8.stdout).split("objective")[1]
    outs = []
    for m in ("b", "c"):
        p = run_cli("predict", str(tmp_path / m), str(test), "-o", str(tmp_path / f"{m}.txt"))
        assert p.returncode == 0, p.stderr
        outs.append((tmp_path / f"{m}.txt").read_text())
        metrics = json.loads(p.stdout)
        assert {"rmse", "mae", "r2"} <= set(metrics)
    assert outs[0] == outs[1]
    vals = np.array([float(x) for x in outs[0].splitlines()[1:]])
    assert outs[0].startswith("# prediction\n") and len(vals) == 400 and 1900 < np.median(vals) < 2100


@pytest.mark.slow                     # two workers over ZeroMQ on loopback
@pytest.mark.parametrize("model,strategy", [("linreg", "sendgradient"), ("linreg", "column"), ("linreg", "modelavg"),
                                            ("fm", "column")])
def test_workers_and_threads_give_the_one_process_model(tmp_path, files, model, strategy):
    train, _ = files
    ws = []
    extra_model = ["--loss", "squared", "--factors", "3"] if model == "fm" else []
    for extra in (["--partitions", "4"], ["--workers", "2", "--partitions", "4"], ["--threads", "2", "--partitions", "4"]):
        out = tmp_path / f"m{len(ws)}"
        r = run_cli("run", model, *extra_model, str(train), "--strategy", strategy, "--epochs", "3", "--quiet",
                    "--timeout", "30", "--out", str(out), *extra, timeout=300)
        assert r.returncode == 0, r.stderr
        ws.append(np.load(out / "weights.npz")["w"])
    np.testing.assert_allclose(ws[1], ws[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ws[2], ws[0], rtol=1e-10, atol=1e-12)


def test_a_text_target_is_refused_with_its_line(tmp_path):
    p = tmp_path / "bad.svm"
    p.write_text("2001.5 1:1 2:3\nabc 1:2\n")
    r = run_cli("run", "linreg", str(p), "--epochs", "1")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "bad.svm" in r.stderr


def test_fm_on_user_item_one_hot_ratings_beats_the_biases_model():
    """MovieLens-shaped (user, item) one-hot rows with a planted rank-3 interaction: the FM's
    pairwise term learns it (test RMSE 0.56-0.60 on seeds 1-3, 0.61-0.67 at eta 0.5 and the
    rows as they are before 2026-11-29; noise floor 0.5), where
    scikit-learn's Ridge on the same rows (user and item biases only) stays at ~1.08-1.18 and
    the mean predictor at ~1.13-1.23."""
    from sklearn.linear_model import Ridge
    from tux2 import FM
    from tux2.datasets import netflix_like
    tr, te = netflix_like(n_users=300, n_items=100, n_ratings=8000, rank=3, seed=1)

    def rows(g):
        n = g.num_edges
        return sp.csr_matrix((np.ones(2 * n), (np.repeat(np.arange(n), 2), np.column_stack([g.src, 300 + g.dst]).ravel())),
                             shape=(n, 400))
    fm = FM(loss="squared", epochs=20).fit((rows(tr), tr.values), (rows(te), te.values))
    rmse = lambda p: float(np.sqrt(np.mean((p - te.values) ** 2)))
    ours = rmse(fm.predict(rows(te)))
    assert ours == pytest.approx(fm.history_[-1]["test_rmse"], rel=1e-9)
    assert ours < 0.75 * rmse(Ridge().fit(rows(tr), tr.values).predict(rows(te)))
    assert fm.offset_ == pytest.approx(tr.values.mean())


def test_printed_objective_is_the_objective_in_the_targets_units():
    """Without an intercept the targets only scale (y / σ), the same problem in other units: the
    objective each epoch reports is f(coef_) on the raw targets, to rounding, samples without
    features (11 of 200 here, which score 0) included, as for logistic regression."""
    from tux2 import LinearRegression, LogisticRegression
    rng = np.random.default_rng(4)
    X = sp.random(200, 8, density=0.3, random_state=5, format="csr")
    X.data = rng.normal(size=X.nnz)
    assert (np.diff(X.indptr) == 0).sum() == 11
    y = 1000.0 * (X @ rng.normal(size=8) + rng.normal(size=200))
    est = LinearRegression(bias=False, epochs=3).fit((X, y))
    ref = glm.objective_value(est.coef_, X, y, "squared", "l2", 1.0 / 200)
    assert est.history_[-1]["objective"] == pytest.approx(ref, rel=1e-9)
    signs = np.where(y > np.median(y), 1.0, -1.0)
    est = LogisticRegression(bias=False, epochs=3).fit((X, signs))
    ref = glm.objective_value(est.coef_, X, signs, "logistic", "l2", 1.0 / 200)
    assert est.history_[-1]["objective"] == pytest.approx(ref, rel=1e-9)


def test_lr_on_real_valued_targets_names_regression(files):
    train, _ = files
    r = run_cli("run", "lr", str(train), "--epochs", "1")
    assert r.returncode != 0 and "tux2 run linreg" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow                     # three CLI runs, ~15 s
def test_resume_from_a_checkpoint_gives_the_uninterrupted_model(tmp_path, files):
    train, test = files
    ck = tmp_path / "ck"
    common = ["run", "linreg", str(train), "--test", str(test)]
    r = run_cli(*common, "--epochs", "3", "--checkpoint-dir", str(ck), "--checkpoint-every", "3")
    assert r.returncode == 0, r.stderr
    a = run_cli(*common, "--epochs", "6", "--resume", str(ck), "--out", str(tmp_path / "a"))
    b = run_cli(*common, "--epochs", "6", "--out", str(tmp_path / "b"))
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "resumed" in a.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "a" / "weights.npz")["w"], np.load(tmp_path / "b" / "weights.npz")["w"])
