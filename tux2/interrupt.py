"""Ctrl-C in the ``tux2`` program. Python's own handler raises KeyboardInterrupt where
the main thread happens to be; while numba compiles, that can be inside a callback from
C (llvmlite's object cache), which prints "Exception ignored …" and drops it, and the
run went on (seen: a 100000-epoch run kept running). This handler also remembers the
signal, and ``check`` (after every epoch, tux2.cli.common.collect_from_now) raises it
again."""
import signal

SEEN = []


def handler(signum, frame):
    SEEN.append(signum)
    raise KeyboardInterrupt


def install():
    """Use ``handler`` for SIGINT; returns the previous handler."""
    return signal.signal(signal.SIGINT, handler)


def check():
    if SEEN:
        raise KeyboardInterrupt
