"""The engine's only window to other partitions (ps-lite's Van, narrowed).

The engine speaks in messages between partitions: a message is a list of
numpy arrays from partition ``src`` to partition ``dst``. ``LocalTransport``
owns every partition in this process, so delivery is a dictionary hand-over;
the ZeroMQ transport (distributed runtime) implements the same two calls.

A message's arrays are handed over to the transport: it may read them after
``send`` (or ``alltoall``, ``allgather``) returns — the ZeroMQ transport sends
large buffers zero-copy from its I/O thread while the worker goes on — so the
sender never writes them again. A message of live state (a gather of the model,
the contexts) is a copy: otherwise a worker that has gone on to the next
iteration sends values of that iteration, now and then, under load.
"""
import numpy as np


class LocalTransport:
    """All partitions in one process."""

    def __init__(self, parts):
        self.parts = parts
        self.local_parts = list(range(parts))
        self.rank, self.world = 0, 1
        self.bytes_sent = 0
        self.dropped = 0            # frames dropped as malformed or foreign (none in one process)
        self._box = {}

    def send(self, clock, tag, outgoing):
        """Post ``{(src, dst): [arrays]}`` from local sources for (clock, tag)."""
        for arrays in outgoing.values():
            self.bytes_sent += sum(a.nbytes for a in arrays)
        self._box[(clock, tag)] = outgoing

    def complete(self, clock, tag):
        """Whether every message for (clock, tag) is here (never blocks)."""
        return True

    def collect(self, clock, tag):
        """The messages for (clock, tag) addressed to local partitions (blocks)."""
        return self._box.pop((clock, tag))

    def alltoall(self, clock, tag, outgoing):
        """send + collect: the messages addressed to local destinations, same keys."""
        self.send(clock, tag, outgoing)
        return self.collect(clock, tag)

    def allgather(self, tag, arrays):
        """[arrays of every worker] in rank order (one worker here)."""
        return [arrays]

    def allreduce_context(self, clock, local_contexts, fold, tag="ctx"):
        """Fold the local contexts (``fold(acc, other)`` in place into a copy of
        the first) across every partition; return the combined context. ``tag``
        tells apart several reductions in one clock."""
        acc = local_contexts[0].copy()
        for c in local_contexts[1:]:
            fold(acc, c)
        return acc

    def close(self):
        pass


def barrier(transport, tag):
    """Wait until every worker gets here (nothing to do on one)."""
    if transport is not None and getattr(transport, "world", 1) > 1:
        transport.allgather(tag, [np.zeros(1, np.int64)])
