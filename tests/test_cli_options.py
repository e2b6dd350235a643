"""Issue 21, items 10-13: every option value and every input either works or ends with
one ``tux2: error:`` line — never a Python traceback, never rc 0 with nonsense. The
property test drives ``tux2.cli.main`` in-process with random values of each option's
type (tiny inputs, few examples)."""
import argparse
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from tests.conftest import LEE_PROSE, run_cli
from tux2 import cli


def _main(capsys, *argv):
    """(exit status, stdout, stderr) of ``tux2 ARGV`` run in this process."""
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def _refused(rc, err, *parts):
    lines = err.strip().splitlines()
    if lines and lines[-1].startswith("try 'tux2"):        # a usage error's hint (Parser.error)
        lines.pop()
    assert rc == 2 and lines[-1].startswith("tux2: error:"), err
    assert "Traceback" not in err
    for p in parts:
        assert p in err, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("opts")
    rng = np.random.default_rng(0)
    pairs = np.unique(rng.integers(0, 30 * 12, 150))
    (d / "r.txt").write_text("".join(f"{p // 12} {p % 12} {1 + p % 5}\n" for p in pairs))
    (d / "docs.txt").write_text("".join(" ".join(rng.choice(["ash", "bay", "cod", "dew", "elm", "fig"], 8)) + "\n"
                                        for _ in range(20)))
    (d / "s.svm").write_text("".join(f"{1 if i % 2 else -1} 1:{i % 3} 2:{i % 5} 3:1\n" for i in range(30)))
    return d


# ------------------------------------------------------------------ items 10, 11: option values
@pytest.mark.parametrize("argv, what", [
    (["run", "mf", "R", "--epochs", "-1"], "--epochs"),
    (["run", "mf", "R", "--k", "-1"], "--k"),
    (["run", "mf", "R", "--k", "0"], "--k"),
    (["run", "mf", "R", "--partitions", "0"], "--partitions"),
    (["run", "mf", "R", "--workers", "0"], "--workers"),
    (["run", "mf", "R", "--workers", "-1"], "--workers"),
    (["run", "mf", "R", "--test-fraction", "1"], "--test-fraction"),
    (["run", "mf", "R", "--test-fraction", "1.5"], "--test-fraction"),
    (["run", "mf", "R", "--test-fraction", "-1"], "--test-fraction"),
    (["run", "mf", "R", "--test-fraction", "nan"], "--test-fraction"),
    (["run", "mf", "R", "--reg", "-1"], "--reg"),
    (["run", "mf", "R", "--reg", "nan"], "--reg"),
    (["run", "mf", "R", "--seed", "-1"], "--seed"),
    (["run", "mf", "R", "--seed", str(2 ** 70)], "--seed"),
    (["run", "mf", "R", "--timeout", "-5"], "--timeout"),
    (["run", "mf", "R", "--timeout", "nan"], "--timeout"),
    (["run", "mf", "R", "--eval-every", "-1"], "--eval-every"),
    (["run", "lda", "D", "--alpha", "nan"], "--alpha"),
    (["run", "lda", "D", "--beta", "nan"], "--beta"),
    (["run", "lda", "D", "--iterations", "-1"], "--iterations"),
    (["run", "lda", "D", "--min-count", "-1"], "--min-count"),
    (["run", "lda", "D", "--top-words", "-1"], "--top-words"),
    (["run", "lda", "D", "--top-words", "0"], "--top-words: must be >= 1"),     # (printed empty topic lines)
    (["run", "blockpg", "S", "--epochs", "-1"], "--epochs"),
    (["run", "blockpg", "S", "--tol", "nan"], "--tol"),
    (["run", "lr", "S", "--eta", "-1"], "--eta"),
    (["run", "lr", "S", "--decay", "-1"], "--decay"),
    (["run", "fm", "S", "--factors", "-1"], "--factors"),
    (["run", "lr", "S", "--class-weight", "1:1,1.0:5"], "the class 1.0 is given twice"),
    (["run", "mf", "R", "--rank", "1", "--world", "2", "--rendezvous", "garbage"], "--rendezvous"),
    # integers past int64 (or past what a partition table, a thread pool, an i4 field holds)
    (["run", "mf", "R", "--partitions", str(2 ** 70)], "--partitions: must be >= 1 and <= 1048576"),
    (["run", "mf", "R", "--partitions", str(2 ** 63 - 1)], "--partitions"),
    (["run", "mf", "R", "--threads", str(2 ** 70)], "--threads: must be >= 1 and <= 1024"),
    (["run", "lda", "D", "--threads", str(2 ** 70)], "--threads"),
    (["run", "lr", "S", "--threads", str(2 ** 70)], "--threads"),
    (["run", "lr", "S", "--partitions", str(2 ** 70)], "--partitions"),
    (["run", "blockpg", "S", "--threads", str(2 ** 70)], "--threads"),
    (["run", "blockpg", "S", "--block-size", str(2 ** 70)], "--block-size"),
    (["run", "blockpg", "S", "--shrink-rest", str(2 ** 70)], "--shrink-rest"),
    (["predict", "R", "D", "--iterations", str(2 ** 70)], "--iterations"),
    (["partition", "--powerlaw", str(2 ** 70), "--parts", "2"], "--powerlaw"),
    (["partition", "R", "--parts", str(2 ** 70)], "--parts"),
    # no option name: argparse said 'ambiguous option: --=1 could match --help, --version' (trial leftover)
    (["run", "mf", "R", "--=1"], "'--=1' has no option name before its '='"),
    (["predict", "R", "D", "-="], "'-=' has no option name before its '='"),
    (["run", "mf", "R", "---out=x"], "---out=x: use --out\n"),     # (said '---out is an option of tux2 run lda, …')
])
def test_meaningless_option_values_are_refused(capsys, files, argv, what):
    argv = [{"R": str(files / "r.txt"), "D": str(files / "docs.txt"), "S": str(files / "s.svm")}.get(a, a)
            for a in argv]
    rc, out, err = _main(capsys, *argv)
    _refused(rc, err, what)
    assert "epoch" not in out and "iteration" not in out


@pytest.mark.parametrize("argv, both", [
    (["run", "mf", "R", "--mode", "sgd", "--step", "plain"], ["--step plain", "--mode sgd"]),
    (["run", "mf", "R", "--step", "plain"], ["--step plain", "--mode sgd"]),       # sgd by default
    (["run", "mf", "R", "--enumerate", "user"], ["--enumerate user", "--batch-unit edge"]),
    (["run", "mf", "R", "--no-biases", "--damping", "5"], ["--damping 5", "--no-biases"]),
    (["run", "mf", "R", "--mode", "minibatch", "--overlap", "allow"], ["--overlap allow", "--mode minibatch"]),
    (["run", "mf", "R", "--overlap", "allow"], ["--overlap allow", "--order strata"]),
    (["run", "mf", "R", "--mode", "minibatch", "--blocks", "8"], ["--blocks 8", "--order blocked"]),
    (["run", "mf", "R", "--test", "R", "--test-fraction", "0.5"], ["--test-fraction 0.5", "--test"]),
    (["run", "mf", "--test-fraction", "0.5"], ["--test-fraction 0.5", "built-in"]),
    (["run", "mf", "--test", "R"], ["--test", "INPUT"]),
    (["run", "lr", "--test", "S"], ["--test", "INPUT"]),
    (["run", "lda", "--vocab", "D"], ["--vocab", "INPUT"]),
    (["run", "mf", "--columns", "1,2,3"], ["--columns says how INPUT is read", "built-in"]),
    (["run", "mf", "--col=2,1", "--duplicates", "sum"], ["--columns says how INPUT is read", "built-in"]),
    (["run", "mf", "--base", "auto"], ["--base says how INPUT is read", "built-in"]),       # its default, given
    (["run", "mf", "--ids", "string"], ["--ids says how INPUT is read", "built-in"]),
    (["run", "lr", "--label-column", "last"], ["--label-column says how INPUT is read", "built-in"]),
    (["run", "softmax", "--zero-based"], ["--zero-based says how INPUT is read", "built-in"]),
    (["run", "lda", "--stop-words", "none"], ["--stop-words says how INPUT is read", "built-in"]),
    (["partition", "--powerlaw", "100", "-p", "2", "--columns", "1,2"], ["--columns says how INPUT", "--powerlaw"]),
    (["run", "mf", "R", "--workers", "2", "--world", "3"], ["--workers 2", "--world 3"]),
    (["run", "mf", "R", "--workers", "2", "--rank", "0", "--world", "2", "--rendezvous", "tcp://127.0.0.1:9"],
     ["--workers 2", "--rank 0", "--rendezvous"]),
    (["run", "lda", "D", "--optimize-burn-in", "3"], ["--optimize-burn-in 3", "--optimize-interval 0"]),
    (["run", "lr", "S", "--driver", "--strategy", "adam"], ["--driver", "--strategy adam"]),
])
def test_flags_that_would_have_no_effect_together_are_refused(capsys, files, argv, both):
    """A flag the others leave without effect (another mode's, a launcher's beside --workers)
    was ignored without a word; now an error names both, before anything is read."""
    argv = [{"R": str(files / "r.txt"), "D": str(files / "docs.txt"), "S": str(files / "s.svm")}.get(a, a)
            for a in argv]
    rc, out, err = _main(capsys, *argv, *(() if "partition" in argv else ("--epochs" if "lda" not in argv else
                                                                          "--iterations", "1", "--quiet")))
    _refused(rc, err, *both)
    assert len(err.strip().splitlines()) <= 2 and out == "", err


@pytest.mark.parametrize("make, said", [
    (lambda t: t.MF(step="plain"), "step=plain has no effect with mode=sgd: it applies only with mode=minibatch"),
    (lambda t: t.MF(biases=False, damping=5), "damping=5 has no effect with biases=False"),
    (lambda t: t.LogisticRegression(driver=True, strategy="adam"), "driver=True has no effect with strategy=adam"),
])
def test_parameters_that_would_have_no_effect_are_refused_by_fit_in_their_names(make, said):
    import tux2
    with pytest.raises(ValueError) as e:
        make(tux2).fit(np.array([[0, 1, 3.0], [1, 0, 4.0]]))
    assert said in str(e.value)


def test_a_flag_of_another_mode_is_taken_where_it_applies(capsys, files):
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--mode", "minibatch", "--step", "plain",
                         "--batch-unit", "vertex", "--enumerate", "user", "--epochs", "1", "--quiet")
    assert rc == 0, err


def test_partitions_far_above_the_edge_count_are_refused(capsys, files):
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--partitions", "100000", "--epochs", "1")
    _refused(rc, err, "--partitions 100000", "edges")


def test_strata_partitions_above_the_user_count_are_refused(capsys, tmp_path):
    """The stratified partitioner gives partitions whole blocks of users: 1000 partitions
    on 200 users left 800 empty and took minutes for one epoch of 1,800 ratings."""
    f = tmp_path / "r.txt"
    f.write_text("".join(f"{u} {i} {1 + (u + i) % 5}\n" for u in range(20) for i in range(10)))
    rc, out, err = _main(capsys, "run", "mf", str(f), "--partitions", "21", "--epochs", "1")
    _refused(rc, err, "21 partitions for 20 users", "some would be empty")
    rc, out, err = _main(capsys, "run", "mf", str(f), "--partitions", "20", "--epochs", "1", "--quiet")
    assert rc == 0, err


@pytest.mark.parametrize("mode", ["sgd", "als"])
def test_a_test_fraction_that_holds_out_every_rating_is_refused(capsys, files, mode):
    """--test-fraction 0.9999 of 150 ratings leaves none to train on: sgd stopped with the
    engine's 'tiles must be non-decreasing edge positions from 0 to 0', als trained
    'train_rmse 0.0000' and exited 0, both after a note that 'every training rating is 0'."""
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--test-fraction", "0.9999", "--epochs", "1",
                         "--mode", mode)
    _refused(rc, err, "r.txt: no edges left to train on", "--test-fraction")
    assert "every training rating" not in out + err and "epoch" not in out, out


def test_more_threads_than_cores_are_told_they_take_turns(capsys, files):
    """--threads 8 on a machine of fewer cores ran without a word at half the edges/s of 2 (z.train:
    4.0 M against 9.5 M), the model the same; the header says why."""
    from tux2.config import cores
    n = cores() + 2
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--threads", str(n), "--epochs", "1")
    assert rc == 0, err
    assert f"; {n} threads on this machine's {cores()} cores: they take turns, no faster than {cores()}" in out, out
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--threads", "1", "--epochs", "1")
    assert rc == 0 and "take turns" not in out, out


@pytest.mark.slow          # 6-10 s: the default suite's budget (2026-11-26 durations)
def test_partitions_from_threads_or_workers_are_held_to_the_edge_count(capsys, files, tmp_path):
    """P that follows from --threads or --workers meets the same limit as --partitions
    (--threads 100000 used to run 100000 partitions on 2,691 edges). Per-edge SGD in
    strata makes no partitions from threads: its threads share the tiles of one."""
    n = len((files / "r.txt").read_text().splitlines())
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--threads", str(n + 1), "--epochs", "1",
                         "--mode", "minibatch")
    _refused(rc, err, f"{n + 1} partitions (--workers 1 × --threads {n + 1}) for", "edges")
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--threads", str(n + 1), "--epochs", "1")
    assert rc == 0 and "P=1 (stratified)" in out, err
    three = tmp_path / "three.txt"
    three.write_text("0 0 1\n1 1 2\n2 0 3\n")
    r = run_cli("run", "mf", str(three), "--workers", "4", "--epochs", "1", "--timeout", "20", timeout=240)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "4 partitions (--workers 4 × --threads 1) for 3 edges" in r.stderr, r.stderr
    from tux2.config import cores
    assert ("--workers 4 on this machine's" in r.stderr) == (cores() < 4), r.stderr


def test_more_local_workers_than_memory_holds_are_refused_before_any_starts(capsys, tmp_path):
    """--workers 1000 on a 2-core machine started 1000 processes of ~150 MB each (trial
    leftover); it is refused at once, naming the memory and the launcher for several hosts."""
    import tux2
    from tux2.runner import WORKER_MB, available_memory
    three = tmp_path / "three.txt"
    three.write_text("0 0 1\n1 1 2\n2 0 3\n")
    n = 1024
    if available_memory() is None or n * WORKER_MB << 20 <= available_memory():
        pytest.skip("this machine has the memory for 1024 workers")
    rc, out, err = _main(capsys, "run", "mf", str(three), "--workers", str(n), "--epochs", "1")
    _refused(rc, err, f"--workers {n} starts {n} processes on this machine", "launcher")
    with pytest.raises(tux2.Tux2Error, match=f"workers= {n} starts {n} processes on this machine"):
        tux2.MF(k=2, epochs=1).fit(str(three), workers=n)


@pytest.mark.parametrize("argv, said", [
    (["run", "mf", "R", "--columns", "99999999999999999999,2"], "positions count from 1 to 2147483647"),
    (["info", "R", "--columns", "2147483648,1"], "positions count from 1 to 2147483647"),
    (["run", "mf", "R", "--columns", "\u00b2,1"], "'\u00b2' is a name, but the file has no header line"),
    (["predict", "M", "R", "--columns", "1,99999999999999999999"], "positions count from 1 to 2147483647"),
])
def test_a_column_position_past_int64_or_of_other_digits_is_refused(capsys, files, mf_model, argv, said):
    """--columns 99999999999999999999,2 reached the compiled reader ('Int value is too
    large', exit 70: 'this is a bug in tux2'); '\u00b2' is str.isdigit(), and int('\u00b2') raised."""
    argv = [{"R": str(files / "r.txt"), "M": str(mf_model)}.get(a, a) for a in argv]
    rc, out, err = _main(capsys, *argv, *(["--epochs", "1"] if argv[0] == "run" else []))
    _refused(rc, err, said)


def test_ids_and_text_columns_of_other_digits_are_named_not_a_bug(capsys, files, mf_model, tmp_path):
    """'\u00b2' (superscript two) passed str.isdigit() and then int() raised: tux2 predict
    --top-k on a users file with it, MF.predict and MF.recommend, lda --text-column."""
    users = tmp_path / "users.txt"
    users.write_text("\u00b2\n")
    rc, out, err = _main(capsys, "predict", str(mf_model), str(users), "--top-k", "2")
    _refused(rc, err, "users.txt:1: malformed user id")
    from tux2 import MF
    model = MF.load(str(mf_model))
    with pytest.raises(ValueError, match="'\u00b2' .position 0. is not an id of this model"):
        model.predict([["\u00b2", "1"]])
    with pytest.raises(ValueError, match="'\u00b2' .position 0. is not an id of this model"):
        model.recommend(["\u00b2"], k=2)
    assert model.recommend(["1"], k=2)[1].shape == (1, 2)
    docs = tmp_path / "d.csv"
    docs.write_text("id,text\n1,apple banana cherry\n2,dog eagle apple\n")
    rc, out, err = _main(capsys, "run", "lda", str(docs), "--text-column", "\u00b2", "--iterations", "1")
    _refused(rc, err, "no text column '\u00b2' among the 2 columns")
    import pandas as pd
    frame = pd.DataFrame({"u": [1, 2, 3], "i": [1, 2, 1], "r": [3.0, 4.0, 5.0]})
    with pytest.raises(ValueError, match="no column '\u00b2'"):        # MF(columns=) of a DataFrame
        MF(columns="\u00b2,i,r", k=2, epochs=1).fit(frame)


# ------------------------------------------------------------------ item 10, 12: data problems
def test_utf8_bom_is_skipped(capsys, tmp_path):
    p = tmp_path / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbf" + b"".join(f"{i} {i % 7} {1 + i % 4}\n".encode() for i in range(60)))
    rc, out, err = _main(capsys, "run", "mf", str(p), "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    assert rc == 0, err
    with np.load(tmp_path / "m" / "user.npz") as z:
        assert z["ids"].dtype.kind == "i"                 # numeric ids, not '\ufeff0'
    rc, out, err = _main(capsys, "info", str(p))
    assert rc == 0 and "ids 0 … 59" in out, out + err


def test_ratings_beyond_float32_are_refused(capsys, tmp_path):
    p = tmp_path / "big.txt"
    p.write_text("0 0 3\n1 1 4e39\n2 2 5\n")
    rc, out, err = _main(capsys, "run", "mf", str(p), "--epochs", "1")
    _refused(rc, err, f"{p}:2:", "float32")
    assert "lower --lr" not in err


def test_non_utf8_text_names_its_line(capsys, tmp_path):
    p = tmp_path / "docs.txt"
    lines = [("word " * 400).encode() + b"\n"] * 30                # several 8 KB decoding chunks
    lines[23] = b"caf\xe9 au lait\n"
    p.write_bytes(b"".join(lines))
    rc, out, err = _main(capsys, "run", "lda", str(p), "--iterations", "1")
    _refused(rc, err, f"{p}:24: not UTF-8")


def test_gzip_input_is_read_transparently(capsys, tmp_path, files):
    import bz2
    import gzip
    import lzma
    raw = (files / "r.txt").read_bytes()
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--epochs", "1", "--k", "2")
    sizes = out.splitlines()[1]
    for name, pack in (("r.gz", gzip.compress), ("r.bz2", bz2.compress), ("r.xz", lzma.compress)):
        (tmp_path / name).write_bytes(pack(raw))
        rc, out, err = _main(capsys, "run", "mf", str(tmp_path / name), "--epochs", "1", "--k", "2")
        assert rc == 0, err
        assert out.splitlines()[1] == sizes
    (tmp_path / "bad.gz").write_bytes(gzip.compress(raw)[:40])
    rc, out, err = _main(capsys, "run", "mf", str(tmp_path / "bad.gz"))
    _refused(rc, err, f"{tmp_path / 'bad.gz'}: cannot decompress")


def test_lda_stops_on_a_non_finite_likelihood(capsys, files, monkeypatch):
    from tux2.engine import Engine
    real = Engine.context
    monkeypatch.setattr(Engine, "context", lambda self: {**real(self), "ll": float("nan")})
    rc, out, err = _main(capsys, "run", "lda", str(files / "docs.txt"), "--iterations", "3", "--topics", "2",
                         "--out", str(files / "lda-nan"))
    _refused(rc, err, "log-likelihood is not finite at iteration 1")
    assert not (files / "lda-nan" / "model.json").exists()


# ------------------------------------------------------------------ item 13: quoted lines are short
def test_errors_quote_at_most_200_characters_escaped(tmp_path):
    p = tmp_path / "long.txt"
    p.write_bytes(b"0 1 2\n1 2 " + b"x" * 10_000_000 + b"\n")
    r = run_cli("run", "mf", str(p))
    assert r.returncode == 2 and f"{p}:2: malformed value" in r.stderr
    assert len(r.stderr) < 600, len(r.stderr)
    b = tmp_path / "bin.txt"
    b.write_bytes(bytes(range(256)) * 8)
    r = run_cli("run", "mf", str(b))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr) < 800 and "\x00" not in r.stderr and "\\x" in r.stderr


# ------------------------------------------------------------------ the property test
# options that set the amount of work: kept small so an example takes milliseconds
_WORK = {"--epochs": 3, "--iterations": 3, "--k": 8, "--topics": 8, "--factors": 4, "--partitions": 4,
         "--top-k": 5, "--top-words": 20, "--block-size": 1000, "--batch-size": 1000, "--batch": 1000,
         "--eval-every": 5, "--checkpoint-every": 5, "--shrink-rest": 5, "--min-count": 5, "--classes": 4}
# options that start processes or wait for peers: tested by the distributed tests
_SKIP = {"--workers", "--rank", "--world", "--rendezvous", "--bind", "--advertise", "--curve", "--slack",
         "--trace", "--out", "--metrics", "--checkpoint-dir", "--resume", "--config", "--test", "--vocab",
         "--output", "-o", "--help", "--version"}

_ODD = ["-1", "0", "-0", "1", "2", "0.5", "1.5", "-2.5", "nan", "inf", "-inf", "1e309", str(2 ** 70),
        str(-2 ** 63), "x", "", "1e3", "0x10", " 3", "٣"]


def _value(option, kind):
    """A strategy for one option's value: odd values of any type, and small ones of its own."""
    cap = _WORK.get(option)
    if kind == "integer":
        own = st.integers(-3, cap if cap is not None else 2 ** 40).map(str)
    else:
        own = st.floats(allow_nan=True, allow_infinity=True, width=64).map(repr)
    odd = [v for v in _ODD if cap is None or _small(v, cap)]
    return st.one_of(own, st.sampled_from(odd))


def _small(v, cap):
    try:
        return float(v) <= cap
    except ValueError:
        return True


def _numeric_flags(argv):
    """[(flag, type name)] of the numeric options of the command ``argv`` starts with."""
    p, _ = cli.build_parser()
    for word in argv[: 2 if argv[0] == "run" else 1]:
        p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
    kinds = {int: "integer", float: "number"}
    return [(max(a.option_strings, key=len), kinds.get(a.type) or a.type.__name__) for a in p._actions
            if a.option_strings and a.type is not None
            and (a.type in kinds or getattr(a.type, "__name__", "") in ("integer", "number"))
            and not set(a.option_strings) & _SKIP]


COMMANDS = {"mf": ["run", "mf", "R"], "lda": ["run", "lda", "D"], "lr": ["run", "lr", "S"],
            "fm": ["run", "fm", "S"], "linreg": ["run", "linreg", "S"], "blockpg": ["run", "blockpg", "S"], "predict": ["predict", "M", "R"]}


@pytest.fixture(scope="module")
def mf_model(files):
    out = files / "model"
    assert cli.main(["run", "mf", str(files / "r.txt"), "--k", "2", "--epochs", "1", "-q", "--out", str(out)]) == 0
    return out


# lda and blockpg take 6-7 s each cold (2026-11-27 durations): the slow pass runs them
@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c in ("lda", "blockpg") else c
                                     for c in sorted(COMMANDS)])
def test_random_option_values_never_give_a_traceback(command, files, mf_model, tmp_path_factory, capsys):
    base = [{"R": str(files / "r.txt"), "D": str(files / "docs.txt"), "S": str(files / "s.svm"),
             "M": str(mf_model)}.get(a, a) for a in COMMANDS[command]]
    flags = _numeric_flags(base)
    assert len(flags) >= 3, flags
    work = tmp_path_factory.mktemp("cwd")

    @settings(max_examples=12, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.data())
    def check(data):
        chosen = data.draw(st.lists(st.sampled_from(flags), min_size=1, max_size=3, unique=True))
        argv = list(base)
        for flag, kind in chosen:
            argv += [f"{flag}={data.draw(_value(flag, kind))}"]
        import os
        here = os.getcwd()
        os.chdir(work)                                  # --checkpoint-every writes ./tux2-checkpoints
        try:
            rc, out, err = _main(capsys, *argv, "-q") if command != "predict" else _main(capsys, *argv)
        finally:
            os.chdir(here)
        assert "Traceback" not in err, (argv, err)
        assert rc == 0 or (rc == 2 and "tux2: error:" in err), (argv, rc, err)

    check()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=300),
                      st.lists(st.sampled_from([b"0 1 2", b"1 2", b"\xef\xbb\xbf3 4 5", b"1:2 3:4", b"x y z",
                                                b"%%MatrixMarket matrix coordinate real general", b"3 3 3",
                                                b"99999999999 1 1", b"1 2 1e400", b"\xff\xfe", b"# c"]),
                               max_size=8).map(b"\n".join)),
       fmt=st.sampled_from(["auto", "edges", "libsvm", "docword", "triples", "text"]))
@pytest.mark.slow
@example(data=b"1 1:0.5\n-1 1000000000:2\n", fmt="auto")           # a MemoryError before issue 21
@example(data=b"1000000000000000\n3\n1\n1 1 2\n", fmt="auto")    # docword header D = 1e15
def test_info_on_any_bytes_never_gives_a_traceback(tmp_path, capsys, data, fmt):
    p = tmp_path / "in.txt"
    p.write_bytes(data)
    rc, out, err = _main(capsys, "info", str(p), "--format", fmt)
    assert "Traceback" not in err
    assert rc == 0 or (rc == 2 and "tux2: error:" in err), (data, err)


def test_damaged_curve_keys_are_an_error_at_once(capsys, tmp_path, files):
    rc, out, err = _main(capsys, "keys", str(tmp_path / "k"))
    assert rc == 0, err
    (tmp_path / "k" / "tux2.key_secret").write_text("garbage\n")
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--rank", "1", "--world", "2",
                         "--rendezvous", "tcp://127.0.0.1:9", "--curve", str(tmp_path / "k"))
    _refused(rc, err, "--curve", "tux2.key_secret", "tux2 keys")
    # a key of the right length with a character outside Z85: libzmq said only "Invalid argument"
    rc, out, err = _main(capsys, "keys", str(tmp_path / "k2"))
    path = tmp_path / "k2" / "tux2.key_secret"
    text = path.read_text()
    start = text.index('secret-key = "') + len('secret-key = "')
    path.write_text(text[:start] + "~" + text[start + 1:])
    rc, out, err = _main(capsys, "run", "mf", str(files / "r.txt"), "--rank", "1", "--world", "2",
                         "--rendezvous", "tcp://127.0.0.1:9", "--curve", str(tmp_path / "k2"))
    _refused(rc, err, "--curve", "secret key is not 40 Z85 characters")


def test_a_rendezvous_host_with_a_label_too_long_is_an_error(files):
    host = "a" * 70 + ".example.com"
    r = run_cli("run", "mf", str(files / "r.txt"), "--rank", "1", "--world", "2", "--rendezvous",
                f"tcp://{host}:5555", "--epochs", "1", timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "rendezvous host " + host in r.stderr and "--bind" in r.stderr


@pytest.mark.parametrize("algo, data", [("mf", "r.txt"), ("lda", "docs.txt"), ("blockpg", "s.svm"), ("lr", "s.svm")])
def test_config_help_example_is_a_valid_config_of_each_command(files, tmp_path, algo, data):
    """The TOML example in `tux2 run ALGO --help` (--config) runs as that command's config
    file (LDA's help once showed MF's batch-size and no-biases keys, which LDA refuses)."""
    import re
    r = run_cli("run", algo, "--help")
    help_text = " ".join(r.stdout.split())
    example = re.search(r"--config FILE TOML file whose keys are these flags \((.*?)\);", help_text).group(1)
    (tmp_path / "data.txt").write_bytes((files / data).read_bytes())
    (tmp_path / "c.toml").write_text(example.replace(", ", "\n").replace("'", '"') + "\n")
    r = run_cli("run", algo, "--config", str(tmp_path / "c.toml"), timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n") <= 1                      # quiet = true: no per-epoch lines


@pytest.mark.parametrize("argv", [
    ["run", "mf", "--out", ""],                 # trained, then wrote no model
    ["run", "mf", "--resume", ""],              # started afresh instead of resuming
    ["run", "mf", "--checkpoint-every", "1", "--checkpoint-dir", ""],    # wrote into ./tux2-checkpoints
    ["run", "mf", "--metrics="],
    ["run", "lda", "--vocab", ""],
    ["predict", "MODEL", "INPUT", "--output", ""],    # printed to standard output
])
def test_an_empty_option_value_is_an_error_not_a_default(argv):
    r = run_cli(*argv, "--epochs", "1") if argv[0] == "run" else run_cli(*argv)
    assert r.returncode == 2, r.stderr
    flag = next(a for a in argv if a.startswith("-") and a != "--checkpoint-every").rstrip("=")
    assert r.stderr.strip().splitlines()[-2].endswith(f"{flag}: expected a value, got an empty string"), r.stderr


@pytest.mark.parametrize("algo, text, line, what", [
    ("fm", "1 1:1\n\n-1 2:1\n2 1:1 2:1\n", 4, "a binary model takes two labels; a third, 2, after 1 and -1"),
    ("svm", "1 1:1\n0.5 2:1\n-1 1:1\n", 3, "a binary model takes two labels; a third, -1, after 1 and 0.5"),
    ("blockpg", "1 1:1\n-1 2:1\n2 1:1\n", 3, "a binary model takes two labels; a third, 2, after 1 and -1"),
])
def test_a_bad_label_is_named_by_file_and_line(capsys, tmp_path, algo, text, line, what):
    f = tmp_path / "d.svm"
    f.write_text(text)
    rc, out, err = _main(capsys, "run", algo, str(f), "--epochs", "1", "--quiet")
    _refused(rc, err, f"tux2: error: {f}:{line}: ", what)


def test_softmax_takes_any_numeric_labels_and_names_one_beyond_classes(capsys, tmp_path):
    """Labels that are not class numbers (-1) are classes of their own, as liblinear
    takes them; a label at or beyond --classes names its line."""
    f = tmp_path / "d.svm"
    f.write_text("0 1:1\n# c\n1 2:1\n-1 1:1\n")
    rc, out, err = _main(capsys, "run", "softmax", str(f), "--epochs", "1", "--quiet", "--out", str(tmp_path / "m"))
    assert rc == 0 and json.loads((tmp_path / "m" / "model.json").read_text())["labels"] == [-1, 0, 1], err
    f.write_text("0 1:1\n# c\n1 2:1\n2 1:1\n")
    rc, out, err = _main(capsys, "run", "softmax", str(f), "--epochs", "1", "--quiet", "--classes", "2")
    _refused(rc, err, f"tux2: error: {f}:4: ", "label 2 is not below the number of classes 2")


def test_labels_of_no_training_class_count_as_errors_and_are_reported(capsys, tmp_path):
    """A softmax test or predict label the training data lacks (5; -1) is a wrong
    prediction, left out of the log-loss, and counted, as scikit-learn's accuracy counts it."""
    train, test = tmp_path / "t.svm", tmp_path / "s.svm"
    train.write_text("0 1:1\n1 2:1\n0 1:1 2:1\n")
    test.write_text("0 1:1\n5 2:1\n-1 2:1\n1 2:1\n")
    rc, out, _ = _main(capsys, "run", "softmax", str(train), "--test", str(test), "--epochs", "1", "--out",
                       str(tmp_path / "m"))
    assert rc == 0 and "note: 2 test samples have labels of no training class" in out, out
    rc, out, err = _main(capsys, "predict", str(tmp_path / "m"), str(test), "-o", str(tmp_path / "p.txt"))
    res = json.loads(out)
    assert rc == 0 and res["unseen_labels"] == 2 and res["accuracy"] <= 0.5, (out, err)


def test_a_test_file_of_other_labels_is_named_not_blamed_on_the_step(capsys, tmp_path):
    """A binary ±1 test file against a 4-class model (classes 1 … 4): half its labels are no
    class, the other half (+1) read as class 1 and are confidently wrong. The note says the
    labels differ, not that --eta is too large (it had said 'overconfident; lower --eta')."""
    train, test = tmp_path / "t.svm", tmp_path / "s.svm"
    train.write_text("".join(f"{c} {c}:1\n" for c in (1, 2, 3, 4) for _ in range(20)))
    test.write_text("".join(f"{y} {f}:1\n" for y, f in ((1, 3), (-1, 2)) for _ in range(10)))
    rc, out, _ = _main(capsys, "run", "softmax", str(train), "--test", str(test), "--epochs", "10")
    assert rc == 0 and "10 of 20 test samples have labels of no training class: is the test file labelled" in out, out
    assert "overconfident" not in out and "lower --eta" not in out, out
    test.write_text("".join(f"{c} {c}:1\n" for c in (1, 2, 3, 4)) + "7 1:1\n")      # one stray label
    rc, out, _ = _main(capsys, "run", "softmax", str(train), "--test", str(test), "--epochs", "10")
    assert rc == 0 and "is the test file labelled" not in out, out


@pytest.mark.parametrize("text, line, looks", [
    ("3\n5\n6\n1 1 2\n1 3 1\n2 2 4\n2 5 1\n3 1 1\n3 4 2\n", 1,
     "it looks like a UCI docword file (three header lines D, W, NNZ, then 'doc word count' lines), a corpus for "
     "topic models: tux2 run lda reads it (--format docword)"),
    ("the cat sat on the mat\nthe dog ate my homework\n", 1,
     "it looks like plain text, a corpus for topic models (a document per line): tux2 run lda reads it"),
    ("1 1:0.5 2:1\n-1 1:1\n", 1, "it looks like a libsvm file"),
])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_mf_given_a_corpus_says_what_it_looks_like(capsys, tmp_path, text, line, looks, workers):
    f = tmp_path / "in.txt"
    f.write_text(text)
    if workers == "1":
        rc, out, err = _main(capsys, "run", "mf", str(f), "--epochs", "1", "--quiet")
    else:           # distributed ingress reads its byte range with its own parser
        r = run_cli("run", "mf", str(f), "--epochs", "1", "--quiet", "--workers", "2", timeout=300)
        rc, err = r.returncode, r.stderr
    # with two workers each checks the file's head, and whichever stops first is reported
    _refused(rc, err, f"{f}:{line}: ", looks)
    assert re.search(r"tux2: error: (\[worker [01]\] )?" + re.escape(f"{f}:{line}: "), err), err
    assert ("[worker " in err) == (workers == "2"), err


def test_mf_given_prose_whose_quotation_runs_on_says_it_is_text(capsys, tmp_path):
    """gensim's Lee corpus given to 'tux2 run mf' (or 'tux2 partition'): a quotation running on
    into the next paragraph leaves a line with an odd number of '"'s, which the edge reader
    stops on; the error said only 'a quoted field does not close on this line', as for a
    broken CSV, where 'tux2 info' reads the file as text. It now says so and names lda."""
    f = tmp_path / "lee.cor"
    f.write_text(LEE_PROSE)
    for argv in (("run", "mf", str(f), "--epochs", "1", "--quiet"), ("partition", str(f), "--parts", "2")):
        rc, out, err = _main(capsys, *argv)
        _refused(rc, err, f"{f}:1: ", "it looks like plain text, a corpus for topic models (a document per line): "
                 "tux2 run lda reads it")
        assert "write the field without" not in err, err


def test_a_vowpal_wabbit_file_is_named_so(capsys, tmp_path):
    """A VW user's 'label | feature …' lines were only 'feature index is not a non-negative
    integer'; the message now also says which format it looks like and what tux2 reads."""
    f = tmp_path / "train.vw"
    f.write_text("1 | price:0.23 sqft:0.25\n-1 'tag |f a b c\n")
    rc, out, err = _main(capsys, "run", "lr", str(f), "-q")
    _refused(rc, err, f"{f}:1: feature index is not a non-negative integer; this looks like Vowpal Wabbit's "
             "format ('label | feature …'), which tux2 does not read: write 'label index:value …'")


def test_a_space_after_a_libsvm_colon_is_named(capsys, tmp_path):
    """'+1 1: -0.860107 2:-0.111111 …' (a breast-cancer file written with a space after one
    colon): 'malformed feature value (expected a number)' left the reader to find the space
    in a 100-character line. The message now names it and the sed line that joins them."""
    f = tmp_path / "bc.t"
    f.write_text("+1 1: -0.860107 2:-0.111111 3:-1\n-1 1:0.5 2:0.25 3:1\n")
    rc, out, err = _main(capsys, "run", "lr", str(f), "--epochs", "1", "-q")
    _refused(rc, err, f"{f}:1: malformed feature value (expected a number); '1: -0.860107' has a space after its "
             "colon, which the libsvm format does not: write 'index:value' (sed 's/: */:/g' joins them)")
    f.write_text("+1 1:abc 2:-0.111111\n")         # another malformed value: no such note
    rc, out, err = _main(capsys, "run", "lr", str(f), "--epochs", "1", "-q")
    _refused(rc, err, f"{f}:1: malformed feature value (expected a number)")
    assert "space after" not in err, err


def test_a_multi_label_libsvm_line_is_named_so_not_a_malformed_feature(capsys, tmp_path):
    """LIBSVM's multi-label sets (scene, yeast, rcv1-multilabel) write 'l1,l2 index:value
    …': tux2 called the labels a malformed feature, and tux2 info a text corpus. Now
    every reader names the line multi-label and says tux2 takes one label per line."""
    from tux2 import io
    f = tmp_path / "scene_train.svm"          # 1-based features, a single-label line first, then two labels
    f.write_text("1 1:0.776079 2:0.779357 294:0.050622\n0,4 1:0.700339 2:0.713079 294:0.213513\n"
                 "5 1:0.52 3:0.1\n")
    msg = f"{f}:2: a multi-label line (labels 0,4): tux2 takes one label per line"
    assert io.sniff_input(str(f)) == "libsvm"
    for argv in (("run", "lr", str(f), "--epochs", "1", "-q"), ("run", "softmax", str(f), "--epochs", "1", "-q"),
                 ("info", str(f))):
        rc, out, err = _main(capsys, *argv)
        _refused(rc, err, msg)
        assert "malformed" not in err, err
    with pytest.raises(io.InputError, match=msg.replace("(", "\\(").replace(")", "\\)")):
        io.read_libsvm(str(f))
    f.write_text("1 1:0.5 2:x\n")                  # a malformed feature is still one
    _refused(*_main(capsys, "run", "lr", str(f), "-q")[::2], f"{f}:1: malformed feature value (expected a number)")


@pytest.mark.parametrize("text", ["1 3:1 7:2\n-1 2:0.5 3:1.5e-3\n+1 9:2\n", "1\n-1\n1\n"], ids=["libsvm", "labels"])
def test_lda_given_a_libsvm_file_says_so(capsys, tmp_path, text):
    """As tux2 info reads it: a libsvm file, whose 'words' as text would be '3', '1', '5e'."""
    f = tmp_path / "in.svm"
    f.write_text(text)
    rc, out, err = _main(capsys, "run", "lda", str(f), "--iterations", "1", "--quiet")
    _refused(rc, err, f"tux2: error: {f}: it looks like a libsvm file ('label index:value …'), not text: tux2 run "
                      "lr, svm, softmax, fm or blockpg reads it (--format text reads it as text anyway)")
    assert _main(capsys, "info", str(f))[1].startswith(f"{f}: libsvm, ")
    assert _main(capsys, "run", "lda", str(f), "--iterations", "1", "--quiet", "--format", "text", "--numbers",
                 "keep")[0] == 0
    f.write_text("alice: hi there\nbob: 12:30 then\n")      # colons in text are no libsvm
    assert _main(capsys, "run", "lda", str(f), "--iterations", "1", "--quiet")[0] == 0
    assert _main(capsys, "info", str(f))[1].startswith(f"{f}: text, ")


def test_a_bad_rating_line_gets_no_corpus_hint(capsys, tmp_path):
    f = tmp_path / "r.txt"
    f.write_text("u1 i1 4\nu2 i1 x\n")
    rc, out, err = _main(capsys, "run", "mf", str(f), "--epochs", "1", "--quiet")
    _refused(rc, err, f"{f}:2: malformed value")
    assert "looks like" not in err


@pytest.mark.parametrize("data", [b"", b"# only a comment\n\n", bytes(range(256)) * 4, b"1\n2\n9999\n"],
                         ids=["empty", "comments", "binary", "one-column-of-ids"])
def test_an_empty_or_binary_file_gets_no_corpus_hint(capsys, tmp_path, data):
    f = tmp_path / "r.txt"
    f.write_bytes(data)
    rc, out, err = _main(capsys, "run", "mf", str(f), "--epochs", "1", "--quiet")
    assert rc == 2 and err.startswith(f"tux2: error: {f}"), err
    assert "looks like" not in err and "Traceback" not in err


@pytest.mark.parametrize("header", ["user,item,rating\n", "user\titem\trating\n# no ratings yet\n\n",
                                    "user item rating\n"], ids=["csv", "tsv", "spaces"])
@pytest.mark.parametrize("argv", [["run", "mf", "{f}", "--epochs", "1"], ["info", "{f}"], ["partition", "{f}", "-p", "2"]])
def test_a_header_line_alone_is_named_as_having_no_data_lines(capsys, tmp_path, header, argv):
    f = tmp_path / "r.csv"
    f.write_text(header)
    rc, out, err = _main(capsys, *[a.format(f=f) for a in argv])
    if argv[0] == "info" and header.startswith("user item"):
        return          # words separated by spaces: a one-document text corpus to tux2 info
    _refused(rc, err, f"tux2: error: {f}: no edges found: the file's one line (user item rating) reads as a header "
                      "line (names, not numbers) and no data lines follow")
    assert err.count("\n") == 1 and "looks like" not in err


@pytest.mark.parametrize("text, expect", [
    ("k = 4\n\nepochs = = 2\n", ":3: not valid TOML: Invalid value (column 10) (line text: 'epochs = = 2')"),
    ("k = 4\nk = 5\n", ":2: not valid TOML: Cannot overwrite a value (column 6) (line text: 'k = 5')"),
    ('k = 4\nmode = "sgd\n', ":2: not valid TOML: Illegal character '\\n' (column 12) (line text: 'mode = \"sgd')"),
    ('k = 1\nk = "abc', ":2: not valid TOML: Unterminated string (at end of document) (line text: 'k = \"abc')"),
    ("k = 1\n\xff\n", ": not valid TOML: not UTF-8 text (byte 6)"),
])
def test_a_config_that_is_not_toml_is_named_by_file_and_line(capsys, tmp_path, text, expect):
    conf = tmp_path / "bad.toml"
    conf.write_bytes(text.encode("latin-1"))
    rc, out, err = _main(capsys, "run", "mf", "--config", str(conf))
    _refused(rc, err)
    assert err.splitlines() == [f"tux2: error: {conf}{expect}"], err


@pytest.mark.parametrize("argv", [
    ["run", "mf", "{ratings}", "--epochs", "1", "--out", "{bad}"],
    ["run", "lda", "{corpus}", "--iterations", "1", "--out", "{bad}"],
    ["run", "blockpg", "{svm}", "--epochs", "1", "--out", "{bad}"],
    ["run", "lr", "{svm}", "--epochs", "1", "--out", "{bad}"],
    ["run", "mf", "{ratings}", "--epochs", "1", "--metrics", "{bad}"],
    ["partition", "{ratings}", "-p", "2", "-s", "random", "--save", "{bad}"],
])
@pytest.mark.parametrize("bad, why", [
    ("{tmp}/somefile/model", "{tmp}/somefile is not a directory"),     # under a regular file
    ("/proc/tux2-test/model", ": /proc"),        # no one can make it, root neither (root: mkdir's error)
    ("/sys/tux2-test", ": /sys"),
])
def test_an_output_no_one_can_create_is_refused_before_any_work(capsys, tmp_path, argv, bad, why):
    (tmp_path / "somefile").write_text("")
    (tmp_path / "r.txt").write_text("1 2 4\n2 3 5\n3 1 3\n1 3 2\n2 1 1\n")
    (tmp_path / "c.txt").write_text("the cat sat on the mat\nthe dog ate my homework\n")
    (tmp_path / "d.svm").write_text("1 1:0.5 2:1\n-1 1:1\n")
    bad, why = bad.format(tmp=tmp_path), why.format(tmp=tmp_path)
    rc, out, err = _main(capsys, *[a.format(ratings=tmp_path / "r.txt", corpus=tmp_path / "c.txt",
                                            svm=tmp_path / "d.svm", bad=bad) for a in argv])
    _refused(rc, err, f"tux2: error: {bad}: cannot create --", why)
    assert "epoch" not in out and "iteration" not in out and "parts" not in out, out     # nothing ran


@pytest.mark.parametrize("argv,hint", [
    (["run", "lda", "docs.txt", "--epochs", "5"], "--epochs 5: use --iterations (--epochs is an option of tux2 run mf, blockpg"),
    (["run", "lda", "--k=5"], "--k=5: use --topics/-k (--k is an option of tux2 run mf)"),
    (["run", "mf", "--iterations", "5"], "use --epochs (--iterations is an option of tux2 run lda)"),
    (["run", "lda", "--vocabulary", "v.txt"], "did you mean --vocab\n"),
    (["run", "lda", "--lr", "0.1"], "tux2 run lda has no --lr (--lr is an option of tux2 run mf)"),
    # the peers' names: LibMF/Spark's lambda and regParam, surprise's n_factors and reg_all, scikit-learn's C
    (["run", "mf", "--lambda", "0.1"], "--lambda: use --reg\n"),
    (["run", "mf", "--regParam", "0.1"], "--regParam: use --reg\n"),
    (["run", "mf", "--n_factors", "20"], "--n_factors: use --k\n"),
    (["run", "mf", "--maxIter", "5"], "--maxIter: use --epochs\n"),
    (["run", "lr", "--lambda", "1"], "--lambda: use --lam\n"),
    (["run", "mf", "--lam", "0.1"], "--lam: use --reg (--lam is an option of tux2 run blockpg"),     # the GLMs' λ
    (["run", "lr", "--C", "2"], "--C: use --lam (λ = 1/C)\n"),
    (["run", "lda", "--num_topics", "5"], "--num_topics: use --topics/-k\n"),
    (["run", "lda", "--Epochs", "5"], "--Epochs: use --iterations (--Epochs is an option of tux2 run mf"),
    (["run", "lda", "--eta", "0.1"], "--eta: use --beta (--eta is an option of tux2 run lr"),
    (["run", "lda", "--passes", "5"], "--passes: use --iterations\n"),                          # gensim's
    (["run", "mf", "--lambda", "0.1", "--n_factors", "20"], "--lambda: use --reg; --n_factors: use --k\n"),
    # LibMF's single-dash flags: -k factors, -t iterations, -l2 λ, -s threads (not -p, its validation set: in
    # tux2 run lr, -p would more likely mean --partitions)
    (["run", "mf", "r.txt", "-k", "20"], "-k 20: use --k (-k is an option of tux2 run lda)\n"),
    (["run", "mf", "r.txt", "-t", "20", "-l2", "0.05"], "-t: use --epochs; -l2: use --reg\n"),
    (["run", "lr", "d.svm", "-p", "4"], "-p 4: tux2 run lr has no -p\n"),
    (["run", "lda", "d.txt", "-t", "20"], "-t 20: use --iterations\n")])
def test_a_flag_of_another_algorithm_names_this_ones(capsys, argv, hint):
    """`tux2 run lda --epochs 5` (LDA counts --iterations) said only 'unrecognized
    arguments: --epochs 5' under the usage of `tux2` itself."""
    rc, out, err = _main(capsys, *argv)
    _refused(rc, err, f"tux2: error: run {argv[1]}: unrecognized arguments: ", hint)
    assert err.strip().splitlines()[-1] == f"try 'tux2 run {argv[1]} --help'", err


@pytest.mark.parametrize("algo", ["lr", "svm", "softmax", "fm"])
def test_a_weight_given_to_the_glms_reg_names_lam(capsys, algo):
    """--reg is λ in tux2 run mf and reg= is λ in every estimator, but the GLMs' --reg picks
    l2 or l1: `tux2 run lr --reg 0.01` said only "invalid choice: '0.01' (choose from 'l2', 'l1')"."""
    rc, out, err = _main(capsys, "run", algo, "--reg", "0.01")
    _refused(rc, err, f"tux2: error: run {algo}: argument --reg: 0.01 is a weight λ: use --lam 0.01 (here --reg "
             "picks the regulariser, l2 or l1", "")
    rc, out, err = _main(capsys, "run", algo, "--reg", "l3")
    _refused(rc, err, "invalid choice: 'l3' (choose from 'l2', 'l1')", "")


def test_spark_als_rank_names_k(capsys, tmp_path):
    """Spark ALS's rank is the number of factors; tux2's --rank is a worker's, so
    `tux2 run mf r.txt --rank 20` said only that a worker needs the world size."""
    (tmp_path / "r.txt").write_text("1 1 5\n2 1 3\n")
    rc, out, err = _main(capsys, "run", "mf", str(tmp_path / "r.txt"), "--rank", "20")
    _refused(rc, err, "world size", "number of factors its rank: here that is --k")


@pytest.mark.parametrize("argv", [["run", "mf", "--k", "x"], ["run", "lda", "--bogus"], ["run"], [],
                                  ["predict"], ["run", "lr", "--strategy", "nope"]])
def test_a_usage_error_is_one_line_and_where_to_look(capsys, argv):
    """argparse printed the usage of every flag (15-21 lines) before the one that says
    what is wrong; as git and cargo, the error and a hint where the flags are."""
    rc, out, err = _main(capsys, *argv)
    where = " ".join(["tux2", *argv[:2]]) if argv[:1] == ["run"] and len(argv) > 1 else " ".join(["tux2", *argv[:1]])
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 2 and err.startswith("tux2: error: "), err
    assert err.splitlines()[1] == f"try '{where} --help'", err


@pytest.mark.parametrize("argv, output", [
    (["run", "mf", "{d}/r.txt", "--epochs", "1", "-q", "--metrics", "{d}/r.txt"], "--metrics"),
    (["run", "mf", "{d}/r.txt", "--test", "{d}/t.txt", "--epochs", "1", "-q", "--metrics", "{d}/t.txt"], "--metrics"),
    (["run", "lr", "{d}/s.svm", "--epochs", "1", "-q", "--metrics", "{d}/link.svm"], "--metrics"),
    (["predict", "{d}/model", "{d}/r.txt", "-o", "{d}/r.txt"], "-o"),
    (["predict", "{d}/model", "{d}/r.txt", "-o", "{d}/p.txt", "--metrics", "{d}/r.txt"], "--metrics"),
])
def test_an_output_that_is_an_input_file_is_refused_before_it_is_overwritten(capsys, files, mf_model, tmp_path,
                                                                             argv, output):
    """--metrics (or predict's -o) naming the input file, by its name or a link to it,
    trained or predicted and then wrote over the user's data."""
    for name in ("r.txt", "s.svm"):
        (tmp_path / name).write_bytes((files / name).read_bytes())
    (tmp_path / "t.txt").write_bytes((files / "r.txt").read_bytes())
    (tmp_path / "link.svm").symlink_to(tmp_path / "s.svm")
    (tmp_path / "model").symlink_to(mf_model)
    before = {n: (tmp_path / n).read_bytes() for n in ("r.txt", "s.svm", "t.txt")}
    rc, _, err = _main(capsys, *[a.format(d=tmp_path) for a in argv])
    _refused(rc, err, f"{output} names the input file", "writing it would overwrite the data")
    assert {n: (tmp_path / n).read_bytes() for n in before} == before


@pytest.mark.parametrize("batch, shown", [(None, "batch 1,"), ("1000", "batch 30,"), ("0", "batch 30,"), ("7", "batch 7,")])
def test_the_header_gives_the_batch_the_run_takes(capsys, files, batch, shown):
    """The default batch (64, or n/20 for fewer than 1,280 samples) and one larger than
    the data (a full batch, which the header said was 1000 samples of 30)."""
    rc, out, err = _main(capsys, "run", "lr", str(files / "s.svm"), "--epochs", "1",
                         *(["--batch", batch] if batch else []))
    assert rc == 0, err
    assert shown in out.splitlines()[1], out


def test_an_optimizer_that_does_not_go_with_the_strategy_is_an_error_not_a_bug(tmp_path):
    """--strategy adam --optimizer sgd was 'tux2: internal error: ValueError … this is a
    bug in tux2' (exit 70), and fit raised it only after reading the data."""
    import tux2
    from tux2 import io
    from tux2.datasets import sparse_classification
    g, y, _ = sparse_classification(n_samples=100, n_features=20, seed=1)
    path = tmp_path / "s.svm"
    io.write_libsvm(path, g, y)
    for opts in (("--strategy", "adam", "--optimizer", "sgd"), ("--strategy", "modelavg", "--optimizer", "adam")):
        r = run_cli("run", "lr", str(path), *opts)
        assert r.returncode == 2 and r.stderr.startswith("tux2: error: optimizer ") and "does not go with" in r.stderr
    with pytest.raises(ValueError, match="optimizer 'sgd' does not go with strategy 'adam'"):
        tux2.LogisticRegression(strategy="adam", optimizer="sgd").fit(None)


def _string_id_model(capsys, tmp_path):
    """A model in tmp_path/m of users u1-u3 and items i1-i3 (string ids)."""
    train = tmp_path / "s.tsv"
    train.write_text("".join(f"u{u}\ti{i}\t{1 + (u + i) % 5}\n" for u in range(1, 4) for i in range(1, 4)))
    rc, out, err = _main(capsys, "run", "mf", str(train), "--k", "2", "--epochs", "2", "--out", str(tmp_path / "m"),
                         "-q")
    assert rc == 0, err


def test_a_one_line_pairs_file_of_a_string_id_model_s_ids_is_data(capsys, tmp_path):
    """'u2 i2' alone reads as a header line of names to a new file; to a model whose
    user and item ids these are, it is the pair to predict (a line of other names
    stays a header, refused as having no data lines)."""
    _string_id_model(capsys, tmp_path)
    one = tmp_path / "one.tsv"
    one.write_text("u2\ti3\n")
    rc, out, err = _main(capsys, "predict", str(tmp_path / "m"), str(one))
    assert rc == 0 and out.splitlines()[0] == "# user item prediction", err
    assert out.splitlines()[1].startswith("u2 i3 ") and len(out.splitlines()) == 2
    one.write_text("user\titem\n")
    rc, out, err = _main(capsys, "predict", str(tmp_path / "m"), str(one))
    _refused(rc, err, f"tux2: error: {one}: no edges found: the file's one line (user item) reads as a header")


def test_a_one_line_pairs_file_of_a_new_user_and_a_known_item_is_data(capsys, tmp_path):
    """'zed i3' alone, zed new to the model and i3 its item: a cold-start query, the pair
    to predict (by the item's baseline), not a header line; a one-line file of names
    neither of which is the model's, or of column names, stays a header."""
    _string_id_model(capsys, tmp_path)
    one = tmp_path / "one.csv"
    for line, pair in (("zed,i3\n", "zed i3 "), ("u2\tnew item\n", "u2 new item ")):
        one.write_text(line)
        rc, out, err = _main(capsys, "predict", str(tmp_path / "m"), str(one))
        assert rc == 0 and out.splitlines()[1].startswith(pair) and len(out.splitlines()) == 2, (line, out, err)
    for line in ("zed,nothing\n", "user,i3\n"):
        one.write_text(line)
        rc, out, err = _main(capsys, "predict", str(tmp_path / "m"), str(one))
        _refused(rc, err, f"tux2: error: {one}: no edges found: the file's one line")


@pytest.mark.parametrize("algo", ["lr", "svm", "softmax", "fm", "linreg", "blockpg"])
def test_the_linear_models_help_says_they_read_tables_too(capsys, algo):
    """Their descriptions said 'over a libsvm file' only, though a CSV table with a header
    (labels in a named column) trains as well."""
    rc, out, err = _main(capsys, "run", algo, "--help")
    out = " ".join(out.split())
    assert rc == 0 and "over a libsvm file or a table of numbers (CSV, TSV" in out, out[:600]


def test_python_dash_m_tux2_is_the_tux2_command():
    """'python -m tux2' (a notebook's '!python -m tux2 …', a venv whose scripts are not on PATH)
    said 'No module named tux2.__main__'; it is now the tux2 command."""
    import subprocess
    import sys
    import tux2
    r = subprocess.run([sys.executable, "-m", "tux2", "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith(tux2.__version__), (r.stdout, r.stderr)
    r = subprocess.run([sys.executable, "-m", "tux2", "run", "mf", "--k", "0"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "tux2: error:" in r.stderr and "Traceback" not in r.stderr, r.stderr
