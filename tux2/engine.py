"""The engine: runs a Program's stage sequence over partitions (paper §3).

This engine owns the partitions of one process and runs their Exchanges in its
threads, clock by clock under the SSP bound (slack 0: BSP). All traffic between
partitions goes through the transport's calls (``send``/``collect`` of array
messages, ``allreduce_context``), so the same code drives the in-process and the
distributed case. Setup, the run loop, GlobalSync, results and checkpoints are
here; the Apply rounds are in tux2.rounds.
"""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tux2 import partitioning
from tux2.compile import (aggregate_kernel, append_unstamped, apply_kernel, combine_kernel, compile_call, copy_rows,
                          copy_rows_between, exchange_kernel,
                          finalize_kernel, group_by_part, mark_touched, minibatch_kernel, mirror_fanout, ranges_waiting,
                          tiles_conflict, union_positions, view, writes_records, active_kernel, reselect_kernel)
from tux2.config import cores, jit_disabled
from tux2.errors import ContextStateError, DivergenceError, RecordsError, SchemaError
from tux2.graph import BipartiteGraph
from tux2.layout import EdgeColumns, build_partitions, is_replicated, vertex_runs
from tux2.rounds import ApplyRounds, sync_block
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch
from tux2.transport import LocalTransport

_EMPTY_IDX = np.zeros(0, np.int64)
SERIAL_BELOW = 4096     # rows or edges: smaller calls run their partitions in one thread (Engine._each_part)


class Straggler:
    """A slow worker for experiments (``--straggler RANK:FACTOR[:JITTER]``): the worker of
    ``rank`` (``None``, written ``all``: every worker, each with its own draws) takes
    ``factor`` times its compute per clock, each clock's factor drawn uniformly from
    factor × [1 − jitter, 1 + jitter] (jitter 0: always factor)."""

    def __init__(self, rank, factor, jitter=0.0):
        self.rank, self.factor, self.jitter = None if rank is None else int(rank), float(factor), float(jitter)
        if self.rank is not None and self.rank < 0:
            raise SchemaError(f"straggler rank must be >= 0 or all, got {rank}")
        if not 1.0 <= self.factor <= 1000.0:
            raise SchemaError(f"straggler factor must be between 1 and 1000 (times its compute), got {factor}")
        if not 0.0 <= self.jitter < 1.0:
            raise SchemaError(f"straggler jitter must be in [0, 1) (a fraction of the factor), got {jitter}")

    @classmethod
    def parse(cls, text):
        """``RANK:FACTOR[:JITTER]``, e.g. ``1:3``, ``1:1.5:0.2`` or ``all:1:0.9``."""
        parts = str(text).split(":")
        try:
            if len(parts) not in (2, 3):
                raise ValueError
            rank = None if parts[0].strip().lower() == "all" else int(parts[0])
            factor, jitter = float(parts[1]), float(parts[2]) if len(parts) == 3 else 0.0
        except ValueError:
            raise SchemaError(f"expected RANK:FACTOR[:JITTER] (e.g. 1:3, 1:1.5:0.2 or all:1:0.9), "
                              f"got {str(text)[:80]!r}") from None
        if not (np.isfinite(factor) and np.isfinite(jitter)):
            raise SchemaError(f"straggler factor and jitter must be finite numbers, got {str(text)[:80]!r}")
        return cls(rank, factor, jitter)

    def slows(self, rank):
        return self.rank is None or self.rank == rank

    def clock_factors(self, seed, rank=None):
        """The factor of each clock of worker ``rank`` in turn: the same sequence for the same seed."""
        rank = self.rank if self.rank is not None else int(rank or 0)
        rng = np.random.default_rng((int(seed or 0) & (2**63 - 1), rank, 0x57A6))
        while True:
            yield self.factor * (1.0 + self.jitter * rng.uniform(-1.0, 1.0)) if self.jitter else self.factor

    def __str__(self):
        return f"{'all' if self.rank is None else self.rank}:{self.factor:g}" + (f":{self.jitter:g}" if self.jitter else "")

    def __repr__(self):
        return f"Straggler({self.rank}, {self.factor:g}, {self.jitter:g})"


class Engine(ApplyRounds):
    """Run ``program`` on ``graph`` split into ``partitions`` parts.

    ``edge_data`` (optional) is a structured array of the program's edge dtype in
    global edge order; by default the graph's values fill the first edge field, then
    the program's ``edge_values`` and ``init_edges``.

    ``fuse`` (default True): when a mini-batch's clocks need no messages (no Apply
    inside it of a type with mirrors: one partition, or e.g. model averaging's local
    steps), run its stages for a run of mini-batches in one compiled loop per
    partition (same results, no Python between mini-batches). Its trace then has
    one record per run of clocks (``clocks``: how many) instead of one per clock.

    ``strata`` (optional): positions of the global edge order where strata start,
    plus the end (tux2.graph.stratified_order); an edge mini-batch never spans two
    strata, so with the ``stratified`` partitioner per-edge SGD is conflict-free.

    ``tiles`` (optional, with ``strata``): positions where the tiles of the strata
    start, plus the end (``stratified_order(..., tiles=True)``). The tiles of a stratum
    share no vertex, so a partition's clock cut at tile starts runs in several threads
    and gives the one-thread result bit for bit (as FPSGD's threads share one model);
    checked at setup. Each range after a partition's first gets its own context record
    (sum fields from 0, added back after the clock): the Exchange may add to sum and
    delta fields but not read them for its updates, and may write no other field.

    ``straggler`` (optional, a Straggler or its text ``RANK:FACTOR[:JITTER]``): the
    worker of that rank (every worker for ``all``) sleeps at the start of each clock, after the SSP gate, for
    (factor − 1) × its previous clock's compute (each clock's factor drawn from
    FACTOR × [1 − JITTER, 1 + JITTER], seeded by ``seed`` and the rank), as if its
    compute were that much slower; the sleep counts as compute and is also in the
    trace record's ``injected_s``. It changes timing only: at slack 0 the model is the
    same. Each gated trace record has ``staleness``: at the clock's start, how many of
    the latest clocks' Apply rounds were still incomplete here (this clock minus the
    oldest clock whose updates from the other partitions had not all arrived; 0 at
    slack 0, at most the slack).

    ``threads``: partitions of this process run their Exchanges (and fused loops) in
    this many threads; with ``tiles``, threads beyond the partitions each take a group
    of a partition's tiles. Default: the cores available, capped by the partitions
    (with tiles: by the tiles of a stratum).

    ``check_finite`` (default True): ``run`` stops with DivergenceError when a context
    field (the objective, a metric) becomes NaN or infinite.
    """

    def __init__(self, program, graph, partitions=1, partitioner="random", seed=0,
                 partitioner_options=None, edge_data=None, context=None, transport=None, slack=0,
                 assignment=None, fuse=True, strata=None, threads=None, check_finite=True, tiles=None,
                 straggler=None):
        sharded = not isinstance(graph, BipartiteGraph)
        if sharded:                     # a worker's part of a file (the file readers load only then)
            from tux2.ingress import Shard, check_program
            if not isinstance(graph, Shard):
                raise TypeError(f"graph must be a BipartiteGraph, got {type(graph).__name__}")
        if sharded and assignment is None:
            raise SchemaError("a Shard comes with its assignment (tux2.ingress.load)")
        self.program = program
        self.graph = graph
        self.n = graph.n
        self.num_edges = graph.num_edges
        self.seed = seed
        self.P = int(partitions)
        if self.P < 1:
            raise SchemaError(f"partitions must be >= 1, got {partitions}")
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        n_local_edges = len(graph.src)
        if sharded:
            check_program(program)
        if edge_data is None:
            columns = {}
            if graph.values is not None and program.edge_fields:
                columns[next(iter(program.edge_fields))] = graph.values
            edge_data = EdgeColumns(n_local_edges, program.edge_dtype, {**columns, **program.edge_values})
            if program.init_edges is not None:
                edge_data = edge_data.records()
        if program.init_edges is not None:
            program.init_edges(edge_data, rng)
        vdata = program.init_data(graph.n, rng)
        self._init_crc = _records_crc(edge_data, vdata)
        self._vinit_crc = _records_crc(None, vdata)     # the vertex records alone (alike on every worker)
        t1 = time.perf_counter()
        if assignment is None:
            assignment = partitioning.partition(
                partitioner, graph.src, graph.dst, graph.n_src, graph.n_dst, self.P, seed=seed,
                strict=False, **(partitioner_options or {}))
        self.assignment = assignment
        t2 = time.perf_counter()
        ctx = context if context is not None else program.context.new()
        self.transport = transport or LocalTransport(self.P)
        if getattr(self.transport, "parts", self.P) != self.P:
            raise SchemaError(f"the transport serves {self.transport.parts} partitions, the engine has {self.P}")
        self.parts = build_partitions(program, graph, self.assignment, vdata, edge_data, ctx,
                                      only=self.transport.local_parts, share=graph.share if sharded else None)
        t3 = time.perf_counter()
        self._part = {p.rank: p for p in self.parts}
        self._slot = {p.rank: i for i, p in enumerate(self.parts)}
        self.trace = []             # per clock: compute/sync/wait seconds, bytes sent
        self.slack = int(slack)
        if self.slack < 0:
            raise SchemaError(f"slack must be >= 0, got {slack}")
        self._rounds = []           # pending Apply rounds (SSP)
        self.straggler = Straggler.parse(straggler) if isinstance(straggler, str) else straggler
        if self.straggler is not None and not isinstance(self.straggler, Straggler):
            raise SchemaError(f"straggler must be a Straggler or 'RANK:FACTOR[:JITTER]', got {straggler!r}")
        rank = getattr(self.transport, "rank", 0)
        self._slow = (self.straggler.clock_factors(seed, rank) if self.straggler is not None
                      and self.straggler.slows(rank) else None)
        self._last_compute = 0.0    # the previous gated clock's own compute (seconds; a straggler's delay)
        self._gated_clocks = 0      # (the first one's compute holds the compiling: 2 s against 0.01 s)
        self._injected = 0.0
        self._staleness = None
        self._run_cache = {}        # (partition, order) → per-vertex edge runs, for active mini-batches
        self._came = {}             # (partition, type) → per master: the part whose value it took, or -1
        self._pairs = [None, None]  # per type: no vertex has more than two replicas (one-phase rounds)
        self._ahead = None          # (Exchange, segments) of the next clock, when rows may wait for it
        self._flags = {}            # (partition, type) → scratch flags over local vertices
        self._held = {}             # (partition, type) → (rows synced, rows held back) of a one-phase round
        self._deferred = []         # one-phase rounds sent in the last clock, taken during this clock's Exchange
        self._last_range = {}       # partition → the last stratified clock's range of its edges
        self._direct_plans = {}     # partition → ({touched list key: its one-phase messages}, [room])
        self._marks = {p.rank: ({}, [p.n_edges + sum(tl.n_local for tl in p.types)]) for p in self.parts}
        self._local_plans = {}      # in-process Apply rounds: touched lists → copies between replicas
        self._plan_room = 2 * sum(p.n_edges + sum(tl.n_local for tl in p.types) for p in self.parts)
        self.min_bytes = 0          # replica traffic the synced fields imply (no ids, no headers)
        self._done_ts = None
        self._sync_s = 0.0
        self.global_ctx = ctx.copy()
        self.history = []           # one record per GlobalSync: clock, iteration, context fields
        self._settings = [(f, ctx[f].tobytes()) for f in program.context.settings]   # left out while unchanged
        self.clock = 0
        self.iteration = 0
        self.on_clock = None        # called after each mini-batch clock (progress bars)
        self.time_parts = False     # True: each trace record gets part_exchange_s, per local partition
        self._part_s = None
        self.timers = {"exchange": 0.0, "apply": 0.0, "globalsync": 0.0}
        self._replicated = (list(graph.replicated) if sharded else
                            [is_replicated(graph, self.assignment, t) for t in (0, 1)])
        self._tracked = [self._replicated[t] or any(
            isinstance(s, Apply) and s.udf is not None and t in program.apply_types(s)
            for s, _ in program.walk()) for t in (0, 1)]
        self.fuse = bool(fuse)
        self.strata = self._check_strata(strata)
        self.tiles = self._check_strata(tiles, "tiles")
        if self.tiles is not None and self.strata is None:
            raise SchemaError("tiles come with strata: Engine(strata=..., tiles=...) (tux2.graph.stratified_order)")
        if self.tiles is not None and not np.isin(self.strata, self.tiles).all():
            raise SchemaError("tiles must cut the strata: every stratum start is a tile start")
        self._tiled = False         # True while edge mini-batch clocks run (their tiles may be cut)
        self.check_finite = bool(check_finite)
        if self.check_finite:
            for f in ctx.dtype.names:
                if ctx[f].dtype.kind == "f" and not np.isfinite(ctx[f]).all():
                    raise SchemaError(f"context field {f!r} of program {program.name!r} starts at "
                                      f"{ctx[f][0].tolist()}: a parameter is not a finite number")
        if threads is not None and int(threads) < 1:
            raise SchemaError(f"threads must be >= 1, got {threads}")
        per_stratum = 1 if self.tiles is None else (len(self.tiles) - 1) // (len(self.strata) - 1)
        self.threads = min(int(threads) if threads is not None else cores(), len(self.parts) * max(per_stratum, 1))
        # ranges per partition and clock: the threads shared out (the first partitions take the rest)
        self._groups = [1] * len(self.parts)
        if self.tiles is not None:
            self._groups = [self.threads // len(self.parts) + (i < self.threads % len(self.parts))
                            for i in range(len(self.parts))]
            if max(self._groups) > 1:
                self._check_tiles()
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="tux2") if self.threads > 1 else None
        self._compile()
        # seconds of setup by step (initial records and vertex data, partitioning, layout, kernels)
        self.setup_times = {"init_s": t1 - t0, "partition_s": t2 - t1, "layout_s": t3 - t2,
                            "compile_s": time.perf_counter() - t3}

    def _check_strata(self, strata, what="strata"):
        if strata is None:
            return None
        try:
            b = np.asarray(strata)
        except (TypeError, ValueError):
            b = np.zeros(0)
        if b.dtype.kind not in "iu":
            raise SchemaError(f"{what} must be integer edge positions, got {strata!r}")
        b = b.astype(np.int64)
        if b.ndim != 1 or len(b) < 2 or b[0] != 0 or b[-1] != self.num_edges or (np.diff(b) < 0).any():
            raise SchemaError(f"{what} must be non-decreasing edge positions from 0 to {self.num_edges} "
                              f"(the number of edges), got {strata!r}")
        return b

    def _each_part(self, fn, parts, work=None):
        """``fn(p)`` for each partition (or other item whose work touches disjoint
        arrays), in the engine's threads (numba kernels release the GIL). ``work``:
        the call's size in rows or edges, when known; below ``SERIAL_BELOW`` the
        items run in this thread, since handing a task to another thread and waiting
        for it costs more (tens of µs, and the GIL) than the task itself."""
        if self._pool is None or len(parts) < 2 or (work is not None and work < SERIAL_BELOW):
            return [fn(p) for p in parts]
        # the first in this thread: it would only wait otherwise (one hand-over less per call)
        rest = [self._pool.submit(fn, p) for p in parts[1:]]
        try:
            first = fn(parts[0])
        finally:
            done = [f.result() for f in rest]       # never leave a task running on failure
        return [first] + done

    # ------------------------------------------------------------------ compile
    def _compile(self):
        """Build and compile every kernel now, on empty ranges, so a UDF numba
        cannot type fails here with the stage and UDF named."""
        self._kernels = {}
        self._reselect = {}         # Exchange with its own active predicate → its reselect kernel
        self._writes = {}
        p0 = self.parts[0]
        A, B = p0.types
        cdt = p0.ctx.dtype
        for mb in self.program.stages:
            if isinstance(mb, MiniBatch) and mb.active is not None:
                tl = p0.types[self.program.type_index(mb.enumerate)]
                k = active_kernel(mb.active, (tl.data.dtype, cdt))
                compile_call(k, (0, 0, _EMPTY_IDX, _EMPTY_IDX, view(tl.data), view(p0.ctx), _EMPTY_IDX,
                                 _EMPTY_IDX), mb, mb.active)
                self._kernels[id(mb)] = k
            for s in (mb.stages if isinstance(mb, MiniBatch) else ()):
                if isinstance(s, Exchange) and s.active is not None:
                    tl = p0.types[self.program.type_index(mb.enumerate)]
                    k = reselect_kernel(s.active, (tl.data.dtype, cdt))
                    compile_call(k, (_EMPTY_IDX, _EMPTY_IDX, 0, np.zeros(1, np.int64), _EMPTY_IDX, view(tl.data),
                                     view(p0.ctx), _EMPTY_IDX, _EMPTY_IDX), s, s.active)
                    self._reselect[id(s)] = k
        self._index = {}
        for index, (s, _) in enumerate(self.program.walk()):
            self._index[id(s)] = index
            if isinstance(s, Exchange):
                k = exchange_kernel(s.udf, (A.data.dtype, B.data.dtype, p0.edata.dtype, A.accum.dtype,
                                            B.accum.dtype, cdt))
                perm = p0.orders[self.program.orders()[0]][0]
                compile_call(k, (_EMPTY_IDX, _EMPTY_IDX, 0, perm, p0.ea, p0.eb, view(A.data), view(B.data),
                                 view(p0.edata), view(A.accum), view(B.accum), view(p0.ctx)), s, s.udf)
                self._kernels[id(s)] = k
                self._writes[id(s)] = {self.program.type_index(n) for n in (s.writes or ())}
            elif isinstance(s, Apply) and s.udf is not None:
                k = apply_kernel(s.udf, tuple((p0.types[t].data.dtype, p0.types[t].accum.dtype)
                                              for t in self.program.apply_types(s)) + (cdt,))
                for t in self.program.apply_types(s):
                    tl = p0.types[t]
                    compile_call(k, (_EMPTY_IDX, view(tl.data), view(tl.accum), view(p0.ctx)), s, s.udf)
                self._kernels[id(s)] = k
            elif isinstance(s, GlobalSync):
                ks = {"index": index}
                if s.aggregate is not None:
                    tl = p0.types[self.program.type_index(s.over)]
                    ks["aggregate"] = aggregate_kernel(s.aggregate, (tl.data.dtype, cdt))
                    compile_call(ks["aggregate"], (0, view(tl.data), view(p0.ctx)), s, s.aggregate)
                if s.combine is not None:
                    ks["combine"] = combine_kernel(s.combine, (cdt,))
                    c = p0.ctx.copy()
                    compile_call(ks["combine"], (view(c), view(p0.ctx.copy())), s, s.combine)
                if s.finalize is not None:
                    ks["finalize"] = finalize_kernel(s.finalize, (cdt,))
                    compile_call(ks["finalize"], (view(p0.ctx.copy()),), s, s.finalize)
                self._kernels[id(s)] = ks
        # the sync fields lead each record (schema.VertexType): they end at this byte
        self._sync_end = []
        for vt in self.program.types:
            fields = [vt.dtype.fields[f] for f in vt.sync_fields]
            self._sync_end.append(max((off + dt.itemsize for dt, off, *_ in fields), default=0))
            if vt.sync_dtype is not None and any(vt.sync_dtype.fields[f][1] != vt.dtype.fields[f][1]
                                                 for f in vt.sync_fields):
                raise SchemaError(f"vertex type {vt.name!r}: sync fields must lead its records")
        # whether any Exchange may change a type's replica values: if none does, a
        # mirror's sync fields always equal its master's and rounds send no deltas up
        self._deltas = [any(writes_records(s.udf, t, p0.types[t].data.dtype)
                            for s, _ in self.program.walk() if isinstance(s, Exchange)) for t in (0, 1)]
        self._apply_deltas = self._deltas_per_apply(p0)
        # the per-clock helpers for the index types they will see (numba compiles, or
        # loads from its cache, on a first call: here, not inside the first clock)
        i4, i8 = np.zeros(0, np.int32), _EMPTY_IDX
        for t, tl in enumerate(p0.types):
            mark_touched(i8, i8, 0, i8, (p0.ea, p0.eb)[t], tl.stamp, 0, tl.touched, 0)
            append_unstamped(i8, tl.stamp, 0, tl.touched, 0)
        if any(self._replicated):
            for lids in (i4, i8):
                union_positions(0, i8, lids, np.zeros(0, np.bool_), i8)
            group_by_part(i4, 1)
            mirror_fanout(i8, np.zeros(1, np.int64), i4, i8, 1)
            for t, tl in enumerate(p0.types):
                if self._replicated[t] and tl.snapshot is not None:
                    data, snap = sync_block(tl.data, self._sync_end[t]), sync_block(tl.snapshot, self._sync_end[t])
                    copy_rows(snap, data, i8)
                    copy_rows_between(data, snap, i8, data, i8)
        # a fused loop calls the stage kernels above, which must be loaded first, also when only the
        # fused loop runs: a fused loop loaded from the cache carries its own copy of each, optimised
        # with the loop (fastmath), and the process runs the copy loaded first. Loaded after it, the
        # stage kernels ran that copy too: mini-batch MF (k = 50) compiling its loops ended ~1e-8
        # off the RMSE of a run loading them, with or without --trace
        self._fused = {}
        for mb in self.program.stages:
            if isinstance(mb, MiniBatch) and self._fusable(mb):
                self._fused[id(mb)] = self._fuse(mb)

    def _fusable(self, mb):
        """A mini-batch's clocks need no messages and no Python in between: no
        Apply inside it of a type with mirrors (its rounds would send), no GlobalSync
        (an active predicate is evaluated inside the loop). Then each partition runs its clocks on its own
        (with several workers too: such clocks exchange nothing, so running them
        back to back gives the per-clock result; rounds pending from earlier stages
        complete before the run, as SSP would need them for its last clock)."""
        if not (self.fuse and not jit_disabled() and all(isinstance(s, (Exchange, Apply)) for s in mb.stages)):
            return False
        return not any(self._tracked[t] and self._replicated[t]
                       for s in mb.stages if isinstance(s, Apply) for t in self.program.apply_types(s))

    def _fuse(self, mb):
        steps = []
        for s in mb.stages:
            if isinstance(s, Exchange):
                marks = tuple(t for t in (0, 1) if self._tracked[t] and (s.writes is None or t in self._writes[id(s)]))
                steps.append(("exchange", self._kernels[id(s)], marks, self._reselect.get(id(s))))
            else:
                steps += [("apply", t, self._kernels.get(id(s))) for t in self.program.apply_types(s)
                          if self._tracked[t]]
        order = None if mb.unit == "edge" else self.program.type_index(mb.enumerate)
        select = self._kernels.get(id(mb))          # the active predicate's (vertex mini-batches)
        k = minibatch_kernel(steps, [tl.accum.dtype for tl in self.parts[0].types], select, order or 0)
        for p in self.parts:               # index dtypes may differ between parts
            compile_call(k, self._fused_args(p, mb, order, 0, 0, np.zeros((2, 1), np.int64)), mb, mb.stages[0].udf)
        return k, order

    def _fused_args(self, p, mb, order, c0, c1, pos):
        A, B = p.types
        if id(mb) in self._kernels or self._reselects(mb):   # active predicates: the runs, room for segments
            _, run_start, run_lid, los, his = self._runs(p, order)
            los2, his2 = self._room(p, order)
        else:
            run_start = run_lid = _EMPTY_IDX
            los, his = np.empty(1, np.int64), np.empty(1, np.int64)
            los2 = his2 = _EMPTY_IDX
        return (c0, c1, pos, p.orders[order][0], p.ea, p.eb, A.data, B.data, p.edata, A.accum, B.accum, p.ctx,
                A.stamp, A.touched, A.n_touched, A.epoch, B.stamp, B.touched, B.n_touched, B.epoch,
                run_start, run_lid, los, his, los2, his2)

    def _reselects(self, mb):
        return any(id(s) in self._reselect for s in mb.stages)

    def _room(self, p, order):
        """Segment buffers for the Exchanges with their own predicate (one per run)."""
        key = ("room", p.rank, order)
        if key not in self._run_cache:
            n = len(self._runs(p, order)[0])
            self._run_cache[key] = (np.empty(n, np.int64), np.empty(n, np.int64))
        return self._run_cache[key]

    def _narrowed(self, s, segs, order):
        """The clock's segments ``segs`` (per partition) kept by the Exchange's own
        active predicate, evaluated now."""
        k, out = self._reselect[id(s)], []
        for p in self.parts:
            los, his, n, perm = segs[self._slot[p.rank]]
            _, run_start, run_lid, _, _ = self._runs(p, order)
            los2, his2 = self._room(p, order)
            m = k(los, his, n, run_start, run_lid, view(p.types[order].data), view(p.ctx), los2, his2)
            out.append((los2, his2, m, perm))
        return out

    # ------------------------------------------------------------------ run
    def run(self, iterations=1, callback=None):
        """Run the stage sequence ``iterations`` times (epochs). ``callback(engine)``
        is called after each iteration; returning True stops early."""
        for _ in range(int(iterations)):
            self.iteration += 1
            whole = not any(isinstance(s, MiniBatch) for s in self.program.stages)
            if whole:
                self.clock += 1
            mark = self._trace_start() if whole else None
            for at, s in enumerate(self.program.stages):
                if isinstance(s, MiniBatch):
                    if mark is not None:        # stages before the mini-batches
                        self._trace_end(mark, epoch_stages=True)
                        mark = None
                    self._run_minibatches(s, at)
                else:
                    if mark is None:            # stages outside the mini-batches: a record of their own
                        mark = self._trace_start(gate=False)
                    order = None
                    if isinstance(s, Exchange) and s.enumerate is not None:
                        order = self.program.type_index(s.enumerate)
                    self._run_stage(s, self._segments(order) if isinstance(s, Exchange) else None)
            if mark is not None:
                self._trace_end(mark, epoch_stages=not whole)
            self.flush()
            if self.check_finite:
                self._check_finite()
            if callback is not None and callback(self):
                break
        return self

    def _check_finite(self):
        for c in [self.global_ctx] + [p.ctx for p in self.parts]:
            for f in c.dtype.names:
                v = c[f]
                if v.dtype.kind in "fc" and not np.isfinite(v).all():
                    raise DivergenceError(
                        f"training diverged in iteration {self.iteration} (clock {self.clock}): context field "
                        f"{f!r} of program {self.program.name!r} is {v[0].tolist()}. Likely causes: a step too large "
                        "for the data (lower the learning rate, or use an adaptive or averaged step), or replicas "
                        "whose independent steps were summed (see Apply(overlap=...))")

    def _clock_bounds(self, mb):
        """Where each clock of a mini-batch stage starts in its global order, plus the
        end: ranges of ``mb.size`` (all at once without a size), cut at every stratum
        boundary when the engine has strata (edge mini-batches only)."""
        key = ("bounds", id(mb))
        if key not in self._run_cache:
            total = self.num_edges if mb.unit == "edge" else self.n[self.program.type_index(mb.enumerate)]
            size = mb.size or max(total, 1)
            cuts = self.strata if (self.strata is not None and mb.unit == "edge") else np.array([0, total])
            starts = [np.arange(a, b, size) for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()) if b > a]
            self._run_cache[key] = np.r_[np.concatenate(starts) if starts else [0], total].astype(np.int64)
        return self._run_cache[key]

    def _clock_order(self, mb, at, clocks):
        """The order of a mini-batch stage's clocks this epoch: as they come, or with
        ``shuffle`` a permutation seeded by the engine's seed, the epoch and ``at``
        (the stage's position), so every worker draws the same."""
        if not mb.shuffle:
            return range(clocks)
        return np.random.default_rng((self.seed, self.iteration, at)).permutation(clocks)

    def _run_minibatches(self, mb, at=0):
        order = None if mb.unit == "edge" else self.program.type_index(mb.enumerate)
        bounds = self._clock_bounds(mb)
        cut = max(self._groups) > 1 and mb.unit == "edge" and mb.active is None
        if self.fuse and id(mb) in self._fused and not self.time_parts and not cut:
            return self._run_fused(mb, bounds, self._clock_order(mb, at, len(bounds) - 1))
        # stratified, BSP, one Exchange and its Apply per clock (then GlobalSyncs, which read no
        # vertex): a round may hold back the rows its partition writes again in the next clock
        # (no other replica reads them before)
        kinds = [type(s) for s in mb.stages]
        ahead = (self.slack == 0 and self.strata is not None and mb.unit == "edge" and mb.active is None
                 and not mb.shuffle
                 and getattr(self.assignment, "strategy", "") == "stratified"
                 and kinds[:2] == [Exchange, Apply] and all(k is GlobalSync for k in kinds[2:])
                 and not any(s.over is not None for s in mb.stages[2:]))
        nxt = None
        self._tiled = cut
        try:
            for c in self._clock_order(mb, at, len(bounds) - 1):
                self.clock += 1
                mark = self._trace_start()          # after the SSP gate
                segs = nxt if nxt is not None else self._segments(order, bounds[c], bounds[c + 1], mb)
                nxt = self._segments(order, bounds[c + 1], bounds[c + 2], mb) if ahead and c + 2 < len(bounds) \
                    else None
                self._ahead = (mb.stages[0], nxt) if nxt is not None else None
                for s in mb.stages:
                    self._run_stage(s, self._narrowed(s, segs, order) if id(s) in self._reselect else segs)
                if ahead:
                    self._last_range = {p.rank: (int(x[0][0]), int(x[1][0])) if x[2] == 1 else None
                                        for p, x in zip(self.parts, segs)}
                self._trace_end(mark)
                if self.on_clock is not None:
                    self.on_clock(self)
        finally:
            self._ahead = None
            self._tiled = False
            self._deferred = []

    def _run_fused(self, mb, bounds, clock_order):
        """The mini-batches of one epoch through the fused loop, in runs of clocks
        sized to take ~0.1 s (so progress bars and the trace still move)."""
        k, order = self._fused[id(mb)]
        key = ("pos", id(mb))                 # per partition: where each clock's range starts and ends
        if key not in self._run_cache:        # (with an active predicate: its range of per-vertex runs)
            keys = [self._runs(p, order)[0] if id(mb) in self._kernels else p.orders[order][1] for p in self.parts]
            self._run_cache[key] = [np.stack([q[:-1], q[1:]]) for q in (np.searchsorted(k, bounds) for k in keys)]
        pos = self._run_cache[key]
        if mb.shuffle:
            pos = [np.ascontiguousarray(q[:, clock_order]) for q in pos]
        clocks, c, run = pos[0].shape[1], 0, 1
        while c < clocks:
            n = min(run, clocks - c)
            mark = self._trace_start(upto=self.clock + n - self.slack - 1)
            t0 = time.perf_counter()

            def run(p, c=c, n=n):
                A, B = p.types
                A.n_touched, A.epoch, B.n_touched, B.epoch = k(*self._fused_args(p, mb, order, c, c + n,
                                                                                 pos[self._slot[p.rank]]))
            self._each_part(run, self.parts)
            dt = time.perf_counter() - t0
            self.timers["minibatch"] = self.timers.get("minibatch", 0.0) + dt
            c += n
            self.clock += n
            self._trace_end(mark, clocks=n)
            if self.on_clock is not None:
                self.on_clock(self)
            run = max(1, min(4 * n, int(n * 0.1 / max(dt, 1e-6))))

    def _segments(self, order, lo=None, hi=None, mb=None):
        """Per partition: (los, his, n, perm), the position segments of ``order``
        an Exchange visits this clock: the range's edges [lo, hi) (all without a
        range), or, with an active predicate, only those of its active vertices."""
        out = []
        select = self._kernels.get(id(mb)) if mb is not None else None
        for p in self.parts:
            a, b, perm = p.edge_range(order, lo, hi)
            if select is None:
                out.append((np.array([a], np.int64), np.array([b], np.int64), int(b > a), perm))
                continue
            run_key, run_start, run_lid, los, his = self._runs(p, order)
            k_lo, k_hi = np.searchsorted(run_key, lo), np.searchsorted(run_key, hi)
            n = select(k_lo, k_hi, run_start, run_lid, view(p.types[order].data), view(p.ctx), los, his)
            out.append((los, his, n, perm))
        return out

    def _runs(self, p, order):
        """A vertex order's runs (one per local vertex with edges here): global id,
        first position (+ end), local index; plus segment buffers. Built once."""
        cache = self._run_cache
        key = (p.rank, order)
        if key not in cache:
            perm, keys = p.orders[order]
            run_key, run_start, run_lid = vertex_runs(keys, perm, (p.ea, p.eb)[order])
            cache[key] = (run_key, run_start, run_lid, np.empty(len(run_key), np.int64),
                          np.empty(len(run_key), np.int64))
        return cache[key]
    # ------------------------------------------------------------------ per-clock trace
    def _comm(self, fn, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self._sync_s += time.perf_counter() - t0

    def _trace_start(self, gate=True, upto=None):
        """Start of a clock: the SSP gate (every round of clocks <= c - s - 1 complete,
        or <= ``upto``), then marks."""
        g0 = time.perf_counter()
        self._staleness, self._injected = None, 0.0
        if gate:
            upto = self.clock - self.slack - 1 if upto is None else upto
            self._progress(upto)
            # this clock (the last of a fused run) minus the oldest clock whose round is still out
            self._staleness = max(0, upto + self.slack + 1 - self._rounds[0]["clock"]) if self._rounds else 0
        self._gate_s = time.perf_counter() - g0
        self._done_ts = None
        self._part_s = {p.rank: 0.0 for p in self.parts} if self.time_parts else None
        mark = (time.perf_counter(), self._sync_s, getattr(self.transport, "wait_seconds", 0.0),
                self.transport.bytes_sent, time.time(), self.min_bytes)
        if gate and self._slow is not None:     # --straggler: this clock's compute, slowed (counted as compute)
            self._injected = max(0.0, next(self._slow) - 1.0) * self._last_compute
            time.sleep(self._injected)
        return mark

    def _trace_end(self, mark, epoch_stages=False, clocks=None):
        """A clock's record; ``epoch_stages``: the stages outside the mini-batches, which
        run after (or before) them in the iteration and get a record of their own: no
        clock (they run in none: the engine's counter still holds the last mini-batch's,
        or the last iteration's), the iteration saying which one they belong to."""
        t0, s0, w0, b0, start_ts, m0 = mark
        wall = time.perf_counter() - t0
        sync = self._sync_s - s0
        wait = getattr(self.transport, "wait_seconds", 0.0) - w0
        if self._staleness is not None:         # a straggler's delay: from this process's second clock on
            self._last_compute = wall - sync - self._injected if self._gated_clocks else 0.0
            self._gated_clocks += 1
        self.trace.append({**({} if epoch_stages else {"clock": self.clock}), "iteration": self.iteration,
                           "rank": getattr(self.transport, "rank", 0), "compute_s": wall - sync,
                           "sync_s": sync - wait, "wait_s": wait + self._gate_s,
                           "bytes_sent": self.transport.bytes_sent - b0, "min_bytes": self.min_bytes - m0,
                           "dropped_frames": self.transport.dropped,
                           "start_ts": start_ts,
                           "done_ts": self._done_ts if self._done_ts is not None else time.time(),
                           **({"epoch_stages": True} if epoch_stages else {}),
                           **({"clocks": clocks} if clocks is not None else {}),
                           **({"staleness": self._staleness} if self._staleness is not None else {}),
                           **({"injected_s": self._injected} if self._slow is not None else {}),
                           **({"part_exchange_s": self._part_s} if self._part_s is not None else {})})

    def _deltas_per_apply(self, p0):
        """{(id(Apply), t): whether an Exchange of the Apply's own MiniBatch may change the
        type's replica values}, when every MiniBatch whose Exchanges may change them has an
        Apply of the type (so at slack 0 its own rounds sync them before the next
        MiniBatch): an Apply whose MiniBatch only accumulates into the type (BlockPG's
        sweeps) sends no values up. A type without them: its rounds take ``_deltas``."""
        groups = {}                     # MiniBatch (or a stage outside one) → its stages
        for s, mb in self.program.walk():
            groups.setdefault(id(mb if mb is not None else s), []).append(s)
        out = {}
        for t in (0, 1):
            dtype, own = p0.types[t].data.dtype, {}
            for stages in groups.values():
                writes = any(isinstance(x, Exchange) and writes_records(x.udf, t, dtype) for x in stages)
                applies = [x for x in stages if isinstance(x, Apply) and t in self.program.apply_types(x)]
                if writes and not applies:
                    break
                own.update(((id(x), t), writes) for x in applies)
            else:
                out.update(own)
        return out

    def _run_stage(self, s, segs):
        t0 = time.perf_counter()
        if isinstance(s, Exchange):
            self._exchange(s, segs)
        elif isinstance(s, Apply):
            for t in self.program.apply_types(s):
                self._apply(s, t)
        elif isinstance(s, GlobalSync):
            self._global_sync(s)
        self.timers[s.kind] += time.perf_counter() - t0

    # ------------------------------------------------------------------ Exchange
    def _exchange(self, s, segs):
        k = self._kernels[id(s)]

        def kernel(p, los, his, n, perm, ctx):
            t0 = time.perf_counter()
            A, B = p.types
            k(los, his, n, perm, p.ea, p.eb, view(A.data), view(B.data), view(p.edata),
              view(A.accum), view(B.accum), view(ctx))
            return p.rank, time.perf_counter() - t0

        def mark(p):
            los, his, n, perm = segs[self._slot[p.rank]]
            for t, ends in ((0, p.ea), (1, p.eb)):
                if self._tracked[t] and (s.writes is None or t in self._writes[id(s)]):
                    self._mark(p, t, self._mark_key(s, t, los, his, n, perm), los, his, n, perm, ends)

        if self._deferred:
            return self._exchange_around(s, kernel, mark, segs)
        if not self._tiled:
            def run(p):
                los, his, n, perm = segs[self._slot[p.rank]]
                if n:
                    out = kernel(p, los, his, n, perm, p.ctx)
                    mark(p)
                    return out
            # the size decides between threads and this one: without a choice, not worth its numpy calls
            work = None if self._pool is None or len(self.parts) < 2 else sum(
                int((his[:n] - los[:n]).sum()) for los, his, n, _ in segs)
            return self._part_times([x for x in self._each_part(run, self.parts, work) if x is not None])
        self._run_tiled(s, kernel, segs, {p.rank: self._tile_groups(p, *segs[self._slot[p.rank]][:3])
                                          for p in self.parts})
        self._each_part(mark, [p for p in self.parts if segs[self._slot[p.rank]][2]])

    def _run_tiled(self, s, kernel, segs, groups):
        """Each partition's ``groups`` ((los, his, n) each, sharing no vertex) in the
        engine's threads: the first on the partition's context, the others on scratch
        copies whose sums and deltas are added to it after."""
        jobs, scratch = [], []
        for p in self.parts:
            for i, (lo, hi, n) in enumerate(groups[p.rank]):
                ctx = p.ctx if i == 0 else self._scratch_ctx(p, i)
                if i:
                    scratch.append((p, ctx, ctx.copy()))
                jobs.append((p, lo, hi, n, segs[self._slot[p.rank]][3], ctx))
        self._part_times(self._each_part(lambda j: kernel(*j), jobs))
        for p, ctx, start in scratch:
            self._fold_ctx(p, ctx, start, s)

    def _exchange_around(self, s, kernel, mark, segs):
        """An Exchange while the last clock's one-phase rounds are still out: each
        partition first runs the tiles of its range that no value on its way can reach
        (every replicated vertex they touch was written here in the last clock, so in a
        stratified run no other replica wrote it), then takes the rounds' values, then
        runs its other tiles (with threads: each part cut into a range per thread). The
        tiles of a stratum share no vertex, so their order changes no value: the worker
        computes while the other's values travel."""
        plans = {p.rank: self._tiles_waiting(p, *segs[self._slot[p.rank]]) for p in self.parts}
        for i in (0, 1):
            if i:
                self._finish_deferred()
            if self._tiled:
                self._run_tiled(s, kernel, segs, {p.rank: self._spread(p, *plans[p.rank][i]) for p in self.parts})
                continue
            times = self._each_part(lambda p: kernel(p, *plans[p.rank][i], segs[self._slot[p.rank]][3], p.ctx)
                                    if plans[p.rank][i][2] else None, self.parts)
            self._part_times([x for x in times if x is not None])
        self._each_part(mark, [p for p in self.parts if segs[self._slot[p.rank]][2]])

    def _spread(self, p, los, his, n):
        """Segments (whole tiles) cut into runs of consecutive segments of about equal
        edges, one per thread of p's (or fewer): [(los, his, n)]."""
        if n == 0:
            return []
        ends = np.cumsum(his[:n] - los[:n])
        groups = max(self._groups[self._slot[p.rank]], 1)
        share = int(ends[-1]) * np.arange(1, groups) // groups          # the segment end nearest each equal share
        cut = np.abs(ends[:-1, None] - share).argmin(axis=0) + 1 if n > 1 else np.zeros(0, np.int64)
        cuts = np.unique(np.r_[0, cut, n])
        return [(los[a:b], his[a:b], int(b - a)) for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist())]

    def _tiles_waiting(self, p, los, his, n, perm):
        """p's clock range as ((los, his, n) of its tiles that need no value of the
        deferred rounds, (los, his, n) of the others). A range's split depends on the
        last clock's touched lists, the same every epoch: kept per (last range, range)."""
        if n != 1 or self.tiles is None:
            return (los, his, 0), (los, his, n)
        a, b = int(los[0]), int(his[0])
        key = ("waiting", p.rank, self._last_range.get(p.rank), a, b)
        got = self._run_cache.get(key)
        if got is None:
            cuts = self._tile_cuts(p, a, b)
            wait = np.zeros(len(cuts) - 1, np.uint8)
            for _, t, _, _, _ in self._deferred:
                tl = p.types[t]
                ranges_waiting(cuts, perm, (p.ea, p.eb)[t], tl.stamp, tl.epoch, self._alone(p, t), wait)
            got = tuple((np.ascontiguousarray(cuts[:-1][sel]), np.ascontiguousarray(cuts[1:][sel]), int(sel.sum()))
                        for sel in (wait == 0, wait == 1))
            self._run_cache[key] = got
        return got

    def _alone(self, p, t):
        """Per local vertex of type t in p: True for a master without mirrors."""
        key = ("alone", p.rank, t)
        got = self._run_cache.get(key)
        if got is None:
            tl = p.types[t]
            got = self._run_cache[key] = np.zeros(tl.n_local, np.bool_)
            got[:tl.n_master] = tl.mm_ptr[1:] == tl.mm_ptr[:-1]
        return got

    def _check_tiles(self):
        """Threads may share a partition only if, within each stratum, every vertex's
        edges lie in one tile (else they would race on it): one pass per partition."""
        for p in self.parts:
            perm, keys = p.orders[None]
            tile = np.searchsorted(self.tiles, keys, side="right") - 1
            stratum = np.searchsorted(self.strata, keys, side="right") - 1
            ea, eb = (p.ea, p.eb) if len(perm) == 0 else (p.ea[perm], p.eb[perm])
            for t, ends in ((0, ea), (1, eb)):
                bad = tiles_conflict(ends, stratum, tile, p.types[t].n_local)
                if bad >= 0:
                    raise SchemaError(
                        f"tiles do not separate the strata's vertices: {self.program.types[t].name} vertex "
                        f"{int(p.types[t].gid[ends[bad]])} has edges in two tiles of stratum {int(stratum[bad])}; "
                        "pass the graph in the order stratified_order gives (graph.permuted(order)) with its "
                        "strata and tiles")

    def _tile_groups(self, p, los, his, n):
        """p's clock range as up to ``_groups`` ranges (los, his, 1) of about equal edges,
        cut at tile starts (the ranges share no vertex and run in parallel threads)."""
        if n != 1:
            return [(los, his, n)] if n else []
        a, b = int(los[0]), int(his[0])
        key = ("groups", p.rank, a, b)
        got = self._run_cache.get(key)
        if got is None:
            cuts = self._tile_cuts(p, a, b)
            got = self._run_cache[key] = [(lo[:1], hi[-1:], 1)      # consecutive tiles: one range
                                          for lo, hi, _ in self._spread(p, cuts[:-1], cuts[1:], len(cuts) - 1)]
        return got

    def _tile_cuts(self, p, a, b):
        """[a, the tile starts inside (a, b), b]: p's positions [a, b) cut into its tiles."""
        starts = self._run_cache.get(("tiles", p.rank))
        if starts is None:
            starts = self._run_cache[("tiles", p.rank)] = np.searchsorted(p.orders[None][1], self.tiles)
        return np.r_[a, np.unique(starts[(starts > a) & (starts < b)]), b].astype(np.int64)

    def _part_times(self, times):
        if self._part_s is not None:            # --trace: each partition's Exchange seconds (summed over ranges)
            for rank, dt in times:
                self._part_s[rank] += dt

    def _scratch_ctx(self, p, i):
        """A context record for p's i-th tile group: p's, with the sum fields at 0."""
        key = ("ctx", p.rank, i)
        c = self._run_cache.get(key)
        if c is None:
            c = self._run_cache[key] = p.ctx.copy()
        c[:] = p.ctx
        for f in self.program.context.sum:
            c[f] = 0
        return c

    def _fold_ctx(self, p, ctx, start, s):
        """Add a tile group's context record into p's: its sums, and its changes to
        delta fields; any other field it changed, unless private to it, could not be shared by threads."""
        spec = self.program.context
        for f in spec.sum:
            p.ctx[f] += ctx[f]
        for f in spec.delta:
            p.ctx[f] += ctx[f] - start[f]
        for f in ctx.dtype.names:
            if f not in spec.sum + spec.delta + spec.private and ctx[f].tobytes() != start[f].tobytes():
                raise SchemaError(
                    f"Exchange {s.name!r} writes context field {f!r}, which the threads of one partition "
                    "cannot share: declare it in ContextSpec(sum=...), (delta=...) or (private=...), or run with threads=1")

    def _mark(self, p, t, key, los, his, n, perm, ends):
        """Append the vertices of type t that the segments' edges touch to the touched
        list. A range's list depends on the range only, so from an empty list it is
        kept (within a budget) and set again the next time (each epoch's strata)."""
        tl = p.types[t]
        marks, room = self._marks[p.rank]
        got = marks.get(key) if key is not None else None
        if got is not None and tl.n_touched == 0:
            tl.touched[:len(got)] = got
            tl.stamp[got] = tl.epoch
            tl.n_touched = len(got)
        elif got is not None:                 # rows held back from the last round are on the list
            tl.n_touched = append_unstamped(got, tl.stamp, tl.epoch, tl.touched, tl.n_touched)
        else:
            fresh = tl.n_touched == 0
            tl.n_touched = mark_touched(los, his, n, perm, ends, tl.stamp, tl.epoch, tl.touched, tl.n_touched)
            if key is not None and fresh and tl.n_touched <= room[0]:
                marks[key] = tl.touched_indices().copy()
                room[0] -= tl.n_touched

    @staticmethod
    def _mark_key(s, t, los, his, n, perm):
        return (id(s), t, id(perm), int(los[0]), int(his[0])) if n == 1 else None

    def _touches_next(self, p, t):
        """Per row of p's touched list of type t: whether p touches it again in the next
        clock (then the other replica cannot, in a stratified run, and the row may wait);
        None when that is not known (no next clock, or its list not seen yet)."""
        if self._ahead is None:
            return None
        s, segs = self._ahead
        los, his, n, perm = segs[self._slot[p.rank]]
        key = self._mark_key(s, t, los, his, n, perm)
        got = self._marks[p.rank][0].get(key) if key is not None else None
        if got is None:
            return None
        tl = p.types[t]
        flag = self._flags.get((p.rank, t))
        if flag is None:
            flag = self._flags[(p.rank, t)] = np.zeros(tl.n_local, np.bool_)
        flag[got] = True
        out = flag[tl.touched_indices()]
        flag[got] = False
        return out

    # ------------------------------------------------------------------ GlobalSync
    def _global_sync(self, s):
        ks = self._kernels[id(s)]
        spec = self.program.context
        if "aggregate" in ks:
            t = self.program.type_index(s.over)
            for p in self.parts:
                tl = p.types[t]
                ks["aggregate"](tl.n_master, view(tl.data), view(p.ctx))
        old = self.global_ctx
        locals_ = [p.ctx for p in self.parts]
        for c in locals_:
            for f in spec.delta:
                c[f] -= old[f]
        def fold(acc, other):
            # sum/delta fields are the engine's; a user combine handles the rest
            for f in spec.sum + spec.delta:
                acc[f] += other[f]
            if "combine" in ks:
                ks["combine"](view(acc), view(other))
        # several GlobalSyncs per clock are told apart by their position in the program
        g = self._comm(self.transport.allreduce_context, self.clock, locals_, fold, tag=f"ctx{ks['index']}")
        for f in spec.delta:
            g[f] += old[f]
        if "finalize" in ks:
            ks["finalize"](view(g))
        self.global_ctx = g
        if s.record:
            self._record(g)
        for c in locals_:
            c[:] = g
            for f in spec.sum:
                c[f] = 0

    def _record(self, g):
        """A history record of the combined context; a setting as it was at the start (LDA's
        lgamma tables) and scratch fields are left out, as they would be copied every clock."""
        rec = {"clock": self.clock, "iteration": self.iteration}
        same = {f for f, b in self._settings if g[f].tobytes() == b}
        for f in g.dtype.names:
            if f not in self.program.context.scratch and f not in same:
                v = g[f][0]
                rec[f] = v.tolist() if isinstance(v, np.ndarray) else v.item()
        self.history.append(rec)

    # ------------------------------------------------------------------ results
    def vertex_data(self, type_name):
        """Master data of every vertex of a type, indexed by global id. With
        several workers it is gathered on rank 0; the others get None."""
        t = self.program.type_index(type_name) if isinstance(type_name, str) else int(type_name)
        dtype = self.program.types[t].dtype
        pieces = [(p.rank, p.types[t].gid[: p.types[t].n_master], p.types[t].data[: p.types[t].n_master])
                  for p in self.parts]
        return self._gather(f"vertex-{t}", pieces, self.n[t], dtype)

    def edge_data(self):
        """Edge records in global edge order (gathered on rank 0 with several workers)."""
        pieces = [(p.rank, p.eid, p.edata) for p in self.parts]
        return self._gather("edges", pieces, self.num_edges, self.program.edge_dtype)

    def _gather(self, what, pieces, n, dtype):
        out = np.zeros(n, dtype)
        if len(self.parts) == self.P:
            for _, ids, rec in pieces:
                out[ids] = rec
            return out
        self._gathers = getattr(self, "_gathers", 0) + 1
        root = 0          # partition 0 lives on rank 0
        # a piece for another worker is a copy: the transport may still be reading what it is
        # given when this worker goes on (ZeroMQ sends large buffers from its I/O thread), and
        # the live records would by then hold the next iteration's updates
        msgs = {(part, root): [ids, (rec.copy() if self._remote(part, root) else np.ascontiguousarray(rec))
                               .view(np.uint8)] for part, ids, rec in pieces}
        inbox = self.transport.alltoall(self.clock, f"gather-{what}-{self._gathers}", msgs)
        if self.transport.rank != 0:
            return None
        for (src, _), (ids, raw) in inbox.items():
            if raw.nbytes != len(ids) * dtype.itemsize or (len(ids) and (ids.min() < 0 or ids.max() >= n)):
                raise SchemaError(f"gathered {what} from partition {src} does not fit: {len(ids)} ids, "
                                  f"{raw.nbytes} bytes")
            out[ids] = raw.view(dtype)
        return out

    # ------------------------------------------------------------------ checkpoints
    def state(self):
        """This process's engine state between iterations, as named arrays (no Python
        objects): per local partition and vertex type the replicas' data, accumulators,
        sync snapshot and touched list, the edge records and the context; plus the
        clocks, the combined context and the GlobalSync history (``meta``)."""
        import zlib
        self.flush()
        arrays = {}
        for p in self.parts:
            for t, tl in enumerate(p.types):
                pre = f"p{p.rank}.t{t}."
                arrays[pre + "data"] = tl.data
                arrays[pre + "accum"] = tl.accum
                if tl.snapshot is not None:
                    arrays[pre + "snapshot"] = tl.snapshot
                arrays[pre + "touched"] = tl.touched_indices().copy()
                arrays[pre + "gid_crc"] = np.array([zlib.crc32(tl.gid.tobytes()), len(tl.gid)], np.int64)
            arrays[f"p{p.rank}.edata"] = p.edata
            arrays[f"p{p.rank}.eid_crc"] = np.array([zlib.crc32(p.eid.tobytes()), len(p.eid)], np.int64)
            arrays[f"p{p.rank}.ctx"] = p.ctx
        for p in self.parts:        # what a resume on another layout needs: where each row and edge belongs
            for t, tl in enumerate(p.types):
                arrays[f"p{p.rank}.t{t}.gid"] = tl.gid.astype(_id_dtype(self.n[t]))
                arrays[f"p{p.rank}.t{t}.n_master"] = np.array([tl.n_master], np.int64)
            arrays[f"p{p.rank}.eid"] = p.eid.astype(_id_dtype(self.num_edges))
        arrays["global_ctx"] = self.global_ctx
        arrays["input_crc"] = self._input_crc()
        arrays["input_sum"] = self._input_sum()
        arrays["init_crc"] = np.array([self._init_crc], np.int64)
        arrays["vinit_crc"] = np.array([self._vinit_crc], np.int64)
        meta = {"clock": self.clock, "iteration": self.iteration, "min_bytes": self.min_bytes,
                "history": self.history, "partitions": self.P, "program": self.program.name,
                "local_parts": [p.rank for p in self.parts], "relayout": 1,
                "sharded": not isinstance(self.graph, BipartiteGraph)}
        return arrays, meta

    def _input_sum(self):
        """A layout-free checksum of this process's input edges: the sum (mod 2**64) of a
        64-bit mix of each edge's global id, endpoints and value bits, and their count;
        the sums of the workers' shards add up to the whole input's."""
        g = self.graph
        n = len(g.src)
        eid = g.eid if not isinstance(g, BipartiteGraph) else None
        total = np.uint64(0)
        step = 1 << 20
        with np.errstate(over="ignore"):
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                e = (np.arange(lo, hi, dtype=np.uint64) if eid is None
                     else np.asarray(eid[lo:hi]).astype(np.uint64))
                h = _mix64(e ^ np.uint64(0x9E3779B97F4A7C15))
                h = _mix64(h ^ np.asarray(g.src[lo:hi]).astype(np.uint64))
                h = _mix64(h ^ (np.asarray(g.dst[lo:hi]).astype(np.uint64) + np.uint64(0x632BE59BD9B4E019)))
                if g.values is not None:
                    h = _mix64(h ^ np.asarray(g.values[lo:hi]).astype(np.float64).view(np.uint64))
                total = total + h.sum(dtype=np.uint64)
        return np.array([total, n], np.uint64)

    def _global_input_sum(self):
        """(sum, edges) of the whole input: the workers' shards added up (a collective with
        several workers and a sharded input; each process's own otherwise)."""
        mine = self._input_sum()
        world = getattr(self.transport, "world", 1)
        if world > 1 and not isinstance(self.graph, BipartiteGraph):
            got = self.transport.allgather("relayout-input-sum", [mine])
            with np.errstate(over="ignore"):
                mine = np.sum(np.stack([np.asarray(a[0], np.uint64) for a in got]), axis=0, dtype=np.uint64)
        return int(mine[0]), int(mine[1])

    def _input_crc(self):
        """CRC-32 of this process's input edges: endpoints, values, count."""
        import zlib
        g = self.graph
        values = g.values if g.values is not None else np.zeros(0)
        return np.array([zlib.crc32(np.ascontiguousarray(g.src).tobytes()),
                         zlib.crc32(np.ascontiguousarray(g.dst).tobytes()),
                         zlib.crc32(np.ascontiguousarray(values).tobytes()), len(g.src)], np.int64)

    def _expected_state(self):
        """{name: (dtype, shape)} of every array ``state()`` writes for this engine."""
        want = {}
        for p in self.parts:
            for t, tl in enumerate(p.types):
                pre = f"p{p.rank}.t{t}."
                want[pre + "data"] = (tl.data.dtype, tl.data.shape)
                want[pre + "accum"] = (tl.accum.dtype, tl.accum.shape)
                if tl.snapshot is not None:
                    want[pre + "snapshot"] = (tl.snapshot.dtype, tl.snapshot.shape)
            want[f"p{p.rank}.edata"] = (p.edata.dtype, p.edata.shape)
            want[f"p{p.rank}.ctx"] = (p.ctx.dtype, p.ctx.shape)
        want["global_ctx"] = (self.global_ctx.dtype, self.global_ctx.shape)
        return want

    def _check_context(self, key, a):
        """A checkpoint's context record: the program's settings (context fields with an
        initial value that no UDF changes: k, K, V, lr, …) as this run has them, the
        declared bounds kept (counts ≥ 0, …). A SchemaError names the first difference."""
        spec = self.program.context
        fresh = self.global_ctx                  # not restored yet: the values this run starts with
        for f in spec.settings:
            then, now = a[f], fresh[f]
            same = np.array_equal(then, now, equal_nan=then.dtype.kind in "fc")
            if not same:
                show = lambda x: x[0].tolist() if x[0].size == 1 else f"{x[0].size} values"  # noqa: E731
                t, n = show(then), show(now)
                if t == n:
                    t, n = "other values", "these"
                raise ContextStateError(f"checkpoint context field {f!r} ({key}) is {t} there, {n} in this run")
        for f, (lo, hi) in spec.bounds.items():
            col = a[f]
            if col.dtype.kind == "f" and not np.all(np.isfinite(col)):
                raise ContextStateError(f"checkpoint's {key}.{f} holds NaN or infinite values")
            if col.size and (col.min() < lo or col.max() > hi):
                raise ContextStateError(f"checkpoint's {key}.{f} holds values outside {lo} … {hi}")

    def restore(self, arrays, meta, _relaid=False):
        """Load what ``state()`` returned, into an engine built from the same program,
        input, partitioning and seed; anything else is a SchemaError, caught before any
        array is overwritten: other input edges (ids or values), arrays of another
        dtype or shape, touched lists out of range, non-finite floats. (A checkpoint of
        another layout: ``restore_relayout``.)"""
        import zlib
        if not isinstance(meta, dict) or not {"partitions", "program", "clock", "iteration", "min_bytes",
                                              "history"} <= set(meta):
            raise SchemaError("checkpoint state lacks the engine's clocks or program")
        if meta["partitions"] != self.P or meta["program"] != self.program.name:
            raise SchemaError(f"checkpoint of program {meta['program']!r} on {meta['partitions']} partitions; "
                              f"this run is {self.program.name!r} on {self.P}")
        if not _relaid:
            self._check_same_layout(arrays)
        self._restore_checked(arrays, meta)

    def _check_same_layout(self, arrays):
        """A checkpoint of this very layout: its partitions hold these vertices and edges,
        of this input (CRCs)."""
        import zlib
        for p in self.parts:
            checks = [(f"p{p.rank}.eid_crc", p.eid, "edges")]
            checks += [(f"p{p.rank}.t{t}.gid_crc", tl.gid, f"{tl.vtype.name} vertices") for t, tl in enumerate(p.types)]
            for key, ids, what in checks:
                if key not in arrays:
                    raise SchemaError(f"checkpoint has no partition {p.rank} (written by another worker layout)")
                if arrays[key].tolist() != [zlib.crc32(ids.tobytes()), len(ids)]:
                    raise SchemaError(f"checkpoint's partition {p.rank} holds other {what} than this run's: "
                                      "resume with the same input, partitioner, partitions and seed")
        saved_crc = arrays.get("input_crc")
        if saved_crc is None:
            raise SchemaError("checkpoint has no checksum of its input edges (written by an older tux2)")
        now = self._input_crc()
        saved_crc = np.asarray(saved_crc).ravel().tolist()
        if len(saved_crc) != 4:
            raise SchemaError("checkpoint's input checksum is malformed")
        if saved_crc[3] != now[3]:
            raise SchemaError(f"the input has {int(now[3])} edges here, the checkpoint's run had "
                              f"{int(saved_crc[3])}: resume with the input of the interrupted run")
        what = [w for w, a, b in zip(("source ids", "destination ids", "edge values"), saved_crc, now.tolist())
                if a != b]
        if what:
            raise SchemaError(f"the input's {' and '.join(what)} differ from those the checkpoint was trained "
                              "on: resume with the input of the interrupted run")
        saved_init = arrays.get("init_crc")             # (none in a checkpoint of an older tux2)
        if saved_init is not None and np.asarray(saved_init).ravel().tolist() != [self._init_crc]:
            raise RecordsError("the input's values or labels differ from those the checkpoint was trained on "
                              "(as the program holds them in its edge and vertex records): resume with the input "
                              "of the interrupted run")

    def _restore_checked(self, arrays, meta):
        for key, (dtype, shape) in self._expected_state().items():
            a = arrays.get(key)
            if a is None:
                raise SchemaError(f"checkpoint has no {key} (written by another worker layout or program)")
            if a.dtype != dtype or a.shape != shape:
                raise SchemaError(f"checkpoint's {key} is {a.dtype} {a.shape}; this run needs {dtype} {shape}")
            if key.endswith("ctx"):
                self._check_context(key, a)       # NaN may be there by design (no test set yet, …)
                continue
            for f in a.dtype.names or ():
                col = a[f]
                if col.dtype.kind == "f" and not np.all(np.isfinite(col)):
                    raise SchemaError(f"checkpoint's {key}.{f} holds NaN or infinite values")
                lo, hi = self.program.bounds.get(f, (None, None))
                if lo is not None and col.size and (col.min() < lo or col.max() > hi):
                    raise SchemaError(f"checkpoint's {key}.{f} holds values outside {lo} … {hi}")
        for p in self.parts:
            for t, tl in enumerate(p.types):
                idx = arrays.get(f"p{p.rank}.t{t}.touched")
                if idx is None or idx.ndim != 1 or idx.dtype.kind not in "iu" or len(idx) > len(tl.data) or \
                        (len(idx) and (idx.min() < 0 or idx.max() >= len(tl.data))):
                    raise SchemaError(f"checkpoint's p{p.rank}.t{t}.touched is missing or out of range")
        for p in self.parts:
            for t, tl in enumerate(p.types):
                pre = f"p{p.rank}.t{t}."
                tl.data[...] = arrays[pre + "data"]
                tl.accum[...] = arrays[pre + "accum"]
                if tl.snapshot is not None:
                    tl.snapshot[...] = arrays[pre + "snapshot"]
                tl.reset_touched()
                idx = arrays[pre + "touched"]
                tl.touched[: len(idx)] = idx
                tl.stamp[idx] = tl.epoch
                tl.n_touched = len(idx)
            p.edata[...] = arrays[f"p{p.rank}.edata"]
            p.ctx[...] = arrays[f"p{p.rank}.ctx"]
        self.global_ctx[...] = arrays["global_ctx"]
        self.clock, self.iteration = int(meta["clock"]), int(meta["iteration"])
        self.min_bytes = meta["min_bytes"]
        self.history = list(meta["history"])

    def restore_relayout(self, files, meta):
        """Load a checkpoint written on another layout (other workers, partitions or
        partitioner): ``files`` hold the arrays of every part file of it (dicts of
        arrays, or ``checkpoint.PartFile``s whose arrays are read piece by piece by
        slicing), ``meta`` its state. The model is layout-free at a quiescent point (no
        pending accumulators or touched rows, replicas equal to their masters, nothing
        in the contexts that cannot be re-divided): each vertex's master row and each
        edge's record are taken by global id and placed in this engine's partitions,
        the sum (and delta) context fields whole in partition 0. A worker reads the
        files in pieces of ``RELAYOUT_BYTES`` and keeps only the rows and edges of
        its own partitions, checking those (every vertex and edge is some worker's).
        Anything else is a SchemaError saying why, before any array is overwritten, the
        same on every worker. Collective with several workers."""
        if not isinstance(meta, dict) or meta.get("program") != self.program.name:
            raise SchemaError(f"checkpoint of program {meta.get('program')!r}; this run is {self.program.name!r}")
        P0 = meta.get("partitions")
        if not meta.get("relayout") or not isinstance(P0, int) or P0 < 1:
            raise SchemaError("checkpoint written by an earlier tux2, without the ids a resume on another layout "
                              "needs: resume it on the layout that wrote it")
        where = {}                          # old partition -> its part file's arrays
        for arrays in files:
            for key in arrays:
                if key.endswith(".eid") and key.startswith("p") and key[1:-4].isdigit():
                    where[int(key[1:-4])] = arrays
        if sorted(where) != list(range(P0)):
            raise SchemaError(f"checkpoint of {P0} partitions has the arrays of partitions {sorted(where)}")

        def get(r, name):
            a = where[r].get(f"p{r}.{name}")
            if a is None:
                raise SchemaError(f"checkpoint has no p{r}.{name}")
            return a

        sums = [np.asarray(_whole(a.get("input_sum", np.zeros(0))), np.uint64).ravel() for a in files]
        if any(len(x) != 2 for x in sums):
            raise SchemaError("checkpoint's input checksum is missing or malformed")
        with np.errstate(over="ignore"):
            saved = np.sum(np.stack(sums), axis=0, dtype=np.uint64) if meta.get("sharded") else sums[0]
        total, edges = self._global_input_sum()
        if int(saved[1]) != edges:
            raise SchemaError(f"the input has {edges} edges here, the checkpoint's run had {int(saved[1])}: "
                              "resume with the input of the interrupted run")
        if int(saved[0]) != total:
            raise SchemaError("the input's edges (ids or values) differ from those the checkpoint was trained on: "
                              "resume with the input of the interrupted run")
        whole = not meta.get("sharded") and isinstance(self.graph, BipartiteGraph)
        key, mine = ("init_crc", self._init_crc) if whole else ("vinit_crc", self._vinit_crc)
        if any(np.asarray(_whole(a.get(key, np.array([-1])))).ravel().tolist() != [mine] for a in files):
            raise RecordsError("the input's values or labels differ from those the checkpoint was trained on "
                              "(as the program holds them in its edge and vertex records): resume with the input "
                              "of the interrupted run")
        try:                # the same error on every worker: each checks the rows and edges it takes
            arrays = self._relaid_arrays(get, where, files, P0)
            failed = None
        except SchemaError as e:
            arrays, failed = None, e
        world = getattr(self.transport, "world", 1)
        if world > 1:
            said = self.transport.allgather("relayout-checked", [np.frombuffer(
                (("" if failed is None else ("c" if isinstance(failed, ContextStateError) else "s") + str(failed))
                 .encode("utf-8", "surrogateescape")), np.uint8)])             # (a path in it: its bytes)
            first = next((bytes(a[0]).decode("utf-8", "surrogateescape") for a in said if len(a[0])), None)
            if first is not None:
                raise (ContextStateError if first[0] == "c" else SchemaError)(first[1:])
        elif failed is not None:
            raise failed
        self.restore(arrays, {**meta, "partitions": self.P}, _relaid=True)

    def _relaid_arrays(self, get, where, files, P0):
        """``restore_relayout``'s arrays of this worker's partitions, in ``state()``'s
        names, from the old partitions' files (``get(r, name)``), checked."""

        def busy(why):
            return ContextStateError(f"checkpoint is not at a point another layout can resume ({why}; e.g. --slack > 0 "
                               "leaves updates in flight): resume it on the layout that wrote it")

        spec = self.program.context
        glob = [_whole(a.get("global_ctx")) if a.get("global_ctx") is not None else None for a in files]
        g = glob[0]
        if g is None or g.dtype != self.global_ctx.dtype or g.shape != self.global_ctx.shape or \
                any(x is None or x.dtype != g.dtype or not _same_records(x, g) for x in glob):
            raise SchemaError("checkpoint's global_ctx is missing, of another dtype, or differs between its files")
        ctxs = [_whole(get(r, "ctx")).copy() for r in range(P0)]
        for r, c in enumerate(ctxs):
            if c.dtype != g.dtype or c.shape != g.shape:
                raise SchemaError(f"checkpoint's p{r}.ctx is {c.dtype} {c.shape}; this run needs {g.dtype} {g.shape}")
        g = g.copy()
        for f in spec.settings:         # no UDF changes them; their values may follow the layout (lr's local_scale)
            g[f] = self.global_ctx[f]
            for c in ctxs:
                c[f] = self.global_ctx[f]
        for f in g.dtype.names:
            if f in spec.sum or f in spec.delta:
                continue
            if any(c[f].tobytes() != ctxs[0][f].tobytes() for c in ctxs):
                raise busy(f"the partitions' context field {f!r} differs")
        sum_f = {f: sum((c[f] for c in ctxs[1:]), ctxs[0][f].copy()) for f in spec.sum}
        delta_f = {f: sum((c[f] - g[f] for c in ctxs[1:]), ctxs[0][f] - g[f]) for f in spec.delta}

        def pieces(n, lo=0, a=None):        # (lo, hi) of the rows read at a time: RELAYOUT_BYTES of a's, or of ids
            row = max(8, a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64)) if a is not None else 8)
            step = max(1, RELAYOUT_BYTES // row)
            return ((x, min(n, x + step)) for x in range(lo, n, step))

        datas = []                          # per type: this worker's partitions' rows (a vertex no old partition
        for t, vt in enumerate(self.program.types):     # held keeps its initial record)
            tl0 = self.parts[0].types[t]
            n, dtype = self.n[t], tl0.data.dtype
            need = _distinct(np.concatenate([p.types[t].gid for p in self.parts]).astype(np.int64))
            have = np.zeros(len(need), bool)
            copies = [p.types[t].data.copy() for p in self.parts]
            slots = []                      # per partition: the row of each needed id there, or -1
            for p in self.parts:
                slot = np.full(len(need), -1, np.int32 if len(p.types[t].gid) < 1 << 31 else np.int64)
                slot[np.searchsorted(need, p.types[t].gid)] = np.arange(len(p.types[t].gid))
                slots.append(slot)

            def find(ids):      # (positions in need, which ids are there)
                at = np.minimum(np.searchsorted(need, ids), max(len(need) - 1, 0))
                return at, (need[at] == ids) if len(need) else np.zeros(len(ids), bool)
            olds = []
            for r in range(P0):
                data, gid, nm = get(r, f"t{t}.data"), get(r, f"t{t}.gid"), _whole(get(r, f"t{t}.n_master"))
                accum, touched = get(r, f"t{t}.accum"), get(r, f"t{t}.touched")
                if data.dtype != dtype or data.ndim != 1 or gid.ndim != 1 or gid.dtype.kind not in "iu" or \
                        len(gid) != len(data) or nm.size != 1 or not 0 <= int(nm.ravel()[0]) <= len(gid) or \
                        accum.ndim != 1 or len(accum) != len(data) or touched.ndim != 1:
                    raise SchemaError(f"checkpoint's partition {r} {vt.name} rows do not fit this run "
                                      f"({data.dtype} {data.shape}, {len(gid)} ids; this run: {dtype}, {n} vertices)")
                nm = int(nm.ravel()[0])
                for lo, hi in pieces(len(accum), 0, accum):
                    if np.ascontiguousarray(accum[lo:hi]).view(np.uint8).any():
                        raise busy(f"partition {r} holds accumulated {vt.name} updates not applied yet")
                if len(touched):
                    raise busy(f"partition {r} has {len(touched)} {vt.name} rows touched since the last Apply")
                snap = where[r].get(f"p{r}.t{t}.snapshot")
                if snap is not None and self._deltas[t]:    # (the rounds read snapshots of these types only)
                    if snap.ndim != 1 or len(snap) != len(data) or any(f not in dtype.names for f in snap.dtype.names or ()):
                        raise SchemaError(f"checkpoint's p{r}.t{t}.snapshot does not fit its data")
                    for lo, hi in pieces(len(data), 0, data):
                        s, d = snap[lo:hi], data[lo:hi]
                        for f in snap.dtype.names:
                            if np.ascontiguousarray(s[f]).tobytes() != np.ascontiguousarray(d[f]).tobytes():
                                raise busy(f"partition {r}'s {vt.name} field {f!r} changed since its last sync")
                for lo, hi in pieces(nm, 0, data):                   # the masters: their rows, where this worker holds them
                    m = gid[lo:hi].astype(np.int64)
                    if len(m) and (m.min() < 0 or m.max() >= n):
                        raise SchemaError(f"checkpoint's partition {r} {vt.name} rows do not fit this run "
                                          f"(ids beyond its {n} vertices)")
                    at, ok = find(m)
                    at = at[ok]
                    if have[at].any() or _repeats(at):
                        raise SchemaError(f"checkpoint's {vt.name} vertices have two masters (partition {r})")
                    have[at] = True
                    if len(at):
                        got = data[lo:hi][ok]
                        for copy, slot in zip(copies, slots):
                            i = slot[at]
                            copy[i[i >= 0]] = got[i >= 0]
                olds.append((r, gid, data, nm))
            for r, gid, data, nm in olds:                   # the mirrors of the masters this worker holds
                for lo, hi in pieces(len(gid), nm, data):
                    m = gid[lo:hi].astype(np.int64)
                    if len(m) and (m.min() < 0 or m.max() >= n):
                        raise SchemaError(f"checkpoint's partition {r} {vt.name} rows do not fit this run "
                                          f"(ids beyond its {n} vertices)")
                    at, ok = find(m)
                    if not ok.any():
                        continue
                    at = at[ok]
                    if not have[at].all():
                        raise SchemaError(f"checkpoint's partition {r} has {vt.name} mirrors of no master")
                    mirrors = data[lo:hi][ok]
                    for copy, slot in zip(copies, slots):   # (each master row as a partition here holds it)
                        i = slot[at]
                        there = i >= 0
                        for f in vt.sync_fields:
                            if np.ascontiguousarray(mirrors[f][there]).tobytes() != \
                                    np.ascontiguousarray(copy[f][i[there]]).tobytes():
                                raise busy(f"partition {r}'s {vt.name} mirrors differ from their masters in {f!r}")
            del slots
            datas.append(copies)

        edtype = self.parts[0].edata.dtype
        ids = np.int32 if self.num_edges <= np.iinfo(np.int32).max else np.int64     # (4 bytes an edge, not 8)
        mine = np.concatenate([p.eid for p in self.parts]).astype(ids)      # this worker's edges, in part order
        order = np.argsort(mine, kind="stable").astype(ids)
        ranked, held_here = mine[order], len(mine)
        del mine
        records, seen, held = np.zeros(held_here, edtype), np.zeros(held_here, bool), 0
        for r in range(P0):
            edata, eid = get(r, "edata"), get(r, "eid")
            if edata.dtype != edtype or eid.ndim != 1 or eid.dtype.kind not in "iu" or edata.ndim != 1 or \
                    len(eid) != len(edata):
                raise SchemaError(f"checkpoint's partition {r} edges do not fit this run")
            held += len(eid)
            for lo, hi in pieces(len(eid), 0, edata):
                e = eid[lo:hi]
                if len(e) and (int(e.min()) < 0 or int(e.max()) >= self.num_edges):
                    raise SchemaError(f"checkpoint's partition {r} edges do not fit this run")
                e = e.astype(ids)           # (searchsorted of other dtypes would convert all of ranked)
                at = np.minimum(np.searchsorted(ranked, e), max(len(ranked) - 1, 0))
                ok = ranked[at] == e if len(ranked) else np.zeros(len(e), bool)
                k = order[at[ok]]
                if seen[k].any() or _repeats(k):
                    raise SchemaError(f"checkpoint's edges are in two partitions (partition {r})")
                seen[k] = True
                if len(k):
                    records[k] = edata[lo:hi][ok]
        if held != self.num_edges or not seen.all():
            raise SchemaError(f"checkpoint lacks {int((~seen).sum())} of the run's {self.num_edges} edges"
                              if held == self.num_edges else f"checkpoint holds {held} of the run's {self.num_edges} edges")

        arrays, first = {"global_ctx": g}, 0
        for j, p in enumerate(self.parts):
            for t, tl in enumerate(p.types):
                pre = f"p{p.rank}.t{t}."
                arrays[pre + "data"] = data = datas[t][j]
                arrays[pre + "accum"] = np.zeros_like(tl.accum)
                if tl.snapshot is not None:
                    snap = tl.snapshot.copy()
                    for f in snap.dtype.names:
                        snap[f] = data[f]
                    arrays[pre + "snapshot"] = snap
                arrays[pre + "touched"] = np.zeros(0, np.int64)
            arrays[f"p{p.rank}.edata"] = records[first:first + len(p.eid)]
            first += len(p.eid)
            c = g.copy()
            for f, v in sum_f.items():
                c[f] = v if p.rank == 0 else 0
            for f, v in delta_f.items():
                c[f] = g[f] + v if p.rank == 0 else g[f]
            arrays[f"p{p.rank}.ctx"] = c
        return arrays

    def context(self):
        """The last globally combined context as a dict."""
        return {f: (self.global_ctx[f][0].tolist()) for f in self.global_ctx.dtype.names}


RELAYOUT_BYTES = 4 << 20       # what a relayout reads of a part file's array at a time


def _distinct(a):
    """The distinct values of ``a``, sorted (np.unique, by sorting: its hash table took
    0.1 s per million ids)."""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _repeats(a):
    """Whether a value occurs twice in ``a``."""
    a = np.sort(a)
    return bool((a[1:] == a[:-1]).any())


def _whole(a):
    """All of ``a``: an array, or a ``checkpoint.Member`` read whole."""
    return a if isinstance(a, np.ndarray) else np.asarray(a[...])


def _same_records(a, b):
    """Whether two structured arrays hold the same values, field by field and bit for bit
    (not ``tobytes()``: the padding between aligned fields is whatever memory held, and
    differs between the processes that wrote one checkpoint)."""
    return a.shape == b.shape and all(np.ascontiguousarray(a[f]).tobytes() == np.ascontiguousarray(b[f]).tobytes()
                                      for f in a.dtype.names)


def _id_dtype(n):
    """The smallest integer dtype holding ids 0 … n-1 (a checkpoint's gid and eid arrays)."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if n <= np.iinfo(dt).max + 1:
            return np.dtype(dt)
    return np.dtype(np.int64)


def _mix64(x):
    """splitmix64's finalizer over a uint64 array (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _records_crc(edge_data, vdata):
    """CRC-32 of the edge and vertex records a program made of its input before any
    step (GLM's feature values and labels live there, not in the graph's values)."""
    import zlib
    arrays = ([] if edge_data is None else
              list(edge_data.columns.values()) if isinstance(edge_data, EdgeColumns) else [edge_data])
    crc = 0
    for a in arrays + list(vdata):
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8).data, crc)
    return crc
