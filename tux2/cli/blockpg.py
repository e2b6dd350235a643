"""``tux2 run blockpg [INPUT]``: L1-regularised logistic regression by block proximal gradient."""
from tux2.cli.common import (NONNEG, NONNEG_NUMBER, SEED, classification_data,
                             run as run_command, add_libsvm_args, add_run_args, add_partition_args)
from tux2.estimators.linear import BlockPG


def add_parser(algos):
    p = algos.add_parser(
        "blockpg", help="L1 logistic regression by block proximal gradient (paper §4, Fig. 7)",
        description="Minimises sum_i log(1 + exp(-y_i x_i.w)) + lambda |w|_1 (liblinear's L1 objective "
                    "with C = 1/lambda) over a libsvm file or a table of numbers (CSV, TSV …, labels in a column a "
                    "header names or in --label-column): labels +1/-1 or 1/0, libsvm feature indices from 1, or "
                    "from 0 when an index 0 occurs. Without INPUT a kdd-shaped sparse problem is generated "
                    "(20k samples, 10k power-law features).")
    add_libsvm_args(p, "accuracy, log-loss and AUC")
    p.add_argument("--lam", type=NONNEG_NUMBER, default=1.0, help="L1 weight lambda (= 1/C of liblinear)")
    p.add_argument("--block-size", type=BlockPG.bounds["block_size"], default=None,
                   help="features per block (mini-batch, one clock); blocks are a seeded shuffle "
                        "(default 500; newton: up to 512, ~1 of a sample's features per block)")
    p.add_argument("--form", choices=BlockPG.choices["form"], default="auto",
                   help="kappa: a proximal step per block under the kappa bound (fast on 0/1 features); "
                        "newton: a proximal Newton step per epoch, 10 coordinate-descent sweeps and a line "
                        "search (converges on counts, tf-idf and unscaled values); auto: kappa when each "
                        "sample's values are equal (0/1, one-hot) and it has under 8 features per block, "
                        "else newton")
    p.add_argument("--epochs", type=NONNEG, default=20, help="passes over all blocks")
    p.add_argument("--tol", type=NONNEG_NUMBER, default=0.0,
                   help="stop when the objective fell by less than this relative amount over the last "
                        "shrink-rest + 1 epochs, in which every feature was examined (0: never)")
    p.add_argument("--shrink", type=BlockPG.bounds["shrink"], default=0.9,
                   help="a feature at 0 whose |gradient| < shrink * lambda sits out the next epochs "
                        "(liblinear-style shrinking; 0: off)")
    p.add_argument("--shrink-rest", type=BlockPG.bounds["shrink_rest"], default=2,
                   help="epochs a shrunk feature sits out")
    p.add_argument("--bias", action="store_true",
                   help="add a constant feature 1 to every sample (an intercept, L1-penalised like liblinear's)")
    add_partition_args(p, mirror_free="samples")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the feature shuffle and the partitioning")
    add_run_args(p, "directory for weights.npz, weights.txt (index:weight, non-zeros) and model.json", "epoch")
    p.add_argument("--init-model", metavar="DIR",
                   help="start from the weights of the model in DIR (--out of an earlier run of this command), "
                        "features by index (warm start: a new lambda from the last one's optimum, more samples, "
                        "more epochs); the labels and intercept must be the model's")
    p.set_defaults(func=run)


def run(args):
    return run_command(args, BlockPG, classification_data)
