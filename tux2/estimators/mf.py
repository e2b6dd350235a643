"""``tux2.MF``: matrix factorisation (tux2.udfs.mf) as an estimator — the one place
where a rating set becomes an MF run: rating checks, test ids, the edge order
(strata, blocked, shuffled), μ, the program; then predictions in the user's ids."""
import copy
import math
import os

import numpy as np

from tux2 import files, io, loaders
from tux2.compile import group_by_part, residual_fixed_sums
from tux2.errors import InputError, Tux2Error
from tux2.estimator import Estimator
from tux2.graph import BipartiteGraph, blocked_order, stratified_order
from tux2.params import COUNT, NONNEG, NONNEG_NUMBER, POSITIVE, PRIOR, SEED, integer, number
from tux2.runner import Dataset, Setup
from tux2.udfs import als, mf
from tux2.version import __version__

NAMES = ("user", "item")
SPREAD = (0.8, 1.5)     # standard deviations of ratings trained in their own units
DAMPING = 3.0           # a bias is shrunk as if its user or item had this many more ratings at the mean
COUNT_LEVELS = 50       # distinct whole-number ratings above it: counts (refuse_counts)
TYPICAL = 0.25          # mean |r − μ| / sd below it: the sd is a few extreme ratings', not a scale (outlying)
CG_STEPS = 3            # conjugate-gradient steps per solve of implicit feedback's systems (implicit's default)
ALPHA = 1.0             # implicit feedback's confidence c = 1 + α·log(1 + r/ε), Hu et al.'s log scaling, at
CONFIDENCE = "log"      # Spark's and implicit's α: real plays and events ranked best so (README: measured)
# explicit ratings have no confidence: their model.json and checkpoints keep these as every run recorded them
# before the defaults above (linear, α 40), so a checkpoint of an explicit run from then resumes
NO_CONFIDENCE = {"alpha": 40.0, "confidence": "linear"}
STEP_STATE = ("g", "gb")        # AdaGrad's per-vertex sums of squared gradients (udfs/mf.py)
RANK_AT = 10            # implicit feedback: precision@10 and NDCG@10 of held-out items per epoch
BASELINE_DAMPING = 5.0  # the bias baseline's D (bias_baseline): fixed, so --reg or --damping never move the yardstick
BASELINE_PASSES = 4     # its alternating solves: test RMSE within 1e-5 of 200 passes' (built-in set, a power-law file)
COLD_SHARE = 0.9        # this share of test or predicted pairs with an unknown user or item measures cold start: a note


def auto_mode(mode, implicit):
    """The training mode of ``mode`` (``MF(mode=)``, ``--mode``): as given, or for None (the
    default) ALS with implicit feedback (Hu et al.'s solve; SGD has no implicit form here)
    and per-edge SGD for ratings. The one place the default is decided: the estimator,
    the CLI, model.json and checkpoints all take it from here."""
    return mode if mode is not None else "als" if implicit else "sgd"


def auto_solver(solver, implicit):
    """The ALS solver of ``solver`` (``MF(solver=)``, ``--solver``): as given, or for None (the
    default) conjugate gradient with implicit feedback (as ``implicit``'s default: the same
    ranking after the same epochs, README: measured) and Cholesky for ratings (their only
    solver). Like ``auto_mode``, the one place the default is decided."""
    return solver if solver is not None else "cg" if implicit else "cholesky"


CG_MAX_CONFIDENCE = 1e5     # above it (the largest edge's c), solver=None solves exactly: 3 CG steps fell short
# (plays_like counts up to 1.6e6, 10 epochs: c up to 1.6e4 (alpha 0.01) the same NDCG@10 as Cholesky, 0.2086 vs
# 0.2070; up to 1.6e6 (alpha 1) 0.1778 vs 0.1817, objective 7% above; up to 6.5e7 (alpha 40) 0.0349 vs 0.0631)


def ratings(g, what=loaders.NO_RATINGS, implicit=False):
    """``g`` as a user → item graph, refused without a rating per edge (what load_edges
    found about it — layout, base, unknown ids — kept); ``implicit``: an edge without a
    value is one event (a click, a play)."""
    if g.values is None and not implicit:
        raise InputError(what, path=g.source)
    if g.values is not None and len(g.values):      # a file's reader refuses them naming the line
        i = int(np.argmax(np.abs(g.values)))
        if abs(g.values[i]) > loaders.FLOAT32_MAX:
            raise InputError(f"rating {g.values[i]:g} at edge {i} is beyond the float32 range "
                             f"(±{loaders.FLOAT32_MAX:.4g}) ratings are kept in", path=g.source)
    out = copy.copy(g)
    out.type_names = NAMES
    if out.values is None:
        out.values = np.ones(out.num_edges, np.float32)
    return out


def unknown_note(test, implicit=False):
    """What happened to test ratings whose user or item has no training ratings."""
    if test is not None and test.skipped:
        return f" ({test.skipped} with a user or item not in training skipped: --unknown skip)"
    n = int((test.unknown[0] | test.unknown[1]).sum()) if test is not None and test.unknown is not None else 0
    if implicit:                # no mean, no biases: a new user gets the most-popular list, a new item is never listed
        return f" ({n} with a user or item not in training: a new user ranked by training counts, a new item never " \
               "listed)" if n else ""
    return f" ({n} with a user or item not in training, predicted by the mean and the known bias)" if n else ""


def cold_note(test, implicit=False):
    """The header's note when COLD_SHARE or more of the test pairs have a user or item not
    in training (``unknown_note`` counts them): the test metric then measures cold start."""
    if test is None:
        return []
    unknown = test.skipped or (int((test.unknown[0] | test.unknown[1]).sum()) if test.unknown is not None else 0)
    total = test.num_edges + test.skipped
    if not total or unknown < COLD_SHARE * total:
        return []
    return [f"  note: {unknown / total:.0%} of the test pairs have a user or item not in training, so the test "
            + ("metrics measure" if implicit else "RMSE measures") + " cold start, not the model; check the test "
            "file's ids and columns (--columns, --base), or hold out ratings of the training users"]


def cold_warning(unknown, what, stacklevel=2):
    """A RuntimeWarning when COLD_SHARE or more of 10 or more pairs (``unknown``: a mask)
    have a user or item without training ratings: ``what`` then measures cold start (a
    split by user, as scikit-learn's cross_val_score makes of a user-sorted file)."""
    import warnings
    n, k = len(unknown), int(np.count_nonzero(unknown))
    if n >= 10 and k >= COLD_SHARE * n:
        warnings.warn(f"{what}: {k} of the {n} pairs ({k / n:.0%}) have a user or item without training ratings, "
                      "predicted by the baseline (the mean and the known side's bias), not the factors: a cold-start "
                      "measure; ids of another numbering, or a split by user (cross_val_score on a file sorted by "
                      "user: KFold(shuffle=True))?", RuntimeWarning, stacklevel=stacklevel + 1)


def frame_columns(df, columns=None):
    """The (user, item, rating) column names of a DataFrame: ``columns`` (names or
    1-based positions, "userId,movieId,rating" or a list, as for files), else those
    named so (``io.named_columns``, as a file's header) or the first three; the rating
    column must hold numbers (an InputError naming it)."""
    cols = list(df.columns)
    if columns is None:         # the columns named user, item and rating (as a file's header), else the first three
        (cs, cd, cv), _ = io.named_columns([str(c) for c in cols], (0, 1, io.OPTIONAL))
        picked = [cols[j] for j in (cs, cd, 2 if cv == io.OPTIONAL else cv) if 0 <= j < len(cols)]
    else:
        picked = _picked(df, columns)
    if len(picked) < 3:
        raise InputError(f"MF needs user, item and rating columns; the DataFrame has {cols}", path="DataFrame")
    rating = df[picked[2]]
    if rating.dtype.kind not in "biuf":
        raise InputError(f"column {picked[2]!r}, read as the ratings, holds {rating.dtype} values such as "
                         f"{rating.iloc[0]!r}: name the columns, MF(columns='user,item,rating')", path="DataFrame")
    return picked[:3]


def user_rows(x, columns=None):
    """(users, items, ratings) of a DataFrame's columns (``frame_columns``) or of an (n, 3)
    array's (user, item, rating) rows: ids as integers, or as they are in an array of
    strings or objects (a DataFrame's .values with string ids); anything else as it is."""
    if loaders.is_frame(x):
        return tuple(x[c].to_numpy() for c in frame_columns(x, columns))
    if isinstance(x, np.ndarray) and x.ndim == 2 and x.shape[1] == 3:
        if x.dtype.kind == "c":             # from_arrays refuses complex numbers (a cast drops the imaginary part)
            return x[:, 0], x[:, 1], x[:, 2]
        try:
            r = np.asarray(x[:, 2], np.float64)
        except (TypeError, ValueError):
            (row,), bad = loaders.non_number(x[:, 2])
            raise InputError(f"the rating of row {row} (column 3) is {bad!r}: ratings are numbers; rows are (user, "
                             "item, rating)", path="arrays") from None
        if x.dtype.kind in "OUS":
            return _id_column(x[:, 0]), _id_column(x[:, 1]), r
        return x[:, 0], x[:, 1], r          # from_arrays checks float ids (0.5, NaN: no cast)
    return x


def _rows3(X, what="MF.score"):
    """(user, item, rating) rows of a sequence or array as an (n, 3) array (extra columns cut)."""
    a = np.asarray(X) if not isinstance(X, list) or not X or not isinstance(X[0], (list, tuple)) \
        else np.asarray(X, dtype=object)
    if a.ndim != 2 or a.shape[1] < 3 or (a.shape[0] == 3 and a.shape[1] > 4):     # (3, n): columns, not rows
        raise InputError(f"{what} takes (user, item, rating) rows, (users, items, ratings), a DataFrame, a "
                         f"BipartiteGraph or a rating file{', or X of (user, item) rows with y' * (what == 'MF.fit')}"
                         f"; got an array of shape {a.shape}" + (" (three columns stacked as rows? pass them as a "
                                                                  "tuple)" if a.shape[:1] == (3,) else "")
                         + (" (events without ratings, clicks or plays: MF(implicit=True) takes (user, item) rows, "
                            "one event each)" if what == "MF.fit" and a.ndim == 2 and a.shape[1] == 2 else ""),
                         path="arrays")
    return a[:, :3]


def _picked(df, columns):
    """The DataFrame columns ``columns`` names (names or 1-based positions), an InputError
    naming one it lacks."""
    cols = list(df.columns)
    picked = [c.strip() if isinstance(c, str) else c for c in (columns.split(",") if isinstance(columns, str)
                                                                else columns)]
    picked = [cols[int(c) - 1] if c not in cols and io.is_whole(c) and 0 < int(c) <= len(cols) else c
              for c in picked]
    missing = [c for c in picked if c not in cols]
    if missing:
        raise InputError(f"no column {missing[0]!r} (columns: {cols})", path="DataFrame")
    return picked


def _pairs(X, y=None):
    """(users, items) of X's rows of (user, item) pairs — an (n, 2) array, a list of
    pairs, a two-column DataFrame — and with ``y`` the ratings after them: scikit-learn's
    ``fit(X, y)``, ``predict(X)`` and ``score(X, y)``; y 1-D or a column. None when X is
    no such table and there is no y."""
    try:
        a = X if loaders.is_frame(X) else np.asarray(X) if not isinstance(X, list) else np.asarray(X, dtype=object)
    except ValueError:              # ragged rows
        a = None
    if np.ndim(a) != 2 or np.shape(a)[1] != 2:
        if y is None:
            return None
        raise ValueError(f"with ratings y, X holds (user, item) rows (an (n, 2) array or a two-column DataFrame); "
                         f"got {type(X).__name__} of shape {np.shape(a)}")
    cols = [X[c].to_numpy() for c in X.columns] if loaders.is_frame(X) else [_id_column(a[:, j]) for j in (0, 1)]
    if y is None:
        return tuple(cols)
    r = np.asarray(y, np.float64)
    r = r[:, 0] if r.shape[1:] == (1,) else r          # a column, as scikit-learn's regressors take it
    if r.ndim != 1 or len(r) != len(cols[0]):
        raise ValueError(f"X has {len(cols[0])} (user, item) rows but y has shape {r.shape}: one rating per row")
    return (*cols, r)


def _events(x, columns=None):
    """Implicit feedback's (users, items) of x's (user, item) rows — an (n, 2) array, a
    list of pairs, a two-column DataFrame (``columns`` not given) — each row one event,
    as a file's 'user item' lines are; None for anything else."""
    if loaders.is_frame(x) and columns is not None:         # columns= naming two of them: (user, item) events
        picked = _picked(x, columns)
        return tuple(x[c].to_numpy() for c in picked) if len(picked) == 2 else None
    if not (loaders.is_frame(x) or isinstance(x, (np.ndarray, list))) or (loaders.is_frame(x) and len(x.columns) != 2):
        return None
    return _pairs(x)


def _id_column(c):
    """A column of an object array as ids: integers when every entry is a whole number
    (np.c_ of string users and integer items makes the items 31.0), else as it is."""
    if c.dtype.kind == "O" and all(isinstance(t, (int, float, np.integer, np.floating))
                                   and not isinstance(t, (bool, np.bool_)) and float(t).is_integer()
                                   for t in c.tolist()):
        return c.astype(np.int64)
    return c


def csr_order(graph):
    """(the edges of a user → item graph by user, then item: a permutation; indptr of each
    user's edges), by two stable counting sorts: the same whatever the edge order (workers,
    partitions)."""
    by_item, _ = group_by_part(graph.dst, graph.n_dst)
    order, indptr = group_by_part(graph.src[by_item], graph.n_src)
    return by_item[order], indptr


def seen_csr(graph):
    """(indptr, indices) of each user's items in a user → item graph, in item order."""
    perm, indptr = csr_order(graph)
    return indptr, graph.dst[perm].astype(np.int32)


def bias_baseline(graph, damping=BASELINE_DAMPING, passes=BASELINE_PASSES, scale=1.0, gather=None):
    """(μ, b_u, b_i) of the bias baseline r̂ = μ + b_u + b_i of a user → item rating graph
    (its values times ``scale``): μ the mean rating, the biases the least-squares fit of
    Σ(r − μ − b_u − b_i)² + D(Σb_u² + Σb_i²), D = ``damping``, by ``passes`` alternating
    exact solves, b_i = Σ_u(r − μ − b_u)/(n_i + D), then b_u = Σ_i(r − μ − b_i)/(n_u + D)
    (Koren's baseline estimates; surprise's BaselineOnly, LensKit's Bias); None without
    ratings. ``gather``: a
    transport's allgather, when ``graph`` is this worker's share of the ratings (distributed
    ingress): the workers then exchange per-vertex sums, never the ratings. The sums are of
    fixed-point integers (``_fixed``), exact in any order, so any split of the edges —
    partitions, workers — gives the same numbers."""
    tags = iter(range(1 << 30))

    def every(*local):              # per array, the workers' in rank order
        pieces = [local] if gather is None else gather(f"baseline-{next(tags)}", list(local))
        return [[p[j] for p in pieces] for j in range(len(local))]

    def total(*local):              # per array, its sum over the workers' (exact: integers)
        return [sum(x) for x in every(*local)]
    u, i = graph.src, graph.dst
    r = np.asarray(graph.values, np.float64) * scale
    tops, counts = every(np.array([np.abs(r).max(initial=0.0)]), np.array([len(r)], np.int64))
    top, count = max(t[0] for t in tops), sum(c[0] for c in counts)
    if not count:
        return None
    n_u, n_i = total(*loaders.degrees(graph))
    # terms |r − μ − b| < 4·max|r|: units of 2^−bits leave their sum over every edge inside int64
    # (bits < 0 for ratings near the float32 limit)
    bits = int(min(60 - np.ceil(np.log2(4 * top * count + 1)), 52))
    mu = total(np.array([_fixed(r, bits).sum()]))[0][0] / 2.0 ** bits / count
    # (n + D: a vertex without ratings, whose sum is 0, divides by at least 1)
    d_u, d_i = np.maximum(n_u + damping, 1.0), np.maximum(n_i + damping, 1.0)
    b_u, b_i = np.zeros(graph.n_src), np.zeros(graph.n_dst)
    for _ in range(passes):
        b_i = total(_fixed_sums(i, r, mu, u, b_u, graph.n_dst, bits))[0] / 2.0 ** bits / d_i
        b_u = total(_fixed_sums(u, r, mu, i, b_i, graph.n_src, bits))[0] / 2.0 ** bits / d_u
    return mu, b_u, b_i


def _fixed(x, bits):
    """``x`` as integers in units of 2^−bits (int64): their sums are exact in any order."""
    return np.rint(np.ldexp(x, bits)).astype(np.int64)


def _fixed_sums(index, r, mu, other, b, n, bits):
    """Per id 0 … n−1, the fixed-point sum of r − μ − b[other] over the edges whose
    ``index`` it is (``_fixed``'s units, in one compiled pass)."""
    out = np.zeros(n, np.int64)
    residual_fixed_sums(index, r, mu, other, b, 2.0 ** bits, out)
    return out


def baseline_rmse(graph, test, clip=None, scale=1.0, gather=None):
    """The test RMSE of ``bias_baseline`` fitted on ``graph``, as the model's is measured
    (udfs/mf.rmse: an unknown user or item adds no bias; predictions clipped to ``clip``);
    None without test ratings or without training ratings (on any worker)."""
    fit = bias_baseline(graph, scale=scale, gather=gather)
    if fit is None or test is None or not test.num_edges:
        return None
    mu, b_u, b_i = fit
    return mf.rmse({"p": np.zeros((len(b_u), 1)), "b": b_u}, {"p": np.zeros((len(b_i), 1)), "b": b_i}, test, mu,
                   clip)


def ranking_at(U, I, seen, test, k, mu=0.0, chunk=256, cold=None):
    """tux2.ranking's metrics at ``k`` of ``MF.ranking_metrics``' lists (the top-k items by
    μ + b_u + b_i + p_u·q_i among those with training edges and not in ``seen``, the
    training CSR; a test user without training edges gets the baseline's, μ + b_i, and counts
    as one user, as in ``ranking_metrics``) against each test user's items (an item without
    training edges: relevant, never listed).
    ``U``, ``I``: gathered (p, b) records in dense ids; ``test`` a graph in dense ids.
    ``cold``: per item, what ranks the baseline's list besides μ + b_i (implicit feedback,
    whose b_i are 0: the training counts, as ``recommend`` ranks a user without events)."""
    from tux2 import ranking
    n_u, n_i = len(U["p"]), len(I["p"])          # (records or dicts of arrays)
    known_u, known_i = np.diff(seen[0]) > 0, np.bincount(seen[1], minlength=n_i) > 0
    src, dst = np.asarray(test.src, np.int64), np.asarray(test.dst, np.int64)
    unk_u, unk_i = (np.zeros(len(src), bool),) * 2 if test.unknown is None else test.unknown
    unk_u = unk_u | (src >= n_u)
    unk_u[~unk_u] = ~known_u[src[~unk_u]]
    unk_i = unk_i | (dst >= n_i)
    unk_i[~unk_i] = ~known_i[dst[~unk_i]]
    top_id = max(n_u, int(src.max(initial=0)) + 1)   # one row per test user, an unknown one by its id as written
    key = np.where(unk_u, top_id + src, src)
    written = getattr(test, "unknown_ids", None)
    if test.unknown is not None and written is not None and test.unknown[0].any():
        codes = {}
        key[test.unknown[0]] = 2 * top_id + np.array([codes.setdefault(x, len(codes))
                                                      for x in written[0].tolist()], np.int64)
    ids, first, rows = np.unique(key, return_index=True, return_inverse=True)
    users, lists = np.unique(np.where(unk_u[first], -1, src[first]), return_inverse=True)  # -1: the baseline's list
    top = np.empty((len(users), min(k, n_i)), np.int64)
    col, Q = np.where(known_i, np.asarray(I["b"], np.float64), -np.inf), np.asarray(I["p"], np.float64)
    for lo in range(0, len(users), chunk):
        uu = users[lo: lo + chunk]
        un = uu < 0
        S = np.asarray(U["p"][np.maximum(uu, 0)], np.float64) @ Q.T
        S[un] = 0 if cold is None else cold
        mf.leave_out(S, uu, *seen)
        top[lo: lo + len(uu)] = mf.top_k(S, top.shape[1], mu + np.where(un, 0, U["b"][np.maximum(uu, 0)]), col)[0]
    return ranking.at_k(top[lists.reshape(-1)], rows.reshape(-1), np.where(unk_i, n_i + dst, dst), k)


def popular_at(seen, test, k):
    """``ranking_at`` of the most-popular lists: every test user gets the items it has not
    trained on in order of their number of training edges (the lower id first on a tie),
    the baseline a ranking metric of implicit feedback is read against."""
    n_u, n_i = len(seen[0]) - 1, int(max(seen[1].max(initial=-1) + 1, test.n_dst))
    counts = np.bincount(seen[1], minlength=n_i).astype(np.float64)
    return ranking_at({"p": np.zeros((n_u, 1)), "b": np.zeros(n_u)}, {"p": np.zeros((n_i, 1)), "b": counts},
                      seen, test, k)


def rating_scale(sd, mad=None):
    """The power of two that ratings of standard deviation ``sd`` are trained divided by:
    1 for 0.8 ≤ sd ≤ 1.5; above, the largest that brings sd to 1.5 or below (0.75 … 1.5);
    below, the smallest that brings it to 0.8 or above (0.8 … 1.6). As LibMF trains in
    units of the sd: the defaults (lr, init, λ) are those of star ratings (sd 0.9-1.3 on
    the public sets), and ml-1m × 20 diverged in its first epoch, ml-1m / 5 ended worse
    than the bias baseline. A power of two divides exactly, and a distributed run, whose
    sums differ in the last bits, gets the same one. 1 when the spread is that of a few
    extreme ratings (``outlying``): one mistyped 1e7 among stars would otherwise rescale
    them all to ~1e-5 and train a model of nothing, where as they are the run stops,
    telling to check the input."""
    scale = 1.0
    if not 0 < sd < math.inf or outlying(sd, mad):
        return scale
    if sd > SPREAD[1]:
        while sd / scale > SPREAD[1]:
            scale *= 2.0
    else:
        while sd / scale < SPREAD[0]:
            scale /= 2.0
    return scale


def _solve(M, y):
    """x of M x = y; where M is singular (a fold-in user none of whose items the model knows:
    M = 0; λ = 0 and fewer ratings than factors) the least-squares x of least norm: 0 for
    a user without known items, whom the baseline then predicts."""
    try:
        return np.linalg.solve(M, y)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(M, y, rcond=None)[0]


def outlying(sd, mad):
    """Whether a standard deviation ``sd`` is that of a few extreme ratings: their mean
    distance from the mean, ``mad``, below TYPICAL sd (k equal outliers among n ratings
    give about √(k/n): one among 3000, 0.02; 30, 0.1; a normal's is 0.80, a uniform's
    0.87, stars' 0.8-0.9, an exponential's 0.74)."""
    return mad is not None and mad < TYPICAL * sd


def refuse_counts(values, source):
    """InputError when ratings whose spread is a few extreme ones' (``outlying``) are
    counts: many distinct whole numbers >= 0 (plays, clicks; a mistyped 1e7 among stars
    has a few). Their squared loss diverges in the first epoch (Last.fm's plays: a
    median of 94, a largest of 419,157); on a log scale they are ratings like others."""
    v = np.asarray(values)
    if len(v) and v.min() >= 0 and np.all(v == np.floor(v)) and len(np.unique(v[:1 << 20])) > COUNT_LEVELS:
        raise InputError(f"the ratings look like counts (plays, clicks: whole numbers from {v.min():g} to "
                         f"{v.max():g}, median {np.median(v):g}), whose few huge values make MF's squared loss "
                         "diverge: give log(1 + count) as the rating (numpy.log1p; for column N of a file, "
                         "awk 'NR > 1 || $N ~ /[0-9]/ { $N = log(1 + $N) } 1', which leaves a header line as it is, with "
                         "-F'\\t' -v OFS='\\t' for tabs, -F, -v OFS=, for commas), or train on the counts as "
                         "implicit feedback (--mode als --implicit)", path=source)


def spread_note(s):
    """The header line of a run whose ratings were rescaled, or whose spread is that of
    a few extreme ratings (``rating_scale``)."""
    if s.scale != 1.0:
        return [f"  ratings' standard deviation {s.sd:.4g}, unlike star ratings': trained divided by {s.scale:.4g} "
                f"(standard deviation {s.sd / s.scale:.3g}), the units --reg and --lr apply in"]
    if s.sd == 0:
        return [f"  note: every training rating is {s.mu:g}: a model of one value learns nothing (it predicts "
                "that value); presence-only lines (clicks, plays, purchases) have no rating to fit: "
                "count them (--duplicates sum) or give a column of ratings (--columns)"]
    if outlying(s.sd, s.mad):
        return [f"  note: a rating lies {s.far:.4g} from the mean {s.mu:.4g} ({s.far / s.sd:.0f} standard "
                "deviations): the ratings train as they are, not rescaled; check the input for mistyped values"]
    return []


def vertex_model(eng, s):
    """The users' and items' (p, b) gathered on rank 0 (None, None elsewhere), in the
    ratings' units: the engine's model of ratings / s.scale, p and q times √scale and
    the biases times scale."""
    U, I = eng.vertex_data("user"), eng.vertex_data("item")
    if U is None:
        return None, None
    for d in (U, I):
        d["p"] *= np.sqrt(s.scale)
        d["b"] *= s.scale
    return U, I


class MF(Estimator):
    """Matrix factorisation by SGD or ALS, r̂(u, i) = μ + b_u + b_i + p_u·q_i (paper §4).

    Parameters are those of ``tux2 run mf`` (``reg`` is λ, ``damping`` D: udfs/mf.py;
    ``mode``: "sgd" (per-edge SGD), "minibatch" (the paper's Exchange-accumulate + Apply)
    or "als" (alternating least squares, udfs/als.py); None, the default, is "als" with
    ``implicit=True`` and "sgd" otherwise, as ``tux2 run mf`` picks it (``get_params`` keeps
    None; ``run_["mode"]``, model.json and checkpoints hold the mode used); ``implicit=True``:
    implicit feedback, Hu et al.'s r̂ = p_u·q_i, confidence 1 + ``alpha``·log(1 + r/``epsilon``) (Hu
    et al.'s log scaling, the default; ``confidence="linear"``: 1 + ``alpha``·r, their first form), and the
    per-epoch records hold the objective, precision@10 and NDCG@10; ``solver``: "cg", ``cg_steps``
    conjugate-gradient steps per solve, or "cholesky", the exact solve; None, the default, is
    "cg" with ``implicit=True``, as in ``implicit``, and "cholesky" for ratings, their only one).
    ``fit(data, test)``:
    ``data`` is anything ``tux2.loaders.load`` takes (a 'user item rating' file,
    (users, items, ratings) arrays with any ids, an (n, 3) array, a scipy.sparse
    matrix, a DataFrame), ``test`` the same in the same ids (test RMSE per epoch); or
    scikit-learn's ``fit(X, y)``, X's rows (user, item) pairs and y their ratings.
    Files are read with ``columns`` and ``base`` as ``tux2.loaders.load_edges`` reads
    them (``--columns``, ``--base``: extra columns ignored, '::' and header lines, 1-based
    ids kept as the model's ids). ``unknown``: a user or item of the test data,
    ``predict`` or ``recommend`` without training ratings — "baseline" (μ plus the known
    side's bias; for ``recommend`` the items of highest μ + b_i), "skip" (test: dropped;
    ``predict``: nan; ``recommend``: the user left out) or "error". ``ids`` of a file:
    "auto" (strings when the first lines' ids are not numbers), "int" or "string".
    Learned: ``user_factors_``, ``item_factors_``, ``user_bias_``, ``item_bias_``,
    ``mu_``, ``ids_`` (the two IdMaps: ``np.asarray(ids_[0])`` holds the users' ids in row order; None where dense ids are the user's) and
    ``seen_`` (each user's training items, left out of ``recommend``; ids without any
    are never scored or recommended: ``known_``) and, for a DataFrame, ``columns_`` (its
    user, item and rating columns: ``columns`` names them, default the first three;
    ``score`` reads a DataFrame's columns of those names). ``warm_start``: a ``fit``
    after the first starts from what it learned (``start_from(model)``: from another
    model's), each user and item matched by id; the others start as in a new model."""

    algorithm = "mf"
    _estimator_type = "regressor"
    bounds = dict(k=integer(1, 100_000), epochs=NONNEG, lr=POSITIVE, reg=NONNEG_NUMBER, alpha=NONNEG_NUMBER,
                  epsilon=PRIOR, damping=number(0, loaders.FLOAT32_MAX),      # D/n is kept in float32
                  batch_size=COUNT, blocks=integer(1, 65_536), seed=SEED, eval_every=NONNEG, early_stop=NONNEG,
                  cg_steps=integer(1, 1_000))
    choices = dict(mode=("sgd", "minibatch", "als"), implicit=(False, True), batch_unit=("edge", "vertex"), enumerate=("user", "item"),
                   step=("adagrad", "plain"), biases=(True, False), order=("strata", "blocked", "shuffle", "input"),
                   overlap=("error", "allow"), duplicates=loaders.DUPLICATES, base=("auto", 0, 1),
                   unknown=loaders.UNKNOWN, ids=loaders.ID_MODES, confidence=als.CONFIDENCE, solver=als.SOLVERS)
    _resumable = ("eval_every", "early_stop")

    @property
    def _mode(self):
        """The mode this fit trains in (``auto_mode``: ``mode``, or by ``implicit`` when None);
        ``get_params`` keeps ``mode`` as given."""
        return auto_mode(self.mode, self.implicit)

    @property
    def _solver(self):
        """The solver of this fit: ``auto_solver``'s, but with solver=None Cholesky when the data's
        largest confidence exceeds ``CG_MAX_CONFIDENCE`` (``prepare`` decides, ``_data_solver``)."""
        return vars(self).get("_data_solver") or auto_solver(self.solver, self.implicit)

    def _params_used(self, params):
        implicit = params.get("implicit", False)
        solver = vars(self).get("_data_solver") if params.get("solver") is None else None
        return {**params, **({"mode": auto_mode(params["mode"], implicit)} if "mode" in params else {}),
                **({"solver": solver or auto_solver(params["solver"], implicit)} if "solver" in params else {}),
                **({k: v for k, v in NO_CONFIDENCE.items() if k in params} if not implicit else {})}

    @property
    def _stop(self):
        if self._mode == "als":
            return "training diverged at epoch {n} ({key} is not finite); check the input values or raise --reg"
        return "training diverged at epoch {n} ({key} is not finite); lower --lr"

    def __init__(self, k=50, epochs=10, lr=None, reg=0.07, damping=DAMPING, mode=None, batch_size=None,
                 batch_unit="edge", enumerate="item", step="adagrad", biases=True, order=None, blocks=None, overlap="error",
                 partitioner=None, seed=0, eval_every=1, early_stop=0, duplicates="error", columns=None, base="auto",
                 unknown="baseline", ids="auto", implicit=False, alpha=ALPHA, confidence=CONFIDENCE, epsilon=1.0,
                 solver=None, cg_steps=CG_STEPS, warm_start=False):
        self._keep(locals())

    @property
    def _watch(self):
        return "objective" if self.implicit else "train_rmse"

    @property
    def _goal(self):
        """(the test metric early stopping and the reports watch, its sign: +1 lower is
        better): the test RMSE, or with implicit feedback NDCG@10 of the held-out items."""
        return (f"ndcg@{RANK_AT}", -1) if self.implicit else ("test_rmse", 1)

    # ------------------------------------------------------------ data → program
    def load_data(self, data, test=None):
        """Training ratings and, when given, test ratings in the training ids (a user or
        item the training data lacks: ``unknown``)."""
        # a DataFrame's columns by name: ``columns``, else frame_columns'
        is_y = not isinstance(test, tuple) and np.ndim(test) in (1, 2) and np.shape(test)[1:] in ((), (1,))
        xy = _pairs(data, test) if is_y else None
        if xy is not None:              # scikit-learn's fit(X, y): X's rows (user, item), y the ratings
            data, test = xy, None
        elif self.implicit and _events(data, self.columns) is not None:     # fit(X): one event per row
            data = _events(data, self.columns)
        facts = {"frame_columns": frame_columns(data, self.columns)} if loaders.is_frame(data) else {}
        if loaders.is_frame(test) and facts and set(facts["frame_columns"]) <= set(test.columns):
            test = user_rows(test, facts["frame_columns"])      # by the training frame's names, not position
        data = user_rows(_rows3(data, "MF.fit") if isinstance(data, (np.ndarray, list)) else data, self.columns)
        if loaders.is_path(data):
            g = loaders.load_edges(data, ids=self.ids, duplicates=self.duplicates, type_names=NAMES,
                                   columns=self.columns, base=self.base, dense=True, ratings=True)
            facts = {"read_as": loaders.describe_read(g, self.base), "id_base": int(g.base)}
        elif isinstance(data, tuple) and len(data) in (2, 3):      # ids as arrays: sparse integers numbered densely
            g = loaders.from_arrays(*data, duplicates=self.duplicates, dense=True)
        else:
            g = loaders.load(data, **({} if isinstance(data, BipartiteGraph) else {"duplicates": self.duplicates}))
        train = ratings(g, implicit=self.implicit)
        return Dataset(train, None if test is None else self.test_data(test, train), **facts)

    def test_data(self, test, train):
        """``test`` (a path, (users, items, ratings) in the user's ids, or what
        ``tux2.loaders.load`` takes in dense ids) in ``train``'s dense ids, its unknown
        users and items handled by ``unknown``."""
        known = loaders.known_ids(train)
        what = "test file needs a rating column"
        if loaders.is_path(test):
            t = loaders.load_edges(test, type_names=NAMES, id_maps=train.ids, known=known, unknown=self.unknown,
                                   columns=loaders.columns_like(test, self.columns, train.layout))
            return ratings(t, what=what, implicit=self.implicit)
        pairs = _events(test, self.columns) if self.implicit else None
        if pairs is None and self.implicit and isinstance(test, tuple) and len(test) == 2:
            pairs = test
        if pairs is not None:                   # implicit feedback's (user, item) events: one each
            test = (*pairs, np.ones(len(pairs[0]), np.float32))
        test = user_rows(test, self.columns)    # its ids are the user's, as predict takes them (not dense ids)
        if isinstance(test, tuple):
            u, i, r = (np.asarray(x) for x in test)
            dense = [loaders.dense_ids(m, x, n) for m, x, n in zip(train.ids, (u, i), train.n)]
            return loaders.in_known_ids(*dense, r, known, self.unknown, NAMES, "test", train.ids, (u, i))
        t = ratings(loaders.load(test), what=what, implicit=self.implicit)
        return loaders.in_known_ids(t.src, t.dst, t.values, known, self.unknown, NAMES, t.source, train.ids)

    def schedule(self, parts):
        """(order, blocks, partitioner): per-edge SGD runs in strata on the stratified
        partitioner, so every P up to ``blocks`` gives the one-partition model; the
        mini-batch form accumulates and needs no strata."""
        order = self.order or ("strata" if self._mode == "sgd" else "blocked")
        if self._mode == "als" and order == "strata":
            raise Tux2Error("--order strata is per-edge SGD's schedule: --mode als accumulates each vertex's normal "
                            "equations and needs no strata; leave --order out (blocked), or use --mode sgd")
        blocks = self.blocks if self.blocks is not None else max(16, parts)   # the model depends on B only
        partitioner = self.partitioner or ("stratified" if order == "strata" else "bicut")
        if order == "strata" and self.batch_unit == "vertex":
            raise Tux2Error("--batch-unit vertex does not cut clocks at strata: per-edge SGD (--mode sgd) runs in "
                            "strata of edges; use --batch-unit edge, or --mode minibatch")
        if order == "strata" and partitioner != "stratified" and parts > 1:
            raise Tux2Error(f"--order strata needs --partitioner stratified (got {partitioner}): its parts own "
                            "whole row blocks, which is what makes the strata conflict-free; leave --partitioner "
                            "out, or use --mode minibatch, whose Exchange only accumulates")
        if partitioner == "stratified" and parts > blocks:
            raise Tux2Error(f"{parts} partitions need --blocks >= {parts} (got {blocks})")
        return order, blocks, partitioner

    def tiled(self):
        return (self.order or ("strata" if self._mode == "sgd" else "blocked")) == "strata"

    def _unused(self):
        sgd, als_ = self._mode == "sgd", self._mode == "als"
        order = f"--order {self.order or ('strata' if sgd else 'blocked')}"
        mode = f"--mode {self._mode}" + (" (the default with --implicit)" if self.mode is None and self.implicit
                                         else "")
        return [(name, other, only) for name, used, other, only in (
            ("lr", not als_, mode, "--mode sgd or minibatch: ALS solves each vertex exactly, with no step"),
            ("batch_size", not als_, mode, "--mode sgd or minibatch: an ALS half-epoch solves every vertex"),
            ("batch_unit", not als_, mode, "--mode sgd or minibatch"),
            ("implicit", als_, mode, "--mode als"),
            ("alpha", self.implicit, "explicit ratings", "--implicit"),
            ("confidence", self.implicit, "explicit ratings", "--implicit"),
            ("epsilon", self.implicit and self.confidence == "log",
             f"--confidence {self.confidence}" if self.implicit else "explicit ratings",
             "--implicit --confidence log"),
            ("solver", self.implicit or self.solver == "cholesky", "explicit ratings",
             "--implicit (explicit ratings are solved by Cholesky)"),
            ("cg_steps", self.implicit and self._solver == "cg",
             f"--solver {self._solver}" if self.implicit else "explicit ratings", "--implicit --solver cg"),
            ("biases", not self.implicit, "--implicit", "explicit ratings (implicit feedback has no biases)"),
            ("step", self._mode == "minibatch", mode, "--mode minibatch"),
            ("early_stop", self.eval_every > 0, "--eval-every 0", "--eval-every 1 or more"),
            ("enumerate", self.batch_unit == "vertex", f"--batch-unit {self.batch_unit}", "--batch-unit vertex"),
            ("damping", self.biases and not self.implicit, "--implicit" if self.implicit else "--no-biases", None),
            ("overlap", sgd and not self.tiled(), order if sgd else mode,
             "--mode sgd and an --order other than strata"),
            ("blocks", self.tiled() or self.partitioner == "stratified", order,
             "--order strata or --partitioner stratified")) if not used]

    def single_clock(self):
        """One clock per epoch (per-edge SGD without --batch-size)."""
        return self.batch_size is None and self._mode == "sgd"

    def order_edges(self, train, order, blocks):
        """(train in the global edge order, strata bounds or None, tile bounds or None)."""
        if order == "strata":
            perm, strata, tiles = stratified_order(train.src, train.dst, train.n_src, train.n_dst, blocks,
                                                   seed=self.seed, tiles=True)
            return train.permuted(perm), strata, tiles
        if order == "blocked":       # one clock per epoch: LibMF's order inside tiles; several: file order
            return train.permuted(blocked_order(train.src, train.dst, train.n_src, train.n_dst, seed=self.seed,
                                                within="sorted" if self.single_clock() else "input")), None, None
        if order == "shuffle":
            return train.permuted(np.random.default_rng(self.seed).permutation(train.num_edges)), None, None
        return train, None, None

    def prepare(self, data, parts):
        order, blocks, partitioner = self.schedule(parts)
        train, ingress = data.train, "assignment" in data.facts
        if self.early_stop and not (data.test.num_edges if data.test is not None else ingress):    # (rank 0 has it)
            raise Tux2Error(f"--early-stop {self.early_stop} (early_stop=) watches the test "
                            f"{'NDCG' if self.implicit else 'RMSE'}: give test ratings "
                            "(--test FILE or a --test-fraction above 0; from Python: fit(data, test))")
        # whole blocks of users per partition: 1000 partitions on 200 users left 800 empty and took
        # minutes an epoch (more partitions than edges: the runner's message)
        if partitioner == "stratified" and train.n_src < parts <= train.num_edges:
            raise Tux2Error(f"{parts} partitions for {train.n_src} users: the stratified partitioner gives each "
                            "partition whole blocks of users, so some would be empty; use at most as many "
                            "partitions as users")
        if ingress:                 # tux2.ingress: this worker's share, placed and ordered
            strata, tiles, degrees = train.strata, train.tiles, train.degrees
            mu, sd, mad, far, (low, high) = (data.facts[k] for k in ("mu", "sd", "mad", "far", "range"))
            engine = {"assignment": data.facts["assignment"]}
        else:
            train, strata, tiles = self.order_edges(train, order, blocks)
            mu = float(train.values.mean(dtype=np.float64)) if train.num_edges else 0.0
            sq, ab, far, low, high = loaders.deviations(train.values, mu)
            n = max(train.num_edges, 1)
            sd, mad = math.sqrt(sq / n), ab / n
            engine, degrees = {"partitioner": partitioner}, loaders.degrees(train)
        known = tuple(d > 0 for d in degrees)
        if outlying(sd, mad) and not self.implicit:
            refuse_counts(train.values, data.source)
        if self.implicit and low <= high <= 0:     # (the range over every worker's edges with distributed ingress)
            raise InputError(f"no value above 0 (the largest is {high:g}): with --implicit an edge of value r <= 0 "
                             "is preference 0, so every preference would be 0 and the model would score every "
                             "item 0; implicit feedback counts events (plays, clicks: values > 0, or no value "
                             "column, one event per line)", path=data.source)
        scale = rating_scale(sd, mad) if not self.implicit else 1.0     # counts are implicit feedback's input
        # counts whose spread is a few huge ones' (plays): their confidences 1 + alpha·r dwarf the rest
        heavy = None
        if self.implicit and outlying(sd, mad):
            v = None if ingress else np.asarray(train.values)
            heavy = {"median": float(np.median(v[v > 0])) if v is not None and (v > 0).any() else None,
                     "high": float(high)}
        if scale != 1.0:            # star ratings: no copy (100M ratings would take 1.2 GB more at their peak)
            # a power of two divides float32 ratings exactly, and commutes with rounding distributed ingress's
            # float64 ones to float32: both readers train on the same values
            train = copy.copy(train)
            train.values = np.asarray(train.values, np.float32) / np.float32(scale)
        batch = self.batch_size
        if batch is None and self._mode == "minibatch" and self.batch_unit == "vertex":
            # about MINIBATCH_SIZE edges' worth of the enumerated vertices (a whole epoch in one step
            # takes one AdaGrad step per epoch, and its first one is large)
            n_enum = train.n_src if self.enumerate == "user" else train.n_dst
            batch = max(1, round(mf.MINIBATCH_SIZE * n_enum / max(train.num_edges, 1)))
        self._data_solver = None
        if self._mode == "als" and self.implicit and self.solver is None and self._solver == "cg" and als.confidences(
                [max(abs(low), abs(high))], self.alpha, self.confidence, self.epsilon)[0] > CG_MAX_CONFIDENCE:
            self._data_solver = "cholesky"          # CG's few steps fall short where confidences span this much
        if self.implicit:
            mu, low, high = 0.0, 1.0, 0.0       # preference scores: no mean, no clipping to the counts' range
        if self._mode == "als":
            prog = als.program(k=self.k, reg=self.reg, biases=self.biases, mu=mu / scale, damping=self.damping,
                               degrees=degrees, implicit=self.implicit, alpha=self.alpha,
                               confidence=self.confidence if self.implicit else "linear", epsilon=self.epsilon,
                               solver=self._solver, cg_steps=self.cg_steps)
        else:
            prog = mf.program(k=self.k, mode=self._mode, lr=self.lr, reg=self.reg, batch_size=batch,
                              batch_unit=self.batch_unit, enumerate=self.enumerate, overlap=self.overlap,
                              step=self.step, biases=self.biases, mu=mu / scale, damping=self.damping,
                              degrees=degrees)
        engine.update(strata=strata, tiles=tiles,
                      partitioner_options={"blocks": blocks} if partitioner == "stratified" else None)
        ids = data.train.ids
        warm = self._warm(prog, ids, known, mu, scale) if self._warms() else None
        return Setup(train, prog, engine, test=data.test, evaluate=data.test is not None or ingress, heavy=heavy,
                     mu=mu, sd=sd, mad=mad, far=far, scale=scale, source=data.source, partitioner=partitioner,
                     known=known, read_as=data.facts.get("read_as"), ingress=ingress, ids=ids,
                     held_out=bool(data.facts.get("held_out")),
                     frame_columns=data.facts.get("frame_columns"), clip=(low, high) if low <= high else None,
                     warm=warm, meta={"mode": self._mode, "partitioner": partitioner,
                           "lr": prog.context.init.get("lr"), "mu": mu,
                           "rating_scale": scale,     # "context" (mu, rmse, …) is in units of ratings / it
                           "ids": "string" if any(m is not None and m.tokens.dtype.kind not in "iu" for m in ids)
                           else "int", "id_base": data.facts.get("id_base", 0)})

    def _warms(self):
        """Whether this fit starts from the model learned before (``warm_start``, ``--init-model``)."""
        return self.warm_start and "user_factors_" in vars(self)

    def start_from(self, model):
        if isinstance(model, (str, os.PathLike)):
            model = type(self).load(os.fspath(model))
        super().start_from(model)
        if model is not None:               # the form it was fitted in (a set_params since changes the next fit only)
            self._started_implicit = bool(vars(model).get("_fit_params", {}).get("implicit", model.implicit))
        return self

    def _warm(self, prog, ids, known, mu, scale):
        """Wrap ``prog``'s initialiser so that every user and item the model learned before
        (by its id, as ``lookup`` finds it, and with training ratings then) starts from its
        factors and bias; the others start as in a new model. Item biases take up the
        change of μ, so a vertex's first prediction is the old model's. Returns how many
        of the users and items with training ratings (``known``) it gave, for the header."""
        was = vars(self).get("_started_implicit", vars(self).get("_fit_params", {}).get("implicit", self.implicit))
        if was != self.implicit:           # preference scores without biases against ratings around μ: another model
            raise Tux2Error("the model to start from was trained on " + (
                "implicit feedback (--implicit): its factors score preferences, with no biases and no mean; this fit "
                "is of explicit ratings: give --mode als --implicit" if was else
                "explicit ratings: its factors and biases predict ratings around a mean; this fit is of implicit "
                "feedback: leave out --implicit") + " (a warm start keeps the model's form)")
        vars(self).pop("_started_implicit", None)
        if self.user_factors_.shape[1] != self.k:
            k = self.user_factors_.shape[1]
            raise Tux2Error(f"the model to start from has k={k} factors and this fit k={self.k}: give it k={k} "
                            f"(--k {k})")
        rows = []
        for side, m in enumerate(ids):
            dense = np.arange(len(known[side]))
            old = self.lookup(side, dense if m is None else m.decode(dense))
            have = old >= 0
            have[have] = self.known_[side][old[have]]
            rows.append((np.flatnonzero(have), old[have]))
        if not any(len(to) for to, _ in rows) and any(k.any() for k in known):
            shown = [", ".join(map(str, self.user_ids(side, np.flatnonzero(self.known_[side])[:3]).tolist()))
                     for side in (0, 1)]
            raise Tux2Error(f"no user and no item of this data is one the model to start from learned (its users "
                            f"{shown[0]} …, items {shown[1]} …): a warm start matches them by id, so these are other "
                            "ids (renumbered, other columns: --columns, --base), or start a new model (without "
                            "--init-model; from Python: without start_from or warm_start)")
        root = math.sqrt(scale)         # the engine's units (vertex_model): ratings / scale
        values = {"user": (self.user_factors_ / root, self.user_bias_ / scale),
                  "item": (self.item_factors_ / root, (self.item_bias_ + self.mu_ - mu) / scale)}
        first, taken = prog.init_vertices, dict(zip(NAMES, rows))
        # AdaGrad's history of the vertices learned before goes on, as in a longer fit, when it is
        # this form's in these units (else it starts afresh, as a new model's does)
        state = vars(self).get("step_state_", {})
        if str(state.get("form")) != self._form(scale):
            state = {}

        def init_vertices(name, data, rng):
            first(name, data, rng)              # the new ids' draws are those of a new model
            to, frm = taken[name]
            data["p"][to], data["b"][to] = values[name][0][frm], values[name][1][frm]
            for f in STEP_STATE:
                v = state.get(f"{name}_{f}")
                if v is not None and f in data.dtype.names and len(v) == len(values[name][1]):
                    data[f][to] = v[frm]
        prog.init_vertices = init_vertices
        return tuple(int(k[to].sum()) for k, (to, _) in zip(known, rows))

    # ------------------------------------------------------------ the run
    def record(self, eng, s):
        i = eng.iteration
        ctx = eng.context()
        rec = {"objective": ctx["objective"]} if self.implicit else {"train_rmse": ctx["rmse"] * s.scale}
        if s.evaluate:                          # rank 0 evaluates; the gathers are collective
            evaluate = i == self.epochs or (self.eval_every > 0 and i % self.eval_every == 0)
            U, I = vertex_model(eng, s) if evaluate else (None, None)
            tested = U is not None and s.test is not None and s.test.num_edges    # none: --test-fraction 0
            if self.implicit:
                if evaluate and "seen" not in vars(s):
                    s.seen = self._seen(eng, s)             # (collective with distributed ingress)
                m = ranking_at(U, I, s.seen, s.test, RANK_AT, s.mu,
                               cold=np.bincount(s.seen[1], minlength=len(I["p"]))) if tested else {}
                if tested and "popular" not in vars(s):
                    s.popular = popular_at(s.seen, s.test, RANK_AT)
                rec.update({f"{name}@{RANK_AT}": m.get(name) for name in ("precision", "ndcg")})
                if tested:      # the baseline the run prints, for Python and --metrics readers too
                    rec.update({f"popular_{name}@{RANK_AT}": s.popular.get(name) for name in ("precision", "ndcg")})
            else:
                if evaluate and "baseline" not in vars(s):
                    s.baseline = self._baseline(eng, s)     # (collective with distributed ingress)
                rec["test_rmse"] = mf.rmse(U, I, s.test, s.mu, s.clip) if tested else None
                if tested and s.baseline is not None:   # the baseline the run prints, for Python and --metrics too
                    rec["baseline_rmse"] = s.baseline
            key, sign = self._goal
            now = rec[key]
            if self.early_stop and now is not None and sign * now < vars(s).get("best", (np.inf,))[0]:
                s.best = (sign * now, i, U, I)          # the model early stopping keeps
        return rec

    def _seen(self, eng, s, held=False):
        """Each user's training items (CSR) and, with ``held`` when a share of the input was
        held out to test (--test-fraction), those of known users and items there too: the
        model's, for the user rated them, so recommend leaves them out as well (the run's
        ranking metrics rank them: training items alone). Gathered from every worker with
        distributed ingress."""
        g, src, dst = s.graph, [s.graph.src], [s.graph.dst]
        t = s.test if held and vars(s).get("held_out") else None
        if t is not None and t.num_edges:
            known = np.ones(t.num_edges, bool) if t.unknown is None else ~(t.unknown[0] | t.unknown[1])
            src.append(t.src[known])
            dst.append(t.dst[known])
        if s.ingress:                             # each worker holds some edges: the rated items, gathered
            pieces = eng.transport.allgather("seen", [np.concatenate(src), np.concatenate(dst)])
            src, dst = [p[0] for p in pieces], [p[1] for p in pieces]
        return seen_csr(BipartiteGraph(np.concatenate(src), np.concatenate(dst), None, g.n_src, g.n_dst, NAMES))

    def _baseline(self, eng, s):
        """The bias baseline's test RMSE (``baseline_rmse``) on this worker's test set (None
        without one), from every training rating (with distributed ingress, every worker's
        sums per vertex)."""
        gather = eng.transport.allgather if s.ingress else None
        return baseline_rmse(s.graph, s.test, s.clip, s.scale, gather)     # (collective: every worker takes part)

    def _rates(self, s):
        return {"edges_per_s": s.graph.num_edges}

    def _header(self, s, parts, world):
        test = s.test.num_edges if s.test is not None else 0
        users, items = (int(k.sum()) for k in s.known)          # ids without ratings are not counted
        return [f"tux2 {__version__} mf ({self._mode}{', implicit' if self.implicit else ''}): {s.source}"] + \
            ([f"  read as: {s.read_as}"] if s.read_as else []) + \
            [f"  train {s.graph.num_edges} ratings, test {test}{unknown_note(s.test, self.implicit)}; {users} users × {items} items; "
             f"k={self.k}, P={parts} ({s.partitioner})" + (f", {world} workers" if world > 1 else "")
             + (", distributed ingress" if s.ingress else "")] + cold_note(s.test, self.implicit) + \
            ([] if self.implicit else spread_note(s)) + \
            ([f"  ALS: λ={self.reg:g} " + (f"(plain), confidence {self._confidence_text()}, {self._solver_text()}"
                                          if self.implicit else
                                          "per rating (weighted-λ)")] if self._mode == "als" else []) + \
            ([f"  started from the model learned before: {s.warm[0]} of {users} users and {s.warm[1]} of {items} "
              "items (the others as in a new model)"] if s.warm else []) + self._units_note(s) + \
            ([f"  note: {parts} partitions take {parts} row and column blocks (16 up to 16 partitions): the model of "
              f"--blocks {parts} on any number of partitions, not that of --partitions 1 (--blocks 32 keeps one "
              "model up to 32)"] if self.blocks is None and self.tiled() and parts > 16 else [])

    def _solver_text(self):
        return f"{self.cg_steps} conjugate-gradient steps per solve" if self._solver == "cg" else \
            "exact solves (Cholesky" + (f"; auto: confidences above {CG_MAX_CONFIDENCE:g}, where a few conjugate-"
                                        "gradient steps fall short)" if vars(self).get("_data_solver") else ")")

    def _confidence_text(self, alpha=None):
        """The confidence formula as the header prints it: '1 + 40·r', '1 + 1·log(1 + r)',
        '1 + 3·log(1 + r/0.5)'."""
        a = f"{self.alpha if alpha is None else alpha:g}"
        if self.confidence != "log":
            return f"1 + {a}·r"
        return f"1 + {a}·log(1 + r{'' if self.epsilon == 1 else f'/{self.epsilon:g}'})"

    def _units_note(self, s):
        """A warm start's note when the model's ratings and this data's are of other units
        (ranges apart, or spans 10× apart: stars and ratings × 1000): the factors then
        predict in the model's units, and the first epochs undo them."""
        old, new = vars(self).get("rating_range_"), s.clip
        if not s.warm or old is None or new is None:
            return []
        spans = sorted((old[1] - old[0], new[1] - new[0]))
        if old[1] >= new[0] and new[1] >= old[0] and spans[1] <= 10 * max(spans[0], 1e-12) or spans[1] == 0:
            return []
        return [f"  note: the model was trained on ratings from {old[0]:g} to {old[1]:g}, these are from {new[0]:g} "
                f"to {new[1]:g}: its factors predict in the other units (a fit from scratch may do better)"]

    def _line(self, rec, n):
        if self.implicit:
            return (f"epoch {rec['epoch']:3d}/{n}  objective {rec['objective']:.6g}  "
                    + "".join(f"{m}@{RANK_AT} {rec[f'{m}@{RANK_AT}']:.4f}  " for m in ("precision", "ndcg")
                              if rec.get(f"{m}@{RANK_AT}") is not None)
                    + f"time {rec['time_s']:.3f}s  ({rec['edges_per_s'] / 1e6:.1f} M edges/s)")
        return (f"epoch {rec['epoch']:3d}/{n}  train_rmse {rec['train_rmse']:.4f}  "
                + (f"test_rmse {rec['test_rmse']:.4f}  " if rec.get("test_rmse") is not None else "")
                + f"time {rec['time_s']:.3f}s  ({rec['edges_per_s'] / 1e6:.1f} M edges/s)")

    def _history(self, history):
        """(epoch, value) of the test metric (``_goal``) in ``history``, signed so that lower is better."""
        key, sign = self._goal
        return [(r["epoch"], sign * r[key]) for r in history if r.get(key) is not None]

    def _words(self):
        """(the test metric's name, 'lowest'/'highest', 'fallen below'/'risen above', 'rose'/'fell')."""
        if self.implicit:
            return f"test NDCG@{RANK_AT}", "highest", "risen above", "fell"
        return "test RMSE", "lowest", "fallen below", "rose"

    def _report(self, s):
        """Explicit ratings: the bias baseline's test RMSE (``_against_baseline``); implicit
        feedback: the most-popular baseline's precision and NDCG beside the model's (and a
        note when the model ranks below it); then ``_overfit``'s note."""
        lines = self._overfit(s)
        if not self.implicit:
            return self._against_baseline(s, overfits=bool(lines)) + lines
        pop = vars(s).get("popular")
        if pop is None or pop.get("ndcg") is None:
            return lines
        last = next((r[f"ndcg@{RANK_AT}"] for r in reversed(self.history_) if r.get(f"ndcg@{RANK_AT}") is not None),
                    None)
        if self.early_stop and "best" in vars(s):       # the model kept is the best epoch's
            last = -s.best[0]
        said = [f"  most-popular baseline (each test user's unseen items by training count): precision@{RANK_AT} "
                f"{pop['precision']:.4f}  ndcg@{RANK_AT} {pop['ndcg']:.4f}"]
        heavy = vars(s).get("heavy")
        below = last is not None and last < 0.95 * pop["ndcg"]
        if last is not None and heavy and self.confidence == "linear" and (
                self.alpha * heavy["median"] > 2 if heavy["median"] else self.alpha * heavy["high"] > 100):
            # a smaller k or a larger λ does not help here (Last.fm look-alike: k 10 NDCG 0.014, λ 1 0.042,
            # linear α 40 0.042; alpha 0.1: 0.137); log confidence at alpha 1 ranked best on every heavy-tailed
            # look-alike and on real Last.fm plays (README: hetrec-2k 0.025 → 0.204)
            typical = f", 1/the median count: {1 / heavy['median']:.2g}" if heavy["median"] else ""
            said.append("  note: " + (f"the model's test NDCG@{RANK_AT} ({last:.4f}) is below the most-popular "
                                      f"baseline's ({pop['ndcg']:.4f}), and " if below else "")
                        + f"these counts are heavy-tailed (the largest {heavy['high']:g}"
                        + (f", the median {heavy['median']:g}" if heavy["median"] else "")
                        + f"): confidences 1 + {self.alpha:g}·r let a few pairs outweigh the rest; "
                        "--confidence log --alpha 1 (the defaults: c = 1 + log(1 + r), Hu et al.'s log scaling; it "
                        "ranked best on real plays, README) or a smaller "
                        f"--alpha (now {self.alpha:g}{typical}) weighs them evenly")
        elif below:      # (k = 1 ranks as popularity does, within 1 %)
            said.append(f"  note: the model's test NDCG@{RANK_AT} ({last:.4f}) is below the "
                        f"most-popular baseline's ({pop['ndcg']:.4f}): these events say little beyond popularity, "
                        f"or the model overfits them; a smaller --k (now {self.k}) or a larger --reg (now "
                        f"{self.reg:g}) ranks closer to popularity")
        return said + lines

    def _against_baseline(self, s, overfits=False):
        """The bias baseline's test RMSE after the last epoch, and a note when the model's
        is not below it (factors that learned nothing, or worse: a large λ, too few epochs;
        ``overfits``: ``_overfit``'s note follows, naming the remedies of the other way)."""
        base = vars(s).get("baseline")
        if base is None:
            return []
        last = next((r["test_rmse"] for r in reversed(self.history_) if r.get("test_rmse") is not None), None)
        if self.early_stop and "best" in vars(s):       # the model kept is the best epoch's
            last = s.best[0]
        said = [f"  bias baseline (mean + user and item biases damped by D = {BASELINE_DAMPING:g}, no factors): "
                f"test_rmse {base:.4f}"]
        if last is not None and not last < base:
            said.append(f"  note: the model's test RMSE ({last:.4f}) is not below the bias baseline's ({base:.4f}): "
                        "it predicts these ratings no better than the biases alone" + (
                            "; it overfits them (below)" if overfits else f"; try more --epochs (now {self.epochs}), "
                            f"a smaller --reg (now {self.reg:g})" + (" or --mode als (exact solves, no step size)"
                                                                     if self._mode != "als" else "")))
        return said

    def _overfit(self, s):
        """A note when the test metric ended 1 % or more worse than its best, at an earlier
        epoch: the model overfits (sparse data: a median user with a handful of ratings)."""
        h, sign = self._history(self.history_), self._goal[1]
        name, best_word, _, moved = self._words()
        if self.early_stop and "best" in vars(s) and s.best[1] < self.run_["iteration"]:
            since = " since the resume" if min(x for _, x in h) < s.best[0] else ""    # (kept by the checkpoint's run)
            return [f"  the model is epoch {s.best[1]}'s, of the {best_word} {name}{since} ({sign * s.best[0]:.4f}; "
                    "--early-stop keeps it)"]
        best = min(h, key=lambda x: x[1], default=None)
        # (a rise within the printed digits, e.g. on ratings of one value: 0.0000 to 0.0000, is none)
        if best is None or h[-1][1] - best[1] < 0.01 * abs(best[1]) or round(h[-1][1], 4) == round(best[1], 4):
            return []
        return [f"  note: the {name} was {best_word} at epoch {best[0]} ({sign * best[1]:.4f}) and {moved} to "
                f"{sign * h[-1][1]:.4f} (epoch {h[-1][0]}): the model overfits these ratings; fewer --epochs (or "
                f"--early-stop 2), a larger --reg (now {self.reg:g}) or a smaller --k (now {self.k}) fits them better"]

    @property
    def _stops_early(self):
        return self.early_stop > 0

    def _early(self, history, s):
        """``early_stop`` N: the test metric has not bettered its best for N evaluations."""
        h, sign = self._history(history), self._goal[1]
        name, best_word, moved, _ = self._words()
        best = min(range(len(h)), key=lambda j: h[j][1], default=None)
        if not self.early_stop or best is None or len(h) - 1 - best < self.early_stop:
            return None
        kept = vars(s).get("best", (np.inf,))[0] <= h[best][1]
        return (f"  stopped early: the {name} has not {moved} {sign * h[best][1]:.4f} (epoch {h[best][0]}) for "
                f"{self.early_stop} evaluation(s) (--early-stop)" + ("" if kept else "; that epoch came before the "
                                                                    f"resume, whose {best_word} is the model"))

    def _kept(self, s):
        if self.early_stop and "best" in vars(s):
            key, sign = self._goal
            return {"user": s.best[2], "item": s.best[3]}, {key: sign * s.best[0], "epoch": s.best[1]}
        return None

    def _take_kept(self, s, arrays, meta):
        key, sign = self._goal
        s.best = (sign * float(meta[key]), int(meta["epoch"]), arrays["user"], arrays["item"])

    def read_model(self, eng, s):
        U, I = vertex_model(eng, s)
        if self.early_stop and "best" in vars(s):
            s.meta["best_epoch"] = s.best[1]        # the kept model's epoch (model.json's "iteration": epochs run)
            if U is not None and s.best[1] < eng.iteration:
                U, I = s.best[2:]       # the lowest test RMSE's, when training went on past it
        # (collectives with distributed ingress)
        seen = self._seen(eng, s, held=True) if vars(s).get("held_out") or "seen" not in vars(s) else s.seen
        if U is not None:
            self._set(U, I, s.mu, s.ids, seen, s.clip)
            self.rating_scale_ = float(s.scale)
            # AdaGrad's per-vertex history (udfs/mf.py), in the engine's units: a warm start goes on with it
            self.step_state_ = {f"{name}_{f}": np.array(d[f]) for name, d in zip(NAMES, (U, I))
                                for f in STEP_STATE if f in d.dtype.names}
            if self.step_state_:
                self.step_state_["form"] = np.array(self._form(s.scale))
            vars(self).pop("columns_", None)
            if s.frame_columns is not None:     # score() reads a DataFrame's columns of these names
                self.columns_ = list(s.frame_columns)

    def _set(self, users, items, mu, ids, seen, clip):
        """``clip``: the training ratings' (min, max), which predictions stay in (None:
        a model saved before tux2 kept it, whose predictions are not clipped)."""
        self.user_factors_, self.user_bias_ = np.asarray(users["p"], np.float64), np.asarray(users["b"], np.float64)
        self.item_factors_, self.item_bias_ = np.asarray(items["p"], np.float64), np.asarray(items["b"], np.float64)
        self.mu_, self.ids_, self.seen_ = float(mu), tuple(ids), seen
        self.rating_range_ = None if clip is None else tuple(float(x) for x in clip)

    # ------------------------------------------------------------ files
    def _form(self, scale):
        """What a step history is valid for: the form that made it and the units of its ratings."""
        return f"{self._mode}{'/' + self.step if self._mode == 'minibatch' else ''}/{scale:g}"

    def _files(self):
        state = vars(self).get("step_state_", {})
        out = {f"{name}.npz": files.npz({"p": p.astype(np.float32), "b": b.astype(np.float32),
                                         "ids": loaders.save_ids(m, len(p)),
                                         **{f"step_{f}": state[f"{name}_{f}"] for f in STEP_STATE
                                            if f"{name}_{f}" in state},
                                         **({"step_form": state["form"]} if "form" in state else {})})
               for name, p, b, m in (("user", self.user_factors_, self.user_bias_, self.ids_[0]),
                                     ("item", self.item_factors_, self.item_bias_, self.ids_[1]))}
        if self.seen_ is not None:
            out["seen.npz"] = files.npz({"indptr": self.seen_[0], "indices": self.seen_[1]})
        return out

    def _meta(self):
        return {**super()._meta(), "mu": self.mu_, "vertex_types": list(NAMES),
                **({"frame_columns": [str(c) for c in self.columns_]} if "columns_" in vars(self) else {}),
                **({"rating_range": list(self.rating_range_)} if self.rating_range_ is not None else {})}

    def _restore(self, directory, meta):
        from tux2 import model_check
        meta, arrays = model_check.read_model(directory, "mf", ("user.npz", "item.npz"), ("seen.npz",))
        model_check.check_mf(directory, meta, arrays)
        seen = arrays.get("seen.npz")
        self._set(arrays["user.npz"], arrays["item.npz"], meta.get("mu", 0.0),
                  (loaders.loaded_ids(arrays["user.npz"]["ids"]), loaders.loaded_ids(arrays["item.npz"]["ids"])),
                  (seen["indptr"], seen["indices"]) if seen is not None else None, meta.get("rating_range"))
        if isinstance(meta.get("frame_columns"), list):      # a DataFrame's (user, item, rating) names
            self.columns_ = meta["frame_columns"]
        scale = meta.get("rating_scale")
        self.rating_scale_ = float(scale) if isinstance(scale, (int, float)) and 0 < scale < math.inf else 1.0
        self.step_state_ = {f"{name}_{k[5:]}": np.asarray(v) for name in NAMES
                            for k, v in arrays[f"{name}.npz"].items() if k.startswith("step_") and k != "step_form"}
        if "step_form" in arrays["user.npz"]:
            self.step_state_["form"] = np.asarray(arrays["user.npz"]["step_form"])

    # ------------------------------------------------------------ predictions
    @property
    def n_users(self):
        return len(self.user_factors_)

    @property
    def n_items(self):
        return len(self.item_factors_)

    @property
    def known_(self):
        """(users, items): which dense ids have training ratings (from ``seen_``; all of
        them for models saved without it). The others are never scored or recommended."""
        if self.seen_ is None:
            return np.ones(self.n_users, bool), np.ones(self.n_items, bool)
        indptr, indices = self.seen_
        return np.diff(indptr) > 0, np.bincount(indices, minlength=self.n_items) > 0

    def lookup(self, side, x):
        """Dense ids of the user's ids ``x`` of one side (0 users, 1 items; numbers, or
        strings as a file writes them); -1 where the model has none."""
        return loaders.dense_ids(self.ids_[side], x, (self.n_users, self.n_items)[side])

    def _unknown(self, side, d, given, what, policy):
        """The mask of dense ids ``d`` (-1: not in the model) without training ratings;
        with ``policy`` "error" the first one is an InputError naming ``given``'s id."""
        unk = d < 0
        unk[~unk] = ~self.known_[side][d[~unk]]
        if policy == "error" and unk.any():
            i = int(np.flatnonzero(unk)[0])
            bad = np.atleast_1d(np.asarray(given))[i: i + 1].tolist()[0]
            raise InputError(f"unknown {what} {bad!r} (no training ratings); unknown='skip' leaves it "
                             "out, 'baseline' predicts from the known side", path="predict")
        return unk

    def _policy(self, unknown):
        policy = self.unknown if unknown is None else unknown
        loaders.check_choice("unknown", policy, loaders.UNKNOWN)
        return policy

    def user_ids(self, side, dense):
        """The user's ids of dense ids of one side."""
        m = self.ids_[side]
        return dense if m is None else m.decode(dense)

    def predict(self, users, items=None, unknown=None):
        """Predicted ratings for the pairs (users[i], items[i]), in the user's ids, or for
        the (user, item) rows of ``users`` alone (scikit-learn's ``predict(X)``). A user
        or item without training ratings follows ``unknown`` (default: the estimator's):
        baseline μ + the known side's bias, skip nan, error an InputError; when 90 % or
        more of 10 or more pairs have one, a RuntimeWarning gives the share (cold start)."""
        return self._predict(users, items, unknown, "MF.predict")

    def _predict(self, users, items, unknown, what):
        known = vars(self).get("columns_")
        if items is None and loaders.is_frame(users) and known is not None and set(known[:2]) <= set(users.columns):
            users, items = (users[c].to_numpy() for c in known[:2])      # by name, as fit read them
        if items is None:
            rows = _pairs(users)
            if rows is None:
                raise ValueError("MF.predict takes (users, items), or X of (user, item) rows (an (n, 2) array "
                                 f"or a two-column DataFrame); got {type(users).__name__} "
                                 f"of shape {np.shape(users)}")
            users, items = rows
        policy = self._policy(unknown)
        u, i = (self.lookup(s, loaders.given_ids(self.ids_[s], x, f"MF.predict: {x_}"))
                for s, x, x_ in ((0, users, "users"), (1, items, "items")))
        if len(u) != len(i):
            raise ValueError(f"{len(u)} users but {len(i)} items")
        masks = (self._unknown(0, u, users, "user", policy), self._unknown(1, i, items, "item", policy))
        cold_warning(masks[0] | masks[1], what, stacklevel=3)
        pred = self.score_dense(np.where(masks[0], 0, u), np.where(masks[1], 0, i), masks)
        if policy == "skip":
            pred[masks[0] | masks[1]] = np.nan
        return pred

    def score_dense(self, u, i, unknown=None):
        """Predicted ratings for dense user and item ids, in the training ratings' range
        (``rating_range_``); ``unknown``: (user mask, item mask) of pairs predicted by
        the baseline μ + the known side's bias."""
        return mf.predict({"p": self.user_factors_, "b": self.user_bias_}, {"p": self.item_factors_,
                          "b": self.item_bias_}, u, i, self.mu_, unknown, clip=self.rating_range_)

    def score(self, X, y=None):
        """−RMSE on the (user, item, rating) rows of ``X`` (scikit-learn's "higher is
        better"), or X's (user, item) rows and the ratings ``y``, in the user's ids as
        ``predict`` takes them, or on a rating file read
        as ``fit`` reads its test file; ids without training ratings are predicted from
        μ and the known bias (90 % or more of the pairs: a RuntimeWarning, as ``predict``'s).
        A model of implicit feedback scores preferences, not the counts: its score is
        NDCG@10 of ``ranking_metrics`` (the measure its runs report and ``early_stop``
        watches), X's items the relevant ones."""
        if self.implicit:
            test = X if y is None or loaders.is_path(X) else tuple(np.asarray(c) for c in _pairs(X, y))
            return float(self.ranking_metrics(test, RANK_AT, popular=False)["ndcg"])
        if loaders.is_path(X):
            g = loaders.load_edges(X, type_names=("user", "item"), id_maps=self.ids_, known=self.known_,
                                   unknown="baseline", columns=self.columns)
            if g.values is None:
                raise InputError("no rating column to score against: expected 'user item rating' lines", path=X)
            r, pred = g.values, self.score_dense(g.src, g.dst, g.unknown)
            if g.unknown is not None:
                cold_warning(g.unknown[0] | g.unknown[1], "MF.score")
        elif isinstance(X, BipartiteGraph):   # dense ids, as fit's test set: ids without ratings by the baseline
            if X.values is None:
                raise ValueError("MF.score: the graph has no ratings to score against")
            dense = [np.where(x < n, x, -1) for x, n in ((X.src, self.n_users), (X.dst, self.n_items))]
            masks = tuple(self._unknown(side, d, d, "", "baseline") for side, d in enumerate(dense))
            r = np.asarray(X.values, np.float64)
            pred = self.score_dense(*(np.where(m, 0, x) for m, x in zip(masks, dense)), masks)
            cold_warning(masks[0] | masks[1], "MF.score")
        else:                       # X's (user, item) rows and y; (users, items, ratings); rows; a DataFrame by name
            rows = _pairs(X, y) if y is not None else X if isinstance(X, tuple) and len(X) == 3 else \
                user_rows(X if loaders.is_frame(X) else _rows3(X), vars(self).get("columns_", self.columns))
            u, i, r = (np.asarray(c) for c in rows)
            r = r.astype(np.float64)
            pred = self._predict(u, i, "baseline", "MF.score")
        if not len(r):                          # (scikit-learn refuses 0 samples too; nan would pass unseen)
            raise ValueError("MF.score: no ratings to score (empty data)")
        bad = np.flatnonzero(~np.isfinite(r))
        if len(bad):                            # as fit refuses them: a score of nan said nothing of where
            raise ValueError(f"MF.score: rating {r[bad[0]]:g} at row {bad[0]} is not finite")
        return -float(np.sqrt(np.mean((r - pred) ** 2)))

    def recommend(self, users=None, k=10, exclude_seen=True, unknown=None, chunk=256, min_ratings=1):
        """Top-``k`` items per user by predicted rating, leaving out the user's training
        items and items with fewer than ``min_ratings`` training ratings (default 1:
        those nobody rated): (users, items (n × k), scores (n × k)) in the
        user's ids, ``items`` an array of the model's item ids (integers, or strings). A
        user with fewer than k such items (one who has seen nearly every item) has a
        row padded at its end with item -1 ("" when the ids are strings) and score nan:
        ``np.isfinite(scores)`` marks the recommendations; scores are ``predict``'s (in
        the training ratings' range), the order that before clipping. ``users``: by default every user with training
        ratings; a user without follows ``unknown`` (default: the estimator's): baseline
        gets the items of highest μ + b_i (with implicit feedback, which has no biases: the
        items most often in training, score 0), skip leaves the user out, error raises."""
        names, rows, items, score = self.recommend_distinct(users, k, exclude_seen, unknown, chunk, min_ratings)
        return names, items[rows], score[rows]

    def recommend_distinct(self, users=None, k=10, exclude_seen=True, unknown=None, chunk=256, min_ratings=1):
        """``recommend`` with each distinct user scored once (a list of users with repeats,
        as a log of requests has them; every unknown user shares the baseline's list):
        (users, rows, items, scores), user n's list is items[rows[n]], scores[rows[n]]."""
        known_u, known_i = self.known_
        NONNEG.check("MF.recommend: min_ratings", min_ratings)
        if min_ratings > 1:
            if self.seen_ is None:
                raise InputError("the model was saved without its training ratings (seen.npz): it cannot "
                                 "tell which items have min_ratings", path="recommend")
            counts = np.bincount(self.seen_[1], minlength=self.n_items)
            known_i = counts >= min_ratings
            if not known_i.any():           # every row would be empty, without a word
                raise InputError(f"min_ratings={min_ratings} (--min-ratings) leaves no item to recommend: none of the "
                                 f"{self.n_items} items has that many training ratings (the most: {counts.max()})")
        if users is None:
            u = np.flatnonzero(known_u)
            names, unk = self.user_ids(0, u), np.zeros(len(u), bool)
        else:
            policy = self._policy(unknown)
            names = loaders.given_ids(self.ids_[0], users, "MF.recommend: users")
            u = self.lookup(0, names)
            unk = self._unknown(0, u, names, "user", policy)
            if policy == "skip":
                names, u, unk = names[~unk], u[~unk], unk[~unk]
        NONNEG.check("MF.recommend: k", k), COUNT.check("MF.recommend: chunk", chunk)
        k = int(min(k, self.n_items))
        u, rows = np.unique(np.where(unk, -1, u), return_inverse=True)     # -1: the baseline's row
        top = np.full((len(u), k), -1, np.int64)
        score = np.full((len(u), k), np.nan)
        items = np.where(known_i, self.item_bias_, -np.inf)     # items without ratings: never recommended
        # implicit feedback has no biases: a user without events gets the unseen items most often in training
        cold = np.bincount(self.seen_[1], minlength=self.n_items).astype(np.float64) \
            if self.implicit and self.seen_ is not None else None
        for lo in range(0, len(u), chunk):
            uu = u[lo: lo + chunk]
            un = uu < 0
            S = self.user_factors_[np.maximum(uu, 0)] @ self.item_factors_.T
            S[un] = 0 if cold is None else cold        # a user without ratings: the baseline μ + b_i
            if exclude_seen and self.seen_ is not None:
                mf.leave_out(S, uu, *self.seen_)
            top[lo: lo + len(uu)], ps = mf.top_k(S, k, self.mu_ + np.where(un, 0, self.user_bias_[uu]), items)
            clip = self.rating_range_ or (-np.inf, np.inf)        # ranked before clipping: no ties at the top
            score[lo: lo + len(uu)] = np.clip(ps, *clip)
            if cold is not None:                        # predict's score: 0; ranked by popularity
                score[lo: lo + len(uu)][un] = np.where(np.isfinite(ps[un]), 0.0, np.nan)
        items = self.user_ids(1, np.maximum(top, 0))
        items[top < 0] = -1 if items.dtype.kind in "iu" else ""     # no id is negative or empty
        return names, rows.reshape(-1), items, score

    def similar_items(self, items, k=10, chunk=256):
        """The ``k`` items nearest each of ``items`` by the cosine of their factors, as
        ``implicit``'s ``similar_items`` (biases left out; the item itself and items without
        training ratings too): (items, similar (n × k), cosines (n × k)) in the user's ids,
        nearest first. An item without training ratings is an InputError naming it."""
        return self._similar(1, items, k, chunk)

    def similar_users(self, users, k=10, chunk=256):
        """``similar_items`` for users: the ``k`` users nearest each of ``users``."""
        return self._similar(0, users, k, chunk)

    def _similar(self, side, given, k, chunk):
        what = ("user", "item")[side]
        names = loaders.given_ids(self.ids_[side], given, f"MF.similar_{what}s: {what}s")
        d = self.lookup(side, names)
        unknown = self._unknown(side, d, names, what, "baseline")
        if unknown.any():
            raise InputError(f"unknown {what} {names[unknown][:1].tolist()[0]!r}: without training ratings it has "
                             "no factors to compare", path=f"MF.similar_{what}s")
        NONNEG.check(f"MF.similar_{what}s: k", k), COUNT.check(f"MF.similar_{what}s: chunk", chunk)
        F = (self.user_factors_, self.item_factors_)[side].astype(np.float64)
        F /= np.maximum(np.linalg.norm(F, axis=1), np.finfo(np.float64).tiny)[:, None]
        known = self.known_[side]
        k = int(min(k, known.sum() - 1))
        top, cos = np.zeros((len(d), k), np.int64), np.zeros((len(d), k))
        for lo in range(0, len(d), chunk):
            dd = d[lo: lo + chunk]
            S = F[dd] @ F.T
            S[:, ~known] = -np.inf
            S[np.arange(len(dd)), dd] = -np.inf                 # not itself
            top[lo: lo + len(dd)] = np.argsort(-S, axis=1, kind="stable")[:, :k]
            cos[lo: lo + len(dd)] = np.take_along_axis(S, top[lo: lo + len(dd)], 1)
        return names, self.user_ids(side, top), cos

    rating_scale_ = 1.0         # what the ratings were divided by for training (rating_scale): λ's units

    def fold_in(self, data):
        """Add the users of ``data`` (ratings in any form ``fit`` takes, in the model's ids)
        to the model, or refit the ones it has, from those ratings alone, the items fixed:
        each user's factors and bias are the exact minimiser of the training loss over them
        (one half-step of ALS: a ridge solve, λ per rating, the bias damped by D; with
        implicit feedback Hu et al.'s solve, implicit's ``recalculate_user``). The users'
        training items become these (``recommend`` leaves them out). Items the model has no
        training ratings for are left out of the solve (a RuntimeWarning counts them).
        Returns the model; ``predict``, ``recommend`` and ``save`` then cover the users."""
        import warnings
        left_out = self._fold_in(data)[1]
        if left_out:
            warnings.warn(f"MF.fold_in: {left_out} ratings are of items without training ratings, left out",
                          RuntimeWarning, stacklevel=2)
        return self

    def _fold_in(self, data):
        """``fold_in``: (the folded users' ids in order of appearance, the ratings left out)."""
        self.user_factors_                  # before fit: NotFittedError
        fitted = vars(self).get("_fit_params") or self.get_params()
        given = self.ids                    # read as fit reads ratings, in their own ids: strings for a model of
        m = self.ids_[0]                    # strings ('007' stays '007'), else as they look (_add_users names a
        self.ids = "string" if m is not None and m.tokens.dtype.kind not in "iu" else "auto"    # mismatch)
        try:
            g = self.load_data(data).train
        finally:
            self.ids = given
        users, items = (x if m is None else m.tokens[x] for x, m in zip((g.src, g.dst), g.ids))
        i = self.lookup(1, items)
        ok = i >= 0
        ok[ok] = self.known_[1][i[ok]]
        distinct, first, back = np.unique(users, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        names = distinct[order]                     # every user of data, in order of appearance
        u = self._add_users(names)
        at = np.empty(len(order), np.int64)
        at[order] = u                               # distinct user → its dense id
        du, i, r = at[back.ravel()][ok], i[ok], np.asarray(g.values, np.float64)[ok]
        o = np.argsort(du, kind="stable")
        du, i, r = du[o], i[o], r[o]
        starts = np.searchsorted(du, u)
        ends = np.searchsorted(du, u, side="right")
        Q, k = self.item_factors_, self.item_factors_.shape[1]
        if self.implicit:
            lam, alpha = float(fitted["reg"]), float(fitted["alpha"])
            form, eps = fitted.get("confidence", "linear"), float(fitted.get("epsilon", 1.0))
            gram = Q.T @ Q + lam * np.eye(k)
        for d, lo, hi in zip(u.tolist(), starts.tolist(), ends.tolist()):
            X, t = Q[i[lo:hi]], r[lo:hi]
            if self.implicit:
                c = als.confidences(t, alpha, form, eps)
                p = _solve(gram + (X.T * (c - 1.0)) @ X, X.T @ (c * (t > 0)))
                b = 0.0
            else:
                n = hi - lo
                biases = bool(fitted["biases"])
                A = np.column_stack([X, np.ones(n)]) if biases else X
                damp = fitted["damping"]
                ridge = np.full(A.shape[1], float(fitted["reg"]) * n * self.rating_scale_)
                if biases:
                    ridge[-1] = float(fitted["reg"]) * n if damp is None else float(damp)
                x = _solve(A.T @ A + np.diag(ridge), A.T @ (t - self.mu_ - self.item_bias_[i[lo:hi]]))
                p, b = (x[:k], x[k]) if biases else (x, 0.0)
            self.user_factors_[d], self.user_bias_[d] = p, b
        # the users' training items: these (a model saved without seen.npz: the folded users' alone)
        indptr, indices = self.seen_ if self.seen_ is not None else (np.zeros(self.n_users + 1, np.int64),
                                                                     np.zeros(0, np.int64))
        rows = np.repeat(np.arange(self.n_users), np.diff(indptr))
        keep = ~np.isin(rows, u)
        pairs = np.unique(np.stack([np.r_[rows[keep], du], np.r_[indices[keep], i]]), axis=1)   # by user, item
        self.seen_ = (np.r_[0, np.cumsum(np.bincount(pairs[0], minlength=self.n_users))].astype(indptr.dtype),
                      pairs[1].astype(indices.dtype))
        return names, int((~ok).sum())

    def _add_users(self, names):
        """Dense ids of the user ids ``names``, those the model lacks appended (factors and
        bias 0, no training items)."""
        d = self.lookup(0, names)
        new = d < 0
        if not new.any():
            return d
        m = self.ids_[0]
        kind = "i" if m is None else m.tokens.dtype.kind
        if (kind in "iu") != (names.dtype.kind in "iu"):
            raise InputError(f"this model's user ids are {'integers' if kind in 'iu' else 'strings'}; the new "
                             f"users' ({names[new][0].item()!r}) are not", path="fold_in")
        if m is None:                       # dense integer ids: the model grows to the largest
            if (names < 0).any():
                raise InputError("this model's user ids are dense integers 0 … n−1: new users need ids >= 0",
                                 path="fold_in")
            d = names.astype(np.int64)
            grow = int(d.max()) + 1 - self.n_users
        else:
            d[new] = self.n_users + np.arange(int(new.sum()))
            self.ids_ = (loaders.IdMap(np.concatenate([m.tokens, names[new].astype(m.tokens.dtype)
                                                       if kind in "iu" else names[new].astype(str)])), self.ids_[1])
            grow = int(new.sum())
        if grow > 0:
            k = self.user_factors_.shape[1]
            self.user_factors_ = np.concatenate([self.user_factors_, np.zeros((grow, k))])
            self.user_bias_ = np.concatenate([self.user_bias_, np.zeros(grow)])
            state = vars(self).get("step_state_", {})      # AdaGrad's history: a new user's starts at 0
            for key in [key for key in state if key.startswith("user_")]:
                v = state[key]
                state[key] = np.concatenate([v, np.zeros((grow, *v.shape[1:]), v.dtype)])
            if self.seen_ is not None:
                indptr, indices = self.seen_
                self.seen_ = (np.concatenate([indptr, np.full(grow, indptr[-1], indptr.dtype)]), indices)
        return d

    def _popular_lists(self, users, k, exclude_seen=True, min_ratings=1, chunk=256):
        """The most-popular baseline's lists for ``users`` (the user's ids), as ``recommend``
        would list them were every score a training count: dense item ids (n × k, -1 where a
        list is shorter), the items most often in training first (the lower id on a tie)."""
        counts = np.bincount(self.seen_[1], minlength=self.n_items).astype(np.float64)
        col = np.where(counts >= max(min_ratings, 1), counts, -np.inf)
        u = self.lookup(0, users)
        u[u >= 0] = np.where(self.known_[0][u[u >= 0]], u[u >= 0], -1)     # a user without ratings: nothing seen
        top = np.empty((len(u), k), np.int64)
        for lo in range(0, len(u), chunk):
            uu = u[lo: lo + chunk]
            S = np.zeros((len(uu), self.n_items))
            if exclude_seen:
                mf.leave_out(S, uu, *self.seen_)
            top[lo: lo + len(uu)] = mf.top_k(S, k, np.zeros(len(uu)), col)[0]
        return top

    def ranking_metrics(self, test, k=10, relevant=None, exclude_seen=True, min_ratings=1, unknown=None,
                        return_lists=False, popular=True):
        """Precision, recall, NDCG, MAP and hit rate at ``k`` (tux2.ranking: binary
        relevance, as Spark's RankingMetrics) of ``recommend``'s lists for the users of
        ``test`` — a rating file, (users, items[, ratings]), rows or a DataFrame in the
        user's ids, or a BipartiteGraph as ``fit`` takes it — against each one's test items
        rated at least ``relevant`` (default: every test item), averaged over the users with
        such an item. A test item without
        training ratings is relevant and never recommended. Beside them, ``popular_precision``
        and ``popular_ndcg``: the most-popular baseline's, each user's lists the items by
        training count under the same rules (seen items left out with ``exclude_seen``,
        ``min_ratings``); None for a model saved without its training ratings, or with
        ``popular=False``. ``return_lists``: also
        ``recommend``'s (users, items, scores), one row per test user in order of appearance."""
        from tux2 import ranking
        if loaders.is_path(test):
            g = loaders.load_edges(test, type_names=NAMES, id_maps=self.ids_, known=self.known_, unknown="baseline",
                                   columns=self.columns)
            users, items, r = loaders.edge_ids(g, 0), loaders.edge_ids(g, 1), g.values
        elif isinstance(test, BipartiteGraph):          # dense ids, as fit's test set
            users, items, r = test.src, test.dst, test.values
        else:
            columns = vars(self).get("columns_", self.columns)
            rows = test if isinstance(test, tuple) and len(test) in (2, 3) else _pairs(test) or \
                user_rows(test if loaders.is_frame(test) else _rows3(test, "MF.ranking_metrics"), columns)
            users, items, r = *map(np.asarray, rows[:2]), rows[2] if len(rows) == 3 else None    # (u, i, None) too
        COUNT.check("MF.ranking_metrics: k", k)             # precision@0 is 0/0 (Spark refuses k <= 0 too)
        keep = np.ones(len(users), bool)
        if relevant is not None:
            number().check("MF.ranking_metrics: relevant", relevant)
            if r is None:
                raise InputError(f"relevant={relevant:g} (--relevant) keeps the test items rated at least that, and "
                                 "the test pairs have no ratings", path="ranking")
            keep = np.asarray(r, np.float64) >= relevant
        first, row = np.unique(users, return_inverse=True, return_index=True)[1:]
        order = np.argsort(first, kind="stable")                   # the users in order of appearance
        listed = loaders.given_ids(self.ids_[0], users[first[order]], "MF.ranking_metrics: users")
        names, top, score = self.recommend(listed, k, exclude_seen, unknown, min_ratings=min_ratings)
        at = np.full(len(first), -1)
        at[order[np.isin(listed, names)]] = np.arange(len(names))     # unknown="skip": users left out
        keep &= at[row] >= 0
        item = self.lookup(1, items[keep])
        item[item < 0] = self.n_items + np.unique(items[keep][item < 0], return_inverse=True)[1].ravel()  # never listed
        out = ranking.at_k(np.where(top == (-1 if top.dtype.kind in "iu" else ""), -1,
                                    self.lookup(1, top.ravel()).reshape(top.shape)), at[row][keep], item, k)
        pop = self._popular_lists(names, top.shape[1], exclude_seen, min_ratings) \
            if popular and self.seen_ is not None else None
        pop = ranking.at_k(pop, at[row][keep], item, k) if pop is not None else {}
        out.update(popular_precision=pop.get("precision"), popular_ndcg=pop.get("ndcg"))
        return (out, (names, top, score)) if return_lists else out
