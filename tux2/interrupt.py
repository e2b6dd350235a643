"""Ctrl-C in the ``tux2`` program. Python's own handler raises KeyboardInterrupt where
the main thread happens to be; while numba compiles, that can be inside a callback from
C (llvmlite's object cache), which prints "Exception ignored …" and drops it, and the
run went on (seen: a 100000-epoch run kept running). This handler also remembers the
signal, and ``check`` (after every epoch, tux2.cli.common.collect_from_now) raises it
again; Python's "Exception ignored" report of such a dropped interrupt is not printed,
nor Cython's traceback of it: pyzmq checks for signals when it frees a message (a
zero-copy Frame, freed wherever its last reference goes), where an exception cannot
propagate, and Cython prints it through ``sys.excepthook`` before ``sys.unraisablehook``
(seen in CI: a worker stopped by SIGTERM printed "_check_rc … handler … KeyboardInterrupt").
A signal that lands while numba loads or compiles a function (its Python frames, or
llvmlite's called from them) is only remembered there: raised inside that work it could
leave a half-linked function behind, whose first call then crashed the process
(SIGSEGV, seen in CI: Ctrl-C 0.3 s into ``tux2 run mf``, 2 runs in 40); ``check``
raises it at the end of the epoch.
SIGTERM (kill, a job scheduler) is taken alike: a worker stopped by it tells its peers,
which else waited --timeout for it, and the program exits 143 saying so; a second
SIGTERM before the first was acted on ends the program at once, as SIGTERM did."""
import contextlib
import os
import signal
import sys
import threading

SEEN = []


def handler(signum, frame):
    if signum == signal.SIGTERM and signum in SEEN:     # the first is not acted on yet (dropped in C): stop now
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    SEEN.append(signum)
    if not _in_numba(frame):
        raise KeyboardInterrupt


def _in_numba(frame):
    """Whether ``frame`` (the one the signal interrupted) runs numba's or llvmlite's code
    or is called from it."""
    while frame is not None:
        if frame.f_globals.get("__name__", "").partition(".")[0] in ("numba", "llvmlite"):
            return True
        frame = frame.f_back
    return False


def install():
    """Use ``handler`` for SIGINT and SIGTERM (unless SIGTERM is ignored or has a
    handler of the caller's) and keep the reports of dropped interrupts quiet;
    returns what ``restore`` puts back."""
    term = signal.getsignal(signal.SIGTERM)
    previous = (signal.signal(signal.SIGINT, handler), sys.unraisablehook,
                signal.signal(signal.SIGTERM, handler) if term is signal.SIG_DFL else None, sys.excepthook)
    sys.unraisablehook = _quiet(previous[1])
    sys.excepthook = _quiet(previous[3], lambda kind, value, tb: kind)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})     # a local worker starts with it blocked
    return previous


def restore(previous):
    signal.signal(signal.SIGINT, previous[0])
    sys.unraisablehook, sys.excepthook = previous[1], previous[3]
    if previous[2] is not None:
        signal.signal(signal.SIGTERM, previous[2])


def stopped():
    """(exit status, what happened) for the program stopped by a signal: 143 and
    'terminated (SIGTERM)' after SIGTERM, else 130 and 'interrupted' (Ctrl-C)."""
    if SEEN and SEEN[-1] == signal.SIGTERM:
        return 128 + signal.SIGTERM, "terminated (SIGTERM)"
    return 128 + signal.SIGINT, "interrupted"


@contextlib.contextmanager
def sigint_blocked():
    """SIGINT blocked in this thread while the context lasts. Worker processes started in it
    inherit the block through exec, so a terminal's Ctrl-C waits until they take it (``install``
    unblocks it) instead of a traceback while they import."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextlib.contextmanager
def deferred():
    """SIGINT and SIGTERM that arrive while the context lasts are acted on when it ends:
    around work that must not stop half done (tux2.files renaming a model's files into
    place: stopped among them, the directory held new files beside the old manifest).
    Blocking the signals would not do: the kernel hands them to another of the process's
    threads (numba's, ZeroMQ's) and the main thread raises all the same. Only the main
    thread's handlers can be swapped, and only the tux2 program's or Python's default ones
    are (a caller's own handler is left to do what it does); elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got, saved = [], {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(signum)
        if previous is handler or previous is signal.default_int_handler:
            saved[signum] = previous
            signal.signal(signum, lambda n, frame: got.append(n))
    try:
        yield
    finally:
        for signum, previous in saved.items():
            signal.signal(signum, previous)
    for signum in dict.fromkeys(got):                       # (a second SIGTERM is one)
        saved[signum](signum, None)                         # raises KeyboardInterrupt, as the signal would have


# set by tux2.runtime.launch_local for the workers it starts
LOCAL_WORKER = "TUX2_LOCAL_WORKER"


def said_by_parent():
    """Whether this process's stop is said by its parent: a local worker that SIGINT
    reached (a terminal's Ctrl-C reaches every process of its group; the workers said
    "terminated (SIGTERM)" each, from the parent's SIGTERM that followed, before the
    parent's "interrupted")."""
    return signal.SIGINT in SEEN and bool(os.environ.get(LOCAL_WORKER))


def _quiet(hook, kind=lambda info: info.exc_type):
    """``hook`` (sys.unraisablehook, or sys.excepthook with ``kind`` taking its arguments)
    silent on the KeyboardInterrupt of a signal ``handler`` took."""
    def quiet(*args):
        if issubclass(kind(*args), KeyboardInterrupt) and SEEN:
            return                      # remembered: check() raises it at the end of the epoch
        hook(*args)
    return quiet


def check():
    if SEEN:
        raise KeyboardInterrupt
