"""Edge-list loading: ``src dst [value] [more columns …]`` per line.

Separators: spaces, tabs or commas, or ``::`` (MovieLens ``ratings.dat``), found
from the first data line; a first data line with a tab makes the file tab-separated
(Last.fm's ``user<TAB>artist-mbid<TAB>artist name<TAB>plays``): tabs alone separate its
fields, which may hold spaces, commas and quotes. ``#`` and ``%`` start comment lines; a MatrixMarket
header (``%%MatrixMarket``) makes ids 1-based and skips the size line; a first line
of names (``userId,movieId,rating,timestamp``) is a header whose names
``columns`` may use. By default the first two columns are the ids and the third,
when present, the value, unless a header names the user and item columns
(``item,user,rating``: read by name, as Spark's ALS or LensKit select them); further
columns (a timestamp) are ignored. ``columns`` picks others (:class:`EdgeFormat`). Every malformed line raises InputError with
the file, the line number and the line's text; nothing is skipped silently.
"""
import contextlib
import itertools
import math
import numbers
import os
import re
import unicodedata

import numba
import numpy as np
from numba import njit, prange

from tux2.errors import InputError, LineStart
from tux2.files import remove_scratch, scratch_dir
from tux2.graph import BipartiteGraph

_MESSAGES = {
    1: "malformed vertex id (expected a non-negative integer; for non-numeric ids use --ids string, ids='string')",
    2: "negative vertex id (integer ids are 0 or more; --ids string, ids='string', reads any token as an id, "
       "-1 too, as MF().fit takes arrays of any integers)",
    3: "malformed value (expected a number)",
    4: "value is NaN or infinite",
    6: "missing column (expected 'src dst [value]')",
    7: "vertex id too large (over 2^62)",
    8: "missing value column (other lines have 3 columns)",
    9: "missing column (fewer columns than named by --columns)",
    10: "a value column where the lines before have none (the first data line has 2 columns)",
    11: "vertex id too large for int32 (read again into int64)",
    13: "empty field (two separators in a row): a missing id or value? Fill it in or leave the line out",
    14: "a space inside a numeric field (the file is tab-separated: only tabs separate fields)",
    15: "a space inside a field: the file is comma- or semicolon-separated, so only those separate its fields "
        "('1 5' is neither a number nor two)",
    16: "a quoted field read as a number holds more than the number: a ',' or ';' inside its quotes",
    12: f"value beyond the float32 range (±{float(np.finfo(np.float32).max):.4g}) that edge values are kept in",
}
ID32_MAX = int(np.iinfo(np.int32).max)
ID62_MAX = 1 << 62
VALUE32_MAX = float(np.finfo(np.float32).max)


SPACE, COLON, TAB = 0, 1, 2     # separator modes (EdgeFormat.mode), from the first data line


@njit(cache=True, nogil=True, inline="always")
def _is_sep(c, mode=SPACE):
    """Space, tab, comma, semicolon, CR and the double quotes of quoted fields
    (Book-Crossing's '"276725";"034545104X";"0"'); in COLON mode also ':' (``::``-separated
    files); in TAB mode tabs alone, and the spaces, CR and quotes trimmed around a field
    (R's ``write.table(sep="\\t")`` quotes every string: '"1"\\t"2"\\t3')."""
    if mode == TAB:
        return c == 32 or c == 9 or c == 13 or c == 34
    return c == 32 or c == 9 or c == 44 or c == 13 or c == 59 or c == 34 or (mode == COLON and c == 58)


@njit(cache=True, nogil=True, inline="always")
def _ends(c, mode=SPACE):
    """A token (a number) ends at a separator, a space or a newline."""
    return _is_sep(c, mode) or c == 10


@njit(cache=True, nogil=True, inline="always")
def _field_ends(c, mode=SPACE):
    """A field the parser skips ends at a token's end; in TAB mode at a tab or the newline
    (its spaces are part of it)."""
    return c == 9 or c == 10 if mode == TAB else _ends(c, mode)


@njit(cache=True, nogil=True)
def _leading_tabs(buf, pos, p):
    """The tabs in buf[pos:p] (empty fields before a line's first). Not inlined: rare, and
    kept out of the parser's loop it costs nothing there (inlined, 3% of its speed)."""
    t = 0
    for q in range(pos, p):
        if buf[q] == 9:
            t += 1
    return t


@njit(cache=True, nogil=True, inline="always")
def _used(lo, hi, cs, cd, vcol):
    """Whether one of the columns read (src, dst, value) is in [lo, hi)."""
    return lo <= cs < hi or lo <= cd < hi or lo <= vcol < hi


_POW10 = np.array([10.0 ** i for i in range(23)])      # exact doubles: 1e0 … 1e22
_DIGITS19, _TWO53 = np.uint64(10 ** 18), np.uint64(1 << 53)


@njit(cache=True, nogil=True, inline="always")
def _parse_int(buf, pos, end, mode=SPACE):
    """Return (value, new_pos, err)."""
    if pos < end and buf[pos] == 45:  # '-'
        return 0, pos, 2
    if pos < end and buf[pos] == 43:  # '+'
        pos += 1
    start = pos
    v = 0
    while pos < end and 48 <= buf[pos] <= 57:
        digit = buf[pos] - 48
        if v >= 461168601842738790 and (v > 461168601842738790 or digit > 4):    # v·10 + digit > 2^62
            return 0, pos, 7
        v = v * 10 + digit
        pos += 1
    if pos == start or (pos < end and not _ends(buf[pos], mode)):
        return 0, pos, 1
    return v, pos, 0


_NAN = np.frombuffer(b"nan", np.uint8)
_INF = np.frombuffer(b"inf", np.uint8)
_INFINITY = np.frombuffer(b"infinity", np.uint8)


@njit(cache=True, nogil=True, inline="always")
def _is_word(buf, pos, end, word, mode=SPACE):
    """buf[pos:] holds ``word`` (lower case) in any case, followed by a separator or the end."""
    n = word.shape[0]
    if pos + n > end or (pos + n < end and not _ends(buf[pos + n], mode)):
        return False
    for i in range(n):
        if (buf[pos + i] | 32) != word[i]:
            return False
    return True


def _power_table():
    """128-bit approximations of 5^q, q = -342 … 308, as fast_float's table holds them: (high, low) words."""
    out = np.empty((308 + 342 + 1, 2), np.uint64)
    for q in range(-342, 309):
        if q >= 0:
            p = 5 ** q
            while p < (1 << 127):
                p *= 2
            while p >= (1 << 128):
                p //= 2
        else:
            p5 = 5 ** -q
            z = p5.bit_length()          # smallest z with 2^z >= p5 (p5 is no power of two)
            b = z + 127 if q >= -27 else 2 * z + 128
            p = (1 << b) // p5 + 1
            while p >= (1 << 128):
                p //= 2
        out[q + 342, 0] = p >> 64
        out[q + 342, 1] = p & ((1 << 64) - 1)
    return out

_P5 = _power_table()
_M32 = np.uint64(0xFFFFFFFF)

@njit(cache=True, nogil=True, inline="always")
def _mul128(a, b):
    """(high, low) words of the 128-bit product of uint64 a and b."""
    a0, a1 = a & _M32, a >> np.uint64(32)
    b0, b1 = b & _M32, b >> np.uint64(32)
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & _M32) + (p10 & _M32)
    low = (p00 & _M32) | (mid << np.uint64(32))
    high = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    return high, low

@njit(cache=True, nogil=True)
def _exact(w, q, lost=False):
    """w · 10^q correctly rounded to a double (w: uint64, the decimal's digits; q its
    exponent): the Eisel–Lemire algorithm, exact for w of up to 19 digits. ``lost``:
    non-zero digits followed w's, so a value w · 10^q exactly halfway between two
    doubles is above it and rounds up (a number of over 19 digits may still be 1 ulp
    off when they straddle a halfway point)."""
    if w == np.uint64(0) or q < -342:
        return 0.0
    if q > 308:
        return np.inf
    lz = 0
    x = w
    while x < np.uint64(1) << np.uint64(63):
        x <<= np.uint64(1)
        lz += 1
    hi5 = _P5[q + 342, 0]
    high, low = _mul128(x, hi5)
    if (high & np.uint64(0x1FF)) == np.uint64(0x1FF):        # 55 bits of precision are not yet sure
        h2, l2 = _mul128(x, _P5[q + 342, 1])
        low2 = low + h2
        if low2 < low:
            high += np.uint64(1)
        low = low2
    upper = int(high >> np.uint64(63))
    shift = np.uint64(upper + 9)
    m = high >> shift
    power2 = (((152170 + 65536) * q) >> 16) + 63 + upper - lz + 1023
    if power2 <= 0:                                          # subnormal
        if -power2 + 1 >= 64:
            return 0.0
        m >>= np.uint64(-power2 + 1)
        m += m & np.uint64(1)
        m >>= np.uint64(1)
        return math.ldexp(float(m), -1074)
    if low <= np.uint64(1) and -4 <= q <= 23 and (m & np.uint64(3)) == np.uint64(1):
        if (m << shift) == high and not lost:                # exactly halfway: round to even
            m &= ~np.uint64(1)
    m += m & np.uint64(1)
    m >>= np.uint64(1)
    if m >= np.uint64(2) << np.uint64(52):
        m = np.uint64(1) << np.uint64(52)
        power2 += 1
    if power2 >= 0x7FF:
        return np.inf
    m &= ~(np.uint64(1) << np.uint64(52))
    return math.ldexp(float(m | (np.uint64(1) << np.uint64(52))), power2 - 1075)


@njit(cache=True, nogil=True, inline="always")
def _parse_float(buf, pos, end, mode=SPACE):
    """Return (value, new_pos, err). Decimal with optional exponent."""
    neg = False
    if pos < end and (buf[pos] == 45 or buf[pos] == 43):
        neg = buf[pos] == 45
        pos += 1
    # nan / inf / infinity spelled out (any case)
    if pos < end and ((buf[pos] | 32) == 110 or (buf[pos] | 32) == 105):
        if _is_word(buf, pos, end, _NAN, mode) or _is_word(buf, pos, end, _INF, mode) or \
                _is_word(buf, pos, end, _INFINITY, mode):
            return 0.0, pos, 4
    mant = np.uint64(0)               # the first 19 significant digits, exactly (10^19 < 2^64)
    exp10 = 0
    digits = 0
    lost = False                      # a non-zero digit after them
    while pos < end and 48 <= buf[pos] <= 57:
        if mant < _DIGITS19:
            mant = mant * np.uint64(10) + np.uint64(buf[pos] - 48)
        else:
            exp10 += 1
            lost = lost or buf[pos] != 48
        digits += 1
        pos += 1
    if pos < end and buf[pos] == 46:  # '.'
        pos += 1
        while pos < end and 48 <= buf[pos] <= 57:
            if mant < _DIGITS19:
                mant = mant * np.uint64(10) + np.uint64(buf[pos] - 48)
                exp10 -= 1
            else:
                lost = lost or buf[pos] != 48
            digits += 1
            pos += 1
    if digits == 0:
        return 0.0, pos, 3
    if pos < end and (buf[pos] | 32) == 101:  # 'e'
        pos += 1
        eneg = False
        if pos < end and (buf[pos] == 45 or buf[pos] == 43):
            eneg = buf[pos] == 45
            pos += 1
        e = 0
        ed = 0
        while pos < end and 48 <= buf[pos] <= 57:
            if e < 100000:
                e = e * 10 + (buf[pos] - 48)
            ed += 1
            pos += 1
        if ed == 0:
            return 0.0, pos, 3
        exp10 += -e if eneg else e
    if pos < end and not _ends(buf[pos], mode):
        return 0.0, pos, 3
    if mant == np.uint64(0):
        v = 0.0
    elif mant < _TWO53 and -22 <= exp10 <= 22:
        # both operands exact, so one correctly rounded operation (Clinger's fast path)
        v = float(mant) * _POW10[exp10] if exp10 >= 0 else float(mant) / _POW10[-exp10]
    else:                             # 16 digits or more ('%.17g', '%.18e'), or a far exponent: rounded exactly
        v = _exact(mant, exp10, lost)
    if v != v or v == np.inf:
        return 0.0, pos, 4
    return (-v if neg else v), pos, 0


OPTIONAL = -2      # value column: the third when present (consistently), as 'src dst [value]'
NONE = -1          # value column: none (every edge 1)


@njit(cache=True, nogil=True)
def _parse_edges(buf, start, out_s, out_d, out_v, cs=0, cd=1, cv=OPTIONAL, mode=SPACE, strict=False,
                 id_max=ID62_MAX, value_max=np.inf):
    """Parse lines from buf[start:] in one pass (tokens end at a separator or the
    newline; separators as ``mode`` has them): the ids in columns ``cs``, ``cd``
    (0-based), the value in ``cv`` (OPTIONAL: the third column when the lines have one;
    NONE: no value); other columns are skipped unread. In TAB mode every tab ends a
    field (two in a row: an empty one, an error only where an id or the value is read)
    and a read field holds one number between spaces (error 14); ``strict`` (a comma- or
    semicolon-separated file): spaces between two of the fields read up to the last one read
    are error 15 ('1,1 5,3' is no line of three numbers), while a field not read runs to its
    comma or semicolon, or when quoted to its closing quote, spaces, commas and all
    ('1,2,Toy Story,4', '1,2,"Heat, The",4'), and may be empty ('1,2,,4'; one read: error 13). An id over ``id_max``
    is error 11, a value beyond ±``value_max`` error 12 (the limits of narrower output
    arrays). Returns (n_edges, ncols, err, err_line, err_pos), ncols 3 when values were
    read, else 2."""
    n = buf.shape[0]
    pos = start
    line = 0
    k = 0
    ncols = 0  # 0 = not yet known, 2 or 3
    vcol = 2 if cv == OPTIONAL else cv
    last = max(max(cs, cd), vcol)      # columns after this one are not looked at
    need = max(cs, cd) if cv == OPTIONAL else last
    while pos < n:
        line += 1
        p = pos
        while p < n and _is_sep(buf[p], mode):
            p += 1
        if p == n:
            break
        c = buf[p]
        if c == 10:                                   # blank line
            pos = p + 1
            continue
        if c == 35 or c == 37:                        # '#', '%' comment
            while p < n and buf[p] != 10:
                p += 1
            pos = p + 1
            continue
        s = 0
        d = 0
        v = 1.0
        t = 0
        if p > pos and mode == TAB:                   # tabs before the first field: empty fields
            t = _leading_tabs(buf, pos, p)
            if _used(0, t, cs, cd, vcol):
                return k, ncols, 13, line, pos
        while True:                                   # p is at the start of token t
            if t > last:                              # the rest of the line is not read
                while p < n and buf[p] != 10:
                    p += 1
                break
            quoted = strict and p > 0 and buf[p - 1] == 34 and (t == cs or t == cd or t == vcol)
            if t == cs:
                s, p, err = _parse_int(buf, p, n, mode)
            elif t == cd:
                d, p, err = _parse_int(buf, p, n, mode)
            elif t == vcol:
                v, p, err = _parse_float(buf, p, n, mode)
            elif strict:                              # a field not read, spaces and all, as pandas skips a
                err = 0                               # title ('1,2,Toy Story,4', '1,2,"Heat, The",4')
                if p > 0 and buf[p - 1] == 34:        # quoted: to its closing quote ('""' is one quote)
                    while p < n and buf[p] != 10 and (buf[p] != 34 or (p + 1 < n and buf[p + 1] == 34)):
                        p += 2 if buf[p] == 34 else 1
                else:                                 # to its comma or semicolon
                    while p < n and buf[p] != 44 and buf[p] != 59 and buf[p] != 10:
                        p += 1
            else:
                err = 0
                while p < n and not _field_ends(buf[p], mode):
                    p += 1
            if err:
                return k, ncols, err, line, pos
            if quoted:                                # '"3,4"' read: it must close after the number, not
                while p < n and (buf[p] == 32 or buf[p] == 13):      # split into fields 3 and 4
                    p += 1
                if p < n and buf[p] != 34:
                    return k, ncols, 16, line, pos
            t += 1
            hard = 0                                  # commas, semicolons and tabs: each ends a field
            while p < n and _is_sep(buf[p], mode):
                if buf[p] == 44 or buf[p] == 59 or buf[p] == 9:
                    hard += 1
                p += 1
            if p == n or buf[p] == 10:
                break
            if hard != 1 and mode == TAB:             # (a skipped field runs to its tab)
                if hard == 0:                         # '3 4' is no number, nor two fields
                    return k, ncols, 14, line, pos
                if t <= last and _used(t, t + hard - 1, cs, cd, vcol):
                    return k, ncols, 13, line, pos    # an empty field where an id or the value is read
                t += hard - 1
            elif hard > 1 and t <= last:              # ',,': an empty field, not the next column
                if not strict or _used(t, t + hard - 1, cs, cd, vcol):
                    return k, ncols, 13, line, pos    # (in a column not read, as pandas' NaN: skipped)
                t += hard - 1
            elif hard == 0 and strict:                # '1 5' in a comma-separated file: no number, nor two
                return k, ncols, 15, line, pos
        if t <= need:
            return k, ncols, 6 if cv == OPTIONAL else 9, line, pos
        cols = 3 if t > vcol and vcol >= 0 else 2
        if ncols == 0:
            ncols = cols
        elif cols != ncols:
            return k, ncols, 8 if cols == 2 else 10, line, pos
        if s > id_max or d > id_max:
            return k, ncols, 11, line, pos
        if abs(v) > value_max:
            return k, ncols, 12, line, pos
        out_s[k] = s
        out_d[k] = d
        out_v[k] = v
        k += 1
        pos = p + 1
    return k, ncols, 0, line, pos


# --------------------------------------------------------------------------- streams and compressed files
_SPOOLED = {}          # temporary copy → the name the user gave ("-", a FIFO, a .gz file)
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "lzma"))


_NAMES_ENV = "TUX2_INPUT_NAMES"   # the same map, JSON, for worker processes started from this one


def display_name(path):
    """The name the user gave for ``path`` (a temporary copy made by ``local_copy``,
    here or in the process that started this worker): ``<stdin>`` for ``-``."""
    name = spooled_names().get(path) if isinstance(path, str) else None
    if name is None:
        return path
    return "<stdin>" if name == "-" else name


def _env_map(var):
    """The map a process that started this one left in the environment variable
    ``var`` (JSON); {} when there is none or it is damaged."""
    import json
    try:
        found = json.loads(os.environ.get(var) or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def spooled_names():
    """{temporary copy: the user's name} of every input ``local_copy`` made (in this
    process or the one that started it)."""
    return {**_env_map(_NAMES_ENV), **_SPOOLED}


def _spooled(tmp, name):
    import json
    _SPOOLED[tmp] = name
    os.environ[_NAMES_ENV] = json.dumps(spooled_names())


def _spool_dir():
    import atexit
    d = scratch_dir("input")
    atexit.register(remove_scratch, d)
    return d


def local_copy(path):
    """``path`` itself when it is a plain, uncompressed file; otherwise the data read
    once into a temporary file (removed at exit), whose path is returned: ``-``
    (standard input), pipes, FIFOs and devices — so the format can be sniffed and the
    file parsed, memory-mapped or split by byte ranges like any other — and gzip, bz2
    or xz data (recognised by its first bytes), decompressed, and lines ended by a CR
    alone (old Mac files), with newlines."""
    import shutil
    import stat
    path = os.fspath(path)
    name = path
    try:
        if path == "-":
            src = os.fdopen(os.dup(0), "rb")
        else:
            if stat.S_ISREG(os.stat(path).st_mode):
                src = None
            else:
                src = open(path, "rb")
        if src is not None:
            tmp = os.path.join(_spool_dir(), "stdin" if path == "-" else os.path.basename(path) or "input")
            with src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            _spooled(tmp, name)
            path = tmp
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise InputError(f"cannot read input: {e.strerror}", path=name) from None
    kind = next((k for magic, k in _MAGIC if head.startswith(magic)), None)
    if kind is None:
        _refuse_utf16(head, name, None)
        return _netflix_copy(_newline_copy(path, name), name)
    import bz2
    import gzip
    import lzma
    opener = {"gzip": gzip.open, "bz2": bz2.open, "lzma": lzma.open}[kind]
    tmp = os.path.join(_spool_dir(), os.path.basename(name) if name != "-" else "stdin")
    try:
        with opener(path, "rb") as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except (OSError, EOFError, lzma.LZMAError) as e:
        remove_scratch(os.path.dirname(tmp))
        raise InputError(f"cannot decompress this {'xz' if kind == 'lzma' else kind} file: {e}", path=name) from None
    _spooled(tmp, name)
    with open(tmp, "rb") as f:
        _refuse_utf16(f.read(8), name, kind)
    return _netflix_copy(_newline_copy(tmp, name), name)


def _refuse_utf16(head, name, compressed):
    """An InputError when ``head`` (a file's first bytes, decompressed) is UTF-16 or UTF-32
    text (a byte-order mark, or ASCII with every other byte zero: Windows' 'Unicode' text,
    what PowerShell's ``>`` writes), which every reader would otherwise refuse line by
    line as malformed ids or words. ``compressed``: the kind ``local_copy`` decompressed."""
    import shlex
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        code = "UTF-16"                         # iconv reads the mark
    elif len(head) >= 8 and any(head) and not any(head[1::2]):
        code = "UTF-16LE"
    elif len(head) >= 8 and any(head) and not any(head[0::2]):
        code = "UTF-16BE"
    else:
        return
    src = "" if name == "-" else shlex.quote(name)
    iconv = f"iconv -f {code} -t UTF-8"
    how = (f"{ {'gzip': 'gzip', 'bz2': 'bzip2', 'lzma': 'xz'}[compressed]} -dc {src} | {iconv}" if compressed
           else f"{iconv} {src}".rstrip())
    raise InputError(f"{code} (or UTF-32) text, and tux2 reads UTF-8 (or Latin-1): convert it first, "
                     f"e.g. {how} > converted.txt", path="<stdin>" if name == "-" else name)


def _newline_copy(path, name):
    """``path`` itself, or when its lines end in a CR alone (old Mac files, some of
    UCI's) a copy with every CR a newline: the readers' kernels split lines at newlines
    only, and would read such a file as one line. A CR with no newline in the first
    64 KiB makes the file one; each line keeps its number for messages."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
            if b"\r" not in head or b"\n" in head:
                return path
            tmp = os.path.join(_spool_dir(), os.path.basename(name) if name != "-" else "stdin")
            with open(tmp, "wb") as out:
                out.write(head.replace(b"\r", b"\n"))
                for block in iter(lambda: f.read(1 << 24), b""):
                    out.write(block.replace(b"\r", b"\n"))
    except OSError as e:
        raise InputError(f"cannot read input: {e.strerror}", path=name) from None
    if path in _SPOOLED:                        # a decompressed or standard-input copy: this one replaces it
        remove_scratch(os.path.dirname(path))
        del _SPOOLED[path]
    _spooled(tmp, name)
    return tmp


# the Netflix prize's per-movie files (combined_data_N.txt): 'MOVIE:' lines, each above
# the 'user,rating,date' lines of its ratings (probe.txt: 'user' alone)
_NETFLIX_HEAD = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*\d+:[ \t\r]*\n[ \t]*\d+[ \t\r]*(?:,[^\n]*)?(?:\n|\Z)")
_KINDS_ENV = "TUX2_INPUT_KINDS"     # {temporary copy: how it was rewritten}, JSON, for worker processes


def input_kind(path):
    """How ``local_copy`` rewrote the input it made ``path`` from: "netflix" or None."""
    return _env_map(_KINDS_ENV).get(path) if isinstance(path, str) else None


def _netflix_copy(path, name):
    """``path`` itself, or when it is in the Netflix prize's per-movie format a copy
    read as an edge list: each ``MOVIE:`` line becomes the comment ``#MOVIE:`` and each
    line below it gets the movie as its second field (``user,rating,date`` →
    ``user,MOVIE,rating,date``), so every line keeps its number for messages."""
    import json
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError as e:
        raise InputError(f"cannot read input: {e.strerror}", path=name) from None
    if not _NETFLIX_HEAD.match(head):
        return path
    tmp = os.path.join(_spool_dir(), os.path.basename(name) if name != "-" else "stdin")
    if tmp == path:
        tmp += ".edges"
    movie = np.zeros(24, np.uint8)
    state = np.zeros(1, np.int64)               # the movie's digits in ``movie``
    try:
        with open(path, "rb") as src, open(tmp, "wb") as out:
            rest = b""
            while True:
                block = src.read(1 << 26)
                data = rest + block
                cut = data.rfind(b"\n") + 1 if block else len(data)
                rest = data[cut:]
                if cut:
                    buf = np.frombuffer(data, np.uint8, cut)
                    res = np.empty(cut + (int(np.count_nonzero(buf == 10)) + 1) * 26, np.uint8)
                    out.write(memoryview(res[:_netflix_lines(buf, movie, state, res)]))
                if not block:
                    break
    except OSError as e:
        remove_scratch(os.path.dirname(tmp))
        raise InputError(f"cannot read input: {e.strerror}", path=name) from None
    finally:
        if path in _SPOOLED:                    # a decompressed or standard-input copy: its rewrite replaces it
            remove_scratch(os.path.dirname(path))
            del _SPOOLED[path]
    _spooled(tmp, name)
    os.environ[_KINDS_ENV] = json.dumps({**_env_map(_KINDS_ENV), tmp: "netflix"})
    return tmp


@njit(cache=True, nogil=True)
def _netflix_lines(buf, movie, state, out):
    """Rewrite the whole lines ``buf`` of a Netflix per-movie file into ``out`` (see
    ``_netflix_copy``; ``movie``/``state``: the current movie's digits, carried from
    block to block); returns the bytes written. Lines before the first movie, blank
    and comment lines are copied as they are."""
    n = buf.shape[0]
    w = 0
    i = 0
    while i < n:
        j = i
        while j < n and buf[j] != 10:
            j += 1
        a = i
        while a < j and (buf[a] == 32 or buf[a] == 9 or buf[a] == 13):
            a += 1
        b = j
        while b > a and (buf[b - 1] == 32 or buf[b - 1] == 9 or buf[b - 1] == 13):
            b -= 1
        digits = b - a >= 2 and b - a <= 21 and buf[b - 1] == 58
        q = a
        while digits and q < b - 1:
            digits = 48 <= buf[q] <= 57
            q += 1
        if digits:                                  # 'MOVIE:' → '#MOVIE:'
            state[0] = b - 1 - a
            movie[:state[0]] = buf[a:b - 1]
            out[w] = 35
            w += 1
            k = i
        elif b > a and state[0] > 0 and buf[a] != 35 and buf[a] != 37:
            k = a
            while k < b and buf[k] != 44:
                k += 1
            out[w:w + k - i] = buf[i:k]             # the user, then ',MOVIE', then the rest
            w += k - i
            out[w] = 44
            w += 1
            out[w:w + state[0]] = movie[:state[0]]
            w += state[0]
        else:
            k = i
        out[w:w + j - k] = buf[k:j]
        w += j - k
        if j < n:
            out[w] = 10
            w += 1
        i = j + 1
    return w


@contextlib.contextmanager
def temporary_copies():
    """The copies ``local_copy`` makes within the block are removed when it ends, not
    at exit: a fit from Python reads its data once, and a notebook or a grid search
    over a .gz path would otherwise keep one decompressed copy per fit."""
    import json
    before = set(_SPOOLED)
    try:
        yield
    finally:
        names = spooled_names()
        for tmp in set(_SPOOLED) - before:
            remove_scratch(os.path.dirname(tmp))
            _SPOOLED.pop(tmp, None)
            names.pop(tmp, None)
        os.environ[_NAMES_ENV] = json.dumps(names)
        os.environ[_KINDS_ENV] = json.dumps({k: v for k, v in _env_map(_KINDS_ENV).items() if k in names})


def as_given(error, copy, given):
    """``error``, an InputError about ``copy`` (made by local_copy), naming the input as
    the user gave it (``given``; ``-`` is <stdin>)."""
    if copy == given:
        return error
    name = "<stdin>" if given == "-" else given
    out = InputError(str(error).replace(copy, name))
    out.path, out.line, out.text = name, error.line, error.text
    return out


# numeric ids this far beyond the number of records would make vertex arrays dwarf the data
SPARSE_SLACK = 1 << 20
SPARSE_INDICES = 1 << 26        # feature indices a linear model reads however sparse (coef_, on demand, a row each)


def id_space(n_records):
    """The vertex slots ``n_records`` records may size: 16 × records + 2^20."""
    return 16 * n_records + SPARSE_SLACK


def check_id_space(n_ids, n_records, what, path, locate=None, remedy="pass --ids string to map ids to dense ones",
                   known=0):
    """The one guard every loader uses before vertex arrays are sized: ``n_ids`` slots
    (the largest id + 1, or a header's count) for ``n_records`` records must stay within
    16 × records + 2^20, plus ``known`` slots that a model or a training set already sized
    (a test file's features), else InputError (``locate()`` → (line, text) of the culprit)."""
    if n_ids > id_space(n_records) + known:
        line, text = locate() if locate is not None else (None, None)
        raise InputError(f"{what} would need {n_ids} vertex slots for {n_records} records; {remedy}",
                         path=path, line=line, text=text)


def read_head(path, what, n=1 << 16, lines=0, bom=False):
    """The first ``n`` bytes of a file (for sniffing formats and headers), more while they
    hold under ``lines`` lines (a table of 10,000 columns), up to 64 MiB; a byte-order
    mark dropped, or with ``bom`` kept (offsets into the file then count it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(n)
            while head.count(b"\n") < lines and len(head) < 1 << 26:
                more = f.read(len(head))
                if not more:
                    break
                head += more
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror}", path=path) from None
    return head[len(BOM):] if head.startswith(BOM) and not bom else head


READ_WHOLE = 1 << 26        # files up to 64 MiB are read into memory; larger ones are mapped


def map_file(path, what, read_whole=READ_WHOLE):
    """The file's bytes (bytes-like: find, slices, np.frombuffer); b"" for an empty file.
    A file of up to ``read_whole`` bytes is read (a copy that nothing can take away: 0.09 s
    for 53 MB against 0.46 s of parsing); a larger one is mapped read-only (no copy)
    under :func:`tux2.busguard.guard`, so that another program truncating it is named
    instead of killing the process with SIGBUS. A file that shrinks while it is read is
    an InputError."""
    import mmap
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return b""
            if size > read_whole:
                from tux2 import busguard
                busguard.guard(path)
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            data = f.read(size)
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror}", path=path) from None
    if len(data) < size:
        from tux2.busguard import MESSAGE
        raise InputError(MESSAGE, path=path)
    return data


def _line_text(buf, pos, limit=1024):
    """The text of the line at ``pos``: its first ``limit`` bytes (messages quote only the
    start), a LineStart knowing the whole line's length if there is more."""
    end = buf.find(b"\n", pos)
    end = len(buf) if end < 0 else end
    text = bytes(buf[pos:min(end, pos + limit)]).decode("utf-8", "replace").rstrip("\r")
    if end - pos <= limit:
        return text
    step = 1 << 24                      # UTF-8 characters: the bytes that start one, counted a piece at a time
    chars = sum(int(np.count_nonzero((np.frombuffer(buf, np.uint8, min(step, end - i), i) & 0xC0) != 0x80))
                for i in range(pos, end, step))
    return LineStart(text, chars - (buf[end - 1:end] == b"\r"))


def read_edge_list(path, base=None, type_names=("src", "dst"), n_src=None, n_dst=None, columns=None,
                   values=np.float32):
    """Load an edge list file into a BipartiteGraph (ids as 0-based dense numbers; no
    id maps: see ``tux2.loaders.load_edges`` for the user-facing loader).

    ``base`` is the id base (0, 1 or "auto"); default 0, or 1 under a MatrixMarket
    header. ``columns``: see :func:`parse_columns`. ``values``: their dtype (see
    ``_parse_from``). Raises InputError naming the file and line for any malformed
    line, an empty input, NaN/inf values or negative ids.
    """
    path = os.fspath(path)
    raw = map_file(path, "edge list")
    fmt = edge_format(raw[:1 << 16], path, columns)
    s, d, v, ncols = _parse_from(raw, fmt, path, values=values)
    if len(s) == 0:
        raise no_edges(fmt, path)
    _rebase(s, d, resolve_base(base, fmt, s, d, path), path)
    return BipartiteGraph(s, d, v if ncols == 3 else None, n_src=n_src, n_dst=n_dst,
                          type_names=type_names, source=path)


def _parse_from(raw, fmt, path, ids=np.int32, values=np.float32):
    """(src, dst, values, columns) of the edge lines of ``raw`` laid out as ``fmt`` (an
    EdgeFormat); errors name the line. Parsed straight into the arrays the edges are
    kept in: int32 ids (int64 when an id needs it: read again), float32 values (12
    bytes per edge; ``values=np.float64`` keeps them as written, for checks a float32
    rounding would hide, such as counts above 2^24 or 2.0000001). Large inputs are
    parsed in chunks on every core (split at line starts); the result and any error
    are those of a serial parse."""
    start, line_offset = fmt.start, fmt.skip
    refuse_decimal_commas(raw, fmt, path)
    buf = np.frombuffer(raw, dtype=np.uint8)
    bounds = chunk_bounds(raw, start)
    # every chunk but the last ends with a newline, so its lines = its newlines
    cap = _count_newlines(buf, bounds)
    cap[-1] += 1
    offsets = np.zeros(len(cap) + 1, np.int64)
    np.cumsum(cap, out=offsets[1:])
    id_max = ID32_MAX if ids == np.int32 else ID62_MAX
    value_max = VALUE32_MAX if values == np.float32 else np.inf
    s, d, v = (np.empty(offsets[-1], t) for t in (ids, ids, values))
    res = np.zeros((len(cap), 5), np.int64)
    _parse_chunks(buf, bounds, offsets, s, d, v, res, *fmt.args, id_max, value_max)
    k, ncols, err = res[:, 0], res[:, 1], res[:, 2]
    cols = set(ncols[k > 0].tolist())
    if err.any() or len(cols) > 1:
        del s, d, v
        # the first error in file order, exactly as one serial pass reports it
        s, d, v = (np.empty(offsets[-1], t) for t in (np.int64, np.int64, values))
        n, nc, e, line, pos = _parse_edges(buf, start, s, d, v, *fmt.args, ID62_MAX, value_max)
        if e == 0:                            # no error, an id beyond int32: the int64 arrays are the result
            return s[:n], d[:n], v[:n], nc
        raise InputError(_MESSAGES[e], path=path, line=line + line_offset, text=_line_text(raw, pos))
    if (k[:-1] != cap[:-1]).any():            # blank or comment lines left gaps before the last chunk
        s, d, v = _compact(s, d, v, offsets, k)
    total = int(k.sum())
    return s[:total], d[:total], v[:total], (cols.pop() if cols else 0)


def chunk_bounds(raw, start):
    """Offsets [start, …, len(raw)] cutting raw[start:] at line starts into chunks of 1 MiB
    or more, 4 per core at most, for parsers that run a chunk per thread."""
    size = len(raw) - start
    chunks = max(1, min(4 * numba.get_num_threads(), size // (1 << 20)))
    bounds = [start]
    for c in range(1, chunks):
        nl = raw.find(b"\n", start + size * c // chunks)
        if nl < 0:
            break
        if nl + 1 > bounds[-1]:
            bounds.append(nl + 1)
    bounds.append(len(raw))
    bounds = np.unique(np.array(bounds, np.int64))
    return bounds if len(bounds) >= 2 else np.array([start, len(raw)], np.int64)


@njit(cache=True, nogil=True, parallel=True)
def _count_newlines(buf, bounds):
    out = np.zeros(len(bounds) - 1, np.int64)
    for c in prange(len(bounds) - 1):
        n = 0
        for i in range(bounds[c], bounds[c + 1]):
            if buf[i] == 10:
                n += 1
        out[c] = n
    return out


@njit(cache=True, nogil=True, parallel=True)
def _parse_chunks(buf, bounds, offsets, s, d, v, res, cs, cd, cv, mode, strict, id_max, value_max):
    for c in prange(len(bounds) - 1):
        o = offsets[c]
        k, ncols, err, line, pos = _parse_edges(buf[bounds[c]:bounds[c + 1]], 0, s[o:], d[o:], v[o:], cs, cd, cv,
                                                mode, strict, id_max, value_max)
        res[c, 0] = k
        res[c, 1] = ncols
        res[c, 2] = err
        res[c, 3] = line
        res[c, 4] = pos + bounds[c]


@njit(cache=True, nogil=True)
def _compact(s, d, v, offsets, k):
    """Move each chunk's k[c] edges to follow the previous chunks' (in place, leftwards)."""
    w = 0
    for c in range(len(k)):
        for i in range(offsets[c], offsets[c] + k[c]):
            s[w] = s[i]
            d[w] = d[i]
            v[w] = v[i]
            w += 1
    return s, d, v


# --------------------------------------------------------------------------- string ids
@njit(cache=True, nogil=True, inline="always")
def _trimmed(buf, a, b):
    """A TAB-mode field buf[a:b] as split_fields gives it: trimmed of spaces and CR, and of
    the quotes around a whole field."""
    while a < b and (buf[a] == 32 or buf[a] == 13):
        a += 1
    while b > a and (buf[b - 1] == 32 or buf[b - 1] == 13):
        b -= 1
    if b - a > 1 and buf[a] == 34 and buf[b - 1] == 34:
        a += 1
        b -= 1
    return a, b


@njit(cache=True, nogil=True)
def _string_lines(buf, start, bounds, values, cs, cd, vcol, need, mode, sepb):
    """The edge lines of buf[start:] whose ids are any tokens: ``bounds[:, k]`` gets the
    (start, end) offsets of edge k's src and dst tokens, ``values[k]`` its value (columns
    ``cs``, ``cd``, ``vcol``: -1 for none). Fields as :func:`id_fields` has them: with a
    separator byte ``sepb`` (a tab; a comma or semicolon: :func:`csv_fields`, quoted ones
    whole) the trimmed text between them, else :func:`split_fields`'s tokens. Returns
    (edges, ncols, ok); ok is False at the first
    line that is not a plain one (an error, an empty field read, a value that is no finite
    number): the caller then reads the file line by line, which names it."""
    n = buf.shape[0]
    pos = start
    k = 0
    ncols = 0
    last = max(max(cs, cd), vcol)
    cols_read = (cs, cd, vcol)
    fa = np.zeros(3, np.int64)                  # the src, dst and value fields of a line
    fb = np.zeros(3, np.int64)
    while pos < n:
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        fa[:] = 0
        fb[:] = 0
        t = 0                                   # fields, up to the last non-empty one
        lead = -1                               # the first token's start
        a = pos
        if sepb != 0:
            f = 0
            while a <= end:
                b = a
                if sepb != 9:                   # a quoted field of a CSV file: its separators are text
                    while b < end and (buf[b] == 32 or buf[b] == 13):
                        b += 1
                    if b < end and buf[b] == 34:
                        b += 1
                        while b < end and (buf[b] != 34 or (b + 1 < end and buf[b + 1] == 34)):
                            b += 2 if buf[b] == 34 else 1       # ("" is a quote inside it)
                while b < end and buf[b] != sepb:
                    b += 1
                x, y = _trimmed(buf, a, b)
                if y > x:
                    t = f + 1
                    if lead < 0:
                        lead = x
                for j in range(3):
                    if f == cols_read[j]:
                        fa[j] = x
                        fb[j] = y
                if t > last:
                    break
                f += 1
                a = b + 1
        else:
            while True:
                while a < end and _is_sep(buf[a], mode):
                    a += 1
                if a == end or t > last:
                    break
                b = a
                while b < end and not _is_sep(buf[b], mode):
                    b += 1
                if lead < 0:
                    lead = a
                    if buf[a] == 35 or buf[a] == 37:   # a comment line
                        break
                for j in range(3):
                    if t == cols_read[j]:
                        fa[j] = a
                        fb[j] = b
                hard = 0                        # a comma, semicolon or tab ends a field: two, an empty one
                c = b
                while c < end and _is_sep(buf[c], mode):
                    if buf[c] == 44 or buf[c] == 59 or buf[c] == 9:
                        hard += 1
                    c += 1
                if c < end and hard > 1 and t < last:
                    return k, ncols, False      # ',,' before a field read
                t += 1
                a = b
        if lead < 0 or buf[lead] == 35 or buf[lead] == 37:     # blank, or a '#'/'%' comment
            pos = end + 1
            continue
        if t <= need:
            return k, ncols, False
        cols = 3 if vcol >= 0 and t > vcol else 2
        if ncols == 0:
            ncols = cols
        elif cols != ncols:
            return k, ncols, False
        if fb[0] == fa[0] or fb[1] == fa[1] or (cols == 3 and fb[2] == fa[2]):
            return k, ncols, False              # an empty field read (TAB)
        bounds[0, k] = fa[0]
        bounds[1, k] = fb[0]
        bounds[2, k] = fa[1]
        bounds[3, k] = fb[1]
        if cols == 3:
            x, p, err = _parse_float(buf, fa[2], fb[2], mode)
            if err or p != fb[2]:
                return k, ncols, False
            values[k] = x
        k += 1
        pos = end + 1
    return k, ncols, True


@njit(cache=True, nogil=True)
def _intern(buf, lo, hi, ids, first):
    """Dense ids by first appearance of the tokens buf[lo[i]:hi[i]] (equal bytes, equal
    id), in ``ids``; ``first[j]``: the i where id j first appears. Returns the ids' count.
    A hash table of FNV-1a hashes, open addressing, at most half full: it grows with the
    ids, not the lines, so that it stays in the cache."""
    m = len(lo)
    size = 1 << 12
    mask = np.uint64(size - 1)
    table = np.full(size, -1, np.int64)
    hashes = np.empty(m, np.uint64)             # each id's
    count = 0
    for i in range(m):
        a, b = lo[i], hi[i]
        h = np.uint64(14695981039346656037)
        for p in range(a, b):
            h = (h ^ np.uint64(buf[p])) * np.uint64(1099511628211)
        if 2 * (count + 1) > size:              # twice the room, the ids placed again
            size *= 2
            mask = np.uint64(size - 1)
            table = np.full(size, -1, np.int64)
            for j in range(count):
                slot = np.int64(hashes[j] & mask)
                while table[slot] >= 0:
                    slot = (slot + 1) & (size - 1)
                table[slot] = j
        slot = np.int64(h & mask)
        while True:
            j = table[slot]
            if j < 0:
                table[slot] = count
                hashes[count] = h
                first[count] = i
                ids[i] = count
                count += 1
                break
            if hashes[j] == h:
                f = first[j]
                fa, fb = lo[f], hi[f]
                same = fb - fa == b - a
                q = 0
                while same and q < b - a:
                    same = buf[fa + q] == buf[a + q]
                    q += 1
                if same:
                    ids[i] = j
                    break
            slot = (slot + 1) & (size - 1)
    return count


STRING_COMPILED = 1 << 22      # string-id files of 4 MiB or more (150k lines: 1 s line by line) are read compiled:
#                                the first compiles the reader, about 6 s once per tux2 version


def string_edges(raw, fmt):
    """(src ids, dst ids, values or None, (src tokens, dst tokens)) of an edge list whose ids
    are any tokens, dense by first appearance on each side (tokens: their bytes); None when
    a line is not a plain one (the caller reads it line by line, to name it). In compiled
    code: the fields, then a hash table per side."""
    cs, cd, cv = fmt.cols
    vcol = 2 if cv == OPTIONAL else cv
    need = max(cs, cd) if cv == OPTIONAL else max(cs, cd, vcol)
    buf = np.frombuffer(raw, dtype=np.uint8)
    cap = int(_count_newlines(buf, np.array([fmt.start, len(buf)], np.int64))[0]) + 1
    bounds = np.empty((4, cap), np.int64)        # rows: src start, end, dst start, end
    values = np.empty(cap, np.float64)
    k, ncols, ok = _string_lines(buf, fmt.start, bounds, values, cs, cd, vcol, need, fmt.mode,
                                 fmt.sep_byte[0] if fmt.strict else 9 if fmt.mode == TAB else 0)
    if not ok or k == 0:
        return None
    out, tokens = [], []
    for side in (0, 1):
        lo, hi = bounds[2 * side, :k], bounds[2 * side + 1, :k]
        ids, first = np.empty(k, np.int64), np.empty(k, np.int64)
        m = _intern(buf, lo, hi, ids, first)
        out.append(ids)
        tokens.append([csv_unquote(raw[a - 1:b + 1]) if fmt.strict and raw[a - 1:a] == b'"' else raw[a:b]
                       for a, b in zip(lo[first[:m]].tolist(), hi[first[:m]].tolist())])
    return out[0], out[1], values[:k] if ncols == 3 else None, tokens


BOM = b"\xef\xbb\xbf"      # a UTF-8 byte-order mark some editors put first: skipped, never part of an id


def _header_end(head, path):
    """(offset where edges start, lines before it, default id base) from the file's first bytes."""
    return _matrix_market(head, path)[:3]


def is_matrix_market(head):
    """Whether ``head`` (a file's first bytes) starts with a MatrixMarket banner, in any case:
    gensim writes and reads '%%matrixmarket' (its MmReader lower-cases the banner)."""
    return head[:14].lower() == b"%%matrixmarket"


def _matrix_market(head, path):
    """(offset where edges start, lines before it, default id base, (rows, columns,
    entries) of a MatrixMarket size line or None). A MatrixMarket banner other than a
    coordinate matrix in general form (``array``, ``symmetric``, ``complex``) is an error:
    read as a general one its entries would be other numbers (half a symmetric matrix)."""
    bom = len(BOM) if head.startswith(BOM) else 0
    if not is_matrix_market(head[bom:]):
        return bom, 0, 0, None
    banner = head[bom:head.find(b"\n", bom) if b"\n" in head[bom:] else len(head)].decode("latin-1").lower().split()
    wrong = [w for w, ok in zip(banner[2:5], (("coordinate",), ("real", "integer", "pattern", "double"),
                                               ("general",))) if w not in ok]
    if wrong:
        raise InputError(f"a MatrixMarket {wrong[0]} matrix: tux2 reads coordinate matrices in general form "
                         "(real, integer or pattern entries, each written out: a symmetric matrix's other "
                         f"half too), the banner '%%MatrixMarket matrix coordinate real general'", path=path, line=1)
    pos, lines = bom, 0
    while True:
        nl = head.find(b"\n", pos)
        if nl < 0:
            raise InputError("MatrixMarket file has no size line", path=path, line=lines + 1)
        text = head[pos:nl].strip()
        lines += 1
        pos = nl + 1
        if text and not text.startswith(b"%"):
            size = text.split()
            if len(size) != 3 or not all(is_whole(t.decode("latin-1")) for t in size):
                raise InputError(f"MatrixMarket size line {text[:60].decode('latin-1')!r}: expected 'rows columns "
                                 "entries', three whole numbers", path=path, line=lines)
            return pos, lines, 1, tuple(int(t) for t in size)


def check_matrix_market(fmt, path, entries, rows, cols):
    """InputError when a MatrixMarket file's ``entries`` (data lines read) or its largest row
    and column ids (1-based, as written) disagree with its size line (``fmt.size``): a file cut
    short, or another matrix's size line."""
    size = getattr(fmt, "size", None)
    if size is None:
        return
    if entries != size[2]:
        raise InputError(f"the size line says {size[2]} entries and the file has {entries}: "
                         + ("cut short, or another matrix's size line" if entries < size[2] else
                            "another matrix's size line, or lines added after it was written"), path=path, line=fmt.skip)
    for name, largest, n in (("row", rows, size[0]), ("column", cols, size[1])):
        if largest > n:
            raise InputError(f"{name} id {largest} is beyond the size line's {n} {name}s", path=path, line=fmt.skip)


_SPLIT = None
_NUMBER = None


def split_line(line, mode=SPACE):
    """The tokens of one line as the parsers see them (``mode``: COLON, ':' separates
    too; TAB: the line's non-empty fields, see :func:`split_fields`)."""
    global _SPLIT
    if mode == TAB:
        return [t for t in split_fields(line, TAB) if t]
    if _SPLIT is None:
        _SPLIT = (re.compile(rb"[ \t,\r;\"]+"), re.compile(rb"[ \t,\r;\":]+"))
    return [t for t in _SPLIT[mode].split(line.strip(b" \t,\r\n;\"")) if t]


def split_fields(line, mode=SPACE, leading=False):
    """The fields of one line, empty ones included: a run of separators between two
    tokens that holds several commas, semicolons or tabs (``1,,3``) has an empty
    field for each but the first; with ``leading``, one before the first token counts
    too (a header ``,userId,movieId`` of pandas' ``to_csv``, whose index column has no
    name). Tokens as :func:`split_line` gives them. In TAB mode the text between tabs,
    trimmed of spaces and CR, and of the quotes around a whole field (``"1"``, not
    ``"weird al" yankovic``), but for the empty ones at the end (a blank line: none)."""
    if mode == TAB:
        out = [_unquote(f.strip(b" \r\n")) for f in line.split(b"\t")]
        while out and not out[-1]:
            out.pop()
        return out
    line = line.rstrip(b"\r\n")
    seps = [c for c in b",;\t" if c in line]
    if not leading and len(seps) < 2 and not any(c in line for c in b' \r"' + (b":" if mode else b"")):
        # most lines: one kind of separator, alone between the fields: split at it
        out = line.split(bytes(seps)) if seps else [line]
        while out and not out[-1]:
            out.pop()
        return out[next((i for i, t in enumerate(out) if t), len(out)):]
    return _split_fields(line, mode, leading)


def _split_fields(line, mode, leading):
    """split_fields of any line, by its runs of separators."""
    global _FIELDS
    if _FIELDS is None:
        _FIELDS = (re.compile(rb"([ \t,\r;\"]+)"), re.compile(rb"([ \t,\r;\":]+)"))
    parts = _FIELDS[mode].split(line)      # token, run, token, …, token ('' at the ends)
    hard = [sum(run.count(c) for c in b",;\t") for run in parts[1::2]]
    out = [b""] * hard[0] if leading and len(parts) > 1 and not parts[0] else []
    seen = False
    for i, tok in enumerate(parts[::2]):
        if tok:
            if seen:
                out += [b""] * max(0, hard[i - 1] - 1)
            out.append(tok)
            seen = True
    return out


_FIELDS = None


def _unquote(field):
    """A field quoted whole, as CSV writers quote (``"a b"``), without its quotes."""
    return field[1:-1] if len(field) > 1 and field[:1] == field[-1:] == b'"' else field


def data_fields(line, mode=SPACE, sep=None):
    """The fields of a line as the parsers number its columns ([] for a blank or comment
    line): :func:`split_line`'s tokens, in TAB mode :func:`split_fields`', with a
    separator byte ``sep`` (a comma- or semicolon-separated file's: ``EdgeFormat.fields``)
    :func:`csv_fields`'."""
    toks = split_line(line, mode)
    if not toks or toks[0][:1] in (b"#", b"%"):
        return []
    return csv_fields(line, sep) if sep else split_fields(line, mode) if mode == TAB else toks


def csv_unquote(field):
    """A CSV field without the quotes around it, its doubled quotes single (RFC 4180, as
    pandas and Python's csv read ``"The ""Great"" One"``)."""
    inner = _unquote(field)
    return inner.replace(b'""', b'"') if inner is not field else field


def csv_fields(line, sep=b","):
    """The fields of a comma- (or ``sep``-) separated line as the string-id reader has
    them: the text between separators, trimmed of spaces and CR, the quotes around a
    whole field removed; a separator inside a quoted field is part of it (``"Heat, The"``),
    a doubled quote one quote;
    empty fields at the end dropped. Ids may hold spaces (``Star Wars``)."""
    line = line.rstrip(b"\r\n")
    out, a, n = [], 0, len(line)
    while a <= n:
        b = a
        while b < n and line[b] in b" \r":
            b += 1
        if b < n and line[b] == 34:                  # quoted: its separators are text, "" a quote
            q = line.find(b'"', b + 1)
            while 0 <= q < n - 1 and line[q + 1] == 34:
                q = line.find(b'"', q + 2)
            b = n if q < 0 else q + 1
        e = line.find(sep, b)
        e = n if e < 0 else e
        out.append(csv_unquote(line[a:e].strip(b" \r")))
        a = e + 1
    while out and not out[-1]:
        out.pop()
    return out


def open_quote(line, sep=b","):
    """Whether a comma- (``sep``-) separated line opens a quoted field it does not close:
    an odd count of quotes, one of them starting a field (``12" pizza`` has its quote
    inside a field)."""
    return line.count(b'"') % 2 == 1 and re.search(rb'(^|' + re.escape(sep) + rb')[ \t]*"', line) is not None


def id_fields(line, fmt):
    """The fields of a data line as the string-id reader numbers its columns: in a
    comma- or semicolon-separated file :func:`csv_fields`, else :func:`split_fields`."""
    return csv_fields(line, fmt.sep_byte) if fmt.strict else split_fields(line, fmt.mode)


def is_number(tok):
    """Whether a token is a number in the parsers' grammar (nan and inf included)."""
    global _NUMBER
    if _NUMBER is None:
        import re
        _NUMBER = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.I)
    return _NUMBER.fullmatch(tok) is not None


def is_whole(text, signed=False):
    """Whether ``text`` (a str) is a whole number int() reads: ASCII digits ('²' and '١'
    are str.isdigit() too, and int('²') a ValueError), a sign first when ``signed``."""
    t = str(text).strip()
    t = t.lstrip("+-") if signed else t
    return t.isascii() and t.isdigit()


class EdgeFormat:
    """How an edge-list file is laid out, from its first bytes (:func:`edge_format`):
    data start at byte ``start`` after ``skip`` lines (a byte-order mark, a MatrixMarket
    header and size line, or a header line of column ``names``); ``mode``: the
    separators (SPACE, COLON: ``::`` separates, TAB: tabs alone separate); ``width``:
    columns of the first data line; ``cols``: 0-based columns of src, dst and value
    (OPTIONAL: the third when present; NONE: no value); ``matrix_market``: ids are 1-based."""

    def __init__(self, start=0, skip=0, matrix_market=False, mode=SPACE, names=None, width=0,
                 cols=(0, 1, OPTIONAL), explicit=False, sep="space"):
        self.start, self.skip, self.matrix_market, self.mode = start, skip, matrix_market, mode
        self.names, self.width, self.cols, self.explicit, self.sep = names, width, tuple(cols), explicit, sep
        self.by_name = False        # cols picked by the header's names (named_columns), not positions

    @property
    def strict(self):
        """Whether commas or semicolons alone separate the fields (a space inside one is an error)."""
        return self.mode == SPACE and self.sep in ("comma", "semicolon")

    def fields(self, line):
        """A data line's fields as the string-id reader numbers them (:func:`data_fields`)."""
        return data_fields(line, self.mode, self.sep_byte if self.strict else None)

    @property
    def sep_byte(self):
        """The byte that alone separates the fields of a comma- or semicolon-separated file."""
        return b";" if self.sep == "semicolon" else b","

    @property
    def args(self):
        """The parser's column arguments (cs, cd, cv, mode, strict)."""
        return (*self.cols, self.mode, self.strict)

    def _col(self, j):
        if self.names and j < len(self.names):
            return self.names[j] or "(unnamed)"
        return str(j + 1)

    def notable(self):
        """Whether the file is anything but plain 'src dst [value]' lines."""
        return bool(self.explicit or self.names or self.mode == COLON or self.width > 3)

    def describe(self):
        """One phrase for a run's header: separator, header, the columns used and ignored."""
        sep = {"colon": "'::'-separated", "tab": "tab-separated", "comma": "comma-separated",
               "semicolon": "semicolon-separated"}.get(self.sep, "space-separated")
        cs, cd, cv = self.cols
        used = [cs, cd] + ([2 if cv == OPTIONAL else cv] if cv != NONE and (cv != OPTIONAL or self.width >= 3)
                           else [])
        out = sep + (f", header {','.join(self.names)}" if self.names else "")
        out += f"; columns {','.join(self._col(j) for j in used)}"
        if self.names or self.explicit:
            out += f" ({','.join(str(j + 1) for j in used)}{', by name' if self.by_name else ''})"
        if self.width > len(used):
            rest = [self._col(j) for j in range(self.width) if j not in used]
            out += (f" of {self.width}; column{'s' if len(rest) > 1 else ''} {', '.join(rest)} ignored"
                    + ("" if self.explicit else " (--columns picks others)"))
        return out


MAX_COLUMN = 2**31 - 1      # the largest --columns position


def parse_columns(spec, names, path=None):
    """(src, dst, value) 0-based columns of a ``--columns`` spec: ``"1,2,3"`` (1-based
    positions), header names ``"user,item,rating"``, or a sequence of either; two
    entries mean no value column."""
    items = [x.strip() for x in spec.split(",")] if isinstance(spec, str) else [str(x).strip() for x in spec]
    if len(items) not in (2, 3) or not all(items):
        raise InputError(f"columns {spec!r}: give two or three columns, src,dst[,value] (1-based positions or "
                         "header names)", path=path)
    out = []
    for it in items:
        if is_whole(it):                          # ('²': a name)
            if not 1 <= int(it) <= MAX_COLUMN:       # (past int64 the readers' compiled loops cannot take it)
                raise InputError(f"columns {spec!r}: positions count from 1 to {MAX_COLUMN}", path=path)
            out.append(int(it) - 1)
            continue
        lower = [n.lower() for n in names or ()]
        if not names:
            raise InputError(f"columns {spec!r}: {it!r} is a name, but the file has no header line of names; "
                             "give 1-based positions (1,2,3)", path=path)
        if it.lower() not in lower:
            raise InputError(f"columns {spec!r}: no column {it!r} in the header ({', '.join(names)})", path=path)
        out.append(lower.index(it.lower()))
    if len(set(out)) != len(out):
        raise InputError(f"columns {spec!r}: a column is named twice", path=path)
    return (out[0], out[1], out[2] if len(out) == 3 else NONE)


# a field of digits,digits between semicolons or quotes: a decimal comma (European CSV: '1;2;3,5')
_DECIMAL_COMMA = re.compile(rb'(?:^|[;"])[ \t]*([-+]?\d+,\d+)[ \t]*(?=[;"\r]|$)', re.MULTILINE)


def refuse_decimal_commas(raw, fmt, path):
    """A semicolon-separated file's first decimal comma, on any line, as an InputError
    naming it: '1;3;3,5' below '1;2;4' read as the rating 3 and an ignored column 5."""
    m = _DECIMAL_COMMA.search(raw, fmt.start) if fmt.sep == "semicolon" else None
    if m is None:
        return
    line = int(np.count_nonzero(np.frombuffer(raw, np.uint8, count=m.start()) == 10)) + 1
    lo = max(0, m.start() - 1024)
    window = bytes(raw[lo:m.end() + 1024])
    raise decimal_comma(m, path, line, _line_text(window, window.rfind(b"\n", 0, m.start() - lo) + 1))


def decimal_comma(m, path, line, text):
    """The InputError of a decimal comma (``m``: its _DECIMAL_COMMA match) on ``line``."""
    return InputError("a decimal comma in a semicolon-separated line: commas separate fields too, so "
                      f"{m.group(1).decode('utf-8', 'replace')!r} would read as two numbers; write decimal points",
                      path=path, line=line, text=text)


# a quoted field holding a comma or semicolon, which separate fields there all the same (README: Input)
_QUOTED_FIELD = re.compile(rb'(?:^|[,;])[ ]*("[^"\n]*")')


def quoted_separator(line, what="its"):
    """'' or, for a line (bytes or text, not tab-separated) with a quoted field holding a
    comma or semicolon, why it has more fields than it seems: tux2 splits there too."""
    line = line.encode("utf-8", "replace") if isinstance(line, str) else line or b""
    m = None if b"\t" in line else next((f for f in _QUOTED_FIELD.findall(line) if b"," in f or b";" in f), None)
    if m is None:
        return ""
    sep = "," if b"," in m else ";"
    fields = split_line(line)
    return (f"; {what} quoted field {_preview(m, 40)} holds a '{sep}', which separates fields in tux2's "
            f"reading of numbers, quoted or not: the line reads as {len(fields)} fields ({', '.join(_preview(f) for f in fields)}"
            f"); write the field without '{sep}', or the file tab-separated (only tabs separate there)")


def _data_lines(head, pos, no, mode):
    """(start, end + 1, line number, text) of the lines of head[pos:] (line ``no`` + 1 on)
    that are neither blank nor comments as the parsers in ``mode`` see them."""
    while pos < len(head):
        nl = head.find(b"\n", pos)
        end = nl if nl >= 0 else len(head)
        no += 1
        toks = split_line(head[pos:end], mode)
        if toks and toks[0][:1] not in (b"#", b"%"):
            yield pos, end + 1, no, head[pos:end]
        pos = end + 1


def edge_format(head, path, columns=None, quotes=False, header=None):
    """The :class:`EdgeFormat` of an edge-list file from its first bytes ``head``.

    The first data line is a header when none of its tokens is a number while the
    next line has a number in one of its columns, or there is no next line and it has
    two names or more (a header alone: ``no_edges`` says so), or each token names a
    column's role, a user's among them (``user,item`` above string ids), or when
    ``columns`` uses names. ``quotes``: a first line that has more or fewer fields than
    the next for a quoted comma or semicolon (which separates: README, Input) is an error.
    ``header=False``: the first line is data whatever it holds."""
    start, skip, base, size = _matrix_market(head, path)
    refuse = None       # a line split by a quoted comma: an error once the columns read are known
    if base:
        fmt = EdgeFormat(start, skip, matrix_market=True)
        fmt.size = size
        if columns is not None:
            fmt.cols, fmt.explicit = parse_columns(columns, None, path), True
        return fmt
    first = next(_data_lines(head, start, skip, SPACE), None)     # it decides the separators
    mode = SPACE if first is None else TAB if b"\t" in first[3] else COLON if b"::" in first[3] else SPACE
    lines = list(itertools.islice(_data_lines(head, start, skip, mode), 2))
    if not lines:
        fmt = EdgeFormat(start, skip, mode=mode)
    else:
        first = lines[0][3]
        toks = split_line(first, mode)
        named = columns is not None and any(not str(x).strip().isdigit() for x in
                                            (columns.split(",") if isinstance(columns, str) else columns))
        roles = [role(t.decode("utf-8", "replace")) for t in toks]     # (string ids: no numbers below to tell)
        below = lines[-1][3]                    # a CSV's fields as pandas has them: 'user,title,rating' over
        sepb = b"," if b"," in below else b";" if b";" in below else None      # 'alice,Star Wars,5' (5 a number)
        number_below = any(is_number(t) for t in split_line(below, mode)[:len(toks)]) or (
            mode == SPACE and sepb and any(is_number(t) for t in csv_fields(below, sepb)[:len(csv_fields(first, sepb))]))
        header = header is not False and (named or (not any(is_number(t) for t in toks) and (
            len(toks) >= 2 if len(lines) == 1 else number_below or (None not in roles and 0 in roles))))
        names = None
        if header:
            names = [t.decode("utf-8", "replace").strip("\"'") for t in split_fields(first, mode, leading=True)]
            start, skip = lines[0][1], lines[0][2]
            data = lines[1][3] if len(lines) > 1 else first
        else:
            data = first
        data_no = lines[1][2] if header and len(lines) > 1 else lines[0][2]
        comma = _DECIMAL_COMMA.search(data) if mode == SPACE and b";" in data else None
        if comma:       # '3,5' would read as two fields, 3 and 5 (the line is taken as comma-separated, so
            raise decimal_comma(comma, path, data_no, data.decode("utf-8", "replace"))   # the scan does not see it)
        width = len(split_fields(data, mode) if mode == TAB else split_line(data, mode))
        sep = "colon" if mode == COLON else "tab" if mode == TAB else "comma" if b"," in data else \
            "semicolon" if b";" in data else "space"
        fmt = EdgeFormat(start, skip, False, mode, names, width, sep=sep)
        if fmt.strict:          # only commas (semicolons) separate: 'user id' is one name, 'Star Wars' one id
            for no, text in ((lines[0][2], first), (data_no, data)):    # (else a later line was named)
                if open_quote(text, fmt.sep_byte):
                    raise InputError("a quoted field does not close on this line: a missing quote, or a line break "
                                     "inside quotes, which pandas reads on over the next line (tux2 reads a rating "
                                     "a line)", path=path, line=no, text=text.decode("utf-8", "replace"))
            fmt.width = len(csv_fields(data, fmt.sep_byte))
            if names:
                fmt.names = names = [t.decode("utf-8", "replace").strip("\"'")
                                     for t in csv_fields(first, fmt.sep_byte)]
        n = [len(split_line(x[3], mode)) for x in lines]        # (the header's names, or the first data line's)
        if len(n) > 1:          # the data line against the header, or the first data line against the next
            _empty_at_end(data, data_no, *((n[1], n[0]) if header else n), fmt, path)
        quoted = next((x for x in lines if quoted_separator(x[3])), None) if quotes and mode != TAB else None
        even = fmt.strict and len({len(csv_fields(x[3], fmt.sep_byte)) for x in lines}) == 1
        if quoted and len(n) == 2 and n[0] != n[1] and not (     # '"a,b",x,3' as 4 fields, silently or a bad value,
                even and (quoted is lines[0] and header or       # but for a header or string ids, read whole
                          not all(t.isdigit() for t in split_line(quoted[3])[:2]))):
            refuse = InputError(f"line {lines[0][2]} has {n[0]} {'names' if header else 'fields'}, line "
                                f"{lines[1][2]} {n[1]} fields" + quoted_separator(quoted[3]),
                                path=path, line=quoted[2], text=quoted[3].decode("utf-8", "replace"))
            # ... or in a column not read ('1,10,"Heat, The",4' by 1,2,4), which the parser skips whole
            refuse = (refuse, lines[1:] if header else lines) if even else refuse
        if names and not names[0] and len(names) == width >= 3:
            # pandas' to_csv: a first column without a name is the row index, not the user
            fmt.cols = (1, 2, 3 if width >= 4 else NONE)
        if columns is None:
            fmt.cols, fmt.by_name = named_columns(names, fmt.cols)
    if columns is not None:
        fmt.cols, fmt.explicit = parse_columns(columns, fmt.names, path), True
    if isinstance(refuse, tuple):
        refuse, data = refuse
        cs, cd, cv = fmt.cols
        read = {cs, cd, 2 if cv == OPTIONAL else cv}
        refuse = refuse if any(i in read for x in data for i, f in enumerate(csv_fields(x[3], fmt.sep_byte))
                               if fmt.sep_byte in f) else None
    if refuse is not None:
        raise refuse
    return fmt


def _empty_at_end(data, number, have, wider, fmt, path):
    """A first data line ending in a comma or semicolon ('1,2,': pandas' to_csv of a missing
    rating) with ``have`` fields, fewer than the header names or the next line has
    (``wider``): the empty field's error, at its line, not the next line's (a file whose
    every line ends in a separator has as many fields on each)."""
    if fmt.sep in ("comma", "semicolon") and data.rstrip(b"\r ").endswith(fmt.sep_byte) and have < wider:
        raise empty_at_end(have, fmt.names, number, data, path)


def empty_at_end(have, names, number, line, path):
    """The error of a first data line whose field ``have`` (0-based) and those after it are
    empty at the end of the line (an edge list's or a table's: tux2.tables)."""
    name = f" ({names[have]!r})" if names and len(names) > have else ""
    return InputError(f"empty field in column {have + 1}{name} at the end of the line: a missing value? Fill it in "
                      "or leave the line out", path=path, line=number, text=line.decode("utf-8", "replace").rstrip("\r"))


# header names of the src, dst and value columns (lower case, without '_', '-', ' ', '.'):
# Spark's ALS, LensKit and Microsoft's recommenders select these columns by name, not position
_ROLE_NAMES = ({"user", "userid", "uid", "customer", "customerid", "reviewer", "reviewerid", "member", "memberid",
                "doc", "docid", "document", "documentid"},
               {"item", "itemid", "iid", "movie", "movieid", "product", "productid", "asin", "parentasin", "isbn",
                "book", "bookid", "song", "songid", "track", "trackid", "artist", "artistid", "business",
                "businessid", "word", "wordid", "term"},
               {"rating", "ratings", "score", "stars", "overall", "value", "weight", "count", "plays", "playcount",
                "bookrating"})


_RATINGS = {"rating", "ratings", "score", "stars", "overall", "bookrating"}   # values that are no count or weight


def _key(name):
    return re.sub(r"[_\-\s.]", "", str(name).lower())


def role(name):
    """0, 1 or 2 when a header name says the column holds users (src), items (dst) or
    values (ratings), else None."""
    return next((r for r, names in enumerate(_ROLE_NAMES) if _key(name) in names), None)


def named_columns(names, cols):
    """(cols, by name): the columns a header's names give the src (user) and dst (item)
    and, when one is named, the value, when both ids are named once each (a header
    ``item,user,rating`` read by position would swap users and items silently); when
    they are not, the one column named as ratings are after a third that is no value
    ('u,i,timestamp,rating': the ratings, not the timestamps); else ``cols`` as they are."""
    found = [[j for j, n in enumerate(names or ()) if role(n) == r] for r in range(3)]
    if len(found[0]) != 1 or len(found[1]) != 1:
        later = [j for j, n in enumerate(names or ()) if j >= 2 and _key(n) in _RATINGS]
        if len(later) == 1 and cols == (0, 1, OPTIONAL) and role(names[2]) != 2:
            return (0, 1, later[0]), True
        return cols, False
    cs, cd = found[0][0], found[1][0]
    cv = found[2][0] if len(found[2]) == 1 else OPTIONAL if 2 not in (cs, cd) else NONE
    value = {OPTIONAL: 2}
    if (cs, cd, value.get(cv, cv)) == (cols[0], cols[1], value.get(cols[2], cols[2])):
        return cols, False
    return (cs, cd, cv), True


def no_edges(fmt, path, what="edges"):
    """The InputError of an edge list (its EdgeFormat ``fmt``), or a table of ``what``,
    without a data line."""
    if fmt.names:
        return InputError(f"no {what} found: the file's one line ({' '.join(fmt.names)}) reads as a header line "
                          "(names, not numbers) and no data lines follow; if it is data, put a header line above it "
                          + ("(e.g. 'user item rating')" if what == "edges" else "(the columns' names)"), path=path)
    return InputError(f"no {what} found (the file is empty or has only comments)", path=path)


def resolve_base(base, fmt, s, d, path):
    """The id base: 0 or 1 as given, or for "auto" 1 under a MatrixMarket header or when
    no id 0 occurs on either side, else 0 (None: the header's, 0 or 1)."""
    if base is None:
        return 1 if fmt.matrix_market else 0
    if base == "auto":
        if fmt.matrix_market:
            return 1
        return 1 if len(s) and int(s.min()) >= 1 and int(d.min()) >= 1 else 0
    if base not in (0, 1, "0", "1"):
        raise InputError(f"id base must be 0, 1 or 'auto', not {base!r}", path=path)
    return int(base)


def _rebase(s, d, base, path):
    """Shift ids of base ``base`` to 0 in place; ids below the base are an error."""
    if not base or not len(s):
        return
    for name, a in (("src", s), ("dst", d)):
        if a.min() < base:
            i = int(np.argmin(a))
            raise InputError(f"{name} id {int(a[i])} is below the id base {base} (edge {i})", path=path)
    s -= base
    d -= base


def byte_range(size, start, part, parts, buf):
    """[lo, hi) of share ``part`` of ``parts`` of buf[start:size], moved to line starts."""
    def line_start(x):
        if x <= start or x >= size:
            return min(max(x, start), size)
        while x < size and buf[x - 1] != 10:
            x += 1
        return x
    span = size - start
    return line_start(start + span * part // parts), line_start(start + span * (part + 1) // parts)


def read_edge_range(path, part, parts, base=None, columns=None):
    """The edges of share ``part`` of ``parts`` of an edge-list file, split at line
    boundaries by bytes (each worker of a distributed run reads only its share).
    Returns (src, dst, values or None); errors name the file and the absolute line.
    ``base`` "auto" leaves the ids as written (the workers decide the base together)."""
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise InputError(f"cannot read edge list: {e.strerror}", path=path) from None
    fmt = edge_format(head, path, columns) if size else EdgeFormat()
    if size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), None
    buf = np.frombuffer(map_file(path, "edge list"), np.uint8)
    refuse_decimal_commas(buf, fmt, path)
    lo, hi = byte_range(len(buf), fmt.start, part, parts, buf)
    chunk = np.ascontiguousarray(buf[lo:hi])
    cap = int(np.count_nonzero(chunk == 10)) + 1
    s = np.empty(cap, np.int64)
    d = np.empty(cap, np.int64)
    v = np.empty(cap, np.float64)
    # values beyond float32 refused, as the single process's reader does: the programs keep them as float32
    k, ncols, err, err_line, err_pos = _parse_edges(chunk, 0, s, d, v, *fmt.args, ID62_MAX, VALUE32_MAX)
    if err:
        before = int(np.count_nonzero(buf[:lo] == 10))
        raise InputError(_MESSAGES[err] + other_format(path, columns), path=path, line=before + err_line,
                         text=_line_text(bytes(chunk), err_pos))
    s, d, v = s[:k], d[:k], v[:k]
    if base != "auto":
        _rebase(s, d, resolve_base(base, fmt, s, d, path), path)
    for name, a in (("source", s), ("destination", d)):      # this share's edges stand for 1/parts of all
        if len(a) and base != "auto":           # "auto": tux2.ingress numbers far-apart ids itself
            i = int(np.argmax(a))
            check_id_space(int(a[i]) + 1, k * parts, f"{name} id {int(a[i])}", path,
                           lambda: edge_line(path, i, int(np.count_nonzero(buf[:lo] == 10))))
    return s, d, (v if ncols == 3 else None)


def write_edge_list(path, graph, fmt="%.6g"):
    """Write ``src dst value`` lines (0-based ids)."""
    with open(path, "w") as f:
        if graph.values is None:
            np.savetxt(f, np.column_stack([graph.src, graph.dst]), fmt="%d %d")
        else:
            for a, b, r in zip(graph.src.tolist(), graph.dst.tolist(), graph.values.tolist()):
                f.write(f"{a} {b} {fmt % r}\n")


# --------------------------------------------------------------------------- corpora (LDA)
def edge_line(path, index, skip_lines=0):
    """(line number, text) of the ``index``-th data line (0-based; blank and comment lines
    not counted) after the first ``skip_lines`` lines: for error messages about a value
    found after parsing."""
    seen = 0
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            if no <= skip_lines:
                continue
            if no == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            text = raw.strip()
            if not text or text[:1] in (b"#", b"%"):
                continue
            if seen == index:
                return no, raw.decode("utf-8", "replace").rstrip("\r\n")
            seen += 1
    return None, None


def read_toml(path, what="config"):
    """The TOML file ``path`` as a dict; InputError 'FILE:LINE: not valid TOML: …' (with
    the line's text) where tomllib finds an error, 'FILE: cannot read …' if unreadable."""
    import re
    import tomllib
    try:
        with open(path, "rb") as f:
            raw = f.read()
        return tomllib.loads(raw.decode("utf-8"))
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror}", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not valid TOML: not UTF-8 text (byte {e.start})", path=path) from None
    except tomllib.TOMLDecodeError as e:
        lines = raw.decode("utf-8").split("\n")
        # '(at line N, column M)', or '(at end of document)': then the last line
        at = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", str(e), re.S)
        what, line = (f"{at[1]} (column {at[3]})", int(at[2])) if at else (str(e), len(raw.rstrip().split(b"\n")))
        raise InputError(f"not valid TOML: {what}", path=path, line=line, text=lines[line - 1].rstrip("\r")) from None


def sample_error(message, source, index):
    """InputError about sample ``index`` (0-based) of ``source``: FILE:LINE and the line's
    text when ``source`` is a file of one sample per data line (libsvm, a table), else its index."""
    if isinstance(source, str) and os.path.isfile(source):
        try:                # a table's header line (tux2.tables) is no sample; a libsvm line starts with a number
            skip = edge_format(read_head(source, "input"), source).skip
        except InputError:
            skip = 0
        line, text = edge_line(source, index, skip)
        if line is not None:
            return InputError(message, path=source, line=line, text=text)
    return InputError(f"{message} (sample {index})", path=source)


# token counts per (document, word) pair: each token becomes sampler state, so a larger
# count on one line is a damaged file far more often than a real corpus
MAX_COUNT = 1 << 24


def check_counts(v, path, skip_lines=0, what="count"):
    """Every edge value ``v`` (as written: parsed into float64) must be a positive
    integer (token counts) of at most 2^24, which float32 holds exactly; the error
    names the line."""
    if v is None:
        raise InputError(f"expected a third column with the {what}", path=path)
    bad = np.flatnonzero((v < 1) | (v != np.floor(v)))
    if len(bad):
        line, text = edge_line(path, int(bad[0]), skip_lines)
        raise InputError(f"{what} {v[bad[0]]:.15g} is not a positive integer", path=path, line=line, text=text)
    big = np.flatnonzero(v > MAX_COUNT)
    if len(big):
        line, text = edge_line(path, int(big[0]), skip_lines)
        raise InputError(f"{what} {v[big[0]]:.15g} is too large for one pair (at most {MAX_COUNT})", path=path,
                         line=line, text=text)


def read_docword(path, type_names=("doc", "word")):
    """UCI bag-of-words ``docword`` file: three header lines D, W, NNZ, then
    ``docID wordID count`` lines with 1-based ids."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"cannot read docword file: {e.strerror}", path=path) from None
    raw = raw[len(BOM):] if raw.startswith(BOM) else raw
    header, pos = [], 0
    for no, name in enumerate(("D (number of documents)", "W (vocabulary size)", "NNZ (number of lines)"), 1):
        nl = raw.find(b"\n", pos)
        text = raw[pos: nl if nl >= 0 else len(raw)].decode("utf-8", "replace").strip()
        try:
            header.append(int(text))
        except ValueError:
            raise InputError(f"docword header line {no} should be {name}", path=path, line=no,
                             text=text) from None
        if header[-1] < 0:
            raise InputError(f"docword header line {no}: {name} is negative", path=path, line=no, text=text)
        if nl < 0 and no < 3:
            raise InputError("docword file ends inside its 3-line header", path=path, line=no)
        pos = nl + 1 if nl >= 0 else len(raw)
    D, W, nnz = header
    lines = raw.count(b"\n", pos) + 1
    for no, (name, n) in enumerate((("D (documents)", D), ("W (words)", W)), 1):
        check_id_space(n, min(nnz, lines), f"header line {no}: {name} = {n}", path, lambda: (no, str(n)),
                       "the header does not match the file")
    s, d, v, ncols = _parse_from(raw, EdgeFormat(pos, 3), path, values=np.float64)
    k = len(s)
    if k != nnz:
        raise InputError(f"the header says NNZ = {nnz} but the file has {k} lines after it "
                         + ("(truncated?)" if k < nnz else "(lines added, or the header of another file?)"),
                         path=path, line=3)
    if k == 0:
        raise InputError("no 'docID wordID count' lines after the header", path=path)
    for name, a, n in (("docID", s, D), ("wordID", d, W)):
        bad = np.flatnonzero((a < 1) | (a > n))
        if len(bad):
            line, text = edge_line(path, int(bad[0]), 3)
            raise InputError(f"{name} {int(a[bad[0]])} is outside 1 … {n} (docword ids are 1-based)",
                             path=path, line=line, text=text)
    check_counts(v if ncols == 3 else None, path, skip_lines=3)
    return BipartiteGraph(s - 1, d - 1, v.astype(np.float32), D, W, type_names, path)


def read_words(path, n, error, why):
    """The words of a vocabulary file, one per line: at least ``n``, else ``error``
    saying ``why`` that many are needed."""
    try:
        with open(path, "rb") as f:
            lines = f.read().removeprefix(b"\xef\xbb\xbf").split(b"\n")     # a UTF-8 byte-order mark is skipped
    except OSError as e:
        raise error(f"{path}: cannot read vocabulary: {e.strerror}") from None
    words = []
    for no, line in enumerate(lines, 1):
        try:
            words.append(line.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            raise error(f"{path}:{no}: vocabulary is not UTF-8 text ({e.reason} at byte {e.start} of the line)") \
                from None
    while words and not words[-1]:
        words.pop()
    if len(words) < n:
        raise error(f"{path}: vocabulary has {len(words)} words but {why}")
    return words


_TOKEN = re.compile(r"[^\W_]+")
_SEPARATOR = re.compile(r"[^\w\s]")
_MARKED = None


def tokenize(text):
    """Lower-cased runs of letters and digits with their combining marks, in Unicode's
    composed form (NFC): a word is one word however it was typed ('naïve' decomposed;
    Hindi's vowel signs, which are marks, not letters); '_' separates."""
    global _MARKED
    text = unicodedata.normalize("NFC", text).lower()
    if not any(unicodedata.category(c)[0] == "M" for c in set(_SEPARATOR.findall(text))):
        return _TOKEN.findall(text)               # no mark (most text): the plain pattern, 3 times as fast
    if _MARKED is None:
        _MARKED = re.compile(rf"(?:[^\W_]|[{_mark_class()}])+")
    return _MARKED.findall(text)


def _mark_class():
    """The combining marks (Unicode categories Mn, Mc, Me) as a regex class body."""
    marks = [c for block in (range(0x300, 0x20000), range(0xE0100, 0xE01F0)) for c in block
             if unicodedata.category(chr(c))[0] == "M"]
    ranges, start = [], marks[0]
    for prev, c in zip(marks, marks[1:] + [-1]):
        if c != prev + 1:
            ranges.append(f"{chr(start)}-{chr(prev)}" if prev > start else chr(start))
            start = c
    return "".join(ranges)


def is_word(w):
    """A token LDA keeps by default: two characters or more, not digits only ('x', '1' and
    '2024' are not words; scikit-learn's default token pattern drops one-character tokens,
    MALLET's keeps letters only)."""
    return len(w) > 1 and not w.isdigit()


def drop_numbers(g, words):
    """(``text_docs``'s graph and vocabulary) without the tokens that are not ``is_word``,
    the words renumbered in order."""
    keep = np.fromiter((is_word(w) for w in words), bool, len(words))
    if keep.all():
        return g, words
    e = keep[g.dst]
    out = BipartiteGraph(g.src[e], (np.cumsum(keep) - 1)[g.dst[e]], g.values[e], g.n_src, int(keep.sum()),
                         g.type_names, g.source)
    return out, [w for w, k in zip(words, keep) if k]


def read_text_docs(path, type_names=("doc", "word"), min_count=1, stopwords=(), csv=None, max_df=1.0):
    """One document per line (blank lines are empty documents, so document ids are
    line numbers − 1): ``text_docs`` of the file's lines. With ``csv`` (``csv_header``'s
    answer) one document per row below the header, its text column's (blank lines are
    no rows)."""
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read text corpus: {e.strerror}", path=path) from None
    with f:
        lines = _utf8_lines(f, path)
        return text_docs(lines if csv is None else _csv_texts(lines, csv, path), type_names, min_count, stopwords,
                         path, max_df=max_df)


TEXT_COLUMNS = ("text", "body", "content", "document", "abstract", "review", "sentence", "message", "comment",
                "description")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def csv_header(path, column=None):
    """(delimiter, column names, text column, header lines) when the first line of a text corpus is
    a CSV or TSV header: names only, one of them a text column's (TEXT_COLUMNS, any
    case; the first of them in that order), or a .csv/.tsv file's only column. Else
    None, or an error when it is a header of names over rows of as many fields (or of
    a .csv/.tsv file) without a text column. ``column`` (--text-column): the text
    column's name, or its 1-based position; the first line is then the header, unless
    the column is a position and a field of it is a number (a label or id: tomotopy's
    ``0<TAB>text``): that line is then a row, and its fields stand for the names."""
    import csv
    head = read_head(path, "corpus")
    lines = head.split(b"\n")
    first = lines[0].rstrip(b"\r").decode("utf-8", "replace")
    if first.startswith("\ufeff"):
        first = first[1:]
    delim = "\t" if "\t" in first else ","
    names = [n.strip().strip('"').strip() for n in first.split(delim)]
    if column is not None:
        col = text_column(names, column, path, first)
        row = is_whole(column) and any(is_number(n.encode()) for n in names)
        return delim, names, col, 0 if row else 1
    if not all(_NAME.fullmatch(n) for n in names):
        return None
    low = [n.lower() for n in names]
    col = next((low.index(t) for t in TEXT_COLUMNS if t in low), None)
    named = str(path).lower().endswith((".csv", ".tsv"))
    if col is None and len(names) == 1 and named:
        col = 0
    if col is not None:
        return delim, names, col, 1
    body = [x.decode("utf-8", "replace") for x in lines[1:-1 if len(head) >= 1 << 16 else None][:50]]  # whole lines
    try:
        rows = [r for r in csv.reader(body, delimiter=delim) if r]
    except csv.Error:
        rows = []
    if len(names) > 1 and (named or rows and all(len(r) == len(names) for r in rows)):
        raise InputError(f"a header of columns ({', '.join(names)}) and none is named as a text column ({', '.join(TEXT_COLUMNS[:4])}, …): --text-column NAME (text_column='NAME') picks it, "
                         "or --format text (format='text') reads every line as a document", path=path, line=1,
                         text=first)
    return None


def text_column(names, column, path=None, first=None):
    """The 0-based index of the text column ``column`` (a name, any case when no name
    matches exactly, or a 1-based position) among a header's ``names``."""
    if isinstance(column, int) and not isinstance(column, bool) or is_whole(column):
        i = int(column) - 1
        if 0 <= i < len(names):
            return i
    elif str(column) in names or str(column).lower() in [n.lower() for n in names]:
        return names.index(column) if column in names else [n.lower() for n in names].index(str(column).lower())
    raise InputError(f"no text column {column!r} among the {len(names)} columns ({', '.join(names)}): "
                     "--text-column (text_column=) takes a name of the header line or a 1-based position",
                     path=path, line=1 if first is not None else None, text=first)


def _csv_texts(lines, header, path):
    """The text column of the rows below a CSV header (``csv_header``'s answer: none when
    it says the first line is a row); a row
    with more fields than the header when the text is the last column keeps them all
    (its text held the delimiter unquoted)."""
    import csv
    delim, names, col, head = header
    reader = csv.reader(lines, delimiter=delim)
    try:
        if head:
            next(reader, None)
        for row in reader:
            if not row:
                continue
            if len(row) == len(names) or (col == len(names) - 1 and len(row) > col):
                yield delim.join(row[col:]) if col == len(names) - 1 else row[col]
            else:
                raise InputError(f"{len(row)} fields, and the header names {len(names)} ({', '.join(names)})" if head
                                 else f"{len(row)} fields, and the first line has {len(names)}",
                                 path=path, line=reader.line_num, text=delim.join(row))
    except csv.Error as e:
        raise InputError(f"not CSV: {e}", path=path, line=reader.line_num) from None


def _utf8_lines(f, path):
    for no, raw in enumerate(f, 1):          # decoded line by line, so an error names its line
        if no == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            # (quoted with U+FFFD where a byte is not UTF-8: backslashreplace's '\\xe9' was quoted again, '\\\\xe9')
            raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start} of the line; a Latin-1 file converts with "
                             f"iconv -f LATIN1 -t UTF-8)", path=path, line=no,
                             text=raw.decode("utf-8", "replace").rstrip("\r\n")) from None


NO_DOCUMENTS = ("no documents: an empty list, or a generator read to its end before (it can be read once: make a "
                "list of it to use it again)")


def read_once(data):
    """``data`` as a list when it is an iterable that is none of the forms read as a whole
    (a generator, a ``map``, an open text file, a corpus object with ``__iter__``: gensim's and
    tomotopy's users pass ``(line.split() for line in f)``), read here, once, so that every
    later look sees all of it; documents that are themselves iterators become lists. Else
    ``data`` itself (a list, a path, an array, a matrix, a DataFrame, a graph …)."""
    from collections.abc import Iterator, Mapping
    if (isinstance(data, (str, bytes, list, tuple, np.ndarray, Mapping, BipartiteGraph))
            or hasattr(data, "__fspath__") or not hasattr(data, "__iter__")
            or type(data).__module__.split(".")[0] in ("pandas", "scipy", "networkx")):
        return data
    return [list(d) if isinstance(d, Iterator) else d for d in data]


def as_texts(data, column=None):
    """``data`` as a list of texts when it is one (a list or tuple holding strings, or
    empty; a pandas Series, a 1-D numpy array of strings or objects; a DataFrame's text
    column: ``column``, or named as a CSV corpus's header names it: TEXT_COLUMNS; documents
    already split into tokens, as gensim and tomotopy take them: ``is_tokens``, a 2-D array
    of strings one a row), else None. An iterator is read by ``read_once`` before."""
    if type(data).__module__.split(".")[0] == "pandas" and getattr(data, "ndim", 0) == 2:
        low = [str(c).lower() for c in data.columns]
        col = next((low.index(t) for t in TEXT_COLUMNS if t in low), None) if column is None else \
            text_column([str(c) for c in data.columns], column, "DataFrame")
        if col is None:
            return None
        data = data.iloc[:, col]
    if (type(data).__module__.split(".")[0] == "pandas" and getattr(data, "ndim", 0) == 1
            or isinstance(data, np.ndarray) and (data.ndim == 1 and data.dtype.kind in "UO"
                                                 or data.ndim == 2 and data.dtype.kind == "U")):
        data = data.tolist()
    texts = isinstance(data, (list, tuple)) and (not data or any(isinstance(t, str) for t in data))
    return list(data) if texts or is_tokens(data) else None


def is_doc(d):
    """Whether ``d`` is a document split into tokens: a list, a tuple or a 1-D numpy array
    (``text_docs`` names a token that is not a string)."""
    return isinstance(d, (list, tuple)) or isinstance(d, np.ndarray) and d.ndim == 1


def is_tokens(data):
    """Whether ``data`` is a list or tuple of documents each split into tokens (``is_doc``:
    gensim's and tomotopy's input); a tuple of 2 or 3 sequences all of one length, the last
    (or, of 2, the first) without strings, is ``(docs, words[, counts])`` id arrays, as
    ``loaders.load`` reads it, and two of strings, which could be either, an error."""
    if not isinstance(data, (list, tuple)) or not data or not all(is_doc(d) for d in data):
        return False
    if isinstance(data, tuple) and len(data) in (2, 3) and len({len(d) for d in data}) == 1:
        if not any(isinstance(w, str) for w in data[-1]) or len(data) == 2 and not any(isinstance(w, str)
                                                                                       for w in data[0]):
            return False
        if len(data) == 2:
            raise InputError("a tuple of two sequences of one length holding strings: two documents split into "
                             "tokens, or (docs, words) arrays? Documents go in a list ([doc1, doc2]); (docs, "
                             "words) arrays of word strings take integer document ids, or counts too: (docs, words, "
                             "counts)",
                             path="documents")
    return True


def _missing_text(i, t, source):
    raise InputError(f"the text at position {i} is {t!r}, not a string: drop missing texts or fill them "
                     "(Series.fillna(''))", path=source)


def _tokens(i, doc, source):
    if isinstance(doc, np.ndarray):
        doc = doc.tolist()                                  # (its np.str_ as str)
    at = next((k for k, w in enumerate(doc) if not isinstance(w, str)), None)      # (a token None is one too)
    if at is not None:
        bad = doc[at]
        bow = isinstance(bad, tuple) and len(bad) == 2 and all(isinstance(x, numbers.Number) for x in bad)
        raise InputError(f"the document at position {i} holds {bad!r}, not a token string: documents split into "
                         "tokens are sequences of strings (counts go in a document × word count matrix, or a "
                         "tuple of (docs, words, counts) arrays" + ("; gensim's (word id, count) pairs: "
                         "gensim.matutils.corpus2csc(corpus).T is that matrix" if bow else "") + ")", path=source)
    from collections import Counter
    return Counter(doc)


def is_count(max_df):
    """Whether ``max_df`` is a count of documents (an integer), not a share (a float)."""
    return isinstance(max_df, numbers.Integral) and not isinstance(max_df, bool)


def text_docs(texts, type_names=("doc", "word"), min_count=1, stopwords=(), source="texts", need_words=True,
              max_df=1.0):
    """(graph of doc–word counts, vocabulary list) of documents given as strings (or as
    lists of tokens, taken as they are: not split, not lower-cased, a stop word in any case): word
    id i is ``vocab[i]``, in order of first appearance. Words seen fewer than
    ``min_count`` times in all of them, in more than ``max_df`` of them (a share, a
    float, or a count of documents, an integer, as scikit-learn's max_df),
    and ``stopwords`` are dropped; with
    ``need_words`` (a corpus to train on), texts without any word are an error."""
    from collections import Counter
    docs = [Counter(tokenize(t)) if isinstance(t, str) else _tokens(i, t, source) if is_doc(t)
            else _missing_text(i, t, source) for i, t in enumerate(texts)]
    total, df = Counter(), Counter()
    for c in docs:
        total.update(c)
        df.update(c.keys())
    stop, most = set(stopwords), max_df if is_count(max_df) else max_df * len(docs)
    keep = {w for w, n in total.items() if n >= min_count and df[w] <= most
            and w.lower() not in stop}         # (stop words are lower case: a token list's 'The' is one)
    vocab, index = [], {}
    src, dst, cnt = [], [], []
    for i, c in enumerate(docs):
        for w, n in c.items():
            if w not in keep:
                continue
            j = index.get(w)
            if j is None:
                j = index[w] = len(vocab)
                vocab.append(w if type(w) is str else str(w))       # a token list's np.str_: a plain str
            src.append(i)
            dst.append(j)
            cnt.append(n)
    if not docs and need_words and source == "texts":          # (Python's documents, not a file)
        raise InputError(NO_DOCUMENTS, path=source)
    if not src and need_words and total:
        raise InputError(_all_filtered(total, df, most, len(docs), min_count, max_df, stop), path=source)
    if not src and need_words:
        raise InputError("no words found (empty file, or every word was filtered out)", path=source)
    g = BipartiteGraph(np.array(src, np.int64), np.array(dst, np.int64), np.array(cnt, np.float64),
                       len(docs), len(vocab), type_names, source)
    return g, vocab


def _all_filtered(total, df, most, n_docs, min_count, max_df, stop):
    """What dropped every one of the words ``total`` counts (text_docs' filters): each filter
    with how many it dropped, and the flag that sets it."""
    by = [(sum(df[w] > most for w in total), f"--max-df {max_df} (max_df=): in more than {most:g} of the "
                                               f"{n_docs} documents"),
          (sum(n < min_count for n in total.values()), f"--min-count {min_count} (min_count=): seen fewer times"),
          (sum(w.lower() in stop for w in total), "the stop words (--stop-words, stop_words=)")]
    return (f"no words left: each of the {len(total)} distinct words was filtered out; "
            + "; ".join(f"{n} by {what}" for n, what in by if n))


def sniff_corpus(path, header_alone=False):
    """'docword' (three single-integer header lines; with ``header_alone``, for a reader
    that expects a corpus, also when nothing follows them), 'triples' (numeric columns)
    or 'text'."""
    head = read_head(path, "corpus")
    lines = [x.strip() for x in head.split(b"\n")[:4]]
    if len(lines) >= 3 and all(x.isdigit() for x in lines[:3]) and (
            len(lines) >= 4 and len(lines[3].split()) == 3 or header_alone and len(head.split()) == 3):
        return "docword"
    data = [x.replace(b",", b" ").split() for x in head.split(b"\n")[:50]
            if x.strip() and x.strip()[:1] not in (b"#", b"%")]
    if data and len(data) > 1 and len(data[0]) == 3 and not any(is_number(t) for t in data[0]):
        data = data[1:]                         # a header line of names ('doc,word,count') above triples
    if is_matrix_market(head) or (data and all(
            len(x) == 3 and all(t.replace(b".", b"", 1).isdigit() for t in x) for x in data)):
        return "triples"
    return "text"


def sniff_input(path, columns=None):
    """'libsvm' when the first data lines are a number (the label) and index:value
    tokens, or the number alone (a sample without features), 'docword' for a UCI
    docword file, 'edges' when they read as an edge list (two ids and, when there is a
    third column, a number in it — as the run commands read them, header lines and
    extra columns included), when tab-separated lines have a column of numbers after
    their first two (Last.fm's ``user artist-mbid artist-name plays``: --columns picks
    them) or when no line is data (comments and blank lines only: the edge reader names
    that), else 'text'."""
    head = read_head(path, "input")
    if not any(x.strip() and x.strip()[:1] not in (b"#", b"%") for x in head.split(b"\n")):
        return "edges"
    data = [x for x in head.split(b"\n")[:20] if x.strip() and x.strip()[:1] not in (b"#", b"%")]
    if data and b"::" not in data[0] and all((is_number(x.split()[0]) or _MULTI_LABEL.fullmatch(x.split()[0]))
                                             and (b":" in x or len(x.split()) == 1) for x in data) and \
            (any(b":" in x for x in data) or all(is_number(x.split()[0]) for x in data)):
        return "libsvm"         # (a multi-label '1,3' with no index:value anywhere is a CSV line: '522,5428,3.5')
    if sniff_corpus(path) == "docword":
        return "docword"
    try:
        fmt = edge_format(head, path, columns)
    except InputError:      # prose whose quotation runs on into the next paragraph (an odd number of '"'s)
        if columns is None and any(map(is_prose, data[:3])):
            return "text"
        raise
    vcol = 2 if fmt.cols[2] == OPTIONAL else fmt.cols[2]
    rows = sample_rows(head, fmt)
    if columns is None and any(str(n).lower() in TEXT_COLUMNS for n in fmt.names or ()):
        return "text"           # 'id,text' above '1,"apple banana, melon"': a CSV corpus, not (1, 'apple banana…')
    valued = vcol >= 0 and any(len(t) > vcol for t in rows)
    prose = not valued and any(is_prose(f) for t in rows for f in t[:2])   # no ids: text with a comma
    if rows and not prose and all(len(t) > max(fmt.cols[:2]) and (vcol < 0 or len(t) <= vcol or is_number(t[vcol])
                                                                  or is_number(t[vcol].replace(b",", b".")))  # 3,5
                                  for t in rows):
        return "edges"
    if fmt.mode == TAB and (number_column(rows) is not None or tab_table(head, fmt)):
        return "edges"
    if not rows and fmt.names and fmt.sep != "space":      # a CSV or TSV header alone: load_edges names it
        return "edges"
    return "text"


def sample_rows(head, fmt):
    """The fields of the data lines among the first 21 lines after ``fmt``'s header
    (at most 20), as the parsers in ``fmt.mode`` number the columns."""
    return [t for t in (fmt.fields(x) for x in head[fmt.start:].split(b"\n")[:21]) if t][:20]


PROSE_WORDS = 12        # a field of more words than this is prose (a document), no id, name or number


def is_prose(field):
    """Whether a line's ``field`` (bytes) is prose: more than PROSE_WORDS words."""
    return len(field.split()) > PROSE_WORDS


def tab_table(head, fmt):
    """The number of columns (3 or more) of tab-separated lines that all have as many,
    none of them prose (``is_prose``) and none named as a text corpus's (TEXT_COLUMNS)
    by a header: a table such as Last.fm-1K's ``user time artist-mbid artist track-mbid
    track``, not a text corpus; else 0. Empty fields count (Last.fm leaves mbids out)."""
    lines = [x.rstrip(b"\r") for x in head[fmt.start:].split(b"\n")[:21]]
    lines = [x for x in lines if x.strip() and x.strip()[:1] not in (b"#", b"%")][:20]
    widths = {x.count(b"\t") + 1 for x in lines}
    if len(lines) < 2 or len(widths) != 1 or any(str(n).lower() in TEXT_COLUMNS for n in fmt.names or ()):
        return 0
    prose = any(is_prose(f) for x in lines for f in x.split(b"\t"))
    return 0 if prose or widths.pop() < 3 else lines[0].count(b"\t") + 1


def number_column(rows):
    """The first column after the first two that holds a number in every one of ``rows``
    (fields of data lines), or None."""
    width = max((len(t) for t in rows), default=0)
    return next((j for j in range(2, width) if all(len(t) > j and is_number(t[j]) for t in rows)), None)


_TEXT_KEYS = ("text", "reviewtext", "review_text", "body", "content", "abstract")


def json_keys(head):
    """The keys of the first line's object when ``head`` (a file's first bytes) starts
    as JSON lines (an object per line: Yelp's and Amazon's reviews), else None."""
    import json
    first = head[len(BOM):] if head.startswith(BOM) else head
    first = first.lstrip().split(b"\n", 1)[0].strip()
    if not first.startswith(b"{"):
        return None
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return None
    return [str(k) for k in obj] if isinstance(obj, dict) else None


def json_hint(path, keys, documents=False):
    """What to do with a JSON-lines file (``keys``: its first object's), which no
    reader of tux2 takes: a pandas line writing the fields (``documents``: the text
    field) as a CSV that tux2 reads."""
    def pick(r):
        return next((k for k in keys if role(k) == r), None)
    shown = ", ".join(keys[:8]) + (", …" if len(keys) > 8 else "")
    read = f"pd.read_json({display_name(path)!r}, lines=True)"
    text = next((k for k in keys if k.lower() in _TEXT_KEYS), "TEXT_FIELD")
    if documents:
        fields = read + ("" if text == "text" else f".rename(columns={{{text!r}: 'text'}})")
        then = "[['text']].to_csv('docs.csv', index=False)\", then tux2 run lda docs.csv"
    else:
        cols = [pick(0), pick(1), pick(2)]
        fields = read + f"[{([c for c in cols if c] if all(cols[:2]) else keys[:3])!r}]"
        then = ".to_csv('ratings.csv', index=False)\""
    return (f"it is JSON lines (an object per line; keys {shown}), which tux2 does not read: write the fields "
            f"as CSV columns first, e.g. python -c \"import pandas as pd; {fields}{then}")


def _preview(field, n=20):
    """A field of a line (bytes) or header name, quoted, cut to ``n`` characters."""
    t = field.decode("utf-8", "replace") if isinstance(field, bytes) else field
    return repr(t if len(t) <= n else t[:n - 1] + "…")


def other_format(path, columns=None):
    """'' or, for an edge-list reader's error, what the file looks like instead and what
    reads it: a UCI docword file or plain text (tux2 run lda), a libsvm file; for
    tab-separated lines with text in the third column and numbers in a later one, read
    without ``columns``: --columns."""
    try:
        kind = sniff_input(path, columns)
        head = read_head(path, "input")
    except InputError:
        return ""
    try:
        fmt = edge_format(head, path)
    except InputError:      # prose whose quotation runs on (sniff_input: text) reads as no edge list
        if kind != "text":
            return ""
        fmt = None
    if json_keys(head) is not None:
        return "; " + json_hint(path, json_keys(head))
    if fmt is not None and fmt.mode == TAB:
        body = sample_rows(head, fmt)
        j = number_column(body)
        if j is not None and columns is None and not all(len(t) > 2 and is_number(t[2]) for t in body):
            # Last.fm-360K: column 2 (the artist's MusicBrainz id) is empty on some lines, the name never
            # (1-2 % of its lines: looked for in every line of the head, not only the sample)
            gap = any(len(t) > 2 and not t[1].strip() and t[2].strip()
                      for t in (x.split(b"\t") for x in head[fmt.start:].split(b"\n")[:-1]))
            return (f"; the lines are tab-separated with text in column 3 and numbers in column {j + 1}: --columns "
                    f"picks the src, dst and value columns (e.g. --columns 1,{3 if gap else 2},{j + 1}"
                    + ("; column 2 is empty on some lines" if gap else "") + "; header names work too)")
        if j is not None:
            return ""       # names and numbers in tab-separated columns are no text corpus
        width = tab_table(head, fmt)
        if width and columns is None:
            first = head[fmt.start:].split(b"\n")[0].rstrip(b"\r").split(b"\t") if not fmt.names else fmt.names
            shown = ", ".join(f"{i} {_preview(f)}" for i, f in enumerate(first, 1))
            return (f"; the lines are a table of {width} tab-separated columns ({shown}), not text: --columns USER,"
                    "ITEM[,VALUE] picks them (1-based, or header names); without a value column a line counts 1, "
                    "and --duplicates sum adds up a pair's lines (plays, clicks) into its value")
    rows = [t for t in (split_line(x) for x in head.split(b"\n")[:20]) if t and t[0][:1] not in (b"#", b"%")]
    if b"\0" in head or not rows:
        return ""           # binary data, or no data line at all, looks like no format
    if kind in ("text", "libsvm") and all(is_number(x) for t in rows for x in t):
        return ""           # numbers short of a column (a list of user ids) are no text corpus
    if kind == "text" and len(rows) == 1:
        return ""           # nor is one line (a header alone)
    if kind == "docword":
        return ("; it looks like a UCI docword file (three header lines D, W, NNZ, then 'doc word count' lines), "
                "a corpus for topic models: tux2 run lda reads it (--format docword)")
    if kind == "text" and not any(len(t) >= 3 and is_number(t[2]) for t in rows):
        return ("; it looks like plain text, a corpus for topic models (a document per line): tux2 run lda reads "
                "it (--format text)")
    if kind == "libsvm":
        return ("; it looks like a libsvm file ('label index:value …'): tux2 run lr, svm, softmax, fm or blockpg "
                "reads it")
    return ""


# --------------------------------------------------------------------------- libsvm
_MULTI_LABEL = re.compile(rb"[+-]?[0-9]+(\.[0-9]*)?(,[+-]?[0-9]+(\.[0-9]*)?)+")     # labels '1,3' (no spaces)
_LIBSVM_MESSAGES = {
    1: "malformed label (expected a number)",
    2: "label is NaN or infinite",
    3: "malformed feature (expected index:value)",
    4: "feature index is not a non-negative integer",
    5: "feature index too large (over 2^62)",
    6: "malformed feature value (expected a number)",
    7: "feature value is NaN or infinite",
}


@njit(cache=True, nogil=True)
def _parse_libsvm(buf, out_y, out_r, out_c, out_v):
    """Lines 'label idx:val ...'. Returns (rows, nnz, err, err_line, err_pos)."""
    n = buf.shape[0]
    pos = 0
    line = 0
    row = 0
    k = 0
    while pos < n:
        line += 1
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        p = pos
        while p < end and _is_sep(buf[p]):
            p += 1
        if p == end or buf[p] == 35:                      # blank or '#' comment
            pos = end + 1
            continue
        y, p, err = _parse_float(buf, p, end)
        if err:
            return row, k, 2 if err == 4 else 1, line, pos
        while True:
            while p < end and _is_sep(buf[p]):
                p += 1
            if p == end or buf[p] == 35:                  # end of line or trailing comment
                break
            if buf[p] == 113 and p + 3 < end and buf[p + 1] == 105 and buf[p + 2] == 100 and buf[p + 3] == 58:
                while p < end and not _is_sep(buf[p]):    # 'qid:N' (ranking files): skipped
                    p += 1
                continue
            if buf[p] == 45:
                return row, k, 4, line, pos
            start = p
            idx = 0
            while p < end and 48 <= buf[p] <= 57:
                digit = buf[p] - 48
                if idx >= 461168601842738790 and (idx > 461168601842738790 or digit > 4):
                    return row, k, 5, line, pos
                idx = idx * 10 + digit
                p += 1
            if p == start:
                return row, k, 3 if (p < end and buf[p] == 58) or p == end else 4, line, pos
            if p >= end or buf[p] != 58:                  # ':'
                return row, k, 3, line, pos
            p += 1
            v, p, err = _parse_float(buf, p, end)
            if err:
                return row, k, 7 if err == 4 else 6, line, pos
            out_r[k] = row
            out_c[k] = idx
            out_v[k] = v
            k += 1
        out_y[row] = y
        row += 1
        pos = end + 1
    return row, k, 0, line, pos


def reader_compiled(kind):
    """False when numba's cache lacks the reader of ``kind`` ("libsvm", or edge lists and
    corpora): the first run of this tux2 compiles it, 5-30 s without output. True when
    the cache has it, or that cannot be told."""
    try:
        return os.path.exists((_parse_libsvm if kind == "libsvm" else _parse_chunks)._cache._cache_file._index_path)
    except AttributeError:          # no cache (--no-cache), or another numba's inside
        return True


def read_libsvm(path, zero_based=False, n_features=None, type_names=("sample", "feature"), known_features=0,
                sparse=False):
    """A libsvm/svmlight file: ``label idx:val idx:val ...`` per line, 1-based feature
    indices unless ``zero_based`` (True; "auto": 0-based when an index 0 occurs, as
    scikit-learn's load_svmlight_file reads them); ``#`` comments; ``qid:`` fields
    are skipped. Returns (BipartiteGraph sample → feature with the values, labels);
    the graph's ``base`` is the index base it was read with. Every sample is a vertex
    even without features; a 0 index in a 1-based file is an error that names the
    line and suggests ``zero_based``. ``known_features``: the features a model or the
    training set already has (a test or scored file's indices within them are never too
    sparse: a small test file of hashed features up to 2^24 scores against the model). ``sparse``:
    indices up to 2^26 (SPARSE_INDICES) however few the records (hashed into 2^24; KDD12's
    54.7M), for a caller that numbers the features densely (``tux2.loaders.dense_features``)
    and sizes by index only a model's ``coef_``, on demand."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"cannot read libsvm file: {e.strerror}", path=path) from None
    raw = raw[len(BOM):] if raw.startswith(BOM) else raw
    buf = np.frombuffer(raw, dtype=np.uint8)
    lines = raw.count(b"\n") + 1
    cap = raw.count(b":") + 1
    y = np.empty(lines, np.float64)
    r, c, v = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.float64)
    rows, k, err, err_line, err_pos = _parse_libsvm(buf, y, r, c, v)
    if err:
        text = _line_text(raw, err_pos)
        labels = text.split(None, 1)[0] if text.strip() else ""
        if _MULTI_LABEL.fullmatch(labels.encode()):           # LIBSVM's multi-label sets: '1,3 5:1 7:2'
            raise InputError(f"a multi-label line (labels {labels}): tux2 takes one label per line; write the "
                             "line once per label, or one file per label (one-vs-rest, a binary model each)",
                             path=path, line=err_line, text=text)
        why = _LIBSVM_MESSAGES[err]
        if err in (3, 4) and re.search(r"(^|\s)\S*\|", text):          # 'label [weight] [tag]|namespace feature …'
            why += ("; this looks like Vowpal Wabbit's format ('label | feature …'), which tux2 does not read: "
                    "write 'label index:value …' (libsvm), numbering or hashing the features, or a table")
        spaced = re.search(r"(?:^|\s)(\d+:[ \t]+[^\s:]+)", text) if err == 6 else None
        if spaced:          # '1: -0.86': LIBSVM's own reader skips the space, scikit-learn's refuses it
            why += (f"; {spaced.group(1)!r} has a space after its colon, which the libsvm format does not: write "
                    "'index:value' (sed 's/: */:/g' joins them)")
        raise InputError(why, path=path, line=err_line, text=text)
    if rows == 0:
        raise InputError("no samples found (the file is empty or has only comments)", path=path)
    y, r, c, v = y[:rows], r[:k], c[:k], v[:k]
    if zero_based == "auto":
        zero_based = bool(k and c.min() == 0)
    if not zero_based and k:
        bad = np.flatnonzero(c == 0)
        if len(bad):
            line, text = edge_line(path, int(r[bad[0]]))
            raise InputError("feature index 0 in a 1-based file (pass zero_based=True / --zero-based "
                             "if the indices start at 0)", path=path, line=line, text=text)
        c -= 1
    n_feat = int(c.max()) + 1 if k else 0
    limit = id_space(k) + (known_features or 0) + (SPARSE_INDICES if sparse else 0)
    if n_features is None and n_feat > limit:       # said in features, not in the vertex slots of check_id_space
        line, text = edge_line(path, int(r[int(np.argmax(c))]))
        top = n_feat - (1 if zero_based else 0)
        raise InputError(f"feature index {top:,} is beyond the indices "
                         + ("a linear model reads" if sparse else f"a file of {k:,} values may reach")
                         + f", up to {limit - (1 if zero_based else 0):,} ("
                         + ("2^26 = 67,108,864 however few features occur, more for larger files)" if sparse
                            else "16 a value, + 2^20)")
                         + ": hash the features into fewer buckets (2^24 = 16,777,216, as Criteo's and KDD12's, "
                         "or fewer), or number the distinct features 1, 2, 3 …"
                         + ("; only the features that occur take memory, not the indices below them" if sparse
                            else ""), path=path, line=line, text=text)
    if n_features is not None:
        if n_feat > n_features:
            i = int(np.argmax(c))
            line, text = edge_line(path, int(r[i]))
            raise InputError(f"feature index {c[i] + (0 if zero_based else 1)} is beyond the {n_features} "
                             f"features of the model", path=path, line=line, text=text)
        n_feat = n_features
    g = BipartiteGraph(r, c, v, rows, n_feat, type_names, path)
    g.base = 0 if zero_based else 1
    return g, y


def write_libsvm(path, graph, labels, zero_based=False, fmt="%.9g"):
    """Write samples as libsvm lines (features sorted by index)."""
    order = np.lexsort((graph.dst, graph.src))
    s, d, v = graph.src[order], graph.dst[order], graph.values[order]
    bounds = np.searchsorted(s, np.arange(graph.n_src + 1))
    off = 0 if zero_based else 1
    with open(path, "w") as f:
        for i in range(graph.n_src):
            a, b = bounds[i], bounds[i + 1]
            f.write(f"{labels[i]:g}" + "".join(f" {d[j] + off}:{fmt % v[j]}" for j in range(a, b)) + "\n")
