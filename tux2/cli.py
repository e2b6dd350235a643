"""Command line: ``tux2 run mf [INPUT] ...``."""
import argparse
import contextlib
import json
import os
import socket
import sys
import time

import numpy as np

import tux2
import tux2.partitioning
from tux2.errors import Tux2Error


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except where there is none or the help text already explains it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS \
                or "default" in text:
            return text
        return super()._get_help_string(action)


def _add_run_mf(sub):
    p = sub.add_parser(
        "mf", help="matrix factorisation by SGD (paper §4)",
        formatter_class=HelpFormatter,
        description="Matrix factorisation on a user-item rating graph. INPUT is an edge list "
                    "'user item rating' (0-based ids; '#'/'%%' comments; MatrixMarket accepted). "
                    "Without INPUT a Netflix-shaped rating set is generated deterministically.")
    p.add_argument("input", nargs="?", help="ratings edge list; default: built-in synthetic set")
    p.add_argument("--test", help="test edge list; default: hold out --test-fraction of INPUT")
    p.add_argument("--test-fraction", type=float, default=0.1, help="held-out share when --test is not given")
    add_id_args(p, "error")
    add_partition_args(p)
    p.add_argument("--k", type=int, default=50, help="latent dimension")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 0.1 sgd, 0.01 minibatch)")
    p.add_argument("--reg", type=float, default=0.05, help="L2 regularisation λ")
    p.add_argument("--epochs", type=int, default=10, help="passes over the training edges")
    p.add_argument("--mode", choices=("sgd", "minibatch"), default="sgd",
                   help="sgd: per-edge updates in Exchange (LibMF style); minibatch: the paper's "
                        "Exchange-accumulate + Apply form")
    p.add_argument("--batch-size", type=int, default=None, help="mini-batch size (default: whole epoch)")
    p.add_argument("--batch-unit", choices=("edge", "vertex"), default="edge")
    p.add_argument("--enumerate", choices=("user", "item"), default="item",
                   help="vertex type enumerated when --batch-unit vertex")
    p.add_argument("--no-biases", action="store_true", help="drop user/item bias terms")
    p.add_argument("--order", choices=("blocked", "shuffle", "input"), default="blocked",
                   help="global edge order: 2-D blocked shuffle (cache friendly), full shuffle, or as read")
    p.add_argument("--seed", type=int, default=0, help="seed of initialisation, split, order and partitioning")
    add_output_args(p, "directory for the model (.npz per vertex type + model.json)", "epoch")
    add_checkpoint_args(p, "epoch")
    p.add_argument("--eval-every", type=int, default=1,
                   help="compute test RMSE every N epochs (0: only after the last); with several workers "
                        "it gathers the model on rank 0")
    add_distributed_args(p)
    p.set_defaults(func=run_mf)


def add_id_args(p, duplicates):
    """--ids and --duplicates (tux2.loaders)."""
    from tux2.loaders import DUPLICATES, ID_MODES
    p.add_argument("--ids", choices=ID_MODES, default="auto",
                   help="vertex ids: int (numbers used as they are), string (any token; mapped to dense ids, "
                        "saved with the model), auto (string when the first line's ids are not numbers)")
    p.add_argument("--duplicates", choices=DUPLICATES, default=duplicates,
                   help="an edge given twice: error (name both lines), sum its values, keep the last, or keep "
                        "all as separate edges")


def add_partition_args(p, mirror_free=None):
    """--partitions and --partitioner; ``mirror_free`` names the side bicut/aweto keep whole."""
    note = f" (bicut/aweto keep {mirror_free} mirror-free)" if mirror_free else ""
    p.add_argument("--partitions", type=int, default=1, help="number of partitions (P)")
    p.add_argument("--partitioner", default="bicut",
                   help=f"vertex-cut strategy{note}: " + ", ".join(tux2.partitioning.available()))


def favorite_first(partitioner):
    """Partitioner options that keep the graph's first vertex type mirror-free."""
    return {"favorite": 0} if partitioner in ("bicut", "aweto") else None


def add_output_args(p, out_help, unit):
    """--out, --metrics (one JSON object per ``unit``) and --quiet."""
    p.add_argument("--out", help=out_help)
    p.add_argument("--metrics", help=f"write one JSON object per {unit} to this .jsonl file")
    p.add_argument("-q", "--quiet", action="store_true",
                   help=f"no per-{unit} lines (on a terminal they come with a live progress bar)")
    p.add_argument("--config", metavar="FILE",
                   help="TOML file whose keys are these flags (batch-size = 1000, no-biases = true, input = "
                        "'ratings.txt'); flags on the command line win")


class Speaker:
    """``say(*parts)``: print (flushed) on rank 0 unless --quiet. On a terminal the
    epoch loop (``timed_epochs``) adds a live progress bar below these lines."""

    def __init__(self, on, record=False):
        self.on = on
        self.tty = on and sys.stdout.isatty()
        self.bar = None
        self.lines = [] if record else None     # the run's summary.txt (--out), kept even with --quiet

    def __call__(self, *parts):
        if self.lines is not None:
            self.lines.append(" ".join(str(p) for p in parts))
        if not self.on:
            return
        if self.bar is not None:
            self.bar.write(" ".join(str(p) for p in parts))
        else:
            print(*parts, flush=True)


def speaker(args, rank):
    return Speaker(not args.quiet and rank == 0, record=rank == 0)


# context fields shown on the progress bar, when the program has them
_BAR_METRICS = ("rmse", "objective", "ll_per_token")


def _progress_bar(eng, n, start, say, unit):
    """A tqdm bar over iterations, advanced per mini-batch clock, with the current metric."""
    if say is None or not say.tty or n <= start:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    bar = tqdm(total=n, initial=start, unit=unit, dynamic_ncols=True, leave=False, file=sys.stdout,
               bar_format="{l_bar}{bar}| {n:.1f}/{total} {unit}s [{elapsed}<{remaining}{postfix}]")
    state = {"first": eng.clock, "per": None, "shown": 0.0}

    def on_clock(e):
        if state["per"]:
            now = time.monotonic()
            if now - state["shown"] > 0.2:
                done = e.iteration - 1 + (e.clock - state["first"]) / state["per"]
                bar.n = min(done, e.iteration)
                bar.refresh()
                state["shown"] = now
    eng.on_clock = on_clock
    say.bar = bar
    return bar, state


def timed_epochs(eng, n, start=0, say=None, unit="epoch"):
    """Run iterations start+1 … n one at a time, yielding (i, seconds, total seconds,
    {"bytes_sent", "wait_s"}) for each: the timing and traffic every ``tux2 run`` loop
    reports (wait: seconds this worker waited for others, from the per-clock trace).
    With ``say`` on a terminal a progress bar shows the position and the current metric."""
    from tux2.transport import barrier
    barrier(eng.transport, "start")       # every worker set up: the first epoch's time is its own
    bar = _progress_bar(eng, n, start, say, unit)
    total = 0.0
    try:
        for i in range(start + 1, n + 1):
            b0, c0, r0 = eng.transport.bytes_sent, eng.clock, len(eng.trace)
            if bar:
                bar[1]["first"] = c0
            t = time.perf_counter()
            eng.run(1)
            dt = time.perf_counter() - t
            total += dt
            if bar:
                bar[1]["per"] = max(eng.clock - c0, 1)
                ctx = eng.context()
                bar[0].set_postfix_str(", ".join(f"{k} {ctx[k]:.5g}" for k in _BAR_METRICS if k in ctx),
                                       refresh=False)
                bar[0].n = i
                bar[0].refresh()
            yield i, dt, total, {"bytes_sent": int(eng.transport.bytes_sent - b0),
                                 "wait_s": round(sum(r["wait_s"] for r in eng.trace[r0:]), 6)}
    finally:
        if bar:
            bar[0].close()
            say.bar = None
            eng.on_clock = None


@contextlib.contextmanager
def metrics_stream(path, rank, append=False):
    """Yield ``write(record)``: one JSON line per call to ``path``, flushed, on rank 0;
    a no-op without a path or on other ranks. ``append``: a resumed run adds to the file."""
    if not path or rank != 0:
        yield lambda rec: None
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a" if append else "w") as f:
        def write(rec):
            f.write(json.dumps(rec) + "\n")
            f.flush()
        yield write


# flags that may change between a checkpoint and its resumption
_RESUMABLE = {"epochs", "iterations", "out", "metrics", "quiet", "resume", "checkpoint_every", "checkpoint_dir",
              "trace", "func", "argv", "rank", "world", "rendezvous", "bind", "advertise", "timeout", "workers",
              "max_frame_mb",
              "curve", "eval_every", "config", "top_words"}


def add_checkpoint_args(p, unit):
    g = p.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help=f"save the run's state every N {unit}s (0: never), atomically: a crash never "
                        "damages the previous checkpoint")
    g.add_argument("--checkpoint-dir", metavar="DIR",
                   help="where checkpoints go (default: OUT/checkpoints with --out, else ./tux2-checkpoints)")
    g.add_argument("--resume", metavar="DIR",
                   help=f"continue from the newest checkpoint in DIR, up to the total --{unit}s given; the "
                        "input and settings must be those of the interrupted run (slack 0: the same model "
                        "as an uninterrupted run)")


@contextlib.contextmanager
def epoch_loop(args, eng, transport, rank, say, n, unit="epoch"):
    """What every ``tux2 run`` loop starts with: --resume, the metrics stream (appended
    to when resuming) and the timed iterations. Yields (checkpoints, write_metrics,
    iterations of ``timed_epochs``)."""
    ck = Checkpoints(args, eng, transport)
    start = ck.resume(say, unit)
    with metrics_stream(args.metrics, rank, append=start > 0) as write_metrics:
        yield ck, write_metrics, timed_epochs(eng, n, start, say, unit)


def record_epoch(write_metrics, ck, epoch, rec, value, message):
    """The end of every epoch: the metrics line, a stop with ``message`` when ``value``
    (the objective or RMSE) is not finite, then the checkpoint, if one is due."""
    write_metrics(rec)
    if not np.isfinite(value):
        raise Tux2Error(message)
    ck.after(epoch)


class Checkpoints:
    """--checkpoint-every / --resume for one run: ``start = ck.resume()`` after the
    engine is built, ``ck.after(i)`` after each iteration."""

    def __init__(self, args, eng, transport):
        self.args, self.eng, self.transport = args, eng, transport
        self.every = args.checkpoint_every
        if self.every < 0:
            raise Tux2Error(f"--checkpoint-every must be >= 0, got {self.every}")
        self.dir = args.checkpoint_dir or (os.path.join(args.out, "checkpoints") if args.out else "tux2-checkpoints")
        self.params = {k: v for k, v in sorted(vars(args).items())
                       if k not in _RESUMABLE and isinstance(v, (str, int, float, bool, type(None)))}

    def resume(self, say=None, unit="epoch"):
        """The iteration the run continues from (0 without --resume)."""
        if not self.args.resume:
            return 0
        from tux2 import checkpoint
        checkpoint.load(self.args.resume, self.eng, self.params, self.transport)
        if say is not None:
            say(f"  resumed from {self.args.resume} after {unit} {self.eng.iteration}")
        return self.eng.iteration

    def after(self, i):
        if self.every and i % self.every == 0:
            from tux2 import checkpoint
            checkpoint.save(self.dir, self.eng, self.params, self.transport)


def write_trace(directory, eng, rank):
    """This worker's per-clock records to DIRECTORY/trace-RANK.jsonl (--trace)."""
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"trace-{rank}.jsonl"), "w") as f:
        for rec in eng.trace:
            f.write(json.dumps(rec) + "\n")


def add_distributed_args(p):
    g = p.add_argument_group("distributed run (see README: Running on several workers)")
    g.add_argument("--workers", type=int, default=1,
                   help="start this many worker processes on this machine (ZeroMQ over loopback)")
    g.add_argument("--rank", type=int, default=None,
                   help="this worker's rank; when unset, from OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID")
    g.add_argument("--world", type=int, default=None,
                   help="number of workers; when unset, from OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS")
    g.add_argument("--rendezvous", default=None,
                   help="tcp://HOST:PORT that rank 0 binds and the others connect to; when unset, "
                        "TUX2_RENDEZVOUS")
    g.add_argument("--bind", default=None,
                   help="address this worker binds for data; when unset: 127.0.0.1 on one "
                        "machine, else the interface that reaches the rendezvous host (0.0.0.0: all)")
    g.add_argument("--advertise", default=None,
                   help="host name or address the other workers use to reach this one; when unset: "
                        "the bind address, or this host's name when binding 0.0.0.0")
    g.add_argument("--timeout", type=float, default=30.0,
                   help="seconds of silence after which a peer counts as lost")
    g.add_argument("--max-frame-mb", type=float, default=2048,
                   help="largest array one message may carry (a model gather is the largest); "
                        "larger frames are refused before they are buffered")
    g.add_argument("--curve", metavar="DIR",
                   help="encrypt and authenticate worker traffic with ZeroMQ CURVE, using the key pair "
                        "made by 'tux2 keys DIR' (copy DIR to every host)")
    g.add_argument("--slack", type=int, default=0,
                   help="SSP slack s: a worker may start clock c once clocks <= c-s-1 are complete "
                        "everywhere (0 = BSP: any number of workers gives the single-process result)")
    g.add_argument("--trace", metavar="DIR",
                   help="write each worker's per-clock record (compute/sync/wait seconds, bytes sent, "
                        "start and finish times) to DIR/trace-RANK.jsonl")


def open_transport(args, partitions):
    """(transport, rank, world) for a distributed worker, or (None, 0, 1)."""
    from tux2.runtime import world_from
    w = world_from(args.rank, args.world, args.rendezvous)
    if w is None or w[1] == 1:
        return None, 0, 1
    rank, world, rendezvous = w
    from tux2.runtime import interface_to, is_loopback
    from tux2.zmq_transport import ZmqTransport
    if not 0 < args.max_frame_mb < 1 << 40:
        raise Tux2Error(f"--max-frame-mb must be a positive number of megabytes, not {args.max_frame_mb}")
    host = rendezvous.split("://", 1)[-1].rsplit(":", 1)[0]
    bind = args.bind or interface_to(host)
    if not is_loopback(bind) and not args.curve and rank == 0:
        print(f"tux2: warning: worker traffic on {bind} is neither encrypted nor authenticated: anyone on the "
              "network can read the model as it trains and slow the run down with junk; use --curve DIR "
              "(made by 'tux2 keys DIR')", file=sys.stderr, flush=True)
    advertise = args.advertise or (bind if bind != "0.0.0.0" else socket.getfqdn())
    options = {k: v for k, v in vars(args).items() if k not in _PER_WORKER}
    t = ZmqTransport(rank, world, rendezvous, max(partitions, world), timeout=args.timeout,
                     connect_timeout=max(4 * args.timeout, 10.0), bind_host=bind, advertise_host=advertise,
                     curve=args.curve, secret=os.environ.get("TUX2_SECRET", "").encode(), options=options,
                     max_frame=int(args.max_frame_mb * (1 << 20)))
    return t, rank, world


# options that may differ between the workers of one run (paths are per host)
_PER_WORKER = {"func", "argv", "rank", "rendezvous", "bind", "advertise", "curve", "trace", "quiet", "workers",
               "input", "test", "out", "metrics", "checkpoint_dir", "resume", "config", "timeout"}


def _split(graph, fraction, seed):
    """Train/test by a hash of each edge's line position (tux2.ingress.test_mask), so a
    distributed run holds out exactly the same ratings."""
    from tux2.ingress import test_mask
    is_test = test_mask(np.arange(graph.num_edges), fraction, seed)
    def sub(mask):
        return tux2.BipartiteGraph(graph.src[mask], graph.dst[mask], graph.values[mask],
                                   graph.n_src, graph.n_dst, graph.type_names, graph.source, graph.ids)
    return sub(~is_test), sub(is_test)


def run_mf(args):
    return run_distributed(args, _run_mf)


def run_distributed(args, body):
    """Launch ``--workers`` local processes, or run ``body(args, transport, rank, world)``
    as one worker: any error is sent to the other workers (ABORT) before it propagates."""
    if args.workers > 1 and args.rank is None:
        from tux2.runtime import launch_local, strip_option
        return launch_local(strip_option(args.argv, "--workers"), args.workers, timeout=args.timeout)
    transport, rank, world = open_transport(args, args.partitions)
    try:
        return body(args, transport, rank, world)
    except BaseException as e:
        if transport is not None and not isinstance(e, SystemExit):
            transport.abort(f"{type(e).__name__}: {e}")
        raise
    finally:
        if transport is not None:
            transport.close()
            if transport.dropped:
                print(f"tux2: note: [worker {rank}] dropped {transport.dropped} malformed or foreign frames "
                      f"(first: {next(iter(transport.drop_reasons))})", file=sys.stderr, flush=True)


def _run_mf(args, transport, rank, world):
    from tux2.datasets import netflix_like
    from tux2.graph import blocked_order
    from tux2 import ingress, loaders
    from tux2.udfs import mf

    names = ("user", "item")
    parts = max(args.partitions, world)
    say = speaker(args, rank)
    single_clock = args.batch_size is None
    distributed = (transport is not None and args.input is not None
                   and args.partitioner in ingress.LOCAL_STRATEGIES and args.order in ("input", "blocked")
                   and args.duplicates in ("error", "keep") and args.ids != "string"
                   and (args.ids == "int" or loaders.numeric_ids(args.input)))
    assignment = None
    if distributed:
        # each worker reads its byte range and keeps only its partitions' edges
        train, assignment, mu, test = ingress.load(
            transport, args.input, parts, args.partitioner, args.seed, args.test, args.test_fraction,
            args.order, single_clock=single_clock, type_names=names, duplicates=args.duplicates)
        source = args.input
        if args.trace:
            os.makedirs(args.trace, exist_ok=True)
            with open(os.path.join(args.trace, f"ingress-{rank}.json"), "w") as f:
                json.dump(train.stats, f)
    else:
        if transport is not None and args.input is not None:
            say(f"  note: every worker reads the whole input (distributed ingress needs numeric ids, --duplicates "
                f"error or keep, --order input or blocked and one of: {', '.join(ingress.LOCAL_STRATEGIES)})")
        if args.input is None:
            train, test = netflix_like(n_users=10_000, n_items=1_000, n_ratings=600_000, seed=args.seed)
            source = "built-in Netflix-shaped set (10k users, 1k items, 600k ratings, planted rank 10, noise 0.5)"
        else:
            train = loaders.load_edges(args.input, ids=args.ids, duplicates=args.duplicates, type_names=names)
            if train.values is None:
                raise tux2.InputError("MF needs a rating column: expected 'user item rating'", path=args.input)
            if args.test:
                mapped = any(m is not None for m in train.ids)
                test = loaders.load_edges(args.test, ids="string" if mapped else "int", duplicates=args.duplicates,
                                          type_names=names, id_maps=train.ids if mapped else None)
                if test.values is None:
                    raise tux2.InputError("test file needs a rating column", path=args.test)
                n_u, n_i = max(train.n_src, test.n_src), max(train.n_dst, test.n_dst)
                train = tux2.BipartiteGraph(train.src, train.dst, train.values, n_u, n_i, names, args.input,
                                            train.ids)
                test = tux2.BipartiteGraph(test.src, test.dst, test.values, n_u, n_i, names, args.test, train.ids)
            else:
                train, test = _split(train, args.test_fraction, args.seed)
            source = args.input
        if args.order == "blocked":
            # one clock per epoch: LibMF's order inside tiles; several: file order inside tiles
            train = train.permuted(blocked_order(train.src, train.dst, train.n_src, train.n_dst, seed=args.seed,
                                                 within="sorted" if single_clock else "input"))
        elif args.order == "shuffle":
            train = train.permuted(np.random.default_rng(args.seed).permutation(train.num_edges))
        mu = float(train.values.mean()) if train.num_edges else 0.0
    prog = mf.program(k=args.k, mode=args.mode, lr=args.lr, reg=args.reg, batch_size=args.batch_size,
                      batch_unit=args.batch_unit, enumerate=args.enumerate,
                      biases=not args.no_biases, mu=mu)
    if rank == 0:
        say(f"tux2 {tux2.__version__} mf ({args.mode}): {source}")
        say(f"  train {train.num_edges} ratings, test {test.num_edges}; {train.n_src} users × {train.n_dst} items; "
            f"k={args.k}, P={parts} ({args.partitioner})" + (f", {world} workers" if world > 1 else "")
            + (", distributed ingress" if distributed else ""))
    t0 = time.perf_counter()
    eng = tux2.Engine(prog, train, partitions=parts, partitioner=args.partitioner, seed=args.seed,
                      transport=transport, slack=args.slack, assignment=assignment)
    say(f"  layout + compile {time.perf_counter() - t0:.2f}s")
    with epoch_loop(args, eng, transport, rank, say, args.epochs) as (ck, write_metrics, iterations):
        for epoch, dt, total, comm in iterations:
            evaluate = epoch == args.epochs or (args.eval_every > 0 and epoch % args.eval_every == 0)
            U, I = (eng.vertex_data("user"), eng.vertex_data("item")) if evaluate else (None, None)
            rec = {"epoch": epoch, "time_s": round(dt, 6), "total_time_s": round(total, 6),
                   "train_rmse": eng.context()["rmse"],
                   "test_rmse": mf.rmse(U, I, test, mu) if U is not None else None,
                   "clock": eng.clock, "edges_per_s": train.num_edges / dt if dt > 0 else None, **comm}
            if rank == 0:
                say(f"epoch {epoch:3d}/{args.epochs}  train_rmse {rec['train_rmse']:.4f}  "
                    + (f"test_rmse {rec['test_rmse']:.4f}  " if rec["test_rmse"] is not None else "")
                    + f"time {dt:.3f}s  ({rec['edges_per_s'] / 1e6:.1f} M edges/s)")
            record_epoch(write_metrics, ck, epoch, rec, rec["train_rmse"],
                         f"training diverged at epoch {epoch} (RMSE is not finite); lower --lr")
    write_trace(args.trace, eng, rank)
    if args.epochs == 0:
        say("0 epochs: nothing trained")
    if args.out:
        save_model(args.out, eng, {"algorithm": "mf", "mode": args.mode, "k": args.k, "lr": prog.context.init["lr"],
                                   "reg": args.reg, "epochs": args.epochs, "mu": mu, "seed": args.seed,
                                   "partitions": parts, "workers": world, "partitioner": args.partitioner,
                                   "input": source,
                                   "ids": "string" if any(m is not None for m in getattr(train, "ids", ())) else "int"},
                   summary=say.lines)
        if rank == 0 and not distributed:
            mf.save_seen(args.out, *mf.seen_csr(train))            # top-k leaves these out
        say(f"model written to {args.out}")
    return 0


def save_model(out, eng, params, datas=None, summary=None):
    """Master data per vertex type (.npz, one array per field + ids) + model.json, and
    ``summary`` (the lines the run printed) as summary.txt. ``datas``: the types'
    gathered master data, when the caller has it already."""
    if datas is None:
        datas = [eng.vertex_data(t.name) for t in eng.program.types]  # collective with several workers
    if datas[0] is None:
        return
    os.makedirs(out, exist_ok=True)
    from tux2.loaders import save_ids
    id_maps = getattr(eng.graph, "ids", (None, None))
    for t, data, m in zip(eng.program.types, datas, id_maps):
        arrays = {f: data[f] for f in data.dtype.names if f not in t.local}      # local fields are caches
        arrays["ids"] = save_ids(m, len(data))                                   # the user's ids
        np.savez(os.path.join(out, f"{t.name}.npz"), **arrays)
    meta = {**params, "tux2_version": tux2.__version__, "clock": eng.clock, "iteration": eng.iteration,
            "vertex_types": [t.name for t in eng.program.types], "context": eng.context()}
    tmp = os.path.join(out, "model.json.tmp")
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(tmp, os.path.join(out, "model.json"))
    if summary:
        with open(os.path.join(out, "summary.txt"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in summary))


def make_keys(args):
    import zmq.auth
    os.makedirs(args.dir, exist_ok=True)
    for f in ("tux2.key", "tux2.key_secret"):
        if os.path.exists(os.path.join(args.dir, f)):
            raise Tux2Error(f"{os.path.join(args.dir, f)} exists; not overwriting it")
    zmq.auth.create_certificates(args.dir, "tux2")
    os.chmod(os.path.join(args.dir, "tux2.key_secret"), 0o600)
    print(f"CURVE key pair written to {args.dir}; copy the directory to every host and pass --curve {args.dir}")
    return 0


def expand_config(argv, run_parsers):
    """``tux2 run ALGO --config FILE …``: the TOML file's keys are the flags of ``tux2 run
    ALGO`` (``batch-size`` or ``batch_size``; ``input`` for the positional), turned into
    command-line words placed before the user's own, so argparse checks them and flags
    given on the command line win."""
    if len(argv) < 2 or argv[0] != "run" or "--config" not in argv and not any(a.startswith("--config=") for a in argv):
        return argv
    rest = list(argv[2:])
    if "--config" in rest:
        i = rest.index("--config")
        if i + 1 >= len(rest):
            raise Tux2Error("--config needs a file")
        path = rest[i + 1]
        del rest[i: i + 2]
    else:
        i = next(i for i, a in enumerate(rest) if a.startswith("--config="))
        path = rest.pop(i).split("=", 1)[1]
    import tomllib
    try:
        with open(path, "rb") as f:
            conf = tomllib.load(f)
    except OSError as e:
        raise tux2.InputError(f"cannot read config: {e.strerror}", path=path) from None
    except tomllib.TOMLDecodeError as e:
        raise tux2.InputError(f"not valid TOML: {e}", path=path) from None
    parser = run_parsers.get(argv[1])
    if parser is None:
        return argv
    flags = {a.dest: a for a in parser._actions if a.option_strings}
    words, positional = [], []
    for key, value in conf.items():
        dest = key.replace("-", "_")
        if dest == "input":
            positional.append(str(value))
            continue
        action = flags.get(dest)
        if action is None:
            known = ", ".join(sorted(k.replace("_", "-") for k in flags if k != "help"))
            raise tux2.InputError(f"unknown key {key!r} for 'tux2 run {argv[1]}'; the keys are its flags: {known}",
                                  path=path)
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:                          # store_true switches
            if not isinstance(value, bool):
                raise tux2.InputError(f"{key} is a switch: true or false, not {value!r}", path=path)
            if value:
                words.append(flag)
        elif isinstance(value, list):
            words += [flag, *map(str, value)]
        elif isinstance(value, (dict,)):
            raise tux2.InputError(f"{key}: tables are not flags", path=path)
        else:
            words += [flag, str(value).lower() if isinstance(value, bool) else str(value)]
    return argv[:2] + positional + words + rest


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tux2", description="TuX² graph engine for machine learning")
    parser.add_argument("--version", action="version", version=f"tux2 {tux2.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train an algorithm")
    algos = run.add_subparsers(dest="algorithm", required=True)
    _add_run_mf(algos)
    from tux2 import cli_lda
    cli_lda.add_parser(algos)
    from tux2 import cli_blockpg
    cli_blockpg.add_parser(algos)
    from tux2 import cli_glm
    cli_glm.add_parser(algos)
    from tux2 import cli_partition
    cli_partition.add_parser(sub)
    from tux2 import cli_predict
    cli_predict.add_parser(sub)
    from tux2 import cli_info
    cli_info.add_parser(sub)
    from tux2 import cli_plot
    cli_plot.add_parser(sub)
    keys = sub.add_parser("keys", help="create a CURVE key pair for --curve")
    keys.add_argument("dir", help="directory for tux2.key and tux2.key_secret (keep it private)")
    keys.set_defaults(func=make_keys)
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        argv = expand_config(argv, algos.choices)
    except Tux2Error as e:
        print(f"tux2: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return args.func(args)
    except Tux2Error as e:
        who = f"[worker {args.rank}] " if getattr(args, "rank", None) is not None else ""
        print(f"tux2: error: {who}{e}", file=sys.stderr)
        return 2
    except BrokenPipeError:           # output piped into e.g. head, which has closed it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:              # files the user named: unreadable, unwritable, missing directory
        who = f"[worker {args.rank}] " if getattr(args, "rank", None) is not None else ""
        print(f"tux2: error: {who}{e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tux2: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
