"""``tux2 predict MODEL_DIR INPUT``: apply a model written by ``tux2 run … --out``
to new data — scores, labels and probabilities per sample, plus accuracy, log-loss
and AUC when the input carries labels (libsvm always does); MF rating predictions
and top-k recommendations; LDA topic mixtures of new documents."""
import contextlib
import json
import math
import os
import sys

import numpy as np

from tux2 import estimators
from tux2.cli.common import COUNT, SEED, HelpFormatter, add_input_args, integer, spool_inputs
from tux2.errors import InputError, Tux2Error

LINEAR = ("lr", "svm", "softmax", "fm", "blockpg")


def add_parser(sub):
    p = sub.add_parser("predict", help="apply a trained model (a 'tux2 run … --out DIR' directory) to new data",
                       formatter_class=HelpFormatter,
                       description="Classifiers (" + ", ".join(LINEAR) + "): one line per input sample (libsvm): "
                                   "the predicted label, then the score (binary models; lr and logistic fm add the "
                                   "probability of +1) or the class probabilities (softmax); accuracy, log-loss "
                                   "and AUC against the input's labels. mf: INPUT has 'user item [rating]' lines "
                                   "(in the training ids); writes 'user item prediction', and RMSE/MAE when "
                                   "ratings are given; with --top-k, the best unseen items per user of INPUT "
                                   "(one user per line; default every user). lda: INPUT is a corpus in any "
                                   "format 'tux2 run lda' reads; writes each document's topic mixture.")
    p.add_argument("model", help="directory written by 'tux2 run ALGO … --out DIR'")
    p.add_argument("input", nargs="?", help="data to predict for (see above); optional only for mf --top-k")
    p.add_argument("-o", "--output", help="predictions file (default: standard output)")
    p.add_argument("--zero-based", default=None, action="store_true",
                   help="feature indices start at 0 (default: as the model was trained)")
    p.add_argument("--metrics", help="also write the metrics as one JSON object to this file")
    p.add_argument("--top-k", type=COUNT, default=None, help="mf: recommend this many items per user")
    p.add_argument("--include-seen", action="store_true", help="mf --top-k: also recommend training items")
    p.add_argument("--iterations", type=integer(1, 1_000_000), default=50,
                   help="lda: Gibbs sweeps of inference per document")
    add_input_args(p, base=False, unknown=True)
    p.add_argument("--seed", type=SEED, default=0, help="lda: seed of the inference draws")
    p.set_defaults(func=predict)


def load_model(directory):
    """The classifier in a model directory, checked (tux2.model_check)."""
    from tux2.model_check import read_meta
    algo = read_meta(directory).get("algorithm")
    if algo not in LINEAR:
        raise Tux2Error(f"{os.path.join(directory, 'model.json')}: tux2 predict handles "
                        f"{', '.join(LINEAR + ('mf', 'lda'))} models; this one is {algo!r}")
    return estimators.load(directory)


@contextlib.contextmanager
def _output(path):
    """The predictions file (written as PATH.tmp, renamed when complete: a full disk or
    an error never leaves a cut-off file under PATH), or standard output."""
    if not path:
        yield sys.stdout
        return
    from tux2 import files
    files.check_writable(path, "-o", directory=False)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as e:
        files.discard(tmp)
        if e.filename is not None:          # another file's error (opening an input): as it is
            raise
        raise files.write_error(path, e) from None
    except BaseException:
        files.discard(tmp)
        raise


def _report(args, res, out):
    """Metrics: a JSON line on stderr when predictions go to stdout, else on stdout."""
    print(json.dumps(res), file=sys.stderr if out is sys.stdout else sys.stdout)
    if args.metrics:
        from tux2 import files
        files.write_atomic(args.metrics, files.text(json.dumps(res)))


def predict(args):
    from tux2.model_check import read_meta
    algo = read_meta(args.model).get("algorithm")
    spool_inputs(args)
    if algo == "mf":
        return predict_mf(args)
    if algo == "lda":
        return predict_lda(args)
    if args.input is None:
        raise Tux2Error("INPUT is required (samples to score, in libsvm format)")
    from tux2.estimators.linear import score_metrics, softmax
    from tux2.io import read_libsvm
    model = load_model(args.model)
    zero_based = model.zero_based_ if args.zero_based is None else args.zero_based
    graph, labels = read_libsvm(args.input, zero_based=zero_based, type_names=("sample", "feature"))
    M = model.scores(graph)
    loss = model.loss
    with _output(args.output) as out:
        if loss == "softmax":
            P = softmax(M)
            out.write("# label " + " ".join(f"p{k}" for k in range(P.shape[1])) + "\n")
            for k, row in zip(M.argmax(axis=1), P):
                out.write(f"{k} " + " ".join(f"{p:.6g}" for p in row) + "\n")
        else:
            prob = loss == "logistic"
            out.write("# label score" + (" probability" if prob else "") + "\n")
            for s in M[:, 0]:
                line = f"{1 if s > 0 else -1} {s:.9g}"
                if prob:
                    line += f" {0.5 * (1.0 + math.tanh(0.5 * s)):.6g}"
                out.write(line + "\n")
    if loss == "softmax":
        from tux2.udfs.glm import labels_for
        try:
            labels_for("softmax", labels, M.shape[1])
        except ValueError as e:
            raise Tux2Error(f"{args.input}: {e}") from None
    res = score_metrics(M, labels, loss)
    _report(args, {"model": algo, "samples": int(graph.n_src), **res}, out)
    return 0


def predict_mf(args):
    from tux2 import loaders
    model = estimators.MF.load(args.model)
    if args.top_k is not None:
        with _output(args.output) as out:
            if args.input:
                _recommend_listed(args, model, out)
            else:
                u, items, score = model.recommend(None, args.top_k, exclude_seen=not args.include_seen)
                _write_top(out, u.tolist(), items.tolist(), score.tolist())
        return 0
    if args.input is None:
        raise Tux2Error("INPUT is required: 'user item [rating]' lines, or pass --top-k")
    g = loaders.load_edges(args.input, type_names=("user", "item"), id_maps=model.ids_, known=model.known_,
                           unknown=args.unknown, columns=args.columns)
    pred = model.score_dense(g.src, g.dst, g.unknown)
    users, items = loaders.edge_ids(g, 0), loaders.edge_ids(g, 1)
    with _output(args.output) as out:
        out.write("# user item prediction\n")
        for a, b, r in zip(users.tolist(), items.tolist(), pred.tolist()):
            out.write(f"{a} {b} {r:.6g}\n")
    res = {"model": "mf", "pairs": int(g.num_edges)}
    if g.unknown is not None:
        res["unknown_pairs"] = int((g.unknown[0] | g.unknown[1]).sum())
    if g.skipped:
        res["skipped_unknown"] = int(g.skipped)
    if g.values is not None:
        err = g.values - pred
        res.update(rmse=float(np.sqrt(np.mean(err ** 2))) if len(err) else None,
                   mae=float(np.mean(np.abs(err))) if len(err) else None)
    if g.values is not None or g.unknown is not None or g.skipped:
        _report(args, res, out)
    return 0


def _write_top(out, users, items, scores):
    for user, row, srow in zip(users, items, scores):
        out.write(f"{user}" + "".join(f" {it}:{sc:.6g}" for it, sc in zip(row, srow) if it is not None) + "\n")


def _recommend_listed(args, model, out):
    """--top-k for the users named one per line (first token) in INPUT, in its order;
    a user without training ratings follows --unknown (baseline: the items of highest
    μ + b_i)."""
    path = args.input
    toks, lines = [], []
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            t = raw.replace(b",", b" ").split()
            if t and t[0][:1] not in (b"#", b"%"):
                toks.append(t[0].decode("utf-8", "replace"))
                lines.append((no, raw.decode("utf-8", "replace").rstrip("\r\n")))
    if not toks:
        raise InputError("no users listed", path=path)
    dense = model.lookup(0, toks)
    known = dense >= 0
    known[known] = model.known_[0][dense[known]]
    if not known.all() and args.unknown == "error":
        i = int(np.flatnonzero(~known)[0])
        raise InputError(f"unknown user {toks[i]!r} (no training ratings); --unknown skip leaves such users out, "
                         "--unknown baseline recommends the items of highest mean + item bias", path=path,
                         line=lines[i][0], text=lines[i][1])
    users, items, score = model.recommend(np.array(toks), args.top_k, exclude_seen=not args.include_seen,
                                          unknown=args.unknown)
    _write_top(out, users.tolist(), items.tolist(), score.tolist())
    if not known.all():
        print(json.dumps({"model": "mf", "users": len(toks), "unknown_users": int((~known).sum()),
                          "unknown": args.unknown}), file=sys.stderr)


def predict_lda(args):
    """Topic mixtures of INPUT's documents under the model (fold-in Gibbs sampling)."""
    from tux2 import io, loaders
    if args.input is None:
        raise Tux2Error("INPUT is required: documents in any format 'tux2 run lda' reads")
    model = estimators.LDA.load(args.model)
    word_topic, vocab = model.word_topic_, model.vocab_
    fmt = io.sniff_corpus(args.input)
    if vocab is not None and fmt == "text":
        g, words = io.read_text_docs(args.input, ("doc", "word"))
        index = {w: i for i, w in enumerate(vocab)}
        to_model = np.array([index.get(w, -1) for w in words], np.int64)
        known = to_model[g.dst] >= 0
        dropped = int(g.values[~known].sum())
        from tux2.graph import BipartiteGraph
        g = BipartiteGraph(g.src[known], to_model[g.dst[known]], g.values[known], g.n_src, len(vocab),
                           ("doc", "word"), args.input)
    else:
        g, _, fmt = loaders.load_corpus(args.input)
        dropped = 0
        if g.n_dst > word_topic.shape[1]:
            from tux2.io import edge_line
            i = int(np.argmax(g.dst))
            line, text = edge_line(args.input, i, 3 if fmt == "docword" else 0)
            raise InputError(f"word id beyond the model's {word_topic.shape[1]} words", path=args.input, line=line,
                             text=text)
    theta = model.transform(g, args.iterations, args.seed)
    with _output(args.output) as out:
        out.write("# document " + " ".join(f"topic{k}" for k in range(theta.shape[1])) + "\n")
        for d, row in enumerate(theta):
            out.write(f"{d} " + " ".join(f"{x:.4g}" for x in row) + "\n")
    _report(args, {"model": "lda", "documents": int(g.n_src), "tokens": int(g.values.sum()) if g.num_edges else 0,
                   "unknown_words_dropped": dropped}, out)
    return 0

