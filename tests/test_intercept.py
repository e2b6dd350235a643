"""``coef_`` and ``intercept_`` as scikit-learn's: the features' weights and the intercept apart
(weights_' last row), the scores X·coef_ᵀ + intercept_, and SelectFromModel works."""
import numpy as np
import pytest

import tux2


def _data(seed=0, n=300, d=5, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 0] = rng.normal(120.0, 10.0, n)        # a dense, uncentred column: trained centred, written raw
    z = X[:, 1] - 0.5 * X[:, 2] + 0.01 * (X[:, 0] - 120)
    if classes == 0:
        return X, 3.0 + z + rng.normal(0, 0.1, n)
    if classes == 2:
        return X, (z > 0.3).astype(int)
    return X, np.digitize(z, np.quantile(z, np.linspace(0, 1, classes + 1)[1:-1]))


@pytest.mark.parametrize("make, classes", [(lambda: tux2.LogisticRegression(epochs=3), 2),
                                           (lambda: tux2.LinearSVM(epochs=3), 2),
                                           (lambda: tux2.Softmax(epochs=3), 3),
                                           (lambda: tux2.LinearRegression(epochs=3), 0),
                                           (lambda: tux2.BlockPG(bias=True, reg=0.01), 2)])
def test_coef_has_the_features_and_the_intercept_is_apart(make, classes):
    X, y = _data(classes=classes)
    est = make().fit(X, y)
    coef = np.asarray(est.coef_, np.float64)
    assert coef.shape == ((3, X.shape[1]) if classes == 3 else (X.shape[1],))      # scikit-learn's shapes
    scores = est.predict(X) if classes == 0 else est.scores(X)
    scores = scores if classes == 3 else np.ravel(scores)
    manual = X @ coef.T + est.intercept_
    assert np.allclose(scores, manual, atol=1e-6 * (1 + np.abs(manual).max()))
    assert np.array_equal(np.atleast_1d(est.intercept_), np.atleast_1d(est.weights_[-1]))
    assert est.intercept_ != 0 if classes != 3 else np.any(est.intercept_ != 0)


@pytest.mark.parametrize("make, classes", [(lambda: tux2.LogisticRegression(epochs=5), 2),
                                           (lambda: tux2.Softmax(epochs=5), 3)])
def test_select_from_model_keeps_the_informative_features(make, classes):
    """scikit-learn's SelectFromModel reads coef_ (classes by rows) against n_features_in_:
    with the intercept in coef_ it failed ('boolean index did not match')."""
    from sklearn.feature_selection import SelectFromModel
    X, y = _data(classes=classes)
    X[:, 0] = (X[:, 0] - 120) / 10
    sel = SelectFromModel(make()).fit(X, y)
    assert sel.get_support().tolist() == [False, True, True, False, False], sel.estimator_.coef_
    assert sel.transform(X).shape == (len(X), 2)


def test_without_bias_the_intercept_is_zero():
    X, y = _data()
    lr = tux2.LogisticRegression(epochs=2, bias=False).fit(X, y)
    assert lr.intercept_ == 0.0 and len(lr.coef_) == X.shape[1]
    sm = tux2.Softmax(epochs=2, bias=False).fit(*_data(classes=3))
    assert np.array_equal(sm.intercept_, np.zeros(3))


@pytest.mark.parametrize("classes", [2, 3])
def test_the_intercept_is_not_penalised_as_scikit_learns(classes):
    """On a small set whose classes are unbalanced the intercept is large; penalised (liblinear's -B 1,
    before) it stopped at 1.95 where scikit-learn's lbfgs, which leaves it out of the penalty, has 2.16,
    and the objective 0.5 % above the optimum. At λ = 1/n (C = 1) both minimise the same objective."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression as SkLR
    from tux2.udfs import glm
    rng = np.random.default_rng(0)
    n, d = 120, 6
    X = rng.normal(0, 1, (n, d))
    z = X @ rng.normal(0, 1, d) + rng.logistic(0, 1, n)
    y = (z + 2.5 > 0).astype(int) if classes == 2 else np.digitize(z, [-3.0, -1.5])
    sk = SkLR(C=1.0, tol=1e-12, max_iter=10_000).fit(X, y)
    est = (tux2.LogisticRegression if classes == 2 else tux2.Softmax)(epochs=50).fit(X, y)
    Xb = sp.csr_matrix(np.hstack([X, np.ones((n, 1))]))
    W, W_sk = (np.vstack([m.coef_.reshape(-1, d).T, np.reshape(m.intercept_, (1, -1))]) for m in (est, sk))
    f, f_sk = (glm.objective_value(w, Xb, y, "softmax" if classes > 2 else "logistic", lam=1.0 / n, free=-1)
               for w in (W, W_sk))
    assert f_sk <= f < f_sk * (1 + 1e-3), (f, f_sk)         # penalised: 4.8e-3 and 1.7e-3 above
    # softmax's intercepts are free along (1, …, 1), which changes no probability: they sum to 0, as scikit-learn's
    np.testing.assert_allclose(est.intercept_, sk.intercept_[0] if classes == 2 else sk.intercept_, atol=0.05)


def test_fm_has_none_and_unfitted_raises():
    X, y = _data()
    fm = tux2.FM(epochs=2).fit(X, y)
    assert not hasattr(fm, "intercept_")
    assert not hasattr(tux2.LogisticRegression(), "intercept_")


def test_hashed_indices(tmp_path):
    """A model of sparse indices (features_ numbered densely): the intercept is weights_'s last row."""
    rng = np.random.default_rng(1)
    feats = np.sort(rng.choice(2 ** 20, 40, replace=False)) + 1
    w = rng.normal(size=40)
    lines = []
    for _ in range(400):
        j = np.sort(rng.choice(40, 6, replace=False))
        y = int(w[j].sum() + rng.normal() > 0.5)
        lines.append(f"{y} " + " ".join(f"{feats[k]}:1" for k in j))
    (tmp_path / "h.svm").write_text("\n".join(lines) + "\n")
    lr = tux2.LogisticRegression(epochs=3).fit(str(tmp_path / "h.svm"))
    assert lr.features_ is not None and len(lr.weights_) == 41
    assert lr.intercept_ == float(lr.weights_[-1]) != 0 and lr.coef_.shape == (lr.n_features_in_,) == (feats[-1],)
    assert lr.coef_[feats - 1].tolist() == lr.weights_[:-1].tolist()
