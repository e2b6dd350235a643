"""Warm start: ``MF(warm_start=True)``, ``MF.start_from(model)`` and ``tux2 run mf
--init-model DIR`` start a fit from a model learned before, matched by id."""
import json
import re

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import MF


def _write(path, rows, header="userId\tmovieId\trating\ttimestamp"):
    path.write_text(header + "\n" + "".join(f"{u}\t{i}\t{r:g}\t{t}\n" for u, i, r, t in rows))
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Rating files as MovieLens writes them (header, timestamps, sorted by user, Zipf item
    degrees): string user ids; ``old`` holds a part of ``full``'s users and items, and
    ``full`` has users and an item ``old`` lacks."""
    rng = np.random.default_rng(3)
    d = tmp_path_factory.mktemp("warm")
    users = [f"u{j:03d}" for j in range(300)]
    items = np.minimum(rng.zipf(1.5, 6000), 120)
    rows = sorted({(users[rng.integers(300)], int(i)) for i in items})
    rated = [(u, i, float(rng.integers(1, 6)), 978300760 + n) for n, (u, i) in enumerate(rows)]
    old = [r for r in rated if r[0] < "u250" and r[1] != 1]         # no u250…, and not the most rated item
    return _write(d / "old.tsv", old), _write(d / "full.tsv", rated), d


def test_no_epochs_from_a_model_is_that_model_and_new_ids_start_as_in_a_new_model(files):
    old_path, full_path, _ = files
    old = MF(k=6, epochs=4).fit(old_path)
    warm = MF(k=6, epochs=0).start_from(old).fit(full_path)
    fresh = MF(k=6, epochs=0).fit(full_path)
    for side, (wm, om, fm) in enumerate(((warm.user_factors_, old.user_factors_, fresh.user_factors_),
                                         (warm.item_factors_, old.item_factors_, fresh.item_factors_))):
        ids = warm.user_ids(side, np.arange(len(wm)))
        at = old.lookup(side, ids)
        had = at >= 0
        assert had.sum() > 0 and (~had).sum() > 0
        np.testing.assert_allclose(wm[had], om[at[had]], rtol=1e-6)
        np.testing.assert_array_equal(wm[~had], fm[~had])
    # the old model's predictions, μ's change taken up by the item biases
    u, i = np.array(["u001", "u100", "u249"]), np.array([2, 3, 7])
    np.testing.assert_allclose(warm.predict(u, i), old.predict(u, i), rtol=1e-5)
    assert warm.mu_ != old.mu_


def test_an_sgd_model_saved_without_the_biases_sums_loads_and_warm_starts(files, tmp_path):
    """A per-edge SGD model saved before each bias had an AdaGrad sum of its own holds
    step_g but no step_gb: it loads, predicts as saved and warm starts, its factors going
    on with their sums and its biases' starting afresh (at 1, a new vertex's)."""
    _, full_path, _ = files
    m = MF(k=6, epochs=3).fit(full_path)
    assert {"user_g", "user_gb", "item_g", "item_gb", "form"} <= set(m.step_state_)
    m.save(tmp_path / "new")
    del m.step_state_["user_gb"], m.step_state_["item_gb"]
    m.save(tmp_path / "old")                # what tux2 wrote before: the same files, no step_gb
    assert "step_gb" not in np.load(tmp_path / "old" / "user.npz") and "step_g" in np.load(tmp_path / "old" / "user.npz")
    old, new = MF.load(tmp_path / "old"), MF.load(tmp_path / "new")
    assert "user_gb" not in old.step_state_ and "user_gb" in new.step_state_
    np.testing.assert_array_equal(old.predict(["u001", "u002"], [1, 2]), m.predict(["u001", "u002"], [1, 2]))
    went_on, longer = (MF(k=6, epochs=2).start_from(x).fit(full_path) for x in (old, new))
    np.testing.assert_array_equal(longer.item_bias_, MF(k=6, epochs=5).fit(full_path).item_bias_)
    assert np.all(np.isfinite(went_on.item_bias_)) and not np.array_equal(went_on.item_bias_, longer.item_bias_)
    assert np.all(went_on.step_state_["item_gb"] >= 1)
    assert went_on.history_[-1]["train_rmse"] < 1.01 * longer.history_[-1]["train_rmse"], (went_on.history_, longer.history_)


def test_warm_start_continues_the_previous_fit(files):
    _, full_path, _ = files
    m = MF(k=6, epochs=3, warm_start=True).fit(full_path)
    first = m.user_factors_.copy()
    np.testing.assert_array_equal(m.set_params(epochs=0).fit(full_path).user_factors_, first)
    m.set_params(epochs=2).fit(full_path)
    assert m.history_[0]["train_rmse"] < MF(k=6, epochs=5).fit(full_path).history_[1]["train_rmse"]
    assert not np.array_equal(MF(k=6, epochs=0).fit(full_path).user_factors_, first)   # warm_start=False: afresh


@pytest.mark.parametrize("params", [{}, {"mode": "minibatch"}], ids=["sgd", "minibatch-adagrad"])
def test_an_mf_warm_start_goes_on_as_a_longer_fit(files, tmp_path, params):
    """AdaGrad's per-vertex history comes with the model, saved too: 3 epochs, saved,
    loaded and 2 more from them are 5 epochs in one fit (without it the warm epochs took
    a new model's large first steps: test RMSE 0.8894 → 0.8984 on a power-law set).
    Another form's history is not taken."""
    _, full_path, _ = files
    MF(k=6, epochs=3, **params).fit(full_path).save(tmp_path / "m")
    old = MF.load(tmp_path / "m")
    assert {"user_g", "item_g", "form"} <= set(old.step_state_)
    more = MF(k=6, epochs=2, **params).start_from(old).fit(full_path)
    longer = MF(k=6, epochs=5, **params).fit(full_path)
    np.testing.assert_array_equal(more.user_factors_, longer.user_factors_)
    np.testing.assert_array_equal(more.item_bias_, longer.item_bias_)
    assert [h["train_rmse"] for h in more.history_] == [h["train_rmse"] for h in longer.history_[3:]]
    other = {"mode": "minibatch"} if not params else {}
    MF(k=6, epochs=1, **other).start_from(old).fit(full_path)       # runs: the history starts afresh


def test_a_warm_start_on_ratings_of_other_units_is_noted(files, tmp_path):
    """Stars, then the same ratings × 1000: the history is left behind (another rating
    scale) and the header says the model's ratings were of other units."""
    old_path, full_path, _ = files
    lines = open(full_path).read().splitlines()
    scaled = [lines[0]] + ["\t".join(f[:2] + [str(float(f[2]) * 1000)] + f[3:]) for f in (x.split("\t") for x in lines[1:])]
    (tmp_path / "x1000.tsv").write_text("\n".join(scaled) + "\n")
    r = run_cli("run", "mf", old_path, "--k", "6", "--epochs", "2", "--out", str(tmp_path / "m"), "-q")
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "mf", str(tmp_path / "x1000.tsv"), "--epochs", "1", "--init-model", str(tmp_path / "m"))
    assert r.returncode == 0 and "note: the model was trained on ratings from 1 to 5, these are from 1000 to 5000" \
        in r.stdout, r.stdout
    r = run_cli("run", "mf", full_path, "--epochs", "1", "--init-model", str(tmp_path / "m"))
    assert r.returncode == 0 and "note: the model was trained" not in r.stdout, r.stdout


@pytest.mark.slow
def test_the_cli_starts_from_a_model_directory(files):
    old_path, full_path, d = files
    r = run_cli("run", "mf", old_path, "--k", "6", "--epochs", "4", "--out", str(d / "old"), "-q")
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "mf", full_path, "--k", "6", "--epochs", "0", "--init-model", str(d / "old"),
                "--out", str(d / "warm"))
    assert r.returncode == 0, r.stderr
    # every user of old.tsv (u000 … u249) and all items but the most rated one and those only u250 … rated
    got = re.search(r"started from the model learned before: 250 of 300 users and (\d+) of (\d+) items", r.stdout)
    assert got and int(got[2]) - 5 <= int(got[1]) < int(got[2]), r.stdout
    old, warm = MF.load(str(d / "old")), MF.load(str(d / "warm"))
    np.testing.assert_allclose(warm.predict(["u007"], [5]), old.predict(["u007"], [5]), rtol=1e-5)
    assert "warm_start" not in json.loads((d / "warm" / "model.json").read_text())
    assert not MF.load(str(d / "warm")).warm_start
    # without --k, k is the model's (it was refused: 'this fit k=50'); another --k is refused; another
    # algorithm's model; no model at all
    r = run_cli("run", "mf", full_path, "--init-model", str(d / "old"), "--epochs", "1")
    assert r.returncode == 0 and "k=6, P=1" in r.stdout and "started from the model" in r.stdout, r.stderr
    r = run_cli("run", "mf", full_path, "--init-model", str(d / "old"), "--k", "8", "-q")
    assert r.returncode == 2 and "has k=6 factors and this fit k=8: give it k=6 (--k 6)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("run", "lda", "--iterations", "1", "--out", str(d / "lda"), "-q")
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "mf", full_path, "--init-model", str(d / "lda"), "-q")
    assert r.returncode == 2 and "an 'lda' model, not mf" in r.stderr, r.stderr
    r = run_cli("run", "mf", full_path, "--init-model", str(d / "nothing"), "-q")
    assert r.returncode == 2 and "nothing: no such directory" in r.stderr, r.stderr
    (d / "noalg").mkdir()
    meta = json.loads((d / "old" / "model.json").read_text())
    del meta["algorithm"]
    (d / "noalg" / "model.json").write_text(json.dumps(meta))             # no manifest: the key is what is checked
    r = run_cli("run", "mf", full_path, "--init-model", str(d / "noalg"), "-q")
    assert r.returncode == 2 and 'model.json: no "algorithm" key' in r.stderr and "None" not in r.stderr, r.stderr


def test_start_from_takes_a_model_of_its_own_class_only(files):
    from tux2 import LogisticRegression
    with pytest.raises(TypeError, match="MF cannot start from a LogisticRegression"):
        MF().start_from(LogisticRegression())


def test_start_from_a_path_none_or_an_unfitted_model(files):
    """A path string is the saved model (LightGBM's init_model takes a file); None starts
    afresh; an unfitted model is refused, not silently a new model."""
    from tux2.errors import NotFittedError
    old_path, full_path, d = files
    old = MF(k=6, epochs=3).fit(old_path)
    old.save(str(d / "by_path"))
    a = MF(k=6, epochs=0).start_from(str(d / "by_path")).fit(full_path)
    b = MF(k=6, epochs=0).start_from(MF.load(str(d / "by_path"))).fit(full_path)
    np.testing.assert_array_equal(a.user_factors_, b.user_factors_)
    fresh = MF(k=6, epochs=0).fit(full_path)
    c = MF(k=6, epochs=0).start_from(old).start_from(None).fit(full_path)
    np.testing.assert_array_equal(c.user_factors_, fresh.user_factors_)
    assert not np.array_equal(a.user_factors_, fresh.user_factors_)
    with pytest.raises(NotFittedError, match="has not been fitted"):
        MF().start_from(MF())


def test_a_start_from_a_model_of_none_of_these_ids_is_refused(files, tmp_path):
    """Renumbered ids (here: every user and item of another number) match nothing: the
    'warm start' would be a new model, silently but for a header line; refused."""
    old_path, full_path, d = files
    old = MF(k=6, epochs=1).fit(old_path)
    lines = open(full_path).read().splitlines()
    other = tmp_path / "other.tsv"
    other.write_text(lines[0] + "\n" + "".join(f"x{u}\t{int(i) + 1000}\t{r}\t{t}\n"
                                               for u, i, r, t in (x.split("\t") for x in lines[1:])))
    with pytest.raises(Exception, match=r"no user and no item of this data is one the model to start from learned "
                                        r"\(its users u000, u001, u002 …, items \d+, \d+, \d+ …\).*"
                                        r"without start_from or warm_start"):
        MF(k=6, epochs=1).start_from(old).fit(str(other))
    old.save(str(tmp_path / "old"))
    r = run_cli("run", "mf", str(other), "--init-model", str(tmp_path / "old"), "-q")
    assert r.returncode == 2 and "tux2: error: no user and no item" in r.stderr and "--init-model" in r.stderr, r.stderr


def test_an_implicit_model_does_not_start_an_explicit_fit_or_back(files, tmp_path):
    old_path, full_path, d = files
    imp = MF(mode="als", implicit=True, k=6, epochs=2).fit(old_path)
    with pytest.raises(Exception, match="trained on implicit feedback"):
        MF(k=6, epochs=1).start_from(imp).fit(full_path)
    exp = MF(k=6, epochs=1).fit(old_path)
    with pytest.raises(Exception, match="trained on explicit ratings"):
        MF(mode="als", implicit=True, k=6, epochs=1).start_from(exp).fit(full_path)
    exp.set_params(mode="als", implicit=True)          # warm_start after a change of form: refused too
    with pytest.raises(Exception, match="trained on explicit ratings"):
        exp.set_params(warm_start=True).fit(full_path)
    imp.save(str(tmp_path / "imp"))
    r = run_cli("run", "mf", full_path, "--init-model", str(tmp_path / "imp"), "--epochs", "1", "-q")
    assert r.returncode == 2 and "tux2: error: the model to start from was trained on implicit feedback" in r.stderr \
        and "Traceback" not in r.stderr, r.stderr
    MF(mode="als", implicit=True, k=6, epochs=1).start_from(imp).fit(full_path)      # the same form: fine


@pytest.mark.slow
def test_two_workers_start_from_a_model_as_one_does(files):
    old_path, full_path, d = files
    r = run_cli("run", "mf", old_path, "--k", "6", "--epochs", "3", "--out", str(d / "old2"), "-q")
    assert r.returncode == 0, r.stderr
    outs = []
    for workers in ("1", "2"):
        out = d / f"warm{workers}"
        r = run_cli("run", "mf", full_path, "--k", "6", "--epochs", "3", "--init-model", str(d / "old2"),
                    "--workers", workers, "--out", str(out), "-q", timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(MF.load(str(out)))
    np.testing.assert_array_equal(outs[0].user_factors_, outs[1].user_factors_)
    np.testing.assert_array_equal(outs[0].item_bias_, outs[1].item_bias_)


# ---------------------------------------------------------------- the GLMs
import tux2                                                   # noqa: E402
from tests.conftest import clinical_rows                      # noqa: E402


def _glms():
    return [lambda **k: tux2.LogisticRegression(**{"epochs": 3, **k}), lambda **k: tux2.LinearSVM(**{"epochs": 3, **k}),
            lambda **k: tux2.Softmax(**{"epochs": 3, **k}),
            lambda **k: tux2.FM(**{"epochs": 3, "bias": True, "norm": "none", **k})]


@pytest.mark.parametrize("make", _glms(), ids=["lr", "svm", "softmax", "fm"])
def test_a_glm_started_from_a_model_begins_at_its_weights(make):
    """Dense unscaled columns train centred by the data's means (glm.centre): a warm start
    from a model (fitted on other samples, other means) puts its raw weights into this
    fit's centred units; zero epochs give the model's weights back, more epochs go on
    from them, as far below a new fit's first epochs as the model was."""
    X, y = clinical_rows(600)
    model = make().fit(X[:480], y[:480])
    back = make(epochs=0).start_from(model).fit(X, y)
    np.testing.assert_allclose(back.coef_, model.coef_, rtol=1e-12, atol=1e-12)
    assert np.abs(model.weights_).max() > 0.1
    warm = make(epochs=1).start_from(model).fit(X, y)
    fresh = make(epochs=1).fit(X, y)
    assert warm.history_[0]["objective"] < fresh.history_[0]["objective"]
    again = make(warm_start=True).fit(X[:480], y[:480])          # warm_start=True: the next fit goes on
    assert "weights_" in vars(again.set_params(epochs=0).fit(X, y))
    np.testing.assert_allclose(again.coef_, make().fit(X[:480], y[:480]).coef_, rtol=1e-12, atol=1e-12)


def test_a_glm_starts_from_a_path_and_from_none(tmp_path):
    X, y = clinical_rows(300)
    fm = tux2.FM(epochs=2, bias=True, norm="none").fit(X, y)
    fm.save(str(tmp_path / "fm"))
    a = tux2.FM(epochs=0, bias=True, norm="none").start_from(str(tmp_path / "fm")).fit(X, y)
    np.testing.assert_allclose(a.coef_, fm.coef_, rtol=1e-12, atol=1e-12)
    b = tux2.FM(epochs=0, bias=True, norm="none").start_from(fm).start_from(None).fit(X, y)
    c = tux2.FM(epochs=0, bias=True, norm="none").fit(X, y)
    np.testing.assert_array_equal(b.coef_, c.coef_)
    with pytest.raises(tux2.errors.NotFittedError):
        tux2.LogisticRegression().start_from(tux2.LogisticRegression())


def test_a_glm_warm_start_refuses_another_form_or_other_labels(tmp_path):
    X, y = clinical_rows(300)
    lr = tux2.LogisticRegression(epochs=1).fit(X, y)
    with pytest.raises(tux2.Tux2Error, match=r"has an intercept: leave out bias=False"):
        tux2.LogisticRegression(epochs=1, bias=False).start_from(lr).fit(X, y)
    with pytest.raises(tux2.Tux2Error, match=r"has the labels -1, 1 and this data 0, 1: a warm start keeps"):
        tux2.LogisticRegression(epochs=1).start_from(lr).fit(X, (y > 0).astype(int))
    fm = tux2.FM(epochs=1, factors=4).fit(X, y)
    with pytest.raises(tux2.Tux2Error, match=r"has 4 factors: give factors=4"):
        tux2.FM(epochs=1).start_from(fm).fit(X, y)
    with pytest.raises(TypeError, match="cannot start from a LinearSVM"):
        tux2.LogisticRegression().start_from(tux2.LinearSVM(epochs=1).fit(X, y))
    own = type("Own", (tux2.Estimator,), {"__init__": lambda self, epochs=1: self._keep(locals())})
    with pytest.raises(TypeError, match="Own has no warm start"):        # an estimator without warm_start=
        own().start_from(lr)


def test_glm_init_model_on_the_command_line_and_two_workers(tmp_path):
    """``tux2 run lr --init-model DIR`` starts from a saved model; more features in the
    new file than in the model start at 0; fit(workers=2) starts the same way."""
    from tux2.datasets import sparse_classification
    from tux2.io import write_libsvm
    g, y, _ = sparse_classification(n_samples=800, n_features=120, seed=2)
    keep = g.dst < 100                                  # the model knows the first 100 features
    from tux2.graph import BipartiteGraph
    small = BipartiteGraph(g.src[keep], g.dst[keep], g.values[keep], g.n_src, 100)
    write_libsvm(tmp_path / "small.svm", small, y)
    write_libsvm(tmp_path / "full.svm", g, y)
    r = run_cli("run", "lr", str(tmp_path / "small.svm"), "--epochs", "2", "--out", str(tmp_path / "m"), timeout=300)
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lr", str(tmp_path / "full.svm"), "--epochs", "0", "--init-model", str(tmp_path / "m"),
                "--out", str(tmp_path / "m0"), timeout=300)
    assert r.returncode == 0 and "started from the model learned before: 100 of 120 features (the others as in a new " \
        "model)" in r.stdout, r.stdout + r.stderr
    old, new = tux2.LogisticRegression.load(tmp_path / "m"), tux2.LogisticRegression.load(tmp_path / "m0")
    np.testing.assert_allclose(new.coef_[:100], old.coef_[:100], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(new.intercept_, old.intercept_, rtol=1e-12, atol=1e-12)
    assert not new.coef_[100:120].any()
    r = run_cli("run", "svm", str(tmp_path / "full.svm"), "--init-model", str(tmp_path / "m"), timeout=300)
    assert r.returncode != 0 and "an 'lr' model, not svm" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow
def test_a_glm_warm_start_on_two_workers_is_the_one_process_fit():
    X, y = clinical_rows(400)
    model = tux2.LogisticRegression(epochs=2).fit(X[:300], y[:300])
    one = tux2.LogisticRegression(epochs=2).start_from(model).fit(X, y)
    two = tux2.LogisticRegression(epochs=2).start_from(model).fit(X, y, workers=2)
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("make", [lambda e: tux2.LogisticRegression(epochs=e),
                                  lambda e: tux2.FM(epochs=e, optimizer="adam", eta=0.01),
                                  lambda e: tux2.LinearSVM(epochs=e, strategy="modelavg")],
                         ids=["adagrad", "fm-adam", "modelavg"])
def test_a_glm_warm_start_goes_on_as_a_longer_fit(make, tmp_path):
    """The step history (AdaGrad's sums of squares, Adam's moments) comes with the model,
    saved too: 3 epochs, saved, loaded and 3 more from them are 6 epochs in one fit."""
    from tux2.datasets import sparse_classification
    g, y, _ = sparse_classification(n_samples=600, n_features=150, seed=3)
    make(3).fit((g, y)).save(tmp_path / "m")
    more = make(3).start_from(type(make(1)).load(tmp_path / "m")).fit((g, y))
    np.testing.assert_allclose(more.coef_, make(6).fit((g, y)).coef_, rtol=1e-12, atol=1e-14)


def _kdd(n=1000, d=300):
    import scipy.sparse as sp
    from tux2.datasets import sparse_classification
    g, y, _ = sparse_classification(n_samples=n, n_features=d, seed=3)
    return sp.csr_matrix((g.values, (g.src, g.dst)), shape=(g.n_src, g.n_dst)), y


@pytest.mark.parametrize("form", ["kappa", "newton"])
@pytest.mark.parametrize("bias", [False, True])
def test_blockpg_warm_start_goes_on_as_a_longer_fit(form, bias):
    """BlockPG starts from the model's weights with the margins X·w computed from them:
    4 epochs and 3 more from them are 7 epochs in one fit, up to the shrinking that begins
    anew (every feature is examined in the first epoch: the paths part by 1e-6 in the
    objective) and the margins' summation order."""
    X, y = _kdd()
    first = tux2.BlockPG(epochs=4, form=form, bias=bias).fit(X, y)
    more = tux2.BlockPG(epochs=3, form=form, bias=bias).start_from(first).fit(X, y)
    whole = tux2.BlockPG(epochs=7, form=form, bias=bias).fit(X, y)
    f = [r["objective"] for r in more.history_]
    assert f[0] < first.history_[-1]["objective"]           # it goes on descending from the model, not from 0
    assert f[-1] == pytest.approx(whole.history_[-1]["objective"], rel=1e-5)     # (seen: 2e-6 apart, or equal)
    np.testing.assert_allclose(more.coef_, whole.coef_, atol=1e-2)


def test_blockpg_warm_start_from_the_optimum_stays_and_a_path_reaches_the_optimum():
    """At the optimum (newton form, converged) a warm start's first epoch is the optimum's
    objective; from λ = 10's model a λ = 1 fit reaches λ = 1's optimum (a regularisation path)."""
    from tux2.udfs.blockpg import objective_value
    X, y = _kdd()
    opt = tux2.BlockPG(epochs=30, form="newton").fit(X, y)
    again = tux2.BlockPG(epochs=1, form="newton").start_from(opt).fit(X, y)
    f_opt = objective_value(opt.coef_, X, y, 1.0)
    assert again.history_[0]["objective"] == pytest.approx(f_opt, rel=1e-9)
    high = tux2.BlockPG(reg=10.0, epochs=10, form="newton").fit(X, y)
    path = tux2.BlockPG(epochs=30, form="newton").start_from(high).fit(X, y)
    assert objective_value(path.coef_, X, y, 1.0) == pytest.approx(f_opt, rel=1e-7)


@pytest.mark.slow
def test_blockpg_warm_start_refusals_more_features_and_the_command_line(tmp_path):
    """The model's intercept and labels must be this fit's; features beyond the model's
    start at 0; ``tux2 run blockpg --init-model DIR`` on 1 and 2 workers is fit's model."""
    from tux2.io import write_libsvm
    from tux2.graph import BipartiteGraph
    X, y = _kdd()
    plain, with_bias = tux2.BlockPG(epochs=2).fit(X, y), tux2.BlockPG(epochs=2, bias=True).fit(X, y)
    with pytest.raises(tux2.Tux2Error, match="has no intercept: leave out bias=True"):
        tux2.BlockPG(epochs=1, bias=True).start_from(plain).fit(X, y)
    with pytest.raises(tux2.Tux2Error, match="has an intercept: give bias=True"):
        tux2.BlockPG(epochs=1).start_from(with_bias).fit(X, y)
    with pytest.raises(tux2.Tux2Error, match="has the labels -1, 1 and this data 0, 1"):
        tux2.BlockPG(epochs=1).start_from(plain).fit(X, (y > 0).astype(int))
    small = tux2.BlockPG(epochs=3).fit(X[:, :200], y)           # knows the first 200 of 300 features
    small.save(tmp_path / "m")
    coo = X.tocoo()
    write_libsvm(str(tmp_path / "train.svm"), BipartiteGraph(coo.row, coo.col, coo.data, *X.shape), y)
    fit = tux2.BlockPG(epochs=2).start_from(tmp_path / "m").fit(str(tmp_path / "train.svm"))
    assert fit.n_features_in_ == 300
    for workers in ("1", "2"):
        out = tmp_path / f"cli{workers}"
        r = run_cli("run", "blockpg", str(tmp_path / "train.svm"), "--epochs", "2", "--init-model",
                    str(tmp_path / "m"), "--workers", workers, "--out", str(out), timeout=180)
        assert r.returncode == 0, r.stderr
        assert "started from the model learned before: 200 of 300 features (the others as in a new model)" in r.stdout
        np.testing.assert_allclose(np.load(out / "weights.npz")["w"], fit.coef_, rtol=1e-9, atol=1e-12)


def test_a_negative_adagrad_history_is_refused_naming_the_file(files, tmp_path):
    """step_g is a sum of squared gradients: a negative one (a damaged or hand-edited
    model without a manifest) made the first warm epoch NaN, blamed on --lr."""
    _, full_path, _ = files
    MF(k=6, epochs=2).fit(full_path).save(tmp_path / "m")
    (tmp_path / "m" / "manifest.json").unlink()
    z = dict(np.load(tmp_path / "m" / "user.npz"))
    z["step_g"][3] = -1.0
    np.savez(tmp_path / "m" / "user.npz", **z)
    with pytest.raises(tux2.model_check.ModelError, match=r"user\.npz: step_g holds negative values"):
        MF.load(tmp_path / "m")
    r = run_cli("run", "mf", full_path, "--k", "6", "--epochs", "1", "--init-model", str(tmp_path / "m"))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert re.search(r"^tux2: error: .*user\.npz: step_g holds negative values", r.stderr, re.M)


@pytest.mark.parametrize("damage", ["nan", "negative", "short"])
def test_a_damaged_glm_step_history_is_refused_naming_the_file(tmp_path, damage):
    """weights.npz's step_G (AdaGrad's sums of squared gradients), in a model without a
    manifest: NaN or negative made the first warm epoch NaN, blamed on --lr; one of
    another length was silently dropped."""
    X = np.random.default_rng(4).random((200, 5))
    y = (X[:, 0] > 0.5).astype(int)
    tux2.LogisticRegression(epochs=2, optimizer="adagrad").fit(X, y).save(tmp_path / "m")
    (tmp_path / "m" / "manifest.json").unlink()
    z = dict(np.load(tmp_path / "m" / "weights.npz"))
    if damage == "short":
        z["step_G"] = z["step_G"][:2]
    else:
        z["step_G"][1] = np.nan if damage == "nan" else -1.0
    np.savez(tmp_path / "m" / "weights.npz", **z)
    with pytest.raises(tux2.model_check.ModelError, match=r"weights\.npz: step_G "):
        tux2.LogisticRegression.load(tmp_path / "m")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Texts from a planted 6-topic model, one document per line: ``old`` the first 300
    documents, ``full`` all 500 (words ``old`` never saw among them)."""
    from tux2.datasets import lda_corpus
    d, w, c, _ = lda_corpus(n_docs=500, n_words=800, n_topics=6, doc_length=60, seed=4)
    docs = [[] for _ in range(500)]
    for doc, word, n in zip(d.tolist(), w.tolist(), c.tolist()):
        docs[doc] += [f"w{word}x"] * int(n)
    lines = [" ".join(ws) + "\n" for ws in docs]
    out = tmp_path_factory.mktemp("lda_warm")
    (out / "old.txt").write_text("".join(lines[:300]))
    (out / "full.txt").write_text("".join(lines))
    return str(out / "old.txt"), str(out / "full.txt"), out


def test_lda_starts_from_a_model_with_its_topics_in_their_numbers(corpus):
    """The tokens of the words the model learned take their first topics from its topics:
    the first iteration's log-likelihood is near the model's, far above a fresh start's,
    and each topic keeps its number (its top words are the model's topic's)."""
    from tux2 import LDA
    old_path, full_path, _ = corpus
    old = LDA(topics=6, iterations=40).fit(old_path)
    warm = LDA(topics=6, iterations=3).start_from(old).fit(full_path)
    fresh = LDA(topics=6, iterations=3).fit(full_path)
    first = [m.history_[0]["ll_per_token"] for m in (warm, fresh)]
    assert first[0] > first[1] + 0.5 and first[0] > old.history_[-1]["ll_per_token"] - 0.3, (first, old.history_[-1])
    assert set(warm.vocab_) > set(old.vocab_)               # the new documents' words are in the fit
    for k, (a, b) in enumerate(zip(old.topic_words(10), warm.topic_words(10))):
        same = {x for x, _ in a} & {x for x, _ in b}
        assert len(same) >= 6, (k, a, b)
    longer = LDA(topics=6, iterations=43).fit(old_path)      # 40 + 3 on the same corpus: as good as 43
    again = LDA(topics=6, iterations=3).start_from(old).fit(old_path)
    assert again.history_[-1]["ll_per_token"] > longer.history_[-1]["ll_per_token"] - 0.02


def test_lda_warm_start_refusals_and_the_command_line(corpus, tmp_path):
    from tux2 import LDA
    from tux2.errors import Tux2Error
    old_path, full_path, d = corpus
    old = LDA(topics=6, iterations=5).fit(old_path)
    with pytest.raises(Tux2Error, match=r"has 6 topics and this fit 4: give it topics=6"):
        LDA(topics=4, iterations=1).start_from(old).fit(full_path)
    with pytest.raises(Tux2Error, match=r"has words and this corpus numeric word ids"):
        LDA(topics=6, iterations=1).start_from(old).fit(np.ones((4, 30), np.int64))
    (tmp_path / "other.txt").write_text("alpha beta gamma\ndelta alpha beta\n")
    with pytest.raises(Tux2Error, match=r"no word of this corpus is one the model to start from learned"):
        LDA(topics=6, iterations=1).start_from(old).fit(str(tmp_path / "other.txt"))
    r = run_cli("run", "lda", old_path, "--topics", "6", "--iterations", "5", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lda", full_path, "--iterations", "1", "--init-model", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    n = len(LDA.load(tmp_path / "m").vocab_)
    assert re.search(rf"started from the model learned before: {n} of \d+ words take their first topics", r.stdout)
    assert "K=6" in r.stdout                                     # --topics defaults to the model's
    r = run_cli("run", "lda", full_path, "--iterations", "1", "--topics", "5", "--init-model", str(tmp_path / "m"))
    assert r.returncode == 2 and "--topics 6" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_lda_warm_start_on_numeric_ids_threads_and_partitions(tmp_path):
    """A docword model's ids are matched by number; partitions and threads give the
    one-thread model bit for bit."""
    from tux2 import LDA
    from tux2.datasets import lda_corpus
    d, w, c, _ = lda_corpus(n_docs=300, n_words=400, n_topics=5, doc_length=50, seed=2)
    V = int(w.max()) + 1

    def docword(path, keep):
        rows = [(a + 1, b + 1, n) for a, b, n in zip(d.tolist(), w.tolist(), c.tolist()) if keep(a)]
        path.write_text(f"{300}\n{V}\n{len(rows)}\n" + "".join(f"{a} {b} {n}\n" for a, b, n in rows))
        return str(path)
    old = LDA(topics=5, iterations=20).fit(docword(tmp_path / "docword.old.txt", lambda a: a < 200))
    full = docword(tmp_path / "docword.full.txt", lambda a: True)
    one = LDA(topics=5, iterations=2, blocks=4).start_from(old).fit(full, threads=1)
    assert one.history_[0]["ll_per_token"] > LDA(topics=5, iterations=2, blocks=4).fit(full).history_[0]["ll_per_token"] + 0.3
    many = LDA(topics=5, iterations=2, blocks=4).start_from(old).fit(full, partitions=4, threads=2)
    np.testing.assert_array_equal(one.word_topic_, many.word_topic_)
    assert one.word_base_ == 1


@pytest.mark.slow      # worker processes
def test_lda_warm_start_on_two_workers_is_the_one_process_fit(corpus):
    from tux2 import LDA
    old_path, full_path, _ = corpus
    old = LDA(topics=6, iterations=5).fit(old_path)
    one = LDA(topics=6, iterations=2).start_from(old).fit(full_path)
    two = LDA(topics=6, iterations=2).start_from(old).fit(full_path, workers=2)
    np.testing.assert_array_equal(one.word_topic_, two.word_topic_)
    assert one.history_[-1]["ll"] == pytest.approx(two.history_[-1]["ll"], rel=1e-12)     # (summation order)
