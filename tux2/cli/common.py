"""What every command of the command line shares: tux2's argparse classes and option
types, the flag groups (edge-list columns and id base, partitions, outputs, checkpoints,
distributed runs, libsvm input), and the way a ``tux2 run`` worker starts, trains
through the runner (tux2.runner) and saves its estimator (tux2.estimators)."""
import argparse
import gc
import os
import sys

from tux2 import files, interrupt, partitioning, runner
from tux2.config import cores
from tux2.errors import Tux2Error
from tux2.graph import BipartiteGraph
from tux2.io import display_name
from tux2.loaders import DUPLICATES
from tux2.params import (COUNT, FRACTION, NONNEG, NONNEG_NUMBER, POSITIVE, PRIOR, PROCESSES, SEED,  # noqa: F401
                         integer, number)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except where there is none or the help text already explains it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS \
                or "default" in text:
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with tux2's help (HelpFormatter, for every sub-command too) and error
    line: ``tux2: error: …`` and a hint (``try 'tux2 run mf --help'``), exit status 2.
    A command's own parser (one without sub-commands) takes options and positionals in
    any order: ``tux2 predict model/ --top-k 10 users.txt`` (argparse alone gives an
    optional positional that follows a required one nothing when an option comes
    between them)."""

    _intermixing = False

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixing or any(a.nargs in (argparse.PARSER, argparse.REMAINDER) for a in self._actions):
            return super().parse_known_args(args, namespace)
        self._intermixing, self._given = True, set()     # parse_known_intermixed_args calls back here, twice
        try:
            found, rest = self.parse_known_intermixed_args(args, namespace)
            found.given = frozenset(self._given)            # the flags given, at their defaults or not
            return found, rest
        finally:
            self._intermixing = False

    def _get_values(self, action, arg_strings):
        """An option given an empty string (``--out "$UNSET"``) is an error: left as it is,
        it counted as not given (no model written, ``--resume ''`` a fresh start)."""
        if action.option_strings and action.dest != "title" and "" in arg_strings:
            self.error(f"argument {'/'.join(action.option_strings)}: expected a value, got an empty string")
        if action.option_strings and self._intermixing:
            self._given.add(action.dest)
        return super()._get_values(action, arg_strings)

    def _print_message(self, message, file=None):
        """argparse drops a failed write of --help and --version (``> /dev/full`` exited 0,
        silently): standard output's is raised, for tux2.cli's one error line."""
        if file is None or file is not sys.stdout:      # (None: closed; argparse then writes to standard error)
            return super()._print_message(message, file)
        if message:
            file.write(message)

    def error(self, message):
        """One error line and where to look (as git's and cargo's), not argparse's
        usage of every flag (15-21 lines) in front of it."""
        where = self.prog.removeprefix("tux2").strip()       # the top-level parser: no "tux2: tux2:"
        self.exit(2, f"tux2: error: {where + ': ' if where else ''}{message}\ntry '{self.prog} --help'\n")


def endpoint(text):
    """argparse type: ``tcp://HOST:PORT`` (HOST a name, an IPv4 address or [IPv6])."""
    import re
    m = re.fullmatch(r"tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})", text)
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise argparse.ArgumentTypeError(f"expected tcp://HOST:PORT (port 1-65535), got {text[:80]!r}")
    return text


def straggler_spec(text):
    """argparse type: ``RANK:FACTOR[:JITTER]`` (tux2.engine.Straggler), as its canonical text."""
    from tux2.engine import Straggler
    from tux2.errors import SchemaError
    try:
        return str(Straggler.parse(text))
    except SchemaError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def check_straggler(args, world):
    """--straggler names a worker of this run (one of several)."""
    if vars(args).get("straggler") is None:
        return
    rank = args.straggler.split(":")[0]
    if world == 1:
        raise Tux2Error(f"--straggler {args.straggler} slows "
                        f"{'each of several workers by its own draws' if rank == 'all' else 'one of several workers'}"
                        ": give --workers N (or start "
                        "the workers with a launcher)")
    if rank != "all" and int(rank) >= world:
        raise Tux2Error(f"--straggler {args.straggler}: there is no worker {rank} in a run of {world} workers "
                        f"(ranks 0-{world - 1})")


def key_dir(text):
    """argparse type: a directory made by ``tux2 keys DIR`` whose key files load (a
    damaged key is an error now, not a rendezvous timeout later)."""
    from tux2.zmq_transport import load_curve_keys
    for name in ("tux2.key", "tux2.key_secret"):
        path = os.path.join(text, name)
        try:
            public, secret = load_curve_keys(path)
        except (OSError, ValueError) as e:
            raise argparse.ArgumentTypeError(f"{path}: not a usable CURVE key ({e}); make a pair with "
                                             f"'tux2 keys DIR' and copy DIR to every host") from None
        if not public or (name == "tux2.key_secret" and not secret):
            raise argparse.ArgumentTypeError(f"{path}: holds no {'secret' if public else 'public'} key; make a "
                                             "pair with 'tux2 keys DIR'")
    return text


PARTITIONS = integer(1, runner.MAX_PARTITIONS)    # --partitions, --parts


def add_input_args(p, base=True, unknown=False):
    """How an edge-list file is read (tux2.loaders.load_edges): --columns, --base, and
    with ``unknown`` --unknown (ids of a test or predict input the training data lacks)."""
    p.add_argument("--columns", metavar="SPEC", default=None,
                   help="the columns holding src,dst[,value]: 1-based positions (1,2,3) or names from the file's "
                        "header line (user,item,rating); default: the columns a header names user and item (userId, "
                        "movieId, ISBN, …) and rating, else the first two and the third when present, more "
                        "columns (a timestamp) ignored")
    if base:
        p.add_argument("--base", choices=("auto", "0", "1"), default="auto",
                       help="id base: 1 makes ids 1 … n (outputs keep them); auto: 1 under a MatrixMarket header "
                            "or when no id 0 occurs on either side, else 0")
    if unknown:
        from tux2.loaders import UNKNOWN
        p.add_argument("--unknown", choices=UNKNOWN, default="baseline",
                       help="a user or item of the test or predict input without training ratings: baseline "
                            "predicts the global mean plus the known side's bias (implicit feedback: score 0, "
                            "the most popular items for a new user's list; counted and reported), skip "
                            "leaves the line out, error stops naming it")


def input_options(args):
    """The load_edges keywords of add_input_args' flags (--columns and --base)."""
    return {"columns": args.columns, "base": args.base if args.base == "auto" else int(args.base)}


def add_partition_args(p, mirror_free=None, default="bicut", note=""):
    """--partitions and --partitioner; ``mirror_free`` names the side bicut/aweto keep whole."""
    note = note or (f" (bicut/aweto keep {mirror_free} mirror-free)" if mirror_free else "")
    p.add_argument("--partitions", type=PARTITIONS, default=None,
                   help="number of partitions (P; default: one per worker; for programs other than MF's "
                        "per-edge SGD in strata, one per worker and thread)")
    p.add_argument("--partitioner", default=default,
                   help=f"vertex-cut strategy{note}: " + ", ".join(partitioning.available()))


def add_run_args(p, out_help, unit):
    """The flags every ``tux2 run`` command has: --out, --metrics (one JSON object per
    ``unit``), --quiet, --no-cache, --config, checkpoints and distributed runs."""
    p.add_argument("--out", help=out_help)
    p.add_argument("--metrics", help=f"write one JSON object per {unit} to this .jsonl file")
    p.add_argument("-q", "--quiet", action="store_true",
                   help=f"no per-{unit} lines (on a terminal they come with a live progress bar)")
    p.add_argument("--no-cache", action="store_true",
                   help="compile the algorithm's loops in this run instead of loading them from the kernel "
                        "cache ($TUX2_CACHE_DIR, default ~/.cache/tux2), and generate a built-in data set "
                        "instead of loading the copy kept there")
    p.add_argument("--config", metavar="FILE",
                   help=f"TOML file whose keys are these flags ({unit}s = 20, seed = 1, quiet = true, input = "
                        "'data.txt'); flags on the command line win")
    add_checkpoint_args(p, unit)
    add_distributed_args(p)
    # (>&-: a run that keeps nothing else loses all it learned; a launched rank above 0 prints nothing)
    p.set_defaults(prints=lambda args: None if args.out or args.metrics or args.checkpoint_every or args.rank else
                   f"tux2 run prints its {unit}s' numbers there: give --out DIR (the model) or --metrics FILE "
                   f"(one JSON line per {unit}) to keep what the run learns")


# flags that may change between a checkpoint and its resumption (and the estimator's _iterations, _resumable)
RESUMABLE = {"out", "metrics", "quiet", "resume", "checkpoint_every", "checkpoint_dir", "trace", "func", "argv",
             "rank", "world", "rendezvous", "bind", "advertise", "timeout", "workers", "max_frame_mb", "curve",
             "config", "threads", "straggler"}


# the flags that name input files (their size and modification time go into checkpoints)
INPUT_FILES = ("input", "test", "vocab")


def add_checkpoint_args(p, unit):
    g = p.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-every", type=NONNEG, default=0, metavar="N",
                   help=f"save the run's state every N {unit}s (0: never), atomically: a crash never "
                        "damages the previous checkpoint")
    g.add_argument("--checkpoint-dir", metavar="DIR",
                   help="where checkpoints go (default: the --resume DIR, else OUT/checkpoints with --out, "
                        "else ./tux2-checkpoints)")
    g.add_argument("--resume", metavar="DIR",
                   help=f"continue from the newest checkpoint in DIR, up to the total --{unit}s given; the "
                        "input and settings must be those of the interrupted run, the workers, partitions and "
                        "threads may differ (slack 0: the same model as an uninterrupted run)")


def checkpoint_dir(args):
    """Where --checkpoint-every writes: --checkpoint-dir, the --resume DIR (a resumed run goes on
    where it came from, as fit(checkpoint=DIR) does), OUT/checkpoints or ./tux2-checkpoints."""
    return (args.checkpoint_dir or args.resume
            or (os.path.join(args.out, "checkpoints") if args.out else "tux2-checkpoints"))


def spool_inputs(args):
    """Replace the input files of ``args`` that are ``-``, pipes, FIFOs or compressed
    with temporary plain copies read once (``tux2.io.local_copy``); with ``--workers``
    the launcher does it and passes the copies on in ``args.argv``."""
    from tux2.errors import InputError
    from tux2.io import local_copy
    read = {}
    for key in INPUT_FILES:
        given = vars(args).get(key)
        if given:
            if given in read and not os.path.isfile(given):     # a second read of a pipe finds it empty
                raise InputError(f"given as both {read[given]} and --{key}: standard input or a pipe can be "
                                 "read only once; give one of them as a file", path="<stdin>" if given == "-"
                                 else given)
            read[given] = "the input" if key == "input" else f"--{key}"
            copy = local_copy(given)
            setattr(args, key, copy)
            args.argv = [copy if a == given else a for a in args.argv]


def note_first_read(args, kind):
    """Before a first run's silent seconds, on stderr when it is a terminal (someone
    waits; logs and pipes get only results and errors): the reader of ``kind``
    ("libsvm", "edges") is being compiled."""
    from tux2.io import reader_compiled
    if vars(args).get("input") and not vars(args).get("quiet") and sys.stderr is not None \
            and sys.stderr.isatty() and not reader_compiled(kind):
        print(f"tux2: note: compiling tux2's {'libsvm' if kind == 'libsvm' else 'edge-list'} reader, once per tux2 "
              "version (5-30 s; later runs load it from the kernel cache)", file=sys.stderr, flush=True)


def check_outputs(args):
    """--out, --metrics, --trace and the checkpoint directory can be written: asked
    before any data is read, so a typo never costs a training run."""
    from tux2.files import check_writable
    if args.metrics == "-":         # standard output, as tux2 predict's -o - (a file named '-' before)
        args.metrics = "/dev/stdout"
    check_writable(args.out, "--out", directory=True)
    check_writable(args.metrics, "--metrics", directory=False, inputs=[vars(args).get(k) for k in INPUT_FILES])
    check_writable(args.trace, "--trace", directory=True)
    if args.metrics and args.out and os.path.abspath(os.path.dirname(args.metrics)) == os.path.abspath(args.out) \
            and (os.path.basename(args.metrics) in ("model.json", "manifest.json", "summary.txt", "vocab.txt",
                                                     "topics.txt", "weights.txt") or args.metrics.endswith(".npz")):
        raise Tux2Error(f"{args.metrics}: --metrics names a file the model in --out {args.out} is written to: "
                        "name another (metrics.jsonl)")
    if args.checkpoint_every:
        check_writable(checkpoint_dir(args), "the checkpoint directory", directory=True)


def add_distributed_args(p):
    g = p.add_argument_group("distributed run (see README: Running on several workers)")
    g.add_argument("--workers", type=PROCESSES, default=1,
                   help="start this many worker processes on this machine (ZeroMQ over loopback)")
    g.add_argument("--rank", type=NONNEG, default=None,
                   help="this worker's rank; when unset, from OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID")
    g.add_argument("--world", type=PROCESSES, default=None,
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
    g.add_argument("--threads", type=PROCESSES, default=None,
                   help="threads per worker (default: as many as the cores, shared out among local workers). "
                        "Per-edge SGD in strata (tux2 run mf's default) and LDA's tiles (tux2 run lda's default): "
                        "the threads share the worker's partition "
                        "tile by tile. Other runs: each thread runs some of the worker's partitions, at most one "
                        "per partition, and without --partitions --threads T makes T partitions per worker")
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
    g.add_argument("--straggler", metavar="RANK:FACTOR[:JITTER]", type=straggler_spec, default=None,
                   help="for experiments: worker RANK (all: every worker, each with its own draws) runs FACTOR times slower (it sleeps (FACTOR-1) x its "
                        "last clock's compute at the start of each clock, from its third: the first one's holds the compiling); JITTER draws each clock's factor "
                        "from FACTOR x [1-JITTER, 1+JITTER], seeded by --seed. Changes timing, not the "
                        "model at --slack 0; --trace records the sleep (injected_s) and each clock's staleness")
    g.add_argument("--trace", metavar="DIR",
                   help="write each worker's per-clock record (clock, iteration, compute/sync/wait seconds, "
                        "bytes sent, start and finish times) to DIR/trace-RANK.jsonl; the stages of an iteration "
                        "outside its mini-batches get a record of their own (epoch_stages, no clock)")


def open_transport(args, tiled):
    """(transport, rank, world) for a distributed worker, or (None, 0, 1); ``tiled``:
    the estimator's threads share a worker's partition (tux2.Estimator.tiled)."""
    from tux2.runtime import connect, world_from
    w = world_from(args.rank, args.world, args.rendezvous)
    if w is None or w[1] == 1:
        return None, 0, 1
    rank, world, rendezvous = w
    parts = runner.partitions(args.partitions, world, args.threads, tiled)
    options = {k: v for k, v in vars(args).items() if k not in _PER_WORKER}
    # paths are per host, but the data is one: rank 1 reading another file (or another copy, edited) trained
    # on a mix of both (each reads its byte range of its file). Not --test or --vocab: rank 0 alone may be given those
    if vars(args).get("input") and os.path.isfile(args.input):
        options["size of the input in bytes"] = os.path.getsize(args.input)
        options["CRC-32 of the input"] = f"{files.crc32(args.input):08x}"
    return connect(rank, world, rendezvous, parts, timeout=args.timeout, bind=args.bind, advertise=args.advertise,
                   curve=args.curve, options=options, max_frame_mb=args.max_frame_mb), rank, world


# options that may differ between the workers of one run (paths are per host; the flags given, as values may
# come from a flag or its default)
_PER_WORKER = {"func", "prints", "argv", "rank", "rendezvous", "bind", "advertise", "curve", "trace", "quiet", "workers",
               "input", "test", "out", "metrics", "checkpoint_dir", "resume", "config", "timeout", "given"}


def run(args, cls, load, after=None, **params):
    """``tux2 run ALGO``: launch ``--workers`` local processes, or as one worker train
    the estimator ``cls`` (its parameters: the flags of the same names, and ``params``)
    on ``load(args, est, transport, say)`` (a Dataset) through the runner with this
    command's flags, ``after(args, est, say)``, and write --out on rank 0. Any error is
    sent to the other workers (ABORT) before it propagates."""
    check_outputs(args)
    check_together(args)
    spool_inputs(args)
    named = {k: cls.flags.get(k, (k,))[0].replace("-", "_") for k in cls._param_names()}    # estimator.flags
    est = cls(**{**{k: vars(args)[a] for k, a in named.items() if a in vars(args)}, **params})
    if vars(args).get("init_model"):
        est.start_from(cls.load(args.init_model))
    try:
        est.check_params()              # what the flags' types cannot check: options that do not go together
    except ValueError as e:
        raise Tux2Error(str(e)) from None
    if args.rank is None:
        runner.partitions(args.partitions, args.workers, args.threads)    # hopeless flags stop before any worker
    if args.workers > 1 and args.rank is None:
        check_straggler(args, args.workers)
        slow = runner.local_workers(args.workers, "--workers")
        if slow:
            print(f"tux2: warning: {slow}", file=sys.stderr, flush=True)
        from tux2.runtime import launch_local, strip_option
        argv = strip_option(args.argv, "--workers")
        if args.threads is None and est.tiled():        # the cores shared out, not each worker taking them all
            argv += ["--threads", str(max(1, cores() // args.workers))]
        return launch_local(argv, args.workers, timeout=args.timeout)
    transport, rank, world = open_transport(args, est.tiled())
    try:
        check_straggler(args, world)
        say = runner.Speaker(not args.quiet and rank == 0, record=rank == 0)    # rank 0's lines: summary.txt
        if rank == 0:
            note_first_read(args, "libsvm" if "zero_based" in vars(args) else "edges")
        checkpoint = _checkpoint(args, est, world)      # one it cannot resume stops before the data is read
        # the data as loaded goes straight to the runner, which lets it go once the estimator has prepared it
        runner.train(est, load(args, est, transport, say), transport=transport, partitions=args.partitions,
                     threads=args.threads, slack=args.slack, say=say, metrics=args.metrics, checkpoint=checkpoint,
                     trace=args.trace, callbacks=[collect_from_now], straggler=args.straggler)
        if after:
            after(args, est, say)
        if args.out and rank == 0:
            est.save(args.out, summary=say.lines)
            say(f"model written to {args.out}")
        return 0
    except BaseException as e:
        if transport is not None and not isinstance(e, SystemExit):
            transport.abort(runner.abort_reason(e))
        raise
    finally:
        if transport is not None:
            transport.close()
            if transport.refused:
                print(f"tux2: note: [worker {rank}] refused {transport.refused} connection(s) that did not know "
                      f"the run's {transport.credential}", file=sys.stderr, flush=True)
            if transport.dropped:
                print(f"tux2: note: [worker {rank}] dropped {transport.dropped} malformed or foreign frames "
                      f"(first: {next(iter(transport.drop_reasons))})", file=sys.stderr, flush=True)


def check_together(args):
    """Flags that this run would leave without effect: an error naming them, as argparse
    names flags that exclude each other (the estimators' own: Estimator._unused)."""
    launcher = [f"--{k} {vars(args)[k]}" for k in ("rank", "world", "rendezvous")
                if vars(args)[k] not in (None, args.workers if k == "world" else None)]
    if args.workers > 1 and launcher:
        raise Tux2Error(f"--workers {args.workers} starts its own workers on this machine; {' and '.join(launcher)} "
                        f"{'is' if len(launcher) == 1 else 'are'} for a worker started by another launcher (mpirun, "
                        "srun, one tux2 per host): give one or the other")
    if vars(args).get("input") is None:             # the built-in set has its own test part
        for key in ("test", "vocab"):
            if vars(args).get(key):
                raise Tux2Error(f"--{key} {vars(args)[key]} goes with an INPUT file: the built-in data set has "
                                + ("its own test part" if key == "test" else "no words, only their numbers"))
        refuse_read_flags(args, "the built-in data set is read as it was made")
    fraction = vars(args).get("test_fraction", TEST_FRACTION)
    if fraction != TEST_FRACTION and (args.test or args.input is None):
        raise Tux2Error(f"--test-fraction {fraction} holds out a part of INPUT, which "
                        + (f"--test {args.test} replaces: give one of them" if args.test else
                           "the built-in data set does not have: it has its own test part"))


TEST_FRACTION = 0.1                 # tux2 run mf --test-fraction: the held-out share of INPUT
# the flags that say how INPUT (and --test) is read: nothing to do without one
_READ_FLAGS = ("columns", "base", "ids", "duplicates", "unknown", "label_column", "weight_column", "zero_based",
               "format",
               "text_column", "min_count", "stop_words", "max_df", "numbers")


def refuse_read_flags(args, instead):
    """A flag of how INPUT is read given without INPUT (the data ``instead`` says how it
    is made): an error naming it, not a setting silently ignored."""
    given = [k for k in _READ_FLAGS if k in vars(args).get("given", ())]
    if given:
        raise Tux2Error(f"--{given[0].replace('_', '-')} says how INPUT is read, and there is none: {instead}; "
                        "give an INPUT file, or leave the flag out")


def collect_from_now(record=None):
    """After the first epoch of a ``tux2`` program (tux2.cli.quick_process): the objects
    made so far stay for good; freeze them and turn the garbage collector back on.
    After every epoch: a Ctrl-C whose exception was dropped stops the run now."""
    interrupt.check()
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _checkpoint(args, est, world):
    """The runner's checkpoint keywords: the run's settings (all flags but those a
    resume may change, among them the estimator's iterations and resumable
    parameters) and the input files' sizes and times."""
    from tux2.checkpoint import input_stats
    def setting(k, v):                  # input files by where they are, not how they were typed
        if k in INPUT_FILES and isinstance(v, str) and display_name(v) == v and os.path.isfile(v):
            return os.path.realpath(v)
        return display_name(v) if isinstance(v, str) else v
    resumable = RESUMABLE | {est._iterations, *est._resumable}
    params = {k: setting(k, v) for k, v in sorted(vars(args).items())
              if k not in resumable and isinstance(v, (str, int, float, bool, type(None)))}
    # a flag whose default the others decide (mf's --mode) at the value they decide, as checkpoints of fit() and
    # of earlier runs (--mode als) hold it
    given = est.get_params()
    for k, v in est._params_used(given).items():
        flag = est.flags.get(k, (k,))[0].replace("-", "_")
        if v != given[k] and flag in params:
            params[flag] = v
    # the partitions the run has, however they were asked for (--partitions, or workers × threads)
    params["partitions"] = runner.partitions(args.partitions, world, args.threads, est.tiled())
    named = [p for p in (vars(args).get(k) for k in (*INPUT_FILES, "stop_words"))      # not stdin's copy; a
             if p and display_name(p) == p]             # stop-word file changes the edges too (input_stats: files only)
    return runner.checkpoint_options(checkpoint_dir(args), args.checkpoint_every, args.resume, params, world,
                                     input_stats([os.path.realpath(p) for p in named]))


# ---------------------------------------------------------------- libsvm input (blockpg, lr, svm, softmax, fm)
def add_libsvm_args(p, metrics):
    """INPUT (optional: a built-in set), --test, --zero-based/--one-based, --duplicates and --min-count."""
    p.add_argument("input", nargs="?", help="training set: libsvm, or a table of numbers (CSV, TSV …) with the "
                                            "labels in a column; default: built-in generated set")
    p.add_argument("--test", help=f"test set (as INPUT): {metrics} per epoch")
    p.add_argument("--label-column", metavar="N|NAME|first|last", default=None,
                   help="a table's label column: 1-based number, header name or 'last' (default: the column named "
                        "label, class, target, y … , else the first, as LightGBM and xgboost read CSV)")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--zero-based", action="store_const", const=True, default="auto",
                      help="feature indices start at 0 (default: so when an index 0 occurs in INPUT, as "
                           "scikit-learn's load_svmlight_file reads them, else at 1)")
    base.add_argument("--one-based", dest="zero_based", action="store_const", const=False,
                      help="feature indices start at 1: an index 0 is an error")
    p.add_argument("--duplicates", choices=DUPLICATES, default="error",
                   help="a feature twice in one line: stop naming the line, add the values, keep the last, "
                        "or keep both")
    p.add_argument("--min-count", type=COUNT, default=1, metavar="N",
                   help="drop the features with fewer than N non-zero entries in INPUT (the tail of hashed or raw "
                        "sparse features, as parameter-server's tail filter and Vowpal Wabbit's): they get no "
                        "weight, and in --test and predictions they count as features unseen in training "
                        "(default 1: keep every feature)")


def classification_data(args, est, transport, say):
    """The Dataset of the flags: libsvm files, or without INPUT a kdd-shaped set of
    20k train + 2k test samples over 10k power-law features (softmax: labelled with
    ``est.classes``, default 5; a squared loss: real targets, 100 + the planted margin + N(0, 1))."""
    classes = (est.classes or 5) if est.loss == "softmax" else 2
    if args.input is not None:
        return est.load_data(args.input, args.test)
    import numpy as np
    from tux2.datacache import generated
    from tux2.datasets import sparse_classification
    g, y, w = generated(sparse_classification, n_samples=22_000, n_features=10_000, seed=args.seed, classes=classes)
    if est.loss == "squared":        # regression: the planted model's margins plus N(0, 1) noise, around 100
        rng = np.random.default_rng(args.seed)
        y = 100.0 + np.bincount(g.src, g.values * w[g.dst], minlength=g.n_src) + rng.normal(0.0, 1.0, g.n_src)
    cut, names = 20_000, ("sample", "feature")
    keep = g.src < cut
    test = BipartiteGraph(g.src[~keep] - cut, g.dst[~keep], g.values[~keep], g.n_src - cut, g.n_dst, names)
    train = BipartiteGraph(g.src[keep], g.dst[keep], g.values[keep], cut, g.n_dst, names)
    return runner.Dataset(train, test, y[:cut], y[cut:], zero_based=False,
                          source=f"built-in kdd-shaped set ({cut // 1000}k train + 2k test samples, "
                                 f"10k power-law features{f', {classes} classes' if classes > 2 else ''}"
                                 f"{', real-valued targets' if est.loss == 'squared' else ''})")
