"""Linear models as scikit-learn users expect them: LogisticRegression on K > 2 labels is
the multinomial model (Softmax's), ``fit(..., sample_weight=)`` counts each sample's loss
as often as it weighs, ``class_weight`` turns a class into such a weight. References: the
rows written out as often as they weigh (full-batch steps: the same model to float order),
scikit-learn's LogisticRegression at C = 1/(nλ) and the numpy objective of tux2.udfs.glm."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

import tux2
from tux2.errors import CheckpointError, InputError
from tux2.udfs import glm
from tests.conftest import run_cli


def binary(n=120, d=6, seed=0):
    """(X, y): dense rows (most columns dense: centred with an intercept), 0/1 labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.3] = 0
    return X, (X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(int)


def three_classes(n=300, d=5, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.argmax(X @ rng.normal(size=(d, 3)) + 0.7 * rng.normal(size=(n, 3)), axis=1)


def reference_optimum(X, y, lam, s=None):
    """scikit-learn's optimum of (1/n) Σ s_i ℓ_i + λ/2 ‖W‖² (no intercept): C = 1/(nλ)."""
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=1 / (len(y) * lam), fit_intercept=False, tol=1e-12, max_iter=10_000).fit(
        X, y, sample_weight=s)


# full-batch plain steps: deterministic, and at η 4 at the optimum in 1000 epochs
EXACT = dict(bias=False, batch=0, optimizer="sgd", eta=4.0, epochs=1000)


# ---------------------------------------------------------------- K > 2 labels: the multinomial model
def test_logistic_regression_on_three_labels_is_softmax_as_scikit_learn_has_it():
    X, y = three_classes()
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    lr = tux2.LogisticRegression(epochs=3).fit(X, labels)
    sm = tux2.Softmax(epochs=3).fit(X, labels)
    assert lr.multinomial_ and lr.loss == "softmax"
    assert (lr.classes_ == sm.classes_).all() and list(lr.classes_) == ["setosa", "versicolor", "virginica"]
    assert lr.coef_.shape == (3, 5) and lr.intercept_.shape == (3,)
    np.testing.assert_array_equal(lr.coef_, sm.coef_)          # the same program: bit for bit
    np.testing.assert_array_equal(lr.intercept_, sm.intercept_)
    P = lr.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    D = lr.decision_function(X)
    np.testing.assert_allclose(D, X @ lr.coef_.T + lr.intercept_, rtol=1e-10, atol=1e-12)
    assert (lr.predict(X) == lr.classes_[P.argmax(axis=1)]).all()   # columns in classes_' order
    assert lr.score(X, labels) == np.mean(lr.predict(X) == labels) > 0.7
    # a refit on two labels is the binary model again
    two = lr.fit(X[y < 2], y[y < 2])
    assert not two.multinomial_ and two.coef_.shape == (5,) and isinstance(two.intercept_, float)


def test_multinomial_logistic_regression_reaches_scikit_learns_optimum():
    X, y = three_classes()
    lam = 1 / len(y)
    ours = tux2.LogisticRegression(**EXACT).fit(X, y)
    sk = reference_optimum(X, y, lam)
    f = lambda W: glm.objective_value(W.T, sp.csr_matrix(X), y, loss="softmax", lam=lam)      # noqa: E731
    assert f(ours.coef_) == pytest.approx(f(sk.coef_), rel=1e-12)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-6)


def test_save_load_and_the_cli_switch_to_the_multinomial_model(tmp_path):
    X, y = three_classes(n=90)
    lr = tux2.LogisticRegression(epochs=2).fit(X, y + 1)          # labels 1 … 3, as LIBSVM's files
    lr.save(tmp_path / "py")
    back = tux2.LogisticRegression.load(tmp_path / "py")
    assert back.multinomial_ and (back.classes_ == [1, 2, 3]).all()
    np.testing.assert_array_equal(back.predict_proba(X), lr.predict_proba(X))
    f = tmp_path / "three.svm"
    f.write_text("".join(f"{c + 1} " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row.tolist())) + "\n"
                         for c, row in zip(y, X)))
    r = run_cli("run", "lr", str(f), "--epochs", "2", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert "lr (softmax, l2" in r.stdout and "3 classes: the multinomial (softmax) model" in r.stdout, r.stdout
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["algorithm"] == "lr" and meta["loss"] == "softmax" and meta["labels"] == [1, 2, 3]
    r = run_cli("predict", str(tmp_path / "m"), str(f), "-o", str(tmp_path / "p.txt"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.txt").read_text().splitlines()[0] == "# label p_1 p_2 p_3"


def test_linear_svm_on_three_labels_names_the_models_that_take_them():
    X, y = three_classes(n=60)
    with pytest.raises(tux2.errors.Tux2Error, match="a binary model takes two labels.*tux2.Softmax, "
                                                    "tux2.LogisticRegression"):
        tux2.LinearSVM(epochs=1).fit(X, y)


# ---------------------------------------------------------------- sample_weight
@pytest.mark.parametrize("make, data", [
    (tux2.LogisticRegression, binary), (tux2.LinearSVM, binary), (tux2.Softmax, three_classes),
    (tux2.LogisticRegression, three_classes), (tux2.LinearRegression, "regression"),
    (lambda **kw: tux2.FM(factors=3, **kw), binary)])
def test_weight_two_is_the_sample_twice_and_weight_zero_no_sample(make, data):
    """Weights 0, 1, 2 against the rows written 0, 1 or 2 times: with λ' n' = λ n and η' n = η n'
    (n' = Σ s, the rows written) the objective is the weighted one times n / n', and full-batch
    steps (one per epoch) take the same path: the same model to float order. Dense columns
    centre by the weighted mean, an FM's step scale and a regression's targets by weighted means."""
    if data == "regression":
        X, y = binary(seed=3)
        y = 2000 + 10 * (X @ np.arange(1.0, 7.0)) + np.random.default_rng(3).normal(size=len(y))
    else:
        X, y = data()
    s = np.random.default_rng(5).integers(0, 3, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), s.astype(int))
    n, n2, lam, eta = len(y), len(rows), 0.01, 0.5
    weighted = make(optimizer="sgd", batch=0, reg=lam, eta=eta, epochs=15).fit(X, y, sample_weight=s)
    twice = make(optimizer="sgd", batch=0, reg=lam * n / n2, eta=eta * n2 / n, epochs=15).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.weights_, twice.weights_, rtol=1e-9, atol=1e-12)
    assert weighted.history_[-1]["objective"] * n / n2 == pytest.approx(twice.history_[-1]["objective"], rel=1e-12)
    assert weighted.score(X, y, sample_weight=s) == pytest.approx(twice.score(X[rows], y[rows]), rel=1e-12)


def test_weighted_objective_and_optimum_are_scikit_learns():
    """The objective each epoch reports is the numpy reference's at the model (to float order),
    and full-batch steps end at scikit-learn's optimum with the same sample_weight; mini-batch
    AdaGrad (the default) within 1e-3 of it after 50 epochs."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 8))
    X[rng.random(X.shape) < 0.6] = 0
    y = (X @ rng.normal(size=8) + 0.5 * rng.normal(size=400) > 0).astype(int)
    s = rng.uniform(0, 3, 400)
    lam = 1 / 400
    f = lambda w: glm.objective_value(w.ravel(), sp.csr_matrix(X), y, lam=lam, weights=s)     # noqa: E731
    sk = reference_optimum(X, y, lam, s)
    ours = tux2.LogisticRegression(**EXACT).fit(X, y, sample_weight=s)
    assert ours.history_[-1]["objective"] == pytest.approx(f(ours.coef_), rel=1e-12)
    assert f(ours.coef_) == pytest.approx(f(sk.coef_), rel=1e-12)
    np.testing.assert_allclose(ours.coef_, sk.coef_.ravel(), atol=1e-6)
    sgd = tux2.LogisticRegression(bias=False, epochs=50).fit(X, y, sample_weight=s)
    assert f(sk.coef_) <= f(sgd.coef_) < f(sk.coef_) * (1 + 1e-3)
    unweighted = tux2.LogisticRegression(bias=False, epochs=50).fit(X, y)
    assert f(unweighted.coef_) > f(sgd.coef_)            # the weights changed the model, towards their optimum


def test_weighted_softmax_reaches_scikit_learns_optimum():
    X, y = three_classes()
    s = np.random.default_rng(4).uniform(0, 3, len(y))
    lam = 1 / len(y)
    ours = tux2.Softmax(**EXACT).fit(X, y, sample_weight=s)
    sk = reference_optimum(X, y, lam, s)
    f = lambda W: glm.objective_value(W.T, sp.csr_matrix(X), y, "softmax", lam=lam, weights=s)   # noqa: E731
    assert ours.history_[-1]["objective"] == pytest.approx(f(ours.coef_), rel=1e-12)
    assert f(ours.coef_) == pytest.approx(f(sk.coef_), rel=1e-12)


def test_weighted_linear_regression_is_scikit_learns_weighted_ridge():
    """(1/n) Σ s_i ½ r_i² + λ/2 ‖w‖² is Ridge's Σ s_i r_i² + α ‖w‖² at α = nλ (no intercept; tux2 trains
    on y / σ, σ the weighted root mean square, and scales back)."""
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 5))
    y = X @ np.arange(1.0, 6.0) + rng.normal(size=200) + 3
    s = rng.uniform(0, 3, 200)
    sk = Ridge(alpha=1.0, fit_intercept=False, tol=1e-14).fit(X, y, sample_weight=s)
    ours = tux2.LinearRegression(bias=False, batch=0, optimizer="sgd", eta=1.0, decay=0.0, epochs=1000).fit(
        X, y, sample_weight=s)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-10)


@pytest.mark.parametrize("strategy", ["sendgradient", "column", "adam"])
def test_weights_survive_partitions_and_threads(strategy):
    """The central invariant with weights: any partitions or threads give the one-partition model."""
    X, y = three_classes(n=200)
    s = np.random.default_rng(6).uniform(0, 2, len(y))
    make = lambda: tux2.LogisticRegression(strategy=strategy, epochs=3, batch=32, class_weight="balanced")  # noqa
    one = make().fit(X, y, sample_weight=s)
    for kw in ({"partitions": 3}, {"threads": 2}):
        other = make().fit(X, y, sample_weight=s, **kw)
        np.testing.assert_allclose(other.weights_, one.weights_, rtol=1e-10, atol=1e-13)
        assert other.history_[-1]["objective"] == pytest.approx(one.history_[-1]["objective"], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("data", [binary, three_classes])
def test_weights_survive_two_worker_processes(data):
    """fit(workers=2) with sample_weight and class_weight: the one-process model (the multinomial
    one for three labels: multinomial_ comes back from the workers)."""
    X, y = data(n=200)
    s = np.random.default_rng(7).uniform(0, 2, len(y))
    make = lambda: tux2.LogisticRegression(epochs=3, batch=50, class_weight="balanced")      # noqa: E731
    one = make().fit(X, y, sample_weight=s)
    two = make().fit(X, y, sample_weight=s, workers=2)
    np.testing.assert_allclose(two.weights_, one.weights_, rtol=1e-10, atol=1e-13)
    assert two.multinomial_ == (data is three_classes) and two.coef_.shape == one.coef_.shape
    plain = tux2.LogisticRegression(epochs=3, batch=50).fit(X, y, workers=2)
    assert np.abs(plain.weights_ - one.weights_).max() > 1e-3


def test_weights_survive_a_checkpoint_and_a_resume_with_others_is_refused(tmp_path):
    X, y = binary(n=150)
    s = np.random.default_rng(8).uniform(0, 2, len(y))
    straight = tux2.LogisticRegression(epochs=4).fit(X, y, sample_weight=s)
    tux2.LogisticRegression(epochs=2).fit(X, y, sample_weight=s, checkpoint=tmp_path / "ck")
    resumed = tux2.LogisticRegression(epochs=4).fit(X, y, sample_weight=s, checkpoint=tmp_path / "ck")
    np.testing.assert_array_equal(resumed.weights_, straight.weights_)
    assert [r["epoch"] for r in resumed.history_] == [1, 2, 3, 4]
    with pytest.raises(CheckpointError, match=r"the samples' weights differ from those the checkpoint was trained on "
                                              r"\(150 weights summing to .* then and now, to 10 digits: other values"):
        tux2.LogisticRegression(epochs=5).fit(X, y, sample_weight=s[::-1].copy(), checkpoint=tmp_path / "ck")
    with pytest.raises(CheckpointError, match=r"150 weights summing to [0-9.]+ then, 150 weights summing to [0-9.]+ "
                                              r"now"):
        tux2.LogisticRegression(epochs=5).fit(X, y, sample_weight=2 * s, checkpoint=tmp_path / "ck")
    with pytest.raises(CheckpointError, match="values or labels differ"):     # the labels, not the weights
        tux2.LogisticRegression(epochs=5).fit(X, 1 - y, sample_weight=s, checkpoint=tmp_path / "ck")
    with pytest.raises(CheckpointError, match="weighted"):          # another program: no weights now
        tux2.LogisticRegression(epochs=5).fit(X, y, checkpoint=tmp_path / "ck")


@pytest.mark.parametrize("weights, message", [
    (-np.ones(10), r"sample_weight\[0\] is -1.0: weights must be finite numbers >= 0"),
    (np.r_[np.ones(9), np.nan], r"sample_weight\[9\] is nan"),
    (np.ones(9), r"sample_weight has shape \(9,\); 10 samples need one weight each"),
    (np.ones((10, 2)), r"shape \(10, 2\)"),
    (np.zeros(10), "the sample weights are all zero"),
    (np.array(["a"] * 10), "sample_weight must hold numbers"),
])
def test_bad_sample_weights_are_refused_by_name(weights, message):
    X, y = binary(n=10)
    with pytest.raises(ValueError, match=message):
        tux2.LogisticRegression(epochs=1).fit(X, y, sample_weight=weights)
    fitted = tux2.LogisticRegression(epochs=1).fit(X, y)
    with pytest.raises(ValueError, match=message):
        fitted.score(X, y, sample_weight=weights)


def test_weighted_score_is_scikit_learns():
    from sklearn.metrics import accuracy_score, r2_score
    X, y = binary(n=80)
    s = np.random.default_rng(9).uniform(0, 2, len(y))
    lr = tux2.LogisticRegression(epochs=2).fit(X, y)
    assert lr.score(X, y, sample_weight=s) == pytest.approx(accuracy_score(y, lr.predict(X), sample_weight=s))
    t = X @ np.arange(6.0)
    reg = tux2.LinearRegression(epochs=2).fit(X, t)
    assert reg.score(X, t, sample_weight=s) == pytest.approx(r2_score(t, reg.predict(X), sample_weight=s))


# ---------------------------------------------------------------- class_weight
@pytest.mark.parametrize("make, data", [(tux2.LogisticRegression, binary), (tux2.LinearSVM, binary),
                                        (tux2.Softmax, three_classes), (tux2.LogisticRegression, three_classes)])
def test_class_weight_is_the_per_sample_weight_scikit_learn_makes_of_it(make, data):
    from sklearn.utils.class_weight import compute_class_weight
    X, y = data()
    y = np.where(y == 0, "zero", np.where(y == 1, "one", "two"))
    classes = np.unique(y)
    balanced = compute_class_weight("balanced", classes=classes, y=y)[np.searchsorted(classes, y)]
    s = np.random.default_rng(10).uniform(0.5, 1.5, len(y))
    a = make(epochs=2, class_weight="balanced").fit(X, y, sample_weight=s)
    b = make(epochs=2).fit(X, y, sample_weight=balanced * s)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    c = make(epochs=2, class_weight={"one": 3.0}).fit(X, y)
    d = make(epochs=2).fit(X, y, sample_weight=np.where(y == "one", 3.0, 1.0))
    np.testing.assert_array_equal(c.weights_, d.weights_)


def test_bad_class_weights_are_refused_by_name():
    X, y = binary(n=20)
    with pytest.raises(ValueError, match="the class weights name the class 7, which the training labels"):
        tux2.LogisticRegression(epochs=1, class_weight={7: 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight must be None, 'balanced' or a dict"):
        tux2.LogisticRegression(class_weight="auto").fit(X, y)
    with pytest.raises(ValueError, match=r"class_weight\[1\] must be a finite number >= 0"):
        tux2.LinearSVM(class_weight={1: -1}).fit(X, y)
    with pytest.raises(ValueError, match="give every sample weight zero"):
        tux2.LogisticRegression(class_weight={0: 0, 1: 0}).fit(X, y)
    with pytest.raises(TypeError, match="class_weight"):
        tux2.LinearRegression(class_weight="balanced")


def test_class_weight_with_clone_grid_search_and_a_checkpoint(tmp_path):
    """get_params/set_params/clone keep class_weight (a dict too), GridSearchCV searches over it,
    and a fit with a dict of number labels checkpoints and resumes (JSON keeps no number keys)."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + 0.8 * rng.normal(size=400) > 2.0).astype(int)      # ~5 % positive
    est = tux2.LogisticRegression(epochs=3, class_weight={1: 5.0})
    assert clone(est).get_params()["class_weight"] == {1: 5.0}
    assert clone(est).set_params(class_weight="balanced").class_weight == "balanced"
    grid = GridSearchCV(tux2.LogisticRegression(epochs=3), {"class_weight": [None, "balanced"]},
                        scoring="balanced_accuracy", cv=3).fit(X, y)
    assert grid.best_params_ == {"class_weight": "balanced"}
    straight = clone(est).set_params(epochs=4).fit(X, y)
    clone(est).fit(X, y, checkpoint=tmp_path / "ck")
    resumed = clone(est).set_params(epochs=4).fit(X, y, checkpoint=tmp_path / "ck")
    np.testing.assert_array_equal(resumed.weights_, straight.weights_)
    with pytest.raises(CheckpointError, match="class"):
        clone(est).set_params(epochs=5, class_weight={1: 6.0}).fit(X, y, checkpoint=tmp_path / "ck")


def _edit_model_json(directory, edit):
    """Change a saved model's model.json with ``edit(meta)`` and re-sign its manifest, as an
    older tux2's file (or a crafted one) would be."""
    from tux2 import files
    path = directory / "model.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"]["model.json"] = files.describe(str(path))
    (directory / "manifest.json").write_text(json.dumps(manifest))


def test_a_saved_model_keeps_its_class_weight_dict(tmp_path):
    """model.json holds a dict class_weight as [label, weight] pairs (JSON keys are strings only);
    load gives the dict back, number labels as numbers. Models written before it load (None)."""
    from tux2.model_check import ModelError
    X, y = binary(n=60)
    for cw, labels in (({1: 5.0, np.int64(0): 2}, y), ({"spam": 3.0}, np.where(y == 1, "spam", "ham")),
                       ("balanced", y)):
        fitted = tux2.LogisticRegression(epochs=1, class_weight=cw).fit(X, labels)
        fitted.save(tmp_path / "m")
        back = tux2.LogisticRegression.load(tmp_path / "m")
        resolved = {"optimizer": "adagrad", "eta": 0.5, "zero_based": False}    # None/'auto' as the fit made them
        assert back.class_weight == cw and back.get_params() == {**fitted.get_params(), **resolved}
        assert [type(k) for k in back.class_weight] == [type(k.item() if isinstance(k, np.generic) else k)
                                                        for k in cw] if isinstance(cw, dict) else True
        np.testing.assert_array_equal(back.predict_proba(X), fitted.predict_proba(X))
    _edit_model_json(tmp_path / "m", lambda meta: meta.pop("class_weight"))        # an older tux2's model
    assert tux2.LogisticRegression.load(tmp_path / "m").class_weight is None
    _edit_model_json(tmp_path / "m", lambda meta: meta.update(class_weight=[["spam"]]))
    with pytest.raises(ModelError, match="class_weight must be None, 'balanced' or a dict"):
        tux2.LogisticRegression.load(tmp_path / "m")


def test_cli_class_weight_trains_the_model_of_the_python_parameter(tmp_path):
    X, y = binary(n=100)
    f = tmp_path / "d.svm"
    f.write_text("".join(f"{c} " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row.tolist()) if v) + "\n"
                         for c, row in zip(y, X)))
    r = run_cli("run", "lr", str(f), "--epochs", "2", "--class-weight", "balanced", "--out", str(tmp_path / "m"))
    assert r.returncode == 0 and "samples weighted (class_weight 'balanced'): sum 100, mean 1," in r.stdout, r.stderr
    model = tux2.LogisticRegression.load(tmp_path / "m")
    ours = tux2.LogisticRegression(epochs=2, class_weight="balanced").fit(str(f))
    np.testing.assert_array_equal(model.weights_, ours.weights_)
    r = run_cli("run", "svm", str(f), "--epochs", "1", "--class-weight", "1:2,0:0.5", "--out", str(tmp_path / "s"))
    assert r.returncode == 0 and "samples weighted (class_weight)" in r.stdout, r.stderr
    assert tux2.LinearSVM.load(tmp_path / "s").class_weight == {1: 2.0, 0: 0.5}      # written with the model
    for bad, message in (("7", "'7': give 'balanced' or LABEL:WEIGHT pairs"),
                         ("7:1", "the class weights name the class 7, which the training labels (0, 1) do not have")):
        r = run_cli("run", "lr", str(f), "--epochs", "1", "--class-weight", bad)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr



def test_a_class_weight_key_of_another_type_than_the_labels_is_shown_as_given():
    """{'1': 5} for labels 0, 1 said 'the class 1, which the training labels (0, 1) do not
    have' (trial leftover): the key is shown as given, with its type and the labels'."""
    X, y = binary(n=40)
    with pytest.raises(InputError, match=r"the class '1' \(of type str\), and the training labels are numbers "
                                         r"\(0, 1\)"):
        tux2.LogisticRegression(epochs=1, class_weight={"1": 5}).fit(X, y)
    with pytest.raises(InputError, match=r"the class 1 \(of type int\), and the training labels are strings "
                                         r"\('a', 'b'\)"):
        tux2.LogisticRegression(epochs=1, class_weight={1: 5}).fit(X, np.where(y == 1, "b", "a"))


UNCOMPILED = """
import sys
import numpy as np
import tux2
from tests.test_weights import weighted_models
np.save(sys.argv[1], weighted_models())
"""


def weighted_models():
    """The weights of a weighted multinomial LogisticRegression (class_weight too) and FM."""
    X, y = three_classes(n=60)
    s = np.random.default_rng(0).uniform(0, 2, len(y))
    m = tux2.LogisticRegression(epochs=2, batch=20, class_weight="balanced").fit(X, y, sample_weight=s)
    f = tux2.FM(factors=2, epochs=2, batch=20).fit(X, (y > 0).astype(int), sample_weight=s)
    return np.concatenate([m.weights_.ravel(), f.weights_.ravel()])


def test_the_weighted_udfs_run_uncompiled_as_the_reference(tmp_path):
    """The weighted derivative and loss closures (udfs.glm.weighted_derivative, weighted_loss) run
    as plain Python under NUMBA_DISABLE_JIT=1 and give the compiled model to float order."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": os.pathsep.join([root, *sys.path])}
    r = subprocess.run([sys.executable, "-c", UNCOMPILED, str(tmp_path / "w.npy")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "w.npy"), weighted_models(), rtol=1e-10, atol=1e-13)


def test_a_fits_notes_name_the_line_that_called_fit():
    """GLM.fit (sample_weight) is one more of tux2's frames above the run: its notes still name
    the caller's line, not linear.py (warnings' stacklevel counts the frames)."""
    import warnings
    X, y = binary(n=100)
    for workers in (1, 2):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            tux2.LogisticRegression(epochs=2, eta=500.0, reg=1e-9).fit(X * 100, y, sample_weight=np.ones(100),
                                                                        workers=workers)
        notes = [w for w in got if "lower eta=" in str(w.message)]
        assert notes and all(w.filename == __file__ for w in notes), [(w.filename, str(w.message)[:60]) for w in got]


# ---------------------------------------------------------------- a table's weight column (--weight-column)
def weighted_table(path, X, y, w, header=True):
    """A CSV table of ``X`` with the weights ``w`` as its third column, named 'w', and the labels
    last, named 'target'."""
    lines = ["x0,x1,w," + ",".join(f"x{j}" for j in range(2, X.shape[1])) + ",target\n"] if header else []
    for row, s, c in zip(X.tolist(), w.tolist(), y.tolist()):
        fields = [repr(v) for v in row]
        fields.insert(2, repr(s))
        lines.append(",".join(fields) + f",{c}\n")
    path.write_text("".join(lines))
    return path


def test_weight_column_trains_the_model_of_sample_weight(tmp_path):
    """A table's weight column (weight_column=, --weight-column) is fit's sample_weight: the same
    model bit for bit on one partition, to float order on three or two threads; the run's header
    says so; it is saved with the model, and score, predict and tux2 predict take the column out
    of a table's features and weigh their metrics by it (scikit-learn's with sample_weight)."""
    from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
    X, y = binary(n=120)
    w = np.random.default_rng(12).uniform(0, 3, len(y))
    w[3] = 0.0
    f = weighted_table(tmp_path / "t.csv", X, y, w)
    ref = tux2.LogisticRegression(epochs=3).fit(X, y, sample_weight=w)
    ours = tux2.LogisticRegression(epochs=3, weight_column="w").fit(str(f))
    np.testing.assert_array_equal(ours.weights_, ref.weights_)
    assert ours.n_features_in_ == X.shape[1] and list(ours.feature_names_in_) == ["x0", "x1"] + [
        f"x{j}" for j in range(2, X.shape[1])]
    for kw in ({"partitions": 3}, {"threads": 2}):
        other = tux2.LogisticRegression(epochs=3, weight_column="w").fit(str(f), **kw)
        np.testing.assert_allclose(other.weights_, ref.weights_, rtol=1e-10, atol=1e-13)
    assert ours.score(str(f)) == ref.score(X, y, sample_weight=w) != ref.score(X, y)
    with pytest.warns(RuntimeWarning, match="the test set is the training file itself"):     # a test table's weigh
        tested = tux2.LogisticRegression(epochs=3, weight_column="w").fit(str(f), str(f))
    assert tested.history_[-1]["test_accuracy"] == pytest.approx(ref.score(X, y, sample_weight=w), rel=1e-12)
    plain = tmp_path / "plain.csv"          # a table of the features alone: predicted, no weights
    plain.write_text("".join(",".join(map(repr, row)) + "\n" for row in X.tolist()))
    np.testing.assert_array_equal(ours.predict_proba(str(plain)), ref.predict_proba(X))
    r = run_cli("run", "lr", str(f), "--epochs", "3", "--weight-column", "w", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert "sample weights in column 3 ('w'), 6 features" in r.stdout, r.stdout
    assert f"samples weighted (weight column 3 ('w')): sum {w.sum():.6g}, mean {w.mean():.4g}, from 0 to " \
           f"{w.max():.4g}" in r.stdout, r.stdout
    model = tux2.LogisticRegression.load(tmp_path / "m")
    np.testing.assert_array_equal(model.weights_, ref.weights_)
    assert model.weight_column == "w"
    assert json.loads((tmp_path / "m" / "model.json").read_text())["weight_column"] == "w"
    assert model.score(str(f)) == ours.score(str(f))


def test_score_of_a_weighted_table_and_its_labels_weighs_them_by_its_column(tmp_path):
    """score(path, y) ignored the table's weight column that score(path), a DataFrame's
    score(df, y) and tux2 predict's metrics weigh by (trial leftover)."""
    X, y = binary(n=80)
    w = np.random.default_rng(5).uniform(0, 3, len(y))
    f = weighted_table(tmp_path / "t.csv", X, y, w)
    ours = tux2.LogisticRegression(epochs=2, weight_column="w").fit(str(f))
    ref = tux2.LogisticRegression(epochs=2).fit(X, y, sample_weight=w)
    assert ours.score(str(f), y) == ours.score(str(f)) == ref.score(X, y, sample_weight=w) != ref.score(X, y)
    with pytest.raises(ValueError, match="the weight column .* and sample_weight= both give"):
        ours.score(str(f), y, sample_weight=w)


def test_weighted_metrics_are_scikit_learns():
    """The metrics of test sets and tux2 predict, each sample weighing its weight (ties in the AUC too)."""
    from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
    rng = np.random.default_rng(16)
    score, y, w = np.round(rng.normal(size=300), 1), rng.integers(0, 2, 300), rng.uniform(0, 2, 300)
    m = glm.score_metrics(score[:, None], y, "logistic", w)
    p = 1 / (1 + np.exp(-score))
    assert m["accuracy"] == pytest.approx(accuracy_score(y, score > 0, sample_weight=w), rel=1e-12)
    assert m["logloss"] == pytest.approx(log_loss(y, p, sample_weight=w), rel=1e-9)
    assert m["auc"] == pytest.approx(roc_auc_score(y, score, sample_weight=w), rel=1e-12)
    assert glm.score_metrics(score[:, None], y, "logistic", np.ones(300))["auc"] == pytest.approx(
        glm.score_metrics(score[:, None], y, "logistic")["auc"], rel=1e-12)
    M, k = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    m = glm.score_metrics(M, k, "softmax", w)
    assert m["accuracy"] == pytest.approx(accuracy_score(k, M.argmax(axis=1), sample_weight=w), rel=1e-12)
    assert m["logloss"] == pytest.approx(log_loss(k, glm.softmax(M), sample_weight=w), rel=1e-9)


@pytest.mark.slow
def test_tux2_predict_takes_the_weight_column_out_and_weighs_its_metrics(tmp_path):
    from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
    X, y = binary(n=120)
    w = np.random.default_rng(12).uniform(0, 3, len(y))
    f = weighted_table(tmp_path / "t.csv", X, y, w)
    ref = tux2.LogisticRegression(epochs=3).fit(X, y, sample_weight=w)
    tux2.LogisticRegression(epochs=3, weight_column="w").fit(str(f)).save(tmp_path / "m")
    r = run_cli("predict", str(tmp_path / "m"), str(f), "-o", str(tmp_path / "p.txt"))
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout.splitlines()[-1])
    p = ref.predict_proba(X)[:, 1]
    assert metrics["weighted"] == "by column 3 ('w')"
    assert metrics["accuracy"] == pytest.approx(accuracy_score(y, p > 0.5, sample_weight=w), rel=1e-12)
    assert metrics["logloss"] == pytest.approx(log_loss(y, p, sample_weight=w), rel=1e-9)
    assert metrics["auc"] == pytest.approx(roc_auc_score(y, p, sample_weight=w), rel=1e-12)
    f.write_text(f.read_text().replace(",target\n", "\n").replace(",0\n", "\n").replace(",1\n", "\n"))
    r = run_cli("predict", str(tmp_path / "m"), str(f), "-o", str(tmp_path / "p2.txt"))       # no labels: no metrics
    assert r.returncode == 0 and (tmp_path / "p2.txt").read_text() == (tmp_path / "p.txt").read_text(), r.stderr
    f.write_text(f.read_text().replace(f",{float(w[4])!r},", ",-1.0,"))
    r = run_cli("predict", str(tmp_path / "m"), str(f), "-o", str(tmp_path / "p3.txt"))
    assert r.returncode == 2 and f"{f}:6: negative weight -1 in column 3 ('w')" in r.stderr, r.stderr


def test_weight_column_by_number_in_a_headerless_table_and_in_a_dataframe(tmp_path):
    import pandas as pd
    X, y = three_classes(n=90)
    w = np.random.default_rng(13).uniform(0.5, 2, len(y))
    ref = tux2.Softmax(epochs=2).fit(X, y, sample_weight=w)
    f = weighted_table(tmp_path / "h.csv", X, y, w, header=False)
    ours = tux2.Softmax(epochs=2, weight_column=3, label_column="last").fit(str(f))
    np.testing.assert_array_equal(ours.weights_, ref.weights_)
    assert ours.score(str(f)) == pytest.approx(ref.score(X, y, sample_weight=w), rel=1e-12)    # by number there too
    plain = tmp_path / "plain.csv"          # the features alone: no labels, no weights
    plain.write_text("".join(",".join(map(repr, row)) + "\n" for row in X.tolist()))
    np.testing.assert_array_equal(ours.predict(str(plain)), ref.predict(X))
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(w=w, target=y)
    framed = tux2.Softmax(epochs=2, weight_column="w").fit(df)
    np.testing.assert_array_equal(framed.weights_, ref.weights_)
    assert list(framed.feature_names_in_) == [f"x{j}" for j in range(X.shape[1])]
    assert framed.score(df) == pytest.approx(ref.score(X, y, sample_weight=w), rel=1e-12)
    np.testing.assert_array_equal(framed.predict(df), ref.predict(X))


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace(",2.5,", ",-2.5,", 1), r"t.csv:3: negative weight -2.5 in column 3 \('w'\): weights are "
                                                r"finite numbers >= 0 \(line text: "),
    (lambda t: t.replace(",2.5,", ",nan,", 1), r"t.csv:3: NaN or infinite weight in column 3 \('w'\)"),
    (lambda t: t.replace(",2.5,", ",,", 1), r"t.csv:3: empty weight in column 3 \('w'\)"),
    (lambda t: t.replace(",2.5,", ",NA,", 1), r"t.csv:3: missing weight 'NA' in column 3 \('w'\)"),
    (lambda t: t.replace(",2.5,", ",heavy,", 1), r"t.csv:3: malformed weight in column 3 \('w'\)"),
    (lambda t: t.replace(",1.0,", ",0.0,").replace(",2.5,", ",0.0,"), r"t.csv: every weight in column 3 \('w'\) is 0"),
    (lambda t: t.replace("x0,x1,w", "x0,x1,v"), r"t.csv: the weight column \(weight_column=\) 'w' "
                                                r"names no column of this file \(the header's names are x0, x1, v"),
])
def test_bad_weights_in_a_table_are_named_by_file_and_line(tmp_path, edit, message):
    X, y = binary(n=6)
    w = np.array([1.0, 2.5, 1.0, 1.0, 1.0, 1.0])
    f = weighted_table(tmp_path / "t.csv", X, y, w)
    f.write_text(edit(f.read_text()))
    with pytest.raises(tux2.errors.InputError, match=message):
        tux2.LogisticRegression(epochs=1, weight_column="w").fit(str(f))


@pytest.mark.slow
def test_weight_column_errors_on_the_command_line(tmp_path):
    X, y = binary(n=6)
    f = weighted_table(tmp_path / "t.csv", X, y, np.array([1.0, -1.0, 1.0, 1.0, 1.0, 1.0]))
    r = run_cli("run", "linreg", str(f), "--epochs", "1", "--weight-column", "w")
    assert r.returncode == 2 and f"tux2: error: {f}:3: negative weight -1 in column 3 ('w')" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:0.5\n-1 2:1\n")
    r = run_cli("run", "svm", str(svm), "--epochs", "1", "--weight-column", "2")
    assert r.returncode == 2 and f"tux2: error: {svm}: --weight-column 2 (weight_column=) names a column of a table" \
        in r.stderr, r.stderr
    r = run_cli("run", "lr", "--epochs", "1", "--weight-column", "2")
    assert r.returncode == 2 and "--weight-column says how INPUT is read, and there is none" in r.stderr, r.stderr


def test_weight_column_errors_for_libsvm_files_matrices_and_labels(tmp_path):
    X, y = binary(n=6)
    f = weighted_table(tmp_path / "t.csv", X, y, np.ones(6))
    with pytest.raises(tux2.errors.InputError, match=r"t.csv: column 8 \('target'\) is both the label column \(by its "
                                                     r"name.*\) and the weight column"):
        tux2.LogisticRegression(epochs=1, weight_column="target").fit(str(f))
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:0.5\n-1 2:1\n")
    with pytest.raises(tux2.errors.InputError, match="weight_column=2 names a column of a table of numbers; this is a "
                                                     "libsvm file, whose lines have no place for a weight: write the "
                                                     r"samples as a table .*fit\(X, y, sample_weight=w\)"):
        tux2.LinearSVM(epochs=1, weight_column=2).fit(str(svm))
    with pytest.raises(tux2.errors.InputError, match="weight_column='w' and sample_weight= both give"):
        tux2.FM(epochs=1, weight_column="w").fit(str(f), sample_weight=np.ones(6))
    with pytest.raises(tux2.errors.InputError, match=r"names a column of a table file or a DataFrame; this X is a "
                                                     r"matrix: fit\(X, y, sample_weight=w\)"):
        tux2.LogisticRegression(epochs=1, weight_column="w").fit(X, y)


def test_a_resume_with_another_weight_column_says_the_weights_differ(tmp_path):
    X, y = binary(n=80)
    w = np.random.default_rng(14).uniform(0, 2, len(y))
    f = weighted_table(tmp_path / "t.csv", X, y, w)
    tux2.LogisticRegression(epochs=1, weight_column="w").fit(str(f), checkpoint=tmp_path / "ck")
    weighted_table(f, X, y, w[::-1].copy())
    with pytest.raises(CheckpointError, match="the samples' weights differ from those the checkpoint was trained on"):
        tux2.LogisticRegression(epochs=2, weight_column="w").fit(str(f), checkpoint=tmp_path / "ck")


@pytest.mark.slow
def test_weight_column_on_partitions_threads_and_workers_is_the_one_process_model(tmp_path):
    """The central invariant through the command line: --partitions 3, --threads 2 and --workers 2
    with --weight-column give fit(X, y, sample_weight=w)'s model, to float order."""
    X, y = three_classes(n=200)
    w = np.random.default_rng(15).uniform(0, 3, len(y))
    w[5] = 0.0
    f = weighted_table(tmp_path / "t.csv", X, y, w)
    ref = tux2.LogisticRegression(epochs=3, batch=32).fit(X, y, sample_weight=w)
    for extra in (["--partitions", "3"], ["--threads", "2"], ["--workers", "2"]):
        out = tmp_path / extra[0].strip("-")
        r = run_cli("run", "lr", str(f), "--epochs", "3", "--batch", "32", "--weight-column", "w", "--out", str(out),
                    *extra)
        assert r.returncode == 0, r.stderr
        np.testing.assert_allclose(tux2.LogisticRegression.load(out).weights_, ref.weights_, rtol=1e-10, atol=1e-13)
