"""Issue 21 (inputs, options, checkpoints, model files): a resume refuses changed data,
multi-worker MF models know the rated items, model directories and checkpoints are
written whole with a checksummed manifest and read back only after checks, and a
full disk leaves the previous model intact."""
import json
import os
import re
import resource
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import checkpoint, io
from tux2.datasets import netflix_like
from tux2 import MF


def _write_ratings(path, users=300, items=60, n=6000, seed=5, scale=1.0):
    tr, _ = netflix_like(n_users=users, n_items=items, n_ratings=n, seed=seed)
    _, first = np.unique(tr.src * tr.n_dst + tr.dst, return_index=True)
    first = np.sort(first)
    np.savetxt(path, np.column_stack([tr.src[first], tr.dst[first], tr.values[first] * scale]),
               fmt="%d %d %.3f")
    return str(path)


@pytest.fixture(scope="module")
def ratings(tmp_path_factory):
    return _write_ratings(tmp_path_factory.mktemp("hard") / "r.txt")


def _ok(*args):
    r = run_cli(*args, "--quiet")
    assert r.returncode == 0, r.stderr
    return r


def _error(r, *parts):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("tux2: error:"), r.stderr
    for p in parts:
        assert p in r.stderr, r.stderr


# ------------------------------------------------------------------ item 2: resume checks the data
def test_resume_refuses_changed_ratings_and_names_what_differs(tmp_path):
    data = _write_ratings(tmp_path / "r.txt")
    ck = str(tmp_path / "ck")
    _ok("run", "mf", data, "--k", "4", "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", ck)
    lines = open(data).read().splitlines()
    # every rating changed, same ids, same line count: only the values differ
    changed = [f"{a} {b} {float(r) / 2 + 0.25:.3f}" for a, b, r in (x.split() for x in lines)]
    with open(data, "w") as f:
        f.write("\n".join(changed) + "\n")
    r = run_cli("run", "mf", data, "--k", "4", "--epochs", "2", "--resume", ck)
    _error(r, "edge values differ", data, "bytes then", "modified")
    # one pair replaced by an unseen one (an item id present elsewhere): the ids differ
    a, b, v = lines[0].split()
    pairs = {tuple(x.split()[:2]) for x in lines}
    new_item = next(str(i) for i in range(60) if (a, str(i)) not in pairs)
    with open(data, "w") as f:
        f.write("\n".join([f"{a} {new_item} {v}"] + lines[1:]) + "\n")
    r = run_cli("run", "mf", data, "--k", "4", "--epochs", "2", "--resume", ck)
    _error(r, data)
    assert "differ" in r.stderr or "holds other" in r.stderr


# ------------------------------------------------------------------ item 3: seen.npz with several workers
def test_multi_worker_mf_model_excludes_rated_items(ratings, tmp_path):
    out = str(tmp_path / "m")
    _ok("run", "mf", ratings, "--k", "4", "--epochs", "2", "--workers", "2", "--partitions", "2",
        "--timeout", "20", "--out", out)
    model = MF.load(out)
    assert model.seen_ is not None
    src, dst = np.loadtxt(ratings, usecols=(0, 1), dtype=np.int64).T
    r = run_cli("predict", out, "--top-k", "5", "-o", str(tmp_path / "top.txt"))
    assert r.returncode == 0, r.stderr
    rated = set(zip(src.tolist(), dst.tolist()))
    recs = [(int(line.split()[0]), int(t.split(":")[0])) for line in open(tmp_path / "top.txt")
            for t in line.split()[1:]]
    assert len(recs) > 100
    # the split holds out ~10 %: only those may come back; every training pair is excluded
    train_pairs = set(zip(*[a.tolist() for a in _seen_pairs(model)]))
    assert not train_pairs & set(recs)
    assert len(train_pairs) > 0.85 * len(rated)


def _seen_pairs(model):
    indptr, indices = model.seen_
    users = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return users, indices


# ------------------------------------------------------------------ item 7: model files written whole
def _model_arrays(directory):
    out = {}
    for name in ("user.npz", "item.npz"):
        with np.load(os.path.join(directory, name)) as z:
            out.update({f"{name}:{k}": z[k] for k in z.files})
    return out


def _limited(limit):
    def pre():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def test_a_full_disk_keeps_the_previous_model(ratings, tmp_path):
    out = str(tmp_path / "model")
    _ok("run", "mf", ratings, "--k", "40", "--epochs", "1", "--out", out)
    before = _model_arrays(out)
    size = os.path.getsize(os.path.join(out, "user.npz"))
    # the next run may write files up to half the user file: the model cannot be written
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings, "--k", "40", "--epochs", "2",
                        "--seed", "3", "--out", out, "--quiet"], capture_output=True, text=True, timeout=300,
                       preexec_fn=_limited(size // 2))
    _error(r, "cannot write", os.path.join(out, "user.npz"))
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]
    after = _model_arrays(out)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k], err_msg=k)
    MF.load(out)                                # still whole: the manifest agrees
    r = run_cli("predict", out, "--top-k", "2")
    assert r.returncode == 0, r.stderr


def test_a_full_disk_leaves_no_half_written_checkpoint(ratings, tmp_path):
    """A checkpoint whose write failed left ckpt-N.partial behind until the next save; the
    checkpoint before it stays the one resumed from."""
    ck = str(tmp_path / "ck")
    _ok("run", "mf", ratings, "--k", "40", "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", ck)
    size = os.path.getsize(os.path.join(ck, "ckpt-00000001", "part-0.npz"))
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings, "--k", "40", "--epochs", "3",
                        "--resume", ck, "--checkpoint-every", "1", "--quiet"], capture_output=True, text=True,
                       timeout=300, preexec_fn=_limited(size // 2))
    _error(r, "cannot write", ck)
    assert sorted(f for f in os.listdir(ck) if not f.startswith(".")) == ["LATEST", "ckpt-00000001"], os.listdir(ck)


def test_outputs_are_checked_before_training(ratings, tmp_path):
    (tmp_path / "afile").write_text("x")
    r = run_cli("run", "mf", ratings, "--epochs", "1", "--out", str(tmp_path / "afile"))
    _error(r, "must be a directory")
    assert "epoch" not in r.stdout
    r = run_cli("run", "mf", ratings, "--epochs", "1", "--metrics", str(tmp_path / "afile" / "m.jsonl"))
    _error(r, "is not a directory")
    r = run_cli("run", "mf", ratings, "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir",
                str(tmp_path / "afile"))
    _error(r, "must be a directory")


def test_predict_checks_its_outputs_before_predicting(ratings, tmp_path):
    """predict's --metrics, as its -o, is checked before the model is used: an unwritable
    one used to fail after every prediction had been printed."""
    (tmp_path / "afile").write_text("x")
    _ok("run", "mf", ratings, "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    r = run_cli("predict", str(tmp_path / "m"), ratings, "--metrics", str(tmp_path / "afile" / "m.json"))
    _error(r, "is not a directory")
    assert r.stdout == "" and "rmse" not in r.stderr, r.stdout[:200] + r.stderr


def test_top_k_names_the_line_of_a_non_numeric_user(ratings, tmp_path):
    """A word in --top-k's user list for a model of integer ids is a bad line, not a traceback."""
    _ok("run", "mf", ratings, "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    users = tmp_path / "users.txt"
    users.write_text("1\n# a comment\nabc\n")
    _error(run_cli("predict", str(tmp_path / "m"), "--top-k", "2", str(users)),
           f"{users}:3: malformed user id (the model's user ids are integers) (line text: 'abc')")


def test_predict_pairs_of_words_for_a_model_of_integer_ids_name_no_flag_predict_lacks(ratings, tmp_path):
    """'user item' words for a model trained on integer ids: the reader's hint said 'use --ids
    string', which predict does not take (the model fixes the ids' kind); it says that kind."""
    _ok("run", "mf", ratings, "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1 2\nabc 2\n")
    r = run_cli("predict", str(tmp_path / "m"), str(pairs))
    _error(r, f"{pairs}:2: malformed vertex id (the model was trained on integer ids) (line text: 'abc 2')")
    assert "--ids" not in r.stderr, r.stderr


def test_top_k_skips_a_header_line_as_rating_files_do(ratings, tmp_path):
    """pandas' to_csv writes 'userId' above the users (and a test split's 'userId,movieId,…'
    above its pairs): --top-k read it as a malformed user id; a word in a later line still is one."""
    _ok("run", "mf", ratings, "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    plain, headed = tmp_path / "users.txt", tmp_path / "users.csv"
    plain.write_text("1\n2\n")
    headed.write_text("userId,movieId\n1,5\n2,7\n")
    want = run_cli("predict", str(tmp_path / "m"), "--top-k", "2", str(plain))
    assert want.returncode == 0 and len(want.stdout.splitlines()) == 2, want.stderr
    got = run_cli("predict", str(tmp_path / "m"), "--top-k", "2", str(headed))
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    headed.write_text("userId\n1\nabc\n")
    _error(run_cli("predict", str(tmp_path / "m"), "--top-k", "2", str(headed)),
           f"{headed}:3: malformed user id")


def test_top_k_reads_user_ids_as_the_rating_files_readers_do(tmp_path):
    """A user list saved with a byte-order mark and CRLF, quoted ids or Latin-1 bytes (as the
    rating file was: Book-Crossing's) names the model's users: the mark, the quotes and the
    bytes were part of the id, an unknown user given the baseline's items without a word."""
    rows = [f'"u{u}";"{"caf" if u % 3 else "b"}{i}"' for u in range(8) for i in range(u % 4, 12, 2)]
    train = tmp_path / "r.csv"
    text = "\n".join(f"{r};{1 + (len(r) * 7) % 5}" for r in rows) + '\n"\xe9t\xe9";"b1";4\n'
    train.write_bytes(text.encode("latin-1"))
    _ok("run", "mf", str(train), "--epochs", "1", "--k", "2", "--out", str(tmp_path / "m"))
    plain, odd = tmp_path / "plain.txt", tmp_path / "odd.txt"
    plain.write_text("u1\nu2\n\u00e9t\u00e9\n", encoding="utf-8")
    odd.write_bytes(b'\xef\xbb\xbfu1\r\n"u2"\r\n"\xe9t\xe9"\r\n')
    want = run_cli("predict", str(tmp_path / "m"), "--top-k", "2", "--unknown", "error", str(plain))
    assert want.returncode == 0 and len(want.stdout.splitlines()) == 3, want.stderr
    got = run_cli("predict", str(tmp_path / "m"), "--top-k", "2", "--unknown", "error", str(odd))
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout


def test_metrics_records_and_predictions_are_whole_under_a_full_disk(ratings, tmp_path):
    metrics = str(tmp_path / "m.jsonl")
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings, "--k", "4", "--epochs", "40",
                        "--metrics", metrics, "--quiet"], capture_output=True, text=True, timeout=300,
                       preexec_fn=_limited(3000))
    _error(r, "cannot write", metrics)
    text = open(metrics).read()
    assert text.endswith("\n") and all(json.loads(line)["epoch"] for line in text.splitlines())
    model = str(tmp_path / "model")
    _ok("run", "mf", ratings, "--k", "4", "--epochs", "1", "--out", model)
    pred = str(tmp_path / "pred.txt")
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "predict", model, ratings, "-o", pred],
                       capture_output=True, text=True, timeout=300, preexec_fn=_limited(4000))
    _error(r, "cannot write", pred)
    assert not os.path.exists(pred) and not os.path.exists(pred + ".tmp")


# ------------------------------------------------------------------ item 8: manifests, damaged files
def test_model_manifest_catches_damage_and_stale_files(ratings, tmp_path):
    out = tmp_path / "model"
    _ok("run", "mf", ratings, "--k", "4", "--epochs", "1", "--out", str(out))
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert {"user.npz", "item.npz", "seen.npz", "model.json", "summary.txt"} <= set(manifest)
    meta = (out / "model.json").read_text()
    (out / "model.json").write_text(meta.replace('"k": 4', '"k": 5'))
    _error(run_cli("predict", str(out), "--top-k", "2"), "model.json", "SHA-256")
    (out / "model.json").write_text(meta)
    raw = (out / "item.npz").read_bytes()
    (out / "item.npz").write_bytes(raw[: len(raw) // 2])
    _error(run_cli("predict", str(out), "--top-k", "2"), "item.npz", "truncated")


def _checkpointed(ratings, tmp_path):
    ck = tmp_path / "ck"
    _ok("run", "mf", ratings, "--k", "4", "--epochs", "2", "--checkpoint-every", "2", "--checkpoint-dir", str(ck))
    return ck, ck / "ckpt-00000002"


def test_a_flipped_bit_in_state_json_is_refused(ratings, tmp_path):
    ck, last = _checkpointed(ratings, tmp_path)
    state = (last / "state.json").read_text()
    assert '"iteration": 2' in state
    (last / "state.json").write_text(state.replace('"iteration": 2', '"iteration": 3'))
    _error(run_cli("run", "mf", ratings, "--k", "4", "--epochs", "4", "--resume", str(ck)),
           "damaged checkpoint", "state.json")


def test_truncated_checkpoint_files_are_errors_not_tracebacks(ratings, tmp_path):
    ck, last = _checkpointed(ratings, tmp_path)
    for name in ("part-0.npz", "state.json"):
        raw = (last / name).read_bytes()
        (last / name).write_bytes(raw[:100])
        _error(run_cli("run", "mf", ratings, "--k", "4", "--epochs", "4", "--resume", str(ck)), name)
        (last / name).write_bytes(raw)
    (last / "manifest.json").unlink()
    _error(run_cli("run", "mf", ratings, "--k", "4", "--epochs", "4", "--resume", str(ck)), "incomplete")


def test_latest_must_name_a_sibling(ratings, tmp_path):
    ck, last = _checkpointed(ratings, tmp_path)
    elsewhere = tmp_path / "x"
    os.rename(last, elsewhere)
    (ck / "LATEST").write_text("../x\n")
    _error(run_cli("run", "mf", ratings, "--k", "4", "--epochs", "4", "--resume", str(ck)),
           "not a checkpoint beside it")
    with pytest.raises(checkpoint.CheckpointError, match="beside it"):
        checkpoint.latest(str(ck))


def test_two_runs_sharing_a_checkpoint_directory(ratings, tmp_path):
    ck = str(tmp_path / "ck")
    holder = checkpoint.lock(ck)                     # a run in progress writes here
    try:
        r = run_cli("run", "mf", ratings, "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", ck)
        _error(r, "another run", f"pid {os.getpid()}", "--checkpoint-dir")
    finally:
        os.close(holder)
    _ok("run", "mf", ratings, "--k", "4", "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", ck)


# ------------------------------------------------------------------ item 6: loaded arrays are checked
def _rewrite(directory, name, **changes):
    """Change arrays of an .npz in ``directory`` and re-sign the manifest, as a crafted
    file would: the checks that remain are those of the arrays themselves."""
    from tux2 import files
    path = os.path.join(directory, name)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(path, **arrays)
    m = json.load(open(os.path.join(directory, "manifest.json")))
    m["files"][name] = files.describe(path)
    json.dump(m, open(os.path.join(directory, "manifest.json"), "w"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(40)]
    path = tmp_path_factory.mktemp("lda") / "docs.txt"
    path.write_text("".join(" ".join(rng.choice(words, 12)) + "\n" for _ in range(60)))
    return str(path)


def test_crafted_lda_checkpoint_topic_index_is_refused(corpus, tmp_path):
    ck = tmp_path / "ck"
    _ok("run", "lda", corpus, "--topics", "5", "--iterations", "1", "--checkpoint-every", "1",
        "--checkpoint-dir", str(ck))
    last = str(ck / "ckpt-00000001")
    with np.load(os.path.join(last, "part-0.npz")) as z:
        edata = z["p0.edata"].copy()
    edata["z"][0, 0] = 30000
    _rewrite(last, "part-0.npz", **{"p0.edata": edata})
    r = run_cli("run", "lda", corpus, "--topics", "5", "--iterations", "3", "--resume", str(ck))
    _error(r, "p0.edata.z", "outside -1 … 4")


def _edit_ctx(last, key, **fields):
    with np.load(os.path.join(last, "part-0.npz")) as z:
        ctx = z[key].copy()
    for f, v in fields.items():
        ctx[f][0] = v
    _rewrite(last, "part-0.npz", **{key: ctx})


@pytest.mark.parametrize("key, fields, expect", [
    ("p0.ctx", {"k": 100000}, "checkpoint context field 'k' (p0.ctx) is 100000 there, 4 in this run"),
    ("p0.ctx", {"k": -7}, "field 'k' (p0.ctx) is -7 there, 4 in this run"),
    ("global_ctx", {"lr": 5.0}, "field 'lr' (global_ctx) is 5.0 there"),
    ("global_ctx", {"biases": 0}, "field 'biases' (global_ctx) is 0 there, 1 in this run")])
def test_crafted_mf_checkpoint_context_is_refused(ratings, tmp_path, key, fields, expect):
    """The settings in a checkpoint's context (k, lr, …) are those of the resuming run:
    a crafted k made the kernels read past the factor vectors (a crash)."""
    ck, last = _checkpointed(ratings, tmp_path)
    _edit_ctx(str(last), key, **fields)
    r = run_cli("run", "mf", ratings, "--k", "4", "--epochs", "3", "--resume", str(ck))
    _error(r, expect)
    assert "input files" not in r.stderr


@pytest.mark.parametrize("key, fields, expect", [
    ("p0.ctx", {"K": 10 ** 6}, "field 'K' (p0.ctx) is 1000000 there, 5 in this run"),
    ("p0.ctx", {"V": 10 ** 9}, "field 'V' (p0.ctx) is 1000000000 there"),
    ("global_ctx", {"beta": 1e-320}, "field 'beta' (global_ctx)"),
    ("global_ctx", {"nk": -5}, "global_ctx.nk holds values outside 0"),
    ("p0.ctx", {"it": -3}, "p0.ctx.it holds values outside 1")])
def test_crafted_lda_checkpoint_context_is_refused(corpus, tmp_path, key, fields, expect):
    ck = tmp_path / "ck"
    _ok("run", "lda", corpus, "--topics", "5", "--iterations", "1", "--checkpoint-every", "1",
        "--checkpoint-dir", str(ck))
    _edit_ctx(str(ck / "ckpt-00000001"), key, **fields)
    r = run_cli("run", "lda", corpus, "--topics", "5", "--iterations", "3", "--resume", str(ck))
    _error(r, expect)


@pytest.mark.slow
def test_crafted_model_arrays_are_refused_before_any_kernel(corpus, ratings, tmp_path):
    lda_dir = str(tmp_path / "lda")
    _ok("run", "lda", corpus, "--topics", "5", "--iterations", "2", "--out", lda_dir)
    with np.load(os.path.join(lda_dir, "lda.npz")) as z:
        totals = z["topic_totals"]
    _rewrite(lda_dir, "lda.npz", topic_totals=totals[:-1])
    _error(run_cli("predict", lda_dir, corpus), "lda.npz", "topic_totals has shape (4,)")
    # a GLM model whose weights have another shape than model.json says
    train = tmp_path / "t.svm"
    train.write_text("".join(f"{1 if i % 2 else -1} 1:{i % 3} 2:{i % 5} 3:1\n" for i in range(40)))
    glm_dir = str(tmp_path / "glm")
    _ok("run", "lr", str(train), "--epochs", "1", "--out", glm_dir)
    _rewrite(glm_dir, "weights.npz", w=np.zeros((5, 3, 2)))
    _error(run_cli("predict", glm_dir, str(train)), "weights.npz", "w has shape (5, 3, 2)")
    mf_dir = str(tmp_path / "mf")
    _ok("run", "mf", ratings, "--k", "3", "--epochs", "1", "--out", mf_dir)
    with np.load(os.path.join(mf_dir, "seen.npz")) as z:
        indices = z["indices"].copy()
    indices[0] = 10 ** 6
    _rewrite(mf_dir, "seen.npz", indices=indices)
    _error(run_cli("predict", mf_dir, "--top-k", "2"), "seen.npz", "out of range")
    with np.load(os.path.join(mf_dir, "user.npz")) as z:
        p = z["p"].copy()
    p[0, 0] = np.nan
    _rewrite(mf_dir, "user.npz", p=p)
    _error(run_cli("predict", mf_dir, ratings), "user.npz", "NaN")


def _rewrite_meta(directory, **changes):
    from tux2 import files
    path = os.path.join(directory, "model.json")
    meta = json.load(open(path))
    meta.update(changes)
    json.dump(meta, open(path, "w"))
    m = json.load(open(os.path.join(directory, "manifest.json")))
    m["files"]["model.json"] = files.describe(path)
    json.dump(m, open(os.path.join(directory, "manifest.json"), "w"))


@pytest.mark.slow
def test_model_files_that_disagree_with_model_json_are_refused(corpus, ratings, tmp_path):
    """Each of these used to predict with rc 0."""
    train = tmp_path / "t.svm"
    train.write_text("".join(f"{1 if i % 2 else -1} 1:{i % 3} 2:{i % 5} 3:1\n" for i in range(40)))
    fm = str(tmp_path / "fm")
    _ok("run", "fm", str(train), "--epochs", "1", "--factors", "8", "--out", fm)
    with np.load(os.path.join(fm, "weights.npz")) as z:
        V = z["V"]
    _rewrite(fm, "weights.npz", V=V[:, :3].copy())
    _error(run_cli("predict", fm, str(train)), "weights.npz", f"V has shape ({len(V)}, 3), expected ({len(V)}, 8)")
    lr = str(tmp_path / "lr")
    _ok("run", "lr", str(train), "--epochs", "1", "--out", lr)
    _rewrite_meta(lr, classes=-3)
    _error(run_cli("predict", lr, str(train)), "model.json", "classes of a logistic model must be 2, got -3")
    lda = str(tmp_path / "lda")
    _ok("run", "lda", corpus, "--topics", "5", "--iterations", "1", "--out", lda)
    with np.load(os.path.join(lda, "lda.npz")) as z:
        wt, totals = z["word_topic"], z["topic_totals"]
    _rewrite(lda, "lda.npz", topic_totals=totals + 1)
    _error(run_cli("predict", lda, corpus), "lda.npz", "topic_totals are not the sums of word_topic's rows")
    _rewrite(lda, "lda.npz", topic_totals=totals, word_topic=wt.astype(np.float64))
    _error(run_cli("predict", lda, corpus), "lda.npz", "word_topic has dtype float64")
    _rewrite(lda, "lda.npz", word_topic=wt)
    assert run_cli("predict", lda, corpus).returncode == 0          # restored: accepted again
    _rewrite_meta(lda, beta=1e-320)
    _error(run_cli("predict", lda, corpus), "model.json", "beta must be a finite positive (normal) number")
    mf = str(tmp_path / "mf")
    _ok("run", "mf", ratings, "--k", "3", "--epochs", "1", "--out", mf)
    with np.load(os.path.join(mf, "user.npz")) as z:
        ids = z["ids"].copy()
    ids[1] = ids[0]
    _rewrite(mf, "user.npz", ids=ids)
    _error(run_cli("predict", mf, ratings), "user.npz", "ids name a vertex more than once")


# ------------------------------------------------------------------ item 4: standard input, pipes, FIFOs
def _cli_stdin(data, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "tux2.cli", *args], input=data, capture_output=True,
                          timeout=timeout)


def test_lda_from_a_pipe_reads_every_document(tmp_path):
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(50)]
    text = "".join(" ".join(rng.choice(words, 300)) + "\n" for _ in range(300))   # > 64 KB
    assert len(text) > 1 << 16
    r = _cli_stdin(text.encode(), "run", "lda", "/dev/stdin", "--topics", "3", "--iterations", "1",
                   "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert "300 documents" in r.stdout.decode()
    meta = json.load(open(tmp_path / "m" / "model.json"))
    assert meta["documents"] == 300


@pytest.mark.slow
def test_mf_from_dash_a_fifo_and_gzip(ratings, tmp_path):
    data = open(ratings, "rb").read()
    plain = run_cli("run", "mf", ratings, "--k", "3", "--epochs", "1")
    sizes = plain.stdout.split("\n")[1]                # train N ratings, test M; users × items
    r = _cli_stdin(data, "run", "mf", "-", "--k", "3", "--epochs", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().split("\n")[1] == sizes
    r = _cli_stdin(data, "run", "mf", "-", "--k", "3", "--epochs", "1", "--workers", "2", "--timeout", "20")
    assert r.returncode == 0, r.stderr
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    p = subprocess.Popen([sys.executable, "-m", "tux2.cli", "run", "mf", fifo, "--k", "3", "--epochs", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "wb") as f:
        f.write(data)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert out.decode().split("\n")[1] == sizes
    import gzip
    gz = tmp_path / "r.txt.gz"
    gz.write_bytes(gzip.compress(data))
    r = run_cli("run", "mf", str(gz), "--k", "3", "--epochs", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[1] == sizes
    bad = _cli_stdin(b"0 0 3\n1 1 x\n", "run", "mf", "-")
    assert bad.returncode == 2 and b"<stdin>:2: malformed value" in bad.stderr
    # standard input read once: as the input and --test too it is named, not read empty the second time
    twice = _cli_stdin(data, "run", "mf", "-", "--test", "-", "--k", "3", "--epochs", "1")
    assert twice.returncode == 2, twice.stderr
    assert b"<stdin>: given as both the input and --test: standard input or a pipe can be read only once" \
        in twice.stderr, twice.stderr


@pytest.mark.slow
def test_spooled_inputs_keep_the_given_name_in_the_header_and_model(ratings, tmp_path):
    """Standard input is <stdin> and a .gz file its own name, in the run's first line
    and model.json's "input", with one process or several (not /tmp/tux2-input-…)."""
    import gzip
    data = open(ratings, "rb").read()
    gz = tmp_path / "r.txt.gz"
    gz.write_bytes(gzip.compress(data))
    for name, run in (("<stdin>", lambda *a: _cli_stdin(data, "run", "mf", "-", *a)),
                      ("<stdin>", lambda *a: _cli_stdin(data, "run", "mf", "-", "--workers", "2", "--timeout", "20",
                                                        *a)),
                      (str(gz), lambda *a: _cli_stdin(b"", "run", "mf", str(gz), *a))):
        out = tmp_path / "m"
        r = run("--k", "3", "--epochs", "1", "--out", str(out))
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode().split("\n")[0].endswith(f": {name}"), r.stdout
        assert json.load(open(out / "model.json"))["input"] == name


def test_a_checkpoint_lock_that_cannot_be_written_is_named(ratings, tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    os.symlink("/dev/full", ck / ".lock")          # every write fails, as on a full disk
    r = run_cli("run", "mf", ratings, "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", str(ck))
    _error(r, f"{ck / '.lock'}: cannot write")


# ------------------------------------------------------------------ item 9: one sparse-id guard
@pytest.mark.parametrize("case", ["libsvm-1e9", "libsvm-2^62", "docword-D", "docword-count", "info-libsvm",
                                  "info-docword"])
def test_sparse_ids_and_huge_sizes_are_clean_errors(tmp_path, case):
    p = tmp_path / "in.txt"
    if case.startswith("libsvm") or case == "info-libsvm":
        big = {"libsvm-1e9": 10 ** 9, "libsvm-2^62": 2 ** 62 - 1, "info-libsvm": 10 ** 9}[case]
        p.write_text(f"1 1:0.5 3:1\n-1 2:1 {big}:2\n")
        args = ("info", str(p)) if case == "info-libsvm" else ("run", "lr", str(p), "--epochs", "1")
        where = f"{p}:2:"
    elif case == "docword-D":
        p.write_text("1000000000000000\n3\n2\n1 1 2\n2 3 1\n")
        args, where = ("run", "lda", str(p), "--iterations", "1"), f"{p}:1:"
    elif case == "docword-count":
        p.write_text("2\n3\n2\n1 1 100000000\n2 3 1\n")
        args, where = ("run", "lda", str(p), "--iterations", "1"), f"{p}:4:"
    else:
        p.write_text("2\n1000000000000000\n2\n1 1 2\n2 3 1\n")
        args, where = ("info", str(p)), f"{p}:2:"
    r = run_cli(*args, timeout=60)
    _error(r, where)
    assert "MemoryError" not in r.stderr


def test_far_apart_rating_ids_are_numbered_densely_by_each_worker_share(tmp_path):
    """Item 100000000 among four edges was refused (its vertex arrays would have been huge);
    MF now numbers such ids densely, and two workers, each reading a share, agree."""
    p = tmp_path / "in.txt"
    p.write_text("0 0 3\n1 1 4\n2 100000000 5\n3 3 3\n")
    r = run_cli("run", "mf", str(p), "--workers", "2", "--timeout", "10", "--k", "2", "--epochs", "2",
                "--test-fraction", "0", "--out", str(tmp_path / "m"), timeout=120)
    assert r.returncode == 0 and "item ids numbered densely (4 distinct of 0 … 100000000)" in r.stdout, r.stderr
    assert np.load(tmp_path / "m" / "item.npz")["ids"].tolist() == [0, 1, 3, 100000000]


@pytest.mark.parametrize("files_, expect", [
    ({"model.json": "{not json"}, "model.json: cannot read"),
    ({"model.json": "[1, 2]"}, "not a model description"),
    ({"model.json": '{"algorithm": "lr", "features": 3}', "weights.npz": None}, "has no array 'w'"),
])
def test_malformed_model_directories_in_predict(tmp_path, ratings, files_, expect):
    d = tmp_path / "m"
    d.mkdir()
    for name, content in files_.items():
        if content is None:
            np.savez(d / name, v=np.zeros(3))
        else:
            (d / name).write_text(content)
    _error(run_cli("predict", str(d), ratings), expect)


@pytest.mark.parametrize("change, expect", [
    ({"unknown": "bogus"}, "MF: unknown must be one of 'error', 'skip', 'baseline'; got 'bogus'"),
    ({"mode": "weird"}, "MF: mode must be one of 'sgd', 'minibatch', 'als'; got 'weird'"),
    ({"lr": -1}, "MF: lr must be a finite number > 0, got -1"),
    ({"epochs": "x"}, "MF: epochs must be an integer >= 0, got 'x'"),
    ({"mu": -2 ** 1100}, f"mu must be a finite number, got {-2 ** 1100}"),   # was np.isfinite's TypeError
])
def test_a_bad_parameter_in_model_json_is_named_when_the_model_loads(ratings, tmp_path, change, expect):
    """A model directory without a manifest (one saved before manifests, or edited by
    hand) whose model.json holds a value fit refuses loaded, and failed later in predict
    with a traceback ('unknown': 'bogus') or predicted with it (a negative lr); an old
    directory that is otherwise valid still loads."""
    old = tmp_path / "old"
    MF(k=2, epochs=1).fit(ratings).save(old)
    (old / "manifest.json").unlink()
    MF.load(old).predict([0], [0])
    meta = json.loads((old / "model.json").read_text())
    (old / "model.json").write_text(json.dumps({**meta, **change}))
    with pytest.raises(ValueError, match=f"^{old / 'model.json'}: {re.escape(expect)}"):
        MF.load(old)
    _error(run_cli("predict", str(old), ratings), f"tux2: error: {old / 'model.json'}: {expect}")


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_outputs_write_through_special_files_and_never_over_the_models_own(ratings, tmp_path):
    """predict -o, --metrics and a resume's metrics rewrite went to NAME.tmp and renamed
    it over the target: a FIFO (or, as root, /dev/null) became a plain file. A device or
    FIFO is written through; -o naming a file of the model directory is refused (it
    made the model unloadable: model.json replaced by predictions); a file the manifest
    lists and the directory lacks is an error (a deleted seen.npz let seen items back
    into --top-k lists)."""
    import threading
    model = tmp_path / "m"
    _ok("run", "mf", ratings, "--k", "4", "--epochs", "1", "--out", str(model))
    fifo, got = tmp_path / "fifo", []
    os.mkfifo(fifo)
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    r = run_cli("predict", str(model), ratings, "-o", str(fifo), timeout=120)
    reader.join(60)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(fifo) and not os.path.isfile(fifo) and got[0].count(b"\n") > 100
    if os.geteuid() == 0:
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))
        assert run_cli("predict", str(model), ratings, "-o", str(dev), "--metrics", str(dev)).returncode == 0
        assert not os.path.isfile(dev)
    for name in ("model.json", "user.npz"):
        _error(run_cli("predict", str(model), ratings, "-o", str(model / name)), "-o names the input file")
    assert run_cli("predict", str(model), ratings, "-o", str(tmp_path / "p.txt")).returncode == 0
    os.remove(model / "seen.npz")
    _error(run_cli("predict", str(model), ratings, "--top-k", "2"), "seen.npz is missing, and manifest.json lists it")
    os.remove(model / "model.json")
    os.mkfifo(model / "model.json")             # read, it would block until killed
    _error(run_cli("predict", str(model), ratings, timeout=60), "model.json: not a regular file")


def test_fit_checks_slack_workers_and_checkpoint_as_the_cli_does(tmp_path):
    """slack=1.5 or None was taken (or a TypeError deep down), workers=3000 started 3000
    interpreters (the CLI caps --workers at 1024), checkpoint= naming a file raised
    FileExistsError; alpha=1e-320 trained a model that load refused."""
    import tux2
    X = np.random.default_rng(0).normal(size=(40, 5))
    y = (X[:, 0] > 0).astype(int)
    est = tux2.LogisticRegression(epochs=1)
    for kw, says in (({"workers": 3000}, "workers must be an integer >= 1 and <= 1024"),
                     ({"slack": 1.5}, "slack must be an integer >= 0"), ({"slack": None}, "slack must be"),
                     ({"checkpoint": __file__}, "checkpoint= must be a directory, and this is a file")):
        with pytest.raises((ValueError, tux2.Tux2Error), match=says):
            est.fit(None, **kw)     # refused before the data is read: a missing check fails on None, not in 3000 workers
    with pytest.raises(ValueError, match="alpha must be a finite number >= 2.2"):
        tux2.LDA(alpha=1e-320).fit(["a b c"] * 3)
    r = run_cli("run", "lda", "--beta", "1e-320")
    assert r.returncode == 2 and "tux2: error: run lda: argument --beta: must be a finite number >= 2.2" in r.stderr


def test_a_config_file_cannot_splice_flags_in(ratings, tmp_path):
    """test = ['r.txt', '--out', 'elsewhere'] wrote a model there; a key given twice
    (batch-size and batch_size) was taken silently."""
    conf = tmp_path / "c.toml"
    conf.write_text(f'test = ["{ratings}", "--out", "{tmp_path / "injected"}"]\nepochs = 1\n')
    _error(run_cli("run", "mf", ratings, "--config", str(conf)), "test takes one value, not a list")
    assert not (tmp_path / "injected").exists()
    conf.write_text("batch-size = 3\nbatch_size = 4\n")
    _error(run_cli("run", "mf", ratings, "--config", str(conf)), "batch_size and batch-size are one flag")
    conf.write_text('out = "--quiet"\nepochs = 1\nk = 2\n')       # a value that looks like a flag stays a value
    assert run_cli("run", "mf", ratings, "--config", str(conf), cwd=tmp_path).returncode == 0
    assert (tmp_path / "--quiet" / "model.json").exists()


# A mapped input that another program truncated ('python gen.py > ratings.txt' during a
# run) raised SIGBUS in the parser's numba loop: the process died with no message.
# Files over io.READ_WHOLE are mapped (read_whole=0 maps this small one as they are).
def test_a_mapped_file_truncated_while_read_is_named_not_a_silent_sigbus(tmp_path):
    path = tmp_path / "ratings.txt"
    _write_ratings(path, n=60000)
    script = ("import os, sys\nfrom tux2 import busguard, io\npath = sys.argv[1]\nbusguard.arm()  # as the tux2 command\n"
              "raw = io.map_file(path, 'edge list', read_whole=0)\nos.truncate(path, 100)\n"
              "io._parse_from(raw, io.edge_format(raw[:65536], path), path)\nprint('no fault')\n")
    r = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr == f"tux2: error: {path}: the file shrank while it was being read " \
        "(another program rewrote it?); run again once it is whole\n", (r.returncode, r.stderr)
    _write_ratings(path, n=60000)
    r = subprocess.run([sys.executable, "-c", script.replace("busguard.arm()", "pass"), str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == -7 or r.returncode == 135, r     # a Python session keeps its own SIGBUS handling
    _write_ratings(path, n=600)
    raw = open(path, "rb").read()
    assert io.map_file(str(path), "edge list") == raw and io.map_file(str(path), "edge list", read_whole=0)[:] == raw


def test_metrics_cannot_name_a_file_of_the_model_in_out(ratings, tmp_path):
    """--metrics OUT/model.json with --out OUT: the model's files replaced the metrics,
    lost without a word. Refused before training; OUT/metrics.jsonl is fine."""
    out = tmp_path / "m"
    for name in ("model.json", "user.npz", "summary.txt"):
        _error(run_cli("run", "mf", ratings, "--epochs", "1", "--out", str(out), "--metrics", str(out / name)),
               "--metrics names a file the model in --out")
    assert not out.exists()
    _ok("run", "mf", ratings, "--epochs", "1", "--out", str(out), "--metrics", str(out / "metrics.jsonl"))
    assert (out / "metrics.jsonl").read_text().count("\n") == 1 and (out / "model.json").exists()


def test_a_deleted_working_directory_is_said_up_front(tmp_path):
    """numba's compiler names files relative to the working directory: with it deleted, a run
    and fit() said FileNotFoundError from inside numba (os.path.relpath), after the data was read."""
    gone = tmp_path / "gone"
    code = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); import numpy as np, tux2\n"
            "from tux2.cli import main\n"
            "if sys.argv[2] == 'cli': sys.exit(main(['run', 'mf', '--epochs', '1', '--k', '2', '--quiet']))\n"
            "try: tux2.MF(k=2, epochs=1).fit(np.array([[0, 1, 3.0], [1, 0, 4.0]]))\n"
            "except tux2.Tux2Error as e: print(e)\n")
    for how in ("cli", "fit"):
        gone.mkdir()
        r = subprocess.run([sys.executable, "-c", code, str(gone), how], capture_output=True, text=True, timeout=120,
                           cwd=tmp_path)
        said = r.stderr if how == "cli" else r.stdout
        assert "the working directory has been deleted" in said and "Traceback" not in r.stderr, r.stderr
        assert r.returncode == (2 if how == "cli" else 0)


def test_resume_from_a_file_or_a_missing_directory_says_which(ratings, tmp_path):
    """--resume FILE said 'FILE/LATEST: cannot read ([Errno 20] Not a directory …)'."""
    for path, what in ((ratings, "a file, not a checkpoint directory"), (tmp_path / "none", "no such directory")):
        r = run_cli("run", "mf", ratings, "--epochs", "2", "--resume", str(path))
        assert r.returncode == 2 and r.stderr == f"tux2: error: {path}: {what}\n", r.stderr


_DEEP = "[" * 5000 + "]" * 5000                 # past Python's recursion limit: json raises RecursionError


def test_json_nested_too_deep_is_an_error_in_words_wherever_tux2_reads_json(ratings, tmp_path):
    """A metrics file, model.json, a manifest or a checkpoint's state.json holding JSON nested
    5000 deep, and a data file whose first line is such JSON, raised RecursionError:
    'tux2: internal error'. Each is now the error a damaged file of its kind gets."""
    model = tmp_path / "m"
    _ok("run", "mf", ratings, "--k", "2", "--epochs", "1", "--out", str(model),
        "--checkpoint-every", "1")
    (tmp_path / "deep.jsonl").write_text('{"epoch": 1, "x": ' + _DEEP + "}\n")
    bad_json = tmp_path / "bad_json"
    bad_json.mkdir()
    (bad_json / "model.json").write_text(_DEEP)
    bad_manifest = tmp_path / "bad_manifest"
    bad_manifest.mkdir()
    for f in os.listdir(model):
        if os.path.isfile(model / f):
            (bad_manifest / f).write_bytes((model / f).read_bytes())
    (bad_manifest / "manifest.json").write_text(_DEEP)
    state = next((model / "checkpoints").glob("ckpt-*")) / "state.json"
    state.write_text(_DEEP)
    corpus = tmp_path / "docs.txt"
    corpus.write_text('{"a": ' + _DEEP + "}\n" + "apple banana melon\n" * 20)
    for args, expect in [(("plot", str(tmp_path / "deep.jsonl"), "-o", str(tmp_path / "p.png")),
                          "deep.jsonl:1: not a JSON object"),
                         (("predict", str(bad_json), ratings), "model.json: cannot read"),
                         (("predict", str(bad_manifest), ratings), "manifest.json: damaged"),
                         (("run", "mf", ratings, "--k", "2", "--epochs", "2", "--resume",
                           str(model / "checkpoints")), "state.json"),
                         (("run", "lda", str(corpus), "--iterations", "1"), None)]:
        r = run_cli(*args)
        assert "internal error" not in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        if expect is not None:
            assert r.returncode == 2 and expect in r.stderr, (args, r.stderr)


@pytest.mark.parametrize("algorithm", [[], {}, ["mf"], 1])
def test_a_model_json_naming_no_algorithm_by_a_string_is_refused_in_words(ratings, tmp_path, algorithm):
    """'algorithm': [] in a hand-edited model.json (no manifest) was 'tux2: internal error:
    TypeError: unhashable type: 'list'' in tux2 predict and tux2.load."""
    import tux2
    old = tmp_path / "old"
    MF(k=2, epochs=1).fit(ratings).save(old)
    (old / "manifest.json").unlink()
    meta = json.loads((old / "model.json").read_text())
    (old / "model.json").write_text(json.dumps({**meta, "algorithm": algorithm}))
    expect = f"{old}: model.json names algorithm {algorithm!r}; tux2 knows mf, lda"
    with pytest.raises(ValueError, match=re.escape(expect)):
        tux2.estimators.load(old)
    _error(run_cli("predict", str(old), ratings), f"tux2: error: {expect}")


def test_a_model_json_mu_beyond_int64_but_finite_loads(ratings, tmp_path):
    """'mu': 2**70 is a finite double; np.isfinite raised TypeError on it ('tux2: internal error')."""
    old = tmp_path / "old"
    MF(k=2, epochs=1).fit(ratings).save(old)
    (old / "manifest.json").unlink()
    meta = json.loads((old / "model.json").read_text())
    (old / "model.json").write_text(json.dumps({**meta, "mu": 2 ** 70}))
    assert MF.load(old).mu_ == 2.0 ** 70


def test_runs_writing_one_out_directory_at_once_leave_one_whole_model(tmp_path):
    """Four 'tux2 run mf --out cc' at once: three failed after training with 'cc/user.npz.tmp:
    No such file or directory' (the runs shared the temporary names) and the fourth left a
    directory whose user.npz was another run's, refused by its own manifest. A model directory
    is now written under a lock on it: the writers take turns, the last one's model stands
    whole. Here four threads write models of their own into one directory 25 times each."""
    from tux2 import files
    out = tmp_path / "cc"
    errors = []

    def writer(w):
        try:
            for i in range(25):
                body = np.full(5000 + 100 * w, w * 1000 + i, np.int64)
                files.write_dir(str(out), {"user.npz": lambda f, b=body: np.savez(f, p=b),
                                           "model.json": files.text(json.dumps({"writer": w, "i": i}))})
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)
    _at_once(writer, 4)
    assert not errors, errors
    files.verify(str(out))
    meta = json.loads((out / "model.json").read_text())
    assert np.load(out / "user.npz")["p"][0] == meta["writer"] * 1000 + meta["i"]
    assert sorted(os.listdir(out)) == ["manifest.json", "model.json", "user.npz"]


def test_loads_while_runs_write_the_model_read_one_whole_model(ratings, tmp_path):
    """tux2 predict (and load) read a model directory without the writers' lock: a load
    between a save's renames read one model's model.json beside another's arrays, refused by
    the manifest. A load now holds a shared lock on the directory: here two threads save
    models of k 2 and k 3 into one directory while two others load it; every load is whole."""
    from tux2 import estimators
    two, three = (MF(k=k, epochs=1).fit(ratings) for k in (2, 3))
    out, errors, ks = tmp_path / "m", [], set()
    two.save(out)

    def worker(w):
        try:
            for _ in range(10):
                if w < 2:
                    (two, three)[w].save(out)
                else:
                    m = estimators.load(out) if w == 2 else MF.load(out)
                    assert m.user_factors_.shape[1] == m.k
                    ks.add(m.k)
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)
    _at_once(worker, 4)
    assert not errors, errors
    assert ks <= {2, 3}


def _at_once(writer, n):
    """writer(0) … writer(n − 1) in threads at once, each given two minutes."""
    import threading
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def test_writes_of_one_output_file_at_once_all_succeed(tmp_path):
    """Six 'tux2 predict m big.txt -o same.txt' at once: five failed with 'same.txt.tmp: No such
    file or directory' (one temporary name for all). Each writer now stages under a name of its
    own; the file ends as one writer's whole. A crashed writer's staged file in a model
    directory goes with the next write there."""
    from tux2 import files
    out, errors = str(tmp_path / "same.txt"), []

    def writer(w):
        try:
            for _ in range(50):
                files.write_atomic(out, files.text(f"{w}\n" * (1000 + w)))
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)
    _at_once(writer, 6)
    assert not errors, errors
    lines = open(out).read().splitlines()
    assert len(set(lines)) == 1 and len(lines) == 1000 + int(lines[0])
    assert os.listdir(tmp_path) == ["same.txt"]
    model = tmp_path / "m"
    model.mkdir()
    (model / "user.npz.4242-17.tmp").write_bytes(b"PK half a file")
    files.write_dir(str(model), {"model.json": files.text("{}")})
    assert sorted(os.listdir(model)) == ["manifest.json", "model.json"]


def test_a_trace_that_cannot_be_written_loses_no_model(ratings, tmp_path):
    """--trace DIR is written after the last epoch: a full disk there ('tux2: error:
    DIR/trace-0.jsonl: cannot write: No space left on device', exit 2) lost the trained
    model, which --out never wrote. The trace is a diagnostic: now a warning, and the
    model is written."""
    trace, out = tmp_path / "trace", tmp_path / "m"
    trace.mkdir()
    os.symlink("/dev/full", trace / "trace-0.jsonl")
    r = run_cli("run", "mf", ratings, "--k", "2", "--epochs", "2", "--trace", str(trace), "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    assert r.stderr == (f"tux2: warning: --trace: {trace / 'trace-0.jsonl'}: cannot write: No space left on device "
                        "(the disk is full); the run goes on to its model\n"), r.stderr
    MF.load(out)


def test_out_dash_is_refused_not_a_directory_named_dash(ratings, tmp_path):
    """--out - wrote the model into a directory named '-' (as -o - is standard output, a user
    may mean that); a model is files in a directory, so '-' is refused before training."""
    for flag in ("--out", "--trace"):
        _error(run_cli("run", "mf", ratings, "--epochs", "1", flag, "-", cwd=tmp_path),
               f"{flag} names a directory to write files into; '-' (standard output) cannot hold them")
    assert not (tmp_path / "-").exists()


def test_another_kind_of_model_is_named_with_its_article(ratings, tmp_path):
    """'an 'blockpg' model': the words among the algorithms' names take 'a'."""
    from tux2 import model_check
    from tux2.model_check import ModelError
    MF(k=2, epochs=1).fit(ratings).save(tmp_path / "m")
    with pytest.raises(ModelError, match="an 'mf' model, not blockpg"):
        model_check.read_model(str(tmp_path / "m"), "blockpg", ())
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    (tmp_path / "m" / "manifest.json").unlink()
    (tmp_path / "m" / "model.json").write_text(json.dumps({**meta, "algorithm": "softmax"}))
    with pytest.raises(ModelError, match="a 'softmax' model, not mf"):
        model_check.read_model(str(tmp_path / "m"), "mf", ())


SIGNAL_AMONG_RENAMES = """
import os, signal, sys
from tux2 import files, interrupt
d, how = sys.argv[1], sys.argv[2]
if how == "cli":
    interrupt.install()             # the tux2 program's handler (SIGINT and SIGTERM)
files.write_dir(d, {"a.bin": lambda f: f.write(b"old-a"), "b.bin": lambda f: f.write(b"old-b")})
real = os.replace

def replace(src, dst):              # the signal lands between the renames (microseconds there: placed here)
    real(src, dst)
    if dst.endswith("a.bin"):
        os.kill(os.getpid(), signal.SIGTERM if how == "cli" else signal.SIGINT)

os.replace = replace
try:
    files.write_dir(d, {"a.bin": lambda f: f.write(b"new-a"), "b.bin": lambda f: f.write(b"new-b")})
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
files.verify(d)
print(open(os.path.join(d, "a.bin")).read(), open(os.path.join(d, "b.bin")).read())
"""


@pytest.mark.parametrize("how", ["python", "cli"])
def test_a_signal_among_the_renames_of_an_output_directory_leaves_it_whole(tmp_path, how):
    # Ctrl-C (or SIGTERM) while write_dir renamed its files left the new a.bin beside the old
    # b.bin and manifest: 'a.bin: its SHA-256 differs from the one in manifest.json' on load
    r = subprocess.run([sys.executable, "-c", SIGNAL_AMONG_RENAMES, str(tmp_path / "m"), how],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["interrupted", "new-a", "new-b"], r.stdout + r.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_in_a_directory_that_takes_no_files_does_not_say_it_is_missing():
    # 'tux2 run mf r.txt --metrics /proc/m.jsonl' said '/proc: No such file or directory' (mkdir's ENOENT there)
    from tux2.files import FileError, check_writable
    with pytest.raises(FileError) as e:
        check_writable("/proc/m.jsonl", "--metrics", directory=False)
    assert str(e.value) == "/proc/m.jsonl: cannot create --metrics: /proc takes no new files (a virtual file system)"


def test_a_file_name_that_is_not_utf8_is_written_back_as_its_bytes(tmp_path):
    # 'tux2 run mf $(printf "bad\xff.txt") --out m' trained, then stopped with 'internal error:
    # UnicodeEncodeError' writing summary.txt (the input's name, as Python decodes it: 'bad\udcff.txt')
    from tux2 import files
    name = os.fsdecode(b"bad\xff.txt")
    files.write_dir(str(tmp_path / "m"), {"summary.txt": files.text(f"input: {name}\n")})
    assert (tmp_path / "m" / "summary.txt").read_bytes() == b"input: bad\xff.txt\n"
    files.verify(str(tmp_path / "m"))
