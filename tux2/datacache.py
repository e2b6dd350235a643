"""Generated data sets kept on disk between runs.

The command line's built-in sets are generated deterministically (tux2.datasets),
which takes longer than the rest of a short run; a later run loads the arrays instead.
They live under the kernel cache (tux2.compile.cache_dir(): ``$TUX2_CACHE_DIR``, else
the user cache directory; none with ``--no-cache``), in ``data/``, one ``.npz`` per set,
named by a hash of the generator (its name and its module's source), the sources of
tux2.graph (which rebuilds the graphs) and of this module, its arguments and the tux2
and numpy versions, so a changed generator or numpy makes a new file. A file is used only when
it reads back whole: every array of an ``.npz`` carries the zip format's CRC-32,
which numpy's reader checks, so a damaged, truncated or foreign file is generated
again and replaced (written under a temporary name, then renamed). The ``KEEP`` sets
per generator used last are kept: a set stored or loaded is stamped after the others
(its mtime), not by the file system's clock, which may stamp sets made within one tick
alike or behind a set stamped by a clock that ran ahead.
"""
import hashlib
import os
import sys
import time

import numpy as np

from tux2.compile import cache_dir, fingerprint
from tux2.graph import BipartiteGraph
from tux2.version import __version__

KEEP = 8            # sets kept per generator (e.g. seeds); older ones are deleted


def generated(make, **params):
    """``make(**params)``, a tuple of numpy arrays and BipartiteGraphs, from the cache
    when an intact copy is there, else generated (and stored when a cache directory
    is set)."""
    path = _path(make, params)
    if path is not None:
        found = _load(path)
        if found is not None:
            return found
    result = make(**params)
    if path is not None:
        arrays = _flatten(result)
        if arrays is not None:
            _store(path, arrays)
    return result


def _path(make, params):
    root = cache_dir()
    module = sys.modules.get(make.__module__)
    if root is None or not str(getattr(module, "__file__", None)).endswith(".py"):   # no source to key on
        return None
    key = hashlib.sha256("\0".join([fingerprint(module), make.__qualname__, fingerprint(sys.modules[__name__]),
                                    fingerprint(sys.modules[BipartiteGraph.__module__]), repr(sorted(params.items())),
                                    f"tux2 {__version__}", f"numpy {np.__version__}"]).encode()).hexdigest()
    return os.path.join(root, "data", f"{make.__name__}-{key[:40]}.npz")


def _flatten(result):
    """{name: array} of a tuple of arrays and graphs (kinds: "a" array, "g" graph), or
    None when it holds anything else."""
    out, kinds = {}, []
    for i, item in enumerate(result if isinstance(result, tuple) else ()):
        if isinstance(item, np.ndarray) and item.dtype.kind in "biuf":
            out[f"{i}"] = item
            kinds.append("a")
        elif isinstance(item, BipartiteGraph) and item.ids == (None, None):
            out[f"{i}.src"], out[f"{i}.dst"] = item.src, item.dst
            out[f"{i}.n"] = np.array(item.n, np.int64)
            out[f"{i}.names"] = np.array([*item.type_names, item.source])
            if item.values is not None:
                out[f"{i}.values"] = item.values
            kinds.append("g")
        else:
            return None
    if not kinds:
        return None
    out["kinds"] = np.array(kinds)
    return out


def _store(path, arrays):
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
        _mark_newest(path)
        _prune(path)
    except OSError:                 # an unwritable or full cache: this run generated the set anyway
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _sets(path):
    """(directory, [(mtime_ns, name)] of every set stored for ``path``'s generator)."""
    d, prefix = os.path.split(path)
    prefix = prefix.rsplit("-", 1)[0] + "-"
    sets = []
    for n in os.listdir(d):
        if n.startswith(prefix) and n.endswith(".npz"):
            try:
                sets.append((os.stat(os.path.join(d, n)).st_mtime_ns, n))
            except OSError:
                pass
    return d, sets


def _mark_newest(path):
    """Stamp ``path`` as its generator's set used last: an mtime after every other set's.
    The clock's alone tied sets made within one tick (a coarse clock: 1-4 ms on many
    kernels, where a test makes a set in less) and put a set behind one stamped by a
    clock that ran ahead; the prune then deleted a set just made."""
    d, sets = _sets(path)
    now = time.time_ns()
    newest = max((t for t, n in sets if n != os.path.basename(path)), default=now)
    os.utime(path, ns=(now, max(now, newest + 1)))


def _prune(path):
    """Delete all but the KEEP sets of this generator used last."""
    d, sets = _sets(path)
    for _, n in sorted(sets, reverse=True)[KEEP:]:
        try:
            os.unlink(os.path.join(d, n))
        except OSError:
            pass


def _load(path):
    """The tuple stored at ``path``, or None when there is none or it is not intact."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {n: z[n] for n in z.files}     # zipfile raises BadZipFile on a CRC-32 mismatch
        out = []
        for i, kind in enumerate(arrays["kinds"]):
            if kind == "a":
                out.append(arrays[f"{i}"])
            else:
                (n_src, n_dst), (a, b, source) = arrays[f"{i}.n"], arrays[f"{i}.names"]
                out.append(BipartiteGraph(arrays[f"{i}.src"], arrays[f"{i}.dst"], arrays.get(f"{i}.values"),
                                          int(n_src), int(n_dst), (str(a), str(b)), str(source)))
    except Exception:               # any unreadable file (a bad zip, missing or odd arrays): generated again
        return None
    try:
        _mark_newest(path)          # used last: kept by _prune
    except OSError:
        pass
    return tuple(out)
