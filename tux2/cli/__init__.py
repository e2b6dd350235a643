"""Command line: ``tux2 run mf [INPUT] ...``, one module per command (tux2.cli.mf,
tux2.cli.lda, …), each built on tux2.cli.common, the runner and the estimators."""
import errno
import gc
import os
import sys

from tux2 import interrupt
from tux2.errors import InputError, Tux2Error
from tux2.params import PEER_NAMES
from tux2.version import __version__


def expand_config(argv, run_parsers):
    """``tux2 run ALGO --config FILE …``: the TOML file's keys are the flags of ``tux2 run
    ALGO`` (``batch-size`` or ``batch_size``; ``input`` for the positional), turned into
    command-line words placed before the user's own, so argparse checks them and flags
    given on the command line win."""
    parser = run_parsers.get(argv[1]) if len(argv) > 1 and argv[0] == "run" else None
    at = [i for i, a in enumerate(argv) if a == "--config" or a.startswith("--config=")]
    if parser is None or not at:
        return argv
    rest = argv[2:at[0]] + argv[at[0] + 1:]
    path = argv[at[0]].partition("=")[2] or (rest.pop(at[0] - 2) if at[0] + 1 < len(argv) else None)
    if not path:
        raise Tux2Error("--config needs a file")
    from tux2.io import read_toml
    conf = read_toml(path)
    flags = {a.dest: a for a in parser._actions if a.option_strings}
    words, positional, seen = [], [], {}
    for key, value in conf.items():
        dest = key.replace("-", "_")
        action = flags.get(dest)
        if dest in seen:
            raise InputError(f"{key} and {seen[dest]} are one flag: give it once", path=path)
        seen[dest] = key
        many = action is not None and (action.nargs in ("+", "*") or isinstance(action.nargs, int))
        if isinstance(value, list) and not many:     # its words would be spliced in: ['x', '--out', 'elsewhere']
            raise InputError(f"{key} takes one value, not a list ({value!r})", path=path)
        if dest == "input":
            positional.append(str(value))
        elif dest == "config":                         # it would be taken as a flag and never read
            raise InputError(f"{key}: a config file cannot name another; give its keys here", path=path)
        elif action is None:
            known = ", ".join(sorted(k.replace("_", "-") for k in flags if k != "help"))
            raise InputError(f"unknown key {key!r} for 'tux2 run {argv[1]}'; the keys are its flags: {known}",
                             path=path)
        elif action.nargs == 0:                        # store_true switches
            if not isinstance(value, bool):
                raise InputError(f"{key} is a switch: true or false, not {value!r}", path=path)
            words += [max(action.option_strings, key=len)] if value else []
        elif isinstance(value, dict):
            raise InputError(f"{key}: tables are not flags", path=path)
        else:
            flag = max(action.option_strings, key=len)
            if not many:                               # --flag=value: a value that starts with '-' stays one
                words.append(f"{flag}={str(value).lower() if isinstance(value, bool) else value}")
            else:
                words += [flag, *map(str, value if isinstance(value, list) else [value])]
    return argv[:2] + positional + words + rest


def _hint(e, args):
    """What the command line offers against an engine error that names Python remedies."""
    from tux2.errors import DivergenceError, OverlapError
    if isinstance(e, OverlapError) and getattr(args, "algorithm", None) == "mf":
        return ("Remedies: leave out --order and --partitioner (per-edge SGD then runs in strata), or use --mode "
                "minibatch; --overlap allow sums the steps (not recommended)")
    if isinstance(e, DivergenceError) and "--" not in str(e):      # (the estimators' own stops name their flag)
        return ". On the command line: lower --lr (or --eta), or check the input values"
    if getattr(args, "algorithm", None) == "mf" and args.rank is not None and "rank and the world size" in str(e):
        return " (Spark's ALS calls the number of factors its rank: here that is --k)"     # --rank 20
    return ""


def _instead(unknown, algorithm, run_parsers):
    """What ``tux2 run ALGO`` takes for the flags in ``unknown`` that it lacks: its own
    flag of the same meaning (LDA counts Gibbs sweeps in --iterations, not --epochs), a
    near spelling, or the algorithms whose flag it is."""
    import difflib
    by_name = {o: "/".join(sorted(a.option_strings, key=len, reverse=True))        # --topics/-k
               for a in run_parsers[algorithm]._actions for o in a.option_strings}
    hints, flags = [], []
    for word in unknown:
        flag = word.partition("=")[0]
        if not flag.startswith("-") or _number(flag):
            continue
        typed = "--" + flag.lstrip("-").lower().replace("_", "-")   # --n_epochs, --maxIter, LibMF's -k and -l2
        same = [by_name[b] + "".join(note) for a, b, *note in PEER_NAMES if a == typed and b in by_name]
        if not same and flag != typed and typed in by_name:        # -k for --k
            same = [by_name[typed]]
        near = same or [by_name[o] for o in difflib.get_close_matches(typed, by_name, 1, 0.7)]
        spelt = (flag,) if typed in by_name else (flag, typed)     # ---out: this command's --out, not others'
        others = [name for name, p in run_parsers.items() if name != algorithm
                  and any(f in a.option_strings for a in p._actions for f in spelt)]
        hint = (f"use {near[0]}" if same else f"did you mean {near[0]}" if near
                else f"tux2 run {algorithm} has no {flag}")
        hints.append(hint + (f" ({flag} is an option of tux2 run {', '.join(others)})" if others else ""))
        flags.append(flag)
    if len(hints) > 1:                                  # which hint is whose
        hints = [f"{flag}: {hint}" for flag, hint in zip(flags, hints)]
    return f": {'; '.join(hints)}" if hints else ""


def _number(word):
    try:
        return float(word) == float(word)
    except ValueError:
        return False


def _user_names(message):
    """``message`` with temporary input copies (tux2.io.local_copy) named as the user named them."""
    from tux2.io import spooled_names
    for tmp, name in spooled_names().items():
        message = message.replace(tmp, "<stdin>" if name == "-" else name)
    return message


def build_parser():
    """(the ``tux2`` parser, {algorithm: its ``tux2 run ALGO`` parser})."""
    from tux2.cli import blockpg, glm, info, keys, lda, mf, partition, plot, predict
    from tux2.cli.common import Parser
    parser = Parser(prog="tux2", description="TuX² graph engine for machine learning")
    parser.add_argument("--version", action="version", version=f"tux2 {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train an algorithm")
    algos = run.add_subparsers(dest="algorithm", required=True)
    for command in (mf, lda, blockpg, glm):
        command.add_parser(algos)
    for command in (partition, predict, info, plot, keys):
        command.add_parser(sub)
    return parser, algos.choices


def main(argv=None):
    """The ``tux2`` command (``argv``: its words; None: this process's own, as the
    ``tux2`` program and its workers run it, see ``quick_process``)."""
    try:
        if argv is None:
            from tux2 import busguard
            busguard.arm()              # this process is tux2's own: a shrunk mapped input is named (tux2.busguard)
            with quick_process():
                return _main(sys.argv[1:])
        return _main(list(argv))
    except KeyboardInterrupt:         # Ctrl-C while the program starts (imports, the parser), as later on
        return _stopped()
    except Exception:
        if interrupt.SEEN:            # Ctrl-C inside a C extension's import (numpy's) comes out as an ImportError,
            return _stopped()         # inside argparse's parse_intermixed_args as an AttributeError ('save_nargs')
        raise


class quick_process:
    """The ``tux2`` program runs without Python's cyclic garbage collector until its
    first epoch has run (tux2.cli.common.collect_from_now) and skips the
    collector's final pass at exit: numba's start (its typing tables, the loops loaded
    from the kernel cache) makes a few hundred thousand objects that all live until the
    process ends, and the collector's passes over them cost ~0.3 s of a short run. Data
    and models are numpy arrays, which it never needs to collect. The collector is on
    again afterwards, as it was before, for a caller that goes on (``main()`` called
    from Python, a command that ran no epoch). Ctrl-C meanwhile: tux2.interrupt."""

    def __enter__(self):
        self.enabled = gc.isenabled()
        self.sigint = interrupt.install()
        gc.disable()

    def __exit__(self, *exc):
        gc.freeze()                   # exit's final collection has nothing left to walk
        if self.enabled:
            gc.enable()
        interrupt.restore(self.sigint)


def _main(argv):
    parser, run_parsers = build_parser()
    try:
        argv = expand_config(argv, run_parsers)
    except Tux2Error as e:
        print(f"tux2: error: {e}", file=sys.stderr)
        return 2
    words = argv[:argv.index("--")] if "--" in argv else argv
    nameless = next((w for w in words if w.startswith("-") and w.lstrip("-").startswith("=")), None)
    if nameless is not None:            # argparse: 'ambiguous option: --=1 could match --help, --version'
        print(f"tux2: error: {nameless!r} has no option name before its '=': an option and its value are "
              "written --out=DIR or --out DIR (-o FILE)\ntry 'tux2 --help'", file=sys.stderr)
        return 2
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            own = run_parsers.get(getattr(args, "algorithm", None)) if args.command == "run" else None
            (own or parser).error(f"unrecognized arguments: {' '.join(unknown)}"
                                  + (_instead(unknown, args.algorithm, run_parsers) if own else ""))
    except SystemExit as e:         # --help, --version: their text is still to be written
        raise SystemExit(_flushed(e.code))
    except BrokenPipeError:           # ... or could not be (tux2.cli.common.Parser._print_message): its reader
        __import__("tux2.files").files.stdout_gone()        # has gone (| true), as below
        return 0
    except OSError as e:
        return _stdout_failed(e)
    args.argv = argv
    if sys.stdout is None:          # started with standard output closed (>&-): an error where it is the output
        if getattr(args, "prints", lambda a: None)(args):
            print(f"tux2: error: standard output is closed: {args.prints(args)}", file=sys.stderr)
            return 2
        __import__("tux2.files").files.stdout_gone()
    if getattr(args, "no_cache", False):
        from tux2.compile import set_cache_dir
        set_cache_dir(None)
    who = f"[worker {args.rank}] " if getattr(args, "rank", None) is not None else ""     # names a worker's errors
    from tux2.runtime import say_error
    try:
        __import__("tux2.files").files.check_cwd()
        status = args.func(args)
        interrupt.check()       # a Ctrl-C remembered during numba's work (tux2.interrupt) ends as one
        return _flushed(status)
    except MemoryError:
        print("tux2: error: out of memory: the input or the options (--k, --topics, --partitions …) need more "
              "memory than this machine has", file=sys.stderr)
        return 2
    except Tux2Error as e:
        if getattr(e, "relayed", False) and os.environ.get(interrupt.LOCAL_WORKER):
            return 2                # another worker of this launch failed and printed why
        message, hint = _user_names(str(e)), _hint(e, args)
        if hint.startswith("Remedies:"):    # the command line's remedies, in place of the Python ones
            message = message.split(" Remedies:")[0] + " "
        say_error(f"tux2: error: {who}{message}{hint}", args.rank if who else None)
        return 2
    except BrokenPipeError:           # output piped into e.g. head, which has closed it
        from tux2.files import stdout_gone
        stdout_gone()
        return 0
    except OSError as e:              # files the user named: unreadable, unwritable, missing directory
        if e.filename is None and e.errno in STDOUT_FULL:
            return _stdout_failed(e)
        what = f"{e.filename}: {e.strerror}" if e.filename is not None and e.strerror else str(e)
        say_error(f"tux2: error: {who}{_user_names(what)}", args.rank if who else None)
        return 2
    except KeyboardInterrupt:
        return _stopped(who)
    except Exception as e:            # a bug of tux2's own: said in one line, the traceback on request
        if interrupt.SEEN and not os.environ.get("TUX2_DEBUG"):
            return _stopped(who)      # Ctrl-C or SIGTERM raised inside C (numba's compile, a Cython call) comes
            #                           out as SystemError ("returned a result with an exception set") or
            #                           RuntimeError ("no compiled object yet"): the stop, not a bug
        if os.environ.get("TUX2_DEBUG"):
            raise
        say_error(f"tux2: internal error: {who}{type(e).__name__}: {e}\n  this is a bug in tux2: please report it "
                  "with the command; TUX2_DEBUG=1 shows where it happened", args.rank if who else None)
        return 70                     # EX_SOFTWARE


def _stopped(who=""):
    """Ctrl-C or SIGTERM (tux2.interrupt): one line, the signal's exit status; ``who``: the
    worker it stopped ('[worker 1] ': a SIGTERM sent to one worker names it)."""
    code, what = interrupt.stopped()
    if not interrupt.said_by_parent():
        print(f"tux2: {who}{what}", file=sys.stderr)
    return code


# a write that names no file: print() to standard output (tux2's own files name theirs, tux2.files.write_error)
STDOUT_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _flushed(code):
    """``code``, once what standard output still buffers is written: a full disk there
    is then this command's error, not Python's report at exit."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        __import__("tux2.files").files.stdout_gone()
    except OSError as e:
        return _stdout_failed(e)
    return code


def _stdout_failed(e):
    """Standard output cannot be written (``> /dev/full``, a full disk): one error line."""
    __import__("tux2.files").files.stdout_gone()    # nothing more goes there, nor at exit
    print(f"tux2: error: standard output: {e.strerror}", file=sys.stderr)
    return 2
