"""Bounds of numeric parameters, defined once for both ways in: an estimator's
``bounds`` are checked by ``fit`` (a ValueError naming the parameter) and are the
argparse types of the same flags of ``tux2 run`` (``tux2: error: … --k: must be …``)."""
import math
import numbers


class Bound:
    """An integer (``kind`` int) or a finite number (float) >= ``low`` (> with
    ``above``) and <= ``high`` (< with ``below``); None: no bound. Called with a
    flag's text it parses it (argparse); ``check(name, value)`` checks a Python value."""

    def __init__(self, kind, low=None, high=None, above=False, below=False):
        self.kind, self.low, self.high, self.above, self.below = kind, low, high, above, below
        self.__name__ = "integer" if kind is int else "number"

    def _range(self):
        parts = ([f"{'>' if self.above else '>='} {self.low}"] if self.low is not None else []) + \
            ([f"{'<' if self.below else '<='} {self.high}"] if self.high is not None else [])
        return " and ".join(parts)

    def _within(self, v):
        if self.kind is float and not math.isfinite(v):
            return False
        return (self.low is None or (v > self.low if self.above else v >= self.low)) and \
            (self.high is None or (v < self.high if self.below else v <= self.high))

    def __call__(self, text):
        import argparse
        try:
            v = int(text, 10) if self.kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if self.kind is int else 'a number'}, "
                                             f"got {text[:40]!r}") from None
        if not self._within(v):
            what = self._range() if self.kind is int else " ".join(["a finite number", self._range()]).strip()
            raise argparse.ArgumentTypeError(f"must be {what}, got {v if self.kind is int else text[:40]}")
        return v

    def check(self, name, value):
        """ValueError unless ``value`` is such a number (a bool is not)."""
        kind = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, kind) or not self._within(value):
            what = "an integer" if self.kind is int else "a finite number"
            raise ValueError(f"{name} must be {' '.join([what, self._range()]).strip()}, got {value!r}")


ONE = ("1 is a count, one document: only words of a single document would be kept; 1.0 (a share) keeps "
       "every word")


class ShareOrCount(Bound):
    """scikit-learn's ``max_df``: a share of the documents, a number in (0, 1] (1.0
    keeps every word), or a count of them, an integer >= 2 (a flag's text without a
    point or an exponent is one). The integer 1, which kept every word before counts
    were taken and would now keep only words of one document, is refused, naming 1.0."""

    def __init__(self):
        super().__init__(float, 0, 1, above=True)
        self.__name__ = "share or count"

    def __call__(self, text):
        import argparse
        try:
            v = int(text, 10) if text.strip().lstrip("+").isdigit() else float(text)
        except ValueError:
            v = math.nan
        if isinstance(v, int) and v >= 2 or not isinstance(v, int) and self._within(v):
            return v
        raise argparse.ArgumentTypeError(ONE if v == 1 else f"must be a share of the documents in (0, 1] (0.5) or "
                                         f"a count of them >= 2 (an integer, 1000), got {text[:40]}")

    def check(self, name, value):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            if value < 2:
                raise ValueError(f"{name}: {ONE}" if value == 1 else
                                 f"{name} must be a share in (0, 1] or a count of documents >= 2, got {value!r}")
            return
        try:
            super().check(name, value)
        except ValueError:
            raise ValueError(f"{name} must be a share in (0, 1] (a float) or a count of documents >= 1 (an "
                             f"integer), got {value!r}") from None


def integer(low, high=None):
    return Bound(int, low, high)


def number(low=None, high=None, above=False, below=False):
    return Bound(float, low, high, above, below)


COUNT = integer(1)                  # at least one: --k, --partitions, --workers, --batch-size …
NONNEG = integer(0)                 # zero allowed: --epochs 0, --eval-every 0, --slack …
SEED = integer(0, 2 ** 32 - 1)      # numpy and the compiled samplers take 32-bit seeds
POSITIVE = number(0, above=True)    # --lr, --timeout …
PRIOR = number(2.2250738585072014e-308)     # --alpha, --beta: a normal double (1/1e-320 overflows)
PROCESSES = integer(1, 1024)        # --workers, --threads: each one a process or a thread
NONNEG_NUMBER = number(0)           # --reg, --lam, --tol …
FRACTION = number(0, 1, below=True)


# flags one algorithm, or a peer, names differently: (what a user types, what ``tux2 run ALGO`` takes[, a note]);
# the first whose flag ALGO has is named. Peers: LibMF (-l2, -k, -t), surprise (n_factors, n_epochs, lr_all,
# reg_all), Spark ALS (maxIter, regParam), implicit (factors, regularization, iterations), scikit-learn (max_iter,
# n_components, C), gensim and tomotopy (num_topics, eta: the topic-word prior)
PEER_NAMES = (
    ("--epochs", "--iterations"), ("--k", "--topics"), ("--topics", "--k"), ("--iterations", "--epochs"),
    ("--k", "--factors"), ("--factors", "--k"), ("--lambda", "--lam"), ("--reg", "--lam"),
    ("--lambda", "--reg"), ("--lam", "--reg"), ("--l2", "--reg"), ("--regularization", "--lam"), ("--regularization", "--reg"),
    ("--reg-all", "--reg"), ("--reg-param", "--reg"), ("--regparam", "--reg"),
    ("--c", "--lam", " (λ = 1/C)"),
    ("--learning-rate", "--lr"), ("--learning-rate", "--eta"), ("--lr-all", "--lr"), ("--lr", "--eta"),
    ("--eta", "--lr"), ("--eta", "--beta"), ("--eta0", "--eta"),
    ("--n-factors", "--k"), ("--num-factors", "--k"), ("--dim", "--k"), ("--n-factors", "--factors"),
    ("--num-factors", "--factors"), ("--dim", "--factors"),
    ("--n-epochs", "--epochs"), ("--max-iter", "--epochs"), ("--maxiter", "--epochs"), ("--num-iter", "--epochs"),
    ("--n-iter", "--epochs"), ("--iter", "--epochs"), ("--max-iter", "--iterations"),
    ("--num-iter", "--iterations"), ("--n-iter", "--iterations"), ("--iter", "--iterations"),
    ("--num-topics", "--topics"), ("--n-topics", "--topics"), ("--n-components", "--topics"),
    ("--passes", "--iterations"), ("--passes", "--epochs"), ("--implicit-prefs", "--implicit"),
    ("--implicitprefs", "--implicit"), ("--t", "--epochs"), ("--t", "--iterations"),
    ("--s", "--threads"))


def flag_hints(cls, name):
    """What ``name`` is when it is a ``tux2 run`` flag of another name than its
    parameter (an estimator's ``flags``): '; the L1 weight is reg=… (tux2 run blockpg --lam)'."""
    hints = [f"{what} is {p}=… (tux2 run {cls.algorithm} --{flag})"
             for p, (flag, what) in cls.flags.items() if flag.replace("-", "_") == name]
    if name.startswith("no_") and name[3:] in cls._param_names():       # --no-biases
        hints.append(f"{name[3:]}=False is --no-{name[3:].replace('_', '-')}")
    by_flag = {cls.flags.get(p, (p,))[0].replace("_", "-"): p for p in cls._param_names()}
    typed = "--" + name.lower().rstrip("_").replace("_", "-")    # surprise's n_factors, Spark's regParam, lambda_
    if not hints:                       # a flag of this estimator's own (lr's --lam) is named above, never a peer's
        hints = [f"use {by_flag[b[2:]]}=…{''.join(note)}" for a, b, *note in PEER_NAMES
                 if a == typed and b[2:] in by_flag][:1]
    return "".join(f"; {h}" for h in hints)


def unknown(cls, name):
    """The message for a keyword ``name`` estimator class ``cls`` does not take."""
    return (f"{cls.__name__} has no parameter {name!r}{flag_hints(cls, name)}; "
            f"its parameters are: {', '.join(cls._param_names())}")
