"""Files tux2 writes so that a crash or a full disk never leaves a damaged result
that looks whole, and reads back only after checking them.

* :func:`write_atomic`: one file through ``NAME.tmp``, fsync, rename.
* :func:`write_dir`: a set of files (a model directory, a checkpoint's last step):
  every file first goes to a temporary name, then a ``manifest.json`` with the size
  and SHA-256 of each; only when all of them are on disk are they renamed, the
  manifest last. A failure before that (ENOSPC, a crash) leaves the previous files
  untouched; Ctrl-C or SIGTERM among the renames acts after the last one
  (tux2.interrupt.deferred); a crash there (SIGKILL) leaves files that disagree with the
  manifest, which :func:`verify` reports instead of loading.
* :func:`verify`: every file named by a directory's manifest has its size and hash.
* :func:`check_writable`: an output path can be written, asked before training.
* :func:`scratch_dir`: a private temporary directory, and the removal of those that
  killed processes left behind.

Write errors name the file (``tux2: error: FILE: No space left on device``).
"""
import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import stat
import sys
import threading
import zlib

import numpy as np

from tux2 import interrupt
from tux2.errors import Tux2Error

MANIFEST = "manifest.json"


class FileError(Tux2Error):
    """A file tux2 wrote or reads back is unwritable, damaged or changed."""


def npz(arrays):
    """A writer of ``arrays`` as an .npz file, for ``write_dir``/``write_atomic``."""
    return lambda f: np.savez(f, **arrays)


def text(s):
    """A writer of the string ``s`` (UTF-8; a file name that is not, as Python decodes
    such names, 'bad\\udcff.txt', is written as its own bytes)."""
    return lambda f: f.write(s.encode("utf-8", "surrogateescape"))


def json_text(obj, **kw):
    """``json.dumps(obj)`` with non-finite floats (a metric with nothing to measure: NaN;
    ±inf) as null: Python would write NaN and Infinity, which are not JSON (jq and
    strict parsers refuse the line)."""
    return json.dumps(_finite(obj), allow_nan=False, **kw)


def _finite(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_error(path, e):
    hint = " (the disk is full)" if e.errno in (errno.ENOSPC, errno.EDQUOT) else \
        " (the file size limit was reached)" if e.errno == errno.EFBIG else ""
    return FileError(f"{path}: cannot write: {e.strerror or e}{hint}")


def _write_tmp(path, write):
    """``write(file)`` into a temporary name beside ``path`` of this process and thread (two
    'tux2 predict -o P' at once shared P.tmp: all but one failed 'P.tmp: No such file or
    directory') and fsync it; returns the temporary name."""
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        discard(tmp)
        raise write_error(path, e) from None
    except BaseException:
        discard(tmp)
        raise
    return tmp


def discard(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def write_whole(f, path, data):
    """Append ``data`` (one record: a JSON line) to the unbuffered binary file ``f``
    whole or not at all: after a failed or short write the file is cut back to where
    the record began, so a full disk never leaves half a record that parses (a pipe,
    which cannot seek, as it is)."""
    try:
        start = f.tell()
    except OSError:             # a pipe (--metrics /dev/stdout | jq): its reader has what was written
        start = None
    try:
        n = f.write(data)
        if n != len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    except OSError as e:
        try:
            if start is not None:
                f.truncate(start)
        except OSError:
            pass
        raise write_error(path, e) from None


def make_parent(path):
    """The missing directories above an output file (check_writable has found they can be made)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


def write_atomic(path, write):
    """``write(file)`` into a temporary name, fsync, rename over ``path``; into ``path`` itself
    when that is no regular file (/dev/null, /dev/stdout, a FIFO): a rename would put
    a file in the device's place."""
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False
    if special:
        try:
            with open(path, "wb") as f:
                write(f)
        except OSError as e:            # /dev/full, a FIFO whose reader left: this file's error, not stdout's
            raise write_error(path, e) from None
        return
    os.replace(_write_tmp(path, write), path)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def crc32(path):
    """CRC-32 of a file's bytes: a cheap check that two copies hold the same data
    (~1.3 GB/s: a tenth of the time the parser takes over the same bytes)."""
    crc, buf = 0, bytearray(1 << 22)
    with open(path, "rb", buffering=0) as f:
        view = memoryview(buf)
        while n := f.readinto(buf):
            crc = zlib.crc32(view[:n], crc)
    return crc


def describe(path):
    """The manifest entry of a file on disk: its size and SHA-256."""
    return {"bytes": os.path.getsize(path), "sha256": sha256(path)}


def write_dir(directory, files, present=None):
    """Write ``files`` ({name: write(file)}, in order) into ``directory`` together:
    each to a temporary name (fsync'd), then ``manifest.json`` naming every file of
    ``files`` and ``present`` (files already in place, e.g. other workers' parts),
    then the renames, in order, the manifest last; then the files the directory's
    previous manifest named and this one does not (another model's, saved there before)
    go. No other file is touched. Returns the manifest."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        check_writable(directory, "the output", directory=True)     # names a file in the way
        raise write_error(directory, e) from None
    with locked(directory):
        return _write_dir(directory, files, present)


@contextlib.contextmanager
def locked(directory, shared=False):
    """An exclusive ``flock`` on ``directory`` itself while the context lasts: two runs
    given one --out take turns (they shared the temporary names: one's rename found its
    file gone, and the directory could end with one run's manifest over another's file).
    ``shared``: a reader's (``load``, ``tux2 predict``), which waits for a writer, so it
    never reads one model's model.json beside another's arrays. Where the file system has
    no such locks (some NFS), or ``directory`` is none, nothing is held."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


_STAGED = re.compile(r".+\.\d+-\d+\.tmp")     # _write_tmp's names


def _write_dir(directory, files, present):
    for name in os.listdir(directory):          # a crashed writer's: under the lock, no one else's
        if _STAGED.fullmatch(name):
            discard(os.path.join(directory, name))
    try:
        old = read_manifest(directory, required=False) or {}
    except FileError:               # damaged: nothing in it is known to be ours
        old = {}
    staged, entries = [], {}
    try:
        for name in present or ():
            entries[name] = describe(os.path.join(directory, name))
        for name, write in files.items():
            tmp = _write_tmp(os.path.join(directory, name), write)
            staged.append((tmp, os.path.join(directory, name)))
            entries[name] = describe(tmp)
        manifest = {"files": entries}
        body = json.dumps(manifest, indent=1).encode()
        staged.append((_write_tmp(os.path.join(directory, MANIFEST), lambda f: f.write(body)),
                       os.path.join(directory, MANIFEST)))
    except BaseException:
        for tmp, _ in staged:
            discard(tmp)
        raise
    fsync_dir(directory)
    with interrupt.deferred():      # Ctrl-C among the renames: after them, the directory whole (old or new)
        for tmp, final in staged:
            os.replace(tmp, final)
    fsync_dir(directory)
    for name in old.keys() - entries.keys():
        discard(os.path.join(directory, name))
    return manifest


def read_manifest(directory, required=True):
    """A directory's manifest ({name: {bytes, sha256}}), or None when it has none and
    ``required`` is False (directories written before manifests existed)."""
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
        files = manifest["files"]
        if not isinstance(files, dict) or not all(
                isinstance(n, str) and isinstance(e, dict) and isinstance(e.get("bytes"), int)
                and isinstance(e.get("sha256"), str) for n, e in files.items()):
            raise ValueError("malformed entries")
    except FileNotFoundError:
        if not required:
            return None
        raise FileError(f"{directory}: no {MANIFEST} (incomplete, or not written by tux2)") from None
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as e:
        raise FileError(f"{path}: damaged ({e})") from None
    for name in files:
        if os.path.basename(name) != name or name in ("", ".", ".."):
            raise FileError(f"{path}: names {name!r}, which is not a file of this directory")
    return files


def verify(directory, names=None, required=True):
    """Check the files ``names`` (default: all) of ``directory`` against its manifest:
    each must be listed, with its size and SHA-256. Returns the manifest (None when
    there is none and ``required`` is False)."""
    files = read_manifest(directory, required)
    if files is None:
        return None
    for name in (files if names is None else names):
        path = os.path.join(directory, name)
        entry = files.get(name)
        if entry is None:
            raise FileError(f"{path}: not listed in {os.path.join(directory, MANIFEST)}")
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise FileError(f"{path}: {e.strerror} (listed in {MANIFEST})") from None
        if size != entry["bytes"]:
            raise FileError(f"{path}: {size} bytes, but {MANIFEST} says {entry['bytes']} (truncated or "
                            "replaced)")
        if sha256(path) != entry["sha256"]:
            raise FileError(f"{path}: its SHA-256 differs from the one in {MANIFEST} (the file is damaged or "
                            "was changed)")
    return files


def stdout_gone():
    """Point standard output at /dev/null, after its reader closed it (``| head``) or a
    write to it failed: the process goes on, and exits, without another error from it."""
    fd = os.open(os.devnull, os.O_WRONLY)
    if fd != 1:                     # 1 when it was closed
        os.dup2(fd, 1)
        os.close(fd)
    if sys.stdout is None:          # the process started with it closed
        sys.stdout = open(1, "w", closefd=False)


def check_cwd():
    """The working directory still exists (numba's compiler names its files relative to
    it, and a relative path would name nothing): else an error saying so, up front."""
    try:
        os.getcwd()
    except FileNotFoundError:
        raise Tux2Error("the working directory has been deleted: change to an existing directory "
                        "and start again") from None


def check_writable(path, what, directory, inputs=()):
    """Raise FileError unless ``path`` (a directory when ``directory``, else a file)
    can be created or written: asked before training, not after it. ``inputs``: the
    command's input files, which an output file must not be (it would overwrite them)."""
    if not path:
        return
    if directory and path == "-":           # (a directory named '-' is ./-)
        raise FileError(f"{what} names a directory to write files into; '-' (standard output) cannot hold them: "
                        "name a directory")
    path = os.path.abspath(path)
    if os.path.exists(path):
        if directory and not os.path.isdir(path):
            raise FileError(f"{path}: {what} must be a directory, and this is a file")
        if not directory and os.path.isdir(path):
            raise FileError(f"{path}: {what} must be a file, and this is a directory")
        same = [p for p in inputs if p and os.path.isfile(p) and os.path.samefile(p, path)]
        if same and not directory:
            raise FileError(f"{path}: {what} names the input file {same[0]}; writing it would overwrite the "
                            "data: name another file")
        if not os.access(path, os.W_OK):
            raise FileError(f"{path}: {what} is not writable")
        if not directory and not os.path.isfile(path):     # /dev/stdout, a FIFO: written in place
            return
        _probe(path if os.path.isdir(path) else os.path.dirname(path), path, what)
        return
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise FileError(f"{path}: cannot create {what}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FileError(f"{path}: cannot create {what}: {parent} is not writable")
    _probe(parent, path, what)


def _probe(directory, path, what):
    """Make and remove a directory in ``directory``: what permissions cannot tell (root
    passes os.access) — /proc, /sys, a read-only mount."""
    import tempfile
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".tux2-probe-", dir=directory))
    except OSError as e:
        if e.errno == errno.ENOENT and os.path.isdir(directory):    # /proc, /sys: not 'No such file or directory'
            raise FileError(f"{path}: cannot create {what}: {directory} takes no new files (a virtual file "
                            "system)") from None
        raise FileError(f"{path}: cannot create {what}: {directory}: {e.strerror}") from None



_HELD = {}          # scratch directory: the descriptor holding its lock


def scratch_dir(kind):
    """A new private directory ``tux2-KIND-…`` in the system's temporary directory,
    locked (``flock`` on its ``.lock``) while this process lives; remove it with
    :func:`remove_scratch`. A process killed outright (SIGKILL, out of memory) runs no
    cleanup and can leave a decompressed input or a copy of the training data behind:
    first every ``tux2-*`` scratch directory of this user that nobody holds any more
    (the kernel drops a dead process's locks) is removed."""
    import tempfile
    top = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(top) if SCRATCH.fullmatch(n)]
    except OSError:
        names = []
    for name in names:
        _sweep(os.path.join(top, name))
    d = tempfile.mkdtemp(prefix=f"tux2-{kind}-")
    fd = os.open(os.path.join(d, ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD[d] = fd
    return d


def remove_scratch(d):
    import shutil
    shutil.rmtree(d, ignore_errors=True)
    fd = _HELD.pop(d, None)
    if fd is not None:
        os.close(fd)


SCRATCH = re.compile(r"tux2-(input|fit)-[A-Za-z0-9_]+")
SCRATCH_AGE = 60.0      # seconds: a lock is taken at once; younger ones may be being made


def _sweep(path):
    """Remove scratch directory ``path`` when its lock is free (its process is gone)."""
    import shutil
    import time
    lock = os.path.join(path, ".lock")
    try:
        st = os.lstat(lock)
        if st.st_uid != os.getuid() or time.time() - st.st_mtime < SCRATCH_AGE:
            return
        fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:         # held: a live process's
        os.close(fd)
        return
    shutil.rmtree(path, ignore_errors=True)
    os.close(fd)
