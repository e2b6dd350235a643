"""Top-k ranking metrics of recommendation lists against each user's held-out items,
with binary relevance, as Spark's ``RankingMetrics`` defines them: precision@k = hits
/ k, recall@k = hits / |relevant|, NDCG@k = DCG / the DCG of an ideal list (gain 1 at
position j discounted by log2(j + 2)), MAP@k = the mean precision at each hit's position
over min(k, |relevant|); also the hit rate (the share of users with at least one hit).
Each is the mean over the users with at least one relevant item."""
import numpy as np

NAMES = ("precision", "recall", "ndcg", "map", "hit_rate")


def hits(top, rows, items):
    """(n, k) booleans: whether ``top[r, j]`` (item ids, negative: no item) is one of row
    r's relevant items, the pairs (``rows``, ``items``)."""
    top = np.asarray(top, np.int64)
    width = int(max(top.max(initial=0), np.max(items, initial=0))) + 1
    wanted = np.unique(np.asarray(rows, np.int64) * width + items)
    keys = np.arange(len(top), dtype=np.int64)[:, None] * width + top
    at = np.minimum(np.searchsorted(wanted, keys), max(len(wanted) - 1, 0))
    return (top >= 0) & (wanted[at] == keys) if len(wanted) else np.zeros(top.shape, bool)


def at_k(top, rows, items, k=None):
    """The metrics of NAMES at ``k`` (default: the width of ``top``; above it, lists cut
    short, as a model of fewer items has them) for the lists ``top`` ((n, width) item ids,
    -1 where a list is shorter) against the relevant (row, item) pairs ``rows``, ``items`` (repeats count
    once; an item that can never be listed — not in the model — counts as relevant and
    missed), with ``users``, how many rows have a relevant item."""
    top = np.asarray(top, np.int64)
    n, w = top.shape
    k = w if k is None else k
    rows, items = np.asarray(rows, np.int64), np.asarray(items, np.int64)
    pairs = np.unique(np.stack([rows, items]), axis=1) if len(rows) else np.zeros((2, 0), np.int64)
    n_rel = np.bincount(pairs[0], minlength=n)[:n]
    h = hits(top, *pairs).astype(np.float64)
    counted = n_rel > 0
    if not counted.any() or k == 0:
        return {**dict.fromkeys(NAMES, None), "users": int(counted.sum())}
    # (a k past the lists' width and every count is those lists cut short: kept below int64's limit)
    found, shortest = h.sum(axis=1), np.maximum(np.minimum(n_rel, min(k, max(w, n_rel.max()))), 1)
    discount = 1.0 / np.log2(np.arange(2, max(w, shortest.max()) + 2))
    per_user = {"precision": found / k,
                "recall": found / np.maximum(n_rel, 1),
                "ndcg": (h @ discount[:w]) / np.cumsum(discount)[shortest - 1],
                "map": (h * np.cumsum(h, axis=1) / np.arange(1, w + 1)).sum(axis=1) / shortest,
                "hit_rate": (found > 0).astype(np.float64)}
    return {**{m: float(v[counted].mean()) for m, v in per_user.items()}, "users": int(counted.sum())}
