"""Slow, obviously-correct references for the MEGA stages (plain Python loops,
one dict of replicas per partition, no arrays tricks)."""
import math

import numpy as np


def batch_edges(src, dst, unit, enum_type, lo, hi):
    """Global edge ids of one mini-batch, in the order a single partition runs them."""
    m = len(src)
    if unit == "edge":
        return list(range(lo, min(hi, m)))
    ends = (src, dst)[enum_type]
    return sorted((e for e in range(m) if lo <= ends[e] < hi), key=lambda e: (ends[e], e))


def run_direct_write(exchange, state, edges_by_part, combine="sum"):
    """One clock of Exchange writing vertex data directly on each partition's own
    replica copy, then Apply combining the replicas' deltas at the master.

    ``state``: (A, B) arrays of floats (the global model); ``exchange(a_row, b_row, e)``
    mutates the two replica rows; returns the new global (A, B).
    """
    A, B = state
    deltas = ({}, {})
    for part, edges in edges_by_part.items():
        la, lb = {}, {}
        for (e, u, v, w) in edges:
            if u not in la:
                la[u] = A[u].copy()
            if v not in lb:
                lb[v] = B[v].copy()
            exchange(la[u], lb[v], w)
        for t, local, glob in ((0, la, A), (1, lb, B)):
            for x, val in local.items():
                deltas[t].setdefault(x, []).append(val - glob[x])
    A, B = A.copy(), B.copy()
    for t, glob in ((0, A), (1, B)):
        for x, ds in deltas[t].items():
            tot = sum(ds)
            glob[x] = glob[x] + (tot / len(ds) if combine == "mean" else tot)
    return A, B


def sequential_sgd(graph, P, Q, mu, lr, reg, damping=None, epochs=1, adaptive=False):
    """``epochs`` of per-edge SGD MF (biased) in the graph's edge order, in float64:
    (P, Q, user biases, item biases), biases starting at zero. A bias's step is implicit
    in its regulariser c: λ per rating, or with ``damping`` D, D/n for a vertex of n
    ratings (½D·b² over its n edges). ``adaptive``: LibMF's AdaGrad steps, η/√G with
    G (from 1) += |∂p|²/k for the factors and a sum of its own, G_b += (c·b − err)², for
    each bias; without it every step is η."""
    P, Q = P.astype(np.float64), Q.astype(np.float64)
    bu, bi = np.zeros(graph.n_src), np.zeros(graph.n_dst)
    cu, ci = ((np.full(n, reg) for n in (graph.n_src, graph.n_dst)) if damping is None else
              (damping / np.maximum(np.bincount(a, minlength=n), 1)
               for a, n in ((graph.src, graph.n_src), (graph.dst, graph.n_dst))))
    gu, gi, gbu, gbi = np.ones(graph.n_src), np.ones(graph.n_dst), np.ones(graph.n_src), np.ones(graph.n_dst)
    k = P.shape[1]
    for _ in range(epochs):
        for e in range(graph.num_edges):
            u, i, r = graph.src[e], graph.dst[e], np.float32(graph.values[e])
            err = r - (mu + bu[u] + bi[i] + P[u] @ Q[i])
            pu, qi = P[u].copy(), Q[i].copy()
            dp, dq = reg * pu - err * qi, reg * qi - err * pu
            P[u] = pu - lr / np.sqrt(gu[u]) * dp
            Q[i] = qi - lr / np.sqrt(gi[i]) * dq
            eu, ei = lr / np.sqrt(gbu[u]), lr / np.sqrt(gbi[i])
            dbu, dbi = cu[u] * bu[u] - err, ci[i] * bi[i] - err
            bu[u], bi[i] = (bu[u] + eu * err) / (1 + eu * cu[u]), (bi[i] + ei * err) / (1 + ei * ci[i])
            if adaptive:
                gu[u] += dp @ dp / k
                gi[i] += dq @ dq / k
                gbu[u] += dbu * dbu
                gbi[i] += dbi * dbi
    return P, Q, bu, bi


def top_k_lines(P, Q, bu, bi, mu, seen, users, k, clip=(-np.inf, np.inf), sep=" "):
    """``tux2 predict MODEL USERS --top-k k``'s lines for a model of dense integer ids, one
    user at a time, each item scored alone: μ + b_u + b_i + p_u·q_i over the items someone
    rated that the user has not, best first, the lower item on a tie, scores clipped
    after ranking; a user without ratings (or not in the model) gets μ + b_i over them."""
    n_users, n_items = len(P), len(Q)
    rated = {j for items in seen for j in items}
    lines = []
    for t in users:
        u = int(t)
        known = 0 <= u < n_users and len(seen[u]) > 0
        cand = []
        for j in sorted(rated):
            if known and j in seen[u]:
                continue
            s = mu + bi[j] + (bu[u] + sum(float(a) * float(b) for a, b in zip(P[u], Q[j])) if known else 0.0)
            cand.append((-s, j))
        lines.append(t + "".join(f"{sep}{j}:{min(max(-s, clip[0]), clip[1]):.6g}" for s, j in sorted(cand)[:k])
                     + "\n")
    return "".join(lines)


def als_explicit(graph, P, Q, mu, reg, epochs, damping=None, biases=True):
    """Alternating least squares, one dense least-squares solve per user and per item
    (numpy.linalg.solve of [p, b] against [q, 1]): λ·n on p (weighted-λ), D (or λ·n)
    on b; the factors rounded to float32 after each solve, as the engine keeps them."""
    P, Q = np.array(P, np.float32), np.array(Q, np.float32)
    bu, bi = np.zeros(len(P), np.float32), np.zeros(len(Q), np.float32)
    k = P.shape[1]
    r = np.asarray(graph.values, np.float64)

    def half(X, bx, Y, by, src, dst):
        for v in np.unique(src):
            e = src == v
            A = np.c_[Y[dst[e]], np.ones(e.sum())] if biases else np.asarray(Y[dst[e]], np.float64)
            t = r[e] - mu - by[dst[e]]
            n = e.sum()
            reg_diag = [reg * n] * k + ([reg * n if damping is None else damping] if biases else [])
            w = np.linalg.solve(A.T @ A + np.diag(reg_diag), A.T @ t)
            X[v] = w[:k]
            if biases:
                bx[v] = w[k]

    for _ in range(epochs):
        half(P, bu, Q, bi, graph.src, graph.dst)
        half(Q, bi, P, bu, graph.dst, graph.src)
    return P, Q, bu, bi


def als_implicit_cg(graph, P, Q, reg, alpha, epochs, steps):
    """Hu et al.'s ALS (linear confidence) with each user's and item's system
    M = Yᵀ C_u Y + λI (dense, from the full C) solved by ``steps`` textbook conjugate-gradient
    steps from its factors of the last epoch (float32, as the model keeps them), stopping
    where r·r < 1e-20; the vertices without edges are left alone."""
    P, Q = np.array(P, np.float32), np.array(Q, np.float32)
    R = np.zeros((len(P), len(Q)))
    E = np.zeros_like(R, bool)
    R[graph.src, graph.dst] = graph.values
    E[graph.src, graph.dst] = True
    C, pref = 1.0 + alpha * np.abs(R), (E & (R > 0)).astype(np.float64)
    k = P.shape[1]
    for _ in range(epochs):
        for X, Y, Cm, Pm, Em in ((P, Q, C, pref, E), (Q, P, C.T, pref.T, E.T)):
            Yd = Y.astype(np.float64)
            for v in range(len(X)):
                if not Em[v].any():
                    continue
                M = Yd.T @ (Cm[v][:, None] * Yd) + reg * np.eye(k)
                x = X[v].astype(np.float64)
                r = Yd.T @ (Cm[v] * Pm[v]) - M @ x
                d, rs = r.copy(), r @ r
                for _ in range(steps if rs >= 1e-20 else 0):
                    Md = M @ d
                    a = rs / (d @ Md)
                    x = (x + a * d).astype(np.float32).astype(np.float64)
                    r = r - a * Md
                    rs, rs0 = r @ r, rs
                    if rs < 1e-20:
                        break
                    d = r + rs / rs0 * d
                X[v] = x
    return P, Q


def als_implicit(graph, P, Q, reg, alpha, epochs, log_epsilon=None):
    """Hu, Koren & Volinsky's ALS on the full dense matrices: C = 1 + α|R| on the
    edges (``log_epsilon`` ε: their log scaling, C = 1 + α·log(1 + |R|/ε)), 1 elsewhere
    (an entry of C per pair, computed here from the dense R, not by tux2's function),
    preference 1 where an edge has R > 0, and for each user
    p_u = (Qᵀ C_u Q + λI)⁻¹ Qᵀ C_u pref_u, then the same for each item; also
    the objective Σ C (pref − PQᵀ)² + λ(|P|² + |Q|²) after each epoch."""
    P, Q = np.array(P, np.float32), np.array(Q, np.float32)
    R = np.zeros((len(P), len(Q)))
    E = np.zeros_like(R, bool)
    R[graph.src, graph.dst] = graph.values
    E[graph.src, graph.dst] = True
    if log_epsilon is None:
        C = 1.0 + alpha * np.abs(R)
    else:
        C = np.ones_like(R)
        for u, i in zip(*np.nonzero(E)):
            # log(1 + r/ε) as log(r + ε) − log(ε): finite where r/ε overflows (ε = 1e-310)
            C[u, i] = 1.0 + alpha * (math.log(abs(R[u, i]) + log_epsilon) - math.log(log_epsilon))
    pref = (E & (R > 0)).astype(np.float64)
    k, objectives = P.shape[1], []
    for _ in range(epochs):
        for X, Y, Cm, Pm in ((P, Q, C, pref), (Q, P, C.T, pref.T)):
            Yd = Y.astype(np.float64)
            for v in range(len(X)):
                if E[v].any() if X is P else E[:, v].any():
                    X[v] = np.linalg.solve(Yd.T @ (Cm[v][:, None] * Yd) + reg * np.eye(k), Yd.T @ (Cm[v] * Pm[v]))
        S = P.astype(np.float64) @ Q.astype(np.float64).T
        objectives.append(float((C * (pref - S) ** 2).sum() + reg * ((P.astype(np.float64) ** 2).sum()
                                                                        + (Q.astype(np.float64) ** 2).sum())))
    return P, Q, objectives


def bias_baseline_rmse(train, test, damping):
    """Test RMSE of r̂ = μ + b_u + b_i, μ the mean training rating and the biases the exact
    minimiser of Σ(r − μ − b_u − b_i)² + D(Σb_u² + Σb_i²) over the training (user, item,
    rating) triples, from one dense solve of its normal equations; a test user or item
    without training ratings adds no bias; predictions clipped to the training range."""
    users = sorted({u for u, _, _ in train})
    items = sorted({i for _, i, _ in train})
    col = {("u", u): j for j, u in enumerate(users)}
    col.update({("i", i): len(users) + j for j, i in enumerate(items)})
    mu = sum(r for _, _, r in train) / len(train)
    A, y = np.diag(np.full(len(col), float(damping))), np.zeros(len(col))
    for u, i, r in train:
        a, b = col[("u", u)], col[("i", i)]
        A[a, a] += 1
        A[b, b] += 1
        A[a, b] += 1
        A[b, a] += 1
        y[a] += r - mu
        y[b] += r - mu
    x = np.linalg.lstsq(A, y, rcond=None)[0]        # (D = 0: singular, a shift between the sides)
    lo, hi = min(r for _, _, r in train), max(r for _, _, r in train)
    err = []
    for u, i, r in test:
        p = mu + (x[col[("u", u)]] if ("u", u) in col else 0.0) + (x[col[("i", i)]] if ("i", i) in col else 0.0)
        err.append((r - min(max(p, lo), hi)) ** 2)
    return math.sqrt(sum(err) / len(err))
