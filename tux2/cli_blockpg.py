"""``tux2 run blockpg [INPUT]``: L1-regularised logistic regression by block proximal gradient."""
import time

import numpy as np

import tux2
from tux2.errors import Tux2Error


def add_parser(algos):
    from tux2.cli import (COUNT, NONNEG, NONNEG_NUMBER, SEED, HelpFormatter, add_checkpoint_args,
                          add_distributed_args, add_output_args, add_partition_args, number)
    from tux2.cli_libsvm import add_libsvm_args
    p = algos.add_parser(
        "blockpg", help="L1 logistic regression by block proximal gradient (paper §4, Fig. 7)",
        formatter_class=HelpFormatter,
        description="Minimises sum_i log(1 + exp(-y_i x_i.w)) + lambda |w|_1 (liblinear's L1 objective "
                    "with C = 1/lambda) over a libsvm file: labels +1/-1 or 1/0, 1-based feature "
                    "indices unless --zero-based. Without INPUT a kdd-shaped sparse problem is generated "
                    "(20k samples, 10k power-law features).")
    add_libsvm_args(p, "accuracy, log-loss and AUC")
    p.add_argument("--lam", type=NONNEG_NUMBER, default=1.0, help="L1 weight lambda (= 1/C of liblinear)")
    p.add_argument("--block-size", type=COUNT, default=500,
                   help="features per block (mini-batch, one clock); blocks are a seeded shuffle")
    p.add_argument("--epochs", type=NONNEG, default=20, help="passes over all blocks")
    p.add_argument("--tol", type=NONNEG_NUMBER, default=0.0,
                   help="stop when the objective fell by less than this relative amount over the last "
                        "shrink-rest + 1 epochs, in which every feature was examined (0: never)")
    p.add_argument("--shrink", type=number(0, 1, below=True), default=0.9,
                   help="a feature at 0 whose |gradient| < shrink * lambda sits out the next epochs "
                        "(liblinear-style shrinking; 0: off)")
    p.add_argument("--shrink-rest", type=NONNEG, default=2, help="epochs a shrunk feature sits out")
    p.add_argument("--bias", action="store_true",
                   help="add a constant feature 1 to every sample (an intercept, L1-penalised like liblinear's)")
    add_partition_args(p, mirror_free="samples")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the feature shuffle and the partitioning")
    add_output_args(p, "directory for weights.npz, weights.txt (index:weight, non-zeros) and model.json", "epoch")
    add_checkpoint_args(p, "epoch")
    add_distributed_args(p)
    p.set_defaults(func=run_blockpg)


def run_blockpg(args):
    from tux2.cli import run_distributed
    return run_distributed(args, _run_blockpg)


def _run_blockpg(args, transport, rank, world):
    from tux2.cli import check_partitions, epoch_loop, favorite_first, partitions, record_epoch, speaker, write_trace
    from tux2.cli_libsvm import classification_metrics, load_classification, scores, with_bias
    from tux2.udfs import blockpg
    say = speaker(args, rank)
    if args.block_size < 1:
        raise Tux2Error(f"--block-size must be >= 1, got {args.block_size}")
    if args.lam < 0:
        raise Tux2Error(f"--lam must be >= 0, got {args.lam}")
    parts = partitions(args, world)
    g, y, test, source = load_classification(args)
    bad = ~np.isin(y, (-1.0, 0.0, 1.0))
    if bad.any():
        raise Tux2Error(f"{source}: BlockPG is binary logistic regression; labels must be +1/-1 or 1/0, found "
                        f"{y[bad][0]:g} at sample {int(np.argmax(bad))}")
    if args.bias:
        g = with_bias(g)
        if test is not None:
            test = (with_bias(test[0], g.n_dst - 1), test[1])
    n, d = g.n_src, g.n_dst
    feat, perm = blockpg.shuffle_features(g.dst, d, seed=args.seed)
    if not 0 <= args.shrink < 1 or args.shrink_rest < 0:
        raise Tux2Error(f"--shrink must be in [0, 1) and --shrink-rest >= 0, got {args.shrink}, {args.shrink_rest}")
    prog = blockpg.program(y, g.values, g.src, feat, d, lam=args.lam, block_size=args.block_size,
                           shrink=args.shrink, rest=args.shrink_rest)
    graph = tux2.BipartiteGraph(g.src, feat, None, n, d, g.type_names, source)
    say(f"tux2 {tux2.__version__} blockpg: {source}")
    say(f"  {n} samples, {d} features, {g.num_edges} non-zeros; lambda={args.lam}, blocks of "
        f"{args.block_size} ({-(-d // args.block_size)} per epoch), P={parts} ({args.partitioner})"
        + (f", {world} workers" if world > 1 else ""))
    check_partitions(args, graph.num_edges)
    t0 = time.perf_counter()
    eng = tux2.Engine(prog, graph, partitions=parts, partitioner=args.partitioner, seed=args.seed,
                      partitioner_options=favorite_first(args.partitioner), transport=transport, slack=args.slack,
                      threads=args.threads)
    say(f"  layout + compile {time.perf_counter() - t0:.2f}s")
    objs, epoch = [], 0
    window = args.shrink_rest + 1 if args.shrink > 0 else 1
    with epoch_loop(args, eng, transport, rank, say, args.epochs) as (ck, write_metrics, iterations):
        for epoch, dt, total, comm in iterations:
            ctx = eng.context()
            rec = {"epoch": epoch, "time_s": round(dt, 6), "total_time_s": round(total, 6),
                   "objective": float(ctx["objective"]), "loss": float(ctx["loss_total"]),
                   "nnz": int(ctx["nnz"]), "clock": eng.clock, **comm}
            if test is not None:
                fw = eng.vertex_data("feature")                  # gathered on rank 0
                if fw is not None:
                    rec.update({f"test_{k}": v for k, v in
                                classification_metrics(scores(fw["w"][perm], test[0]), test[1]).items()})
            say(f"epoch {epoch:3d}/{args.epochs}  objective {rec['objective']:.6g}  non-zeros {rec['nnz']}  "
                + (f"test acc {rec['test_accuracy']:.4f} auc {rec['test_auc']:.4f}  " if 'test_auc' in rec else "")
                + f"time {dt:.3f}s")
            record_epoch(write_metrics, ck, epoch, rec, rec["objective"], f"objective is not finite at epoch {epoch}")
            objs.append(rec["objective"])
            prev = objs[-1 - window] if len(objs) > window else None
            if args.tol > 0 and prev is not None and prev - objs[-1] <= args.tol * abs(prev):
                say(f"  converged: relative decrease below {args.tol} over {window} epoch(s)")
                break
    write_trace(args.trace, eng, rank)
    datas = [eng.vertex_data("sample"), eng.vertex_data("feature")]
    if rank != 0 or not args.out:
        return 0
    from tux2.cli import save_model
    from tux2.cli_glm import weight_files
    w = datas[1]["w"][perm]
    ctx = eng.context()
    save_model(args.out, eng, {"algorithm": "blockpg", "lam": args.lam, "block_size": args.block_size,
                               "shrink": args.shrink, "shrink_rest": args.shrink_rest,
                               "epochs": epoch, "bias": args.bias, "zero_based": args.zero_based,
                               "seed": args.seed, "samples": n, "features": d, "partitions": parts, "workers": world,
                               "partitioner": args.partitioner, "input": source,
                               "objective": float(ctx["objective"]), "nnz": int(ctx["nnz"])},
               datas=datas, summary=say.lines, extra=weight_files(w[:, None], args.zero_based))
    say(f"model written to {args.out}")
    return 0
