"""`tux2 partition` end to end, in a subprocess."""
import json

import numpy as np

from tests.conftest import random_graph, run_cli
from tux2 import partitioning
from tux2.io import write_edge_list

KEYS = {"strategy", "parts", "replication_factor", "replication_factor_no_master_only", "edge_balance",
        "vertex_balance", "seconds"}


def test_json_reports_match_the_library(tmp_path):
    g = random_graph(n_a=120, n_b=40, m=900, seed=4)
    path = tmp_path / "g.txt"
    write_edge_list(str(path), g)
    r = run_cli("partition", str(path), "--parts", "4", "-s", "random", "-s", "bicut", "-s", "hybrid",
                "-o", "theta=5", "--json", "--save", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    reps = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["strategy"] for x in reps] == ["random", "bicut", "hybrid"]
    # only vertices with edges are placed and counted: the library on the graph renumbered over them
    kept = (np.unique(g.src), np.unique(g.dst))
    assert len(kept[0]) + len(kept[1]) < g.n_src + g.n_dst          # the random graph has isolated vertices
    s, d = np.searchsorted(kept[0], g.src), np.searchsorted(kept[1], g.dst)
    for rep in reps:
        assert KEYS <= set(rep)
        a = partitioning.partition(rep["strategy"], s, d, len(kept[0]), len(kept[1]), 4,
                                   **({"theta": 5} if rep["strategy"] == "hybrid" else {}))
        lib = partitioning.quality(a, s, d, len(kept[0]), len(kept[1]))
        assert rep["replication_factor"] == lib["replication_factor"]
        assert rep["vertices"] == len(kept[0]) + len(kept[1])
        saved = np.load(tmp_path / "out" / f"{rep['strategy']}.npz")
        np.testing.assert_array_equal(saved["edge_part"], a.edge_part)
        np.testing.assert_array_equal(saved["ids_src"], kept[0])
    assert reps[1]["replication_factor_src"] == 1.0       # bicut: 120 sources are the favourite side


def test_table_and_generated_graph():
    r = run_cli("partition", "--powerlaw", "3000", "--alpha", "2.0", "--parts", "9")
    assert r.returncode == 0, r.stderr
    assert "replication factor λ" in r.stdout and "grid" in r.stdout and "hdrf" in r.stdout
    assert "bicut" not in r.stdout                          # needs two vertex types


def test_errors_name_the_problem(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n1 2\n3 x\n")
    r = run_cli("partition", str(bad), "--parts", "2")
    assert r.returncode == 2 and "bad.txt:3" in r.stderr and "Traceback" not in r.stderr
    ok = tmp_path / "ok.txt"
    ok.write_text("0 1\n1 2\n")
    r = run_cli("partition", str(ok), "--parts", "5")
    assert r.returncode == 2 and "at most as many parts as edges" in r.stderr
    r = run_cli("partition", str(ok), "--parts", "2", "-s", "random", "-o", "theta=3")
    assert r.returncode == 2 and "theta" in r.stderr
    r = run_cli("partition", str(ok), "--parts", "2", "-o", "=3")      # said 'option(s)  are not taken by …'
    assert r.returncode == 2 and "--option expects KEY=VALUE, got '=3'" in r.stderr, r.stderr
    r = run_cli("partition", str(ok), "--parts", "5", "-s", "grid")
    assert r.returncode == 2
    r = run_cli("partition", str(ok), "--parts", "2", "-s", "grid")
    assert r.returncode == 0, r.stderr


def test_homogeneous_ids_are_one_vertex_set_whatever_the_ids(tmp_path):
    """--homogeneous: both columns name vertices of one set. String ids (a map per
    column) and 1-based ids (an offset per column) are unified as the file writes them:
    'a b / b c / c d' has 4 vertices, not 3, and a 1-based id seen only as a
    destination no longer indexes past the source column's ids (an IndexError)."""
    for text, ids in (("a b\nb c\nc d\n", ["a", "b", "c", "d"]), ("1 2\n2 3\n3 4\n", [1, 2, 3, 4]),
                      ("0 1\n1 2\n2 0\n", [0, 1, 2])):
        path = tmp_path / "h.txt"
        path.write_text(text)
        out = tmp_path / "out"
        r = run_cli("partition", str(path), "--homogeneous", "--parts", "2", "-s", "random", "--json",
                    "--save", str(out))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.splitlines()[0])["vertices"] == len(ids)
        saved = np.load(out / "random.npz", allow_pickle=True)
        assert saved["ids_vertex"].tolist() == ids and len(saved["master_vertex"]) == len(ids)


def test_sparse_numeric_ids_are_numbered_densely_or_taken_as_strings(tmp_path):
    """Ids too sparse to index by (3000000000 among three edges) are numbered densely, as
    tux2 run mf numbers them (they were refused, naming --ids string); --ids string still
    reads them as tokens."""
    path = tmp_path / "s.txt"
    path.write_text("0 1\n3000000000 2\n5 1\n")
    r = run_cli("partition", str(path), "--parts", "2", "-s", "random", "--json", "--save", str(tmp_path / "d"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["vertices"] == 5
    assert np.load(tmp_path / "d" / "random.npz")["ids_src"].tolist() == [0, 5, 3000000000]
    r = run_cli("partition", str(path), "--ids", "string", "--parts", "2", "-s", "random", "--json",
                "--save", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["vertices"] == 5
    saved = np.load(tmp_path / "out" / "random.npz", allow_pickle=True)
    assert sorted(saved["ids_src"].tolist()) == ["0", "3000000000", "5"]


def test_balance_warning_never_suggests_the_option_just_given(tmp_path):
    """A MovieLens-shaped file (power-law users and items): aweto is out of balance with
    either favourite; the warning for favorite=dst suggests src, not dst again."""
    rng = np.random.default_rng(5)
    deg = np.minimum(rng.zipf(1.6, 3000) + 5, 400)
    pop = 1.0 / np.arange(1, 801) ** 1.1
    lines = []
    for u in range(3000):
        for i in rng.choice(800, size=deg[u], replace=False, p=pop / pop.sum()):
            lines.append(f"{u + 1}\t{i + 1}\t{rng.integers(1, 6)}\t{881250949 + u}\n")
    path = tmp_path / "u.data"
    path.write_text("".join(lines))
    r = run_cli("partition", str(path), "--parts", "16", "-s", "aweto", "-o", "favorite=dst")
    assert r.returncode == 0, r.stderr
    assert "warning: aweto" in r.stderr and "favorite=dst was given: try --option favorite=src" in r.stderr
    r = run_cli("partition", str(path), "--parts", "16", "-s", "aweto")
    assert "use --option favorite=dst (or src)" in r.stderr
    # random, out of balance on a handful of edges, was told to try --strategy random
    few = tmp_path / "few.txt"
    few.write_text("1 1\n2 2\n1 2\n")
    r = run_cli("partition", str(few), "--parts", "2", "-s", "random")
    assert "warning: random" in r.stderr and "--strategy random" not in r.stderr, r.stderr


def test_input_and_powerlaw_together_are_refused(tmp_path):
    """'tux2 partition FILE --powerlaw N' partitioned the generated graph and said nothing of
    FILE (its report's title alone named the power-law graph)."""
    ok = tmp_path / "ok.txt"
    ok.write_text("0 1\n1 2\n")
    r = run_cli("partition", str(ok), "--powerlaw", "100", "--parts", "2")
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.startswith(f"tux2: error: give an INPUT edge list or --powerlaw N, not both ({ok} and "
                               "--powerlaw 100)"), r.stderr
