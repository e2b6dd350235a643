"""Real rating files as they come (issue 22, point 3): MovieLens-style 4-column TSV with
timestamps and 1-based ids, '::'-separated ratings.dat, CSV with a header line, gzip /
bz2 / xz, standard input, and test or predict inputs naming users and items that the
training data lacks. The same ratings in every form must give the same model."""
import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import io, loaders
from tux2.errors import InputError

USERS, ITEMS = 120, 40
MISSING_ITEM = 13           # no rating at all: never counted, scored or recommended


def _ratings():
    """(user, item, rating, timestamp) rows, 1-based, sorted by user as MovieLens' are."""
    rng = np.random.default_rng(22)
    rows, t = [], 874724710
    for u in range(1, USERS + 1):
        items = rng.choice(np.setdiff1d(np.arange(1, ITEMS + 1), [MISSING_ITEM]), size=int(rng.integers(5, 15)),
                           replace=False)
        for i in items.tolist():
            t += int(rng.integers(1, 500))
            rows.append((u, i, int(1 + (u * 7 + i * 3) % 5), t))
    return rows


ROWS = _ratings()
# held-out ratings: known pairs, plus a user and an item the training file never saw
TEST_ROWS = [(1, ROWS[0][1], 4, 1), (USERS + 5, 2, 3, 2), (3, ITEMS + 9, 5, 3), (USERS + 6, ITEMS + 8, 1, 4)]


def _tsv(rows):
    return "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in rows)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    out = {"tsv": d / "u.data", "dat": d / "ratings.dat", "csv": d / "ratings.csv", "gz": d / "u.data.gz",
           "test": d / "u1.test"}
    out["tsv"].write_text(_tsv(ROWS))
    out["dat"].write_text("".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in ROWS))
    out["csv"].write_text("userId,movieId,rating,timestamp\n" + "".join(f"{u},{i},{r}.0,{t}\n" for u, i, r, t in ROWS))
    out["gz"].write_bytes(gzip.compress(out["tsv"].read_bytes()))
    out["test"].write_text(_tsv(TEST_ROWS))
    return {k: str(v) for k, v in out.items()}


FLAGS = ("--k", "4", "--epochs", "3", "--eval-every", "0")


def _train(path, out, *extra):
    r = run_cli("run", "mf", path, *FLAGS, "--out", str(out), *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout, {n: dict(np.load(os.path.join(out, f"{n}.npz"))) for n in ("user", "item")}


def _same(a, b):
    for n in ("user", "item"):
        for k in ("p", "b", "ids"):
            np.testing.assert_array_equal(a[n][k], b[n][k], err_msg=f"{n}.{k}")


@pytest.fixture(scope="module")
def tsv_model(files, tmp_path_factory):
    out = tmp_path_factory.mktemp("m") / "tsv"
    return (*_train(files["tsv"], out, "--test", files["test"]), str(out))


def test_a_four_column_one_based_tsv_trains_and_says_how_it_was_read(tsv_model):
    stdout, model, _ = tsv_model
    assert "read as: tab-separated; columns 1,2,3 of 4; column 4 ignored (--columns picks others)" in stdout
    assert "ids 1-based (auto: no id 0 on either side" in stdout
    # the user's ids, 1-based; users and items without ratings are not counted
    assert model["user"]["ids"][0] == 1 and len(model["user"]["ids"]) == USERS
    assert f"{USERS} users × {ITEMS - 1} items" in stdout
    # two test ratings name a user or item not in training (the fourth names both)
    assert f"test {len(TEST_ROWS)} (3 with a user or item not in training" in stdout


@pytest.mark.parametrize("form, extra", [("dat", ()), ("csv", ()), ("gz", ()),
                                         ("csv", ("--columns", "userId,movieId,rating")),
                                         ("tsv", ("--columns", "1,2,3", "--base", "1"))])
def test_every_form_of_the_same_ratings_gives_the_same_model(files, tsv_model, tmp_path, form, extra):
    stdout, model = _train(files[form], tmp_path / "m", "--test", files["test"], *extra)
    _same(model, tsv_model[1])
    if form == "dat":
        assert "'::'-separated" in stdout
    if form == "csv":
        assert "header userId,movieId,rating,timestamp; columns userId,movieId,rating (1,2,3) of 4" in stdout


def test_integer_ids_written_as_floats_are_the_integers(files, tsv_model, tmp_path):
    """pandas writes an integer column as '1.0' once it held a NaN (or after a merge): those
    ids were read as strings, so every pair of an integer test file was a new user and item
    (the run measured the global mean, exit 0). They are the integers, in run, info and
    predict, and the model is the integer file's; '1.5' stays a string id."""
    floats = tmp_path / "floats.csv"
    floats.write_text("userId,movieId,rating,timestamp\n" + "".join(f"{u}.0,{i}.0,{r},{t}\n" for u, i, r, t in ROWS))
    stdout, model = _train(str(floats), tmp_path / "m", "--test", files["test"])
    _same(model, tsv_model[1])
    assert "ids written as whole-number floats (1.0) read as integers" in stdout
    assert f"test {len(TEST_ROWS)} (3 with a user or item not in training" in stdout
    res = json.loads(run_cli("info", str(floats), "--json").stdout)
    assert res["format"] == "edges" and res["src"]["id_range"] == [1, USERS], res
    # an integer model predicts a test file of float-written ids: the same pairs known
    test = tmp_path / "t.csv"
    test.write_text("".join(f"{u}.0,{i}.00,{r}\n" for u, i, r, _ in TEST_ROWS))
    a = run_cli("predict", tsv_model[2], files["test"], "-o", str(tmp_path / "a.txt"))
    b = run_cli("predict", tsv_model[2], str(test), "-o", str(tmp_path / "b.txt"))
    assert a.returncode == b.returncode == 0 and json.loads(a.stdout) == json.loads(b.stdout), (a, b)
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()
    # an id that is no whole number keeps the file a file of string ids
    (tmp_path / "half.tsv").write_text("1.0\t2.0\t4\n1.5\t3.0\t5\n2.0\t2.0\t3\n")
    g = loaders.load_edges(str(tmp_path / "half.tsv"))
    assert g.ids[0].tokens.tolist() == ["1.0", "1.5", "2.0"] and not g.whole_float_ids


def test_columns_pick_and_swap(files, tmp_path):
    stdout, model = _train(files["csv"], tmp_path / "m", "--columns", "movieId,userId,rating")
    assert "columns movieId,userId,rating (2,1,3) of 4; column timestamp ignored" in stdout
    assert len(model["user"]["ids"]) == ITEMS and f"{ITEMS - 1} users × {USERS} items" in stdout
    r = run_cli("run", "mf", files["csv"], "--columns", "user,movie,rating")
    assert r.returncode == 2 and f"{files['csv']}: columns 'user,movie,rating': no column 'user' in the header " \
                                  "(userId, movieId, rating, timestamp)" in r.stderr
    r = run_cli("run", "mf", files["tsv"], "--columns", "1,2,6")
    assert r.returncode == 2 and f"tux2: error: {files['tsv']}:1: missing column" in r.stderr
    r = run_cli("run", "mf", files["tsv"], "--columns", "1,2")
    assert r.returncode == 2 and "MF needs a rating column" in r.stderr
    res = json.loads(run_cli("info", files["tsv"], "--columns", "1,2,4", "--json").stdout)
    assert "columns 1,2,4 (1,2,4) of 4; column 3 ignored" in res["read_as"] and res["values"]["min"] > 8e8


# A header naming the item first ('movieId,userId,…') was read by position: users and items
# swapped without a word. The columns a header names user, item and rating are read as
# such (Spark's ALS, LensKit and Microsoft's recommenders select them by name).
def test_a_header_naming_the_item_first_is_read_by_name(files, tmp_path):
    path = tmp_path / "swapped.csv"
    path.write_text("movieId,userId,timestamp,rating\n" + "".join(f"{i},{u},{t},{r}.0\n" for u, i, r, t in ROWS))
    stdout, model = _train(str(path), tmp_path / "m")
    assert "columns userId,movieId,rating (2,1,4, by name) of 4; column timestamp ignored" in stdout
    _same(model, _train(files["csv"], tmp_path / "ref")[1])
    for header, cols in (('"ISBN";"User-ID";"Book-Rating"', (1, 0, 2)), ("item\tuser", (1, 0, io.OPTIONAL)),
                         ("item user stars", (1, 0, 2)), ("user item rating", (0, 1, io.OPTIONAL)),
                         ("src dst value", (0, 1, io.OPTIONAL)), ("user user_id item", (0, 1, io.OPTIONAL))):
        sep = ";" if ";" in header else "\t" if "\t" in header else " "
        fmt = io.edge_format(f"{header}\n{sep.join(['1', '2', '3'][:len(header.split(sep))])}\n".encode(), "f")
        assert fmt.cols == cols, header
    g = loaders.load_edges(str(path), columns="1,2,4")           # --columns still reads by position
    assert (g.n_src, g.n_dst) == (ITEMS, USERS)


def test_unknown_test_ids_baseline_skip_error(files, tsv_model, tmp_path):
    out = tsv_model[2]
    # predict: the baseline is the global mean plus the known side's bias
    r = run_cli("predict", out, files["test"])
    assert r.returncode == 0, r.stderr
    meta = json.loads(open(os.path.join(out, "model.json")).read())
    mu, user, item = meta["mu"], tsv_model[1]["user"], tsv_model[1]["item"]
    lines = [ln.split() for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert [ln[:2] for ln in lines] == [[str(u), str(i)] for u, i, _, _ in TEST_ROWS]     # as written
    b_user3 = float(user["b"][list(user["ids"]).index(3)])
    b_item2 = float(item["b"][list(item["ids"]).index(2)])
    np.testing.assert_allclose([float(ln[2]) for ln in lines[1:]], [mu + b_item2, mu + b_user3, mu], rtol=1e-5)
    assert json.loads(r.stderr)["unknown_pairs"] == 3
    r = run_cli("predict", out, files["test"], "--unknown", "skip")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2 and json.loads(r.stderr)["skipped_unknown"] == 3
    r = run_cli("predict", out, files["test"], "--unknown", "error")
    assert r.returncode == 2 and f"tux2: error: {files['test']}:2: unknown user id '{USERS + 5}'" in r.stderr
    assert "--unknown skip (unknown='skip') drops such lines" in r.stderr          # the flag first, on the command line
    r = run_cli("run", "mf", files["tsv"], "--test", files["test"], "--unknown", "error", *FLAGS)
    assert r.returncode == 2 and f"{files['test']}:2: unknown user id" in r.stderr
    r = run_cli("run", "mf", files["tsv"], "--test", files["test"], "--unknown", "skip", *FLAGS)
    assert r.returncode == 0 and "test 1 (3 with a user or item not in training skipped" in r.stdout


def test_ids_without_ratings_are_never_recommended(tsv_model, files, tmp_path):
    r = run_cli("predict", tsv_model[2], "--top-k", str(ITEMS))
    assert r.returncode == 0, r.stderr
    users = [ln.split()[0] for ln in r.stdout.splitlines()]
    items = {tok.split(":")[0] for ln in r.stdout.splitlines() for tok in ln.split()[1:]}
    assert users[0] == "1" and len(users) == USERS
    assert str(MISSING_ITEM) not in items and "0" not in items
    # read as 0-based, ids 0 exist but have no ratings: still never listed
    _, model = _train(files["tsv"], tmp_path / "b0", "--base", "0")
    r = run_cli("predict", str(tmp_path / "b0"), "--top-k", str(ITEMS))
    items = {tok.split(":")[0] for ln in r.stdout.splitlines() for tok in ln.split()[1:]}
    assert r.stdout.split()[0] == "1" and "0" not in items and str(MISSING_ITEM) not in items
    # a user without ratings asked for by name: the baseline's items
    (tmp_path / "users.txt").write_text(f"1\n{USERS + 50}\n")
    r = run_cli("predict", tsv_model[2], str(tmp_path / "users.txt"), "--top-k", "3")
    assert r.returncode == 0 and r.stdout.splitlines()[1].startswith(f"{USERS + 50} ")


def test_base(files, tmp_path):
    (tmp_path / "zero.tsv").write_text("0\t1\t5\t1\n1\t0\t3\t2\n")
    g = loaders.load_edges(str(tmp_path / "zero.tsv"))
    assert g.base == 0 and g.ids == (None, None)
    with pytest.raises(InputError, match="below the id base 1"):
        loaders.load_edges(str(tmp_path / "zero.tsv"), base=1)
    g = loaders.load_edges(files["tsv"], base=0)
    assert g.base == 0 and g.n_src == USERS + 1
    g = loaders.load_edges(files["tsv"])
    assert g.base == 1 and g.n_src == USERS and g.ids[0].tokens[0] == 1


def test_compressed_and_standard_input(files, tmp_path):
    data = open(files["tsv"], "rb").read()
    want = loaders.load_edges(files["tsv"])
    for name, pack in (("r.gz", gzip.compress), ("r.bz2", bz2.compress), ("r.xz", lzma.compress)):
        (tmp_path / name).write_bytes(pack(data))
        g = loaders.load_edges(str(tmp_path / name))
        assert np.array_equal(g.src, want.src) and np.array_equal(g.values, want.values)
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"1\t2\t3\n1\tx\t4\n"))
    with pytest.raises(InputError) as e:
        loaders.load_edges(str(tmp_path / "bad.gz"), ids="int")
    assert str(e.value).startswith(f"{tmp_path / 'bad.gz'}:2: malformed vertex id")
    for args in (("info", "-", "--json"), ("partition", "-", "-p", "2", "-s", "random", "--json")):
        r = subprocess.run([sys.executable, "-m", "tux2.cli", *args], input=gzip.compress(data), capture_output=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        assert res["edges"] == len(ROWS) or res.get("edges") == len(ROWS)
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "info", "-"], input=b"1\t2\t3\t4\n1\tx\t4\t5\n",
                       capture_output=True, timeout=300)
    assert r.returncode == 2 and b"tux2: error: <stdin>:2: malformed vertex id" in r.stderr


def test_info_reads_what_the_run_commands_read(files):
    res = json.loads(run_cli("info", files["tsv"], "--json").stdout)
    assert res["format"] == "edges" and res["edges"] == len(ROWS)
    assert res["src"]["id_range"] == [1, USERS] and res["dst"]["vertices_with_edges"] == ITEMS - 1
    assert res["read_as"].startswith("tab-separated; columns 1,2,3 of 4")
    assert any("ids read as 1-based" in h for h in res["hints"])
    res = json.loads(run_cli("info", files["csv"], "--json", "--columns", "movieId,userId").stdout)
    assert res["src"]["id_range"][1] == ITEMS and res["edges"] == len(ROWS) and "values" not in res
    res = json.loads(run_cli("info", files["dat"], "--json").stdout)
    assert res["format"] == "edges" and res["values"]["max"] == 5
    # a compressed file: its size, and the size of what it holds (said as such)
    res = json.loads(run_cli("info", files["gz"], "--json").stdout)
    assert res["compressed_bytes"] == os.path.getsize(files["gz"]) and res["bytes"] == os.path.getsize(files["tsv"])
    assert "MB decompressed)" in run_cli("info", files["gz"]).stdout.splitlines()[0]


def test_partition_warns_on_imbalance_and_hdrf_balances_item_sorted_ratings(files, tmp_path):
    # popular items rated by many users, the file sorted by item (as Netflix's files are)
    rng = np.random.default_rng(4)
    pop = 1.0 / np.arange(1, 51) ** 0.9
    rows = sorted({(u, int(i) + 1, 3, u) for u in range(1, 201)
                   for i in rng.choice(50, size=int(min(49, 5 + rng.zipf(1.8) * 3)), replace=False,
                                       p=pop / pop.sum())}, key=lambda r: (r[1], r[0]))
    p = tmp_path / "by_item.tsv"
    p.write_text(_tsv(rows))
    n = len({r[0] for r in rows}) + len({r[1] for r in rows})
    r = run_cli("partition", str(p), "-p", "4", "-s", "hdrf", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["edge_balance"] < 1.1 and "warning" not in r.stderr
    assert json.loads(r.stdout)["vertices"] == n
    r = run_cli("partition", str(p), "-p", "4", "-s", "hdrf", "-o", "lam=1")         # PowerGraph's λ
    assert r.returncode == 0 and "tux2: warning: hdrf puts 4.00x the mean edge count on one part" in r.stderr
    assert "--option lam=2" in r.stderr and f"{n} vertices" in r.stdout
    r = run_cli("partition", files["tsv"], "-p", "4", "-s", "random", "--json")      # item 13 has no edge
    assert json.loads(r.stdout)["vertices"] == USERS + ITEMS - 1


def test_two_workers_read_the_same_file_the_same_way(files, tsv_model, tmp_path):
    """Distributed ingress decides the base on every worker's ids and reads --test in
    the training ids: the model of one worker, bit for bit."""
    one = _train(files["tsv"], tmp_path / "one", "--test", files["test"], "--partitions", "2")
    two = _train(files["tsv"], tmp_path / "two", "--test", files["test"], "--partitions", "2", "--workers", "2",
                 "--timeout", "30")
    assert "distributed ingress" in two[0] and "ids 1-based (auto" in two[0]
    _same(one[1], two[1])
    assert one[0].count("with a user or item not in training") == 1 == two[0].count("not in training")


def test_parsers_ignore_extra_columns_and_headers_exactly(tmp_path):
    """The numba parser on every layout equals a plain-Python split of the same lines."""
    lines = [(u, i, r, t) for u, i, r, t in ROWS[:200]]
    for name, text, kw in (
            ("a.tsv", _tsv(lines), {}),
            ("a.dat", "".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in lines), {}),
            ("a.csv", "u,i,r,t\n" + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in lines), {}),
            ("b.csv", "u,i,r,t\n" + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in lines), {"columns": "t,u,i"})):
        (tmp_path / name).write_text(text)
        g = io.read_edge_list(str(tmp_path / name), base=0, **kw)
        if kw:
            assert g.src.tolist() == [t for _, _, _, t in lines] and g.dst.tolist() == [u for u, *_ in lines]
            assert g.values.tolist() == [i for _, i, _, _ in lines]
        else:
            assert g.src.tolist() == [u for u, *_ in lines] and g.values.tolist() == [r for _, _, r, _ in lines]


@pytest.mark.filterwarnings("ignore:the test RMSE was lowest")     # k=4, 3 epochs on a few hundred ratings
def test_the_python_estimator_reads_them_as_the_cli_does(files, tsv_model):
    """tux2.MF(columns=, base=, unknown=): the CLI's model from a header CSV and a test file
    naming unknown ids; predict and recommend follow ``unknown``; fit(workers=2) evaluates
    the same test RMSE (the unknown marks travel with the data)."""
    import tux2
    m = tux2.MF(k=4, epochs=3, columns="userId,movieId,rating").fit(files["csv"], files["test"])
    for side, name in ((0, "user"), (1, "item")):
        np.testing.assert_array_equal(m.ids_[side].tokens, tsv_model[1][name]["ids"])
        # the ids as an array and as a sequence (a pandas index of the factors' rows)
        np.testing.assert_array_equal(np.asarray(m.ids_[side]), tsv_model[1][name]["ids"])
        assert list(m.ids_[side]) == tsv_model[1][name]["ids"].tolist()
    np.testing.assert_array_equal(m.user_factors_.astype(np.float32), tsv_model[1]["user"]["p"])
    two = tux2.MF(k=4, epochs=3).fit(files["tsv"], files["test"], workers=2)
    assert [r["test_rmse"] for r in two.history_] == [r["test_rmse"] for r in m.history_]
    # the test RMSE is over all four ratings, three of them by the baseline
    item2 = m.ids_[1].tokens.tolist().index(2)
    user3 = m.ids_[0].tokens.tolist().index(3)
    want = [m.predict([1], [ROWS[0][1]])[0], m.mu_ + m.item_bias_[item2], m.mu_ + m.user_bias_[user3], m.mu_]
    np.testing.assert_allclose(m.predict([r[0] for r in TEST_ROWS], [r[1] for r in TEST_ROWS]), want)
    rmse = np.sqrt(np.mean((np.array([r[2] for r in TEST_ROWS]) - want) ** 2))
    assert m.history_[-1]["test_rmse"] == pytest.approx(rmse, rel=1e-6)
    # items without ratings are never recommended; an unknown user gets the baseline's items
    users, items, _ = m.recommend(["1", str(USERS + 50)], k=ITEMS)
    assert users.tolist() == ["1", str(USERS + 50)] and MISSING_ITEM not in items.tolist()[1]
    best = np.argsort(-np.where(m.known_[1], m.item_bias_, -np.inf), kind="stable")[:3]
    assert m.recommend([USERS + 50], k=3)[1][0].tolist() == m.ids_[1].tokens[best].tolist()
    assert len(m.recommend([USERS + 50, 1], k=3, unknown="skip")[0]) == 1
    with pytest.raises(InputError, match=f"unknown user {USERS + 50}"):
        m.recommend([USERS + 50], unknown="error")
    with pytest.raises(InputError) as e:
        tux2.MF(k=4, epochs=1, unknown="error").fit(files["tsv"], files["test"])
    assert str(e.value).startswith(f"{files['test']}:2: unknown user id '{USERS + 5}'")
    skip = tux2.MF(k=4, epochs=1, unknown="skip").load_data(files["tsv"], files["test"])
    assert skip.test.num_edges == 1 and skip.test.skipped == 3


def test_predict_warns_when_no_pair_is_known_under_the_columns_read(files, tsv_model, tmp_path):
    """A CSV whose header puts the timestamp first under names that say nothing
    ('stamp,film,person,score'), predicted without --columns: every pair is unknown
    (timestamps taken for users), so the run warns and names --columns; with --columns,
    or under the names 'timestamp,movieId,userId,rating' (read by name), it is scored
    normally."""
    rows = "".join(f"{t},{i},{u},{r}\n" for u, i, r, t in ROWS[:50])
    anonymous, swapped = tmp_path / "anonymous.csv", tmp_path / "swapped.csv"
    anonymous.write_text("stamp,film,person,score\n" + rows)
    swapped.write_text("timestamp,movieId,userId,rating\n" + rows)
    r = run_cli("predict", tsv_model[2], str(anonymous), "-o", str(tmp_path / "p.txt"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["unknown_pairs"] == 50
    # (the film column holds the model's items, so the warning names the user column, and new users too)
    assert f"tux2: warning: no line of {anonymous} has a user the model was trained on" in r.stderr
    assert "new users get the baseline's predictions, the mean plus the known side's bias (--unknown)" in r.stderr
    assert "--columns userId,movieId,rating" in r.stderr
    # neither column's ids are the model's: other columns, plainly
    (tmp_path / "neither.tsv").write_text("99999\t88888\n99998\t88887\n")
    r = run_cli("predict", tsv_model[2], str(tmp_path / "neither.tsv"), "-o", str(tmp_path / "p.txt"))
    assert r.returncode == 0 and "pairs a user and an item the model was trained on" in r.stderr \
        and "other columns? --columns" in r.stderr, r.stderr
    r = run_cli("predict", tsv_model[2], str(anonymous), "-o", str(tmp_path / "p.txt"), "--unknown", "skip")
    assert r.returncode == 0 and "tux2: warning: no line of" in r.stderr
    # skipped, every line's item the model's: as without skip, the user column named (was 'other columns?')
    assert f"no line of {anonymous} has a user the model was trained on" in r.stderr, r.stderr
    assert "the lines of new users were skipped (--unknown skip" in r.stderr and "other columns?" not in r.stderr
    r = run_cli("predict", tsv_model[2], str(anonymous), "--top-k", "3", "--unknown", "skip", "-o",
                str(tmp_path / "p.txt"))
    assert r.returncode == 0 and "the lines of new users were skipped" in r.stderr, r.stderr
    r = run_cli("predict", tsv_model[2], str(tmp_path / "neither.tsv"), "--unknown", "skip", "-o",
                str(tmp_path / "p.txt"))
    assert r.returncode == 0 and "other columns? --columns" in r.stderr, r.stderr
    for path, extra in ((anonymous, ("--columns", "3,2,4")), (swapped, ())):
        r = run_cli("predict", tsv_model[2], str(path), *extra, "-o", str(tmp_path / "p.txt"))
        assert r.returncode == 0 and "warning" not in r.stderr and json.loads(r.stdout)["rmse"] < 1.5


def test_sparse_integer_ids_cost_what_the_rated_ids_cost(tmp_path):
    """ratings.csv of MovieLens 'latest' numbers movies sparsely (ids to ~200000 for ~10k
    movies), Netflix users to 2649429 for 480k users. The README: 'Ids are dense inside
    and the model keeps the file's ids' and ids without ratings are never counted: the
    model should hold one row per rated id, as it does with --ids string."""
    rng = np.random.default_rng(7)
    movies = np.sort(rng.choice(np.arange(1, 200_001), 30, replace=False))
    rows = [(u, int(m), float(rng.integers(1, 11)) / 2) for u in range(1, 41)
            for m in rng.choice(movies, 8, replace=False)]
    path = tmp_path / "ratings.csv"
    path.write_text("userId,movieId,rating,timestamp\n" + "".join(f"{u},{m},{r},9649827{u:02d}\n" for u, m, r in rows))
    rated = sorted({m for _, m, _ in rows})
    stdout, model = _train(str(path), tmp_path / "m")
    assert f"40 users × {len(rated)} items" in stdout                  # the header counts the rated ids ...
    assert model["item"]["ids"].tolist() == rated                         # ... the model should keep only them
    assert model["item"]["p"].shape[0] == len(rated)


@pytest.mark.slow
def test_sparse_integer_ids_give_the_same_dense_model_through_every_entry_point(tmp_path):
    """Netflix-style sparse user ids (1 … 2.6M for a few thousand users): the CLI, fit(path)
    and two workers' distributed ingress number them alike, predict and --top-k speak the
    file's ids, and the header says how they were numbered."""
    import tux2
    rng = np.random.default_rng(3)
    users = np.sort(rng.choice(np.arange(1, 2_649_430), 60, replace=False))
    items = np.arange(1, 41)
    rows = [(int(u), int(i), int(rng.integers(1, 6))) for u in users for i in rng.choice(items, 12, replace=False)]
    path = tmp_path / "netflix.csv"
    path.write_text("".join(f"{u},{i},{r},2005-09-06\n" for u, i, r in rows))
    models = {}
    for name, extra in (("one", []), ("two", ["--workers", "2"])):
        r = run_cli("run", "mf", str(path), "--k", "4", "--epochs", "3", "--test-fraction", "0", "--out",
                    str(tmp_path / name), *extra,
                    timeout=300)
        assert r.returncode == 0, r.stderr
        assert "user ids numbered densely (60 distinct of" in r.stdout and "item ids" not in r.stdout
        assert ("distributed ingress" in r.stdout) == (name == "two"), r.stdout
        models[name] = {t: dict(np.load(tmp_path / name / f"{t}.npz")) for t in ("user", "item")}
    est = tux2.MF(k=4, epochs=3).fit(str(path))
    for m in models.values():
        assert m["user"]["ids"].tolist() == users.tolist() and m["user"]["p"].shape == (60, 4)
        np.testing.assert_array_equal(m["user"]["p"], models["one"]["user"]["p"])
        np.testing.assert_array_equal(m["item"]["p"], models["one"]["item"]["p"])
    np.testing.assert_array_equal(est.user_factors_.astype(np.float32), models["one"]["user"]["p"])
    (tmp_path / "pairs.txt").write_text(f"{users[5]} {rows[5 * 12][1]}\n")
    r = run_cli("predict", str(tmp_path / "one"), str(tmp_path / "pairs.txt"))
    assert r.returncode == 0 and r.stdout.splitlines()[1].startswith(f"{users[5]} {rows[5 * 12][1]} "), r.stdout
    (tmp_path / "users.txt").write_text(f"{users[7]}\n")
    r = run_cli("predict", str(tmp_path / "one"), str(tmp_path / "users.txt"), "--top-k", "2")
    assert r.returncode == 0 and r.stdout.startswith(f"{users[7]} "), r.stdout


@pytest.mark.parametrize("command", [("info",), ("partition", "--parts", "2", "-s", "random")])
def test_info_and_partition_read_sparse_integer_ids_as_run_does(tmp_path, command):
    """README: 'tux2 info' sniffs a file as the run commands read it, and 'tux2 partition'
    reads its input as 'tux2 run' reads it; run numbers Netflix-style sparse user ids
    (a few thousand users up to 2.6M) densely, so both must read the file too."""
    rng = np.random.default_rng(34)
    users = np.sort(rng.choice(np.arange(1, 2_649_430), 3000, replace=False))
    path = tmp_path / "netflix.csv"
    path.write_text("user,item,rating,date\n" + "".join(
        f"{u},{i},{int(rng.integers(1, 6))},2005-09-06\n" for u in users.tolist()
        for i in rng.choice(np.arange(1, 501), 10, replace=False).tolist()))
    r = run_cli(command[0], str(path), *command[1:], timeout=300)
    assert r.returncode == 0, r.stderr
    if command[0] == "info":
        assert "src ids numbered densely, as tux2 run mf numbers them (3000 distinct of" in r.stdout, r.stdout


# --- LIBSVM-page classification files as they come (covtype.binary's labels 1/2, a9a's one-hot rows) ---

def _onehot_binary(n=4000, seed=7):
    """a9a-shaped rows: 14 categorical groups one-hot over 123 features, 14 ones per row; planted
    logistic labels (about a quarter positive)."""
    rng = np.random.default_rng(seed)
    sizes = [7, 8, 16, 16, 7, 14, 6, 5, 2, 3, 2, 2, 6, 29]
    starts = np.cumsum([0] + sizes[:-1])
    cols = np.stack([starts[g] + rng.integers(0, s, n) for g, s in enumerate(sizes)], 1)
    w = rng.normal(0, 1, 123)
    m = w[cols].sum(1)
    m = (m - m.mean()) / m.std() * 3 - 2
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-m)), 1, -1)
    return np.sort(cols, 1), y


def _write_libsvm(path, cols, labels):
    with open(path, "w") as f:
        for c, y in zip(cols, labels):
            f.write(f"{y} " + " ".join(f"{j + 1}:1" for j in c) + " \n")
    return str(path)


@pytest.mark.parametrize("algo", ["lr", "blockpg"])
def test_a_binary_libsvm_file_labelled_1_and_2_trains(tmp_path, algo):
    cols, y = _onehot_binary(n=600)
    path = _write_libsvm(tmp_path / "covtype.binary", cols, np.where(y > 0, 1, 2))
    r = run_cli("run", algo, path, "--epochs", "2", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    p = run_cli("predict", str(tmp_path / "m"), path, "-o", str(tmp_path / "pred.txt"))
    assert p.returncode == 0, p.stderr
    assert set(np.loadtxt(tmp_path / "pred.txt", usecols=0, comments="#").tolist()) <= {1.0, 2.0}


def test_scikit_learns_zero_based_libsvm_files_are_read_as_written(tmp_path):
    """sklearn.datasets.dump_svmlight_file writes indices from 0: read so without a flag
    (as load_svmlight_file's zero_based="auto"), the header saying so, the test file and
    predict following the training file's base though index 0 is missing from them;
    a LIBSVM-site file (from 1) stays 1-based and --one-based refuses index 0."""
    import scipy.sparse as sp
    import tux2
    from sklearn.datasets import dump_svmlight_file
    cols, y = _onehot_binary(n=500)
    X = sp.csr_matrix((np.ones(cols.size), cols.ravel(), np.arange(0, cols.size + 1, cols.shape[1])), shape=(500, 123))
    train, test = str(tmp_path / "train.svm"), str(tmp_path / "test.svm")
    dump_svmlight_file(X[:400], y[:400], train)
    keep = np.flatnonzero(~np.asarray((X[400:, 0] != 0).todense()).ravel())     # rows without feature 0
    dump_svmlight_file(X[400:][keep], y[400:][keep], test)
    assert " 0:" in open(train).read() and " 0:" not in open(test).read()
    auto = tux2.LogisticRegression(epochs=3).fit(train, test)
    given = tux2.LogisticRegression(epochs=3, zero_based=True).fit(train, test)
    on_matrix = tux2.LogisticRegression(epochs=3).fit(X[:400], y[:400])
    assert auto.zero_based_ and auto.get_params()["zero_based"] == "auto"
    np.testing.assert_array_equal(auto.coef_, given.coef_)
    np.testing.assert_array_equal(auto.coef_, on_matrix.coef_)          # column j is the file's index j
    assert auto.history_[-1]["test_accuracy"] == given.history_[-1]["test_accuracy"] > 0.6
    np.testing.assert_array_equal(auto.predict(test), on_matrix.predict(X[400:][keep]))
    r = run_cli("run", "lr", train, "--test", test, "--epochs", "3", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert "read as: feature indices 0-based (an index 0 occurs" in r.stdout
    weights = dict(line.split(":") for line in (tmp_path / "m" / "weights.txt").read_text().split())
    assert sorted(int(k) for k in weights) == np.flatnonzero(auto.coef_).tolist() + [len(auto.coef_)]  # the file's
    #                                                                                   indices, the intercept's last
    p = run_cli("predict", str(tmp_path / "m"), test, "-o", str(tmp_path / "pred.txt"))
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "pred.txt", usecols=0, comments="#"), auto.predict(test))
    r = run_cli("run", "lr", train, "--one-based")
    assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: {train}:") and \
        "feature index 0 in a 1-based file" in r.stderr, r.stderr
    one = _write_libsvm(tmp_path / "a9a", cols, y)
    assert io.read_libsvm(one, zero_based="auto")[0].base == 1
    r = run_cli("run", "lr", one, "--epochs", "1")
    assert r.returncode == 0 and "0-based" not in r.stdout, r.stderr


def test_the_estimator_predicts_the_labels_it_was_fitted_on():
    import scipy.sparse as sp
    import tux2
    cols, y = _onehot_binary(n=600)
    X = sp.csr_matrix((np.ones(cols.size), cols.ravel(), np.arange(0, cols.size + 1, cols.shape[1])), shape=(600, 123))
    y01 = (y > 0).astype(int)
    m = tux2.LogisticRegression(epochs=2).fit(X, y01)
    assert list(m.classes_) == [0, 1]
    assert set(np.unique(m.predict(X)).tolist()) <= {0, 1}


def test_blockpg_defaults_reach_liblinear_on_a9a_shaped_rows(tmp_path):
    from sklearn.linear_model import LogisticRegression as SkLR
    import scipy.sparse as sp
    cols, y = _onehot_binary(n=4000)
    path = _write_libsvm(tmp_path / "a9a", cols, y)
    r = run_cli("run", "blockpg", path, "--out", str(tmp_path / "m"), "-q")
    assert r.returncode == 0, r.stderr
    obj = json.loads((tmp_path / "m" / "model.json").read_text())["objective"]
    X = sp.csr_matrix((np.ones(cols.size), cols.ravel(), np.arange(0, cols.size + 1, cols.shape[1])), shape=(4000, 123))
    with warnings.catch_warnings():          # scikit-learn >= 1.8 deprecates penalty= (l1_ratio=1 there); still L1
        warnings.simplefilter("ignore")
        sk = SkLR(penalty="l1", C=1.0, solver="liblinear", fit_intercept=False, tol=1e-8, max_iter=1000).fit(X, y)
    w = sk.coef_.ravel()
    best = np.logaddexp(0, -y * (X @ w)).sum() + np.abs(w).sum()
    assert obj <= best * 1.01, (obj, best)


def test_logistic_regression_fits_an_intercept_by_default_on_w8a_shaped_rows():
    import scipy.sparse as sp
    import tux2
    rng = np.random.default_rng(3)
    n, d = 6000, 300
    X = sp.csr_matrix((rng.random((n, d)) < 0.2 / (1 + np.arange(d)) ** 0.6).astype(float))
    m = X @ rng.normal(0, 1, d)
    m = (m - m.mean()) / m.std() * 3 - 6.5                       # a few per cent positive, as w8a
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-m)), 1, -1)
    lr = tux2.LogisticRegression().fit(X[:4000], y[:4000])
    acc = lr.score(X[4000:], y[4000:])
    without = tux2.LogisticRegression(bias=False).fit(X[:4000], y[:4000]).score(X[4000:], y[4000:])
    assert lr.coef_.shape == (d,) and lr.intercept_ < -1              # few positives
    # without it 0.955, below always guessing the majority class (0.975); scikit-learn's default 0.9755
    assert acc >= without + 0.01 and acc >= (y[4000:] == -1).mean() - 0.005, (acc, without)


def test_a_numpy_bool_bias_survives_save_and_load(tmp_path):
    import tux2
    from tux2.estimators import load
    cols, y = _onehot_binary(n=600)
    path = _write_libsvm(tmp_path / "a9a", cols, y)
    m = tux2.FM(epochs=2, bias=np.True_).fit(path)
    m.save(str(tmp_path / "m"))
    back = load(str(tmp_path / "m"))
    np.testing.assert_allclose(back.decision_function(path), m.decision_function(path), rtol=1e-6)


def test_a_third_label_zero_beside_plus_and_minus_one_is_named(tmp_path):
    cols, y = _onehot_binary(n=600)
    y = y.copy()
    y[::3] = 0
    path = _write_libsvm(tmp_path / "three", cols, y)
    r = run_cli("run", "svm", path, "--epochs", "1")
    assert r.returncode != 0 and "third" in r.stderr, r.stderr
    r = run_cli("run", "lr", path, "--epochs", "1")     # lr fits the multinomial model, and says so
    assert r.returncode == 0 and "3 classes: the multinomial (softmax) model" in r.stdout, r.stdout + r.stderr


def test_predict_writes_seven_digit_labels_as_the_file_has_them(tmp_path):
    cols, y = _onehot_binary(n=600)
    path = _write_libsvm(tmp_path / "big_labels", cols, np.where(y > 0, 1000001, 1000000))
    r = run_cli("run", "lr", path, "--epochs", "2", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    p = run_cli("predict", str(tmp_path / "m"), path, "-o", str(tmp_path / "pred.txt"))
    assert p.returncode == 0, p.stderr
    assert set(np.loadtxt(tmp_path / "pred.txt", usecols=0, comments="#").tolist()) == {1000000.0, 1000001.0}


# ---------------------------------------------------------------- LDA corpora as they come
# Two planted topics over 6 words: documents 0-3 use words 0-2 only, 4-7 words 3-5 only.
LDA_ROWS = [(d, w, 3 + (d + w) % 4) for d in range(8) for w in (range(3) if d < 4 else range(3, 6))]
LDA_VOCAB = "apple\nbanana\nmelon\ngoal\nteam\ncoach\n"


def test_lda_triples_under_a_header_line_are_read_as_triples_or_refused(tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("doc,word,count\n" + "".join(f"{d},{w},{c}\n" for d, w, c in LDA_ROWS))
    r = run_cli("run", "lda", str(path), "-k", "2", "--iterations", "2")
    assert "Traceback" not in r.stderr
    if r.returncode == 0:
        assert "[triples]" in r.stdout and " 8 documents, 6 words" in r.stdout, r.stdout
    else:
        assert r.stderr.startswith(f"tux2: error: {path}"), r.stderr


def test_lda_one_based_triples_with_their_vocabulary_are_read_as_info_says_or_the_error_names_base(tmp_path):
    path, vocab = tmp_path / "counts1.txt", tmp_path / "vocab.txt"
    path.write_text("".join(f"{d + 1} {w + 1} {c}\n" for d, w, c in LDA_ROWS))
    vocab.write_text(LDA_VOCAB)
    assert "1-based" in run_cli("info", str(path)).stdout
    r = run_cli("run", "lda", str(path), "--vocab", str(vocab), "-k", "2", "--iterations", "2")
    assert "Traceback" not in r.stderr
    if r.returncode == 0:
        assert " 8 documents, 6 words" in r.stdout, r.stdout
    else:
        assert "--base 1" in r.stderr, r.stderr


def _netflix(rows):
    """(the ratings in the Netflix prize's per-movie format, the same lines as 'user,movie,rating,date')."""
    by_movie = sorted(rows, key=lambda r: r[1])
    text, edges = "", ""
    for n, (u, i, r, t) in enumerate(by_movie):
        if n == 0 or by_movie[n - 1][1] != i:
            text += f"{i}:\n"
        text += f"{u},{r},2005-09-{t % 28 + 1:02d}\n"
        edges += f"{u},{i},{r},2005-09-{t % 28 + 1:02d}\n"
    return text, edges


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_the_netflix_prize_per_movie_format_is_read_as_the_edges_it_holds(tmp_path):
    """combined_data_1.txt ('MOVIE:' lines above 'user,rating,date' lines), plain, xz on
    standard input, from Python and on two workers: the model of the same ratings written
    'user,movie,rating,date'; errors name the file's own line."""
    text, edges = _netflix(ROWS)
    path, plain = tmp_path / "combined_data_1.txt", tmp_path / "edges.csv"
    path.write_text(text)
    plain.write_text(edges)
    ref = _train(str(plain), tmp_path / "ref")[1]
    out, model = _train(str(path), tmp_path / "nf")
    assert "read as: the Netflix prize's per-movie format" in out
    _same(model, ref)
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", "-", *FLAGS, "--out", str(tmp_path / "xz")],
                       input=lzma.compress(text.encode()), capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    _same({n: dict(np.load(tmp_path / "xz" / f"{n}.npz")) for n in ("user", "item")}, ref)
    two = _train(str(path), tmp_path / "two", "--workers", "2", "--timeout", "30")
    assert "distributed ingress" in two[0] and "Netflix prize" in two[0]
    import tux2
    np.testing.assert_array_equal(tux2.MF(k=4, epochs=3).fit(str(path)).user_factors_,
                                  tux2.MF(k=4, epochs=3).fit(str(plain)).user_factors_)
    assert "Netflix prize" in run_cli("info", str(path)).stdout
    lines = text.splitlines()
    lines[5] = lines[5].split(",")[0] + ",x,2005-09-06"
    path.write_text("\n".join(lines) + "\n")
    r = run_cli("run", "mf", str(path))
    assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: {path}:6: malformed value"), r.stderr
    assert os.listdir(tmp_path / "nf")         # the earlier model is untouched


def test_a_feature_twice_in_a_libsvm_line_is_named_as_the_file_numbers_it(tmp_path):
    path = tmp_path / "dup.svm"
    path.write_text("-1 7:1 5:1 7:2\n1 1:1\n")
    r = run_cli("run", "lr", str(path))
    assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: {path}:1: duplicate feature 7 in one sample"), \
        r.stderr                                                   # was 'duplicate edge (0, 6)': internal ids


def test_an_overconfident_model_gets_a_note_and_lda_models_keep_no_scratch_tables(tmp_path):
    """An FM at λ = 1e-6 and η 0.5 (its default until 2026-11-29, at which it ended at 0.98)
    on the built-in set ends with a test log-loss above ln 2 while its training objective
    falls: the note says so (raw-count FMs reached 20, with no word). At the defaults it
    ends below, with no note."""
    r = run_cli("run", "fm", "--epochs", "10", "--lam", "1e-6", "--eta", "0.5")
    assert r.returncode == 0 and "note: the test log-loss ended at" in r.stdout, r.stdout
    r = run_cli("run", "fm", "--epochs", "10")
    assert r.returncode == 0 and "note:" not in r.stdout and "lambda=5e-05 (1/n)" in r.stdout, r.stdout
    r = run_cli("run", "lda", "--iterations", "1", "-q", "--out", str(tmp_path / "lda"))
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "lda" / "model.json").read_text())
    assert meta["context"]["ll_per_token"] < 0 and not any(isinstance(v, list) for v in meta["context"].values())


def test_a_test_set_that_is_the_training_file_gets_its_note_and_no_note_about_new_data(tmp_path):
    """svm at a large step on random labels. With --test the training file itself, the
    run said both that the test set is the training data and that 'the model is
    overconfident on new data': only the first holds. On new samples its hinge loss ends
    above the all-zero model's 1: that note stays."""
    rng = np.random.default_rng(0)
    X, y = rng.random((400, 19)) * 100, rng.choice([1, -1], 400)
    train, copy = tmp_path / "r.svm", tmp_path / "other.svm"
    train.write_text("".join(f"{y[i]} " + " ".join(f"{j + 1}:{X[i, j]:.3f}" for j in range(19)) + "\n"
                             for i in range(400)))
    copy.write_bytes(train.read_bytes())
    flags = ("--epochs", "10", "--lam", "1e-6", "--eta", "2")
    r = run_cli("run", "svm", str(train), "--test", str(train), *flags)
    assert r.returncode == 0 and "the test set is the training file itself" in r.stdout, r.stdout
    assert "overconfident" not in r.stdout, r.stdout
    r = run_cli("run", "svm", str(train), "--test", str(copy), *flags)      # a copy: its own file, the same loss
    assert r.returncode == 0 and "training file itself" not in r.stdout and "overconfident" not in r.stdout
    X, y = rng.random((400, 19)) * 100, rng.choice([1, -1], 400)            # new samples: a hinge loss above 1
    copy.write_text("".join(f"{y[i]} " + " ".join(f"{j + 1}:{X[i, j]:.3f}" for j in range(19)) + "\n"
                            for i in range(400)))
    r = run_cli("run", "svm", str(train), "--test", str(copy), *flags)
    assert r.returncode == 0 and "note: the test hinge loss ended at" in r.stdout \
        and "the model is overconfident on new data" in r.stdout, r.stdout


def test_a_test_file_of_other_features_is_named_as_such_not_as_a_too_large_step(tmp_path):
    """An a9a-like training file (123 one-hot features) with the test file of another set
    (features 1 … 3000, nearly all unseen in training): the run said only 'the model is
    overconfident on new data; lower --eta', which no step size mends. The header now counts
    the test's non-zeros on features training has none of, and the closing note asks whether
    the test file is of the training file's features."""
    rng = np.random.default_rng(0)
    w = rng.normal(0, 1, 123)

    def rows(n, d, k):
        X = [np.sort(rng.choice(d, k, replace=False)) for _ in range(n)]
        y = [1 if w[x[x < 123]].sum() + rng.normal() > 0 else -1 for x in X]
        return "".join(f"{l} " + " ".join(f"{j + 1}:1" for j in x) + "\n" for l, x in zip(y, X))
    train, other = tmp_path / "a9a", tmp_path / "other.svm"
    train.write_text(rows(2000, 123, 14))
    other.write_text(rows(1000, 3000, 40))
    r = run_cli("run", "lr", str(train), "--test", str(other), "--epochs", "3", "--eta", "5", "--lam", "1e-7")
    assert r.returncode == 0, r.stderr
    assert "features the training data has none of (weight 0)" in r.stdout, r.stdout
    assert "worse than the all-zero model's" in r.stdout and "is the test file of the training file's " \
        "features?" in r.stdout and "lower --eta" not in r.stdout, r.stdout
    r = run_cli("run", "lr", str(train), "--test", str(train), "--epochs", "1")
    assert r.returncode == 0 and "none of (weight 0)" not in r.stdout, r.stdout
    r = run_cli("run", "lr", str(train), "--epochs", "1", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    r = run_cli("predict", str(tmp_path / "m"), str(other))
    assert r.returncode == 0 and f"tux2: warning: {other}: " in r.stderr and "of its 40,000 non-zeros are on " \
        "features the model has no weight for" in r.stderr, r.stderr
    r = run_cli("predict", str(tmp_path / "m"), str(train))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_book_crossing_ratings_semicolons_and_quoted_fields(tmp_path):
    """BX-Book-Ratings.csv as published: '"User-ID";"ISBN";"Book-Rating"', every field
    quoted, ';' between them, ISBNs with letters. Before, tux2 called it
    'plain text, a corpus for topic models'; now it is a rating file whose quotes and
    semicolons separate, read with string ids, in a run, `tux2 info` and the Python loader."""
    rng = np.random.default_rng(3)
    lines = ['"User-ID";"ISBN";"Book-Rating"']
    for u in range(60):
        for i in rng.choice(40, 6, replace=False):
            lines.append(f'"{276725 + u}";"03454510{i:02d}X";"{rng.integers(0, 11)}"')
    path = tmp_path / "BX-Book-Ratings.csv"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    r = run_cli("run", "mf", str(path), "--k", "2", "--epochs", "2")
    assert r.returncode == 0, r.stderr
    assert "read as: semicolon-separated, header User-ID,ISBN,Book-Rating" in r.stdout, r.stdout
    assert "item ids read as strings (40 distinct)" in r.stdout, r.stdout
    r = run_cli("info", str(path))
    assert r.returncode == 0 and "semicolon-separated" in r.stdout and "max 10" in r.stdout, r.stdout + r.stderr
    g = loaders.load_edges(str(path), ids="string")
    assert g.num_edges == 360 and sorted(set(g.values.tolist())) == list(range(11))


@pytest.mark.parametrize("text,line", [(b"user;item;rating\n1;2;3,5\n2;3;4,0\n", 2),
                                       (b'"1";"2";"3,5"\n"2";"3";"4"\n', 1),
                                       (b"user;item;rating\n1;2;4\n1;3;2\n2;3;3,5\n", 4),    # below whole ones
                                       (b"u;i;r\nu1;b2;4\nu1;b3;3,5\n", 3)])                  # string ids
def test_a_decimal_comma_in_a_semicolon_file_is_named_not_read_as_two_fields(tmp_path, text, line):
    """European CSV separates by ';' because ',' is its decimal point: '1;2;3,5' read as
    user 1, item 2, rating 3 and an ignored fourth column 5 (the header said 'of 4; column
    4 ignored'). The run and `tux2 info` now stop, naming the line and the number, on
    any line: below lines of whole ratings the file is still ';'-separated."""
    path = tmp_path / "ratings.csv"
    path.write_bytes(text)
    for args in (("run", "mf", str(path), "--epochs", "1"), ("info", str(path))):
        r = run_cli(*args)
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
        assert f"ratings.csv:{line}: a decimal comma" in r.stderr and "'3,5'" in r.stderr, r.stderr


# pandas' DataFrame.to_csv keeps the index by default: the header's first name is empty
# (',userId,movieId,rating,timestamp'). Dropping it pointed every name one column left: the
# index was read as the user, userId as the item and movieId as the rating.
@pytest.mark.parametrize("columns", [None, "userId,movieId,rating"])
def test_pandas_index_column_is_not_the_user(tmp_path, columns):
    path = tmp_path / "ratings.csv"
    path.write_text(",userId,movieId,rating,timestamp\n0,1,10,4.0,964982703\n1,1,20,3.5,964981247\n"
                    "2,2,10,5.0,964982224\n3,2,30,2.0,964983815\n4,3,20,1.5,964982931\n")
    g = loaders.load_edges(str(path), columns=columns)
    assert (g.n_src, g.n_dst) == (3, 30)          # users 1-3, items up to 30 (1-based)
    assert sorted(np.asarray(g.values).tolist()) == [1.5, 2.0, 3.5, 4.0, 5.0]
    fmt = io.edge_format(path.read_bytes(), str(path), columns)
    assert fmt.cols == (1, 2, 3) and "columns (unnamed), timestamp ignored" in fmt.describe()


# An empty field ('5,13476,,1017777900': no rating) was skipped as a separator, so the
# timestamp became the rating; now it stops the run naming the line, integer and string ids.
@pytest.mark.parametrize("sep", [",", "\t", ";"])
@pytest.mark.parametrize("ids", ["int", "string"])
def test_empty_field_stops_naming_the_line(tmp_path, sep, ids):
    rows = [["1", "10", "4.0", "964982703"], ["2", "20", "", "964981247"], ["3", "10", "5.0", "964982224"]]
    path = tmp_path / "ratings.txt"
    path.write_text("".join(sep.join(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"ratings.txt:2: empty field"):
        loaders.load_edges(str(path), ids=ids)


def test_separators_that_are_not_empty_fields(tmp_path):
    """Spaces around commas, aligned spaces, a trailing comma, '::' and quoted fields
    read as before: only two commas, semicolons or tabs in a row make an empty field."""
    for text in ["1, 10, 4\n2, 20, 3\n", "1   10   4\n2   20   3\n", "1,10,4,\n2,20,3,\n", "1::10::4\n2::20::3\n",
                 '"1";"10";"4"\n"2";"20";"3"\n']:
        path = tmp_path / "r.txt"
        path.write_text(text)
        g = loaders.load_edges(str(path))
        assert np.asarray(g.values).tolist() == [4.0, 3.0], text
    assert io.split_fields(b",,a,,b", leading=True) == [b"", b"", b"a", b"", b"b"]
    assert io.split_fields(b"a\t\tb,") == [b"a", b"", b"b"]


def test_fit_on_a_gzip_file_leaves_no_decompressed_copy(tmp_path):
    """Every fit on a .gz path kept its decompressed copy in $TMPDIR/tux2-input-*/ until
    the interpreter exited: a notebook or a grid search piled up one per fit. The run
    still names the file the user gave; a failed decompress leaves nothing either."""
    rng = np.random.default_rng(0)
    pairs = sorted({(int(u), int(i)) for u, i in zip(rng.integers(0, 60, 600), rng.integers(0, 20, 600))})
    with gzip.open(tmp_path / "r.txt.gz", "wt") as f:
        f.writelines(f"{u} {i} {rng.integers(1, 6)}\n" for u, i in pairs)
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"1 2 3\n" * 1000)[:-40])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = ("import os, sys, warnings, tux2; warnings.simplefilter('ignore')\n"
            "for _ in range(3): m = tux2.MF(k=2, epochs=1).fit(sys.argv[1])\n"
            "print(m.run_['source'])\n"
            "try: tux2.MF(k=2, epochs=1).fit(sys.argv[2])\n"
            "except tux2.InputError as e: print('error', e)\n"
            "print(sorted(os.listdir(sys.argv[3])))\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.txt.gz"), str(tmp_path / "bad.gz"), str(tmp)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip().splitlines()
    assert out[0].endswith("r.txt.gz") and out[1].startswith("error") and "bad.gz" in out[1], out
    assert [n for n in eval(out[-1]) if n.startswith("tux2-input-")] == [], out


def test_every_estimator_reads_compressed_files_as_the_command_line_does(tmp_path):
    """Only MF's fit read .gz/.bz2/.xz from Python: LogisticRegression().fit('x.bz2') said
    'malformed label' at line 1 quoting the compressed bytes, and LDA 'not UTF-8 text',
    while `tux2 run` read both. Now fit, score, predict and transform read them alike,
    name the file as given, and leave no decompressed copy behind."""
    import tux2
    from tux2.datasets import sparse_classification
    from tux2.io import write_libsvm
    g, y, _ = sparse_classification(n_samples=400, n_features=50, seed=0)
    write_libsvm(str(tmp_path / "s.svm"), g, y)
    raw = (tmp_path / "s.svm").read_bytes()
    (tmp_path / "s.svm.bz2").write_bytes(bz2.compress(raw))
    (tmp_path / "s.svm.xz").write_bytes(lzma.compress(raw))
    docs = "".join(f"apple banana melon {'pear ' * (i % 3)}\n" if i % 2 else "goal team coach score\n"
                   for i in range(40))
    (tmp_path / "d.txt").write_text(docs)
    (tmp_path / "d.txt.gz").write_bytes(gzip.compress(docs.encode()))
    (tmp_path / "bad.svm.gz").write_bytes(gzip.compress(raw + b"1 3:x\n"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = f"""
import os, sys, warnings, numpy as np, tux2
warnings.simplefilter('ignore')
d = {str(tmp_path)!r}
for est in (tux2.LogisticRegression(epochs=2), tux2.BlockPG(epochs=2)):
    plain = type(est)(**est.get_params()).fit(d + '/s.svm', d + '/s.svm')
    b = type(est)(**est.get_params()).fit(d + '/s.svm.bz2', d + '/s.svm.xz')
    assert np.array_equal(plain.coef_, b.coef_), type(est)
    assert b.score(d + '/s.svm.xz') == plain.score(d + '/s.svm')
    assert np.array_equal(b.predict(d + '/s.svm.bz2'), plain.predict(d + '/s.svm'))
    print(b.run_['source'])
lda, plain = tux2.LDA(topics=2, iterations=5).fit(d + '/d.txt.gz'), tux2.LDA(topics=2, iterations=5).fit(d + '/d.txt')
assert lda.vocab_ == plain.vocab_ and np.array_equal(lda.word_topic_, plain.word_topic_)
assert np.array_equal(lda.transform(d + '/d.txt.gz'), plain.transform(d + '/d.txt'))
assert lda.score(d + '/d.txt.gz') == plain.score(d + '/d.txt')
try:
    tux2.LogisticRegression(epochs=1).fit(d + '/bad.svm.gz')
except tux2.InputError as e:
    print('error', e)
print(sorted(os.listdir(sys.argv[1])))
"""
    r = subprocess.run([sys.executable, "-c", code, str(tmp)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip().splitlines()
    assert out[0].endswith("s.svm.bz2") and out[1].endswith("s.svm.bz2"), out
    assert out[2].startswith(f"error {tmp_path / 'bad.svm.gz'}:401: "), out
    assert [n for n in eval(out[-1]) if n.startswith("tux2-input-")] == [], out


# Last.fm-360K as published: user sha1 TAB artist mbid TAB artist name TAB plays; names hold spaces, quotes,
# commas, semicolons and non-ASCII letters
ARTISTS = [("1a2b8f1f-f1fd-42a2-9755-d4c13a902931", '"weird al" yankovic'), ("35bf992d-c9e9-c616-612e-7696a6cecc1b",
           "elvenking"), ("9b810e76-6ec9-d286-63ca-828dd5f4b3b2", "red hot chili peppers"),
           ("b9d179e0-6c0f-d4f5-f813-0c4237730edf", "a, b and c"), ("025b413f-8a9a-021e-a648-a7dd06839eb9",
           "sigur rós"), ("e4b06ce6-0741-c7a8-7ce4-2c8218072e8c", "juliette & the licks"),
           ("1e2feb89-414c-343c-1027-c4d1c386bbc4", "die Ärzte"), ("cd613e30-d8f1-6adf-91b7-584a2265b1f5",
           "betty blue"), ("78e51061-7311-d8a3-c2ce-6f447ed4d57b", "melissa; etheridge")]


def _lastfm(users=40, header=False, numeric=False):
    """Last.fm-360K-shaped lines: (text, [(user, artist mbid, name, plays)]); ``numeric``:
    user and artist numbers instead of the sha1 and the mbid."""
    import hashlib
    rng = np.random.default_rng(360)
    rows = []
    for u in range(users):
        user = u + 1 if numeric else hashlib.sha1(str(u).encode()).hexdigest()
        for a in rng.choice(len(ARTISTS), 4, replace=False).tolist():
            rows.append((user, a + 1 if numeric else ARTISTS[a][0], ARTISTS[a][1], int(rng.integers(1, 3000))))
    text = "user\tartist\tname\tplays\n" if header else ""
    return text + "".join(f"{u}\t{a}\t{n}\t{p}\n" for u, a, n, p in rows), rows


def _model(out):
    return {n: dict(np.load(os.path.join(out, f"{n}.npz"), allow_pickle=False)) for n in ("user", "item")}


@pytest.mark.slow
def test_lastfm_tab_separated_names_with_spaces_read_by_run_fit_and_info(tmp_path):
    """Only tabs separate the fields of a file whose first line has one: the artist
    names' spaces, quotes, commas and semicolons are part of them. Before, the run
    stopped ('malformed value … it looks like plain text') and `tux2 info` read the file
    as a text corpus."""
    import tux2
    text, rows = _lastfm()
    path = tmp_path / "usersha1-artmbid-artname-plays.tsv"
    path.write_text(text, encoding="utf-8")
    r = run_cli("run", "mf", str(path), "--ids", "string", "--columns", "1,2,4", *FLAGS, "--test-fraction", "0",
                "--out", str(tmp_path / "mbid"))
    assert r.returncode == 0, r.stderr
    assert "read as: tab-separated; columns 1,2,4 (1,2,4) of 4; column 3 ignored" in r.stdout, r.stdout
    assert f"item ids read as strings ({len({a for _, a, _, _ in rows})} distinct)" in r.stdout, r.stdout
    by_mbid = _model(tmp_path / "mbid")
    assert set(by_mbid["item"]["ids"].tolist()) == {a for _, a, _, _ in rows}
    r = run_cli("run", "mf", str(path), "--columns", "1,3,4", *FLAGS, "--test-fraction", "0", "--out",
                str(tmp_path / "name"))
    assert r.returncode == 0, r.stderr
    by_name = _model(tmp_path / "name")
    assert set(by_name["item"]["ids"].tolist()) == {n for _, _, n, _ in rows}
    assert {'"weird al" yankovic', "a, b and c", "melissa; etheridge", "sigur rós"} <= set(by_name["item"]["ids"])
    # names with spaces: predict's fields are tab-separated, so they stay apart ('user a, b and c 80.1' was one line
    # of five space-separated words)
    (tmp_path / "pairs.tsv").write_text(f"{rows[1][0]}\tbetty blue\n{rows[0][0]}\ta, b and c\n", encoding="utf-8")
    p = run_cli("predict", str(tmp_path / "name"), str(tmp_path / "pairs.tsv"))
    assert p.returncode == 0 and p.stdout.splitlines()[0] == "# user\titem\tprediction", p.stderr
    assert p.stdout.splitlines()[2].split("\t")[:2] == [rows[0][0], "a, b and c"], p.stdout
    top = run_cli("predict", str(tmp_path / "name"), "--top-k", "3", "--include-seen").stdout.splitlines()
    assert all(len(line.split("\t")) == 4 and all(f.rsplit(":", 1)[0] in by_name["item"]["ids"]
                                                  for f in line.split("\t")[1:]) for line in top), top
    est = tux2.MF(k=4, epochs=3, columns="1,3,4").fit(str(path))
    np.testing.assert_array_equal(est.user_factors_.astype(np.float32), by_name["user"]["p"])
    np.testing.assert_array_equal(est.item_factors_.astype(np.float32), by_name["item"]["p"])
    r = run_cli("info", str(path), "--columns", "1,3,4")
    assert r.returncode == 0, r.stderr
    assert "edges" in r.stdout and "tab-separated" in r.stdout and f"{len(ARTISTS)} with edges" in r.stdout, r.stdout
    # without --columns the third column (names) is no value: said so, and never 'plain text'
    for cmd in (("info", str(path)), ("run", "mf", str(path), "--ids", "string")):
        r = run_cli(*cmd)
        assert r.returncode == 2 and f"{path}:1: " in r.stderr and "--columns 1,2,4" in r.stderr, r.stderr
        assert "plain text" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    # Last.fm leaves the artist's mbid out on 1-2 % of its lines: the hint names the name column, which
    # --columns 1,2,4 would have stopped at ('empty field') on the first such line
    text, rows = _lastfm()
    lines = text.splitlines(keepends=True)
    lines[30] = "\t".join((rows[30][0], "", rows[30][2], str(rows[30][3]))) + "\n"
    gap = tmp_path / "gap.tsv"
    gap.write_text("".join(lines), encoding="utf-8")
    r = run_cli("run", "mf", str(gap), "--implicit")
    assert r.returncode == 2 and "(e.g. --columns 1,3,4; column 2 is empty on some lines" in r.stderr, r.stderr


@pytest.mark.slow
def test_lastfm_with_a_header_picks_columns_by_name_and_two_workers_agree(tmp_path):
    """A header 'user<TAB>artist<TAB>name<TAB>plays' names the columns; the model is the
    one of the file without it read by positions, and two workers give one worker's."""
    text, _ = _lastfm(header=True)
    (tmp_path / "plain.tsv").write_text(_lastfm()[0], encoding="utf-8")
    path = tmp_path / "lastfm.tsv"
    path.write_text(text, encoding="utf-8")
    models = {}
    for name, src, extra in (("positions", "plain.tsv", ("--columns", "1,2,4")),
                             ("names", "lastfm.tsv", ("--columns", "user,artist,plays")),
                             ("two", "lastfm.tsv", ("--columns", "user,artist,plays", "--workers", "2"))):
        r = run_cli("run", "mf", str(tmp_path / src), *FLAGS, "--test-fraction", "0", "--partitions", "2",
                    "--out", str(tmp_path / name), *extra, timeout=300)
        assert r.returncode == 0, r.stderr
        models[name] = _model(tmp_path / name)
    assert "read as: tab-separated, header user,artist,name,plays; columns user,artist,plays (1,2,4)" in r.stdout
    _same(models["positions"], models["names"])
    _same(models["names"], models["two"])


def test_numeric_tab_separated_ids_beside_names_through_distributed_ingress(tmp_path):
    """Numeric user and artist ids beside a name column: the numba parser skips the
    names whole (their spaces are no separators), and each worker of a distributed
    ingress parses its byte range the same way: the model of one worker."""
    text, rows = _lastfm(numeric=True)
    path = tmp_path / "numbered.tsv"
    path.write_text(text, encoding="utf-8")
    g = io.read_edge_list(str(path), columns="1,2,4", base=0)
    assert g.src.tolist() == [u for u, *_ in rows] and g.values.tolist() == [p for *_, p in rows]
    models = {}
    for name, extra in (("one", ()), ("two", ("--workers", "2"))):
        r = run_cli("run", "mf", str(path), "--columns", "1,2,4", *FLAGS, "--test-fraction", "0", "--partitions",
                    "2", "--out", str(tmp_path / name), *extra, timeout=300)
        assert r.returncode == 0, r.stderr
        assert ("distributed ingress" in r.stdout) == (name == "two"), r.stdout
        models[name] = _model(tmp_path / name)
    _same(models["one"], models["two"])


@pytest.mark.parametrize("extra", [(), ("--ids", "string"), ("--workers", "2")])
def test_a_space_inside_a_number_of_a_tab_separated_line_names_the_line(tmp_path, extra):
    """'3 4' in the rating field of a tab-separated line is no rating 3 and an extra
    column 4: the numba parser, the string-id reader and distributed ingress name the
    line."""
    path = tmp_path / "ratings.tsv"
    path.write_text("1\t2\t3\n1\t3\t5\n2\t2\t3 4\n2\t3\t1\n")
    r = run_cli("run", "mf", str(path), "--epochs", "1", "-q", *extra, timeout=300)
    assert r.returncode == 2, r.stdout
    assert f"{path}:3: a space inside a numeric field" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_lastfm_1k_listening_events_empty_mbids_where_no_column_is_read(tmp_path):
    """Last.fm-1K: 'userid<TAB>timestamp<TAB>artist-mbid<TAB>artist name<TAB>track-mbid<TAB>track
    name' with CRLF ends and mbids often missing. An empty field that no id is read from
    is fine; one that is read names its line."""
    path = tmp_path / "userid-timestamp-artid-artname-traid-traname.tsv"
    path.write_bytes("user_000001\t2009-05-04T23:08:57Z\tf1b1cf71-bd35-4e99-8624-24a6e15f133a\tDeep Dish\t\t"
                     "Fuck Me Im Famous (Pacha Ibiza)-09-28-2007\r\n"
                     "user_000001\t2009-05-04T13:54:10Z\ta7f7df4a-77d8-4f12-8acd-5c60c93f4de8\t坂本龍一\t\t"
                     "Composition 0919 (Live_2009_4_15)\r\n"
                     "user_000002\t2009-05-04T13:52:04Z\t\tCamel\t\tBeing Tyrannosaurus\r\n".encode())
    g = loaders.load_edges(str(path), columns="1,4", duplicates="keep")
    assert g.ids[0].tokens.tolist() == ["user_000001", "user_000002"] and g.values is None
    assert g.ids[1].tokens.tolist() == ["Deep Dish", "坂本龍一", "Camel"]
    with pytest.raises(InputError) as ei:
        loaders.load_edges(str(path), columns="1,3")
    assert ei.value.line == 3 and "empty field" in str(ei.value)


LASTFM_1K = [("user_000001", "2009-05-04T23:08:57Z", "f1b1cf71-bd35-4e99-8624-24a6e15f133a", "Deep Dish", "",
              "Fuck Me Im Famous (Pacha Ibiza)-09-28-2007"),
             ("user_000001", "2009-05-04T13:54:10Z", "a7f7df4a-77d8-4f12-8acd-5c60c93f4de8", "坂本龍一", "",
              "Composition 0919 (Live_2009_4_15)"),
             ("user_000001", "2009-05-04T13:52:04Z", "a7f7df4a-77d8-4f12-8acd-5c60c93f4de8", "坂本龍一", "",
              "Mc2 (Live_2009_4_15)"),
             ("user_000002", "2009-05-03T15:48:25Z", "ba2f4f3b-0293-4bc8-bb94-2f73b5207343", "Underworld",
              "dc394163-2b78-4b56-94e4-658597a29ef8", "Boy, Boy, Boy (Switch Remix)"),
             ("user_000003", "2009-05-03T15:37:56Z", "ba2f4f3b-0293-4bc8-bb94-2f73b5207343", "Underworld",
              "340d9a0b-9a43-4098-b116-9f79811bd508", "Crocodile (Innervisions Orchestra Mix)"),
             ("user_000003", "2009-05-03T15:14:53Z", "", "Ferry Corsten", "", "Azzura")]


def test_lastfm_1k_table_is_no_text_corpus_and_plays_are_counted_with_duplicates_sum(tmp_path):
    """A Last.fm-1K file (six tab-separated columns, no number among them, empty mbids)
    was described by info as a text corpus, and run mf sent its user to tux2 run lda.
    It is a table: info and run mf say so, number its columns and name --columns; with
    --columns 1,4 and --duplicates sum each (user, artist) pair's plays are its value,
    a pair played once too (it had no value, and MF refused the file)."""
    path = tmp_path / "userid-timestamp-artid-artname-traid-traname.tsv"
    path.write_text("".join("\t".join(r) + "\n" for r in LASTFM_1K), encoding="utf-8")
    assert io.sniff_input(str(path)) == "edges"
    for cmd in (("info",), ("run", "mf", "--epochs", "1", "-q")):
        r = run_cli(*cmd[:2 if cmd[0] == "run" else 1], str(path), *cmd[2:], timeout=300)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
        assert "table of 6 tab-separated columns" in r.stderr and "4 'Deep Dish', 5 ''" in r.stderr, r.stderr
        assert "--columns" in r.stderr and "lda" not in r.stderr, r.stderr
    g = loaders.load_edges(str(path), columns="1,4", duplicates="sum")
    plays = {(g.ids[0].tokens[s], g.ids[1].tokens[d]): v for s, d, v in zip(g.src, g.dst, g.values)}
    assert plays == {("user_000001", "Deep Dish"): 1, ("user_000001", "坂本龍一"): 2,
                     ("user_000002", "Underworld"): 1, ("user_000003", "Underworld"): 1,
                     ("user_000003", "Ferry Corsten"): 1}
    once = tmp_path / "once.tsv"           # no pair twice: still counts, not a file without values
    once.write_text("".join("\t".join(r) + "\n" for r in LASTFM_1K[2:]), encoding="utf-8")
    assert loaders.load_edges(str(once), columns="1,4", duplicates="sum").values.tolist() == [1, 1, 1, 1]
    r = run_cli("run", "mf", str(once), "--columns", "1,4", "--epochs", "1", "-q", timeout=300)
    assert r.returncode == 2 and "--duplicates sum" in r.stderr, r.stderr
    r = run_cli("run", "mf", str(once), "--columns", "1,4", "--duplicates", "sum", "--epochs", "1", "-q",
                timeout=300)
    assert r.returncode == 0, r.stderr


def test_tab_separated_texts_stay_a_text_corpus(tmp_path):
    """Tab-separated lines of prose (tomotopy's sample: paragraphs split by tabs), or a
    TSV under a header naming its text column, are no table."""
    prose = tmp_path / "wiki.txt"
    words = "anarchism is a political philosophy that advocates self governed societies based on voluntary"
    prose.write_text("".join(f"{words} {i}\t{words}\t{words}\n" for i in range(5)))
    named = tmp_path / "reviews.tsv"
    named.write_text("id\tstars\ttext\n" + "".join(f"{i}\t{i % 5 + 1}\tgood book {i}\n" for i in range(5)))
    for path in (prose, named):
        assert io.sniff_input(str(path)) == "text"
        r = run_cli("info", str(path))
        assert r.returncode == 0 and "vocabulary: " in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("ids", ["auto", "string"])
def test_r_write_table_tab_file_quotes_its_strings_and_reads_as_the_unquoted_file(tmp_path, ids):
    """R's write.table(sep="\\t") quotes every string field: '"1"\\t"2"\\t"3.5"'. The quotes
    around a whole field are no part of it (as in a comma- or space-separated file);
    before, the ids were read as the strings '"1"' (a test file without quotes matched
    none of them) and a quoted rating stopped the run, or `info` read a text corpus."""
    rows = [(1, 2, 3.5), (2, 3, 4.0), (3, 1, 5.0), (1, 3, 2.0)]
    plain, quoted = tmp_path / "plain.tsv", tmp_path / "quoted.tsv"
    plain.write_text("".join(f"{u}\t{i}\t{r}\n" for u, i, r in rows))
    quoted.write_text('"user"\t"item"\t"rating"\n' + "".join(f'"{u}"\t"{i}"\t"{r}"\n' for u, i, r in rows))
    a, b = (loaders.load_edges(str(p), ids=ids) for p in (plain, quoted))
    assert [m.tokens.tolist() if m is not None else None for m in a.ids] == \
        [m.tokens.tolist() if m is not None else None for m in b.ids]
    np.testing.assert_array_equal(a.src, b.src)
    np.testing.assert_array_equal(a.dst, b.dst)
    np.testing.assert_array_equal(a.values, b.values)
    r = run_cli("info", str(quoted))
    assert r.returncode == 0 and "edges" in r.stdout and "string ids" not in r.stdout, r.stdout + r.stderr


def test_play_counts_are_refused_with_the_way_out_not_trained_into_nan(tmp_path):
    """Last.fm's plays (median ~90, a few above 100,000) as ratings: the spread is a
    few extreme values', so nothing rescaled them, and the first epoch diverged
    ('loss is nan'). Counts are named as such, with log(1 + count) as the way out; a
    mistyped 1e7 among stars still trains (and says so), as before."""
    rng = np.random.default_rng(0)
    n = 4000
    plays = np.round(np.exp(rng.normal(4.5, 1.3, n))).astype(int) + 1
    plays[:3] = [419157, 200000, 150000]
    pairs = sorted({(int(u), int(a)) for u, a in zip(rng.integers(0, 300, n), rng.zipf(1.5, n) % 400)})
    path = tmp_path / "plays.tsv"
    path.write_text("".join(f"u{u}\tartist {a}\t{p}\n" for (u, a), p in zip(pairs, plays)))
    r = run_cli("run", "mf", str(path), "--epochs", "1", timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"tux2: error: {path}: the ratings look like counts (plays, clicks: whole numbers from " \
           in r.stderr and "log(1 + count)" in r.stderr and "compile" not in r.stdout
    stars = tmp_path / "stars.txt"
    stars.write_text("".join(f"{u} {a} {1e7 if k == 5 else rng.integers(1, 6)}\n" for k, (u, a) in enumerate(pairs)))
    r = run_cli("run", "mf", str(stars), "--epochs", "1", timeout=300)
    assert "look like counts" not in r.stderr and "check the input for mistyped values" in r.stdout, r.stderr


def test_the_awk_line_the_count_refusal_gives_keeps_a_header(tmp_path):
    """The refusal of play counts names an awk line for log(1 + count); on Last.fm's
    user_artists.dat (header 'userID artistID weight', CRLF lines) it turned the header into
    'userID artistID 0', a data line, so every id was read as a string ('userID' a user)
    and the run went on in silence. The line now leaves a header as it is."""
    import re
    import shutil
    from tux2 import MF
    if shutil.which("awk") is None:
        pytest.skip("no awk")
    rng = np.random.default_rng(0)
    plays = np.round(np.exp(rng.normal(4.5, 1.3, 2000))).astype(int) + 1
    plays[:3] = [352698, 200000, 150000]
    path = tmp_path / "user_artists.dat"
    path.write_bytes(("userID\tartistID\tweight\r\n" + "".join(f"{2 + k // 40}\t{51 + k * 7 % 500}\t{p}\r\n"
                                                           for k, p in enumerate(plays))).encode())   # (as Last.fm's)
    with pytest.raises(InputError) as e:
        MF(epochs=1).fit(str(path))
    program = re.search(r"awk '([^']*)'", str(e.value)).group(1).replace("$N", "$3")
    logged = tmp_path / "log.tsv"
    with open(logged, "w") as f:
        subprocess.run(["awk", "-F\t", "-v", "OFS=\t", program, str(path)], stdout=f, check=True)
    g = loaders.load_edges(str(logged))
    assert g.layout.names == ["userID", "artistID", "weight"] and g.num_edges == 2000, g.layout.names
    np.testing.assert_allclose(np.sort(g.values), np.sort(np.log1p(plays)), rtol=1e-5)


def test_book_crossing_latin1_isbns_and_an_x_past_the_first_lines_are_read(tmp_path):
    """Book-Crossing's BX-Book-Ratings.csv is Latin-1, and some ISBNs end in X: an id
    that was not UTF-8 stopped the run ('item id is not UTF-8 text', no way around it),
    and numeric ISBNs in the first lines read ids as integers, stopping at the first X
    with 'use --ids string', which Python's MF had no parameter for. Latin-1 ids now
    read as Latin-1 (and are found again in a predict input written so), and
    MF(ids='string') is --ids string."""
    import tux2
    rng = np.random.default_rng(0)
    isbns = [f"{x}" for x in rng.integers(10 ** 9, 10 ** 10, 60)] + ["034545104X", "3442\xe9X"]
    pairs = sorted({(int(u), isbns[min(int(z), len(isbns)) - 1]) for u, z in
                    zip(rng.integers(1, 120, 1500), rng.zipf(1.3, 1500))})
    pairs = [p for p in pairs if p[1] not in isbns[-2:]][:400] + [(7, isbns[-2]), (8, isbns[-1]), (9, isbns[-1])]
    rows = "".join(f'"{u}";"{b}";"{rng.integers(1, 11)}"\n' for u, b in pairs)
    path = tmp_path / "BX-Book-Ratings.csv"
    path.write_bytes(('"User-ID";"ISBN";"Book-Rating"\n' + rows).encode("latin-1"))
    with pytest.raises(tux2.InputError, match=r"malformed vertex id .*use ids='string'\)"):
        tux2.MF(k=4, epochs=2).fit(str(path))                  # numeric ids in the first lines
    r = run_cli("run", "mf", str(path), "--ids", "string", "--epochs", "2", "--k", "4", "--out", str(tmp_path / "m"),
                timeout=300)
    assert r.returncode == 0, r.stderr
    assert "item ids read as strings" in r.stdout
    fitted = tux2.MF(k=4, epochs=2, ids="string").fit(str(path))
    assert fitted.predict(["8"], ["3442\xe9X"]).shape == (1,)
    m = tux2.MF.load(tmp_path / "m")
    (tmp_path / "p.txt").write_bytes("8\t3442\xe9X\n7\t034545104X\n".encode("latin-1"))
    p = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "p.txt"), timeout=300)
    assert p.returncode == 0 and "unknown" not in p.stderr.replace('"unknown": "baseline"', ""), p.stderr
    lines = p.stdout.splitlines()[1:]
    assert [ln.split()[:2] for ln in lines] == [["8", "3442\xe9X"], ["7", "034545104X"]]
    assert np.allclose([float(ln.split()[2]) for ln in lines], m.predict(["8", "7"], ["3442\xe9X", "034545104X"]),
                       atol=1e-4)


def _hinted_command(stderr):
    """The python -c command a JSON-lines message gives."""
    return stderr.split('python -c "', 1)[1].split('"', 1)[0]


@pytest.mark.parametrize("keys", [("user_id", "business_id", "stars", "text"),
                                  ("reviewerID", "asin", "overall", "reviewText")])
def test_json_lines_are_named_with_a_pandas_line_that_writes_what_tux2_reads(tmp_path, keys):
    """Yelp's and Amazon's reviews are JSON lines: no command reads them as ratings or
    documents (LDA would take every key and id for words); each names the file's form
    and a pandas line, which, run, writes a file the command then reads."""
    pytest.importorskip("pandas")
    rows = [{keys[0]: f"u{u}", keys[1]: f"b{(u * 7 + j) % 11}", keys[2]: float(1 + (u + j) % 5),
             keys[3]: f"the soup was {['great', 'cold', 'fine'][j % 3]}\nand the staff {u}", "date": "2018-07-07"}
            for u in range(30) for j in range(4)]
    path = tmp_path / "review.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for command, out in ((("run", "mf"), "ratings.csv"), (("run", "lda", "-k", "2"), "docs.csv"), (("info",), None)):
        r = run_cli(*command, str(path), cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "it is JSON lines (an object per line; keys " + ", ".join(keys) in r.stderr, r.stderr
        if out is None:
            continue
        subprocess.run([sys.executable, "-c", _hinted_command(r.stderr)], cwd=tmp_path, check=True, timeout=120)
        r = run_cli(*command, out, "--epochs" if command[1] == "mf" else "--iterations", "2", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert ("30 users × 11 items" if command[1] == "mf" else "120 documents") in r.stdout, r.stdout


def test_a_header_naming_the_rating_after_a_timestamp_trains_on_the_ratings(files, tsv_model, tmp_path):
    """'userId,movieId,timestamp,rating' (pandas' column order after a merge): the column
    named rating is the value, not the timestamps (trained divided by 1.3e8 before)."""
    path = tmp_path / "stamped.csv"
    path.write_text("userId,movieId,timestamp,rating\n" + "".join(f"{u},{i},{t},{r}\n" for u, i, r, t in ROWS))
    stdout, model = _train(str(path), tmp_path / "m", "--test", files["test"])
    assert "columns userId,movieId,rating (1,2,4, by name) of 4; column timestamp ignored" in stdout
    _same(model, tsv_model[1])


def test_a_headerless_test_file_is_read_as_the_training_header_chose_its_columns(tmp_path):
    """A training header 'movieId,userId,rating' is read by name (users second); a test
    file without a header beside it was read by position, so its users were items:
    every test rating unknown, silently. It is read in the training file's columns."""
    rows = [(u, i, (u * 7 + i * 3) % 5 + 1) for u in range(1, 60) for i in range(1, 30) if (u + i) % 3 == 0]
    train, bare, named = tmp_path / "r.csv", tmp_path / "t.txt", tmp_path / "t.csv"
    train.write_text("movieId,userId,rating\n" + "".join(f"{i},{u},{r}\n" for u, i, r in rows))
    bare.write_text("".join(f"{i} {u} {r}\n" for u, i, r in rows[:50]))
    named.write_text("movieId,userId,rating\n" + "".join(f"{i},{u},{r}\n" for u, i, r in rows[:50]))
    out = [run_cli("run", "mf", str(train), "--test", str(t), *FLAGS) for t in (bare, named)]
    assert all(r.returncode == 0 for r in out), [r.stderr for r in out]
    assert "test 50;" in out[0].stdout and "not in training" not in out[0].stdout, out[0].stdout
    assert out[0].stdout.split("test_rmse")[-1].split()[0] == out[1].stdout.split("test_rmse")[-1].split()[0]


def test_old_mac_line_endings_read_as_lines(tmp_path):
    """Old Mac files end their lines with a CR alone (some of UCI's): every reader took
    such a file for one line (a table 'of 60 columns of words', LDA one document)."""
    files = {"table": "a,b,species\n1,2,x\n3,4,y\n5,6,x\n", "libsvm": "1 1:2 3:1\n0 2:1\n1 1:0.5\n",
             "edges": "1\t2\t3\n2\t1\t4\n3\t3\t5\n", "docword": "3\n4\n5\n1 1 2\n2 3 1\n3 4 2\n1 2 1\n3 1 1\n",
             "text": "apple banana\nmelon pear apple\nbanana melon\n"}
    read = {"table": lambda p: loaders.load_libsvm(p), "libsvm": lambda p: loaders.load_libsvm(p),
            "edges": lambda p: (loaders.load_edges(p),), "docword": loaders.load_corpus, "text": loaders.load_corpus}
    for kind, text in files.items():
        (tmp_path / f"{kind}.lf").write_text(text)
        (tmp_path / f"{kind}.cr").write_bytes(text.replace("\n", "\r").encode())
        (tmp_path / f"{kind}.cr.gz").write_bytes(gzip.compress(text.replace("\n", "\r").encode()))
        want = read[kind](str(tmp_path / f"{kind}.lf"))
        for name in (f"{kind}.cr", f"{kind}.cr.gz"):
            got = read[kind](str(tmp_path / name))
            assert got[0].num_edges == want[0].num_edges and np.array_equal(got[0].src, want[0].src), name
            assert np.array_equal(got[0].dst, want[0].dst) and str(got[1:]) == str(want[1:]), name
    (tmp_path / "bad.cr").write_bytes(b"1\t2\t3\r2\tx\t4\r")
    with pytest.raises(InputError) as e:
        loaders.load_edges(str(tmp_path / "bad.cr"), ids="int")
    assert str(e.value).startswith(f"{tmp_path / 'bad.cr'}:2: malformed vertex id")


def test_amazon_ratings_only_files_name_their_column_order(tmp_path):
    """Amazon's ratings-only CSVs (no header) are item,user,rating,timestamp: read as they
    come, the products would be the users. The 'read as' line (and tux2 info) says so and
    names --columns 2,1,3, which reads the reviewers as users and says nothing more."""
    import hashlib
    rng = np.random.default_rng(3)
    asin = [f"B{hashlib.md5(str(j).encode()).hexdigest()[:9].upper()}" for j in range(30)] + ["0345453743", "030788743X"]
    rev = [f"A{hashlib.sha1(str(j).encode()).hexdigest()[:13].upper()}" for j in range(80)]
    lines = {f"{asin[int(rng.zipf(1.5)) % len(asin)]},{rev[int(rng.integers(len(rev)))]}": None for _ in range(400)}
    path = tmp_path / "ratings_Books.csv"
    path.write_text("".join(f"{p},{rng.integers(1, 6)}.0,{1400000000 + i}\n" for i, p in enumerate(lines)))
    g = loaders.load_edges(str(path), type_names=("user", "item"))
    said = loaders.describe_read(g)
    assert "user ids look like Amazon's product ids (ASINs)" in said and "--columns 2,1,3" in said
    swapped = loaders.load_edges(str(path), columns="2,1,3", type_names=("user", "item"))
    assert swapped.ids[0].tokens[0].startswith("A") and "Amazon" not in loaders.describe_read(swapped)
    res = run_cli("info", str(path), timeout=120)
    assert res.returncode == 0 and "note: src ids look like Amazon's product ids" in res.stdout, res.stderr
    # Book-Crossing's numeric users before ISBNs: no such note
    bx = tmp_path / "BX-Book-Ratings.csv"
    bx.write_text('"User-ID";"ISBN";"Book-Rating"\n' + "".join(f'"{276725 + i}";"{a}";"{i % 11}"\n'
                                                               for i, a in enumerate(asin)))
    assert "Amazon" not in (loaders.describe_read(loaders.load_edges(str(bx))) or "")


def test_predict_reads_a_held_out_file_in_the_columns_the_model_was_trained_on(tmp_path):
    """A model of Last.fm's 'user mbid name plays' lines trained with --columns 1,3,4 scored a
    held-out file of the same lines only with --columns given again (without: 'malformed value',
    as the plays were read from column 3); it now reads such a file as training read it, and
    a 'user item' pairs file, narrower than those columns, by its first two."""
    import tux2
    text, rows = _lastfm(users=60)
    lines = text.splitlines(keepends=True)
    held = [line for i, line in enumerate(lines) if i % 12 == 5]
    (tmp_path / "train.tsv").write_text("".join(line for i, line in enumerate(lines) if i % 12 != 5), encoding="utf-8")
    (tmp_path / "held_out.tsv").write_text("".join(held), encoding="utf-8")
    tux2.MF(k=4, epochs=2, columns="1,3,4", mode="als", implicit=True).fit(str(tmp_path / "train.tsv")) \
        .save(str(tmp_path / "m"))
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "held_out.tsv"))
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stderr.strip().splitlines()[0])
    assert said["pairs"] == len(held) == 20 and said.get("unknown_pairs", 0) < 20 and "ndcg@10" in said, r.stderr
    assert r.stdout.splitlines()[1].split("\t")[:2] == [rows[5][0], rows[5][2]], r.stdout
    (tmp_path / "pairs.tsv").write_text("".join(f"{u}\t{n}\n" for u, _, n, _ in rows[:3]), encoding="utf-8")
    r = run_cli("predict", str(tmp_path / "m"), str(tmp_path / "pairs.tsv"))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 4, r.stderr
