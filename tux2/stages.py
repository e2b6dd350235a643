"""MEGA stages (paper §3.3). A program is any sequence of these.

UDF signatures keep the paper's names:

* ``Exchange(u, v, e, a_u, a_v, ctx)`` on every enumerated edge; ``u`` is always
  a vertex of the first type, ``v`` of the second, ``e`` the edge record,
  ``a_u``/``a_v`` their accumulators, ``ctx`` the worker's context.  It may write
  any of them; sync fields written directly become deltas at the next Apply
  (delta = value now − value at last sync).
* ``Apply(v, a, ctx)`` at the master of every touched vertex, after the replicas'
  accumulators (and derived sync-field deltas) are combined by ``combine``:

      sum:  D_v ← D_v + Σ_r δ_r,   a ← Σ_r a_r
      mean: D_v ← D_v + (1/|R|) Σ_r δ_r,  a ← (1/|R|) Σ_r a_r   (R = replicas touched)

  then sync fields are copied to all mirrors.
* ``GlobalSync``: τ ← aggregate(D_v, τ) over masters, τ_l ← combine(τ_i, τ_j)
  across workers (in place into the first), τ ← finalize(τ); the result is
  broadcast and recorded per clock. Context fields declared ``sum`` or
  ``delta`` (ContextSpec) are combined by the engine; ``combine`` handles the
  others (e.g. a max).
* ``MiniBatch(size, unit, enumerate, stages, active=None)``: a contiguous range
  of the global edge order (unit="edge") or of the global ids of type
  ``enumerate`` (unit="vertex") per clock, running ``stages`` on it. With
  ``active(v, ctx) -> bool`` (vertex unit only) the clock's mini-batch holds only
  the range's vertices that pass it at the start of the clock, and the Exchanges
  visit only their edges (a graph engine's active set, like PowerGraph's
  signalled vertices). It must read only sync fields and the context, which
  every replica shares, so all replicas of a vertex agree. With ``shuffle=True``
  the clocks of each epoch run in a seeded random order (the same on every
  worker: the engine's seed, the epoch and the stage's position pick it), as
  coordinate descent visits its coordinates; each clock is still one contiguous
  range, so the central invariant holds.
* ``Exchange(udf, active=pred)`` inside a vertex MiniBatch: this Exchange visits
  only the edges of the mini-batch's vertices that pass ``pred(v, ctx)`` when it
  starts (after the clock's earlier Applies), as PowerGraph scatters only from
  vertices that changed: BlockPG's margins follow only the features whose weight
  moved. Like the MiniBatch's predicate it must read only sync fields and the
  context.
"""
from tux2.errors import SchemaError


class Stage:
    kind = "stage"


class Exchange(Stage):
    """Run ``udf(u, v, e, a_u, a_v, ctx)`` on every edge of the current range.

    ``enumerate`` (a vertex type name) groups edges by that type's global id when
    the stage runs outside a MiniBatch; inside one, the MiniBatch decides.
    ``writes`` names the vertex types the UDF writes or accumulates into (default:
    both); the next Apply of a type runs only at vertices touched by a stage that
    writes it, so a stage that only reads a type's values leaves it out.
    ``active`` (inside a vertex MiniBatch): ``(v, ctx) -> bool`` over its enumerated
    vertices, evaluated when this stage starts; the edges of the others are skipped.
    """
    kind = "exchange"

    def __init__(self, udf, enumerate=None, name=None, writes=None, active=None):
        if not callable(udf):
            raise SchemaError(f"Exchange needs a callable UDF, got {udf!r}")
        if active is not None and not callable(active):
            raise SchemaError(f"Exchange active= must be a callable (v, ctx) -> bool, got {active!r}")
        self.active = active
        if isinstance(writes, str):
            writes = (writes,)
        self.udf, self.enumerate = udf, enumerate
        self.writes = None if writes is None else tuple(writes)
        self.name = name or getattr(udf, "__name__", "exchange")


class Apply(Stage):
    """Combine replica deltas at masters, run ``udf(v, a, ctx)``, update mirrors.

    ``overlap``: what to do when an Exchange wrote a vertex's sync fields directly
    on several of its replicas in one clock. ``"error"`` (the default) stops the run:
    summing independent steps multiplies the step by the number of replicas (use a
    conflict-free order, smaller mini-batches or ``combine="mean"``). ``"allow"``
    sums them — right when the writes are additive (counts, margins, model sums)."""
    kind = "apply"

    def __init__(self, udf=None, combine="sum", types=None, name=None, overlap="error"):
        if combine not in ("sum", "mean"):
            raise SchemaError(f"Apply combine must be 'sum' or 'mean', got {combine!r}")
        if overlap not in ("error", "allow"):
            raise SchemaError(f"Apply overlap must be 'error' or 'allow', got {overlap!r}")
        self.overlap = overlap
        if udf is not None and not callable(udf):
            raise SchemaError(f"Apply UDF must be callable, got {udf!r}")
        if isinstance(types, str):
            types = (types,)
        self.udf, self.combine, self.types = udf, combine, types
        self.name = name or (getattr(udf, "__name__", "apply") if udf else "apply")


class GlobalSync(Stage):
    """Aggregate over masters of type ``over``, combine contexts, finalize. ``record=False``
    leaves its contexts out of the engine's history (a sync run every clock of a mini-batch)."""
    kind = "globalsync"

    def __init__(self, aggregate=None, combine=None, finalize=None, over=None, name=None, record=True):
        if aggregate is not None and over is None:
            raise SchemaError("GlobalSync with an aggregate UDF needs over=<vertex type name>")
        self.aggregate, self.combine, self.finalize, self.over = aggregate, combine, finalize, over
        self.record = bool(record)
        self.name = name or "globalsync"


class MiniBatch(Stage):
    """A composite stage run once per mini-batch (one clock each)."""
    kind = "minibatch"

    def __init__(self, size, stages, unit="edge", enumerate=None, active=None, shuffle=False):
        if unit not in ("edge", "vertex"):
            raise SchemaError(f"MiniBatch unit must be 'edge' or 'vertex', got {unit!r}")
        if unit == "vertex" and enumerate is None:
            raise SchemaError("MiniBatch(unit='vertex') needs enumerate=<vertex type name>")
        if size is not None and (int(size) != size or size < 1):
            raise SchemaError(f"MiniBatch size must be a positive integer or None (all), got {size!r}")
        if active is not None and (unit != "vertex" or not callable(active)):
            raise SchemaError("MiniBatch active=<callable (v, ctx) -> bool> needs unit='vertex'")
        for s in stages:
            if isinstance(s, MiniBatch):
                raise SchemaError("MiniBatch stages cannot be nested")
            if isinstance(s, Exchange) and s.enumerate not in (None, enumerate):
                raise SchemaError(
                    f"Exchange {s.name!r} enumerates {s.enumerate!r} inside a MiniBatch over {enumerate!r}")
            if isinstance(s, Exchange) and s.active is not None and unit != "vertex":
                raise SchemaError(f"Exchange {s.name!r} has an active predicate: it needs a MiniBatch with "
                                  "unit='vertex'")
        self.size, self.unit, self.enumerate, self.stages = size, unit, enumerate, list(stages)
        self.active, self.shuffle = active, bool(shuffle)
        self.name = "minibatch"
