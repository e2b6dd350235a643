"""tux2 run lda: the three input formats, outputs, clear errors, and the same counts
from real worker processes as from one process."""
import json
import os

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import io
from tux2.errors import InputError
from tux2.udfs.lda import token_edges


def _write(path, text):
    path.write_text(text)
    return str(path)


TEXT = """Apples and bananas are fruit; apples are sweet.
Cars and trucks drive on roads. Roads need repair.
Bananas, apples, oranges: fruit salad!

Trucks carry apples on roads.
"""


def test_text_input_writes_counts_topics_and_vocabulary(tmp_path):
    src = _write(tmp_path / "docs.txt", TEXT)
    out = tmp_path / "model"
    r = run_cli("run", "lda", src, "--topics", "3", "--iterations", "4", "--out", str(out),
                "--metrics", str(tmp_path / "m.jsonl"), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    vocab = (out / "vocab.txt").read_text().split("\n")[:-1]
    assert vocab[:4] == ["apples", "and", "bananas", "are"] and len(set(vocab)) == len(vocab)
    z = np.load(out / "lda.npz")
    g, words = io.read_text_docs(src)
    assert words == vocab
    tokens = int(g.values.sum())
    assert z["word_topic"].shape == (3, len(vocab)) and z["doc_topic"].shape == (5, 3)
    assert z["word_topic"].sum() == z["doc_topic"].sum() == z["topic_totals"].sum() == tokens
    assert z["doc_topic"][3].sum() == 0                          # the blank line is an empty document
    np.testing.assert_array_equal(z["word_topic"].sum(0), np.bincount(g.dst, g.values).astype(int))
    topics = (out / "topics.txt").read_text().splitlines()
    assert len(topics) == 3 and all(line.split("\t")[2].split(" ")[0].split(":")[0] in vocab for line in topics)
    meta = json.loads((out / "model.json").read_text())
    lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [x["iteration"] for x in lines] == [1, 2, 3, 4]
    assert meta["ll_per_token"] == pytest.approx(lines[-1]["ll_per_token"]) and meta["tokens"] == tokens
    assert not (out / "word.npz").exists()                       # the model is lda.npz, written once


def test_docword_and_triples_give_the_same_model(tmp_path):
    docword = _write(tmp_path / "docword.txt", "3\n4\n5\n1 1 2\n1 3 1\n2 4 5\n3 2 1\n3 1 6\n")
    triples = _write(tmp_path / "triples.txt", "0 0 2\n0 2 1\n1 3 5\n2 1 1\n2 0 6\n")
    vocab = _write(tmp_path / "vocab.txt", "w\nx\ny\nz\n")
    outs = []
    for f in (docword, triples):
        out = tmp_path / ("out_" + os.path.basename(f))
        r = run_cli("run", "lda", f, "-k", "2", "--iterations", "3", "--vocab", vocab, "--out", str(out),
                    "--quiet", timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(np.load(out / "lda.npz"))
        assert json.loads((out / "model.json").read_text())["format"] == os.path.basename(f)[:-4]
    for k in ("word_topic", "doc_topic"):
        np.testing.assert_array_equal(outs[0][k], outs[1][k])
    assert outs[0]["word_topic"].sum() == 15


@pytest.mark.parametrize("text,line,message", [
    ("3\n4\nx\n1 1 1\n", 3, "NNZ"),
    ("3\n4\n2\n1 1 1\n", 3, "NNZ = 2 but the file has 1"),
    ("3\n4\n2\n1 1 1\n4 1 1\n", 5, "docID 4 is outside 1 … 3"),
    ("3\n4\n2\n1 1 1\n1 0 1\n", 5, "wordID 0 is outside"),
    ("3\n4\n2\n1 1 1\n1 2 0\n", 5, "count 0 is not a positive integer"),
    ("3\n4\n2\n1 1 1\n1 2 a\n", 5, "malformed value"),
])
def test_docword_errors_name_the_line(tmp_path, text, line, message):
    f = _write(tmp_path / "bad.txt", text)
    with pytest.raises(InputError, match=message) as e:
        io.read_docword(f)
    assert e.value.line == line and e.value.path == f


def test_cli_errors_are_one_line_with_file_and_line(tmp_path):
    f = _write(tmp_path / "t.txt", "# doc word count\n0 1 2\n1 2 2.5\n")
    r = run_cli("run", "lda", f, "--format", "triples", timeout=300)
    assert r.returncode == 2 and f"{f}:3: count 2.5 is not a positive integer" in r.stderr
    assert "Traceback" not in r.stderr
    empty = _write(tmp_path / "e.txt", "\n  \n")
    r = run_cli("run", "lda", empty, "--format", "text", timeout=300)
    assert r.returncode == 2 and "no words found" in r.stderr
    good = _write(tmp_path / "g.txt", "0 1 2\n1 2 2\n")
    r = run_cli("run", "lda", good, "--vocab", str(tmp_path / "missing.txt"), timeout=300)
    assert r.returncode == 2 and "missing.txt" in r.stderr


def test_sniff_corpus(tmp_path):
    assert io.sniff_corpus(_write(tmp_path / "a", "2\n3\n1\n1 2 3\n")) == "docword"
    assert io.sniff_corpus(_write(tmp_path / "b", "# c\n0 1 2\n3 4 5\n")) == "triples"
    assert io.sniff_corpus(_write(tmp_path / "c", "hello world 1\n")) == "text"


def test_workers_give_the_single_process_counts(tmp_path):
    """The sync sampler at slack 0: 2 real worker processes, 3 partitions = 1 process, 1 partition;
    the sparse sampler: 2 workers = 1 process with the same partitions."""
    common = ["run", "lda", "-k", "5", "--iterations", "3", "--quiet", "--timeout", "20"]
    def model(*extra):
        out = tmp_path / "_".join(extra).replace("-", "")
        r = run_cli(*common, *extra, "--out", str(out), timeout=300)
        assert r.returncode == 0, r.stderr
        return np.load(out / "lda.npz")
    ref = model("--sampler", "sync")
    got = model("--sampler", "sync", "--workers", "2", "--partitions", "3", "--partitioner", "random")
    for k in ("word_topic", "doc_topic", "topic_totals"):
        np.testing.assert_array_equal(got[k], ref[k])
    a = model("--partitions", "3")
    b = model("--partitions", "3", "--workers", "2")
    np.testing.assert_array_equal(a["word_topic"], b["word_topic"])
    assert b["word_topic"].sum() == ref["word_topic"].sum()


def test_token_edges_keep_every_token():
    s, t, c = token_edges([0, 1, 1], [5, 5, 6], [9, 1, 4])
    assert c.sum() == 14 and np.bincount(s, c).tolist() == [9, 5]
