"""UDFs numba cannot compile fail with the UDF and the stage named; the same UDFs
run as plain Python under NUMBA_DISABLE_JIT=1 and give the same model."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tux2
from tux2 import Apply, Engine, Exchange, Program, VertexType


def bad_exchange(u, v, e, a_u, a_v, ctx):
    thing = object()                   # arbitrary Python objects are not numba-typable
    a_u.x += len(str(thing))


def unknown_field_apply(v, a, ctx):
    v.nonexistent += 1.0


def types():
    return (VertexType("a", sync={"x": "f8"}), VertexType("b", sync={"y": "f8"}))


def test_uncompilable_exchange_names_udf_and_stage():
    g = tux2.BipartiteGraph([0, 1], [0, 1], [1.0, 1.0])
    prog = Program(types(), edge={"w": "f8"}, stages=[Exchange(bad_exchange)])
    with pytest.raises(tux2.UDFCompileError) as ei:
        Engine(prog, g)
    msg = str(ei.value)
    assert "exchange stage 'bad_exchange'" in msg and "test_compile.py" in msg and "NUMBA_DISABLE_JIT" in msg


def test_unknown_field_in_apply_names_udf():
    g = tux2.BipartiteGraph([0, 1], [0, 1], [1.0, 1.0])
    prog = Program(types(), edge={"w": "f8"}, stages=[Exchange(lambda u, v, e, au, av, c: None),
                                                      Apply(unknown_field_apply, types="a")])
    with pytest.raises(tux2.UDFCompileError, match="(?s)apply stage 'unknown_field_apply'.*unknown record field 'nonexistent'"):
        Engine(prog, g)


SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from tux2 import Engine
    from tux2.datasets import netflix_like
    from tux2.udfs import mf
    tr, _ = netflix_like(n_users=60, n_items=25, n_ratings=600, seed=4)
    mode = sys.argv[1]
    kw = dict(batch_size=97) if mode == "minibatch" else {}
    eng = Engine(mf.program(k=6, mode=mode, mu=3.6, **kw), tr, partitions=3, partitioner="random", seed=2)
    eng.run(3)
    print(json.dumps({"p": eng.vertex_data("user")["p"].tolist(), "q": eng.vertex_data("item")["p"].tolist(),
                      "rmse": eng.context()["rmse"]}))
""")


@pytest.mark.parametrize("mode", ["minibatch", "sgd"])
def test_reference_mode_matches_compiled(mode):
    out = {}
    for disable in ("0", "1"):
        env = {**os.environ, "NUMBA_DISABLE_JIT": disable}
        r = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, env=env,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        out[disable] = json.loads(r.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(out["0"]["p"], out["1"]["p"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["0"]["q"], out["1"]["q"], rtol=1e-4, atol=1e-5)
    assert out["0"]["rmse"] == pytest.approx(out["1"]["rmse"], rel=1e-5)


def copy_exchange(u, v, e, a_u, a_v, ctx):
    a_u.x += e.w * v.y


def test_kernels_are_built_once_per_udf_and_record_types():
    """Engines of the same program reuse its compiled loops; other record dtypes
    get loops of their own (no numba record subtyping between them)."""
    from tux2 import MiniBatch
    from tests.conftest import random_graph
    g = random_graph(seed=1)

    def engine(extra):
        a = VertexType("a", sync={"x": "f8", **extra})
        prog = Program((a, VertexType("b", sync={"y": "f8"})), edge={"w": "f8"},
                       stages=[MiniBatch(7, [Exchange(copy_exchange), Apply(types="a")])])
        return Engine(prog, g, partitions=1), prog.stages[0].stages[0]
    (e1, s1), (e2, s2), (e3, s3) = engine({}), engine({}), engine({"z": "i4"})
    assert e1._kernels[id(s1)] is e2._kernels[id(s2)]
    assert next(iter(e1._fused.values()))[0] is next(iter(e2._fused.values()))[0]
    assert e3._kernels[id(s3)] is not e1._kernels[id(s1)]
    for e in (e1, e3):
        e.run(1)
    np.testing.assert_array_equal(e1.vertex_data("a")["x"], e3.vertex_data("a")["x"])
