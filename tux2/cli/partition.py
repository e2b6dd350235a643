"""``tux2 partition``: run vertex-cut strategies on one graph and report their quality side by side."""
import inspect
import os
import sys

import numpy as np

from tux2 import partitioning
from tux2.files import check_writable, json_text
from tux2.io import display_name
from tux2.loaders import ID_MODES, load_edges
from tux2.errors import PartitionError
from tux2.cli.common import (PARTITIONS, POSITIVE, SEED, add_input_args, input_options, integer, refuse_read_flags,
                             spool_inputs)


def add_parser(sub):
    p = sub.add_parser(
        "partition", help="compare vertex-cut partitioning strategies on a graph",
        description="Partition INPUT with each --strategy and print the quality reports side by side: "
                    "replication factor λ (with master-only replicas, as PowerGraph counts, and without, as "
                    "KaHIP/Mt-KaHyPar count), per vertex type, edge and master balance (max/mean), mirrors, "
                    "time. INPUT is an edge list whose first column is one vertex type and second column the "
                    "other (further columns are ignored; --columns picks others; tabs, spaces, commas, semicolons "
                    "or '::'; a header line; gzip, bz2 or xz; '-' for standard input). Only vertices with edges count. "
                    "Strategies: " + ", ".join(partitioning.available()))
    p.add_argument("input", nargs="?", help="edge list; or use --powerlaw to generate a graph")
    p.add_argument("--ids", choices=ID_MODES, default="auto",
                   help="as in tux2 run (string: any token, e.g. numeric ids too sparse to index by)")
    add_input_args(p)
    p.add_argument("--parts", "-p", type=PARTITIONS, required=True, help="number of parts")
    p.add_argument("--strategy", "-s", action="append", dest="strategies", metavar="NAME",
                   help="strategy to run (repeatable; default: all)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="strategy option, given to every selected strategy that takes it, e.g. theta=100, "
                        "lam=1.1, favorite=dst, loaders=4, interval=1000")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the vertex and edge hashes")
    p.add_argument("--hash", choices=("jenkins", "uniform"), default="jenkins",
                   help="jenkins: PowerGraph's hashes (bit-compatible at seed 0); uniform: splitmix64")
    p.add_argument("--homogeneous", action="store_true",
                   help="both columns are ids of ONE vertex set (a directed graph) instead of two types; "
                        "bicut and aweto need two types and are skipped")
    p.add_argument("--powerlaw", type=integer(1, 1 << 30), metavar="N",
                   help="instead of INPUT, generate PowerGraph's power-law graph on N vertices (homogeneous)")
    p.add_argument("--alpha", type=POSITIVE, default=2.1, help="power-law exponent for --powerlaw")
    p.add_argument("--out-degree", action="store_true",
                   help="--powerlaw with Zipf out-degree (default: Zipf in-degree, PowerLyra's model)")
    p.add_argument("--json", action="store_true", help="one JSON object per strategy instead of a table")
    p.add_argument("--save", metavar="DIR", help="write each assignment to DIR/<strategy>.npz "
                                                 "(edge_part, master_<type>, and for INPUT ids_<type>: the "
                                                 "file's id of each vertex, vertices with edges only)")
    p.set_defaults(func=run, prints=lambda args: None if args.save else "tux2 partition prints its reports there "
                   "(--save DIR writes the assignments to files)")


BALANCE_WARNING = 1.5


def _balance_hint(name, given):
    """The option that trades replicas for balance in strategy ``name``, given the
    options ``given`` to it (a hint never suggests the setting that was just used)."""
    if name in ("bicut", "aweto") and given.get("favorite", "auto") not in ("auto", None):
        other = "src" if given["favorite"] in (1, "dst", "target") else "dst"
        return (f"favorite={given['favorite']} was given: try --option favorite={other}, or --strategy random "
                "(a power-law favourite side cannot be balanced by keeping its vertices whole)")
    if name == "hdrf" and "lam" in given:
        higher = max(2, 2 * given["lam"]) if isinstance(given["lam"], (int, float)) else 2
        return f"raise its balance weight lam above the given {given['lam']} (e.g. --option lam={higher:g})"
    return {"hdrf": "raise its balance weight lam above 1 (the default 1.1; e.g. --option lam=2)",
            "greedy": "use --strategy hdrf, whose lam option weighs balance",
            "hybrid": "lower --option theta (fewer low-degree vertices keep all their in-edges together)",
            "ginger": "lower --option theta",
            "bicut": "use --option favorite=dst (or src) to keep the other side whole, or --strategy random",
            "aweto": "use --option favorite=dst (or src), or --strategy random",
            "random": "random placement balances a part's edges only on average: with few edges per part, "
                      "try --strategy hdrf",
            }.get(name, "a power-law graph with few parts may not balance under this strategy; try --strategy "
                        "random or hdrf")


def _value(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def _options(pairs, strategies):
    """{strategy: the --option KEY=VALUE pairs it takes}; a key none of them takes is an error."""
    takes = {name: inspect.signature(partitioning.get(name).core).parameters for name in strategies}
    opts = {}
    for pair in pairs:
        k, eq, v = pair.partition("=")
        if not eq or not k.strip():
            raise PartitionError(f"--option expects KEY=VALUE, got {pair!r}")
        opts[k.strip()] = _value(v.strip())
    unused = set(opts).difference(*takes.values())
    if unused:
        raise PartitionError(f"option(s) {', '.join(sorted(unused))} are not taken by any of: "
                             f"{', '.join(strategies)}")
    return {name: {k: v for k, v in opts.items() if k in takes[name]} for name in strategies}


def run(args):
    check_writable(args.save, "--save", directory=True)
    user_ids = None
    if args.powerlaw and args.input:
        raise PartitionError(f"give an INPUT edge list or --powerlaw N, not both ({args.input} and "
                        f"--powerlaw {args.powerlaw})")
    if args.powerlaw:
        from tux2.partitioning.powerlaw import powerlaw_graph
        refuse_read_flags(args, "--powerlaw generates the graph")
        src, dst = powerlaw_graph(args.powerlaw, args.alpha, in_degree=not args.out_degree, seed=args.seed)
        n_src, n_dst, names = args.powerlaw, None, ("vertex",)
        what = f"power-law graph n={args.powerlaw} α={args.alpha}"
    elif args.input:
        spool_inputs(args)
        g = load_edges(args.input, ids=args.ids, duplicates="keep", dense=True,     # repeated edges placed like others
                       **input_options(args))
        what = display_name(args.input)
        # only vertices with edges are placed and counted: ids are renumbered densely over them
        if args.homogeneous:        # one vertex set: the two columns' ids as the file has them, in one space
            ends = [m.decode(a) if m is not None else a for a, m in zip((g.src, g.dst), g.ids)]
            kept, both = np.unique(np.concatenate(ends), return_inverse=True)
            src, dst = both[:g.num_edges], both[g.num_edges:]
            n_src, n_dst, names, user_ids = len(kept), None, ("vertex",), [kept]
        else:
            kept = [np.unique(a) for a in (g.src, g.dst)]
            src, dst = np.searchsorted(kept[0], g.src), np.searchsorted(kept[1], g.dst)
            n_src, n_dst, names = len(kept[0]), len(kept[1]), ("src", "dst")
            user_ids = [m.decode(k) if m is not None else k for k, m in zip(kept, g.ids)]
    else:
        raise PartitionError("give an INPUT edge list or --powerlaw N")
    strategies = args.strategies or [s for s in partitioning.available()
                                     if not (n_dst is None and partitioning.get(s).bipartite_only)]
    opts = _options(args.option, strategies)
    reports = []
    for name in strategies:
        a = partitioning.partition(name, src, dst, n_src, n_dst, args.parts, seed=args.seed,
                                   hash=args.hash, **opts[name])
        rep = partitioning.quality(a, src, dst, n_src, n_dst, type_names=names)
        rep["input"] = what
        reports.append(rep)
        if args.json:
            print(json_text(rep), flush=True)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            np.savez(os.path.join(args.save, f"{name}.npz"), edge_part=a.edge_part,
                     **{f"master_{t}": m for t, m in zip(names, a.master)},
                     **({f"ids_{t}": i for t, i in zip(names, user_ids)} if user_ids is not None else {}))
    if not args.json:
        print(f"{what}: {n_src + (n_dst or 0):,} vertices, {len(src):,} edges, {args.parts} parts")
        print(partitioning.format_table(reports))
    for rep in reports:
        if rep["edge_balance"] > BALANCE_WARNING:
            print(f"tux2: warning: {rep['strategy']} puts {rep['edge_balance']:.2f}x the mean edge count on one "
                  f"part (edge balance > {BALANCE_WARNING}): {_balance_hint(rep['strategy'], opts[rep['strategy']])}", file=sys.stderr)
    sys.stdout.flush()
    return 0
