"""``tux2 predict MODEL_DIR INPUT``: apply a model written by ``tux2 run … --out``
to new data — scores, labels and probabilities per sample, plus accuracy, log-loss
and AUC when the input carries labels (libsvm always does)."""
import json
import math
import os
import sys

import numpy as np

from tux2.errors import Tux2Error

LINEAR = ("lr", "svm", "softmax", "fm", "blockpg")


def add_parser(sub):
    from tux2.cli import HelpFormatter
    p = sub.add_parser("predict", help="apply a trained model (a 'tux2 run … --out DIR' directory) to new data",
                       formatter_class=HelpFormatter,
                       description="Writes one line per input sample: the predicted label, then the score "
                                   "(binary models; lr and logistic fm add the probability of +1) or the "
                                   "class probabilities (softmax). Prints accuracy, log-loss and AUC "
                                   f"against the input's labels. Models: {', '.join(LINEAR)}.")
    p.add_argument("model", help="directory written by 'tux2 run ALGO … --out DIR'")
    p.add_argument("input", help="samples to score, in libsvm format (labels are used for the metrics)")
    p.add_argument("-o", "--output", help="predictions file (default: standard output)")
    p.add_argument("--zero-based", default=None, action="store_true",
                   help="feature indices start at 0 (default: as the model was trained)")
    p.add_argument("--metrics", help="also write the metrics as one JSON object to this file")
    p.set_defaults(func=predict)


def load_model(directory):
    """(metadata dict, weights dict) of a model directory, with a clear error when it is not one."""
    meta_path = os.path.join(directory, "model.json")
    if not os.path.exists(meta_path):
        raise Tux2Error(f"{directory}: no model.json here; pass the directory given to 'tux2 run … --out'")
    with open(meta_path) as f:
        meta = json.load(f)
    algo = meta.get("algorithm")
    if algo not in LINEAR:
        raise Tux2Error(f"{meta_path}: tux2 predict handles {', '.join(LINEAR)} models; this one is {algo!r}")
    path = os.path.join(directory, "weights.npz")
    if not os.path.exists(path):
        raise Tux2Error(f"{directory}: weights.npz is missing")
    with np.load(path) as z:
        return meta, {k: z[k] for k in z.files}


def model_scores(meta, weights, graph):
    """(n, K) scores of the samples of ``graph`` under a loaded model."""
    from tux2.cli_libsvm import with_bias
    from tux2.udfs.glm import graph_scores
    w = weights["w"]
    if meta["algorithm"] == "blockpg" and meta.get("bias"):
        graph = with_bias(graph, len(w) - 1)
    if meta["algorithm"] == "fm":
        return graph_scores(np.column_stack([w, weights["V"]]), graph, fm=True)
    return graph_scores(w, graph)


def predict(args):
    from tux2.cli_glm import score_metrics
    from tux2.io import read_libsvm
    meta, weights = load_model(args.model)
    zero_based = meta.get("zero_based", False) if args.zero_based is None else args.zero_based
    graph, labels = read_libsvm(args.input, zero_based=zero_based, type_names=("sample", "feature"))
    M = model_scores(meta, weights, graph)
    algo = meta["algorithm"]
    loss = meta.get("loss", "logistic")
    out = open(args.output, "w") if args.output else sys.stdout
    try:
        if loss == "softmax":
            P = np.exp(M - M.max(axis=1, keepdims=True))
            P /= P.sum(axis=1, keepdims=True)
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
    finally:
        if out is not sys.stdout:
            out.close()
    if loss == "softmax":
        from tux2.udfs.glm import labels_for
        try:
            labels_for("softmax", labels, M.shape[1])
        except ValueError as e:
            raise Tux2Error(f"{args.input}: {e}") from None
    res = score_metrics(M, labels, loss)
    res = {"model": algo, "samples": int(graph.n_src), **res}
    print(json.dumps(res), file=sys.stderr if out is sys.stdout else sys.stdout)
    if args.metrics:
        with open(args.metrics, "w") as f:
            json.dump(res, f)
    return 0
