"""MF end to end: the central invariant and convergence on planted data."""
import numpy as np
import pytest

from tests import naive
from tux2 import Engine, loaders
from tux2.datasets import netflix_like
from tux2.errors import Tux2Error
from tux2.graph import blocked_order, stratified_order
from tux2.udfs import mf


@pytest.fixture(scope="module")
def ratings():
    return netflix_like(n_users=300, n_items=80, n_ratings=6000, rank=4, seed=1)


@pytest.mark.parametrize("unit,size,damping", [("edge", 500, None), ("edge", None, None), ("vertex", 10, None),
                                               ("edge", 500, 3.0)])
def test_central_invariant_minibatch_mf(ratings, unit, size, damping):
    """Slack 0: P = 1, 2, 4 and both partitioners give the single-partition model (a
    damped bias's regulariser is summed over the replicas' edges, as its gradient)."""
    train, _ = ratings
    mu = float(train.values.mean())
    prog = mf.program(k=8, mode="minibatch", mu=mu, lr=0.005, batch_size=size, batch_unit=unit,
                      enumerate="item", damping=damping, degrees=loaders.degrees(train))
    ref = Engine(prog, train, partitions=1, seed=3).run(3)
    U0, I0 = ref.vertex_data("user"), ref.vertex_data("item")
    for parts in (2, 4):
        for partitioner in ("random", "bicut"):
            eng = Engine(prog, train, partitions=parts, partitioner=partitioner, seed=3).run(3)
            assert any(p.types[1].n_mirror for p in eng.parts)     # real synchronisation happened
            np.testing.assert_allclose(eng.vertex_data("user")["p"], U0["p"], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(eng.vertex_data("item")["p"], I0["p"], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(eng.vertex_data("item")["b"], I0["b"], rtol=1e-4, atol=1e-5)
            assert eng.context()["rmse"] == pytest.approx(ref.context()["rmse"], rel=1e-6)


@pytest.mark.parametrize("partitioner", ["grid", "greedy", "dbh", "hdrf", "hybrid", "ginger", "aweto"])
def test_central_invariant_holds_for_every_partitioner(ratings, partitioner):
    """Slack 0 with P = 4 under every strategy (incl. ones that move masters) = P = 1."""
    train, _ = ratings
    prog = mf.program(k=4, mode="minibatch", mu=float(train.values.mean()), lr=0.005, batch_size=700)
    ref = Engine(prog, train, partitions=1, seed=2).run(2)
    opts = {"theta": 20} if partitioner in ("hybrid", "ginger") else {}
    eng = Engine(prog, train, partitions=4, partitioner=partitioner, partitioner_options=opts, seed=2).run(2)
    assert sum(p.types[0].n_mirror + p.types[1].n_mirror for p in eng.parts) > 0
    for t in ("user", "item"):
        np.testing.assert_allclose(eng.vertex_data(t)["p"], ref.vertex_data(t)["p"], rtol=1e-4, atol=1e-5)


def test_sgd_single_partition_is_plain_sequential_sgd(ratings):
    """Per-edge SGD in Exchange equals a hand-written sequential loop."""
    train, _ = ratings
    prog = mf.program(k=3, mode="sgd", mu=3.0, lr=0.05, reg=0.1, adaptive=False)
    eng = Engine(prog, train, seed=0)
    P, Q, bu, bi = naive.sequential_sgd(train, eng.vertex_data("user")["p"], eng.vertex_data("item")["p"],
                                        3.0, 0.05, 0.1)
    eng.run(1)
    np.testing.assert_allclose(eng.vertex_data("user")["p"], P, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(eng.vertex_data("item")["b"], bi, rtol=2e-3, atol=2e-4)


def test_damped_biases_are_sequential_sgd_with_a_regulariser_of_damping_over_degree(ratings):
    """With ``damping`` D each edge of a vertex of n ratings regularises its bias by D/n
    (½D·b² over its edges), the step implicit in it: the hand-written loop."""
    train, _ = ratings
    D = 25.0                # users have ~20 ratings, items ~75: c = D/n is far from λ = 0.1 on both sides
    prog = mf.program(k=3, mode="sgd", mu=3.0, lr=0.05, reg=0.1, adaptive=False, damping=D,
                      degrees=loaders.degrees(train))
    eng = Engine(prog, train, seed=0)
    P, Q, bu, bi = naive.sequential_sgd(train, eng.vertex_data("user")["p"], eng.vertex_data("item")["p"],
                                        3.0, 0.05, 0.1, damping=D)
    eng.run(1)
    np.testing.assert_allclose(eng.vertex_data("item")["p"], Q, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(eng.vertex_data("user")["b"], bu, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(eng.vertex_data("item")["b"], bi, rtol=2e-3, atol=2e-4)


def test_adaptive_sgd_steps_each_bias_with_its_own_adagrad_sum(ratings):
    """LibMF's AdaGrad steps (η/√G, G from 1 += |∂p|²/k) for the factors and a sum of its
    own for each bias, G_b += (c·b − err)²: three epochs are the hand-written loop's. At
    λ = 5 the factors' G hardly grows, so a bias stepped with it kept a step of η."""
    train, _ = ratings
    D = 3.0
    prog = mf.program(k=3, mode="sgd", mu=3.0, lr=0.1, reg=5.0, damping=D, degrees=loaders.degrees(train))
    eng = Engine(prog, train, seed=0)
    P, Q, bu, bi = naive.sequential_sgd(train, eng.vertex_data("user")["p"], eng.vertex_data("item")["p"],
                                        3.0, 0.1, 5.0, damping=D, epochs=3, adaptive=True)
    eng.run(3)
    np.testing.assert_allclose(eng.vertex_data("user")["p"], P, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(eng.vertex_data("user")["b"], bu, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(eng.vertex_data("item")["b"], bi, rtol=2e-3, atol=2e-4)


@pytest.mark.filterwarnings("ignore:the model's test RMSE")      # (not below the D = 5 baseline's: expected)
def test_at_a_large_reg_sgd_biases_settle_at_the_damped_bias_fit():
    """λ = 5 pins the factors near 0, so the model is the biases' damped least-squares fit
    (``bias_baseline`` with the same D). With the factors' AdaGrad step the biases never
    settled: test RMSE 1.1956 on this Zipf-like set, 3.2% above the fit's 1.1582; with
    sums of their own 1.1556."""
    from tux2 import MF
    from tux2.estimators.mf import bias_baseline
    train, test = netflix_like(n_users=3000, n_items=300, n_ratings=40_000, user_exponent=1.1, item_exponent=0.9,
                               seed=7)
    m = MF(reg=5.0, damping=3.0, epochs=10, seed=0).fit(train, test)
    mu, b_u, b_i = bias_baseline(train, damping=3.0, passes=50)
    exact = mf.rmse({"p": np.zeros((len(b_u), 1)), "b": b_u}, {"p": np.zeros((len(b_i), 1)), "b": b_i}, test, mu,
                    (train.values.min(), train.values.max()))
    assert m.history_[-1]["test_rmse"] < 1.005 * exact, (m.history_[-1]["test_rmse"], exact)


def _stars_with_a_one_rating_item(seed=0):
    """Star ratings of 300 users on 60 items (Zipf-like popularity), the best of which
    (item 0) 30 users rate 4 or 5, and item 60 rated once, 5 stars, by user 0."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 300, 60
    pairs = {(int(u), int(i)) for u, i in zip(rng.integers(0, n_users, 9000),
                                              np.minimum(rng.zipf(1.4, 9000), n_items - 1))}
    pairs = sorted((u, i) for u, i in pairs if i != 0)
    quality = rng.normal(0, 0.4, n_items)
    r = [min(5, max(1, round(3.5 + quality[i] + rng.normal(0, 0.9)))) for u, i in pairs]
    fans = rng.choice(np.arange(1, n_users), 30, replace=False)
    pairs += [(int(u), 0) for u in fans] + [(0, n_items)]
    r += [int(x) for x in rng.integers(4, 6, 30)] + [5]
    u, i = (np.array(c) for c in zip(*pairs))
    return u, i, np.array(r, np.float64)


def test_an_item_rated_once_is_not_recommended_over_one_thirty_users_rate_highly():
    """A bias learned with λ per rating kept nearly all of a single 5-star rating's
    distance from the mean (1 + λ divides every bias alike), so items rated once or twice
    filled the top 10 (62.5 % of them on ml-latest-small). Damped as D ratings at the
    mean, the once-rated item's bias is at most 1/(1 + D) of that distance, and an item
    30 users rate 4-5 ranks above it for the users who rated neither (all but a few: its
    factors, fitted to the one rating, still lift it for some; λ per rating: 1 in 5)."""
    import tux2
    u, i, r = _stars_with_a_one_rating_item()
    m = tux2.MF(k=8).fit((u, i, r))
    D = m.damping
    assert m.item_bias_[60] <= (5 - m.mu_) / (1 + D) + 0.05, (m.item_bias_[60], m.item_bias_[0])
    users, items, _ = m.recommend(k=61)             # every item each user has not rated, best first
    both = [row for row in items.tolist() if 0 in row and 60 in row]
    assert len(both) > 200
    assert np.mean([row.index(0) < row.index(60) for row in both]) >= 0.95


@pytest.mark.parametrize("parts,order", [(1, "blocked"), (2, "strata")])
def test_planted_low_rank_reaches_noise_floor(parts, order):
    noise = 0.5
    train, test = netflix_like(n_users=1500, n_items=300, n_ratings=240_000, rank=5, noise=noise,
                               user_exponent=0.3, item_exponent=0.3, seed=3)
    strata = None
    if order == "strata":
        o, strata = stratified_order(train.src, train.dst, train.n_src, train.n_dst, 16, seed=1)
    else:
        o = blocked_order(train.src, train.dst, train.n_src, train.n_dst, seed=1)
    train = train.permuted(o)
    mu = float(train.values.mean())
    eng = Engine(mf.program(k=10, mode="sgd", mu=mu, lr=0.1, reg=0.02), train, partitions=parts,
                 partitioner="stratified" if strata is not None else "bicut", strata=strata, seed=1)
    best = np.inf
    for _ in range(15):
        eng.run(1)
        best = min(best, mf.rmse(eng.vertex_data("user"), eng.vertex_data("item"), test, mu))
    assert best <= 1.05 * noise, best


def _rescaled(g, a, b):
    from tux2.graph import BipartiteGraph
    return BipartiteGraph(g.src, g.dst, (a * g.values.astype(np.float64) + b).astype(np.float32), g.n_src, g.n_dst,
                          g.type_names)


def _bias_baseline(train, test, lam=10.0):
    """RMSE of μ + b_u + b_i by alternating ridge sweeps: the model MF must beat."""
    r, mu = train.values.astype(np.float64), float(train.values.mean())
    bu, bi = np.zeros(train.n_src), np.zeros(train.n_dst)
    du, di = np.bincount(train.src, minlength=train.n_src), np.bincount(train.dst, minlength=train.n_dst)
    for _ in range(10):
        bi = np.bincount(train.dst, r - mu - bu[train.src], train.n_dst) / (di + lam)
        bu = np.bincount(train.src, r - mu - bi[train.dst], train.n_src) / (du + lam)
    return float(np.sqrt(np.mean((test.values - mu - bu[test.src] - bi[test.dst]) ** 2)))


def test_ratings_on_any_scale_train_as_star_ratings_do():
    """Ratings spread far wider than stars (×20, a 0-100 scale) diverged in the first
    epoch, and far narrower (÷5) ended at the bias baseline: the defaults are those of
    star ratings. They now train divided by a power of two that brings their standard
    deviation to 0.75 … 1.6, so ×20 and ×40 give the same model in their own units
    (predictions twice), all beat the bias baseline as the star ratings do, and star
    ratings (sd ≈ 1.1) train as they are."""
    import tux2
    train, test = netflix_like(n_users=600, n_items=150, n_ratings=30_000, rank=4, noise=0.5, seed=4)
    assert 0.8 < train.values.std() < 1.5
    u, i = test.src, test.dst
    star = tux2.MF(k=8, epochs=8).fit(train, test)
    assert star.history_[-1]["test_rmse"] < 0.97 * _bias_baseline(train, test)
    fits = {}
    for a, b in ((20.0, 0.0), (40.0, -30.0), (0.2, 0.0)):
        tr, te = _rescaled(train, a, b), _rescaled(test, a, b)
        m = fits[a] = tux2.MF(k=8, epochs=8).fit(tr, te)
        rmse = m.history_[-1]["test_rmse"]
        assert np.isfinite(rmse) and rmse < 0.97 * _bias_baseline(tr, te, 10.0), (a, rmse)
        assert rmse == pytest.approx(-m.score(np.column_stack([u, i, te.values])), rel=1e-6)
    np.testing.assert_allclose(fits[40.0].predict(u, i) + 30.0, 2.0 * fits[20.0].predict(u, i), rtol=1e-5)
    assert star.history_[-1]["test_rmse"] == pytest.approx(fits[0.2].history_[-1]["test_rmse"] / 0.2, rel=0.05)


def test_ratings_near_the_float32_limit_get_a_finite_test_rmse():
    """Ratings ×1e37 train (in units of their spread) to a finite model, but the test
    RMSE squared float32 errors: inf, with numpy's overflow warning on stderr."""
    import warnings

    import tux2
    train, test = netflix_like(n_users=100, n_items=40, n_ratings=2000, rank=2, seed=1)
    tr, te = _rescaled(train, 1e37, 0.0), _rescaled(test, 1e37, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = tux2.MF(k=2, epochs=2).fit(tr, te)
    rmse = m.history_[-1]["test_rmse"]
    assert np.isfinite(rmse), rmse
    assert rmse == pytest.approx(-m.score(np.column_stack([te.src, te.dst, te.values])), rel=1e-6)


def test_one_mistyped_rating_is_not_taken_for_the_scale(tmp_path):
    """One rating of 1e7 among 3000 stars made their sd 1.8e5: rescaled by it the stars
    became ~1e-5 and the run saved a model of nothing (test RMSE ~1e5); five did too
    with a guard on the farthest rating (25 sd). A spread whose mean |r − μ| is below a
    quarter of it is that of a few extreme ratings, not a scale: the ratings train as
    they are, the header says why, and the run stops on the divergence, naming the
    input as a cause. Star ratings with 1 % of 1s still train as stars."""
    import tux2
    from tests.conftest import run_cli
    from tux2.errors import DivergenceError
    from tux2.io import write_edge_list
    train, _ = netflix_like(n_users=300, n_items=80, n_ratings=3000, rank=4, seed=5)
    stars = train.values.copy()
    for n in (5, 1):
        train.values = stars.copy()
        train.values[:n] = 1e7
        with pytest.raises(DivergenceError), pytest.warns(RuntimeWarning, match="mistyped values"):
            tux2.MF(k=4, epochs=2).fit(train)
    path = tmp_path / "typo.txt"
    write_edge_list(str(path), train)
    r = run_cli("run", "mf", str(path), "--k", "4", "--epochs", "2")
    assert r.returncode != 0 and "check the input for mistyped values" in r.stdout, r.stdout
    assert "training diverged" in r.stderr and "check the input values" in r.stderr, r.stderr
    train.values = stars.copy()
    train.values[:30] = 1.0
    assert tux2.MF(k=4, epochs=1).fit(train).history_[-1]["train_rmse"] < 2.0


def _overfitting():
    """Ratings on which MF without regularisation overfits: the test RMSE falls, then rises."""
    return netflix_like(n_users=300, n_items=60, n_ratings=6000, seed=3)


def test_early_stop_ends_training_and_keeps_the_lowest_test_rmse_model(tmp_path):
    """early_stop=N ends training N evaluations after the lowest test RMSE and keeps that epoch's
    model (checked against a run of that many epochs), which model.json names (best_epoch);
    without a new low it changes nothing."""
    import json

    import tux2
    tr, te = _overfitting()
    with pytest.warns(RuntimeWarning, match="overfits these ratings.*early_stop=2"):
        full = tux2.MF(k=16, epochs=20, reg=0.0).fit(tr, te)
    rmse = [r["test_rmse"] for r in full.history_]
    best = int(np.argmin(rmse)) + 1
    assert best <= 16 and rmse[-1] > rmse[best - 1]        # (the data overfit: the test needs that)
    es = tux2.MF(k=16, epochs=20, reg=0.0, early_stop=2).fit(tr, te)
    assert [r["epoch"] for r in es.history_] == list(range(1, best + 3))
    upto = tux2.MF(k=16, epochs=best, reg=0.0).fit(tr, te)
    np.testing.assert_array_equal(es.user_factors_, upto.user_factors_)
    np.testing.assert_array_equal(es.item_bias_, upto.item_bias_)
    assert es.score(te) == pytest.approx(-rmse[best - 1], rel=1e-6)
    es.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert (meta["iteration"], meta["best_epoch"]) == (best + 2, best)
    long = tux2.MF(k=16, epochs=best, reg=0.0, early_stop=5).fit(tr, te)      # ends before it could stop
    assert len(long.history_) == best
    np.testing.assert_array_equal(long.user_factors_, upto.user_factors_)


def test_early_stop_without_test_ratings_to_watch_is_refused(tmp_path):
    """early_stop with no test ratings (fit(data) alone, --test-fraction 0) or none evaluated
    (--eval-every 0) could never stop: it trained every epoch without a word."""
    import tux2
    from tests.conftest import run_cli
    from tux2.io import write_edge_list
    tr, te = _overfitting()
    with pytest.raises(Tux2Error, match=r"early_stop=2 watches the test RMSE: give test ratings \(fit\(data, test\)\)"):
        tux2.MF(k=4, epochs=2, early_stop=2).fit(tr)
    with pytest.raises(ValueError, match="early_stop=2 has no effect with eval_every=0"):
        tux2.MF(k=4, epochs=2, early_stop=2, eval_every=0).fit(tr, te)
    write_edge_list(str(tmp_path / "r.txt"), tr)
    for flags, says in ((["--test-fraction", "0"], "give test ratings (--test FILE or a --test-fraction above 0"),
                        (["--eval-every", "0"], "--early-stop 2 has no effect with --eval-every 0")):
        r = run_cli("run", "mf", str(tmp_path / "r.txt"), "--epochs", "2", "--early-stop", "2", *flags)
        assert r.returncode == 2 and says in r.stderr and "epoch" not in r.stdout, r.stderr


@pytest.mark.slow
def test_early_stop_is_the_same_on_two_workers(tmp_path):
    """Rank 0 alone has the test RMSE: every worker stops at the epoch it decides, and the
    model kept is the one-process one."""
    import tux2
    from tests.conftest import run_cli
    from tux2.io import write_edge_list
    tr, te = _overfitting()
    paths = [str(tmp_path / n) for n in ("train.txt", "test.txt")]
    for p, g in zip(paths, (tr, te)):
        write_edge_list(p, g)
    one = tux2.MF(k=16, epochs=20, reg=0.0, early_stop=2).fit(*paths)
    two = tux2.MF(k=16, epochs=20, reg=0.0, early_stop=2).fit(*paths, workers=2)
    assert len(two.history_) == len(one.history_) < 20
    np.testing.assert_array_equal(two.user_factors_, one.user_factors_)
    r = run_cli("run", "mf", paths[0], "--test", paths[1], "--k", "16", "--reg", "0", "--epochs", "20",
                "--early-stop", "2", "--workers", "2", "--out", str(tmp_path / "m"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "stopped early" in r.stdout and f"the model is epoch {len(one.history_) - 2}'s" in r.stdout
    np.testing.assert_array_equal(tux2.MF.load(str(tmp_path / "m")).user_factors_, one.user_factors_)


DIVERGING_LR = 0.616


def _diverging_file(path):
    """Power-law ratings (Zipf 1.5 users and items, sorted by user, 1-based, a timestamp
    column) on which MF with k=8, lr=DIVERGING_LR improves for 3 epochs and diverges in the
    4th (lr 0.614 … 0.619 do; with the biases stepped by the factors' AdaGrad sum it was 0.45)."""
    rng = np.random.default_rng(1)
    n = 20000
    u, i = np.minimum(rng.zipf(1.5, n), 2000), np.minimum(rng.zipf(1.5, n), 1000)
    U, V = rng.normal(size=(2001, 3)), rng.normal(size=(1001, 3))
    r = np.clip(np.round(3 + (U[u] * V[i]).sum(1) * 0.7 + rng.normal(0, .5, n)), 1, 5)
    o = np.argsort(u, kind="stable")
    with open(path, "w") as f:
        for a, b, c, t in zip(u[o], i[o], r[o], rng.integers(10**9, 2 * 10**9, n)):
            f.write(f"{a} {b} {c:g} {t}\n")
    return ["--duplicates", "last", "--k", "8", "--lr", str(DIVERGING_LR)]


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_divergence_after_a_kept_best_epoch_ends_with_that_model(tmp_path):
    """early_stop keeps the best epoch's model; when a later epoch diverges the run ends
    with that model (written by --out, exit 0, a warning naming both epochs), as Keras'
    restore_best_weights with TerminateOnNaN does. It once stopped with an error and wrote
    nothing. Without early_stop (no kept model) divergence stays an error."""
    import json

    import tux2
    from tests.conftest import run_cli
    path = str(tmp_path / "r.txt")
    flags = _diverging_file(path)
    r = run_cli("run", "mf", path, *flags, "--epochs", "3", "--out", str(tmp_path / "m3"))
    assert r.returncode == 0 and "epoch   3/3" in r.stdout, r.stderr
    want = tux2.MF.load(str(tmp_path / "m3"))
    for workers in ("1", "2"):
        out = tmp_path / f"m{workers}"
        r = run_cli("run", "mf", path, *flags, "--epochs", "10", "--early-stop", "5", "--workers", workers,
                    "--out", str(out), timeout=300)
        assert r.returncode == 0, r.stderr
        assert ("tux2: warning: training diverged at epoch 4 (train_rmse is not finite); lower --lr. The model of epoch 3 "
                "(test_rmse 1.") in r.stderr and "what --out writes" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and f"model written to {out}" in r.stdout, r.stderr
        got = tux2.MF.load(str(out))
        np.testing.assert_array_equal(got.user_factors_, want.user_factors_)
        np.testing.assert_array_equal(got.item_bias_, want.item_bias_)
        meta = json.loads((out / "model.json").read_text())
        assert (meta["best_epoch"], meta["diverged_at"]) == (3, 4)
    r = run_cli("run", "mf", path, *flags, "--epochs", "10", "--out", str(tmp_path / "none"))
    assert r.returncode == 2 and "diverged" in r.stderr and not (tmp_path / "none").exists(), r.stderr
    from tux2 import ingress
    est = tux2.MF(k=8, lr=DIVERGING_LR, duplicates="last", epochs=10, early_stop=5)
    g = est.load_data(path).train                   # held out as the CLI holds out --test-fraction 0.1
    held = ingress.test_mask(range(g.num_edges), 0.1)
    tr, te = g.permuted(~held), loaders.mark_unknown(g.permuted(held), loaders.known_ids(g.permuted(~held)), "baseline")
    with pytest.warns(RuntimeWarning, match=r"diverged at epoch 4 \(train_rmse is not finite\); lower lr=\. The model of "
                                            r"epoch (\d) \(test_rmse 1\.\d+\), the best that early stopping "
                                            r"\(early_stop=\) kept, is the fitted model") as w:
        est.fit(tr, te)
    best = min(est.history_, key=lambda r: r["test_rmse"])["epoch"]
    diverged = [str(x.message) for x in w if "diverged" in str(x.message)]      # (the bias baseline's note too)
    assert len(est.history_) == 3 and len(diverged) == 1 and f"model of epoch {best} " in diverged[0]
    upto = tux2.MF(k=8, lr=DIVERGING_LR, duplicates="last", epochs=best).fit(tr, te)
    np.testing.assert_array_equal(est.user_factors_, upto.user_factors_)
    with pytest.raises(tux2.DivergenceError, match="diverged"):
        tux2.MF(k=8, lr=DIVERGING_LR, duplicates="last", epochs=10).fit(tr, te)


def test_the_items_each_user_rated_are_saved_in_item_order_whatever_the_edge_order():
    """seen.npz is the same file from one worker and from several (whose gathered edges
    come in another order): each user's items ascending."""
    from tux2.estimators.mf import seen_csr
    train, _ = netflix_like(n_users=300, n_items=80, n_ratings=4000, seed=5)
    indptr, items = seen_csr(train)
    want = [sorted(train.dst[train.src == u].tolist()) for u in range(train.n_src)]
    assert [items[a:b].tolist() for a, b in zip(indptr[:-1], indptr[1:])] == want
    shuffled = seen_csr(train.permuted(np.random.default_rng(1).permutation(train.num_edges)))
    np.testing.assert_array_equal(shuffled[0], indptr)
    np.testing.assert_array_equal(shuffled[1], items)


def test_recommend_is_the_top_of_a_plain_sort():
    """recommend's compiled top-k against sorting every item's score: seen items and items
    without ratings left out, a user without ratings given the baseline μ + b_i, ties (equal
    scores, here from duplicated item factors) in item order, short rows padded."""
    import tux2
    rng = np.random.default_rng(4)
    n_u, n_i = 40, 30
    rows = {(int(a), int(b)) for a, b in zip(rng.zipf(1.5, 900) % n_u, rng.zipf(1.4, 900) % n_i)}
    rows |= {(0, j) for j in range(n_i - 3)}                      # user 0 has seen all but 3 of the items
    u, i = np.array(sorted(rows)).T
    m = tux2.MF(k=4, epochs=3).fit((u, i, rng.integers(1, 6, len(u)).astype(float)))
    m.item_factors_[5], m.item_bias_[5] = m.item_factors_[3], m.item_bias_[3]      # a tie
    users = list(range(n_u)) + [10 ** 6]                          # and one unknown user
    names, items, scores = m.recommend(users, k=7, chunk=8)
    known_i = np.isin(np.arange(n_i), i)
    for row, user in enumerate(users):
        if user == 10 ** 6:
            s = m.mu_ + m.item_bias_
        else:
            s = m.user_factors_[user] @ m.item_factors_.T + m.item_bias_ + (m.mu_ + m.user_bias_[user])
        allowed = known_i & ~np.isin(np.arange(n_i), i[u == user])
        want = sorted((-s[j], j) for j in np.flatnonzero(allowed))[:7]
        got = [(j, x) for j, x in zip(items[row], scores[row]) if j >= 0]
        assert [j for j, _ in got] == [j for _, j in want], user
        np.testing.assert_allclose([x for _, x in got], np.clip([-v for v, _ in want], *m.rating_range_))
        assert len(got) == min(7, allowed.sum()) and np.isnan(scores[row][len(got):]).all()


def test_early_stop_after_a_resume_says_which_model_it_keeps(tmp_path):
    """A resumed run can stop on a lowest test RMSE of the checkpoint's run, whose model is gone:
    it says so, and keeps the lowest since the resume."""
    from tests.conftest import run_cli
    from tux2.io import write_edge_list
    tr, te = _overfitting()
    paths = [str(tmp_path / n) for n in ("train.txt", "test.txt")]
    for p, g in zip(paths, (tr, te)):
        write_edge_list(p, g)
    args = ["run", "mf", paths[0], "--test", paths[1], "--k", "16", "--reg", "0", "--checkpoint-dir",
            str(tmp_path / "ck"), "--checkpoint-every", "1"]
    r = run_cli(*args, "--epochs", "14")
    rmse = [float(x.split("test_rmse ")[1].split()[0]) for x in r.stdout.splitlines() if x.startswith("epoch")]
    best = int(np.argmin(rmse)) + 1
    assert r.returncode == 0 and best <= 12, r.stdout
    r = run_cli(*args, "--epochs", "30", "--early-stop", "2", "--resume", str(tmp_path / "ck"))
    assert r.returncode == 0, r.stderr
    assert f"(epoch {best}) for 2 evaluation(s) (--early-stop); that epoch came before the resume" in r.stdout
    assert "epoch  15/30" in r.stdout and "epoch  16/30" not in r.stdout


def test_a_resumed_early_stop_run_keeps_the_model_of_the_checkpoints_best_epoch(tmp_path):
    """With --early-stop the checkpoint keeps the lowest test RMSE's model too: a run stopped
    past its best epoch and resumed ends with the uninterrupted run's model, bit for bit."""
    from tests.conftest import run_cli
    from tux2.io import write_edge_list
    tr, te = _overfitting()
    paths = [str(tmp_path / n) for n in ("train.txt", "test.txt")]
    for p, g in zip(paths, (tr, te)):
        write_edge_list(p, g)
    args = ["run", "mf", paths[0], "--test", paths[1], "--k", "16", "--reg", "0", "--early-stop", "2"]
    r = run_cli(*args, "--epochs", "30", "--out", str(tmp_path / "whole"))
    assert r.returncode == 0, r.stderr
    rmse = [float(x.split("test_rmse ")[1].split()[0]) for x in r.stdout.splitlines() if x.startswith("epoch")]
    best = int(np.argmin(rmse)) + 1
    assert len(rmse) == best + 2 and f"the model is epoch {best}'s" in r.stdout, r.stdout
    ck = ["--checkpoint-dir", str(tmp_path / "ck"), "--checkpoint-every", "1"]
    r = run_cli(*args, "--epochs", str(best + 1), *ck)          # past the best epoch, not yet stopped
    assert r.returncode == 0, r.stderr
    r = run_cli(*args, "--epochs", "30", "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "resumed"))
    assert r.returncode == 0, r.stderr
    assert f"the model is epoch {best}'s" in r.stdout and "since the resume" not in r.stdout, r.stdout
    assert "came before the resume" not in r.stdout
    for f in ("user.npz", "item.npz"):
        whole, resumed = np.load(tmp_path / "whole" / f), np.load(tmp_path / "resumed" / f)
        for key in whole.files:
            np.testing.assert_array_equal(whole[key], resumed[key], err_msg=(f, key))


@pytest.mark.slow
def test_a_two_worker_early_stop_run_resumes_from_its_checkpoint(tmp_path):
    """Rank 0 alone keeps the lowest test RMSE's model in a checkpoint; rank 1 must not take the
    JSON it reads beside it for that model (it stopped with an internal TypeError). The resumed
    run ends with the one-process model."""
    from tests.conftest import run_cli
    from tux2 import MF
    from tux2.io import write_edge_list
    tr, te = _overfitting()
    paths = [str(tmp_path / n) for n in ("train.txt", "test.txt")]
    for p, g in zip(paths, (tr, te)):
        write_edge_list(p, g)
    one = MF(k=16, epochs=30, reg=0.0, early_stop=2).fit(*paths)
    args = ["run", "mf", *paths[:1], "--test", paths[1], "--k", "16", "--reg", "0", "--early-stop", "2",
            "--workers", "2", "--checkpoint-dir", str(tmp_path / "ck"), "--checkpoint-every", "1"]
    r = run_cli(*args, "--epochs", str(len(one.history_) - 1), timeout=300)         # past the best, not stopped
    assert r.returncode == 0, r.stderr
    r = run_cli(*args, "--epochs", "30", "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "m"), timeout=300)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(MF.load(str(tmp_path / "m")).user_factors_, one.user_factors_)


def test_a_run_that_stopped_early_stays_stopped_when_resumed(tmp_path):
    """Resuming the checkpoint of a run that early stopping ended trains nothing more (it trained
    one more epoch, wrote its metrics and a checkpoint, and said 'for 2 evaluation(s)' after 3);
    the model is the stopped run's."""
    from tests.conftest import run_cli
    from tux2 import MF
    from tux2.io import write_edge_list
    tr, te = _overfitting()
    paths = [str(tmp_path / n) for n in ("train.txt", "test.txt")]
    for p, g in zip(paths, (tr, te)):
        write_edge_list(p, g)
    args = ["run", "mf", paths[0], "--test", paths[1], "--k", "16", "--reg", "0", "--early-stop", "2", "--epochs", "30",
            "--checkpoint-dir", str(tmp_path / "ck"), "--checkpoint-every", "1"]
    r = run_cli(*args, "--out", str(tmp_path / "whole"))
    assert r.returncode == 0 and "stopped early" in r.stdout, r.stderr
    r = run_cli(*args, "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "resumed"))
    assert r.returncode == 0, r.stderr
    assert "stopped early" in r.stdout and not any(x.startswith("epoch") for x in r.stdout.splitlines()), r.stdout
    np.testing.assert_array_equal(MF.load(str(tmp_path / "resumed")).user_factors_,
                                  MF.load(str(tmp_path / "whole")).user_factors_)


def test_ratings_of_one_value_get_a_note_and_no_overfitting_note():
    """A file of presences (every rating 1: user-artist lines read without their plays) says
    that a model of one value learns nothing; its test RMSE, 0 at every epoch, is no rise,
    so no overfitting note (it said 'lowest at epoch 1 (0.0000) and rose to 0.0000')."""
    import warnings

    import tux2
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 200, 3000), rng.zipf(1.5, 3000) % 300
    pairs = np.unique(np.stack([users, items], 1), axis=0)
    ones = np.ones(len(pairs))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = tux2.MF(k=8, epochs=4).fit((pairs[::2, 0], pairs[::2, 1], ones[::2]),
                                       (pairs[1::2, 0], pairs[1::2, 1], ones[1::2]))
    said = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert [r["test_rmse"] for r in m.history_] == [0.0] * 4
    assert any(s.startswith("every training rating is 1: a model of one value learns nothing") for s in said), said
    assert not any("overfits" in s for s in said), said
