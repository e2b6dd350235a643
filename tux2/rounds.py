"""Apply rounds (paper §3.3, §3.2): how replicas of a vertex agree after an Exchange.

An Apply is a round in three phases: (1) touched mirrors send their changes (only if
an Exchange may write the type's values) and accumulators up to their masters;
(2) masters combine them, run the Apply UDF and send the new sync values down to
every mirror; (3) mirrors take them. With slack 0 all three run at once (BSP) and a
mirror's snapshot equals its master's, so phase 1 sends the values themselves and a
vertex that one replica alone changed takes that value exactly (conflict-free
schedules keep the one-partition result bit for bit; the replica that sent it gets
nothing back). With slack s > 0 phase 1 sends changes and the worker goes on;
rounds complete as messages arrive, and a worker starts clock c only when every
round of clocks <= c - s - 1 is complete (SSP).

A plain Apply (no UDF, no accumulators, combine "sum") at slack 0 takes a shorter
way when it can, with the same values: in one process, replicas copy the row of the
one replica that touched a vertex straight from its arrays (a plan per stratum, made
once); where no vertex has more than two replicas (2 workers), the round has one
phase: each replica that wrote sends to the other. In a stratified run both hold
back a row its partition writes again in the next clock (no other replica touches
it before), so each row moves when its block moves on; and between two workers a
round's values are taken during the next clock's Exchange, which first runs the
tiles that no value on its way can reach (Engine._exchange_around): the same values
as BSP, with the wait for the other worker behind those tiles.

Records move as the bytes of their sync fields (which lead each record), copied by
numba loops; each phase runs per partition in the engine's threads.
"""
import time

import numpy as np

from tux2.compile import (add_rows, as_int32, combine_changes, copy_rows, copy_rows_between, fanout_rows, gather_rows, group_by_part,
                          ids_within, mirror_fanout, scatter_rows, split_touched, union_positions, view, zero_rows)
from tux2.errors import OverlapError, SchemaError

_EMPTY_IDX = np.zeros(0, np.int64)


def sync_block(records, end):
    """The first ``end`` bytes of each record (where a vertex type keeps its sync
    fields), as a (n, end) uint8 view: replicas move their sync fields in one copy."""
    return records.view(np.uint8).reshape(len(records), records.dtype.itemsize)[:, :end]


def _records(block, dtype):
    """Records of ``dtype`` whose first bytes are the rows of ``block``."""
    out = np.zeros(len(block), dtype)
    sync_block(out, block.shape[1])[...] = block
    return out


def _fields(block, dtype, fields):
    """Per field, the values of records of ``dtype`` sent as one (n, k) block of numbers."""
    recs = _records(np.ascontiguousarray(block).view(np.uint8), dtype)
    return [recs[f] for f in fields]


def _rows_changed(ne):
    """Per row of an element-wise comparison: 1 where any element differs."""
    return ne.reshape(len(ne), int(np.prod(ne.shape[1:]))).any(axis=1).astype(np.int64)


def _compact(idx):
    """Local indices as int32 on the wire when they fit (half the id bytes)."""
    small, fits = as_int32(idx)
    return small if fits else idx


def _groups(starts):
    """(group, start, end) of each non-empty group of a counting sort's ``starts``."""
    s = starts.tolist()
    return [(q, a, b) for q, (a, b) in enumerate(zip(s, s[1:])) if b > a]


def _uniform_base(dtype, fields, end):
    """The one numeric type of every element of ``fields`` when they fill the first
    ``end`` bytes of ``dtype`` records with no gap, else None."""
    base, at = None, 0
    for f in sorted(fields, key=lambda f: dtype.fields[f][1]):
        ft, off = dtype.fields[f][:2]
        b = ft.base if ft.subdtype is not None else ft
        if off != at or b.kind not in "iuf" or (base is not None and b != base):
            return None
        base, at = b, at + ft.itemsize
    return base if base is not None and at == end and end % base.itemsize == 0 else None


def _typed(block, base):
    """An (n, end) uint8 block of sync rows as an (n, end / size) array of ``base``."""
    return (block if block.strides[1] == 1 else np.ascontiguousarray(block)).view(base)


def _pieces(flat, msgs):
    """``flat`` cut into one piece per message, as long as the message's id list."""
    out, a = [], 0
    for m in msgs:
        b = a + len(m[0])
        out.append(flat[a:b])
        a = b
    return out


class ApplyRounds:
    """The Engine's Apply rounds (a mixin: it reads the engine's partitions, kernels,
    transport and clock)."""

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
        exact = self.slack == 0
        snap = repl and self._deltas[t]         # replicas keep snapshots of the values to send changes from
        # at slack 0, an Apply whose MiniBatch's Exchanges do not change the type's values sends none up
        deltas = snap and (self._apply_deltas.get((id(s), t), True) if exact else True)
        end = self._sync_end[t]
        if exact and deltas and not acc_f and s.combine == "sum" and id(s) not in self._kernels:
            # a plain Apply at slack 0: replicas take the value of the one that wrote
            if len(self.parts) == self.P and not self._rounds and self._apply_local(s, t, end):
                return
            if s.overlap == "error" and self._pairs_only(t):
                return self._apply_direct(s, t, end)
        out, touched = {}, {}
        work = sum(p.types[t].n_touched for p in self.parts)
        for rank, masters, msgs, nbytes in self._each_part(
                lambda p: self._up(p, t, sync_f, acc_f, deltas, exact, end), self.parts, work):
            touched[rank] = masters
            out.update(msgs)
            self.min_bytes += nbytes
        rnd = {"clock": self.clock, "stage": s, "t": t, "phase": "up", "sync": sync_f, "acc": acc_f,
               "repl": repl, "deltas": deltas, "snap": snap, "exact": exact, "end": end, "touched": touched,
               "up": ("apply-up", t, self._index[id(s)]),
               "down": ("apply-down", t, self._index[id(s)])}   # several Applies of a type may share a clock
        self._comm(self.transport.send, self.clock, rnd["up"], out)
        self._rounds.append(rnd)
        # BSP: finish the round now; SSP: take only what has already arrived
        self._progress(self.clock if self.slack == 0 else -1)

    def _apply_local(self, s, t, end):
        """The round of a plain Apply (no UDF, no accumulators, sum, slack 0) when every
        partition is in this process and each vertex was touched by one replica only
        (a stratum): each other replica copies that replica's sync bytes, straight from
        its arrays, which is what the messages would do. The copies are planned once
        per set of touched lists (a stratum's are the same every epoch) and the plan is
        used only when the lists are equal to those it was made for. As in one-phase
        rounds, rows a partition writes again in the next clock wait. False: take the
        general round (several replicas touched a vertex, or no room for the plan)."""
        idx = [p.types[t].touched_indices() for p in self.parts]
        ahead = None if self._ahead is None else tuple((int(g[0][0]), int(g[1][0])) for g in self._ahead[1])
        key = (self._index[id(s)], t, ahead) + tuple((len(i), int(i[0]), int(i[-1])) if len(i) else (0,)
                                                     for i in idx)
        plans = self._local_plans
        hit = plans.get(key)
        if hit is None:
            if key in plans:
                return False                  # these lists had a vertex touched twice
            size = sum(len(i) for i in idx)
            if self._plan_room < size:
                return False
            again = [self._touches_next(p, t) for p in self.parts]
            sent = [i if a is None else i[~a] for i, a in zip(idx, again)]
            plan = self._local_plan(t, sent, end)
            held = {p.rank: None if a is None else i[a] for p, i, a in zip(self.parts, idx, again)}
            hit = None if plan is None else ([i.copy() for i in idx], plan, held)
            if self._ahead is None or all(a is not None for a in again):   # else: next clock not seen yet
                plans[key] = hit
                if hit is not None:
                    self._plan_room -= 2 * size + sum(len(c[1]) for own, copies in plan[0].values() for c in copies)
            if hit is None:
                return False
        elif not all(np.array_equal(a, b) for a, b in zip(hit[0], idx)):
            return False
        (per_part, nbytes), held = hit[1], hit[2]

        def run(p):
            tl = p.types[t]
            data, snap = sync_block(tl.data, end), sync_block(tl.snapshot, end)
            own, copies = per_part[p.rank]
            copy_rows(snap, data, own)            # the writer's own rows: synced as they are
            for w, src, dst in copies:
                copy_rows_between(data, snap, dst, sync_block(self._part[w].types[t].data, end), src)
            tl.reset_touched()
            wait = held[p.rank]
            if wait is not None and len(wait):    # still to sync: touched in the next clock too
                tl.touched[:len(wait)] = wait
                tl.stamp[wait] = tl.epoch
                tl.n_touched = len(wait)
        self._each_part(run, self.parts, sum(len(i) for i in idx))
        self.min_bytes += nbytes
        return True

    def _local_plan(self, t, idx, end):
        """({part: (its touched rows, [(writer part, writer rows, rows here)])}, bytes the
        copies imply), or None if a vertex was touched by more than one replica."""
        P = self.P
        writes = [[] for _ in range(P)]       # per master part: (master lids, writer part, writer rows)
        for p, rows in zip(self.parts, idx):
            tl = p.types[t]
            own = rows < tl.n_master
            writes[p.rank].append((rows[own], p.rank, rows[own]))
            mir = rows[~own]
            mp = tl.mirror_master_part[mir - tl.n_master]
            ml = tl.mirror_master_lid[mir - tl.n_master]
            for q in np.unique(mp).tolist():
                sel = mp == q
                writes[q].append((ml[sel], p.rank, mir[sel]))
        dst, wr, drows, srows = [], [], [], []  # per copy: the part it goes to, the writer, rows there and here
        for m, ws in enumerate(writes):
            if not ws:
                continue
            tl = self._part[m].types[t]
            L = np.concatenate([w[0] for w in ws]).astype(np.int64)
            W = np.concatenate([np.full(len(w[0]), w[1], np.int64) for w in ws])
            R = np.concatenate([w[2] for w in ws]).astype(np.int64)
            if len(L) == 0:
                continue
            if np.bincount(L, minlength=tl.n_master).max() > 1:
                return None
            other = W != m                                    # the master, where a mirror wrote
            dst.append(np.full(int(other.sum()), m, np.int64))
            wr.append(W[other]), drows.append(L[other]), srows.append(R[other])
            rows, dlid, starts = mirror_fanout(L, tl.mm_ptr, tl.mm_part, tl.mm_lid, P)
            where = np.empty(tl.n_master, np.int64)
            where[L] = np.arange(len(L))
            k = where[rows]
            q = np.repeat(np.arange(P, dtype=np.int64), np.diff(starts))     # the part of each mirror
            keep = W[k] != q
            dst.append(q[keep]), wr.append(W[k][keep]), drows.append(dlid[keep].astype(np.int64))
            srows.append(R[k][keep])
        per_part = {p.rank: (np.sort(rows), []) for p, rows in zip(self.parts, idx)}
        n = 0
        if dst:
            dst, wr, drows, srows = (np.concatenate(x) for x in (dst, wr, drows, srows))
            o = np.lexsort((drows, wr, dst))              # by part, writer, then rows there
            dst, wr, drows, srows = dst[o], wr[o], drows[o], srows[o]
            cuts = np.flatnonzero((np.diff(dst) != 0) | (np.diff(wr) != 0)) + 1
            for a, b in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(dst)].tolist()):
                if b > a and int(dst[a]) in per_part:
                    per_part[int(dst[a])][1].append((int(wr[a]), srows[a:b], drows[a:b]))
                    n += b - a
        return per_part, n * self._field_bytes(self.program.types[t].dtype, self.program.types[t].sync_fields)

    def _pairs_only(self, t):
        """Whether no vertex of type t has more than two replicas anywhere (asked of
        every worker once, at the first round, which every worker reaches together)."""
        if self._pairs[t] is None:
            most = max(int(np.diff(p.types[t].mm_ptr).max(initial=0)) for p in self.parts)
            got = self.transport.allgather(f"mirrors-{t}", [np.array([most], np.int64)])
            self._pairs[t] = max(int(a[0][0]) for a in got) <= 1
        return self._pairs[t]

    def _apply_direct(self, s, t, end):
        """A plain Apply's round in one phase, when no vertex has more than two
        replicas: each replica that wrote a vertex sends its sync bytes to the other
        one (master or mirror), which takes them. Half the message rounds of the
        master/mirror protocol, the same bytes, the same values: a vertex that both
        replicas changed in the clock is an overlap (OverlapError), one that only one
        changed takes that one's value."""
        key = ("apply-direct", t, self._index[id(s)])
        out = {}
        work = sum(p.types[t].n_touched for p in self.parts)
        for msgs, nbytes in self._each_part(lambda p: self._direct_out(p, t, end), self.parts, work):
            out.update(msgs)
            self.min_bytes += nbytes
        self._comm(self.transport.send, self.clock, key, out)
        if self._ahead is not None:             # taken during the next clock's Exchange
            self._deferred.append((s, t, key, end, self.clock))
            return
        self._direct_in_all(s, t, key, end, self.clock)

    def _finish_deferred(self):
        """Take the one-phase rounds sent in the last clock (Engine._exchange_around)."""
        rounds, self._deferred = self._deferred, []
        for s, t, key, end, clock in rounds:
            self._direct_in_all(s, t, key, end, clock)

    def _direct_in_all(self, s, t, key, end, clock):
        inbox = self._comm(self.transport.collect, clock, key)
        to = {}
        for (src, dst), msg in inbox.items():
            to.setdefault(dst, []).append(msg)
        work = sum(len(m[0]) for m in inbox.values()) + sum(p.types[t].n_touched for p in self.parts)
        self._each_part(lambda p: self._direct_in(s, p, t, end, to.get(p.rank, ())), self.parts, work)

    def _direct_out(self, p, t, end):
        tl = p.types[t]
        sent, held, to = self._direct_plan(p, t)
        self._held[(p.rank, t)] = (sent, held)
        out, nbytes = {}, 0
        data = sync_block(tl.data, end)
        for q, lid, rows in to:
            out[(p.rank, q)] = [lid, gather_rows(data, rows)]
            if self._remote(p.rank, q):
                nbytes += len(rows) * self._field_bytes(tl.vtype.dtype, tl.vtype.sync_fields)
        return out, nbytes

    def _direct_plan(self, p, t):
        """(rows synced, rows held back or None, [(part, its lids, rows here)]) of p's
        touched list: kept per list (each stratum's is the same every epoch; used only
        when the list is equal), made afresh when there is no room."""
        tl = p.types[t]
        idx = tl.touched_indices()
        ahead = None if self._ahead is None else self._ahead[1][self._slot[p.rank]][:2]
        key = (t, None if ahead is None else (int(ahead[0][0]), int(ahead[1][0])),
               len(idx), int(idx[0]) if len(idx) else -1, int(idx[-1]) if len(idx) else -1)
        plans, room = self._direct_plans.setdefault(p.rank, ({}, [p.n_edges + sum(x.n_local for x in p.types)]))
        hit = plans.get(key)
        if hit is not None and np.array_equal(hit[0], idx):
            return hit[1]
        again = self._touches_next(p, t)
        # written here again in the next clock: no other replica touches it before, so it goes
        # with the round of the last clock that writes it (the stage's last at the latest)
        sent, held = (idx.copy(), None) if again is None else (idx[~again], idx[again].copy())
        m = sent[sent < tl.n_master]
        m = m[tl.mm_ptr[m + 1] > tl.mm_ptr[m]]       # masters with their (one) mirror
        mir = sent[sent >= tl.n_master]
        first = tl.mm_ptr[m]
        rows = np.concatenate([m, mir])
        part = np.concatenate([tl.mm_part[first], tl.mirror_master_part[mir - tl.n_master]])
        lid = np.concatenate([tl.mm_lid[first], tl.mirror_master_lid[mir - tl.n_master]])
        to = []
        if len(rows):
            order, starts = group_by_part(part, self.P)
            for q, a, b in _groups(starts):
                seg = order[a:b]
                seg = seg[np.argsort(lid[seg], kind="stable")]     # the receiver writes in memory order
                to.append((q, _compact(lid[seg]), rows[seg]))
        plan = (np.sort(sent), held, to)
        if (self._ahead is None or again is not None) and 3 * len(idx) <= room[0]:   # else: next clock unseen
            plans[key] = (idx.copy(), plan)
            room[0] -= 3 * len(idx)
        return plan

    def _direct_in(self, s, p, t, end, msgs):
        tl = p.types[t]
        data, snap = sync_block(tl.data, end), sync_block(tl.snapshot, end)
        for lid, vals in msgs:
            if not ids_within(lid, 0, tl.n_local):
                raise SchemaError(f"Apply message for partition {p.rank} names a vertex it does not hold")
            if vals.shape != (len(lid), end):
                raise SchemaError(f"Apply message for partition {p.rank} has records of the wrong size")
            both = tl.stamp[lid] == tl.epoch          # this replica wrote it too in this clock
            if both.any():
                lid, vals = self._direct_overlap(s, p, t, lid, vals, np.flatnonzero(both))
            copy_rows_between(data, snap, lid, vals, np.arange(len(lid)))
        sent, held = self._held.pop((p.rank, t), (tl.touched_indices(), None))
        copy_rows(snap, data, sent)                    # what this replica wrote is synced
        tl.reset_touched()
        if held is not None and len(held):             # still to send: touched in the next clock too
            tl.touched[:len(held)] = held
            tl.stamp[held] = tl.epoch
            tl.n_touched = len(held)

    def _direct_overlap(self, s, p, t, lid, vals, at):
        """The rows of a message that this replica touched as well: if it did not
        change one, the message's value stands; if only it changed one, its own does;
        if both changed one, that is an overlap."""
        tl = p.types[t]
        rows = lid[at]
        theirs = _records(vals[at], tl.snapshot.dtype)
        snap = tl.snapshot[rows]
        mine = np.any([_rows_changed(tl.data[f][rows] != snap[f]) for f in tl.vtype.sync_fields], axis=0)
        new = np.any([_rows_changed(theirs[f] != snap[f]) for f in tl.vtype.sync_fields], axis=0)
        if (mine & new).any():
            raise self._overlap(self.clock, s, t, int((mine & new).sum()), 2,
                                f"partition {p.rank} and its other replicas")
        keep = np.ones(len(lid), np.bool_)
        keep[at[mine.astype(bool)]] = False
        return lid[keep], vals[keep]

    def _overlap(self, clock, s, t, n, most, where):
        return OverlapError(
            f"clock {clock}: {n} {self.program.types[t].name} vertices ({where}) were "
            f"written by up to {most} replicas each before Apply {s.name!r}, which would sum "
            "their independent steps (a step that grows with the number of replicas). Remedies: a "
            "conflict-free order (tux2.graph.stratified_order with the 'stratified' partitioner and "
            "Engine(strata=...); for MF the default --order strata), smaller mini-batches, "
            "Apply(combine='mean'), or Apply(overlap='allow') when the writes are meant to add up")

    def _up(self, p, t, sync_f, acc_f, deltas, exact, end):
        """Phase 1 on one partition: its touched masters (kept for phase 2) and the
        messages of its touched mirrors to their masters' parts: their ids, then their
        values (slack 0) or changes per sync field, then their accumulators (one array
        when they are of one type, tux2.layout.same_type_rows, else one per field)."""
        tl = p.types[t]
        masters, rows, lids, starts = split_touched(tl.touched_indices(), tl.n_master, tl.mirror_master_part,
                                                    tl.mirror_master_lid, self.P)
        tl.pending_masters.append(masters)
        tl.reset_touched()
        out, nbytes = {}, 0
        if len(rows) == 0:
            return p.rank, masters, out, nbytes
        cols = []
        if deltas and exact:
            # slack 0: the master holds this snapshot too, so the values themselves go up
            # (the records' sync bytes), and a replica that alone changed a vertex sets it
            cur = gather_rows(sync_block(tl.data, end), rows)
            scatter_rows(sync_block(tl.snapshot, end), rows, cur)    # later changes count from here
            cols.append(cur)
        elif deltas:
            for f in sync_f:
                cur = tl.data[f][rows]
                cols.append(cur - tl.snapshot[f][rows])
                tl.snapshot[f][rows] = cur
        if acc_f and tl.acc_rows is not None:
            cols.append(gather_rows(tl.acc_rows, rows))
            zero_rows(tl.acc_rows, rows)
        else:
            cols += [tl.accum[f][rows] for f in acc_f]
            for f in acc_f:
                tl.accum[f][rows] = 0
        for q, a, b in _groups(starts):
            out[(p.rank, q)] = [_compact(lids[a:b])] + [c[a:b] for c in cols]
            if self._remote(p.rank, q):
                nbytes += (b - a) * self._row_bytes(t, deltas)
        return p.rank, masters, out, nbytes

    def _row_bytes(self, t, deltas):
        vt = self.program.types[t]
        acc_f = vt.accum_fields if vt.accum_dtype.names != ("_",) else ()
        return self._field_bytes(vt.dtype, vt.sync_fields) * deltas + self._field_bytes(vt.accum_dtype, acc_f)

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
        """Phase 2 on every partition (in the engine's threads), then the values go down."""
        down = {}
        work = sum(len(m[0]) for m in inbox.values()) + sum(
            len(x) for p in self.parts for x in p.types[rnd["t"]].pending_masters)
        for msgs, nbytes in self._each_part(lambda p: self._masters(rnd, p, inbox), self.parts, work):
            down.update(msgs)
            self.min_bytes += nbytes
        self._comm(self.transport.send, rnd["clock"], rnd["down"], down)

    def _masters(self, rnd, p, inbox):
        """Phase 2 on one partition: combine the replicas' changes at its masters, run
        the Apply UDF, and the messages of new values to their mirrors."""
        s, t, sync_f, acc_f, repl, deltas = (rnd["stage"], rnd["t"], rnd["sync"], rnd["acc"], rnd["repl"],
                                             rnd["deltas"])
        down, nbytes = {}, 0
        kernel = self._kernels.get(id(s))
        tl = p.types[t]
        pend = tl.pending_masters
        tl.pending_masters = []
        own = (pend[0] if len(pend) == 1 else np.concatenate(pend)) if pend else _EMPTY_IDX
        srcs = [src for (src, dst) in inbox if dst == p.rank]
        msgs = [inbox[(src, p.rank)] for src in srcs]
        idx_in = np.concatenate([m[0] for m in msgs]) if msgs else _EMPTY_IDX
        if not ids_within(idx_in, 0, tl.n_master):
            raise SchemaError(f"Apply message for partition {p.rank} names a vertex that is not a master there")
        if len(own) == 0 and len(idx_in) == 0:
            return down, nbytes
        if tl.scratch is None:
            tl.scratch = (np.zeros(tl.n_master, np.bool_), np.empty(tl.n_master, np.int64))
        # sorted union and each message's positions in it, without sorting the messages
        M, pos_in, cnt = union_positions(tl.n_master, own, idx_in, *tl.scratch)
        if msgs:
            # each message names a master at most once: plain fancy-index adds, message by message
            pos = _pieces(pos_in, msgs)
            if deltas:
                self._combine_sync(rnd, p, tl, M, pos, msgs, cnt)
            off = 1 + ((1 if rnd["exact"] else len(sync_f)) if deltas else 0)
            block = tl.acc_rows if acc_f else None
            if block is not None:
                for q, m in zip(pos, msgs):
                    if len(m) != off + 1 or m[off].shape != (len(q), block.shape[1]) or m[off].dtype != block.dtype:
                        raise SchemaError(f"Apply message for partition {p.rank} has accumulators of the wrong "
                                          "size or type")
                if s.combine == "sum":
                    for q, m in zip(pos, msgs):
                        add_rows(block, M, q, m[off])
                    acc_f = ()                  # added
                else:
                    msgs = [m[:off] + _fields(m[off], tl.accum.dtype, acc_f) for m in msgs]
            for k, f in enumerate(acc_f):
                acc = tl.accum[f][M]
                for q, m in zip(pos, msgs):
                    acc[q] += m[off + k]
                if s.combine == "mean":
                    acc = acc / cnt.reshape((-1,) + (1,) * (acc.ndim - 1))
                tl.accum[f][M] = acc
        if kernel is not None:
            kernel(M, view(tl.data), view(tl.accum), view(p.ctx))
        if rnd["acc"] and tl.acc_rows is not None:
            zero_rows(tl.acc_rows, M)
        else:
            for f in rnd["acc"]:
                tl.accum[f][M] = 0
        if repl:
            data = sync_block(tl.data, rnd["end"])
            if rnd["snap"]:
                copy_rows(sync_block(tl.snapshot, rnd["end"]), data, M)
            if not (rnd["exact"] and deltas and kernel is None and s.combine == "sum" and msgs):
                dlid, vals, starts = fanout_rows(M, tl.mm_ptr, tl.mm_part, tl.mm_lid, self.P, data)
                for q, a, b in _groups(starts):
                    down[(p.rank, q)] = [_compact(dlid[a:b]), vals[a:b]]
                    if self._remote(p.rank, q):
                        nbytes += (b - a) * self._field_bytes(self.program.types[t].dtype, sync_f)
                return down, nbytes
            # a mirror that alone changed a vertex already holds the master's new value
            rows, dlid, starts = mirror_fanout(M, tl.mm_ptr, tl.mm_part, tl.mm_lid, self.P)
            came = self._came.get((p.rank, t))
            if came is None:
                came = self._came[(p.rank, t)] = np.full(tl.n_master, -1, np.int32)
            for src, q in zip(srcs, pos):
                came[M[q[cnt[q] == 1]]] = src
            for q, a, b in _groups(starts):
                r, d = rows[a:b], dlid[a:b]
                keep = came[r] != q
                r, d = r[keep], d[keep]
                if len(r) == 0:
                    continue
                down[(p.rank, q)] = [_compact(d), gather_rows(data, r)]
                if self._remote(p.rank, q):
                    nbytes += len(r) * self._field_bytes(self.program.types[t].dtype, sync_f)
            came[M] = -1
        return down, nbytes

    def _combine_sync(self, rnd, p, tl, M, pos, msgs, cnt):
        """The masters' new sync values from their own and their mirrors' changes since
        the last sync: snapshot + the sum (or mean) of the changes. Messages carry the
        mirrors' values (slack 0) or their changes (slack > 0). A vertex that one
        replica alone changed takes that replica's value exactly, so a conflict-free
        schedule gives the sequential result bit for bit."""
        s, exact, end = rnd["stage"], rnd["exact"], rnd["end"]
        sync_f = rnd["sync"]
        if exact:
            for m in msgs:
                if m[1].shape != (len(m[0]), end):
                    raise SchemaError(f"Apply message for partition {p.rank} has records of the wrong size")
        if s.combine == "sum" and cnt.max() <= 1:
            # one replica touched each vertex (e.g. a stratum): its value, or its change, is the result
            if exact:
                data = sync_block(tl.data, end)
                for q, m in zip(pos, msgs):
                    scatter_rows(data, M[q], m[1])
                return
            for k, f in enumerate(sync_f):
                col = tl.data[f]
                for q, m in zip(pos, msgs):
                    col[M[q]] += m[1 + k]
            return
        if exact and s.combine == "sum" and s.overlap != "error":
            base = _uniform_base(tl.snapshot.dtype, sync_f, end)
            if base is not None:            # one pass per message in a kernel, on the rows as numbers
                cur, snap = _typed(sync_block(tl.data, end), base), _typed(sync_block(tl.snapshot, end), base)
                for q, m in zip(pos, msgs):
                    combine_changes(cur, snap, M, q, _typed(m[1], base))
                return
        vals = [_records(m[1], tl.snapshot.dtype) if exact else None for m in msgs]
        snaps = [tl.snapshot[f][M] for f in sync_f]
        changes = [[(v[f] - snap[q]) if exact else m[1 + k] for q, m, v in zip(pos, msgs, vals)]
                   for k, (f, snap) in enumerate(zip(sync_f, snaps))]
        if s.combine == "sum" and s.overlap == "error":
            # writers: the master if this round's clock touched it and it changed (with slack, its
            # values may also hold later clocks' changes), plus each mirror whose change is not zero
            writers = np.zeros(len(M), np.int64)
            # (positions in M: with slack an earlier round may already have synced them)
            at = np.intersect1d(M, rnd["touched"][p.rank], assume_unique=True, return_indices=True)[1]
            writers[at] = np.any([_rows_changed(tl.data[f][M[at]] != snaps[k][at]) for k, f in enumerate(sync_f)],
                                 axis=0)
            for j, q in enumerate(pos):
                writers[q] += np.any([_rows_changed(changes[k][j] != 0) for k in range(len(sync_f))], axis=0)
            hit = writers > 1
            if hit.any():
                raise self._overlap(rnd["clock"], s, rnd["t"], int(hit.sum()), int(writers.max()),
                                    f"partition {p.rank} masters")
        for k, f in enumerate(sync_f):
            snap = snaps[k]
            if s.combine == "mean":
                tot = tl.data[f][M] - snap
                for q, d in zip(pos, changes[k]):
                    tot[q] += d
                tl.data[f][M] = snap + tot / cnt.reshape((-1,) + (1,) * (tot.ndim - 1))
                continue
            cur = tl.data[f][M]
            for q, m, v, d in zip(pos, msgs, vals, changes[k]):
                if exact:           # the first replica that changed an element sets it, later ones add
                    c = cur[q]
                    cur[q] = np.where(c != snap[q], c + d, v[f])
                else:
                    cur[q] += d
            tl.data[f][M] = cur

    def _apply_mirrors(self, rnd, inbox):
        """Phase 3: mirrors take their masters' values, keeping local changes not yet
        sent up (each mirror is in one message, so messages run in the engine's threads)."""
        self._each_part(lambda item: self._mirrors(rnd, *item), list(inbox.items()),
                        sum(len(m[0]) for m in inbox.values()))

    def _mirrors(self, rnd, key, msg):
        t, sync_f = rnd["t"], rnd["sync"]
        dst = key[1]
        tl = self._part[dst].types[t]
        lid = msg[0]
        if not ids_within(lid, tl.n_master, tl.n_local):
            raise SchemaError(f"Apply message for partition {dst} names a vertex that is not a mirror there")
        end = rnd["end"]
        if msg[1].shape != (len(lid), end):
            raise SchemaError(f"Apply message for partition {dst} has records of the wrong size")
        if not rnd["deltas"] or rnd["exact"]:
            # no Exchange writes these fields, or (slack 0) every change went up in this round
            scatter_rows(sync_block(tl.data, end), lid, msg[1])
            if rnd["snap"]:
                scatter_rows(sync_block(tl.snapshot, end), lid, msg[1])
            return
        vals = _records(msg[1], tl.snapshot.dtype)
        for f in sync_f:                   # keep the local changes not yet sent up
            unsent = tl.data[f][lid] - tl.snapshot[f][lid]
            tl.data[f][lid] = vals[f] + unsent
            tl.snapshot[f][lid] = vals[f]

    def flush(self):
        """Complete every pending Apply round (a barrier when slack > 0)."""
        self._progress(float("inf"))
