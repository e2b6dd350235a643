"""tux2: the TuX² graph engine for machine learning (NSDI'17) in Python.

Write an algorithm as UDFs and a MEGA stage sequence over a bipartite graph;
the engine lays it out as vertex-cut partitions and runs numba-compiled loops.
"""
from tux2.errors import (DivergenceError, InputError, OverlapError, PartitionError, SchemaError, Tux2Error,
                         UDFCompileError)
from tux2.schema import ContextSpec, VertexType
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch
from tux2.program import Program
from tux2.graph import BipartiteGraph
from tux2.engine import Engine

__version__ = "0.1.0"

__all__ = ["Apply", "BipartiteGraph", "ContextSpec", "DivergenceError", "Engine", "Exchange", "GlobalSync",
           "InputError", "OverlapError", "MiniBatch", "PartitionError", "Program", "SchemaError", "Tux2Error",
           "UDFCompileError", "VertexType", "__version__"]
