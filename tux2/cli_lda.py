"""``tux2 run lda [INPUT]``: LDA by collapsed Gibbs sampling (SparseLDA) on a corpus."""
import time

import numpy as np

import tux2
from tux2.errors import InputError, Tux2Error

FORMATS = ("auto", "triples", "docword", "text")


def add_parser(algos):
    from tux2.cli import (COUNT, NONNEG, POSITIVE, SEED, HelpFormatter, add_checkpoint_args, add_distributed_args,
                          add_output_args, add_partition_args, integer)
    p = algos.add_parser(
        "lda", help="topic model: LDA by collapsed Gibbs sampling (SparseLDA, paper §4)",
        formatter_class=HelpFormatter,
        description="Latent Dirichlet allocation on a document-word graph. INPUT is 'doc word count' "
                    "triples (0-based ids), a UCI bag-of-words docword file (3-line header D, W, NNZ; "
                    "1-based ids) or plain text with one document per line. Without INPUT a corpus is "
                    "drawn from a planted 20-topic model (2000 documents, ~200k tokens).")
    p.add_argument("input", nargs="?", help="corpus file; default: built-in planted corpus")
    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="input format; auto: docword when the file starts with three single-integer "
                        "lines, triples when every line is three numbers, text otherwise")
    p.add_argument("--vocab", help="vocabulary file, one word per line (line i = word id i, or i+1 for "
                                   "docword), used to print topics as words")
    p.add_argument("--base", type=int, choices=(0, 1), default=None,
                   help="id base of triples (default 0; 1 under a MatrixMarket header)")
    p.add_argument("--min-count", type=COUNT, default=1, help="text input: drop words seen fewer times")
    p.add_argument("--duplicates", choices=("sum", "error", "last", "keep"), default="sum",
                   help="a (doc, word) pair on several lines of a docword or triples file: add the counts, "
                        "stop naming both lines, keep the last, or keep all")
    p.add_argument("--topics", "-k", type=integer(1, 32767), default=20, help="number of topics K")
    p.add_argument("--alpha", type=POSITIVE, default=0.1, help="symmetric document-topic prior α")
    p.add_argument("--beta", type=POSITIVE, default=0.01, help="symmetric topic-word prior β")
    p.add_argument("--iterations", type=NONNEG, default=100, help="Gibbs sweeps over all tokens")
    p.add_argument("--sampler", choices=("sparse", "sync"), default="sparse",
                   help="sparse: SparseLDA with counts updated token by token (fast); sync: every token "
                        "drawn from the counts of the sweep's start, the same for any partitioning")
    add_partition_args(p, mirror_free="documents")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the initial topics and the sampler")
    p.add_argument("--top-words", type=NONNEG, default=10, help="words per topic in topics.txt and the summary")
    add_output_args(p, "directory for lda.npz (word-topic, doc-topic counts), topics.txt, vocab.txt, model.json",
                    "iteration")
    add_checkpoint_args(p, "iteration")
    add_distributed_args(p)
    p.set_defaults(func=run_lda)


def load_corpus(path, fmt="auto", vocab=None, base=None, min_count=1, duplicates="sum"):
    """(graph of doc-word token counts, vocabulary list or None, format used)."""
    from tux2 import loaders
    g, words, fmt = loaders.load_corpus(path, fmt, base=base, min_count=min_count, duplicates=duplicates)
    if fmt == "text":
        return g, words, fmt
    words = None
    if vocab:
        try:
            with open(vocab, encoding="utf-8") as f:
                words = [line.strip() for line in f]
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read vocabulary: {e}", path=vocab) from None
        while words and not words[-1]:
            words.pop()
        if len(words) < g.n_dst:
            raise InputError(f"vocabulary has {len(words)} words but the corpus uses word ids up to "
                             f"{g.n_dst - 1}", path=vocab)
    return g, words, fmt


def top_words(word_topic, n, vocab=None):
    """Per topic, the ``n`` most frequent (word, count) pairs, most frequent first."""
    out = []
    for row in word_topic:
        idx = np.argsort(-row, kind="stable")[:n]
        out.append([(vocab[i] if vocab is not None else str(i), int(row[i])) for i in idx if row[i] > 0])
    return out


def run_lda(args):
    from tux2.cli import run_distributed
    return run_distributed(args, _run_lda)


def _run_lda(args, transport, rank, world):
    from tux2.cli import check_partitions, epoch_loop, favorite_first, partitions, record_epoch, speaker, write_trace
    from tux2.udfs import lda
    say = speaker(args, rank)
    if args.topics < 1:
        raise Tux2Error(f"--topics must be >= 1, got {args.topics}")
    if args.alpha <= 0 or args.beta <= 0:
        raise Tux2Error("--alpha and --beta must be positive")
    parts = partitions(args, world)
    if args.input is None:
        from tux2.datasets import lda_corpus
        d, w, c, phi = lda_corpus(n_docs=2000, n_words=5000, n_topics=20, doc_length=100, seed=args.seed)
        g = tux2.BipartiteGraph(d, w, c.astype(np.float64), 2000, phi.shape[1], ("doc", "word"), "lda_corpus")
        vocab, fmt = None, "built-in"
        source = "built-in planted corpus (2000 documents, 20 topics, Dir(0.1)/Dir(0.01), ~100 tokens each)"
    else:
        g, vocab, fmt = load_corpus(args.input, args.format, args.vocab, args.base, args.min_count, args.duplicates)
        source = args.input
    src, dst, cnt = lda.token_edges(g.src, g.dst, g.values.astype(np.int64))
    tokens = int(cnt.sum())
    D, V, K = g.n_src, g.n_dst, args.topics
    prog = lda.program(src, dst, cnt, D, V, K=K, alpha=args.alpha, beta=args.beta, seed=args.seed,
                       sampler=args.sampler)
    graph = tux2.BipartiteGraph(src, dst, None, D, V, ("doc", "word"), source)
    say(f"tux2 {tux2.__version__} lda ({args.sampler}): {source}" + (f" [{fmt}]" if args.input else ""))
    say(f"  {D} documents, {V} words, {tokens} tokens; K={K}, α={args.alpha}, β={args.beta}, "
        f"P={parts} ({args.partitioner})" + (f", {world} workers" if world > 1 else ""))
    check_partitions(args, graph.num_edges)
    t0 = time.perf_counter()
    eng = tux2.Engine(prog, graph, partitions=parts, partitioner=args.partitioner, seed=args.seed,
                      partitioner_options=favorite_first(args.partitioner), transport=transport, slack=args.slack,
                      threads=args.threads)
    say(f"  layout + compile {time.perf_counter() - t0:.2f}s")
    with epoch_loop(args, eng, transport, rank, say, args.iterations, "iteration") as (ck, write_metrics, iterations):
        for it, dt, total, comm in iterations:
            ctx = eng.context()
            rec = {"iteration": it, "time_s": round(dt, 6), "total_time_s": round(total, 6),
                   "ll": float(ctx["ll"]), "ll_per_token": float(ctx["ll_per_token"]), "clock": eng.clock,
                   "tokens_per_s": tokens / dt if dt > 0 else None, **comm}
            say(f"iteration {it:4d}/{args.iterations}  ll/token {rec['ll_per_token']:.4f}  time {dt:.3f}s  "
                f"({tokens / dt / 1e6:.1f} M tokens/s)")
            record_epoch(write_metrics, ck, it, rec, rec["ll"],
                         f"the log-likelihood is not finite at iteration {it} (ll {rec['ll']})")
    write_trace(args.trace, eng, rank)
    docs, words = eng.vertex_data("doc"), eng.vertex_data("word")        # gathered on rank 0
    if rank != 0:
        return 0
    word_topic = lda.topic_word(words)
    tops = top_words(word_topic, args.top_words, vocab)
    lines = [f"topic {k:3d} ({int(word_topic[k].sum())} tokens): " + " ".join(w for w, _ in ws)
             for k, ws in enumerate(tops)]
    for line in lines[:10]:
        say(line)
    if len(lines) > 10:
        say(f"  … {len(lines) - 10} more topics" + (" in topics.txt" if args.out else " (use --out)"))
    if args.out:
        from tux2.cli import save_model
        ctx = eng.context()
        from tux2.files import npz, text
        topics = "".join(f"{k}\t{int(word_topic[k].sum())}\t" + " ".join(f"{w}:{n}" for w, n in ws) + "\n"
                         for k, ws in enumerate(tops))
        extra = {"lda.npz": npz({"word_topic": word_topic, "doc_topic": np.ascontiguousarray(docs["nk"]),
                                 "topic_totals": np.asarray(ctx["nk"])}),
                 "topics.txt": text(topics)}
        if vocab is not None:
            extra["vocab.txt"] = text("".join(w + "\n" for w in vocab))
        save_model(args.out, eng, {"algorithm": "lda", "sampler": args.sampler, "topics": K, "alpha": args.alpha,
                                   "beta": args.beta, "iterations": args.iterations, "seed": args.seed,
                                   "documents": D, "words": V, "tokens": tokens, "format": fmt,
                                   "partitions": parts, "workers": world, "partitioner": args.partitioner,
                                   "input": source, "ll_per_token": float(ctx["ll_per_token"])},
                   datas=[docs, words], summary=say.lines, extra=extra)
        say(f"model written to {args.out}")
    return 0
