"""Edge-list loading: good files parse exactly, bad ones name file and line."""
import re

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from tux2 import io
from tux2.errors import InputError
from tux2.io import read_edge_list


def write(tmp_path, text, name="g.txt"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def test_parses_separators_comments_and_values(tmp_path):
    p = write(tmp_path, "# header\n0 1 4.5\n2\t0\t-1e-1\n\n% other comment\n1,1,3\r\n")
    g = read_edge_list(p)
    assert g.src.tolist() == [0, 2, 1] and g.dst.tolist() == [1, 0, 1]
    np.testing.assert_allclose(g.values, [4.5, -0.1, 3.0])
    assert (g.n_src, g.n_dst) == (3, 2)


def test_two_columns_have_no_values(tmp_path):
    g = read_edge_list(write(tmp_path, "0 1\n1 0\n"))
    assert g.values is None and g.num_edges == 2


def test_matrix_market_is_one_based(tmp_path):
    g = read_edge_list(write(tmp_path, "%%MatrixMarket matrix coordinate real general\n% c\n3 2 2\n1 1 5\n3 2 1.5\n"))
    assert g.src.tolist() == [0, 2] and g.dst.tolist() == [0, 1]


@pytest.mark.parametrize("text, line, what", [
    ("0 1 2\n1 x 3\n", 2, "malformed vertex id"),
    ("0 1 2\n\n1 2 abc\n", 3, "malformed value"),
    ("0 1 nan\n", 1, "NaN or infinite"),
    ("0 1 2\n0 1 inf\n", 2, "NaN or infinite"),
    ("0 1 2\n-3 1 2\n", 2, "negative vertex id"),
    ("0 1\n3 1 2\n", 2, "a value column where"),
    ("0 1 2\n4\n", 2, "missing column"),
    ("0 1 2\n4 5\n", 2, "missing value column"),
    ("0 1 2\n99999999999999999999 1 2\n", 2, "too large"),
    ("1,2,3\n3,1 5,2\n", 2, "a space inside a field: the file is comma- or semicolon-separated"),
    ("u;i;r\n1;2;3\n4;5;6 7\n", 3, "a space inside a field"),
])
def test_bad_lines_name_file_and_line(tmp_path, text, line, what):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as ei:
        read_edge_list(p)
    msg = str(ei.value)
    assert f"{p}:{line}:" in msg and what in msg
    assert ei.value.line == line


@pytest.mark.parametrize("char, end", [("7", "\n"), ("é", "\r\n"), ("8", "")],
                         ids=["ascii", "utf8-crlf", "no-newline"])
def test_a_long_line_is_quoted_by_its_start_with_its_whole_length(tmp_path, char, end):
    """Messages quote the first 1024 bytes of a line, and said "(1024 characters)" for a
    line of 5004 (trial brk38); UTF-8 counts characters, not bytes; a CR before the
    newline, or no newline at the end of the file, is no character of the line."""
    p = write(tmp_path, f"1 2 3{end or chr(10)}{char * 3000} 2 3{end}")
    with pytest.raises(InputError) as ei:
        read_edge_list(p)
    assert f"{p}:2:" in str(ei.value) and str(ei.value).endswith(f"{char}'… (3004 characters))"), str(ei.value)[-80:]


def test_empty_file_is_a_clear_error(tmp_path):
    for text in ("", "# only a comment\n\n"):
        with pytest.raises(InputError, match="no edges found"):
            read_edge_list(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_edge_list(tmp_path / "nope.txt")


def test_one_based_below_base(tmp_path):
    with pytest.raises(InputError, match="below the id base"):
        read_edge_list(write(tmp_path, "0 1 2\n"), base=1)


def test_byte_ranges_partition_the_lines_exactly(tmp_path):
    from tux2.io import read_edge_range
    rng = np.random.default_rng(3)
    lines = ["% a comment", "%%not a header"] + [f"{rng.integers(0, 50)} {rng.integers(0, 9)} {rng.random():.3f}"
                                                 for _ in range(997)] + ["", "# trailing"]
    path = tmp_path / "g.txt"
    path.write_text("\n".join(lines) + "\n")
    whole = read_edge_list(str(path))
    for parts in (1, 2, 3, 7, 64):
        got = [read_edge_range(str(path), r, parts) for r in range(parts)]
        np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), whole.src)
        np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), whole.dst)
        np.testing.assert_allclose(np.concatenate([g[2] for g in got if g[2] is not None]), whole.values)
    mm = tmp_path / "m.mtx"
    mm.write_text("%%MatrixMarket matrix coordinate real general\n% c\n3 3 3\n1 1 2.0\n2 3 1.5\n3 2 4.0\n")
    got = [read_edge_range(str(mm), r, 2) for r in range(2)]
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), [0, 1, 2])
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(f"{i} 1 1.0\n" for i in range(500)) + "7 x 1.0\n" + "1 1 1.0\n" * 10)
    with pytest.raises(InputError, match=r"bad.txt:501:"):
        for r in range(4):
            read_edge_range(str(bad), r, 4)


def test_large_files_parse_in_chunks_like_one_pass(tmp_path):
    """A file of several MB is parsed in parallel chunks: blank and comment lines inside
    chunks, the result equals a plain-Python parse, and an error deep in the file (or a
    column count that changes between chunks) names the same line a serial pass would."""
    rng = np.random.default_rng(0)
    n = 400_000
    s, d, v = rng.integers(0, 10 ** 6, n), rng.integers(0, 10 ** 4, n), rng.normal(size=n).round(4)
    lines = [f"{a}\t{b}\t{c}" for a, b, c in zip(s.tolist(), d.tolist(), v.tolist())]
    for i in (5, 120_000, 250_001):
        lines.insert(i, "# comment" if i % 2 else "")
    text = "\n".join(lines) + "\n"
    assert len(text) > 4 << 20
    g = read_edge_list(write(tmp_path, text))
    assert g.src.tolist() == s.tolist() and g.dst.tolist() == d.tolist()
    assert (g.src.dtype, g.dst.dtype, g.values.dtype) == (np.int32, np.int32, np.float32)   # 12 bytes per edge
    np.testing.assert_array_equal(g.values, v.astype(np.float32))
    for bad, what in (("17\tx\t2.0", "malformed vertex id"), ("17\t3", "missing value column")):
        broken = lines[:300_000] + [bad] + lines[300_000:]
        with pytest.raises(InputError) as ei:
            read_edge_list(write(tmp_path, "\n".join(broken) + "\n"))
        assert ei.value.line == 300_001 and what in str(ei.value)


def test_ids_beyond_int32_are_read_into_int64_and_values_beyond_float32_named(tmp_path):
    """Edges are parsed straight into int32 ids and float32 values; an id that needs
    more is read again into int64 (in whichever chunk it is); a value float32 cannot
    hold names its line."""
    from tux2.io import EdgeFormat, _parse_from
    big = 3_000_000_000
    lines = [f"{i % 1000} {i % 7} 1.5" for i in range(300_000)]
    lines[250_000] = f"{big} 3 2.5"
    raw = ("\n".join(lines) + "\n").encode()
    s, d, v, ncols = _parse_from(raw, EdgeFormat(), "big.txt")
    assert (s.dtype, v.dtype, ncols, len(s)) == (np.int64, np.float32, 3, 300_000)
    assert s[250_000] == big and s[249_999] == 249_999 % 1000 and d[250_000] == 3 and v[250_000] == 2.5
    s, d, v, _ = _parse_from(raw.replace(str(big).encode(), b"2147483647"), EdgeFormat(), "big.txt")
    assert s.dtype == np.int32 and s[250_000] == 2 ** 31 - 1           # the largest int32 id stays int32
    with pytest.raises(InputError, match=r"big.txt:7: value beyond the float32 range"):
        _parse_from(b"1 2 3\n" * 6 + b"1 2 1e39\n", EdgeFormat(), "big.txt")


def test_numbers_are_read_as_python_reads_them(tmp_path):
    """Every decimal of up to 19 significant digits reads as Python's float() reads it
    (correctly rounded): '%.17g' and '%.18e' (numpy.savetxt's default) text, far
    exponents, subnormals and halfway cases. It used to be 1 ulp off for 10-18 % of
    17-19 digit numbers (mantissa truncated after 18 digits, then rounded twice)."""
    import random
    from tux2 import io as tio
    rng = random.Random(7)
    words = ["9007199254740993", "9007199254740995", "9007199254740993.00000000001", "9007199254740993.0000", "2.4703282292062327e-324", "2.4703282292062328e-324",
             "4.9406564584124654e-324", "2.2250738585072011e-308", "1.7976931348623157e308", "1e-400", "1e23",
             "8.988465674311579e307", "0.1", "123456789012345678e-5", "9999999999999999999e-19"]
    for _ in range(4000):
        x = rng.uniform(-1, 1) * 10.0 ** rng.randint(-320, 307)
        words += [repr(x), "%.18e" % x, "%.16e" % x, "%.15g" % x]
    for _ in range(1000):           # integers halfway between two doubles above 2^53
        m, e = rng.randint(2 ** 52, 2 ** 53 - 1), rng.randint(1, 10)
        if m * 2 ** e + 2 ** (e - 1) < 10 ** 19:
            words.append(str(m * 2 ** e + 2 ** (e - 1)))
    path = tmp_path / "numbers.svm"
    path.write_text("".join(f"{w} 1:{w}\n" for w in words))
    g, y = tio.read_libsvm(str(path), zero_based=False)
    want = [float(w) for w in words]
    assert y.tolist() == want
    assert g.values.tolist() == want and g.src.tolist() == list(range(len(words)))      # libsvm keeps a 0


@pytest.mark.slow      # (9 s warm, 40 s from a cold cache: the default pass keeps under 10 minutes)
def test_commas_alone_separate_a_comma_separated_file(tmp_path):
    """'1 5' in a comma-separated rating file read as two fields (a line of 3,1,5 for
    '3,1 5,2'), as tables no longer do; spaces around the commas, and inside the fields
    after the ones read (a timestamp), are no fields."""
    from tux2 import loaders
    g = read_edge_list(write(tmp_path, "1, 2, 3\n2 ,3 ,4,2005-09-06 10:00\n"))
    assert g.src.tolist() == [1, 2] and g.values.tolist() == [3, 4]
    p = write(tmp_path, "1,2 5,4\n")
    with pytest.raises(InputError, match=f"{p}:1: a space inside a field"):
        loaders.load_edges(p)
    # string ids: a field is the text between commas, spaces and a quoted comma included (titles, artists);
    # read it as 'Toy' or 'Story' (an earlier reader) and the model is another's
    rows = 'ann,Toy Story,5\nbo,"Heat, The",4\nann, Heat ,3\n'
    p = write(tmp_path, "user,item,rating\n" + rows, "s.csv")
    for path in (p, write(tmp_path, "user,item,rating\n" + rows * 90000, "big.csv")):   # line by line; compiled
        g = loaders.load_edges(path, duplicates="keep")
        assert loaders.edge_ids(g, 1)[:3].tolist() == ["Toy Story", "Heat, The", "Heat"], path
        assert g.values[:3].tolist() == [5, 4, 3]
    with pytest.raises(InputError, match=f"{tmp_path / 'g.txt'}:1: a space inside a field"):
        loaders.load_edges(write(tmp_path, "ann,Heat,4 5\n"))
    # a header whose names are not all roles ('title') over ids with spaces: the number below is the rating's,
    # the third field, not the third of the tokens split at spaces too ('Star', 'Wars'); line 1 was a bad value
    g = loaders.load_edges(write(tmp_path, "user,title,rating\nann,Star Wars,5\nbo,Heat,4\n", "t.csv"))
    assert loaders.edge_ids(g, 1).tolist() == ["Star Wars", "Heat"] and g.values.tolist() == [5, 4]
    # a doubled quote inside a quoted field is one quote (RFC 4180; MovieLens' titles: '"11'09""01 (2002)"',
    # '"""Great Performances"" Cats (1998)"'), and a comma after one is still inside the field
    rows = 'ann,"11\'09""01 (2002)",2\nbo,"""Great"" Cats, The",4\n'
    for path in (write(tmp_path, rows, "q.csv"), write(tmp_path, rows * 150000, "qbig.csv")):   # line by line; compiled
        g = loaders.load_edges(path, duplicates="keep")
        assert loaders.edge_ids(g, 1)[:2].tolist() == ["11'09\"01 (2002)", '"Great" Cats, The'], path
        assert g.values[:2].tolist() == [2, 4]


def test_a_quote_the_first_data_line_does_not_close_is_named(tmp_path):
    """A line break inside quotes (pandas writes one) or a missing quote on the first data
    line: its width was taken as the file's and a later, good line was named."""
    from tux2 import loaders
    for text, line in (('user,item,rating\nann,"Star\nWars",5\nbo,Heat,4\n', 2), ('ann;"Star Wars;5\nbo;Heat;4\n', 1)):
        with pytest.raises(InputError, match=f"o.csv:{line}: a quoted field does not close on this line"):
            loaders.load_edges(write(tmp_path, text, "o.csv"))
    g = loaders.load_edges(write(tmp_path, 'ann,12" pizza,5\nbo,Heat,4\n', "inch.csv"))     # a quote inside a field
    assert loaders.edge_ids(g, 1).tolist() == ['12" pizza', "Heat"]


@settings(max_examples=3000, deadline=None)
@given(line=st.lists(st.sampled_from([b"a", b"1", b",", b";", b"\t", b" ", b'"', b":", b"\r", b"\n"]),
                     max_size=14).map(b"".join),
       mode=st.sampled_from([io.SPACE, io.COLON]), leading=st.booleans())
@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_split_fields_fast_path_splits_as_the_runs_of_separators_do(line, mode, leading):
    """split_fields splits a line of one kind of separator at it alone (the string-id reader's
    lines, 3× faster); every line must come out as the general split by separator runs does."""
    assert io.split_fields(line, mode, leading) == io._split_fields(line.rstrip(b"\r\n"), mode, leading)


def _string_edges_both_ways(raw, fmt, maps=(None, None)):
    """The string-id reader's results (or its error) through its compiled path and line by line, and
    what the compiled path gave (None: it declined the file)."""
    from tux2 import loaders
    out, compiled = [], []
    for threshold in (0, 1 << 62):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(io, "STRING_COMPILED", threshold)
            m.setattr(io, "string_edges", lambda r, f, g=io.string_edges: compiled.append(g(r, f)) or compiled[-1])
            try:
                s, d, v, id_maps, missing = loaders._string_edges(raw, fmt, "f", ("src", "dst"), maps)
                out.append((s.tolist(), d.tolist(), v if v is None else v.tolist(),
                            [m if m is None else m.tokens.tolist() for m in id_maps], missing))
            except InputError as e:
                out.append(str(e))
    return out[0], out[1], compiled[0] if compiled else None


_FIELD = st.sampled_from([b"a", b"b1", b"1", b"2.5", b"-3e1", b"nan", b"1.2.3", b"#c", b"%", b'"q"', b'"x y"', b"",
                          b" ", b"\xe9", b"\r", b'"', b"+", b".5", b"3 4", b"1,5", b'"H, T"', b'" a;b"', b'"u',
                          b'"a""b, c"'])
_SEP = st.sampled_from([b",", b";", b"\t", b" ", b"::", b", ", b"\t\t", b",,", b" \t"])


@settings(max_examples=2500, deadline=None)
@given(rows=st.lists(st.lists(_FIELD, min_size=1, max_size=5), min_size=1, max_size=6), sep=_SEP,
       ends=st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=6, max_size=6),
       mode=st.sampled_from([io.SPACE, io.COLON, io.TAB]), sepname=st.sampled_from(["comma", "semicolon", "space"]),
       cols=st.sampled_from([(0, 1, io.OPTIONAL), (0, 1, io.NONE), (1, 0, 2), (0, 2, 3), (2, 0, io.OPTIONAL)]),
       maps=st.sampled_from(["none", "frozen", "numeric"]))
@example(rows=[[b"a", b"1", b"3 4"]], sep=b"\t", ends=[b"\n"] * 6, mode=io.TAB, sepname="space",
         cols=(0, 1, io.OPTIONAL), maps="none")                 # (a tab-separated '3 4' is no number)
@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_string_id_reader_compiled_path_reads_as_the_line_by_line_one(rows, sep, ends, mode, sepname, cols, maps):
    """The compiled string-id reader (10× faster) must give exactly the ids, maps, values and
    unknown tokens of the line-by-line reader, through a model's maps too (a test or predict file),
    and decline every file the latter refuses (which then names the line)."""
    from tux2.loaders import IdMap
    raw = b"".join(sep.join(r) + e for r, e in zip(rows, ends))
    fmt = io.EdgeFormat(mode=mode, cols=cols, sep="tab" if mode == io.TAB else "colon" if mode == io.COLON else sepname)
    given_maps = {"none": (None, None), "frozen": (IdMap(["a", "1", "x y", "é"]), IdMap(["b1", "a", "q"])),
                  "numeric": (IdMap(["a", "b1"]), None)}[maps]
    fast, slow, compiled = _string_edges_both_ways(raw, fmt, given_maps)
    assert fast == slow             # (a file the line-by-line reader refuses, the compiled one must decline)


@pytest.mark.parametrize("text, cols", [
    ('"276725";"034545104X";"0"\n"276726";"0155061224";"5"\r\n', (0, 1, io.OPTIONAL)),       # Book-Crossing
    ('u1\t"weird al" yankovic\t12\nu2\t"abba"\t3\n', (0, 1, 2)),                               # Last.fm, R's quotes
    ("a::b::5::978300760\nc::b::4::978300761\n", (0, 1, 2)),
    ("# ratings\nU1, I9, 1.5\n\nU2,I9,2\n", (0, 1, io.OPTIONAL))])
def test_string_id_reader_takes_real_files_compiled(text, cols):
    """Real files' lines take the compiled path (it declined none of them) and read as line by line."""
    raw = text.encode("latin-1")
    fmt = io.edge_format(raw, "f", ",".join(str(c + 1) for c in cols if c >= 0) if cols[2] != io.OPTIONAL else None)
    fast, slow, compiled = _string_edges_both_ways(raw, fmt)
    assert compiled is not None and fast == slow


def test_a_large_string_id_file_is_read_compiled_and_its_bad_line_named(tmp_path, monkeypatch):
    """load_edges takes the compiled string-id reader for a large file (here: any file) with the
    same graph as line by line; a bad line far into it is still named by the line-by-line reader."""
    from tux2 import loaders
    rng = np.random.default_rng(0)
    users, items = rng.zipf(1.5, 3000) % 500, rng.zipf(1.5, 3000) % 80
    ratings = rng.integers(1, 6, 3000)
    lines = [f'"U{u}";"{i:07d}X";"{r}";13000{n}' for n, (u, i, r) in enumerate(zip(users, items, ratings))]
    p = write(tmp_path, "\n".join(['"User-ID";"ISBN";"Book-Rating";"t"'] + lines) + "\n", "bx.csv")
    calls = []
    monkeypatch.setattr(io, "STRING_COMPILED", 0)
    monkeypatch.setattr(io, "string_edges", lambda raw, fmt, f=io.string_edges: calls.append(1) or f(raw, fmt))
    g = loaders.load_edges(p, duplicates="sum")
    monkeypatch.setattr(io, "STRING_COMPILED", 1 << 62)
    h = loaders.load_edges(p, duplicates="sum")
    assert calls == [1] and g.ids[0] == h.ids[0] and g.ids[1] == h.ids[1] and g.ids[0].tokens[0] == "U" + str(users[0])
    assert g.src.tolist() == h.src.tolist() and g.dst.tolist() == h.dst.tolist()
    assert g.values.tolist() == h.values.tolist()
    lines[2500] = lines[2500].replace('";"', '";;"', 1)
    p = write(tmp_path, "\n".join(lines) + "\n", "bad.csv")
    monkeypatch.setattr(io, "STRING_COMPILED", 0)
    with pytest.raises(InputError, match=f"{p}:2501: .*empty field"):
        loaders.load_edges(p, duplicates="sum")


@pytest.mark.parametrize("text, names", [
    (b'"user","item"\r\n"U1","I2"\r\n"U3","I2"\r\n', ["user", "item"]),       # a predict file of string ids
    (b"userId\nU1\nU2\n", ["userId"]),                                         # a --top-k user list
    (b"ISBN;User-ID\n034545104X;U7\n", ["ISBN", "User-ID"]),
    (b"a,b\nU1,I2\n", None), (b"user,I9\nU1,I2\n", None), (b"item\nU1\n", None)])   # ids, not names
def test_a_header_of_role_names_above_string_ids_is_a_header(text, names):
    """Above string ids no line has a number to tell a header by: a first line whose every
    token names a column's role, a user's among them, is one (it was read as the pair
    ('user', 'item'), predicted by the baseline in predict's output)."""
    fmt = io.edge_format(text, "f")
    assert fmt.names == names
    assert (fmt.start == text.index(b"\n") + 1) == (names is not None)


@pytest.mark.parametrize("text, line, column", [
    ("user,item,rating\n1,2,\n1,3,4\n", 2, "column 3 ('rating')"),   # pandas' to_csv of a missing first rating
    ("1,2,\n1,3,4\n", 1, "column 3"), ("1;2;\n1;3;4\n", 1, "column 3")])
def test_a_first_data_line_ending_in_an_empty_field_is_named(tmp_path, text, line, column):
    """A first data line whose last field is empty had the next line named, as one with
    a value column where the lines before had none. A file whose every line ends in a
    separator still reads."""
    p = write(tmp_path, text, "r.csv")
    from tux2 import loaders
    with pytest.raises(InputError, match=rf"{p}:{line}: empty field in {re.escape(column)} at the end of the line"):
        loaders.load_edges(p)
    g = loaders.load_edges(write(tmp_path, "1,2,5,\n1,3,4,\n", "every.csv"))
    assert sorted(g.values.tolist()) == [4.0, 5.0]


@pytest.mark.parametrize("encoding, code", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"),
                                            ("utf-16-be", "UTF-16BE"), ("utf-32", "UTF-16")])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_utf16_text_is_named_with_the_way_to_convert_it(tmp_path, encoding, code, gz):
    """A rating file saved as Windows' 'Unicode' (UTF-16, as PowerShell's '>' writes it)
    was refused at line 1 as 'malformed value (expected a number)', quoting NUL bytes; a
    corpus as 'not UTF-8 text'. Now every reader's entry says it is UTF-16 and how to
    convert it."""
    import gzip
    from tux2 import loaders
    data = "1 2 3\n2 3 4\n".encode(encoding)
    path = tmp_path / ("r.txt.gz" if gz else "r.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(InputError, match=rf"^{path}: {code} \(or UTF-32\) text, and tux2 reads UTF-8 .*"
                                         rf"{'gzip -dc ' + str(path) + ' | ' if gz else ''}iconv -f {code} -t UTF-8"):
        loaders.load_edges(str(path))


def test_ascii_and_latin1_inputs_are_not_taken_for_utf16(tmp_path):
    from tux2 import loaders
    for i, text in enumerate([b"1 2 3\n", b"1\t2\t3\n", b"alice,b\xe9b\xe9,5\n", b"a b\n" * 3]):
        path = tmp_path / f"f{i}.txt"
        path.write_bytes(text)
        assert len(loaders.load_edges(str(path), duplicates="sum").src) >= 1


def test_a_negative_id_in_a_file_names_the_way_to_read_it(tmp_path):
    """MF().fit takes arrays of any integers, -1 too (Python's hash()); a file's -1 stopped
    on 'negative vertex id' without the option that reads it (trial leftover): --ids string."""
    import numpy as np
    import tux2
    from tux2.loaders import load_edges
    p = write(tmp_path, "0 1 5\n-1 2 3\n2 0 4\n")
    with pytest.raises(InputError, match=r":2: negative vertex id .*--ids string"):
        read_edge_list(p)
    g = load_edges(p, ids="string")
    assert g.num_edges == 3 and "-1" in [str(t) for t in g.ids[0].tokens]
    m = tux2.MF(k=2, epochs=1).fit(np.array([[0, 1, 5.], [-1, 2, 3.], [2, 0, 4.]]))
    assert np.isfinite(m.predict(np.array([[-1, 2]]))).all()


def test_a_quoted_separator_in_a_column_read_is_an_error_on_any_line(tmp_path):
    """'"3,4"' in the item column on line 2 stopped at file:line, while on line 121 (past the
    lines the format is told from) it was read as item 3, rating 4 (trial leftover). A quoted
    number that closes, and a quoted comma in a column not read, are read as before."""
    from tux2.loaders import load_edges
    lines = ["user,item,rating,comment"] + [f"{i},{i % 13},{i % 5 + 1},good" for i in range(150)]
    lines[100] = '1001,"4","2",x'
    lines[110] = '1002,3,2,"ok, fine"'
    fine = write(tmp_path, "\n".join(lines) + "\n")
    g = load_edges(fine, columns=(1, 2, 3))
    assert g.num_edges == 150
    lines[120] = '1000,"3,4",2,ok'
    p = tmp_path / "late.csv"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"late\.csv:121: a quoted field read as a number holds more"):
        load_edges(p, columns=(1, 2, 3))
