"""A resume checks the test set as it checks the training input: the model does not
depend on the test set, but the metrics history does, and with it the epoch early
stopping keeps. One changed test line (a --test FILE, the share --test-fraction holds
out, fit's test=) is refused with the file named and the remedy; the same test data
resumes and ends with the uninterrupted model; a checkpoint of an earlier tux2 (no
test checksum) resumes without the check."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tux2
from tests.conftest import run_cli
from tests.test_checkpoint import _arrays, _run, _same
from tux2 import files
from tux2.datasets import lda_corpus, sparse_classification
from tux2 import ingress
from tux2.io import write_libsvm


def _ratings(n=6000, seed=3):
    """Zipf-1.5 users and items, no repeated pair, sorted by user, 1-based, a timestamp column."""
    rng = np.random.default_rng(seed)
    u, i = rng.zipf(1.5, n) - 1, rng.zipf(1.5, n) - 1
    keep = (u < 600) & (i < 150)
    key = np.unique(u[keep].astype(np.int64) * 150 + i[keep])
    u, i = key // 150, key % 150
    r = np.clip(np.round(3 + rng.normal(0, 1, len(u))), 1, 5).astype(int)
    return [f"{a + 1} {b + 1} {c} {1_600_000_000 + 7 * a}\n" for a, b, c in zip(u, i, r)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("testset")
    lines = _ratings()
    (d / "all.txt").write_text("".join(lines))
    (d / "train.txt").write_text("".join(x for k, x in enumerate(lines) if k % 8))
    (d / "test.txt").write_text("".join(x for k, x in enumerate(lines) if not k % 8))
    g, y, _ = sparse_classification(n_samples=500, n_features=200, nnz_per_sample=6, seed=4)
    write_libsvm(d / "s.svm", g, y)
    g, y, _ = sparse_classification(n_samples=120, n_features=200, nnz_per_sample=6, seed=5)
    write_libsvm(d / "s-test.svm", g, y)
    g, y, _ = sparse_classification(n_samples=500, n_features=200, nnz_per_sample=6, seed=4, classes=3)
    write_libsvm(d / "k.svm", g, y)
    g, y, _ = sparse_classification(n_samples=120, n_features=200, nnz_per_sample=6, seed=5, classes=3)
    write_libsvm(d / "k-test.svm", g, y)
    docs, words, counts, _ = lda_corpus(n_docs=150, n_words=200, n_topics=4, doc_length=30, seed=2)
    corpus = [f"{a} {b} {int(c)}\n" for a, b, c in zip(docs, words, counts)]
    (d / "c.txt").write_text("".join(x for x in corpus if int(x.split()[0]) < 120))
    (d / "c-test.txt").write_text("".join(x for x in corpus if int(x.split()[0]) >= 120))
    return d


def _edit(path, line):
    """``path`` with one line changed in place (a rating, a label, a word count), and
    a function putting the file back."""
    text = open(path).read()
    lines = text.splitlines(keepends=True)
    f = lines[line].split()
    if path.endswith(".svm"):           # the label: another class
        f[0] = {"1": "-1", "-1": "1", "+1": "-1", "0": "1"}.get(f[0], "0")
    else:                               # a rating or a count, the last number but a timestamp
        k = 2
        f[k] = str(int(float(f[k])) % 5 + 1)
    lines[line] = " ".join(f) + "\n"
    with open(path, "w") as out:
        out.write("".join(lines))

    def restore():
        with open(path, "w") as out:
            out.write(text)
    return restore


def _refused(stderr, name):
    assert stderr.startswith("tux2: error: ") and len(stderr.splitlines()) == 1, stderr
    assert f"{name} is not the one the checkpoint's run was evaluated on" in stderr, stderr
    assert "the epoch --early-stop keeps" in stderr and stderr.rstrip().endswith(
        "resume with that run's test data, or start again without --resume"), stderr


def _history(path, key):
    return [json.loads(x)[key] for x in open(path)]


@pytest.mark.parametrize("algo, train, test, flags, model, key", [
    ("mf", "train.txt", "test.txt", ["--k", "4"], ("user.npz", "item.npz"), "test_rmse"),
    pytest.param("lr", "s.svm", "s-test.svm", ["--optimizer", "adam", "--batch", "100"], ("weights.npz",),
                 "test_logloss", marks=pytest.mark.slow),
    pytest.param("blockpg", "s.svm", "s-test.svm", ["--lam", "0.5"], ("weights.npz",), "test_logloss",
                 marks=pytest.mark.slow),
], ids=["mf", "lr", "blockpg"])
def test_cli_refuses_a_changed_test_file_and_resumes_the_same_one(data, tmp_path, algo, train, test, flags, model,
                                                                  key):
    shutil.copy(data / test, tmp_path / test)
    test = str(tmp_path / test)
    common = ["run", algo, str(data / train), "--test", test, *flags]
    _run(*common, "--epochs", "4", "--out", str(tmp_path / "full"), "--metrics", str(tmp_path / "full.jsonl"))
    _run(*common, "--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck"),
         "--metrics", str(tmp_path / "part.jsonl"))
    restore = _edit(test, 7)
    r = run_cli(*common, "--epochs", "4", "--resume", str(tmp_path / "ck"))
    restore()
    assert r.returncode == 2
    _refused(r.stderr, f"the test set {test}")
    assert f"; {test}: " in r.stderr and " now): " in r.stderr, r.stderr      # what changed in the file
    _run(*common, "--epochs", "4", "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "resumed"),
         "--metrics", str(tmp_path / "part.jsonl"))
    _same(_arrays(tmp_path / "full", model), _arrays(tmp_path / "resumed", model))
    assert _history(tmp_path / "part.jsonl", key) == _history(tmp_path / "full.jsonl", key)


def _held_out_line(path):
    """A line --test-fraction 0.1 holds out of ``path``."""
    n = sum(1 for _ in open(path))
    return int(np.flatnonzero(ingress.test_mask(range(n), 0.1))[3])


@pytest.mark.slow
def test_a_changed_held_out_line_is_refused_on_one_worker_and_on_two(data, tmp_path):
    """The share --test-fraction holds out: a training-input checksum does not see a
    changed held-out rating. Distributed ingress (two workers) gathers the share in
    another order, and the same share is accepted there too."""
    path = str(tmp_path / "all.txt")
    shutil.copy(data / "all.txt", path)
    common = ["run", "mf", path, "--k", "4"]
    _run(*common, "--epochs", "4", "--out", str(tmp_path / "full"))
    _run(*common, "--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck"))
    restore = _edit(path, _held_out_line(path))
    try:
        for extra in ([], ["--workers", "2", "--timeout", "20"]):
            r = run_cli(*common, "--epochs", "4", "--resume", str(tmp_path / "ck"), *extra)
            assert r.returncode == 2
            _refused(re.sub(r"^tux2: error: \[worker \d\] ", "tux2: error: ", r.stderr),
                     f"the test share held out of {path} (--test-fraction)")
    finally:
        restore()
    r = _run(*common, "--epochs", "4", "--resume", str(tmp_path / "ck"), "--workers", "2", "--timeout", "20",
             "--out", str(tmp_path / "resumed"))
    _same(_arrays(tmp_path / "full", ("user.npz", "item.npz")), _arrays(tmp_path / "resumed", ("user.npz", "item.npz")))


FIT = {     # name: (estimator of n iterations, training file, test file)
    "mf": (lambda n: tux2.MF(k=4, epochs=n, seed=1), "train.txt", "test.txt"),
    "lda": (lambda n: tux2.LDA(topics=4, iterations=n, seed=1), "c.txt", "c-test.txt"),
    "lr": (lambda n: tux2.LogisticRegression(epochs=n, batch=100), "s.svm", "s-test.svm"),
    "svm": (lambda n: tux2.LinearSVM(epochs=n, batch=100), "s.svm", "s-test.svm"),
    "fm": (lambda n: tux2.FM(epochs=n, factors=2, batch=100), "s.svm", "s-test.svm"),
    "softmax": (lambda n: tux2.Softmax(epochs=n, batch=100), "k.svm", "k-test.svm"),
    "blockpg": (lambda n: tux2.BlockPG(epochs=n, reg=0.5), "s.svm", "s-test.svm"),
    "linear": (lambda n: tux2.LinearRegression(epochs=n, batch=100), "s.svm", "s-test.svm"),
}


def _model(est, path):
    est.save(path)
    return _arrays(path, sorted(f for f in os.listdir(path) if f.endswith(".npz")))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "lda" else n for n in sorted(FIT)])
def test_fit_refuses_a_changed_test_file_and_resumes_the_same_one(data, tmp_path, name):
    make, train, test = FIT[name]
    train, test = str(data / train), str(tmp_path / test)
    shutil.copy(data / FIT[name][2], test)
    full = make(4).fit(train, test)
    make(2).fit(train, test, checkpoint=tmp_path / "ck")
    restore = _edit(test, 5)
    try:
        with pytest.raises(tux2.CheckpointError) as e:
            make(4).fit(train, test, checkpoint=tmp_path / "ck")
    finally:
        restore()
    text = str(e.value)
    assert f"the test set {test} is not the one the checkpoint's run was evaluated on (as many test edges" in text
    assert text.endswith("resume with that run's test data, or start again without checkpoint="), text
    resumed = make(4).fit(train, test, checkpoint=tmp_path / "ck")
    _same(_model(full, tmp_path / "full"), _model(resumed, tmp_path / "resumed"))
    # (the last iteration is evaluated, whatever the test schedule: the interrupted run's 2nd has an LDA test metric)
    assert _metrics(resumed.history_)[2:] == _metrics(full.history_)[2:]


def _metrics(history):
    """The records without their timings (seconds, rates)."""
    return [{k: v for k, v in rec.items() if k not in ("time_s", "total_time_s", "wait_s")
             and not k.endswith("_per_s")} for rec in history]


def test_fit_refuses_a_test_set_the_checkpoints_run_had_not_and_arrays_changed(data, tmp_path):
    """fit(data, checkpoint=) then fit(data, test, checkpoint=): the first epochs'
    records have no test metric, the later ones would; and test arrays (no file to name)."""
    train, test = str(data / "train.txt"), str(data / "test.txt")
    tux2.MF(k=4, epochs=1).fit(train, checkpoint=tmp_path / "none")
    with pytest.raises(tux2.CheckpointError, match="the checkpoint's run had no test set, and this one is evaluated "
                                                   f"on the test set {test}: "):
        tux2.MF(k=4, epochs=2).fit(train, test, checkpoint=tmp_path / "none")
    tux2.MF(k=4, epochs=1).fit(train, test, checkpoint=tmp_path / "file")
    with pytest.raises(tux2.CheckpointError, match=f"the checkpoint's run was evaluated on the test set {test}, and "
                                                   "this one has no test set"):
        tux2.MF(k=4, epochs=2).fit(train, checkpoint=tmp_path / "file")
    u, i, r = (np.array(c, float) for c in zip(*(x.split()[:3] for x in open(test))))
    tux2.MF(k=4, epochs=1).fit(train, (u, i, r), checkpoint=tmp_path / "arrays")
    r[3] = 6 - r[3]
    with pytest.raises(tux2.CheckpointError, match=r"the test set is not the one the checkpoint's run was evaluated "
                                                   r"on \(as many test edges, with other ids, values or unknown ids\)"):
        tux2.MF(k=4, epochs=2).fit(train, (u, i, r), checkpoint=tmp_path / "arrays", workers=2)


def test_a_checkpoint_without_a_test_checksum_resumes_unchecked(data, tmp_path):
    """A checkpoint of an earlier tux2 (its state.json has no "test"): resumed as
    before, even with a test file changed since."""
    test = str(tmp_path / "test.txt")
    shutil.copy(data / "test.txt", test)
    common = ["run", "mf", str(data / "train.txt"), "--test", test, "--k", "4"]
    _run(*common, "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", str(tmp_path / "ck"))
    state = tmp_path / "ck" / "ckpt-00000001" / "state.json"
    saved = json.loads(state.read_text())
    assert saved["test"]["edges"] == sum(1 for _ in open(test))
    del saved["test"]                               # as an earlier tux2 wrote it (and re-signed)
    state.write_text(json.dumps(saved))
    manifest = json.loads((state.parent / "manifest.json").read_text())
    manifest["files"]["state.json"] = files.describe(str(state))
    (state.parent / "manifest.json").write_text(json.dumps(manifest))
    _edit(test, 2)
    _run(*common, "--epochs", "2", "--resume", str(tmp_path / "ck"))


@pytest.mark.slow
def test_a_changed_test_file_whose_name_is_not_utf8_is_refused_on_two_workers(data, tmp_path):
    """The refusal names the input files; rank 0 sends it to the others as bytes, and a name
    that is not UTF-8 ('bad\\xff', 'bad\\udcff' to Python) stopped that: 'internal error:
    UnicodeEncodeError' where the refusal was due."""
    base = os.fsdecode(bytes(tmp_path) + b"/bad\xff")
    shutil.copy(data / "train.txt", base + ".train")
    shutil.copy(data / "test.txt", base + ".test")
    common = ["run", "mf", base + ".train", "--test", base + ".test", "--k", "4", "--workers", "2", "--timeout", "20"]

    def run(*args):                     # (the header quotes the name's bytes: not UTF-8 either)
        return subprocess.run([sys.executable, "-m", "tux2.cli", *common, *args], capture_output=True, text=True,
                              errors="backslashreplace", timeout=300)

    assert run("--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck")).returncode == 0
    _edit(base + ".test", 0)
    r = run("--epochs", "4", "--resume", str(tmp_path / "ck"))
    assert r.returncode == 2 and "internal error" not in r.stderr, r.stderr
    assert "is not the one the checkpoint's run was evaluated on" in r.stderr, r.stderr
