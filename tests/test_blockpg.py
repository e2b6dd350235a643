"""BlockPG: the optimum of liblinear's L1 logistic regression, monotone objective,
the same iterates for any partitioning (slack 0), libsvm input and the CLI."""
import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from tests.conftest import clinical_rows, run_cli, write_rows
from tux2 import BipartiteGraph, Engine, io
from tux2.datasets import sparse_classification
from tux2.errors import InputError
from tux2.udfs import blockpg


def _liblinear(X, y, lam):
    from sklearn.linear_model import LogisticRegression
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(penalty="l1", solver="liblinear", C=1.0 / lam, tol=1e-8, fit_intercept=False,
                                 max_iter=100_000).fit(X, y)
    return clf.coef_.ravel()


def _problem(kind):
    if kind == "gaussian":
        rng = np.random.default_rng(0)
        n, d = 300, 80
        X = sp.random(n, d, density=0.1, random_state=1, format="csr")
        X.data = rng.normal(0, 1, len(X.data))
        w = rng.normal(0, 1, d) * (rng.random(d) < 0.3)
        y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
        return X, y, 2.0
    g, y, _ = sparse_classification(n_samples=600, n_features=300, nnz_per_sample=12, seed=3)
    X = sp.csr_matrix((g.values, (g.src, g.dst)), shape=(g.n_src, g.n_dst))
    return X, np.where(y > 0, 1.0, 0.0), 0.5                       # 0/1 labels are accepted


def _engine(X, y, lam, block, parts=1, partitioner="bicut", seed=0, **options):
    coo = X.tocoo()
    feat, perm = blockpg.shuffle_features(coo.col, X.shape[1], seed=seed)
    prog = blockpg.program(y, coo.data, coo.row, feat, X.shape[1], lam=lam, block_size=block, **options)
    g = BipartiteGraph(coo.row, feat, None, X.shape[0], X.shape[1], ("sample", "feature"))
    opts = {"favorite": 0} if partitioner == "bicut" else None
    return Engine(prog, g, partitions=parts, partitioner=partitioner, partitioner_options=opts, seed=seed), perm


SLOW = pytest.mark.slow


@pytest.mark.parametrize("kind,block,parts,partitioner", [
    ("gaussian", 10, 1, "bicut"), ("gaussian", None, 1, "bicut"), ("powerlaw", 10, 1, "bicut"),
    pytest.param("powerlaw", None, 1, "bicut", marks=SLOW),                                     # 25 s
    pytest.param("gaussian", 25, 3, "random", marks=SLOW), pytest.param("powerlaw", 25, 3, "random", marks=SLOW)])
def test_reaches_liblinear_optimum_monotonically_with_its_support(kind, block, parts, partitioner):
    X, y, lam = _problem(kind)
    w_ref = _liblinear(X, y, lam)
    f_star = blockpg.objective_value(w_ref, X, y, lam)
    eng, perm = _engine(X, y, lam, block, parts, partitioner)
    objs = []
    eng.run(300, callback=lambda e: objs.append(e.context()["objective"]))
    w = eng.vertex_data("feature")["w"][perm]
    # the context's objective is f(w) of the engine's weights
    assert objs[-1] == pytest.approx(blockpg.objective_value(w, X, y, lam), rel=1e-10)
    assert abs(objs[-1] - f_star) <= 1e-4 * f_star
    assert np.all(np.diff(objs) <= 1e-12 * f_star), "objective went up"
    big = np.abs(w_ref) > 1e-6                                    # clearly non-zero in the reference
    np.testing.assert_array_equal(w[big] != 0, True)
    np.testing.assert_array_equal(w[w_ref == 0], 0.0)
    assert eng.context()["nnz"] == np.count_nonzero(w)


def test_any_partitioning_gives_the_same_iterates():
    X, y, lam = _problem("powerlaw")
    ref, _ = _engine(X, y, lam, 20)
    ref.run(5)
    for parts, strategy in ((3, "random"), (2, "hdrf"), (4, "grid")):
        eng, _ = _engine(X, y, lam, 20, parts, strategy)
        eng.run(5)
        np.testing.assert_allclose(eng.vertex_data("feature")["w"], ref.vertex_data("feature")["w"],
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(eng.vertex_data("sample")["m"], ref.vertex_data("sample")["m"],
                                   rtol=1e-9, atol=1e-12)


def test_shrinking_skips_features_and_reaches_the_same_optimum():
    """Features at 0 well inside the subgradient sit out ``rest`` epochs (their edges
    are not visited); the run ends where the run without shrinking ends."""
    X, y, lam = _problem("powerlaw")
    full, _ = _engine(X, y, lam, 20, shrink=0.0)
    shrunk, _ = _engine(X, y, lam, 20, shrink=0.9, rest=2)
    full.run(1)
    shrunk.run(1)
    np.testing.assert_array_equal(full.vertex_data("feature")["w"], shrunk.vertex_data("feature")["w"])
    assert (full.vertex_data("feature")["skip"] == 0).all()
    skip = shrunk.vertex_data("feature")["skip"]
    assert set(np.unique(skip)) == {0, 3}                     # shrunk in epoch 0: back in epoch 3
    assert (skip[shrunk.vertex_data("feature")["w"] != 0] == 0).all()
    full.run(299)
    shrunk.run(299)
    assert shrunk.context()["objective"] == pytest.approx(full.context()["objective"], rel=1e-9)
    np.testing.assert_allclose(shrunk.vertex_data("feature")["w"], full.vertex_data("feature")["w"], atol=1e-5)


def test_gradient_and_curvature_match_a_dense_reference():
    """One epoch with one block is one proximal Newton step from w = 0 with the κ-scaled curvature."""
    X, y, lam = _problem("gaussian")
    eng, perm = _engine(X, y, lam, None)
    eng.run(1)
    ys = np.where(y > 0, 1.0, -1.0)
    p = np.full(len(y), 0.5)
    g = -(X.T @ (ys * p))
    kappa = np.diff(X.indptr)[X.tocoo().row]                      # one block: κ = the row's non-zeros
    K = sp.csr_matrix((X.tocoo().data ** 2 * kappa, (X.tocoo().row, X.tocoo().col)), shape=X.shape)
    h = K.T @ (p * (1 - p)) + 1e-12
    z = -g / h
    expect = np.sign(z) * np.maximum(np.abs(z) - lam / h, 0)
    np.testing.assert_allclose(eng.vertex_data("feature")["w"][perm], expect, rtol=1e-10, atol=1e-14)


def test_labels_must_be_binary():
    with pytest.raises(ValueError, match="labels must be ±1 or 0/1, got 2"):
        blockpg.program([1, 2], [1.0], [0], [0], 1)


# --------------------------------------------------------------------------- libsvm
def test_libsvm_round_trip_and_bases(tmp_path):
    g, y, _ = sparse_classification(n_samples=50, n_features=40, nnz_per_sample=5, seed=1)
    for zero in (False, True):
        f = tmp_path / f"d{int(zero)}.svm"
        io.write_libsvm(f, g, y, zero_based=zero)
        h, y2 = io.read_libsvm(f, zero_based=zero)
        order = np.lexsort((g.dst, g.src))
        np.testing.assert_array_equal(h.src, g.src[order])
        np.testing.assert_array_equal(h.dst, g.dst[order])
        np.testing.assert_allclose(h.values, g.values[order], rtol=1e-8)
        np.testing.assert_array_equal(y2, y)


@pytest.mark.parametrize("text,line,message", [
    ("+1 1:1\n-1 0:2\n", 2, "feature index 0 in a 1-based file"),
    ("+1 1:1\n\n# c\nx 2:1\n", 4, "malformed label"),
    ("+1 1:1 2\n", 1, "expected index:value"),
    ("+1 1:inf\n", 1, "NaN or infinite"),
    ("+1 -3:1\n", 1, "not a non-negative integer"),
    ("", None, "no samples"),
])
def test_libsvm_errors_name_the_line(tmp_path, text, line, message):
    f = tmp_path / "bad.svm"
    f.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        io.read_libsvm(f)
    assert e.value.line == line


def test_libsvm_comments_qid_and_empty_samples(tmp_path):
    f = tmp_path / "x.svm"
    f.write_text("# header\n1 qid:4 2:0.5 # trailing\n0\n-1 1:2e-1\n")
    g, y = io.read_libsvm(f)
    assert y.tolist() == [1, 0, -1] and g.n_src == 3 and g.n_dst == 2
    assert g.src.tolist() == [0, 2] and g.dst.tolist() == [1, 0] and g.values.tolist() == [0.5, 0.2]


# --------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def svm_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("svm")
    g, y, _ = sparse_classification(n_samples=900, n_features=200, nnz_per_sample=10, seed=5)
    train = BipartiteGraph(g.src[g.src < 700], g.dst[g.src < 700], g.values[g.src < 700], 700, 200)
    keep = g.src >= 700
    test = BipartiteGraph(g.src[keep] - 700, g.dst[keep], g.values[keep], 200, 200)
    io.write_libsvm(d / "train.svm", train, y[:700])
    io.write_libsvm(d / "test.svm", test, y[700:])
    return str(d / "train.svm"), str(d / "test.svm")


@pytest.mark.parametrize("form", [pytest.param(["--block-size", "30", "--epochs", "400"], marks=pytest.mark.slow),  # 34 s
                                  ["--form", "newton", "--epochs", "30"]], ids=["kappa", "newton"])
def test_cli_trains_to_the_liblinear_optimum_and_writes_weights(svm_files, tmp_path, form):
    train, test = svm_files
    out = tmp_path / "m"
    r = run_cli("run", "blockpg", train, "--test", test, "--lam", "0.5", *form,
                "--tol", "1e-12", "--out", str(out), "--metrics", str(tmp_path / "m.jsonl"), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    g, y = io.read_libsvm(train)
    X = sp.csr_matrix((g.values, (g.src, g.dst)), shape=(g.n_src, g.n_dst))
    w_ref = _liblinear(X, y, 0.5)
    w = np.load(out / "weights.npz")["w"]
    meta = json.loads((out / "model.json").read_text())
    f_star = blockpg.objective_value(w_ref, X, y, 0.5)
    assert abs(meta["objective"] - f_star) <= 1e-4 * f_star
    txt = dict(line.split(":") for line in (out / "weights.txt").read_text().split())
    assert sorted(int(k) - 1 for k in txt) == np.flatnonzero(w).tolist()
    lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert lines[-1]["test_accuracy"] > 0.6 and 0.5 < lines[-1]["test_auc"] <= 1.0


def test_cli_epoch_line_shows_the_test_logloss(svm_files):
    """Each epoch's line gives the test accuracy, log-loss and AUC, as README says and
    the lr line does (the log-loss was in --metrics alone)."""
    train, test = svm_files
    r = run_cli("run", "blockpg", train, "--test", test, "--epochs", "2", timeout=300)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("epoch   2/2"))
    assert " test acc " in line and " logloss " in line and " auc " in line, line


def test_cli_bad_labels_and_input(tmp_path):
    f = tmp_path / "m.svm"
    f.write_text("1 1:1\n# a comment\n3 2:1\n-1 1:1\n")
    r = run_cli("run", "blockpg", str(f), timeout=300)
    assert r.returncode == 2 and f"{f}:4: a binary model takes two labels; a third, -1, after 1 and 3 (softmax " \
        "and lr take more: tux2.Softmax, tux2.LogisticRegression) (line text: '-1 1:1')" in r.stderr
    f.write_text("1 1:1\n1 2:x\n")
    r = run_cli("run", "blockpg", str(f), timeout=300)
    assert r.returncode == 2 and f"{f}:2: malformed feature value" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("form", ["kappa", "newton"])
def test_workers_give_the_single_process_weights(svm_files, tmp_path, form):
    train, _ = svm_files
    common = ["run", "blockpg", train, "--form", form, "--lam", "0.5", "--block-size", "40", "--epochs", "4",
              "--partitions", "3", "--partitioner", "random", "--quiet", "--timeout", "20"]
    ws = []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"w{len(extra)}"
        r = run_cli(*common, *extra, "--out", str(out), timeout=300)
        assert r.returncode == 0, r.stderr
        ws.append(np.load(out / "weights.npz")["w"])
    np.testing.assert_allclose(ws[1], ws[0], rtol=1e-12, atol=1e-15)


@pytest.mark.slow          # two worker processes
def test_newton_default_blocks_are_the_data_s_so_workers_run_the_one_process_blocks(svm_files, tmp_path):
    """The newton form's default block was 1 feature: with --workers 2 each feature of
    each sweep was a round of messages (165k an epoch on 16.5k words: 105 s against 0.1 s
    in one process). The default is now the largest power of two up to 512 in which a
    sample has ~1 of its features (BlockPG.KAPPA_BLOCK): several on sparse rows, 1 on
    dense ones; the data alone decides, so 2 workers take the one-process blocks and
    give its weights up to summation order."""
    import tux2
    train, _ = svm_files
    ws, blocks = [], []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"w{len(extra)}"
        r = run_cli("run", "blockpg", train, "--form", "newton", "--lam", "0.5", "--epochs", "3", "--quiet",
                    "--timeout", "20", *extra, "--out", str(out), timeout=300)
        assert r.returncode == 0, r.stderr
        ws.append(np.load(out / "weights.npz")["w"])
        blocks.append(json.loads((out / "model.json").read_text())["block_size_used"])
    assert blocks[0] == blocks[1] > 1
    np.testing.assert_allclose(ws[1], ws[0], rtol=1e-12, atol=1e-15)
    g, _ = io.read_libsvm(train)                 # the largest such block: twice it holds more of a sample
    feat, _ = blockpg.shuffle_features(g.dst, g.n_dst)
    kappa = [blockpg.block_counts(g.src, feat, b).mean() for b in (blocks[0], 2 * blocks[0])]
    assert kappa[0] <= tux2.BlockPG.KAPPA_BLOCK < kappa[1]
    rng = np.random.default_rng(0)                # dense rows: two features share every block of 2
    dense = tmp_path / "dense.svm"
    dense.write_text("".join(f"{rng.choice([-1, 1])} " + " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 20))
                             + "\n" for _ in range(40)))
    assert tux2.BlockPG(form="newton", epochs=1).fit(str(dense)).block_size_ == 1


def test_block_counts_equal_a_unique_over_sample_block_pairs():
    rng = np.random.default_rng(5)
    s, f = rng.integers(0, 300, 5000), rng.integers(0, 2000, 5000)
    for size in (1, 7, 500, 5000):
        block = f // size
        _, inv, cnt = np.unique(s * (block.max() + 1) + block, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(blockpg.block_counts(s, f, size), cnt[inv])
        o = np.argsort(s, kind="stable")              # grouped by sample, as CSR input: no sort inside
        np.testing.assert_array_equal(blockpg.block_counts(s[o], f[o], size), cnt[inv][o])
    assert len(blockpg.block_counts([], [], 10)) == 0


def test_shuffled_feature_ids_are_the_permutation_of_the_old_ones():
    f = np.array([3, 0, 3, 9, 1])
    for ids in (f, f.astype(np.int32)):
        new, perm = blockpg.shuffle_features(ids, 10, seed=2)
        np.testing.assert_array_equal(new, perm[f])
        assert new.dtype == np.int32 and sorted(perm.tolist()) == list(range(10))
    for bad in (10, -1):
        with pytest.raises(IndexError):
            blockpg.shuffle_features(np.array([0, bad]), 10)


def test_text_like_data_has_zipf_words_raw_counts_and_both_labels():
    from tux2.datasets import text_like
    d, w, c, y = text_like(n_docs=300, n_words=5000, seed=2)
    assert len(d) == len(w) == len(c) and len(y) == 300
    key = d * (w.max() + 1) + w
    assert (np.diff(key) > 0).all()                       # distinct, sorted by doc then word
    assert (c >= 1).all() and (c == np.round(c)).all() and c.max() > 20
    freq = np.sort(np.bincount(w, weights=c))[::-1]
    assert freq[0] > 20 * freq[len(freq) // 2]             # a few words carry most of the tokens
    lengths = np.bincount(d, weights=c)
    assert lengths.max() > 5 * np.median(lengths)          # log-normal lengths: a long tail
    assert set(np.unique(y)) == {-1.0, 1.0} and abs(y.mean()) < 0.2


# --------------------------------------------------------------------------- form="newton"
def _text(lam_docs=150, seed=1):
    from tux2.datasets import text_like
    d, w, c, y = text_like(n_docs=lam_docs, n_words=3000, seed=seed)
    return sp.csr_matrix((c, (d, w)), shape=(int(d.max()) + 1, int(w.max()) + 1)), y


def _newton_step_reference(X, y, lam, perm, inner, shrink=0.9):
    """One epoch of form="newton" from w = 0, written out: gradient and D = σ(1−σ),
    shrinking, ``inner`` coordinate-descent sweeps over q(d) in the engine's shuffled
    clock order (blocks of 1: clock = shuffled feature id), Armijo over α = 1, ½, …"""
    C = X.tocsc()
    ys = np.where(y > 0, 1.0, -1.0)
    p = np.full(len(y), 0.5)
    grad, D = -(C.T @ (ys * p)), p * (1 - p)
    H = C.multiply(C).T @ D + 1e-12
    live = np.abs(grad) >= shrink * lam
    d, Xd = np.zeros(X.shape[1]), np.zeros(X.shape[0])
    by_clock = np.argsort(perm)                                   # clock c is the feature with new id c
    for s in range(inner):
        for c in np.random.default_rng((0, 1, 1 + s)).permutation(X.shape[1]):
            j = by_clock[c]
            if not live[j]:
                continue
            rows, vals = C.indices[C.indptr[j]:C.indptr[j + 1]], C.data[C.indptr[j]:C.indptr[j + 1]]
            g = grad[j] + np.sum(D[rows] * vals * Xd[rows])
            z = -d[j]
            if g + lam <= H[j] * d[j]:
                z = -(g + lam) / H[j]
            elif g - lam >= H[j] * d[j]:
                z = -(g - lam) / H[j]
            d[j] += z
            Xd[rows] += z * vals
    f0 = blockpg.objective_value(np.zeros(len(d)), X, y, lam)
    delta = grad @ d + lam * np.abs(d).sum()
    for k in range(8):
        if blockpg.objective_value(0.5 ** k * d, X, y, lam) - f0 <= 0.01 * 0.5 ** k * delta:
            return 0.5 ** k * d
    return 0 * d


def test_newton_form_first_epoch_equals_the_written_out_step():
    X, y = _text()
    eng, perm = _engine(X, y, 1.0, 1, form="newton", inner=4)
    eng.run(1)
    expect = _newton_step_reference(X, y, 1.0, perm, 4)
    assert np.count_nonzero(expect) > 5
    np.testing.assert_allclose(eng.vertex_data("feature")["w"][perm], expect, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("lam", [1.0, 10.0])
def test_newton_form_reaches_liblinear_on_text_like_data_in_30_epochs(lam):
    """Raw counts with Zipf words: the κ bound is far off after 30 epochs (bench
    blockpg_text), the proximal Newton form is within 1e-4 and never goes up."""
    X, y = _text()
    f_star = blockpg.objective_value(_liblinear(X, y, lam), X, y, lam)
    eng, perm = _engine(X, y, lam, 1, form="newton")
    objs = []
    eng.run(30, callback=lambda e: objs.append(e.context()["objective"]))
    w = eng.vertex_data("feature")["w"][perm]
    assert objs[-1] == pytest.approx(blockpg.objective_value(w, X, y, lam), rel=1e-10)
    assert objs[-1] - f_star <= 1e-4 * f_star
    assert np.all(np.diff(objs) <= 1e-12 * f_star), "objective went up"
    assert eng.context()["nnz"] == np.count_nonzero(w)


@pytest.mark.slow      # 40 s: run by .ci/run with the other heavier tests
def test_newton_form_gives_the_same_iterates_for_any_partitioning():
    """Every stage accumulates then applies, and the shuffled clock order is drawn from
    the seed: 2 and 3 partitions (samples mirror-free or not, Apply rounds per clock)
    and the unfused loop give the one-partition (fused) run."""
    X, y = _text(80, seed=3)
    ref, _ = _engine(X, y, 1.0, 1, form="newton", inner=3)
    ref.run(3)
    runs = [_engine(X, y, 1.0, 1, 2, form="newton", inner=3)[0],
            _engine(X, y, 1.0, 1, 3, "random", form="newton", inner=3)[0]]
    unfused, _ = _engine(X, y, 1.0, 1, form="newton", inner=3)
    unfused.fuse = False
    for eng in runs + [unfused]:
        eng.run(3)
        np.testing.assert_allclose(eng.vertex_data("feature")["w"], ref.vertex_data("feature")["w"],
                                   rtol=1e-9, atol=1e-12)
        assert eng.context()["objective"] == pytest.approx(ref.context()["objective"], rel=1e-12)


def test_newton_sweeps_send_no_weights_up_and_give_the_same_iterates():
    """The sweeps' Exchanges only accumulate into the features (and the step's MiniBatch
    writes them): at slack 0 the sweeps' rounds send gradient sums up and weights down,
    no weights up, and the model is that of rounds that send them (before: every round)."""
    X, y = _text(60, seed=4)
    runs = {}
    for forced in (False, True):
        eng, _ = _engine(X, y, 1.0, 4, 2, form="newton", inner=2)
        sweep, step = eng.program.stages[1].stages[1], eng.program.stages[-1].stages[1]
        assert (eng._apply_deltas[(id(sweep), 1)], eng._apply_deltas[(id(step), 1)]) == (False, True)
        assert not any(t == 0 for _, t in eng._apply_deltas)   # samples: newton_gradient writes their D, unsynced
        if forced:
            eng._apply_deltas = {}
        eng.run(3)
        runs[forced] = (eng.transport.bytes_sent, eng.vertex_data("feature")["w"], eng.context()["objective"])
    assert runs[False][0] < 0.9 * runs[True][0], (runs[False][0], runs[True][0])
    np.testing.assert_array_equal(runs[False][1], runs[True][1])
    assert runs[False][2] == runs[True][2]


def test_newton_form_options_are_checked():
    with pytest.raises(ValueError, match="form must be 'kappa' or 'newton'"):
        blockpg.program([1], [1.0], [0], [0], 1, form="cd")
    with pytest.raises(ValueError, match="inner sweeps must be a whole number >= 1"):
        blockpg.program([1], [1.0], [0], [0], 1, form="newton", inner=0)


def test_newton_form_resumes_exactly():
    """The shuffled order is drawn from the epoch number, which a checkpoint keeps."""
    X, y = _text(80, seed=4)
    full, _ = _engine(X, y, 1.0, 1, form="newton", inner=3)
    full.run(4)
    first, _ = _engine(X, y, 1.0, 1, form="newton", inner=3)
    first.run(2)
    arrays, meta = first.state()
    resumed, _ = _engine(X, y, 1.0, 1, form="newton", inner=3)
    resumed.restore({k: v.copy() for k, v in arrays.items()}, meta)
    resumed.run(2)
    np.testing.assert_array_equal(resumed.vertex_data("feature")["w"], full.vertex_data("feature")["w"])
    assert resumed.context()["objective"] == full.context()["objective"]


def _text_libsvm(path, rows, binary=False, seed=7):
    """A bag-of-words libsvm file: 1-based word ids, raw counts (Zipf-distributed
    words, so a few carry large counts), labels ±1 from a sparse planted weight."""
    rng = np.random.default_rng(seed)
    w = np.zeros(600)
    w[rng.choice(600, 30, replace=False)] = rng.normal(0, 1, 30)
    lines = []
    for _ in range(rows):
        words, counts = np.unique(np.minimum(rng.zipf(1.4, int(rng.integers(20, 150))), 600) - 1,
                                  return_counts=True)
        counts = np.ones_like(counts) if binary else counts
        y = 1 if rng.random() < 1 / (1 + np.exp(-(counts * w[words]).sum() / 3)) else -1
        lines.append(f"{y:+d} " + " ".join(f"{j + 1}:{c}" for j, c in zip(words, counts)) + "\n")
    path.write_text("".join(lines))
    return str(path)


@pytest.mark.slow      # the default suite's heaviest (10-28 s, 2026-11-29 durations); .ci/run's slow pass runs it
def test_cli_picks_the_newton_form_on_raw_counts(tmp_path):
    """On raw counts the default (--form auto) is the newton form, and rightly: in 8
    epochs it is far closer to the optimum than the kappa form, whose header points to
    --form newton; binary features get the kappa form and no note."""
    counts = _text_libsvm(tmp_path / "train.svm", 400)
    objective, header = {}, {}
    for form in ("kappa", "newton", "auto"):
        r = run_cli("run", "blockpg", counts, "--epochs", "8", "--form", form, "--metrics",
                    str(tmp_path / f"{form}.jsonl"), timeout=300)
        assert r.returncode == 0, r.stderr
        assert ("note: the feature values are raw counts" in r.stdout) == (form == "kappa")
        header[form] = r.stdout.splitlines()[1]
        objective[form] = json.loads((tmp_path / f"{form}.jsonl").read_text().splitlines()[-1])["objective"]
    assert objective["newton"] < 0.95 * objective["kappa"]
    assert objective["auto"] == objective["newton"]
    assert "newton form (auto: the values are whole numbers up to" in header["auto"], header["auto"]
    binary = _text_libsvm(tmp_path / "binary.svm", 400, binary=True)
    r = run_cli("run", "blockpg", binary, "--epochs", "1", "--block-size", "50", "--out", str(tmp_path / "m"),
                timeout=300)
    assert r.returncode == 0 and "note:" not in r.stdout, r.stderr
    assert "kappa form (auto: equal values in each sample, " in r.stdout, r.stdout
    # model.json keeps the parameters as given and says what they became
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert (meta["form"], meta["block_size"], meta["form_used"], meta["block_size_used"]) == ("auto", 50, "kappa", 50)
    import tux2
    est = tux2.BlockPG.load(tmp_path / "m")
    assert (est.form, est.block_size, est.form_, est.block_size_) == ("auto", 50, "kappa", 50)
    # in blocks of 500 a sample has ~20 features per block: the kappa bound's steps would be 20x short
    r = run_cli("run", "blockpg", binary, "--epochs", "1", "--out", str(tmp_path / "m2"), timeout=300)
    assert r.returncode == 0 and "features of a sample per block, too many for the kappa bound" in r.stdout, r.stdout
    meta = json.loads((tmp_path / "m2" / "model.json").read_text())
    assert (meta["form"], meta["block_size"], meta["form_used"]) == ("auto", None, "newton")
    est = tux2.BlockPG(epochs=1).fit(counts)
    assert est.form_ == "newton" and est.block_size_ > 1        # sparse rows: blocks of several features


@pytest.mark.slow          # 6-10 s: the default suite's budget (2026-11-26 durations)
def test_predict_counts_feature_indices_beyond_the_model(tmp_path):
    """A test file with words the training file never had (indices past the model's
    features) is scored with them as 0, and the metrics line counts them."""
    train = _text_libsvm(tmp_path / "train.svm", 200)
    out = tmp_path / "m"
    r = run_cli("run", "blockpg", train, "--epochs", "2", "--out", str(out), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    features = json.loads((out / "model.json").read_text())["features"]
    test = tmp_path / "test.svm"
    test.write_text(f"+1 3:2 {features + 5}:1 {features + 9}:4\n-1 1:1 {features + 5}:2\n+1 2:1\n")
    p = run_cli("predict", str(out), str(test), timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stderr.splitlines()[-1])["unknown_features"] == 2
    p = run_cli("predict", str(out), train, timeout=300)
    assert "unknown_features" not in json.loads(p.stderr.splitlines()[-1])


def test_auto_takes_the_newton_form_on_dense_unscaled_values(tmp_path):
    """Pima-like rows have 7 of 8 features per block, below KAPPA_NEWTON, and no counts:
    auto took the kappa form, whose Jacobi-like steps crawl on correlated uncentred
    columns (20 epochs ended 3 % above liblinear's optimum; on Pima itself at the
    majority class). auto keeps the kappa form for samples whose values are equal (0/1,
    one-hot, the built-in set's 1/√nnz); tf-idf rows are not."""
    import tux2
    X, y = clinical_rows()
    path, X = write_rows(tmp_path / "clinical.svm", X, y), sp.csr_matrix(X)
    f_star = blockpg.objective_value(_liblinear(X, y, 1.0), X, y, 1.0)
    est = tux2.BlockPG().fit(path)
    assert est.form_ == "newton"
    assert est.history_[-1]["objective"] <= f_star * (1 + 1e-4)
    r = run_cli("run", "blockpg", path, "--epochs", "1")
    assert r.returncode == 0 and "newton form (auto: the values differ within a sample)" in r.stdout, r.stdout
    r = run_cli("run", "blockpg", "--epochs", "1")                      # the built-in set: rows of 1/√nnz
    assert r.returncode == 0 and "kappa form (auto: equal values in each sample" in r.stdout, r.stdout


@pytest.mark.parametrize("flags, shown", [(("--form", "kappa"), "kappa form, blocks of 19 (1 per epoch)"),
                                          (("--form", "newton", "--block-size", "8"),
                                           "newton form, blocks of 8 (3 per sweep)")])
def test_the_header_gives_the_blocks_the_run_takes(tmp_path, flags, shown):
    """19 features in blocks of 500 (kappa's default) are one block of 19: the header
    said 'blocks of 500 (1 per epoch)'."""
    rng = np.random.default_rng(0)
    path = tmp_path / "d.svm"
    path.write_text("".join(f"{rng.choice([-1, 1])} " + " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 20))
                            + "\n" for _ in range(40)))
    r = run_cli("run", "blockpg", str(path), "--epochs", "1", *flags)
    assert r.returncode == 0 and f"19 features, 760 non-zeros; lambda=1.0, {shown}, P=1" in r.stdout, r.stdout
