"""The Python API's bounds: what the command line refuses when parsed, ``fit``
refuses with a clear exception, before any layout (a huge value used to hang in it)."""
import subprocess
import sys

import numpy as np
import pytest

PROGRAM = """
import tux2
from tux2.datasets import netflix_like
train, _ = netflix_like(n_users=200, n_items=50, n_ratings=2000, seed=0)
try:
    tux2.MF(epochs=1, k=4).fit(train, partitions={value})
except Exception as e:
    print(type(e).__name__, e)
"""


@pytest.mark.parametrize("value, expect", [
    ("10**9", "PartitionError partitions must be a whole number from 1 to 1048576, got 1000000000"),
    ("2.5", "PartitionError partitions must be a whole number from 1 to 1048576, got 2.5"),
    ("True", "PartitionError partitions must be a whole number from 1 to 1048576, got True"),
    ("0", "PartitionError partitions must be a whole number from 1 to 1048576, got 0"),
    ("5000", "Tux2Error --partitions 5000 for 1795 edges: some partitions would be empty"),
])
def test_fit_refuses_partitions_out_of_bounds(value, expect):
    r = subprocess.run([sys.executable, "-c", PROGRAM.format(value=value)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(expect), r.stdout + r.stderr


def _train():
    from tux2.datasets import netflix_like
    return netflix_like(n_users=200, n_items=50, n_ratings=2000, seed=0)[0]


@pytest.mark.parametrize("cls, params, expect", [
    ("MF", dict(k=0), "MF: k must be an integer >= 1 and <= 100000, got 0"),          # ran, then "diverged"
    ("MF", dict(k=-1), "MF: k must be an integer >= 1 and <= 100000, got -1"),        # numpy's shape error
    ("MF", dict(k=2.5), "MF: k must be an integer >= 1 and <= 100000, got 2.5"),
    ("MF", dict(k=True), "MF: k must be an integer >= 1 and <= 100000, got True"),
    ("MF", dict(epochs=float("nan")), "MF: epochs must be an integer >= 0, got nan"),
    ("MF", dict(lr=-1.0), "MF: lr must be a finite number > 0, got -1.0"),              # ran, then "diverged"
    ("MF", dict(seed=2 ** 70), "MF: seed must be an integer >= 0 and <= 4294967295"),  # taken
    ("MF", dict(batch_size=0), "MF: batch_size must be an integer >= 1, got 0"),
    ("MF", dict(damping=1e300), "MF: damping must be a finite number >= 0 and <= 3.4028234663852886e+38"),  # inf
    ("LDA", dict(alpha=0.0), "LDA: alpha must be a finite number >= 2.2250738585072014e-308, got 0.0"),       # math domain error
    ("LDA", dict(topics=0), "LDA: topics must be an integer >= 1 and <= 32767, got 0"),
    ("BlockPG", dict(block_size=0), "BlockPG: block_size must be an integer >= 1 and <= 2147483647, got 0"),
    ("BlockPG", dict(shrink=1.0), "BlockPG: shrink must be a finite number >= 0 and < 1, got 1.0"),
    ("LogisticRegression", dict(eta=float("inf")), "LogisticRegression: eta must be a finite number > 0, got inf"),
    ("Softmax", dict(classes=1), "Softmax: classes must be an integer >= 2 and <= 100000, got 1"),
    ("FM", dict(factors=0), "FM: factors must be an integer >= 1 and <= 100000, got 0"),
])
def test_fit_refuses_parameters_the_command_line_refuses(cls, params, expect):
    import tux2
    est = getattr(tux2, cls)(**params)
    data = _train() if cls in ("MF",) else (["a b c", "b c d"] if cls == "LDA" else None)
    with pytest.raises(ValueError) as e:
        est.fit(data if data is not None else ((np.array([0, 1, 2]), np.array([0, 1, 2]), np.ones(3)),
                                               np.array([1, 0, 1])))
    assert str(e.value).startswith(expect), str(e.value)


@pytest.mark.parametrize("cls, params, expect", [
    ("MF", dict(order="random"), "MF: order must be one of 'strata', 'blocked', 'shuffle', 'input'; got 'random'"),
    ("MF", dict(enumerate="users"), "MF: enumerate must be one of 'user', 'item'; got 'users'"),   # was taken
    ("MF", dict(biases="no"), "MF: biases must be one of True, False; got 'no'"),         # int() error
    ("MF", dict(base="2"), "MF: base must be one of 'auto', 0, 1; got '2'"),
    ("MF", dict(unknown="mean"), "MF: unknown must be one of 'error', 'skip', 'baseline'; got 'mean'"),
    ("LDA", dict(sampler="gibbs"), "LDA: sampler must be one of 'sparse', 'sync'; got 'gibbs'"),
    ("BlockPG", dict(form="lbfgs"), "BlockPG: form must be one of 'auto', 'kappa', 'newton'; got 'lbfgs'"),
    ("LogisticRegression", dict(penalty="elasticnet"),                  # the message said 'reg must be …'
     "LogisticRegression: penalty must be one of 'l2', 'l1'; got 'elasticnet'"),
    ("LinearSVM", dict(strategy="allreduce"), "LinearSVM: strategy must be one of 'sendgradient',"),
    ("FM", dict(loss="huber"), "FM: loss must be one of 'logistic', 'hinge', 'squared'; got 'huber'"),
])
def test_fit_refuses_values_outside_the_choices_the_command_line_offers(cls, params, expect):
    import tux2
    with pytest.raises(ValueError) as e:
        getattr(tux2, cls)(**params).check_params()
    assert str(e.value).startswith(expect), str(e.value)


def test_the_command_line_offers_the_estimators_choices():
    from tux2.cli import build_parser
    import tux2
    run = build_parser()[1]
    for algo, cls in (("mf", tux2.MF), ("lda", tux2.LDA), ("blockpg", tux2.BlockPG), ("fm", tux2.FM)):
        flags = {a.dest: a.choices for a in run[algo]._actions if a.choices}
        for name, allowed in cls.choices.items():
            flag = cls.flags.get(name, (name,))[0].replace("-", "_")
            if flag in flags:
                assert [str(c) for c in flags[flag]] == [str(c) for c in allowed], (algo, name)


def test_none_stays_the_default_where_it_is_one():
    import tux2
    tux2.MF(k=2, epochs=1, lr=None, blocks=None, batch_size=None).check_params()
    tux2.BlockPG(block_size=None).check_params()
    tux2.Softmax(classes=None, eta=None).check_params()


def test_huge_blocks_from_python_are_refused_not_laid_out():
    program = ("import tux2\nfrom tux2.datasets import netflix_like\n"
               "train, _ = netflix_like(n_users=200, n_items=50, n_ratings=2000, seed=0)\n"
               "try:\n    tux2.MF(epochs=1, k=4, blocks=10**9).fit(train)\n"
               "except ValueError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert r.stdout.startswith("MF: blocks must be an integer >= 1 and <= 65536, got 1000000000"), r.stdout + r.stderr


@pytest.mark.slow
def test_a_learning_rate_beyond_float32_is_named_without_a_numpy_warning(tmp_path):
    from tests.conftest import run_cli
    path = tmp_path / "r.txt"
    path.write_text("".join(f"{u} {i} {1 + (u * i) % 5}\n" for u in range(1, 30) for i in range(1, 10)))
    r = run_cli("run", "mf", str(path), "--lr", "1e300", "--epochs", "1")
    assert r.returncode == 2, r.stderr
    assert "RuntimeWarning" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == \
        "tux2: error: context field 'lr' is 1e+300, beyond the range of the float32 it is kept in (±3.403e+38)"


@pytest.mark.parametrize("call, name", [
    (lambda tux2: tux2.MF().predict([1], [1]), "MF is not fitted yet (no ids_)"),
    (lambda tux2: tux2.MF().recommend(), "MF is not fitted yet (no known_)"),
    (lambda tux2: tux2.LDA().transform(["a b"]), "LDA is not fitted yet (no word_topic_)"),
    (lambda tux2: tux2.LogisticRegression().predict(np.ones((2, 3))), "LogisticRegression is not fitted yet"),
    (lambda tux2: tux2.BlockPG().predict_proba(np.ones((2, 3))), "BlockPG is not fitted yet (no coef_)"),
])
def test_using_an_estimator_before_fit_says_so(call, name):
    import tux2
    with pytest.raises(tux2.Tux2Error, match=r"not fitted yet .*call fit first") as e:     # was AttributeError 'ids_'
        call(tux2)
    assert name in str(e.value)
    assert isinstance(e.value, AttributeError)              # hasattr stays False, as for scikit-learn
    assert not hasattr(tux2.MF(), "coef_") and not hasattr(tux2.MF(), "anything")


@pytest.mark.parametrize("cls", ["MF", "LDA"])
def test_empty_arrays_are_an_input_error(cls):
    import tux2
    est = getattr(tux2, cls)(**({"epochs": 1} if cls == "MF" else {"iterations": 1}))
    with pytest.raises(tux2.InputError, match="arrays: no edges to train on"):     # was the engine's tiles error
        est.fit((np.array([], int), np.array([], int), np.array([], float)))


@pytest.mark.parametrize("make, kind, expect", [
    (lambda t: t.BlockPG(lam=1), TypeError, "BlockPG has no parameter 'lam'; the L1 weight λ is reg=… "
                                            "(tux2 run blockpg --lam); its parameters are: reg, block_size,"),
    (lambda t: t.LogisticRegression(lam=0.1), TypeError, "the regularisation weight λ is reg=… (tux2 run lr --lam)"),
    (lambda t: t.LinearSVM().set_params(lam=0.1), ValueError, "(tux2 run svm --lam); its parameters are:"),
    (lambda t: t.MF(no_biases=True), TypeError, "MF has no parameter 'no_biases'; biases=False is --no-biases"),
    (lambda t: t.LDA(topic=5), TypeError, "LDA has no parameter 'topic'; its parameters are: topics,"),
    # the peers' names (surprise's n_factors and reg_all, Spark's regParam, gensim's num_topics, scikit-learn's C)
    (lambda t: t.MF(n_factors=20), TypeError, "MF has no parameter 'n_factors'; use k=…; its parameters are:"),
    (lambda t: t.MF(lambda_=0.1), TypeError, "MF has no parameter 'lambda_'; use reg=…;"),
    (lambda t: t.MF().set_params(regParam=0.1), ValueError, "MF has no parameter 'regParam'; use reg=…;"),
    (lambda t: t.MF(lam=0.1), TypeError, "MF has no parameter 'lam'; use reg=…;"),          # the GLMs' --lam
    (lambda t: t.LDA(num_topics=5), TypeError, "LDA has no parameter 'num_topics'; use topics=…;"),
    (lambda t: t.LogisticRegression(C=2), TypeError, "has no parameter 'C'; use reg=… (λ = 1/C);"),
    (lambda t: t.LogisticRegression(reg="l1").check_params(), ValueError,
     "reg must be a finite number >= 0, got 'l1'; the regulariser, 'l2' or 'l1', is penalty=… (tux2 run lr --reg)"),
])
def test_an_unknown_keyword_names_the_parameters_and_the_flag_it_may_be(make, kind, expect):
    import tux2
    with pytest.raises(kind) as e:
        make(tux2)
    assert expect in str(e.value)


@pytest.mark.parametrize("cls", ["LogisticRegression", "LinearRegression", "FM", "LinearSVM"])
def test_the_glms_lam_names_reg_and_not_their_penalty(cls):
    """MF's λ is --reg, the GLMs' --lam, so lam → reg was added for MF; a GLM, whose --reg is
    its penalty, must not be told 'use penalty=…' for lam (its own flag's hint says reg=…)."""
    import tux2
    with pytest.raises(TypeError) as e:
        getattr(tux2, cls)(lam=0.1)
    assert "is reg=…" in str(e.value) and "penalty=…" not in str(e.value), str(e.value)


@pytest.mark.slow
def test_renamed_flags_reach_their_parameters(tmp_path):
    """--lam is reg, lr's --reg is penalty (the estimators' ``flags``), as model.json shows."""
    import json
    from tux2.cli import main
    data = tmp_path / "d.svm"
    data.write_text("1 1:0.5 2:1\n-1 1:1\n1 2:1\n-1 1:1 2:0.2\n")
    for algo, flags, want in (("lr", ["--reg", "l1", "--lam", "0.5"], {"penalty": "l1", "reg": 0.5}),
                              ("blockpg", ["--lam", "0.25"], {"reg": 0.25})):
        assert main(["run", algo, str(data), "--epochs", "1", "--quiet", "--out", str(tmp_path / algo), *flags]) == 0
        meta = json.loads((tmp_path / algo / "model.json").read_text())
        assert {k: meta[k] for k in want} == want


@pytest.fixture(scope="module")
def two_mf_models():
    """An MF model with integer ids and one with string ids ('u0' …, 'i0' …)."""
    import tux2
    rng = np.random.default_rng(0)
    pairs = {(int(a), int(b)): float(c) for a, b, c in
             zip(rng.integers(0, 20, 300), rng.integers(0, 15, 300), rng.uniform(1, 5, 300))}
    u, i = (np.array(x) for x in zip(*pairs))
    r = np.array(list(pairs.values()))
    return (tux2.MF(k=2, epochs=1).fit((u, i, r)),
            tux2.MF(k=2, epochs=1).fit(([f"u{x}" for x in u], [f"i{x}" for x in i], r)))


@pytest.mark.parametrize("strings, call, expect", [
    (False, lambda m: m.predict([1.5], [2]), "MF.predict: users: 1.5 (position 0) is not an id of this model, "
                                             "whose ids are integers"),
    (False, lambda m: m.predict([1, 2], [2, np.nan]), "MF.predict: items: nan (position 1) is not an id"),
    (False, lambda m: m.predict(np.array([[1, 2]]), [[2, 3]]), "users must be an id or a 1-D sequence of ids, "
                                                               "got an array of shape (1, 2)"),
    (False, lambda m: m.predict(None, [2]), "MF.predict: users must be an id or a 1-D sequence of ids, got None"),
    (False, lambda m: m.predict([None], [2]), "users: None (position 0) is not an id"),
    (False, lambda m: m.predict(["a"], ["2"]), "users: 'a' (position 0) is not an id of this model, whose ids are "
                                               "integers"),
    (False, lambda m: m.predict([True], [2]), "users: True (position 0) is not an id"),
    (False, lambda m: m.recommend([1.5]), "MF.recommend: users: 1.5 (position 0) is not an id"),
    (False, lambda m: m.recommend([[1, 2]]), "MF.recommend: users must be an id or a 1-D sequence of ids"),
    (False, lambda m: m.recommend([1], k=-1), "MF.recommend: k must be an integer >= 0, got -1"),
    (True, lambda m: m.predict([1], ["i2"]), "users: 1 (position 0) is not an id of this model, whose ids are "
                                             "strings (such as 'u0')"),
    (True, lambda m: m.recommend([3]), "MF.recommend: users: 3 (position 0) is not an id of this model"),
    (True, lambda m: m.predict([["u1"]], ["i1"]), "got an array of shape (1, 1)"),
])
def test_odd_ids_from_python_are_a_clear_value_error(two_mf_models, strings, call, expect):
    with pytest.raises(ValueError) as e:
        call(two_mf_models[strings])
    assert expect in str(e.value)


def test_ids_as_numbers_a_file_writes_still_work(two_mf_models):
    m, s = two_mf_models
    assert np.array_equal(m.predict([1.0, "3", np.int32(4)], np.array([2.0, 2.0, 5.0])),
                          m.predict([1, 3, 4], [2, 2, 5]))
    assert np.array_equal(m.recommend(np.array([1, 3]), k=2)[1], m.recommend(["1", 3.0], k=2)[1])
    assert s.predict("u1", "i2").shape == (1,) and np.isnan(s.predict(["nobody"], ["i2"], unknown="skip")[0])


X4 = np.random.default_rng(0).random((60, 4))


@pytest.mark.parametrize("fit, expect", [
    # a TypeError ("'int' object is not iterable"; "cannot load a ndarray") or a scipy or numpy ValueError before
    (lambda t: t.LDA(stop_words=5, iterations=1).fit(["apples and pears"]),
     "stop_words is 'english', 'none', a file or a list of words, not 5"),
    (lambda t: t.LDA(iterations=1).fit(np.array([["a", 1], ["c", 2]], dtype=object)),     # (of str: token lists)
     "arrays: a 2-D array of object (2, 2): LDA takes texts (a list or 1-D array, one document each), documents "
     "split into tokens (a list of token lists, or a 2-D array of str, a document a row) or a document × word "
     "count matrix"),
    (lambda t: t.LDA(iterations=1).fit(5), "documents: an int: LDA takes texts (strings, one a document), documents "
     "split into tokens"),
    (lambda t: t.MF(epochs=1).fit(np.array([["a", "b"], ["c", "d"]])),
     "arrays: MF.fit takes (user, item, rating) rows, (users, items, ratings), a DataFrame, a BipartiteGraph or a "
     "rating file, or X of (user, item) rows with y; got an array of shape (2, 2)"),
    (lambda t: t.MF(epochs=1).fit(np.zeros((3, 3, 3))), "MF.fit takes (user, item, rating) rows"),
    (lambda t: t.MF(epochs=1).fit([["a", "b", 4], ["c", "d", "x"]]),
     "arrays: the rating of row 1 (column 3) is 'x': ratings are numbers"),
    (lambda t: t.LogisticRegression(epochs=1).fit([["1", "2"], ["3", "x"]], [0, 1]),
     "matrix: X holds 'x' at row 1, column 1: features are numbers; encode categories first"),
    (lambda t: t.BlockPG(epochs=1).fit(np.array([["a", "b"], ["c", "d"]]), [0, 1]), "matrix: X holds 'a' at row 0"),
    (lambda t: t.LogisticRegression(epochs=1).fit(__import__("pandas").DataFrame({"age": [1., 2.], "city": ["x", "y"]}),
                                                  [0, 1]),                  # it was numpy's "could not convert string"
     "matrix: X holds 'x' at row 0, column 1 ('city'): features are numbers; encode categories first"),
    (lambda t: t.LogisticRegression(epochs=1).fit(X4, np.c_[X4[:, 0] > .5, X4[:, 1] > .5]),
     "y holds one label per sample, shape (60,) or (60, 1); got (60, 2)"),       # it said 'y is None'
    (lambda t: t.LogisticRegression(epochs=1).fit(X4, X4[:, 0] > .5).predict([["a", 1, 1, 1]]), "X holds 'a'"),
])
def test_wrong_types_from_python_are_input_errors_that_say_what_is_wrong(fit, expect):
    import tux2
    with pytest.raises(tux2.InputError) as e:
        fit(tux2)
    assert expect in str(e.value)


@pytest.mark.parametrize("data, expect", [
    (np.array([[1, 2, 3 + 1j], [3, 4, 5]]), "src ids are complex numbers"),        # the imaginary parts were dropped
    (([1, 2], [3, 4], [1 + 2j, 3]), "arrays: edge value (1+2j) at edge 0 is not a real number"),
    (([1, 2], [3, 4], ["a", "b"]), "arrays: edge value 'a' at edge 0 is not a real number"),    # numpy's ValueError
    (([1, 2], [3, 4], [None, 2]), "arrays: edge value None at edge 0 is not a real number"),
    (__import__("pandas").Series([1, 2, 3]), "cannot load a Series"),                     # an AttributeError
    ((np.array([object(), 1], dtype=object), [3, 4], [1.0, 2.0]),      # was the id '<object object at 0x…>'
     "id at index 0 is <object object at"),
    ((np.array([[1, 2], 1], dtype=object), [3, 4], [1.0, 2.0]), "id at index 0 is [1, 2] (of type list)"),
])
def test_ratings_that_are_no_real_numbers_are_refused(data, expect):
    import tux2
    with pytest.raises(tux2.InputError) as e:
        tux2.MF(k=2, epochs=1).fit(data)
    assert expect in str(e.value)


def test_uint64_ids_beyond_int64_are_found_and_too_large_ids_are_unknown():
    """64-bit hashes as ids: the user 2^64 − 1 was cast to int64 (−1) when predicted, so it
    was unknown and got the baseline; an id beyond any integer type raised OverflowError."""
    import tux2
    rng = np.random.default_rng(0)
    users = np.array([2**64 - 1, 2**63, 5], np.uint64)[rng.integers(0, 3, 60)]
    items = rng.integers(1, 30, 60).astype(np.uint64)
    users, items = np.unique(np.c_[users, items], axis=0).T
    m = tux2.MF(k=2, epochs=5, duplicates="sum").fit((users, items, rng.uniform(1, 5, len(users))))
    big = m.predict([2**64 - 1, 2**63], [items[0], items[0]])
    unknown = m.predict([7], [items[0]])
    assert (big != unknown).all()
    assert m.predict([2**70], [items[0]]) == m.predict([float(2**64)], [items[0]]) == unknown


def test_a_rating_beyond_float32_from_python_is_named_by_its_edge():
    """A file's reader names the line; from arrays it was a SchemaError about the context's 'mu'."""
    import tux2
    r = np.linspace(1, 5, 12)
    r[3] = 1e300
    with pytest.raises(tux2.InputError, match=r"arrays: rating 1e\+300 at edge 3 is beyond the float32 range"):
        tux2.MF(k=2, epochs=1).fit((np.arange(12) % 4, np.arange(12) // 4, r))


@pytest.mark.parametrize("X", [X4 + 1j, __import__("scipy.sparse").sparse.csr_matrix(X4 + 1j)])
def test_complex_features_are_refused_not_cast(X):
    import tux2
    with pytest.raises(tux2.InputError, match="matrix: X holds complex numbers"):
        tux2.LogisticRegression(epochs=1).fit(X, X4[:, 0] > .5)


@pytest.mark.parametrize("n", [-1, 2.5, True])
def test_topic_words_refuses_a_count_that_is_no_count(n):
    """topic_words(-1) sliced each topic's rarest word off; 2.5 was a TypeError of numpy's slicing."""
    import tux2
    m = tux2.LDA(topics=2, iterations=2).fit(["apple banana melon"] * 5 + ["goal team coach"] * 5)
    with pytest.raises(ValueError, match=f"LDA.topic_words: n must be an integer >= 0, got {n}"):
        m.topic_words(n)


def test_an_integer_context_field_beyond_its_type_is_named():
    # tux2 run lda d.txt --optimize-interval 99999999999999999999 stopped with an OverflowError
    # ('this is a bug in tux2', exit 70) from numpy's assignment into the int64 field
    from tux2 import ContextSpec
    from tux2.errors import SchemaError
    spec = ContextSpec({"every": "i8", "lr": "f4"}, init={"every": 10, "lr": 0.1})
    with pytest.raises(SchemaError, match=r"context field 'every' is 99999999999999999999, beyond the range "
                                          r"of the int64 it is kept in \(-9223372036854775808 … "):
        spec.new(every=10**20 - 1)
    assert spec.new(every=2**63 - 1)["every"][0] == 2**63 - 1
