"""The engine's only window to other partitions (ps-lite's Van, narrowed).

The engine speaks in messages between partitions: a message is a list of
numpy arrays from partition ``src`` to partition ``dst``. ``LocalTransport``
owns every partition in this process, so delivery is a dictionary hand-over;
the ZeroMQ transport (distributed runtime) implements the same two calls.
"""


class LocalTransport:
    """All partitions in one process."""

    def __init__(self, parts):
        self.parts = parts
        self.local_parts = list(range(parts))
        self.bytes_sent = 0

    def alltoall(self, clock, tag, outgoing):
        """Deliver ``{(src, dst): [arrays]}`` for local sources; return the
        messages addressed to local destinations, same keys."""
        for arrays in outgoing.values():
            self.bytes_sent += sum(a.nbytes for a in arrays)
        return outgoing

    def allreduce_context(self, clock, local_contexts, fold):
        """Fold the local contexts (``fold(acc, other)`` in place into a copy of
        the first) across every partition; return the combined context."""
        acc = local_contexts[0].copy()
        for c in local_contexts[1:]:
            fold(acc, c)
        return acc

    def close(self):
        pass
