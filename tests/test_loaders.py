"""Loaders: property tests against the plain-Python grammar (tests/naive_io.py), string
ids, duplicate policies, and the Python-object loaders."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, reject, settings, strategies as st

from tests import naive_io
from tux2 import io, loaders
from tux2.errors import InputError

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# bytes that matter to the grammars, plus a few that must never be accepted
EDGE_ALPHABET = list(b"0123456789 \t,\r\n#%.-+eEnaifx:") + [0, 11, 0xC3, 0xA9, 0xFF]
EDGE_TOKENS = [b"0", b"1", b"7", b"12", b"+3", b"-1", b"2.5", b"-0.5e-3", b"1e400", b"0e400", b"nan", b"Inf",
               b"x", b"", b" ", b"\t", b",", b"\r", b"#", b"%", b"99999999999999999999", b"4611686018427387904",
               b"4611686018427387905", b".5", b"5.", b".", b"1e", b"1_0", b"\xff"]


# fields of tab-separated lines (Last.fm's): spaces, commas and quotes inside, spaces around
TAB_FIELDS = [b"0", b"1", b"12", b"+3", b"2.5", b"-1", b"nan", b"1e400", b"x", b"3 4", b" 7 ", b"5 ", b"betty blue",
              b'"weird al" yankovic', b"a, b and c", b"1;2", b"3,5", b"", b" ", b"#", b"%", b"\r", b"4 x", b"\xc3\xa9"]


def lines_of(tokens, sep=b" "):
    """Text built from grammar-shaped tokens joined by ``sep``: most lines are near-valid."""
    return st.lists(st.lists(st.sampled_from(tokens), max_size=5).map(lambda t: sep.join(t)),
                    max_size=8).map(lambda ls: b"\n".join(ls))


edge_text = st.one_of(st.binary(max_size=200), lines_of(EDGE_TOKENS), lines_of(EDGE_TOKENS, b","),
                      lines_of(TAB_FIELDS, b"\t"),
                      st.lists(st.sampled_from(EDGE_ALPHABET), max_size=120).map(bytes))


def _write(tmp_path, data, name="in.txt"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def _agree(parse, reference, data, path):
    """The fast parser and the reference agree: the same data, or errors at the same line
    with the same kind of message. Never any other exception."""
    try:
        want = reference(data)
    except naive_io.Bad as bad:
        with pytest.raises(InputError) as ei:
            parse(path)
        assert bad.what in str(ei.value), (data, str(ei.value))
        assert ei.value.line == bad.line, (data, str(ei.value))
        assert ei.value.path == path
        return None
    return want, parse(path)


@SETTINGS
@given(data=edge_text)
@example(data=b"0 1 0e400\n")
@example(data=b"1,2,\n1,3,4\n")                      # a first line's empty last field: named at its line
@example(data=b"a;b;c\n1;2;\n1;3;4\n")
@example(data=b"5000000000000000000 \x00,\n1,2\n")
@example(data=b"1,2,5,\n1,3,4,\n")
@example(data=b"4611686018427387904 0\n")
@example(data=b"0 1 n\n")
@example(data=b"0 0 1e-1")
@example(data=b"u;i;r\n1;2;3,5\n")
@example(data=b"0 0 .1\n1 2 -0.5e-3\n3 4 16777217\n")
@example(data=b"1\t2\t3 4\n")
@example(data=b"1,2,3\n3,1 5,2\n")                   # a space inside a comma-separated field: no two fields
@example(data=b"u;i;r\n1;2;3\n4;5;6 7\n")
@example(data=b"u\ta\tname\tplays\n1 \t 2\t3\ta, b\n\t\n0\t4\t5\t\t\"x\" y\n")
@example(data=b"1\t\t2\t3\n")
@example(data=b"\t\t\t\t\x00\n0\t0\t1\t0\t\x00")       # pandas' index column: read by its own test
@example(data=b"\t\x00\t\t\t\x00\n0 \x00\t0\t0\t0\t\x00")
@example(data=b"4611700000000000000\x00")           # too large is found before the NUL
def test_edge_list_parser_matches_the_grammar(tmp_path, data):
    if data.startswith(b"%%MatrixMarket"):
        return
    path = _write(tmp_path, data)
    try:
        naive_io.edge_list(data)
    except naive_io.Unmodelled:
        reject()            # a header choosing columns by name or skipping pandas' index: test_real_files
    except naive_io.Bad:
        pass
    got = _agree(io.read_edge_list, naive_io.edge_list, data, path)
    if got is None:
        return
    (src, dst, val), g = got
    assert g.src.tolist() == src and g.dst.tolist() == dst
    if val is None:
        assert g.values is None
    else:
        # edge values are kept in float32 (io: 12 bytes per edge): the reference's value rounded so
        assert g.values.dtype == np.float32
        np.testing.assert_array_equal(g.values, np.asarray(val, np.float64).astype(np.float32))


label_tokens = [b"1", b"-1", b"+1", b"0", b"2.5", b"nan", b"x", b"#c", b"0,4", b"1,3:1"]
feature_tokens = [b"1:1", b"3:0.5", b"0:2", b"12:-1e-2", b"qid:3", b"4:", b":5", b"-2:1", b"7:nan", b"5:1:2",
                  b"x:1", b"5x:1", b"99999999999999999999:1", b"8:inf", b"#", b"", b","]
svm_text = st.one_of(
    st.binary(max_size=150),
    st.lists(st.tuples(st.sampled_from(label_tokens), st.lists(st.sampled_from(feature_tokens), max_size=4))
             .map(lambda t: b" ".join([t[0], *t[1]])), max_size=6).map(lambda ls: b"\n".join(ls)))


@SETTINGS
@given(data=svm_text)
@example(data=b"1 2:1\n0,4 1:0.7 3:1\n")        # LIBSVM's multi-label sets
@example(data=b"1,3\n")
def test_libsvm_parser_matches_the_grammar(tmp_path, data):
    path = _write(tmp_path, data, "in.svm")
    got = _agree(lambda p: io.read_libsvm(p, zero_based=True), naive_io.libsvm, data, path)
    if got is None:
        return
    (labels, rows, cols, vals), (g, y) = got
    np.testing.assert_allclose(y, labels, rtol=1e-12, atol=1e-300)
    assert g.src.tolist() == rows and g.dst.tolist() == cols
    np.testing.assert_allclose(g.values, vals, rtol=1e-12, atol=1e-300)


@pytest.mark.slow      # (10-27 s warm, 90 s from a cold cache; a fuzz test, run in CI's slow pass)
@example(data=b"\x00\r\t\n0\t0", dup="error")      # a CR inside a header line (the csv module refused it)
@SETTINGS
@given(data=st.one_of(st.binary(max_size=200), lines_of([b"a", b"b", b"0", b"12", b"3.5", b"nan", b"\xff",
                                                          b"x y", b"", b"#", b",", b"-2", b"1e999"]),
                      lines_of(TAB_FIELDS, b"\t")),
       dup=st.sampled_from(loaders.DUPLICATES))
def test_every_loader_loads_or_names_a_line(tmp_path, data, dup):
    """Arbitrary bytes through every file loader: a graph, or an InputError naming the
    file (and the line, when one line is at fault). Nothing else escapes."""
    path = _write(tmp_path, data)
    calls = [lambda: loaders.load_edges(path, duplicates=dup),
             lambda: loaders.load_edges(path, ids="string", duplicates=dup),
             lambda: loaders.load_libsvm(path, zero_based=True, duplicates=dup),
             lambda: loaders.load_corpus(path, duplicates=dup),
             lambda: loaders.load_corpus(path, fmt="docword", duplicates=dup)]
    for call in calls:
        try:
            out = call()
        except InputError as e:
            assert e.path == path
            assert str(e).startswith(f"{path}:")
            continue
        g = out[0] if isinstance(out, tuple) else out
        assert g.num_edges == len(g.dst)
        if dup != "keep" and g.num_edges:
            key = g.src * max(g.n_dst, 1) + g.dst
            assert len(np.unique(key)) == g.num_edges


@SETTINGS
@given(pairs=st.lists(st.tuples(st.sampled_from(["ann", "bo", "cé", "7", "d-1"]),
                                st.sampled_from(["x", "y", "zz", "0"]),
                                st.integers(-5, 5)), min_size=1, max_size=25),
       dup=st.sampled_from(["sum", "last", "keep"]))
def test_string_ids_and_duplicates_against_a_dict(tmp_path, pairs, dup):
    """String-id edge lists equal a dictionary-built reference under each policy, in the user's ids."""
    path = _write(tmp_path, "".join(f"{a}\t{b}\t{v}\n" for a, b, v in pairs).encode())
    g = loaders.load_edges(path, ids="string", duplicates=dup)
    got = [(g.ids[0].tokens[s], g.ids[1].tokens[d], v) for s, d, v in zip(g.src, g.dst, g.values)]
    if dup == "keep":
        assert got == [(a, b, float(v)) for a, b, v in pairs]
        return
    want, first = {}, {}
    for i, (a, b, v) in enumerate(pairs):
        want[(a, b)] = want.get((a, b), 0) + v if dup == "sum" else v
        first.setdefault((a, b), i)
        if dup == "last":
            first[(a, b)] = i
    order = sorted(want, key=first.get)
    assert got == [(a, b, float(want[(a, b)])) for a, b in order]
    # dense ids follow first appearance
    assert list(g.ids[0].tokens) == list(dict.fromkeys(a for a, _, _ in pairs))


def test_auto_ids(tmp_path):
    g = loaders.load_edges(_write(tmp_path, b"u1 i1 5\nu2 i1 3\n"))
    assert g.ids[0].tokens.tolist() == ["u1", "u2"] and g.values.tolist() == [5, 3]
    g = loaders.load_edges(_write(tmp_path, b"3 1 5\n0 1 3\n"))
    assert g.ids == (None, None) and g.n == (4, 2)
    # a numeric file with a stray word is an error with a way out, never a silent switch
    with pytest.raises(InputError, match=r"in.txt:2: malformed vertex id .*--ids string"):
        loaders.load_edges(_write(tmp_path, b"3 1 5\nu 1 3\n"))


def test_duplicate_error_names_both_lines(tmp_path):
    path = _write(tmp_path, b"# ratings\nann x 1\nbo x 2\n\nann x 3\n")
    with pytest.raises(InputError) as ei:
        loaders.load_edges(path)
    assert ei.value.line == 5 and "first at line 2" in str(ei.value) and "(ann, x)" in str(ei.value)
    with pytest.raises(InputError, match=r"in.txt:5: duplicate edge \(1, 3\), first at line 3"):
        mm = b"%%MatrixMarket matrix coordinate real general\n2 3 3\n1 3 1\n2 1 1\n1 3 5\n"
        loaders.load_edges(_write(tmp_path, mm), base=1)


def test_sparse_numeric_ids_are_caught(tmp_path):
    with pytest.raises(InputError, match=r"in.txt:2: source id 9000000000 .*--ids string"):
        loaders.load_edges(_write(tmp_path, b"0 1\n9000000000 2\n"))
    g = loaders.load_edges(_write(tmp_path, b"0 1\n9000000000 2\n"), ids="string")
    assert g.ids[0].tokens.tolist() == ["0", "9000000000"] and g.n == (2, 2)


def test_id_maps_encode_test_files(tmp_path):
    train = loaders.load_edges(_write(tmp_path, b"ann x 1\nbo y 2\n"))
    test = loaders.load_edges(_write(tmp_path, b"bo x 4\n", "t.txt"), id_maps=train.ids)
    assert test.src.tolist() == [1] and test.dst.tolist() == [0] and test.n == (2, 2)
    with pytest.raises(InputError, match=r"t.txt:2: unknown dst id 'q'"):
        loaders.load_edges(_write(tmp_path, b"bo x 4\nann q 1\n", "t.txt"), id_maps=train.ids)


def test_libsvm_duplicate_feature_names_the_line(tmp_path):
    path = _write(tmp_path, b"1 1:1 2:1\n-1 3:1 3:2\n", "d.svm")
    with pytest.raises(InputError, match=r"d.svm:2: duplicate feature"):
        loaders.load_libsvm(path)
    g, y = loaders.load_libsvm(path, duplicates="sum")
    assert g.values.tolist() == [1, 1, 3]


def test_triples_sum_after_the_count_check(tmp_path):
    g, vocab, fmt = loaders.load_corpus(_write(tmp_path, b"0 1 2\n0 1 3\n1 0 1\n"))
    assert fmt == "triples" and vocab is None and g.values.tolist() == [5, 1]
    with pytest.raises(InputError, match=r"in.txt:2: count 1.5 is not a positive integer"):
        loaders.load_corpus(_write(tmp_path, b"0 1 2\n0 1 1.5\n"))


@pytest.mark.parametrize("count, message", [(b"16777217", "16777217 is too large for one pair"),
                                            (b"2.0000001", "2.0000001 is not a positive integer")])
def test_counts_are_checked_as_written_not_as_float32(tmp_path, count, message):
    """Values load as float32, which rounds 16777217 to 2^24 and 2.0000001 to 2: counts
    (triples, docword) are checked before that rounding, and then kept as float32."""
    with pytest.raises(InputError, match=f"in.txt:2: count {message}"):
        loaders.load_corpus(_write(tmp_path, b"0 1 2\n1 0 " + count + b"\n"))
    with pytest.raises(InputError, match=f"in.txt:5: count {message}"):
        loaders.load_corpus(_write(tmp_path, b"2\n2\n2\n1 2 2\n2 1 " + count + b"\n"))
    g, _, fmt = loaders.load_corpus(_write(tmp_path, b"0 1 2\n1 0 16777216\n"))
    assert fmt == "triples" and g.values.dtype == np.float32 and g.values.tolist() == [2, 2 ** 24]
    g, _, fmt = loaders.load_corpus(_write(tmp_path, b"2\n2\n2\n1 2 2\n2 1 16777216\n"))
    assert fmt == "docword" and g.values.dtype == np.float32 and g.values.tolist() == [2, 2 ** 24]


def test_scipy_and_arrays():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.random(30, 20, density=0.2, format="csr", random_state=1)
    g = loaders.load(m)
    assert g.n == (30, 20) and g.ids == (None, None)
    np.testing.assert_array_equal(sp.coo_matrix((g.values, (g.src, g.dst)), shape=g.n).toarray(), m.toarray())
    coo = sp.coo_matrix(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2))      # not canonical: a duplicate
    with pytest.raises(InputError, match="duplicate edge"):
        loaders.load(coo)
    assert loaders.from_scipy(coo, duplicates="sum").values.tolist() == [3.0]
    with pytest.raises(InputError, match="not an integer"):
        loaders.from_arrays([0.5, 1.0], [0, 1])
    with pytest.raises(InputError, match="not finite"):
        loaders.from_arrays([0, 1], [0, 1], [1.0, np.nan])


def test_pandas_with_string_ids():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"user": ["bo", "ann", "bo"], "movie": ["m2", "m1", "m1"], "stars": [4.0, 5.0, 3.0]})
    g = loaders.load(df)
    assert g.type_names == ("user", "movie")
    assert [(g.ids[0].tokens[s], g.ids[1].tokens[d], v) for s, d, v in zip(g.src, g.dst, g.values)] == \
        [("bo", "m2", 4.0), ("ann", "m1", 5.0), ("bo", "m1", 3.0)]
    df.loc[1, "stars"] = None
    with pytest.raises(InputError, match="missing at row 1"):
        loaders.load(df)


def test_networkx_bipartite():
    nx = pytest.importorskip("networkx")
    G = nx.Graph()
    G.add_nodes_from(["u1", "u2", "u3"], bipartite=0)      # u3 has no edge: still a vertex
    G.add_nodes_from(["a", "b"], bipartite=1)
    G.add_edge("u1", "a", weight=2.0)
    G.add_edge("b", "u2")
    g = loaders.load(G)
    assert g.n == (3, 2) and g.ids[0].tokens.tolist() == ["u1", "u2", "u3"]
    assert [(g.ids[0].tokens[s], g.ids[1].tokens[d], v) for s, d, v in zip(g.src, g.dst, g.values)] == \
        [("u1", "a", 2.0), ("u2", "b", 1.0)]
    G.add_edge("u1", "u2")
    with pytest.raises(InputError, match="not bipartite"):
        loaders.load(G)


@pytest.mark.parametrize("base", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_distributed_ingress_finds_duplicates_across_workers(tmp_path, base):
    """Two worker processes each read half the file; the repeated pair (one copy in each
    half) is still caught, naming both lines and the pair as the file writes it (a
    1-based file's pair was named by its 0-based dense ids), and every worker exits."""
    from tests.conftest import run_cli
    lines = [f"{u} {i} {1 + (u + i) % 5}" for u in range(base, 40 + base) for i in range(base, 10 + base)]
    lines.append("3 7 5")                      # repeats a line from the other half of the file
    path = _write(tmp_path, ("\n".join(lines) + "\n").encode(), "r.txt")
    r = run_cli("run", "mf", path, "--workers", "2", "--epochs", "1", "--k", "2", "--timeout", "20", timeout=120)
    assert r.returncode != 0
    first = (3 - base) * 10 + (7 - base) + 1
    assert f"{path}:401: duplicate edge (3, 7), first at line {first}" in r.stderr, r.stderr
    r = run_cli("run", "mf", path, "--workers", "2", "--epochs", "1", "--k", "2", "--duplicates", "keep",
                "--timeout", "20", timeout=120)
    assert r.returncode == 0, r.stderr


@SETTINGS
@given(rows=st.lists(st.tuples(st.one_of(st.integers(0, 6), st.sampled_from(["a", "b", "c"])),
                               st.integers(0, 4), st.floats(-3, 3, allow_nan=False)), min_size=1, max_size=20),
       dup=st.sampled_from(["sum", "last", "keep"]))
def test_array_loaders_against_a_dict(rows, dup):
    """(src, dst, values) arrays, and the same as a DataFrame: the edges in the user's ids,
    under each duplicate policy; mixed int/str ids become string ids."""
    src = np.array([r[0] for r in rows], dtype=object if any(isinstance(r[0], str) for r in rows) else np.int64)
    dst, val = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    graphs = [loaders.from_arrays(src, dst, val, duplicates=dup)]
    pd = pytest.importorskip("pandas")
    graphs.append(loaders.load(pd.DataFrame({"u": src, "i": dst, "r": val}), duplicates=dup))
    for g in graphs:
        names = [str(g.ids[0].tokens[s]) if g.ids[0] is not None else str(s) for s in g.src]
        got = list(zip(names, g.dst.tolist(), g.values.tolist()))
        want = {}
        for s, d, v in rows:
            k = (str(s), d)
            want[k] = want.get(k, 0.0) + v if dup == "sum" else v
        if dup == "keep":
            assert got == [(str(s), d, v) for s, d, v in rows]
        else:
            assert sorted((a, b) for a, b, _ in got) == sorted(want)
            for a, b, v in got:
                assert v == pytest.approx(want[(a, b)], abs=1e-12)


def test_duplicates_of_int32_ids_whose_pair_keys_would_wrap(tmp_path):
    """Ids load as int32; (0, 5) and (65536, 5) have src × 65536 + dst equal modulo 2^32,
    so keys computed in int32 merged them: keys are int64 whatever the ids' dtype."""
    path = _write(tmp_path, b"0 5 1\n65536 5 2\n0 65535 3\n7 7 4\n7 7 1\n")
    g = loaders.load_edges(path, duplicates="sum")
    assert g.src.dtype == np.int32
    got = sorted(zip(g.src.tolist(), g.dst.tolist(), g.values.tolist()))
    assert got == [(0, 5, 1.0), (0, 65535, 3.0), (7, 7, 5.0), (65536, 5, 2.0)]
    assert loaders.pair_key(np.array([65536], np.int32), np.array([5], np.int32), 65536).tolist() == [2 ** 32 + 5]
    from tux2.cli.info import describe
    out = describe(loaders.load_edges(path, duplicates="keep"), "edges")
    assert (out["duplicate_pairs"], out["duplicate_edges"]) == (1, 1)


def test_a_fractional_float_id_is_named_as_the_user_wrote_it():
    """numpy 2's repr of a scalar ('np.float64(16.5)') is no part of the message."""
    with pytest.raises(InputError, match=r"src id 16\.5 at index 1 is not an integer"):
        loaders.load((np.array([1.0, 16.5]), np.array([2.0, 3.0]), np.array([1.0, 2.0])))


@pytest.mark.parametrize("text, line, said", [
    ('"1,2",1,3\n2,1,4\n', 1, "line 1 has 4 fields, line 2 3 fields"),                     # read silently as (1, 2, 1)
    ('u,i,r\n"1,2",1,3\n2,1,4\n', 2, "line 1 has 3 names, line 2 4 fields"),
])
def test_a_quoted_field_holding_a_comma_is_named_as_what_splits_its_line(tmp_path, text, line, said):
    """A comma in a quoted field of numeric ids separates (README: Input): on the first data
    line that was no error at all, the 4th field ignored: the line and its quoted field are named."""
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        loaders.load_edges(str(path))
    assert str(e.value).startswith(f"{path}:{line}: {said}"), str(e.value)
    assert str(e.value).count("holds a ','") == 1 and "fields in tux2's reading" in str(e.value), str(e.value)


@pytest.mark.parametrize("text", [
    "userId,movieId,title,rating\n1,10,Toy Story,4\n2,20,Heat (1995),3\n",     # the rating after a title
    "userId;movieId;title;rating\n1;10;Toy Story;4\n2;20;Heat (1995);3\n",
    "1,10,Toy Story,4\n2,20,Heat (1995),3\n",                                  # by position
    'userId,movieId,title,rating\r\n1,10,"Toy Story",4\r\n2,20,"""Cats"" (1998)",3\r\n',   # quoted, as pandas writes
    'userId,movieId,title,rating\n1,10,"Heat, The",4\n2,20,"Birds; The, (1963)",3\n',   # separators inside quotes
    '1,10,"Heat, The",4\n2,20,"Birds, The",3\n',
])
def test_a_column_not_read_may_hold_spaces_in_a_comma_separated_file(tmp_path, text):
    """README: further columns are ignored, as pandas ignores them. A title between the ids and
    the rating stopped a file of numeric ids with 'a space inside a field', or, quoted with a
    comma, 'line 1 has 4 names, line 2 5 fields' (new-user trial: a MovieLens ratings file
    merged with its titles); a space in a field that is read stays that error ('1,1 5,3'), and
    a quoted comma in one ('"1,2",1,3') the other (test above)."""
    path = tmp_path / "r.csv"
    path.write_text(text)
    cols = None if text[0] != "1" else "1,2,4"
    g = loaders.load_edges(str(path), columns=cols)
    assert loaders.edge_ids(g, 0).tolist() == [1, 2] and loaders.edge_ids(g, 1).tolist() == [10, 20]
    assert g.values.tolist() == [4.0, 3.0]
    path.write_text("1,1 5,3\n2,1,4\n")
    with pytest.raises(InputError, match="a space inside a field"):
        loaders.load_edges(str(path))


@pytest.mark.parametrize("ids", ["int", "string"])
@pytest.mark.parametrize("sep", [",", ";"])
def test_an_empty_field_in_a_column_not_read_is_no_error(tmp_path, ids, sep):
    """pandas' to_csv writes a missing timestamp as an empty field: 'userId,movieId,timestamp,rating'
    over '1,10,,4' stopped a file of numeric ids with 'empty field' (a tab-separated file and one of
    string ids read it); an empty field that is read stays the error."""
    path = tmp_path / "r.csv"
    path.write_text("userId,movieId,timestamp,rating\n1,10,,4\n2,20,964982703,3\n".replace(",", sep))
    g = loaders.load_edges(str(path), ids=ids)
    assert [str(x) for x in loaders.edge_ids(g, 0)] == ["1", "2"] and g.values.tolist() == [4.0, 3.0]
    path.write_text("userId,movieId,timestamp,rating\n1,10,,4\n2,,964982703,3\n".replace(",", sep))
    with pytest.raises(InputError, match="r.csv:3: empty field"):
        loaders.load_edges(str(path), ids=ids)


@pytest.mark.parametrize("text, ids", [
    ('user,item,rating\n"a,b",x,3\nc,y,4\n', ["a,b", "c"]),
    ('"a,b",x,3\nc,y,4\n', ["a,b", "c"]),                                     # no header
    ('"user,id",item,rating\na,x,3\nc,y,4\n', ["a", "c"]),                     # the header's name
    ('user,item,rating\nc,y,4\n"Smith, J",x,3\n', ["c", "Smith, J"]),          # a later line
])
def test_a_quoted_comma_is_part_of_a_string_id_or_a_name_as_pandas_reads_it(tmp_path, text, ids):
    """These were errors naming the quoted comma (lf46), and before that 'malformed value'."""
    path = tmp_path / "r.csv"
    path.write_text(text)
    g = loaders.load_edges(str(path))
    assert loaders.edge_ids(g, 0).tolist() == ids and g.values.tolist() == [3.0, 4.0][::1 if ids[0] != "c" else -1]


def test_quoted_fields_without_a_separator_inside_are_read_as_before(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('"user","item","rating"\n"1","2","3"\n"2","1","4"\n')
    g = loaders.load_edges(str(path))
    assert g.num_edges == 2 and g.values.tolist() == [3.0, 4.0]


def test_a_lower_case_matrix_market_banner_is_a_banner(tmp_path):
    """gensim writes and reads '%%matrixmarket matrix coordinate real general' (its
    test_corpus_ok.mm; gensim's MmReader compares the banner lower-cased). tux2 took the
    banner for a '%' comment and the size line '3 5 9' for an entry: an extra count of 9 on
    (3, 5), summed into the corpus by LDA's --duplicates sum, 12 edges for 11."""
    body = b"3 5 4\n1 1 1\n1 2 3\n2 3 1\n3 5 2\n"
    for banner in (b"%%MatrixMarket", b"%%matrixmarket", b"%%MATRIXMARKET"):
        path = _write(tmp_path, banner + b" matrix coordinate real general\n" + body)
        g = loaders.load_edges(path)
        assert (g.num_edges, g.values.tolist(), g.base) == (4, [1.0, 3.0, 1.0, 2.0], 1), banner
        assert io.sniff_corpus(path) == "triples"
    path = _write(tmp_path, b"%%matrixmarket matrix coordinate real symmetric\n" + body)
    with pytest.raises(InputError, match="a MatrixMarket symmetric matrix"):
        loaders.load_edges(path)
    path = _write(tmp_path, b"%%matrixmarket matrix coordinate real general\n3 5 3\n" + body.split(b"\n", 1)[1])
    with pytest.raises(InputError, match=re.escape("in.txt:2: the size line says 3 entries and the file has 4: "
                                                   "another matrix's size line, or lines added after")):
        loaders.load_edges(path)        # (more entries than declared: not 'cut short')


@pytest.mark.parametrize("distributed", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["one process", "distributed ingress"])
def test_a_matrix_market_file_is_checked_against_its_banner_and_size_line(tmp_path, distributed):
    """The size line was skipped unread and the banner's form unchecked: a file cut short, an
    entry beyond the declared rows, and a symmetric matrix (half its entries) trained as given.
    Each is now an error naming the line, the same from one process and from workers."""
    from tests.conftest import run_cli
    head = b"%%MatrixMarket matrix coordinate real general\n"
    cases = {b"% c\n3 3 5\n1 1 5\n2 2 3\n3 1 4\n": ":3: the size line says 5 entries and the file has 3",
             b"2 2 3\n1 1 5\n2 2 3\n3 2 4\n": ":2: row id 3 is beyond the size line's 2 rows",
             b"3 2 3\n1 1 5\n2 2 3\n3 3 4\n": ":2: column id 3 is beyond the size line's 2 columns",
             b"3 3\n1 1 5\n": ":2: MatrixMarket size line '3 3': expected 'rows columns entries'"}
    cases[b"3 3 2\n1 1 5\n2 1 3\n", "symmetric"] = \
        ":1: a MatrixMarket symmetric matrix: tux2 reads coordinate matrices in general form"
    cases[b"3 3 3\n1 1 5\n2 1 3\n3 2 4\n"] = None
    for body, said in cases.items():
        body, form = body if isinstance(body, tuple) else (body, "general")
        path = _write(tmp_path, head.replace(b"general", form.encode()) + body)
        if distributed:
            r = run_cli("run", "mf", path, "--k", "2", "--epochs", "1", "-q", "--workers", "2", timeout=120)
            assert (r.returncode, r.stderr) == (0, "") if said is None else \
                r.returncode == 2 and f"in.txt{said}" in r.stderr, r.stderr
        elif said is None:
            assert loaders.load_edges(path).num_edges == 3
        else:
            with pytest.raises(InputError, match=re.escape(f"in.txt{said}")):
                loaders.load_edges(path)
