"""Command line: ``tux2 run mf [INPUT] ...``."""
import argparse
import contextlib
import json
import math
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


class Parser(argparse.ArgumentParser):
    """argparse with tux2's error line: ``tux2: error: …`` (after the usage), exit status 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"tux2: error: {self.prog.removeprefix('tux2 ')}: {message}\n")


def integer(low, high=None):
    """argparse type: an integer in [low, high] (high: None for no bound)."""
    def parse(text):
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
        if v < low or (high is not None and v > high):
            raise argparse.ArgumentTypeError(f"must be {_bounds(low, high)}, got {v}")
        return v
    parse.__name__ = "integer"
    return parse


def number(low=None, high=None, above=False, below=False):
    """argparse type: a finite number, >= low (> low with ``above``) and <= high
    (< high with ``below``)."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
        if not math.isfinite(v) or (low is not None and (v <= low if above else v < low)) or \
                (high is not None and (v >= high if below else v > high)):
            raise argparse.ArgumentTypeError(f"must be a finite number{_bounds(low, high, above, below, ' ')}, "
                                             f"got {text[:40]}")
        return v
    parse.__name__ = "number"
    return parse


def _bounds(low, high, above=False, below=False, lead=""):
    parts = ([f"{'>' if above else '>='} {low}"] if low is not None else []) + \
        ([f"{'<' if below else '<='} {high}"] if high is not None else [])
    return lead + " and ".join(parts) if parts else ""


def endpoint(text):
    """argparse type: ``tcp://HOST:PORT`` (HOST a name, an IPv4 address or [IPv6])."""
    import re
    m = re.fullmatch(r"tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})", text)
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise argparse.ArgumentTypeError(f"expected tcp://HOST:PORT (port 1-65535), got {text[:80]!r}")
    return text


def key_dir(text):
    """argparse type: a directory made by ``tux2 keys DIR`` whose key files load (a
    damaged key is an error now, not a rendezvous timeout later)."""
    import zmq.auth
    for name in ("tux2.key", "tux2.key_secret"):
        path = os.path.join(text, name)
        try:
            public, secret = zmq.auth.load_certificate(path)
        except (OSError, ValueError) as e:
            raise argparse.ArgumentTypeError(f"{path}: not a usable CURVE key ({e}); make a pair with "
                                             f"'tux2 keys DIR' and copy DIR to every host") from None
        if not public or (name == "tux2.key_secret" and not secret):
            raise argparse.ArgumentTypeError(f"{path}: holds no {'secret' if public else 'public'} key; make a "
                                             "pair with 'tux2 keys DIR'")
    return text


COUNT = integer(1)                  # at least one: --k, --partitions, --workers, --batch-size …
NONNEG = integer(0)                 # zero allowed: --epochs 0, --eval-every 0, --slack …
SEED = integer(0, 2 ** 32 - 1)      # numpy and the compiled samplers take 32-bit seeds
POSITIVE = number(0, above=True)    # --lr, --alpha, --timeout …
NONNEG_NUMBER = number(0)           # --reg, --lam, --tol …
FRACTION = number(0, 1, below=True)


def check_partitions(args, num_edges):
    """--partitions above the edge count leaves partitions empty for nothing and costs
    layout time per partition: refused, as 'tux2 partition' does."""
    if args.partitions is not None and args.partitions > max(num_edges, 1):
        raise Tux2Error(f"--partitions {args.partitions} for {num_edges} edges: some partitions would be empty; "
                        "use at most as many partitions as edges")


def _add_run_mf(sub):
    p = sub.add_parser(
        "mf", help="matrix factorisation by SGD (paper §4)",
        formatter_class=HelpFormatter,
        description="Matrix factorisation on a user-item rating graph. INPUT is an edge list "
                    "'user item rating [more columns]' (tabs, spaces, commas or '::'; a header line of names; "
                    "'#'/'%' comments; MatrixMarket; gzip, bz2 or xz; '-' for standard input). "
                    "Without INPUT a Netflix-shaped rating set is generated deterministically.")
    p.add_argument("input", nargs="?", help="ratings edge list; default: built-in synthetic set")
    p.add_argument("--test", help="test edge list; default: hold out --test-fraction of INPUT")
    p.add_argument("--test-fraction", type=FRACTION, default=0.1, help="held-out share when --test is not given")
    add_id_args(p, "error")
    add_input_args(p, unknown=True)
    add_partition_args(p, default=None,
                       note=" (default: stratified with --order strata, else bicut)")
    p.add_argument("--k", type=integer(1, 100_000), default=50, help="latent dimension")
    p.add_argument("--lr", type=POSITIVE, default=None,
                   help="learning rate (default 0.1; 0.01 with --mode minibatch --step plain)")
    p.add_argument("--reg", type=NONNEG_NUMBER, default=0.05, help="L2 regularisation λ")
    p.add_argument("--epochs", type=NONNEG, default=10, help="passes over the training edges")
    p.add_argument("--mode", choices=("sgd", "minibatch"), default="sgd",
                   help="sgd: per-edge updates in Exchange (LibMF style); minibatch: the paper's "
                        "Exchange-accumulate + Apply form")
    p.add_argument("--batch-size", type=COUNT, default=None,
                   help="mini-batch size, one clock each (default: a stratum with sgd, 5000 edges with minibatch)")
    p.add_argument("--batch-unit", choices=("edge", "vertex"), default="edge",
                   help="--batch-size counts edges, or vertices of the --enumerate type")
    p.add_argument("--step", choices=("adagrad", "plain"), default="adagrad",
                   help="--mode minibatch update at the masters: adagrad (p -= lr a/sqrt(G), G += |a|^2/k per "
                        "vertex: bounded steps for hot vertices) or plain (p -= lr a, the paper's Fig. 5; diverges "
                        "on power-law degrees unless lr is tiny)")
    p.add_argument("--enumerate", choices=("user", "item"), default="item",
                   help="vertex type enumerated when --batch-unit vertex")
    p.add_argument("--no-biases", action="store_true", help="drop user/item bias terms")
    p.add_argument("--order", choices=("strata", "blocked", "shuffle", "input"), default=None,
                   help="global edge order. strata (the default with --mode sgd): DSGD's conflict-free "
                        "strata of --blocks x --blocks tiles, so any number of partitions, workers and threads "
                        "up to --blocks gives the one-partition model bit for bit; blocked (the default with "
                        "--mode minibatch): tiles in a shuffled order, cache friendly; shuffle; input: as read")
    p.add_argument("--blocks", type=integer(1, 65_536), default=None,
                   help="row and column blocks of --order strata (default 16, or the partitions if more; the "
                        "model depends on it, not on partitions, workers or threads; partitions that divide it "
                        "share the work evenly)")
    p.add_argument("--overlap", choices=("error", "allow"), default="error",
                   help="NOT RECOMMENDED to change. With an order other than strata on several partitions, "
                        "several replicas of an item take their own SGD steps in one clock; allow sums "
                        "them (the step grows with the number of replicas: a worse model than one "
                        "partition's, or divergence); error stops such a run and names the remedies")
    p.add_argument("--seed", type=SEED, default=0, help="seed of initialisation, split, order and partitioning")
    add_output_args(p, "directory for the model (.npz per vertex type + model.json)", "epoch")
    add_checkpoint_args(p, "epoch")
    p.add_argument("--eval-every", type=NONNEG, default=1,
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


def add_input_args(p, base=True, unknown=False):
    """How an edge-list file is read (tux2.loaders.load_edges): --columns, --base, and
    with ``unknown`` --unknown (ids of a test or predict input the training data lacks)."""
    p.add_argument("--columns", metavar="SPEC", default=None,
                   help="the columns holding src,dst[,value]: 1-based positions (1,2,3) or names from the file's "
                        "header line (user,item,rating); default: the first two and the third when present, more "
                        "columns (a timestamp) ignored")
    if base:
        p.add_argument("--base", choices=("auto", "0", "1"), default="auto",
                       help="id base: 1 makes ids 1 … n (outputs keep them); auto: 1 under a MatrixMarket header "
                            "or when no id 0 occurs on either side, else 0")
    if unknown:
        from tux2.loaders import UNKNOWN
        p.add_argument("--unknown", choices=UNKNOWN, default="baseline",
                       help="a user or item of the test or predict input without training ratings: baseline "
                            "predicts the global mean plus the known side's bias (counted and reported), skip "
                            "leaves the line out, error stops naming it")


def input_options(args):
    """The load_edges keywords of add_input_args' flags."""
    out = {"columns": args.columns}
    if getattr(args, "base", None) is not None:
        out["base"] = args.base if args.base == "auto" else int(args.base)
    return out


def describe_input(g, args):
    """The header line on how an edge list was read, or None when it was plain
    'src dst [value]' with 0-based ids."""
    parts = []
    if g.layout is not None and g.layout.notable():
        parts.append(g.layout.describe())
    if g.base:
        how = "MatrixMarket" if g.layout is not None and g.layout.matrix_market else \
            "auto: no id 0 on either side; --base 0 reads them as 0-based" if args.base == "auto" else "--base 1"
        parts.append(f"ids 1-based ({how})")
    return "  read as: " + "; ".join(parts) if parts else None


def add_partition_args(p, mirror_free=None, default="bicut", note=""):
    """--partitions and --partitioner; ``mirror_free`` names the side bicut/aweto keep whole."""
    note = note or (f" (bicut/aweto keep {mirror_free} mirror-free)" if mirror_free else "")
    p.add_argument("--partitions", type=COUNT, default=None,
                   help="number of partitions (P; default: one per worker and thread)")
    p.add_argument("--partitioner", default=default,
                   help=f"vertex-cut strategy{note}: " + ", ".join(tux2.partitioning.available()))


def partitions(args, world):
    """P: --partitions, or one per worker and thread (each worker owns at least one)."""
    if args.partitions is not None and args.partitions < world:
        raise Tux2Error(f"--partitions {args.partitions} is fewer than the {world} workers: each worker owns at "
                        "least one partition")
    return args.partitions if args.partitions is not None else world * (args.threads or 1)


def favorite_first(partitioner):
    """Partitioner options that keep the graph's first vertex type mirror-free."""
    return {"favorite": 0} if partitioner in ("bicut", "aweto") else None


def add_output_args(p, out_help, unit):
    """--out, --metrics (one JSON object per ``unit``) and --quiet."""
    p.add_argument("--out", help=out_help)
    p.add_argument("--metrics", help=f"write one JSON object per {unit} to this .jsonl file")
    p.add_argument("-q", "--quiet", action="store_true",
                   help=f"no per-{unit} lines (on a terminal they come with a live progress bar)")
    p.add_argument("--no-cache", action="store_true",
                   help="compile the algorithm's loops in this run instead of loading them from the kernel "
                        "cache ($TUX2_CACHE_DIR, default ~/.cache/tux2)")
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
    with open(path, "ab" if append else "wb", buffering=0) as f:
        def write(rec):
            from tux2.files import write_whole
            write_whole(f, path, (json.dumps(rec) + "\n").encode())
        yield write


# flags that may change between a checkpoint and its resumption
_RESUMABLE = {"epochs", "iterations", "out", "metrics", "quiet", "resume", "checkpoint_every", "checkpoint_dir",
              "trace", "func", "argv", "rank", "world", "rendezvous", "bind", "advertise", "timeout", "workers",
              "max_frame_mb", "curve", "eval_every", "config", "top_words", "threads"}


# the flags that name input files (their size and modification time go into checkpoints)
_INPUT_FILES = ("input", "test", "vocab")


def add_checkpoint_args(p, unit):
    g = p.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-every", type=NONNEG, default=0, metavar="N",
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
    try:
        start = ck.resume(say, unit)
        with metrics_stream(args.metrics, rank, append=start > 0) as write_metrics:
            yield ck, write_metrics, timed_epochs(eng, n, start, say, unit)
    finally:
        ck.close()


def record_epoch(write_metrics, ck, epoch, rec, value, message):
    """The end of every epoch: the metrics line, a stop with ``message`` when ``value``
    (the objective or RMSE) is not finite, then the checkpoint, if one is due."""
    write_metrics(rec)
    if not np.isfinite(value):
        raise Tux2Error(message)
    ck.after(epoch)


def checkpoint_dir(args):
    """Where --checkpoint-every writes: --checkpoint-dir, OUT/checkpoints or ./tux2-checkpoints."""
    return args.checkpoint_dir or (os.path.join(args.out, "checkpoints") if args.out else "tux2-checkpoints")


def spool_inputs(args):
    """Replace the input files of ``args`` that are ``-``, pipes, FIFOs or compressed
    with temporary plain copies read once (``tux2.io.local_copy``); with ``--workers``
    the launcher does it and passes the copies on in ``args.argv``."""
    from tux2.io import local_copy
    for key in _INPUT_FILES:
        given = vars(args).get(key)
        if given:
            copy = local_copy(given)
            setattr(args, key, copy)
            if copy != given:
                args.argv = [copy if a == given else a for a in args.argv]


def check_outputs(args):
    """--out, --metrics, --trace and the checkpoint directory can be written: asked
    before any data is read, so a typo never costs a training run."""
    from tux2.files import check_writable
    check_writable(args.out, "--out", directory=True)
    check_writable(args.metrics, "--metrics", directory=False)
    check_writable(args.trace, "--trace", directory=True)
    if args.checkpoint_every:
        check_writable(checkpoint_dir(args), "the checkpoint directory", directory=True)


class Checkpoints:
    """--checkpoint-every / --resume for one run: ``start = ck.resume()`` after the
    engine is built, ``ck.after(i)`` after each iteration."""

    def __init__(self, args, eng, transport):
        self.args, self.eng, self.transport = args, eng, transport
        self.every = args.checkpoint_every
        if self.every < 0:
            raise Tux2Error(f"--checkpoint-every must be >= 0, got {self.every}")
        self.dir = checkpoint_dir(args)
        from tux2.io import display_name
        self.params = {k: display_name(v) if isinstance(v, str) else v for k, v in sorted(vars(args).items())
                       if k not in _RESUMABLE and isinstance(v, (str, int, float, bool, type(None)))}
        from tux2 import checkpoint
        named = [vars(args)[k] for k in _INPUT_FILES if vars(args).get(k)]
        self.inputs = checkpoint.input_stats([p for p in named if display_name(p) == p])    # not stdin's copy
        self._lock = None
        if self.every and getattr(transport, "rank", 0) == 0:
            self._lock = checkpoint.lock(self.dir)     # a second run writing here stops now, with a reason

    def resume(self, say=None, unit="epoch"):
        """The iteration the run continues from (0 without --resume)."""
        if not self.args.resume:
            return 0
        from tux2 import checkpoint
        checkpoint.load(self.args.resume, self.eng, self.params, self.transport, inputs=self.inputs)
        if say is not None:
            say(f"  resumed from {self.args.resume} after {unit} {self.eng.iteration}")
        return self.eng.iteration

    def close(self):
        """Release the checkpoint directory (the next run may write there)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def after(self, i):
        if self.every and i % self.every == 0:
            from tux2 import checkpoint
            checkpoint.save(self.dir, self.eng, self.params, self.transport, inputs=self.inputs)


def write_trace(directory, eng, rank):
    """This worker's per-clock records to DIRECTORY/trace-RANK.jsonl (--trace)."""
    if not directory:
        return
    from tux2 import files
    os.makedirs(directory, exist_ok=True)
    files.write_atomic(os.path.join(directory, f"trace-{rank}.jsonl"),
                       files.text("".join(json.dumps(rec) + "\n" for rec in eng.trace)))


def add_distributed_args(p):
    g = p.add_argument_group("distributed run (see README: Running on several workers)")
    g.add_argument("--workers", type=integer(1, 1024), default=1,
                   help="start this many worker processes on this machine (ZeroMQ over loopback)")
    g.add_argument("--rank", type=NONNEG, default=None,
                   help="this worker's rank; when unset, from OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID")
    g.add_argument("--world", type=integer(1, 1024), default=None,
                   help="number of workers; when unset, from OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS")
    g.add_argument("--rendezvous", default=None, type=endpoint,
                   help="tcp://HOST:PORT that rank 0 binds and the others connect to; when unset, "
                        "TUX2_RENDEZVOUS")
    g.add_argument("--bind", default=None,
                   help="address this worker binds for data; when unset: 127.0.0.1 on one "
                        "machine, else the interface that reaches the rendezvous host (0.0.0.0: all)")
    g.add_argument("--advertise", default=None,
                   help="host name or address the other workers use to reach this one; when unset: "
                        "the bind address, or this host's name when binding 0.0.0.0")
    g.add_argument("--threads", type=COUNT, default=None,
                   help="threads per worker: a worker's partitions run their Exchanges in parallel (default: "
                        "the cores available, capped by the worker's partitions; partitions default to one "
                        "per worker and thread)")
    g.add_argument("--timeout", type=number(0, 86400, above=True), default=30.0,
                   help="seconds of silence after which a peer counts as lost")
    g.add_argument("--max-frame-mb", type=number(0, 1 << 20, above=True), default=2048,
                   help="largest array one message may carry (a model gather is the largest); "
                        "larger frames are refused before they are buffered")
    g.add_argument("--curve", metavar="DIR", type=key_dir,
                   help="encrypt and authenticate worker traffic with ZeroMQ CURVE, using the key pair "
                        "made by 'tux2 keys DIR' (copy DIR to every host)")
    g.add_argument("--slack", type=NONNEG, default=0,
                   help="SSP slack s: a worker may start clock c once clocks <= c-s-1 are complete "
                        "everywhere (0 = BSP: any number of workers gives the single-process result)")
    g.add_argument("--trace", metavar="DIR",
                   help="write each worker's per-clock record (compute/sync/wait seconds, bytes sent, "
                        "start and finish times) to DIR/trace-RANK.jsonl")


def open_transport(args):
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
    t = ZmqTransport(rank, world, rendezvous, partitions(args, world), timeout=args.timeout,
                     connect_timeout=max(4 * args.timeout, 10.0), bind_host=bind, advertise_host=advertise,
                     curve=args.curve, secret=os.environ.get("TUX2_SECRET", "").encode(), options=options,
                     max_frame=int(args.max_frame_mb * (1 << 20)))
    return t, rank, world


# options that may differ between the workers of one run (paths are per host)
_PER_WORKER = {"func", "argv", "rank", "rendezvous", "bind", "advertise", "curve", "trace", "quiet", "workers",
               "input", "test", "out", "metrics", "checkpoint_dir", "resume", "config", "timeout"}


def unknown_note(test, policy):
    """What happened to test ratings whose user or item has no training ratings."""
    if test is None:
        return ""
    if test.skipped:
        return f" ({test.skipped} with a user or item not in training skipped: --unknown skip)"
    if test.unknown is not None:
        n = int((test.unknown[0] | test.unknown[1]).sum())
        if n:
            return f" ({n} with a user or item not in training, predicted by the mean and the known bias)"
    return ""


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
    check_outputs(args)
    spool_inputs(args)
    if args.rank is None:
        partitions(args, args.workers)        # flags that cannot work stop here, before any worker starts
    if args.workers > 1 and args.rank is None:
        from tux2.runtime import launch_local, strip_option
        return launch_local(strip_option(args.argv, "--workers"), args.workers, timeout=args.timeout)
    transport, rank, world = open_transport(args)
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


def mf_schedule(args, parts):
    """Resolve MF's --order, --blocks and --partitioner defaults (in ``args``): per-edge
    SGD runs in strata on the stratified partitioner, so every P dividing --blocks gives
    the one-partition model; the mini-batch form accumulates and needs no strata."""
    if args.order is None:
        args.order = "strata" if args.mode == "sgd" else "blocked"
    if args.blocks is None:           # the model depends on B only: keep it whatever P is, up to 16 parts
        args.blocks = max(16, parts)
    if args.order == "strata" and args.batch_unit == "vertex":
        raise Tux2Error("--batch-unit vertex does not cut clocks at strata: per-edge SGD (--mode sgd) runs in "
                        "strata of edges; use --batch-unit edge, or --mode minibatch")
    if args.partitioner is None:
        args.partitioner = "stratified" if args.order == "strata" else "bicut"
    if args.order == "strata" and args.partitioner != "stratified" and parts > 1:
        raise Tux2Error(f"--order strata needs --partitioner stratified (got {args.partitioner}): its parts own "
                        "whole row blocks, which is what makes the strata conflict-free; leave --partitioner out, "
                        "or use --mode minibatch, whose Exchange only accumulates")
    if args.partitioner == "stratified" and parts > args.blocks:
        raise Tux2Error(f"{parts} partitions need --blocks >= {parts} (got {args.blocks})")


def _run_mf(args, transport, rank, world):
    from tux2.datasets import netflix_like
    from tux2.graph import blocked_order, stratified_order
    from tux2 import ingress, loaders
    from tux2.udfs import mf

    names = ("user", "item")
    parts = partitions(args, world)
    say = speaker(args, rank)
    single_clock = args.batch_size is None and args.mode == "sgd"     # minibatch: 5000 edges by default
    mf_schedule(args, parts)
    strata = None
    read_as = known = None
    input_base = 0
    stratified_options = {"blocks": args.blocks} if args.partitioner == "stratified" else None
    distributed = (transport is not None and args.input is not None
                   and args.partitioner in ingress.LOCAL_STRATEGIES and args.order in ("input", "blocked", "strata")
                   and args.duplicates in ("error", "keep") and args.ids != "string"
                   and (args.ids == "int" or loaders.numeric_ids(args.input, args.columns)))
    assignment = None
    if distributed:
        # each worker reads its byte range and keeps only its partitions' edges
        train, assignment, mu, test = ingress.load(
            transport, args.input, parts, args.partitioner, args.seed, args.test, args.test_fraction,
            args.order, single_clock=single_clock, type_names=names, duplicates=args.duplicates,
            partitioner_options=stratified_options, unknown=args.unknown, **input_options(args))
        strata = train.strata
        source = args.input
        read_as, known, input_base = describe_input(train, args), train.known, train.base
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
            train = loaders.load_edges(args.input, ids=args.ids, duplicates=args.duplicates, type_names=names,
                                       **input_options(args))
            if train.values is None:
                raise tux2.InputError("MF needs a rating column: expected 'user item rating'", path=args.input)
            read_as, input_base = describe_input(train, args), train.base
            known = tuple(np.bincount(a, minlength=n) > 0 for a, n in ((train.src, train.n_src),
                                                                       (train.dst, train.n_dst)))
            if args.test:
                test = loaders.load_edges(args.test, type_names=names, id_maps=train.ids, known=known,
                                          unknown=args.unknown,
                                          columns=loaders.columns_like(args.test, args.columns, train.layout))
                if test.values is None:
                    raise tux2.InputError("test file needs a rating column", path=args.test)
            else:
                train, test = _split(train, args.test_fraction, args.seed)
                known = tuple(np.bincount(a, minlength=n) > 0 for a, n in ((train.src, train.n_src),
                                                                           (train.dst, train.n_dst)))
                test = loaders.mark_unknown(test, known, args.unknown)
            source = args.input
        if args.order == "strata":
            order, strata = stratified_order(train.src, train.dst, train.n_src, train.n_dst, args.blocks,
                                             seed=args.seed)
            train = train.permuted(order)
        elif args.order == "blocked":
            # one clock per epoch: LibMF's order inside tiles; several: file order inside tiles
            train = train.permuted(blocked_order(train.src, train.dst, train.n_src, train.n_dst, seed=args.seed,
                                                 within="sorted" if single_clock else "input"))
        elif args.order == "shuffle":
            train = train.permuted(np.random.default_rng(args.seed).permutation(train.num_edges))
        mu = float(train.values.mean()) if train.num_edges else 0.0
    batch = args.batch_size
    if batch is None and args.mode == "minibatch" and args.batch_unit == "vertex":
        # about mf.MINIBATCH_SIZE edges' worth of the enumerated vertices (a whole epoch in one step
        # takes one AdaGrad step per epoch, and its first one is large)
        n_enum = train.n_src if args.enumerate == "user" else train.n_dst
        batch = max(1, round(mf.MINIBATCH_SIZE * n_enum / max(train.num_edges, 1)))
    prog = mf.program(k=args.k, mode=args.mode, lr=args.lr, reg=args.reg, batch_size=batch,
                      batch_unit=args.batch_unit, enumerate=args.enumerate, overlap=args.overlap, step=args.step,
                      biases=not args.no_biases, mu=mu)
    if rank == 0:
        say(f"tux2 {tux2.__version__} mf ({args.mode}): {source}")
        if read_as:
            say(read_as)
        users, items = (known[0].sum(), known[1].sum()) if known is not None else (train.n_src, train.n_dst)
        say(f"  train {train.num_edges} ratings, test {test.num_edges}{unknown_note(test, args.unknown)}; "
            f"{users} users × {items} items; "
            f"k={args.k}, P={parts} ({args.partitioner})" + (f", {world} workers" if world > 1 else "")
            + (", distributed ingress" if distributed else ""))
    check_partitions(args, train.num_edges)
    t0 = time.perf_counter()
    eng = tux2.Engine(prog, train, partitions=parts, partitioner=args.partitioner, seed=args.seed,
                      partitioner_options=stratified_options,
                      transport=transport, slack=args.slack, assignment=assignment, strata=strata,
                      threads=args.threads)
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
    seen = None
    if args.out and distributed:                     # the rated items, gathered from every worker
        pieces = transport.allgather("seen", [train.src, train.dst])
        if rank == 0:
            seen = mf.seen_csr(tux2.BipartiteGraph(np.concatenate([p[0] for p in pieces]),
                                                   np.concatenate([p[1] for p in pieces]), None,
                                                   train.n_src, train.n_dst, names))
    elif args.out and rank == 0:
        seen = mf.seen_csr(train)
    if args.out:
        from tux2.files import npz
        save_model(args.out, eng, {"algorithm": "mf", "mode": args.mode, "k": args.k, "lr": prog.context.init["lr"],
                                   "reg": args.reg, "epochs": args.epochs, "mu": mu, "seed": args.seed,
                                   "partitions": parts, "workers": world, "partitioner": args.partitioner,
                                   "input": source,
                                   "ids": "string" if any(m is not None and m.tokens.dtype.kind not in "iu"
                                                          for m in train.ids) else "int",
                                   "base": input_base},
                   summary=say.lines,
                   extra={"seen.npz": npz({"indptr": seen[0], "indices": seen[1]})} if rank == 0 else None)
        say(f"model written to {args.out}")
    return 0


def save_model(out, eng, params, datas=None, summary=None, extra=None):
    """Master data per vertex type (.npz, one array per field + ids), ``extra`` files
    ({name: write(binary file)}), ``summary`` (the lines the run printed) as
    summary.txt and model.json, written together by ``tux2.files.write_dir``: nothing
    replaces the previous model until every file is on disk, and manifest.json holds
    each file's SHA-256. ``datas``: the types' gathered master data, when the caller
    has it already."""
    if datas is None:
        datas = [eng.vertex_data(t.name) for t in eng.program.types]  # collective with several workers
    if datas[0] is None:
        return
    from tux2 import files
    from tux2.loaders import save_ids
    id_maps = getattr(eng.graph, "ids", (None, None))
    out_files = {}
    for t, data, m in zip(eng.program.types, datas, id_maps):
        arrays = {f: data[f] for f in data.dtype.names if f not in t.local}      # local fields are caches
        arrays["ids"] = save_ids(m, len(data))                                   # the user's ids
        out_files[f"{t.name}.npz"] = files.npz(arrays)
    out_files.update(extra or {})
    if summary:
        out_files["summary.txt"] = files.text("".join(line + "\n" for line in summary))
    meta = {**params, "tux2_version": tux2.__version__, "clock": eng.clock, "iteration": eng.iteration,
            "vertex_types": [t.name for t in eng.program.types], "context": eng.context()}
    out_files["model.json"] = files.text(json.dumps(meta, indent=2))
    files.write_dir(out, out_files)


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


def _hint(e, args):
    """What the command line offers against an engine error that names Python remedies."""
    from tux2.errors import DivergenceError, OverlapError
    if isinstance(e, OverlapError) and getattr(args, "algorithm", None) == "mf":
        return (". On the command line: leave out --order and --partitioner (per-edge SGD then runs in strata), "
                "or use --mode minibatch; --overlap allow sums the steps (not recommended)")
    if isinstance(e, DivergenceError):
        return ". On the command line: lower --lr (or --eta), or check the input values"
    return ""


def _user_names(message):
    """``message`` with temporary input copies (tux2.io.local_copy) named as the user named them."""
    from tux2.io import spooled_names
    for tmp, name in spooled_names().items():
        message = message.replace(tmp, "<stdin>" if name == "-" else name)
    return message


def build_parser():
    """(the ``tux2`` parser, {algorithm: its ``tux2 run ALGO`` parser})."""
    parser = Parser(prog="tux2", description="TuX² graph engine for machine learning")
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
    return parser, algos.choices


def main(argv=None):
    parser, run_parsers = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        argv = expand_config(argv, run_parsers)
    except Tux2Error as e:
        print(f"tux2: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    args.argv = argv
    if getattr(args, "no_cache", False):
        from tux2.compile import set_cache_dir
        set_cache_dir(None)
    try:
        return args.func(args)
    except MemoryError:
        print("tux2: error: out of memory: the input or the options (--k, --topics, --partitions …) need more "
              "memory than this machine has", file=sys.stderr)
        return 2
    except Tux2Error as e:
        who = f"[worker {args.rank}] " if getattr(args, "rank", None) is not None else ""
        print(f"tux2: error: {who}{_user_names(str(e))}{_hint(e, args)}", file=sys.stderr)
        return 2
    except BrokenPipeError:           # output piped into e.g. head, which has closed it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:              # files the user named: unreadable, unwritable, missing directory
        who = f"[worker {args.rank}] " if getattr(args, "rank", None) is not None else ""
        print(f"tux2: error: {who}{_user_names(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tux2: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
