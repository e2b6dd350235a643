"""Standard output that goes away: a training run whose progress lines nobody reads any
more (``| head``, a full disk, started with it closed) still trains and writes its
model; predictions that cannot reach standard output are an error, never a traceback."""
import os
import subprocess
import sys

import pytest

from tests.conftest import run_cli
from tux2 import MF


def _start(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "tux2.cli", *args], stderr=subprocess.PIPE, text=True, **kw)


def _model(path):
    assert os.path.exists(os.path.join(path, "model.json")), os.listdir(os.path.dirname(path))
    return MF.load(path)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_reader_that_exits_leaves_the_run_and_its_model(ratings_file, tmp_path, workers):
    out = str(tmp_path / "model")
    p = _start("run", "mf", ratings_file, "--k", "3", "--epochs", "5", "--out", out, "--workers", str(workers),
               "--timeout", "20", stdout=subprocess.PIPE)
    assert p.stdout.readline().startswith("tux2 ")          # `| head -1`: one line read, then the pipe closes
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=300) == 0, err
    assert "error" not in err and "Traceback" not in err, err
    assert _model(out).run_["iteration"] == 5


def test_a_full_standard_output_is_a_warning_and_the_model_is_written(ratings_file, tmp_path):
    out = str(tmp_path / "model")
    with open("/dev/full", "w") as full:
        p = _start("run", "mf", ratings_file, "--k", "3", "--epochs", "2", "--out", out, stdout=full)
        err = p.communicate(timeout=300)[1]
    assert p.returncode == 0, err
    assert "tux2: warning: cannot write to standard output (No space left on device)" in err, err
    assert "Traceback" not in err, err
    _model(out)


def test_started_with_standard_output_closed(ratings_file, tmp_path):
    out = str(tmp_path / "model")
    p = _start("run", "mf", ratings_file, "--k", "3", "--epochs", "2", "--out", out,
               preexec_fn=lambda: os.close(1))
    err = p.communicate(timeout=300)[1]
    assert p.returncode == 0 and "Traceback" not in err, err
    _model(out)
    p = _start("predict", out, ratings_file, preexec_fn=lambda: os.close(1))
    err = p.communicate(timeout=300)[1]
    assert p.returncode == 2, err
    assert err.startswith("tux2: error: standard output is closed: give -o FILE"), err


def test_predictions_to_a_full_standard_output_are_an_error(ratings_file, tmp_path):
    out = str(tmp_path / "model")
    assert run_cli("run", "mf", ratings_file, "--k", "3", "--epochs", "1", "--out", out).returncode == 0
    with open("/dev/full", "w") as full:
        p = _start("predict", out, ratings_file, stdout=full)
        err = p.communicate(timeout=300)[1]
    assert p.returncode == 2, err
    assert err.startswith("tux2: error: cannot write the predictions to standard output: No space left"), err


@pytest.mark.parametrize("buffered", ["", "1"], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("argv", [["info", "{f}"], ["info", "{f}", "--json"], ["partition", "{f}", "-p", "2"],
                                  ["predict", "{m}", "--top-k", "3"], ["--version"], ["--help"],
                                  ["run", "mf", "--help"], ["predict", "--help"]])
def test_a_report_to_a_full_standard_output_is_one_error_line(ratings_file, tmp_path, buffered, argv):
    """``tux2 info FILE > /dev/full``: one line naming standard output, status 2 — not
    '[Errno 28]', nor Python's 'Exception ignored' at exit (buffered output), nor status 0
    (argparse drops a failed write of --help and --version)."""
    if "{m}" in argv:
        MF(k=2, epochs=1).fit(ratings_file).save(tmp_path / "m")
    with open("/dev/full", "w") as full:
        p = _start(*[a.format(f=ratings_file, m=tmp_path / "m") for a in argv], stdout=full,
                   env={**os.environ, "PYTHONUNBUFFERED": buffered and "1"})
        err = p.communicate(timeout=300)[1]
    predictions = argv[0] == "predict" and "--help" not in argv
    what = "cannot write the predictions to standard output" if predictions else "standard output"
    assert p.returncode == 2 and err.splitlines() == [f"tux2: error: {what}: No space left on device"
                                                      + ("; give -o FILE" if predictions else "")], err


@pytest.mark.parametrize("argv, expect", [
    (["info", "{f}"], "tux2: error: standard output is closed: tux2 info prints its report there"),
    (["partition", "{f}", "-p", "2", "-s", "random"],
     "tux2: error: standard output is closed: tux2 partition prints its reports there (--save DIR writes"),
    (["partition", "{f}", "-p", "2", "-s", "random", "--json"], "tux2 partition prints its reports there"),
    # a run without --out or --metrics kept nothing (exit 0, everything it printed lost: break-it trial)
    (["run", "mf", "{f}", "--epochs", "1"], "tux2 run prints its epochs' numbers there: give --out DIR (the model)"),
    (["run", "mf", "{f}", "--epochs", "1", "--workers", "2"], "or --metrics FILE (one JSON line per epoch)"),
])
def test_a_report_to_a_closed_standard_output_is_an_error(ratings_file, argv, expect):
    p = _start(*[a.format(f=ratings_file) for a in argv], preexec_fn=lambda: os.close(1))
    err = p.communicate(timeout=300)[1]
    lines = err.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("tux2: error: standard output is closed: ")
    assert expect in lines[0], err


def test_partition_with_its_assignments_saved_works_with_standard_output_closed(ratings_file, tmp_path):
    p = _start("partition", ratings_file, "-p", "2", "-s", "random", "-s", "hdrf", "--save", str(tmp_path / "a"),
               preexec_fn=lambda: os.close(1))
    err = p.communicate(timeout=300)[1]
    assert p.returncode == 0 and "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path / "a")) == ["hdrf.npz", "random.npz"]


def test_predictions_to_a_reader_that_exits_still_write_the_metrics(ratings_file, tmp_path):
    """``tux2 predict MODEL FILE --metrics m.json | head -1``: the predictions the reader no
    longer takes go nowhere, and the metrics are still written (the JSON line on stderr and
    --metrics FILE): the pipe's close ended the command before them, status 0, losing them."""
    MF(k=2, epochs=1).fit(ratings_file).save(tmp_path / "m")
    metrics = tmp_path / "metrics.json"
    r, w = os.pipe()
    os.close(r)                     # the reader has gone before the first line: every write fails (EPIPE)
    p = _start("predict", str(tmp_path / "m"), ratings_file, "--metrics", str(metrics), stdout=w)
    os.close(w)
    err = p.communicate(timeout=300)[1]
    assert p.returncode == 0 and "Traceback" not in err, err
    assert '"rmse"' in err, err
    assert '"rmse"' in metrics.read_text()


@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/stderr", "-"])
def test_metrics_to_a_pipe(ratings_file, target, tmp_path):
    """--metrics /dev/stdout (or /dev/stderr) read through a pipe, as `| jq` or a notebook's
    subprocess reads it: one JSON line per epoch. It stopped with 'tux2: error: [Errno 29]
    Illegal seek' (each record's start was asked of the file, to cut a torn one back).
    '--metrics -' is standard output, as tux2 predict's '-o -' (it wrote a file named '-')."""
    p = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, "--epochs", "2", "--quiet",
                        "--metrics", target], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert not os.path.exists(tmp_path / "-")
    lines = (p.stderr if target == "/dev/stderr" else p.stdout).splitlines()
    assert [int(line.split(",")[0].split(":")[1]) for line in lines] == [1, 2], lines
