"""tux2 run lda: the three input formats, outputs, clear errors, and the same counts
from real worker processes as from one process."""
import json
import os

import numpy as np
import pytest

from tests.conftest import LEE_PROSE, run_cli
from tux2 import io
from tux2.errors import InputError
from tux2.stopwords import ENGLISH
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
    assert vocab[:4] == ["apples", "bananas", "fruit", "sweet"] and len(set(vocab)) == len(vocab)
    z = np.load(out / "lda.npz")
    g, words = io.read_text_docs(src, stopwords=ENGLISH)          # English stop words are dropped by default
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


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_stop_words_and_max_df_filter_the_words_of_text_from_the_command_line_and_fit(tmp_path):
    """Raw text's topics were made of 'the', 'of', 'and' (a third of the Debian
    descriptions' tokens): English stop words are dropped by default, 'none' keeps
    them, a file names others, --max-df drops words in too many documents."""
    import tux2
    src = _write(tmp_path / "docs.txt", TEXT)
    stop = _write(tmp_path / "stop.txt", "Apples roads\nfruit\n")

    def vocab(*flags, lines=False, **params):
        out = tmp_path / f"model{len(list(tmp_path.iterdir()))}"
        r = run_cli("run", "lda", src, "-k", "2", "--iterations", "1", "--out", str(out), "-q", *flags, timeout=300)
        assert r.returncode == 0, r.stderr
        words = (out / "vocab.txt").read_text().split()
        assert tux2.LDA(topics=2, iterations=1, **params).fit(src).vocab_ == words
        if lines:                   # the documents as a list of strings: filtered as the file is
            assert tux2.LDA(topics=2, iterations=1, **params).fit(TEXT.splitlines()).vocab_ == words
        return words

    every = vocab("--stop-words", "none", stop_words="none")
    assert every[:4] == ["apples", "and", "bananas", "are"]
    kept = vocab(lines=True)
    assert kept == [w for w in every if w not in ENGLISH] and "and" not in kept
    assert vocab("--stop-words", stop, stop_words=stop, lines=True) == [w for w in every if w not in ("apples", "roads", "fruit")]
    # 'apples' is in 3 of the 5 documents (the blank line is one), 'and', 'roads' and 'trucks' in 2
    assert vocab("--stop-words", "none", "--max-df", "0.4", stop_words=None, max_df=0.4) == [
        w for w in every if w != "apples"]
    assert [w for w in every if w not in vocab("--stop-words", "none", "--max-df", "0.2", stop_words=None,
                                               max_df=0.2)] == ["apples", "and", "bananas", "fruit", "trucks", "on",
                                                                "roads"]
    r = run_cli("run", "lda", src, "--stop-words", str(tmp_path / "nope.txt"), timeout=300)
    assert r.returncode == 2 and "nope.txt: cannot read the stop-word file: No such file or directory" in r.stderr
    assert "Traceback" not in r.stderr
    # tux2 info tells how much of the text the default drops (its counts are the file's, as written)
    every_g, _ = io.read_text_docs(src)
    kept_g, _ = io.read_text_docs(src, stopwords=ENGLISH)
    total, stop_tokens = int(every_g.values.sum()), int(every_g.values.sum() - kept_g.values.sum())
    r = run_cli("info", src, timeout=300)
    assert r.returncode == 0 and f"English stop words: {stop_tokens} of {total} tokens " \
                                 f"({100 * stop_tokens / total:.1f}%), which tux2 run lda drops" in r.stdout, r.stdout
    r = run_cli("run", "lda", src, "--max-df", "0", timeout=300)
    assert r.returncode == 2 and "--max-df: must be a share of the documents in (0, 1] (0.5) or a count of them " \
                                 ">= 2 (an integer, 1000), got 0" in r.stderr, r.stderr


def test_info_reads_prose_with_one_comma_a_line_as_text(tmp_path):
    """A corpus whose first lines each hold one comma read in tux2 info as an edge list of
    two string ids, 'The cat sat on …' and 'and …' (tux2 run lda read it as text): fields of
    prose (over 12 words) are no ids. Short string ids stay an edge list, as does a long
    title beside a rating."""
    line = ("The Python software butter data server cook network flour apple computer linux kernel code, "
            "and it is the day\n")
    src = _write(tmp_path / "docs.txt", line * 5)
    assert io.sniff_input(src) == "text"
    r = run_cli("info", src, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith(f"{src}: text,") and "vocabulary:" in r.stdout, r.stdout
    assert io.sniff_input(_write(tmp_path / "ids.csv", "alice,Star Wars\nbob,The Godfather\n")) == "edges"
    assert io.sniff_input(_write(tmp_path / "r.csv", ("bob," + line.replace(",", "").strip() + ",4\n") * 3)) == "edges"


def test_info_names_the_vocabulary_lda_trains_on(tmp_path):
    """tux2 info's vocabulary counted the stop words that tux2 run lda drops by default:
    it now gives both, the second the one the run reports ('N words')."""
    src = _write(tmp_path / "docs.txt", "The apples and the bananas are fruit\nTrucks drive on the roads\n"
                                        "apples on trucks\n")
    every, kept = (len(io.read_text_docs(src, **kw)[1]) for kw in ({}, {"stopwords": ENGLISH}))
    assert (every, kept) == (10, 6)            # the, and, are, on
    r = run_cli("info", src, timeout=300)
    assert r.returncode == 0 and f"  vocabulary: {every} words (tux2 run lda: {kept}, without the 4 English stop " \
                                 "words)\n" in r.stdout, r.stdout
    res = json.loads(run_cli("info", src, "--json", timeout=300).stdout)
    assert (res["vocabulary"], res["vocabulary_without_english_stop_words"]) == (every, kept)


def test_max_df_is_a_share_as_a_float_and_a_count_of_documents_as_an_integer(tmp_path):
    """scikit-learn's max_df: a float is a share of the documents, an integer a count
    of them; --max-df took a share only ('--max-df 2' was refused). Now 2 of the 5
    documents is 0.4 of them, on the command line and from Python, and a model keeps
    the integer (it loads back as a count)."""
    import tux2
    src = _write(tmp_path / "docs.txt", TEXT)          # 5 documents: 'apples' in 3, 'and', 'roads', 'trucks' in 2
    fit = {m: tux2.LDA(topics=2, iterations=1, stop_words="none", max_df=m).fit(src).vocab_ for m in (0.4, 2)}
    assert fit[0.4] == fit[2] and "apples" not in fit[2] and "roads" in fit[2]
    with pytest.raises(ValueError, match=r"max_df: 1 is a count, one document.*1\.0 \(a share\) keeps every word"):
        tux2.LDA(max_df=1).fit(src)         # max_df=1 kept every word before counts: refused, naming 1.0
    r = run_cli("run", "lda", src, "--max-df", "1")
    assert r.returncode == 2 and "--max-df: 1 is a count, one document" in r.stderr, r.stderr
    out = tmp_path / "m"
    r = run_cli("run", "lda", src, "--stop-words", "none", "--max-df", "2", "-k", "2", "--iterations", "1", "-q",
                "--out", str(out), timeout=300)
    assert r.returncode == 0 and (out / "vocab.txt").read_text().split() == fit[2], r.stderr
    assert json.loads((out / "model.json").read_text())["max_df"] == 2 and tux2.LDA.load(out).max_df == 2
    assert type(tux2.LDA.load(out).max_df) is int
    for bad in (0, 2.0, -1, True):
        with pytest.raises(ValueError, match="max_df must be a share in \\(0, 1\\]"):
            tux2.LDA(max_df=bad).fit(src)
    with pytest.raises(InputError, match="max_df= filters the words of a text corpus"):
        tux2.LDA(topics=2, iterations=1, max_df=3).fit(_write(tmp_path / "t.txt", "0 0 2\n1 1 3\n"))


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
    import tux2                     # the read options are the estimator's parameters too
    lda = tux2.LDA(topics=2, iterations=3, vocab=vocab, format="triples").fit(triples)
    np.testing.assert_array_equal(lda.word_topic_, outs[1]["word_topic"])
    assert lda.vocab_ == ["w", "x", "y", "z"] and lda.topic_words(1)[0][0][0] in lda.vocab_


@pytest.mark.parametrize("text,line,message", [
    ("3\n4\nx\n1 1 1\n", 3, "NNZ"),
    ("3\n4\n2\n1 1 1\n", 3, "NNZ = 2 but the file has 1"),
    ("3\n4\n2\n", 3, "NNZ = 2 but the file has 0 lines after it"),   # a download cut after the header
    ("3\n4\n2", 3, "NNZ = 2 but the file has 0 lines after it"),     # said: 'ends inside its 3-line header'
    ("3\n4\n1\n1 1 1\n2 2 1\n", 3, r"NNZ = 1 but the file has 2 lines after it \(lines added, or the header "
                                    r"of another file\?\)$"),     # said '(truncated?)' of a file with more lines
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


def test_a_vocabulary_is_read_as_the_corpus_is(tmp_path):
    """A byte-order mark is skipped (it was kept in the first word), and bytes that are
    not UTF-8 are named by line (the error named none)."""
    f = tmp_path / "v.txt"
    f.write_bytes(b"\xef\xbb\xbfw\r\nx\ny\n")
    assert io.read_words(str(f), 3, InputError, "") == ["w", "x", "y"]
    f.write_bytes(b"w\nx\xff\n")
    with pytest.raises(InputError, match=f"^{f}:2: vocabulary is not UTF-8 text \\(invalid start byte at byte 1"):
        io.read_words(str(f), 2, InputError, "")


def test_sniff_corpus(tmp_path):
    assert io.sniff_corpus(_write(tmp_path / "a", "2\n3\n1\n1 2 3\n")) == "docword"
    assert io.sniff_corpus(_write(tmp_path / "h", "2\n3\n1\n"), header_alone=True) == "docword"   # (was: text)
    assert io.sniff_corpus(_write(tmp_path / "i", "2\n3\n1\n")) == "text"     # mf's hint: ids, not a corpus
    assert io.sniff_corpus(_write(tmp_path / "b", "# c\n0 1 2\n3 4 5\n")) == "triples"
    assert io.sniff_corpus(_write(tmp_path / "c", "hello world 1\n")) == "text"


@pytest.mark.slow
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


def _docword_two_themes(path, seed=3):
    """A UCI docword file (1-based ids) of 60 documents over W = 12 words: words 1 and
    2 never occur, the first half of the documents use words 3-7, the second 8-12 (12,
    the last id, is the most frequent)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(1, 61):
        words = np.arange(3, 8) if d <= 30 else np.arange(8, 13)
        p = np.array([1, 2, 3, 4, 8], float) / 18
        counts = np.bincount(rng.choice(5, size=int(rng.integers(20, 60)), p=p), minlength=5)
        rows += [(d, int(w), int(c)) for w, c in zip(words, counts) if c]
    path.write_text(f"60\n12\n{len(rows)}\n" + "".join(f"{d} {w} {c}\n" for d, w, c in rows))
    return str(path)


@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])     # 7 s cold with 2
def test_docword_topics_and_predictions_use_the_files_1_based_ids(tmp_path, workers):
    """topics.txt, the printed topics and 'tux2 predict' name words and documents by the
    docword file's 1-based ids (not the dense ids one below), also from 2 real workers."""
    src = _docword_two_themes(tmp_path / "docword.two.txt")
    out = tmp_path / "model"
    r = run_cli("run", "lda", src, "-k", "2", "--iterations", "30", "--top-words", "5", "--out", str(out),
                "--workers", workers, "--timeout", "30", timeout=300)
    assert r.returncode == 0, r.stderr
    themes = [set(line.split("\t")[2].replace(":", " ").split()[::2])
              for line in (out / "topics.txt").read_text().splitlines()]
    assert sorted(map(sorted, themes)) == [["10", "11", "12", "8", "9"], ["3", "4", "5", "6", "7"]]
    printed = [line.split(": ")[1].split() for line in r.stdout.splitlines() if line.startswith("topic ")]
    assert sorted(p[0] for p in printed) == ["12", "7"]          # the most frequent word of each theme
    assert json.loads((out / "model.json").read_text())["word_base"] == 1
    new = _write(tmp_path / "new.docword", "3\n12\n3\n2 12 5\n3 4 4\n3 7 1\n")
    p = run_cli("predict", str(out), new, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if not line.startswith("#")]
    assert [row[0] for row in rows] == ["1", "2", "3"]           # docIDs 1 … 3 (1 has no words)
    theta = np.array([[float(x) for x in row[1:]] for row in rows])
    assert theta[1].argmax() != theta[2].argmax() and theta[1].max() > 0.8 and theta[2].max() > 0.8


def test_lda_estimator_keeps_a_docword_files_ids_through_save_and_load(tmp_path):
    import tux2
    src = _docword_two_themes(tmp_path / "docword.two.txt")
    lda = tux2.LDA(topics=2, iterations=30, top_words=5).fit(src)
    first = sorted(ws[0][0] for ws in lda.topic_words(5))
    assert first == ["12", "7"] and lda.word_base_ == 1
    lda.save(str(tmp_path / "m"))
    back = tux2.LDA.load(str(tmp_path / "m"))
    assert back.word_base_ == 1 and back.topic_words(5) == lda.topic_words(5)


def test_info_reports_a_docword_files_1_based_ids(tmp_path):
    src = _docword_two_themes(tmp_path / "docword.two.txt")
    r = run_cli("info", src, "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["doc"]["id_range"] == [1, 60] and res["word"]["id_range"] == [3, 12]
    assert res["word"]["ids_without_edges"] == 2 and "ids 1-based (docword)" in res["hints"]


def test_predict_warns_when_no_word_of_the_input_is_in_the_vocabulary(tmp_path):
    """A text model asked about a rating file (every 'word' unknown) says so instead of
    silently printing the uniform prior for every line; a real document gets no warning."""
    src = _write(tmp_path / "docs.txt", TEXT * 4)
    out = tmp_path / "model"
    r = run_cli("run", "lda", src, "-k", "2", "--iterations", "5", "--out", str(out), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    ratings = _write(tmp_path / "u.data", "1\t242\t3\t881250949\n1\t302\t3\t891717742\n2\t377\t1\t878887116\n")
    p = run_cli("predict", str(out), ratings, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "warning: none of the 12 words of " + ratings + " is in the model's vocabulary" in p.stderr
    new = _write(tmp_path / "new.txt", "apples and trucks\n")
    p = run_cli("predict", str(out), new, timeout=300)
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr


def test_a_rating_file_is_not_taken_for_a_text_corpus(tmp_path):
    """`tux2 run lda u.data` (user item rating timestamp) stopped being read as 'text'
    with numbers for words; --format text still reads it so, and real text is untouched."""
    rng = np.random.default_rng(3)
    ratings = _write(tmp_path / "u.data", "".join(f"{u}\t{i}\t{rng.integers(1, 6)}\t{881250949 + 7 * u + i}\n"
                                                for u in range(1, 60) for i in rng.choice(200, 5, replace=False) + 1))
    r = run_cli("run", "lda", ratings, "--iterations", "1", timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{ratings}: every line holds 4 numbers: a table (a rating file?), not text" in r.stderr
    r = run_cli("run", "lda", ratings, "--format", "text", "--numbers", "keep", "--iterations", "1", "--quiet",
                timeout=300)
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lda", _write(tmp_path / "d.txt", TEXT), "--iterations", "1", "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr


def _two_themes_texts():
    return ["apple banana melon apple"] * 15 + ["goal team coach goal"] * 15


def test_lda_transforms_a_count_matrix_as_it_fits_one_and_works_in_a_pipeline():
    """CountVectorizer's matrix fitted, and its transform of new documents: transform
    stopped with 'expected str, bytes or os.PathLike object, not csr_matrix' (so did a
    Pipeline's transform and fit_transform); a matrix of another vocabulary is named."""
    import tux2
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import Pipeline
    cv = CountVectorizer()
    lda = tux2.LDA(topics=2, iterations=30).fit(cv.fit_transform(_two_themes_texts()))
    theta = lda.transform(cv.transform(["banana apple melon", "coach team"]))
    assert theta.shape == (2, 2) and theta[0].argmax() != theta[1].argmax() and theta.max(1).min() > 0.8
    pipe = Pipeline([("counts", CountVectorizer()), ("lda", tux2.LDA(topics=2, iterations=30))])
    assert pipe.fit_transform(_two_themes_texts()).shape == (30, 2)
    np.testing.assert_allclose(pipe.transform(["goal team"]).sum(1), 1.0)
    with pytest.raises(InputError, match="the documents have 3 word columns but the model has 6 words"):
        lda.transform(CountVectorizer().fit_transform(["goal team coach"]))


def test_lda_fit_reports_the_held_out_fit_of_test_documents_as_tux2_predict_does(tmp_path):
    """``fit(docs, test)`` ignored ``test``: now the last record has the held-out log-likelihood
    per token and perplexity of the final model, one fold-in, the numbers ``tux2 predict`` gives
    for the saved model (unknown words left out), for texts, files and count matrices alike;
    labels (a Pipeline's y) are refused, and a Pipeline with a classifier after LDA, which
    hands its y to every step, still fits."""
    import tux2
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import Pipeline
    texts, test = _two_themes_texts(), ["banana apple melon kiwi", "coach team goal", "apple goal"]
    lda = tux2.LDA(topics=2, iterations=10).fit(texts, test)
    *before, last = lda.history_
    assert not any("test_ll_per_token" in r for r in before)
    assert "test_ll_per_token" not in tux2.LDA(topics=2, iterations=10).fit(texts).history_[-1]
    _, ll, tokens = lda.fold_in(test)
    assert tokens == 8 and last["test_ll_per_token"] == pytest.approx(ll / tokens, rel=1e-12)
    assert last["test_perplexity"] == pytest.approx(np.exp(-ll / tokens), rel=1e-12)
    lda.save(tmp_path / "m")
    r = run_cli("predict", str(tmp_path / "m"), _write(tmp_path / "t.txt", "\n".join(test) + "\n"), "-o",
                str(tmp_path / "theta.txt"), "--metrics", str(tmp_path / "p.json"), timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "p.json").read_text())
    assert got["ll_per_token"] == pytest.approx(last["test_ll_per_token"], abs=1e-6)
    from_file = tux2.LDA(topics=2, iterations=10).fit(texts, str(tmp_path / "t.txt")).history_[-1]
    assert from_file["test_ll_per_token"] == last["test_ll_per_token"]
    cv = CountVectorizer()
    X = cv.fit_transform(texts)
    counts = tux2.LDA(topics=2, iterations=10).fit(X, cv.transform(test))
    assert counts.history_[-1]["test_ll_per_token"] == pytest.approx(counts.fold_in(cv.transform(test))[1] / 8)
    y = np.arange(len(texts)) % 2
    with pytest.raises(InputError, match=r"^test: a held-out set of documents .* not int64 values \(labels\?\)"):
        tux2.LDA(topics=2, iterations=1).fit(texts, y)
    pipe = Pipeline([("counts", CountVectorizer()), ("lda", tux2.LDA(topics=2, iterations=10)),
                     ("lr", tux2.LogisticRegression(epochs=3))])
    assert pipe.fit(texts, y).predict(texts).shape == (len(texts),)


def test_lda_refuses_weights_that_are_not_token_counts():
    """tf-idf weights (or any fraction) were cut to whole tokens: 0.5 became 0 and the
    error spoke of 'token count 0 at triple 0'; transform dropped them silently."""
    import tux2
    from sklearn.feature_extraction.text import CountVectorizer
    cv = CountVectorizer()
    X = cv.fit_transform(_two_themes_texts())
    with pytest.raises(InputError, match=r"^scipy.sparse matrix: the value at document 0, word \d+ is 0.5, not a "
                                         r"token count .*CountVectorizer's, not TfidfVectorizer's"):
        tux2.LDA(topics=2, iterations=1).fit(X * 0.5)
    lda = tux2.LDA(topics=2, iterations=1).fit(X)
    with pytest.raises(InputError, match="is 1.5, not a token count"):
        lda.transform(cv.transform(["apple"]) * 1.5)


def test_lda_refuses_a_count_a_file_could_not_hold():
    """A count of 2^40 in a matrix (a file's line is refused over 2^24) reached the
    sampler's token arrays: a MemoryError asking for 2 TiB, after a long wait."""
    import scipy.sparse as sp
    import tux2
    X = sp.csr_matrix(np.array([[2**40, 1], [1, 2]]))
    with pytest.raises(InputError, match=r"word 0 is 1.09951e\+12, not a token count \(a whole number from 1 to 16777216"):
        tux2.LDA(topics=2, iterations=1).fit(X)
    tux2.LDA(topics=2, iterations=1).fit(sp.csr_matrix(np.array([[3, 1], [1, 2]])))


def test_a_vocabulary_of_another_corpus_or_for_a_text_corpus_is_refused(tmp_path):
    """A docword file's vocabulary has its header's W lines: one with more (vocab.nytimes.txt
    beside docword.kos.txt) labelled the topics with the wrong words, silently; a text
    corpus ignored --vocab."""
    import tux2
    src = _docword_two_themes(tmp_path / "docword.two.txt")
    right, longer = tmp_path / "vocab.two.txt", tmp_path / "vocab.other.txt"
    right.write_text("".join(f"w{i}\n" for i in range(1, 13)))
    longer.write_text("".join(f"x{i}\n" for i in range(1, 20)))
    assert tux2.LDA(topics=2, iterations=1, vocab=str(right)).fit(src).vocab_[11] == "w12"
    with pytest.raises(InputError, match=f"^{longer}: vocabulary has 19 words but the docword header says W = 12: "
                                         "the vocabulary of another corpus"):
        tux2.LDA(topics=2, iterations=1, vocab=str(longer)).fit(src)
    with pytest.raises(InputError, match="this text corpus has words of its own: leave out vocab="):
        tux2.LDA(topics=2, iterations=1, vocab=str(right)).fit(_write(tmp_path / "docs.txt", TEXT))


@pytest.mark.slow
def test_predict_refuses_flags_another_kind_of_model_takes(tmp_path):
    """`tux2 predict lda_model/ docs.txt --top-k 3` printed the mixtures as if --top-k
    (an mf flag) were not there; an mf model ignored LDA's --iterations alike."""
    import tux2
    tux2.LDA(topics=2, iterations=5).fit(TEXT.splitlines()).save(str(tmp_path / "lda"))
    docs = _write(tmp_path / "new.txt", "apples and trucks\n")
    for flag, kinds in ((["--top-k", "3"], "mf"), (["--include-seen"], "mf"), (["--min-ratings", "3"], "mf"),
                        (["--unknown", "skip"], "mf"),
                        (["--zero-based"], "lr, svm, softmax, fm, linreg, blockpg")):
        r = run_cli("predict", str(tmp_path / "lda"), docs, *flag, timeout=300)
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.strip() == f"tux2: error: {flag[0]} applies to {kinds} models, and {tmp_path / 'lda'} holds an lda model"
    tux2.MF(k=2, epochs=1).fit((np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([3.0, 4.0, 5.0]))).save(
        str(tmp_path / "mf"))
    r = run_cli("predict", str(tmp_path / "mf"), "--top-k", "1", "--iterations", "20", timeout=300)
    assert r.returncode == 2 and "--iterations applies to lda models" in r.stderr
    assert run_cli("predict", str(tmp_path / "lda"), docs, "--iterations", "20", timeout=300).returncode == 0


def test_words_keep_their_combining_marks_however_they_were_typed():
    """Marks are not letters: Hindi's 'हिन्दी भाषा' became five lone consonants, and
    a decomposed 'naïve' (as macOS writes file names and some editors text) became 'nai'
    and 've', apart from the composed 'naïve' of the next document."""
    import unicodedata
    assert io.tokenize("हिन्दी भाषा, Hindi!") == ["हिन्दी", "भाषा", "hindi"]
    assert io.tokenize("العَرَبِيَّة") == ["العَرَبِيَّة"]
    assert io.tokenize("Don't snake_case C++ 3.14") == ["don", "t", "snake", "case", "c", "3", "14"]
    g, vocab = io.text_docs([unicodedata.normalize("NFD", "Naïve café"), "naïve CAFÉ"])
    assert vocab == ["naïve", "café"] and g.n_dst == 2


def test_a_resume_with_another_input_or_worker_count_names_them_plainly(tmp_path):
    """The input is a positional, not a flag: the error said '--input A there, --input B
    now; resume with the first --input A'; and 'written by 1 workers' (the worker count
    may change now: the checkpoint is laid out anew, tests/test_relayout.py)."""
    a = _docword_two_themes(tmp_path / "docword.a.txt")
    b = _docword_two_themes(tmp_path / "docword.b.txt", seed=4)
    ck = str(tmp_path / "ck")
    r = run_cli("run", "lda", a, "-k", "2", "--iterations", "2", "--checkpoint-every", "1", "--checkpoint-dir", ck,
                "-q", timeout=300)
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lda", b, "-k", "2", "--iterations", "4", "--resume", ck, "-q", timeout=300)
    assert r.returncode == 2 and "--input" not in r.stderr
    assert f"input {a} there, input {b} now; resume with the first input {a}" in r.stderr
    r = run_cli("run", "lda", a, "-k", "2", "--iterations", "4", "--resume", ck, "--workers", "2", "-q", timeout=300)
    assert r.returncode == 0 and "worker" not in r.stderr, r.stderr


def test_read_options_the_corpus_format_has_no_use_for_are_errors(tmp_path):
    """--min-count on a docword file, --base on docword or text: ignored silently (the
    rare words a user meant to drop stayed)."""
    import tux2
    src = _docword_two_themes(tmp_path / "docword.two.txt")
    text = _write(tmp_path / "docs.txt", TEXT)
    for option in ({"min_count": 3}, {"max_df": 0.5}, {"stop_words": ["w"]}):
        flag = next(iter(option)).replace("_", "-")
        with pytest.raises(InputError, match=f"^{src}: {next(iter(option))}= filters the words of a "
                                             "text corpus, and this one is docword"):
            tux2.LDA(topics=2, iterations=1, **option).fit(src)
    with pytest.raises(InputError, match="base= is the id base of 'doc word count' triples, and this "
                                         "corpus is docword \\(1-based by the format\\)"):
        tux2.LDA(topics=2, iterations=1, base=1).fit(src)
    r = run_cli("run", "lda", text, "--base", "1", "--iterations", "1", timeout=300)
    assert r.returncode == 2 and "and this corpus is text" in r.stderr
    assert tux2.LDA(topics=2, iterations=1, min_count=2).fit(text).vocab_[:2] == ["apples", "bananas"]


def test_lda_takes_a_dense_count_array_as_the_matrix_it_is():
    """`fit(X.toarray())`, which scikit-learn's LDA takes, said 'cannot load a ndarray'."""
    import scipy.sparse as sp
    import tux2
    from sklearn.feature_extraction.text import CountVectorizer
    cv = CountVectorizer()
    X = cv.fit_transform(_two_themes_texts()).toarray()
    lda = tux2.LDA(topics=2, iterations=10).fit(X)
    np.testing.assert_array_equal(lda.word_topic_, tux2.LDA(topics=2, iterations=10).fit(sp.csr_matrix(X)).word_topic_)
    np.testing.assert_array_equal(lda.transform(cv.transform(["goal team"]).toarray()),
                                  lda.transform(cv.transform(["goal team"])))


CSV = '''id,text,label
1,"Apples and bananas, fruit",a
2,Cars and trucks drive on roads,b

3,"Trucks carry apples
on roads",b
'''


def test_a_csv_corpus_is_its_text_column_under_the_header(tmp_path):
    """Not the header, the ids or the labels: the rows' text (quoted commas and line
    breaks as CSV has them, blank lines no rows), as fit reads the same texts."""
    import tux2
    texts = ["Apples and bananas, fruit", "Cars and trucks drive on roads", "Trucks carry apples\non roads"]
    ref = tux2.LDA(topics=2, iterations=3).fit(texts)
    for name, text in (("docs.csv", CSV), ("docs.tsv", "id\tTitle\tBody\n" + "".join(
            f"{i}\tt{i}\t{t}\n" for i, t in enumerate(t.replace("\n", " ") for t in texts)))):
        lda = tux2.LDA(topics=2, iterations=3).fit(_write(tmp_path / name, text))
        assert lda.vocab_ == ref.vocab_ and lda.doc_topic_.shape == (3, 2)
        np.testing.assert_array_equal(lda.word_topic_, ref.word_topic_)
        assert lda.transform(str(tmp_path / name)).shape == (3, 2)        # new documents are read alike
    one = tux2.LDA(topics=2, iterations=3).fit(_write(tmp_path / "one.txt", "text\n" + "\n".join(
        t.replace("\n", " ") for t in texts) + "\n"))
    assert one.vocab_ == ref.vocab_
    r = run_cli("run", "lda", str(tmp_path / "docs.csv"), "-k", "2", "--iterations", "1")
    assert r.returncode == 0 and "docs.csv [csv, text column 'text']" in r.stdout and f"3 documents, {len(ref.vocab_)} words," in r.stdout


def test_what_is_not_a_csv_header_is_text_and_a_csv_without_text_column_is_an_error(tmp_path):
    import tux2
    lda = tux2.LDA(topics=2, iterations=1).fit(_write(tmp_path / "a.txt", "Hello,world\nthe cat sat\n"))
    assert lda.doc_topic_.shape[0] == 2 and "hello" in lda.vocab_             # a first line of words, not names
    path = _write(tmp_path / "b.csv", "id,label\n1,spam\n2,ham\n")
    with pytest.raises(InputError, match=r"b.csv:1: a header of columns \(id, label\) and none is named as a text column"):
        tux2.LDA(topics=2).fit(path)
    assert tux2.LDA(topics=2, iterations=1, format="text").fit(path).doc_topic_.shape[0] == 3   # as asked
    long = _write(tmp_path / "long.txt", "id,label\n" + ("x" * 5000 + ",1\n") * 20)    # sniffed from 64 KB: the
    with pytest.raises(InputError, match="long.txt:1: a header of columns"):           # line cut there is no row
        tux2.LDA(topics=2).fit(long)
    with pytest.raises(InputError, match=r"c.csv:3: 2 fields, and the header names 3 \(id, text, label\)"):
        tux2.LDA(topics=2).fit(_write(tmp_path / "c.csv", "id,text,label\n1,a b,x\n2,c d\n"))
    with pytest.raises(InputError, match=r"a.txt:1: line 1 is no CSV header"):
        tux2.LDA(topics=2, format="csv").fit(str(tmp_path / "a.txt"))


def test_lda_fits_a_dataframe_by_its_text_column():
    """LDA().fit(pd.read_csv('docs.csv')) read the frame as doc/word/count columns and
    ended in pandas' own ValueError traceback, while `tux2 run lda docs.csv` reads the
    text column. A frame without one names the way: fit(df['COLUMN'])."""
    pd = pytest.importorskip("pandas")
    import tux2
    from tux2 import loaders
    texts = TEXT.splitlines()
    df = pd.DataFrame({"id": range(len(texts)), "Title": ["t"] * len(texts), "Text": texts, "label": 0})
    a, b = tux2.LDA(topics=2, iterations=3).fit(df), tux2.LDA(topics=2, iterations=3).fit(texts)
    assert a.vocab_ == b.vocab_ and np.array_equal(a.word_topic_, b.word_topic_)
    assert np.array_equal(a.transform(df), b.transform(texts))
    with pytest.raises(InputError, match=r"^DataFrame: a DataFrame with text \(columns id, Title, label\) and no "
                                         r"column named text, body, content, …: text_column='COLUMN' picks it "
                                         r"\(or pass the texts, fit\(df\['COLUMN'\]\); \(doc, word\[, count\]\) "
                                         r"rows name their second column 'word'\)"):
        tux2.LDA().fit(df.drop(columns="Text"))
    with pytest.raises(InputError, match="^DataFrame: value column 'Title' is not numeric: 't' at row 0"):
        loaders.load(df[["id", "label", "Title"]])


AMAZON = (  # Amazon reviews as Kaggle's CSV has them: the text in 'reviewText', quoted commas, a review left empty
    "reviewerID,asin,reviewerName,helpful,reviewText,overall,summary,unixReviewTime,reviewTime\n"
    'A2SUAM1J3GNN3B,0000013714,J. McDonald,"[2, 3]","I bought this for my husband who plays the piano. He is '
    'having a wonderful time playing these old hymns.",5.0,Heavenly Highway Hymns,1252800000,"09 13, 2009"\n'
    'A14VAT5EAX3D9S,0000013714,Jake,"[13, 14]","The sound quality is great, the guitar sounds warm and the piano '
    'is crisp.",5.0,Great sound,1363392000,"03 16, 2013"\n'
    'A195EZSQDW3E21,0000013714,"Rick Bennette ""Rick""","[1, 1]","The guitar strings buzz, and the tuning pegs '
    'slip after a week of playing.",3.0,Strings buzz,1377648000,"08 28, 2013"\n'
    'A2C00NNG1ZQQG2,0000013714,Rich,"[0, 0]",,4.0,Fine,1381968000,"10 17, 2013"\n')


def test_a_csv_text_column_of_any_name_is_picked_with_text_column(tmp_path):
    """Amazon reviews' text is in 'reviewText' (and 'summary'): no option named it, so
    tux2 run lda, tux2 info and LDA().fit(DataFrame) stopped. --text-column NAME|N
    (text_column=) picks it, by name (any case) or 1-based position; the same texts as
    fit(list) give the same model, and the model reads new documents by it; the error
    for a CSV without a known text column names the option."""
    pd = pytest.importorskip("pandas")
    import tux2
    path = _write(tmp_path / "reviews.csv", AMAZON)
    df = pd.read_csv(path, keep_default_na=False, dtype=str)
    ref = tux2.LDA(topics=2, iterations=3).fit(df["reviewText"].tolist())
    for how in ("reviewText", "reviewtext", "5", 5):
        m = tux2.LDA(topics=2, iterations=3, text_column=how).fit(path)
        assert m.vocab_ == ref.vocab_ and m.doc_topic_.shape == (4, 2), how
        np.testing.assert_array_equal(m.word_topic_, ref.word_topic_)
    m = tux2.LDA(topics=2, iterations=3, text_column="reviewText").fit(df)
    np.testing.assert_array_equal(m.word_topic_, ref.word_topic_)
    assert "buzz" in tux2.LDA(topics=2, iterations=1, text_column="summary").fit(path).vocab_
    with pytest.raises(InputError, match=r"reviews.csv:1: a header of columns \(reviewerID, .*text_column='NAME' "
                                         r"picks it"):
        tux2.LDA(topics=2).fit(path)
    with pytest.raises(InputError, match=r"no text column 'review' among the 9 columns \(reviewerID"):
        tux2.LDA(topics=2, text_column="review").fit(path)
    r = run_cli("info", path)        # read as pandas reads it, the header names a rating file's columns
    assert r.returncode == 0 and "columns reviewerID,asin,overall (1,2,6, by name) of 9" in r.stdout, r.stderr
    r = run_cli("info", path, "--text-column", "reviewText", "--json")
    rep = json.loads(r.stdout) if r.returncode == 0 else r.stderr
    assert rep["doc"]["ids_declared"] == 4 and rep["tokens"] == sum(len(io.tokenize(t)) for t in df["reviewText"]), rep
    out = tmp_path / "m"
    r = run_cli("run", "lda", path, "--text-column", "reviewText", "-k", "2", "--iterations", "3", "--out", str(out))
    assert r.returncode == 0 and "4 documents" in r.stdout, r.stdout + r.stderr
    r = run_cli("predict", str(out), path)             # new documents in the same CSV: its text column again
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 5, r.stdout + r.stderr
    r = run_cli("run", "lda", path, "--text-column", "reviewText", "--format", "triples")
    assert r.returncode == 2 and "--format triples" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_model_keeps_its_stop_words_and_refuses_documents_of_another_kind(tmp_path):
    """A model trained with --stop-words FILE re-read the file at predict time: moved or
    edited, predict failed or split new text differently. A text model given a docword
    file mapped its word ids onto the text's words silently (a perplexity of another
    corpus); a docword model given text said 'word id beyond the model's words'."""
    import tux2
    src = _write(tmp_path / "docs.txt", TEXT)
    stop = _write(tmp_path / "stop.txt", "Apples the\n")
    r = run_cli("run", "lda", src, "-k", "2", "--iterations", "2", "--stop-words", stop, "--out",
                str(tmp_path / "m"), "-q", timeout=300)
    assert r.returncode == 0, r.stderr
    os.remove(stop)
    new = _write(tmp_path / "new.txt", "the apples and bananas zebra\n")
    r = run_cli("predict", str(tmp_path / "m"), new, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stderr.strip().splitlines()[-1])
    assert report["tokens"] == 2 and report["unknown_words_dropped"] == 1      # and, bananas in; zebra unknown
    model = tux2.LDA.load(tmp_path / "m")
    assert model.stop_words_ == ["apples", "the"] and model.documents([open(new).read()])[0].values.sum() == 2
    docword = _docword_two_themes(tmp_path / "docword.txt")
    r = run_cli("predict", str(tmp_path / "m"), docword, timeout=300)
    assert r.returncode == 2 and f"{docword}: a docword corpus, and this model was fitted on text" in r.stderr
    r = run_cli("run", "lda", docword, "-k", "2", "--iterations", "2", "--out", str(tmp_path / "dw"), "-q",
                timeout=300)
    assert r.returncode == 0, r.stderr
    r = run_cli("predict", str(tmp_path / "dw"), new, timeout=300)
    assert r.returncode == 2 and f"{new}: this model has numeric word ids (no vocabulary), and these documents are " \
                                 "text" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_optimize_interval_learns_the_same_alpha_in_2_workers_and_predict_uses_it(tmp_path):
    """--optimize-interval 2 with the sync sampler: 2 real workers and 3 partitions learn
    the single process's α bit for bit; lda.npz keeps it and 'tux2 predict' folds in
    with it (its mixtures are the estimator's transform with alpha_)."""
    import tux2
    src = _docword_two_themes(tmp_path / "docword.two.txt")
    common = ["run", "lda", src, "-k", "3", "--iterations", "6", "--optimize-interval", "2", "--sampler", "sync",
              "--quiet", "--timeout", "30"]
    one, two = tmp_path / "one", tmp_path / "two"
    for out, extra in ((one, []), (two, ["--workers", "2", "--partitions", "3", "--partitioner", "random"])):
        r = run_cli(*common, *extra, "--out", str(out), timeout=300)
        assert r.returncode == 0, r.stderr
    a, b = np.load(one / "lda.npz"), np.load(two / "lda.npz")
    np.testing.assert_array_equal(a["alpha"], b["alpha"])
    np.testing.assert_array_equal(a["word_topic"], b["word_topic"])
    assert a["alpha"].shape == (3,) and np.ptp(a["alpha"]) > 0
    new = _write(tmp_path / "new.docword", "2\n12\n3\n1 12 5\n2 4 4\n2 7 1\n")
    p = run_cli("predict", str(one), new, "--iterations", "20", timeout=300)
    assert p.returncode == 0, p.stderr
    theta = np.array([[float(x) for x in line.split()[1:]] for line in p.stdout.splitlines()
                      if line[:1].isdigit()])
    model = tux2.LDA.load(one)
    np.testing.assert_allclose(theta, model.transform(new, iterations=20), atol=1e-4)    # 4 digits printed
    symmetric = tux2.LDA.load(one)
    symmetric.alpha_ = np.full(3, symmetric.alpha)
    assert np.abs(symmetric.transform(new, iterations=20) - theta).max() > 1e-3


@pytest.mark.slow
def test_break_it_findings_on_stdin_alpha_notes_and_kept_stop_words(tmp_path):
    """Four findings of a break-it trial: LDA().fit('-') on text read standard input
    once and then opened '-' as a file ('No such file or directory'); an
    --optimize-interval no iteration reaches was silent while the header said α is
    optimised; a docword model with --vocab, trained on 'the', dropped it from new
    text as an English stop word; a model fitted with a list of stop words loaded
    back with stop_words='english'."""
    import subprocess
    import sys
    import tux2
    src = _write(tmp_path / "docs.txt", TEXT)
    code = "import tux2; print(tux2.LDA(topics=2, iterations=2).fit('-').vocab_[:3])"
    with open(src) as f:
        r = subprocess.run([sys.executable, "-c", code], stdin=f, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout == "['apples', 'bananas', 'fruit']\n", r.stderr
    with pytest.warns(RuntimeWarning, match="α is never learnt: the first iteration past optimize_burn_in=0 that "
                                            "optimize_interval=10 divides is 10, beyond iterations=3"):
        m = tux2.LDA(topics=2, iterations=3, optimize_interval=10).fit(src)
    assert (m.alpha_ == 0.1).all()
    docword = _docword_two_themes(tmp_path / "docword.txt")
    vocab = _write(tmp_path / "vocab.txt", "".join(f"{w}\n" for w in ["a", "b", "the", "apple", "pear", "fig",
                                                                         "kiwi", "goal", "team", "coach", "score",
                                                                         "match"]))
    r = run_cli("run", "lda", docword, "--vocab", vocab, "-k", "2", "--iterations", "2", "--out",
                str(tmp_path / "dw"), "-q", timeout=300)
    assert r.returncode == 0, r.stderr
    g, dropped = tux2.LDA.load(tmp_path / "dw").documents(["the apple goal"])
    assert g.values.sum() == 3 and dropped == 0
    listed = tux2.LDA(topics=2, iterations=2, stop_words=["Apples", "the"]).fit(src)
    listed.save(tmp_path / "listed")
    back = tux2.LDA.load(tmp_path / "listed")
    assert back.get_params()["stop_words"] == back.stop_words_ == ["apples", "the"]
    assert back.vocab_ == listed.vocab_ and "and" in back.vocab_


@pytest.mark.parametrize("compress", ["plain", "gzip", "bz2", "lzma"])
def test_a_stop_word_file_may_be_compressed_and_hold_comments(tmp_path, compress):
    """A gzip, bz2 or xz stop-word file was refused as 'not UTF-8', and the words of a
    '# comment' line were stop words; now read as the input files are, comments skipped."""
    import importlib

    import tux2
    src = _write(tmp_path / "docs.txt", TEXT)
    text = b"# cars trucks\nApples roads  # oranges\n\n#bananas\nfruit\n"
    packed = tmp_path / f"stop.{compress}"
    packed.write_bytes(text if compress == "plain" else importlib.import_module(compress).compress(text))
    vocab = tux2.LDA(topics=2, iterations=1, stop_words=str(packed)).fit(src).vocab_
    assert vocab == tux2.LDA(topics=2, iterations=1, stop_words=["apples", "roads", "fruit"]).fit(src).vocab_
    assert {"bananas", "cars", "trucks", "oranges"} <= set(vocab) and "apples" not in vocab


def test_a_stop_word_file_edited_before_a_resume_is_named(tmp_path):
    """Editing the --stop-words file between a checkpoint and --resume was refused as
    'other edges' naming only the unchanged corpus: the changed file is named."""
    src = _write(tmp_path / "docs.txt", TEXT)
    stop = tmp_path / "stop.txt"
    stop.write_text("apples\n")
    ck = str(tmp_path / "ck")
    flags = ("-k", "2", "--stop-words", str(stop), "--checkpoint-dir", ck, "-q")
    r = run_cli("run", "lda", src, "--iterations", "2", "--checkpoint-every", "1", *flags, timeout=300)
    assert r.returncode == 0, r.stderr
    stop.write_text("apples\nroads\n")
    r = run_cli("run", "lda", src, "--iterations", "4", "--resume", ck, *flags, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"input files: {stop}: 7 bytes then, 13 now" in r.stderr and f"{src}:" not in r.stderr, r.stderr


@pytest.mark.slow      # (7 s warm, 21 s cold)
def test_numbers_and_one_character_tokens_are_dropped_unless_kept(tmp_path):
    """'1', '2', 'x', '2024' were words and filled topics of real corpora (version numbers,
    list markers). Dropped now in training, so new text's are words the model lacks (unknown
    words, dropped), and in info's count of what run lda trains on; --numbers keep keeps them."""
    import tux2
    src = _write(tmp_path / "docs.txt", "apples 1 x bananas 2024\nbananas 2 apples y\ntrucks 3 roads x\n")
    r = run_cli("info", src, timeout=300)
    assert r.returncode == 0 and "  vocabulary: 10 words (tux2 run lda: 4, without 6 numbers or one-character " \
                                 "words)\n" in r.stdout, r.stdout
    for keep, vocab in ((False, ["apples", "bananas", "trucks", "roads"]),
                        (True, ["apples", "1", "x", "bananas", "2024", "2", "y", "trucks", "3", "roads"])):
        out = tmp_path / f"m{keep}"
        r = run_cli("run", "lda", src, "-k", "2", "--iterations", "2", "--out", str(out), "-q",
                    *(["--numbers", "keep"] if keep else []), timeout=300)
        assert r.returncode == 0, r.stderr
        assert (out / "vocab.txt").read_text().split() == vocab
        new = _write(tmp_path / "new.txt", "apples 7 x zebra\n")
        r = run_cli("predict", str(out), new, timeout=300)
        report = json.loads(r.stderr.strip().splitlines()[-1])
        assert (report["tokens"], report["unknown_words_dropped"]) == ((1, 3) if not keep else (2, 2)), r.stderr
        model = tux2.LDA.load(out)
        assert model.numbers == ("keep" if keep else "drop") and model.documents(["x apples 9"])[1] == (2 if not keep else 1)
    r = run_cli("run", "lda", _write(tmp_path / "n.txt", "1 2 x\n3 y 4\n"), "--format", "text", timeout=300)
    assert r.returncode == 2 and "every word is a number or one character long: --numbers keep" in r.stderr, r.stderr


def test_text_column_by_position_of_a_headerless_table_keeps_its_first_row(tmp_path):
    """tomotopy's sample_with_md.txt is 'label<TAB>text' lines without a header: --text-column 2
    took its first line for the header, and its first document was silently lost. A first line
    with a number in it (a label, an id) is a row; a header of names is still none."""
    import tux2
    rows = "0\tzebra quokka\n1\tapple banana melon\n0\tgoal team coach\n"
    m = tux2.LDA(topics=2, iterations=2, text_column=2).fit(_write(tmp_path / "md.txt", rows))
    assert m.doc_topic_.shape[0] == 3 and "zebra" in m.vocab_
    m = tux2.LDA(topics=2, iterations=2, text_column=2).fit(_write(tmp_path / "h.tsv", "label\ttext\n" + rows))
    assert m.doc_topic_.shape[0] == 3 and "text" not in m.vocab_
    r = run_cli("info", str(tmp_path / "md.txt"), "--text-column", "2", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["doc"]["ids_declared"] == 3, r.stdout + r.stderr


def test_a_latin1_corpus_is_quoted_once_and_named_with_its_conversion(tmp_path):
    """A Latin-1 corpus's line was quoted escaped twice ('caf\\\\xe9': backslashreplace, then
    repr) and nothing said how to read it. Now the quote shows the undecodable bytes as U+FFFD
    and the message the iconv line."""
    f = tmp_path / "latin.txt"
    f.write_bytes(b"caf\xe9 na\xefve\nhello world\n")
    r = run_cli("run", "lda", str(f), "--iterations", "1")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"tux2: error: {f}:1: not UTF-8 text (invalid continuation byte at byte 3 of the "
                               "line; a Latin-1 file converts with iconv -f LATIN1 -t UTF-8) (line text: "
                               "'caf\ufffd na\ufffdve')"), r.stderr


def test_prose_whose_quotation_runs_on_into_the_next_paragraph_is_text(tmp_path):
    """gensim's Lee corpus (real news text, a document a line): a quotation running on into the
    next paragraph leaves a line with an odd number of '"'s; with commas in the text the sniffer
    took it for a comma-separated file and 'tux2 info' and 'tux2 run lda' stopped on 'a quoted
    field does not close on this line'. Prose is text: every line a document."""
    path = tmp_path / "lee.cor"
    path.write_text(LEE_PROSE)
    assert io.sniff_input(str(path)) == "text"
    r = run_cli("run", "lda", str(path), "--topics", "2", "--iterations", "2", "--out", str(tmp_path / "m"))
    assert r.returncode == 0 and "3 documents" in r.stdout, r.stdout + r.stderr
