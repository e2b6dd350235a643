"""Reading a model directory back (``tux2 run … --out``) without trusting it: its files
are checked against their manifest (``tux2.files``), read without unpickling, and
every array is checked against model.json (dtype, shape, index ranges, finiteness)
before any kernel sees it. Every problem is ``tux2: error: FILE: what``."""
import json
import math
import os
import zipfile

import numpy as np

from tux2 import files
from tux2.errors import Tux2Error


class ModelError(Tux2Error, ValueError):
    """A model directory is missing, damaged or inconsistent (a ValueError, as a bad
    parameter value given to an estimator is)."""


def read_meta(directory):
    """model.json of a model directory (its manifest entry checked first)."""
    path = os.path.join(directory, "model.json")
    if not os.path.exists(path):
        what = "no model.json here" if os.path.isdir(directory) else \
            "a file, not a model directory" if os.path.exists(directory) else "no such directory"
        raise ModelError(f"{directory}: {what}; pass the directory given to 'tux2 run … --out'")
    for name in ("model.json", files.MANIFEST):            # a FIFO there would block the read for good
        if os.path.exists(os.path.join(directory, name)) and not os.path.isfile(os.path.join(directory, name)):
            raise ModelError(f"{os.path.join(directory, name)}: not a regular file")
    try:
        files.verify(directory, ["model.json"], required=False)
    except files.FileError as e:
        raise ModelError(str(e)) from None
    try:
        with open(path, "rb") as f:
            meta = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ModelError(f"{path}: cannot read ({e})") from None
    if not isinstance(meta, dict):
        raise ModelError(f"{path}: not a model description (a JSON object)")
    return meta


def read_model(directory, algorithm, required, optional=()):
    """(model.json, {file name: {array name: array}}) of a model directory whose
    algorithm is one of ``algorithm`` (a name or a tuple). ``optional`` files are
    read when present (and, under a manifest, listed in it); files other than .npz
    are checked and given as their path."""
    meta = read_meta(directory)
    algos = (algorithm,) if isinstance(algorithm, str) else tuple(algorithm)
    if "algorithm" not in meta:             # ('an None model' said nothing)
        raise ModelError(f"{os.path.join(directory, 'model.json')}: no \"algorithm\" key: not a model tux2 wrote "
                         f"(a {' or '.join(algos)} model's says \"algorithm\": \"{algos[0]}\")")
    if meta.get("algorithm") not in algos:
        algo = meta.get("algorithm")            # (lr, lda, mf, fm, svm read letter by letter: 'an')
        article = "an" if algo in ("lr", "lda", "mf", "fm", "svm") else "a"
        raise ModelError(f"{directory}: {article} {algo!r} model, not {' or '.join(algos)}")
    try:
        manifest = files.read_manifest(directory, required=False)
    except files.FileError as e:
        raise ModelError(str(e)) from None
    names = list(required) + [n for n in optional if os.path.exists(os.path.join(directory, n))
                              and (manifest is None or n in manifest)]
    for n in optional:
        if manifest is not None and n in manifest and n not in names:     # seen.npz deleted: seen items recommended
            raise ModelError(f"{directory}: {n} is missing, and manifest.json lists it")
    for n in required:
        if not os.path.exists(os.path.join(directory, n)):
            raise ModelError(f"{directory}: not a complete {algos[0]} model ({n} is missing)")
    try:
        files.verify(directory, names, required=False)
    except files.FileError as e:
        raise ModelError(str(e)) from None
    paths = {n: os.path.join(directory, n) for n in names}
    return meta, {n: load_npz(p) if n.endswith(".npz") else p for n, p in paths.items()}


def load_npz(path):
    """{name: array} of an .npz file; never unpickles; errors name the file."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as e:
        raise ModelError(f"{path}: cannot read ({e})") from None


def _need(path, arrays, name, dtype_kinds, shape, finite=True):
    """``arrays[name]`` exists, has a dtype of one of ``dtype_kinds`` and ``shape``
    (None matches any length), and holds only finite numbers."""
    a = arrays.get(name)
    if a is None:
        raise ModelError(f"{path}: has no array {name!r}")
    if a.dtype.kind not in dtype_kinds:
        raise ModelError(f"{path}: {name} has dtype {a.dtype}, expected a numeric array")
    if len(a.shape) != len(shape) or any(want is not None and got != want for got, want in zip(a.shape, shape)):
        raise ModelError(f"{path}: {name} has shape {a.shape}, expected "
                         f"({', '.join('n' if x is None else str(x) for x in shape)})")
    if finite and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise ModelError(f"{path}: {name} holds NaN or infinite values")
    return a


def _int_meta(path, meta, key, low=0):
    v = meta.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < low:
        raise ModelError(f"{path}: {key} must be an integer >= {low}, got {v!r}")
    return v


def _finite(x):
    """A JSON number that is a finite double: not a bool, nan, inf or an integer beyond
    the double range (2**70 made np.isfinite raise TypeError, 10**400 float() OverflowError)."""
    try:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    except OverflowError:
        return False


def _float_meta(path, meta, key, positive=False):
    """A finite number; ``positive``: also at least the smallest normal double (a
    subnormal prior such as 1e-320 overflows 1/beta)."""
    v = meta.get(key)
    if not _finite(v) or (positive and v < np.finfo(np.float64).tiny):
        raise ModelError(f"{path}: {key} must be a finite{' positive (normal)' if positive else ''} number, "
                         f"got {v!r}")
    return float(v)


def _ids(path, ids, n):
    if ids is None:
        raise ModelError(f"{path}: has no array 'ids'")
    if ids.shape != (n,) or ids.dtype.kind not in "iuU":
        raise ModelError(f"{path}: ids must be {n} integers or strings, got {ids.dtype} {ids.shape}")
    if len(np.unique(ids)) != n:
        raise ModelError(f"{path}: ids name a vertex more than once")


def check_mf(directory, meta, arrays):
    """user.npz/item.npz: p (n × k) and b (n) finite, ids; seen.npz a CSR over them."""
    k = _int_meta(os.path.join(directory, "model.json"), meta, "k", 1)
    _float_meta(os.path.join(directory, "model.json"), meta, "mu") if "mu" in meta else None
    r = meta.get("rating_range", [0, 0])          # models before it: predictions not clipped
    if not (isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                         and np.isfinite(x) for x in r) and r[0] <= r[1]):
        raise ModelError(f"{os.path.join(directory, 'model.json')}: rating_range must be [min, max] of finite "
                         f"numbers, got {r!r}")
    n = {}
    for name in ("user.npz", "item.npz"):
        path, a = os.path.join(directory, name), arrays[name]
        p = _need(path, a, "p", "f", (None, k))
        _need(path, a, "b", "f", (len(p),))
        _ids(path, a.get("ids"), len(p))
        for key in a:                               # a warm start's AdaGrad history: sums of squared gradients
            if key.startswith("step_") and key != "step_form":
                _history(path, a, key, len(p), 0.0)
        n[name] = len(p)
    seen = arrays.get("seen.npz")
    if seen is not None:
        path = os.path.join(directory, "seen.npz")
        indptr = _need(path, seen, "indptr", "iu", (n["user.npz"] + 1,))
        indices = _need(path, seen, "indices", "iu", (None,))
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices):
            raise ModelError(f"{path}: indptr is not a CSR row pointer over {len(indices)} entries")
        if len(indices) and (indices.min() < 0 or indices.max() >= n["item.npz"]):
            raise ModelError(f"{path}: item index out of range 0 … {n['item.npz'] - 1}")


def check_lda(directory, meta, arrays):
    """lda.npz: word_topic (K × V) and topic_totals (K) non-negative counts, K and V
    as model.json says; doc_topic (D × K) and alpha (K positive numbers) when present."""
    mpath = os.path.join(directory, "model.json")
    path, a = os.path.join(directory, "lda.npz"), arrays["lda.npz"]
    K = _int_meta(mpath, meta, "topics", 1)
    V = _int_meta(mpath, meta, "words", 0)
    _float_meta(mpath, meta, "alpha", positive=True)
    _float_meta(mpath, meta, "beta", positive=True)
    for name, shape in (("word_topic", (K, V)), ("topic_totals", (K,)), ("doc_topic", (None, K))):
        if name == "doc_topic" and name not in a:
            continue
        x = _need(path, a, name, "iu", shape)
        if x.size and x.min() < 0:
            raise ModelError(f"{path}: {name} holds negative counts")
    if "alpha" in a:
        alpha = _need(path, a, "alpha", "f", (K,))
        if (alpha <= 0).any():
            raise ModelError(f"{path}: alpha holds a number that is not positive")
    if "coherence" in a:
        c = _need(path, a, "coherence", "f", (K,), finite=False)     # NaN: a topic of fewer than 2 words
        if (c > 1e-3).any() or np.isinf(c).any():   # means of log((D(a,b)/D + ε)/(D(b)/D)) <= log(1 + εD): NaN, no pair
            raise ModelError(f"{path}: coherence holds a number above 1e-3 or infinite (UMass scores are "
                             "means of logarithms of at most 1 + εD, about 0)")
    if not np.array_equal(a["word_topic"].sum(axis=1, dtype=np.int64), a["topic_totals"]):
        raise ModelError(f"{path}: topic_totals are not the sums of word_topic's rows")


def _check_labels(mpath, labels, k):
    """model.json's class labels (absent: numbers the model implies): k increasing
    numbers, k increasing strings, or false and true (a model of bool labels)."""
    if labels is None:
        return
    if not (isinstance(labels, list) and len(labels) == k and (all(map(_finite, labels)) or all(
            isinstance(x, str) for x in labels) or labels == [False, True] and all(isinstance(x, bool) for x in labels))
            and all(x < y for x, y in zip(labels, labels[1:]))):
        raise ModelError(f"{mpath}: labels must be {k} increasing numbers or strings, got {labels!r}"[:300])


def check_linear(directory, meta, arrays):
    """weights.npz: w (features) or (features × classes), V (features × F) for fm;
    finite; as many features as model.json says, or, with ``index`` (sparse feature
    indices), a row per index (and the intercept's), the indices increasing below them."""
    mpath = os.path.join(directory, "model.json")
    path, a = os.path.join(directory, "weights.npz"), arrays["weights.npz"]
    features = _int_meta(mpath, meta, "features", 0) if "features" in meta else None
    if "index" in a:
        index, extra = _need(path, a, "index", "iu", (None,)), int(meta.get("bias") is True)
        top = features - extra if features is not None else None
        if (len(index) and (index[0] < 0 or (top is not None and index[-1] >= top))) or np.any(np.diff(index) <= 0):
            raise ModelError(f"{path}: index must hold increasing feature indices"
                             + (f" from 0 to {top - 1}" if top is not None else ""))
        features = len(index) + extra
    w = a.get("w")
    if w is None:
        raise ModelError(f"{path}: has no array 'w'")
    if meta.get("loss") == "softmax":
        classes = _int_meta(mpath, meta, "classes", 2)
        _need(path, a, "w", "f", (features, classes))
        if meta.get("label_base", 0) not in (0, 1) or isinstance(meta.get("label_base"), bool):
            raise ModelError(f"{mpath}: label_base must be 0 or 1, got {meta['label_base']!r}")
        _check_labels(mpath, meta.get("labels"), classes)
    else:
        if "classes" in meta and meta["classes"] != 2:
            raise ModelError(f"{mpath}: classes of a {meta.get('loss')} model must be 2, got {meta['classes']!r}")
        _need(path, a, "w", "f", (features,))
        _check_labels(mpath, meta.get("labels", [-1, 1]), 2)
    if meta.get("algorithm") == "fm":
        _need(path, a, "V", "f", (len(w), _int_meta(mpath, meta, "factors", 1)))
    # a warm start's AdaGrad/Adam history (udfs.glm): G and m2 are sums or averages of squared
    # gradients, b1t and b2t powers of β in [0, 1]
    for key in a:
        if key.startswith("step_") and key != "step_optimizer":
            _history(path, a, key, len(w), *{"step_G": (0.0,), "step_m2": (0.0,), "step_b1t": (0.0, 1.0),
                                            "step_b2t": (0.0, 1.0)}.get(key, ()))


def _history(path, arrays, key, rows, low=-np.inf, high=np.inf):
    """A warm start's optimizer history ``arrays[key]`` (models saved before it have
    none): floats, one row per vertex or feature (``rows``), finite, in [low, high]."""
    g = arrays[key]
    _need(path, arrays, key, "f", (rows,) + (None,) * (g.ndim - 1) if g.ndim else (rows,))
    if g.size and (g.min() < low or g.max() > high):
        what = f"negative values ({float(g.min()):g})" if g.min() < low == 0 else \
            f"values outside [{low:g}, {high:g}] ({float(g.min()):g} … {float(g.max()):g})"
        raise ModelError(f"{path}: {key} holds {what}; it is the optimizer's history, sums of squared gradients "
                         "or moments (delete the step_* arrays to warm start without them)")
