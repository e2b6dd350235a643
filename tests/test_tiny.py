"""Hand-drawn graphs, edge cases first (GBBS style).

    a0 ── b0        a1 (no edges)        b1 (no edges)
"""
import numpy as np
import pytest

import tux2
from tux2 import Apply, ContextSpec, Engine, Exchange, GlobalSync, MiniBatch, Program, VertexType
from tux2.udfs import mf


def count_exchange(u, v, e, a_u, a_v, ctx):
    a_u.d += 1.0
    a_v.d += 1.0
    ctx.edges += 1.0


def set_degree(v, a, ctx):
    v.deg += a.d


def degree_program():
    types = (VertexType("a", sync={"deg": "f8"}, accum={"d": "f8"}),
             VertexType("b", sync={"deg": "f8"}, accum={"d": "f8"}))
    return Program(types, edge={"w": "f8"}, context=ContextSpec({"edges": "f8"}, sum=("edges",)),
                   stages=[Exchange(count_exchange), Apply(set_degree), GlobalSync()])


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_empty_graph(parts):
    g = tux2.BipartiteGraph(np.zeros(0, np.int64), np.zeros(0, np.int64), None, 2, 3)
    eng = Engine(degree_program(), g, partitions=parts).run(2)
    assert eng.vertex_data("a")["deg"].tolist() == [0, 0]
    assert eng.vertex_data("b")["deg"].tolist() == [0, 0, 0]
    assert eng.history[-1]["edges"] == 0


@pytest.mark.parametrize("parts,partitioner", [(1, "random"), (2, "random"), (4, "bicut")])
def test_one_edge_and_isolated_vertices(parts, partitioner):
    #   a0 ── b0     a1      b1
    g = tux2.BipartiteGraph([0], [0], [1.0], 2, 2)
    eng = Engine(degree_program(), g, partitions=parts, partitioner=partitioner).run(3)
    assert eng.vertex_data("a")["deg"].tolist() == [3, 0]
    assert eng.vertex_data("b")["deg"].tolist() == [3, 0]
    assert eng.history[-1]["edges"] == 1


def test_star_with_mirrors_everywhere():
    #        b0
    #   /  /  |  \  \
    #  a0 a1 a2 a3 a4 ...  (b0 gets a replica on every part holding one of its edges)
    n = 40
    g = tux2.BipartiteGraph(np.arange(n), np.zeros(n, np.int64), np.ones(n), n, 1)
    eng = Engine(degree_program(), g, partitions=4, partitioner="bicut").run(1)
    assert sum(p.types[1].n_local for p in eng.parts) > 1          # b0 is mirrored
    assert eng.vertex_data("b")["deg"].tolist() == [n]
    for p in eng.parts:
        assert p.types[1].data["deg"].tolist() == [n] * p.types[1].n_local


def test_zero_epochs_leaves_the_initial_model():
    g = tux2.BipartiteGraph([0, 1], [1, 0], [3.0, 4.0], 2, 2)
    prog = mf.program(k=4, mode="minibatch")
    eng = Engine(prog, g, seed=9)
    before = eng.vertex_data("user").copy()
    eng.run(0)
    np.testing.assert_array_equal(eng.vertex_data("user"), before)
    assert eng.clock == 0 and eng.history == []


def test_minibatch_larger_than_graph():
    g = tux2.BipartiteGraph([0, 1], [1, 0], [3.0, 4.0], 2, 2)
    prog = Program(degree_program().types, edge={"w": "f8"},
                   context=ContextSpec({"edges": "f8"}, sum=("edges",)),
                   stages=[MiniBatch(1000, [Exchange(count_exchange), Apply(set_degree)]), GlobalSync()])
    eng = Engine(prog, g).run(1)
    assert eng.clock == 1 and eng.vertex_data("a")["deg"].tolist() == [1, 1]


def test_bad_graph_input():
    with pytest.raises(tux2.InputError, match="negative src id -1 at edge 1"):
        tux2.BipartiteGraph([0, -1], [0, 0], [1.0, 2.0])
    with pytest.raises(tux2.InputError, match="not finite"):
        tux2.BipartiteGraph([0, 1], [0, 0], [1.0, np.nan])
    with pytest.raises(tux2.InputError, match="equal length"):
        tux2.BipartiteGraph([0, 1], [0], None)
    with pytest.raises(tux2.InputError, match=">= the vertex count"):
        tux2.BipartiteGraph([0, 5], [0, 0], None, n_src=3)


def test_schema_errors():
    with pytest.raises(tux2.SchemaError, match="both sync and master"):
        VertexType("a", sync={"x": "f8"}, master={"x": "f8"})
    with pytest.raises(tux2.SchemaError, match="needs enumerate"):
        MiniBatch(10, [], unit="vertex")
    with pytest.raises(tux2.SchemaError, match="unknown vertex type 'c'"):
        Program(degree_program().types, edge={}, stages=[Apply(types="c")])
    with pytest.raises(tux2.PartitionError, match="unknown partitioner"):
        Engine(degree_program(), tux2.BipartiteGraph([0], [0], None), partitioner="nope")
