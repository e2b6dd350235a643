"""``tux2 run lr|svm|softmax|fm|linreg [INPUT]``: generalised linear models (linreg: the
squared loss, regression) and factorization machines (``--loss squared``: regression) by mini-batch SGD, with the training strategy of Spark MLlib, MLlib*, Petuum,
ColumnSGD or PS2."""
import argparse

from tux2.cli.common import (NONNEG, NONNEG_NUMBER, PARTITIONS, POSITIVE, SEED, classification_data,
                             run as run_command, add_libsvm_args, add_run_args)
from tux2.estimators import ALGORITHMS
from tux2.estimators.linear import FM, LinearRegression, LinearSVM, LogisticRegression, Softmax

TITLES = {LogisticRegression: "logistic regression", LinearSVM: "linear SVM (hinge loss)",
          Softmax: "multinomial (softmax) regression", FM: "factorization machine (degree 2)",
          LinearRegression: "linear regression (squared loss)"}


def add_parser(algos):
    for cls, title in TITLES.items():
        # (LogisticRegression's loss is a property: logistic, or softmax once fit sees more than two labels)
        name, loss = cls.algorithm, "logistic" if cls is LogisticRegression else cls.loss
        p = algos.add_parser(
            name, help=f"{title} by mini-batch SGD; --strategy picks the system it trains like",
            description=f"Minimises (1/n) sum_i loss(x_i.W, y_i) + lambda R(W) for the {title} over a libsvm "
                        "file or a table of numbers (CSV, TSV …, labels in a column a header names or in "
                        "--label-column; libsvm feature indices from 1, or from 0 when an index 0 occurs"
                        + ("; any labels, each a class" if loss == "softmax" else
                           "; the labels are real-valued targets, trained centred and scaled (their mean and "
                           "root mean square), predictions in their units" if loss == "squared" else
                           "; any two labels: +1/-1, 1/0 … (--loss squared: real-valued targets, regression)"
                           if name == "fm" else "; any labels: two for the logistic model, more for the "
                           "multinomial (softmax) one, as scikit-learn's LogisticRegression" if name == "lr"
                           else "; any two labels: +1/-1, 1/0 …")
                        + "). Strategies: sendgradient = Spark MLlib (gradients to the feature masters; "
                        "--driver puts them all on one partition), adam = PS2 (Adam moments beside the "
                        "weights at the masters), column = ColumnSGD (features partitioned by column, "
                        "partial margins travel), modelavg = MLlib* (local SGD, replicas averaged once per "
                        "epoch), modelsum = Petuum-style summed deltas. Without INPUT a kdd-shaped sparse "
                        "problem is generated (20k + 2k samples, 10k power-law features"
                        + ("; targets 100 + the planted margin + N(0, 1) noise" if loss == "squared" else "") + ").")
        add_libsvm_args(p, "RMSE, MAE and R^2" if loss == "squared" else "accuracy, " + {
            "softmax": "log-loss", "hinge": "hinge loss and AUC"}.get(
            loss, "log-loss" + (" (hinge loss with --loss hinge; RMSE, MAE and R^2 with --loss squared)"
                                if name == "fm" else "") + " and AUC"))
        if name == "fm":
            p.add_argument("--loss", default="logistic", choices=FM.choices["loss"], help="loss of the output: logistic or hinge (classification), squared (regression, libFM's -task r)")
            p.add_argument("--factors", type=FM.bounds["factors"], default=8, help="F, latent factors per feature")
            p.add_argument("--init-std", type=NONNEG_NUMBER, default=0.01,
                           help="factors start as normal draws with this standard deviation")
            p.add_argument("--norm", default="auto", choices=FM.choices["norm"],
                           help="l2: each sample scaled to unit length (xLearn's default); none: the values as "
                                "they are; auto: l2 when they are raw counts (whole numbers, some 4 or more) or one-hot "
                                "rows (every value 1: hashed categorical features, as Criteo's)")
        p.add_argument("--strategy", default="sendgradient", choices=FM.choices["strategy"], help="training strategy")
        p.add_argument("--optimizer", choices=FM.choices["optimizer"], default=None,
                       help="the update (default: adam for --strategy adam, else adagrad). column and sendgradient "
                            "take any, at the feature masters; modelavg and modelsum take sgd or adagrad, in "
                            "their local steps (with --batch equal to the workers: per-sample AdaGrad, as "
                            "Vowpal Wabbit's adaptive update)")
        if name == "fm":
            p.add_argument("--bias", action="store_true",
                           help="an intercept: every sample gets a constant feature 1 (with factors of its own)")
        else:
            p.add_argument("--no-bias", dest="bias", action="store_false",
                           help="no intercept (by default every sample gets a constant feature 1 whose weight is "
                                "not penalised, as scikit-learn's and Spark MLlib's intercepts)")
        p.add_argument("--driver", action="store_true",
                       help="sendgradient only: every feature master on partition 0 (Spark's driver)")
        p.add_argument("--reg", default="l2", type=_penalty, choices=FM.choices["penalty"],
                       help="regulariser R: 1/2 |W|^2 or |W|_1 (its weight λ is --lam)")
        p.add_argument("--lam", type=NONNEG_NUMBER, default=None,
                       help="regularisation weight lambda (default 1/n for n training samples: scikit-learn's and "
                            "liblinear's C = 1)")
        p.add_argument("--batch", type=NONNEG, default=None,
                       help="samples per mini-batch (one clock); 0: all (default 64, or n/20 for n < 1,280 "
                            "samples: at least 20 steps an epoch; on several workers each batch is a round of "
                            "messages, and --batch 1000 trains faster, another model)")
        p.add_argument("--eta", type=POSITIVE, default=None,
                       help="step size (default: " + ("0.1" if name == "fm" else "0.5") + " for adagrad, 1.0 for sgd, "
                            "0.01 for adam)")
        p.add_argument("--decay", type=NONNEG_NUMBER, default=0.5 if loss == "squared" else 0.0,
                       help="step at epoch t is eta / (1 + decay t)" + (" (default 0.5: a squared loss's "
                            "gradients stay at the optimum, a constant step stalls near it)" if loss == "squared"
                            else ""))
        p.add_argument("--epochs", type=NONNEG, default=10, help="passes over the samples")
        p.add_argument("--tol", type=NONNEG_NUMBER, default=0.0,
                       help="stop once an epoch lowers the objective by less than this share of its value (0: "
                            "never; scikit-learn's and liblinear's stopping tolerance)")
        p.add_argument("--early-stop", type=NONNEG, default=0, metavar="N",
                       help="stop once the test " + ("RMSE" if loss == "squared" else "hinge loss" if loss == "hinge"
                                                      else "log-loss") + " has not fallen below its lowest for N "
                            "epochs, and keep the model of the lowest (needs --test; 0: never)")
        p.add_argument("--weight-column", metavar="N|NAME", default=None,
                       help="a table's column of sample weights (header name or 1-based number), read apart from "
                            "the features as the labels are: each sample's loss counts as often as it weighs "
                            "(LightGBM's weight_column; fit's sample_weight=); finite numbers >= 0. A test or "
                            "predicted table's weigh its metrics. libsvm files have no place for them: write a table")
        if name in ("lr", "svm", "softmax"):
            p.add_argument("--class-weight", type=_class_weight, default=None, metavar="balanced|LABEL:W,…",
                           help="weigh each sample's loss by its class's weight: 'balanced' (n / (K x the class's "
                                "count), as scikit-learn's) or LABEL:W pairs (1:5 or spam:2,ham:1; other classes 1)")
        if loss == "softmax":
            p.add_argument("--classes", type=Softmax.bounds["classes"], default=None,
                           help="K: the classes are 0..K-1, or 1..K when no label is 0, classes without samples "
                                "included (default: the labels the training file has, sorted)")
        p.add_argument("--partitions", type=PARTITIONS, default=None,
                       help="number of partitions (P; default: one per worker and thread)")
        p.add_argument("--seed", type=SEED, default=0, help="seed of the sample shuffle and the partitioning")
        add_run_args(p, "directory for weights.npz, weights.txt and model.json", "epoch")
        p.add_argument("--init-model", metavar="DIR",
                       help="start from the weights of the model in DIR (--out of an earlier run of this command), "
                            "features by index (warm start, to train on more samples or for more epochs); the "
                            "labels, intercept and form must be the model's")
        p.set_defaults(func=run, model=name, **({} if name == "fm" else {"loss": loss, "factors": 0}))


def run(args):
    return run_command(args, ALGORITHMS[args.model], classification_data)


def _class_weight(text):
    """--class-weight's value: 'balanced', or {label: weight} of LABEL:W pairs (a label that
    reads as a number is one, as a libsvm file's labels are)."""
    if text == "balanced":
        return text
    out = {}
    for pair in text.split(","):
        label, sep, weight = pair.rpartition(":")
        try:
            w = float(weight)
        except ValueError:
            w = None
        if not sep or not label or w is None:
            raise argparse.ArgumentTypeError(f"{pair!r}: give 'balanced' or LABEL:WEIGHT pairs, as 1:5,-1:1")
        try:
            key = float(label)
        except ValueError:
            key = label
        if key in out:              # (1:1,1:5 took the last weight and said nothing)
            raise argparse.ArgumentTypeError(f"{text!r}: the class {label} is given twice")
        out[key] = w
    return out


def _penalty(text):
    """--reg's value: the regulariser's name. A number is λ, which tux2 run mf and the
    estimators' ``reg=`` take there (it was 'invalid choice: 0.01 (choose from l2, l1)')."""
    try:
        float(text)
    except ValueError:
        return text
    raise argparse.ArgumentTypeError(f"{text} is a weight λ: use --lam {text} (here --reg picks the regulariser, "
                                     "l2 or l1; tux2 run mf's --reg and the estimators' reg= are λ)")
