"""A checkpoint resumed on another layout (partitions, workers, partitioner) ends with the
model an uninterrupted run gives: the model at slack 0 does not depend on the layout
(DESIGN.md, the central invariant), so neither may a resume."""
import json
import os

import numpy as np
import pytest

from tests.conftest import run_cli
from tests.test_checkpoint import _arrays, _run, _same
from tux2 import LDA, MF, BlockPG, CheckpointError, LogisticRegression, checkpoint
from tux2.datasets import lda_corpus, netflix_like, sparse_classification
from tux2.engine import Engine
from tux2.errors import ContextStateError
from tux2.io import write_libsvm
from tux2.udfs import mf


def _power_law_ratings(seed=7):
    """Ratings with Zipf-like (exponent 1.5) user and item degrees, no duplicate pairs."""
    rng = np.random.default_rng(seed)
    u, i = rng.zipf(1.5, 40_000) - 1, rng.zipf(1.5, 40_000) - 1
    keep = (u < 3000) & (i < 800)
    key = np.unique(u[keep].astype(np.int64) * 800 + i[keep])
    u, i = key // 800, key % 800
    r = np.clip(np.round(3 + rng.normal(0, 1, len(u))), 1, 5)
    return u, i, r


@pytest.fixture(scope="module")
def ratings_path(tmp_path_factory):
    u, i, r = _power_law_ratings()
    path = tmp_path_factory.mktemp("relayout") / "z.txt"     # sorted by user, 1-based, a timestamp column
    order = np.lexsort((i, u))
    np.savetxt(path, np.column_stack([u[order] + 1, i[order] + 1, r[order], 1_600_000_000 + u[order]]), fmt="%d")
    return str(path)


def _model(est, path):
    est.save(path)
    return _arrays(path, sorted(f for f in os.listdir(path) if f.endswith(".npz")))


MAKE = {      # name: (estimator of n iterations, the input it trains on)
    "mf-sgd": (lambda n: MF(k=6, epochs=n, seed=1), "r"),
    "mf-als": (lambda n: MF(k=6, epochs=n, mode="als", seed=1), "r"),
    "lda": (lambda n: LDA(topics=5, iterations=n, seed=1), "c"),
    "lr": (lambda n: LogisticRegression(epochs=n, batch=200), "s"),
    "blockpg": (lambda n: BlockPG(epochs=n, reg=0.5), "s"),
}


@pytest.fixture(scope="module")
def inputs(ratings_path, tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    g, y, _ = sparse_classification(n_samples=600, n_features=300, nnz_per_sample=8, seed=4)
    write_libsvm(d / "s.svm", g, y)
    docs, words, counts, _ = lda_corpus(n_docs=120, n_words=300, n_topics=5, doc_length=30, seed=2)
    (d / "c.txt").write_text("".join(f"{a} {b} {int(c)}\n" for a, b, c in zip(docs, words, counts)))
    return {"r": ratings_path, "s": str(d / "s.svm"), "c": str(d / "c.txt")}


@pytest.mark.parametrize("a, b", [(1, 4), (4, 1)], ids=["1-to-4", "4-to-1"])
@pytest.mark.parametrize("name", sorted(MAKE))
def test_a_resume_on_other_partitions_ends_with_the_uninterrupted_model(inputs, tmp_path, name, a, b):
    make, data = MAKE[name]
    data = inputs[data]
    on_a = _model(make(4).fit(data, partitions=a), tmp_path / "a")
    on_b = _model(make(4).fit(data, partitions=b), tmp_path / "b")
    make(2).fit(data, partitions=a, checkpoint=tmp_path / "ck")        # interrupted after iteration 2
    resumed = _model(make(4).fit(data, partitions=b, checkpoint=tmp_path / "ck"), tmp_path / "r")
    _agrees(resumed, on_a, on_b)


def _agrees(resumed, on_a, on_b):
    """``resumed`` (from a checkpoint of layout A, on B) is B's uninterrupted model, bit for bit
    where A's and B's agree bit for bit, else no further from it than A's is."""
    assert resumed.keys() == on_b.keys()
    for k in on_b:
        if np.array_equal(on_a[k], on_b[k]):
            np.testing.assert_array_equal(resumed[k], on_b[k], err_msg=k)
        else:           # floating-point sums in another order (lr's, blockpg's gradients)
            gap = np.abs(on_a[k] - on_b[k]).max()
            assert 0 < gap < 1e-9 * max(1.0, np.abs(on_b[k]).max()), (k, gap)
            assert np.abs(resumed[k] - on_b[k]).max() <= 4 * gap, k


def _engine(graph, P, slack=0, seed=0):
    return Engine(mf.program(k=4, mode="minibatch", mu=float(graph.values.mean()), batch_size=700), graph,
                  partitions=P, partitioner="random", seed=seed, slack=slack)


def test_another_layout_refuses_changed_input(tmp_path):
    tr, _ = netflix_like(n_users=200, n_items=50, n_ratings=3000, seed=0)
    eng = _engine(tr, 1)
    eng.run(1)
    checkpoint.save(tmp_path, eng, {})
    tr.values[17] += 0.5                        # one rating changed: same edges, same count
    with pytest.raises(CheckpointError, match="edges .ids or values. differ"):
        checkpoint.load(tmp_path, _engine(tr, 3), {})
    tr.values[17] -= 0.5
    checkpoint.load(tmp_path, _engine(tr, 3), {})


def _changed(arrays, key, edit):
    out = dict(arrays)
    out[key] = arrays[key].copy()
    edit(out[key])
    return out


def test_state_only_its_own_layout_can_continue_is_refused_with_why(tmp_path):
    tr, _ = netflix_like(n_users=200, n_items=50, n_ratings=3000, seed=0)
    eng = _engine(tr, 3)
    eng.run(1)
    arrays, meta = eng.state()
    mirror = eng.parts[1].types[1].n_master            # partition 1's first item mirror
    assert eng.parts[1].types[1].n_mirror > 0

    def first_mirror(a):
        a["b"][mirror] += 1.0

    def other_context(a):
        a[[f for f in a.dtype.names if f not in eng.program.context.sum + eng.program.context.settings][0]] += 1

    cases = [("p0.t0.accum", lambda a: a.view(np.uint8).__setitem__(0, 1), "accumulated user updates not applied"),
             ("p2.t1.touched", lambda a: None, None),
             ("p1.t1.data", first_mirror, "partition 1's item mirrors differ from their masters in 'b'"),
             ("p2.ctx", other_context, "the partitions' context field .* differs")]
    for key, edit, says in cases:
        if says is None:            # a touched list: one row touched since the last Apply
            bad = dict(arrays, **{key: np.array([0], np.int64)})
            says = "partition 2 has 1 item rows touched since the last Apply"
        else:
            bad = _changed(arrays, key, edit)
        with pytest.raises(ContextStateError, match="not at a point another layout can resume .*" + says):
            _engine(tr, 2).restore_relayout([bad], meta)
    _engine(tr, 2).restore_relayout([arrays], meta)         # as it was: it resumes


def test_a_checkpoint_without_the_layout_ids_names_its_layout(tmp_path):
    tr, _ = netflix_like(n_users=200, n_items=50, n_ratings=3000, seed=0)
    eng = _engine(tr, 2)
    eng.run(1)
    arrays, meta = eng.state()
    old = {k: v for k, v in arrays.items() if not k.endswith((".gid", ".eid", ".n_master"))}
    with pytest.raises(Exception, match="earlier tux2.*resume it on the layout that wrote it"):
        _engine(tr, 3).restore_relayout([old], {k: v for k, v in meta.items() if k != "relayout"})


def _header(r):
    return [line for line in r.stdout.splitlines() if "resumed from" in line]


@pytest.mark.slow
@pytest.mark.parametrize("a, b", [("1", "2"), ("2", "1")], ids=["1-to-2-workers", "2-to-1-worker"])
def test_a_resume_on_other_workers_ends_with_the_uninterrupted_model(ratings_path, tmp_path, a, b):
    common = ["run", "mf", ratings_path, "--k", "8", "--timeout", "30"]
    for w in (a, b):
        _run(*common, "--workers", w, "--epochs", "4", "--out", str(tmp_path / f"full{w}"))
    _run(*common, "--workers", a, "--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck"))
    r = run_cli(*common, "--workers", b, "--epochs", "4", "--resume", str(tmp_path / "ck"), "--out",
                str(tmp_path / "res"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"a checkpoint of {a} worker" in _header(r)[0] and f"this run's {b} worker" in _header(r)[0], r.stdout
    files = ("user.npz", "item.npz")
    _same(_arrays(tmp_path / "res", files), _arrays(tmp_path / f"full{b}", files))
    _same(_arrays(tmp_path / f"full{a}", files), _arrays(tmp_path / f"full{b}", files))
    assert json.load(open(tmp_path / "res" / "model.json"))["clock"] == \
        json.load(open(tmp_path / f"full{b}" / "model.json"))["clock"]


@pytest.mark.slow
def test_two_workers_refuse_a_checkpoint_of_other_ratings(ratings_path, tmp_path):
    path = tmp_path / "z.txt"
    lines = open(ratings_path).read().splitlines()
    path.write_text("\n".join(lines) + "\n")
    common = ["run", "mf", str(path), "--k", "4", "--timeout", "30"]
    _run(*common, "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", str(tmp_path / "ck"))
    u, i, r, t = lines[0].split()
    lines[0] = " ".join([u, i, str(int(r) % 5 + 1), t])         # one rating changed, the same edges
    path.write_text("\n".join(lines) + "\n")
    r = run_cli(*common, "--workers", "2", "--epochs", "2", "--resume", str(tmp_path / "ck"), timeout=300)
    assert r.returncode == 2 and "differ from those the checkpoint was trained on" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_a_resume_with_another_partitioner_says_so_and_ends_with_its_model(inputs, tmp_path):
    common = ["run", "blockpg", inputs["s"], "--lam", "0.5", "--partitions", "2"]
    for how in ("bicut", "random"):
        _run(*common, "--partitioner", how, "--epochs", "4", "--out", str(tmp_path / how))
    _run(*common, "--partitioner", "bicut", "--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir",
         str(tmp_path / "ck"))
    r = run_cli(*common, "--partitioner", "random", "--epochs", "4", "--resume", str(tmp_path / "ck"), "--out",
                str(tmp_path / "res"))
    assert r.returncode == 0, r.stderr
    assert "a checkpoint of 1 worker, 2 partitions (bicut) laid out on this run's 1 worker, 2 partitions (random)" \
        in _header(r)[0], r.stdout
    files = ("weights.npz",)
    _agrees(_arrays(tmp_path / "res", files), _arrays(tmp_path / "bicut", files), _arrays(tmp_path / "random", files))



def test_context_records_that_differ_only_in_padding_are_the_same():
    """MF's context record has padding (an f4 before an i8); np.load fills it with whatever
    memory held, so each part file of one checkpoint read back has its own: comparing
    their tobytes() refused 3-worker checkpoints on another layout as 'global_ctx …
    differs between its files' (brk50)."""
    from tux2.engine import _same_records
    dt = np.dtype({"names": ["k", "mu", "n"], "formats": ["<i8", "<f4", "<i8"], "offsets": [0, 8, 16],
                   "itemsize": 24})
    a, b = np.zeros(1, dt), np.zeros(1, dt)
    a["k"], a["mu"], a["n"] = 4, 3.5, 7
    b[...] = a
    b.view(np.uint8)[12:16] = 0xAB                  # the padding only
    assert a.tobytes() != b.tobytes() and _same_records(a, b)
    b["mu"] = np.nextafter(np.float32(3.5), np.float32(4))
    assert not _same_records(a, b)


@pytest.mark.slow
def test_a_three_worker_checkpoint_resumes_on_one_worker(ratings_path, tmp_path):
    common = ["run", "mf", ratings_path, "--k", "4", "--timeout", "30"]
    _run(*common, "--epochs", "4", "--out", str(tmp_path / "full"))
    _run(*common, "--workers", "3", "--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck"))
    r = run_cli(*common, "--epochs", "4", "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "res"),
                timeout=300)
    assert r.returncode == 0, r.stderr
    assert "a checkpoint of 3 workers" in _header(r)[0], r.stdout
    files = ("user.npz", "item.npz")
    _same(_arrays(tmp_path / "res", files), _arrays(tmp_path / "full", files))


def test_part_files_read_piece_by_piece_hold_what_np_load_reads(tmp_path):
    """checkpoint.PartFile: every array of a part file (structured rows, 0-d, empty,
    2-D) as np.load reads it, whole and by any slice of rows."""
    arrays = {"rec": np.array([(1.5, [1, 2, 3]), (2.5, [4, 5, 6]), (3.5, [7, 8, 9])],
                              [("b", "<f4"), ("p", "<f4", (3,))]),
              "scalar": np.array(7, np.int64), "empty": np.zeros(0, np.uint16),
              "grid": np.arange(24, dtype=np.float64).reshape(6, 4), "fortran": np.asfortranarray(np.ones((3, 2)))}
    d = tmp_path / "ckpt"
    d.mkdir()
    np.savez(d / "part-0.npz", **arrays)
    from tux2 import files
    files.write_dir(str(d), {}, present=["part-0.npz"])
    with checkpoint.PartFile(str(d), 0) as f:
        assert sorted(f.keys()) == sorted(arrays)
        for k, a in arrays.items():
            np.testing.assert_array_equal(np.asarray(f[k]), a, err_msg=k)
            assert f[k].dtype == a.dtype and f[k].shape == a.shape
            if a.ndim and k != "fortran":
                for lo, hi in ((0, 1), (1, 3), (2, 99), (5, 2)):
                    np.testing.assert_array_equal(f[k][lo:hi], a[lo:hi], err_msg=f"{k}[{lo}:{hi}]")


@pytest.mark.parametrize("a, b", [(3, 2), (1, 4), (4, 3)])
def test_a_relayout_read_in_small_pieces_is_the_relayout_of_whole_arrays(tmp_path, monkeypatch, a, b):
    """A relayout reads each part file in pieces of RELAYOUT_BYTES (here 256: many pieces
    per array, none larger) and lays out bit for bit the state the same arrays in memory give."""
    import tux2.engine
    tr, _ = netflix_like(n_users=300, n_items=60, n_ratings=4000, seed=3)
    eng = _engine(tr, a)
    eng.run(2)
    checkpoint.save(tmp_path, eng, {})
    path = checkpoint.latest(str(tmp_path))
    meta = json.load(open(os.path.join(path, "state.json")))
    whole = _engine(tr, b)
    whole.restore_relayout([checkpoint._read_part(path, 0)], meta)
    monkeypatch.setattr(tux2.engine, "RELAYOUT_BYTES", 256)
    reads = []
    real = checkpoint.Member._read
    monkeypatch.setattr(checkpoint.Member, "_read", lambda self, at, n: reads.append(n) or real(self, at, n))
    pieces = _engine(tr, b)
    with checkpoint.PartFile(path, 0) as f:
        pieces.restore_relayout([f], meta)
    assert len(reads) > 50 and max(reads) <= 256 + 8 * 64, max(reads)     # (one row may be wider than a piece)
    _same({k: v for k, v in whole.state()[0].items()}, {k: v for k, v in pieces.state()[0].items()})
    whole.run(1)
    pieces.run(1)
    _same(whole.state()[0], pieces.state()[0])


def test_two_workers_refuse_a_checkpoint_only_its_layout_can_continue_with_one_reason(ratings_path, tmp_path):
    """Each worker checks the rows it takes; the reasons are gathered, so every worker
    stops with the same error (not a 'worker 0 failed' relayed by the other)."""
    from tux2 import files
    MF(k=4, epochs=1, seed=1).fit(ratings_path, partitions=3, checkpoint=tmp_path / "ck")
    path = checkpoint.latest(str(tmp_path / "ck"))
    part = os.path.join(path, "part-0.npz")
    with np.load(part) as z:
        arrays = {k: z[k] for k in z.files}
    first = next(r for r in range(3) if len(arrays[f"p{r}.t1.gid"]) > int(arrays[f"p{r}.t1.n_master"][0]))
    mirror = int(arrays[f"p{first}.t1.n_master"][0])
    for key in (f"p{first}.t1.data", f"p{first}.t1.snapshot"):     # an item mirror that is not its master's copy
        if key in arrays:
            arrays[key]["b"][mirror] += 1.0
    np.savez(part, **arrays)
    manifest = json.loads(open(os.path.join(path, "manifest.json")).read())
    manifest["files"]["part-0.npz"] = files.describe(part)
    open(os.path.join(path, "manifest.json"), "w").write(json.dumps(manifest))
    with pytest.raises(CheckpointError) as e:
        MF(k=4, epochs=2, seed=1).fit(ratings_path, workers=2, checkpoint=tmp_path / "ck")
    assert f"not at a point another layout can resume (partition {first}'s item mirrors differ from their masters " \
           "in 'b'" in str(e.value) and "failed" not in str(e.value), e.value
