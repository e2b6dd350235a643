"""tux2: the TuX² graph engine for machine learning (NSDI'17) in Python.

Write an algorithm as UDFs and a MEGA stage sequence over a bipartite graph;
the engine lays it out as vertex-cut partitions and runs numba-compiled loops.
The built-in algorithms are estimators: ``tux2.MF(k=50).fit(data)``.

The public names load on first use (``import tux2`` costs no numba import, so the
``tux2`` command starts before it; SPEC 1's lazy loading, as scipy does it).
"""
from tux2.errors import (CheckpointError, DivergenceError, InputError, OverlapError, PartitionError, SchemaError,
                         Tux2Error, UDFCompileError)
from tux2.version import __version__

__all__ = ["Apply", "BipartiteGraph", "BlockPG", "CheckpointError", "ContextSpec", "Dataset", "DivergenceError", "Engine", "Estimator",
           "Exchange", "FM", "GlobalSync", "InputError", "LDA", "LinearRegression", "LinearSVM", "LogisticRegression", "MF",
           "MiniBatch", "OverlapError", "PartitionError", "Program", "SchemaError", "Setup", "Softmax", "Tux2Error",
           "UDFCompileError", "VertexType", "__version__"]

# tux2.engine, tux2.udfs …: imported on first use too (``import tux2`` once made them all
# attributes, as the package imported them eagerly; code written then still works)
_SUBMODULES = ("busguard", "checkpoint", "cli", "compile", "config", "datacache", "datasets", "engine", "errors",
               "estimator", "estimators", "files", "graph", "ingress", "interrupt", "io", "layout", "loaders",
               "model_check", "params", "partitioning", "program", "ranking", "rounds", "runner", "runtime",
               "schema", "sigbus", "stages", "stopwords", "tables", "transport", "udfs", "version", "wire",
               "zmq_transport")


def __getattr__(name):
    """``tux2.Engine``, ``from tux2 import MF`` …: the module holding ``name``, imported now."""
    if name in ("ContextSpec", "VertexType"):
        from tux2 import schema as home
    elif name in ("Apply", "Exchange", "GlobalSync", "MiniBatch"):
        from tux2 import stages as home
    elif name == "Program":
        from tux2 import program as home
    elif name == "BipartiteGraph":
        from tux2 import graph as home
    elif name == "Engine":
        from tux2 import engine as home
    elif name in ("Dataset", "Setup"):
        from tux2 import runner as home
    elif name == "Estimator":
        from tux2 import estimator as home
    elif name in ("FM", "LDA", "MF", "BlockPG", "LinearRegression", "LinearSVM", "LogisticRegression", "Softmax"):
        from tux2 import estimators as home
    elif name in _SUBMODULES:
        import importlib
        return importlib.import_module(f"tux2.{name}")      # the import makes it an attribute
    else:
        raise AttributeError(f"module 'tux2' has no attribute {name!r}")
    value = getattr(home, name)
    globals()[name] = value           # the next lookup is a plain attribute
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
