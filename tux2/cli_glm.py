"""``tux2 run lr|svm|softmax|fm [INPUT]``: generalised linear models and factorization
machines by mini-batch SGD, with the training strategy of Spark MLlib, MLlib*, Petuum,
ColumnSGD or PS2."""
import time

import numpy as np

import tux2
from tux2.errors import Tux2Error

MODELS = {"lr": ("logistic", "logistic regression"), "svm": ("hinge", "linear SVM (hinge loss)"),
          "softmax": ("softmax", "multinomial (softmax) regression"),
          "fm": ("logistic", "factorization machine (degree 2)")}


def add_parser(algos):
    from tux2.cli import (COUNT, NONNEG, NONNEG_NUMBER, POSITIVE, SEED, HelpFormatter, add_checkpoint_args,
                          add_distributed_args, add_output_args, integer)
    from tux2.cli_libsvm import add_libsvm_args
    from tux2.udfs.glm import OPTIMIZERS, STRATEGIES
    for name, (loss, title) in MODELS.items():
        p = algos.add_parser(
            name, help=f"{title} by mini-batch SGD; --strategy picks the system it trains like",
            formatter_class=HelpFormatter,
            description=f"Minimises (1/n) sum_i loss(x_i.W, y_i) + lambda R(W) for the {title} over a libsvm "
                        "file (1-based feature indices unless --zero-based"
                        + ("; labels 0..K-1" if loss == "softmax" else "; labels +1/-1 or 1/0")
                        + "). Strategies: sendgradient = Spark MLlib (gradients to the feature masters; "
                        "--driver puts them all on one partition), adam = PS2 (Adam moments beside the "
                        "weights at the masters), column = ColumnSGD (features partitioned by column, "
                        "partial margins travel), modelavg = MLlib* (local SGD, replicas averaged once per "
                        "epoch), modelsum = Petuum-style summed deltas. Without INPUT a kdd-shaped sparse "
                        "problem is generated (20k + 2k samples, 10k power-law features).")
        add_libsvm_args(p, "accuracy, log-loss" + ("" if loss == "softmax" else " and AUC"))
        if name == "fm":
            p.add_argument("--loss", default="logistic", choices=("logistic", "hinge"), help="loss of the output")
            p.add_argument("--factors", type=integer(1, 100_000), default=8, help="F, latent factors per feature")
            p.add_argument("--init-std", type=NONNEG_NUMBER, default=0.01,
                           help="factors start as normal draws with this standard deviation")
        p.add_argument("--strategy", default="sendgradient", choices=STRATEGIES, help="training strategy")
        p.add_argument("--optimizer", choices=OPTIMIZERS, default=None,
                       help="the update (default: adam for --strategy adam, else sgd). column and sendgradient "
                            "take any, at the feature masters; modelavg and modelsum take sgd or adagrad, in "
                            "their local steps (with --batch equal to the workers: per-sample AdaGrad, as "
                            "Vowpal Wabbit's adaptive update)")
        p.add_argument("--driver", action="store_true",
                       help="sendgradient only: every feature master on partition 0 (Spark's driver)")
        p.add_argument("--reg", default="l2", choices=("l2", "l1"), help="regulariser R: 1/2 |W|^2 or |W|_1")
        p.add_argument("--lam", type=NONNEG_NUMBER, default=1e-6, help="regularisation weight lambda")
        p.add_argument("--batch", type=NONNEG, default=1000, help="samples per mini-batch (one clock); 0: all")
        p.add_argument("--eta", type=POSITIVE, default=None,
                       help="step size (default: 1.0 for sgd, 0.1 for adagrad, 0.01 for adam)")
        p.add_argument("--decay", type=NONNEG_NUMBER, default=0.0, help="step at epoch t is eta / (1 + decay t)")
        p.add_argument("--epochs", type=NONNEG, default=10, help="passes over the samples")
        if loss == "softmax":
            p.add_argument("--classes", type=integer(2, 100_000), default=None,
                           help="number of classes (default: max label + 1)")
        p.add_argument("--partitions", type=COUNT, default=None,
                       help="number of partitions (P; default: one per worker and thread)")
        p.add_argument("--seed", type=SEED, default=0, help="seed of the sample shuffle and the partitioning")
        add_output_args(p, "directory for weights.npz, weights.txt and model.json", "epoch")
        add_checkpoint_args(p, "epoch")
        add_distributed_args(p)
        p.set_defaults(func=run_glm, model=name, **({} if name == "fm" else {"loss": loss, "factors": 0}))


def run_glm(args):
    from tux2.cli import run_distributed
    return run_distributed(args, _run_glm)


def metrics(W, graph, labels, loss, fm=False):
    """accuracy and log-loss (binary: and AUC) of W on a test set; features beyond W count 0."""
    from tux2.udfs.glm import graph_scores
    return score_metrics(graph_scores(W, graph, fm), labels, loss)


def score_metrics(M, labels, loss):
    """accuracy and log-loss (binary: and AUC) of scores M (n, K) against labels."""
    from tux2.cli_libsvm import classification_metrics
    if loss != "softmax":
        return classification_metrics(M[:, 0], labels)
    y = np.asarray(labels, np.int64)
    K = M.shape[1]
    top = M.max(axis=1)
    lse = top + np.log(np.exp(M - top[:, None]).sum(axis=1))
    inside = y < K
    ll = float(np.mean(lse[inside] - M[np.flatnonzero(inside), y[inside]])) if inside.any() else float("nan")
    return {"accuracy": float(np.mean(M.argmax(axis=1) == y)) if len(y) else float("nan"), "logloss": ll}


def _run_glm(args, transport, rank, world):
    from tux2.cli import check_partitions, epoch_loop, partitions, record_epoch, save_model, speaker, write_trace
    from tux2.cli_libsvm import load_classification
    from tux2.udfs import glm
    say = speaker(args, rank)
    if args.batch < 0 or args.epochs < 0 or args.lam < 0:
        raise Tux2Error(f"--batch, --epochs and --lam must be >= 0, got {args.batch}, {args.epochs}, {args.lam}")
    if args.driver and args.strategy != "sendgradient":
        raise Tux2Error("--driver (all feature masters on one partition) goes with --strategy sendgradient")
    optimizer = args.optimizer or ("adam" if args.strategy == "adam" else "sgd")
    eta = args.eta if args.eta is not None else {"adam": 0.01, "adagrad": 0.1}.get(optimizer, 1.0)
    parts = partitions(args, world)
    classes = getattr(args, "classes", None)
    g, y, test, source = load_classification(args, (classes or 5) if args.loss == "softmax" else 2)
    try:
        glm.labels_for(args.loss, y, classes)
    except ValueError as e:
        raise Tux2Error(f"{source}: {e}") from None
    say(f"tux2 {tux2.__version__} {args.model} ({args.loss}, {args.reg}, strategy {args.strategy}): {source}")
    say(f"  {g.n_src} samples, {g.n_dst} features, {g.num_edges} non-zeros; lambda={args.lam}, "
        f"batch {args.batch or g.n_src}, eta {eta}, P={parts}" + (f", {world} workers" if world > 1 else ""))
    check_partitions(args, g.num_edges)
    t0 = time.perf_counter()
    eng, perm = glm.engine(g, y, args.loss, args.strategy, parts=parts, driver=args.driver, seed=args.seed,
                           transport=transport, threads=args.threads, reg=args.reg, lam=args.lam, batch=args.batch or None, eta=eta,
                           decay=args.decay, classes=classes, evaluate=True, factors=args.factors,
                           optimizer=optimizer,
                           **({"init_std": args.init_std} if args.factors else {}))
    say(f"  layout + compile {time.perf_counter() - t0:.2f}s")
    with epoch_loop(args, eng, transport, rank, say, args.epochs) as (ck, write_metrics, iterations):
        for epoch, dt, total, comm in iterations:
            ctx = eng.context()
            rec = {"epoch": epoch, "time_s": round(dt, 6), "total_time_s": round(total, 6),
                   "objective": float(ctx["objective"]), "loss": float(ctx["loss"] / max(g.n_src, 1)),
                   "nnz": int(ctx["nnz"]), "clock": eng.clock, **comm}
            if test is not None:
                W = glm.weights(eng)
                if W is not None:
                    rec.update({f"test_{k}": v for k, v in metrics(W, test[0], test[1], args.loss,
                                                                                  args.factors > 0).items()})
            say(f"epoch {epoch:3d}/{args.epochs}  objective {rec['objective']:.6g}  "
                + (f"test acc {rec['test_accuracy']:.4f}  " if "test_accuracy" in rec else "")
                + f"time {dt:.3f}s")
            record_epoch(write_metrics, ck, epoch, rec, rec["objective"],
                         f"objective is not finite at epoch {epoch}: lower --eta (now {eta})")
    write_trace(args.trace, eng, rank)
    datas = [eng.vertex_data("sample"), eng.vertex_data("feature")]
    if rank != 0 or not args.out:
        return 0
    W = np.asarray(datas[1]["w"]).reshape(g.n_dst, -1)
    ctx = eng.context()
    params = {"algorithm": args.model, "loss": args.loss, "reg": args.reg, "lam": args.lam,
              "strategy": args.strategy, "optimizer": optimizer, "driver": args.driver, "batch": args.batch,
              "eta": eta,
              "decay": args.decay, "epochs": args.epochs, "factors": args.factors,
              "classes": int(W.shape[1]) if args.loss == "softmax" else 2,
              "zero_based": args.zero_based, "seed": args.seed, "samples": g.n_src, "features": g.n_dst,
              "partitions": parts, "workers": world, "input": source, "objective": float(ctx["objective"])}
    save_model(args.out, eng, params, datas=datas, summary=say.lines,
               extra=weight_files(W, args.zero_based, args.factors > 0))
    say(f"model written to {args.out}")
    return 0


def weight_files(W, zero_based=False, fm=False):
    """The writers (``tux2.files``) of weights.npz (w: features × K, or w and V:
    features × F for a factorization machine) and weights.txt: one line per non-zero
    feature, libsvm-style 'index:w' (binary), 'index:w_0,…,w_K-1' or 'index:w,v_1,…,v_F',
    index in the input's base."""
    from tux2.files import npz, text
    base = 0 if zero_based else 1
    lines = "".join(f"{j + base}:" + ",".join(f"{v:.17g}" for v in W[j]) + "\n"
                    for j in np.flatnonzero(np.any(W != 0, axis=1)))
    return {"weights.npz": npz({"w": W[:, 0], "V": W[:, 1:]} if fm else {"w": W[:, 0] if W.shape[1] == 1 else W}),
            "weights.txt": text(lines)}

