"""The layout builder as it was before the counting-sort kernels (np.unique,
lexsort and searchsorted over the edge arrays): the reference tux2.layout's
build_partitions must reproduce exactly."""
import numpy as np

from tux2.layout import Partition, TypeLayout


def _lookup(gid, ids):
    """Local indices of global ids that have a replica here."""
    order = np.argsort(gid, kind="stable")
    pos = np.searchsorted(gid[order], ids)
    return order[pos]


def _replicas(ids, edge_part, master, n, parts):
    """Per part: (masters sorted by gid, mirrors sorted by gid)."""
    key = np.unique(edge_part.astype(np.int64) * n + ids)
    rep_part, rep_id = key // n, key % n
    is_mirror = master[rep_id] != rep_part
    mir_part, mir_id = rep_part[is_mirror], rep_id[is_mirror]
    morder = np.lexsort((np.arange(n), master))
    m_counts = np.bincount(master, minlength=parts)
    m_start = np.concatenate([[0], np.cumsum(m_counts)])
    r_counts = np.bincount(mir_part, minlength=parts)
    r_start = np.concatenate([[0], np.cumsum(r_counts)])
    masters = [morder[m_start[p]:m_start[p + 1]] for p in range(parts)]
    mirrors = [mir_id[r_start[p]:r_start[p + 1]] for p in range(parts)]
    # master local index of every vertex at its master part
    master_lid = np.empty(n, np.int64)
    master_lid[morder] = np.arange(n) - m_start[master[morder]]
    return masters, mirrors, master_lid


def build_partitions_naive(program, graph, assignment, vertex_data, edge_data, context, only=None, share=None):
    """Lay out the partitions ``only`` (default: all) of ``graph`` under ``assignment``.

    ``graph`` holds the edges this process has (all of them, or a worker's shard:
    then ``graph.eid`` gives their global positions) and ``assignment`` their parts
    and every vertex's master. ``vertex_data`` are the two global initial arrays
    (indexed by global id), ``edge_data`` the records of the edges held here; every
    replica starts with its vertex's global value. ``share(t, {q: records})``, when
    given, delivers mirror records (master lid, mirror part, mirror lid) to the
    workers owning master part q and returns those for this worker's parts.
    """
    parts = assignment.parts
    only = list(range(parts)) if only is None else list(only)
    ends = (graph.src, graph.dst)
    orders = program.orders()
    per_type = []
    for t, vtype in enumerate(program.types):
        n = graph.n[t]
        master_t = assignment.master[t]
        masters, mirrors, master_lid = _replicas(ends[t], assignment.edge_part, master_t.astype(np.int64), n, parts)
        # a shard sees only its own mirrors: whether the type is replicated anywhere comes with it
        replicated = bool(graph.replicated[t]) if share is not None else any(len(m) for m in mirrors)
        # every mirror known here: (its master part, master lid, its part, its lid)
        mp = np.concatenate([master_t[m].astype(np.int32) for m in mirrors])
        mlid = np.concatenate([master_lid[m] for m in mirrors])
        rpart = np.concatenate([np.full(len(mirrors[p]), p, np.int32) for p in range(parts)])
        rlid = np.concatenate([np.arange(len(masters[p]), len(masters[p]) + len(mirrors[p]), dtype=np.int64)
                               for p in range(parts)])
        if share is not None:
            out = {}
            for q in np.unique(mp).tolist():
                sel = mp == q
                out[q] = (mlid[sel], rpart[sel], rlid[sel])
            got = share(t, out)            # records whose master part is one of ours
            mp = np.concatenate([np.full(len(r[0]), q, np.int32) for q, r in got.items()] + [np.zeros(0, np.int32)])
            mlid = np.concatenate([r[0] for r in got.values()] + [np.zeros(0, np.int64)])
            rpart = np.concatenate([r[1] for r in got.values()] + [np.zeros(0, np.int32)])
            rlid = np.concatenate([r[2] for r in got.values()] + [np.zeros(0, np.int64)])
        layouts = {}
        for p in only:
            gid = np.concatenate([masters[p], mirrors[p]]).astype(np.int64)
            tl = TypeLayout(vtype, gid, len(masters[p]), vertex_data[t][gid].copy(), replicated)
            mg = mirrors[p]
            tl.mirror_master_part = master_t[mg].astype(np.int32)
            tl.mirror_master_lid = master_lid[mg]
            sel = np.flatnonzero(mp == p)
            o = sel[np.lexsort((rpart[sel], mlid[sel]))]
            tl.mm_ptr = np.concatenate([[0], np.cumsum(np.bincount(mlid[o], minlength=tl.n_master))]).astype(np.int64)
            tl.mm_part = rpart[o]
            tl.mm_lid = rlid[o]
            layouts[p] = tl
        per_type.append(layouts)

    geid = getattr(graph, "eid", None)
    out = []
    for p in only:
        local = np.flatnonzero(assignment.edge_part == p).astype(np.int64)
        eid = local if geid is None else geid[local]
        ta, tb = per_type[0][p], per_type[1][p]
        ea = _lookup(ta.gid, graph.src[local])
        eb = _lookup(tb.gid, graph.dst[local])
        keysets = {}
        for o in orders:
            if o is None:
                perm = np.argsort(eid, kind="stable")
                keysets[o] = (perm, eid[perm])
            else:
                g = ends[o][local]
                perm = np.lexsort((eid, g))
                keysets[o] = (perm, g[perm])
        # store edges physically in the primary order
        perm0 = keysets[orders[0]][0]
        ea, eb, eid_p = ea[perm0], eb[perm0], eid[perm0]
        edata = edge_data[local[perm0]].copy()
        inv = np.empty(len(eid), np.int64)
        inv[perm0] = np.arange(len(eid))
        ordmap = {}
        for o in orders:
            perm, keys = keysets[o]
            if o == orders[0]:
                ordmap[o] = (np.zeros(0, np.int64), keys)
            else:
                ordmap[o] = (inv[perm], keys)
        out.append(Partition(p, [ta, tb], ea, eb, eid_p, edata, ordmap, context.copy()))
    return out
