"""The estimators as a scikit-learn user meets them (from the skl37 new-user trial):
its exceptions, attributes and checks, on data shaped like real data (raw counts,
string labels, DataFrames)."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import tux2
from tux2.datasets import sparse_classification


@pytest.fixture(scope="module")
def counts():
    """(X, y): a small bag-of-words-like CSR matrix with string labels."""
    g, y, _ = sparse_classification(n_samples=300, n_features=40, seed=11)
    X = sp.csr_matrix((g.values, (g.src, g.dst)), shape=(g.n_src, g.n_dst))
    return X, np.where(y > 0, "spam", "ham")


def test_unfitted_estimators_raise_scikit_learns_not_fitted_error():
    """``except sklearn.exceptions.NotFittedError`` catches a predict before fit (it caught
    nothing: tux2's was an AttributeError only), as does ``except ValueError``; the error
    pickles (joblib sends a worker's errors back so)."""
    from sklearn.exceptions import NotFittedError
    for est in (tux2.LogisticRegression(), tux2.Softmax(), tux2.BlockPG(), tux2.MF()):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            est.predict(np.ones((2, 3))) if not isinstance(est, tux2.MF) else est.predict([1], [1])
        with pytest.raises(ValueError):
            est.coef_ if not isinstance(est, tux2.MF) else est.mu_
        assert not hasattr(est, "classes_")
    try:
        tux2.LinearSVM().decision_function(np.ones((2, 3)))
    except NotFittedError as e:
        back = pickle.loads(pickle.dumps(e))
        assert isinstance(back, NotFittedError) and isinstance(back, tux2.errors.NotFittedError)
        assert str(back) == str(e)
