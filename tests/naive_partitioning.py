"""Plain-Python transcriptions of reference/partitioning.md §1, one edge at a time,
with sets and dicts: the slow, obviously-correct references of the strategies."""
import math

import numpy as np

from tux2.partitioning.hashing import mix32


def hv(v, p):
    return int(mix32(np.uint32(v))) % p


def he(u, v):
    lo, hi = min(u, v), max(u, v)
    return int(mix32(np.uint32(lo ^ 0x9E3779B9)) ^ mix32(np.uint32(hi ^ 0x7F4A7C15)))


def masters(n, p):
    return [hv(v, p) for v in range(n)]


def random_cut(s, t, n, p):
    return [he(u, v) % p for u, v in zip(s, t)], masters(n, p)


def dbh(s, t, n, p):
    d = [0] * n
    for u, v in zip(s, t):
        d[u] += 1
        d[v] += 1
    return [hv(u, p) if d[u] < d[v] else hv(v, p) for u, v in zip(s, t)], masters(n, p)


def grid(s, t, n, p):
    rows = math.isqrt(p)
    cols = next(c for c in (rows, rows + 1, rows + 2) if rows * c == p)
    def S(i):
        return {i} | {(i // cols) * cols + j for j in range(cols)} | {j for j in range(p) if j % cols == i % cols}
    out = []
    for u, v in zip(s, t):
        C = sorted(S(hv(u, p)) & S(hv(v, p)))
        out.append(C[he(u, v) % len(C)])
    return out, masters(n, p)


def greedy(s, t, n, p):
    A, load, out = {}, [0] * p, []
    for u, v in zip(s, t):
        mx, mn = max(load), min(load)
        score = [(i in A.get(u, ())) + (i in A.get(v, ())) + (mx - load[i]) / (1 + mx - mn) for i in range(p)]
        T = [i for i in range(p) if abs(score[i] - max(score)) < 1e-5]
        i = T[he(u, v) % len(T)]
        A.setdefault(u, set()).add(i)
        A.setdefault(v, set()).add(i)
        load[i] += 1
        out.append(i)
    return out, masters(n, p)


def hdrf(s, t, n, p, lam=1.1, eps=1.0):
    A, load, delta, out = {}, [0] * p, [0] * n, []
    for u, v in zip(s, t):
        du, dv = delta[u] + 1, delta[v] + 1
        th = {u: du / (du + dv)}
        th_v = 1 - th[u]
        mx, mn = max(load), min(load)
        C = []
        for i in range(p):
            gu = 1 + (1 - th[u]) if i in A.get(u, ()) else 0
            gv = 1 + (1 - th_v) if i in A.get(v, ()) else 0
            C.append(gu + gv + lam * max(0.0, (mx - load[i]) / (eps + mx - mn)))
        T = [i for i in range(p) if abs(C[i] - max(C)) < 1e-5]
        i = T[he(u, v) % len(T)]
        A.setdefault(u, set()).add(i)
        A.setdefault(v, set()).add(i)
        load[i] += 1
        delta[u] += 1
        delta[v] += 1
        out.append(i)
    return out, masters(n, p)


def hybrid(s, t, n, p, theta):
    indeg = [0] * n
    for v in t:
        indeg[v] += 1
    return [hv(v, p) if indeg[v] <= theta else hv(u, p) for u, v in zip(s, t)], masters(n, p)


def ginger(s, t, n, p, theta, gamma=1.5):
    """Ginger with interval = ∞: every machine sees only its own placements."""
    indeg = [0] * n
    ins = {}
    for u, v in zip(s, t):
        indeg[v] += 1
        ins.setdefault(v, []).append(u)
    V, E = n, len(s)
    alpha = math.sqrt(p) * E / V ** gamma
    mht = {}
    for j in range(p):
        local, bal = {}, [0.0] * p
        for v in sorted(x for x in range(n) if 0 < indeg[x] <= theta and hv(x, p) == j):
            cnt = [0] * p
            for w in ins[v]:
                if w in local:
                    cnt[local[w]] += 1
            best, bs = 0, -float("inf")
            for i in range(p):
                sc = cnt[i] - alpha * gamma * bal[i] ** (gamma - 1)
                if sc > bs:
                    best, bs = i, sc
            local[v] = best
            bal[best] += 1 + indeg[v] * V / E
        mht.update(local)
    out = [mht[v] if indeg[v] <= theta else mht.get(u, hv(u, p)) for u, v in zip(s, t)]
    return out, [mht.get(v, hv(v, p)) for v in range(n)]


def bicut(s, t, n, p, n_src, fav):
    f_end = s if fav == 0 else t
    return [hv(f, p) for f in f_end], masters(n, p)


def aweto(s, t, n, p, n_src, fav):
    f_end, w_end = (s, t) if fav == 0 else (t, s)
    nbrs = {}
    for f, w in zip(f_end, w_end):
        nbrs.setdefault(f, []).append(w)
    favs = range(n_src) if fav == 0 else range(n_src, n)
    place = {f: hv(f, p) for f in favs}
    for j in range(p):
        e_loc = [0.0] * p
        for f in sorted(f for f in favs if hv(f, p) == j and f in nbrs):
            cnt = [0] * p
            for w in nbrs[f]:
                cnt[hv(w, p)] += 1
            best, bs = j, cnt[j] - math.sqrt(e_loc[j])
            for i in range(p):
                if cnt[i] - math.sqrt(e_loc[i]) > bs:
                    best, bs = i, cnt[i] - math.sqrt(e_loc[i])
            e_loc[best] += len(nbrs[f])
            place[f] = best
    m = masters(n, p)
    for f in favs:
        m[f] = place[f]
    return [place[f] for f in f_end], m


def replicas(edge_part, s, t, master):
    """|R(v)| and |A(v)| per vertex, with sets."""
    A = [set() for _ in master]
    for e, (u, v) in enumerate(zip(s, t)):
        A[u].add(edge_part[e])
        A[v].add(edge_part[e])
    return [len(a | {m}) for a, m in zip(A, master)], [len(a) for a in A]
