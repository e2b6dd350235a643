"""``tux2 info INPUT``: what a data file holds before training on it — counts, degree
statistics, id ranges, duplicate edges, values or labels, and the likely id base."""
import os

import numpy as np

from tux2 import io, loaders, tables
from tux2.cli.common import add_input_args, input_options, note_first_read, spool_inputs
from tux2.errors import InputError
from tux2.files import json_text
from tux2.loaders import ID_MODES, amazon_order, layout_phrases, pair_key, renumbered
from tux2.stopwords import ENGLISH


FORMATS = ("auto", "edges", "libsvm", "table", "docword", "triples", "text")


def add_parser(sub):
    p = sub.add_parser("info", help="describe an input file: counts, degrees, id ranges, duplicates",
                       description="Reads INPUT as 'tux2 run' would and reports the number of edges and vertices "
                                   "per side, degree statistics (min, median, mean, 99th percentile, max, the "
                                   "share of edges at the top 1% of vertices), id ranges and ids without edges, "
                                   "duplicate edges, the values (or libsvm labels), and hints such as an id base "
                                   "that looks wrong. Bad lines are reported with file:line, as in training.")
    p.add_argument("input", help="edge list, libsvm, a table of samples (CSV …), UCI docword, 'doc word count' "
                                 "triples or text corpus "
                                 "(gzip, bz2 or xz; '-' for standard input)")
    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="auto: libsvm when lines hold index:value pairs, docword with its 3-line header, a table "
                        "of samples for the linear models when numbers fill 5 columns or more (or non-integers the "
                        "first two), an edge list when every line has two ids and a number (or nothing) third, as "
                        "'tux2 run mf' reads it, else a text corpus")
    p.add_argument("--label-column", metavar="N|NAME|first|last", help="a table: as in tux2 run lr")
    p.add_argument("--text-column", metavar="NAME|N", help="a CSV or TSV corpus: as in tux2 run lda")
    p.add_argument("--ids", choices=ID_MODES, default="auto", help="edge lists: as in tux2 run")
    add_input_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=info, prints=lambda args: "tux2 info prints its report there")


def degree_stats(deg):
    """Statistics of the vertices' degrees (vertices with at least one edge)."""
    d = deg[deg > 0]
    if not len(d):
        return {"vertices_with_edges": 0}
    top = np.sort(d)[::-1][: max(1, len(d) // 100)]
    return {"vertices_with_edges": int(len(d)), "min": int(d.min()), "median": float(np.median(d)),
            "mean": float(d.mean()), "p99": float(np.percentile(d, 99)), "max": int(d.max()),
            "top1pct_edge_share": float(top.sum() / d.sum())}


def describe(g, kind, labels=None):
    """The report of a loaded graph, as a dict."""
    out = {"format": kind, "edges": int(g.num_edges)}
    hints = []
    for side, (name, ids, n, m) in enumerate(zip(g.type_names, (g.src, g.dst), g.n, g.ids)):
        deg = np.bincount(ids, minlength=n)
        rec = {"ids_declared": int(n), **degree_stats(deg), "ids_without_edges": int((deg == 0).sum())}
        if m is None or m.tokens.dtype.kind in "iu":           # numbers (a 1-based file's map: 1 … n)
            used = m.tokens[np.flatnonzero(deg)] if m is not None else np.flatnonzero(deg) + g.base
            rec["id_range"] = [int(used.min()), int(used.max())] if len(used) else None
            if renumbered(m):
                hints.append(f"{name} ids numbered densely, as tux2 run mf numbers them ({renumbered(m)})")
        else:
            rec["id_kind"] = "string"
            rec["first_ids"] = [str(x) for x in m.tokens[:3]]
        out[name] = rec
    if g.base and kind == "docword":
        hints.append("ids 1-based (docword)")
    elif g.base:
        hints.append("ids read as 1-based (" + ("MatrixMarket" if g.layout is not None and g.layout.matrix_market
                                                 else "auto: no id 0 on either side; --base 0 reads them as "
                                                      "0-based") + ")")
    if layout_phrases(g):
        out["read_as"] = "; ".join(layout_phrases(g))
    if amazon_order(g):
        hints.append(amazon_order(g))
    if g.num_edges:
        key = pair_key(g.src, g.dst, g.n_dst)
        uniq, counts = np.unique(key, return_counts=True)
        dup = counts[counts > 1]
        out["duplicate_pairs"] = int(len(dup))
        out["duplicate_edges"] = int((dup - 1).sum())
        if len(dup):
            k = int(uniq[np.argmax(counts > 1)])
            out["duplicate_example"] = [_name(g, 0, k // max(g.n_dst, 1)), _name(g, 1, k % max(g.n_dst, 1))]
            hints.append(f"{out['duplicate_edges']} duplicate edges: training stops on them unless "
                         "--duplicates sum, last or keep is given")
    if g.values is not None and g.num_edges:
        v = g.values             # float32 from files: the moments are taken in float64 (no overflow near ±3.4e38)
        scale = float(np.abs(v).max()) or 1.0       # libsvm's float64 values: 1e300 squared would overflow
        # min and max as the file writes them (str: float32's shortest digits, not 10.371100425720215)
        vals = {"min": float(str(v.min())), "max": float(str(v.max())), "mean": float(v.mean(dtype=np.float64)),
                "std": scale * float((v / scale).std(dtype=np.float64))}
        distinct, counts = np.unique(v, return_counts=True)
        if len(distinct) <= 20:
            vals["histogram"] = {f"{x:g}": int(c) for x, c in zip(distinct, counts)}
        out["values"] = vals
    if labels is not None:
        lv, lc = np.unique(labels, return_counts=True)
        out["labels"] = {(str(x) if isinstance(x, str) else f"{x:g}"): int(c) for x, c in zip(lv[:50], lc[:50])}
        if len(lv) > 50:
            out["labels_distinct"] = int(len(lv))
    out["density"] = float(g.num_edges / max(g.n_src * g.n_dst, 1))
    out["hints"] = hints
    return out


def _name(g, side, i):
    m = g.ids[side]
    return int(i) if m is None else m.tokens[i].item() if m.tokens.dtype.kind in "iu" else str(m.tokens[i])


def report_samples_table(path, given, args, fmt, hint):
    """tux2 info of a ``tables.samples_table``: its samples and columns, what tux2 run lr says of it,
    and how the edge reader (tux2 run mf) would read it."""
    lines = 0
    with open(path, "rb") as f:
        f.seek(fmt.start)
        for line in f:
            lines += bool(line.strip())
    names = fmt.names
    cs, cd, cv = fmt.cols
    cols = [cs, cd] + ([2 if cv == io.OPTIONAL else cv] if cv != io.NONE else [])
    res = {"input": io.display_name(path), "bytes": os.path.getsize(path), "format": "table", "samples": lines,
           "columns": len(names), "header": names,
           "read_as": f"{fmt.sep}-separated, header {','.join(names)}",
           "hints": [hint, "tux2 run mf would read columns " + ", ".join(f"{c + 1} ({names[c]!r})" for c in cols)
                     + " as user, item and rating: --format edges (--columns) describes it so"]}
    if path != given and os.path.isfile(given):
        res["compressed_bytes"] = os.path.getsize(given)
    if args.json:
        print(json_text(res))
        return 0
    print(f"{res['input']}: table, {res['bytes'] / 1e6:.1f} MB, {lines} samples × {len(names)} columns")
    print(f"  read as: {res['read_as']}")
    for h in res["hints"]:
        print(f"  note: {h}")
    return 0


def info(args):
    if os.path.isdir(args.input) and os.path.isfile(os.path.join(args.input, "model.json")):
        raise InputError("a model directory: tux2 info describes data files; the model's summary.txt and "
                         f"model.json describe it, and 'tux2 predict {args.input} FILE' uses it", path=args.input)
    given = args.input
    spool_inputs(args)
    path = args.input
    kind = "csv" if args.text_column else io.sniff_input(path, args.columns) if args.format == "auto" else args.format
    if args.format == "auto" and args.columns is not None:
        kind = "edges"          # an edge list's columns: lines without them are named, not read as a corpus
    if args.format == "auto" and kind in ("edges", "text", "libsvm") and args.columns is None and (
            args.label_column is not None or tables.looks_like_table(io.read_head(path, "input"), path)):
        kind = "table"
    if args.format == "auto" and kind == "edges" and args.columns is None and args.label_column is None:
        words = tables.samples_table(io.read_head(path, "input"), path)
        if words is not None:
            return report_samples_table(path, given, args, *words)
    keys = io.json_keys(io.read_head(path, "input")) if kind == "text" else None
    if keys is not None:
        raise InputError(io.json_hint(path, keys), path=path)
    note_first_read(args, kind)
    if kind == "table":
        g, labels = loaders.load_libsvm(path, label_column=args.label_column)
        if g.layout is None:
            raise InputError("not a table of numbers (a sample per line, as many columns on each)", path=path)
        res = {**describe(g, kind, labels), "read_as": g.layout.describe()}
        res["hints"].append("the linear models read it: tux2 run lr, svm, softmax, fm or blockpg"
                            + ("" if args.label_column is None else f" with --label-column {args.label_column}"))
        if args.label_column is None and len(np.unique(labels)) > 20:
            res["hints"].append(f"the labels' column holds {len(np.unique(labels)):,} values: if they are in "
                                "another, --label-column N|NAME|last picks it")
    elif kind == "libsvm":
        g, labels = io.read_libsvm(path, zero_based=True, sparse=True)
        span = g.n_dst
        one = int(bool(g.num_edges) and g.dst.min() > 0)     # a 1-based file: training has no slot for index 0
        g, features = loaders.dense_features(g, one)     # hashed indices up to 2^24: described as the models read them
        res = describe(g, kind, labels)
        if g.num_edges:
            one = bool((features[0] if features is not None else g.dst.min()) > 0)
            name = g.type_names[1]
            res["feature_index_base"] = "1 (the libsvm default)" if one else "0 (index 0 occurs: tux2 run reads it so)"
            res[name]["ids_declared"] = span - one      # read 0-based: no feature 0 in a 1-based file
            res[name]["ids_without_edges"] = span - one - res[name]["vertices_with_edges"]
            res["density"] = g.num_edges / max(g.n_src * (span - one), 1)
            if features is not None:
                res["hints"] = [h for h in res["hints"] if not h.startswith(f"{name} ids numbered densely")] + [
                    f"feature indices sparse ({len(features):,} distinct of {features[0]} … {features[-1]}): the "
                    "linear models (tux2 run lr, svm, softmax, fm, linreg, blockpg) number them densely, a model "
                    "row per feature that occurs"]
        elif g.n_src:
            res["hints"].append("no features: every line has a label but no index:value pairs (tux2 run lr, svm, "
                                "softmax, fm, linreg and blockpg stop on it)")
    elif kind in ("docword", "triples", "text", "csv"):
        # a sniffed text file is read as run lda reads it: a CSV header is no document
        g, vocab, kind = loaders.load_corpus(path, args.format, duplicates="keep",
                                             text_column=args.text_column)
        res = describe(g, kind)
        if vocab is not None:
            stop_word = np.isin(np.array(vocab, dtype=object), list(ENGLISH))
            res["vocabulary"] = len(vocab)
            res["vocabulary_without_english_stop_words"] = len(vocab) - int(stop_word.sum())
            number = ~stop_word & ~np.fromiter(map(io.is_word, vocab), bool, len(vocab))
            res["vocabulary_numbers_or_one_character"] = int(number.sum())      # tux2 run lda drops them too
            stop = stop_word[g.dst]
            tokens = float(g.values.sum()) if g.num_edges else 0.0
            res["english_stop_word_tokens"] = int(g.values[stop].sum())
            res["tokens"] = int(tokens)
    else:
        g = loaders.load_edges(path, ids=args.ids, duplicates="keep", dense=True, **input_options(args))
        res = describe(g, "edges")
    res = {"input": io.display_name(path), "bytes": os.path.getsize(path), **res}
    if path != given and os.path.isfile(given):     # compressed: the file's size, and what it holds
        res["compressed_bytes"] = os.path.getsize(given)
    if args.json:
        print(json_text(res))
        return 0
    size = f"{res['bytes'] / 1e6:.1f} MB" if "compressed_bytes" not in res else \
        f"{res['compressed_bytes'] / 1e6:.1f} MB ({res['bytes'] / 1e6:.1f} MB decompressed)"
    print(f"{res['input']}: {res['format']}, {size}, {res['edges']} edges "
          f"(density {res['density']:.3g})")
    if "read_as" in res:
        print(f"  read as: {res['read_as']}")
    for name in g.type_names:
        r = res[name]
        rng = f"ids {r['id_range'][0]} … {r['id_range'][1]}" if r.get("id_range") else \
            (f"string ids ({', '.join(r['first_ids'])}, …)" if r.get("id_kind") else "")
        line = f"  {name}: {r['vertices_with_edges']} with edges of {r['ids_declared']}" + (f"; {rng}" if rng else "")
        if r["vertices_with_edges"]:
            line += (f"; degree min {r['min']} median {r['median']:g} mean {r['mean']:.2f} p99 {r['p99']:g} "
                     f"max {r['max']}; top 1% hold {100 * r['top1pct_edge_share']:.1f}% of edges")
        print(line)
    if "duplicate_pairs" in res:
        print(f"  duplicates: {res['duplicate_edges']} extra edges on {res['duplicate_pairs']} pairs"
              + (f" (e.g. {res['duplicate_example'][0]} {res['duplicate_example'][1]})" if res["duplicate_pairs"]
                 else ""))
    if "values" in res:
        v = res["values"]
        print(f"  values: min {v['min']:g} max {v['max']:g} mean {v['mean']:.4g} std {v['std']:.4g}"
              + (f"; counts {v['histogram']}" if "histogram" in v else ""))
    if "labels" in res:
        print(f"  labels: {res['labels']}" + (f" ({res['labels_distinct']} distinct)" if "labels_distinct" in res
                                              else ""))
    if "feature_index_base" in res:
        print(f"  feature index base: {res['feature_index_base']}")
    if "vocabulary" in res:
        n, kept, num = res["vocabulary"], res["vocabulary_without_english_stop_words"], \
            res["vocabulary_numbers_or_one_character"]
        dropped = " and ".join(([f"the {n - kept} English stop words"] if kept < n else [])
                               + ([f"{num} numbers or one-character words"] if num else []))
        print(f"  vocabulary: {n} words" + (f" (tux2 run lda: {kept - num}, without {dropped})" if dropped else ""))
    if res.get("english_stop_word_tokens"):
        print(f"  English stop words: {res['english_stop_word_tokens']} of {res['tokens']} tokens "
              f"({100 * res['english_stop_word_tokens'] / res['tokens']:.1f}%), which tux2 run lda drops "
              "(--stop-words none keeps them)")
    for h in res["hints"]:
        print(f"  note: {h}")
    return 0
