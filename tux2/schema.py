"""Data model (paper §3.1, §3.3): two vertex types and one edge type, each with
numpy fields, plus a context record for GlobalSync.

Vertex fields come in four roles:

* ``sync``   – held by master and mirrors, exchanged at Apply (the paper's
  VertexDataSync);
* ``master`` – master-only state (e.g. optimiser moments), never sent;
* ``mirror`` – mirror-only state (e.g. BlockPG's weight-delta history);
* ``local``  – held by master and mirrors, never sent: per-replica caches that
  a UDF rebuilds from the sync fields (e.g. LDA's sparse topic index);
* ``accum``  – deltas accumulated by Exchange and combined at the master before
  Apply; defaults to the sync fields.

One record per vertex holds sync+master+mirror+local fields, so a vertex type is one
contiguous structured array per partition (masters first, then mirrors).

Context fields have a combine rule: ``sum`` fields are per-clock partial sums
(each worker's contribution since the last GlobalSync), ``delta`` fields are
shared state that every worker updates (combined as old + Σ(local − old)),
and the rest are parameters that stay as they are unless ``finalize`` changes
them.
"""
import numpy as np

from tux2.errors import SchemaError


def _field(name, spec):
    """('f4') | ('f4', k) | ('f4', (k, l)) | np.dtype → numpy dtype descriptor entry."""
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise SchemaError(f"field {name!r}: expected 'dtype' or (dtype, shape), got {spec!r}")
        dt, shape = spec
        shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        return (name, np.dtype(dt), shape)
    return (name, np.dtype(spec))


def record_dtype(fields):
    """Aligned structured dtype from an ordered {name: spec} mapping."""
    if not fields:
        return None
    return np.dtype([_field(n, s) for n, s in fields.items()], align=True)


# numba cannot type a record without fields; a 1-byte placeholder stands in.
EMPTY = np.dtype([("_", "u1")])


class VertexType:
    """A vertex type: a name and its fields by role (see module docstring)."""

    def __init__(self, name, sync=None, master=None, mirror=None, accum=None, local=None):
        self.name = str(name)
        self.sync = dict(sync or {})
        self.master = dict(master or {})
        self.mirror = dict(mirror or {})
        self.local = dict(local or {})
        self.accum = dict(self.sync if accum is None else accum)
        seen = {}
        for role in ("sync", "master", "mirror", "local"):
            for f in getattr(self, role):
                if f in seen:
                    raise SchemaError(f"vertex type {self.name!r}: field {f!r} is both {seen[f]} and {role}")
                seen[f] = role
        self.dtype = record_dtype({**self.sync, **self.master, **self.mirror, **self.local}) or EMPTY
        self.sync_dtype = record_dtype(self.sync)
        self.accum_dtype = record_dtype(self.accum) or EMPTY
        self.sync_fields = tuple(self.sync)
        self.accum_fields = tuple(self.accum)

    def __repr__(self):
        return (f"VertexType({self.name!r}, sync={list(self.sync)}, master={list(self.master)}, "
                f"mirror={list(self.mirror)}, local={list(self.local)}, accum={list(self.accum)})")


class ContextSpec:
    """The GlobalSync context record: fields, combine rules, initial values.

    ``state`` names the fields besides ``sum`` and ``delta`` that the program's UDFs
    change as it runs (an iteration counter, a decayed rate); every other field with an
    ``init`` value is a setting, fixed for a run, and a checkpoint must hold the value
    the resuming run starts with. ``bounds``: ``{field: (lo, hi)}`` the values a
    context field may hold (counts ≥ 0, …), checked when a checkpoint is restored.
    ``scratch``: ``sum`` fields a finalize consumes (a histogram), left out of the
    engine's per-GlobalSync history, which would otherwise keep a copy per clock.
    ``private``: working fields of an Exchange (a cache, running totals it keeps from
    the last GlobalSync's values): threads that share a partition's tiles each work on
    their own copy, dropped after the clock (the next GlobalSync's finalize sets them
    again); only ``sum`` and ``delta`` fields carry a thread's results."""

    def __init__(self, fields=None, sum=(), delta=(), init=None, state=(), bounds=None, scratch=(), private=()):
        self.fields = dict(fields or {})
        self.sum = tuple(sum) + tuple(scratch)
        self.scratch = tuple(scratch)
        self.delta = tuple(delta)
        self.state = tuple(state)
        self.private = tuple(private)
        self.bounds = dict(bounds or {})
        for f in self.sum + self.delta + self.state + self.private + tuple(self.bounds):
            if f not in self.fields:
                raise SchemaError(f"context field {f!r} is listed as sum/delta/state/private/bounds but not declared")
        self.dtype = record_dtype(self.fields) or EMPTY
        self.init = dict(init or {})
        for f in self.init:
            if f not in self.fields:
                raise SchemaError(f"context init names unknown field {f!r}")
        self.settings = tuple(f for f in self.init if f not in self.sum + self.delta + self.state + self.private)

    def new(self, **overrides):
        """A fresh 1-element context array with initial values."""
        ctx = np.zeros(1, self.dtype)
        for f, v in {**self.init, **overrides}.items():
            if f not in self.fields:
                raise SchemaError(f"context has no field {f!r}")
            try:
                with np.errstate(over="ignore"):
                    ctx[f][0] = v
            except OverflowError:           # an integer field given a number beyond its type (numpy refuses it)
                info = np.iinfo(ctx.dtype[f].base)
                raise SchemaError(f"context field {f!r} is {v!r}, beyond the range of the {ctx.dtype[f].base} it "
                                  f"is kept in ({info.min} … {info.max})") from None
            if ctx.dtype[f].base.kind == "f" and not np.isfinite(ctx[f][0]).all() and \
                    np.isfinite(np.asarray(v, np.float64)).all():
                raise SchemaError(f"context field {f!r} is {v!r}, beyond the range of the {ctx.dtype[f].base} "
                                  f"it is kept in (±{np.finfo(ctx.dtype[f].base).max:.4g})")
        return ctx
