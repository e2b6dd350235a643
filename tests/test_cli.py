"""The command line as a user runs it (subprocesses, real files)."""
import json

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2.datasets import netflix_like
from tux2.io import write_edge_list


def test_run_mf_on_files_writes_metrics_and_model(tmp_path):
    train, test = netflix_like(n_users=200, n_items=50, n_ratings=4000, seed=2)
    write_edge_list(tmp_path / "train.txt", train)
    write_edge_list(tmp_path / "test.txt", test)
    r = run_cli("run", "mf", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"), "--k", "8",
                "--epochs", "3", "--partitions", "2",
                "--metrics", str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "model"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("epoch ") == 3 and "test_rmse" in r.stdout
    recs = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [x["epoch"] for x in recs] == [1, 2, 3]
    assert all({"epoch", "time_s", "train_rmse", "test_rmse"} <= set(x) for x in recs)
    assert recs[-1]["test_rmse"] < recs[0]["test_rmse"]
    meta = json.loads((tmp_path / "model" / "model.json").read_text())
    assert meta["algorithm"] == "mf" and meta["k"] == 8 and meta["clock"] == 3 * 16      # a clock per stratum
    users = np.load(tmp_path / "model" / "user.npz")
    assert users["p"].shape == (200, 8) and users["ids"].tolist() == list(range(200))


def test_default_dataset_minibatch_mode(tmp_path):
    r = run_cli("run", "mf", "--epochs", "1", "--k", "4", "--mode", "minibatch", "--batch-size", "100000")
    assert r.returncode == 0, r.stderr
    assert "built-in Netflix-shaped set" in r.stdout and "epoch   1/1" in r.stdout


@pytest.mark.slow
def test_malformed_input_is_one_clear_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("0 1 4\n1 2 5\n2 zz 3\n")
    r = run_cli("run", "mf", str(p), "--epochs", "1")
    assert r.returncode == 2
    assert f"{p}:3: malformed vertex id" in r.stderr and "Traceback" not in r.stderr


def test_nan_rating_and_empty_file(tmp_path):
    p = tmp_path / "nan.txt"
    p.write_text("0 1 4\n1 2 NaN\n")
    r = run_cli("run", "mf", str(p))
    assert r.returncode == 2 and f"{p}:2: value is NaN" in r.stderr and "Traceback" not in r.stderr
    e = tmp_path / "empty.txt"
    e.write_text("")
    r = run_cli("run", "mf", str(e))
    assert r.returncode == 2 and "no edges found" in r.stderr


def test_missing_rating_column(tmp_path):
    p = tmp_path / "pairs.txt"
    p.write_text("0 1\n1 0\n")
    r = run_cli("run", "mf", str(p))
    assert r.returncode == 2 and "needs a rating column" in r.stderr


def test_help_shows_defaults():
    r = run_cli("run", "mf", "--help")
    assert r.returncode == 0 and "(default: 50)" in r.stdout
