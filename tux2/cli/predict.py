"""``tux2 predict MODEL_DIR INPUT``: apply a model written by ``tux2 run … --out``
to new data — scores, labels and probabilities per sample, plus accuracy, log-loss
and AUC when the input carries labels (libsvm always does); MF rating predictions
and top-k recommendations; LDA topic mixtures of new documents."""
import itertools
import json
import math
import os
import sys

import numpy as np

from tux2 import estimators, files
from tux2.io import display_name, is_whole
from tux2.cli.common import COUNT, NONNEG, SEED, add_input_args, integer, note_first_read, number, spool_inputs
from tux2.errors import InputError, Tux2Error

LINEAR = ("lr", "svm", "softmax", "fm", "linreg", "blockpg")


def add_parser(sub):
    p = sub.add_parser("predict", help="apply a trained model (a 'tux2 run … --out DIR' directory) to new data",
                       description="Classifiers (" + ", ".join(LINEAR) + "): one line per input sample (libsvm): "
                                   "the predicted label, then the score (binary models; lr and logistic fm add the "
                                   "probability of +1) or the class probabilities (softmax); accuracy, log-loss "
                                   "and AUC against the input's labels. Regression (linreg, fm --loss squared): the "
                                   "predicted value; RMSE, MAE and R^2 against the input's targets. mf: INPUT has 'user item [rating]' lines "
                                   "(in the training ids); writes 'user item prediction', and RMSE/MAE when "
                                   "ratings are given (an --implicit model: precision and NDCG@10); with --top-k, the best unseen items per user of INPUT "
                                   "(one user per line, or several on a line; default every user). lda: INPUT is a corpus in any "
                                   "format 'tux2 run lda' reads; writes each document's topic mixture.")
    p.add_argument("model", help="directory written by 'tux2 run ALGO … --out DIR'")
    p.add_argument("input", nargs="?", help="data to predict for (see above); optional only for mf --top-k")
    p.add_argument("-o", "--output", help="predictions file (default, and -: standard output)")
    p.add_argument("--zero-based", default=None, action="store_true",
                   help="feature indices start at 0 (default: as the model was trained)")
    p.add_argument("--metrics", help="also write the metrics as one JSON object to this file")
    p.add_argument("--label-column", metavar="N|NAME|first|last", default=None,
                   help="linear models, a table: its labels' column (default: the training table's, by header name "
                        "or position; none when the table has just the model's features)")
    p.add_argument("--top-k", type=COUNT, default=None, help="mf: recommend this many items per user")
    p.add_argument("--include-seen", action="store_true", help="mf --top-k: also recommend training items")
    p.add_argument("--fold-in", metavar="RATINGS",
                   help="mf: first fit the users of this rating file (read as 'tux2 run mf' reads its input) to "
                        "the model's items, new users or known ones afresh, each by an exact least-squares solve "
                        "(an ALS half-step); --top-k without INPUT then lists theirs, leaving their rated items out")
    p.add_argument("--out", metavar="DIR",
                   help="mf --fold-in: also write the model with the folded-in users to DIR (a model directory "
                        "as 'tux2 run mf --out' writes; it may be MODEL itself)")
    p.add_argument("--min-ratings", type=NONNEG, default=1,
                   help="mf --top-k: recommend only items with at least this many training ratings")
    p.add_argument("--relevant", type=number(), default=None, metavar="RATING",
                   help="mf --top-k, INPUT of 'user item rating' lines: the items rated at least this are the "
                        "relevant ones of the precision, recall, NDCG and MAP (default: every item of INPUT)")
    p.add_argument("--iterations", type=integer(1, 1_000_000), default=50,
                   help="lda: Gibbs sweeps of inference per document")
    add_input_args(p, base=False, unknown=True)
    p.add_argument("--seed", type=SEED, default=0, help="lda: seed of the inference draws")
    p.set_defaults(func=predict, prints=lambda args: None if args.output else "give -o FILE for the predictions")


def _write(path, lines):
    """The predictions (an iterable of lines) to standard output, or to ``path`` whole
    or not at all (a full disk or an error never leaves a cut-off file under it). A reader
    that exits (``| head``) has what it wanted: the rest go nowhere, and the metrics after
    them are still reported (stderr, --metrics FILE)."""
    if not path:
        try:
            sys.stdout.writelines(lines)
            sys.stdout.flush()
        except BrokenPipeError:     # `| head` has what it wanted
            files.stdout_gone()
        except OSError as e:
            files.stdout_gone()     # what is still buffered goes nowhere, not into another error at exit
            raise Tux2Error(f"cannot write the predictions to standard output: {e.strerror}; give -o FILE") from None
        return
    files.make_parent(path)      # (as tux2 run's --metrics and tux2 plot's -o)
    files.write_atomic(path, lambda f: f.writelines(line.encode("utf-8") for line in lines))


def _report(args, res):
    """Metrics: a JSON line on stderr when predictions go to stdout, else on stdout."""
    print(files.json_text(res), file=sys.stdout if args.output else sys.stderr)
    if args.metrics:
        files.make_parent(args.metrics)
        files.write_atomic(args.metrics, files.text(files.json_text(res) + "\n"))


# flags that only some models take: (flag, dest, its default, the algorithms); given to another model, an error
FOR_SOME = (("--top-k", "top_k", None, ("mf",)), ("--include-seen", "include_seen", False, ("mf",)),
            ("--fold-in", "fold_in", None, ("mf",)), ("--out", "out", None, ("mf",)),
            ("--min-ratings", "min_ratings", 1, ("mf",)), ("--relevant", "relevant", None, ("mf",)),
            ("--iterations", "iterations", 50, ("lda",)), ("--seed", "seed", 0, ("lda",)),
            ("--columns", "columns", None, ("mf",)), ("--unknown", "unknown", "baseline", ("mf",)),
            ("--zero-based", "zero_based", None, LINEAR), ("--label-column", "label_column", None, LINEAR))


def predict(args):
    args.output = None if args.output == "-" else args.output       # -o -: standard output, as tools take it
    ins = [args.input, args.fold_in, *(os.path.join(args.model, f) for f in (
        os.listdir(args.model) if os.path.isdir(args.model) else ()))]      # the model's own files too
    files.check_writable(args.output, "-o", directory=False, inputs=ins)     # before any prediction
    files.check_writable(args.metrics, "--metrics", directory=False, inputs=ins)
    files.check_writable(args.out, "--out", directory=True)
    for flag, path in (("-o", args.output), ("--metrics", args.metrics)):    # written after the model of --out
        if path and args.out and os.path.abspath(os.path.dirname(path)) == os.path.abspath(args.out) and (
                os.path.basename(path) in ("model.json", "manifest.json", "summary.txt") or path.endswith(".npz")):
            raise Tux2Error(f"{path}: {flag} names a file the model in --out {args.out} is written to: name another")
    model = estimators.load(args.model)
    for flag, dest, unset, algorithms in FOR_SOME:
        if getattr(args, dest) != unset and model.algorithm not in algorithms:
            raise Tux2Error(f"{flag} applies to {', '.join(algorithms)} models, and {args.model} holds an "
                            f"{model.algorithm} model")
    if model.algorithm == "mf" and args.top_k is None and args.min_ratings != 1:
        raise Tux2Error("--min-ratings picks the items --top-k recommends; predictions for the pairs of INPUT "
                        "are made whatever their items' ratings")
    if args.out and not args.fold_in:
        raise Tux2Error("--out writes the model with the users of --fold-in RATINGS; without them it is the model "
                        f"{args.model} already holds")
    if model.algorithm == "mf" and args.top_k is None and args.relevant is not None:
        raise Tux2Error("--relevant picks the items that --top-k's lists are measured against")
    if args.input == "-" and args.fold_in == "-":      # (spool_inputs reads the input's; the fold-in would find none)
        raise InputError("given as both the input and --fold-in: standard input can be read only once; give one "
                         "of them as a file", path="<stdin>")
    spool_inputs(args)
    note_first_read(args, "libsvm" if model.algorithm in LINEAR else "edges")
    if model.algorithm == "mf":
        return predict_mf(args, model)
    if model.algorithm == "lda":
        return predict_lda(args, model)
    if args.input is None:
        raise Tux2Error("INPUT is required (samples to score, in libsvm format)")
    from tux2.loaders import load_samples, require_features
    from tux2.estimators.linear import binary_labels, class_codes, shown
    from tux2.udfs.glm import score_metrics, softmax
    zero_based = model.zero_based_ if args.zero_based is None else args.zero_based
    graph, labels = load_samples(args.input, zero_based, "keep" if model.duplicates == "error" else model.duplicates,
                                 label_column=args.label_column,        # (a repeated feature: as training read it)
                                 table_labels=model.label_column_,
                                 features=model.n_features_in_,        # a table without labels: none
                                 known_features=model.n_features_in_, sparse=True,
                                 table_weights=getattr(model, "weight_column", None))     # not a feature: the weights
    weights = vars(graph).get("sample_weights")     # (of the metrics)
    require_features(graph, args.input)      # labels alone: every score would be the same constant
    M = model.scores(graph)
    names = [shown(x) for x in model.classes_]
    sep = _separator(names)                    # a table's class 'Iris setosa'
    if model.loss == "squared":                # regression: the predicted value, RMSE/MAE/R² against the targets
        header = "# prediction\n"
        rows = (f"{v:.9g}\n" for v in M[:, 0])
        if labels is not None and np.asarray(labels).dtype.kind not in "biuf":
            raise InputError(f"regression targets must be numbers, got {shown(np.asarray(labels)[0])!r}",
                             path=args.input)
    elif model.loss == "softmax":                # labels as training gave them (1 … K, 0 … K-1, strings)
        header = f"# label{sep}" + sep.join(f"p_{k}" for k in names) + "\n"
        rows = (f"{names[k]}{sep}" + sep.join(f"{p:.6g}" for p in row) + "\n"
                for k, row in zip(M.argmax(axis=1), softmax(M)))
        labels = None if labels is None else class_codes(labels, model.classes_)
    else:
        prob = model.loss == "logistic"
        header = f"# label{sep}score" + (f"{sep}probability" if prob else "") + "\n"
        rows = (f"{names[int(s > 0)]}{sep}{s:.9g}" + (f"{sep}{0.5 * (1.0 + math.tanh(0.5 * s)):.6g}" if prob else "")
                + "\n" for s in M[:, 0])
        labels = None if labels is None else binary_labels(model.classes_, labels, test_source=args.input)[1]
    _write(args.output, itertools.chain([header], rows))
    unseen = int((labels >= len(names)).sum()) if model.loss == "softmax" and labels is not None else 0
    unknown = graph.dst >= model.n_features_in_                      # scored as 0, like liblinear
    if vars(model).get("features_") is not None:                     # or unseen by a model of sparse indices
        unknown |= ~np.isin(graph.dst, model.features_)
    beyond = np.unique(graph.dst[unknown])
    # (the warnings before the metrics line, which stays stderr's last: tail -1 reads it)
    if unknown.all():           # (require_features: some) every score the same constant, as for MF's new users
        n, mc = len(beyond), getattr(model, "min_count", 1)
        print(f"tux2: warning: no feature of {display_name(args.input)} is one the model has a weight for "
              f"({n} feature{'s' * (n != 1)}: unseen in training" + (f" or dropped by its --min-count {mc}" if mc > 1
                                                                      else "")
              + "): every line scores as an empty one (the intercept's); features numbered or hashed otherwise "
              "than in training?", file=sys.stderr)
    elif 2 * unknown.sum() >= len(unknown) and getattr(model, "min_count", 1) == 1:     # (not what --min-count drops)
        print(f"tux2: warning: {display_name(args.input)}: {int(unknown.sum()):,} of its {len(unknown):,} non-zeros "
              f"are on features the model has no weight for ({len(beyond):,} features unseen in training; they "
              "weigh 0): the test file of another set, or features numbered otherwise than in training?",
              file=sys.stderr)
    _report(args, {"model": model.algorithm, "samples": int(graph.n_src),
                   **({"weighted": f"by column {graph.layout.column(graph.layout.weight)}"}
                      if weights is not None and labels is not None else {}),
                   **(score_metrics(M, labels, model.loss, weights) if labels is not None else {}),
                   **({"unknown_features": int(len(beyond))} if len(beyond) else {}),
                   **({"unseen_labels": unseen} if unseen else {})})
    return 0


def _separator(names):
    """Tab when one of ``names`` holds a space (Last.fm's artist names), so that the
    output's fields stay apart; else a space."""
    return "\t" if any(" " in n or "\t" in n for n in names) else " "


def _model_columns(args, model):
    """--columns as given, else the model's columns by position when INPUT's lines have every
    column they name: a held-out file laid out as the training file was (Last.fm's
    --columns 1,3,4, Amazon's 2,1,3) is read as training read it; a narrower 'user item'
    file by its first columns."""
    from tux2.io import edge_format, read_head
    cols = getattr(model, "columns", None)
    if args.columns is not None or args.input is None or not isinstance(cols, str) \
            or not all(c.strip().isdigit() for c in cols.split(",")):
        return args.columns
    fmt = edge_format(read_head(args.input, "input"), args.input)
    return cols if fmt.width >= max(int(c) for c in cols.split(",")) else None


def _summary(model_dir):
    """The lines of a model directory's summary.txt (none when it has none)."""
    try:
        with open(os.path.join(model_dir, "summary.txt"), encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def predict_mf(args, model):
    from tux2 import loaders
    folded = None
    if args.fold_in:
        fold_name = "<stdin>" if args.fold_in == "-" else display_name(args.fold_in)
        if args.columns is not None:         # the fold-in file is read with them, as tux2 run mf reads its input
            model.set_params(columns=args.columns)
        folded, left_out = model._fold_in(args.fold_in)
        print(files.json_text({"model": "mf", "folded_in_users": len(folded), **(
            {"ratings_of_items_without_training_ratings": left_out} if left_out else {}),
            **({"out": args.out} if args.out else {})}), file=sys.stderr)
        if args.out:                # the training run's summary.txt goes along (in place: kept), with a line for this
            model.save(args.out, summary=_summary(args.model) + [
                f"folded in {len(folded)} user{'s' * (len(folded) != 1)} from {fold_name}" + (
                    f" ({left_out} rating{'s' * (left_out != 1)} of an item without training ratings left out)"
                    if left_out else "")])
            if args.input is None and args.top_k is None:       # folded and saved: nothing to predict
                return 0
    args.columns = _model_columns(args, model)
    sep = _separator(t for m in model.ids_ if m is not None and m.tokens.dtype.kind == "U" for t in m.tokens.tolist())
    if args.top_k is not None:
        res = None
        form = _list_format(args, model) if args.input else None
        if form and form[2]:                # a test set: its users' lists, measured against their items
            g = loaders.load_edges(args.input, type_names=("user", "item"), id_maps=model.ids_, known=model.known_,
                                   unknown=args.unknown, columns=args.columns)
            if g.num_edges and g.unknown is not None and g.unknown[0].all():
                _none_known(args, g, "user", model.implicit)    # every list the baseline's, every metric 0
            elif g.skipped and not g.num_edges:     # --unknown skip left no line: no list, no metric
                _none_known(args, g, "pairs a user and an item", model.implicit)
            res, (names, items, score) = model.ranking_metrics(
                (loaders.edge_ids(g, 0), loaders.edge_ids(g, 1), g.values), args.top_k, args.relevant,
                exclude_seen=not args.include_seen, min_ratings=args.min_ratings, return_lists=True)
            rows = np.arange(len(names))
        elif args.metrics or args.relevant is not None:         # else: exit 0, no file
            raise Tux2Error(f"{'--metrics' if args.metrics else '--relevant'}: --top-k lists are measured against "
                            "the items of INPUT's 'user item [rating]' lines, and "
                            + ("INPUT lists users alone" if args.input else "there is no INPUT"))
        else:
            users = _listed_users(args, model, *form[:2]) if args.input else folded
            names, rows, items, score = model.recommend_distinct(users, args.top_k, exclude_seen=not args.include_seen,
                                                                 unknown=args.unknown, min_ratings=args.min_ratings)
        lists = ["".join(f"{sep}{it}:{sc:.6g}" for it, sc in zip(row, srow) if math.isfinite(sc)) + "\n"
                 for row, srow in zip(items.tolist(), score.tolist())]      # once per distinct user
        step = 1 << 16
        _write(args.output, ("".join(f"{user}{lists[r]}" for user, r in zip(names[lo: lo + step].tolist(),
                                                                            rows[lo: lo + step].tolist()))
                             for lo in range(0, len(names), step)))          # a chunk of lines at a time
        if res is not None:
            _below_popular(res, f"NDCG@{args.top_k}")      # (before the metrics: their JSON line stays the last)
            _report(args, {"model": "mf", **{m if m == "users" else f"{m}@{args.top_k}": v for m, v in res.items()
                                             if v is not None or not m.startswith("popular_")},
                           **({"relevant": args.relevant} if args.relevant is not None else {})})
        return 0
    if args.input is None:
        raise Tux2Error("INPUT is required: 'user item [rating]' lines, or pass --top-k")
    g = loaders.load_edges(args.input, type_names=("user", "item"), id_maps=model.ids_, known=model.known_,
                           unknown=args.unknown, columns=args.columns)
    pred = model.score_dense(g.src, g.dst, g.unknown)
    users, items = loaders.edge_ids(g, 0), loaders.edge_ids(g, 1)
    _write(args.output, itertools.chain([f"# user{sep}item{sep}prediction\n"], (
        f"{a}{sep}{b}{sep}{r:.6g}\n" for a, b, r in zip(users.tolist(), items.tolist(), pred.tolist()))))
    res = {"model": "mf", "pairs": int(g.num_edges)}
    if g.unknown is not None:
        res["unknown_pairs"] = int((g.unknown[0] | g.unknown[1]).sum())
    if g.skipped:
        res["skipped_unknown"] = int(g.skipped)
    if g.values is not None and model.implicit:     # preference scores against counts: no error; the run's measures
        from tux2.estimators.mf import RANK_AT
        m = model.ranking_metrics((users, items, g.values), RANK_AT)
        res.update({f"{name}@{RANK_AT}": m[name] for name in ("precision", "ndcg", "popular_precision", "popular_ndcg")
                    if m[name] is not None or not name.startswith("popular_")})
    elif g.values is not None:
        err = g.values - pred
        res.update(rmse=float(np.sqrt(np.mean(err ** 2))) if len(err) else None,
                   mae=float(np.mean(np.abs(err))) if len(err) else None)
    _foreign_pairs(args, model, g, res)     # (before the metrics line, which stays stderr's last: tail -1 reads it)
    if g.values is not None or g.unknown is not None or g.skipped or args.metrics:     # --metrics: a file, always
        _report(args, res)
    known = res["pairs"] - res.get("unknown_pairs", 0)
    if known == 0 and res["pairs"] + res.get("skipped_unknown", 0) > 0:        # every line: the baseline or skipped
        _none_known(args, g, "pairs a user and an item", model.implicit)
    return 0


def _foreign_pairs(args, model, g, res):
    """Warnings that INPUT's pairs are not the model's data, as its RMSE alone does not say:
    ratings mostly outside the training range (another data set or column: Last.fm's plays
    against a MovieLens model gave RMSE 3823 in silence), and COLD_SHARE or more of the
    pairs with a user or item the model was not trained on (MF.score and 'tux2 run' say so
    too; none known: ``_none_known``)."""
    from tux2.estimators.mf import COLD_SHARE
    lo_hi = getattr(model, "rating_range_", None)
    if g.values is not None and len(g.values) and lo_hi is not None and not model.implicit:
        lo, hi = lo_hi
        w = max(hi - lo, 1.0)
        v = np.asarray(g.values, np.float64)
        if np.count_nonzero((v < lo - w) | (v > hi + w)) * 2 > len(v):
            print(f"tux2: warning: most ratings of {display_name(args.input)} ({np.min(v):g} … {np.max(v):g}, median "
                  f"{np.median(v):g}) lie outside the model's training ratings ({lo:g} … {hi:g}): another data set, "
                  "or another column (--columns)?", file=sys.stderr)
    n, k = res["pairs"] + res.get("skipped_unknown", 0), res.get("unknown_pairs", 0) + res.get("skipped_unknown", 0)
    if n >= 10 and COLD_SHARE * n <= k < n:          # (all of them: _none_known says which side)
        print(f"tux2: warning: {k} of the {n} pairs ({k / n:.0%}) have a user or item the model was not trained on, "
              f"predicted by the baseline ({_baseline('pair', model.implicit)}), not the factors: ids of another "
              "data set or numbering?", file=sys.stderr)


def _below_popular(res, name):
    """A note on stderr when the model's lists rank below the most-popular baseline's
    (``MF.ranking_metrics``' popular_ndcg, beside its own in the metrics line)."""
    ours, pop = res.get("ndcg"), res.get("popular_ndcg")
    if ours is not None and pop is not None and ours < 0.95 * pop:
        print(f"tux2: warning: the model's {name} ({ours:.4f}) is below the most-popular baseline's ({pop:.4f}, "
              "each user's unseen items by training count): these lists rank worse than popularity", file=sys.stderr)


def _baseline(what, implicit):
    """What --unknown baseline gives a new user: a list ("user") or a prediction."""
    if what == "user":
        return "the most popular items" if implicit else "the items of highest mean + item bias"
    return "score 0, implicit feedback having no biases" if implicit else "the mean plus the known side's bias"


def _none_known(args, g, what, implicit=False):
    """Warn that no line has a known ``what``: other columns (no id of either column is
    the model's), or, where one side's ids are the model's, new users or items (cold
    start, which --unknown scores) or a column that is not the side's."""
    from tux2 import loaders
    read = loaders.describe_read(g, 'auto') or 'columns 1 and 2'
    pick = "--columns picks them (by position, or by the header's names: --columns userId,movieId,rating)"
    head = f"tux2: warning: no line of {display_name(args.input)}"
    # per side, whether no line's id is the model's (--unknown skip: of the lines it skipped, none being left)
    new = (g.unknown[0].all(), g.unknown[1].all()) if g.unknown is not None else \
        getattr(g, "skipped_sides", None) if g.skipped and not g.num_edges else None
    if new is None or all(new):
        print(f"{head} {'has a ' if what == 'user' else ''}{what} the model was trained on ({read}): other columns? "
              + pick, file=sys.stderr)
        return
    side = "user" if what == "user" or new[0] else "item" if new[1] else None
    if side is None:                # each side has known ids, never on one line
        print(f"{head} pairs a user and an item the model was trained on ({read}): each is scored by the "
              "baseline (--unknown)", file=sys.stderr)
        return
    print(f"{head} has {'an' if side == 'item' else 'a'} {side} the model was trained on ({read}), though its "
          f"{'items' if side == 'user' else 'users'} are the model's: "
          + (f"the lines of new {side}s were skipped (--unknown skip; baseline predicts them)" if g.unknown is None
             else f"new {side}s get the baseline's {'lists' if what == 'user' else 'predictions'}, "
             f"{_baseline(what if side == 'user' else 'pair', implicit)} (--unknown)")
          + f"; if that column is not the {side}s', "
          + pick, file=sys.stderr)


def _list_format(args, model):
    """(--top-k INPUT's EdgeFormat, how its lines list users (``_whole_lines``: "whole",
    each line one id; "all": every word a user; None: the first word), whether it has 'user
    item [rating]' lines: a test set, not users alone). Words that are the model's user ids
    are never a header: a one-line list 'alice bob' (two names, no number: a header by the
    rule for edge files) lists two users, and 'Jane Doe' (an id with a space) one."""
    from tux2.io import edge_format, read_head
    fmt = edge_format(read_head(args.input, "the user list"), args.input)
    how = "whole" if _whole_lines(fmt, model) else None
    rows = _head_rows(args.input, fmt, how) if args.columns is None else []
    named = model.ids_[0] is not None and model.ids_[0].tokens.dtype.kind == "U"
    header = bool(fmt.names) and not (rows and named and (model.lookup(0, rows[0]) >= 0).any())
    if how is None and fmt.width >= 2 and named and _all_users(rows[1:] if header else rows, model):
        how = "all"                 # 'alice bob' lines: users (the second word no item of the model's)
    if fmt.names and not header and how is not None:
        fmt.names = None            # the first line is a user list's, not a header of names
    return fmt, how, args.columns is not None or fmt.width >= 2 and how is None


def _head_rows(path, fmt, how, n=1000):
    """The words of the first ``n`` non-empty lines of a user list (header included), as ids
    (each line one word when ``how`` is "whole")."""
    from tux2.io import BOM, csv_unquote
    from tux2.loaders import id_text
    rows = []
    with open(path, "rb") as f:
        for no, raw in enumerate(itertools.islice(f, n), 1):
            t = fmt.fields(raw.removeprefix(BOM) if no == 1 else raw)
            if t:
                rows.append([id_text(csv_unquote(raw.removeprefix(BOM).strip()))] if how == "whole"
                            else [id_text(x) for x in t])
    return rows


def _all_users(rows, model):
    """Whether the words after the first of each line in ``rows`` are users, not items: none
    is an item id of the model (string ids) and some are its user ids. Lines 'user item' are
    a test set; 'user 2024-05-01' a user list with another column."""
    later = [w for r in rows for w in r[1:]]
    return bool(later) and not (model.lookup(1, later) >= 0).any() and (model.lookup(0, later) >= 0).any()


def _whole_lines(fmt, model):
    """Whether each line of a user list is one id, spaces and all: the model's user ids hold
    spaces ('user 1') and no tab, comma or semicolon separates the file's fields."""
    ids = model.ids_[0]
    return fmt.sep == "space" and ids is not None and ids.tokens.dtype.kind == "U" and \
        any(" " in t for t in ids.tokens.tolist())


def _listed_users(args, model, fmt, how):
    """The users of --top-k INPUT: the first token of each line (the whole line when
    ``_whole_lines``, every token when each is a user: ``_list_format``), in order, below a header line of names (``userId``, as rating files have one). One without
    training ratings follows --unknown (baseline: the items of highest μ + b_i),
    counted on stderr; with error, it stops naming its line."""
    from tux2.io import BOM, csv_unquote
    from tux2.loaders import id_text
    toks, nos = [], []
    with open(args.input, "rb") as f:
        for no, raw in enumerate(f, 1):         # ids as the rating files' readers take them: quoted, Latin-1, …
            t = fmt.fields(raw.removeprefix(BOM) if no == 1 else raw)
            if t and not (fmt.names and no <= fmt.skip):
                words = [csv_unquote(raw.removeprefix(BOM).strip())] if how == "whole" else t if how == "all" else t[:1]
                toks += [id_text(w) for w in words]
                nos += [no] * len(words)        # the line's text is read again only for an error

    def line(i):
        with open(args.input, "rb") as f:
            raw = next(itertools.islice(f, nos[i] - 1, None))
        return {"line": nos[i], "text": raw.decode("utf-8", "replace").rstrip("\r\n")}
    if not toks:
        raise InputError("no users listed", path=args.input)
    ids = model.ids_[0]
    if ids is None or ids.tokens.dtype.kind in "iu":      # as MF.recommend takes them: whole numbers
        bad = next((i for i, t in enumerate(toks) if not is_whole(t, signed=True)), None)
        if bad is not None:
            raise InputError("malformed user id (the model's user ids are integers)", path=args.input, **line(bad))
    dense = model.lookup(0, toks)
    known = dense >= 0
    known[known] = model.known_[0][dense[known]]
    if not known.all() and args.unknown == "error":
        i = int(np.flatnonzero(~known)[0])
        raise InputError(f"unknown user {toks[i]!r} (no training ratings); --unknown skip leaves such users out, "
                         f"--unknown baseline recommends {_baseline('user', model.implicit)}", path=args.input,
                         **line(i))
    if not known.all():
        print(json.dumps({"model": "mf", "users": len(toks), "unknown_users": int((~known).sum()),
                          "unknown": args.unknown}), file=sys.stderr)
    if not known.any():         # every list the same (or none): most likely not the model's users
        print(f"tux2: warning: no user listed in {display_name(args.input)} is one the model was trained on: "
              + ("none is listed (--unknown skip)" if args.unknown == "skip" else
                 f"every list is the baseline's, {_baseline('user', model.implicit)} (--unknown)")
              + "; if the users are in another column, --columns picks it", file=sys.stderr)
    return np.array(toks)


def predict_lda(args, model):
    """Topic mixtures of INPUT's documents under the model (fold-in Gibbs sampling)."""
    if args.input is None:
        raise Tux2Error("INPUT is required: documents in any format 'tux2 run lda' reads")
    g, dropped = model.documents(args.input)
    fit = {}
    if g.num_edges:             # held-out fit, as LDA is compared: log-likelihood per token and perplexity
        theta, ll, tokens = model.fold_in(g, args.iterations, args.seed)
        fit = {"ll_per_token": round(ll / tokens, 6), "perplexity": round(float(np.exp(-ll / tokens)), 4)}
    else:
        theta = model.transform(g, args.iterations, args.seed)
    _write(args.output, itertools.chain(["# document " + " ".join(f"topic{k}" for k in range(theta.shape[1])) + "\n"],
                                        (f"{d + g.base} " + " ".join(f"{x:.4g}" for x in row) + "\n"
                                         for d, row in enumerate(theta))))     # the file's doc ids
    _report(args, {"model": "lda", "documents": int(g.n_src), "tokens": int(g.values.sum()) if g.num_edges else 0,
                   "unknown_words_dropped": dropped, **fit})
    if dropped and not g.num_edges:           # every mixture is then the prior: a wrong file, most likely
        print(f"tux2: warning: none of the {dropped} words of {display_name(args.input)} is in the model's "
              "vocabulary, so every topic mixture is the uniform prior (documents from another corpus?)",
              file=sys.stderr)
    return 0
