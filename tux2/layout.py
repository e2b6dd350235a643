"""Array layout of one partition (paper §3, Fig. 2–3).

Per vertex type: one structured array of local replicas, masters first then
mirrors, each group sorted by global id; the global-id array; routing arrays
mirror → (master part, master local index) and, per master, the CSR list of
its mirrors. Edges: local endpoint indices and edge records, stored in the
program's primary enumeration order; other orders are permutations. No hash
tables anywhere.
"""
import numpy as np
from numba import njit

from tux2.compile import empty, gather_rows, group_by_part, is_sorted, place, place_shift, zeros
from tux2.config import cores
from tux2.errors import SchemaError
from tux2.schema import EMPTY


def same_type_rows(records):
    """``records`` as an (n, k) view of numbers, when all their fields are of one numeric
    type and fill the record (an Apply round moves and adds them in one piece); else None."""
    dt = records.dtype
    bases = {dt[f].base for f in dt.names}
    base = next(iter(bases))
    if len(bases) != 1 or base.kind not in "iuf" or sum(dt[f].itemsize for f in dt.names) != dt.itemsize:
        return None
    return records.view(base).reshape(len(records), dt.itemsize // base.itemsize)


class TypeLayout:
    """One vertex type on one partition."""

    def __init__(self, vtype, gid, n_master, data, replicated):
        self.vtype = vtype
        self.gid = gid                      # int64, local index → global id
        self.n_master = int(n_master)
        self.data = data                    # structured, len(gid)
        self.accum = np.zeros(len(gid), vtype.accum_dtype)
        self.acc_rows = same_type_rows(self.accum)  # the accumulators as (n, k) numbers, if one type
        self.snapshot = None                # sync fields at last sync (replicated types only)
        if replicated and vtype.sync_dtype is not None:
            self.snapshot = np.zeros(len(gid), vtype.sync_dtype)
            for f in vtype.sync_fields:
                self.snapshot[f] = data[f]
        # touched-since-last-Apply tracking
        self.stamp = np.full(len(gid), -1, np.int64)
        self.epoch = 0
        self.touched = np.empty(len(gid), np.int64)
        self.n_touched = 0
        self.pending_masters = []           # touched masters not yet through an Apply round
        self.scratch = None                 # (mark, where) of an Apply round's masters, made on first use
        # routing (filled by build_partitions)
        self.mirror_master_part = np.zeros(0, np.int32)
        self.mirror_master_lid = np.zeros(0, np.int64)
        self.mm_ptr = np.zeros(self.n_master + 1, np.int64)
        self.mm_part = np.zeros(0, np.int32)
        self.mm_lid = np.zeros(0, np.int64)

    @property
    def n_local(self):
        return len(self.gid)

    @property
    def n_mirror(self):
        return len(self.gid) - self.n_master

    def touched_indices(self):
        return self.touched[: self.n_touched]

    def reset_touched(self):
        self.epoch += 1
        self.n_touched = 0


class Partition:
    """Everything one partition holds."""

    def __init__(self, rank, types, ea, eb, eid, edata, orders, ctx):
        self.rank = rank
        self.types = types        # [TypeLayout, TypeLayout]
        self.ea, self.eb = ea, eb  # local endpoint indices, physical edge order
        self._eid = eid           # global edge id per local edge (or an _Order making it)
        self.edata = edata
        self.orders = orders      # order → (perm, sorted keys)
        self.ctx = ctx

    @property
    def eid(self):
        """Global edge id per local edge; made on first use when the layout did not
        need it (one part stored by vertex: only results and checkpoints ask)."""
        if isinstance(self._eid, _Order):
            self._eid = self._eid()
        return self._eid

    @property
    def n_edges(self):
        return len(self.ea)

    def edge_range(self, order, lo=None, hi=None):
        """Positions [a, b) in ``order`` of the edges whose key is in [lo, hi)."""
        perm, keys = self.orders[order]
        if lo is None:
            return 0, len(keys), perm
        a, b = np.searchsorted(keys, (lo, hi)).tolist()
        return a, b, perm


# ---------------------------------------------------------------- kernels
# Every step is a counting sort or a scan: O(edges + vertices + mirrors), no
# hashing, no comparison sort over edges. The keys are small integers (parts,
# vertex ids, local ranks), so a stable counting sort (group_by_part) orders them.

@njit(cache=True, nogil=True)
def _mirror_pairs(ids, local, starts, master, n):
    """Per part, in part order: the vertices with an edge there whose master is
    elsewhere, each once (first-seen order). ``local[starts[p]:starts[p+1]]`` are
    part p's edge positions (``local`` empty: one part holding every edge)."""
    parts = starts.shape[0] - 1
    stamp = np.full(n, -1, np.int32)
    count = 0
    for sweep in range(2):             # count, then fill
        if sweep == 1:
            rp = np.empty(count, np.int32)
            rv = np.empty(count, np.int64)
            stamp[:] = -1
            count = 0
        for p in range(parts):
            for k in range(starts[p], starts[p + 1]):
                v = ids[k] if local.shape[0] == 0 else ids[local[k]]
                if stamp[v] != p and master[v] != p:
                    stamp[v] = p
                    if sweep == 1:
                        rp[count] = p
                        rv[count] = v
                    count += 1
    return rp, rv


@njit(cache=True, nogil=True)
def _local_index(ids, local, lo, hi, where, out):
    """out[k − lo] = where[ids[local[k]]] for k in [lo, hi): the local index of each
    edge endpoint (``where`` holds the part's global → local map)."""
    for k in range(lo, hi):
        out[k - lo] = where[ids[k] if local.shape[0] == 0 else ids[local[k]]]


@njit(cache=True, nogil=True)
def _rank_by_gid(gid, n_master):
    """Position of each local vertex in gid order (masters and mirrors are each
    sorted; one merge)."""
    n = gid.shape[0]
    rank = np.empty(n, np.int64)
    i, j, k = 0, n_master, 0
    while i < n_master or j < n:
        if j >= n or (i < n_master and gid[i] < gid[j]):
            rank[i] = k
            i += 1
        else:
            rank[j] = k
            j += 1
        k += 1
    return rank


@njit(cache=True, nogil=True)
def _order_by_vertex(lids, by_eid, rank, gid):
    """Stable counting sort of a part's edges by their endpoint's global id
    (ties in global edge order): (perm, keys = the endpoint's global id)."""
    m = lids.shape[0]
    n = rank.shape[0]
    start = np.zeros(n + 1, np.int64)
    for e in range(m):
        start[rank[lids[e]] + 1] += 1
    for r in range(n):
        start[r + 1] += start[r]
    perm = np.empty(m, np.int64)
    keys = np.empty(m, np.int64)
    for t in range(m):
        e = t if by_eid.shape[0] == 0 else by_eid[t]
        r = rank[lids[e]]
        perm[start[r]] = e
        keys[start[r]] = gid[lids[e]]
        start[r] += 1
    return perm, keys


@njit(cache=True, nogil=True)
def _vertex_starts(key, n):
    """The counting pass of a one-part transpose (edges stably by ``key``, a CSR ->
    CSC): where each key's edges start (n + 1 entries, consumed by the scatter,
    compile.place, which also writes the sorted keys)."""
    start = np.zeros(n + 1, np.int64)
    for e in range(key.shape[0]):
        start[key[e] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    return start


@njit(cache=True, nogil=True)
def vertex_runs(keys, perm, ends):
    """The runs of an order by vertex (``keys`` sorted, ``perm`` its positions or empty):
    per run its key, its first position (and the end after the last run) and the local
    index of its vertex (``ends``: the edges' ends of that type)."""
    m = keys.shape[0]
    n = 0
    for k in range(m):
        if k == 0 or keys[k] != keys[k - 1]:
            n += 1
    run_key = np.empty(n, np.int64)
    run_start = np.empty(n + 1, np.int64)
    run_lid = np.empty(n, np.int64)
    r = 0
    for k in range(m):
        if k == 0 or keys[k] != keys[k - 1]:
            run_key[r] = keys[k]
            run_start[r] = k
            run_lid[r] = ends[k] if perm.shape[0] == 0 else ends[perm[k]]
            r += 1
    run_start[n] = m
    return run_key, run_start, run_lid


class EdgeColumns:
    """Initial edge fields as columns in global edge order ({field: array, or a
    scalar}; other fields 0), in place of a record array: the one-part transpose
    writes whole records from them in one pass, so no record array in global order
    is made (BlockPG's 12.7 M edges of 24 bytes: ~0.2 s and 305 MB). ``records()``
    makes that array for every other layout."""

    def __init__(self, n, dtype, columns):
        self.n, self.dtype = int(n), np.dtype(dtype)
        self.columns = {}
        for f, c in columns.items():
            if f not in (self.dtype.names or ()):
                raise SchemaError(f"edge value {f!r} is not an edge field of the program "
                                  f"(fields: {list(self.dtype.names or ())})")
            want = self.dtype[f]
            c = np.asarray(c)
            if c.ndim == 0 and want.shape == ():
                c = c.astype(want).reshape(1)               # a constant
            elif c.shape != (self.n, *want.shape):
                raise SchemaError(f"edge value {f!r} has shape {c.shape}, the edges need {(self.n, *want.shape)}")
            self.columns[f] = np.ascontiguousarray(c, want.base)
        # one pass writes each field by name: plain numbers only (no sub-arrays)
        self.placeable = all(self.dtype[f].shape == () and self.dtype[f].kind in "iuf" for f in self.dtype.names or ())

    @property
    def shape(self):
        return (self.n,)

    def __len__(self):
        return self.n

    def records(self):
        """The record array in global edge order (numba's memory: see compile.zeros)."""
        out = zeros(self.n, self.dtype)
        for f, c in self.columns.items():
            out[f] = c if len(c) == self.n else c[0]
        return out

    def place(self, key, start, shift, other, like, key_like, rows_out):
        """The one-part transpose's scatter (compile.place) from the columns."""
        return place(self.dtype, self.columns, key, start, shift, other, like, key_like, rows_out, cores())


def _words(records):
    """A contiguous structured array as a 2-D array of its records' words (the widest
    unsigned integer dividing the record size): whole records move as a few words."""
    size = records.dtype.itemsize
    w = next(b for b in (8, 4, 2, 1) if size % b == 0)
    return np.ascontiguousarray(records).view(np.dtype(f"u{w}")).reshape(len(records), size // w)


def _take(records, idx):
    """records[idx] for a structured array, as whole rows of words (numpy's take of
    void records is ~5× slower, its field-by-field fancy indexing slower still)."""
    return gather_rows(_words(records), idx).view(records.dtype).reshape(len(idx))


@njit(cache=True, nogil=True)
def _permute(perm, ea, eb, eid, pos):
    """ea, eb, eid and pos in the order ``perm``, in one pass."""
    m = perm.shape[0]
    oa, ob, oe, op = np.empty(m, ea.dtype), np.empty(m, eb.dtype), np.empty(m, eid.dtype), np.empty(m, pos.dtype)
    for k in range(m):
        e = perm[k]
        oa[k] = ea[e]
        ob[k] = eb[e]
        oe[k] = eid[e]
        op[k] = pos[e]
    return oa, ob, oe, op


_NONE = np.zeros(0, np.int64)


class _Order:
    """The stable order of the edges by ``key`` (a counting sort), made when called."""

    def __init__(self, key, n):
        self.key, self.n = key, n

    def __call__(self):
        return group_by_part(self.key, max(self.n, 1))[0]


def _routing(t, vtype, ids, local, starts, master_t, n, parts, only, share, replicated, vdata):
    """TypeLayouts of type t for the parts ``only``: masters (sorted by gid), mirrors
    (sorted by gid), mirror → master routing and each master's mirror list."""
    master64 = master_t.astype(np.int64, copy=False)
    if parts == 1:                                        # one part: every vertex is its master, no mirrors
        morder = master_lid = np.arange(n, dtype=np.int64)
        mstart = np.array([0, n], np.int64)
        rp, rv = np.zeros(0, np.int32), _NONE
    else:
        morder, mstart = group_by_part(master64, parts)  # vertices by master part, ascending ids
        master_lid = np.empty(n, np.int64)
        master_lid[morder] = np.arange(n, dtype=np.int64) - mstart[master64[morder]]
        rp, rv = _mirror_pairs(ids, local, starts, master64, n)
    n_master = np.diff(mstart)
    by_v, _ = group_by_part(rv, max(n, 1))                # (vertex, part) order
    by_p, rstart = group_by_part(rp[by_v], parts)          # (part, vertex) order
    by_pv = by_v[by_p]
    mir_v = rv[by_pv]                                     # mirrors of part p: mir_v[rstart[p]:rstart[p+1]]
    if replicated is None:
        replicated = bool(len(rv))
    # every mirror known here, in (vertex, part) order: master part, master lid, part, lid
    rlid = np.empty(len(rv), np.int64)
    rlid[by_pv] = n_master[rp[by_pv]] + np.arange(len(rv), dtype=np.int64) - rstart[rp[by_pv]]
    mv = rv[by_v]
    mp, mlid, rpart, rlid = master_t[mv].astype(np.int32), master_lid[mv], rp[by_v], rlid[by_v]
    if share is not None:
        out = {}
        grp, gstart = group_by_part(mp, parts)
        for q in np.flatnonzero(np.diff(gstart)).tolist():
            sel = grp[gstart[q]:gstart[q + 1]]
            out[q] = (mlid[sel], rpart[sel], rlid[sel])
        got = share(t, out)                               # records whose master part is one of ours
        mp = np.concatenate([np.full(len(r[0]), q, np.int32) for q, r in got.items()] + [np.zeros(0, np.int32)])
        mlid = np.concatenate([r[0] for r in got.values()] + [_NONE])
        rpart = np.concatenate([r[1] for r in got.values()] + [np.zeros(0, np.int32)])
        rlid = np.concatenate([r[2] for r in got.values()] + [_NONE])
        o1, _ = group_by_part(rpart, parts)               # arrival order is arbitrary: (mlid, part) order
        o2, _ = group_by_part(mlid[o1], max(int(n_master.max(initial=0)), 1))
        o = o1[o2]
        mp, mlid, rpart, rlid = mp[o], mlid[o], rpart[o], rlid[o]
    by_q, qstart = group_by_part(mp, parts)              # stable: (mlid, part) order inside each master part
    layouts = {}
    for p in only:
        masters = morder[mstart[p]:mstart[p + 1]]
        mirrors = mir_v[rstart[p]:rstart[p + 1]]
        if parts == 1:
            gid, data = masters, vdata             # every vertex, in id order: the arrays as they are
        else:
            gid = np.concatenate([masters, mirrors])
            data = _take(vdata, gid)
        tl = TypeLayout(vtype, gid, len(masters), data, replicated)
        tl.mirror_master_part = master_t[mirrors].astype(np.int32)
        tl.mirror_master_lid = master_lid[mirrors]
        sel = by_q[qstart[p]:qstart[p + 1]]
        tl.mm_ptr = np.zeros(tl.n_master + 1, np.int64)
        if len(sel):
            np.cumsum(np.bincount(mlid[sel], minlength=tl.n_master), out=tl.mm_ptr[1:])
        tl.mm_part = rpart[sel]
        tl.mm_lid = rlid[sel]
        layouts[p] = tl
    return layouts


def build_partitions(program, graph, assignment, vertex_data, edge_data, context, only=None, share=None):
    """Lay out the partitions ``only`` (default: all) of ``graph`` under ``assignment``.

    ``graph`` holds the edges this process has (all of them, or a worker's shard:
    then ``graph.eid`` gives their global positions) and ``assignment`` their parts
    and every vertex's master. ``vertex_data`` are the two global initial arrays
    (indexed by global id; with one partition they become its arrays), ``edge_data``
    the records of the edges held here (with one partition in global edge order, the
    partition's own array) or their EdgeColumns; every replica starts with its vertex's global
    value. ``share(t, {q: records})``, when given, delivers mirror records (master
    lid, mirror part, mirror lid) to the workers owning master part q and returns
    those for this worker's parts.

    Counting sorts throughout: edges by part, vertices by master part, mirrors by
    (part, vertex), each part's edges by endpoint; O(edges + vertices + mirrors).
    """
    parts = assignment.parts
    only = list(range(parts)) if only is None else list(only)
    ends = (graph.src, graph.dst)
    orders = program.orders()
    m = len(graph.src)
    if parts == 1:
        local, starts = _NONE, np.array([0, m], np.int64)   # every edge, in place
    else:
        local, starts = group_by_part(np.asarray(assignment.edge_part), parts)
    per_type = []
    for t, vtype in enumerate(program.types):
        # a shard sees only its own mirrors: whether the type is replicated anywhere comes with it
        replicated = bool(graph.replicated[t]) if share is not None else None
        per_type.append(_routing(t, vtype, ends[t], local, starts, np.asarray(assignment.master[t]), graph.n[t],
                                 parts, only, share, replicated, vertex_data[t]))

    geid = getattr(graph, "eid", None)
    # per type: global id → local index on part p (one part: the global id itself)
    where = [np.empty(n, np.int64) for n in graph.n] if parts > 1 else None
    o0 = orders[0]
    # one part by vertex and no order needing edge ids: no arange of them (made on demand)
    bare = parts == 1 and geid is None and o0 is not None and None not in orders
    if isinstance(edge_data, EdgeColumns) and not (parts == 1 and geid is None and o0 is not None
                                                   and edge_data.placeable):
        edge_data = edge_data.records()                   # only the one-part transpose places columns
    out = []
    for p in only:
        lo, hi = int(starts[p]), int(starts[p + 1])
        if bare:
            pos = eid = None
        else:
            pos = np.arange(lo, hi, dtype=np.int64) if len(local) == 0 else local[lo:hi]
            eid = pos if geid is None else geid[pos]
        by_eid = _NONE if geid is None and len(local) == 0 else \
            _NONE if is_sorted(eid) else np.argsort(eid, kind="stable")
        if parts == 1:
            lids = [np.ascontiguousarray(a) for a in ends]   # the loaded id arrays themselves, no copy
        else:
            lids = []
            for t in (0, 1):
                tl = per_type[t][p]
                where[t][tl.gid] = np.arange(tl.n_local, dtype=np.int64)
                lid = np.empty(hi - lo, np.int64)
                _local_index(ends[t], local, lo, hi, where[t], lid)
                lids.append(lid)
        keysets = {}
        if parts == 1 and o0 is not None and len(by_eid) == 0:
            # stored by vertex, from global edge order: a transpose (a counting sort, one scatter)
            src_o = lids[1 - o0]
            like = np.zeros(0, np.int32 if graph.n[1 - o0] < 2**31 else src_o.dtype)
            edata = empty(hi - lo, edge_data.dtype)
            start = _vertex_starts(lids[o0], graph.n[o0])
            shift = place_shift(graph.n[o0], hi - lo)
            # the sorted keys are also the edges' ends of that type: 4 bytes where the ids fit
            key_like = np.zeros(0, np.int32 if graph.n[o0] < 2**31 else np.int64)
            if isinstance(edge_data, EdgeColumns) and edge_data.placeable:
                keys0, other = edge_data.place(lids[o0], start, shift, src_o, like, key_like, edata)
            else:
                keys0, other = place(edge_data.dtype, np.ascontiguousarray(edge_data), lids[o0], start, shift, src_o,
                                     like, key_like, edata, cores())
            ea, eb = (keys0, other) if o0 == 0 else (other, keys0)
            perm0 = _Order(lids[o0], graph.n[o0])
            eid_p = perm0 if geid is None else eid[perm0()]
        for o in orders:
            if parts == 1 and o0 is not None and len(by_eid) == 0 and o == o0:
                keysets[o] = (_NONE, keys0)                   # stored in this order
            elif o is None:
                keysets[o] = (by_eid, eid if len(by_eid) == 0 else eid[by_eid])
            else:
                tl = per_type[o][p]
                keysets[o] = _order_by_vertex(lids[o], by_eid, _rank_by_gid(tl.gid, tl.n_master), tl.gid)
        # store edges physically in the primary order (empty perm: as they are)
        if parts == 1 and o0 is not None and len(by_eid) == 0:
            pass                                          # done above
        elif len(keysets[o0][0]):
            perm0 = keysets[o0][0]
            ea, eb, eid_p, pos_p = _permute(perm0, lids[0], lids[1], eid, pos)
            edata = _take(edge_data, pos_p)
        else:
            perm0 = _NONE
            ea, eb, eid_p = lids[0], lids[1], eid
            edata = edge_data if len(local) == 0 else _take(edge_data, pos)   # one part, in order: as it is
        ordmap = {orders[0]: (_NONE, keysets[orders[0]][1])}
        if len(orders) > 1:
            perm0 = perm0() if isinstance(perm0, _Order) else perm0
            inv = np.arange(hi - lo, dtype=np.int64)         # storage position of each edge
            if len(perm0):
                inv[perm0] = inv.copy()
        for o in orders[1:]:
            perm, keys = keysets[o]
            ordmap[o] = (inv[perm] if len(perm) else inv, keys)
        out.append(Partition(p, [per_type[0][p], per_type[1][p]], ea, eb, eid_p, edata, ordmap, context.copy()))
    return out


def is_replicated(graph, assignment, t):
    """Whether any vertex of type t has a mirror under ``assignment``."""
    if assignment.parts == 1:
        return False
    ends = (graph.src, graph.dst)[t]
    return bool(len(ends)) and bool((assignment.edge_part != assignment.master[t][ends]).any())


def replication_factor(partitions, t):
    """λ for type t: replicas (masters and mirrors) per vertex."""
    reps = sum(p.types[t].n_local for p in partitions)
    n = sum(p.types[t].n_master for p in partitions)
    return reps / max(n, 1)


__all__ = ["EdgeColumns", "Partition", "TypeLayout", "build_partitions", "replication_factor", "EMPTY"]
