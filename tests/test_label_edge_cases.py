"""Edges found by a break-it trial of labels from Python, the default step, the kernel
cache and fit(workers=2): each failed on the code it was written against (2026-11-27)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tux2
from tests.conftest import run_cli

X = np.random.default_rng(0).normal(size=(40, 3))


def test_softmax_one_string_class_refused_or_usable(tmp_path):
    # fit succeeded; predict raised IndexError and the saved model failed to load
    try:
        m = tux2.Softmax(epochs=1).fit(X, np.array(["x"] * 40))
    except (ValueError, tux2.InputError):
        return
    assert set(m.predict(X[:3])) <= {"x"}
    m.save(tmp_path / "m")
    tux2.estimators.load(tmp_path / "m")


@pytest.mark.parametrize("loss", ["lr", "softmax"])
def test_bytes_labels_score_matches_predict(loss):
    # trained on bytes, classes_ are str: score compared b'b' with 'b' and scored 0.325 (softmax 0.0)
    y = np.array([b"a", b"b", b"c", b"a"] * 10) if loss == "softmax" else np.array([b"a", b"b"] * 20)
    m = (tux2.Softmax if loss == "softmax" else tux2.LogisticRegression)(epochs=3).fit(X, y)
    assert m.score(X, y) == pytest.approx(np.mean(m.predict(X) == y.astype(str)))


def test_none_label_is_missing_not_a_class():
    # None became a class named 'None'; NaN in the same array is refused as missing
    with pytest.raises(ValueError, match="missing"):
        tux2.Softmax(epochs=1).fit(X, np.array(["a", "b", None, "c"] * 10, dtype=object))


def test_mixed_number_and_string_labels_not_merged():
    # 1 and "1" were merged into one class '1' silently
    y = np.array([1, "1", 2, "a"] * 10, dtype=object)
    try:
        m = tux2.Softmax(epochs=1).fit(X, y)
    except (ValueError, tux2.InputError):
        return
    assert len(m.classes_) == 4


def test_softmax_huge_class_number_is_a_class_not_a_traceback(tmp_path):
    # labels 0, 1, 1e9: numpy's 'dtype size in bytes must fit into a C int' traceback (10^9 classes);
    # now the classes are the labels there are, and --classes 3 names the line of the one beyond
    labels = [0, 1, 1000000000] * 5
    (tmp_path / "a.svm").write_text("".join(f"{lab} 1:{i % 3} 2:1\n" for i, lab in enumerate(labels)))
    r = run_cli("run", "softmax", str(tmp_path / "a.svm"), "--epochs", "1", "--quiet", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "o" / "model.json").read_text())["labels"] == [0, 1, 1000000000]
    r = run_cli("run", "softmax", str(tmp_path / "a.svm"), "--epochs", "1", "--quiet", "--classes", "3")
    assert r.stderr.startswith(f"tux2: error: {tmp_path / 'a.svm'}:3: label 1e+09 is not below"), r.stderr


def test_one_stray_count_does_not_stop_learning(tmp_path):
    # 150 samples of counts 1-9 and one count of 1e7: the default eta fell 0.056 -> 2.6e-7 and lr
    # ended at the all-zero model's log-loss (ln 2) without a note
    rng = np.random.default_rng(2)
    rows = []
    for i in range(150):
        lab = rng.choice([-1, 1])
        f = {int(j): int(rng.integers(1, 7)) for j in rng.choice(np.arange(1, 40), 5, replace=False)}
        if lab == 1:
            f[1] = int(rng.integers(3, 10))
        if i == 0:
            f[40] = 10 ** 7
        rows.append(f"{lab} " + " ".join(f"{k}:{v}" for k, v in sorted(f.items())) + "\n")
    (tmp_path / "c.svm").write_text("".join(rows))
    m = tux2.LogisticRegression(epochs=10).fit(str(tmp_path / "c.svm"))
    assert m._eta > 1e-3


@pytest.mark.slow
def test_cache_dir_that_is_a_file_still_runs(tmp_path):
    # every command stopped: 'tux2: error: …/cachefile/numba: Not a directory' (Python: NotADirectoryError)
    (tmp_path / "cachefile").write_text("x")
    (tmp_path / "a.svm").write_text("".join(f"{(-1, 1)[i % 2]} 1:{i % 3} 2:1\n" for i in range(20)))
    r = run_cli("run", "lr", str(tmp_path / "a.svm"), "--epochs", "1", "--quiet", "--out", str(tmp_path / "o"),
                env={"TUX2_CACHE_DIR": str(tmp_path / "cachefile")})
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_worker_that_cannot_import_the_class_says_why(tmp_path):
    # a relative sys.path entry and a chdir: the workers' ModuleNotFoundError reached the
    # user only as '[worker 0] died with exit status 1'
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "mymod.py").write_text("import tux2\nclass MyLR(tux2.LogisticRegression):\n    pass\n")
    (tmp_path / "s.py").write_text(textwrap.dedent("""
        import os, sys
        sys.path.insert(0, "mods")
        import numpy as np, mymod, tux2
        os.chdir("/")
        X = np.random.default_rng(0).normal(size=(60, 3))
        try:
            mymod.MyLR(epochs=1).fit(X, np.where(X[:, 0] > 0, 1, -1), workers=2)
        except tux2.Tux2Error as e:
            print("ERR", e)
        """))
    r = subprocess.run([sys.executable, "s.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ})
    assert "ERR" in r.stdout and "mymod" in r.stdout, (r.stdout, r.stderr[-500:])


@pytest.mark.slow
def test_sigterm_to_a_fit_with_workers_stops_them_and_removes_its_directory(tmp_path):
    # the workers ended, but /tmp/tux2-fit-* stayed behind (16 MB): only `finally` removed it
    import signal
    import time
    (tmp_path / "tmp").mkdir()
    (tmp_path / "long.py").write_text(
        "import tux2\nfrom tux2.datasets import sparse_classification\n"
        "g, y, _ = sparse_classification(n_samples=20000, n_features=2000, seed=1)\n"
        "m = tux2.LogisticRegression(epochs=1000, batch=100)\nm.fit((g, y), workers=2)\n")
    p = subprocess.Popen([sys.executable, str(tmp_path / "long.py")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    deadline = time.monotonic() + 120
    while not any(d.name.startswith("tux2-fit-") and (d / "job.pkl").exists() for d in (tmp_path / "tmp").iterdir()):
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()
        time.sleep(0.2)
    time.sleep(2)                   # the workers are running
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    assert p.returncode != 0 and list((tmp_path / "tmp").iterdir()) == []
    r = subprocess.run(["pgrep", "-f", f"_worker_main.*{tmp_path}"], capture_output=True, text=True)
    assert r.stdout == "", r.stdout


def test_scratch_directories_of_killed_processes_are_removed_and_live_ones_kept(tmp_path, monkeypatch):
    """A SIGKILLed `tux2 run` on a .gz input, or a SIGKILLed fit(workers=2), runs no
    cleanup: its tux2-input-*/tux2-fit-* directory (the decompressed input, a copy of the
    data) stayed in $TMPDIR for good. The next one made removes those nobody holds."""
    import signal
    import tempfile
    import time
    from tux2 import files
    hold = ("import sys, time\nfrom tux2.files import scratch_dir\n"
            "print(scratch_dir(sys.argv[1]), flush=True)\ntime.sleep(600)\n")
    procs = {kind: subprocess.Popen([sys.executable, "-c", hold, kind], stdout=subprocess.PIPE, text=True,
                                    env={**os.environ, "TMPDIR": str(tmp_path)}) for kind in ("input", "fit")}
    try:
        made = {kind: p.stdout.readline().strip() for kind, p in procs.items()}
        (tmp_path / os.path.basename(made["fit"]) / "data.npz").write_bytes(b"x" * 1000)
        old = time.time() - 2 * files.SCRATCH_AGE
        for d in made.values():
            os.utime(os.path.join(d, ".lock"), (old, old))
        procs["fit"].send_signal(signal.SIGKILL)
        procs["fit"].wait(timeout=30)
        other = tmp_path / "tux2-fit-notours"         # no lock file: not one scratch_dir made, kept
        other.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        mine = files.scratch_dir("input")
        try:
            left = sorted(p.name for p in tmp_path.iterdir())
            assert left == sorted([os.path.basename(made["input"]), os.path.basename(mine), other.name]), left
        finally:
            files.remove_scratch(mine)
        assert not os.path.exists(mine)
    finally:
        for p in procs.values():
            p.kill()
            p.wait(timeout=30)
