"""The benchmark harness: its comparisons are like for like, and its tables say
what ran where."""
import os
import subprocess
import sys

import numpy as np
import pytest

from bench import layout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_layouts_compute_the_same_model():
    """Fig. 8 compares layouts, not algorithms: array and hash-table loops give equal models."""
    rng = np.random.default_rng(0)
    nu, ni, m, k = 30, 20, 400, 4
    u, i = rng.integers(0, nu, m), rng.integers(0, ni, m)
    r = rng.normal(3, 1, m).astype(np.float32)
    P0 = rng.normal(0, 0.1, (nu, k)).astype(np.float32)
    Q0 = rng.normal(0, 0.1, (ni, k)).astype(np.float32)
    P, Q = P0.copy(), Q0.copy()
    a = layout.mf_array(u, i, r, P, Q, 3.0, 0.01, 0.05)
    PD = layout.vec_store(layout.keys_of(np.arange(nu), 1), P0)
    QD = layout.vec_store(layout.keys_of(np.arange(ni), 2), Q0)
    h = layout.mf_hash(layout.keys_of(u, 1), layout.keys_of(i, 2), r, PD, QD, 3.0, 0.01, 0.05)
    assert a == h
    assert np.array_equal(P[7], PD[layout.keys_of(np.array([7]), 1)[0]])

    # LDA: same seed, same draws, same topics
    D, V, K = 10, 15, 5
    doc, word = rng.integers(0, D, 300), rng.integers(0, V, 300)
    z0 = rng.integers(0, K, 300)
    NW, ND = np.zeros((V, K), np.int32), np.zeros((D, K), np.int32)
    np.add.at(NW, (word, z0), 1)
    np.add.at(ND, (doc, z0), 1)
    nk = NW.sum(0).astype(np.int32)
    za, zh = z0.copy(), z0.copy()
    NWD = layout.vec_store(layout.keys_of(np.arange(V), 3), NW)
    layout.lda_array(doc, word, za, NW.copy(), ND.copy(), nk.copy(), 0.1, 0.01, V * 0.01, 5)
    layout.lda_hash(doc, layout.keys_of(word, 3), zh, NWD, ND.copy(), nk.copy(), 0.1, 0.01, V * 0.01, 5)
    assert np.array_equal(za, zh) and not np.array_equal(za, z0)

    # BlockPG: two blocks of 4 features over 12 samples
    n, d, block = 12, 8, 4
    s, f = rng.integers(0, n, 60), rng.integers(0, d, 60)
    key = np.unique(s * d + f)
    s, f = key // d, key % d
    x = rng.random(len(s))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    o = np.lexsort((s, f // block))
    s, f, x = s[o], f[o], x[o]
    bptr = np.searchsorted(f // block, np.arange(d // block + 1))
    bf_ptr, bf = np.arange(0, d + 1, block), np.arange(d)
    m1, w = np.zeros(n), np.zeros(d)
    layout.blockpg_array(bptr, s, f, x, y, m1, w, np.zeros(d), np.zeros(d), bf_ptr, bf, 0.05)
    allk = layout.keys_of(np.arange(d), 4)
    WD, GD, HD = layout._scalar_dict(allk), layout._scalar_dict(allk), layout._scalar_dict(allk)
    m2 = np.zeros(n)
    layout.blockpg_hash(bptr, s, layout.keys_of(f, 4), x, y, m2, WD, GD, HD, bf_ptr, allk, 0.05)
    assert np.array_equal(m1, m2) and np.any(w != 0)
    assert np.array_equal(w, [WD[k] for k in allk])


def test_report_states_machine_data_and_peers(tmp_path, monkeypatch):
    from bench import common
    monkeypatch.setattr(common, "RESULTS", str(tmp_path))
    path = common.report("x", "Title", "1,000 edges", ["system", "s"], [["tux2", 0.5], ["peer", None]],
                         peers={"peer": "1.2", "gone": None}, notes=["note"], pngs=[str(tmp_path / "x.png")])
    text = open(path).read()
    assert "1,000 edges" in text and "peer 1.2" in text and "gone (not installed: skipped)" in text
    assert "| tux2 | 0.5 |" in text and "| peer | — |" in text and "![x](x.png)" in text
    assert f"{os.cpu_count()} ×" in text


def test_every_experiment_is_listed_and_importable():
    from bench.__main__ import EXPERIMENTS
    import importlib
    for name, (module, what) in EXPERIMENTS.items():
        assert callable(importlib.import_module(module).main), name
    out = subprocess.run([sys.executable, "-m", "bench", "--help"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0 and all(n in out.stdout for n in EXPERIMENTS)


def test_engine_times_each_partition_when_asked():
    """Fig. 15's data: with time_parts, every mini-batch record has each partition's Exchange time."""
    from tux2 import Engine
    from tux2.datasets import netflix_like
    from tux2.udfs import mf
    train, _ = netflix_like(200, 50, 3000, seed=1)
    eng = Engine(mf.program(k=4, mode="minibatch", batch_size=500), train, partitions=3, seed=0)
    eng.run(1)
    assert all("part_exchange_s" not in t for t in eng.trace)
    eng.time_parts = True
    eng.run(1)
    recs = [t for t in eng.trace if t["iteration"] == 2 and not t.get("epoch_stages")]
    assert len(recs) == -(-train.num_edges // 500)
    for t in recs:
        assert sorted(t["part_exchange_s"]) == [0, 1, 2] and all(v >= 0 for v in t["part_exchange_s"].values())
        assert sum(t["part_exchange_s"].values()) <= t["compute_s"] + 1e-6
    assert sum(v for t in recs for v in t["part_exchange_s"].values()) > 0


def test_hand_written_adam_takes_the_engines_steps():
    """bench glm_floor's lower bound is the same algorithm: its loop and tux2's adam
    program give the same weights after two epochs."""
    from bench.glm_floor import ACCUM, FEATURE, adam_epoch
    from tux2.datasets import sparse_classification
    from tux2.udfs import glm
    g, y, _ = sparse_classification(3000, 400, 12, seed=2)
    n, d, B, eta, decay, lam = g.n_src, g.n_dst, 250, 0.05, 0.5, 1e-4
    eng = glm.engine(g, y, "logistic", "adam", parts=1, batch=B, eta=eta, decay=decay, lam=lam)[0]
    eng.run(2)
    perm = np.random.default_rng(0).permutation(n)             # glm.engine's sample relabelling
    import scipy.sparse as sp
    X = sp.csr_matrix((g.values, (perm[g.src], g.dst)), shape=(n, d))
    ys = np.empty(n)
    ys[perm] = np.where(np.asarray(y) > 0, 1.0, -1.0)
    F = np.zeros(d, FEATURE)
    F["b1t"], F["b2t"] = 1.0, 1.0
    F["deg"] = np.maximum(np.bincount(g.dst, minlength=d), 1)
    F["scale"] = glm.feature_scale(g.dst, g.values, d)
    A = np.zeros(d, ACCUM)
    bounds = np.r_[np.arange(0, n, B), n].astype(np.int64)
    ep = 0
    for e in range(2):
        ep = adam_epoch(bounds, X.indptr, X.indices, X.data, ys, np.zeros(n), F, A, np.full(d, -1, np.int64),
                        np.zeros(d, np.int64), ep, eta / (1.0 + decay * e), lam, float(n), float(B), 0.9, 0.999,
                        1e-8)
    np.testing.assert_allclose(F["w"], glm.weights(eng)[:, 0], rtol=1e-9, atol=1e-12)
    assert np.abs(F["w"]).max() > 1e-3                            # it did move


def test_hand_written_adagrad_takes_the_engines_steps():
    """bench glm_floor's per-sample AdaGrad loop and tux2's modelavg+adagrad on one
    partition with one sample per mini-batch give the same weights after two epochs."""
    from bench.glm_floor import adagrad_epoch
    from tux2.datasets import sparse_classification
    from tux2.udfs import glm
    g, y, _ = sparse_classification(2000, 300, 12, seed=4)
    n, d, eta, lam = g.n_src, g.n_dst, 0.3, 1e-3
    eng = glm.engine(g, y, "logistic", "modelavg", parts=1, batch=1, eta=eta, lam=lam, optimizer="adagrad")[0]
    eng.run(2)
    perm = np.random.default_rng(0).permutation(n)             # glm.engine's sample relabelling
    import scipy.sparse as sp
    X = sp.csr_matrix((g.values, (perm[g.src], g.dst)), shape=(n, d))
    ys = np.empty(n)
    ys[perm] = np.where(np.asarray(y) > 0, 1.0, -1.0)
    w, G = np.zeros(d), np.zeros(d)
    deg = np.maximum(np.bincount(g.dst, minlength=d), 1).astype(np.float64)
    scale = glm.feature_scale(g.dst, g.values, d)
    for _ in range(2):
        adagrad_epoch(X.indptr, X.indices, X.data, ys, w, G, deg, scale, eta, lam, float(n), 1e-8)
    np.testing.assert_allclose(w, glm.weights(eng)[:, 0], rtol=1e-9, atol=1e-12)
    assert np.abs(w).max() > 1e-2


@pytest.mark.slow
def test_bench_mf_with_libmf_unavailable_is_a_skip_not_a_failure(tmp_path):
    """README: a peer that cannot be had is reported as "skipped". `bench mf` printed the
    skipped line, then exited 1 (so `bench all` listed mf as failed) and wrote no table;
    `bench glm` with Spark skipped exits 0 (trial brk38). No index: pip cannot fetch LibMF."""
    env = {**os.environ, "TUX2_BENCH_CACHE": str(tmp_path / "cache"), "TUX2_BENCH_RESULTS": str(tmp_path / "results"),
           "PIP_NO_INDEX": "1"}
    r = subprocess.run([sys.executable, "-m", "bench", "mf", "--quick"], capture_output=True, text=True,
                       timeout=600, env=env, cwd=ROOT)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout[-300:] + r.stderr[-300:]
    assert '"system": "libmf", "skipped": "pip download libmf' in r.stdout
    table = (tmp_path / "results" / "mf.md").read_text()
    assert "LibMF (not installed: skipped)" in table and "| tux2 |" in table and "LibMF 0" not in table


@pytest.mark.slow
def test_bench_lda_with_tomotopy_unavailable_is_a_skip_not_a_failure(tmp_path):
    """As for LibMF: `bench lda` exited 1 without a table when tomotopy could not be had
    (and crashed with an ImportError when pip had it but it did not import)."""
    env = {**os.environ, "TUX2_BENCH_CACHE": str(tmp_path / "cache"), "TUX2_BENCH_RESULTS": str(tmp_path / "results"),
           "PIP_NO_INDEX": "1"}
    code = ("import runpy, sys; sys.modules['tomotopy'] = None; sys.argv = ['bench', 'lda', '--quick']; "
            "runpy.run_module('bench', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout[-300:] + r.stderr[-300:]
    assert '"system": "tomotopy", "skipped":' in r.stdout and '"tux2_over_tomotopy_tokens_per_s": null' in r.stdout
    table = (tmp_path / "results" / "lda.md").read_text()
    assert "tomotopy could not be had: skipped" in table and "| tux2 (SparseLDA" in table
