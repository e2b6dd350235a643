"""Dense tables of samples for the linear models: a line of numbers per sample, the
label in one column (UCI's and Kaggle's CSV files: HIGGS, SUSY, covtype, Pima),
comma-, tab-, semicolon- or space-separated, with or without a header line, as
LightGBM and xgboost read them. The labels are the column a header names as such,
else a first or last column of words (iris, sonar), else the first column, unless
told (``label_column``); a column of row numbers (pandas' unnamed index, an Id) is
skipped. A column of sample weights (``weight_column``, as LightGBM's) is read apart
from the features, as the labels are.

``table_format`` tells such a file from a libsvm one by its first lines;
``read_table`` reads it in one numba pass per chunk into the sample → feature graph
of ``tux2.io.read_libsvm``, zeros left out (a weight times 0 adds nothing)."""
import re

import numpy as np
from numba import njit, prange

from tux2 import io
from tux2.errors import InputError
from tux2.graph import BipartiteGraph

# header names of a label column (lower case, without '_', '-', ' ', '.'), and of columns that
# number the rows (Kaggle's 'Id', pandas' unnamed row index): skipped, never a feature
# a column of the second kind is the label of one public set ('income' of UCI's adult) but a feature beside a
# column of the first ('income' and 'target' of a Kaggle table)
GENERIC_LABEL_NAMES = {"label", "labels", "class", "target", "y", "ytrue", "outcome", "response"}
LABEL_NAMES = GENERIC_LABEL_NAMES | {"income", "diagnosis", "survived", "quality", "species", "churn", "isfraud",
                                     "fraud", "defaultpaymentnextmonth"}
ID_NAMES = {"", "id", "rowid", "index", "unnamed0"}
# ... and a column named as some thing's id ('PassengerId', 'customer_id', 'user ID'; not 'paid',
# 'valid') whose values in the first lines are distinct whole numbers: an identifier, no feature
_ID_SUFFIX = re.compile(r"(?:[_\-\s.](?:id|ID|Id)|(?<=[a-z])(?:Id|ID))$")

_MESSAGES = {
    1: "malformed value in column {col} (expected a number; a missing value? impute it or leave the line out)",
    2: "NaN or infinite value in column {col} (impute it or leave the line out)",
    3: "{got} columns where the table has {width}",
    4: "empty field in column {col} (two separators in a row): a missing value? impute it or leave the line out",
    5: "column {col} holds words: the linear models read numbers; one-hot encode it first (pandas.get_dummies, "
       "scikit-learn's OneHotEncoder) and fit from Python, or leave it out",
    6: "a space inside column {col}'s field: only commas (semicolons) separate this table's fields, so it is no "
       "number",
    7: "missing value {field} in column {col}: impute it (pandas' fillna, scikit-learn's SimpleImputer) or leave "
       "the line out",
}
_NO_LABEL = "a sample without its label cannot train: leave the line out"
_WEIGHT_MESSAGES = {         # the errors above in the weight column (--weight-column)
    1: "malformed weight in column {col}: the weight column holds numbers >= 0",
    2: "NaN or infinite weight in column {col}: weights are finite numbers >= 0",
    4: "empty weight in column {col} (two separators in a row): give the sample a weight (1: as the others, 0: "
       "left out)",
    7: "missing weight {field} in column {col}: give the sample a weight (1: as the others, 0: left out)",
}
_LABEL_MESSAGES = {          # the errors above in the label column, where imputing makes no sense
    2: "NaN or infinite label in column {col}: leave the line out",
    4: "empty label in column {col} (two separators in a row): " + _NO_LABEL,
    7: "missing label {field} in column {col}: " + _NO_LABEL,
}
_MISSING = {"na", "nan", "n/a", "null", "none", "?", "-", ""}       # no header name: a missing value
# a label that marks a missing one: UCI's '?' and pandas' spellings but 'None' (a plausible class; NaN is no word)
_MISSING_LABELS = ["?", "NA", "N/A", "n/a", "NULL", "null", "#N/A", "#NA", "<NA>"]
_TRUE, _FALSE = np.frombuffer(b"true", np.uint8), np.frombuffer(b"false", np.uint8)
_QUOTED_COMMA = re.compile(rb'"[ ]*[-+]?[0-9]*,[0-9]+[ ]*"')
_QUOTED_WORD = re.compile(rb'(?:^|(?<=[,;]))[ ]*"[^"\n]*[A-Za-z_][^"\n]*"')    # '"setosa, var"': one field


class TableFormat:
    """A dense table's layout: data from byte ``start`` after ``skip`` lines (a header of
    ``names``), ``width`` columns separated as ``mode`` says (tux2.io's SPACE or TAB),
    the label in 0-based column ``label`` (``how``: why that one; -1: none), the samples'
    weights in column ``weight`` (-1: none), the columns ``skipped`` unread (pandas' row
    index, an Id column) and those of ``words``."""

    def __init__(self, edge_format, label, how, skipped=(), words=(), weight=-1):
        self.start, self.skip, self.mode = edge_format.start, edge_format.skip, edge_format.mode
        self.names, self.width, self.sep = edge_format.names, edge_format.width, edge_format.sep
        self.label, self.how, self.skipped, self.words = label, how, tuple(skipped), tuple(words)
        self.weight = weight

    def column(self, j):
        """Column ``j`` (0-based) as a message names it: its 1-based number and header name."""
        name = self.names[j] if self.names and j < len(self.names) and self.names[j] else None
        return f"{j + 1}" + (f" ({name!r})" if name else "")

    def label_spec(self):
        """How a test or predict table finds the labels: [header name, position] (the name
        in a file with a header, the position in one without), 'last' or the 1-based
        position; None without labels."""
        if self.label < 0:
            return None
        at = "last" if self.label == self.width - 1 else self.label + 1
        return [self.names[self.label], at] if self.names and self.names[self.label] else at

    def feature_columns(self):
        return [j for j in range(self.width) if j not in (self.label, self.weight) and j not in self.skipped]

    def feature_of(self):
        """Per column, its feature number, or -1 (the label, a skipped column)."""
        out = np.full(self.width, -1, np.int64)
        out[self.feature_columns()] = np.arange(self.features)
        return out

    def feature_names(self):
        """The header's names of the feature columns, in order (None without a header)."""
        return [self.names[j] for j in self.feature_columns()] if self.names else None

    @property
    def features(self):
        return len(self.feature_columns())

    def notable(self):
        return True

    def describe(self):
        """One phrase for a run's header and ``tux2 info``."""
        sep = {"tab": "tab-separated", "comma": "comma-separated", "semicolon": "semicolon-separated"}.get(
            self.sep, "space-separated")
        labels = f"labels in column {self.column(self.label)}" if self.label >= 0 else "no labels"
        skipped = ", ".join("1 (unnamed: pandas' row index)" if j == 0 and self.names and not self.names[0]
                            else self.column(j) for j in self.skipped)
        return (f"a dense {sep} table of {self.width} columns{', with a header line' if self.names else ''}; "
                + (f"skipped as row numbers or ids: column {skipped}; " if skipped else "")
                + f"{labels} ({self.how}), "
                + (f"sample weights in column {self.column(self.weight)}, " if self.weight >= 0 else "")
                + f"{self.features} features")


def resolve_label(label, names, width, path, words=None, first=0, of="file"):
    """(0-based label column, how it was chosen) of ``label`` (None: a header name in
    LABEL_NAMES, the one in GENERIC_LABEL_NAMES among several (several: an error), else
    the one column of words ``words``, else column ``first``, or (-1, None) when ``first``
    is None; an int, 1-based, negative from the end; 'first' or 'last' (unless a header
    column has that very name); a header name; or [name, position]: the name when the
    file has a header, else the position). The one rule of a table's
    labels, a file's and a DataFrame's (``of``: "DataFrame", ``names`` its columns)."""
    if isinstance(label, (list, tuple)):
        if names and names.count(label[0]) == 1:        # the very name, though it reads as a number ('30')
            return names.index(label[0]), f"--label-column {label[0]}"
        label = label[0] if names else label[1]
    if label is None:
        named = [j for j, n in enumerate(names or ()) if io._key(n) in LABEL_NAMES]
        if len(named) > 1:
            named = [j for j in named if io._key(names[j]) in GENERIC_LABEL_NAMES] or named
        if len(named) == 1:
            return named[0], "by its name; --label-column picks another"
        if named:
            cols = [f"{j + 1} ({names[j]!r})" for j in named]
            raise InputError(f"columns {', '.join(cols[:-1])} and {cols[-1]} are {'both' if len(cols) == 2 else 'all'} "
                             "named as labels are: --label-column NAME (label_column=) says which holds them", path=path)
        if words is not None and words in (0, width - 1):
            return words, "the one column of words; --label-column picks another"
        if first is None:
            return -1, None
        return first, "the first; --label-column picks another"
    return named_column(label, names, width, path, "label", of), f"--label-column {str(label).strip()}"


def named_column(spec, names, width, path, what="label", of="file", required=True):
    """The 0-based column ``spec`` names: a 1-based number (negative from the end), 'first'
    or 'last' (unless a header column has that very name), or a header name (in any case);
    ``what`` column (--label-column, --weight-column) as the error names it. A name of no
    column: InputError, or -1 when not ``required``."""
    spec = str(spec).strip()
    flag = f"{what} column (--{what}-column, {what}_column=)"
    if spec.lower() in ("first", "last") and spec not in (names or ()):
        return 0 if spec.lower() == "first" else width - 1
    try:
        j = int(spec)
    except ValueError:
        hits = [i for i, n in enumerate(names or ()) if n == spec] or \
            [i for i, n in enumerate(names or ()) if io._key(n) == io._key(spec)]
        if len(hits) == 1:
            return hits[0]
        if not required:
            return -1
        listed = "its columns are" if of == "DataFrame" else "the header's names are"
        known = f"{listed} {', '.join(names)}" if names else "the file has no header line"
        raise InputError(f"the {flag} {spec!r} names no column of this {of} ({known}): a number, 'first' "
                         "or 'last' picks one by position", path=path) from None
    if not (1 <= j <= width or -width <= j <= -1):
        if not required:
            return -1
        raise InputError(f"the {flag} {j}: the table has {width} columns (1 … {width}, or -1 for the last)",
                         path=path)
    return j - 1 if j > 0 else width + j


def _header_names(line, fmt):
    """A header line's names, split as its data lines are (commas, semicolons or tabs;
    spaces only in a space-separated table), quotes removed."""
    import csv
    text = line.decode("utf-8", "replace").rstrip("\r").lstrip("\ufeff")
    if fmt.mode == io.SPACE and fmt.sep == "space":
        return [t.strip('"') for t in text.split()]
    delim = "\t" if fmt.mode == io.TAB else ";" if fmt.sep == "semicolon" else ","
    try:
        names = next(csv.reader([text], delimiter=delim))
    except csv.Error:                   # a CR or NUL inside the line: no CSV quoting to honour
        names = text.split(delim)
    return [t.strip().strip("\"'") for t in names]


def _fields(line, fmt, leading=False, trailing=False):
    """The fields of a data line as the table's parser reads them: in a comma- or
    semicolon-separated table split at those alone (a quoted label may hold spaces, and
    the separator when it holds a letter: not a decimal comma, '"0,39"'),
    trimmed of spaces and quotes, empty ones at the end dropped (kept with ``trailing``);
    else as tux2.io's parsers split them."""
    if fmt.mode == io.TAB and trailing:
        return [f.strip(b" \r") for f in line.rstrip(b"\r\n").split(b"\t")]
    if fmt.mode != io.SPACE or fmt.sep not in ("comma", "semicolon"):
        return io.split_fields(line, fmt.mode, leading=leading)
    sep = b"," if fmt.sep == "comma" else b";"
    out = [f.strip(b" \r").strip(b'"') for f in _QUOTED_WORD.sub(lambda m: m.group().replace(sep, b"\n"),
                                                                 line.rstrip(b"\r\n")).split(sep)]
    out = [f.replace(b"\n", sep) for f in out]
    while out and not out[-1] and not trailing:
        out.pop()
    return out


def _empty_at_end(line, number, names, width, fmt, path):
    """A first data line whose last fields are empty (pandas' to_csv of a missing value in
    the last column: '1,0.5,'), so fewer than the ``width`` of the header's ``names`` or of
    the lines below: that error, naming the line, rather than one of the header's names or
    of the next line's columns. (A header that ends in a separator too: no missing value.)"""
    if fmt.mode == io.SPACE and fmt.sep not in ("comma", "semicolon"):
        return                          # spaces at the end of a line are no field
    n = len(_fields(line, fmt))
    if n < width <= len(_fields(line, fmt, trailing=True)) and (not names or all(names[n:width])):
        raise io.empty_at_end(n, names, number, line, path)


def _is_header(first, rest):
    """Whether a first line of fields ``first`` that holds numbers is still a header: the
    column names pandas gives a frame without names (0, 1, 2 …, maybe after an empty
    index name or before 'label'), or a name where every line below has a number."""
    nums = [t for t in first if io.is_number(t)]
    if len(nums) >= 3 and all(re.fullmatch(rb"[0-9]+", t) for t in nums) and \
            [int(t) for t in nums] == list(range(len(nums))):
        return True
    return bool(rest) and any(
        not io.is_number(t) and t.strip(b'"').lower().decode("utf-8", "replace") not in _MISSING and
        re.match(rb'"?[A-Za-z_]', t) and all(j < len(r) and io.is_number(r[j]) for r in rest)
        for j, t in enumerate(first))


def table_format(head, path, label=None, features=None, weight=None, weight_required=True):
    """The TableFormat of a file whose first bytes are ``head`` when its data lines are
    a table of numbers (2 columns or more, numbers in half the lines of each but one at
    most, no libsvm ``index:value`` token; a missing or malformed field is left for the
    parser to name), else None. A table of as many feature columns as a model's
    ``features`` has no labels. Columns that number the rows are skipped: pandas' row
    index (an empty first header name), those named id, index or rowid, and an id
    column (``_ID_SUFFIX``) of distinct whole numbers in the first lines. A header
    whose names are not one per column is an InputError. ``weight``: the column of the
    samples' weights (``named_column``'s spec), read apart from the features; not
    ``weight_required`` (a test table's), only when it has that column, and in a table to score
    (``features`` given) only when named in its header or a column more than the features and
    labels."""
    if label is None and not head.strip():
        return None
    fmt = io.edge_format(head, path)
    if fmt.mode not in (io.SPACE, io.TAB) or fmt.matrix_market:
        return None
    numbered = [(fmt.skip + 1 + i, x) for i, x in enumerate(head[fmt.start:].split(b"\n")[:22])
                if x.strip() and x.strip()[:1] not in (b"#", b"%")]           # (line number, line)
    if not head.endswith(b"\n") and len(numbered) > 1:
        numbered = numbered[:-1]                                            # the last may be cut
    complete = [x for _, x in numbered]
    rows = [_fields(x, fmt) for x in complete[:21]]
    if not rows and fmt.names and len(fmt.names) > 1 and b":" not in head[:fmt.start]:
        raise io.no_edges(fmt, path, "samples")          # a header alone: not a libsvm line
    if not rows or any(b":" in x for x in complete) or len(rows[0]) < 2:
        return None
    header = fmt.names and head[:fmt.start].rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    if not fmt.names and len(rows) > 1 and _is_header(_fields(complete[0], fmt, leading=True), rows[1:]):
        header = complete[0]                     # '0,1,2,…' (pandas' default names), '0,1,…,27,label'
        fmt.start = head.index(header, fmt.start) + len(header) + 1
        fmt.skip = head[:fmt.start].count(b"\n")
        rows, numbered = rows[1:], numbered[1:]
    rows = rows[:20]
    names = _header_names(header, fmt) if header else None
    below = {len(r) for r in rows[1:]}          # the width the header, or else every line below, gives
    _empty_at_end(numbered[0][1], numbered[0][0], names,
                  len(names) if names else below.pop() if len(below) == 1 else 0, fmt, path)
    fmt.width = len(rows[0])
    words = [j for j in range(fmt.width) if sum(io.is_number(r[j]) for r in rows if j < len(r)) * 2 < len(rows)]
    flags = [j for j in words if all(j < len(r) and _is_flag(r[j]) for r in rows)]   # True/False: 1/0 but as labels
    if fmt.width - len(words) + len(flags) < max(2, fmt.width - 1):    # one column of words may be the labels
        return None                                         # ('Iris-setosa', 'R'); a missing value: the parser names it
    fmt.names = names
    if fmt.names is not None and len(fmt.names) != fmt.width:       # a quoted '"0,39"' split in two, a name more
        raise InputError(f"the header line has {len(fmt.names)} names and the first data line {fmt.width} columns "
                         f"(its fields: {', '.join(io._preview(t) for t in rows[0][:12])}): a table has one name per "
                         "column", path=path, line=fmt.skip, text=header.decode("utf-8", "replace"))
    skipped = [j for j, n in enumerate(fmt.names or ()) if io._key(n) in ID_NAMES and (j == 0 or n)
               or _ID_SUFFIX.search(n.strip()) and _distinct_whole([r[j] for r in rows if j < len(r)])]
    if features is not None and fmt.width - len(skipped) == features:
        return TableFormat(fmt, -1, f"none: {features} columns, the model's features", skipped, words)
    w = -1
    if weight is not None and (features is None or fmt.names or fmt.width - len(skipped) >= features + 2):
        w = named_column(weight, fmt.names, fmt.width, path, "weight", required=weight_required and features is None)
        skipped = [j for j in skipped if j != w]            # the column named so holds weights, whatever its name
        if w in words:
            raise InputError(f"the weight column {w + 1}{f' ({fmt.names[w]!r})' if fmt.names else ''} holds words: "
                             "weights are numbers >= 0", path=path)
    if features is not None and fmt.width - len(skipped) - (w >= 0) == features:
        return TableFormat(fmt, -1, f"none: {features} columns, the model's features", skipped, words, w)
    first = 1 if skipped == [0] else 0
    label, how = resolve_label(label, fmt.names, fmt.width, path, words[0] if words else None,
                               first=first + (first == w))
    if label in skipped:
        raise InputError(f"the label column {label + 1} numbers the rows (pandas' "
                         "row index, an Id column): the labels are another column", path=path)
    if label == w:
        raise InputError(f"column {w + 1}{f' ({fmt.names[w]!r})' if fmt.names else ''} is both the label column "
                         f"({how}) and the weight column "
                         "(--weight-column): the weights are another column", path=path)
    return TableFormat(fmt, label, how, skipped, words, w)


def _is_flag(field):
    """Whether a field is True or False in any case, as pandas writes booleans (get_dummies' columns)."""
    return field.strip().strip(b'"').lower() in (b"true", b"false")


@njit(cache=True, nogil=True)
def _parse_value(buf, pos, end, mode):
    """tux2.io._parse_float's (value, new_pos, err) of a feature's field, True and False
    (any case) 1 and 0."""
    v, p, err = io._parse_float(buf, pos, end, mode)
    if err == 3 and io._is_word(buf, pos, end, _TRUE, mode):
        return 1.0, pos + 4, 0
    if err == 3 and io._is_word(buf, pos, end, _FALSE, mode):
        return 0.0, pos + 5, 0
    return v, p, err


def _distinct_whole(values):
    """Whether ``values`` (a column's fields in the first lines, two or more) are distinct
    whole numbers."""
    values = [v.strip().strip(b'"') for v in values]
    return len(values) > 1 and len(set(values)) == len(values) and all(v.isdigit() for v in values)


def words_hint(head, path):
    """The message for a table whose columns of words are more than its labels (UCI's
    adult: workclass, education …), which the linear models cannot read, else None."""
    try:
        fmt = io.edge_format(head, path)
    except InputError:
        return None
    # (fields as the reader splits them: a quoted '"Braund, Mr. Owen Harris"' is one; an empty one no word)
    rows = [r for r in (fmt.fields(x) for x in head[fmt.start:].split(b"\n")[:20]) if r]
    if len(rows) < 1 or any(b":" in t for r in rows for t in r) or len(rows[0]) < 3:
        return None
    words = [j for j in range(len(rows[0]))
             if not all(j < len(r) and (io.is_number(r[j]) or not r[j].strip()) for r in rows)]
    if len(words) < 2:
        return None
    names = fmt.names if fmt.names and len(fmt.names) == len(rows[0]) else None
    shown = ", ".join(f"{j + 1} ({names[j]!r})" if names else f"{j + 1} {io._preview(rows[0][j].strip())}"
                      for j in words[:4]) + (", …" if len(words) > 4 else "")
    return (f"a table with {len(words)} columns of words ({shown}): the linear models read numbers, and the labels "
            "may be one column of words. One-hot encode the others first (pandas.get_dummies, scikit-learn's "
            "OneHotEncoder) and fit from Python, LogisticRegression().fit(X, y), or write the numbers as CSV")


def samples_table(head, path):
    """(EdgeFormat, ``words_hint``) of a wide table of samples with columns of words (Kaggle's
    Titanic: Name, Sex, Ticket …), which the edge reader would take by its first three columns:
    a header of 8 names or more (as looks_like_table), no user and item columns named, and two
    columns of words or more; else None."""
    hint = words_hint(head, path)
    if hint is None:
        return None
    fmt = io.edge_format(head, path)
    roles = {io.role(n) for n in fmt.names or ()}
    if not fmt.names or len(fmt.names) < 8 or {0, 1} <= roles:
        return None
    return fmt, hint


def refuse_samples_table(head, path, columns=None):
    """InputError when a file given as ratings (``columns`` None: its first three columns) is a
    ``samples_table``: MF trained on PassengerId, Survived and Pclass as users, items and ratings."""
    found = None if columns is not None else samples_table(head, path)
    if found is not None:
        fmt, hint = found
        cs, cd, cv = fmt.cols
        first = ",".join(fmt.names[c] for c in (cs, cd, 2 if cv == io.OPTIONAL else cv) if 0 <= c < len(fmt.names))
        raise InputError(f"a table of {len(fmt.names)} named columns, not a rating file ('user item rating' "
                         f"lines): to read three of its columns as user, item and rating, name them (--columns "
                         f"{first}). As samples, {hint}", path=path)


def looks_like_table(head, path):
    """Whether a file that would also read as an edge list is more likely a table of
    samples (``tux2 info``'s guess): 8 columns or more (Epinions' ratings have 6), a
    label column named (unless user and item columns are named too), or a
    number that is no id (0.25; '3.0' is pandas' way of writing 3) in its first two
    columns ('user item rating [time]' is not, nor 'user x' with string ids)."""
    try:
        fmt = table_format(head, path)
    except InputError:                  # no table of one name per column: what the edge reader makes of it
        return False
    if fmt is None:
        return False
    rows = [io.data_fields(x, fmt.mode) for x in head[fmt.start:].split(b"\n")[:20]]
    ids = not any(io.is_number(t) and not re.fullmatch(rb"[0-9]+(\.0*)?", t.strip(b'"')) for r in rows for t in r[:2])
    roles = {io.role(n) for n in fmt.names or ()}
    if ids and {0, 1} <= roles:                   # 'user_id,item_id,rating,timestamp,age': ratings
        return False
    return fmt.width >= 8 or "name" in fmt.how or not ids


@njit(cache=True, nogil=True)
def _parse_table(buf, start, width, label, mode, out_y, out_span, out_r, out_c, out_v, feature_of, strict, weight,
                 out_w):
    """Lines of ``width`` numbers from buf[start:]: the one in column ``label`` into
    out_y, the one in column ``weight`` (-1: none) into out_w, the others, when not 0,
    into (row, feature, value) triples (features are the columns but the label's and the
    weight's: ``feature_of``, -1 for a column skipped unread). The
    label's field may be a word: out_span[row] holds its (start, length) in buf either
    way. ``strict`` (a comma- or semicolon-separated table): only those end a field, so
    a label may hold spaces ('Iris setosa'), quoted also the separator ('"setosa, var"'),
    and '1 5' is no number (error 6). Returns
    (rows, nnz, err, err_line, err_pos, err_col, words): words 1 when a label is no number."""
    n = buf.shape[0]
    pos = start
    line = 0
    row = 0
    k = 0
    words = 0
    while pos < n:
        line += 1
        p = pos
        while p < n and io._is_sep(buf[p], mode) and buf[p] != 9 and buf[p] != 44 and buf[p] != 59:
            p += 1
        if p == n:
            break
        if buf[p] == 10 or buf[p] == 35 or buf[p] == 37:            # blank line, '#' or '%' comment
            while p < n and buf[p] != 10:
                p += 1
            pos = p + 1
            continue
        if io._is_sep(buf[p], mode):                                # a separator before the first field
            return row, k, 4, line, pos, 0, words
        t = 0
        while True:
            if t >= width:
                return row, k, 3, line, pos, t, words
            q = p
            f = feature_of[t]
            if f < 0 and t != label and t != weight:                # a column of row numbers: not read
                while p < n and not io._field_ends(buf[p], mode) and not (strict and buf[p] == 32):
                    p += 1
                v, err = 0.0, 0
            elif t == label or t == weight:
                v, p, err = io._parse_float(buf, p, n, mode)
            else:
                v, p, err = _parse_value(buf, p, n, mode)
            e = p
            if t == label:
                if err == 3:                                        # a word ('R', 'Iris-setosa')
                    p = q
                    if strict:                                      # to the comma: 'Iris setosa'
                        quoted = q > 0 and buf[q - 1] == 34         # or the closing quote: '"setosa, var"'
                        while p < n and buf[p] != 10 and (quoted or (buf[p] != 44 and buf[p] != 59)):
                            quoted = quoted and buf[p] != 34
                            p += 1
                    else:
                        while p < n and not io._field_ends(buf[p], mode) and not (mode != io.TAB and buf[p] == 34):
                            p += 1
                    e = p
                    while e > q and (buf[e - 1] == 32 or buf[e - 1] == 13 or buf[e - 1] == 34):
                        e -= 1                                      # a TAB field's trailing spaces, quotes
                    words = 1
                    err = 0
                out_y[row] = v
                out_span[row, 0] = q
                out_span[row, 1] = e - q
            if err:
                return row, k, 2 if err == 4 else 1, line, pos, t, words
            if t == weight:
                out_w[row] = v
            if f >= 0 and v != 0.0:
                out_r[k] = row
                out_c[k] = f
                out_v[k] = v
                k += 1
            t += 1
            hard = 0
            while p < n and io._is_sep(buf[p], mode):
                if buf[p] == 44 or buf[p] == 59 or buf[p] == 9:
                    hard += 1
                p += 1
            if p == n or buf[p] == 10:
                if hard > 0 and t < width:                          # '…,21.0,': the last field is empty
                    return row, k, 4, line, pos, t, words
                break
            if hard > 1:
                return row, k, 4, line, pos, t, words
            if hard == 0 and (mode == io.TAB or strict):
                return row, k, 6 if strict else 1, line, pos, t - 1, words
        if t != width:
            return row, k, 3, line, pos, t, words
        row += 1
        pos = p + 1
    return row, k, 0, line, pos, 0, words


@njit(cache=True, nogil=True, parallel=True)
def _parse_chunks(buf, bounds, width, label, mode, y, span, r, c, v, rows_at, at, res, feature_of, strict, weight,
                  w):
    """_parse_table on each chunk buf[bounds[i]:bounds[i + 1]] (split at line starts) in
    parallel: chunk i's rows from y[rows_at[i]] (and w[rows_at[i]]), its triples from at[i] (rows
    numbered within the chunk, spans from its start); res[i]: rows, nnz, err, line, pos, words."""
    for i in prange(len(bounds) - 1):
        n, k, err, line, pos, _, words = _parse_table(buf[bounds[i]:bounds[i + 1]], 0, width, label, mode,
                                                      y[rows_at[i]:], span[rows_at[i]:], r[at[i]:], c[at[i]:],
                                                      v[at[i]:], feature_of, strict, weight, w[rows_at[i]:])
        res[i, 0], res[i, 1], res[i, 2], res[i, 3], res[i, 4], res[i, 5] = n, k, err, line, pos, words


@njit(cache=True, nogil=True)
def _compact(y, span, r, c, v, bounds, rows_at, at, res, w):
    """Move each chunk's rows (labels, spans, weights when ``w`` has room) and triples to
    follow the previous chunks' (in place, leftwards), numbering the rows across chunks and
    the spans from the buffer's start. Returns (rows, nnz)."""
    n = 0
    k = 0
    for i in range(res.shape[0]):
        for j in range(res[i, 0]):
            y[n + j] = y[rows_at[i] + j]
            if w.shape[0] > 0:
                w[n + j] = w[rows_at[i] + j]
            span[n + j, 0] = span[rows_at[i] + j, 0] + bounds[i]
            span[n + j, 1] = span[rows_at[i] + j, 1]
        for j in range(at[i], at[i] + res[i, 1]):
            r[k] = r[j] + n
            c[k] = c[j]
            v[k] = v[j]
            k += 1
        n += res[i, 0]
    return n, k


def _words(raw, span, block=1 << 20):
    """The labels at ``span`` (start, length) rows of raw, as strings (array ops, a block
    of rows at a time)."""
    width = max(int(span[:, 1].max()), 1)
    if width > 256:                           # a long label: one at a time, not rows × its length
        return np.array([bytes(raw[a:a + n]).decode("utf-8", "replace") for a, n in span.tolist()])
    buf = np.frombuffer(raw, np.uint8)
    cols = np.arange(width)
    out = np.empty(len(span), f"S{width}")
    for lo in range(0, len(span), block):
        s = span[lo:lo + block]
        b = np.where(cols < s[:, 1:2], buf[np.minimum(s[:, :1] + cols, len(buf) - 1)], 0).astype(np.uint8)
        out[lo:lo + block] = b.view(f"S{width}").ravel()
    return np.char.decode(out, "utf-8", "replace")


def _row_start(raw, fmt, span, i):
    """The offset in ``raw`` of data row ``i``'s line: its label's line (``span``), or without
    labels the line found by counting the data lines as the parser does (blank and comment
    lines not; for a message only)."""
    if fmt.label >= 0:
        return raw.rfind(b"\n", 0, int(span[i, 0])) + 1
    pos, row = fmt.start, -1
    while True:
        head = raw[pos:pos + 64].lstrip(b" \t\r")
        if head[:1] not in (b"\n", b"#", b"%", b""):
            row += 1
            if row == i:
                return pos
        pos = raw.find(b"\n", pos) + 1


def read_table(path, fmt, n_features=None, type_names=("sample", "feature")):
    """(BipartiteGraph sample → feature, labels or None) of the table at ``path`` laid
    out as ``fmt`` (a TableFormat); features 0 … its features − 1; errors name the line
    and column. The graph's ``sample_weights``: the weight column's values (``fmt.weight``;
    None without one), none NaN, infinite or negative. Large tables are parsed in chunks on
    every core, with the result and any error of one serial pass."""
    raw = io.map_file(path, "table")
    io.refuse_decimal_commas(raw, fmt, path)             # '1;2,5;3': 2,5 would read as two fields
    quoted = _QUOTED_COMMA.search(raw, fmt.start) if fmt.sep == "comma" else None
    if quoted:                                           # '1,"0,39",2' (a spreadsheet's decimal comma)
        line = raw.count(b"\n", 0, quoted.start()) + 1
        raise InputError(f"a decimal comma in a quoted field ({quoted.group().decode('utf-8', 'replace')}): commas "
                         "separate this table's fields, so it would read as two numbers; write decimal points",
                         path=path, line=line, text=io._line_text(raw, raw.rfind(b"\n", 0, quoted.start()) + 1))
    buf = np.frombuffer(raw, np.uint8)
    bounds = io.chunk_bounds(raw, fmt.start)
    rows_at = np.zeros(len(bounds), np.int64)
    np.cumsum(io._count_newlines(buf, bounds), out=rows_at[1:])
    rows_at[-1] += 1                                  # the last line may have no newline
    at = rows_at * fmt.features
    idx = np.int32 if at[-1] < 2 ** 31 else np.int64
    y, span = np.empty(rows_at[-1], np.float64), np.empty((rows_at[-1], 2), np.int64)
    r, c, v = np.empty(at[-1], idx), np.empty(at[-1], np.int32), np.empty(at[-1], np.float64)
    res = np.zeros((len(bounds) - 1, 6), np.int64)
    feature_of = fmt.feature_of()
    strict = fmt.sep in ("comma", "semicolon")
    w = np.empty(rows_at[-1] if fmt.weight >= 0 else 0, np.float64)
    _parse_chunks(buf, bounds, fmt.width, fmt.label, fmt.mode, y, span, r, c, v, rows_at, at, res, feature_of, strict,
                  fmt.weight, w)
    if res[:, 2].any():                               # the first error in file order, as one pass finds it
        _, _, err, line, pos, col, _ = _parse_table(buf, fmt.start, fmt.width, fmt.label, fmt.mode, y, span, r, c, v,
                                                    feature_of, strict, fmt.weight, w)
        text = io._line_text(raw, pos)
        end = raw.find(b"\n", pos)
        fields = _fields(bytes(raw[pos:end if end >= 0 else len(raw)]), fmt, leading=True)
        field = fields[col] if err == 1 and col < len(fields) else None
        err = 5 if err == 1 and col in fmt.words else 7 if field is not None and \
            field.strip().lower().decode("utf-8", "replace") in _MISSING else err
        what = (_LABEL_MESSAGES if col == fmt.label else _WEIGHT_MESSAGES if col == fmt.weight else _MESSAGES).get(
            err, _MESSAGES[err]).format(
            col=fmt.column(col), got=len(fields), width=fmt.width, field=io._preview(field or b""))
        raise InputError(what, path=path, line=fmt.skip + line, text=text)
    rows, k = _compact(y, span, r, c, v, bounds, rows_at, at, res, w)
    if rows == 0:
        raise InputError("no samples found (the table has no data lines)", path=path)
    weights = None
    if fmt.weight >= 0:
        weights = w[:rows].copy()
        bad = np.flatnonzero(weights < 0)
        if len(bad):                                    # (NaN and infinite ones: the parser's errors above)
            start = _row_start(raw, fmt, span, int(bad[0]))
            raise InputError(f"negative weight {weights[bad[0]]:g} in column {fmt.column(fmt.weight)}: weights are "
                             "finite numbers >= 0", path=path, line=int(np.count_nonzero(buf[:start] == 10)) + 1,
                             text=io._line_text(raw, start))
    if n_features is not None and fmt.features > n_features:
        raise InputError(f"{fmt.features} feature columns, beyond the {n_features} features of the model", path=path)
    keep = (lambda a: a[:k]) if 2 * k >= len(v) else (lambda a: a[:k].copy())     # a sparse table: no slack kept
    g = BipartiteGraph(keep(r), keep(c), keep(v), rows, n_features or fmt.features, type_names, path)
    g.layout, g.sample_weights = fmt, weights
    if fmt.label < 0:
        return g, None
    if not res[:, 5].any():
        return g, y[:rows]
    labels = _words(raw, span[:rows])                   # 'R'/'M', 'Iris-setosa': strings
    missing = np.flatnonzero(np.isin(labels, _MISSING_LABELS))
    if len(missing):                                    # a class '?' would be learnt, and predicted
        at = int(span[missing[0], 0])
        start = raw.rfind(b"\n", 0, at) + 1
        raise InputError(_LABEL_MESSAGES[7].format(field=io._preview(str(labels[missing[0]])),
                                                   col=fmt.column(fmt.label)),
                         path=path, line=int(np.count_nonzero(buf[:start] == 10)) + 1, text=io._line_text(raw, start))
    return g, labels
