"""Distributed ingress (paper §3, §5): no process ever holds the whole graph.

Every worker reads its byte range of the input, learns the global facts by small
collectives (edge counts, id ranges, the rating mean, vertex degrees — all
vertex-sized or smaller), places its edges with the partitioning strategy and
ships each edge to the worker owning its partition. Masters come from the
vertex hash, so every worker knows every master without asking; mirrors
register with their masters so the routing arrays can be built.

Global edge order (mini-batches are ranges of it), the same as the
single-process CLI builds: ``input`` = file order of the training edges;
``blocked`` = tiles in a seeded shuffled order, inside a tile file order (or,
when an epoch is a single clock, sorted by the larger side as LibMF does — the
order then only matters inside each partition); ``strata`` = DSGD's strata
(tux2.graph.stratified_order), computed from the global degrees: a tile's edges
all land on the worker owning its row block, which sorts them.
"""
import math

import numpy as np

from tux2 import partitioning
from tux2.errors import InputError, PartitionError, SchemaError
from tux2.graph import strata_tiles
from tux2.io import check_matrix_market, edge_format, id_space, no_edges, read_edge_range, read_head, resolve_base
from tux2.loaders import NO_RATINGS, IdMap, columns_like, deviations, load_edges, mark_unknown, numbered
from tux2.partitioning import Assignment, EdgeView
from tux2.partitioning.hashing import Hasher
from tux2.tables import refuse_samples_table

# strategies whose placement needs only an edge, its endpoints' global degrees and hashes
LOCAL_STRATEGIES = ("random", "grid", "dbh", "hybrid", "bicut", "greedy", "hdrf", "stratified")


SPLIT_SEED = 0      # --test-fraction holds out the same edges whatever --seed: seeds compare on one test set


def test_mask(eid, fraction, seed=SPLIT_SEED, chunk=1 << 20):
    """Held-out edges: a hash of the global edge id (an array, or a ``range``), so any
    worker can decide alone. Hashed ``chunk`` ids at a time: no temporaries the size
    of the edges."""
    out = np.zeros(len(eid), bool)
    if fraction <= 0:
        return out
    hasher = Hasher("uniform", seed=seed + 7919)
    for lo in range(0, len(eid), chunk):
        h = hasher.vertex(np.asarray(eid[lo:lo + chunk], np.int64))
        out[lo:lo + chunk] = h.astype(np.float64) / 2.0 ** 32 < fraction
    return out


def tile_rank(src, dst, n_src, n_dst, blocks, seed):
    """Rank of each edge's (src block, dst block) tile in the seeded tile order
    (the same draws as tux2.graph.blocked_order)."""
    rng = np.random.default_rng(seed)
    bs = (src * blocks // max(n_src, 1)).astype(np.int64)
    bd = (dst * blocks // max(n_dst, 1)).astype(np.int64)
    return rng.permutation(blocks * blocks)[bs * blocks + bd]


class Shard:
    """This worker's share of a graph (what the Engine accepts instead of a
    BipartiteGraph): its edges, their global positions, the global sizes."""

    def __init__(self, src, dst, values, eid, part, n_src, n_dst, num_edges, type_names, replicated, share,
                 stats, strata=None, tiles=None):
        self.src, self.dst, self.values, self.eid, self.part = src, dst, values, eid, part
        self.n_src, self.n_dst = int(n_src), int(n_dst)
        self.total_edges = int(num_edges)
        self.type_names = tuple(type_names)
        self.replicated = replicated
        self.share = share
        self.stats = stats
        self.strata = strata            # where each stratum starts in the global order (order "strata")
        self.tiles = tiles              # where each tile of the strata starts
        self.ids = (None, None)         # id maps (1 … n of a 1-based file), as BipartiteGraph.ids
        self.degrees = None             # per type: its training edges on every worker (0: an unknown id)
        self.base = 0
        self.layout = None              # the file's tux2.io.EdgeFormat
        self.source = None              # the file read

    @property
    def n(self):
        return (self.n_src, self.n_dst)

    @property
    def num_edges(self):
        return self.total_edges


def _rows(transport, tag, arr):
    """Every worker's ``arr`` stacked in rank order."""
    return np.stack([a[0] for a in transport.allgather(tag, [arr])])


def _sum(transport, tag, arr):
    return _rows(transport, tag, arr).sum(axis=0)


def load(transport, path, partitions, partitioner="bicut", seed=0, test_path=None, test_fraction=0.1,
         order="blocked", single_clock=True, blocks=8, type_names=("user", "item"), partitioner_options=None,
         duplicates="keep", base="auto", columns=None, unknown="baseline"):
    """Read, split, order, place and shuffle this worker's share of ``path``.
    ``duplicates``: "keep", or "error" (every pair is sent to one checker by its hash,
    and a repeated one stops the run naming both lines). ``base``, ``columns``: as
    tux2.loaders.load_edges (auto decides on every worker's lowest ids); ``unknown``:
    test ratings whose user or item has no training edge (load_edges' policies).

    Returns (shard, assignment, spread, test) where ``test`` is the test graph on rank 0
    (None elsewhere) and ``spread`` the training ratings' {"mu": mean, "sd": standard
    deviation, "mad": mean |r − mean|, "far": largest |r − mean|, "range": [min, max]}."""
    if partitioner not in LOCAL_STRATEGIES:
        raise PartitionError(f"distributed ingress cannot use {partitioner!r}, which needs the whole graph; "
                             f"use one of {', '.join(LOCAL_STRATEGIES)}")
    if order not in ("input", "blocked", "strata"):
        raise PartitionError(f"distributed ingress supports --order input, blocked or strata, not {order!r}")
    if (order == "strata") != (partitioner == "stratified"):
        raise PartitionError("order 'strata' and the 'stratified' partitioner go together")
    rank, world = transport.rank, transport.world
    head = read_head(path, "edge list")
    refuse_samples_table(head, path, columns)
    s, d, v = read_edge_range(path, rank, world, base="auto", columns=columns)     # ids as written
    has_values = 0 if len(s) == 0 else (1 if v is not None else 2)
    big = np.iinfo(np.int64).max
    stats = np.array([len(s), s.max() + 1 if len(s) else 0, d.max() + 1 if len(d) else 0, has_values,
                      s.min() if len(s) else big, d.min() if len(d) else big], np.int64)
    allstats = _rows(transport, "ingress-stats", stats)
    # the id base, decided on the whole file as tux2.io.resolve_base does
    fmt = edge_format(head, path, columns)
    if allstats[:, 0].sum():            # (the largest ids as written: the maxima are 1 past them)
        check_matrix_market(fmt, path, int(allstats[:, 0].sum()), *(int(allstats[:, c].max()) - 1 for c in (1, 2)))
    lows = allstats[:, 4:6].min(axis=0)
    base = resolve_base(base, fmt, lows[:1], lows[1:], path) if allstats[:, 0].sum() else 0
    if base:
        for name, low in zip(("src", "dst"), lows):
            if low < base:
                raise InputError(f"{name} id {low} is below the id base {base}", path=path)
        s -= base
        d -= base
        allstats[:, 1:3] = np.maximum(allstats[:, 1:3] - base, 0)
    kinds = set(allstats[:, 3].tolist()) - {0}
    if len(kinds) > 1:
        raise InputError("lines with and without a value column in one edge list", path=path)
    if kinds == {2}:
        raise InputError(NO_RATINGS, path=path)
    if v is None:           # a byte range without a data line (a small file, many workers)
        v = np.zeros(len(s), np.float64)
    total_read = int(allstats[:, 0].sum())
    if total_read == 0:
        raise no_edges(fmt, path)
    # ids that fill less than half of their range are numbered densely, as tux2.loaders.load_edges numbers them
    ids, sizes = [], []
    for side, a in enumerate((s, d)):
        n = int(allstats[:, 1 + side].max())
        if n > id_space(total_read):            # too far apart to count in an array: sorted
            kept = np.unique(np.concatenate([x[0] for x in transport.allgather(f"ingress-ids-{side}", [np.unique(a)])]))
            a[:] = np.searchsorted(kept, a)
            ids.append(IdMap(kept + base))
        else:
            present = _sum(transport, f"ingress-ids-{side}", (np.bincount(a, minlength=n) > 0).astype(np.int32)) > 0
            ids.append(numbered(a, base, present))
        sizes.append(len(ids[-1]) if ids[-1] is not None else n)
    ids, (n_src, n_dst) = tuple(ids), sizes
    eid = int(allstats[:rank, 0].sum()) + np.arange(len(s), dtype=np.int64)
    if duplicates == "error":
        _check_duplicates(transport, path, s, d, eid, n_dst, type_names, ids)
    elif duplicates != "keep":
        raise InputError(f"distributed ingress takes duplicates 'error' or 'keep', not {duplicates!r}", path=path)

    # train/test split by hash of the global edge id
    held = test_mask(eid, 0.0 if test_path else test_fraction)
    test_local = (s[held], d[held], v[held])
    s, d, v = s[~held], d[~held], v[~held]
    counts = _rows(transport, "ingress-train", np.array([len(s)], np.int64))[:, 0]
    n_train = int(counts.sum())
    if n_train == 0:                    # (every worker: the counts are all of theirs)
        raise InputError("no edges left to train on: the held-out test share took every one; a smaller "
                         "--test-fraction keeps some", path=path)
    pos = int(counts[:rank].sum()) + np.arange(len(s), dtype=np.int64)     # file order among training edges
    # the mean and spread of the ratings as they train (float32), the single process's: E[r²] − μ² lost the
    # spread to rounding (sd 6e-8, a rescaling by 7e-8, for ratings all 3.7; 90.5 for 91.1 with 1e9 + 64·stars)
    r = v.astype(np.float32).astype(np.float64)
    mu = float(_sum(transport, "ingress-mu", np.array([r.sum()]))[0] / max(n_train, 1))
    dev = _rows(transport, "ingress-sd", np.array(deviations(r, mu)))
    n = max(n_train, 1)
    spread = {"mu": mu, "sd": math.sqrt(float(dev[:, 0].sum()) / n), "mad": float(dev[:, 1].sum()) / n,
              "far": float(dev[:, 2].max()), "range": [float(dev[:, 3].min()), float(dev[:, 4].max())]}

    # global order
    if order in ("input", "strata"):       # strata: numbered below, once the degrees are known
        key = pos
    else:
        tr = tile_rank(s, d, n_src, n_dst, blocks, seed)
        if single_clock:
            key = pos            # ordered after the shuffle, where each partition's edges meet
        else:
            hist = np.bincount(tr, minlength=blocks * blocks).astype(np.int64)
            per_rank = _rows(transport, "ingress-tiles", hist)
            tile_start = np.concatenate([[0], np.cumsum(per_rank.sum(axis=0))[:-1]])
            before = per_rank[:rank].sum(axis=0)
            o = np.lexsort((pos, tr))
            rank_in_tile = np.empty(len(s), np.int64)
            sorted_tr = tr[o]
            first = np.searchsorted(sorted_tr, sorted_tr, side="left")
            rank_in_tile[o] = np.arange(len(s)) - first
            key = tile_start[tr] + before[tr] + rank_in_tile

    # placement with global degrees
    g = EdgeView(s, d, n_src, n_dst)
    deg_in = _sum(transport, "ingress-deg-in", np.bincount(g.t, minlength=g.n).astype(np.int64))
    deg_out = _sum(transport, "ingress-deg-out", np.bincount(g.s, minlength=g.n).astype(np.int64))
    g._deg["in"], g._deg["out"] = deg_in, deg_out
    strategy = partitioning.get(partitioner)
    hasher = Hasher("jenkins", seed)
    edge_part, master = strategy.core(g, int(partitions), hasher, **(partitioner_options or {}))
    edge_part = np.asarray(edge_part, np.int32)
    master = tuple(np.asarray(m, np.int32) for m in g.split(master))
    mir = np.array([bool(len(s)) and bool((edge_part != master[0][s]).any()),
                    bool(len(d)) and bool((edge_part != master[1][d]).any())], np.int64)
    replicated = tuple(bool(x) for x in _sum(transport, "ingress-replicated", mir))

    strata = tiles = None
    if order == "strata":
        blocks = int((partitioner_options or {}).get("blocks", 16))
        stratum, r = strata_tiles(g, blocks, seed)
        tile = stratum * blocks + r
        hist = _sum(transport, "ingress-strata", np.bincount(tile, minlength=blocks * blocks).astype(np.int64))
        tiles = np.r_[0, np.cumsum(hist)].astype(np.int64)
        strata = tiles[::blocks].copy()
        key = tile               # ranked inside each tile once its edges are together

    # ship every edge to the worker that owns its partition
    dest = edge_part % world
    out = {}
    for r in range(world):
        sel = dest == r
        out[(rank, r)] = [s[sel], d[sel], v[sel], key[sel], edge_part[sel]]
    inbox = transport.alltoall(-1, "ingress-edges", out)
    got = [inbox[(r, rank)] for r in range(world)]
    src, dst, val, gkey, part = (np.concatenate([m[i] for m in got]) for i in range(5))
    if order == "blocked" and single_clock:
        # one clock per epoch: only the order inside each partition matters; LibMF's
        # (tile, larger side, smaller side, file position), numbered uniquely across workers
        owned = _rows(transport, "ingress-owned", np.array([len(src)], np.int64))
        tr = tile_rank(src, dst, n_src, n_dst, blocks, seed)
        major, minor = (src, dst) if n_src >= n_dst else (dst, src)
        o = np.lexsort((gkey, minor, major, tr))
        gkey = np.empty(len(src), np.int64)
        gkey[o] = int(owned[:rank, 0].sum()) + np.arange(len(src))

    if order == "strata":
        # a tile's edges are all here (its row block is one partition): LibMF's sort inside it
        tile_start = np.concatenate([[0], np.cumsum(hist)[:-1]])
        major, minor = (src, dst) if n_src >= n_dst else (dst, src)
        o = np.lexsort((minor, major, gkey))
        sorted_tile = gkey[o]
        first = np.searchsorted(sorted_tile, sorted_tile, side="left")
        pos_global = tile_start[sorted_tile] + np.arange(len(src)) - first
        gkey = np.empty(len(src), np.int64)
        gkey[o] = pos_global

    def share(t, records):
        msgs = {(rank, r): [np.zeros(0, np.int64)] * 4 for r in range(world)}
        for q, (mlid, rpart, rlid) in records.items():
            r = q % world
            old = msgs[(rank, r)]
            msgs[(rank, r)] = [np.concatenate([old[0], np.full(len(mlid), q, np.int64)]),
                               np.concatenate([old[1], mlid]), np.concatenate([old[2], rpart.astype(np.int64)]),
                               np.concatenate([old[3], rlid])]
        box = transport.alltoall(-1, f"ingress-mirrors-{t}", msgs)
        mine = {}
        for r in range(world):
            qs, mlid, rpart, rlid = box[(r, rank)]
            for q in np.unique(qs).tolist():
                sel = qs == q
                prev = mine.get(q)
                rec = (mlid[sel], rpart[sel].astype(np.int32), rlid[sel])
                mine[q] = rec if prev is None else tuple(np.concatenate([a, b]) for a, b in zip(prev, rec))
        return mine

    # test edges: to rank 0, which evaluates; ids without training edges are unknown
    degrees = (deg_out[:n_src], deg_in[n_src:])
    known = tuple(d > 0 for d in degrees)
    test = None
    if test_path is None:
        box = transport.alltoall(-1, "ingress-test", {(rank, 0): list(test_local)})
        if rank == 0:
            parts = [box[(r, 0)] for r in range(world)]
            from tux2.graph import BipartiteGraph
            test = BipartiteGraph(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                                  np.concatenate([p[2] for p in parts]), n_src, n_dst, type_names, path, ids)
            test = mark_unknown(test, known, unknown)
    elif rank == 0:
        test = load_edges(test_path, type_names=type_names, id_maps=ids, known=known, unknown=unknown,
                          columns=columns_like(test_path, columns, fmt))
        if test.values is None:
            raise InputError("test file needs a rating column", path=test_path)
    stats = {"rank": rank, "read_edges": int(len(held)), "total_edges": total_read, "train_edges": n_train,
             "owned_edges": int(len(src))}
    shard = Shard(src, dst, val, gkey, part, n_src, n_dst, n_train, type_names, replicated, share, stats, strata, tiles)
    shard.ids, shard.degrees, shard.base, shard.layout, shard.source = ids, degrees, base, fmt, path
    assignment = Assignment(part, master, int(partitions), partitioner)
    return shard, assignment, spread, test


def _check_duplicates(transport, path, s, d, eid, n_dst, type_names, ids=(None, None)):
    """Each (src, dst) pair goes to worker hash(pair) % world with its line's edge id;
    a pair seen twice raises InputError naming both lines and the pair in the file's
    ids (``ids``: the id maps, as BipartiteGraph.ids)."""
    from tux2.io import edge_line
    from tux2.loaders import dedupe, pair_key
    rank, world = transport.rank, transport.world
    key = pair_key(s, d, n_dst)
    dest = ((key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(33)) % np.uint64(world)
    box = transport.alltoall(-1, "ingress-dups", {(rank, r): [s[dest == r], d[dest == r], eid[dest == r]]
                                                  for r in range(world)})
    got = [box[(r, rank)] for r in range(world)]
    cs, cd, ce = (np.concatenate([m[i] for m in got]) for i in range(3))
    o = np.argsort(ce, kind="stable")          # file order, so "first at" is the earlier line
    cs, cd, ce = cs[o], cd[o], ce[o]
    from tux2.graph import BipartiteGraph
    n_src = int(cs.max()) + 1 if len(cs) else 0
    g = BipartiteGraph(cs, cd, None, n_src, max(n_dst, int(cd.max()) + 1 if len(cd) else 0), type_names, path)
    g.ids = ids
    dedupe(g, "error", lambda i: (path, *edge_line(path, int(ce[i]))))


def check_program(program):
    if program.init_edges is not None or program.edge_values:
        raise SchemaError("programs with init_edges or edge_values cannot use distributed ingress yet "
                          "(edge initialisation is over the whole edge list, in one process)")
