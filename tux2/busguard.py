"""A message instead of a silent death when a memory-mapped input file shrinks.

A mapped file that another program truncates (``python gen.py > ratings.txt`` while a
run reads ratings.txt) raises SIGBUS at the first read past its new end. The read is in
a numba loop, where Python cannot take the signal (its handler would only set a flag,
and the faulting load would run again), so the default action killed the process
without a word. :func:`guard` installs, once per ``tux2`` command's process (:func:`arm`), a C-level handler
(:mod:`tux2.sigbus`) that prints ``tux2: error: FILE: …`` for the files mapped and exits
with 2, the exit of every input error. Only files too large to read into memory are
mapped (``tux2.io.map_file``)."""
import ctypes
import os
import signal

MESSAGE = "the file shrank while it was being read (another program rewrote it?); run again once it is whole"

_state = {"armed": False, "installed": False, "paths": []}


def arm():
    """Let ``guard`` install the handler: the ``tux2`` command does, for its own process.
    A Python session (a notebook's kernel) keeps its own SIGBUS handling (faulthandler's
    traceback, or the default), which a handler naming a tux2 input would replace for
    good and misname any other fault with."""
    _state["armed"] = True


def guard(path):
    """Make a SIGBUS print that ``path`` (or a file mapped before it) shrank, instead of
    killing the process silently, once ``arm`` was called."""
    if not _state["armed"] or not hasattr(signal, "SIGBUS"):    # (Windows: no SIGBUS)
        return
    if not _state["installed"]:
        _install()
    _state["paths"].append(str(path))
    from tux2.sigbus import VARIABLE
    os.environ[VARIABLE] = f"tux2: error: {' or '.join(_state['paths'])}: {MESSAGE}\n"


def _install():
    from tux2.sigbus import on_sigbus
    libc = ctypes.CDLL(None)
    libc.signal.argtypes, libc.signal.restype = (ctypes.c_int, ctypes.c_void_p), ctypes.c_void_p
    libc.signal(signal.SIGBUS, on_sigbus.address)
    _state["installed"] = True
