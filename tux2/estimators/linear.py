"""Linear classifiers on a sample–feature graph as estimators: the GLMs and the
factorization machine of tux2.udfs.glm (``LogisticRegression``, ``LinearSVM``,
``Softmax``, ``FM``, each with the ``strategy`` of the system it trains like) and
L1 logistic regression by block proximal gradient (``BlockPG``, tux2.udfs.blockpg).
``reg`` is λ everywhere; ``penalty`` picks R = ½‖W‖² (l2) or ‖W‖₁ (l1)."""
import math
import os

import numpy as np

from tux2 import files, io, loaders, tables
from tux2.errors import InputError, Tux2Error
from tux2.estimator import Estimator
from tux2.graph import BipartiteGraph
from tux2.params import COUNT, NONNEG, NONNEG_NUMBER, POSITIVE, SEED, integer, number
from tux2.runner import Dataset, Setup
from tux2.udfs import blockpg, glm
from tux2.version import __version__


def with_bias(graph, index=None):
    """Every sample gets feature ``index`` (default: a new last feature) with value 1,
    its intercept; features at or beyond ``index`` (a test file's, unseen in training)
    are left out."""
    n = graph.n_src
    index = graph.n_dst if index is None else index
    keep = graph.dst < index
    src = np.concatenate([graph.src[keep], np.arange(n)])
    dst = np.concatenate([graph.dst[keep], np.full(n, index)])
    val = np.concatenate([graph.values[keep], np.ones(n)])
    return BipartiteGraph(src, dst, val, n, max(graph.n_dst, index + 1), graph.type_names, graph.source)


READ_CHOICES = dict(zero_based=(True, False, "auto"), duplicates=loaders.DUPLICATES)     # libsvm files


class Linear(Estimator):
    """What the linear models share: libsvm or matrix input with labels, test
    metrics per epoch, weights files, and predictions from the learned weights
    (one per feature for a binary model; features × K for softmax, features × (1 + F) for an FM).
    The model is kept compact: ``weights_`` holds a row per feature that occurred in training
    (``features_``, their indices, when sparse indices were numbered densely; else a row per
    index), the intercept's last; ``coef_`` lays out the features' by index on demand. ``min_count`` N > 1
    drops the features with fewer than N non-zero entries in the training data
    (``loaders.frequent_features``): ``features_`` holds the others, and in scored input a
    dropped feature is one unseen in training, of weight 0."""

    loss = "logistic"
    weight_column = None    # the GLMs' parameter: a table's or DataFrame's column of sample weights
    multiclass = False  # whether fit takes more than two labels (Softmax; LogisticRegression: the multinomial model)
    bias = False
    offset_ = 0.0       # squared loss: a constant every prediction adds (an FM's target mean; 0 for the GLMs)

    @property
    def _estimator_type(self):
        return "regressor" if self.loss == "squared" else "classifier"
    _watch, _stop = "objective", "objective is not finite at epoch {n}"

    def load_data(self, data, test=None):
        """``data``: a libsvm path, (X, y), or X with ``test`` its labels y (the
        scikit-learn ``fit(X, y)``); ``test``: a libsvm path or (X, y). Files are read
        with ``zero_based`` (True: feature indices from 0; "auto": so when an index 0
        occurs in ``data``, else from 1; the test file in ``data``'s) and ``duplicates`` (a feature twice
        in one line: "error", "sum", "last", "keep"), as ``tux2 run``'s flags read them; the training
        data's features with fewer than ``min_count`` non-zero entries dropped (``--min-count``)."""
        zero_based, duplicates = self.zero_based, self.duplicates
        if zero_based == "auto" and self._warms():      # read in the base of the model started from
            zero_based = bool(self.zero_based_)
        given_weights, wcol = vars(self).get("_sample_weight"), self.weight_column     # GLM.fit's, GLM's
        if wcol is not None and given_weights is not None:
            raise InputError(f"weight_column={wcol!r} and sample_weight= both give the samples' weights: give one")
        if wcol is not None and loaders.is_frame(data):     # a DataFrame's weight column: taken out, as its labels
            data, given_weights = frame_weights(data, wcol)
            test = frame_weights(test, wcol, required=False)[0] if loaders.is_frame(test) else test
        elif wcol is not None and not loaders.is_path(data):
            raise InputError(f"weight_column={wcol!r} names a column of a table file or a DataFrame; this X is "
                             f"{'a graph' if isinstance(data, BipartiteGraph) else 'a matrix'}: fit(X, y, "
                             "sample_weight=w)")
        frame = None            # a DataFrame's label column, found as a table file's: (spec, how, columns)
        if loaders.is_frame(data) and not labels_only(test):
            X, labels, spec, found = loaders.frame_labels(data, self.label_column)
            if labels is not None:
                data, frame = (X, labels), (spec, found, len(data.columns))
        elif loaders.is_frame(data) and self.label_column is not None and \
                any(c == self.label_column for c in data.columns):
            raise InputError(f"label_column={self.label_column!r} names a column of X, and y is given too: "
                             "fit(X, y) with X without it, or fit(X) to take the labels from that column")
        def pair(d, label=self.label_column, table_labels=None, known=0, sparse=True, weights=(wcol, None)):
            if isinstance(d, tuple) and len(d) == 2:
                g = loaders.load_samples(d[0])[0]
                y = given_labels(d[1], g.n_src)
            else:       # hashed indices up to 2^24 are read as they are: numbered densely below
                g, y = loaders.load_samples(d, zero_based, duplicates, label, table_labels=table_labels,
                                            known_features=known, sparse=sparse, weight_column=weights[0],
                                            table_weights=weights[1])
            path = os.fspath(d) if loaders.is_path(d) else None
            loaders.require_features(g, path)          # labels alone (lines '1', '-1 # …'): nothing to learn
            return g, y
        g, y = pair(data)
        column_weights = vars(g).get("sample_weights")      # a table's weight column (tables.read_table)
        if column_weights is not None:
            if not column_weights.any():
                raise InputError(f"every weight in column {g.layout.column(g.layout.weight)} is 0: nothing to learn "
                                 "from", path=os.fspath(data))
            given_weights = column_weights
        how = None
        if zero_based == "auto":        # a libsvm file's base as read (the test file's too); other data: 1
            zero_based = loaders.is_path(data) and g.layout is None and g.base == 0
            how = "feature indices 0-based (an index 0 occurs; --one-based refuses it)" if zero_based \
                else None
        table = g.layout if isinstance(g.layout, tables.TableFormat) else None
        if table is not None and self.zero_based != "auto":
            raise InputError(f"--{'zero' if self.zero_based else 'one'}-based (zero_based={self.zero_based}) sets "
                             "the index base of a libsvm file's features; this is a table, whose columns are the "
                             "features: leave it out", path=os.fspath(data))
        names = feature_names(data[0] if isinstance(data, tuple) else data) or (table and table.feature_names())
        given = data[1] if isinstance(data, tuple) and len(data) == 2 else None      # y from Python, if any
        label = table.label_spec() if table else frame and frame[0]     # a test table's or frame's labels
        found = np.unique(y) if table and table.how.startswith("the first") else ()
        # the first column, no labels? (a guess: lr takes more classes from a column named so or picked)
        if self.loss != "squared" and len(found) > (100 if self.algorithm == "softmax" else 2):
            ratings = {0, 1} <= {io.role(n) for n in table.names or ()}     # 'user,item,rating,timestamp'
            raise InputError(f"column {table.column(table.label)}, the labels (the first), holds {len(found):,} "
                             f"values ({', '.join(map(shown, found[:3]))}, …): "
                             + ("as many classes? " if self.algorithm == "softmax" else "a binary model takes two. "
                                if not self.multiclass else "as many classes, from a guess? ")
                             + "--label-column N|NAME|last (label_column=) picks the column of the labels"
                             + ("; softmax takes more than two" if not self.multiclass else
                                "; --label-column first takes these as the classes" if self.algorithm == "lr" else "")
                             + ("; the header names users and items, as a rating file's: tux2 run mf reads it"
                                if ratings else ""),
                             path=os.fspath(data))
        if y is None:
            shape = np.shape(np.asarray(test)) if test is not None else None      # array-likes too
            if shape is not None and len(shape) == 2 and shape[0] == g.n_src and shape[1] > 1:
                raise InputError(f"y holds one label per sample, shape ({g.n_src},) or ({g.n_src}, 1); got {shape}")
            if shape is None or len(shape) not in (1, 2) or shape[1:] not in ((), (1,)):
                raise InputError(f"labels needed: {type(self).__name__} requires y to be passed, but the target y "
                                 "is None; fit(X, y), fit((X, y)), fit(path) with a libsvm file or a table, or a "
                                 "DataFrame with its labels: a column named as such (target, label, class …) or "
                                 "label_column= naming it")
            y, test, given = given_labels(test, g.n_src), None, test
        if loaders.is_frame(test):          # test data as a DataFrame: its labels in the training data's column
            test = frame_test_data(test, label, g.n_dst)
        if isinstance(test, tuple) and len(test) == 2:
            same_columns(test[0], names, "the test X")
        span, features, tail = g.n_dst, None, None  # sparse indices (hashed into 2^24): a row per feature that occurs
        if self.min_count > 1:          # the tail dropped: a row per feature seen min_count times or more
            path = os.fspath(data) if loaders.is_path(data) else None
            g, features = loaders.frequent_features(g, self.min_count, path)
            tail = (self.min_count, g.tail[0], g.tail[1])
        elif table is None and names is None:
            g, features = loaders.dense_features(g)
        t, ty = pair(test, None, label, span, features is not None, (None, wcol)) if test is not None else (None, None)
        test_weights = vars(t).get("sample_weights") if t is not None else None      # weighted test metrics
        if t is not None and isinstance(t.layout, tables.TableFormat):
            same_table(t.layout, names, span, test)
        if t is not None and features is not None:      # the test set's features unseen in training weigh 0
            t = loaders.in_features(t, features)
        kind = np.asarray(given).dtype if given is not None else None
        weights = sample_weights(given_weights, g.n_src)      # GLM.fit's sample_weight, or the weight column's
        return Dataset(g, t, y, ty, weights=weights, zero_based=zero_based, feature_names=names, label_column=label,
                       test_weights=test_weights,
                       **({"weighted_by": f"weight column {g.layout.column(g.layout.weight)}"}
                          if column_weights is not None else {}),
                       read_as=(table and table.describe()) or (frame and describe_frame(*frame)) or how,
                       label_dtype=kind.str if kind is not None and kind.kind in "biuf" else None,
                       **({"feature_span": span} if features is not None else {}), **({"tail": tail} if tail else {}))

    def _warms(self):
        """Whether this fit starts from the weights learned before (``warm_start``, ``--init-model``)."""
        return bool(vars(self).get("warm_start")) and "weights_" in vars(self)

    def start_from(self, model):
        if isinstance(model, (str, os.PathLike)):
            model = type(self).load(os.fspath(model))
        super().start_from(model)
        if model is None:
            vars(self).pop("_started_bias", None)
        else:
            self._started_bias = model._bias()      # whether its weights end with an intercept
            if "features_" not in vars(model):      # a model of dense indices: none of an earlier fit's
                vars(self).pop("features_", None)
        return self

    def _model_rows(self, features, d):
        """Per feature of this fit (``d``; ``features``: their indices when numbered densely, else
        0 … d−1), its row in the model's ``weights_``, −1 where the model has none: an index
        beyond its ``n_features_in_``, or one its own training numbered densely without (its
        ``features_``)."""
        idx = np.arange(d) if features is None else np.asarray(features, np.int64)
        seen = vars(self).get("features_")
        if seen is None:
            return np.where(idx < self.n_features_in_, idx, -1)
        if not len(seen):
            return np.full(len(idx), -1)
        at = np.minimum(np.searchsorted(seen, idx), len(seen) - 1)
        return np.where(seen[at] == idx, at, -1)

    def _start_weights(self, W, had, d, labels, why=None, rows=None):
        """The model's weights W (features × columns, the intercept last when ``had``) laid out
        for this fit's ``d`` features, features by index (``rows``, ``_model_rows``: the model's
        row of each; those the model lacks start at 0);
        refused, naming the flag, when the model's intercept, labels or form (``why``: what the
        model has, and the flag that gives it) are not this fit's. Returns (W0, features both know)."""
        if had != bool(self.bias):                      # fm and blockpg have none by default: --bias gives one
            flag = ("give --bias", "leave out --bias") if self.algorithm in ("fm", "blockpg") else \
                ("leave out --no-bias", "give --no-bias")
            why = ("an intercept", flag[0]) if had else ("no intercept", flag[1])
        if why is not None:
            raise Tux2Error(f"the model to start from has {why[0]}: {why[1]} (a warm start keeps the model's form)")
        if len(labels) != len(self.classes_) or (np.asarray(labels) != self.classes_).any():
            raise Tux2Error(f"the model to start from has the labels {', '.join(map(shown, self.classes_[:6]))} and "
                            f"this data {', '.join(map(shown, labels[:6]))}: a warm start keeps the model's labels")
        if rows is None:
            rows = self._model_rows(None, d - had)
        known = rows >= 0                               # features both know; the intercept, last, to the last
        W0 = np.zeros((d, W.shape[1]))
        W0[:len(rows)][known] = W[rows[known]]
        if had:
            W0[-1] = W[-1]
        return W0, int(known.sum())

    def _started(self, s):
        """The header's line of a warm start (``s.warm``: features given, features)."""
        return [f"  started from the model learned before: {s.warm[0]} of {s.warm[1]} features"
                + (" (the others as in a new model)" if s.warm[0] < s.warm[1] else "")] if s.warm else []

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if tags.classifier_tags is None:        # a regressor
            return tags
        tags.classifier_tags.multi_class = self.multiclass      # the others take two labels
        return tags

    def _test_metrics(self, s, W):
        if s.test is None or W is None:
            return {}
        metrics = glm.score_metrics(self._scores(W, s.test), s.test_labels, self.loss, vars(s).get("test_weights"))
        return {f"test_{k}": v for k, v in metrics.items()}

    def _files(self):
        """weights.npz (w: features × K, or w and V for an FM) and weights.txt: one line
        per non-zero feature, 'index:w', 'index:w_0,…,w_K-1' or 'index:w,v_1,…,v_F',
        in the input's index base. A model of sparse feature indices (``features_``) keeps in
        weights.npz the rows of its features (and of the intercept, last) and their 0-based
        indices, ``index``: w[i] is feature index[i]'s weight."""
        W = self.weights_.reshape(len(self.weights_), -1)
        base = 0 if self.zero_based_ else 1
        at = self._indices()                            # each row's index (the intercept's: n_features_in_)
        nz = np.flatnonzero(np.any(W != 0, axis=1))       # repr: the shortest text that reads back exactly
        lines = "".join([f"{j}:{','.join(map(repr, w))}\n" for j, w in zip((at[nz] + base).tolist(), W[nz].tolist())])
        fm = self.algorithm == "fm"
        state = {f"step_{k}": v for k, v in vars(self).get("step_state_", {}).items()}   # a warm start's
        seen = vars(self).get("features_")      # features numbered densely: their indices (step_state_ holds their rows)
        index = {} if seen is None else {"index": np.asarray(seen, np.int64)}
        return {"weights.npz": files.npz({**({"w": W[:, 0], "V": W[:, 1:]} if fm else
                                            {"w": W[:, 0] if W.shape[1] == 1 else W}), **state, **index}),
                "weights.txt": files.text(lines)}

    def _meta(self):
        ctx = self.run_.get("context") or {}
        return {**super()._meta(), "loss": self.loss, "zero_based": self.zero_based_,
                **({"label_column_used": self.label_column_} if self.label_column_ else {}),
                **({"norm_used": self.norm_} if self.algorithm == "fm" else {}),
                **({"objective": float(self.history_[-1]["objective"])} if vars(self).get("history_") else
                   {"objective": float(ctx["objective"])} if "objective" in ctx else {}),      # in y's units
                **({"epochs_trained": int(self.epochs_trained_)} if "epochs_trained_" in vars(self) else {}),
                "features": self._n_rows(), "samples": self.run_.get("samples"),
                **({"target_mean": float(self.target_mean_), "target_scale": float(self.target_scale_),
                    "offset": float(self.offset_)} if self.loss == "squared" else
                   {"classes": int(self.weights_.shape[1]) if self.loss == "softmax" else 2,
                    "labels": self.classes_.tolist()}),
                **({"feature_names": [str(c) for c in self.feature_names_in_]}
                   if "feature_names_in_" in vars(self) else {})}

    def _restore(self, directory, meta):
        from tux2 import model_check
        meta, arrays = model_check.read_model(directory, self.algorithm, ("weights.npz",))
        model_check.check_linear(directory, meta, arrays)
        w = arrays["weights.npz"]
        self.weights_ = np.column_stack([w["w"], w["V"]]) if self.algorithm == "fm" else w["w"]
        self.step_state_ = {k[5:]: np.asarray(v) for k, v in w.items() if k.startswith("step_")}
        vars(self).pop("features_", None)
        n = None                    # a model of dense indices (models written before 'index' too): a row each
        if "index" in w:            # sparse feature indices: the rows of the features that occurred, kept so
            seen, extra = np.asarray(w["index"], np.int64), len(self.weights_) - len(w["index"])
            total = meta.get("features")                # indices 0 … n−1, then the intercept
            n = int(total) - extra if isinstance(total, int) else int(seen[-1]) + 1 if len(seen) else 0
            self.features_ = seen
        self.zero_based_ = bool(meta.get("zero_based", False))
        if isinstance(meta.get("epochs_trained"), int) and meta["epochs_trained"] >= 0:
            self.epochs_trained_ = meta["epochs_trained"]
        self.label_column_ = meta.get("label_column_used")
        self.loss = meta.get("loss", self.loss)
        self.label_base_ = int(meta.get("label_base", 0))
        self.bias = bool(meta.get("bias", False))         # models written before GLMs had an intercept: none
        self.n_features_in_ = n if n is not None else len(self.weights_) - self.bias
        self.norm_ = "l2" if meta.get("norm_used") == "l2" else "none"
        if self.loss == "squared":
            self.offset_ = float(meta.get("offset", 0.0))
            self.target_mean_, self.target_scale_ = float(meta.get("target_mean", 0.0)), float(meta.get("target_scale", 1.0))
        labels = meta.get("labels")         # (models written before it: the labels they imply)
        if self.loss == "squared":
            labels = []
        elif labels is None:
            labels = np.arange(self.weights_.shape[1]) + self.label_base_ if self.loss == "softmax" else [-1, 1]
        self.classes_ = np.array(labels)
        if isinstance(meta.get("feature_names"), list):     # a DataFrame's columns: predict checks them
            self.feature_names_in_ = np.array(meta["feature_names"], dtype=object)

    norm_ = "none"          # an FM's samples scaled to unit length ("l2") for training, and so for scoring

    def _scores(self, W, graph):
        graph = glm.unit_rows(graph) if self.norm_ == "l2" else graph
        M = glm.graph_scores(W, with_bias(graph, len(W) - 1) if self._bias() else graph, fm=self.algorithm == "fm")
        return M + self.offset_ if self.loss == "squared" else M

    def _bias(self):
        """Whether the fitted weights end with an intercept (as fit or load found it)."""
        return bool(vars(self).get("_fit_params", {}).get("bias", self.bias))

    # ------------------------------------------------------------ predictions
    @property
    def coef_(self):
        """The weights by feature index, as scikit-learn's linear models give them: one per
        index 0 … ``n_features_in_``−1, without the intercept (``intercept_``), so
        ``X @ coef_.T + intercept_`` are the scores and ``SelectFromModel`` works: a
        binary or regression model's vector, (K, features) for softmax (its classes by
        rows), features × (1 + F), (w, V), for an FM (the constant feature's row, whose
        factors meet every feature's, is ``weights_``' last with bias=True). Read-only, made on demand
        from ``weights_``: for a model of sparse indices (``features_``) a new array each
        time, zero at the indices that did not occur (2^24 hashed indices are 134 MB a
        column: keep it, or use ``weights_`` and ``features_``); else a view of it."""
        W = self.weights_                           # before fit: AttributeError, whose message names coef_
        seen = vars(self).get("features_")
        out = W if seen is None else by_index(W, seen, self.n_features_in_)
        out = out[:self.n_features_in_]
        if self.loss == "softmax":
            out = out.T
        if seen is not None or out.flags.writeable:
            out = out.view()
            out.flags.writeable = False             # a write would change a copy, or the model behind its back
        return out

    @property
    def intercept_(self):
        """The intercept, scikit-learn's name for it: ``coef_``'s last row when the model has
        one (``bias``), else 0; a float for a binary or regression model, (K,) for softmax.
        ``weights_`` keeps it as its last row (the weight files' layout). An FM has none
        (``hasattr`` is False): its constant feature has factors too."""
        W = self.weights_                           # before fit: AttributeError, as coef_
        if getattr(self, "algorithm", None) == "fm":
            raise AttributeError("an FM has no intercept_: its constant feature (bias=True) has factors "
                                 "too; its row (w, V) is weights_' last")
        if not self._bias():
            return 0.0 if W.ndim == 1 else np.zeros(W.shape[1])
        return float(W[-1]) if W.ndim == 1 else np.array(W[-1], dtype=np.float64)

    def _indices(self):
        """Each row of ``weights_``'s index in ``coef_`` (the intercept's last)."""
        seen, n = vars(self).get("features_"), len(self.weights_)
        if seen is None:
            return np.arange(n)
        return np.concatenate([np.asarray(seen, np.int64), self.n_features_in_ + np.arange(n - len(seen))])

    def _n_rows(self):
        """``len(coef_)``, without making it: the indices and the intercept."""
        seen = vars(self).get("features_")
        return int(len(self.weights_) if seen is None else self.n_features_in_ + len(self.weights_) - len(seen))

    def _learned(self, coef, s):
        """The weights and what the fit's data says beside them: the feature index base,
        the labels, the column names of a DataFrame; ``weights_`` a row per feature the
        training graph has (for sparse indices numbered densely, ``features_``, their indices,
        and ``n_features_in_`` the indices' count, which ``coef_`` spans)."""
        seen = vars(s).get("features")              # sparse indices numbered densely
        self.weights_, self.zero_based_, self.classes_ = np.asarray(coef), s.zero_based, s.labels
        vars(self).pop("features_", None)
        self.n_features_in_ = len(coef) - bool(self.bias)       # this fit's intercept (_fit_params: the last fit's)
        if seen is not None:
            self.features_, self.n_features_in_ = seen, int(s.span)
        self.label_column_ = s.label_column          # a table's (name or 1-based), for the files predict reads
        if s.label_dtype is not None and np.array_equal(s.labels.astype(s.label_dtype), s.labels):
            self.classes_ = s.labels.astype(s.label_dtype)  # y's own (bool, 0.0/1.0, int32), as scikit-learn keeps it
        vars(self).pop("feature_names_in_", None)        # a refit on a matrix has none
        if s.feature_names is not None:
            self.feature_names_in_ = np.array(s.feature_names, dtype=object)

    def scores(self, X):
        """Scores (n, K) of the samples of X: a libsvm path, a matrix (rows are
        samples) or a sample → feature graph. A matrix must have the columns fit saw
        (a libsvm file's features beyond them count as 0)."""
        W = self.weights_ if "weights_" in vars(self) else self.coef_   # before fit: the error names coef_
        X = self._frame(X)[0]
        g = self._read(X)[0]            # (a table's weight column: not a feature)
        if isinstance(g.layout, tables.TableFormat):    # a table's header: the features in fit's order
            same_table(g.layout, vars(self).get("feature_names_in_"), self.n_features_in_, X if loaders.is_path(X)
                       else g.source)
        if not (loaders.is_path(X) or isinstance(X, BipartiteGraph)):
            if g.n_dst != self.n_features_in_:
                raise ValueError(f"X has {g.n_dst} features, but {type(self).__name__} is expecting "
                                 f"{self.n_features_in_} features as input")
            same_columns(X, vars(self).get("feature_names_in_"), "X")
        seen = vars(self).get("features_")
        if seen is not None:        # sparse indices: the features that occurred, in weights_' rows
            g = loaders.in_features(g, seen)
        return self._scores(W, g)

    label_column_ = None

    def _frame(self, X):
        """(X, labels or None, weights or None) of samples to score: a DataFrame's label column
        (found as a table file's, in the column fit read: ``loaders.frame_labels``) and weight
        column (``weight_column``'s, when it has more columns than the features) apart; other X as it is."""
        if not loaders.is_frame(X) or "n_features_in_" not in vars(self):
            return X, None, None
        w = None
        if self.weight_column is not None and len(X.columns) > self.n_features_in_:
            X, w = frame_weights(X, self.weight_column, required=False)
        return (*loaders.frame_labels(X, table_labels=self.label_column_, features=self.n_features_in_)[:2], w)

    def _read(self, X):
        """(graph, labels or None) of samples to score, a table's in the columns fit read, a
        feature twice in a line as fit read it (``duplicates``)."""
        return loaders.load_samples(X, self.zero_based_, self.duplicates, table_labels=self.label_column_,
                                    features=self.n_features_in_, known_features=self.n_features_in_, sparse=True,
                                    table_weights=self.weight_column)

    def _one_weighting(self, given, column):
        """``score``'s weights: ``sample_weight`` or the weight column's; refused both."""
        if given is not None and column is not None:
            raise ValueError(f"score: the weight column ({self.weight_column!r}) and sample_weight= both give the "
                             "samples' weights: give one")
        return column if column is not None else given

    def decision_function(self, X):
        """Scores (n,) of a binary model, a softmax of two classes too (the second class's
        score minus the first's, as scikit-learn's: roc_auc scored nan), (n, K) of softmax."""
        M = self.scores(X)
        if self.loss != "softmax":
            return M[:, 0]
        return M[:, 1] - M[:, 0] if M.shape[1] == 2 else M

    label_base_ = 0       # softmax: the first class's label (1 for a file labelled 1 … K)

    def predict(self, X):
        """Labels, as training gave them: ±1, 0/1, 1/2, strings, bools … (values of ``classes_``);
        the predicted values (n,) of a squared-loss model."""
        M = self.scores(X)
        if self.loss == "squared":
            return M[:, 0]
        return self.classes_[M.argmax(axis=1) if self.loss == "softmax" else (M[:, 0] > 0).astype(np.intp)]

    @property
    def predict_proba(self):
        """Class probabilities (n, K), in the order of ``classes_`` (a logistic model's:
        P(negative), P(positive)). A hinge model has none: ``hasattr`` is False, as for
        scikit-learn's LinearSVC, so its scorers and ensembles use ``decision_function``."""
        if self.loss in ("hinge", "squared"):
            raise AttributeError(f"a {'hinge' if self.loss == 'hinge' else 'regression'} model has no probabilities")
        return self._probabilities

    def _probabilities(self, X):
        M = self.scores(X)
        if self.loss == "softmax":
            return glm.softmax(M)
        p = 0.5 * (1.0 + np.tanh(0.5 * M[:, 0]))
        return np.column_stack([1 - p, p])

    def score(self, X, y=None, sample_weight=None):
        """Accuracy on (X, y) (labels as training gave them, or ±1 and 0/1 for a ±1 or
        0/1 model; a binary model refuses a third label, softmax counts it wrong); R² for a
        squared-loss model (1 − Σ(ŷ − y)² / Σ(y − ȳ)², as scikit-learn's regressors' score);
        without ``y``, X is a libsvm file and its labels are y, or the (X, y) pair fit takes.
        ``sample_weight``: each sample counted as often as it weighs (the weighted accuracy
        and R², as scikit-learn's); a file's or DataFrame's weight column (``weight_column``) gives
        them too."""
        if y is None and isinstance(X, tuple) and len(X) == 2:
            X, y = X
        column = None           # the weights of a file's or DataFrame's weight column (weight_column)
        if loaders.is_frame(X):
            X, labels, column = self._frame(X)
            y = labels if y is None else y
        elif y is None or loaders.is_path(X):      # a file's weight column weighs y given too, as a DataFrame's
            g, labels = self._read(X)
            y = labels if y is None else y
            column = vars(g).get("sample_weights")
        sample_weight = self._one_weighting(sample_weight, column)
        if y is None:
            raise InputError("labels needed: score(X, y), score(path) with a libsvm file or a table, or "
                             "a DataFrame with its label column (" + (
                                 f"{self.label_column_[0]!r}, as fit's" if isinstance(self.label_column_, list)
                                 else "named as labels are: target, label, class …") + ")")
        M = self.scores(X)
        if not len(M):
            raise ValueError(f"{type(self).__name__}.score: no samples to score (empty data)")
        y = given_labels(y, len(M))
        s = sample_weights(sample_weight, len(M))
        if self.loss == "squared":
            if y.dtype.kind != "f":
                raise ValueError("regression targets must be numbers")
            return glm.regression_metrics(M[:, 0], y, s)["r2"]
        if self.loss == "softmax":                  # a label of no class: a wrong prediction
            return float(np.average(self.classes_[M.argmax(axis=1)] == y, weights=s))
        signs = binary_labels(self.classes_, y, test_source="score")[1]     # a third label: its error
        return float(np.average((M[:, 0] > 0) == (signs > 0), weights=s))


def unknown_test_entries(train, test):
    """(test non-zeros on features without a training non-zero, test non-zeros, such features)
    of sample → feature graphs ``train`` and ``test`` (0s without test data). A test feature
    beyond the training span, or in the dense numbering's column of unseen ones (len(features),
    loaders.in_features), or of no training entry, weighs 0."""
    if test is None or not test.num_edges:
        return 0, 0, 0
    deg = np.bincount(train.dst, minlength=train.n_dst)
    d = np.asarray(test.dst, np.int64)
    unknown = d >= train.n_dst
    unknown[~unknown] = deg[d[~unknown]] == 0
    return int(unknown.sum()), int(test.num_edges), int(len(np.unique(d[unknown])))


def sparse_features(data):
    """(features, span) of a Dataset whose sparse feature indices ``load_data`` numbered
    densely (``loaders.dense_features``): each dense feature's index, and the indices' count
    (the largest + 1), which ``coef_`` spans; (None, None) for the others."""
    span = data.facts.get("feature_span")
    if span is None:
        return None, None
    return np.asarray(data.train.ids[1].tokens, np.int64), int(span)


def sparse_note(s):
    """The header's words on features numbered densely (and on those ``min_count`` dropped), or ''."""
    if vars(s).get("features") is None:
        return ""
    tail = vars(s).get("tail")
    if tail:
        n, occur, entries = tail
        return (f" (--min-count {n} dropped {occur - len(s.features):,} of the {occur:,} that occur, seen fewer "
                f"times, and their {entries - s.kept_entries:,} non-zeros; of indices up to "
                f"{s.span - (1 if s.zero_based else 0):,})")
    return f" (of indices up to {s.span - (1 if s.zero_based else 0):,}, numbered densely)"


def by_index(A, features, span):
    """Rows ``A`` of densely numbered features (``features``: their indices; a row more,
    the intercept's, last) laid out by index: ``span`` rows (and the intercept's), zeros
    for the indices that did not occur; ``A`` itself without ``features``."""
    if features is None or A is None:
        return A
    A = np.asarray(A)
    extra = len(A) - len(features)
    out = np.zeros((span + extra,) + A.shape[1:], A.dtype)
    out[features] = A[:len(features)]
    out[span:] = A[len(features):]
    return out


def labels_only(test):
    """Whether ``test``, beside a DataFrame, is its labels y (scikit-learn's ``fit(X, y)``):
    an array-like of one column, not test data (a path, (X, y), a frame of columns, a graph)."""
    if test is None or loaders.is_path(test) or isinstance(test, (tuple, BipartiteGraph)):
        return False
    return not loaders.is_frame(test) or len(test.columns) == 1


def frame_test_data(test, label, features):
    """(X, y) of a test DataFrame: its label column found as the training data's (``label``,
    its spec; ``loaders.frame_labels``); InputError when it has none."""
    X, y, _, _ = loaders.frame_labels(test, table_labels=label, features=features)
    if y is None:
        raise InputError("the test DataFrame has no labels: " + (
            f"its columns are the {features} features, without the label column {label[0]!r} the training "
            "data had" if label else "no column is named as labels are (target, label, class …) nor picked by "
            "label_column=") + "; or test=(X, y)")
    return X, y


def frame_weights(X, spec, required=True):
    """(DataFrame ``X`` without its weight column, the weights) of the column ``spec`` names (its
    own name, else as a table's: a 1-based number, 'last', a name in any case); (X, None) when
    it has none and they are not ``required`` (a test frame)."""
    cols = list(X.columns)
    j = next((i for i, c in enumerate(cols) if c == spec), None)
    if j is None:
        j = tables.named_column(spec, [str(c) for c in cols], len(cols), None, "weight", of="DataFrame",
                                required=required)
    if j < 0:
        return X, None
    w = X.iloc[:, j]
    if getattr(w.dtype, "kind", "O") not in "biuf":
        raise InputError(f"the weight column {cols[j]!r} holds {w.dtype} values: weights are numbers >= 0")
    return X.iloc[:, [i for i in range(len(cols)) if i != j]], w.to_numpy()


def describe_frame(spec, how, width):
    """A DataFrame's read as a run's header says it: where its labels were found."""
    return (f"a DataFrame of {width} columns; labels in column {width if spec[1] == 'last' else spec[1]} "
            f"({spec[0]!r}) ({how}), {width - 1} features")


def feature_names(X):
    """The column names of a DataFrame whose names are all strings (scikit-learn's
    ``feature_names_in_``), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return [str(c) for c in columns]


def same_columns(X, fitted, what):
    """ValueError when DataFrame ``X``'s column names are not ``fitted`` (the training
    DataFrame's, None for none) in order: read by position, they would score other
    features."""
    names = feature_names(X)
    if names is not None and fitted is not None and list(names) != list(fitted):
        raise ValueError(f"{what}'s columns are not those fit saw (first difference: "
                         f"{next((f'{a!r} for {b!r}' for a, b in zip(names, fitted) if a != b), 'their number')}): "
                         "pass X[est.feature_names_in_]")


def same_table(layout, fitted, features, path):
    """InputError when a table (its TableFormat ``layout``) has other feature columns than
    fit saw: not ``features`` of them, or header names not ``fitted`` in order (None: no
    names to compare). Read by position, they would score other features."""
    names = layout.feature_names()
    where = os.fspath(path) if loaders.is_path(path) else None
    if layout.features != features:
        raise InputError(f"{layout.features} feature columns where fit saw {features} ({layout.describe()}): write "
                         "the columns as in training", path=where)
    if names is None or fitted is None or list(names) == list(fitted):
        return
    diff = next(f"{a!r} where fit saw {b!r}" for a, b in zip(names, fitted) if a != b)
    raise InputError(f"the header's feature columns are not those fit saw, in its order ({diff}): read by position "
                     "they would score other features; write the columns as in training", path=where)


def given_labels(y, n=None):
    """Labels given from Python as an array tux2 keeps: numbers as float64 (none NaN or
    infinite), strings as strings (bytes decoded); one per sample (``n``). A missing
    label (None, NaN, pandas' NA), labels of other kinds, or numbers mixed with strings:
    ValueError naming the first."""
    y = np.asarray(y)
    y = y[:, 0] if y.ndim == 2 and y.shape[1] == 1 else y          # a column, as scikit-learn takes it
    if y.ndim != 1 or (n is not None and len(y) != n):
        raise ValueError(f"{n} samples but labels of shape {y.shape}: one label per sample")
    if y.dtype.kind == "O":
        missing = [i for i, v in enumerate(y) if v is None or v != v or type(v).__name__ in ("NAType", "NaTType")]
        if missing:
            raise ValueError(f"label {y[missing[0]]!r} (sample {missing[0]}): a label is missing")
        kinds = {"number" if isinstance(v, (int, float, np.number)) else "string" if isinstance(v, (str, bytes))
                 else type(v).__name__ for v in y}
        if len(kinds) > 1 or not kinds <= {"number", "string"}:
            raise ValueError(f"labels must be all numbers or all strings; these are {', '.join(sorted(kinds))}")
        y = np.array(y.tolist())
    if y.dtype.kind in "biuf":
        y = y.astype(np.float64)
        bad = ~np.isfinite(y)
        if bad.any():
            raise ValueError(f"label {y[np.argmax(bad)]} (sample {int(np.argmax(bad))}): labels must be finite")
        return y
    if y.dtype.kind == "S":
        return np.char.decode(y, "utf-8", "replace")
    if y.dtype.kind != "U":
        raise ValueError(f"labels must be numbers or strings, not {y.dtype}")
    return y


def sample_weights(w, n):
    """``sample_weight`` as float64 (n,) (a number: that weight for every sample), or None
    for None: finite, none negative, not all 0. ValueError naming the first bad one."""
    if w is None:
        return None
    w = np.asarray(w)
    if w.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must hold numbers, not {w.dtype}")
    w = np.full(n, float(w)) if w.ndim == 0 else w.astype(np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape}; {n} samples need one weight each, shape ({n},)")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"sample_weight[{i}] is {w[i]}: weights must be finite numbers >= 0")
    if n and not w.any():
        raise ValueError("the sample weights are all zero: nothing to learn from")
    return w


def class_weights(class_weight, codes, labels):
    """Per sample, the weight ``class_weight`` gives its class (``codes``: class numbers into
    ``labels``), or None for None: "balanced" is scikit-learn's n / (K · the class's count), K the
    classes that have samples; a dict maps labels to weights, 1 for the others (a label of no
    class: InputError naming it)."""
    if class_weight is None:
        return None
    codes = np.asarray(codes, np.intp)
    count = np.bincount(codes, minlength=len(labels))
    if isinstance(class_weight, str):           # "balanced" (check_params)
        each = len(codes) / (np.count_nonzero(count) * np.where(count > 0, count, 1))
    else:
        each = np.ones(len(labels))
        for key, weight in class_weight.items():
            text = labels.dtype.kind in "US"
            if isinstance(key, str) != text:        # {'1': 5} for labels 0, 1: the type is what differs
                raise InputError(f"the class weights name the class {key!r} (of type {type(key).__name__}), and the "
                                 f"training labels are {'strings' if text else 'numbers'} ("
                                 f"{', '.join(repr(shown(x)) if text else shown(x) for x in labels[:6])}"
                                 f"{' …' if len(labels) > 6 else ''}): name the classes as the labels are, "
                                 f"{'strings' if text else 'numbers'}")
            at = np.flatnonzero(labels == key)
            if not len(at):
                raise InputError(f"the class weights name the class {shown(key)}, which the training labels ("
                                 f"{', '.join(map(shown, labels[:6]))}{' …' if len(labels) > 6 else ''}) do not have")
            each[at[0]] = weight
    return each[codes]


def shown(label):
    """A label as messages and prediction files write it: 1, not 1.0; 1000000, not 1e+06."""
    if isinstance(label, (str, np.str_)):
        return str(label)
    x = float(label)
    return str(int(x)) if x.is_integer() and abs(x) < 2 ** 53 else repr(x)


def binary_labels(y, test=None, source=None, test_source=None):
    """(y, test) as ±1, and the two labels they stand for, sorted (the larger is the
    positive class, as scikit-learn's ``classes_``): any two labels, as liblinear takes
    them (±1, 0/1, covtype.binary's 1 and 2, 'ham' and 'spam'); a ±1 or 0/1 model's test
    labels may be ±1 or 0/1. One label, a third label, or a test label that is neither
    of the two: tux2.io.sample_error naming its line."""
    y = np.asarray(y)
    found, first = np.unique(y, return_index=True)
    seen = found[np.argsort(first)]             # the labels in the order the file first gives them
    if len(seen) > 2:
        i = int(first[np.argsort(first)[2]])
        real = y.dtype.kind == "f" and not (seen[:3] == np.round(seen[:3])).all()
        raise io.sample_error(f"a binary model takes two labels; a third, {shown(y[i])}, after {shown(seen[0])} "
                              f"and {shown(seen[1])} (" + ("real-valued targets: regression is tux2 run linreg "
                                                           "or fm --loss squared, LinearRegression or FM(loss="
                                                           "'squared')" if real else "softmax and lr take more: "
                                                           "tux2.Softmax, tux2.LogisticRegression") + ")",
                              source, i)
    if len(seen) < 2:
        raise io.sample_error(f"every label is {shown(seen[0])}: a binary model needs two", source, 0)
    pair = whole(found)
    legal = (-1, 0, 1) if y.dtype.kind in "biuf" and pair.tolist() in ([-1, 1], [0, 1]) else tuple(pair)
    signs = []
    for labels, where in ((y, source), (test, test_source)):
        if labels is None:
            signs.append(None)
            continue
        labels = np.asarray(labels)
        bad = ~np.isin(labels, legal)
        if bad.any():
            i = int(np.argmax(bad))
            raise io.sample_error(f"label {shown(labels[i])} is not one of the training labels "
                                  f"{shown(pair[0])} and {shown(pair[1])}", where, i)
        signs.append(np.where(labels == pair[1], 1.0, -1.0))
    return signs[0], signs[1], pair


def regression_targets(y, test=None, source=None, test_source=None):
    """(y, test) of a squared loss: real numbers, finite (a string or NaN target: its line)."""
    out = []
    for labels, where in ((y, source), (test, test_source)):
        if labels is None:
            out.append(None)
            continue
        labels = np.asarray(labels)
        if labels.dtype.kind not in "biuf":
            raise io.sample_error(f"regression targets must be numbers, got {shown(labels[0])!r}", where, 0)
        out.append(glm.labels_for("squared", labels, source=where)[0])
    return out[0], out[1]


def class_labels(y, test=None, classes=None, source=None, test_source=None):
    """Softmax labels: (y, test) as class numbers 0 … K−1, and the K class labels in that
    order (``classes_``). Without ``classes`` the classes are the labels there are, sorted,
    as scikit-learn and liblinear take them (0 … K−1; 1 … K; 2, 5, 9; strings); ``classes``
    K makes them 0 … K−1, or 1 … K when no label is 0 (``label_base``), classes without
    samples included. A test label of no class is class K: the metrics count it wrong and
    leave it out of the log-loss."""
    y = np.asarray(y)
    if classes is not None:
        if y.dtype.kind != "f":
            raise InputError(f"classes={classes} numbers the classes 0 … K-1 or 1 … K, and these labels are not "
                             "numbers: leave classes out", path=source)
        base = label_base(y, classes)
        y, k = glm.labels_for("softmax", y - base, classes, source=source)
        names = np.arange(k) + base
    else:
        names, y = np.unique(y, return_inverse=True)
        if len(names) < 2:
            raise io.sample_error(f"every label is {shown(names[0])}: softmax needs two classes or more", source, 0) \
                if len(names) else InputError("no labels", path=source)
        names = whole(names)
        y, k = y.astype(np.float64), len(names)
    return y, None if test is None else class_codes(test, names), names, k


def whole(labels):
    """Labels that are whole numbers as integers (predictions give back 1, not 1.0)."""
    if labels.dtype.kind == "f" and (labels == np.round(labels)).all() and np.abs(labels).max() < 2 ** 53:
        return labels.astype(np.int64)
    return labels


def class_codes(labels, names):
    """Class numbers of ``labels`` among the class labels ``names``; len(names) for the others."""
    labels, k = np.asarray(labels), len(names)
    if (labels.dtype.kind in "US") != (names.dtype.kind in "US"):         # strings against numbers
        return np.full(len(labels), float(k))
    at = np.minimum(np.searchsorted(names, labels), k - 1)
    return np.where(names[at] == labels, at, k).astype(np.float64)


def label_base(y, classes=None):
    """1 when softmax labels are 1 … K (LIBSVM's multi-class files: iris, dna, letter):
    no label 0, and the largest is ``classes`` when that is given; else 0. Classes
    are then the labels minus 1, and predictions give the labels back."""
    y = np.asarray(y, np.float64)
    if not len(y) or y.min() < 1 or (y != np.round(y)).any():
        return 0
    return int(classes is None or y.max() == classes)


# default samples per mini-batch. An epoch's cost on one process hardly depends on it, but the
# model's does: in batches of 1000 (the default until 2026-11), 10 epochs of AdaGrad ended far from the
# optimum where feature values are heavy-tailed (Zipf counts up to 300: test acc 0.783, objective 0.187,
# optimum 0.132; scikit-learn 0.846), in batches of 64 at 0.840 (0.141); unscaled covtype 0.798 -> 0.850.
# 32 gained under 0.01 more and cost svm on counts up to 40 0.013. On several workers every batch is a
# round of messages: --batch 1000 is faster there (and another model)
BATCH = 64


class GLM(Linear):
    """(1/n) Σ ℓ(x_i·W, y_i) + reg · R(W) by mini-batch SGD with the training
    strategy of Spark MLlib (sendgradient), PS2 (adam), ColumnSGD (column), MLlib*
    (modelavg) or Petuum (modelsum); see tux2.udfs.glm. Parameters are those of
    ``tux2 run lr``; ``reg`` None (the default) is 1/n for n training samples, the
    regularisation of scikit-learn's and liblinear's default C = 1; ``batch`` None is
    64 samples, or n/20 for fewer than 1,280 (0: all); ``bias`` (default
    True, as Spark MLlib, Vowpal Wabbit and scikit-learn fit one) gives every sample a
    constant feature 1, whose weight, the intercept, is the last row of ``coef_``.
    ``warm_start``: a ``fit`` after the first starts from the weights it learned
    (``start_from(model)``: from another fit's or a saved model's; ``--init-model DIR``),
    features by index, AdaGrad's or Adam's per-feature history going on (``step_state_``, a row
    per feature, or per feature of ``features_`` for sparse indices,
    saved with the model), so a fit continued is the longer fit; the labels, the intercept
    and an FM's form must be the model's. ``tol`` > 0: training stops once an epoch lowers the
    objective by less than ``tol`` of its value (BlockPG's rule; scikit-learn's and liblinear's
    stopping tolerance). ``early_stop`` N > 0 (with test data): training stops once the test
    loss (log-loss; hinge loss for the hinge loss; RMSE for the squared loss) has not fallen
    below its lowest for N epochs, and the model is that of the lowest (``best_epoch_``).
    ``fit(X, y, sample_weight=s)`` counts sample i's loss s_i times, f(W) = (1/n) Σ s_i ℓ_i + λ R(W),
    as scikit-learn's (C Σ s_i ℓ_i + R at C = 1/(nλ)); ``class_weight`` (LogisticRegression,
    LinearSVM, Softmax: None, "balanced" or {label: weight}, as scikit-learn's) multiplies it by
    the weight of the sample's class, "balanced" being n / (K · the class's count).
    ``weight_column`` (``--weight-column``, LightGBM's ``weight_column``): the column of a table
    file or DataFrame that holds the samples' weights (a header name or 1-based number), read
    apart from the features as the labels are; a test or scored table's, when it has it, weighs
    the metrics (as ``score(X, y, sample_weight=)``)."""

    bounds = dict(reg=NONNEG_NUMBER, batch=NONNEG, eta=POSITIVE, decay=NONNEG_NUMBER, epochs=NONNEG, seed=SEED,
                  classes=integer(2, 100_000), factors=integer(1, 100_000), init_std=NONNEG_NUMBER,
                  tol=NONNEG_NUMBER, early_stop=NONNEG, min_count=COUNT)
    choices = dict(strategy=glm.STRATEGIES, optimizer=glm.OPTIMIZERS, driver=(True, False), penalty=("l2", "l1"),
                   loss=("logistic", "hinge", "squared"), bias=(True, False), norm=("auto", "l2", "none"),
                   warm_start=(True, False), **READ_CHOICES)
    flags = dict(reg=("lam", "the regularisation weight λ"), penalty=("reg", "the regulariser, 'l2' or 'l1',"))

    def __init__(self, strategy="sendgradient", optimizer=None, driver=False, penalty="l2", reg=None, batch=None,
                 eta=None, decay=0.0, epochs=10, seed=0, bias=True, zero_based="auto", duplicates="error",
                 min_count=1, label_column=None, warm_start=False, tol=0.0, early_stop=0, class_weight=None,
                 weight_column=None):
        self._keep(locals())

    classes, factors, init_std, norm = None, 0, 0.01, "none"       # Softmax and FM make these parameters
    class_weight = None                     # LogisticRegression, LinearSVM and Softmax make it a parameter
    ADAGRAD_ETA = 0.5                       # AdaGrad's default step (FM: 0.1)

    def check_params(self):
        super().check_params()
        if glm.mismatch(self.strategy, self._resolved()[0]):       # before any data is read
            raise ValueError(glm.mismatch(self.strategy, self._resolved()[0]))
        cw = self.class_weight
        if not (cw is None or (isinstance(cw, str) and cw == "balanced") or isinstance(cw, dict)):
            raise ValueError(f"{type(self).__name__}: class_weight must be None, 'balanced' or a dict "
                             f"{{label: weight}}; got {cw!r}")
        for key, w in (cw.items() if isinstance(cw, dict) else ()):
            if isinstance(w, bool) or not isinstance(w, (int, float, np.number)) or not (math.isfinite(w) and w >= 0):
                raise ValueError(f"{type(self).__name__}: class_weight[{key!r}] must be a finite number >= 0; "
                                 f"got {w!r}")

    def fit(self, data, test=None, *, sample_weight=None, workers=1, slack=0, partitions=None, threads=None,
            callbacks=(), checkpoint=None):
        """``Estimator.fit`` with ``sample_weight``: a weight s_i >= 0 per training sample (a number:
        the same for each), whose loss counts s_i times, as scikit-learn's (a weight 2 is the
        sample twice; λ's default stays 1/n for the n samples given). It travels with the data
        to every worker; a checkpoint resumes only with the same weights."""
        self._sample_weight = sample_weight         # load_data reads it: this fit's, no parameter
        try:
            return super().fit(data, test, workers=workers, slack=slack, partitions=partitions, threads=threads,
                               callbacks=callbacks, checkpoint=checkpoint)
        finally:
            vars(self).pop("_sample_weight", None)

    def _meta(self):
        """model.json; a dict ``class_weight`` as its [label, weight] pairs (JSON's keys are strings
        only, and labels may be numbers), which ``load`` makes the dict again."""
        cw = (vars(self).get("_fit_params") or self.get_params()).get("class_weight")
        if not isinstance(cw, dict):
            return super()._meta()
        plain = lambda x: x.item() if isinstance(x, np.generic) else x       # noqa: E731 (numpy's scalars: JSON's)
        return {**super()._meta(), "class_weight": [[plain(k), float(w)] for k, w in cw.items()]}

    @classmethod
    def _saved_params(cls, meta):
        params = super()._saved_params(meta)
        cw = params.get("class_weight")
        if isinstance(cw, list):            # _meta's pairs (a malformed list: check_params names it)
            try:
                params["class_weight"] = {k: w for k, w in cw}
            except (TypeError, ValueError):
                pass
        return params

    def _params_used(self, params):
        cw = params.get("class_weight")
        if isinstance(cw, dict):        # as JSON keeps it (checkpoints): (label, weight) pairs, sorted
            params = {**params, "class_weight": sorted([shown(k), float(w)] for k, w in cw.items())}
        return super()._params_used(params)

    def _choose_loss(self, labels):
        """Set the loss of a fit on ``labels``: the class's own (LogisticRegression's is the
        multinomial one for more than two labels)."""

    def _unused(self):
        return [("driver", f"--strategy {self.strategy}", "--strategy sendgradient")] if self.strategy != "sendgradient" else []

    def _resolved(self):
        # AdaGrad by default (the strategies' own update is sgd, tux2.udfs.glm): per-feature steps
        # suit power-law and unnormalised features, where plain SGD at one step size crawls. Features
        # with values above 1 take steps divided by their root mean square (udfs.glm): one step for every
        # data set divided by the counts' 99.9th percentile had fixed raw counts but took one-hot rows
        # with an age column from 0.817 to 0.643, the majority class. _report says when it overshoots
        optimizer = self.optimizer or ("adam" if self.strategy == "adam" else "adagrad")
        return optimizer, self.eta if self.eta is not None else {"adam": 0.01, "adagrad": self.ADAGRAD_ETA}.get(optimizer, 1.0)

    def prepare(self, data, parts):
        g, y = data.train, data.labels
        self._choose_loss(y)
        if self.early_stop and data.test is None:
            raise Tux2Error(f"--early-stop {self.early_stop} (early_stop=) watches a test loss: "
                            "give test data (--test FILE; from Python: fit(data, test))")
        mu, counts = None, raw_counts(g.values) if self.factors and self.norm == "auto" else None
        one_hot = bool(self.factors) and self.norm == "auto" and not counts and binary_rows(g.values)
        norm_before = self.norm_                    # the model's, for a warm start
        self.norm_ = ("l2" if counts or one_hot else "none") if self.norm == "auto" else self.norm
        where = (data.source, getattr(data.test, "source", None))
        ymean, yscale = 0.0, 1.0
        if self.loss == "squared":
            y, test_labels = regression_targets(y, data.test_labels, *where)
            labels, k, codes = np.array([]), 1, None
        elif self.loss == "softmax":
            y, test_labels, labels, k = class_labels(y, data.test_labels, self.classes, *where)
            codes = y
        else:
            (y, test_labels, labels), k = binary_labels(y, data.test_labels, *where), 1
            codes = y > 0
        weights = class_weights(self.class_weight, codes, labels) if codes is not None else None
        if data.weights is not None:
            weights = data.weights if weights is None else weights * data.weights
        if weights is not None and not weights.any():
            raise InputError("the class weights give every sample weight zero: nothing to learn from")
        if self.loss == "squared":
            ymean, yscale = self._target_units(y, weights)
            y = (y - ymean) / yscale
        # dense columns centred, the intercept takes their means (an FM's too: glm.uncentred); not rows
        # scaled to unit length, whose lengths are of the raw values
        if self.bias and self.norm_ == "none":
            g, mu = glm.centre(g, weights=weights)
        if self.norm_ == "l2":
            g = glm.unit_rows(g)
        if self.bias:                   # an intercept: the constant feature 1, last, unpenalised but in an FM
            g = with_bias(g)
        base = int(self.loss == "softmax" and labels.dtype.kind == "i" and (labels == np.arange(1, k + 1)).all())
        optimizer, eta = self._resolved()
        lam = self.reg if self.reg is not None else 1.0 / max(g.n_src, 1)
        # BATCH samples, and at least 20 steps an epoch (450 iris-like samples in one batch took 10 steps
        # in 10 epochs and ended at 0.61; 0.91 in batches of 22)
        batch = self.batch if self.batch is not None else min(BATCH, max(1, g.n_src // 20))
        prog, graph, assignment, edata, perm = glm.setup(
            g, y, self.loss, self.strategy, parts=parts, driver=self.driver, seed=self.seed, reg=self.penalty,
            lam=lam, batch=batch or None, eta=eta, decay=self.decay, classes=self.classes, evaluate=True,
            factors=self.factors, optimizer=optimizer, **({"init_std": self.init_std} if self.factors else {}),
            weights=weights, free=g.n_dst - 1 if self.bias and not self.factors else None,   # the intercept
            epoch=vars(self).get("epochs_trained_", 0) if self._warms() else 0)     # the step schedule goes on
        seen, span = sparse_features(data)
        alien = unknown_test_entries(data.train, data.test)
        warm = self._warm(prog, g.n_dst, mu, labels, norm_before, seen) if self._warms() else None
        if self.loss == "squared":          # what record's test metrics and read_model's weights take
            self.target_mean_, self.target_scale_ = ymean, yscale
            self.offset_ = ymean if self.factors else 0.0
        empty = np.bincount(g.src, minlength=g.n_src) == 0      # samples without features (and intercept)
        return Setup(graph, prog, {"assignment": assignment, "edge_data": edata}, test=data.test, warm=warm,
                     test_labels=test_labels, n=g.n_src, nnz=data.train.num_edges + g.n_src * self.bias,
                     eta=eta, lam=lam, batch=batch, mu=mu, counts=counts, one_hot=one_hot, ymean=ymean, yscale=yscale,
                     zero=glm.zero_objective(self.loss, k, y, weights) * yscale ** 2,
                     empty_loss=glm.zero_loss(self.loss, y[empty], k, None if weights is None else weights[empty]),
                     source=data.source,
                     top=float(np.max(np.abs(data.train.values))) if data.train.values is not None
                     and data.train.num_edges else 1.0,
                     zero_based=data.facts.get("zero_based", False), label_base=base, n_classes=k, labels=labels,
                     feature_names=data.facts.get("feature_names"), label_column=data.facts.get("label_column"),
                     read_as=data.facts.get("read_as"), label_dtype=data.facts.get("label_dtype"),
                     features=seen, span=span, tail=data.facts.get("tail"), kept_entries=data.train.num_edges,
                     weights=None if weights is None else (float(weights.sum()), float(weights.mean()),
                                                           float(weights.min()), float(weights.max())),
                     weighted_by=data.facts.get("weighted_by"), test_weights=data.test_weights,
                     alien=alien, meta={"optimizer": optimizer, "eta": eta, "lam": lam, "batch_used": batch,
                                        "samples": g.n_src, **({"label_base": base} if self.loss == "softmax" else {})})

    def _target_units(self, y, weights=None):
        """(ȳ, σ) of a squared loss's targets: training fits (y − ȳ) / σ, so that the steps' defaults
        suit targets in any units (years ~2000, prices ~10⁵: AdaGrad's steps are ±η per weight);
        ȳ is the mean with an intercept (the GLMs' bias, an FM's offset; libFM's w0 starts there too),
        else 0, σ the root mean square of y − ȳ (1 when that is 0). For the GLM the minimiser is the
        same in either units (loss and penalty both scale by σ²; the intercept is not penalised, as
        scikit-learn's Ridge's). A warm start
        keeps the model's (ȳ, σ), so a fit continued is the longer fit. ``weights``: the means
        weighted, each sample counted as often as it weighs."""
        if self._warms() and "target_scale_" in vars(self):
            return float(self.target_mean_), float(self.target_scale_)
        if not len(y):
            return 0.0, 1.0
        mean = float(np.average(y, weights=weights)) if (self.bias or self.factors) else 0.0
        scale = float(np.sqrt(np.average(np.square(y - mean), weights=weights)))
        return mean, scale if scale > 0 and np.isfinite(scale) else 1.0

    def _original(self, W, s):
        """The trained weights in the data's units: dense columns uncentred (glm.uncentred) and,
        for a squared loss, the targets' scale and mean put back (an FM's V by √σ, its mean
        in ``offset_``; a GLM's mean in the intercept). Softmax's intercepts, which λ leaves free
        along (1, …, 1) (no probability changes with it; AdaGrad's per-weight steps drift along it),
        sum to 0, as scikit-learn's."""
        fm = bool(self.factors)
        W = glm.uncentred(W, s.mu, fm)
        if W is not None and self.loss == "softmax" and self.bias:
            W = np.array(W, np.float64)
            W[-1] -= W[-1].mean()
        if W is None or self.loss != "squared":
            return W
        W = np.array(W, np.float64)
        if fm:
            W[:, 0] *= s.yscale
            W[:, 1:] *= math.sqrt(s.yscale)
        else:
            W *= s.yscale
            if self.bias:
                W[-1] += s.ymean
        return W


    def _warm(self, prog, d, mu, labels, norm, features=None):
        """Wrap ``prog``'s initialiser so that the features the model learned before start
        from its weights, in the units this fit trains in (dense columns centred by this
        data's means μ, glm.centre: the inverse of ``glm.uncentred``); features beyond the
        model's start as in a new model (``features``: the indices of this fit's, when numbered
        densely). Returns (features given, features) for the header."""
        W = np.array(self.weights_, np.float64)        # the model's rows (features_' when sparse)
        W = W.reshape(len(W), -1)
        had, fm = vars(self).pop("_started_bias", self._bias()), self.algorithm == "fm"
        if self.loss == "squared":                      # the inverse of _original: in the trained units
            ymean, yscale = float(self.target_mean_), float(self.target_scale_)
            if fm:
                W[:, 0] /= yscale
                W[:, 1:] /= math.sqrt(yscale)
            else:
                if had:
                    W[-1] -= ymean
                W /= yscale
        why = None                                      # what of an FM's form this fit lacks, and its flag
        if fm and W.shape[1] != 1 + self.factors:
            why = (f"{W.shape[1] - 1} factors", f"give --factors {W.shape[1] - 1}")
        elif fm and self.norm_ != norm:
            why = (f"samples {'scaled to unit length' if norm == 'l2' else 'as they are'}", f"give --norm {norm}")
        rows = self._model_rows(features, d - had)
        W0, feats = self._start_weights(W, had, d, labels, why, rows)
        if mu is not None:                              # the inverse of glm.uncentred, for this data's μ
            m = np.zeros(d - 1)
            m[:min(len(mu), d - 1)] = mu[:d - 1]
            if not fm:
                W0[-1] += m @ W0[:-1]
            else:
                V = W0[:, 1:]
                s, sq = m @ V[:-1], (V[:-1] * V[:-1]).sum(axis=1)
                W0[:-1, 0] += V[:-1] @ s - sq * m
                W0[-1, 0] += V[-1] @ s - 0.5 * (s @ s - sq @ (m * m)) + W0[:-1, 0] @ m
        # AdaGrad's or Adam's history of the model's features goes on, as in a longer fit
        state = vars(self).get("step_state_", {})
        same = state.get("optimizer") is not None and str(state["optimizer"]) == self._resolved()[0]
        state = {f: np.asarray(v) for f, v in state.items() if same and f != "optimizer" and len(v) == len(W)}
        first, known = prog.init_vertices, rows >= 0
        at = rows                                       # each known feature's row of the history (W's rows)

        def init_vertices(name, data, rng):
            first(name, data, rng)
            if name == prog.types[1].name:
                data["w"].reshape(len(data), -1)[:] = W0
                for f, v in state.items():
                    if f in data.dtype.names and data[f].shape[1:] == v.shape[1:]:
                        data[f][:len(rows)][known] = v[at[known]]
                        if had:
                            data[f][-1] = v[-1]
        prog.init_vertices = init_vertices
        return feats, d - had

    @property
    def _watched(self):
        """The test metric early stopping watches (lower is better)."""
        return {"squared": "test_rmse", "hinge": "test_hinge_loss"}.get(self.loss, "test_logloss")

    _stops_early = property(lambda self: self.early_stop > 0)

    def _converged(self, history):
        if self.tol > 0 and len(history) >= 2:
            prev, now = history[-2]["objective"], history[-1]["objective"]
            if prev - now <= self.tol * abs(prev):
                return (f"  converged: epoch {history[-1]['epoch']} lowered the objective by less than --tol "
                        f"{self.tol:g} of its value ({prev:.6g} to {now:.6g})")
        return None

    def _early(self, history, s):
        """``early_stop`` N: the test loss has not fallen below its lowest for N epochs."""
        key = self._watched
        h = [(r["epoch"], r[key]) for r in history if r.get(key) is not None and math.isfinite(r[key])]
        if not self.early_stop or not h:
            return None
        best = min(range(len(h)), key=lambda j: h[j][1])
        if len(h) - 1 - best < self.early_stop:
            return None
        kept = vars(s).get("best", (np.inf,))[0] <= h[best][1]
        name = {"test_rmse": "test RMSE", "test_hinge_loss": "test hinge loss"}.get(key, "test log-loss")
        return (f"  stopped early: the {name} has not fallen below {h[best][1]:.6g} (epoch "
                f"{h[best][0]}) for {self.early_stop} epoch(s) (--early-stop)"
                + ("; the model is that epoch's" if kept else "; that epoch came before the resume, whose model "
                   "is kept"))

    def _kept(self, s):
        if self.early_stop and "best" in vars(s):
            return {"w": s.best[2]}, {"metric": s.best[0], "epoch": s.best[1]}
        return None

    def _take_kept(self, s, arrays, meta):
        s.best = (float(meta["metric"]), int(meta["epoch"]), arrays["w"])

    def record(self, eng, s):
        ctx = eng.context()
        units = s.yscale ** 2               # a squared loss trains on targets / σ: its objective in y's units
        empty = s.empty_loss / max(s.n, 1)  # samples without features score 0: the eval pass never visits them
        rec = {"objective": (float(ctx["objective"]) + empty) * units,
               "loss": (float(ctx["loss"] / max(s.n, 1)) + empty) * units,
               "nnz": int(ctx["nnz"]), "clock": eng.clock}
        W = self._original(glm.weights(eng), s) if s.test is not None else None
        rec.update(self._test_metrics(s, W))
        now = rec.get(self._watched)
        if self.early_stop and now is not None and math.isfinite(now) and now < vars(s).get("best", (np.inf,))[0]:
            s.best = (now, eng.iteration, W)             # the model early stopping keeps (rank 0's)
        return rec

    def _header(self, s, parts, world):
        return [f"tux2 {__version__} {self.algorithm} ({self.loss}, {self.penalty}, strategy {self.strategy}): "
                f"{s.source}"] + ([f"  read as: {s.read_as}"] if s.read_as else []) + [
                f"  {s.n} samples, {s.graph.n_dst - self.bias} features{sparse_note(s)}"
                f"{' + intercept' if self.bias else ''}, "
                f"{s.nnz - s.n * self.bias} non-zeros; lambda={s.lam:.6g}{' (1/n)' if self.reg is None else ''}, "
                f"batch {min(s.batch or s.n, s.n)}, eta {s.eta}, P={parts}" + (f", {world} workers" if world > 1 else "")] \
            + ([f"  targets trained as " + (f"(y - {s.ymean:.6g})" if s.ymean else "y") + f" / {s.yscale:.6g} (their "
                + ("mean and " if s.ymean else "") + "root mean square; predictions and metrics in y's units)"]
               if self.loss == "squared" else []) \
            + ([f"  {np.count_nonzero(s.mu)} dense features centred for training (their means go to the intercept)"]
               if s.mu is not None else []) \
            + ([f"  samples scaled to unit length" + (f" (auto: the values are whole numbers up to {s.counts:g})"
                                                       if s.counts else " (auto: one-hot rows, every value 1)"
                                                       if s.one_hot else "")] if self.norm_ == "l2" else []) \
            + ([f"  samples weighted ({self._weighting(s)}): sum {s.weights[0]:.6g}, mean {s.weights[1]:.4g}, from "
                f"{s.weights[2]:.4g} to {s.weights[3]:.4g}"] if s.weights else []) \
            + self._started(s) + self._label_notes(s) + self._alien_note(s) + self._rounds_note(s, world, parts)

    @staticmethod
    def _alien_note(s):
        """A line when a tenth or more of the test set's non-zeros are on features the
        training data has none of (another set's test file, or another feature numbering)."""
        entries, of, features = s.alien
        return [f"  test: {entries:,} of its {of:,} non-zeros are on {features:,} features the training data has "
                "none of" + (" (or too few of: --min-count)" if s.tail else "") + " (weight 0)"] \
            if entries and 10 * entries >= of else []

    def _weighting(self, s):
        """What weighs the samples, as the header says it."""
        cw = self.class_weight
        by = ([] if cw is None else [f"class_weight {cw!r}" if isinstance(cw, str) else "class_weight"]) \
            + (["sample_weight"] if vars(self).get("_sample_weight") is not None else []) \
            + ([s.weighted_by] if s.weighted_by else [])
        return " × ".join(by) or "sample_weight"

    def _rounds_note(self, s, world, parts):
        """On several workers or partitions, a one-step strategy's every mini-batch is a
        round between them: at a small batch that, not the computing, sets an epoch's time."""
        rounds = -(-s.n // min(s.batch or s.n, s.n))
        if max(world, parts) < 2 or self.strategy in ("modelavg", "modelsum") or rounds < 200:
            return []
        big = min(1000, s.n)
        how = ("of messages between the workers (~1 ms or more each" if world > 1 else
               f"between the {parts} partitions (~0.4 ms each, in Python")
        return [f"  note: {rounds:,} mini-batches an epoch, each a round {how}, over the computing): --batch {big} "
                f"makes {-(-s.n // big):,} (another model), --strategy modelavg one"
                + ("" if world > 1 else ", one partition (--threads 1, the default) none")]

    def _label_notes(self, s):
        """The classes, unless they are 0 … K−1; a note on test labels of no class."""
        if self.loss != "softmax":
            return []
        k, names = s.n_classes, s.labels
        unseen = int((s.test_labels >= k).sum()) if s.test is not None else 0
        plain = names.dtype.kind == "i" and (names == np.arange(k)).all()
        multinomial = [f"  {k} classes: the multinomial (softmax) model, as tux2 run softmax and scikit-learn's "
                       "LogisticRegression fit it"] if self.algorithm == "lr" else []
        return multinomial + ([] if plain else [f"  {k} classes: {', '.join(map(shown, names[:8]))}"
                                                f"{' …' if k > 8 else ''}, as predictions write them"]) \
            + ([f"  note: {unseen} test samples have labels of no training class: counted as errors and left "
                "out of the test log-loss"] if unseen else [])

    def _line(self, rec, n):
        return (f"epoch {rec['epoch']:3d}/{n}  objective {rec['objective']:.6g}  "
                + (f"test acc {rec['test_accuracy']:.4f}  " if "test_accuracy" in rec else "")
                + (f"logloss {rec['test_logloss']:.4f}  " if "test_logloss" in rec else "")
                + (f"auc {rec['test_auc']:.4f}  " if "test_auc" in rec else "")
                + (f"test rmse {rec['test_rmse']:.6g} mae {rec['test_mae']:.6g} r2 {rec['test_r2']:.4g}  "
                   if "test_rmse" in rec else "")
                + f"time {rec['time_s']:.3f}s")

    _stop = "objective is not finite at epoch {n}: lower --eta (now {est._eta})"

    def _report(self, s):
        """A note when the objective ended well above its first epoch's (plain SGD at eta 1
        on raw counts), or above the all-zero model's (AdaGrad at eta 50 on raw counts):
        the step is too large, though not yet infinite."""
        h = self.history_
        if not h:
            return []
        first, last = h[0], h[-1]
        zero = s.zero
        # AdaGrad's and Adam's steps, and an FM's first factors, are already in each feature's units
        # (udfs.glm): scaling the values changes nothing for them
        scale = (f", or scale the feature values (now up to {s.top:g}) to about [-1, 1]"
                 if s.top > 1 and self._resolved()[0] == "sgd" else "")
        rose, worse = len(h) >= 2 and last["objective"] > 1.2 * first["objective"], last["objective"] > zero
        hinge = self.loss == "hinge"            # the all-zero model's hinge loss is 1, its log-loss ln K
        test = None if getattr(s, "test_is_training", False) else last.get("test_hinge_loss" if hinge else
                                                                             "test_logloss")     # not new data
        bound = 1.0 if hinge else math.log(max(s.n_classes, 2))
        unseen = (int((s.test_labels >= s.n_classes).sum()) if self.loss == "softmax" and s.test is not None
                  else 0)
        if not (rose or worse) and test is not None and test > bound and 4 * unseen >= len(s.test_labels):
            # a quarter or more of the test labels are no training class: the test file is labelled
            # otherwise (another set, or a binary file against a multiclass model), not a too large step
            return [f"  note: the test log-loss ended at {test:.4g} (epoch {last['epoch']}), worse than the "
                    f"all-zero model's {bound:.4g}, and {unseen} of {len(s.test_labels)} test samples have labels "
                    "of no training class: is the test file labelled as the training file is?"]
        if not (rose or worse) and test is not None and test > bound and 4 * s.alien[0] >= s.alien[1]:
            # a quarter of the test non-zeros or more weigh 0: another set's features, not a too large step
            return [f"  note: the test {'hinge loss' if hinge else 'log-loss'} ended at {test:.4g} (epoch "
                    f"{last['epoch']}), worse than the all-zero model's {bound:.4g}, and {s.alien[0]:,} of the "
                    f"{s.alien[1]:,} test non-zeros are on features the training data has none of: is the test file "
                    "of the training file's features?"]
        if not (rose or worse) and test is not None and test > bound:
            # the training objective fell, but the test set's scores are confidently wrong (an FM on
            # raw counts or at λ = 1e-6): worse than the all-zero model's
            return [f"  note: the test {'hinge loss' if hinge else 'log-loss'} ended at {test:.4g} (epoch "
                    f"{last['epoch']}), worse than the all-zero model's {bound:.4g}: the model is overconfident on new data; "
                    f"lower --eta (now {s.eta}; try {s.eta / 10:g}), raise --lam (now {s.lam:g})" + scale]
        if not (rose or worse):
            return []
        what = (f"rose from {first['objective']:.6g} (epoch {first['epoch']}) to" if rose else "ended at") \
            + f" {last['objective']:.6g} (epoch {last['epoch']})" \
            + (f", worse than the {'mean predictor' if self.loss == 'squared' else 'all-zero model'} ({zero:.6g})" if worse else "")
        if self.factors and self.init_std >= 1.0:       # the factors' start, not the step (--init-std 1e20 said --eta)
            return [f"  note: the objective {what}: the factors start too large (--init-std {self.init_std:g}, "
                    f"their standard deviation; the default is {type(self).init_std:g}): lower --init-std"]
        return [f"  note: the objective {what}: the step is too large for these features; lower --eta "
                f"(now {s.eta})" + (" or use --optimizer adagrad or adam" if self._resolved()[0] == "sgd" else "")
                + f"; try --eta {s.eta / 10:g}" + scale]

    @property
    def _eta(self):
        return self._resolved()[1]

    STEP_STATE = ("G", "m1", "m2", "b1t", "b2t")      # AdaGrad's and Adam's per-feature history (udfs.glm)

    def read_model(self, eng, s):
        fd = eng.vertex_data(eng.program.types[1].name)
        if fd is None:              # (rank 0 gathers)
            return
        W = self._original(np.asarray(fd["w"]).reshape(len(fd), -1), s)
        self._learned(W[:, 0] if W.shape[1] == 1 else W, s)     # as weights.npz holds it: a vector for one column
        self.label_base_ = s.label_base
        self.step_state_ = {f: np.array(fd[f]) for f in self.STEP_STATE if f in fd.dtype.names}    # features_' rows
        self.step_state_["optimizer"] = np.array(self._resolved()[0])
        self.epochs_trained_ = int(round(float(eng.context()["epoch"])))    # a warm start's too: its decay goes on
        self.best_epoch_ = None
        best = vars(s).get("best") if self.early_stop else None
        if best is not None and best[1] != eng.iteration:   # early stopping keeps the lowest test loss's model
            self._learned(best[2][:, 0] if best[2].shape[1] == 1 else best[2], s)
            self.best_epoch_ = self.epochs_trained_ = best[1]
            self.step_state_ = {}           # (the kept epoch's step history is not kept: a warm start begins anew)
            s.meta["best_epoch"] = best[1]


class LogisticRegression(GLM):
    """Logistic regression: binary for two labels (any two: ±1, 0/1, 'ham'/'spam' …); for K > 2
    labels the multinomial (softmax) model that ``Softmax`` fits, as scikit-learn's
    LogisticRegression does (``multinomial_`` True; ``classes_``, ``coef_`` (K, features),
    ``intercept_`` (K,), ``predict_proba`` (n, K), ``decision_function`` (n, K))."""
    algorithm, multiclass = "lr", True

    @property
    def loss(self):
        """'logistic', or 'softmax' for a model of more than two classes (``multinomial_``)."""
        return "softmax" if vars(self).get("multinomial_") else "logistic"

    @loss.setter
    def loss(self, value):          # a saved model's (model.json's loss)
        self.multinomial_ = value == "softmax"

    def _choose_loss(self, labels):
        # real-valued targets are no classes (scikit-learn's 'continuous'): the binary model's error names regression
        y = np.asarray(labels)
        real = y.dtype.kind == "f" and not np.array_equal(y, np.round(y))
        self.multinomial_ = not real and len(np.unique(y)) > 2


class LinearSVM(GLM):
    """Linear SVM: the hinge loss (any two labels; for more, Softmax or LogisticRegression)."""
    algorithm, loss = "svm", "hinge"


class LinearRegression(GLM):
    """Linear regression: the squared loss ½(x·w − y)² with an l2 (ridge; default λ = 1/n,
    scikit-learn's Ridge alpha = nλ = 1) or l1 (lasso) penalty; y any real numbers. The targets
    train centred and scaled (``target_mean_``, ``target_scale_``); ``coef_`` is in y's units,
    the intercept last; ``predict`` gives the values, ``score`` R². ``decay`` is 0.5 by default
    (the classifiers' 0): a squared loss's gradients do not vanish at the optimum (the residuals
    stay), so a constant step stalls in a noise ball. 10 epochs at the defaults, decay 0 → 0.5
    (scikit-learn's Ridge): objective 9.885 → 9.095 and test RMSE 5.795 → 5.543 (5.555) on a
    Zipf-1.4 raw-count set, 34.49 → 32.09 and 8.419 → 8.089 (8.064) on 90 dense unscaled
    columns, 1.517 → 1.505 and 1.609 → 1.637 (1.627) on the built-in set."""
    algorithm, loss = "linreg", "squared"

    def __init__(self, strategy="sendgradient", optimizer=None, driver=False, penalty="l2", reg=None, batch=None,
                 eta=None, decay=0.5, epochs=10, seed=0, bias=True, zero_based="auto", duplicates="error",
                 min_count=1, label_column=None, warm_start=False, tol=0.0, early_stop=0, weight_column=None):
        self._keep(locals())


class Softmax(GLM):
    """Multinomial (softmax) regression over the K labels the training data has, sorted
    as ``classes_`` (numbers or strings); ``classes`` K numbers them 0 … K−1, or 1 … K
    when no label is 0 (``label_base``), classes without samples included."""
    algorithm, loss, multiclass = "softmax", "softmax", True

    def __init__(self, strategy="sendgradient", optimizer=None, driver=False, penalty="l2", reg=None, batch=None,
                 eta=None, decay=0.0, epochs=10, seed=0, bias=True, classes=None, zero_based="auto",
                 duplicates="error", min_count=1, label_column=None, warm_start=False, tol=0.0, early_stop=0,
                 class_weight=None, weight_column=None):
        self._keep(locals())


class FM(GLM):
    """Degree-2 factorization machine, ŷ = Σ w_j x_j + Σ_{j<k} ⟨v_j, v_k⟩ x_j x_k, with
    ``factors`` F and a logistic, hinge or squared ``loss`` (regression: libFM's ``-task r``; the
    targets train centred and scaled, their mean is ``offset_``, as libFM's w0); ``coef_`` is (w, V): features × (1 + F).
    No intercept by default: ``bias=True``'s constant feature gets factors too, which on
    a9a-shaped one-hot rows ended 10 epochs at 0.469 against 0.395 without it (at η 0.5 and
    the rows as they are; at today's defaults test log-loss 0.3481 against 0.3475). ``norm``:
    "l2" scales each sample to unit length (xLearn's and libffm's default), "none" keeps
    the values, "auto" (the default) is l2 when they are raw counts (``raw_counts``) or
    one-hot rows (every value 1, ``binary_rows``): at η 0.5 an FM on word counts ended above
    the all-zero model, and on hashed one-hot CTR rows (39 a sample) at 0.94 test log-loss
    against LR's 0.51; unit rows on dense unscaled sets (UCI spam, pima) cost 6 to 10 points;
    ``norm_``: what the fit used. With ``bias`` and unscaled rows, dense columns train
    centred, as for the GLMs. AdaGrad's ``eta`` defaults to 0.1 (the GLMs' 0.5): its first
    step moves every factor of a feature by ±η whatever the gradient, and the pairwise term
    multiplies those moves (hashed CTR rows of main effects only, unit length: 0.5 ended at
    test log-loss 0.477, rising from 0.445 after epoch 1, above LR's 0.464; 0.1 at 0.438;
    libffm's and xLearn's 0.2 are per-sample steps)."""
    algorithm = "fm"
    ADAGRAD_ETA = 0.1

    def __init__(self, strategy="sendgradient", optimizer=None, driver=False, penalty="l2", reg=None, batch=None,
                 eta=None, decay=0.0, epochs=10, seed=0, bias=False, loss="logistic", factors=8, init_std=0.01,
                 norm="auto", zero_based="auto", duplicates="error", min_count=1, label_column=None, warm_start=False,
                 tol=0.0, early_stop=0, weight_column=None):
        self._keep(locals())


def binary_rows(values):
    """True when every feature value is 1 (one-hot or hashed categorical rows, as Criteo's and
    a9a's; None: a file of bare indices)."""
    return values is None or bool(np.all(np.asarray(values) == 1))


def raw_counts(values, at_least=4):
    """The largest feature value when the values look like raw counts (whole numbers,
    some at least ``at_least``), else None: text features as bag-of-words counts."""
    if values is None or not len(values):
        return None
    top = float(np.max(values))
    return top if top >= at_least and np.all(values == np.floor(values)) else None


class BlockPG(Linear):
    """L1 logistic regression, Σ log(1 + exp(−y x·w)) + reg ‖w‖₁ (liblinear's objective
    with C = 1/reg), by block proximal gradient (paper §4, Fig. 7). Parameters are
    those of ``tux2 run blockpg``; ``form="newton"``: a proximal Newton step per epoch
    (udfs.blockpg.newton_program), for raw counts; ``form="kappa"``: a proximal step per
    block under the κ bound, fast on 0/1 values; ``form="auto"`` (the default):
    kappa when each sample's values are equal (``blockpg.even_rows``) and a sample has under 8
    features per block, else newton.
    ``block_size`` None: 500 for kappa; for newton the largest power of two up to 512 in
    which a sample has on average at most 1.25 of its features (``_newton_block``); ``coef_``: the weights (``intercept_``
    with ``bias``); ``form_`` and ``block_size_``: the form and block size the fit
    used (model.json: form_used, block_size_used). ``warm_start``: a ``fit`` after the first
    starts from the weights it learned (``start_from(model)``; ``--init-model DIR``), features
    by index, the margins computed from them; the labels and the intercept must be the model's.
    From a model at the optimum the first epoch stays there; shrinking begins anew.)"""

    algorithm = "blockpg"
    bounds = dict(reg=NONNEG_NUMBER, block_size=integer(1, 2 ** 31 - 1), epochs=NONNEG, tol=NONNEG_NUMBER,
                  shrink=number(0, 1, below=True), shrink_rest=integer(0, 1_000_000), seed=SEED, min_count=COUNT)
    choices = dict(form=("auto", "kappa", "newton"), bias=(True, False), warm_start=(True, False), **READ_CHOICES)
    flags = dict(reg=("lam", "the L1 weight λ"))

    def __init__(self, reg=1.0, block_size=None, epochs=20, tol=0.0, shrink=0.9, shrink_rest=2, bias=False,
                 partitioner="bicut", seed=0, form="auto", zero_based="auto", duplicates="error", label_column=None,
                 warm_start=False, min_count=1):
        self._keep(locals())

    KAPPA_NEWTON = 8        # auto: newton when a sample has this many features per block on average

    def _form(self, binary, kappa=None):
        """auto: kappa only where each sample's values are equal (0/1, one-hot, or such rows
        scaled) and few of a sample's features share a block: the paper's setting, where κ
        is the bound's natural weight. Values that differ within a sample (unscaled columns,
        tf-idf, counts) make it loose for the large ones (pima: 20 epochs ended 4 % above
        liblinear's optimum, at the majority class); the newton form needs no bound."""
        if self.form != "auto":
            return self.form
        return "kappa" if binary and kappa is not None and kappa < self.KAPPA_NEWTON else "newton"

    KAPPA_BLOCK = 1.25      # newton's default block: a sample has this many of its features in one, on average

    def _block(self, form, samples, features):
        """``block_size``, else 500 (kappa) or for newton the largest power of two up to 512
        holding KAPPA_BLOCK of a sample's features (blocks of 1: a message round per feature
        with workers); the data alone decides, so workers run the one-process blocks."""
        if self.block_size or form != "newton":
            return self.block_size or 500
        b = 512
        while b > 1 and len(samples) and blockpg.block_counts(samples, features, b).mean() > self.KAPPA_BLOCK:
            b //= 2
        return b

    def prepare(self, data, parts):
        g, y = data.train, data.labels
        y, test_labels, labels = binary_labels(y, data.test_labels, data.source, getattr(data.test, "source", None))
        if self.bias:                             # the test set gets its bias in _scores
            g = with_bias(g)
        counts = raw_counts(g.values)
        binary = blockpg.even_rows(g.src, g.values, g.n_src)
        feat, perm = blockpg.shuffle_features(g.dst, g.n_dst, seed=self.seed)
        # the kappa form's step is 1/κ of a coordinate's Newton step, κ the sample's features in the block:
        # on dense or one-hot rows (a9a: 14 of 123 features, all in one block) it crawls
        per_edge = blockpg.block_counts(g.src, feat, self._block("kappa", g.src, feat)) \
            if self.form == "auto" and binary and g.num_edges else None
        kappa = float(per_edge.mean()) if per_edge is not None else None
        form = self._form(binary, kappa)
        block = self._block(form, g.src, feat)
        start = warm = None
        seen, span = sparse_features(data)
        if self._warms():               # the model's weights, by feature index, in the shuffled ids
            had = vars(self).pop("_started_bias", self._bias())
            W = np.asarray(self.weights_, np.float64).reshape(-1, 1)       # the model's rows
            W0, feats = self._start_weights(W, had, g.n_dst, labels, rows=self._model_rows(seen, g.n_dst - had))
            start = np.zeros(g.n_dst)
            start[perm] = W0[:, 0]
            warm = (feats, g.n_dst - had)
        prog = blockpg.program(y, g.values, g.src, feat, g.n_dst, lam=self.reg, block_size=block,
                               shrink=self.shrink, rest=self.shrink_rest, form=form, kappa=per_edge, start=start)
        graph = BipartiteGraph(g.src, feat, None, g.n_src, g.n_dst, g.type_names, data.source)
        opts = {"favorite": 0} if self.partitioner in ("bicut", "aweto") else None
        return Setup(graph, prog, {"partitioner": self.partitioner, "partitioner_options": opts}, test=data.test,
                     test_labels=test_labels, perm=perm, warm=warm, source=data.source, counts=counts, form=form, labels=labels,
                     kappa=kappa, block=block, zero_based=data.facts.get("zero_based", False), meta={"samples": g.n_src},
                     features=seen, span=span, tail=data.facts.get("tail"), kept_entries=data.train.num_edges,
                     feature_names=data.facts.get("feature_names"), label_column=data.facts.get("label_column"),
                     read_as=data.facts.get("read_as"), label_dtype=data.facts.get("label_dtype"))

    def record(self, eng, s):
        ctx = eng.context()
        rec = {"objective": float(ctx["objective"]), "loss": float(ctx["loss_total"]), "nnz": int(ctx["nnz"]),
               "clock": eng.clock}
        fw = eng.vertex_data("feature") if s.test is not None else None       # gathered on rank 0
        return {**rec, **self._test_metrics(s, fw["w"][s.perm] if fw is not None else None)}

    def _header(self, s, parts, world):
        d = s.graph.n_dst
        b = max(1, min(s.block, d))        # 500 on 19 features is one block of 19
        per = "sweep" if s.form == "newton" else "epoch"
        why = ("" if self.form != "auto" else f" (auto: the values are whole numbers up to {s.counts:g})" if s.counts
               else " (auto: the values differ within a sample)" if s.kappa is None
               else f" (auto: {s.kappa:.1f} features of a sample per block, too many for the kappa bound)"
               if s.form == "newton" else f" (auto: equal values in each sample, {s.kappa:.1f} features of a "
               "sample per block)")
        return [f"tux2 {__version__} blockpg: {s.source}"] + ([f"  read as: {s.read_as}"] if s.read_as else []) + [
                f"  {s.graph.n_src} samples, {d} features{sparse_note(s)}, {s.graph.num_edges} non-zeros; "
                f"lambda={self.reg}, "
                f"{s.form} form{why}, blocks of {b} ({-(-d // b)} per {per}), P={parts} ({self.partitioner})"
                + (f", {world} workers" if world > 1 else "")] + self._started(s) \
            + ([f"  note: the feature values are raw counts (up to {s.counts:g}), on which the kappa form's "
                "curvature bound is loose and converges slowly; --form newton (form='newton') reaches the "
                "optimum in far fewer epochs"] if self.form == "kappa" and s.counts else []) \
            + ([f"  note: {rounds:,} blocks an epoch, each a round of messages between the workers (~1 ms or more "
                f"each, so {rounds / 1000:,.0f} s or more an epoch over the computing); a larger --block-size "
                "makes fewer (the same optimum, reached along another path), one process needs none"]
               if world > 1 and (rounds := -(-d // b) * (blockpg.INNER if s.form == "newton" else 1)) >= 2000 else [])

    def _line(self, rec, n):
        return (f"epoch {rec['epoch']:3d}/{n}  objective {rec['objective']:.6g}  non-zeros {rec['nnz']}  "
                + (f"test acc {rec['test_accuracy']:.4f}  " if "test_accuracy" in rec else "")
                + (f"logloss {rec['test_logloss']:.4f}  " if "test_logloss" in rec else "")
                + (f"auc {rec['test_auc']:.4f}  " if "test_auc" in rec else "")
                + f"time {rec['time_s']:.3f}s")

    def _converged(self, history):
        """The objective fell by less than ``tol`` (relative) over the last
        shrink_rest + 1 epochs, in which every feature was examined."""
        window = self.shrink_rest + 1 if self.shrink > 0 else 1
        if self.tol > 0 and len(history) > window:
            prev, now = history[-1 - window]["objective"], history[-1]["objective"]
            if prev - now <= self.tol * abs(prev):
                return f"  converged: relative decrease below {self.tol} over {window} epoch(s)"
        return None

    def read_model(self, eng, s):
        fw = eng.vertex_data("feature")
        if fw is not None:
            self._learned(np.asarray(fw["w"])[s.perm], s)
        self.form_, self.block_size_ = s.form, s.block     # what "auto" and None became

    def _restore(self, directory, meta):
        super()._restore(directory, meta)
        self.form_, self.block_size_ = meta.get("form_used"), meta.get("block_size_used")

    def _meta(self):
        ctx = self.run_.get("context") or {}
        return {**super()._meta(), "epochs": self.run_.get("iteration"), "nnz": int(ctx.get("nnz", 0)),
                "form_used": getattr(self, "form_", None), "block_size_used": getattr(self, "block_size_", None)}
