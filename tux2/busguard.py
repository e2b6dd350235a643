"""A message instead of a silent death when a memory-mapped input file shrinks.

A mapped file that another program truncates (``python gen.py > ratings.txt`` while a
run reads ratings.txt) raises SIGBUS at the first read past its new end. The read is in
a numba loop, where Python cannot take the signal (its handler would only set a flag,
and the faulting load would run again), so the default action killed the process
without a word. :func:`guard` installs, once per process, a C-level handler compiled
with numba (``write`` and ``_exit``, both async-signal-safe) that prints ``tux2: error:
FILE: …`` for the file mapped last and exits with 2, the exit of every input error.
Compiling it costs 0.06-0.7 s, so only files too large to read into memory are mapped
(``tux2.io.map_file``)."""
import ctypes
import signal

MESSAGE = "the file shrank while it was being read (another program rewrote it?); run again once it is whole"

_state = {}


def guard(path):
    """Make a SIGBUS print that ``path`` shrank (instead of killing the process silently)."""
    if not hasattr(signal, "SIGBUS"):           # Windows: no SIGBUS; a shrunk mapping is another error there
        return
    if not _state:
        _install()
    text = f"tux2: error: {path}: {MESSAGE}\n".encode("utf-8", "replace")[:4095]
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
