"""The most-popular baseline of an implicit MF run, in its records (history_, --metrics)."""
import numpy as np
import pytest

import tux2


def test_implicit_records_carry_the_most_popular_baseline():
    """MF(implicit=True).fit(train, test): each evaluated record has the most-popular baseline's
    NDCG@10, the number the command line prints, checked against a by-hand ranking (distinct
    item counts, so no ties)."""
    rng = np.random.default_rng(3)
    n_users, n_items = 120, 40
    users, items = [], []
    for u in range(n_users):
        for i in rng.choice(n_items, 12, replace=False, p=np.arange(n_items, 0, -1) / np.arange(n_items, 0, -1).sum()):
            users.append(u), items.append(i)
    ev = np.c_[users, items]
    test_mask = rng.random(len(ev)) < 0.2
    tr, te = ev[~test_mask], ev[test_mask]
    m = tux2.MF(implicit=True, k=4, epochs=2).fit(tr, te)
    counts = np.bincount(tr[:, 1], minlength=n_items)
    order = np.lexsort((np.arange(n_items), -counts))
    seen = {u: set(tr[tr[:, 0] == u, 1]) for u in range(n_users)}
    nd = []
    for u in sorted(set(te[:, 0])):
        rel = set(te[te[:, 0] == u, 1]) - seen[u]
        if not rel:
            continue
        rec = [i for i in order if i not in seen[u] and counts[i] > 0][:10]
        dcg = sum(1 / np.log2(r + 2) for r, i in enumerate(rec) if i in rel)
        nd.append(dcg / sum(1 / np.log2(r + 2) for r in range(min(10, len(rel)))))
    last = m.history_[-1]
    assert last["popular_ndcg@10"] == pytest.approx(np.mean(nd), rel=1e-9)
    assert 0 < last["popular_precision@10"] <= 1
