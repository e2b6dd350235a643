"""The yardsticks of an explicit MF run: the bias baseline's test RMSE (baseline_rmse,
and a note when the model is not below it), the most-popular baseline beside
MF.ranking_metrics / tux2 predict --top-k, and warnings when nearly every pair scored is
cold start."""
import json
import math
import warnings

import numpy as np
import pytest

from tests import naive
from tests.conftest import run_cli
from tux2 import MF
from tux2.estimators.mf import BASELINE_DAMPING


def _write(path, rows):
    with open(path, "w") as f:
        f.write("userId,movieId,rating,timestamp\n")
        f.writelines(f"{u},{i},{r:g},{1_500_000_000 + n}\n" for n, (u, i, r) in enumerate(rows))
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Star ratings of planted biases and a rank-3 model, user and item degrees power-law
    (Zipf 1.4), 1-based ids, a header and timestamps; a random tenth held out as the test
    file, plus three test lines of user 999, who has no training ratings."""
    rng = np.random.default_rng(5)
    n_u, n_i, m = 400, 150, 12000
    P, Q = rng.normal(0, 0.6, (n_u, 3)), rng.normal(0, 0.6, (n_i, 3))
    bu, bi = rng.normal(0, 0.4, n_u), rng.normal(0, 0.5, n_i)
    u = (np.minimum(rng.zipf(1.4, m), n_u) - 1 + rng.integers(0, n_u, m) * (rng.random(m) < 0.6)) % n_u
    i = (np.minimum(rng.zipf(1.4, m), n_i) - 1 + rng.integers(0, n_i, m) * (rng.random(m) < 0.5)) % n_i
    pairs = np.unique(np.c_[u, i], axis=0)
    r = np.clip(np.round(3.5 + bu[pairs[:, 0]] + bi[pairs[:, 1]] + np.einsum("ij,ij->i", P[pairs[:, 0]],
                                                                             Q[pairs[:, 1]])
                         + rng.normal(0, 0.4, len(pairs))), 1, 5)
    held = rng.random(len(pairs)) < 0.1
    train = [(int(a) + 1, int(b) + 1, float(c)) for (a, b), c in zip(pairs[~held], r[~held])]
    test = [(int(a) + 1, int(b) + 1, float(c)) for (a, b), c in zip(pairs[held], r[held])] + \
        [(999, 3, 4.0), (999, 40, 2.0), (999, 7, 5.0)]
    d = tmp_path_factory.mktemp("baseline")
    return _write(d / "train.csv", train), _write(d / "test.csv", test), train, test


@pytest.mark.filterwarnings("ignore:.*bias baseline")          # (two epochs of k = 4: not below it)
def test_baseline_rmse_is_the_exact_damped_least_squares_fit(files, tmp_path):
    """history_ and --metrics carry baseline_rmse, that of the exact minimiser (a dense
    solve, tests/naive.py) up to the few alternating passes' residue; the run prints it
    once, after the last epoch."""
    train_path, test_path, train, test = files
    ref = naive.bias_baseline_rmse(train, test, BASELINE_DAMPING)
    m = MF(epochs=2, k=4).fit(train_path, test_path)
    assert [r["baseline_rmse"] for r in m.history_] == [m.history_[0]["baseline_rmse"]] * 2
    assert m.history_[-1]["baseline_rmse"] == pytest.approx(ref, abs=2e-5)
    # the damping matters: D = 0 (the plain fit) is another number, so the test tells them apart
    assert abs(naive.bias_baseline_rmse(train, test, 0.0) - ref) > 2e-4
    r = run_cli("run", "mf", train_path, "--test", test_path, "--epochs", "2", "--k", "4",
                "--metrics", str(tmp_path / "m.jsonl"))
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in open(tmp_path / "m.jsonl")]
    assert recs[-1]["baseline_rmse"] == m.history_[-1]["baseline_rmse"]
    said = [x for x in r.stdout.splitlines() if x.startswith("  bias baseline")]
    assert said == [f"  bias baseline (mean + user and item biases damped by D = 5, no factors): test_rmse "
                    f"{ref:.4f}"], r.stdout


def test_a_model_worse_than_the_baseline_is_named_and_a_good_one_is_not(files):
    train_path, test_path, _, _ = files
    with pytest.warns(RuntimeWarning, match=r"not below the bias baseline.*more epochs.*smaller reg=") as w:
        m = MF(reg=50, epochs=3).fit(train_path, test_path)
    assert m.history_[-1]["test_rmse"] >= m.history_[-1]["baseline_rmse"]
    assert sum("bias baseline" in str(x.message) for x in w) == 1
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*bias baseline")
        good = MF().fit(train_path, test_path)          # the defaults, on data with planted structure
    last = good.history_[-1]
    assert last["test_rmse"] < last["baseline_rmse"] - 0.05, last


@pytest.mark.filterwarnings("ignore:.*bias baseline")
def test_any_partitioning_gives_the_same_baseline(files):
    train_path, test_path, _, _ = files
    one = MF(epochs=1, k=4).fit(train_path, test_path).history_[-1]["baseline_rmse"]
    assert MF(epochs=1, k=4).fit(train_path, test_path, partitions=4).history_[-1]["baseline_rmse"] == one
    assert MF(epochs=1, k=4, mode="als").fit(train_path, test_path, partitions=3).history_[-1]["baseline_rmse"] == one


@pytest.mark.slow
def test_two_workers_with_distributed_ingress_give_the_same_baseline(files, tmp_path):
    train_path, test_path, _, _ = files
    recs = []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"m{len(extra)}.jsonl"
        r = run_cli("run", "mf", train_path, "--test", test_path, "--epochs", "1", "--k", "4", "--metrics",
                    str(out), *extra)
        assert r.returncode == 0, r.stderr
        recs.append(json.loads(open(out).readlines()[-1]))
    assert "distributed ingress" in r.stdout, r.stdout
    assert recs[0]["baseline_rmse"] == recs[1]["baseline_rmse"]


def test_most_popular_beside_ranking_metrics_by_hand(files, tmp_path):
    """Each test user with an item rated >= 4 gets the items by training count (the lower
    id first on a tie), those it rated in training left out: precision@10 and NDCG@10 as
    Spark's RankingMetrics; the model's metrics stay as they were."""
    train_path, test_path, train, test = files
    m = MF(epochs=2, k=4).fit(train_path)
    got = m.ranking_metrics(test_path, 10, relevant=4)
    counts = {}
    for _, i, _ in train:
        counts[i] = counts.get(i, 0) + 1
    order = sorted(counts, key=lambda i: (-counts[i], i))
    seen = {}
    for u, i, _ in train:
        seen.setdefault(u, set()).add(i)
    prec, ndcg = [], []
    for u in dict.fromkeys(u for u, _, _ in test):
        rel = {i for v, i, r in test if v == u and r >= 4}
        if not rel:
            continue
        top = [i for i in order if i not in seen.get(u, ())][:10]
        hits = [i in rel for i in top]
        prec.append(sum(hits) / 10)
        ndcg.append(sum(h / math.log2(j + 2) for j, h in enumerate(hits))
                    / sum(1 / math.log2(j + 2) for j in range(min(10, len(rel)))))
    assert got["popular_precision"] == pytest.approx(np.mean(prec), rel=1e-12)
    assert got["popular_ndcg"] == pytest.approx(np.mean(ndcg), rel=1e-12)
    assert got["users"] == len(ndcg)
    assert got["ndcg"] != got["popular_ndcg"]
    m.save(str(tmp_path / "model"))
    r = run_cli("predict", str(tmp_path / "model"), test_path, "--top-k", "10", "--relevant", "4",
                "-o", str(tmp_path / "lists.txt"))
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    assert line["popular_ndcg@10"] == pytest.approx(np.mean(ndcg), rel=1e-12)
    assert line["ndcg@10"] == pytest.approx(got["ndcg"], rel=1e-12)
    assert ("below the most-popular baseline's" in r.stderr) == (got["ndcg"] < 0.95 * got["popular_ndcg"])


def test_nearly_all_pairs_cold_warns_with_the_share(files, tmp_path):
    train_path, test_path, train, test = files
    m = MF(epochs=1, k=4).fit(train_path)
    u = np.array([t[0] for t in test[:40]])
    i = np.array([t[1] for t in test[:40]])
    r = np.array([t[2] for t in test[:40]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.predict(np.r_[u[:20], u[20:] + 5000], i)            # half of them new users: no warning
    with pytest.warns(RuntimeWarning, match=r"MF.predict: 37 of the 40 pairs \(92%\)"):
        m.predict(np.r_[u[:3], u[3:] + 5000], i)
    with pytest.warns(RuntimeWarning, match=r"MF.score: 40 of the 40 pairs \(100%\)"):
        m.score(np.c_[u + 5000, i], r)        # a split by user: every test user new
    cold = tmp_path / "cold.csv"
    _write(cold, [(a + 5000, b, c) for a, b, c in test])
    out = run_cli("run", "mf", train_path, "--test", str(cold), "--epochs", "1", "--k", "4")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("100% of the test pairs have a user or item not in training") == 1, out.stdout
    plain = run_cli("run", "mf", train_path, "--test", test_path, "--epochs", "1", "--k", "4")
    assert "of the test pairs have a user" not in plain.stdout and "3 with a user or item not in" in plain.stdout
