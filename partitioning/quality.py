"""Quality of a vertex-cut (reference/partitioning.md §0, §4.1).

For every vertex v: A(v) = parts holding one of its edges, R(v) = A(v) ∪ {m(v)}.
Replication factor λ = Σ|R(v)|/|V| counts master-only replicas (as PowerGraph and
PowerLyra do); λ without master-only replicas = Σ max(|A(v)|, 1)/|V| (as KaHIP
and Mt-KaHyPar count: 1 + vertex cut/|V|; an isolated vertex still has its master).
Balance is max/mean over parts, of edges and of masters.
"""
import numpy as np
from numba import njit

from tux2.partitioning.registry import EdgeView, check_input


@njit(nogil=True, cache=True)
def _replicas(s, t, edge_part, master, n, parts, a_cnt, r_cnt, mirrors):
    W = (parts + 63) // 64
    A = np.zeros((n, W), np.uint64)
    one = np.uint64(1)
    for e in range(s.shape[0]):
        p = edge_part[e]
        A[s[e], p >> 6] |= one << np.uint64(p & 63)
        A[t[e], p >> 6] |= one << np.uint64(p & 63)
    for v in range(n):
        a = 0
        for w in range(W):
            x = A[v, w]
            while x:
                x &= x - one
                a += 1
        a_cnt[v] = a
        m = master[v]
        has_m = (A[v, m >> 6] >> np.uint64(m & 63)) & one
        r_cnt[v] = a + (1 - has_m)
        for w in range(W):
            x = A[v, w]
            i = 0
            while x:
                if x & one:
                    q = w * 64 + i
                    if q != m:
                        mirrors[q] += 1
                x >>= one
                i += 1


def quality(assignment, src, dst, n_src, n_dst=None, seconds=None, type_names=None):
    """Report on ``assignment`` for the graph it was computed on, as a JSON-ready dict."""
    src, dst = check_input(src, dst, n_src, n_dst, assignment.parts, strict=False)
    g = EdgeView(src, dst, n_src, n_dst)
    p = assignment.parts
    master = np.concatenate(assignment.master).astype(np.int64) if g.n else np.zeros(0, np.int64)
    a_cnt = np.zeros(g.n, np.int64)
    r_cnt = np.zeros(g.n, np.int64)
    mirrors = np.zeros(p, np.int64)
    _replicas(g.s, g.t, assignment.edge_part.astype(np.int64), master, g.n, p, a_cnt, r_cnt, mirrors)
    a1 = np.maximum(a_cnt, 1)
    edges = np.bincount(assignment.edge_part, minlength=p)
    masters = np.bincount(master, minlength=p)

    def ratio(x, n):
        return float(x) / n if n else float("nan")

    def bal(c):
        return float(c.max() / c.mean()) if c.sum() else float("nan")

    rep = {
        "strategy": assignment.strategy, "parts": p, "vertices": g.n, "edges": g.m,
        "replication_factor": ratio(r_cnt.sum(), g.n),
        "replication_factor_no_master_only": ratio(a1.sum(), g.n),
        "edge_balance": bal(edges), "vertex_balance": bal(masters),
        "mirrors": int(mirrors.sum()),
        "seconds": float(assignment.seconds if seconds is None else seconds),
    }
    if g.bipartite:
        names = tuple(type_names or ("src", "dst"))
        for k, (lo, hi) in enumerate(((0, g.n_src), (g.n_src, g.n))):
            rep[f"replication_factor_{names[k]}"] = ratio(r_cnt[lo:hi].sum(), hi - lo)
            rep[f"replication_factor_no_master_only_{names[k]}"] = ratio(a1[lo:hi].sum(), hi - lo)
    rep["edges_per_part"] = edges.tolist()
    rep["masters_per_part"] = masters.tolist()
    rep["mirrors_per_part"] = mirrors.tolist()
    rep["options"] = {k: v for k, v in assignment.options.items() if isinstance(v, (int, float, str, type(None)))}
    return rep


_ROWS = [("parts", "parts", "{:d}"), ("replication factor λ", "replication_factor", "{:.4f}"),
         ("λ without master-only", "replication_factor_no_master_only", "{:.4f}")]
_TAIL = [("edge balance (max/mean)", "edge_balance", "{:.4f}"),
         ("master balance (max/mean)", "vertex_balance", "{:.4f}"),
         ("mirrors (total)", "mirrors", "{:,d}"),
         ("mirrors per part (max)", "mirrors_per_part", "max"),
         ("seconds", "seconds", "{:.3f}")]


def format_table(reports):
    """Reports side by side, one column per strategy, as a fixed-width text table."""
    if not reports:
        return ""
    rows = list(_ROWS)
    for key in reports[0]:
        if key.startswith("replication_factor_") and key != "replication_factor_no_master_only":
            label = key.replace("replication_factor_no_master_only_", "λ w/o master-only, ") \
                       .replace("replication_factor_", "λ, ")
            rows.append((label, key, "{:.4f}"))
    rows += _TAIL
    header = [""] + [r["strategy"] for r in reports]
    lines = [header]
    for label, key, fmt in rows:
        cells = [label]
        for r in reports:
            v = r.get(key)
            if v is None:
                cells.append("–")
            elif fmt == "max":
                cells.append(f"{max(v):,d}" if v else "0")
            else:
                cells.append(fmt.format(v))
        lines.append(cells)
    widths = [max(len(str(row[c])) for row in lines) for c in range(len(header))]
    out = []
    for i, row in enumerate(lines):
        out.append("  ".join(str(x).ljust(widths[0]) if c == 0 else str(x).rjust(widths[c])
                             for c, x in enumerate(row)))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
