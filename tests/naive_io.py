"""Slow, obviously-correct readers: the file formats' grammar written out line by line
in plain Python, to check the numba parsers against. Each returns the parsed data or
(error substring, line number)."""
import re

from tux2 import io      # the header role names only (io.role), not the parser

SEP = re.compile(rb"[ \t,\r;\"]+")             # space, tab, comma, CR, semicolon, double quote
COLON_SEP = re.compile(rb"[ \t,\r;\":]+")
ID = re.compile(rb"\+?[0-9]+")
NUM = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
NONFINITE = (b"nan", b"inf", b"infinity")
MAX_ID = 2 ** 62
DECIMAL_COMMA = re.compile(rb'(^|[;"])[ \t]*[-+]?[0-9]+,[0-9]+[ \t]*([;"\r]|$)')    # '1;2;3,5'


class Unmodelled(Exception):
    """A header that may choose other columns than the first three: pandas' row-index
    column (an empty first name) or names of roles (item before user). Their own tests
    check those (tests/test_real_files.py); this grammar reads by position only."""


class Bad(Exception):
    def __init__(self, what, line):
        super().__init__(what, line)
        self.what, self.line = what, line


BOM = b"\xef\xbb\xbf"      # a UTF-8 byte-order mark at the start of a file is not data


def _id(tok, line):
    if tok.startswith(b"-"):
        raise Bad("negative vertex id", line)
    digits = re.match(rb"\+?(\d*)", tok).group(1)
    if digits and int(digits) > MAX_ID:         # the parser stops at the digit that overflows,
        raise Bad("too large", line)            # before it sees what follows the digits
    if not ID.fullmatch(tok):
        raise Bad("malformed vertex id", line)
    return int(tok)


def _number(tok, line, malformed, nonfinite):
    if tok.lower().lstrip(b"+-") in NONFINITE:
        raise Bad(nonfinite, line)
    if not NUM.fullmatch(tok):
        raise Bad(malformed, line)
    v = float(tok)
    if v != v or abs(v) == float("inf"):
        raise Bad(nonfinite, line)
    return v


def _is_number(tok):
    return tok.lower().lstrip(b"+-") in NONFINITE or NUM.fullmatch(tok) is not None


def _row(toks, line, sep, no, strict=False):
    """(src, dst, value, columns) of a line's tokens (separated by ``sep``); ``strict``
    (the first data line has a comma or semicolon): only those and tabs separate, so a
    run of spaces or quotes alone between the first four tokens is no separator."""
    # the separator runs between tokens: one with two commas, semicolons or tabs holds an empty field
    runs = [r for r in re.split(b"(" + sep.pattern + b")", line)[1::2]]
    runs = runs[1:] if not re.split(sep.pattern, line)[0] else runs    # a run before the first token

    def empty(i, fields=True):       # the run after token i, when token i + 1 follows it
        hard = sum(runs[i].count(c) for c in b",;\t") if len(toks) > i + 1 else 1
        if hard > 1 and fields:
            raise Bad("empty field", no)
        if hard == 0 and strict:
            raise Bad("a space inside a field", no)
    s = _id(toks[0], no)
    if len(toks) < 2:
        raise Bad("missing column", no)
    empty(0)
    d = _id(toks[1], no)
    if len(toks) < 3:
        return s, d, 1.0, 2
    empty(1)
    v = _number(toks[2], no, "malformed value", "NaN or infinite")
    empty(2, fields=False)           # (the fields after the value are not read: empty ones are no error)
    return s, d, v, 3


def tab_fields(line):
    """A tab-separated line's fields: the text between tabs, trimmed of spaces and CR and
    of quotes around the whole field, without the empty ones at the end."""
    fields = [f.strip(b" \r") for f in line.split(b"\t")]
    fields = [f[1:-1] if len(f) > 1 and f.startswith(b'"') and f.endswith(b'"') else f for f in fields]
    while fields and not fields[-1]:
        fields.pop()
    return fields


def _tab_row(fields, no):
    """(src, dst, value, columns) of a tab-separated line's fields: an id or value
    field must not be empty and holds one number (spaces around it trimmed)."""
    def field(i, parse):
        if not fields[i]:
            raise Bad("empty field", no)
        words = re.split(rb"[ \r]+", fields[i])
        x = parse(words[0])
        if len(words) > 1:
            raise Bad("a space inside a numeric field", no)
        return x
    s = field(0, lambda t: _id(t, no))
    if len(fields) < 2:
        raise Bad("missing column", no)
    d = field(1, lambda t: _id(t, no))
    if len(fields) < 3:
        return s, d, 1.0, 2
    return s, d, field(2, lambda t: _number(t, no, "malformed value", "NaN or infinite")), 3


def edge_list(data):
    """(src, dst, values or None) of an edge list without a MatrixMarket header, ids as
    written (0-based), or raises Bad. Separators: spaces, tabs, commas, CR, and ':' when
    the first data line holds '::'; when it holds a tab, tabs alone (tab_fields). The
    first data line (blank and comment lines as spaces, tabs, commas and CR see them)
    decides, for every line. The first data line is a header (skipped) when none of its
    tokens is a number and the next data line has one among as many columns, or when it
    is the only data line and has two tokens or more.
    Columns after the third are ignored."""
    src, dst, val, ncols = [], [], [], 0
    data = data[3:] if data.startswith(BOM) else data
    lines = data.split(b"\n")
    first = next((line for line in lines if ([t for t in SEP.split(line) if t] or [b"#"])[0][:1] not in (b"#", b"%")),
                 b"")
    tab = b"\t" in first
    sep = COLON_SEP if not tab and b"::" in first else SEP
    rows = []
    for no, line in enumerate(lines, 1):
        toks = [t for t in tab_fields(line) if t] if tab else [t for t in sep.split(line) if t]
        if not toks or toks[0][:1] in (b"#", b"%"):
            continue
        rows.append((no, toks, line, sep))
    after = 0                            # the header's line: the data (and comments) come after it
    if rows and not any(_is_number(t) for t in rows[0][1]) and (
            len(rows[0][1]) >= 2 if len(rows) == 1 else any(_is_number(t) for t in rows[1][1][:len(rows[0][1])])):
        after, rows = rows[0][0], rows[1:]
        head = data.split(b"\n")[after - 1]
        if head[:1] in b" \t,\r;\"" or any(io.role(t.decode("utf-8", "replace").strip("\"'")) is not None
                                              for t in (tab_fields(head) if tab else sep.split(head))):
            raise Unmodelled()
    # a decimal comma between semicolons would read as two fields: on the first data line, or on any line
    # (comments too) of a file whose first data line is ';'-separated (no tab, no comma)
    if rows and not tab and sep is SEP and b";" in rows[0][2] and DECIMAL_COMMA.search(rows[0][2]):
        raise Bad("a decimal comma", rows[0][0])
    if rows and not tab and sep is SEP and b";" in rows[0][2] and b"," not in rows[0][2]:
        for no, line in enumerate(data.split(b"\n"), 1):
            if no > after and DECIMAL_COMMA.search(line):
                raise Bad("a decimal comma", no)
    strict = bool(rows) and not tab and sep is SEP and (b"," in rows[0][2] or b";" in rows[0][2])
    # a first data line ending in its separator ('1,2,') with fewer fields than the header or the next line
    wider = len([t for t in sep.split(data.split(b"\n")[after - 1]) if t]) if after else \
        len(rows[1][1]) if len(rows) > 1 else 0
    if strict and rows[0][2].rstrip(b"\r ").endswith(b"," if b"," in rows[0][2] else b";") and \
            len(rows[0][1]) < wider:
        raise Bad("empty field", rows[0][0])
    for no, toks, line, line_sep in rows:
        s, d, v, cols = _tab_row(tab_fields(line), no) if tab else _row(toks, line, line_sep, no, strict)
        if ncols and cols != ncols:
            raise Bad("missing value column" if cols == 2 else "a value column where", no)
        ncols = cols
        src.append(s)
        dst.append(d)
        val.append(v)
    if not src:
        raise Bad("no edges found", None)
    return src, dst, (val if ncols == 3 else None)


def libsvm(data):
    """(labels, rows, cols, values) with indices as written, or raises Bad."""
    labels, rows, cols, vals = [], [], [], []
    data = data[3:] if data.startswith(BOM) else data
    for no, line in enumerate(data.split(b"\n"), 1):
        toks = [t for t in SEP.split(line) if t]
        if not toks or toks[0][:1] == b"#":
            continue
        if re.fullmatch(rb"[+-]?[0-9]+(\.[0-9]*)?(,[+-]?[0-9]+(\.[0-9]*)?)+", (line.split(None, 1) or [b""])[0]):
            raise Bad("a multi-label line", no)         # '1,3 5:1': labels 1 and 3
        y = _number(toks[0], no, "malformed label", "label is NaN or infinite")
        for tok in toks[1:]:
            if tok[:1] == b"#":
                break
            if tok.startswith(b"qid:"):
                continue
            if tok[:1] == b"-":
                raise Bad("feature index is not a non-negative integer", no)
            digits = re.match(rb"[0-9]*", tok).group()
            if not digits:
                raise Bad("malformed feature" if tok[:1] == b":" else "feature index is not a non-negative", no)
            if int(digits) > MAX_ID:
                raise Bad("feature index too large", no)
            if tok[len(digits):len(digits) + 1] != b":":
                raise Bad("malformed feature", no)
            head, rest = digits, tok[len(digits) + 1:]
            v = _number(rest, no, "malformed feature value", "feature value is NaN or infinite")
            rows.append(len(labels))
            cols.append(int(head))
            vals.append(v)
        labels.append(y)
    if not labels:
        raise Bad("no samples found", None)
    return labels, rows, cols, vals


def tail_filtered(data, min_count):
    """(libsvm text without the features that have fewer than ``min_count`` non-zero
    entries in all of ``data``, their indices as written, sorted): parameter-server's
    tail feature filter, counted in a dict."""
    labels, rows, cols, vals = libsvm(data)
    count = {}
    for j, v in zip(cols, vals):
        if v != 0:
            count[j] = count.get(j, 0) + 1
    kept = sorted(j for j, c in count.items() if c >= min_count)
    lines = [[repr(y)] for y in labels]
    for i, j, v in zip(rows, cols, vals):
        if count.get(j, 0) >= min_count:
            lines[i].append(f"{j}:{v!r}")
    return "".join(" ".join(line) + "\n" for line in lines), kept
