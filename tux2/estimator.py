"""``tux2.Estimator``: an algorithm with scikit-learn's conventions on top of the one
runner (tux2.runner), for the built-in algorithms (tux2.estimators) and your own.

Parameters are the constructor's arguments, stored as attributes under their own
names (``get_params``/``set_params``, so ``sklearn.base.clone`` and grid search
work); ``fit`` trains and returns the estimator; what it learned lives in attributes
ending in ``_``, among them ``history_``, the records ``tux2 run … --metrics``
writes. A subclass fills in three hooks:

* ``prepare(data, parts)`` → ``tux2.Setup(graph, program, engine_options, **facts)``:
  ``data`` is a ``tux2.Dataset`` (``data.train``, ``data.test``, …; ``load_data``
  makes it from what ``fit`` was given), ``parts`` the number of partitions;
* ``record(eng, setup)`` → a dict of metrics for the iteration just run (optional);
* ``read_model(eng, setup)``: read the learned state out of the engine, e.g.
  ``eng.vertex_data("item")`` (a collective: gathered on rank 0, None elsewhere).

``fit(data, workers=N)`` runs those hooks in N processes over ZeroMQ; ``save(dir)``
and ``load(dir)`` write and read the directory ``tux2 run … --out`` writes.
"""
from collections.abc import Iterable
import inspect
import math
import os

from tux2 import files
from tux2.errors import CheckpointError, InputError, Tux2Error, not_fitted
from tux2.io import temporary_copies
from tux2.params import NONNEG, PROCESSES, flag_hints, unknown
from tux2.runner import Dataset, checkpoint_options, fit_workers, train
from tux2.version import __version__


class Estimator:
    """Base class of tux2's algorithms (see the module docstring for the hooks)."""

    algorithm = None                # the name in model.json and ``tux2 run NAME``
    _unit, _iterations = "epoch", "epochs"     # what an iteration is called; the parameter counting them
    _resumable = ()                 # parameters a checkpoint may be resumed with other values of
    _watch = None                   # the record key whose non-finite value stops the run, with this message:
    _stop = "{key} is not finite at {unit} {n}; check the input values or lower the step size"
    bounds = {}                     # {parameter: tux2.params.Bound}: checked by fit; the flags' types in the CLI
    choices = {}                    # {parameter: its allowed values}: checked by fit; the flags' choices in the CLI
    flags = {}                      # {parameter: (its flag in ``tux2 run ALGO``, what it is)} where the names differ

    def __new__(cls, *args, **kwargs):      # an unknown keyword: a message naming the parameters (tux2.params)
        names = inspect.signature(cls.__init__).parameters
        if not any(p.kind == p.VAR_KEYWORD for p in names.values()):
            for k in kwargs:
                if k not in names:
                    raise TypeError(unknown(cls, k))
        return super().__new__(cls)

    # ------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls):
        return [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def _keep(self, params):
        """Store the constructor's arguments (its ``locals()``) as attributes of their own names."""
        vars(self).update((k, v) for k, v in params.items() if k in self._param_names())

    def get_params(self, deep=True):
        """The constructor's arguments, by name."""
        return {k: getattr(self, k) for k in self._param_names()}

    def check_params(self):
        """ValueError naming the first parameter out of its ``bounds`` or ``choices``
        (None passes where it is the default; a subclass's constructor may have fewer)."""
        defaults = inspect.signature(type(self).__init__).parameters
        for name in [*self.bounds, *self.choices]:
            value = getattr(self, name, None)
            if name not in defaults or (value is None and defaults[name].default is None):
                continue
            try:
                if name in self.bounds:
                    self.bounds[name].check(f"{type(self).__name__}: {name}", value)
                elif isinstance(value, (list, dict, set)) or value not in self.choices[name]:
                    raise ValueError(f"{type(self).__name__}: {name} must be one of "
                                     f"{', '.join(map(repr, self.choices[name]))}; got {value!r}")
            except ValueError as e:
                raise ValueError(f"{e}{flag_hints(type(self), name)}") from None
        for name, other, only in self._unused():      # set where it does nothing: refused, not ignored
            if getattr(self, name) != defaults[name].default:
                raise ValueError(f"{self._flag(name)} has no effect with {other}"
                                 + (f": it applies only with {only}" if only else ""))

    def _unused(self):
        """(parameter, what makes it unused, where it applies or None) for each parameter
        that the others leave without effect: check_params refuses it set to another
        value than its default (scikit-learn warns; a silently ignored setting misleads)."""
        return []

    def _flag(self, name):
        """``name`` and its value as the flag of ``tux2 run`` setting them ('--step plain',
        '--no-biases'; ``_in_python`` turns them into 'step=plain', 'biases=False')."""
        v, flag = getattr(self, name), "--" + self.flags.get(name, (name,))[0].replace("_", "-")
        return (flag if v else f"--no-{flag[2:]}") if isinstance(v, bool) else f"{flag} {v}"

    def _params_used(self, params):
        """``params`` (``get_params()``'s) as a fit uses them: a parameter whose default
        the others decide (MF's ``mode=None``: ALS with ``implicit=True``, else SGD) at the
        value they decide. model.json and checkpoints record these, so a model or
        checkpoint says how it was trained; ``get_params`` keeps what was given."""
        return params

    def set_params(self, **params):
        """Change parameters (before the next ``fit``); returns the estimator."""
        for k, v in params.items():
            if k not in self._param_names():
                raise ValueError(unknown(type(self), k))
            setattr(self, k, v)
        return self

    _estimator_type = None          # "classifier" for the linear models (scikit-learn's stratified splits),
    #                                 "regressor" for MF

    def __sklearn_tags__(self):
        """scikit-learn's description of the estimator (imported only when it asks)."""
        from sklearn.utils import ClassifierTags, InputTags, RegressorTags, Tags, TargetTags
        kind = self._estimator_type
        return Tags(estimator_type=kind, target_tags=TargetTags(required=kind == "classifier"),
                    classifier_tags=ClassifierTags() if kind == "classifier" else None,
                    regressor_tags=RegressorTags() if kind == "regressor" else None,
                    input_tags=InputTags(sparse=True))

    def __getattr__(self, name):       # only for attributes not set: a learned one before fit
        learned = sorted(k for k in vars(self) if k.endswith("_") and not k.startswith("_"))
        if learned:                    # fitted (or loaded): another library's name (LDA's components_)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}; it learned "
                                 f"{', '.join(learned)}")
        if name.endswith("_") and not name.startswith("_"):
            raise not_fitted(f"this {type(self).__name__} is not fitted yet (no {name}): call fit first")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self):
        """The parameters changed from their defaults (scikit-learn's print_changed_only), compared
        by repr: an array's ``==`` is no truth value, and a NaN is never equal to itself."""
        init = inspect.signature(type(self).__init__).parameters
        changed = (f"{k}={v!r}" for k, v in self.get_params().items()
                   if init[k].default is init[k].empty or repr(v) != repr(init[k].default))
        return f"{type(self).__name__}({', '.join(changed)})"

    # ------------------------------------------------------------ training
    def fit(self, data, test=None, *, workers=1, slack=0, partitions=None, threads=None, callbacks=(),
            checkpoint=None):
        """Train on ``data`` (what ``load_data`` takes: a path, arrays, a matrix, a
        graph …), with ``test`` evaluated after each iteration where the algorithm
        has a test metric. ``workers`` > 1: that many processes over ZeroMQ on
        loopback, the same model as one (slack 0). ``callbacks``: called with each
        iteration's record; one that returns True ends training after that iteration
        (as xgboost's callbacks do; with workers, after the iteration they are in when
        it returns). ``checkpoint``: a directory saved to after every
        iteration, and resumed from when it holds a checkpoint. Returns self."""
        for name, v, bound in (("workers", workers, PROCESSES), ("threads", threads, PROCESSES),
                               ("slack", slack, NONNEG)):       # partitions: runner.partitions
            if v is not None or name != "threads":
                bound.check(name, v)
        files.check_cwd()
        if checkpoint is not None:
            if not isinstance(checkpoint, (str, os.PathLike)):
                raise TypeError(f"checkpoint must be a directory's path, got {checkpoint!r}")
            files.check_writable(os.fspath(checkpoint), "checkpoint=", directory=True)
        if callable(callbacks) or isinstance(callbacks, (str, bytes)):
            raise TypeError(f"callbacks must be a list of functions, got {callbacks!r}: pass [f]")
        if not isinstance(callbacks, Iterable):
            raise TypeError(f"callbacks must be a list of functions, got {callbacks!r}")
        callbacks = list(callbacks)     # a generator: every iteration's record, not the first one's only
        if not all(map(callable, callbacks)):       # refused now, not after the data is read and an epoch run
            raise TypeError(f"callbacks must be a list of functions, got {callbacks!r}")
        try:
            self.check_params()
        except ValueError as e:
            raise ValueError(self._in_python(str(e))) from None
        try:
            ck = None
            if checkpoint is not None:
                params = {k: v for k, v in self._params_used(self.get_params()).items()
                          if k not in (self._iterations, *self._resumable)}
                resume = os.path.exists(os.path.join(checkpoint, "LATEST"))
                ck = checkpoint_options(os.fspath(checkpoint), 1, os.fspath(checkpoint) if resume else None,
                                        {"algorithm": self.algorithm, **params}, workers)
            if not isinstance(data, Dataset):
                with temporary_copies():         # a .gz or '-' input's copy: read once, removed now
                    data = self.load_data(data, test)
            if data.train is not None and data.train.num_edges == 0:
                raise InputError("no edges to train on (empty data)", path=data.train.source)
            options = dict(partitions=partitions, threads=threads, slack=slack, callbacks=callbacks, checkpoint=ck)
            fitted = self.get_params()
            if workers > 1:
                fit_workers(self, data, workers, **options)
            else:
                train(self, data, **options)
        except CheckpointError as e:       # its remedies name tux2 run's flags: here, fit's keywords
            raise CheckpointError(self._in_python(str(e))) from None
        except Tux2Error as e:              # the data's errors (InputError …) name the CLI's flags too ('--columns
            text = self._in_python(str(e))      # picks …'): the same error, in fit's keywords ('columns= …')
            if text != str(e) and len(e.args) == 1:
                e.args = (text,)
            raise
        self._fit_params = fitted           # what save writes: a set_params after fit changes the next fit only
        return self

    def start_from(self, model):
        """Let the next ``fit`` start from what ``model`` (a fitted estimator of this class,
        ``load``'s, or the path of a directory ``save`` or ``--out`` wrote, as LightGBM's
        ``init_model`` takes a file) learned: its learned attributes, and ``warm_start=True``.
        ``None`` (LightGBM's ``init_model=None``): the next ``fit`` starts afresh."""
        if "warm_start" not in self._param_names():     # its fit would ignore the model: refused, not ignored
            raise TypeError(f"{type(self).__name__} has no warm start (warm_start=); tux2's own "
                            "estimators (MF, LDA, BlockPG, LogisticRegression, LinearSVM, LinearRegression, Softmax, "
                            "FM) have one")
        if model is None:
            self.warm_start = False
            return self
        if isinstance(model, (str, os.PathLike)):
            model = type(self).load(os.fspath(model))
        if type(model) is not type(self):
            raise TypeError(f"{type(self).__name__} cannot start from a {type(model).__name__}")
        if not any(k.endswith("_") and not k.startswith("_") for k in vars(model)):     # else: a new model, silently
            raise not_fitted(f"{type(self).__name__}.start_from: the model has not been fitted (call fit, or load a "
                             "saved one)")
        vars(self).update((k, v) for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_"))
        self.warm_start = True
        return self

    def load_data(self, data, test=None):
        """A ``tux2.Dataset`` of what ``fit`` was given (default: ``tux2.loaders.load``)."""
        from tux2 import loaders
        return Dataset(loaders.load(data), loaders.load(test) if test is not None else None)

    def prepare(self, data, parts):
        raise NotImplementedError(f"{type(self).__name__}.prepare(data, parts) must return a tux2.Setup")

    def record(self, eng, setup):
        return {}

    def read_model(self, eng, setup):
        raise NotImplementedError(f"{type(self).__name__}.read_model(eng, setup) must read the learned state")

    # ------------------------------------------------------------ what a run prints
    def _header(self, setup, parts, world):
        return []

    def tiled(self):
        """True when the program runs in tiles (Engine(tiles=...)): a worker's threads
        then share its partition, so there is one partition per worker by default."""
        return False

    def _line(self, rec, n):
        unit = self._unit
        shown = "  ".join(f"{k} {v:.6g}" for k, v in rec.items()
                          if k not in (unit, "time_s", "total_time_s", "clock", "bytes_sent", "wait_s")
                          and isinstance(v, float))
        return f"{unit} {rec[unit]:3d}/{n}  {shown}  time {rec['time_s']:.3f}s"

    def _rates(self, setup):
        """{record key: count}: the key gets count / seconds of the iteration."""
        return {}

    def _report(self, setup):
        return []

    def _diverged(self, rec):
        v = rec.get(self._watch)
        if self._watch and v is not None and not math.isfinite(v):
            return self._stop.format(key=self._watch, unit=self._unit, n=rec[self._unit], value=v, est=self)
        return None

    def _converged(self, history):
        return None

    _stops_early = False            # whether _early can stop a run (then every worker asks rank 0)

    def _early(self, history, setup):
        """Why training stops early after the last record of ``history``, or None."""
        return None

    def _kept(self, setup):
        """(arrays, JSON) of a model the run keeps besides the engine's, for a checkpoint; or None."""
        return None

    def _take_kept(self, setup, arrays, meta):
        """A resumed run takes back what ``_kept`` gave its checkpoint."""

    def _in_python(self, text):
        """A run's note or stop message as a Python caller reads it: each ``--flag``
        of a parameter becomes ``param=`` ('try --eta 0.05' → 'try eta=0.05')."""
        import re
        # a flag beside its keyword, for both readers ('--duplicates sum (duplicates='sum')', '--text-column
        # (text_column=)', '… (from Python: …)', '--ids string, ids='string''): the keyword alone
        text = re.sub(r"--[a-z][a-z0-9-]*( [^\s(),;]+)? \((?:from Python: )?([a-z_]+=)([^()]*)\)",
                      lambda m: m.group(2) + (m.group(3) or (m.group(1) or "").strip()), text)
        text = re.sub(r"\([^()]*--[^()]*; from Python: ((?:[^()]|\([^()]*\))*)\)", r"(\1)", text)
        text = re.sub(r"--[a-z][a-z0-9-]*(?: \w+)?, (?=[a-z_]+=)", "", text)
        text = re.sub(r"([a-z_]+=\w+) / --[a-z][a-z0-9-]*", r"\1", text)
        names = {self.flags.get(p, (p,))[0].replace("_", "-"): p for p in self.get_params()} | \
            {"workers": "workers", "resume": "checkpoint", "checkpoint-dir": "checkpoint"}     # fit's own keywords

        def param(m):                   # a switch by its state: '--driver' is driver=True, '--no-biases' biases=False
            flag, value = m.group(1), m.group(2) or ""
            on = flag.removeprefix("no-") if flag.removeprefix("no-") in names else flag
            if isinstance(getattr(self, names.get(on, ""), None), bool):
                return f"{names[on]}={on == flag}{value}"
            return f"{names[flag]}=" if flag in names else m.group(0)
        return re.sub(r"--([a-z][a-z0-9-]*)( (?=[\w.]))?", param, text)

    # ------------------------------------------------------------ files
    def _meta(self):
        """model.json: the algorithm, its parameters, what it learned that is a number."""
        params = {k: v.item() if getattr(v, "ndim", None) == 0 and hasattr(v, "item") else v    # numpy scalars too
                  for k, v in self._params_used(vars(self).get("_fit_params") or self.get_params()).items()}
        params = {k: v for k, v in params.items() if isinstance(v, (str, int, float, bool, type(None)))
                  and k != "warm_start"}       # how this fit began, not a setting of the model's next fit
        run = {k: v for k, v in self.run_.items() if k != "source"}
        if isinstance(run.get("context"), dict):        # its numbers; not a sampler's scratch tables (LDA: 50 kB)
            run["context"] = {k: v for k, v in run["context"].items() if not isinstance(v, (list, tuple, dict))
                              and getattr(v, "ndim", 0) == 0}
        return {"algorithm": self.algorithm, **params, "input": self.run_.get("source"), **run,
                "tux2_version": __version__}

    def _files(self):
        """{file name: writer (tux2.files)} of the model, beside model.json."""
        return {}

    def save(self, directory, summary=None):
        """Write the model as ``tux2 run … --out`` does (all files or none, with a
        manifest; tux2.files); ``summary``: lines for summary.txt."""
        out = self._files()
        if summary:
            out["summary.txt"] = files.text("".join(line + "\n" for line in summary))
        out["model.json"] = files.text(files.json_text(self._meta(), indent=2))
        files.write_dir(directory, out)

    @classmethod
    def load(cls, directory):
        """The model in ``directory`` (``save`` or ``tux2 run … --out``), its files
        checked against the manifest and its arrays against model.json."""
        with files.locked(directory, shared=True):      # a writer's rename of the next model waits
            return cls._load(directory)

    @classmethod
    def _load(cls, directory):
        from tux2 import model_check
        meta = model_check.read_meta(directory)
        est = cls(**cls._saved_params(meta))
        defaults = inspect.signature(cls.__init__).parameters
        for _pass in range(2):      # recorded where it had no effect (an explicit MF's alpha 40): its default now
            for name, *_why in est._unused():
                setattr(est, name, defaults[name].default)
        est._restore(directory, meta)
        try:                            # checked as fit checks them: a bad value is named here, not in predict
            est.check_params()
        except ValueError as e:
            raise model_check.ModelError(f"{os.path.join(directory, 'model.json')}: {est._in_python(str(e))}") from None
        est._fit_params = est.get_params()
        est.run_ = {k: meta.get(k) for k in ("partitions", "workers", "clock", "iteration", "context", "format")}
        est.run_["source"] = meta.get("input")
        est.history_ = []
        return est

    @classmethod
    def _saved_params(cls, meta):
        """The parameters model.json (``meta``, as ``_meta`` wrote it) holds, as ``get_params`` gives
        them; those it lacks (a model written before them) keep their defaults."""
        return {k: meta[k] for k in cls._param_names() if k in meta}

    def _restore(self, directory, meta):
        """Read the learned state back from a model directory (every built-in
        estimator has it; an estimator of your own that wants ``load`` defines it)."""
        raise NotImplementedError(f"{type(self).__name__} cannot load a model directory: define "
                                  f"_restore(directory, meta) to read what save wrote")
