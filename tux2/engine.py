"""The engine: runs a Program's stage sequence over partitions (paper §3).

This engine owns the partitions of one process and runs them in lockstep with
slack 0 (BSP). All traffic between partitions goes through the transport's
two calls (``alltoall`` of array messages, ``allreduce_context``), so the same
code drives the in-process and the distributed case.
"""
import time

import numpy as np

from tux2 import partitioning
from tux2.compile import (aggregate_kernel, apply_kernel, combine_kernel, compile_call,
                          exchange_kernel, finalize_kernel, group_by_part, mark_touched, minibatch_kernel,
                          mirror_fanout, union_positions, view, writes_records,
                          active_kernel)
from tux2.config import jit_disabled
from tux2.errors import SchemaError
from tux2.graph import BipartiteGraph
from tux2.layout import build_partitions, is_replicated
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch
from tux2.transport import LocalTransport

_EMPTY_IDX = np.zeros(0, np.int64)


def _compact(idx):
    """Local indices as int32 on the wire when they fit (half the id bytes)."""
    return idx.astype(np.int32) if len(idx) and idx.max() < 2 ** 31 else idx


class Engine:
    """Run ``program`` on ``graph`` split into ``partitions`` parts.

    ``edge_data`` (optional) is a structured array of the program's edge dtype in
    global edge order; by default the graph's values fill the first edge field.

    ``fuse`` (default True): when a mini-batch's clocks need no messages (no Apply
    inside it of a type with mirrors: one partition, or e.g. model averaging's local
    steps), run its stages for a run of mini-batches in one compiled loop per
    partition (same results, no Python between mini-batches). Its trace then has
    one record per run of clocks (``clocks``: how many) instead of one per clock.
    """

    def __init__(self, program, graph, partitions=1, partitioner="random", seed=0,
                 partitioner_options=None, edge_data=None, context=None, transport=None, slack=0,
                 assignment=None, fuse=True):
        from tux2.ingress import Shard, check_program
        sharded = isinstance(graph, Shard)
        if not isinstance(graph, BipartiteGraph) and not sharded:
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
        n_local_edges = len(graph.src)
        if edge_data is None:
            edge_data = np.zeros(n_local_edges, program.edge_dtype)
            if graph.values is not None and program.edge_fields:
                edge_data[next(iter(program.edge_fields))] = graph.values
        if program.init_edges is not None:
            if sharded:
                check_program(program)
            program.init_edges(edge_data, rng)
        vdata = program.init_data(graph.n, rng)
        if assignment is None:
            assignment = partitioning.partition(
                partitioner, graph.src, graph.dst, graph.n_src, graph.n_dst, self.P, seed=seed,
                strict=False, **(partitioner_options or {}))
        self.assignment = assignment
        ctx = context if context is not None else program.context.new()
        self.transport = transport or LocalTransport(self.P)
        if getattr(self.transport, "parts", self.P) != self.P:
            raise SchemaError(f"the transport serves {self.transport.parts} partitions, the engine has {self.P}")
        self.parts = build_partitions(program, graph, self.assignment, vdata, edge_data, ctx,
                                      only=self.transport.local_parts, share=graph.share if sharded else None)
        self._part = {p.rank: p for p in self.parts}
        self.trace = []             # per clock: compute/sync/wait seconds, bytes sent
        self.slack = int(slack)
        if self.slack < 0:
            raise SchemaError(f"slack must be >= 0, got {slack}")
        self._rounds = []           # pending Apply rounds (SSP)
        self._run_cache = {}        # (partition, order) → per-vertex edge runs, for active mini-batches
        self.min_bytes = 0          # replica traffic the synced fields imply (no ids, no headers)
        self._done_ts = None
        self._sync_s = 0.0
        self.global_ctx = ctx.copy()
        self.history = []           # one record per GlobalSync: clock, iteration, context fields
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
        self._compile()

    # ------------------------------------------------------------------ compile
    def _compile(self):
        """Build and compile every kernel now, on empty ranges, so a UDF numba
        cannot type fails here with the stage and UDF named."""
        self._kernels = {}
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
        # whether any Exchange may change a type's replica values: if none does, a
        # mirror's sync fields always equal its master's and rounds send no deltas up
        self._deltas = [any(writes_records(s.udf, t, p0.types[t].data.dtype)
                            for s, _ in self.program.walk() if isinstance(s, Exchange)) for t in (0, 1)]
        # the per-clock helpers for the index types they will see (numba compiles, or
        # loads from its cache, on a first call: here, not inside the first clock)
        i4, i8 = np.zeros(0, np.int32), _EMPTY_IDX
        for tl in p0.types:
            mark_touched(i8, i8, 0, i8, p0.ea, tl.stamp, 0, tl.touched, 0)
        if any(self._replicated):
            for lids in (i4, i8):
                union_positions(0, i8, lids, np.zeros(0, np.bool_), i8)
            group_by_part(i4, 1)
            mirror_fanout(i8, np.zeros(1, np.int64), i4, i8, 1)
        self._fused = {}
        for mb in self.program.stages:
            if isinstance(mb, MiniBatch) and self._fusable(mb):
                self._fused[id(mb)] = self._fuse(mb)

    def _fusable(self, mb):
        """A mini-batch's clocks need no messages and no Python in between: no
        Apply inside it of a type with mirrors (its rounds would send), no active
        predicate, no GlobalSync. Then each partition runs its clocks on its own
        (with several workers too: such clocks exchange nothing, so running them
        back to back gives the per-clock result; rounds pending from earlier stages
        complete before the run, as SSP would need them for its last clock)."""
        if not (self.fuse and not jit_disabled() and mb.active is None
                and all(isinstance(s, (Exchange, Apply)) for s in mb.stages)):
            return False
        return not any(self._tracked[t] and self._replicated[t]
                       for s in mb.stages if isinstance(s, Apply) for t in self.program.apply_types(s))

    def _fuse(self, mb):
        steps = []
        for s in mb.stages:
            if isinstance(s, Exchange):
                marks = tuple(t for t in (0, 1) if self._tracked[t] and (s.writes is None or t in self._writes[id(s)]))
                steps.append(("exchange", self._kernels[id(s)], marks))
            else:
                steps += [("apply", t, self._kernels.get(id(s))) for t in self.program.apply_types(s)
                          if self._tracked[t]]
        k = minibatch_kernel(steps, [tl.accum.dtype for tl in self.parts[0].types])
        order = None if mb.unit == "edge" else self.program.type_index(mb.enumerate)
        for p in self.parts:               # index dtypes may differ between parts
            compile_call(k, self._fused_args(p, order, 0, 0, np.zeros(1, np.int64)), mb, mb.stages[0].udf)
        return k, order

    def _fused_args(self, p, order, c0, c1, pos):
        A, B = p.types
        return (c0, c1, pos, p.orders[order][0], p.ea, p.eb, A.data, B.data, p.edata, A.accum, B.accum, p.ctx,
                A.stamp, A.touched, A.n_touched, A.epoch, B.stamp, B.touched, B.n_touched, B.epoch)

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
            for s in self.program.stages:
                if isinstance(s, MiniBatch):
                    if mark is not None:        # stages before the mini-batches
                        self._trace_end(mark, epoch_stages=True)
                        mark = None
                    self._run_minibatches(s)
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
            if callback is not None and callback(self):
                break
        return self

    def _run_minibatches(self, mb):
        if mb.unit == "edge":
            order, total = None, self.num_edges
        else:
            order = self.program.type_index(mb.enumerate)
            total = self.n[order]
        size = mb.size or max(total, 1)
        if self.fuse and id(mb) in self._fused and not self.time_parts:
            return self._run_fused(mb, total, size)
        for lo in range(0, max(total, 1), size):
            self.clock += 1
            mark = self._trace_start()          # after the SSP gate
            segs = self._segments(order, lo, min(lo + size, total), mb)
            for s in mb.stages:
                self._run_stage(s, segs)
            self._trace_end(mark)
            if self.on_clock is not None:
                self.on_clock(self)

    def _run_fused(self, mb, total, size):
        """The mini-batches of one epoch through the fused loop, in runs of clocks
        sized to take ~0.1 s (so progress bars and the trace still move)."""
        k, order = self._fused[id(mb)]
        key = ("pos", id(mb))                 # per partition: where each clock's range starts
        if key not in self._run_cache:
            bounds = np.r_[np.arange(0, max(total, 1), size), total]
            self._run_cache[key] = [np.searchsorted(p.orders[order][1], bounds) for p in self.parts]
        pos = self._run_cache[key]
        clocks, c, run = len(pos[0]) - 1, 0, 1
        while c < clocks:
            n = min(run, clocks - c)
            mark = self._trace_start(upto=self.clock + n - self.slack - 1)
            t0 = time.perf_counter()
            for p, ps in zip(self.parts, pos):
                A, B = p.types
                A.n_touched, A.epoch, B.n_touched, B.epoch = k(*self._fused_args(p, order, c, c + n, ps))
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
            first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else _EMPTY_IDX
            ends = (p.ea, p.eb)[order]
            lid = ends[first] if len(perm) == 0 else ends[perm[first]]
            cache[key] = (keys[first], np.r_[first, len(keys)].astype(np.int64), lid.astype(np.int64),
                          np.empty(len(first), np.int64), np.empty(len(first), np.int64))
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
        if gate:
            self._progress(self.clock - self.slack - 1 if upto is None else upto)
        self._gate_s = time.perf_counter() - g0
        self._done_ts = None
        self._part_s = {p.rank: 0.0 for p in self.parts} if self.time_parts else None
        return (time.perf_counter(), self._sync_s, getattr(self.transport, "wait_seconds", 0.0),
                self.transport.bytes_sent, time.time(), self.min_bytes)

    def _trace_end(self, mark, epoch_stages=False, clocks=None):
        """A clock's record; ``epoch_stages``: the stages outside the mini-batches, which
        run after (or before) them in the same clock and get a record of their own."""
        t0, s0, w0, b0, start_ts, m0 = mark
        wall = time.perf_counter() - t0
        sync = self._sync_s - s0
        wait = getattr(self.transport, "wait_seconds", 0.0) - w0
        self.trace.append({"clock": self.clock, "iteration": self.iteration,
                           "rank": getattr(self.transport, "rank", 0), "compute_s": wall - sync,
                           "sync_s": sync - wait, "wait_s": wait + self._gate_s,
                           "bytes_sent": self.transport.bytes_sent - b0, "min_bytes": self.min_bytes - m0,
                           "dropped_frames": self.transport.dropped,
                           "start_ts": start_ts,
                           "done_ts": self._done_ts if self._done_ts is not None else time.time(),
                           **({"epoch_stages": True} if epoch_stages else {}),
                           **({"clocks": clocks} if clocks is not None else {}),
                           **({"part_exchange_s": self._part_s} if self._part_s is not None else {})})

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
        for p, (los, his, n, perm) in zip(self.parts, segs):
            if n == 0:
                continue
            t0 = time.perf_counter() if self._part_s is not None else 0.0
            A, B = p.types
            k(los, his, n, perm, p.ea, p.eb, view(A.data), view(B.data), view(p.edata),
              view(A.accum), view(B.accum), view(p.ctx))
            for t, ends in ((0, p.ea), (1, p.eb)):
                if self._tracked[t] and (s.writes is None or t in self._writes[id(s)]):
                    tl = p.types[t]
                    tl.n_touched = mark_touched(los, his, n, perm, ends, tl.stamp, tl.epoch,
                                                tl.touched, tl.n_touched)
            if self._part_s is not None:
                self._part_s[p.rank] += time.perf_counter() - t0

    # ------------------------------------------------------------------ Apply
    # An Apply is a round in three phases: (1) touched mirrors send deltas (only if
    # an Exchange may write the type's values) and accumulators up to their
    # masters; (2) masters combine, run the UDF and send new sync values down to
    # every mirror; (3) mirrors take them. With slack 0
    # all three run at once (BSP). With slack s > 0 phase 1 is sent and the
    # worker goes on; rounds complete as messages arrive, and a worker starts
    # clock c only when every round of clocks <= c - s - 1 is complete (SSP).
    def _apply(self, s, t):
        if not self._tracked[t]:
            return
        if self._done_ts is None:
            self._done_ts = time.time()          # this clock's own computation is finished
        vt = self.program.types[t]
        sync_f, acc_f = vt.sync_fields, vt.accum_fields if vt.accum_dtype.names != ("_",) else ()
        if not self._replicated[t]:
            # no mirrors anywhere (e.g. BiCut's favourite side): every touched vertex is a
            # local master, so the round needs no messages and no other worker
            kernel = self._kernels.get(id(s))
            for p in self.parts:
                tl = p.types[t]
                M = tl.touched_indices()         # first-touch order; read before the next Exchange refills it
                tl.reset_touched()
                if kernel is not None and len(M):
                    kernel(M, view(tl.data), view(tl.accum), view(p.ctx))
                for f in acc_f:
                    tl.accum[f][M] = 0
            return
        repl = bool(sync_f)
        deltas = repl and self._deltas[t]
        out = {}
        for p in self.parts:
            tl = p.types[t]
            idx = tl.touched_indices()
            tl.pending_masters.append(idx[idx < tl.n_master].copy())
            mir = idx[idx >= tl.n_master]
            tl.reset_touched()
            if len(mir) == 0:
                continue
            j = mir - tl.n_master
            order, starts = group_by_part(tl.mirror_master_part[j], self.P)
            for q in np.flatnonzero(np.diff(starts)).tolist():
                seg = order[starts[q]:starts[q + 1]]
                rows = mir[seg]
                msg = [_compact(tl.mirror_master_lid[j[seg]])]
                if deltas:
                    for f in sync_f:
                        msg.append(tl.data[f][rows] - tl.snapshot[f][rows])
                        tl.snapshot[f][rows] = tl.data[f][rows]      # later deltas count from here
                msg += [tl.accum[f][rows] for f in acc_f]
                out[(p.rank, q)] = msg
                if self._remote(p.rank, q):
                    self.min_bytes += len(rows) * (self._field_bytes(vt.dtype, sync_f) * deltas
                                                   + self._field_bytes(vt.accum_dtype, acc_f))
            for f in acc_f:
                tl.accum[f][mir] = 0
        rnd = {"clock": self.clock, "stage": s, "t": t, "phase": "up", "sync": sync_f, "acc": acc_f,
               "repl": repl, "deltas": deltas, "up": ("apply-up", t, self._index[id(s)]),
               "down": ("apply-down", t, self._index[id(s)])}   # several Applies of a type may share a clock
        self._comm(self.transport.send, self.clock, rnd["up"], out)
        self._rounds.append(rnd)
        # BSP: finish the round now; SSP: take only what has already arrived
        self._progress(self.clock if self.slack == 0 else -1)

    def _remote(self, src, dst):
        owner = getattr(self.transport, "owner", None)
        return owner is None or owner(src) != owner(dst)

    @staticmethod
    def _field_bytes(dtype, fields):
        return sum(dtype[f].itemsize for f in fields)

    def _progress(self, upto):
        """Complete pending rounds in order: block for those of clocks <= upto,
        take the others only if their messages are already here."""
        while self._rounds:
            rnd = self._rounds[0]
            block = rnd["clock"] <= upto
            key = rnd["up"] if rnd["phase"] == "up" else rnd["down"]
            if not block and not self._comm(self.transport.complete, rnd["clock"], key):
                return
            inbox = self._comm(self.transport.collect, rnd["clock"], key)
            if rnd["phase"] == "up":
                self._apply_masters(rnd, inbox)
                rnd["phase"] = "down"
            else:
                self._apply_mirrors(rnd, inbox)
                self._rounds.pop(0)

    def _apply_masters(self, rnd, inbox):
        s, t, sync_f, acc_f, repl, deltas = (rnd["stage"], rnd["t"], rnd["sync"], rnd["acc"], rnd["repl"],
                                             rnd["deltas"])
        down = {}
        kernel = self._kernels.get(id(s))
        for p in self.parts:
            tl = p.types[t]
            pend = tl.pending_masters
            tl.pending_masters = []
            own = (pend[0] if len(pend) == 1 else np.concatenate(pend)) if pend else _EMPTY_IDX
            msgs = [m for (src, dst), m in inbox.items() if dst == p.rank]
            idx_in = np.concatenate([m[0] for m in msgs]) if msgs else _EMPTY_IDX
            if len(idx_in) and (idx_in.min() < 0 or idx_in.max() >= tl.n_master):
                raise SchemaError(f"Apply message for partition {p.rank} names a vertex that is not a master there")
            if len(own) == 0 and len(idx_in) == 0:
                continue
            if tl.scratch is None:
                tl.scratch = (np.zeros(tl.n_master, np.bool_), np.empty(tl.n_master, np.int64))
            # sorted union and each message's positions in it, without sorting the messages
            M, pos_in, cnt = union_positions(tl.n_master, own, idx_in, *tl.scratch)
            if msgs:
                # each message names a master at most once: plain fancy-index adds, message by message
                pos = np.split(pos_in, np.cumsum([len(m[0]) for m in msgs])[:-1])
                for k, f in enumerate(sync_f if deltas else ()):
                    tot = tl.data[f][M] - tl.snapshot[f][M]
                    for q, m in zip(pos, msgs):
                        tot[q] += m[1 + k]
                    if s.combine == "mean":
                        tot = tot / cnt.reshape((-1,) + (1,) * (tot.ndim - 1))
                    tl.data[f][M] = tl.snapshot[f][M] + tot
                off = 1 + (len(sync_f) if deltas else 0)
                for k, f in enumerate(acc_f):
                    acc = tl.accum[f][M]
                    for q, m in zip(pos, msgs):
                        acc[q] += m[off + k]
                    if s.combine == "mean":
                        acc = acc / cnt.reshape((-1,) + (1,) * (acc.ndim - 1))
                    tl.accum[f][M] = acc
            if kernel is not None:
                kernel(M, view(tl.data), view(tl.accum), view(p.ctx))
            for f in acc_f:
                tl.accum[f][M] = 0
            if repl:
                for f in sync_f if deltas else ():
                    tl.snapshot[f][M] = tl.data[f][M]
                rows, dlid, starts = mirror_fanout(M, tl.mm_ptr, tl.mm_part, tl.mm_lid, self.P)
                for q in np.flatnonzero(np.diff(starts)).tolist():
                    seg = slice(starts[q], starts[q + 1])
                    down[(p.rank, q)] = [_compact(dlid[seg])] + [tl.data[f][rows[seg]] for f in sync_f]
                    if self._remote(p.rank, q):
                        self.min_bytes += int(starts[q + 1] - starts[q]) * self._field_bytes(
                            self.program.types[t].dtype, sync_f)
        self._comm(self.transport.send, rnd["clock"], rnd["down"], down)

    def _apply_mirrors(self, rnd, inbox):
        """Mirrors take their masters' values, keeping local changes not yet sent up."""
        t, sync_f = rnd["t"], rnd["sync"]
        for (src, dst), msg in inbox.items():
            tl = self._part[dst].types[t]
            lid = msg[0]
            if len(lid) and (lid.min() < tl.n_master or lid.max() >= tl.n_local):
                raise SchemaError(f"Apply message for partition {dst} names a vertex that is not a mirror there")
            for k, f in enumerate(sync_f):
                if not rnd["deltas"]:          # no Exchange writes these fields: nothing unsent
                    tl.data[f][lid] = msg[1 + k]
                    continue
                unsent = tl.data[f][lid] - tl.snapshot[f][lid]
                tl.data[f][lid] = msg[1 + k] + unsent
                tl.snapshot[f][lid] = msg[1 + k]

    def flush(self):
        """Complete every pending Apply round (a barrier when slack > 0)."""
        self._progress(float("inf"))

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
        rec = {"clock": self.clock, "iteration": self.iteration}
        for f in g.dtype.names:
            v = g[f][0]
            rec[f] = v.tolist() if isinstance(v, np.ndarray) else v.item()
        self.history.append(rec)
        for c in locals_:
            c[:] = g
            for f in spec.sum:
                c[f] = 0

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
        msgs = {(part, root): [ids, np.ascontiguousarray(rec).view(np.uint8)] for part, ids, rec in pieces}
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
        arrays["global_ctx"] = self.global_ctx
        meta = {"clock": self.clock, "iteration": self.iteration, "min_bytes": self.min_bytes,
                "history": self.history, "partitions": self.P, "program": self.program.name,
                "local_parts": [p.rank for p in self.parts]}
        return arrays, meta

    def restore(self, arrays, meta):
        """Load what ``state()`` returned, into an engine built from the same program,
        input, partitioning and seed; anything else is a SchemaError, caught before any
        array is overwritten."""
        import zlib
        if meta["partitions"] != self.P or meta["program"] != self.program.name:
            raise SchemaError(f"checkpoint of program {meta['program']!r} on {meta['partitions']} partitions; "
                              f"this run is {self.program.name!r} on {self.P}")
        for p in self.parts:
            checks = [(f"p{p.rank}.eid_crc", p.eid, "edges")]
            checks += [(f"p{p.rank}.t{t}.gid_crc", tl.gid, f"{tl.vtype.name} vertices") for t, tl in enumerate(p.types)]
            for key, ids, what in checks:
                if key not in arrays:
                    raise SchemaError(f"checkpoint has no partition {p.rank} (written by another worker layout)")
                if arrays[key].tolist() != [zlib.crc32(ids.tobytes()), len(ids)]:
                    raise SchemaError(f"checkpoint's partition {p.rank} holds other {what} than this run's: "
                                      "resume with the same input, partitioner, partitions and seed")
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

    def context(self):
        """The last globally combined context as a dict."""
        return {f: (self.global_ctx[f][0].tolist()) for f in self.global_ctx.dtype.names}
