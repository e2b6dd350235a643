"""The estimators as a scikit-learn user meets them (from the skl37 new-user trial):
its exceptions, attributes and checks, on data shaped like real data (raw counts,
string labels, DataFrames)."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import tux2
from tux2.errors import InputError
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


def test_features_in_and_matrices_of_other_columns_refused(counts):
    """``n_features_in_`` and, for a DataFrame, ``feature_names_in_`` are set by fit; a
    matrix of other columns is refused as scikit-learn refuses it (it was scored on the
    columns it had: 100 of 2000 features gave predictions), as is a DataFrame with its
    columns in another order, a 1-D row and a missing value (named by row and column)."""
    import pandas as pd
    X, y = counts
    for est in (tux2.LogisticRegression(epochs=2), tux2.BlockPG(epochs=2, bias=True), tux2.FM(epochs=1)):
        est.fit(X, y)
        assert est.n_features_in_ == X.shape[1] and not hasattr(est, "feature_names_in_")
        with pytest.raises(ValueError, match=f"X has 10 features, but {type(est).__name__} is expecting 40"):
            est.predict(X[:, :10])
        with pytest.raises(ValueError, match="expecting 40"):
            est.score(sp.hstack([X, X]).tocsr(), y)
        with pytest.raises(ValueError, match="must be 2-D"):
            est.predict(X[0].toarray().ravel())
    df = pd.DataFrame(X.toarray(), columns=[f"w{j}" for j in range(X.shape[1])])
    lr = tux2.LogisticRegression(epochs=2).fit(df, y)
    assert lr.feature_names_in_.tolist() == list(df.columns) and lr.n_features_in_ == 40
    assert (lr.predict(df) == lr.predict(X)).all()
    with pytest.raises(ValueError, match="'w39' for 'w0'"):
        lr.predict(df[df.columns[::-1]])
    assert not hasattr(lr.fit(X, y), "feature_names_in_")      # a refit on a matrix: no names
    df.iloc[7, 3] = np.nan
    with pytest.raises(ValueError, match="X has NaN at row 7, column 3"):
        tux2.LogisticRegression().fit(df, y)


@pytest.mark.parametrize("cls", [tux2.LogisticRegression, tux2.Softmax])
def test_pandas_NA_is_named_as_NaN_is(counts, cls):
    """pd.NA, the missing value of a nullable column (Float64, from read_csv(dtype_backend=…))
    or of an object column, gets tux2's message naming row and column, not pandas' TypeError
    "float() argument must be … not 'NAType'" (trial brk38)."""
    import pandas as pd
    X, y = counts
    df = pd.DataFrame(X.toarray(), columns=[f"w{j}" for j in range(X.shape[1])])
    df["w3"] = pd.array(np.where(np.arange(len(df)) == 7, None, df["w3"]), dtype="Float64")
    with pytest.raises(ValueError, match="X has NaN at row 7, column 3"):
        cls(epochs=1).fit(df, y)
    df["w3"] = df["w3"].astype(object)
    with pytest.raises(ValueError, match="X has NaN at row 7, column 3"):
        cls(epochs=1).fit(df, y)


def test_binary_models_tell_scikit_learn_so_and_hinge_models_have_no_probabilities(counts):
    """The binary models say so in their tags (check_estimator fed them three classes and
    failed 32 of 55 checks on 'a third label'), so scikit-learn's own classifier checks
    run on them; a hinge model has no ``predict_proba`` attribute, as LinearSVC (hasattr
    was True and the call raised, so soft voting and probability scorers chose it)."""
    from sklearn.utils import get_tags
    from sklearn.utils.estimator_checks import check_classifiers_train
    X, y = counts
    for est in (tux2.LinearSVM(), tux2.FM(), tux2.BlockPG()):
        assert get_tags(est).classifier_tags.multi_class is False
    for est in (tux2.Softmax(), tux2.LogisticRegression()):         # (LogisticRegression: multinomial for K > 2)
        assert get_tags(est).classifier_tags.multi_class is True
    check_classifiers_train("LogisticRegression", tux2.LogisticRegression())
    for est in (tux2.LinearSVM(epochs=2), tux2.FM(loss="hinge", epochs=1)):
        assert not hasattr(est.fit(X, y), "predict_proba")
    lr = tux2.LogisticRegression(epochs=2).fit(X, y)
    assert hasattr(lr, "predict_proba") and lr.predict_proba(X).shape == (X.shape[0], 2)


@pytest.mark.filterwarnings("ignore:the objective ended")      # the three labels are random
def test_a_softmax_of_two_classes_scores_as_a_binary_model(counts):
    """Softmax on two labels gives decision_function (n,), as scikit-learn's multinomial
    models do: (n, 2) made the roc_auc scorer nan; three classes keep (n, 3)."""
    from sklearn.model_selection import cross_val_score
    from sklearn.utils.estimator_checks import check_classifiers_train
    X, y = counts
    sm = tux2.Softmax(epochs=3).fit(X, y)
    d = sm.decision_function(X)
    assert d.shape == (X.shape[0],) and (sm.classes_[(d > 0).astype(int)] == sm.predict(X)).all()
    assert np.allclose(sm.predict_proba(X)[:, 1], 1 / (1 + np.exp(-d)))
    auc = cross_val_score(tux2.Softmax(epochs=3), X, y, cv=2, scoring="roc_auc")
    assert np.isfinite(auc).all() and auc.min() > 0.6
    check_classifiers_train("Softmax", tux2.Softmax())
    three = np.array(["a", "b", "c"])[np.arange(X.shape[0]) % 3]
    assert tux2.Softmax(epochs=1).fit(X, three).decision_function(X).shape == (X.shape[0], 3)


@pytest.fixture(scope="module")
def ratings_frame():
    """(train, test) DataFrames of (user, item, rating) with string ids, split in time
    (a few test users unseen in training)."""
    import pandas as pd
    from tux2.datasets import netflix_like
    tr, te = netflix_like(n_users=300, n_items=60, n_ratings=6000, rank=3, seed=8)
    frame = lambda g: pd.DataFrame({"user": [f"u{u + 1:04d}" for u in g.src], "item": [f"tt{i + 1:05d}" for i in g.dst],
                                    "rating": g.values})
    return frame(tr), frame(te)


def test_mf_test_ratings_and_rows_given_as_a_dataframe_or_its_values(ratings_frame):
    """A test DataFrame of string ids is read in the training ids (its own sorted ids were
    taken as the model's dense ids: test RMSE 1.008 where score() on it said 0.912), and
    df.values of string ids trains (int() failed, so GridSearchCV on it failed every fit)."""
    from sklearn.model_selection import GridSearchCV
    tr, te = ratings_frame
    mf = tux2.MF(k=4, epochs=4).fit(tr, te)
    assert mf.history_[-1]["test_rmse"] == pytest.approx(-mf.score(te), rel=1e-5)
    by_rows = tux2.MF(k=4, epochs=4).fit(tr.values, te.values)
    assert np.array_equal(by_rows.user_factors_, mf.user_factors_)
    assert by_rows.history_[-1]["test_rmse"] == pytest.approx(mf.history_[-1]["test_rmse"])
    gs = GridSearchCV(tux2.MF(epochs=2), {"k": [2, 4]}, cv=2).fit(tr.values)
    assert np.isfinite(gs.best_score_)


def test_mf_reads_a_dataframes_columns_by_name(ratings_frame):
    """``columns`` names a DataFrame's user, item and rating columns, as a file's header
    (a timestamp column first gave pandas' 'could not convert string to float'); the
    model keeps them (``columns_``) and ``score`` reads a DataFrame's columns of those
    names (its columns in another order were scored as items for users: −1.02 for −0.91)."""
    tr, te = ratings_frame
    mf = tux2.MF(k=4, epochs=3).fit(tr)
    assert mf.columns_ == ["user", "item", "rating"]
    assert mf.score(te[["item", "rating", "user"]]) == mf.score(te) == mf.score(te.values)
    stamped = tr.assign(ts=np.arange(len(tr)))[["ts", "rating", "item", "user"]]
    # columns named user, item and rating are read as such in any order (they were read by position)
    assert np.array_equal(tux2.MF(k=4, epochs=3).fit(stamped).user_factors_, mf.user_factors_)
    with pytest.raises(ValueError, match="column 'b', read as the ratings, holds .* such as 'tt.*MF\\(columns="):
        tux2.MF(k=4, epochs=3).fit(stamped.rename(columns={"item": "b", "user": "a"}))
    named = tux2.MF(k=4, epochs=3, columns="user,item,rating").fit(stamped, te.assign(ts=0))
    assert np.array_equal(named.user_factors_, mf.user_factors_) and named.score(te) == mf.score(te)
    assert np.array_equal(tux2.MF(k=4, epochs=3, columns=[4, 3, 2]).fit(stamped).item_factors_, mf.item_factors_)
    with pytest.raises(ValueError, match="no column 'stars'"):
        tux2.MF(columns="user,item,stars").fit(tr)


def test_mf_takes_scikit_learns_x_of_user_item_pairs_and_y_of_ratings(ratings_frame):
    """fit(X, y), predict(X) and score(X, y) with X's rows (user, item): what
    cross_val_score and every regression scorer call (fit raised 'cannot load a
    ndarray', so cross_val_score gave nan for every fold)."""
    from sklearn.base import is_regressor
    from sklearn.model_selection import cross_val_score
    tr, te = ratings_frame
    mf = tux2.MF(k=4, epochs=3).fit(tr)
    pairs = tux2.MF(k=4, epochs=3).fit(tr[["user", "item"]], tr["rating"])
    assert np.array_equal(pairs.user_factors_, mf.user_factors_)
    X, y = te[["user", "item"]].to_numpy(), te["rating"].to_numpy()
    assert np.array_equal(mf.predict(X), mf.predict(X[:, 0], X[:, 1]))
    assert np.array_equal(mf.predict(te[["user", "item"]]), mf.predict(X))
    assert mf.score(X, y) == mf.score(te) == mf.score(te[["user", "item"]], te["rating"])
    ints = np.c_[np.arange(600) % 50, np.arange(600) % 17]
    r = (ints[:, 0] % 5 + 1).astype(float)
    assert is_regressor(tux2.MF())
    got = cross_val_score(tux2.MF(k=4, epochs=2), ints, r, cv=3, scoring="neg_root_mean_squared_error",
                          error_score="raise")
    assert got.shape == (3,) and np.all(np.isfinite(got)) and np.all(got < 0)
    with pytest.raises(ValueError, match="X has 600 .* y has shape \\(5,\\)"):
        tux2.MF(k=4).fit(ints, r[:5])
    with pytest.raises(ValueError, match="MF.predict takes \\(users, items\\), or X of"):
        mf.predict(np.zeros((3, 4)))


def test_mf_takes_y_as_a_column_and_refuses_y_beside_x_of_three_columns():
    """y of shape (n, 1), as scikit-learn's regressors take it, is the ratings (fit read
    it as a test set: 'cannot load a ndarray'); X of three columns beside y is refused
    naming X's shape (the same 'cannot load', and score ignored y)."""
    X = np.c_[np.arange(600) % 50, np.arange(600) % 17]
    y = (X[:, 0] % 5 + 1).astype(float)
    flat = tux2.MF(k=4, epochs=2).fit(X, y)
    column = tux2.MF(k=4, epochs=2).fit(X, y[:, None])
    assert np.array_equal(flat.user_factors_, column.user_factors_)
    assert flat.score(X, y[:, None]) == flat.score(X, y)
    with pytest.raises(ValueError, match="X holds \\(user, item\\) rows .* of shape \\(600, 3\\)"):
        tux2.MF(k=4, epochs=2).fit(np.c_[X, y], y)
    with pytest.raises(ValueError, match="X holds \\(user, item\\) rows .* of shape \\(600, 3\\)"):
        flat.score(np.c_[X, y], y)


def test_scikit_learns_input_checks_pass():
    """Four of check_estimator's input checks: NaN and inf in X refused with a message
    naming them (it said 'nan'), a 1-D X ('Reshape your data'), labels in an array-like
    that is not an array (np.ndim raised a TypeError), fit(X) without y (a Tux2Error, no
    ValueError)."""
    from sklearn.utils.estimator_checks import (check_classifier_data_not_an_array, check_estimators_nan_inf,
                                                check_fit2d_predict1d, check_requires_y_none)
    for check in (check_estimators_nan_inf, check_fit2d_predict1d, check_classifier_data_not_an_array,
                  check_requires_y_none):
        check("LogisticRegression", tux2.LogisticRegression())


def test_mf_numbers_sparse_integer_ids_of_arrays_densely_as_a_files(tmp_path):
    """MovieLens' movieIds run to 164k for 9k movies: a DataFrame or arrays of them gave a
    model of a row per number below the largest (163,950 item rows for 8,736 rated), where
    the same ratings from a file get a row per id; now both are numbered the same way."""
    import pandas as pd
    rng = np.random.default_rng(3)
    items = np.sort(rng.choice(160_000, size=120, replace=False))
    u, i = rng.integers(0, 80, 3000), items[rng.zipf(1.5, 3000) % 120]
    pairs = np.unique(np.c_[u, i], axis=0)
    r = rng.integers(1, 6, len(pairs)).astype(float)
    frame = pd.DataFrame({"user": pairs[:, 0], "item": pairs[:, 1], "rating": r})
    path = tmp_path / "r.txt"
    np.savetxt(path, np.c_[pairs, r], fmt="%d")
    by_frame = tux2.MF(k=4, epochs=3).fit(frame)
    by_file = tux2.MF(k=4, epochs=3, base=0).fit(str(path))
    n_items = len(np.unique(pairs[:, 1]))
    assert by_frame.item_factors_.shape == by_file.item_factors_.shape == (n_items, 4)
    assert np.array_equal(by_frame.item_factors_, by_file.item_factors_)
    assert np.array_equal(by_frame.predict(pairs[:5, 0], pairs[:5, 1]), by_file.predict(pairs[:5, 0], pairs[:5, 1]))
    assert set(by_frame.recommend([int(pairs[0, 0])], k=3)[1].ravel().tolist()) <= set(pairs[:, 1].tolist())


def test_mf_reads_one_based_ids_of_a_dataframe_as_a_files(tmp_path):
    """MovieLens' userIds run 1 … n: MF().fit(pd.read_csv('ratings.csv')) made a phantom
    user 0 (a row of factors, a user id None) and another model than the same file's,
    which --base auto reads as 1-based when no id 0 occurs on either side."""
    import pandas as pd
    rng = np.random.default_rng(4)
    pairs = np.unique(np.c_[rng.integers(1, 90, 3000), rng.zipf(1.5, 3000) % 50 + 1], axis=0)
    frame = pd.DataFrame({"userId": pairs[:, 0], "movieId": pairs[:, 1],
                          "rating": rng.integers(1, 11, len(pairs)) / 2, "timestamp": 964982703})
    frame.to_csv(tmp_path / "ratings.csv", index=False)
    by_frame, by_file = tux2.MF(k=4, epochs=3).fit(frame), tux2.MF(k=4, epochs=3).fit(str(tmp_path / "ratings.csv"))
    n_users = len(np.unique(pairs[:, 0]))
    assert by_frame.user_factors_.shape == by_file.user_factors_.shape == (n_users, 4)
    assert np.array_equal(by_frame.user_factors_, by_file.user_factors_)
    users, _, _ = by_frame.recommend(k=2)
    assert sorted(users.tolist()) == sorted(set(pairs[:, 0].tolist()))           # ids as given, none is 0


def test_mf_reads_test_and_predict_frames_by_the_names_fit_read_and_keeps_them_in_its_files(ratings_frame, tmp_path):
    """A test or predict DataFrame with the training frame's columns in another order (or
    more of them) is read by name: by position, fit's test RMSE was 1.15 where score()
    said 0.91, and predict scored items as users, silently. A saved model keeps the
    names; a timestamp column before the ratings is passed over for the one named rating."""
    tr, te = ratings_frame
    mf = tux2.MF(k=4, epochs=3).fit(tr, te[["item", "user", "rating"]])
    assert mf.history_[-1]["test_rmse"] == pytest.approx(-mf.score(te), rel=1e-6)
    want = mf.predict(te["user"].to_numpy(), te["item"].to_numpy())
    for frame in (te[["item", "user"]], te.assign(ts=1), te[["rating", "item", "user"]]):
        np.testing.assert_array_equal(mf.predict(frame), want)
    mf.save(tmp_path / "m")
    back = tux2.MF.load(tmp_path / "m")
    assert back.columns_ == ["user", "item", "rating"]
    np.testing.assert_allclose(back.predict(te[["item", "user"]]), want, rtol=1e-6)
    stamped = tux2.MF(k=4, epochs=3).fit(tr.assign(ts=np.arange(len(tr)))[["user", "item", "ts", "rating"]])
    assert stamped.columns_ == ["user", "item", "rating"]
    np.testing.assert_array_equal(stamped.user_factors_, tux2.MF(k=4, epochs=3).fit(tr).user_factors_)


def test_classifiers_refuse_a_reordered_test_frame_and_keep_feature_names_in_their_files(counts, tmp_path):
    """fit's test X with the columns in another order was scored by position (test
    accuracy 0.37 for 0.97); a loaded model had lost ``feature_names_in_``, so predict
    scored a reordered frame silently."""
    import pandas as pd
    X, y = counts
    df = pd.DataFrame(X.toarray(), columns=[f"w{j}" for j in range(X.shape[1])])
    with pytest.raises(ValueError, match="the test X's columns are not those fit saw"):
        tux2.LogisticRegression(epochs=2).fit((df, y), (df[df.columns[::-1]], y))
    lr = tux2.LogisticRegression(epochs=2).fit((df, y), (df, y))
    lr.save(tmp_path / "lr")
    back = tux2.LogisticRegression.load(tmp_path / "lr")
    assert back.feature_names_in_.tolist() == list(df.columns)
    with pytest.raises(ValueError, match="'w39' for 'w0'"):
        back.predict(df[df.columns[::-1]])
    assert (back.predict(df) == lr.predict(df)).all()


def test_mf_takes_any_integers_as_ids_and_object_columns_of_integers_as_integers(ratings_frame, tmp_path):
    """64-bit hashes (uint64 above 2^63 were read as negative and refused, quoting an id
    the user never had), negative ids (Python's hash()) and integer ids in an object
    column (recommend gave strings '1204' for a movieId merge) are ids like any other."""
    tr, te = ratings_frame
    codes = {u: k + 1 for k, u in enumerate(sorted(set(tr["user"])))}
    ints = tr.assign(user=tr["user"].map(codes))
    ref = tux2.MF(k=4, epochs=2).fit(ints)
    as_object = tux2.MF(k=4, epochs=2).fit(ints.astype({"user": object}))
    np.testing.assert_array_equal(as_object.user_factors_, ref.user_factors_)
    assert as_object.recommend([1], k=2)[0].dtype.kind == "i"
    negative = tux2.MF(k=4, epochs=2).fit(ints.assign(user=-ints["user"]))
    hashed = tux2.MF(k=4, epochs=2).fit(ints.assign(user=ints["user"].astype(np.uint64) + np.uint64(2 ** 63)))
    for m, first in ((negative, -1), (hashed, 2 ** 63 + 1)):
        assert np.isfinite(m.user_factors_).all()
        assert m.predict([first], [tr["item"].iloc[0]]) == pytest.approx(
            m.predict(np.array([first], m.ids_[0].tokens.dtype), [tr["item"].iloc[0]]))
        assert not np.isnan(m.predict([first], [tr["item"].iloc[0]])).any()
        m.save(tmp_path / "m")
        np.testing.assert_array_equal(tux2.MF.load(tmp_path / "m").ids_[0].tokens, m.ids_[0].tokens)


def test_set_params_after_fit_changes_the_next_fit_not_the_fitted_model(ratings_frame, counts, tmp_path):
    """set_params(k=16) after a fit with k=4 made save write a model load refused
    ('p has shape (300, 4), expected (n, 16)'); set_params(bias=True) after a fit
    without one read the last feature's weight as the intercept."""
    tr, _ = ratings_frame
    mf = tux2.MF(k=4, epochs=2).fit(tr).set_params(k=16)
    mf.save(tmp_path / "mf")
    assert tux2.MF.load(tmp_path / "mf").k == 4 and mf.k == 16
    X, y = counts
    lr = tux2.LogisticRegression(epochs=2, bias=False).fit(X, y)
    before = lr.decision_function(X[:5])
    lr.set_params(bias=True)
    np.testing.assert_array_equal(lr.decision_function(X[:5]), before)
    assert lr.n_features_in_ == X.shape[1]
    fm = tux2.FM(epochs=1, factors=4).fit(X, y).set_params(factors=8)
    fm.save(tmp_path / "fm")
    assert tux2.FM.load(tmp_path / "fm").factors == 4


def test_a_model_loads_only_as_its_own_class(counts, tmp_path):
    """FM.load of a logistic regression's directory loaded it (and its save wrote an FM
    that FM.load refused); LinearSVM.load gave an 'svm' with logistic probabilities."""
    from tux2.model_check import ModelError
    X, y = counts
    tux2.LogisticRegression(epochs=1).fit(X, y).save(tmp_path / "lr")
    for cls in (tux2.FM, tux2.LinearSVM, tux2.Softmax, tux2.BlockPG):
        with pytest.raises(ModelError, match="an 'lr' model, not "):
            cls.load(tmp_path / "lr")
    assert type(tux2.estimators.load(tmp_path / "lr")) is tux2.LogisticRegression


def test_repr_shows_only_the_parameters_changed_from_their_defaults():
    """As scikit-learn's print_changed_only: ``MF(k=16)``, not all 22 parameters (a
    new-user trial); an array or list is compared by its repr (its ``==`` is no truth
    value)."""
    assert repr(tux2.MF()) == "MF()" and repr(tux2.MF(k=16)) == "MF(k=16)"
    assert repr(tux2.LDA(topics=5, vocab=np.array(["a", "b"]))) == "LDA(topics=5, vocab=array(['a', 'b'], dtype='<U1'))"
    assert repr(tux2.LDA(stop_words=["x"])) == "LDA(stop_words=['x'])"
    assert repr(tux2.Softmax(classes=3, bias=True)) == "Softmax(classes=3)"
    assert repr(tux2.BlockPG(reg=1.0, epochs=30)) == "BlockPG(epochs=30)"
    assert repr(tux2.MF().set_params(k=16)) == "MF(k=16)"


@pytest.mark.filterwarnings("ignore:the test log-loss ended", "ignore:the test hinge loss ended")   # 2 epochs, 200 samples
def test_a_hinge_model_reports_its_test_hinge_loss_not_a_log_loss(counts):
    """A hinge model has no probabilities: its test metric is the mean hinge loss
    (scikit-learn's hinge_loss of decision_function), not a log-loss of its scores as if
    they were logits (LinearSVM's history_ had test_logloss); logistic models keep theirs."""
    from sklearn.metrics import hinge_loss, log_loss
    X, y = counts
    train, test = (X[:200], y[:200]), (X[200:], y[200:])
    for est in (tux2.LinearSVM(epochs=2), tux2.FM(loss="hinge", epochs=2)):
        last = est.fit(train, test).history_[-1]
        assert "test_logloss" not in last
        assert last["test_hinge_loss"] == pytest.approx(hinge_loss(test[1], est.decision_function(test[0])))
    lr = tux2.LogisticRegression(epochs=2).fit(train, test)
    assert "test_hinge_loss" not in lr.history_[-1]
    assert lr.history_[-1]["test_logloss"] == pytest.approx(log_loss(test[1], lr.predict_proba(test[0])))


@pytest.mark.parametrize("cls", [tux2.LogisticRegression, tux2.LinearSVM, tux2.Softmax, tux2.BlockPG])
def test_predict_gives_labels_of_the_dtype_y_had_and_so_does_a_loaded_model(counts, cls, tmp_path):
    """``classes_`` keeps y's dtype and ``predict`` gives values of it, as scikit-learn's:
    bools stay bools and 0.0/1.0 floats (bools and floats came back as 0/1 integers), also
    after save and load; a libsvm file's labels, which have no dtype, stay whole numbers."""
    X, names = counts
    spam = names == "spam"
    for y in (spam, spam.astype(np.float64), spam.astype(np.int32), names, spam.tolist()):
        est = cls(epochs=1).fit(X, y)
        want = np.asarray(y).dtype
        assert est.classes_.dtype == want and est.predict(X).dtype == want
        assert set(est.predict(X).tolist()) <= set(np.asarray(y).tolist())
        est.save(tmp_path / "m")
        back = cls.load(tmp_path / "m")
        assert back.classes_.dtype.kind == want.kind and (back.predict(X) == est.predict(X)).all()
        assert back.score(X, y) == est.score(X, y) == np.mean(est.predict(X) == np.asarray(y))
    if cls is not tux2.Softmax:          # a bool model scores ±1 labels as a 0/1 model does (tux2 predict's files)
        assert est.fit(X, spam).score(X, np.where(spam, 1, -1)) == est.score(X, spam)
    from tux2.io import write_libsvm
    from tux2.graph import BipartiteGraph
    coo = X.tocoo()
    write_libsvm(str(tmp_path / "s.svm"), BipartiteGraph(coo.row, coo.col, coo.data, *X.shape), spam.astype(float))
    assert cls(epochs=1).fit(str(tmp_path / "s.svm")).classes_.dtype.kind == "i"


def test_float_ids_of_rating_rows_are_checked_not_cast():
    """MF.fit on an (n, 3) float array (np.loadtxt's) cast its id columns with astype:
    user 0.5 trained as user 0 and a NaN or 1e30 id as -2^63, silently; the rows' ids
    now go through from_arrays' check, as a tuple of columns does."""
    rows = np.array([[0.0, 1, 5], [1, 0, 3], [2, 2, 4]])
    for bad, what in ((0.5, "0.5"), (np.nan, "nan"), (1e30, r"1e\+30 at index 1 is not an integer within int64")):
        r = rows.copy()
        r[1, 0] = bad
        with pytest.raises(InputError, match=f"src id {what}"):
            tux2.MF(k=2, epochs=1).fit(r)
    m = tux2.MF(k=2, epochs=1).fit(rows)             # integral floats still read as ids
    assert m.predict([0.0, 2.0], [1.0, 2.0]).shape == (2,)


def test_lda_names_its_topic_columns_for_scikit_learns_pipelines():
    """A Pipeline or ColumnTransformer with an LDA step could not say what its output
    columns are (scikit-learn's own LDA names them latentdirichletallocation0 …)."""
    pytest.importorskip("sklearn")
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    docs = ["apple banana melon"] * 10 + ["goal team coach"] * 10
    pipe = make_pipeline(tux2.LDA(topics=3, iterations=5)).fit(docs)
    assert list(pipe.get_feature_names_out()) == ["lda0", "lda1", "lda2"]
    frame = pd.DataFrame({"body": docs, "n": range(20)})
    ct = make_column_transformer((tux2.LDA(topics=2, iterations=5), "body"), ("passthrough", ["n"])).fit(frame)
    assert list(ct.get_feature_names_out()) == ["lda__lda0", "lda__lda1", "passthrough__n"]
    with pytest.raises(tux2.errors.NotFittedError):
        tux2.LDA().get_feature_names_out()
