"""Ctrl-C in the ``tux2`` program. Python's own handler raises KeyboardInterrupt where
the main thread happens to be; while numba compiles, that can be inside a callback from
C (llvmlite's object cache), which prints "Exception ignored …" and drops it, and the
run went on (seen: a 100000-epoch run kept running). This handler also remembers the
signal, and ``check`` (after every epoch, tux2.cli.common.collect_from_now) raises it
again; Python's "Exception ignored" report of such a dropped interrupt is not printed."""
import signal
import sys

SEEN = []


def handler(signum, frame):
    SEEN.append(signum)
    raise KeyboardInterrupt


def install():
    """Use ``handler`` for SIGINT and keep the reports of dropped interrupts quiet;
    returns what ``restore`` puts back."""
    previous = signal.signal(signal.SIGINT, handler), sys.unraisablehook
    sys.unraisablehook = _quiet(previous[1])
    return previous


def restore(previous):
    signal.signal(signal.SIGINT, previous[0])
    sys.unraisablehook = previous[1]


def _quiet(hook):
    def unraisable(info):
        if issubclass(info.exc_type, KeyboardInterrupt) and SEEN:
            return                      # remembered: check() raises it at the end of the epoch
        hook(info)
    return unraisable


def check():
    if SEEN:
        raise KeyboardInterrupt
