"""``tux2.LDA``: collapsed Gibbs LDA (tux2.udfs.lda) as an estimator: corpora in,
word–topic counts, top words and fold-in topic mixtures out."""
import os

import numpy as np

from tux2 import files, io, loaders
from tux2.errors import InputError, Tux2Error
from tux2.estimator import Estimator
from tux2.graph import BipartiteGraph
from tux2.params import COUNT, NONNEG, PRIOR, SEED, ShareOrCount, integer
from tux2.stopwords import stop_words
from tux2.runner import Dataset, Setup
from tux2.udfs import lda
from tux2.version import __version__


def _refuse_numeric_table(g, words, path):
    """A file sniffed as text whose every line is the same few numbers (a rating file,
    'user item rating timestamp') is a table, not documents: stop naming the formats."""
    lengths = np.bincount(g.src, g.values, minlength=g.n_src)
    if words and len(words) > 1 and all(w.isdigit() for w in words) and lengths.min() == lengths.max() <= 6:
        raise InputError(f"every line holds {int(lengths.max())} numbers: a table (a rating file?), not text; "
                         "LDA reads UCI docword, 'doc word count' triples (--format triples) or text with one "
                         "document per line (--format text reads this file as text anyway)", path=path)


DOCUMENT_FORMS = ("texts (strings, one a document), documents split into tokens (lists, tuples or arrays of strings), "
                  "a corpus file, or a document × word count matrix (scipy.sparse, a 2-D array of counts, a tuple "
                  "of (docs, words, counts) arrays)")


def _refuse_non_documents(data):
    """An error naming what LDA takes when ``data`` is in none of the forms of counts that
    ``loaders.load`` reads (a list of numbers is no corpus; texts and token lists are
    taken before)."""
    counts = (isinstance(data, BipartiteGraph) or isinstance(data, tuple) and len(data) in (2, 3)
              or isinstance(data, np.ndarray) and data.ndim == 2
              or type(data).__module__.split(".")[0] in ("scipy", "pandas", "networkx"))
    if counts:
        return
    if isinstance(data, np.ndarray):
        what = f"a {data.ndim}-D array of {data.dtype}"
    elif isinstance(data, (list, tuple)):
        kinds = list(dict.fromkeys(type(x).__name__ for x in data))
        what = f"a {type(data).__name__} of {', '.join(kinds[:3])}" + (" …" if len(kinds) > 3 else "")
    else:
        name = type(data).__name__
        what = "None" if data is None else f"a{'n' if name[0] in 'aeiou' else ''} {name}"
    raise InputError(f"{what}: LDA takes {DOCUMENT_FORMS}", path="documents")


def _counts(data, V=None):
    """A doc → word count graph of Python objects (a scipy.sparse matrix such as
    CountVectorizer's, ``(docs, words[, counts])`` arrays, a DataFrame): every value a
    token count and, for new documents (``V``), the columns the model's ``V`` words. A
    dense 2-D array (``X.toarray()``) counts as the matrix it is."""
    if isinstance(data, np.ndarray) and data.ndim == 2:
        import scipy.sparse as sp
        if data.dtype.kind not in "biuf":       # scipy's 'does not support dtype <U1'
            raise InputError(f"a 2-D array of {data.dtype} {data.shape}: LDA takes texts (a list or 1-D array, "
                             "one document each), documents split into tokens (a list of token lists, or a 2-D "
                             "array of str, a document a row) or a document × word count matrix", path="arrays")
        data = sp.csr_matrix(data)
    _refuse_non_documents(data)
    g = loaders.load(data, duplicates="sum")
    v = g.values if g.values is not None else np.ones(len(g.src))
    bad = np.flatnonzero((v < 1) | (v != np.floor(v)) | (v > io.MAX_COUNT))    # 2^40 allocated 2^40 tokens
    if len(bad):
        i = int(bad[0])
        raise InputError(f"the value at document {g.src[i]}, word {g.dst[i]} is {v[i]:g}, not a token count (a "
                         f"whole number from 1 to {io.MAX_COUNT}, as in a file): LDA samples tokens, so give it "
                         "counts (CountVectorizer's, not TfidfVectorizer's)", path=g.source)
    matrix = hasattr(data, "tocoo")                     # its width is the vocabulary's, not the largest word id's
    width = data.shape[1] if matrix else g.n_dst
    if V is not None and _word_names(g) is None and (width > V or (matrix and width != V)):
        raise InputError(f"the documents have {width} word columns but the model has {V} words: transform them "
                         "with the vectorizer (the vocabulary) the model was fitted on", path=g.source)
    return g


WORD_COLUMNS = ("word", "words", "token", "tokens", "term", "terms")


def _word_rows(df):
    """Whether a DataFrame is (doc, word[, count]) rows, read as such arrays: 2 or 3 columns,
    the second named as a word column (WORD_COLUMNS) and holding single words (strings
    without whitespace), the third not strings."""
    if getattr(df, "ndim", 0) != 2 or df.shape[1] not in (2, 3) or str(df.columns[1]).lower() not in WORD_COLUMNS:
        return False
    kinds = [t.kind for t in df.dtypes]
    if kinds[1] not in "OSU" or len(kinds) == 3 and kinds[2] in "OSU":
        return False
    return not df.iloc[:, 1].astype(str).str.contains(r"\s").any()


def _word_names(g):
    """The words of counts whose word column holds strings ((docs, words[, counts]) arrays,
    loaded as ``from_arrays`` numbers them, in sorted order): the corpus's vocabulary, as a
    text corpus's; None for numeric word ids."""
    m = g.ids[1]
    return None if m is None or m.tokens.dtype.kind not in "US" else [str(w) for w in m.tokens.tolist()]


WORD_ARRAYS = "arrays of words"     # the format of (docs, words[, counts]) arrays whose words are strings
COHERENCE_WORDS = 10    # the top words of a topic whose coherence fit reports (tomotopy's top_n default)


def _no_file(data, call):
    """A string that names no file: a document given as the corpus, most likely."""
    if isinstance(data, str) and data != "-" and not os.path.exists(data):
        raise InputError(f"no file {data[:60]!r}: {call} reads a string as a file's path; documents as text go in "
                         f"a list, one string each ({call}([text]), {call}(['apple pie', 'banana split']))",
                         path="documents")


class LDA(Estimator):
    """Latent Dirichlet allocation by collapsed Gibbs sampling (SparseLDA; paper §4).

    ``fit(data)``: texts (a list, a pandas Series), documents split into tokens (lists, tuples or
    arrays of strings; gensim's and tomotopy's input), either as a list or any iterable (a generator
    is read once, ``io.read_once``), a corpus file (UCI docword, 'doc word count'
    triples, text with one document per line, a CSV's text column under its header)
    or doc → word counts in any form ``tux2.loaders.load`` takes. Files are read as ``tux2 run lda`` reads them, with
    ``format``, ``vocab`` (a file, one word per line, or a list of the words, as a
    CountVectorizer's get_feature_names_out(): the names of numeric word ids),
    ``base``, ``min_count``, ``stop_words`` ('english', 'none', a file of words or a
    list; texts only), ``max_df`` (texts only: words in a larger share of the documents,
    a float, or in more documents than an integer ``max_df``, are dropped), ``numbers`` ('drop':
    tokens of digits only or of one character, '2', 'x', are dropped, texts only; or 'keep'),
    ``duplicates`` and ``text_column`` (a CSV's or DataFrame's text column by name or
    1-based position, when it is not named text, body, …). Learned: ``word_topic_``
    (K × V), ``doc_topic_`` (D × K), ``topic_totals_`` (K), ``alpha_`` (K: the document–topic prior, learnt every
    ``optimize_interval`` iterations past ``optimize_burn_in`` when that is > 0), ``vocab_`` (None for numeric word ids) and
    ``coherence_`` (K: each topic's UMass coherence on the training documents, ``coherence``), ``word_base_``
    (the id base of a numeric corpus file: 1 for docword, whose word ids
    topics and new documents then use). ``fit(data, test)``: held-out documents in a form
    ``fit`` takes, whose log-likelihood per token and perplexity under the final model (one
    fold-in, as ``score`` and ``tux2 predict``) the last record of ``history_`` holds.
    ``blocks`` B (default 8, or the partitions if more): the sparse sampler's tiles, B strata
    of B a sweep, so threads, partitions and workers give one model (``_schedule``); 0: untiled.
    ``partitioner``: default stratified (the tiles' own), bicut with ``blocks=0``.
    ``warm_start`` (``start_from(model)``, ``--init-model DIR``): the tokens of a word the model
    learned (by the word, or a numeric id in the file's numbering) take their first topics from the model's
    topics of that word, the others at random; the topics keep their numbers and the sampler goes on
    from there (to train on more documents, or for more iterations). α and β are this fit's."""

    algorithm = "lda"
    bounds = dict(topics=integer(1, 32767), iterations=NONNEG, alpha=PRIOR, beta=PRIOR, seed=SEED,
                  top_words=COUNT, min_count=COUNT, max_df=ShareOrCount(), optimize_interval=NONNEG,
                  optimize_burn_in=NONNEG, blocks=integer(0, 1024))
    choices = dict(sampler=("sparse", "sync"), format=("auto", "triples", "docword", "text", "csv"), base=(0, 1),
                   duplicates=loaders.DUPLICATES, numbers=("drop", "keep"))
    _unit, _iterations = "iteration", "iterations"
    _resumable = ("top_words",)
    _watch, _stop = "ll", "the log-likelihood is not finite at iteration {n} (ll {value})"

    def __init__(self, topics=20, iterations=100, alpha=0.1, beta=0.01, sampler="sparse", partitioner=None,
                 seed=0, top_words=10, format="auto", vocab=None, base=None, min_count=1, duplicates="sum",
                 stop_words="english", max_df=1.0, optimize_interval=0, optimize_burn_in=0, text_column=None,
                 numbers="drop", blocks=None, warm_start=False):
        self._keep(locals())

    def load_data(self, data, test=None):
        """The corpus as a doc → word count graph, with its vocabulary: a text
        corpus's own, or ``vocab`` (a file, one word per line) for numeric ids."""
        format, vocab, base, min_count, duplicates = self.format, self.vocab, self.base, self.min_count, self.duplicates
        words, filters = None, dict(min_count=min_count, stopwords=stop_words(self.stop_words), max_df=self.max_df)
        column = None
        data, test = io.read_once(data), io.read_once(test)      # a generator of documents: read once, here
        texts = io.as_texts(data, self.text_column)
        if texts is not None:                                   # [] is an empty corpus: text_docs says so
            (g, words), format = io.text_docs(texts, **filters), "text"
        elif isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
            _no_file(data, "fit")
            sniffed = format == "auto"
            g, words, format = loaders.load_corpus(data, format, base=base, duplicates=duplicates,
                                                   text_column=self.text_column, **filters)
            if format == "csv" and os.path.isfile(data):       # the header names the column read
                _, names, col, _ = io.csv_header(data, self.text_column)
                column = names[col]
            if sniffed and format == "text":
                _refuse_numeric_table(g, words, data)
                if data != "-" and io.sniff_input(data) == "libsvm":   # ('-' was read once, into the corpus)        # as tux2 info reads it: words would be '3', '1'
                    raise InputError("it looks like a libsvm file ('label index:value …'), not text: tux2 run lr, "
                                     "svm, softmax, fm or blockpg reads it (--format text reads it as text anyway)",
                                     path=data)
        elif (type(data).__module__.split(".")[0] == "pandas" and any(t.kind in "OSU" for t in data.dtypes)
              and not _word_rows(data)):
            raise InputError(f"a DataFrame with text (columns {', '.join(map(str, data.columns))}) and no column "
                             f"named {', '.join(io.TEXT_COLUMNS[:3])}, …: text_column='COLUMN' picks it (or pass the "
                             "texts, fit(df['COLUMN']); (doc, word[, count]) rows name their second column 'word')",
                             path="DataFrame")
        else:
            g, format = _counts(data), "arrays"
            words = _word_names(g)          # (docs, words) of strings: the words are the model's vocabulary
            format = "arrays" if words is None else WORD_ARRAYS
        where = data if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__") else None
        if format in ("text", "csv") and self.numbers == "drop":        # '1', 'x' (after the table check)
            g, words = io.drop_numbers(g, words)
            if not g.num_edges:
                raise InputError("every word is a number or one character long: --numbers keep (numbers='keep') "
                                 "keeps them", path=where)
        for flag, used in (("min-count", min_count > 1), ("max-df", io.is_count(self.max_df) or self.max_df < 1),
                           ("stop-words", self.stop_words not in ("english", "none", None)),
                           ("numbers", self.numbers == "keep")):   # a stop-words file: meant
            if used and format not in ("text", "csv"):           # read options the format has no use for: errors
                raise InputError(f"--{flag} ({flag.replace('-', '_')}=) filters the words of a text corpus, and "
                                 f"this one is {format}: drop those words before", path=where)
        if base is not None and format != "triples":
            raise InputError(f"--base (base=) is the id base of 'doc word count' triples, and this corpus is {format}"
                             + (" (1-based by the format)" if format == "docword" else ""), path=where)
        listed = vocab is not None and not isinstance(vocab, (str, bytes)) and not hasattr(vocab, "__fspath__")
        given = listed or bool(vocab)
        if words is not None and given:
            raise InputError(f"a vocabulary names numeric word ids, and this {'text ' * (format != WORD_ARRAYS)}corpus "
                             "has words of its own: leave out --vocab (vocab=)", path=None if listed else vocab)
        if words is None and listed:        # the words themselves (a CountVectorizer's get_feature_names_out())
            words = [str(w) for w in vocab]
            if len(words) < g.n_dst:
                raise InputError(f"vocab= lists {len(words)} words, and the corpus has word ids up to {g.n_dst - 1}: "
                                 "the vocabulary of another corpus or vectorizer?", path="vocab")
        elif words is None and vocab:
            one = "" if g.base or (g.dst == 0).any() else "; no word id 0 occurs: --base 1 (base=1) reads 1-based ids"
            words = io.read_words(vocab, g.n_dst, InputError,
                                  f"the corpus uses word ids up to {g.n_dst - 1 + g.base}{one}")
            if format == "docword" and len(words) != g.n_dst:     # UCI's vocab.NAME.txt has W lines
                raise InputError(f"vocabulary has {len(words)} words but the docword header says W = {g.n_dst}: "
                                 "the vocabulary of another corpus?", path=vocab)
        own = words is not None and self.stop_words not in ("english", "none", None)     # kept with the model
        data = Dataset(g, vocab=words, format=format, column=column, word_base=int(g.base) if words is None else 0,
                       stop=sorted(filters["stopwords"]) if own else None)
        data.test = None if test is None else self._held_out(test, data)
        return data

    def _held_out(self, docs, data):
        """Held-out documents in the training corpus's word ids, read as ``documents`` reads
        new ones (by a model of that corpus's vocabulary); not labels (a Pipeline's y)."""
        if io.as_texts(docs, self.text_column) is None and np.ndim(docs) == 1:     # (token lists are ragged)
            raise InputError(f"a held-out set of documents in a form fit takes (texts, a corpus file, a document "
                             f"× word count matrix …), not {np.asarray(docs).dtype} values (labels?): LDA learns "
                             "from the documents alone; leave y out", path="test")
        probe = type(self)(**self.get_params())
        probe._set(np.zeros((1, data.train.n_dst)), [0], data.vocab, None, data.facts["word_base"], None,
                   data.facts["stop"])
        probe.run_ = {"format": data.facts["format"]}
        g = probe.documents(docs)[0]
        if not g.num_edges:
            raise InputError("none of the held-out documents' words is in the training corpus", path="test")
        return g

    def tiled(self):
        return self.sampler == "sparse" and self.blocks != 0

    def _schedule(self, parts):
        """(blocks B, partitioner): the sparse sampler runs in B × B tiles (``lda.tiled_order``)
        on the stratified partitioner, so any partitions, workers and threads up to B give
        the one-thread model; ``blocks=0``: the untiled schedule (one clock an iteration on
        one partition, ``lda.CLOCKS`` mini-batches with replicas combined after each on several)."""
        if not self.tiled():
            return 0, self.partitioner or "bicut"
        blocks = self.blocks or max(lda.BLOCKS, parts)
        partitioner = self.partitioner or "stratified"
        if parts > 1 and partitioner != "stratified":
            raise Tux2Error(f"the tiled schedule needs --partitioner stratified (got {partitioner}): its parts own "
                            "whole row blocks, so a stratum's tiles share no document and no word; leave out "
                            "--partitioner, or use --blocks 0 (the untiled schedule) for other partitioners")
        if parts > blocks:
            raise Tux2Error(f"--blocks {blocks} for {parts} partitions: each partition owns whole row blocks; use "
                            f"--blocks {parts} or more")
        return blocks, partitioner

    def prepare(self, data, parts):
        g = data.train
        src, dst, cnt = lda.token_edges(g.src, g.dst, g.values.astype(np.int64))
        tokens = int(cnt.sum())
        blocks, partitioner = self._schedule(parts)
        doc_block = None
        engine = {"partitioner_options": {"favorite": 0} if partitioner in ("bicut", "aweto") else None}
        if blocks:
            order, strata, tiles, doc_block = lda.tiled_order(src, dst, g.n_src, g.n_dst, blocks, seed=self.seed)
            src, dst, cnt = src[order], dst[order], cnt[order]
            engine = {"strata": strata, "tiles": tiles, "partitioner_options": {"blocks": blocks}}
        warm = self._warm(data) if self._warms() else None
        prog = lda.program(src, dst, cnt, g.n_src, g.n_dst, K=self.topics, alpha=self.alpha, beta=self.beta,
                           seed=self.seed, sampler=self.sampler, optimize_interval=self.optimize_interval,
                           optimize_burn_in=self.optimize_burn_in, clocks=lda.CLOCKS if parts > 1 else 1,
                           doc_block=doc_block, word_topics=None if warm is None else warm[0])
        graph = BipartiteGraph(src, dst, None, g.n_src, g.n_dst, ("doc", "word"), data.source)
        fmt, base = data.facts.get("format"), int(data.facts.get("word_base", 0))
        return Setup(graph, prog, {"partitioner": partitioner, **engine},
                     tokens=tokens, vocab=data.vocab, source=data.source, format=fmt, word_base=base, test=data.test,
                     column=data.facts.get("column"),
                     warm=None if warm is None else warm[1:],
                     stop=data.facts.get("stop"), blocks=blocks, partitioner=partitioner,
                     meta={"documents": g.n_src, "words": g.n_dst, "tokens": tokens, "format": fmt,
                           "word_base": base})

    def _warms(self):
        """Whether this fit starts from the topics learned before (``warm_start``, ``--init-model``)."""
        return self.warm_start and "word_topic_" in vars(self)

    def _warm(self, data):
        """(corpus words × K weights of each word's first topics, words the model knew, words):
        for a word the model learned, p(topic | word) under it, (n_kw + β)(n_k + α_k)/(n_k + Vβ);
        a row of zeros for the others. Words are matched by themselves (text, a vocabulary) or
        by their id in the file's numbering (docword's 1-based ids too)."""
        K, old = self.word_topic_.shape
        if K != self.topics:
            raise Tux2Error(f"the model to start from has {K} topics and this fit {self.topics}: give it "
                            f"topics={K} (--topics {K})")
        n = data.train.n_dst
        if (self.vocab_ is None) != (data.vocab is None):
            raise Tux2Error("the model to start from has " + ("words" if self.vocab_ is not None else "numeric word "
                            "ids") + " and this corpus " + ("numeric word ids" if data.vocab is None else "words")
                            + ": a warm start matches words by themselves or ids by number (a vocabulary, --vocab, "
                            "names numeric ids)")
        if data.vocab is not None:
            at = {w: i for i, w in enumerate(self.vocab_)}
            rows = np.array([at.get(w, -1) for w in data.vocab], np.int64)
        else:
            rows = np.arange(n, dtype=np.int64) + int(data.facts.get("word_base", 0)) - self.word_base_
            rows[(rows < 0) | (rows >= old)] = -1
        have = rows >= 0
        if not have.any():
            shown = ", ".join(self.vocab_[:3]) if self.vocab_ is not None else f"ids {self.word_base_} …"
            raise Tux2Error(f"no word of this corpus is one the model to start from learned (its words: {shown} …): "
                            "start a new model (without --init-model; from Python: without start_from or warm_start)")
        nk = np.asarray(self.topic_totals_, np.float64)
        prior = (nk + np.asarray(self.alpha_, np.float64)) / (nk + old * self.beta)
        weights = np.zeros((n, K))
        weights[have] = (np.asarray(self.word_topic_, np.float64)[:, rows[have]].T + self.beta) * prior
        return weights, int(have.sum()), n

    def record(self, eng, s):
        ctx = eng.context()
        rec = {"ll": float(ctx["ll"]), "ll_per_token": float(ctx["ll_per_token"]), "alpha_sum": float(ctx["asum"])}
        words = eng.vertex_data("word") if eng.iteration == self.iterations else None
        c = None if words is None else lda.umass(lda.topic_word(words, self.topics), s.graph, COHERENCE_WORDS)
        s.coherence = c                                 # (read_model's, of the same words)
        if c is not None and lda.mean_umass(c) is not None:   # the final model's (read_model keeps it per topic)
            rec["coherence_umass"] = lda.mean_umass(c)
        if words is not None and s.test is not None:   # its held-out fit, one fold-in, as tux2 predict reports it
            K = self.topics
            ll = lda.fold_in(lda.topic_word(words, K), lda.topic_counts(ctx, K), s.test, ctx["alpha"][:K], self.beta)[1]
            per = ll / s.test.values.sum()
            rec.update(test_ll_per_token=float(per), test_perplexity=float(np.exp(-per)))
        return rec

    def _rates(self, s):
        return {"tokens_per_s": s.tokens}

    def _unused(self):
        return ([("optimize_burn_in", "--optimize-interval 0", None)] if self.optimize_interval == 0 else []) \
            + ([("blocks", "--sampler sync", "--sampler sparse")] if self.sampler == "sync" else [])

    def _header(self, s, parts, world):
        return [f"tux2 {__version__} lda ({self.sampler}): {s.source}"
                + (f" [{s.format}" + (f", text column '{s.column}'" if vars(s).get("column") else "") + "]"
                   if s.format not in (None, "built-in") else ""),
                f"  {s.graph.n_src} documents, {s.graph.n_dst} words, {s.tokens} tokens; K={self.topics}, "
                f"α={self.alpha}" + (f" (optimised every {self.optimize_interval} iterations)"
                                     if self.optimize_interval else "") + f", β={self.beta}, P={parts} ({s.partitioner}"
                + (f", {s.blocks}×{s.blocks} tiles" if s.blocks else "") + ")"
                + (f", {world} workers" if world > 1 else "")] + self._never_optimised() \
            + ([f"  started from the model learned before: {s.warm[0]} of {s.warm[1]} words take their first topics "
                "from its topics (the others at random)"] if s.warm else [])

    def _never_optimised(self):
        """A note when no iteration learns α: the first past the burn-in that is a multiple
        of the interval is beyond --iterations (the header says α is optimised)."""
        n, burn = self.optimize_interval, self.optimize_burn_in
        if not n or (burn // n + 1) * n <= self.iterations:
            return []
        return [f"  note: α is never learnt: the first iteration past --optimize-burn-in {burn} that --optimize-interval "
                f"{n} divides is {(burn // n + 1) * n}, beyond --iterations {self.iterations}"]

    def _line(self, rec, n):
        return (f"iteration {rec['iteration']:4d}/{n}  ll/token {rec['ll_per_token']:.4f}  "
                + (f"Σα {rec['alpha_sum']:.4g}  " if self.optimize_interval else "") + f"time {rec['time_s']:.3f}s  "
                f"({rec['tokens_per_s'] / 1e6:.1f} M tokens/s)")

    def read_model(self, eng, s):
        docs, words = eng.vertex_data("doc"), eng.vertex_data("word")        # gathered on rank 0
        if docs is not None:
            K, ctx = self.topics, eng.context()
            self._set(lda.topic_word(words, K), lda.topic_counts(ctx, K), s.vocab, lda.topic_counts(docs, K),
                      s.word_base, np.array(ctx["alpha"][:K]), s.stop)
            c = getattr(s, "coherence", None)
            self.coherence_ = c if c is not None and eng.iteration == self.iterations else \
                lda.umass(self.word_topic_, s.graph, COHERENCE_WORDS)

    @property
    def components_(self):
        """scikit-learn's name for the topic–word pseudo-counts (K × V): ``word_topic_``
        (add ``beta`` for the posterior's Dirichlet parameters)."""
        return self.word_topic_

    def get_feature_names_out(self, input_features=None):
        """The names of ``transform``'s columns, one per topic (``lda0`` …), as scikit-learn's
        transformers name theirs, for a Pipeline's or ColumnTransformer's output."""
        return np.array([f"lda{k}" for k in range(len(self.topic_totals_))], dtype=object)

    def _set(self, word_topic, totals, vocab, doc_topic=None, word_base=0, alpha=None, stop=None):
        self.word_topic_, self.topic_totals_ = np.asarray(word_topic), np.asarray(totals)
        self.alpha_ = np.full(len(totals), float(self.alpha)) if alpha is None else np.asarray(alpha, np.float64)
        self.vocab_ = list(vocab) if vocab is not None else None
        self.stop_words_ = list(stop) if stop is not None else None     # a file's or list's, as trained with
        self.doc_topic_, self.word_base_ = doc_topic, int(word_base)

    def _report(self, s):
        c = vars(self).get("coherence_")
        lines = [f"topic {k:3d} ({int(self.word_topic_[k].sum())} tokens"
                 + ("" if c is None else f", UMass {c[k]:.2f}" if not np.isnan(c[k]) else ", no UMass: <2 words")
                 + "): " + " ".join(w for w, _ in ws) for k, ws in enumerate(self.topic_words(self.top_words)[:10])]
        if c is None:
            return lines
        mean, n = lda.mean_umass(c), int((~np.isnan(c)).sum())
        of = f"the {len(c)} topics" if n == len(c) else f"the {n} of {len(c)} topics holding 2 words or more"
        return lines + [f"coherence (UMass): {mean:.4f}, the mean over {of} of their {COHERENCE_WORDS} most frequent "
                        "words in the training documents (closer to 0 is better)" if n else
                        "coherence (UMass): none, no topic holds 2 words (a pair to score)"]

    def coherence(self, docs=None, top_n=COHERENCE_WORDS):
        """Per topic, the UMass coherence of its ``top_n`` most frequent words (tomotopy's and
        gensim's ``u_mass``; closer to 0 is better) in documents (what ``transform`` takes),
        or, without ``docs``, in the training documents (``coherence_``, top 10 words). A
        topic holding fewer than 2 words (or ``top_n=1``) has no pair to score: NaN, which the
        mean fit reports (``tux2.udfs.lda.mean_umass``) leaves out; a pair whose second word
        no document holds scores 0, as in gensim."""
        if docs is None:
            if top_n != COHERENCE_WORDS or "coherence_" not in vars(self):
                raise ValueError("coherence() without documents is that of the training documents, kept for "
                                 f"their {COHERENCE_WORDS} most frequent words by fit: pass the documents to score")
            return self.coherence_
        if not isinstance(docs, BipartiteGraph):
            docs = self.documents(docs)[0]
        if not docs.n_src:
            raise ValueError("coherence: no documents to count the words' co-occurrences in")
        return lda.umass(self.word_topic_, docs, top_n)

    # ------------------------------------------------------------ files
    def _files(self):
        tops = self.topic_words(self.top_words)
        coh = vars(self).get("coherence_")
        out = {"lda.npz": files.npz({"word_topic": self.word_topic_, "topic_totals": self.topic_totals_,
                                     "alpha": self.alpha_, **({"coherence": coh} if coh is not None else {}),
                                     **({"doc_topic": self.doc_topic_} if self.doc_topic_ is not None else {})}),
               "topics.txt": files.text("".join(f"{k}\t{int(self.word_topic_[k].sum())}\t"
                                                + " ".join(f"{w}:{n}" for w, n in ws) + "\n"
                                                for k, ws in enumerate(tops)))}
        if self.vocab_ is not None:
            out["vocab.txt"] = files.text("".join(w + "\n" for w in self.vocab_))
        if self.stop_words_ is not None:
            out["stopwords.txt"] = files.text("".join(w + "\n" for w in self.stop_words_))
        return out

    def _meta(self):
        ctx = self.run_.get("context") or {}
        return {**super()._meta(), "topics": int(self.word_topic_.shape[0]), "words": int(self.word_topic_.shape[1]),
                **({"ll_per_token": float(ctx["ll_per_token"])} if "ll_per_token" in ctx else {})}

    def _restore(self, directory, meta):
        from tux2 import model_check
        meta, found = model_check.read_model(directory, "lda", ("lda.npz",), ("vocab.txt", "stopwords.txt"))
        if self.format not in self.choices["format"]:   # model.json's "format" is the corpus's: 'built-in', 'arrays'
            self.format = "auto"
        model_check.check_lda(directory, meta, found)
        vocab = io.read_words(found["vocab.txt"], meta["words"], model_check.ModelError,
                              f"model.json says {meta['words']}") if "vocab.txt" in found else None
        arrays = found["lda.npz"]
        stop = sorted(stop_words(found["stopwords.txt"])) if "stopwords.txt" in found else None
        if stop is not None and "stop_words" not in meta:       # a list (model.json keeps names): the words
            self.stop_words = stop
        self._set(arrays["word_topic"], arrays["topic_totals"], vocab, arrays.get("doc_topic"),
                  meta.get("word_base", 0) if vocab is None else 0, arrays.get("alpha"), stop)   # older: no alpha
        if "coherence" in arrays:                                                           # older: none
            self.coherence_ = arrays["coherence"]

    # ------------------------------------------------------------ new documents
    def documents(self, docs):
        """(doc → word count graph in the model's word ids, tokens left out) of ``docs``:
        texts or documents split into tokens, in a list or any iterable (a generator is read
        once), or a text file (tokenised as in training; words the model lacks
        are left out), a corpus file in the model's numeric word ids, or counts in them
        as ``fit`` takes them (CountVectorizer's matrix: a Pipeline's ``transform``)."""
        docs = io.read_once(docs)
        _no_file(docs, "transform")
        if loaders.is_path(docs):
            with loaders.plain_file(docs) as copy:          # '-', .gz, .bz2, .xz
                return self._documents(copy)
        return self._documents(docs)

    def _documents(self, docs):
        V = self.word_topic_.shape[1]
        texts, path = io.as_texts(docs, self.text_column), loaders.is_path(docs)
        kind = io.sniff_corpus(docs) if path else None                  # (text: or CSV)
        fmt = (getattr(self, "run_", None) or {}).get("format")
        text = fmt in ("text", "csv")                       # else numeric (or --vocab's), or WORD_ARRAYS
        own, fitted = text or fmt == WORD_ARRAYS, "texts" if text else "arrays of words"  # word ids: its words' own
        if path and kind != "text" and own:
            raise InputError(f"a {kind} corpus, and this model was fitted on {'text' if text else fitted}: its word "
                             "ids are its own words' (vocab.txt), not this file's; give the new documents as text",
                             path=docs)
        if texts is not None or kind == "text":
            if self.vocab_ is None:
                raise InputError("this model has numeric word ids (no vocabulary), and these documents are text: "
                                 "pass counts in the model's word ids, as fit took them (a corpus file, a "
                                 "CountVectorizer matrix, a doc → word count BipartiteGraph)",
                                 path=docs if path else "texts")
            stop = (self.stop_words_ if self.stop_words_ is not None                      # dropped as in training,
                    else stop_words(self.stop_words if text and self.stop_words in ("english", "none") else None))
            g, words = (io.read_text_docs(docs, stopwords=stop, csv=io.csv_header(docs, self.text_column)) if path
                        else io.text_docs(texts, stopwords=stop, need_words=False))
            return self._in_model_words(g, words)
        if not path:
            _refuse_non_documents(docs)
            g = _counts(docs, V)
            named = _word_names(g)
            if named is not None and self.vocab_ is None:
                raise InputError("this model has numeric word ids (no vocabulary), and these documents' words are "
                                 "strings: pass the word ids the model was fitted on", path=g.source)
            if named is not None:
                return self._in_model_words(g, named)
            if own and g.n_src:         # (none at all: the 'no documents' error, whatever their form)
                raise ValueError(f"this model was fitted on {fitted}: it maps their words to its {V} word ids (vocab_), "
                                 "and a count matrix's columns are its vectorizer's: pass the "
                                 + ("texts themselves (a list of strings or of token lists, a pandas Series, a text "
                                    "file)" if text else "words themselves ((docs, words[, counts]) arrays, texts)"))
            return g, 0
        g, _, fmt = loaders.load_corpus(docs, base=self.word_base_ or None)     # triples: the model's base
        if g.n_dst > V:
            line, text = io.edge_line(docs, int(np.argmax(g.dst)), 3 if fmt == "docword" else 0)
            raise InputError(f"word id beyond the model's {V} words", path=docs, line=line, text=text)
        return g, 0

    def _in_model_words(self, g, words):
        """(``g``, doc → word counts in ids of its own ``words``, in the model's word ids
        (``vocab_``), tokens left out): words the model lacks are left out."""
        index = {w: i for i, w in enumerate(self.vocab_)}
        to_model = np.array([index.get(w, -1) for w in words], np.int64)[g.dst]
        o = np.lexsort((to_model, g.src))
        o = o[to_model[o] >= 0]                     # by document, then word; unknown words left out
        return (BipartiteGraph(g.src[o], to_model[o], g.values[o], g.n_src, self.word_topic_.shape[1],
                               ("doc", "word"), g.source), int(g.values.sum() - g.values[o].sum()))

    def _new_documents(self, docs):
        """``docs`` as ``documents`` reads them (a doc → word graph as it is); none at all is
        the error ``fit`` gives, not a (0, K) result: an exhausted generator is the likely cause."""
        g = docs if isinstance(docs, BipartiteGraph) else self.documents(docs)[0]
        if not g.n_src:
            raise InputError(io.NO_DOCUMENTS, path=g.source)
        return g

    def fit_transform(self, docs, y=None, **fit_params):
        """``fit(docs).transform(docs)``; ``y`` is ignored: a Pipeline hands its labels to every step."""
        docs = io.read_once(docs)                   # (a generator: read once, for both)
        return self.fit(docs, **fit_params).transform(docs)

    def transform(self, docs, iterations=50, seed=0):
        """Topic mixtures θ (D × K) of new documents: a doc → word count graph in the
        model's word ids, or what ``documents`` takes; no documents at all (an empty list, a
        generator read before) is an error, as in ``fit`` (scikit-learn's too)."""
        docs = self._new_documents(docs)
        return lda.infer(self.word_topic_, self.topic_totals_, docs, self.alpha_, self.beta, iterations, seed)

    def score(self, docs, y=None, iterations=50, seed=0):
        """Log-likelihood of documents (what ``transform`` takes; words the model lacks
        left out), a plug-in estimate: Σ_d Σ_w n_dw log Σ_k θ̂_dk φ̂_kw, φ̂_kw = (β +
        n_kw)/(Vβ + n_k), θ̂ from ``transform(docs, iterations, seed)``. Neither the
        marginal p(w | φ̂) (θ integrated out) nor scikit-learn's variational bound:
        θ̂ is fitted to the words it scores, so it is optimistic, more so for short
        documents. Compare models on the same documents; higher is better."""
        return self.fold_in(docs, iterations, seed)[1]

    def perplexity(self, docs, iterations=50, seed=0):
        """exp(−score / tokens), the tokens counted being those ``score`` scores
        (scikit-learn's definition; lower is better)."""
        _, ll, tokens = self.fold_in(docs, iterations, seed)
        return float(np.exp(-ll / tokens))

    def fold_in(self, docs, iterations=50, seed=0):
        """(θ as ``transform`` gives it, ``score``, tokens scored) of documents, with one
        inference."""
        docs = self._new_documents(docs)
        tokens = float(docs.values.sum())
        if tokens == 0:
            raise ValueError("the documents hold no word of the model's vocabulary: nothing to score")
        theta, ll = lda.fold_in(self.word_topic_, self.topic_totals_, docs, self.alpha_, self.beta, iterations, seed)
        return theta, ll, tokens

    def topic_words(self, n=10):
        """Per topic, the ``n`` most frequent (word, count) pairs."""
        NONNEG.check("LDA.topic_words: n", n)       # (-1 sliced off each topic's rarest word)
        return lda.top_words(self.word_topic_, n, self.vocab_, self.word_base_)
