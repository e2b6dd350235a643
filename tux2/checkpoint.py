"""Checkpoints: an engine's state between iterations, written so that a crash at any
moment leaves the previous checkpoint whole.

Layout of a checkpoint directory::

    DIR/LATEST                 the name of the newest complete checkpoint (replaced atomically)
    DIR/ckpt-00000012/         one per saved iteration
        part-0.npz …           each worker's partitions (written to a temporary name, then renamed)
        state.json             clocks, GlobalSync history, the run's parameters (rank 0)
        manifest.json          size and SHA-256 of each file above (rank 0, last)

A checkpoint directory is complete once it has its final name, and it gets that name
only after every worker's file and ``state.json`` are on disk (fsync'd); ``LATEST``
moves to it after that, and only then are older checkpoints removed, with what a run
killed mid-write left (a ``.partial`` directory, never read; its files never enter a
later run's checkpoint of the same iteration). With several workers DIR must be shared
by them (one machine, or a shared file system).
Nothing here is unpickled: the arrays are plain and structured numpy arrays.

Each checkpoint carries a ``manifest.json`` (``tux2.files``) with the size and
SHA-256 of every file in it; a resume checks the files it reads against it, so a
flipped bit or a truncated file is an error, never a different model. ``state.json``
also records the size and modification time of the run's input files, reported when
the input's edges differ from the checkpoint's, and a checksum of the test set the run
is evaluated on (``test_sum``): its metrics history, and with it the epoch early
stopping keeps, depend on it, so a resume with other test data is refused. The
training samples' weights are summed up too (``weights_sum``), so that a resume with
other weights says so, not only that the input's values or labels differ.
"""
import contextlib
import json
import os
import shutil
import time
import zipfile

import numpy as np

from tux2 import files
from tux2.engine import _mix64
from tux2.errors import CheckpointError, ContextStateError, RecordsError, SchemaError
from tux2.transport import barrier

LATEST = "LATEST"
# the settings of a run's layout: a checkpoint (of this tux2) resumes on any other
LAYOUT = ("partitions", "partitioner")
_PREFIX = "ckpt-"


def input_stats(paths):
    """{path: {"bytes", "mtime"}} of the input files a run names (for the checkpoint's
    record; a path that is not a regular file is left out)."""
    out = {}
    for p in paths:
        try:
            st = os.stat(p)
        except (OSError, TypeError, ValueError):
            continue
        if os.path.isfile(p):
            out[p] = {"bytes": st.st_size, "mtime": st.st_mtime}
    return out


def _input_changes(then, now):
    """What changed in the input files since a checkpoint, as text for an error: the
    files that changed (a stop-word file beside an unchanged corpus), else every file's
    'same size and modification time'."""
    notes, same = [], []
    for path, old in (then or {}).items():
        new = (now or {}).get(path)
        if new is None:
            notes.append(f"{path} is gone or not a file now")
            continue
        changed = []
        if new["bytes"] != old["bytes"]:
            changed.append(f"{old['bytes']} bytes then, {new['bytes']} now")
        if new["mtime"] != old["mtime"]:
            fmt = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))  # noqa: E731
            changed.append(f"modified {fmt(old['mtime'])} then, {fmt(new['mtime'])} now")
        (notes if changed else same).append(f"{path}: " + ("; ".join(changed) or "same size and modification time"))
    return notes or same


def test_sum(test, labels=None, source=None):
    """What a checkpoint records of the test set a run evaluates on (``test``: a graph in
    the training data's dense ids; ``labels``: the GLMs' test labels), or None without
    one: the number of edges and the sum (mod 2**64) of a 64-bit mix of each edge's
    endpoints, value (rounded to float32, as the programs hold values, so that the
    readers of one file agree) and, for ids the training data lacks, the id as written;
    the labels mixed with their sample's number likewise. The edges' order does not
    count (distributed ingress gathers a held-out share in another order); a change of
    a value below float32's precision goes unnoticed. ``source``: how an error names it."""
    import zlib
    if test is None:
        return None
    src, dst, values = test.src, test.dst, test.values
    n = len(src)
    extra = np.zeros(n, np.uint64)
    unknown, written = getattr(test, "unknown", None), getattr(test, "unknown_ids", None)
    if unknown is not None and written is not None:
        for side in (0, 1):                 # ids that train nothing: grouped by how they were written (ranking)
            codes = np.array([zlib.crc32(str(t).encode()) for t in np.asarray(written[side]).tolist()], np.uint64)
            extra[np.flatnonzero(unknown[side])] ^= codes << np.uint64(32 * side)
    total = np.uint64(0)
    step = 1 << 20
    with np.errstate(over="ignore"):
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            h = _mix64(np.asarray(src[lo:hi]).astype(np.int64).view(np.uint64) ^ np.uint64(0x2545F4914F6CDD1D))
            h = _mix64(h ^ (np.asarray(dst[lo:hi]).astype(np.int64).view(np.uint64) + np.uint64(0x632BE59BD9B4E019)))
            if values is not None:
                h = _mix64(h ^ np.asarray(values[lo:hi]).astype(np.float32).astype(np.float64).view(np.uint64))
            h = _mix64(h ^ extra[lo:hi])
            total = total + h.sum(dtype=np.uint64)
        lsum = np.uint64(0)
        if labels is not None:
            y = np.asarray(labels)
            y = y.astype(np.float64) if y.dtype.kind in "biuf" else \
                np.array([zlib.crc32(str(t).encode()) for t in y.tolist()], np.float64)
            h = _mix64(np.arange(len(y), dtype=np.uint64) ^ np.uint64(0x9E3779B97F4A7C15))
            lsum = _mix64(h ^ y.view(np.uint64)).sum(dtype=np.uint64)
    return {"edges": n, "sum": f"{int(total):016x}", "labels": None if labels is None else len(labels),
            "labels_sum": f"{int(lsum):016x}", "source": source}


def weights_sum(weights):
    """What a checkpoint records of the training samples' weights (None: 1 each): their
    number, sum and CRC-32 (every worker holds them all, in the samples' order)."""
    import zlib
    if weights is None:
        return None
    w = np.ascontiguousarray(weights, np.float64)
    return {"samples": len(w), "sum": float(w.sum()), "crc": f"{zlib.crc32(w.view(np.uint8).data):08x}"}


def _weights_changed(then, now):
    """The reason of a resume whose input records differ, when the samples' weights are
    what differs (``weights_sum`` then and now), else None."""
    if then == now or then is None or now is None:     # (unweighted against weighted: another program)
        return None
    said = lambda w: f"{w['samples']} weights summing to {w['sum']:.10g}"     # noqa: E731
    how = f"{said(then)} then, {said(now)} now" if said(then) != said(now) else \
        f"{said(now)} then and now, to 10 digits: other values, or in another order"
    return (f"the samples' weights differ from those the checkpoint was trained on ({how}): resume with the "
            "weights of the interrupted run (--weight-column, fit's sample_weight=)")


def _test_changes(path, then, now, inputs_then, inputs_now):
    """The CheckpointError of a resume whose test set differs from its checkpoint's."""
    def named(t):
        return t.get("source") or "the test set"
    if then is None:
        what, diff = f"the checkpoint's run had no test set, and this one is evaluated on {named(now)}", []
    elif now is None:
        what, diff = f"the checkpoint's run was evaluated on {named(then)}, and this one has no test set", []
    else:
        what = f"{named(now)} is not the one the checkpoint's run was evaluated on"
        diff = [f"{then['edges']} test edges then, {now['edges']} now"] if then["edges"] != now["edges"] else []
        if then.get("labels") != now.get("labels"):
            diff.append(f"{then.get('labels')} test labels then, {now.get('labels')} now")
        if not diff:
            labels = now.get("labels") is not None
            diff.append(f"as many test edges{' and labels' if labels else ''}, with other ids, values"
                        + (" or labels" if labels else " or unknown ids"))
    diff += [c for c in _input_changes(inputs_then, inputs_now) if not c.endswith("same size and modification time")]
    return CheckpointError(f"{path}: {what}" + (f" ({'; '.join(diff)})" if diff else "")
                           + ": the metrics history, and with it the epoch --early-stop keeps, depends on it; resume "
                           "with that run's test data, or start again without --resume")


def _same_test(a, b):
    keys = ("edges", "sum", "labels", "labels_sum")
    return (a is None) == (b is None) and (a is None or all(a.get(k) == b.get(k) for k in keys))


def save(directory, eng, params, transport=None, inputs=None, history=None, kept=None, test=None, weights=None):
    """Write ``eng``'s state (after a whole iteration) as a new checkpoint under
    ``directory``; ``params`` (JSON) identify the run and are checked on resume;
    ``inputs``: ``input_stats`` of the run's files, reported if they change;
    ``history``: the run's metrics records so far (a resume goes on from them);
    ``kept``: rank 0's (arrays, JSON) of a model the run keeps besides the engine's
    (early stopping's best epoch), given back by ``load``; ``test``: rank 0's
    ``test_sum`` of the run's test set (None: it has none), checked by ``load``;
    ``weights``: the ``weights_sum`` of the training samples' weights. Collective: every
    worker calls it. Returns the checkpoint's path."""
    rank = getattr(transport, "rank", 0) if transport is not None else 0
    arrays, meta = eng.state()
    name = f"{_PREFIX}{eng.iteration:08d}"
    final = os.path.join(directory, name)
    work = final + ".partial"
    if rank == 0:           # a run killed while writing this checkpoint left files here: none may come along
        shutil.rmtree(work, ignore_errors=True)
    barrier(transport, f"ckpt-open-{eng.iteration}")
    try:
        os.makedirs(work, exist_ok=True)
        files.write_atomic(os.path.join(work, f"part-{rank}.npz"), lambda f: np.savez(f, **arrays))
        barrier(transport, f"ckpt-written-{eng.iteration}")
        if rank == 0:
            world = getattr(transport, "world", 1) if transport is not None else 1
            parts = [f"part-{r}.npz" for r in range(world)]
            missing = [r for r, f in enumerate(parts) if not os.path.exists(os.path.join(work, f))]
            if missing:
                raise CheckpointError(f"{work}: workers {missing} wrote no file here; with several machines the "
                                      "checkpoint directory must be shared")
            state = {**meta, "world": world, "params": params, "inputs": inputs or {},
                     "history": json.loads(files.json_text(history or [])), "test": test,
                     "weights": weights}
            out = {"state.json": lambda f: f.write(json.dumps(state, indent=1).encode())}
            if kept is not None:
                state["kept"] = json.loads(files.json_text(kept[1]))
                out["kept.npz"] = lambda f: np.savez(f, **kept[0])
            files.write_dir(work, out, present=parts)
            if os.path.exists(final):                    # a leftover of an earlier run at this iteration
                shutil.rmtree(final)
            os.replace(work, final)
            files.fsync_dir(directory)
            files.write_atomic(os.path.join(directory, LATEST), lambda f: f.write(name.encode() + b"\n"))
            files.fsync_dir(directory)
            for old in os.listdir(directory):            # only now may the previous checkpoints go
                if old.startswith(_PREFIX) and old != name:
                    shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
    except BaseException:           # a full disk, Ctrl-C: no half-written checkpoint stays behind
        if rank == 0:
            shutil.rmtree(work, ignore_errors=True)
        raise
    barrier(transport, f"ckpt-done-{eng.iteration}")
    return final


def lock(directory):
    """Hold ``directory`` for this run's checkpoints (an exclusive ``flock`` on
    DIR/.lock, released when the process ends): a second run writing checkpoints into
    the same directory is refused at once, not left to collide with this one."""
    import fcntl
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            other = os.read(fd, 64).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        raise CheckpointError(f"{directory}: another run (pid {other or '?'}) is writing checkpoints here; "
                              "give each run its own --checkpoint-dir") from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as e:                          # a full disk: name the file (os.write does not)
        os.close(fd)
        raise files.write_error(path, e) from None
    return fd


def _complete(path):
    return os.path.exists(os.path.join(path, "state.json")) and os.path.exists(os.path.join(path, files.MANIFEST))


def latest(directory):
    """Path of the newest complete checkpoint in ``directory`` (a checkpoint's own
    directory is accepted too). ``LATEST`` must name a checkpoint beside it."""
    if not os.path.isdir(directory):
        raise CheckpointError(f"{directory}: " + ("a file, not a checkpoint directory" if os.path.exists(directory)
                                                  else "no such directory"))
    if os.path.exists(os.path.join(directory, "state.json")):
        if not _complete(directory):
            raise CheckpointError(f"{directory}: incomplete checkpoint (no {files.MANIFEST})")
        return directory
    pointer = os.path.join(directory, LATEST)
    try:
        with open(pointer, "rb") as f:
            raw = f.read(256)
        name = raw.decode("ascii").strip()
    except FileNotFoundError:
        inside = os.path.join(directory, "checkpoints")         # --out's, where --checkpoint-every writes
        hint = f"; {inside} has one (--resume {inside})" if os.path.exists(os.path.join(inside, LATEST)) else \
            ("; it holds a model an --out wrote, not checkpoints (--checkpoint-every N writes those): tux2 run mf "
             f"--init-model {directory} starts a new run from the model"
             if os.path.exists(os.path.join(directory, "model.json")) else "")
        raise CheckpointError(f"{directory}: no checkpoint here (no {LATEST} file){hint}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{pointer}: cannot read ({e})") from None
    if not name.startswith(_PREFIX) or os.path.basename(name) != name or name in (".", ".."):
        raise CheckpointError(f"{pointer} names {name[:80]!r}, which is not a checkpoint beside it "
                              f"({_PREFIX}NNNNNNNN)")
    path = os.path.join(directory, name)
    if not _complete(path):
        raise CheckpointError(f"{pointer} names {name}, which is incomplete or missing")
    return path


def _read_state(path):
    file = os.path.join(path, "state.json")
    try:
        with open(file, "rb") as f:
            state = json.loads(f.read().decode("utf-8"))
        if not isinstance(state, dict) or not isinstance(state.get("params"), dict):
            raise ValueError("not a checkpoint state")
        return state
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CheckpointError(f"{file}: cannot read ({e})") from None


def _verify(path, names):
    try:
        files.verify(path, names)
    except files.FileError as e:
        raise CheckpointError(f"damaged checkpoint: {e}") from None


def _remedy(diff, saved, flag):
    """How to resume: the first run's flags to repeat, where a value says it, and those to
    leave out (unset there)."""
    repeat = [flag(k, saved[k]) for k in diff
              if isinstance(saved.get(k), (str, int, float)) and not isinstance(saved[k], bool)
              and not (k == "zero_based" and saved[k] == "auto")]
    drop = [f"--{k.replace('_', '-')}" for k in diff if saved.get(k) is None] + (
        ["--zero-based or --one-based"] if "zero_based" in diff and saved.get("zero_based") == "auto" else [])
    # a switch by its state, as the message names it (lr's is --no-bias, fm's --bias): left out, repeating
    # the values alone would be refused again (--mode als of a run with --implicit)
    states = [flag(k, saved[k]) for k in diff if isinstance(saved.get(k), bool)]
    parts = (["with the first " + " ".join(repeat)] if repeat else []) + \
        (["the first run's " + ", ".join(states)] if states else []) + (["without " + " ".join(drop)] if drop else [])
    if parts and parts[0].startswith("the first"):
        parts[0] = "with " + parts[0]
    return " and ".join(parts) or "with the first run's settings"


# options added after checkpoints existed, each with the value that trains as runs did before it (--solver's
# default of implicit feedback is cg since: a checkpoint without it resumes with --solver cholesky)
# mf's settings of implicit feedback alone (an explicit run records them as mf.NO_CONFIDENCE): a remedy that
# turns implicit feedback off does not name them (they would be refused there, as having no effect)
IMPLICIT_ONLY = ("alpha", "confidence")
AS_BEFORE = {"confidence": "linear", "epsilon": 1.0, "solver": "cholesky", "cg_steps": 3, "min_count": 1,
             "class_weight": None, "weight_column": None}


def check(directory, params, world=1, compare=None):
    """(path, state) of the newest checkpoint in ``directory`` when a run with
    ``params`` on ``world`` workers may resume it, else CheckpointError saying why:
    asked before the data is read, so a wrong --resume costs no loading."""
    path = latest(directory)
    _verify(path, ["state.json"])
    state = _read_state(path)
    saved = state["params"]
    keys = compare if compare is not None else sorted(set(saved) | set(params))
    # (a checkpoint of fit() from before it recorded its algorithm: the other settings decide)
    diff = [k for k in keys if saved.get(k) != params.get(k) and (k != "algorithm" or k in saved)]
    if state.get("relayout"):           # the layout may change: the model is the same on any (DESIGN.md)
        diff = [k for k in diff if k not in LAYOUT]
    elif state.get("world") != world:   # an older checkpoint: first, the partitions follow from the workers
        n = state.get("world")
        raise CheckpointError(f"{path} was written by {n} worker{'' if n == 1 else 's'} and an earlier tux2, "
                              f"which could not resume on another layout; resume with --workers {n} "
                              f"(this run has {world})")
    if "algorithm" in diff and None not in (saved.get("algorithm"), params.get("algorithm")):     # tux2 run ALGO
        was = saved["algorithm"]
        raise CheckpointError(f"{path} is a checkpoint of tux2 run {was}, not of tux2 run {params['algorithm']}: "
                              f"resume it with tux2 run {was}")
    # an option added since, at the value that does what runs did before it existed: the same run
    diff = [k for k in diff if k in saved or k not in AS_BEFORE or params.get(k) != AS_BEFORE[k]]
    if saved.get("implicit") is False and "implicit" in diff:       # back to explicit ratings: these follow
        diff = [k for k in diff if k not in IMPLICIT_ONLY]
    newer = [f"--{k.replace('_', '-')}" for k in diff if k not in saved and k not in ("algorithm", "input")]
    same = [f"--{k.replace('_', '-')} {AS_BEFORE[k]}" for k in diff if k not in saved and k in AS_BEFORE]
    if same:                    # an option added since, whose default now differs from what runs did before
        # (and the saved values of the others that differ: an implicit run's --alpha 40 beside --confidence linear)
        also = [f"--{k.replace('_', '-')} {saved[k]:g}" if isinstance(saved[k], float) else
                f"--{k.replace('_', '-')} {saved[k]}" for k in diff
                if k in saved and k != "input" and isinstance(saved[k], (str, int, float)) and
                not isinstance(saved[k], bool)]
        raise CheckpointError(f"{path} was written by an earlier tux2, before {' and '.join(newer)} existed, which "
                              f"trained as {' '.join(same)} does: resume with {' '.join(same + also)}")
    if newer:                   # an option added since: the run it saved had no value for it to go on with
        raise CheckpointError(f"{path} was written by an earlier tux2, before {' and '.join(newer)} existed: that "
                              "run cannot go on under a setting it did not have; start it again without --resume")
    if diff:
        def flag(k, v):             # a switch by its state: lr's is --no-bias, fm's --bias, mf's --no-biases
            if k == "zero_based" and (v == "auto" or isinstance(v, bool)):      # libsvm's index base
                return {True: "--zero-based", False: "--one-based"}.get(
                    v, "the feature index base auto (neither --zero-based nor --one-based)")
            if isinstance(v, bool):
                name, on = (k[3:], not v) if k.startswith("no_") else (k, v)
                return f"{name.replace('_', '-')} {'on' if on else 'off'}"
            if k == "input":        # the positional INPUT, not a flag
                return f"input {'(built-in data)' if v is None else v}"
            return f"--{k.replace('_', '-')} {'(unset)' if v is None else v}"
        raise CheckpointError(f"{path} was written by a run with other settings: " + ", ".join(
            f"{flag(k, saved.get(k))} there, {flag(k, params.get(k))} now" for k in diff)
            + "; resume " + _remedy(diff, saved, flag))
    return path, state


def _read_part(path, rank):
    file = os.path.join(path, f"part-{rank}.npz")
    _verify(path, [f"part-{rank}.npz"])
    try:
        with np.load(file, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise CheckpointError(f"{file}: cannot read ({e})") from None


class Member:
    """One array of a part file, read piece by piece: ``a[lo:hi]`` reads those rows
    (of the first axis) from the file and nothing else; ``shape``, ``dtype``,
    ``ndim`` and ``len`` need no read. ``np.savez`` stores its arrays uncompressed,
    so a row's bytes are at a fixed place in the file."""

    def __init__(self, fd, file, name, offset, shape, dtype, fortran):
        self.fd, self.file, self.name, self.offset = fd, file, name, offset
        self.shape, self.dtype, self.fortran = tuple(shape), np.dtype(dtype), fortran
        self.ndim = len(self.shape)
        self.row = self.dtype.itemsize * int(np.prod(self.shape[1:], dtype=np.int64))
        self.size = int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __getitem__(self, key):
        if not self.shape or self.fortran or key is Ellipsis:      # read whole
            if key is not Ellipsis and not (isinstance(key, slice) and key == slice(None)):
                raise TypeError(f"{self.name}: only whole reads of a 0-d or Fortran-order array")
            out = self._read(0, max(self.size, 0) * self.dtype.itemsize)
            return out.view(self.dtype).reshape(self.shape, order="F" if self.fortran else "C")
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError(f"{self.name}: rows are read by a slice lo:hi")
        lo, hi, _ = key.indices(self.shape[0])
        hi = max(lo, hi)
        out = self._read(lo * self.row, (hi - lo) * self.row)
        return out.view(self.dtype).reshape((hi - lo, *self.shape[1:]))

    def __array__(self, dtype=None, copy=None):
        a = self[...]
        return a if dtype is None else a.astype(dtype)

    def _read(self, at, n):
        buf = np.empty(n, np.uint8)
        view, done = memoryview(buf), 0
        while done < n:
            got = os.preadv(self.fd, [view[done:]], self.offset + at + done)
            if got <= 0:
                raise CheckpointError(f"{self.file}: cannot read {self.name} (the file ends early)")
            done += got
        return buf


class PartFile:
    """A checkpoint's part file opened for reading piece by piece: ``f[name]`` (and
    ``get``) give a ``Member`` of each array, ``keys()`` their names. A context manager
    (its file stays open until then)."""

    def __init__(self, path, rank):
        import struct
        self.file = os.path.join(path, f"part-{rank}.npz")
        _verify(path, [f"part-{rank}.npz"])
        self.members = {}
        try:
            self.fd = os.open(self.file, os.O_RDONLY)
        except OSError as e:
            raise CheckpointError(f"{self.file}: cannot read ({e.strerror})") from None
        try:
            with open(self.file, "rb") as f, zipfile.ZipFile(f) as z:
                for info in z.infolist():
                    name = info.filename.removesuffix(".npy")
                    if info.compress_type != zipfile.ZIP_STORED:       # (not what np.savez writes): read whole
                        with z.open(info) as m:
                            self.members[name] = np.lib.format.read_array(m, allow_pickle=False)
                        continue
                    f.seek(info.header_offset)
                    head = f.read(30)
                    if len(head) != 30 or head[:4] != b"PK\x03\x04":
                        raise ValueError(f"{info.filename}: no local file header")
                    start = info.header_offset + 30 + sum(struct.unpack("<HH", head[26:30]))
                    f.seek(start)
                    version = np.lib.format.read_magic(f)
                    shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version == (1, 0) else
                                             np.lib.format.read_array_header_2_0(f))
                    if dtype.hasobject:
                        raise ValueError(f"{info.filename}: Python objects (a checkpoint holds none)")
                    m = Member(self.fd, self.file, name, f.tell(), shape, dtype, fortran)
                    if f.tell() + m.size * dtype.itemsize > start + info.file_size:
                        raise ValueError(f"{info.filename}: shorter than its header says")
                    self.members[name] = m
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            self.close()
            raise CheckpointError(f"{self.file}: cannot read ({e})") from None

    def keys(self):
        return self.members.keys()

    def __iter__(self):
        return iter(self.members)

    def __contains__(self, name):
        return name in self.members

    def __getitem__(self, name):
        return self.members[name]

    def get(self, name, default=None):
        return self.members.get(name, default)

    def close(self):
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load(directory, eng, params, transport=None, compare=None, inputs=None, test=False, weights=None):
    """Restore ``eng`` from the newest checkpoint in ``directory`` (``check`` first).
    ``inputs`` (``input_stats`` now) are compared with the saved ones when the
    edges differ; ``test`` (rank 0's ``test_sum`` now; False: not checked) with the
    saved one, when the checkpoint has one (an earlier tux2's has not), after the
    input's checks, every worker raising rank 0's verdict; ``weights`` (``weights_sum`` now) with
    the saved one when the input's records differ, to say so when the weights are what differs.
    A checkpoint of another layout (workers, partitions, partitioner)
    is laid out anew (``Engine.restore_relayout``): every worker reads each part file
    piece by piece (``PartFile``), keeping the rows and edges of its own partitions
    only; the state returned then has ``relaid`` True."""
    rank = getattr(transport, "rank", 0) if transport is not None else 0
    world = getattr(transport, "world", 1) if transport is not None else 1
    path, state = check(directory, params, world, compare)
    saved = state["params"]
    # another layout: other workers, partitions or partitioner (what params say: fit() does not
    # record its partitioner, and a changed one is then refused by the same-layout checks)
    state["relaid"] = relaid = state.get("world") != world or state.get("partitions") != eng.P or any(
        k in saved and k in params and saved[k] != params[k] for k in LAYOUT)
    try:
        if relaid:
            n = state.get("world")
            if not isinstance(n, int) or n < 1:
                raise SchemaError("checkpoint state names no number of workers")
            with contextlib.ExitStack() as files_:
                eng.restore_relayout([files_.enter_context(PartFile(path, r)) for r in range(n)], state)
        else:
            eng.restore(_read_part(path, rank), state)
    except SchemaError as e:
        notes = [] if isinstance(e, ContextStateError) else _input_changes(state.get("inputs"), inputs)
        why = _weights_changed(state.get("weights"), weights) if isinstance(e, RecordsError) else None
        raise CheckpointError(f"{path}: {why or e}" + ("; input files: " + "; ".join(notes) if notes else "")) from None
    # after the input's checks (a changed input is named as such, not by the share it holds out); rank 0 has the
    # test set, and every worker stops with its verdict
    failed = ""
    if rank == 0 and test is not False and "test" in state and not _same_test(state["test"], test):
        failed = str(_test_changes(path, state["test"], test, state.get("inputs"), inputs))
    if world > 1:
        said = transport.allgather("resume-test", [np.frombuffer(failed.encode("utf-8", "surrogateescape"), np.uint8)])
        failed = bytes(said[0][0]).decode("utf-8", "surrogateescape")      # (it names the input files: bytes)
    if failed:
        raise CheckpointError(failed)
    kept = state.pop("kept", None)      # rank 0's alone (the other ranks read its JSON in state.json too)
    state["keeps"] = kept is not None   # (every rank: whether the run kept a model besides the engine's)
    if rank == 0 and kept is not None:
        _verify(path, ["kept.npz"])
        try:
            with np.load(os.path.join(path, "kept.npz"), allow_pickle=False) as z:
                state["kept"] = ({k: z[k] for k in z.files}, kept)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise CheckpointError(f"{path}/kept.npz: cannot read ({e})") from None
    return state
