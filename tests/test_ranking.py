"""Top-k ranking metrics (tux2.ranking, MF.ranking_metrics, `tux2 predict --top-k` on a
test set) against their definitions written out position by position."""
import json
import math

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import MF
from tux2.errors import InputError
from tux2.ranking import at_k


def _slow(lists, relevant, k):
    """The metrics, one user and one position at a time (Spark's RankingMetrics)."""
    per = {m: [] for m in ("precision", "recall", "ndcg", "map", "hit_rate")}
    for row, rel in zip(lists, relevant):
        if not rel:
            continue
        hits = [j < len(row) and row[j] in rel for j in range(k)]
        n = sum(hits)
        per["precision"].append(n / k)
        per["recall"].append(n / len(rel))
        dcg = sum(1 / math.log2(j + 2) for j in range(k) if hits[j])
        per["ndcg"].append(dcg / sum(1 / math.log2(j + 2) for j in range(min(k, len(rel)))))
        per["map"].append(sum(sum(hits[:j + 1]) / (j + 1) for j in range(k) if hits[j]) / min(k, len(rel)))
        per["hit_rate"].append(float(n > 0))
    return {m: float(np.mean(v)) for m, v in per.items()}, len(per["precision"])


def test_metrics_of_a_list_by_hand():
    # row 0: relevant {2, 9}, item 2 found at position 2 of 3; row 1: nothing relevant, not counted
    got = at_k([[1, 2, 3], [4, -1, -1]], rows=[0, 0, 0], items=[2, 9, 2])
    assert got["users"] == 1
    assert got["precision"] == pytest.approx(1 / 3) and got["recall"] == pytest.approx(1 / 2)
    assert got["ndcg"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert got["map"] == pytest.approx((1 / 2) / 2) and got["hit_rate"] == 1.0
    # padding (-1) is never a hit, even where row * width + item would meet another row's item
    assert at_k([[-1, -1]], rows=[0], items=[0])["hit_rate"] == 0.0


def test_a_k_beyond_int64_is_the_lists_cut_short():
    # tux2 predict model r.txt --top-k 99999999999999999999 stopped with 'internal error: OverflowError'
    # (numpy's minimum of the relevant counts and k); a k past the lists' width is the same lists cut short
    top, rows, items = [[1, 2, 3], [4, -1, -1]], [0, 0, 1], [2, 9, 4]
    huge, wide = at_k(top, rows, items, k=10 ** 20), at_k(top, rows, items, k=50)
    assert huge["recall"] == wide["recall"] and huge["ndcg"] == wide["ndcg"] and huge["map"] == wide["map"]
    assert huge["precision"] == pytest.approx(2 / 10 ** 20 / 2) and huge["users"] == 2


def test_at_k_equals_the_definitions_on_random_lists():
    rng = np.random.default_rng(5)
    lists = [rng.permutation(40)[:rng.integers(0, 8)].tolist() for _ in range(60)]
    relevant = [set(rng.choice(45, rng.integers(0, 6), replace=False).tolist()) for _ in range(60)]
    top = np.full((60, 7), -1)
    for r, row in enumerate(lists):
        top[r, :len(row[:7])] = row[:7]
    rows = [r for r, rel in enumerate(relevant) for _ in rel]
    got = at_k(top, rows, [i for rel in relevant for i in rel])
    want, users = _slow([row[:7] for row in lists], relevant, 7)
    assert got["users"] == users
    for m, v in want.items():
        assert got[m] == pytest.approx(v, rel=1e-12), m


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """A MovieLens-shaped split: 'user item rating timestamp' TSV with a header, 1-based ids,
    Zipf item degrees, sorted by user; the test file has users and items training never saw."""
    rng = np.random.default_rng(11)
    u = rng.integers(1, 151, 5000)
    i = np.minimum(rng.zipf(1.5, 5000), 200)
    key = np.unique(u * 1000 + i, return_index=True)[1]
    u, i = u[key], i[key]
    r = np.clip(np.round(3.4 + 0.8 * rng.standard_normal(len(u))), 1, 5)
    test = rng.random(len(u)) < 0.2
    d = tmp_path_factory.mktemp("rank")
    for name, m in (("train.tsv", ~test), ("test.tsv", test)):
        rows = [(a, b, c, 880000000 + j) for j, (a, b, c) in enumerate(zip(u[m], i[m], r[m]))]
        if name == "test.tsv":
            rows += [(151, 3, 5.0, 1), (7, 777, 4.0, 2)]        # a new user; a new item
        with open(d / name, "w") as f:
            f.write("userId\tmovieId\trating\ttimestamp\n")
            f.writelines(f"{a}\t{b}\t{c:g}\t{t}\n" for a, b, c, t in sorted(rows))
    return d


def test_mf_ranking_metrics_are_those_of_brute_force_lists(split):
    model = MF(k=6, epochs=4).fit(str(split / "train.tsv"))
    test = np.loadtxt(split / "test.tsv", skiprows=1)
    tu, ti, tr = test[:, 0].astype(int), test[:, 1].astype(int), test[:, 2]
    seen = {}
    for a, b in np.loadtxt(split / "train.tsv", skiprows=1, usecols=(0, 1), dtype=int):
        seen.setdefault(a, set()).add(b)
    items = np.flatnonzero(model.known_[1])                       # ids trained (1-based file: dense = id - 1)
    item_ids = model.user_ids(1, items)
    for relevant in (None, 4):
        users = list(dict.fromkeys(tu.tolist()))                  # in order of appearance
        lists, rel = [], []
        for a in users:
            raw = (model.user_factors_[model.lookup(0, [a])[0]] @ model.item_factors_[items].T + model.item_bias_[items]
                   if a in seen else model.item_bias_[items])     # a new user: the items of highest mu + b_i
            order = [j for j in np.argsort(-raw, kind="stable") if int(item_ids[j]) not in seen.get(a, ())]
            lists.append([int(item_ids[j]) for j in order[:5]])
            rel.append({b for x, b, c in zip(tu, ti, tr) if x == a and (relevant is None or c >= relevant)})
        want, n = _slow(lists, rel, 5)
        got, (names, top, _) = model.ranking_metrics(str(split / "test.tsv"), k=5, relevant=relevant,
                                                      return_lists=True)
        assert names.tolist() == users and top.tolist() == lists
        assert got["users"] == n and all(got[m] == pytest.approx(v, rel=1e-9) for m, v in want.items())
        # the same from arrays
        assert model.ranking_metrics((tu, ti, tr), k=5, relevant=relevant) == got


def test_predict_top_k_on_a_test_set_writes_each_users_list_once_and_the_metrics(split, tmp_path):
    r = run_cli("run", "mf", str(split / "train.tsv"), "--k", "6", "--epochs", "4", "--test-fraction", "0",
                "--out", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    r = run_cli("predict", str(tmp_path / "m"), str(split / "test.tsv"), "--top-k", "5", "--relevant", "4",
                "-o", str(tmp_path / "recs.txt"), "--metrics", str(tmp_path / "rank.json"))
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "rank.json").read_text())
    want = MF.load(tmp_path / "m").ranking_metrics(str(split / "test.tsv"), k=5, relevant=4)
    assert got == {"model": "mf", **{m if m == "users" else f"{m}@5": v for m, v in want.items()}, "relevant": 4}
    assert json.loads(r.stdout) == got
    users = [ln.split()[0] for ln in (tmp_path / "recs.txt").read_text().splitlines()]
    test_users = [ln.split("\t")[0] for ln in (split / "test.tsv").read_text().splitlines()[1:]]
    assert users == list(dict.fromkeys(test_users))
    # a list of users alone has no items to measure against: refused, not an exit 0 without the file
    (tmp_path / "users.txt").write_text("1\n2\n")
    for extra in (["--metrics", str(tmp_path / "x.json")], ["--relevant", "4"]):
        r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "users.txt"), "--top-k", "5", *extra)
        assert r.returncode == 2 and "INPUT lists users alone" in r.stderr, r.stderr
    r = run_cli("predict", str(tmp_path / "m"), str(split / "test.tsv"), "--relevant", "4")
    assert r.returncode == 2 and r.stderr.startswith("tux2: error: --relevant picks the items"), r.stderr


def test_a_user_list_of_ids_with_spaces_is_one_id_per_line_and_a_test_set_of_unknown_users_is_named(tmp_path):
    """A model of CSV ids with spaces ('user 1', as MovieLens joined with its titles): its
    --top-k user list 'user 1' was read as the pair (user, 1), a test set of an unknown
    user, and gave one list for 'user' and metrics of 0. Each line is one user, quoted or not.
    A test set of users the model lacks gave metrics without a word."""
    rows = "".join(f"user {u},Film {(u * 7 + j) % 13},{1 + (u + j) % 5}\n" for u in range(12) for j in range(6))
    (tmp_path / "r.csv").write_text("user,title,rating\n" + rows)
    r = run_cli("run", "mf", str(tmp_path / "r.csv"), "--k", "4", "--epochs", "2", "--test-fraction", "0",
                "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    (tmp_path / "users.txt").write_text('user 3\n"user 10"\n')
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "users.txt"), "--top-k", "2")
    assert r.returncode == 0 and [x.split("\t")[0] for x in r.stdout.splitlines()] == ["user 3", "user 10"], r
    assert r.stderr == "", r.stderr
    # a test set none of whose users the model knows (other ids, other columns): every list is the
    # baseline's (the items of highest mean + bias), said in a warning as predict's pairs say it
    (tmp_path / "other.csv").write_text("user,title,rating\nzed,Film 1,4\nyo,Film 2,5\n")
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "other.csv"), "--top-k", "2", "--relevant", "4")
    assert r.returncode == 0 and "warning: no line of" in r.stderr and "has a user the model was trained on" \
        in r.stderr and "ndcg@2" in r.stderr, r.stderr
    # --unknown skip leaves no line of them: no list, metrics of no user, and a warning saying why
    # (their items are the model's: the lines of new users were skipped)
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "other.csv"), "--top-k", "2", "--unknown", "skip")
    assert r.returncode == 0 and "has a user the model was trained on" in r.stderr \
        and "the lines of new users were skipped (--unknown skip" in r.stderr, r.stderr
    # a user list none of whose users the model knows: every list the baseline's, said (it was
    # counted in a JSON line alone); with skip, no list
    (tmp_path / "strangers.txt").write_text("zed\nyo\n")
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "strangers.txt"), "--top-k", "2")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2 and "no user listed in" in r.stderr \
        and "every list is the baseline's, the items of highest mean + item bias" in r.stderr, r.stderr
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "strangers.txt"), "--top-k", "2", "--unknown", "skip")
    assert r.returncode == 0 and r.stdout == "" and "none is listed (--unknown skip)" in r.stderr, r


def test_ranking_metrics_at_k_above_the_items_and_odd_test_sets(split, tmp_path):
    model = MF(k=4, epochs=2).fit(str(split / "train.tsv"))
    test = np.loadtxt(split / "test.tsv", skiprows=1)
    tu, ti = test[:, 0].astype(int), test[:, 1].astype(int)
    # k above the model's items: precision is still hits / k (Spark), over lists cut short
    k = model.n_items + 7
    got, (names, top, _) = model.ranking_metrics((tu, ti), k=k, return_lists=True)
    rel = [set(ti[tu == a].tolist()) for a in names.tolist()]
    want, n = _slow([[b for b in row if b != -1] for row in top.tolist()], rel, k)
    assert got["users"] == n and all(got[m] == pytest.approx(v, rel=1e-9) for m, v in want.items())
    # a new item listed twice for a user is one relevant item, as a known item listed twice is
    a, b = int(names[0]), int(top[0, 0])
    once = model.ranking_metrics(([a, a], [b, 999_999]), k=3)
    assert model.ranking_metrics(([a, a, a], [b, 999_999, 999_999]), k=3) == once
    assert once["recall"] == 0.5
    # k = 0 has no precision (Spark refuses it too); ratings given as None with relevant: refused
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        model.ranking_metrics((tu, ti), k=0)
    with pytest.raises(InputError, match="no ratings"):
        model.ranking_metrics((tu, ti, None), k=3, relevant=4)
    model.save(tmp_path / "m")
    (tmp_path / "pairs.txt").write_text("".join(f"{x} {y}\n" for x, y in zip(tu, ti)))
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "pairs.txt"), "--top-k", "3", "--relevant", "4")
    assert r.returncode == 2 and "the test pairs have no ratings" in r.stderr, r.stderr


def test_top_k_user_list_of_ids_with_spaces_is_users_not_pairs(tmp_path):
    """A user list of ids holding a space ('user 1', as predict's tab-separated output
    names them) was read as (user, item) pairs: a test set of user 'user'."""
    rng = np.random.default_rng(3)
    (tmp_path / "r.csv").write_text("".join(f"user {a},item {b},{rng.integers(1, 6)}\n" for a in range(8)
                                            for b in rng.choice(12, 5, replace=False)))
    r = run_cli("run", "mf", str(tmp_path / "r.csv"), "--k", "3", "--epochs", "2", "--test-fraction", "0",
                "--out", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    (tmp_path / "users.txt").write_text('user 1\nuser 1\n# a comment\n\n"user 3"\nnobody\n')
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "users.txt"), "--top-k", "3")
    assert r.returncode == 0, r.stderr
    names, items, _ = MF.load(tmp_path / "m").recommend(["user 1", "user 3", "nobody"], 3)
    want = {a: [str(b) for b in row] for a, row in zip(names.tolist(), items.tolist())}
    got = [ln.split("\t") for ln in r.stdout.splitlines()]
    assert [f[0] for f in got] == ["user 1", "user 1", "user 3", "nobody"]
    assert all([t.rsplit(":", 1)[0] for t in f[1:]] == want[f[0]] for f in got)


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_a_one_line_user_list_of_two_names_is_users_not_a_header(tmp_path):
    """'alice bob' alone in --top-k INPUT (two words, no number) was taken for a header
    line: 'no edges found'. Words that are the model's user ids are never a header; lines
    whose later words are users and no items list users (every word); an id with a space
    ('Jane Doe', one per line) alone is one user; 'user item' lines stay a test set."""
    rng = np.random.default_rng(2)
    names = ["alice", "bob", "carol", "dave", "Jane Doe", "John Roe"]
    (tmp_path / "r.csv").write_text("".join(f"{u},item{i},{rng.integers(1, 6)}\n" for u in names[:4]
                                            for i in rng.choice(30, 8, replace=False)))
    r = run_cli("run", "mf", str(tmp_path / "r.csv"), "--k", "3", "--epochs", "2", "--test-fraction", "0",
                "--out", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    model = MF.load(tmp_path / "m")

    def lists(text, extra=()):
        (tmp_path / "u.txt").write_text(text)
        r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "u.txt"), "--top-k", "3", *extra)
        assert r.returncode == 0, r.stderr
        sep = "\t" if "\t" in r.stdout else " "
        return [ln.split(sep) for ln in r.stdout.splitlines()], r.stderr

    def want(users):
        got, items, _ = model.recommend(users, 3)
        return [[u] + [f"{b}:" for b in row] for u, row in zip(got.tolist(), items.tolist())]

    def short(rows):
        return [[f[0]] + [t.rsplit(":", 1)[0] + ":" for t in f[1:]] for f in rows]

    for text, users in (("alice bob\n", ["alice", "bob"]), ("alice carol\nbob dave\n", ["alice", "carol", "bob", "dave"]),
                        ("userId\nalice\nbob\n", ["alice", "bob"]), ("bob\n", ["bob"])):
        got, err = lists(text)
        assert short(got) == want(users) and "precision" not in err, (text, got, err)
    got, err = lists("zed bob\n")                # a new user: the baseline's list, counted
    assert [f[0] for f in got] == ["zed", "bob"] and '"unknown_users": 1' in err, err
    got, err = lists("alice item3\nbob item5\n")     # user, item: a test set, measured
    assert [f[0] for f in got] == ["alice", "bob"] and "precision@3" in err, err
    (tmp_path / "r2.csv").write_text("".join(f"{u},item{i},{rng.integers(1, 6)}\n" for u in names[4:] + ["Ann Poe"]
                                             for i in rng.choice(30, 8, replace=False)))
    r = run_cli("run", "mf", str(tmp_path / "r2.csv"), "--k", "3", "--epochs", "2", "--test-fraction", "0",
                "--out", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    model = MF.load(tmp_path / "m")
    got, err = lists("Jane Doe\n")              # ids with a space: the line is one user
    assert short(got) == want(["Jane Doe"]), (got, err)
