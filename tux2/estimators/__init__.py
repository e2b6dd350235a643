"""The built-in algorithms as estimators (tux2.estimator), exported as tux2.MF, tux2.LDA,
tux2.BlockPG, tux2.LogisticRegression, tux2.LinearRegression, tux2.LinearSVM, tux2.Softmax and tux2.FM."""
from tux2.estimators.lda import LDA
from tux2.estimators.linear import FM, BlockPG, LinearRegression, LinearSVM, LogisticRegression, Softmax
from tux2.estimators.mf import MF

ALGORITHMS = {c.algorithm: c for c in (MF, LDA, BlockPG, LogisticRegression, LinearSVM, Softmax, FM, LinearRegression)}


def load(directory):
    """The model in ``directory`` (written by ``save`` or ``tux2 run … --out``), as the
    estimator of its algorithm."""
    from tux2.files import locked
    from tux2.model_check import ModelError, read_meta
    with locked(directory, shared=True):        # one model, not the next run's model.json over its arrays
        algorithm = read_meta(directory).get("algorithm")
        if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
            raise ModelError(f"{directory}: model.json names algorithm {algorithm!r}; tux2 knows "
                             f"{', '.join(ALGORITHMS)}")
        return ALGORITHMS[algorithm].load(directory)


__all__ = ["ALGORITHMS", "BlockPG", "FM", "LDA", "LinearRegression", "LinearSVM", "LogisticRegression", "MF", "Softmax", "load"]
