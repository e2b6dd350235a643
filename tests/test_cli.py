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
    # the remedy of events is --implicit (ALS by default), not --duplicates sum alone: that trains squared loss on
    # counts, every one 1 in a file of distinct pairs (a model of nothing)
    assert "--implicit (implicit=True) takes each line as one event" in r.stderr, r.stderr
    assert run_cli("run", "mf", str(p), "--implicit", "--k", "2", "--epochs", "1", "--quiet").returncode == 0


def test_help_shows_defaults():
    r = run_cli("run", "mf", "--help")
    assert r.returncode == 0 and "(default: 50)" in r.stdout


def _strict_json(text):
    """The JSON value of ``text``, refusing NaN and Infinity (as jq and strict parsers do)."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
def test_metrics_without_a_value_are_null_not_nan(tmp_path, capsys):
    """Test RMSE without test ratings, AUC of a one-class test set: null in --metrics,
    model.json and predict --metrics (Python's NaN is not JSON)."""
    from tux2 import cli
    (tmp_path / "r.txt").write_text("".join(f"{u} {i} {1 + (u * i) % 5}\n" for u in range(12) for i in range(6)))
    assert cli.main(["run", "mf", str(tmp_path / "r.txt"), "--test-fraction", "0", "--epochs", "2", "--k", "2",
                     "--metrics", str(tmp_path / "mf.jsonl"), "--out", str(tmp_path / "mf")]) == 0
    assert "test_rmse" not in capsys.readouterr().out          # nothing to show, rather than 'nan'
    recs = [_strict_json(line) for line in (tmp_path / "mf.jsonl").read_text().splitlines()]
    assert [r["test_rmse"] for r in recs] == [None, None]
    (tmp_path / "train.svm").write_text("1 1:1 2:1\n-1 2:1 3:1\n1 1:1\n-1 3:1\n")
    (tmp_path / "test.svm").write_text("1 1:1\n1 2:1\n")          # one class: no AUC
    assert cli.main(["run", "lr", str(tmp_path / "train.svm"), "--test", str(tmp_path / "test.svm"), "--epochs", "2",
                     "--metrics", str(tmp_path / "lr.jsonl"), "--trace", str(tmp_path / "trace"),
                     "--out", str(tmp_path / "lr")]) == 0
    recs = [_strict_json(line) for line in (tmp_path / "lr.jsonl").read_text().splitlines()]
    assert [r["test_auc"] for r in recs] == [None, None] and recs[-1]["test_accuracy"] in (0.0, 0.5, 1.0)
    for path in (tmp_path / "trace" / "trace-0.jsonl", tmp_path / "lr" / "model.json", tmp_path / "mf" / "model.json"):
        for line in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            _strict_json(line)
    capsys.readouterr()
    assert cli.main(["predict", str(tmp_path / "lr"), str(tmp_path / "test.svm"), "-o", str(tmp_path / "p.txt"),
                     "--metrics", str(tmp_path / "p.json")]) == 0
    assert _strict_json(capsys.readouterr().out)["auc"] is None
    assert _strict_json((tmp_path / "p.json").read_text())["auc"] is None


def test_errors_name_the_command_lines_remedies_first(ratings_file, tmp_path):
    """The overlap error listed Python remedies (Engine(strata=...), Apply(combine=...))
    before the command line's; the duplicate-edge error said duplicates='sum'|…"""
    r = run_cli("run", "mf", ratings_file, "--order", "input", "--partitions", "4", "--epochs", "1")
    assert r.returncode == 2 and "Remedies: leave out --order and --partitioner" in r.stderr, r.stderr
    assert "Engine(strata" not in r.stderr and "Apply(" not in r.stderr, r.stderr
    (tmp_path / "d.txt").write_text("1 2 3\n2 3 4\n1 2 5\n")
    r = run_cli("run", "mf", str(tmp_path / "d.txt"))
    assert r.returncode == 2 and "choose a policy with --duplicates sum|last|keep" in r.stderr, r.stderr


def test_test_fraction_holds_out_the_same_lines_whatever_the_seed(tmp_path):
    """--seed changed the held-out lines too, so runs of several seeds were measured on
    different test sets; now the seed changes the model alone (as surprise's
    train_test_split and Spark's randomSplit take a seed of their own)."""
    rng = np.random.default_rng(4)
    path = tmp_path / "r.tsv"
    path.write_text("".join(f"{1 + rng.zipf(1.5) % 300}\t{1 + rng.zipf(1.6) % 80}\t{rng.integers(1, 6)}\t{t}\n"
                            for t in range(3000)))
    seen = []
    for seed in ("0", "5"):
        r = run_cli("run", "mf", str(path), "--duplicates", "last", "--k", "4", "--epochs", "2", "--seed", seed,
                    "--out", str(tmp_path / seed), "--quiet")
        assert r.returncode == 0, r.stderr
        seen.append(np.load(tmp_path / seed / "seen.npz"))
        seen[-1] = (seen[-1]["indptr"], seen[-1]["indices"])
    assert all(np.array_equal(a, b) for a, b in zip(*seen))          # the same training lines
    assert not np.array_equal(np.load(tmp_path / "0" / "user.npz")["p"], np.load(tmp_path / "5" / "user.npz")["p"])
