"""``tux2 run lda [INPUT]``: LDA by collapsed Gibbs sampling (SparseLDA) on a corpus."""
import numpy as np

from tux2.cli.common import (COUNT, NONNEG, PRIOR, SEED,
                             run as run_command, add_run_args, add_partition_args)
from tux2.estimators.lda import LDA
from tux2.graph import BipartiteGraph
from tux2.runner import Dataset

def add_parser(algos):
    p = algos.add_parser(
        "lda", help="topic model: LDA by collapsed Gibbs sampling (SparseLDA, paper §4)",
        description="Latent Dirichlet allocation on a document-word graph. INPUT is 'doc word count' "
                    "triples (0-based ids), a UCI bag-of-words docword file (3-line header D, W, NNZ; "
                    "1-based ids), plain text with one document per line, or a CSV/TSV file with a header, "
                    "one document per row in its text column. Without INPUT a corpus is "
                    "drawn from a planted 20-topic model (2000 documents, ~200k tokens).")
    p.add_argument("input", nargs="?", help="corpus file; default: built-in planted corpus")
    p.add_argument("--format", choices=LDA.choices["format"], default="auto",
                   help="input format; auto: docword when the file starts with three single-integer "
                        "lines, triples when every line is three numbers, csv when line 1 is a header "
                        "naming a text column (text, body, content, …), text otherwise")
    p.add_argument("--text-column", metavar="NAME|N", help="a CSV or TSV corpus: its text column, by header name or "
                   "1-based position, when it is not named text, body, content, …")
    p.add_argument("--vocab", help="vocabulary file, one word per line (line i = word id i, or i+1 for "
                                   "docword), used to print topics as words")
    p.add_argument("--base", type=int, choices=LDA.choices["base"], default=None,
                   help="id base of triples (default 0; 1 under a MatrixMarket header)")
    p.add_argument("--min-count", type=COUNT, default=1, help="text input: drop words seen fewer times")
    p.add_argument("--stop-words", default="english", metavar="english|none|FILE",
                   help="text input: words to drop, 'english' (the, of, and, … which would fill the topics), "
                        "'none', or a file of words (instead of the English ones: put them in the file too "
                        "to drop both)")
    p.add_argument("--numbers", choices=LDA.choices["numbers"], default="drop",
                   help="text input: tokens of digits only or of one character ('2', 'x'): drop them, as "
                        "scikit-learn's token pattern drops one-character tokens and MALLET's keeps letters only, "
                        "or keep them")
    p.add_argument("--max-df", type=LDA.bounds["max_df"], default=1.0,
                   help="text input: drop words in more than this share of the documents (0.5; gensim's "
                        "no_above), or in more than this many of them (an integer >= 2, 1000; '1.0' keeps all), as "
                        "scikit-learn's max_df")
    p.add_argument("--duplicates", choices=LDA.choices["duplicates"], default="sum",
                   help="a (doc, word) pair on several lines of a docword or triples file: add the counts, "
                        "stop naming both lines, keep the last, or keep all")
    p.add_argument("--topics", "-k", type=LDA.bounds["topics"], default=20, help="number of topics K")
    p.add_argument("--alpha", type=PRIOR, default=0.1, help="symmetric document-topic prior α")
    p.add_argument("--optimize-interval", type=NONNEG, default=0, metavar="N",
                   help="learn an asymmetric α (Minka's fixed point, as MALLET's option of this name) after every "
                        "N-th iteration; 0: keep the symmetric --alpha")
    p.add_argument("--optimize-burn-in", type=NONNEG, default=0, metavar="N",
                   help="with --optimize-interval: iterations before α is first learnt")
    p.add_argument("--beta", type=PRIOR, default=0.01, help="symmetric topic-word prior β")
    p.add_argument("--iterations", type=NONNEG, default=100, help="Gibbs sweeps over all tokens")
    p.add_argument("--sampler", choices=LDA.choices["sampler"], default="sparse",
                   help="sparse: SparseLDA with counts updated token by token (fast); sync: every token "
                        "drawn from the counts of the sweep's start, the same for any partitioning")
    p.add_argument("--blocks", type=LDA.bounds["blocks"], default=None,
                   help="the sparse sampler's tiles: an iteration is B strata of B tiles (DSGD's schedule), the "
                        "tiles of a stratum sharing no document and no word, so partitions, workers and threads up "
                        "to B give the one-thread model bit for bit (default 8, or the partitions if more); 0: "
                        "untiled (one clock an iteration; on several partitions, replicas combined 8 times an "
                        "iteration)")
    add_partition_args(p, default=None, note=" (default: stratified, which the tiles need on several partitions; "
                                            "bicut with --blocks 0, keeping documents mirror-free)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the initial topics and the sampler")
    p.add_argument("--top-words", type=COUNT, default=10, help="words per topic in topics.txt and the summary")
    add_run_args(p, "directory for lda.npz (word-topic, doc-topic counts), topics.txt, vocab.txt, model.json",
                    "iteration")
    p.add_argument("--init-model", metavar="DIR",
                   help="start from the LDA model in DIR (--out of an earlier run): the tokens of the words it "
                        "learned take their first topics from its topics, the others at random, and topics keep "
                        "their numbers; --topics is the model's (given, it must be) (warm start, to train on more "
                        "documents or for more iterations)")
    p.set_defaults(func=run)


def run(args):
    if args.init_model and "topics" not in args.given:      # --topics defaults to the model's
        from tux2.model_check import read_meta
        k = read_meta(args.init_model).get("topics")
        args.topics = k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else args.topics
    return run_command(args, LDA, load, after=more_topics)


def load(args, est, transport, say):
    """INPUT, or the built-in planted corpus."""
    if args.input is not None:
        return est.load_data(args.input)
    from tux2.datacache import generated
    from tux2.datasets import lda_corpus
    d, w, c, phi = generated(lda_corpus, n_docs=2000, n_words=5000, n_topics=20, doc_length=100, seed=args.seed)
    g = BipartiteGraph(d, w, c.astype(np.float64), 2000, phi.shape[1], ("doc", "word"), "lda_corpus")
    return Dataset(g, format="built-in", source="built-in planted corpus (2000 documents, 20 topics, "
                                                 "Dir(0.1)/Dir(0.01), ~100 tokens each)")


def more_topics(args, est, say):
    if args.topics > 10:
        say(f"  … {args.topics - 10} more topics" + (" in topics.txt" if args.out else " (use --out)"))
