"""Error types users can catch. Each message says what went wrong and where."""
import functools
import sys


class Tux2Error(Exception):
    """Base class of every error tux2 raises on purpose."""


# characters of an offending line quoted in a message: enough to recognise it, never a screenful
QUOTE_CHARS = 200


class LineStart(str):
    """The start of a line too long to read whole for a message; ``chars``: the whole
    line's length in characters."""

    def __new__(cls, text, chars):
        self = super().__new__(cls, text)
        self.chars = chars
        return self


def quote(text):
    """``text`` as Python escapes it (control and binary bytes visible), cut to QUOTE_CHARS."""
    n = text.chars if isinstance(text, LineStart) else len(text)
    if n <= QUOTE_CHARS:
        return repr(text)
    return f"{text[:QUOTE_CHARS]!r}… ({n} characters)"


class InputError(Tux2Error, ValueError):
    """Bad input data: names the file and line (or the array and index)."""

    def __init__(self, message, path=None, line=None, text=None):
        self.path, self.line, self.text = path, line, text
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        if text is not None:
            message = f"{message} (line text: {quote(text)})"
        super().__init__(where + message)


class SchemaError(Tux2Error, ValueError):
    """A program's schema or stage sequence is inconsistent."""


class ContextStateError(SchemaError):
    """A checkpoint's context record is not what this run's settings give (its input is
    not in question)."""


class RecordsError(SchemaError):
    """A checkpoint's records of the input (the values and labels a program holds in its
    edge and vertex records, GLM's sample weights among them) are not this run's, its
    edges being the same."""


class CheckpointError(Tux2Error):
    """A checkpoint is missing, incomplete, damaged or belongs to another run (here, not
    in tux2.checkpoint, so that a worker's is raised as itself: runner._error_class)."""


class UDFCompileError(Tux2Error):
    """numba could not compile a user-defined function."""


class PartitionError(Tux2Error, ValueError):
    """A partitioner was asked for something impossible."""


class DivergenceError(Tux2Error, FloatingPointError):
    """Training produced NaN or infinite values: names the iteration and the field."""


class NotFittedError(Tux2Error, ValueError, AttributeError):
    """An estimator's learned attribute (``coef_``, ``ids_`` …) asked for before ``fit``
    (a ValueError and an AttributeError, so ``hasattr`` is False, as scikit-learn's
    NotFittedError; made by ``not_fitted``, it is scikit-learn's too once that is imported)."""

    def __reduce__(self):           # the class not_fitted picks again (joblib sends errors back pickled)
        return not_fitted, (str(self),)


def not_fitted(message):
    """A NotFittedError that, once scikit-learn is imported, is also
    ``sklearn.exceptions.NotFittedError``, so ``except`` with either catches it (an
    ``except`` naming scikit-learn's has imported it; tux2 does not import scikit-learn)."""
    sk = sys.modules.get("sklearn.exceptions")
    return NotFittedError(message) if sk is None else _with(sk.NotFittedError)(message)


@functools.cache
def _with(sk_error):
    return type("NotFittedError", (NotFittedError, sk_error), {"__module__": __name__})


class OverlapError(Tux2Error):
    """Several replicas of one vertex wrote it in the same clock and an Apply would
    sum their independent steps (see Apply(overlap=...))."""
