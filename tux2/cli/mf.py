"""``tux2 run mf [INPUT]``: matrix factorisation by SGD or ALS on a user–item rating graph."""
from tux2 import ingress, loaders
from tux2.cli.common import (COUNT, FRACTION, NONNEG, NONNEG_NUMBER, POSITIVE, SEED, TEST_FRACTION,
                             run as run_command, add_input_args, add_run_args, add_partition_args, input_options)
from tux2.estimators.mf import ALPHA, CG_STEPS, CONFIDENCE, DAMPING, MF, NAMES
from tux2.files import json_text
from tux2.runner import Dataset, partitions, write_trace


def add_parser(sub):
    p = sub.add_parser(
        "mf", help="matrix factorisation by SGD (paper §4) or ALS, explicit or implicit feedback",
        description="Matrix factorisation on a user-item rating graph. INPUT is an edge list "
                    "'user item rating [more columns]' (tabs, spaces, commas, semicolons or '::', fields quoted or "
                    "not; a header line of names; '#'/'%' comments; MatrixMarket; gzip, bz2 or xz; '-' for standard "
                    "input). "
                    "Without INPUT a Netflix-shaped rating set is generated deterministically. With --implicit "
                    "(ALS: --mode als) the values are counts (plays, clicks; no value column: 1 per line) and every "
                    "(user, item) pair counts (Hu, Koren & Volinsky 2008).")
    p.add_argument("input", nargs="?", help="ratings edge list; default: built-in synthetic set")
    p.add_argument("--test", help="test edge list; default: hold out --test-fraction of INPUT")
    p.add_argument("--test-fraction", type=FRACTION, default=TEST_FRACTION, help="held-out share when --test is not given (the same lines whatever --seed)")
    p.add_argument("--ids", choices=loaders.ID_MODES, default="auto",
                   help="vertex ids: int (numbers used as they are), string (any token; mapped to dense ids, "
                        "saved with the model), auto (string when the first line's ids are not numbers)")
    p.add_argument("--duplicates", choices=MF.choices["duplicates"], default="error",
                   help="an edge given twice: error (name both lines), sum its values (with no value column: "
                        "count its lines, plays or clicks), keep the last, or keep all as separate edges")
    add_input_args(p, unknown=True)
    add_partition_args(p, default=None,
                       note=" (default: stratified with --order strata, else bicut)")
    p.add_argument("--k", type=MF.bounds["k"], default=50, help="latent dimension")
    p.add_argument("--lr", type=POSITIVE, default=None,
                   help="learning rate (default 0.1; 0.01 with --mode minibatch --step plain; none with --mode als)")
    p.add_argument("--reg", type=NONNEG_NUMBER, default=0.07,
                   help="L2 regularisation λ of the factors, per rating (with --mode als: λ·n_u on a user of n_u "
                        "ratings, Spark's weighted-λ; with --implicit: plain λ, as Hu et al. and implicit)")
    p.add_argument("--damping", type=MF.bounds["damping"], default=DAMPING, metavar="D",
                   help="a bias is shrunk as if its user or item had D more ratings at the mean: b = Σ(r−r̂+b)/(n+D)")
    p.add_argument("--epochs", type=NONNEG, default=10, help="passes over the training edges")
    p.add_argument("--mode", choices=MF.choices["mode"], default=None,
                   help="(default: sgd, or als with --implicit) sgd: per-edge updates in Exchange (LibMF style); "
                        "minibatch: the paper's "
                        "Exchange-accumulate + Apply form; als: alternating least squares (Spark MLlib's ALS), "
                        "each epoch solves every user's, then every item's, least-squares problem exactly")
    p.add_argument("--implicit", action="store_true",
                   help="(picks --mode als) implicit feedback (clicks, plays, purchases): every (user, item) pair "
                        "counts, preference 1 on an edge, 0 elsewhere, confidence 1 + alpha·log(1 + r) on an edge "
                        "(Hu et al., implicit's ALS, Spark's implicitPrefs; --confidence); reports the objective "
                        "and precision@10 / NDCG@10 of the held-out items")
    p.add_argument("--alpha", type=MF.bounds["alpha"], default=ALPHA,
                   help=f"--implicit: confidence slope, c = 1 + alpha·log(1 + r/epsilon), or with --confidence "
                        f"linear 1 + alpha·r (default {ALPHA:g}, Spark's and implicit's; Hu et al.'s linear form "
                        "used 40, which ranked 1.2-8x worse on real plays and events, README)")
    p.add_argument("--confidence", choices=MF.choices["confidence"], default=CONFIDENCE,
                   help="--implicit: how a count r becomes a confidence: log, c = 1 + alpha·log(1 + r/epsilon) (the "
                        "default; Hu et al.'s log scaling: a few huge counts do not outweigh the rest), or linear, "
                        "c = 1 + alpha·r (Hu et al.'s first form, implicit's and Spark's only one; README: measured)")
    p.add_argument("--epsilon", type=MF.bounds["epsilon"], default=1.0,
                   help="--confidence log: the count scale ε of c = 1 + alpha·log(1 + r/ε) (default 1)")
    p.add_argument("--solver", choices=MF.choices["solver"], default=None,
                   help="--implicit: how each user's and item's least-squares system is solved: cg (the default, "
                        "but cholesky where the largest confidence exceeds 1e5: --confidence linear on counts in the millions), "
                        "--cg-steps conjugate-gradient steps from the last epoch's factors (Takács et al. 2011, "
                        "implicit's default; O(n·k) each), or cholesky, exactly (O(n·k²) to form the system, O(k³) "
                        "to factor it); the same ranking after the same epochs, cg ~3x faster (README: measured)")
    p.add_argument("--cg-steps", type=MF.bounds["cg_steps"], default=CG_STEPS,
                   help=f"--solver cg: conjugate-gradient steps per user and item and half-epoch (default {CG_STEPS}, "
                        "implicit's; k or more: the exact solve up to rounding)")
    p.add_argument("--batch-size", type=COUNT, default=None,
                   help="mini-batch size, one clock each (default: a stratum with sgd, 5000 edges with minibatch)")
    p.add_argument("--batch-unit", choices=MF.choices["batch_unit"], default="edge",
                   help="--batch-size counts edges, or vertices of the --enumerate type")
    p.add_argument("--step", choices=MF.choices["step"], default="adagrad",
                   help="--mode minibatch update at the masters: adagrad (p -= lr a/sqrt(G), G += |a|^2/k per "
                        "vertex: bounded steps for hot vertices) or plain (p -= lr a, the paper's Fig. 5; diverges "
                        "on power-law degrees unless lr is tiny)")
    p.add_argument("--enumerate", choices=MF.choices["enumerate"], default="item",
                   help="vertex type enumerated when --batch-unit vertex")
    p.add_argument("--no-biases", action="store_true", help="drop user/item bias terms")
    p.add_argument("--order", choices=MF.choices["order"], default=None,
                   help="global edge order. strata (the default with --mode sgd): DSGD's conflict-free "
                        "strata of --blocks x --blocks tiles, so any number of partitions, workers and threads "
                        "up to --blocks gives the one-partition model bit for bit; blocked (the default with "
                        "--mode minibatch): tiles in a shuffled order, cache friendly; shuffle; input: as read")
    p.add_argument("--blocks", type=MF.bounds["blocks"], default=None,
                   help="row and column blocks of --order strata (default 16, or the partitions if more; the "
                        "model depends on it, not on partitions, workers or threads; partitions that divide it "
                        "share the work evenly)")
    p.add_argument("--overlap", choices=MF.choices["overlap"], default="error",
                   help="NOT RECOMMENDED to change. With an order other than strata on several partitions, "
                        "several replicas of an item take their own SGD steps in one clock; allow sums "
                        "them (the step grows with the number of replicas: a worse model than one "
                        "partition's, or divergence); error stops such a run and names the remedies")
    p.add_argument("--seed", type=SEED, default=0, help="seed of initialisation, split, order and partitioning")
    add_run_args(p, "directory for the model (.npz per vertex type + model.json)", "epoch")
    p.add_argument("--init-model", metavar="DIR",
                   help="start from the model in DIR (--out of an earlier run): its users and items that INPUT "
                        "has start from their factors and biases, the others as in a new model; --k is the "
                        "model's (given, it must be) (warm start, to train on more ratings or for more epochs)")
    p.add_argument("--eval-every", type=NONNEG, default=1,
                   help="compute test RMSE (--implicit: precision and NDCG@10) every N epochs (0: only after the "
                        "last); with several workers "
                        "it gathers the model on rank 0")
    p.add_argument("--early-stop", type=NONNEG, default=0, metavar="N",
                   help="stop once the test RMSE has not fallen below its lowest (--implicit: NDCG@10 not risen "
                        "above its highest) for N evaluations (0: never)")
    p.set_defaults(func=run)


def run(args):
    if args.init_model and "k" not in args.given:        # --k defaults to the model's (a model of k=20 was refused)
        from tux2.model_check import read_meta
        k = read_meta(args.init_model).get("k")
        args.k = k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else args.k     # (else load names it)
    return run_command(args, MF, load, after=held_out_note, biases=not args.no_biases, **input_options(args))


def held_out_note(args, est, say):
    """--out of a run that held out a share of INPUT: the model lacks those ratings (MF().fit(INPUT) has them)."""
    if args.out and args.input is not None and not args.test and args.test_fraction > 0:
        say(f"  note: the model leaves out the {args.test_fraction * 100:g}% of INPUT held out to test it "
            "(--test-fraction; its --top-k lists leave them out all the same); --test-fraction 0 trains on "
            "every rating")


def load(args, est, transport, say):
    """This worker's share of INPUT (distributed ingress), or INPUT and --test, or INPUT
    split by --test-fraction, or the built-in set."""
    order, blocks, partitioner = est.schedule(partitions(args.partitions, transport.world if transport else 1,
                                                         args.threads, est.tiled()))
    if (transport is not None and args.input is not None and partitioner in ingress.LOCAL_STRATEGIES
            and order in ("input", "blocked", "strata") and args.duplicates in ("error", "keep")
            and args.ids != "string" and (args.ids == "int" or loaders.numeric_ids(args.input, args.columns))):
        train, assignment, spread, test = ingress.load(
            transport, args.input, transport.parts, partitioner, args.seed, args.test, args.test_fraction, order,
            single_clock=est.single_clock(), type_names=NAMES, duplicates=args.duplicates,
            partitioner_options={"blocks": blocks} if partitioner == "stratified" else None, unknown=est.unknown,
            columns=est.columns, base=est.base)
        write_trace(args.trace, f"ingress-{transport.rank}.json", json_text(train.stats))
        return Dataset(train, test, source=args.input, assignment=assignment, **spread, held_out=not args.test,
                       read_as=loaders.describe_read(train, est.base), id_base=int(train.base))
    if transport is not None and args.input is not None:
        say(f"  note: every worker reads the whole input (distributed ingress needs numeric ids, --duplicates "
            f"error or keep, --order input or blocked and one of: {', '.join(ingress.LOCAL_STRATEGIES)})")
    if args.input is None:
        from tux2.datacache import generated
        from tux2.datasets import netflix_like
        train, test = generated(netflix_like, n_users=10_000, n_items=1_000, n_ratings=600_000, seed=args.seed)
        return Dataset(train, test, source="built-in Netflix-shaped set (10k users, 1k items, 600k ratings, "
                                           "planted rank 10, noise 0.5)")
    data = est.load_data(args.input, args.test)
    if not args.test:     # held out by a hash of each edge's line position, as a distributed run holds it out
        g = data.train
        held = ingress.test_mask(range(g.num_edges), args.test_fraction)
        data.train, test = g.permuted(~held), g.permuted(held)
        # held-out ids without training ratings follow --unknown
        data.test = loaders.mark_unknown(test, loaders.known_ids(data.train), est.unknown)
        data.facts["held_out"] = True       # a part of the input, not the input itself
    return data
