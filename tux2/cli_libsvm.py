"""libsvm classification input and metrics shared by ``tux2 run blockpg`` and
``tux2 run lr|svm|softmax``: the input flags, the built-in problem, a bias feature,
scores and test metrics."""
import numpy as np

import tux2


def add_libsvm_args(p, metrics):
    """INPUT (optional: a built-in set), --test and --zero-based."""
    p.add_argument("input", nargs="?", help="training set in libsvm format; default: built-in generated set")
    p.add_argument("--test", help=f"test set (libsvm): {metrics} per epoch")
    p.add_argument("--zero-based", action="store_true", help="feature indices start at 0")
    p.add_argument("--duplicates", choices=("error", "sum", "last", "keep"), default="error",
                   help="a feature twice in one line: stop naming the line, add the values, keep the last, "
                        "or keep both")


def load_classification(args, classes=2, names=("sample", "feature")):
    """(train graph, labels, test (graph, labels) or None, description) from the flags:
    libsvm files, or without INPUT a kdd-shaped set of 20k train + 2k test samples over
    10k power-law features (``classes`` > 2: a softmax-labelled one)."""
    from tux2.loaders import load_libsvm
    if args.input is None:
        from tux2.datasets import sparse_classification
        g, y, _ = sparse_classification(n_samples=22_000, n_features=10_000, seed=args.seed, classes=classes)
        cut = 20_000
        keep = g.src < cut
        test = (tux2.BipartiteGraph(g.src[~keep] - cut, g.dst[~keep], g.values[~keep], g.n_src - cut, g.n_dst, names),
                y[cut:])
        g = tux2.BipartiteGraph(g.src[keep], g.dst[keep], g.values[keep], cut, g.n_dst, names)
        return g, y[:cut], test, f"built-in kdd-shaped set ({cut // 1000}k train + 2k test samples, " \
                                 f"10k power-law features{f', {classes} classes' if classes > 2 else ''})"
    g, y = load_libsvm(args.input, zero_based=args.zero_based, type_names=names, duplicates=args.duplicates)
    test = (load_libsvm(args.test, zero_based=args.zero_based, type_names=names, duplicates=args.duplicates)
            if args.test else None)
    return g, y, test, args.input


def with_bias(graph, index=None):
    """Every sample gets feature ``index`` (default: a new last feature) with value 1."""
    n = graph.n_src
    index = graph.n_dst if index is None else index
    src = np.concatenate([graph.src, np.arange(n)])
    dst = np.concatenate([graph.dst, np.full(n, index)])
    val = np.concatenate([graph.values, np.ones(n)])
    return tux2.BipartiteGraph(src, dst, val, n, max(graph.n_dst, index + 1), graph.type_names, graph.source)


def scores(w, graph):
    """x_i·w for every sample of ``graph`` (features beyond len(w) count as 0)."""
    keep = graph.dst < len(w)
    return np.bincount(graph.src[keep], graph.values[keep] * w[graph.dst[keep]], minlength=graph.n_src)


def classification_metrics(score, labels):
    """accuracy, mean log-loss and ROC AUC of scores x·w against labels ±1 / 0/1."""
    y = np.asarray(labels) > 0
    logloss = float(np.mean(np.logaddexp(0.0, -np.where(y, 1.0, -1.0) * score))) if len(y) else float("nan")
    acc = float(np.mean((score > 0) == y)) if len(y) else float("nan")
    pos, neg = int(y.sum()), int((~y).sum())
    auc = float("nan")
    if pos and neg:
        from scipy.stats import rankdata
        r = rankdata(score)
        auc = float((r[y].sum() - pos * (pos + 1) / 2) / (pos * neg))
    return {"accuracy": acc, "logloss": logloss, "auc": auc}
