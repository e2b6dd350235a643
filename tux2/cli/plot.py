"""``tux2 plot METRICS.jsonl … -o out.png``: the curves of one or more ``--metrics``
streams, one panel per metric, one line per file."""
import contextlib
import json
import math
import os
import sys

from tux2.errors import InputError, Tux2Error

# bookkeeping fields, not metrics
_NOT_METRICS = {"epoch", "iteration", "clock", "time_s", "total_time_s", "bytes_sent", "wait_s", "edges_per_s",
                "tokens_per_s", "nnz"}
_X = ("auto", "epoch", "iteration", "clock", "total_time_s")


def add_parser(sub):
    p = sub.add_parser("plot", help="plot --metrics JSONL files (objective, RMSE, log-likelihood … per epoch)",
                       description="One panel per metric (all numeric fields except bookkeeping, or --y), one "
                                   "line per file, against epochs/iterations or training time. Needs matplotlib "
                                   "(pip install 'tux2[plot]').")
    p.add_argument("files", nargs="+", metavar="METRICS.jsonl", help="files written by tux2 run … --metrics (-: standard input)")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .pdf, .svg)")
    p.add_argument("--x", choices=_X, default="auto",
                   help="x axis; auto: epoch or iteration, whichever the files have")
    p.add_argument("--y", nargs="+", help="metrics to plot (default: every metric in the files that changes from record to record)")
    p.add_argument("--log-y", action="store_true", help="logarithmic y axes (symmetric log on a panel with values <= 0)")
    p.add_argument("--title", help="figure title")
    p.set_defaults(func=plot)


def read_metrics(path):
    """The records of a JSONL metrics file ('-': standard input, as the other commands read
    it); a bad line is an InputError with its number."""
    rows = []
    try:
        f = contextlib.nullcontext(sys.stdin.buffer) if path == "-" else open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read metrics: {e.strerror}", path=path) from None
    if path == "-":
        path = "<stdin>"
    with f as f:
        for no, raw in enumerate(f, 1):
            line = raw.decode("utf-8", "replace")
            if not line.strip():
                continue
            try:
                rec = json.loads(raw)
            except UnicodeDecodeError:
                raise InputError("not UTF-8 text", path=path, line=no, text=line.strip()[:80]) from None
            except json.JSONDecodeError as e:
                raise InputError(f"not a JSON object ({e.msg})", path=path, line=no, text=line.strip()[:80]) from None
            except RecursionError:
                raise InputError("not a JSON object (nested too deep)", path=path, line=no,
                                 text=line.strip()[:80]) from None
            if not isinstance(rec, dict):
                raise InputError("not a JSON object", path=path, line=no, text=line.strip()[:80])
            rows.append(rec)
    if not rows:
        raise InputError("no records", path=path)
    return rows


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def plot(args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise Tux2Error("tux2 plot needs matplotlib: pip install 'tux2[plot]' (or pip install matplotlib)") from None
    from matplotlib.backend_bases import FigureCanvasBase
    from tux2.files import check_writable, make_parent, write_atomic
    formats = FigureCanvasBase.get_supported_filetypes()
    if os.path.splitext(args.output)[1][1:].lower() not in formats:
        raise Tux2Error(f"-o {args.output!r}: name an image file ending in one of "
                        f"{', '.join('.' + k for k in sorted(formats))}")
    check_writable(args.output, "-o", directory=False)
    data = {path: read_metrics(path) for path in args.files}
    if args.x == "auto":                       # per file: MF/GLM files count epochs, LDA files iterations
        xkeys = {path: next((k for k in ("epoch", "iteration") if any(k in r for r in rows)), "clock")
                 for path, rows in data.items()}
    else:
        xkeys = dict.fromkeys(data, args.x)
    found = sorted({k for rows in data.values() for r in rows for k, v in r.items()
                    if k not in _NOT_METRICS and _number(v)})
    # without --y, a metric that never changes (LDA's alpha_sum when α is not learnt) gets no panel
    flat = [] if args.y else [m for m in found if len({r[m] for rows in data.values() for r in rows
                                                        if _number(r.get(m))}) == 1]
    metrics = args.y or [m for m in found if m not in flat] or found
    if not metrics:
        raise Tux2Error("no numeric metrics in the files")
    for path, rows in data.items():
        if not any(xkeys[path] in r for r in rows):
            have = [k for k in _X[1:] if any(k in r for r in rows)]
            raise InputError(f"no {xkeys[path]!r} field" + (f" (use --x with one of: {', '.join(have)})" if have
                                                             else ""), path=path)
    # a panel without a line (a --y name no file has, an x that is never a number) is an error, not an empty plot
    blank = [m for m in metrics if not any(_number(r.get(xkeys[path])) and _number(r.get(m))
                                           for path, rows in data.items() for r in rows)]
    if blank:
        raise Tux2Error(f"no record has a number for {', '.join(map(repr, blank))} beside a number for "
                        f"{' or '.join(map(repr, dict.fromkeys(xkeys.values())))}; the files' metrics: "
                        f"{', '.join(found) or 'none'}")
    cols = min(len(metrics), 3)
    nrows = -(-len(metrics) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    xlabel = " / ".join(dict.fromkeys({"total_time_s": "training time (s)", "epoch": "epoch", "iteration": "iteration",
                                       "clock": "clock (mini-batches)"}[k] for k in xkeys.values()))
    for ax, m in zip(axes.flat, metrics):
        for path, rows in data.items():
            pts = [(r[xkeys[path]], r[m]) for r in rows if _number(r.get(xkeys[path])) and _number(r.get(m))]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                        label=os.path.splitext(os.path.basename(path))[0])
        ax.set_xlabel(xlabel)
        if "total_time_s" not in xkeys.values():
            from matplotlib.ticker import MaxNLocator
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(m.replace("_", " "))
        low = min((r[m] for rows in data.values() for r in rows if _number(r.get(m))), default=1)   # log-lik. < 0
        ax.set_yscale("linear" if not args.log_y else "log" if low > 0 else "symlog")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    if args.title:
        fig.suptitle(args.title)
    make_parent(args.output)
    try:       # written whole or not at all; a full disk names -o's file, not standard output
        fig.tight_layout()
        kind = os.path.splitext(args.output)[1][1:].lower()
        write_atomic(args.output, lambda f: fig.savefig(f, dpi=120, format=kind))
    except (ValueError, OverflowError) as e:      # matplotlib cannot scale values near the float64 limits
        raise Tux2Error(f"{args.output}: cannot draw these values ({e})") from None
    plt.close(fig)
    left = [m for m in flat if m not in metrics]
    print(f"{len(metrics)} metric(s) from {len(data)} file(s) written to {args.output}"
          + (f" (the same in every record, so not drawn: {', '.join(left)}; --y draws them)" if left else ""))
    return 0
