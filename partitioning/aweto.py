"""BiGraph's Aweto (reference/partitioning.md §1g): BiCut, then a local greedy
refinement run independently on every machine j without coordination. For each
favourite f held on j (in id order):

    cnt_i = #edges of f whose other endpoint w has its master on i (Hv(w) mod p)
    best  = argmax_i cnt_i − √E_loc[i]   (start from j, strict >)
    E_loc[best] += deg(f); move f's master and all of f's edges to best

so a favourite moves next to its neighbours' masters, while still having exactly
one replica. Options as BiCut's.
"""
import numpy as np
from numba import njit

from tux2.partitioning.registry import strategy
from tux2.partitioning.bicut import bicut_place


@njit(nogil=True, cache=True)
def _refine(order, jstart, ptr, nbr_master, parts, newpart):
    cnt = np.zeros(parts, np.int64)
    e_loc = np.zeros(parts)
    for j in range(parts):
        e_loc[:] = 0.0
        for q in range(jstart[j], jstart[j + 1]):
            f = order[q]
            if ptr[f + 1] == ptr[f]:
                continue                    # no edges: the master stays at its hashed part
            cnt[:] = 0
            for e in range(ptr[f], ptr[f + 1]):
                cnt[nbr_master[e]] += 1
            best = j
            bs = cnt[j] - np.sqrt(e_loc[j])
            for i in range(parts):
                sc = cnt[i] - np.sqrt(e_loc[i])
                if sc > bs:
                    best = i
                    bs = sc
            e_loc[best] += ptr[f + 1] - ptr[f]
            newpart[f] = best


@strategy("aweto", bipartite_only=True)
def aweto(g, parts, hasher, favorite="auto", vertex_bytes=(1, 1)):
    fav, _, hv = bicut_place(g, parts, hasher, favorite, vertex_bytes)
    f_ends, w_ends = (g.s, g.t) if fav == 0 else (g.t, g.s)
    lo, hi = (0, g.n_src) if fav == 0 else (g.n_src, g.n)
    by_f = np.argsort(f_ends, kind="stable")
    deg = np.bincount(f_ends - lo, minlength=hi - lo)
    ptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    nbr_master = hv[w_ends[by_f]]
    favs = np.arange(hi - lo, dtype=np.int64)
    home = hv[lo:hi]
    order = favs[np.argsort(home, kind="stable")]          # by machine, then id
    jstart = np.searchsorted(home[order], np.arange(parts + 1)).astype(np.int64)
    newpart = home.astype(np.int32).copy()
    _refine(order, jstart, ptr, nbr_master, parts, newpart)
    master = hv.copy()
    master[lo:hi] = newpart
    return newpart[f_ends - lo], master
