"""Checkpoints: an engine's state between iterations, written so that a crash at any
moment leaves the previous checkpoint whole.

Layout of a checkpoint directory::

    DIR/LATEST                 the name of the newest complete checkpoint (replaced atomically)
    DIR/ckpt-00000012/         one per saved iteration
        part-0.npz …           each worker's partitions (written to a temporary name, then renamed)
        state.json             clocks, GlobalSync history, the run's parameters (rank 0, last)

A checkpoint directory is complete once it has its final name, and it gets that name
only after every worker's file and ``state.json`` are on disk (fsync'd); ``LATEST``
moves to it after that, and only then are older checkpoints removed. With several
workers DIR must be shared by them (one machine, or a shared file system).
Nothing here is unpickled: the arrays are plain and structured numpy arrays.
"""
import json
import os
import shutil

import numpy as np

from tux2.errors import Tux2Error
from tux2.transport import barrier

LATEST = "LATEST"


class CheckpointError(Tux2Error):
    """A checkpoint is missing, incomplete or belongs to another run."""


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path, write):
    """``write(file)`` into path.tmp, fsync, rename over ``path``."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save(directory, eng, params, transport=None):
    """Write ``eng``'s state (after a whole iteration) as a new checkpoint under
    ``directory``; ``params`` (JSON) identify the run and are checked on resume.
    Collective: every worker calls it. Returns the checkpoint's path."""
    rank = getattr(transport, "rank", 0) if transport is not None else 0
    arrays, meta = eng.state()
    name = f"ckpt-{eng.iteration:08d}"
    final = os.path.join(directory, name)
    work = final + ".partial"
    os.makedirs(work, exist_ok=True)
    _write_atomic(os.path.join(work, f"part-{rank}.npz"), lambda f: np.savez(f, **arrays))
    barrier(transport, f"ckpt-written-{eng.iteration}")
    if rank == 0:
        world = getattr(transport, "world", 1) if transport is not None else 1
        missing = [r for r in range(world) if not os.path.exists(os.path.join(work, f"part-{r}.npz"))]
        if missing:
            raise CheckpointError(f"{work}: workers {missing} wrote no file here; with several machines the "
                                  "checkpoint directory must be shared")
        state = {**meta, "world": world, "params": params}
        _write_atomic(os.path.join(work, "state.json"), lambda f: f.write(json.dumps(state, indent=1).encode()))
        _fsync_dir(work)
        if os.path.exists(final):                    # a leftover of an earlier run at this iteration
            shutil.rmtree(final)
        os.replace(work, final)
        _fsync_dir(directory)
        _write_atomic(os.path.join(directory, LATEST), lambda f: f.write(name.encode() + b"\n"))
        _fsync_dir(directory)
        for old in os.listdir(directory):            # only now may the previous checkpoints go
            if old.startswith("ckpt-") and old != name:
                shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
    barrier(transport, f"ckpt-done-{eng.iteration}")
    return final


def latest(directory):
    """Path of the newest complete checkpoint in ``directory`` (a checkpoint's own
    directory is accepted too)."""
    if os.path.exists(os.path.join(directory, "state.json")):
        return directory
    pointer = os.path.join(directory, LATEST)
    try:
        with open(pointer) as f:
            name = f.read().strip()
    except FileNotFoundError:
        raise CheckpointError(f"{directory}: no checkpoint here (no {LATEST} file)") from None
    path = os.path.join(directory, name)
    if not os.path.exists(os.path.join(path, "state.json")):
        raise CheckpointError(f"{pointer} names {name}, which is incomplete or missing")
    return path


def read_params(directory):
    """The run parameters a checkpoint was written with."""
    with open(os.path.join(latest(directory), "state.json")) as f:
        return json.load(f)["params"]


def load(directory, eng, params, transport=None, compare=None):
    """Restore ``eng`` from the newest checkpoint in ``directory``. ``params`` must
    match the saved ones on the keys in ``compare`` (default: all)."""
    path = latest(directory)
    with open(os.path.join(path, "state.json")) as f:
        state = json.load(f)
    saved = state["params"]
    keys = compare if compare is not None else sorted(set(saved) | set(params))
    diff = [k for k in keys if saved.get(k) != params.get(k)]
    if diff:
        raise CheckpointError(f"{path} was written by a run with other settings: " + ", ".join(
            f"{k} = {saved.get(k)!r} there, {params.get(k)!r} now" for k in diff))
    rank = getattr(transport, "rank", 0) if transport is not None else 0
    world = getattr(transport, "world", 1) if transport is not None else 1
    if state["world"] != world:
        raise CheckpointError(f"{path} was written by {state['world']} workers; resume with --workers "
                              f"{state['world']} (this run has {world})")
    file = os.path.join(path, f"part-{rank}.npz")
    try:
        with np.load(file, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{file}: cannot read ({e})") from None
    eng.restore(arrays, state)
    return state
