"""Dense tables of samples (tux2.tables): the CSV/TSV files UCI and Kaggle ship (HIGGS,
covtype, Pima) read by every linear model, its test and predict inputs, and tux2 info,
as LightGBM and xgboost read them. The same samples as a table and as libsvm must give
the same model bit for bit; bad fields are named by line and column."""
import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

import tux2
from tests.conftest import run_cli
from tux2 import loaders, tables
from tux2.errors import InputError

NAMES = ["Pregnancies", "Glucose", "BloodPressure", "SkinThickness", "Insulin", "BMI", "Pedigree", "Age"]


def _samples(n=300, seed=3):
    """Pima-shaped samples: unscaled columns, some zeros (left out of the graph), 0/1 labels."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 17, n), rng.integers(40, 200, n), rng.integers(0, 120, n),
                         rng.integers(0, 60, n), rng.integers(0, 600, n), rng.normal(32, 7, n).round(1),
                         rng.gamma(2, 0.25, n).round(3), rng.integers(21, 80, n)]).astype(float)
    X[rng.random(X.shape) < 0.1] = 0
    y = (X[:, 1] + 30 * X[:, 6] + rng.normal(0, 20, n) > 130).astype(int)
    return X, y


def _write_table(path, X, y, sep=",", header=True, label="last", compress=False):
    lines = []
    if header:
        names = NAMES + ["Outcome"] if label == "last" else ["Outcome"] + NAMES
        lines.append(sep.join(names))
    for row, lab in zip(X, y):
        cols = [f"{v:g}" for v in row]
        lines.append(sep.join(cols + [str(lab)] if label == "last" else [str(lab)] + cols))
    data = ("\n".join(lines) + "\n").encode()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(data)
    return str(path)


def _write_libsvm(path, X, y):
    with open(path, "w") as f:
        for row, lab in zip(X, y):
            f.write(f"{lab} " + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(row) if v != 0) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    X, y = _samples()
    return {"X": X, "y": y, "dir": d, "csv": _write_table(d / "pima.csv", X, y),
            "svm": _write_libsvm(d / "pima.svm", X, y)}


def test_the_reader_matches_a_plain_python_reading(tmp_path):
    """Every separator and label position: the graph holds the non-zero features in
    column order, the labels the label column, as Python's own split reads them."""
    rng = np.random.default_rng(0)
    for sep, label in ((",", 0), ("\t", 3), (" ", -1), (";", 2), (", ", 1)):
        M = rng.choice([0.0, 1.0, -2.5, 3e-3, 1e6, 0.125], size=(25, 5))
        text = "\n".join(sep.join(f"{v:.9g}" for v in row) for row in M) + "\n"
        path = tmp_path / "t.txt"
        path.write_text(("# a comment\n" if label == 2 else "") + text)
        g, y = loaders.load_libsvm(str(path), label_column=label + 1 if label >= 0 else "last")
        rows = [[float(t) for t in line.replace(",", " ").replace(";", " ").split()] for line in text.splitlines()]
        j = label % 5
        want_y = [r[j] for r in rows]
        want = sorted((i, c, v) for i, r in enumerate(rows) for c, v in enumerate(r[:j] + r[j + 1:]) if v != 0)
        assert y.tolist() == want_y, sep
        assert sorted(zip(g.src.tolist(), g.dst.tolist(), g.values.tolist())) == want, sep
        assert (g.n_src, g.n_dst) == (25, 4)


def test_a_table_trains_the_model_of_its_libsvm_file(data, tmp_path):
    """Pima as Kaggle ships it (header, label 'Outcome' last) and as libsvm: one model;
    the run says how it read the table; tab-separated and gzip on standard input too."""
    X, y = data["X"], data["y"]
    r = run_cli("run", "lr", data["csv"], "--out", str(tmp_path / "t"), "--epochs", "3")
    assert r.returncode == 0, r.stderr
    assert "read as: a dense comma-separated table of 9 columns, with a header line; labels in column 9 " \
           "('Outcome') (by its name" in r.stdout
    r = run_cli("run", "lr", data["svm"], "--out", str(tmp_path / "s"), "--epochs", "3")
    assert r.returncode == 0, r.stderr
    same = open(tmp_path / "s" / "weights.npz", "rb").read()
    assert open(tmp_path / "t" / "weights.npz", "rb").read() == same
    tsv = _write_table(tmp_path / "p.tsv.gz", X, y, sep="\t", header=False, label="first", compress=True)
    with open(tsv, "rb") as f:
        r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "lr", "-", "--out", str(tmp_path / "g"),
                            "--epochs", "3"], stdin=f, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "tab-separated table of 9 columns; labels in column 1 (the first" in r.stdout
    assert open(tmp_path / "g" / "weights.npz", "rb").read() == same
    meta = json.loads(open(tmp_path / "t" / "model.json").read())
    assert meta["feature_names"] == NAMES and meta["label_column_used"] == ["Outcome", "last"]


def test_python_fit_predict_and_workers_on_a_table(data, tmp_path):
    """fit(path), a test table read in the training file's label column, predict on a
    table with and without the label column, save/load; two workers give the model of
    two partitions in one process."""
    X, y = data["X"], data["y"]
    test = _write_table(tmp_path / "test.csv", X[:50], y[:50])
    bare = tmp_path / "bare.csv"
    bare.write_text("\n".join(",".join(f"{v:g}" for v in row) for row in X[:50]) + "\n")
    m = tux2.LogisticRegression(epochs=3).fit(data["csv"], test)
    assert m.label_column_ == ["Outcome", "last"] and list(m.feature_names_in_) == NAMES
    assert m.history_[-1]["test_accuracy"] == pytest.approx(m.score(test))
    ref = tux2.LogisticRegression(epochs=3).fit(X, y)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.predict(str(bare)), ref.predict(X[:50]))
    m.save(tmp_path / "m")
    back = tux2.LogisticRegression.load(tmp_path / "m")
    assert back.label_column_ == ["Outcome", "last"] and back.score(test) == m.score(test)
    r = run_cli("predict", str(tmp_path / "m"), test)
    assert r.returncode == 0 and json.loads(r.stderr)["accuracy"] == pytest.approx(m.score(test)), r.stderr
    r = run_cli("predict", str(tmp_path / "m"), str(bare))
    assert r.returncode == 0 and "accuracy" not in json.loads(r.stderr), r.stderr
    assert len(r.stdout.splitlines()) == 51
    two = tux2.LogisticRegression(epochs=3).fit(data["csv"], workers=2)
    one = tux2.LogisticRegression(epochs=3).fit(data["csv"], partitions=2)
    np.testing.assert_array_equal(two.coef_, one.coef_)


def test_the_label_column_by_number_name_or_last(data, tmp_path):
    X, y = data["X"], data["y"]
    path = _write_table(tmp_path / "cov.data", X, y + 1, header=False)       # covtype: labels 1, 2 last
    r = run_cli("run", "lr", path, "--epochs", "1")
    assert r.returncode == 2 and "column 1, the labels (the first), holds" in r.stderr \
        and "--label-column N|NAME|last" in r.stderr, r.stderr
    # a rating file given to lr (a new user's try): said so, and one punctuation mark ('from a guess?.')
    ratings = tmp_path / "ratings.tsv"
    ratings.write_text("user\titem\trating\ttimestamp\n" + "".join(f"{u}\t{i}\t{1 + (u * i) % 5}\t88{u}{i}\n"
                                                                  for u in range(1, 30) for i in (3, 7, 9)))
    r = run_cli("run", "lr", str(ratings), "--epochs", "1")
    assert r.returncode == 2 and "from a guess? --label-column" in r.stderr and "?." not in r.stderr \
        and "the header names users and items, as a rating file's: tux2 run mf reads it" in r.stderr, r.stderr
    for spec in ("last", "9", "-1"):
        m = tux2.LogisticRegression(epochs=2, label_column=spec).fit(path)
        assert m.label_column_ == "last" and m.classes_.tolist() == [1, 2]
    m = tux2.LinearSVM(epochs=2, label_column="outcome").fit(data["csv"])      # by name, any case
    assert m.label_column_ == ["Outcome", "last"] and m.n_features_in_ == 8


@pytest.mark.parametrize("text, args, message", [
    ("a,b,label\n1,2,0\n3,,1\n", (), "t.csv:3: empty field in column 2 ('b')"),
    ("a,b,label\n1,2,0\n3,NA,1\n", (), "t.csv:3: missing value 'NA' in column 2 ('b'): impute it (pandas' fillna"),
    ("a,b,label\n1,2,0\n3,x,1\n", (), "t.csv:3: malformed value in column 2 ('b') (expected a number; a missing"),
    ("a,b,label\n1,2,0\n3,4,1,5\n", (), "t.csv:3: 4 columns where the table has 3"),
    ("a,b,label\n1,2,0\n3,4\n", (), "t.csv:3: 2 columns where the table has 3"),
    ("1,s,0\n3,b,1\n", ("--label-column", "1"), "t.csv:1: column 2 holds words: the linear models read numbers"),
    ("a,b,label\n1,2,0\n3,4,\n", (), "t.csv:3: empty label in column 3 ('label') (two separators in a row): a "
     "sample without its label cannot train: leave the line out"),
    ("1,2,0\n3,4,inf\n", ("--label-column", "3"), "t.csv:2: NaN or infinite label in column 3: leave the line out"),
    ("a,b,label\n1,2,0\n3,?,1\n", (), "t.csv:3: missing value '?' in column 2 ('b'): impute it (pandas' fillna"),
    ("a,b,label\n1,2,0\n3,4,?\n5,6,1\n", (), "t.csv:3: missing label '?' in column 3 ('label'): a sample without"),
    ("a,b,label\n1,2,no\n3,4,yes\n5,6,NA\n", (), "t.csv:4: missing label 'NA' in column 3 ('label'): a sample"),
    ("1,2,0\n3,4,1\n", ("--label-column", "4"), "(--label-column, label_column=) 4: the table has 3 columns"),
    ("a,b,c\n1,2,0\n", ("--label-column", "d"), "'d' names no column of this file (the header's names are a, b"),
    ("1 1:2\n0 2:1\n", ("--label-column", "1"), "applies to tables of numbers"),
    ("y;a;b\n1;2;3\n0;1,5;2\n", (), "t.csv:3: a decimal comma in a semicolon-separated line"),
    ('a,b,label\n1,2,0\n3,4,1\n"1,5",1,0\n', (), 't.csv:4: a decimal comma in a quoted field ("1,5")'),
    ("a,b,label\n1,2,0\n3 5,4,1\n", (), "t.csv:3: a space inside column 1 ('a')'s field: only commas"),
    ('a,b,label\n"0,39","1,93",1\n"0,5","2,5",0\n', (), "t.csv:1: the header line has 3 names and the first data line 5"),
    ("39, State-gov, 77516, Bachelors, <=50K\n50, Private, 83311, HS-grad, >50K\n", (),     # UCI's adult
     "t.csv: a table with 3 columns of words (2 'State-gov', 4 'Bachelors', 5 '<=50K'): the linear models read"),
    # Kaggle's Titanic: a quoted name holds a comma and spaces (it was split into 'Braund', 'Mr.', 'Owen' …, shown
    # as 7 columns of words), and a missing age is no word
    ('PassengerId,Survived,Name,Sex,Age,Fare\n1,0,"Braund, Mr. Owen Harris",male,22,7.25\n'
     '2,1,"Cumings, Mrs. John",female,,71.28\n', (),
     "t.csv: a table with 2 columns of words (3 ('Name'), 4 ('Sex')): the linear models read"),
    # the first data line's last value missing (pandas' to_csv of a NaN there): that line's field, not the
    # header's names ('the header line has 3 names and the first data line 2 columns') nor the next line's
    ("label,a,b\n1,0.5,\n0,2,1\n", (), "t.csv:2: empty field in column 3 ('b') at the end of the line: a missing"),
    ("label\ta\tb\n1\t0.5\t\n0\t2\t1\n", (), "t.csv:2: empty field in column 3 ('b') at the end of the line"),
    ("1,0.5,\n0,2,1\n1,3,1\n", (), "t.csv:1: empty field in column 3 at the end of the line: a missing value?"),
    ("a,b,label\n", (), "t.csv: no samples found: the file's one line (a b label) reads as a header line"),
    ("a,b,label\n1,2,0\n3,4,1\n", ("--zero-based",), "t.csv: --zero-based (zero_based=True) sets the index base "
     "of a libsvm file's features; this is a table"),
    ("a,b,label\n1,2,0\n3,4,1\n", ("--one-based",), "t.csv: --one-based (zero_based=False) sets"),
])
def test_bad_tables_are_named_by_line_and_column(tmp_path, text, args, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    r = run_cli("run", "lr", str(path), *args, "--epochs", "1")
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_pandas_row_index_is_no_feature(data, tmp_path):
    """DataFrame.to_csv keeps the index by default: a first column with an empty header
    name. It is skipped, so the model is the one of the file without it; predict finds
    the labels by name in a file without the index."""
    import pandas as pd
    frame = pd.read_csv(data["csv"])
    frame.to_csv(tmp_path / "idx.csv")
    frame.drop(columns="Outcome").to_csv(tmp_path / "bare.csv")
    r = run_cli("run", "lr", str(tmp_path / "idx.csv"), "--out", str(tmp_path / "m"), "--epochs", "3")
    assert r.returncode == 0 and "skipped as row numbers or ids: column 1 (unnamed: pandas' row index); labels in column 10" in r.stdout
    m = tux2.LogisticRegression(epochs=3).fit(data["csv"])
    np.testing.assert_array_equal(tux2.LogisticRegression.load(tmp_path / "m").coef_, m.coef_)
    r = run_cli("predict", str(tmp_path / "m"), data["csv"], "-o", str(tmp_path / "p1"))
    assert r.returncode == 0 and json.loads(r.stdout)["accuracy"] == pytest.approx(m.score(data["csv"]))
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "bare.csv"), "-o", str(tmp_path / "p2"))
    assert r.returncode == 0 and open(tmp_path / "p1").read() == open(tmp_path / "p2").read(), r.stderr
    r = run_cli("run", "lr", str(tmp_path / "idx.csv"), "--label-column", "1")
    assert r.returncode == 2 and "the label column 1 numbers the rows (pandas' row index" in r.stderr


def test_headers_as_pandas_and_uci_write_them(data, tmp_path):
    """Names with spaces and quoted commas (UCI's winequality: '"fixed acidity";…'), a
    header of pandas' default names (0, 1, 2 … with and without 'label'), a byte-order
    mark, a Kaggle 'Id' column: each gives the model of the plain file, bit for bit."""
    import pandas as pd
    X, y = data["X"], data["y"]
    ref = tux2.LogisticRegression(epochs=2).fit(data["csv"])
    frame = pd.DataFrame(X, columns=[f"{n} (unit, x)" for n in NAMES]).assign(Outcome=y)
    frames = {"spaces.csv": frame, "int_names.csv": pd.DataFrame(np.column_stack([X, y])),
              "int_label.csv": pd.DataFrame(X).assign(label=y),
              "kaggle.csv": pd.DataFrame(X, columns=NAMES).assign(Outcome=y).rename_axis("Id").reset_index()}
    for name, f in frames.items():
        f.to_csv(tmp_path / name, index=False, sep=";" if name == "spaces.csv" else ",")
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + open(data["csv"], "rb").read())
    for name in [*frames, "bom.csv"]:
        m = tux2.LogisticRegression(epochs=2, label_column="last" if name == "int_names.csv" else None)
        m.fit(str(tmp_path / name))
        np.testing.assert_array_equal(m.coef_, ref.coef_, err_msg=name)
        assert m.n_features_in_ == 8 and m.history_[-1]["objective"] == ref.history_[-1]["objective"], name
    r = run_cli("run", "lr", str(tmp_path / "kaggle.csv"), "--epochs", "1")
    assert "skipped as row numbers or ids: column 1 ('Id')" in r.stdout, r.stdout + r.stderr


def test_an_id_column_of_distinct_whole_numbers_is_no_feature(data, tmp_path):
    """Titanic's 'PassengerId', a bank's 'CustomerId', 'customer_id': named as some thing's
    id and distinct whole numbers, an identifier, skipped as 'Id' is (it trained as a
    feature, of values in the millions). 'paid' and a 'store_id' that repeats are features."""
    import pandas as pd
    X, y = data["X"], data["y"]
    ref = tux2.LogisticRegression(epochs=2).fit(data["csv"])
    n = len(y)
    for name in ("PassengerId", "CustomerId", "customer_id", "user ID"):
        f = pd.DataFrame(X, columns=NAMES).assign(Outcome=y)
        f.insert(0, name, 15_600_000 + np.random.default_rng(0).permutation(n))
        f.to_csv(tmp_path / "ids.csv", index=False)
        m = tux2.LogisticRegression(epochs=2).fit(str(tmp_path / "ids.csv"))
        np.testing.assert_array_equal(m.coef_, ref.coef_, err_msg=name)
    for name, values in (("paid", np.arange(n)), ("store_id", np.arange(n) % 7)):
        f = pd.DataFrame(X, columns=NAMES).assign(Outcome=y)
        f.insert(0, name, values)
        f.to_csv(tmp_path / "kept.csv", index=False)
        assert tux2.LogisticRegression(epochs=2).fit(str(tmp_path / "kept.csv")).n_features_in_ == 9, name
    r = run_cli("run", "lr", str(tmp_path / "ids.csv"), "--epochs", "1")
    assert "skipped as row numbers or ids: column 1 ('user ID')" in r.stdout, r.stdout + r.stderr


def test_tables_in_other_columns_than_fit_saw_are_refused(data, tmp_path):
    """A predict or test table whose header orders the features otherwise, or with a
    feature more, is refused (it would score other features); one without a header has
    its labels where training had them."""
    import pandas as pd
    m = tux2.LogisticRegression(epochs=2).fit(data["csv"])
    frame = pd.read_csv(data["csv"])
    frame[frame.columns[::-1]].to_csv(tmp_path / "reversed.csv", index=False)
    frame.assign(Extra=1.0).to_csv(tmp_path / "wider.csv", index=False)
    frame.to_csv(tmp_path / "bare.csv", index=False, header=False)
    with pytest.raises(InputError, match="not those fit saw, in its order \\('Age' where fit saw 'Pregnancies'"):
        m.predict(str(tmp_path / "reversed.csv"))
    with pytest.raises(InputError, match="9 feature columns where fit saw 8"):
        m.score(str(tmp_path / "wider.csv"))
    assert m.score(str(tmp_path / "bare.csv")) == m.score(data["csv"])
    with pytest.raises(InputError, match="not those fit saw"):
        tux2.LogisticRegression(epochs=1).fit(data["csv"], str(tmp_path / "reversed.csv"))
    df = tux2.LogisticRegression(epochs=2, label_column="Outcome").fit(frame)       # a DataFrame's labels by name
    np.testing.assert_array_equal(df.coef_, m.coef_)


def test_labels_that_are_words(tmp_path):
    """UCI's sonar ('R', 'M' last) and iris ('Iris-setosa' …, a blank line at the end):
    the one column of words is the labels, kept as strings, as from Python's fit(X, y)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 6)).round(3)
    y = np.where(X[:, 0] - X[:, 2] > 0, "R", "M")
    path = tmp_path / "sonar.all-data"
    path.write_text("".join(",".join(f"{v:g}" for v in x) + f",{c}\n" for x, c in zip(X, y)) + "\n")
    m = tux2.LogisticRegression(epochs=3).fit(str(path))
    assert m.label_column_ == "last" and m.classes_.tolist() == ["M", "R"]
    ref = tux2.LogisticRegression(epochs=3).fit(X, y)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    assert m.predict(str(path)).tolist() == ref.predict(X).tolist() and m.score(str(path)) == ref.score(X, y)
    names = np.array(["Iris-setosa", "Iris-versicolor", "Iris-virginica"])[np.arange(120) % 3]
    tsv = tmp_path / "iris.tsv"
    tsv.write_text("a\tb\tc\td\te\tf\tspecies\n" + "".join("\t".join(f"{v:g}" for v in x) + f'\t"{c} x" \n'
                                                              for x, c in zip(X, names)))
    r = run_cli("run", "softmax", str(tsv), "--epochs", "2", "--out", str(tmp_path / "sm"))
    assert r.returncode == 0 and "labels in column 7 ('species') (by its name" in r.stdout, r.stderr
    meta = json.loads(open(tmp_path / "sm" / "model.json").read())
    assert meta["labels"] == ["Iris-setosa x", "Iris-versicolor x", "Iris-virginica x"]
    spaced = tmp_path / "spaced.csv"            # a comma-separated file's quoted class names with spaces
    spaced.write_text("a,b,c,d,e,f,species\n" + "".join(",".join(f"{v:g}" for v in x) + f', "{c.replace("-", " ")}"\n'
                                                         for x, c in zip(X, names)))
    sm = tux2.Softmax(epochs=2).fit(str(spaced))
    assert sm.classes_.tolist() == ["Iris setosa", "Iris versicolor", "Iris virginica"]
    res = json.loads(run_cli("info", str(tsv), "--json").stdout)
    assert res["format"] == "table" and res["labels"] == {"Iris-setosa x": 40, "Iris-versicolor x": 40,
                                                          "Iris-virginica x": 40}


def test_softmax_predictions_name_each_class_probability_column(tmp_path):
    """``tux2 predict`` of a softmax model: a column ``p_CLASS`` per class, as the class
    is written in the label column (it was ``psetosa``)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2)).round(3)
    names = np.array(["setosa", "versicolor", "virginica"])[np.arange(30) % 3]
    path = tmp_path / "iris.csv"
    path.write_text("a,b,species\n" + "".join(f"{x[0]:g},{x[1]:g},{c}\n" for x, c in zip(X, names)))
    assert run_cli("run", "softmax", str(path), "--epochs", "1", "--out", str(tmp_path / "m")).returncode == 0
    r = run_cli("predict", str(tmp_path / "m"), str(path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# label p_setosa p_versicolor p_virginica"
    assert len(lines) == 31 and all(len(line.split()) == 4 and line.split()[0] in names for line in lines[1:])


@pytest.mark.parametrize("model", ["lr", "softmax"])
def test_class_names_with_a_space_make_the_predictions_tab_separated(tmp_path, model):
    """A table's classes 'Iris setosa' …: predict's fields are tab-separated, as MF's
    are for ids with a space ('Iris setosa 0.65 0.13 0.21' had one field too many)."""
    X = np.random.default_rng(4).normal(size=(30, 2)).round(3)
    names = np.array(["Iris setosa", "Iris versicolor", "Iris virginica"][:2 if model == "lr" else 3])
    names = names[np.arange(30) % len(names)]
    path = tmp_path / "iris.csv"
    path.write_text("a,b,species\n" + "".join(f'{x[0]:g},{x[1]:g},"{c}"\n' for x, c in zip(X, names)))
    assert run_cli("run", model, str(path), "--epochs", "1", "--out", str(tmp_path / "m")).returncode == 0
    r = run_cli("predict", str(tmp_path / "m"), str(path))
    assert r.returncode == 0, r.stderr
    lines = [line.split("\t") for line in r.stdout.splitlines()]
    assert lines[0] == (["# label", "score", "probability"] if model == "lr" else
                        ["# label", "p_Iris setosa", "p_Iris versicolor", "p_Iris virginica"])
    assert len(lines) == 31 and all(len(f) == len(lines[0]) and f[0] in names for f in lines[1:])


def test_both_row_numbers_skipped_and_predict_errors_name_the_file(data, tmp_path):
    import pandas as pd
    frame = pd.read_csv(data["csv"])
    frame.rename_axis("Id").reset_index().to_csv(tmp_path / "both.csv")       # pandas' index, then an Id
    m = tux2.LogisticRegression(epochs=2).fit(str(tmp_path / "both.csv"))
    np.testing.assert_array_equal(m.coef_, tux2.LogisticRegression(epochs=2).fit(data["csv"]).coef_)
    m.save(tmp_path / "m")
    frame[frame.columns[::-1]].to_csv(tmp_path / "reversed.csv", index=False)
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "reversed.csv"))
    assert r.returncode == 2 and f"tux2: error: {tmp_path / 'reversed.csv'}: the header's feature columns" in r.stderr


def test_info_reads_a_table_as_the_linear_models_do(data, tmp_path):
    res = json.loads(run_cli("info", data["csv"], "--json").stdout)
    assert res["format"] == "table" and res["labels"] == {"0": int((data["y"] == 0).sum()),
                                                           "1": int((data["y"] == 1).sum())}
    assert "labels in column 9 ('Outcome')" in res["read_as"] and res["sample"]["vertices_with_edges"] == 300
    assert res["density"] == pytest.approx(np.count_nonzero(data["X"]) / data["X"].size)
    libsvm = json.loads(run_cli("info", data["svm"], "--json").stdout)      # 1-based: no feature column 0
    assert libsvm["density"] == res["density"] and libsvm["feature"]["ids_declared"] == 8
    ratings = tmp_path / "r.csv"
    ratings.write_text("userId,movieId,rating,timestamp\n1,2,3.5,964982703\n1,3,4,964981247\n")
    assert json.loads(run_cli("info", str(ratings), "--json").stdout)["format"] == "edges"     # not a table
    rng = np.random.default_rng(1)              # ratings with more columns, named or not, and no header at all
    rows = [(int(rng.integers(1, 900)), int(rng.integers(1, 1600)), 0.5 * int(rng.integers(1, 11)),
             int(rng.integers(9e8, 13e8)), int(rng.integers(10, 70)), int(rng.integers(10000, 99999))) for _ in range(60)]
    for name, head, cols in (("hdr6.csv", "user_id,item_id,rating,timestamp,age,zip\n", 6), ("nohdr.csv", "", 4),
                             ("epinions.txt", "", 6)):
        sep = " " if name.endswith(".txt") else ","
        (tmp_path / name).write_text(head + "".join(sep.join(map(str, r[:cols])) + "\n" for r in rows))
        assert json.loads(run_cli("info", str(tmp_path / name), "--json").stdout)["format"] == "edges", name


def test_tables_are_told_from_other_inputs():
    head = b"0 1:2 3:1\n1 2:1\n"
    assert tables.table_format(head, "x") is None                     # libsvm
    assert tables.table_format(b"0\tgo until jurong point\n1\tok lar\n", "x") is None     # labelled text
    assert tables.table_format(b"1\n2\n", "x") is None                # one column
    with pytest.raises(InputError, match="label_column=\\) 0: the table has 2 columns"):
        tables.table_format(b"1,2\n3,4\n", "x", 0)


@pytest.mark.parametrize("model", [tux2.Softmax, tux2.LogisticRegression, tux2.LinearSVM, tux2.BlockPG])
def test_a_missing_label_is_no_class(tmp_path, model):
    """UCI marks a missing value '?': in a column of class names it became a class of its
    own (softmax learnt and predicted '?'); every model now names its line."""
    path = tmp_path / "iris.data"
    rows = [f"{i % 7}.{i % 3},{i % 5}.1,{['setosa', 'virginica'][i % 2]}" for i in range(30)]
    rows[11] = "5.1,3.5,?"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError) as e:
        model(epochs=1).fit(str(path))
    assert str(e.value).startswith(f"{path}:12: missing label '?' in column 3: a sample without its label"), e.value


@pytest.mark.parametrize("sep", [",", ";"])
def test_a_quoted_label_may_hold_the_separator(tmp_path, sep):
    """'"setosa, var"' in a comma-separated table was split in two and the table refused
    as one of two columns of words; it is one label, first or last."""
    names = [f'"setosa{sep} var"', '"virginica"']
    for first in (False, True):
        path = tmp_path / "t.csv"
        path.write_text("".join(sep.join([names[i % 2]] * first + [f"{i % 5}", f"{i % 3}.5"] + [names[i % 2]] *
                                         (not first)) + "\n" for i in range(20)))
        m = tux2.Softmax(epochs=0).fit(str(path))
        assert m.classes_.tolist() == [f"setosa{sep} var", "virginica"] and m.n_features_in_ == 2


def test_a_model_of_a_table_scores_libsvm_files(data, tmp_path):
    """A model trained on a table (labels found by the header's name) takes a libsvm test
    file and scores one in Python and in tux2 predict, as the table itself: the table's
    label column is no --label-column the user gave, so no error blames that flag."""
    X, y = data["X"], data["y"]
    test_csv = _write_table(tmp_path / "test.csv", X[:50], y[:50])
    test_svm = _write_libsvm(tmp_path / "test.svm", X[:50], y[:50])
    m = tux2.LogisticRegression(epochs=3).fit(data["csv"], test_svm)
    assert m.history_[-1]["test_accuracy"] == pytest.approx(m.score(test_csv))
    assert m.score(test_svm) == m.score(test_csv)
    m.save(tmp_path / "m")
    r = run_cli("predict", str(tmp_path / "m"), test_svm)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr)["accuracy"] == pytest.approx(m.score(test_csv))
    r = run_cli("run", "lr", data["csv"], "--test", test_svm, "--epochs", "3")
    assert r.returncode == 0, r.stderr


def test_label_column_first_picks_the_first_column_as_last_picks_the_last(tmp_path):
    """YearPredictionMSD ships its year first in a headerless CSV: ``--label-column first``
    reads it as ``1`` does (it used to stop with 'names no column'); a header column
    named ``first`` is still picked by its name."""
    path = tmp_path / "year.txt"
    path.write_text("2001,0.5,3\n1999,0,-1.25\n2010,7,0\n")
    g1, y1 = loaders.load_libsvm(str(path), label_column="first")
    g2, y2 = loaders.load_libsvm(str(path), label_column=1)
    assert y1.tolist() == y2.tolist() == [2001.0, 1999.0, 2010.0]
    assert sorted(zip(g1.src.tolist(), g1.dst.tolist(), g1.values.tolist())) == \
        sorted(zip(g2.src.tolist(), g2.dst.tolist(), g2.values.tolist())) == \
        [(0, 0, 0.5), (0, 1, 3.0), (1, 1, -1.25), (2, 0, 7.0)]
    named = tmp_path / "named.csv"
    named.write_text("x,first,z\n1,5,2\n3,6,4\n")
    _, y = loaders.load_libsvm(str(named), label_column="first")
    assert y.tolist() == [5.0, 6.0]


def test_a_label_name_beside_a_feature_named_as_some_set_labels_is_the_label(tmp_path):
    """A Kaggle table with an 'income' feature (UCI adult's label name) and its labels in
    'target': 'target' is the label column, in a file and a DataFrame (the two names made
    the rule fall back to the first column, the Id-less 'age', and the run stopped at its
    72 values). Two generic names ('label', 'class') are ambiguous: an error naming them."""
    import pandas as pd
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.lognormal(10, 1, n).round(2),
                       "target": rng.integers(0, 2, n), "visits": rng.integers(0, 9, n)})
    path = tmp_path / "train.csv"
    df.to_csv(path, index=False)
    g, y = loaders.load_libsvm(str(path))
    assert y.tolist() == df.target.tolist() and g.n_dst == 3
    r = run_cli("run", "lr", str(path), "--epochs", "1")
    assert r.returncode == 0 and "labels in column 3 ('target') (by its name" in r.stdout, r.stderr
    m = tux2.LogisticRegression(epochs=1).fit(df)
    assert m.label_column_ == ["target", 3] and list(m.feature_names_in_) == ["age", "income", "visits"]
    both = tmp_path / "both.csv"
    df.rename(columns={"income": "class", "target": "label"}).to_csv(both, index=False)
    r = run_cli("run", "lr", str(both), "--epochs", "1")
    assert r.returncode == 2 and "columns 2 ('class') and 3 ('label') are both named as labels are: " \
                                 "--label-column NAME" in r.stderr, r.stderr


def test_pandas_get_dummies_true_false_columns_read_as_1_and_0(tmp_path):
    """pandas.get_dummies, which the 'column holds words' error recommends, writes True and
    False (pandas >= 2): such columns read as 1 and 0, the model of the 0/1 file bit for bit
    (they were refused as 'a table with 3 columns of words'), in a test file and tux2
    predict too; a label column of True/False stays the class names it was."""
    import pandas as pd
    rng = np.random.default_rng(1)
    n = 80
    df = pd.DataFrame({"Id": np.arange(1, n + 1), "age": rng.integers(18, 90, n),
                       "color": rng.choice(["red", "green", "blue"], n), "target": rng.integers(0, 2, n)})
    bools, ints = tmp_path / "bools.csv", tmp_path / "ints.csv"
    pd.get_dummies(df, columns=["color"]).to_csv(bools, index=False)
    pd.get_dummies(df, columns=["color"], dtype=int).to_csv(ints, index=False)
    assert "True" in bools.read_text() and "False" in bools.read_text()
    for args in ([], ["--test", str(bools)]):
        a = run_cli("run", "lr", str(bools), "--epochs", "2", "--out", str(tmp_path / "b"), *args)
        assert a.returncode == 0, a.stderr
        b = run_cli("run", "lr", str(ints), "--epochs", "2", "--out", str(tmp_path / "i"), *args)
        assert b.returncode == 0, b.stderr
        assert (tmp_path / "b" / "weights.npz").read_bytes() == (tmp_path / "i" / "weights.npz").read_bytes()
    p = run_cli("predict", str(tmp_path / "i"), str(bools))
    assert p.returncode == 0 and p.stdout == run_cli("predict", str(tmp_path / "i"), str(ints)).stdout, p.stderr
    labels = tmp_path / "labels.csv"
    labels.write_text("a,b,survived\n1,True,True\n2,False,False\n3,True,False\n4,False,True\n")
    g, y = loaders.load_libsvm(str(labels))
    assert y.tolist() == ["True", "False", "False", "True"]
    assert sorted(zip(g.src.tolist(), g.dst.tolist(), g.values.tolist())) == \
        [(0, 0, 1.0), (0, 1, 1.0), (1, 0, 2.0), (2, 0, 3.0), (2, 1, 1.0), (3, 0, 4.0)]


# --------------------------------------------------------------------------- DataFrames with their labels
# A DataFrame is the table its to_csv writes: its label column is found by the rule a file's is
# (tables.resolve_label: label_column=, else a column named as labels are), in training, test,
# score and predict data; scikit-learn's fit(X, y) reads X as it is.

@pytest.fixture(scope="module")
def cancer(tmp_path_factory):
    """scikit-learn's breast cancer set as a frame (30 features, 'target' last), its CSV
    file, and both split 400 / 169."""
    from sklearn.datasets import load_breast_cancer
    df = load_breast_cancer(as_frame=True).frame
    d = tmp_path_factory.mktemp("cancer")
    paths = {}
    for name, part in (("all", df), ("train", df[:400]), ("test", df[400:])):
        part.to_csv(d / f"{name}.csv", index=False)
        paths[name] = str(d / f"{name}.csv")
    return df, paths


@pytest.mark.parametrize("model", [tux2.LogisticRegression, tux2.LinearSVM, tux2.Softmax, tux2.FM,
                                   tux2.LinearRegression, tux2.BlockPG])
def test_a_frame_with_its_labels_trains_the_model_of_its_csv_file(cancer, model):
    """fit(df) finds 'target' by its name as fit(path) does (it raised 'labels needed'), and
    label_column= takes it too: the model of the CSV file and of fit(X, y), bit for bit."""
    df, paths = cancer
    ref = model(epochs=2).fit(paths["all"])
    for m in (model(epochs=2).fit(df), model(epochs=2, label_column="target").fit(df),
              model(epochs=2, label_column="last").fit(df), model(epochs=2).fit(df.drop(columns="target"), df.target)):
        np.testing.assert_array_equal(m.coef_, ref.coef_)
        assert m.n_features_in_ == 30 and list(m.feature_names_in_) == list(df.columns[:-1])
    assert model(epochs=2).fit(df).label_column_ == ref.label_column_ == ["target", "last"]


@pytest.mark.parametrize("given", [None, "target"])
def test_test_score_and_predict_take_frames_with_and_without_the_label_column(cancer, tmp_path, given):
    """Test data, score, predict, predict_proba and decision_function take a frame with its
    label column (dropped from X; the labels of test and score) and without it, as they take
    the CSV files: fit(df[:400], df[400:]) raised 'set label_column=' with it set, score(df)
    'labels needed', predict(df) 'X has 31 features'. The model saved predicts the CSV file."""
    df, paths = cancer
    train, test, bare = df[:400], df[400:], df[400:].drop(columns="target")
    m = tux2.LogisticRegression(epochs=3, label_column=given).fit(train, test)
    ref = tux2.LogisticRegression(epochs=3).fit(paths["train"], paths["test"])
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    assert m.history_[-1]["test_accuracy"] == ref.history_[-1]["test_accuracy"]
    assert m.history_[-1]["test_logloss"] == ref.history_[-1]["test_logloss"]
    assert m.score(test) == m.score(bare, test.target) == ref.score(paths["test"]) == m.history_[-1]["test_accuracy"]
    assert m.predict(test).tolist() == m.predict(bare).tolist() == ref.predict(paths["test"]).tolist()
    np.testing.assert_array_equal(m.predict_proba(test), m.predict_proba(bare))
    np.testing.assert_array_equal(m.decision_function(test), ref.decision_function(paths["test"]))
    assert m.predict(test[:3]).tolist() == m.predict(bare[:3]).tolist()       # a frame's few rows
    m.save(tmp_path / "m")
    back = tux2.LogisticRegression.load(tmp_path / "m")
    assert back.score(test) == back.score(paths["test"]) == m.score(test)
    np.testing.assert_array_equal(back.predict(bare), m.predict(paths["test"]))
    fit_then = tux2.LogisticRegression(epochs=3, label_column=given).fit(train)
    assert fit_then.score(test) == tux2.LogisticRegression(epochs=3).fit(paths["train"]).score(paths["test"])
    sk = tux2.LogisticRegression(epochs=3).fit(train.drop(columns="target"), train.target)   # fit(X, y): predict(df)
    assert sk.predict(test).tolist() == sk.predict(bare).tolist() and sk.score(test) == fit_then.score(test)


def test_a_frame_label_column_anywhere_and_by_number(cancer):
    """A label column first or inside, picked by its name or a 1-based number as for a file
    (a column's own name first: pandas' integer column names), is the same model; test and
    predict frames find it by its name wherever it is."""
    import pandas as pd
    df, _ = cancer
    ref = tux2.LogisticRegression(epochs=2).fit(df)
    moved = df[["target"] + list(df.columns[:-1])]
    inside = df[list(df.columns[:5]) + ["target"] + list(df.columns[5:-1])]
    np.testing.assert_array_equal(tux2.LogisticRegression(epochs=2).fit(moved).coef_, ref.coef_)
    np.testing.assert_array_equal(tux2.LogisticRegression(epochs=2, label_column=1).fit(moved).coef_, ref.coef_)
    m = tux2.LogisticRegression(epochs=2, label_column=6).fit(inside)
    assert m.label_column_ == ["target", 6]
    np.testing.assert_array_equal(m.coef_, ref.coef_)     # the same columns
    assert m.predict(df).tolist() == ref.predict(df).tolist()      # the label by its name, not its position
    numbered = pd.DataFrame(df.to_numpy())                          # columns 0 … 30: 30 is the labels
    by_name = tux2.LogisticRegression(epochs=2, label_column=30).fit(numbered)
    np.testing.assert_array_equal(by_name.coef_, ref.coef_)
    assert by_name.score(numbered) == ref.score(df)
    with pytest.raises(InputError, match="labels needed"):          # no column named as labels: no guess
        tux2.LogisticRegression(epochs=2).fit(numbered)


def test_softmax_string_classes_and_a_regression_target_in_a_frame(tmp_path):
    """Softmax's classes as strings in a frame's 'species' column; LinearRegression's target
    named as such ('quality'), or any column by label_column=: the models of fit(X, y) and
    of the CSV files, their test metrics and scores from frames with the column."""
    import pandas as pd
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 5)).round(4)
    kinds = np.array(["setosa", "versicolor", "virginica"])[np.argmax(X[:, :3] + rng.normal(0, .3, (300, 3)), 1)]
    iris = pd.DataFrame(X, columns=list("abcde")).assign(species=kinds)
    iris[:200].to_csv(tmp_path / "iris.csv", index=False)
    m = tux2.Softmax(epochs=3).fit(iris[:200], iris[200:])
    ref = tux2.Softmax(epochs=3).fit(X[:200], kinds[:200])
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.coef_, tux2.Softmax(epochs=3).fit(str(tmp_path / "iris.csv")).coef_)
    assert m.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    assert m.history_[-1]["test_accuracy"] == m.score(iris[200:]) == ref.score(X[200:], kinds[200:])
    assert m.predict(iris[200:]).tolist() == ref.predict(X[200:]).tolist()
    np.testing.assert_array_equal(m.predict_proba(iris[200:].drop(columns="species")), ref.predict_proba(X[200:]))
    t = X @ [1.5, -2, 0.5, 0, 3] + rng.normal(0, 0.1, 300)
    wine = pd.DataFrame(X, columns=list("abcde")).assign(quality=t)
    wine[:200].to_csv(tmp_path / "wine.csv", index=False)
    r = tux2.LinearRegression(epochs=5).fit(wine[:200], wine[200:])
    ref = tux2.LinearRegression(epochs=5).fit(X[:200], t[:200])
    np.testing.assert_array_equal(r.coef_, ref.coef_)
    np.testing.assert_array_equal(r.coef_, tux2.LinearRegression(epochs=5).fit(str(tmp_path / "wine.csv")).coef_)
    assert r.history_[-1]["test_rmse"] == pytest.approx(np.sqrt(np.mean((ref.predict(X[200:]) - t[200:]) ** 2)))
    assert r.score(wine[200:]) == ref.score(X[200:], t[200:]) > 0.9
    np.testing.assert_array_equal(r.predict(wine[200:]), ref.predict(X[200:]))
    house = wine.rename(columns={"quality": "MedHouseVal"})        # no label name: label_column= names it
    h = tux2.LinearRegression(epochs=5, label_column="MedHouseVal").fit(house[:200])
    np.testing.assert_array_equal(h.coef_, ref.coef_)
    assert h.score(house[200:]) == r.score(wine[200:])
    with pytest.raises(InputError, match="labels needed"):
        tux2.LinearRegression(epochs=5).fit(house)


def test_frame_label_errors_are_named(cancer):
    """A label_column no column of the frame has, a test frame without the label column, a
    score without labels, label_column naming a column of X when y is given too: InputErrors
    that say what to do. fit(X, y) reads X as it is, a column named 'target' a feature."""
    df, _ = cancer
    with pytest.raises(InputError, match="label_column=\\) 'outcome' names no column of this DataFrame \\(its col"):
        tux2.LogisticRegression(epochs=1, label_column="outcome").fit(df)
    with pytest.raises(InputError, match="the test DataFrame has no labels: its columns are the 30 features, "
                                         "without the label column 'target'"):
        tux2.LogisticRegression(epochs=1).fit(df[:400], df[400:].drop(columns="target"))
    m = tux2.LogisticRegression(epochs=1).fit(df)
    with pytest.raises(InputError, match="labels needed: .* a DataFrame with its label column \\('target', as fit"):
        m.score(df.drop(columns="target"))
    with pytest.raises(InputError, match="label_column='target' names a column of X, and y is given too"):
        tux2.LogisticRegression(epochs=1, label_column="target").fit(df, df.target)
    leak = tux2.LogisticRegression(epochs=1).fit(df, df.target)        # scikit-learn's fit(X, y): X as given
    assert leak.n_features_in_ == 31 and leak.label_column_ is None
    with pytest.raises(ValueError, match="X has 30 features, but LogisticRegression is expecting 31"):
        leak.predict(df.drop(columns="target"))


def test_a_table_of_pandas_default_names_scores_its_own_file(data, tmp_path):
    """A header of pandas' default names (0 … 8, the labels '8' last): the model's label
    column ['8', 'last'] finds '8' by that very name in a test or predict file (it read
    '8' as position 8, took column '7' for the labels and refused the file)."""
    import pandas as pd
    X, y = data["X"], data["y"]
    path = tmp_path / "int_names.csv"
    pd.DataFrame(np.column_stack([X, y])).to_csv(path, index=False)
    m = tux2.LogisticRegression(epochs=2, label_column="last").fit(str(path))
    assert m.label_column_ == ["8", "last"] and m.score(str(path)) == m.score(X, y)
