"""--straggler RANK:FACTOR[:JITTER] (one worker slowed, for SSP experiments) and the
per-clock staleness the trace and metrics record: real workers over ZeroMQ on loopback,
every subprocess with a timeout."""
import itertools
import json
import os

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2.engine import Straggler
from tux2.errors import SchemaError
from tux2.runner import staleness_histogram


@pytest.mark.parametrize("spec, says", [
    ("1", "expected RANK:FACTOR[:JITTER]"), ("1:x", "expected RANK:FACTOR[:JITTER]"),
    ("a:2", "expected RANK:FACTOR[:JITTER]"), ("1:2:0.1:4", "expected RANK:FACTOR[:JITTER]"),
    ("-1:2", "rank must be >= 0"), ("1:0.5", "factor must be between 1 and 1000"),
    ("1:nan", "finite"), ("1:inf", "finite"), ("1:2:1", "jitter must be in [0, 1)"),
    ("1:2:-0.1", "jitter must be in [0, 1)")])
def test_a_bad_straggler_spec_is_one_error_line(spec, says):
    r = run_cli("run", "mf", "--workers", "2", f"--straggler={spec}", timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("tux2: error: run mf: argument --straggler: "), r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("flags, says", [
    (["--straggler", "1:3"], "slows one of several workers: give --workers N"),
    (["--straggler", "all:2:0.5"], "slows each of several workers by its own draws: give --workers N"),
    (["--workers", "2", "--straggler", "2:3"], "there is no worker 2 in a run of 2 workers (ranks 0-1)")])
def test_a_straggler_outside_the_run_is_an_error_before_any_worker_starts(ratings_file, flags, says):
    r = run_cli("run", "mf", ratings_file, *flags, "--epochs", "1", timeout=120)
    assert r.returncode != 0 and r.stderr.startswith("tux2: error: "), r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_straggler_parse_and_its_factors_are_seeded_and_within_the_jitter():
    s = Straggler.parse("1:2.5:0.4")
    assert (s.rank, s.factor, s.jitter) == (1, 2.5, 0.4) and str(s) == "1:2.5:0.4"
    a = list(itertools.islice(s.clock_factors(7), 500))
    assert a == list(itertools.islice(Straggler.parse("1:2.5:0.4").clock_factors(7), 500))
    assert a != list(itertools.islice(s.clock_factors(8), 500))
    assert min(a) >= 2.5 * 0.6 and max(a) <= 2.5 * 1.4 and len(set(a)) == 500
    assert set(itertools.islice(Straggler.parse("0:3").clock_factors(7), 50)) == {3.0}
    with pytest.raises(SchemaError):
        Straggler(0, 1.0, 1.0)


def test_an_all_straggler_slows_every_rank_each_with_its_own_draws():
    s = Straggler.parse("ALL:1:0.9")
    assert s.rank is None and str(s) == "all:1:0.9" and s.slows(0) and s.slows(5)
    assert not Straggler.parse("1:2").slows(0)
    a, b = (list(itertools.islice(s.clock_factors(7, r), 200)) for r in (0, 1))
    assert a != b and a == list(itertools.islice(s.clock_factors(7, 0), 200))
    assert min(a + b) >= 0.1 and max(a + b) <= 1.9
    with pytest.raises(SchemaError, match="all:1:0.9"):
        Straggler.parse("every:1:0.9")


def test_staleness_histogram_counts_clocks_and_fused_runs():
    recs = [{"staleness": 0}, {"staleness": 2}, {"epoch_stages": True}, {"staleness": 2, "clocks": 5},
            {"staleness": 1}]
    assert staleness_histogram(recs) == [1, 1, 6]
    assert staleness_histogram([]) == []


def _run(ratings_file, d, *extra):
    r = run_cli("run", "mf", ratings_file, "--mode", "minibatch", "--batch-size", "1000", "--lr", "0.003",
                "--k", "6", "--epochs", "2", "--partitioner", "random", "--workers", "2", "--quiet",
                "--timeout", "20", "--out", str(d / "model"), "--trace", str(d / "trace"),
                "--metrics", str(d / "m.jsonl"), *extra, timeout=300)
    assert r.returncode == 0, r.stderr
    traces = [[json.loads(x) for x in open(d / "trace" / f"trace-{k}.jsonl")] for k in (0, 1)]
    metrics = [json.loads(x) for x in open(d / "m.jsonl")]
    model = {t: dict(np.load(os.path.join(d, "model", f"{t}.npz"))) for t in ("user", "item")}
    return traces, metrics, model


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["1:3:0.5", "all:3:0.5"])
def test_a_straggler_changes_the_timing_not_the_model_at_slack_0(ratings_file, tmp_path, spec):
    (tmp_path / "plain").mkdir()
    (tmp_path / "slow").mkdir()
    _, _, ref = _run(ratings_file, tmp_path / "plain")
    traces, metrics, got = _run(ratings_file, tmp_path / "slow", "--straggler", spec)
    for t in ("user", "item"):
        for f in ref[t]:
            np.testing.assert_array_equal(got[t][f], ref[t][f], err_msg=f"{t}.{f}")
    gated = [[r for r in recs if "staleness" in r] for recs in traces]
    assert all(r["staleness"] == 0 for recs in gated for r in recs)        # BSP: nothing stale
    if spec.startswith("1:"):
        assert all("injected_s" not in r for r in traces[0])                # rank 0 is not slowed
    for rank in (1,) if spec.startswith("1:") else (0, 1):
        slept = [r["injected_s"] for r in gated[rank]]
        # nothing before a clock has been timed, nor after the first (its compute is the compiling's)
        assert len(slept) == len(gated[rank]) >= 2 * 7 and slept[:2] == [0.0, 0.0] and all(s > 0 for s in slept[2:])
        for r in gated[rank]:
            assert r["compute_s"] >= r["injected_s"]                        # the sleep counts as compute
    for m in metrics:                                                       # rank 0's clocks of each epoch
        assert m["staleness"] == [len([r for r in gated[0] if r["iteration"] == m["epoch"]])]


def test_staleness_is_within_the_slack_and_ssp_lets_the_others_run_ahead(ratings_file, tmp_path):
    traces, metrics, _ = _run(ratings_file, tmp_path, "--slack", "2", "--straggler", "1:4")
    assert all("injected_s" not in r for r in traces[0])                    # rank 0 is not slowed
    gated = [r for recs in traces for r in recs if "staleness" in r]
    assert all(0 <= r["staleness"] <= 2 for r in gated)
    assert max(r["staleness"] for r in gated) >= 1          # the fast worker started clocks ahead of the slow one
    rank0 = [r for r in traces[0] if "staleness" in r]
    assert sum(sum(m["staleness"]) for m in metrics) == len(rank0) and all(len(m["staleness"]) <= 3 for m in metrics)
