"""A message instead of a silent death when a memory-mapped input file shrinks.

A mapped file that another program truncates (``python gen.py > ratings.txt`` while a
run reads ratings.txt) raises SIGBUS at the first read past its new end. The read is in
a numba loop, where Python cannot take the signal (its handler would only set a flag,
and the faulting load would run again), so the default action killed the process
without a word. :func:`guard` installs, once per ``tux2`` command's process (:func:`arm`), a C-level handler compiled
with numba (``write`` and ``_exit``, both async-signal-safe) that prints ``tux2: error:
FILE: …`` for the files mapped and exits with 2, the exit of every input error.
Compiling it costs 0.06-0.7 s, so only files too large to read into memory are mapped
(``tux2.io.map_file``)."""
import ctypes
import signal

MESSAGE = "the file shrank while it was being read (another program rewrote it?); run again once it is whole"

_state = {"armed": False, "paths": []}


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
    if "message" not in _state:
        _install()
    _state["paths"].append(str(path))
    text = f"tux2: error: {' or '.join(_state['paths'])}: {MESSAGE}\n".encode("utf-8", "replace")[:4095]
    _state["message"].value = text


def _install():
    import numba
    from numba import types
    libc = ctypes.CDLL(None)
    write, strlen, exit_ = libc.write, libc.strlen, libc._exit
    write.argtypes, write.restype = (ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t), ctypes.c_ssize_t
    strlen.argtypes, strlen.restype = (ctypes.c_size_t,), ctypes.c_size_t
    exit_.argtypes, exit_.restype = (ctypes.c_int,), None
    message = ctypes.create_string_buffer(4096)
    address = ctypes.addressof(message)

    @numba.cfunc(types.void(types.intc))
    def on_sigbus(signum):
        write(2, address, strlen(address))
        exit_(2)

    libc.signal.argtypes, libc.signal.restype = (ctypes.c_int, ctypes.c_void_p), ctypes.c_void_p
    libc.signal(signal.SIGBUS, on_sigbus.address)
    _state.update(message=message, handler=on_sigbus)     # kept alive: the handler's code and its text
