"""Every way data gets into tux2, shared by the command line and the Python API.

Files (the fast numba parsers live in ``tux2.io``):

* edge lists ``src dst [value]`` (space, tab or comma; ``#``/``%`` comments; a
  MatrixMarket header; 0- or 1-based): :func:`load_edges`;
* libsvm: :func:`load_libsvm` (:func:`load_samples` takes a matrix of samples too;
  :func:`require_features` rejects a training set without a single feature;
  :func:`dense_features` numbers sparse indices densely, :func:`frequent_features` drops
  the rare ones);
  UCI docword, ``doc word count`` triples and plain text, one document per line:
  :func:`load_corpus`.

Python objects: :func:`from_arrays`, :func:`from_scipy`, :func:`from_pandas`,
:func:`from_networkx`; :func:`load` picks one by the argument's type.

Ids. Numeric ids are used as they are (``ids="int"``). Any other token is an id
too (``ids="string"``): each side's distinct tokens get dense ids in order of
first appearance, and the graph carries the maps (``graph.ids``), which models
save and ``predict`` uses, so outputs are in the user's ids. ``ids="auto"`` (the
default) takes string ids when the first data line's ids are not numbers; later
non-numeric ids in a numeric file are an error, never a silent switch.

Duplicate edges (the same pair twice): ``duplicates="error"`` names both lines;
``"sum"`` adds their values (counts without a value column); ``"last"`` keeps the
last one; ``"keep"`` keeps them all as separate edges (LibMF's behaviour).

Every problem raises :class:`tux2.InputError` naming the file and line (or the
array and index) and quoting the offending text.
"""
import contextlib
import math
import numbers
import os
import re

import numpy as np
from numba import njit

from tux2 import io, tables
from tux2.compile import group_by_part
from tux2.errors import InputError
from tux2.graph import BipartiteGraph

DUPLICATES = ("error", "sum", "last", "keep")
NO_RATINGS = ("MF needs a rating column: expected 'user item rating'; a line per play or click is implicit feedback: "
              "--implicit (implicit=True) takes each line as one event (ALS), and --duplicates sum (duplicates='sum') "
              "adds up a pair's repeated lines")
FLOAT32_MAX = float(np.finfo(np.float32).max)
ID_MODES = ("auto", "int", "string")


class IdMap:
    """Dense ids 0 … n−1 ↔ the user's ids ``tokens[i]`` (strings or integers)."""

    def __init__(self, tokens):
        self.tokens = np.asarray(tokens)
        if self.tokens.dtype == object:
            self.tokens = self.tokens.astype(str)
        self._index = None
        self._sorted = None

    def __len__(self):
        return len(self.tokens)

    def __array__(self, dtype=None, copy=None):
        """The ids themselves: ``np.asarray(model.ids_[0])``, ``pd.Index(model.ids_[0])``."""
        return self.tokens if dtype is None else self.tokens.astype(dtype)

    def __iter__(self):
        return iter(self.tokens.tolist())

    def __eq__(self, other):
        return isinstance(other, IdMap) and np.array_equal(self.tokens, other.tokens)

    def __repr__(self):
        return f"IdMap({len(self)} ids, {self.tokens[:3].tolist()}…)"

    @property
    def index(self):
        if self._index is None:
            self._index = {t: i for i, t in enumerate(self.tokens.tolist())}
        return self._index

    def encode(self, tokens, what="id", where=None):
        """Dense ids of the user's ids; an unknown one raises InputError (``where(i)``:
        (path, line, text) of the i-th token, for the message)."""
        arr = np.asarray(tokens)
        if arr.dtype.kind in "iu" and self.tokens.dtype.kind in "iu":        # vectorised
            out = self.lookup(arr)
            bad = np.flatnonzero(out < 0)
            if len(bad):
                path, line, text = where(int(bad[0])) if where else (None, None, None)
                raise InputError(f"unknown {what} {arr[bad[0]].item()!r} (not in the model's {len(self)} ids)",
                                 path=path, line=line, text=text)
            return out
        index = self.index
        out = np.empty(len(tokens), np.int64)
        for i, t in enumerate(tokens.tolist() if isinstance(tokens, np.ndarray) else tokens):
            j = index.get(t)
            if j is None:
                path, line, text = where(i) if where else (None, None, None)
                raise InputError(f"unknown {what} {t!r} (not in the model's {len(self)} ids)", path=path,
                                 line=line, text=text)
            out[i] = j
        return out

    def lookup(self, values):
        """Dense ids of integer ids (an int array), -1 where the map has none: vectorised,
        for maps of integer ids (a 1-based file's 1 … n, a model's)."""
        values, t = np.asarray(values), self.tokens
        if values.dtype.kind not in "iu":
            values = values.astype(np.int64)
        if t.dtype.kind not in "iu":
            return np.full(len(values), -1, np.int64)
        if values.dtype != t.dtype:             # uint64 ids (64-bit hashes) and int64 ones: cast only those that fit
            info = np.iinfo(t.dtype)
            fits = (values >= info.min) & (values <= info.max)
            values = np.where(fits, values, 0).astype(t.dtype)
            return np.where(fits, self.lookup(values), -1)
        if self._sorted is None:
            self._sorted = np.argsort(t, kind="stable")
        order = self._sorted
        st = t[order]
        if not len(st):
            return np.full(len(values), -1, np.int64)
        pos = np.minimum(np.searchsorted(st, values), len(st) - 1)
        return np.where(st[pos] == values, order[pos], -1).astype(np.int64)

    def decode(self, ids):
        return self.tokens[np.asarray(ids)]


def save_ids(id_map, n):
    """The ``ids`` array a model file stores: the user's ids, or 0 … n−1."""
    return np.arange(n) if id_map is None else id_map.tokens


def loaded_ids(arr):
    """IdMap from a model file's ``ids`` array, or None when they are 0 … n−1."""
    if arr.dtype.kind in "iu" and np.array_equal(arr, np.arange(len(arr))):
        return None
    return IdMap(arr)


# --------------------------------------------------------------------------- edge lists
UNKNOWN = ("error", "skip", "baseline")


def offset_ids(n, base):
    """The IdMap of ids ``base`` … ``base`` + n − 1 (a 1-based file), or None for base 0."""
    return IdMap(np.arange(base, base + n, dtype=np.int64)) if base else None


def numbered(a, base, present=None):
    """The IdMap of one side's ids ``a`` (0-based; ``present``: which of 0 … max occur in
    the whole file, default ``a``'s). When they fill less than half of that range
    (MovieLens' movieIds up to 200k for 9k rated movies, Netflix's user ids up to 2.6M),
    ``a`` is renumbered in place to dense ids in the ids' order and the map holds the
    file's ids, so a model has a row per id that occurs, not per number below the
    largest; else the map of a base-``base`` file's ids as they are (None for base 0)."""
    if present is None:
        top = int(a.max()) + 1 if len(a) else 0
        if top > io.id_space(len(a)):            # too far apart to count in an array: sorted
            m = opaque(a)
            return IdMap(m.tokens + base)
        present = np.bincount(a, minlength=top) > 0
    if 2 * int(np.count_nonzero(present)) >= len(present):
        return offset_ids(len(present), base)
    a[:] = (np.cumsum(present) - 1)[a]
    return IdMap(np.flatnonzero(present) + base)


def opaque(a):
    """The IdMap of integer ids ``a`` taken as names (negative ones too: Python's
    hash()), ``a`` renumbered in place to dense ids in their order."""
    kept, a[:] = np.unique(a, return_inverse=True)
    return IdMap(kept)


def renumbered(m):
    """'N distinct of A … B' when the IdMap ``m`` holds integer ids that ``numbered``
    renumbered (fewer than the span from the first to the last), else None."""
    t = m.tokens if m is not None else None
    if t is None or t.dtype.kind not in "iu" or not len(t) or t[-1] - t[0] + 1 <= len(t):
        return None
    return f"{len(t)} distinct of {t[0]} … {t[-1]}"


def load_edges(path, ids="auto", duplicates="error", base="auto", type_names=("src", "dst"), id_maps=None,
               values=None, columns=None, known=None, unknown="error", dense=False, ratings=False):
    """An edge-list file (``-``: standard input; gzip, bz2 or xz data is decompressed)
    as a BipartiteGraph.

    ``columns``: the columns holding src, dst[, value] (``"1,2,3"``, header names
    ``"user,item,rating"``, or a sequence; default: the first two, and the third when
    the lines have one; further columns are ignored). ``base``: "auto" (1 under a
    MatrixMarket header or when no id 0 occurs on either side, else 0), 0 or 1 (None:
    the header's, without id maps). Ids are 0-based dense numbers inside; a base of 1
    gives the graph id maps 1 … n, so models and predictions speak the file's ids.
    ``dense``: numeric ids that fill less than half of their range are numbered densely
    (tux2.loaders.numbered; not for word ids a vocabulary file names by line).
    ``graph.layout`` is the file's EdgeFormat, ``graph.base`` the base used.

    ``id_maps``: (IdMap or None, IdMap or None) of a model or training set: ids are
    read in them (a test file, an input to predict); ``known``: per side, which dense
    ids have training edges (None: all of the map's). An id outside them is
    ``unknown``: "error" names its line, "skip" drops the edge (counted in
    ``graph.skipped``), "baseline" keeps it with ``graph.unknown`` = (src mask, dst
    mask) marking the unknown sides (their dense id reads 0), for a prediction from
    the known side alone.
    ``values``: True requires a value column, False forbids one, None takes either;
    "counts" requires positive integer counts of at most 2^24 (checked as written).
    ``ratings``: the file is read as ratings, and a wide table of samples is refused
    (tux2.tables.refuse_samples_table) unless ``columns`` names the three.
    """
    check_choice("ids", ids, ID_MODES)
    check_choice("duplicates", duplicates, DUPLICATES)
    check_choice("unknown", unknown, UNKNOWN)
    given = os.fspath(path)
    path = io.local_copy(given)
    if ratings:
        tables.refuse_samples_table(io.read_head(path, "input"), given, columns)
    try:
        return _load_edges(path, ids, duplicates, base, type_names, id_maps, values, columns, known, unknown, dense)
    except InputError as e:
        other = io.other_format(path, columns)     # another format (text, libsvm …): no quoting advice
        note = other or io.quoted_separator(e.text)      # (said once: tux2.io.edge_format's own errors have it)
        e.args = (f"{e}{note if note not in str(e) else ''}",)
        raise io.as_given(e, path, given) from None


def _load_edges(path, ids, duplicates, base, type_names, id_maps, values, columns, known, unknown, dense):
    raw = io.map_file(path, "edge list")
    fmt = io.edge_format(raw[:1 << 16], path, columns, quotes=True)
    encode = id_maps is not None
    maps = tuple(id_maps) if encode else (None, None)
    string_maps = any(m is not None and m.tokens.dtype.kind not in "iu" for m in maps)
    if string_maps and fmt.names and not fmt.explicit and _known_pair(fmt, maps, raw):
        fmt = io.edge_format(raw[:1 << 16], path, columns, quotes=True, header=False)   # 'alice item3': data
    skip = fmt.skip
    whole = None        # ids written as whole-number floats ('1.0', as pandas writes them): read as integers
    if ids != "string" and not string_maps and _first_ids_whole(raw, fmt):
        whole = _whole_number_ids(raw, fmt, path, type_names)
        ids = "int" if whole is not None else ids
    if ids == "auto" or encode:
        ids = "string" if string_maps or (not encode and not _first_ids_numeric(raw, fmt)) else "int"
    used_base = 0
    if ids == "int":
        try:
            s, d, v, ncols = whole + (2 + (whole[2] is not None),) if whole is not None else \
                io._parse_from(raw, fmt, path, values=np.float64 if values == "counts" else np.float32)
        except InputError as e:     # a model's ids: its kind is fixed, none to choose (io's message offers --ids)
            code = next((c for c in (1, 2) if str(e).startswith(f"{e.path}:{e.line}: {io._MESSAGES[c]}")), None)
            if not encode or code is None:
                raise
            raise InputError(("malformed", "negative")[code - 1] + " vertex id (the model was trained on integer ids)",
                             e.path, e.line, e.text) from None
        if len(s) == 0:
            raise io.no_edges(fmt, path)
        io.check_matrix_market(fmt, path, len(s), int(s.max()), int(d.max()))
        v = v if ncols == 3 else None
        if encode:
            written = (s, d)
            s, d = (_encode_ints(a, m, k) for a, m, k in zip((s, d), maps, known or (None, None)))
        else:
            used_base = io.resolve_base(base, fmt, s, d, path)
            io._rebase(s, d, used_base, path)
            if dense and base is not None:
                maps = (numbered(s, used_base), numbered(d, used_base))
            else:
                _check_dense(path, skip, (s, d), len(s))
                if base is not None:
                    maps = (offset_ids(int(s.max()) + 1, used_base), offset_ids(int(d.max()) + 1, used_base))
    else:
        s, d, v, maps, missing = _string_edges(raw, fmt, path, type_names, maps)
    n = [len(m) if m is not None else len(k) if k is not None else None
         for m, k in zip(maps, known or (None, None))]
    unk = None
    if encode:
        encoded = (s, d)
        s, d, v, unk, skipped, skipped_sides = _unknown(s, d, v, known, unknown, type_names,
                                                        lambda i: (path, *io.edge_line(path, i, skip)), fmt)
        unknown_ids = None
        if unk is not None:                      # the ids as written, for outputs
            unknown_ids = []
            for side in (0, 1):
                if ids == "int":
                    unknown_ids.append(written[side][unk[side]])
                    continue
                enc = encoded[side][unk[side]]
                out = np.empty(len(enc), object)
                miss = enc < 0
                out[miss] = missing[side]
                out[~miss] = maps[side].decode(enc[~miss]) if maps[side] is not None else enc[~miss]
                unknown_ids.append(out)
        n = [max(x if x is not None else 0, int(a.max()) + 1 if len(a) else 0, 1) for x, a in zip(n, (s, d))]
    if values == "counts":
        io.check_counts(v, path, skip)           # exact, before any sum, so an error names its line
    if values is True and v is None:
        raise InputError("expected a value column: 'src dst value'", path=path)
    if values is False and v is not None:
        raise InputError("expected two columns 'src dst' (no value)", path=path)
    if v is not None and len(v):
        i = int(np.argmax(np.abs(v)))
        if abs(v[i]) > FLOAT32_MAX:                     # the programs keep edge values as float32
            line, text = io.edge_line(path, i, skip)
            raise InputError(f"value {v[i]:g} is beyond the float32 range (±{FLOAT32_MAX:.4g}) the "
                             "edge values of edge lists are stored in", path=path, line=line, text=text)
    s, d, v = narrow(s, d, v)
    g = BipartiteGraph(s, d, v, n[0], n[1], type_names, path, ids=maps)
    g.layout, g.base, g.whole_float_ids = fmt, used_base, whole is not None
    if encode:
        g.unknown, g.skipped, g.unknown_ids = unk, skipped, unknown_ids
        g.skipped_sides = skipped_sides     # (--unknown skip: whether every skipped line's user, item was new)
    if encode:
        return g
    out = dedupe(g, duplicates, lambda i: (path, *io.edge_line(path, i, skip)))
    out.layout, out.base, out.whole_float_ids = fmt, used_base, g.whole_float_ids
    return out


_WHOLE = re.compile(rb"[0-9]{1,18}\.0*")


def _first_ids_whole(raw, fmt):
    """Whether the first data line's ids are whole numbers, one at least written as a float
    ('1.0'; pandas writes an integer column so once it held a NaN)."""
    ids = [io.csv_unquote(t) for t in _first_ids(raw, fmt) or ()]
    return len(ids) == 2 and all(t.isdigit() or _WHOLE.fullmatch(t) for t in ids) and not all(t.isdigit() for t in ids)


def _whole_number_ids(raw, fmt, path, type_names):
    """(src, dst, values or None) of a file whose ids are all whole numbers, some written as
    floats ('1.0'), as integers; None when one is not (a string id: the file is read so)."""
    s, d, v, maps, _ = _string_edges(raw, fmt, path, type_names, (None, None))
    out = []
    for a, m in zip((s, d), maps):
        toks = [t.encode() for t in m.tokens.tolist()]
        if not all(len(t) < 19 and t.isdigit() or _WHOLE.fullmatch(t) for t in toks):
            return None
        out.append(np.array([int(t.split(b".")[0]) for t in toks], np.int64)[a])
    return out[0], out[1], v


def narrow(src, dst, values):
    """The arrays a file's edges are kept in: int32 ids when both sides' fit (4 bytes
    per end instead of 8), float32 values (what the programs compute with): 12 bytes
    per edge with values instead of 24."""
    if len(src) and max(int(src.max()), int(dst.max())) <= np.iinfo(np.int32).max:
        src, dst = src.astype(np.int32, copy=False), dst.astype(np.int32, copy=False)
    return src, dst, None if values is None else values.astype(np.float32, copy=False)


def _encode_ints(a, m, known):
    """Dense ids of integer ids read from a file: through the IdMap ``m`` (-1 where it
    has no such id), or as they are (-1 beyond ``known``'s length)."""
    if m is not None:
        return m.lookup(a)
    if known is not None:
        a = a.copy()
        a[a >= len(known)] = -1
    return a


def _unknown(s, d, v, known, policy, type_names, where, fmt=None):
    """Ids read in a model's ids: -1 (not in its maps) or without training edges
    (``known``) are unknown; ``policy`` error/skip/baseline (see load_edges).
    Returns (src, dst, values, (src mask, dst mask) or None, edges skipped, and for those
    skipped per side whether each had that side's id unknown, else None)."""
    masks = []
    for a, k in zip((s, d), known or (None, None)):
        bad = a < 0
        if k is not None:
            ok = ~bad
            bad[ok] = ~np.asarray(k, bool)[a[ok]]
        masks.append(bad)
    either = masks[0] | masks[1]
    if not either.any():
        return s, d, v, None, 0, None
    if policy == "error":
        i = int(np.flatnonzero(either)[0])
        path, line, text = where(i)
        side = 0 if masks[0][i] else 1
        toks = fmt.fields(text.encode("utf-8", "replace")) if fmt is not None and text else []
        tok = toks[fmt.cols[side]].decode("utf-8", "replace") if toks and len(toks) > fmt.cols[side] else \
            int((s, d)[side][i])
        raise InputError(f"unknown {type_names[side]} id {tok!r} (not in the training data); --unknown skip "
                         "(unknown='skip') drops such lines, baseline scores them as a new user or item (MF: the mean "
                         "plus the known side's bias; implicit feedback: 0)",
                         path=path, line=line, text=text)
    if policy == "skip":
        keep = ~either
        return s[keep], d[keep], (v[keep] if v is not None else None), None, int(either.sum()), \
            tuple(bool(m[either].all()) for m in masks)
    s, d = np.where(masks[0], 0, s), np.where(masks[1], 0, d)
    return s, d, v, (masks[0], masks[1]), 0, None


def edge_ids(graph, side):
    """The user's ids of every edge's ``side`` (0: src, 1: dst), unknown ones (kept
    with unknown="baseline") as the file wrote them."""
    m = graph.ids[side]
    a = (graph.src, graph.dst)[side]
    out = m.decode(a) if m is not None else a
    if graph.unknown is not None and graph.unknown[side].any():
        out = out.astype(object)
        out[graph.unknown[side]] = graph.unknown_ids[side]
    return out


def degrees(graph):
    """Per side (src, dst): the number of edges of each dense id of ``graph``."""
    return tuple(np.bincount(a, minlength=n) for a, n in ((graph.src, graph.n_src), (graph.dst, graph.n_dst)))


def known_ids(graph):
    """Per side (src, dst): which dense ids of ``graph`` have edges (an MF model never
    counts, scores or recommends the others)."""
    return tuple(d > 0 for d in degrees(graph))


def dense_ids(m, x, n):
    """Dense ids of the user's ids ``x`` (numbers, or strings as a file has them) in the
    IdMap ``m`` (None: dense ids 0 … n−1 are the user's); -1 where there is none."""
    x = np.atleast_1d(np.asarray(x))
    if x.dtype.kind == "U" and len(x) > 1:      # each distinct text once (a request log repeats its users)
        distinct, back = np.unique(x, return_inverse=True)
        return _dense_ids(m, distinct, n)[back.reshape(-1)]
    return _dense_ids(m, x, n)


def _dense_ids(m, x, n):
    if m is not None and m.tokens.dtype.kind not in "iu":            # string ids
        index = m.index
        return np.array([index.get(str(t), -1) for t in x.tolist()], np.int64)
    if x.dtype.kind in "iu":
        ints = x if m is not None else x.astype(np.int64)     # uint64 ids stay whole for a map of them
    else:                                   # strings, floats, objects: integers where they are ones
        ints = np.array([_integer(t) for t in x.tolist()], np.int64)
    if m is not None:
        return m.lookup(ints)
    return np.where((ints >= 0) & (ints < n), ints, -1)


def given_ids(m, x, what):
    """``x``, one id or a 1-D sequence of ids passed from Python for the IdMap ``m`` (None:
    dense integers), as a 1-D array; a ValueError naming ``what`` and the first id that
    cannot be one of ``m``'s: None, a bool, NaN or a fraction, text that is not an
    integer for integer ids, a number that is not among string ids."""
    if x is None or isinstance(x, (dict, set)):
        raise ValueError(f"{what} must be an id or a 1-D sequence of ids, got "
                         f"{type(x).__name__ if x is not None else None}")
    try:
        a = np.asarray(x)
        if a.dtype.kind == "U" and isinstance(x, (list, tuple)) and not all(isinstance(t, str) for t in x):
            a = np.asarray(x, dtype=object)     # [1.0, "3"]: each id as given, not numpy's text of it
    except ValueError:                          # ragged nested sequences
        raise ValueError(f"{what} must be an id or a 1-D sequence of ids, not nested sequences") from None
    if a.ndim > 1:
        raise ValueError(f"{what} must be an id or a 1-D sequence of ids, got an array of shape {a.shape}")
    a, strings = np.atleast_1d(a), m is not None and m.tokens.dtype.kind not in "iu"
    if a.size == 0:                             # [] is float64 to numpy: no id, of the ids' own type
        return np.empty(0, m.tokens.dtype if m is not None else np.int64)
    if a.dtype.kind == ("U" if strings else "iu"[a.dtype.kind == "u"]) or (
            a.dtype.kind == "f" and not strings and np.all(np.isfinite(a) & (a == np.round(a)))):
        return a
    kind = f"strings (such as {str(m.tokens[0])!r})" if strings and len(m) else "integers"

    def bad(t):
        number = isinstance(t, numbers.Real) and not isinstance(t, (bool, np.bool_))
        if strings:
            return not (isinstance(t, str) or (number and isinstance(t, numbers.Integral) and str(int(t)) in m.index))
        return not ((number and float(t).is_integer()) or (isinstance(t, str) and io.is_whole(t, signed=True)))
    if a.dtype.kind == "U":                     # text: each distinct id checked once
        wrong = [t for t in np.unique(a).tolist() if bad(t)]
        j = int(np.flatnonzero(np.isin(a, wrong))[0]) if wrong else None
    else:
        j = next((j for j, t in enumerate(a.tolist()) if bad(t)), None)
    if j is not None:
        raise ValueError(f"{what}: {a[j: j + 1].tolist()[0]!r} (position {j}) is not an id of this model, whose ids are {kind}")
    return a


def _integer(t):
    if isinstance(t, (bool, np.bool_)):
        return -1
    if isinstance(t, (float, np.floating)):
        t = int(t) if float(t).is_integer() else -1
    if isinstance(t, (int, np.integer)):
        return int(t) if -(1 << 63) <= int(t) < 1 << 63 else -1         # none of the model's beyond int64
    t = str(t).strip()
    return int(t) if io.is_whole(t, signed=True) and abs(int(t)) < 1 << 62 else -1


def mark_unknown(graph, known, policy="baseline"):
    """``graph`` (edges in a training set's dense ids, e.g. a held-out share) with the
    ids that ``known`` (per side: has training edges) says are not handled by
    ``policy`` as load_edges does: marked in ``graph.unknown`` (baseline), dropped
    (skip) or an error."""
    written = [m.decode(a) if m is not None else a for m, a in zip(graph.ids, (graph.src, graph.dst))]
    return in_known_ids(graph.src, graph.dst, graph.values, known, policy, graph.type_names, graph.source,
                        graph.ids, written)


def in_known_ids(src, dst, values, known, policy="baseline", type_names=("src", "dst"), source="arrays", ids=None,
                 written=None):
    """Edges in a training set's dense ids as a graph over its vertices (``known``: per
    side, which dense ids have training edges): an id that is -1 (not in its id maps),
    beyond ``known`` or without training edges is unknown, handled by ``policy`` as
    load_edges does (``written``: per side the ids as the caller gave them, for the
    error)."""
    check_choice("unknown", policy, UNKNOWN)
    s, d = (np.array(a, np.int64) for a in (src, dst))
    for a, k in zip((s, d), known):
        a[a >= len(k)] = -1
    s, d, v, unk, skipped, _ = _unknown(s, d, values, known, "baseline" if policy == "error" else policy,
                                        type_names, None)
    if policy == "error" and unk is not None:
        i = int(np.flatnonzero(unk[0] | unk[1])[0])
        side = 0 if unk[0][i] else 1
        tok = np.asarray(written[side] if written is not None else (src, dst)[side])[i]
        tok = tok.item() if isinstance(tok, np.generic) else tok
        raise InputError(f"unknown {type_names[side]} id {tok!r} (edge {i}; not in the training data); "
                         "unknown='skip' drops such edges, 'baseline' predicts them from the known side",
                         path=source)
    g = BipartiteGraph(s, d, v, len(known[0]), len(known[1]), type_names, source, ids)
    g.unknown, g.skipped = unk, skipped
    if unk is not None:     # the unknown ids as given, as load_edges keeps them: a ranking counts each new user once
        g.unknown_ids = [np.asarray(w)[m] for w, m in zip(written if written is not None else (src, dst), unk)]
    return g


def layout_phrases(graph):
    """How the lines of ``graph``'s file were laid out, when not plain 'src dst [value]'
    (phrases for a run's or ``tux2 info``'s "read as")."""
    parts = []
    if io.input_kind(graph.source) == "netflix":
        parts.append("the Netflix prize's per-movie format ('MOVIE:' lines above their ratings; read as "
                     "user,MOVIE,rating,date lines)")
    if graph.layout is not None and graph.layout.notable():
        parts.append(graph.layout.describe())
    return parts


_ASIN = re.compile(r"B[0-9A-Z]{9}|[0-9]{9}[0-9X]")       # Amazon's product ids (ASINs; ISBN-10s for books)
_REVIEWER = re.compile(r"A[0-9A-Z]{9,21}")                # Amazon's reviewer ids ('A2SUAM1J3GNN3B')


def amazon_order(graph):
    """A phrase when the first type's ids look like Amazon's product ids (ASINs) and the
    second's like its reviewer ids, as in Amazon's ratings-only files, laid out
    item,user,rating,timestamp (the users then are the products); else None."""
    ids = getattr(graph, "ids", None)
    if not ids or len(ids) != 2 or any(m is None or m.tokens.dtype.kind != "U" for m in ids):
        return None
    looks = [np.mean([bool(rx.fullmatch(t)) for t in m.tokens[:200].tolist()]) for rx, m in zip((_ASIN, _REVIEWER), ids)]
    if min(looks) < 0.9:
        return None
    a, b = graph.type_names
    return (f"{a} ids look like Amazon's product ids (ASINs) and {b} ids like its reviewer ids, as Amazon's "
            "ratings-only files lay them out (item,user,rating,timestamp): --columns 2,1,3 reads the reviewers "
            "as the users")


def describe_read(graph, base="auto"):
    """How an edge list was read (its layout when not plain 'src dst [value]', a 1-based
    id base and why), for a run's header; None for a plain 0-based file. ``base``: the
    option it was read with."""
    parts = layout_phrases(graph)
    layout = graph.layout
    if graph.base:
        how = "MatrixMarket" if layout is not None and layout.matrix_market else \
            "auto: no id 0 on either side; --base 0 reads them as 0-based" if base == "auto" else "--base 1"
        parts.append(f"ids 1-based ({how})")
    if getattr(graph, "whole_float_ids", False):
        parts.append("ids written as whole-number floats (1.0) read as integers")
    for name, m in zip(graph.type_names, graph.ids):
        if renumbered(m):
            parts.append(f"{name} ids numbered densely ({renumbered(m)})")
        elif m is not None and m.tokens.dtype.kind not in "iu":
            parts.append(f"{name} ids read as strings ({len(m)} distinct)")
    if amazon_order(graph):
        parts.append(amazon_order(graph))
    return "; ".join(parts) if parts else None


def columns_like(path, columns, layout):
    """The ``columns`` for a file read beside one laid out as ``layout`` (a test file
    beside its training file): header names — given, or those the training file's
    header chose its columns by ('movieId,userId,rating') — resolve in its own header
    when it has one, else the training file's positions are used."""
    by_header = columns is None and layout is not None and bool(layout.names) and layout.cols != (0, 1, io.OPTIONAL)
    if not by_header and (columns is None or layout is None or all(
            str(x).strip().isdigit() for x in (columns.split(",") if isinstance(columns, str) else columns))):
        return columns
    path = io.local_copy(path)
    if io.edge_format(io.read_head(path, "edge list"), path).names:
        return columns
    cs, cd, cv = layout.cols
    return [cs + 1, cd + 1] + ([cv + 1] if cv >= 0 else [])


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def numeric_ids(path, columns=None):
    """Whether the first data line of an edge-list file has numeric ids (``ids="auto"``)."""
    head = io.read_head(path, "edge list")
    return _first_ids_numeric(head, io.edge_format(head, path, columns))


def _known_pair(fmt, maps, raw):
    """Whether the names of a line read as a header are a user and an item of the
    model's (string) ids: a file of one 'alice item3' line is data, not names; so is a
    file of one line of which one is the model's and neither names a column ('zed item3',
    a new user's pair: by the item's baseline)."""
    names = [fmt.names[j] if j < len(fmt.names) else None for j in fmt.cols[:2]]
    if any(n is None or m is None for n, m in zip(names, maps)):
        return False
    known = [n in m.index for n, m in zip(names, maps)]
    return all(known) or (any(known) and all(io.role(n) is None for n in names)
                          and not bytes(raw[fmt.start: fmt.start + 4096]).strip())


def _first_ids(raw, fmt):
    """The id fields of the first data line (None: no data line in the first 64 kB)."""
    for line in raw[fmt.start: fmt.start + (1 << 16)].split(b"\n"):
        toks = io.data_fields(line, fmt.mode)       # (spaces split: '1,2 5' is a mistyped number, not an id)
        if toks:
            return [toks[j] for j in fmt.cols[:2] if j < len(toks)]
    return None


def _first_ids_numeric(raw, fmt):
    ids = _first_ids(raw, fmt)
    return ids is None or all(t.lstrip(b"+-").isdigit() for t in ids)


def _check_dense(path, skip, columns, n_edges):
    """Numeric ids far beyond the data's size are an error with a way out (tux2.io.check_id_space)."""
    for name, a in zip(("source", "destination"), columns):
        top = int(a.max()) if len(a) else 0
        io.check_id_space(top + 1, n_edges, f"{name} id {top}", path if path is not None else "arrays",
                          (lambda: io.edge_line(path, int(np.argmax(a)), skip)) if path is not None else None,
                          "pass ids='string' (--ids string) to map ids to dense ones")


def _string_edges(raw, fmt, path, type_names, maps):
    """Any token is an id: (src, dst) tokens → dense ids by first appearance (or by
    ``maps``: -1 for a token not in them), values checked as the numeric parser does.
    Returns (src, dst, values or None, id maps, tokens not in the frozen maps per side)."""
    io.refuse_decimal_commas(raw, fmt, path)
    index = [{k: i for i, t in enumerate(m.tokens.tolist()) for k in _id_bytes(str(t))} if m is not None else {}
             for m in maps]
    frozen = [m is not None for m in maps]
    # a side the model numbers densely (no map) while the other side has one: plain integers
    numeric = [m is None and any(x is not None for x in maps) for m in maps]
    fast = io.string_edges(raw, fmt) if len(raw) - fmt.start >= io.STRING_COMPILED else None
    fast = fast and _mapped(fast, maps, index, frozen, numeric)
    if fast:
        return fast
    cs, cd, cv = fmt.cols
    vcol = 2 if cv == io.OPTIONAL else cv
    need = max(cs, cd) if cv == io.OPTIONAL else max(cs, cd, cv)
    tab = fmt.mode == io.TAB or fmt.strict      # tab-, comma-separated: empty fields are errors only where read
    missing = ([], [])                          # tokens not in frozen maps, in file order
    src, dst, val = [], [], []
    ncols = 0
    no = fmt.skip
    for no, line in enumerate(raw[fmt.start:].split(b"\n"), fmt.skip + 1):
        toks = io.id_fields(line, fmt)
        if not toks or next(t for t in toks if t)[:1] in (b"#", b"%"):     # (TAB: leading fields may be empty)
            continue

        def fail(msg):
            raise InputError(msg, path=path, line=no, text=line.decode("utf-8", "replace").rstrip("\r"))
        if not all([toks[j] for j in (cs, cd, vcol) if 0 <= j < len(toks)] if tab else toks[: max(cs, cd, vcol) + 1]):
            fail(io._MESSAGES[13])
        if len(toks) <= need:
            fail(io._MESSAGES[6 if cv == io.OPTIONAL else 9])
        cols = 3 if vcol >= 0 and len(toks) > vcol else 2
        if ncols and cols != ncols:
            fail(io._MESSAGES[8 if cols == 2 else 10])
        ncols = cols
        for side, out in ((0, src), (1, dst)):
            tok = toks[fmt.cols[side]]
            if numeric[side]:
                if not tok.isdigit():
                    fail("malformed vertex id (expected a non-negative integer)")
                out.append(int(tok))
                continue
            j = index[side].get(tok)
            if j is None:
                if frozen[side]:
                    j = -1
                    missing[side].append(tok.decode("utf-8", "replace"))
                else:
                    j = index[side][tok] = len(index[side])
            out.append(j)
        if cols == 3:
            x = _float_token(toks[vcol])
            if x is None:               # (TAB: '3 4' is no number, nor two fields)
                fail(io._MESSAGES[(15 if fmt.strict else 14) if tab and _float_token(toks[vcol].split(b" ")[0])
                                  is not None else 3])
            if not np.isfinite(x):
                fail("value is NaN or infinite")
            val.append(x)
    if not src:
        raise io.no_edges(fmt, path)
    id_maps = []
    for side in (0, 1):
        if frozen[side] or numeric[side]:
            id_maps.append(maps[side])
            continue
        id_maps.append(IdMap(np.array([id_text(t) for t in index[side]], dtype=str)))   # (in first-seen order)
    return (np.array(src, np.int64), np.array(dst, np.int64), np.array(val, np.float64) if ncols == 3 else None,
            tuple(id_maps), missing)


def _mapped(fast, maps, index, frozen, numeric):
    """_string_edges' result from io.string_edges' (ids by first appearance and their
    tokens): through the frozen maps (-1 and the token where they have none), or as plain
    integers; None for a token that is not one (line by line names it)."""
    s, d, v, tokens = fast
    out, id_maps, missing = [], [], ([], [])
    for side, (ids, toks) in enumerate(zip((s, d), tokens)):
        if numeric[side]:
            if not all(t.isdigit() and len(t) < 19 for t in toks):
                return None
            ids = np.array([int(t) for t in toks], np.int64)[ids]
        elif frozen[side]:
            first = ids
            ids = np.array([index[side].get(t, -1) for t in toks], np.int64)[first]
            texts = [t.decode("utf-8", "replace") for t in toks]
            missing[side].extend(texts[i] for i in first[ids < 0].tolist())
        out.append(ids)
        id_maps.append(maps[side] if frozen[side] or numeric[side] else
                       IdMap(np.array([id_text(t) for t in toks], str)))
    return out[0], out[1], v, tuple(id_maps), missing


def id_text(token):
    """A string id's text: UTF-8, else Latin-1 (Book-Crossing's ISBNs), which any bytes are."""
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        return token.decode("latin-1")


def _id_bytes(t):
    """The bytes a file may write the string id ``t`` in: UTF-8, and Latin-1 (an id that
    was not UTF-8 was read as Latin-1)."""
    try:
        return {t.encode(), t.encode("latin-1")}
    except UnicodeEncodeError:
        return {t.encode()}


def _float_token(tok):
    """float of a token in the numeric parser's grammar ([+-] digits [. digits] [e[+-]digits],
    or nan/inf), else None."""
    t = tok.lower().lstrip(b"+-")
    if t in (b"nan", b"inf", b"infinity"):
        return float("nan")
    if not t or not all(c in b"0123456789.e+-" for c in t):
        return None
    try:
        return float(tok)
    except ValueError:
        return None


# --------------------------------------------------------------------------- duplicates
@njit(cache=True, nogil=True)
def _earliest_repeat(src, dst, n_src, n_dst):
    """(i, j): edge j repeats edge i < j, with j the smallest such; (-1, -1) if the
    edges are distinct. Linear: a stable bucket sort by src, then per bucket a scan
    that remembers each dst's last edge."""
    order, start = group_by_part(src, n_src)
    seen = np.full(n_dst, -1, np.int64)
    owner = np.full(n_dst, -1, np.int64)
    best_i, best_j = -1, -1
    for u in range(n_src):
        for t in range(start[u], start[u + 1]):
            e = order[t]
            d = dst[e]
            if owner[d] == u:
                if best_j < 0 or e < best_j:
                    best_i, best_j = seen[d], e
            else:
                owner[d] = u
                seen[d] = e
    return best_i, best_j


def pair_key(src, dst, n_dst):
    """One int64 per (src, dst) pair, equal only for equal pairs (n_src × n_dst < 2^62):
    computed in int64 whatever the ids' dtype (int32 ids times n_dst would wrap)."""
    return np.multiply(src, max(int(n_dst), 1), dtype=np.int64) + dst


def dedupe(g, policy, where, what=None):
    """Apply the duplicate-edge policy; ``where(i)`` → (path, line, text) of edge i;
    ``what(src, dst)``: how the message names a repeated pair (default "edge (a, b)").
    "sum" without values counts each pair's edges, a pair seen once too."""
    if policy == "sum" and g.values is None:
        g = BipartiteGraph(g.src, g.dst, np.ones(g.num_edges, np.float32), g.n_src, g.n_dst, g.type_names,
                           g.source, g.ids)
    if policy == "keep" or g.num_edges < 2:
        return g
    d, n = g.dst, g.n_dst
    if n > 2 * g.num_edges + SPARSE_FEATURES:    # hashed feature indices up to 2^24: checked as numbered densely
        d = np.unique(d, return_inverse=True)[1]  # (the scan's arrays by index took 268 MB and 0.8 s)
        n = int(d.max()) + 1
    first, again = _earliest_repeat(g.src, d, g.n_src, n)
    if again < 0:
        return g
    if policy == "error":
        path, line0, _ = where(int(first))
        _, line1, text = where(int(again))
        ids = [m.tokens[x] if m is not None else x for m, x in zip(g.ids, (g.src[first], g.dst[first]))]
        at = f"line {line0}" if line0 is not None else f"edge {first}"
        named = what(*ids) if what is not None else f"edge ({ids[0]}, {ids[1]})"
        raise InputError(f"duplicate {named}, first at {at}; choose a policy with --duplicates "
                         "sum|last|keep (from Python: duplicates='sum'|'last'|'keep')", path=path,
                         line=line1 if line1 is not None else None,
                         text=text if text is not None else f"edge {again}")
    if g.n_src * max(g.n_dst, 1) < 2 ** 62:
        key = pair_key(g.src, g.dst, g.n_dst)
        order = np.argsort(key, kind="stable")
        same = key[order[1:]] == key[order[:-1]]
    else:
        order = np.lexsort((g.dst, g.src))
        same = (g.src[order[1:]] == g.src[order[:-1]]) & (g.dst[order[1:]] == g.dst[order[:-1]])
    group_start = np.r_[True, ~same]            # first edge of each group, in sorted order
    gid = np.cumsum(group_start) - 1
    n_groups = int(gid[-1]) + 1
    if policy == "sum":
        keep = order[group_start]               # the first occurrence keeps its place
        vals = g.values if g.values is not None else np.ones(g.num_edges)
        total = np.bincount(gid, vals[order], minlength=n_groups)
    else:                                        # last: the last occurrence, at its place
        group_end = np.r_[~same, True]
        keep = order[group_end]
        total = g.values[keep] if g.values is not None else None
    place = np.argsort(keep, kind="stable")     # kept edges in their original order
    keep = keep[place]
    values = total[place] if total is not None else None
    return BipartiteGraph(g.src[keep], g.dst[keep], values, g.n_src, g.n_dst, g.type_names, g.source, g.ids)


# --------------------------------------------------------------------------- other files
@contextlib.contextmanager
def plain_file(given):
    """``given`` as a plain file to read (tux2.io.local_copy: ``-``, pipes, gzip, bz2 or
    xz data), its copy removed when the block ends and errors naming the file as given."""
    given = os.fspath(given)
    with io.temporary_copies():
        path = io.local_copy(given)
        try:
            yield path
        except InputError as e:
            raise io.as_given(e, path, given) from None


def load_libsvm(path, zero_based="auto", n_features=None, type_names=("sample", "feature"), duplicates="error",
                label_column=None, features=None, table_labels=None, known_features=0, sparse=False,
                weight_column=None, table_weights=None):
    """(graph sample → feature, labels) of a libsvm file (see ``tux2.io.read_libsvm``)
    or a dense table of numbers with its labels in ``label_column`` (tux2.tables; the
    graph's ``layout`` says how it was read; none when it has a model's ``features``
    columns); ``table_labels``, a training table's label column, is the default of
    ``label_column`` for a table and ignored for a libsvm file (a model trained on a
    table scores libsvm files too); ``-`` and compressed files as
    ``plain_file`` reads them; the same feature twice in one libsvm line follows the
    duplicate policy. ``known_features``: the training set's or model's feature count, which
    a test file's indices may reach however few its lines; ``sparse``: indices however sparse,
    for a caller that numbers them densely (``dense_features``; ``io.read_libsvm``).
    ``weight_column``: a table's column of sample weights (``tables.table_format``; the
    graph's ``sample_weights``), which a libsvm file has no place for (an InputError naming
    the ways there are); ``table_weights``: the training table's, taken out of a test or scored
    table when it has that column (a libsvm file: none)."""
    check_choice("duplicates", duplicates, DUPLICATES)
    with plain_file(path) as copy:
        label = label_column if label_column is not None else table_labels
        fmt = tables.table_format(io.read_head(copy, "input", lines=22, bom=True), copy, label, features,
                                  weight_column if weight_column is not None else table_weights,
                                  weight_required=weight_column is not None)
        if fmt is not None:
            g, y = tables.read_table(copy, fmt, n_features, type_names)
            g.source = io.display_name(os.fspath(path))
            return g, y
        if label_column is not None:
            raise InputError("--label-column (label_column=) applies to tables of numbers, a sample per line; "
                             "this file is none (libsvm files have their labels first)", path=copy)
        if weight_column is not None:
            raise InputError(f"--weight-column {weight_column} (weight_column=) names a column of a table of numbers; "
                             "this is a libsvm file, whose lines have no place for a weight: write the samples as a "
                             "table (CSV with a header: label, weight and feature columns), or from Python "
                             "fit(X, y, sample_weight=w) (X, y = sklearn.datasets.load_svmlight_file(path))",
                             path=copy)
        try:
            g, y = io.read_libsvm(copy, zero_based=zero_based, n_features=n_features, type_names=type_names,
                                  known_features=known_features, sparse=sparse)
        except InputError:
            hint = tables.words_hint(io.read_head(copy, "input"), copy)
            if hint is None:
                raise
            raise InputError(hint, path=copy) from None

        def where(i):
            line, text = io.edge_line(copy, int(g.src[i]))
            return copy, line, text
        base = g.base
        g = dedupe(g, duplicates, where, lambda _, j: f"feature {j + base} in one sample")
        g.base = base
    g.source = io.display_name(os.fspath(path))
    return g, y


def require_features(graph, path=None):
    """InputError when ``graph`` has samples but not one feature among them: a libsvm
    file whose every line is a label alone (``path``), or a matrix of zeros. A model
    over no features learns nothing, and its training would fail on the empty model;
    some samples without features are legal (they score 0)."""
    if graph.n_src and not graph.num_edges:
        what = ("every line has a label but no index:value pairs" if path is not None
                else "every sample (row of X) is all zeros")
        raise InputError(f"no features: {what}", path=path)


SPARSE_FEATURES = 1 << 16      # unused feature indices below which a graph keeps its numbering


def dense_features(graph, skip=0):
    """``graph`` with its features numbered densely when their indices are sparse: more
    than half of 0 … n_dst−1 and more than 65,536 of them unused (Criteo's or KDD12's
    indices hashed into 2^24, of which a few hundred thousand occur). Returns (graph,
    features): features[j] the original index of dense feature j (sorted, so the features
    keep their order), also the new graph's ``ids[1]``; else (graph, None), the graph as
    it is: a model then has a row per feature that occurs, not per index below the largest.
    ``skip``: leading indices not counted (1: a 1-based file read 0-based, as tux2 info
    reads it, whose index 0 training has no slot for), so that the decision is training's."""
    d, n = graph.dst, graph.n_dst
    if n - skip <= SPARSE_FEATURES:
        return graph, None
    if n > io.id_space(len(d)):          # too far apart to count in an array: sorted
        features, dense = np.unique(d, return_inverse=True)
    else:
        present = np.zeros(n, bool)      # a byte per index (counts and prefix sums: 8 each, 268 MB at 2^24)
        present[d] = True
        features, dense = np.flatnonzero(present), None
    if 2 * len(features) >= n - skip or n - skip - len(features) <= SPARSE_FEATURES:
        return graph, None
    if dense is None:
        dense = np.searchsorted(features, d)
    g = BipartiteGraph(graph.src, dense.astype(d.dtype, copy=False), graph.values, graph.n_src, len(features),
                       graph.type_names, graph.source, ids=(graph.ids[0], IdMap(features)))
    g.layout, g.base = graph.layout, graph.base
    return g, features


def frequent_features(graph, min_count, path=None):
    """``graph`` (training samples) without the features that have fewer than ``min_count``
    non-zero entries (parameter-server's tail feature filter; Vowpal Wabbit's, xLearn's
    likewise): the others numbered densely, as ``dense_features`` numbers sparse indices.
    Returns (graph, features), features[j] the original index of kept feature j (sorted;
    also the new graph's ``ids[1]``), which ``in_features`` reads test samples in: a dropped
    feature is then one unseen in training, of weight 0. Every feature dropped: InputError
    naming the largest count there is (``path``: the training file). ``graph.tail`` of the
    result: (features that occur, entries) of ``graph``, for a run's header."""
    d, n = graph.dst, graph.n_dst
    nz = d if graph.values is None else d[np.asarray(graph.values) != 0]
    if n <= 2 * len(d) + SPARSE_FEATURES:           # a count per index (8 bytes each)
        counts = np.bincount(nz, minlength=n)
        kept = np.flatnonzero(counts >= min_count)
        top = int(counts.max()) if n else 0
    else:                                           # hashed indices up to 2^24: the ones that occur, sorted
        ids, counts = np.unique(nz, return_counts=True)
        kept = ids[counts >= min_count]
        top = int(counts.max()) if len(counts) else 0
    if not len(kept):
        raise InputError(f"no feature has {min_count} or more non-zero entries in the training samples (the most "
                         f"frequent has {top}): --min-count {min_count} (min_count={min_count}) leaves nothing to "
                         "learn; a smaller one keeps some", path=path)
    at = np.searchsorted(kept, d)
    keep = at < len(kept)
    keep[keep] = kept[at[keep]] == d[keep]
    g = BipartiteGraph(graph.src[keep], at[keep].astype(d.dtype, copy=False),
                       None if graph.values is None else graph.values[keep], graph.n_src, len(kept),
                       graph.type_names, graph.source, ids=(graph.ids[0], IdMap(kept)))
    g.layout, g.base = graph.layout, graph.base
    g.tail = (int(np.count_nonzero(counts)), graph.num_edges)      # features that occur, entries: before the filter
    return g, kept


def in_features(graph, features):
    """``graph`` (a test file's samples) in the dense numbering of ``dense_features``:
    its features among ``features`` (sorted original indices) renumbered, the others,
    unseen in training and so of weight 0, all in one column after them (len(features)),
    which scoring leaves out as it leaves out indices beyond a model's, after a sample's
    length has counted them (an FM's unit rows)."""
    k = len(features)
    at = np.minimum(np.searchsorted(features, graph.dst), max(k - 1, 0)) if k else np.zeros(graph.num_edges, np.int64)
    at = np.where(features[at] == graph.dst, at, k) if k else at
    g = BipartiteGraph(graph.src, at.astype(graph.dst.dtype, copy=False), graph.values, graph.n_src, k + 1,
                       graph.type_names, graph.source)
    g.layout, g.base = graph.layout, graph.base
    return g


def is_path(x):
    """Whether ``x`` names a file (str, bytes, os.PathLike) rather than holding data."""
    return isinstance(x, (str, bytes)) or hasattr(x, "__fspath__")


def is_frame(X):
    """Whether ``X`` is a DataFrame (pandas' or alike: named columns, ``drop``)."""
    return hasattr(X, "columns") and hasattr(X, "drop") and hasattr(X, "iloc") and getattr(X, "ndim", 2) == 2


def frame_labels(X, label_column=None, table_labels=None, features=None):
    """(X without its label column, its labels or None, the label spec, how it was found)
    of DataFrame ``X``, the column found as a table file's (``tables.resolve_label``, as
    ``load_libsvm`` reads a file): the column ``label_column`` names (a column's own name,
    else as for a file: a 1-based number, 'first', 'last', a name in any case), else
    ``table_labels`` (a training table's spec: its name), else the one column named as labels
    are (target, label, class …: tables.LABEL_NAMES), else the one column of words, first or
    last. A frame of the model's ``features`` columns has no labels, as such a file has none.
    Unlike a file without a header, no first column by default: a frame names its columns.
    The spec, [name, position], reads the same column of a test or predict frame or file."""
    cols = list(X.columns)
    if features is not None and len(cols) == features:
        return X, None, None, None
    label = label_column if label_column is not None else table_labels
    names = [str(c) for c in cols]
    j = next((i for i, c in enumerate(cols) if c == label), None) if label is not None and \
        not isinstance(label, (list, tuple)) else None
    if j is not None:
        how = f"label_column={label!r}"
    else:
        words = [i for i, t in enumerate(X.dtypes) if getattr(t, "kind", "O") not in "biufc"]
        j, how = tables.resolve_label(label, names, len(cols), None, words[0] if len(words) == 1 else None,
                                      first=None, of="DataFrame")
        if j < 0:
            return X, None, None, None
    spec = [names[j], "last" if j == len(cols) - 1 else j + 1]
    return X.iloc[:, [i for i in range(len(cols)) if i != j]], X.iloc[:, j], spec, how


def load_samples(X, zero_based="auto", duplicates="error", label_column=None, features=None, table_labels=None,
                 known_features=0, sparse=False, weight_column=None, table_weights=None):
    """(sample → feature graph, labels or None) of a linear model's input: a libsvm
    path or a table's (``load_libsvm``), a scipy.sparse or dense matrix (rows are
    samples), or a graph."""
    if isinstance(X, BipartiteGraph):
        return X, None
    if is_path(X):
        return load_libsvm(X, zero_based=zero_based, duplicates=duplicates, label_column=label_column,
                           features=features, table_labels=table_labels, known_features=known_features,
                           sparse=sparse, weight_column=weight_column, table_weights=table_weights)
    import scipy.sparse as sp
    if _is_complex(X):                          # a cast would drop the imaginary parts
        raise InputError("X holds complex numbers: features are real numbers", path="matrix")
    M = X if sp.issparse(X) else _floats(X)
    if M.ndim != 2:             # one sample given as a row of features: scikit-learn refuses it alike
        raise InputError(f"X must be 2-D, samples × features; got shape {M.shape}. Reshape your data: "
                         "X.reshape(1, -1) is one sample", path="matrix")
    coo = sp.coo_matrix(M)
    bad = ~np.isfinite(coo.data)
    if bad.any():               # a DataFrame's missing values: named by row and column, not by edge
        i = int(np.argmax(bad))
        raise InputError(f"X has {'NaN' if np.isnan(coo.data[i]) else coo.data[i]} at row {coo.row[i]}, column "
                         f"{coo.col[i]}: every value must be "
                         "finite (impute missing values first, e.g. sklearn.impute.SimpleImputer)", path="matrix")
    return BipartiteGraph(coo.row, coo.col, coo.data, M.shape[0], M.shape[1], ("sample", "feature"), "matrix"), None


def non_number(a):
    """(index, entry) of the first entry of array-like ``a`` that is no number, or None."""
    a = np.asarray(a, dtype=object)
    for i, t in enumerate(a.ravel().tolist()):
        try:
            float(t)
        except (TypeError, ValueError):
            return tuple(int(j) for j in np.unravel_index(i, a.shape)), t
    return None


def _is_complex(X):
    """Whether X (a matrix, sparse matrix, DataFrame, nested lists) holds complex numbers,
    asked without numpy's array functions, which an array-like may refuse (scikit-learn's
    input checks' does: np.iscomplexobj raised its TypeError)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and not isinstance(dtypes, np.dtype):     # a DataFrame's, per column
        return any(getattr(d, "kind", "") == "c" for d in dtypes)
    dtype = getattr(X, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(X).dtype
        except (TypeError, ValueError):         # ragged rows: the conversion below names them
            return False
    return getattr(dtype, "kind", "") == "c"


def _floats(X):
    """X as a float64 array; pandas' missing values (pd.NA of a nullable column) read as
    NaN, so that load_samples names them by row and column as it names NaN; an entry
    that is no number (a string) an InputError naming it."""
    frame = type(X).__module__.split(".")[0] == "pandas"
    try:
        if not frame:
            return np.asarray(X, np.float64)
        try:
            return X.to_numpy(np.float64, na_value=np.nan)
        except TypeError:       # pd.NA in an object column: to_numpy replaces it only when it builds objects
            return np.asarray(X.to_numpy(object, na_value=np.nan), np.float64)
    except (TypeError, ValueError):
        A = X.to_numpy(object) if frame else X
        bad = non_number(A) if np.ndim(np.asarray(A, dtype=object)) == 2 else None
        name = f" ({X.columns[bad[0][1]]!r})" if bad and frame else ""       # a DataFrame's column by its name too
        where = f" at row {bad[0][0]}, column {bad[0][1]}{name}" if bad else ""
        raise InputError((f"X holds {bad[1]!r}{where}" if bad else "X is not a matrix of numbers") +
                         ": features are numbers; encode categories first (e.g. "
                         "sklearn.preprocessing.OneHotEncoder)", path="matrix") from None


def load_corpus(path, fmt="auto", base=None, min_count=1, type_names=("doc", "word"), duplicates="sum", stopwords=(),
                max_df=1.0, text_column=None):
    """(document–word count graph, vocabulary or None, format) of a UCI docword file,
    ``doc word count`` triples, plain text (one document per line) or 'csv': a CSV or
    TSV file's text column under a header (io.csv_header; 'auto' tells it from text by
    that header, so a header is never read as a document; ``min_count``, ``stopwords``
    and ``max_df`` filter their words as io.text_docs does; ``text_column``, a name or
    1-based position, picks the CSV's text column and makes 'auto' 'csv'); ``graph.base`` is
    the file's id base (1 for docword), which outputs add back to the dense ids. ``-``
    and compressed files are read as ``plain_file`` reads them."""
    check_choice("duplicates", duplicates, DUPLICATES)
    with plain_file(path) as copy:
        g, vocab, fmt = _load_corpus(copy, fmt, base, min_count, type_names, duplicates, stopwords, max_df,
                                     text_column)
    g.source = io.display_name(os.fspath(path))
    return g, vocab, fmt


def _load_corpus(path, fmt, base, min_count, type_names, duplicates, stopwords, max_df, text_column):
    if text_column is not None and fmt not in ("auto", "csv"):
        raise InputError(f"--text-column (text_column=) picks a column of a CSV or TSV file under its header, and "
                         f"--format {fmt} (format='{fmt}') has none: leave one of them out", path=path)
    sniffed = fmt == "auto" and text_column is None
    fmt = io.sniff_corpus(path, header_alone=True) if sniffed else "csv" if text_column is not None else fmt
    header = io.csv_header(path, text_column) if fmt == "csv" or (sniffed and fmt == "text") else None
    if fmt == "csv" and header is None:
        raise InputError("line 1 is no CSV header naming the text column ('text', 'id,text', …): --format text "
                         "(format='text') reads every line as a document", path=path, line=1)
    fmt = "csv" if header is not None else fmt
    keys = io.json_keys(io.read_head(path, "corpus")) if sniffed and fmt == "text" else None
    if keys is not None:        # no documents: each line's keys, ids and fields would be its words
        raise InputError(io.json_hint(path, keys, documents=True) + "; --format text (format='text') reads every line as a "
                         "document, JSON and all", path=path)
    if fmt == "docword":
        g = dedupe(io.read_docword(path, type_names), duplicates, lambda i: (path, *io.edge_line(path, i, 3)))
        g.base = 1                              # docword ids are 1-based: outputs name them so
        return g, None, fmt
    if fmt == "triples":
        g = load_edges(path, ids="int", duplicates="keep", base=base, type_names=type_names, values="counts")
        skip = io._header_end(io.read_head(path, "corpus"), path)[1]
        out = dedupe(g, duplicates, lambda i: (path, *io.edge_line(path, i, skip)))
        out.base = g.base
        return out, None, fmt
    if fmt in ("text", "csv"):
        g, vocab = io.read_text_docs(path, type_names, min_count, stopwords, header, max_df)
        return g, vocab, fmt
    raise ValueError(f"unknown corpus format {fmt!r}: auto, docword, triples, text or csv")


# --------------------------------------------------------------------------- Python objects
def _column_ids(a, name):
    """(dense ids, IdMap or None) of one column of ids: integers are used as they are,
    anything else (strings, mixed objects) is mapped by sorted distinct value."""
    a = np.asarray(a)
    if a.ndim != 1:
        raise InputError(f"{name} ids must be one-dimensional, got shape {a.shape}", path="arrays")
    if a.dtype.kind == "u" and len(a) and int(a.max()) > np.iinfo(np.int64).max:    # 64-bit hashes: opaque
        tokens, inverse = np.unique(a, return_inverse=True)
        return inverse.astype(np.int64).ravel(), IdMap(tokens)
    if a.dtype.kind in "iu" or len(a) == 0:
        return a.astype(np.int64), None
    if a.dtype.kind == "c":
        raise InputError(f"{name} ids are complex numbers ({a[0].item()!r} at index 0): ids are integers or strings",
                         path="arrays")
    if a.dtype == object and all(type(x) is int or isinstance(x, np.integer) for x in a.tolist()):
        return _column_ids(np.array(a.tolist()), name)     # integers kept as object (a column astype(object))
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.floor(a)) | (np.abs(a) >= 2.0**63)     # 1e30 cast to -2^63
        if not bad.any():
            return a.astype(np.int64), None
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name} id {a[i].item()!r} at index {i} is not an integer"
                         + " within int64" * bool(np.isfinite(a[i]) and a[i] == np.floor(a[i])), path="arrays")
    if a.dtype == object:
        if any(x is None or (isinstance(x, float) and x != x) for x in a.tolist()):
            i = next(i for i, x in enumerate(a.tolist()) if x is None or (isinstance(x, float) and x != x))
            raise InputError(f"{name} id at index {i} is missing ({a[i]!r})", path="arrays")
        # an object()'s or a list's text ('<object object at 0x…>') is no id it could be given by again
        odd = next((i for i, x in enumerate(a.tolist()) if not isinstance(x, (str, bytes, int, float, np.generic))),
                   None)
        if odd is not None:
            x = a[odd]
            raise InputError(f"{name} id at index {odd} is {repr(x)[:40]} (of type {type(x).__name__}): ids are "
                             "integers or strings", path="arrays")
        a = a.astype(str)
    tokens, inverse = np.unique(a, return_inverse=True)
    return inverse.astype(np.int64).ravel(), IdMap(tokens)


def from_arrays(src, dst, values=None, n_src=None, n_dst=None, type_names=("src", "dst"), duplicates="error",
                source="arrays", dense=False):
    """A graph from two id sequences (integers, or any ids: strings are mapped to dense
    ids in sorted order) and optional per-edge values. ``dense``: integer ids that fill
    less than half of their range are numbered densely, as a file's (``numbered``), and
    are 1-based when no id 0 occurs on either side (a file's ``base="auto"``)."""
    check_choice("duplicates", duplicates, DUPLICATES)
    s, ms = _column_ids(src, type_names[0])
    d, md = _column_ids(dst, type_names[1])
    if dense and n_src is None and n_dst is None:
        nums = [a for a, m in ((s, ms), (d, md)) if m is None and len(a)]
        base = 1 if nums and min(int(a.min()) for a in nums) >= 1 else 0       # as a file's --base auto
        for a in nums:
            a -= base
        ms, md = (m if m is not None or not len(a) else opaque(a) if a.min() < 0 else numbered(a, base)
                  for a, m in ((s, ms), (d, md)))
    if len(s) != len(d):
        raise InputError(f"{len(s)} {type_names[0]} ids but {len(d)} {type_names[1]} ids", path=source)
    if values is not None:
        values = _edge_values(values, source)
    if ms is not None:
        n_src = len(ms)
    if md is not None:
        n_dst = len(md)
    if n_src is None and n_dst is None and ms is None and md is None and len(s):
        _check_dense(None, 0, (s, d), len(s))
    g = BipartiteGraph(s, d, values, n_src, n_dst, type_names, source, ids=(ms, md))
    return dedupe(g, duplicates, lambda i: (source, None, f"edge {i}"))


def _edge_values(values, source):
    """Per-edge ``values`` as float64; text or complex numbers (whose imaginary part a cast
    would drop) an InputError naming the first."""
    a = np.asarray(values)
    bad = (np.flatnonzero(np.imag(a) != 0) if a.dtype.kind == "c" else
           [] if a.dtype.kind in "biuf" else [i for i, x in enumerate(a.ravel().tolist()) if not _is_number(x)])
    if len(bad):
        i = int(bad[0])
        raise InputError(f"edge value {a.ravel().tolist()[i]!r} at edge {i} is not a real number", path=source)
    return np.real(a).astype(np.float64)


def from_scipy(matrix, type_names=("row", "column"), duplicates="error"):
    """Rows → first type, columns → second, stored entries (explicit zeros included) → edges."""
    import scipy.sparse as sp
    if not sp.issparse(matrix):
        raise TypeError(f"expected a scipy.sparse matrix or array, got {type(matrix).__name__}")
    coo = matrix.tocoo()
    return from_arrays(coo.row, coo.col, coo.data, matrix.shape[0], matrix.shape[1], type_names, duplicates,
                       source="scipy.sparse matrix")


def from_pandas(df, src=None, dst=None, value=None, duplicates="error"):
    """Columns ``src``, ``dst`` and optional ``value`` of a DataFrame (default: the first
    two or three columns); the column names become the vertex type names."""
    cols = list(df.columns)
    if src is None and dst is None:
        if len(cols) < 2:
            raise InputError(f"the DataFrame has {len(cols)} columns; need src and dst", path="DataFrame")
        src, dst = cols[0], cols[1]
        value = cols[2] if value is None and len(cols) > 2 else value
    for c in (src, dst, value):
        if c is not None and c not in df.columns:
            raise InputError(f"no column {c!r} (columns: {cols})", path="DataFrame")
    vals = None
    if value is not None:
        v = df[value]
        if v.isna().any():
            i = int(np.flatnonzero(v.isna().to_numpy())[0])
            raise InputError(f"value column {value!r} is missing at row {i}", path="DataFrame")
        try:
            vals = v.to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            i = next(i for i, x in enumerate(v.tolist()) if not _is_number(x))
            raise InputError(f"value column {value!r} is not numeric: {str(v.iloc[i])[:40]!r} at row {i}",
                             path="DataFrame") from None
    for c in (src, dst):
        if df[c].isna().any():
            i = int(np.flatnonzero(df[c].isna().to_numpy())[0])
            raise InputError(f"column {c!r} is missing at row {i}", path="DataFrame")
    return from_arrays(df[src].to_numpy(), df[dst].to_numpy(), vals, type_names=(str(src), str(dst)),
                       duplicates=duplicates, source="DataFrame")


def _is_number(x):
    try:
        float(x)
        return True
    except (TypeError, ValueError):
        return False


def from_networkx(G, weight="weight", left=None, type_names=("left", "right"), duplicates="sum"):
    """A networkx bipartite graph: nodes with attribute ``bipartite=0`` (networkx's
    convention) or in ``left`` are the first type; edge attribute ``weight`` gives the
    values (1 where missing). Node names become the ids."""
    nodes = list(G.nodes)
    if left is None:
        tags = dict(G.nodes(data="bipartite"))
        if any(t is None for t in tags.values()):
            missing = next(n for n, t in tags.items() if t is None)
            raise InputError(f"node {missing!r} has no 'bipartite' attribute; pass left=<set of first-type nodes>",
                             path="networkx graph")
        left = {n for n, t in tags.items() if t == 0}
    left = set(left)
    src, dst, val = [], [], []
    for a, b, w in G.edges(data=weight, default=1.0):
        if (a in left) == (b in left):
            raise InputError(f"edge ({a!r}, {b!r}) joins two nodes of the same side: not bipartite",
                             path="networkx graph")
        if b in left:
            a, b = b, a
        src.append(a)
        dst.append(b)
        val.append(w)
    lefts = [n for n in nodes if n in left]
    rights = [n for n in nodes if n not in left]
    ml, mr = IdMap(_tokens(lefts)), IdMap(_tokens(rights))     # every node, isolated ones too
    s = ml.encode(_tokens(src)) if src else np.zeros(0, np.int64)
    d = mr.encode(_tokens(dst)) if dst else np.zeros(0, np.int64)
    g = BipartiteGraph(s, d, np.array(val, np.float64), len(ml), len(mr), type_names, "networkx graph", (ml, mr))
    return dedupe(g, duplicates, lambda i: ("networkx graph", None, f"edge {i}"))


def _tokens(names):
    """Node names as an id array: integers stay integers, anything else becomes str."""
    if names and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in names):
        return np.array(names, np.int64)
    return np.array([str(x) for x in names], dtype=str)


def load(data, **options):
    """A BipartiteGraph from a path (edge list), arrays ``(src, dst[, values])``, a
    scipy.sparse matrix, a pandas DataFrame, a networkx graph, or a BipartiteGraph."""
    if isinstance(data, BipartiteGraph):
        return data
    if isinstance(data, (str, os.PathLike)):
        return load_edges(data, **options)
    mod = type(data).__module__.split(".")[0]
    if mod == "scipy":
        return from_scipy(data, **options)
    if mod == "pandas" and hasattr(data, "columns"):
        return from_pandas(data, **options)
    if mod == "networkx":
        return from_networkx(data, **options)
    if isinstance(data, tuple) and len(data) in (2, 3):
        return from_arrays(*data, **options)
    shape = f" of shape {data.shape}" if isinstance(data, np.ndarray) else ""
    raise InputError(f"cannot load a {type(data).__name__}{shape}: pass a path, (src, dst[, values]) arrays, a "
                     "scipy.sparse matrix, a pandas DataFrame or a networkx graph")


def deviations(values, mu, chunk=1 << 20):
    """(Σ (r − μ)², Σ |r − μ|, max |r − μ|, min r, max r) of ratings ``values`` as they
    train (float32), in float64, a chunk at a time (no copy of them all); no ratings:
    min inf, max −inf."""
    sq = ab = far = 0.0
    low, high = math.inf, -math.inf
    for lo in range(0, len(values), chunk):
        r = np.asarray(values[lo:lo + chunk], np.float32).astype(np.float64)
        d = r - mu
        a = np.abs(d)
        sq, ab, far = sq + float(d @ d), ab + float(a.sum()), max(far, float(a.max()))
        low, high = min(low, float(r.min())), max(high, float(r.max()))
    return sq, ab, far, low, high
