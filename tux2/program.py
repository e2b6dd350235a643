"""A Program: schema + stage sequence + initialisers (what a user writes)."""
import numpy as np

from tux2.errors import SchemaError
from tux2.schema import ContextSpec, VertexType, record_dtype, EMPTY
from tux2.stages import Apply, Exchange, GlobalSync, MiniBatch


class Program:
    """An algorithm in the MEGA model.

    Parameters
    ----------
    types : pair of VertexType (first type = column 1 of an edge list)
    edge : {name: spec} edge fields (e.g. {"rating": "f4"})
    context : ContextSpec
    stages : list of stages, run once per iteration (epoch)
    init_vertices : optional ``f(type_name, data, rng)`` filling the global
        structured array of one vertex type in place (indexed by global id, so
        the result does not depend on partitioning)
    init_edges : optional ``f(edge_data, rng)`` for the global edge array
    edge_values : optional ``{field: array}``: initial edge fields in global edge
        order (or a scalar each), as data instead of code. Without init_edges, one
        partition ordered by vertex then needs no record array in global order: the
        layout writes the records from these columns (tux2.layout.EdgeColumns)
    bounds : optional ``{field: (lo, hi)}``: the values an edge or vertex field may
        hold (e.g. LDA's topic indices); a checkpoint outside them is refused
    """

    def __init__(self, types, edge, context=None, stages=(), init_vertices=None,
                 init_edges=None, name="program", bounds=None, edge_values=None):
        if len(types) != 2 or not all(isinstance(t, VertexType) for t in types):
            raise SchemaError("a Program needs exactly two VertexType objects")
        if types[0].name == types[1].name:
            raise SchemaError(f"the two vertex types need different names, both are {types[0].name!r}")
        self.types = tuple(types)
        self.edge_fields = dict(edge or {})
        self.edge_dtype = record_dtype(self.edge_fields) or EMPTY
        self.context = context if context is not None else ContextSpec()
        self.stages = list(stages)
        self.init_vertices = init_vertices
        self.init_edges = init_edges
        self.edge_values = dict(edge_values or {})
        self.name = name
        self.bounds = dict(bounds or {})
        self._check()

    def type_index(self, name):
        for i, t in enumerate(self.types):
            if t.name == name:
                return i
        raise SchemaError(f"unknown vertex type {name!r}; this program has "
                          f"{self.types[0].name!r} and {self.types[1].name!r}")

    def walk(self):
        """All stages, MiniBatch children included, with their MiniBatch (or None)."""
        for s in self.stages:
            if isinstance(s, MiniBatch):
                for c in s.stages:
                    yield c, s
            else:
                yield s, None

    def orders(self):
        """Edge enumeration orders the program needs, primary first.

        An order is None (global edge order) or a vertex type index.
        """
        out = []
        for s, mb in self.walk():
            if isinstance(s, Exchange):
                if mb is not None:
                    o = None if mb.unit == "edge" else self.type_index(mb.enumerate)
                else:
                    o = None if s.enumerate is None else self.type_index(s.enumerate)
                if o not in out:
                    out.append(o)
        return out or [None]

    def apply_types(self, stage):
        names = stage.types or [t.name for t in self.types]
        return [self.type_index(n) for n in names]

    def _check(self):
        for s, mb in self.walk():
            if not isinstance(s, (Exchange, Apply, GlobalSync)):
                raise SchemaError(f"unknown stage {s!r}")
            if isinstance(s, Apply):
                self.apply_types(s)
            if isinstance(s, Exchange) and s.enumerate is not None:
                self.type_index(s.enumerate)
            if isinstance(s, Exchange) and s.active is not None and mb is None:
                raise SchemaError(f"Exchange {s.name!r} has an active predicate: it needs a MiniBatch with "
                                  "unit='vertex' around it")
            if isinstance(s, GlobalSync) and s.over is not None:
                self.type_index(s.over)
            if mb is not None and mb.enumerate is not None:
                self.type_index(mb.enumerate)

    def init_data(self, n, rng):
        """Global vertex arrays (one per type) and context, initialised."""
        out = []
        for t, nt in zip(self.types, n):
            data = np.zeros(nt, t.dtype)
            if self.init_vertices is not None:
                self.init_vertices(t.name, data, rng)
            out.append(data)
        return out
