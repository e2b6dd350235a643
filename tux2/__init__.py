"""tux2: the TuX² graph engine for machine learning (NSDI'17) in Python.

Write an algorithm as UDFs and a MEGA stage sequence over a bipartite graph;
the engine lays it out as vertex-cut partitions and runs numba-compiled loops.
The built-in algorithms are estimators: ``tux2.MF(k=50).fit(data)``.
"""
from tux2.errors import (DivergenceError, InputError, OverlapError, PartitionError, SchemaError, Tux2Error,
                         UDFCompileError)
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch
from tux2.program import Program
from tux2.graph import BipartiteGraph
from tux2.engine import Engine
from tux2.runner import Dataset, Setup
from tux2.estimator import Estimator
from tux2.estimators import FM, LDA, MF, BlockPG, LinearSVM, LogisticRegression, Softmax
from tux2.version import __version__

__all__ = ["Apply", "BipartiteGraph", "BlockPG", "ContextSpec", "Dataset", "DivergenceError", "Engine", "Estimator",
           "Exchange", "FM", "GlobalSync", "InputError", "LDA", "LinearSVM", "LogisticRegression", "MF",
           "MiniBatch", "OverlapError", "PartitionError", "Program", "SchemaError", "Setup", "Softmax", "Tux2Error",
           "UDFCompileError", "VertexType", "__version__"]
