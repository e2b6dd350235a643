"""Checkpoints: at slack 0 a resumed run ends with exactly the model of an uninterrupted
one (MF, LDA, GLM; one process and two worker processes); a crash while writing never
damages the previous checkpoint; a resume with other settings is refused."""
import json
import os

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import checkpoint
from tux2.datasets import netflix_like
from tux2.engine import Engine
from tux2.udfs import mf


@pytest.fixture(scope="module")
def ratings(tmp_path_factory):
    tr, _ = netflix_like(n_users=400, n_items=80, n_ratings=8000, seed=5)
    key, first = np.unique(tr.src * tr.n_dst + tr.dst, return_index=True)
    path = tmp_path_factory.mktemp("ck") / "r.txt"
    first = np.sort(first)
    np.savetxt(path, np.column_stack([tr.src[first], tr.dst[first], tr.values[first]]), fmt="%d %d %.2f")
    return str(path)


def _arrays(directory, files):
    out = {}
    for name in files:
        with np.load(os.path.join(directory, name)) as z:
            out.update({f"{name}:{k}": z[k] for k in z.files})
    return out


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _run(*args):
    r = run_cli(*args, "--quiet")
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize("extra", [[], ["--workers", "2", "--partitions", "2", "--timeout", "20"]],
                         ids=["one-process", "two-workers"])
@pytest.mark.slow
def test_mf_resume_gives_the_uninterrupted_model(ratings, tmp_path, extra):
    common = ["run", "mf", ratings, "--k", "6", "--batch-size", "3000", *extra]
    _run(*common, "--epochs", "5", "--out", str(tmp_path / "full"), "--metrics", str(tmp_path / "full.jsonl"))
    # interrupted after epoch 3, its last checkpoint after epoch 2: the resumed run makes epoch 3 again
    _run(*common, "--epochs", "3", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck"),
         "--metrics", str(tmp_path / "part.jsonl"))
    assert open(tmp_path / "ck" / "LATEST").read().strip() == "ckpt-00000002"
    _run(*common, "--epochs", "5", "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "resumed"),
         "--metrics", str(tmp_path / "part.jsonl"))
    files = ("user.npz", "item.npz")
    _same(_arrays(tmp_path / "full", files), _arrays(tmp_path / "resumed", files))
    full = [json.loads(x) for x in open(tmp_path / "full.jsonl")]
    part = [json.loads(x) for x in open(tmp_path / "part.jsonl")]
    assert [r["epoch"] for r in part] == [1, 2, 3, 4, 5]
    assert [r["train_rmse"] for r in part] == [r["train_rmse"] for r in full]
    assert json.load(open(tmp_path / "resumed" / "model.json"))["clock"] == \
        json.load(open(tmp_path / "full" / "model.json"))["clock"]


@pytest.mark.slow
def test_lda_and_glm_resume_exactly(tmp_path):
    for algo, flags, files in (("lda", ["--iterations"], ("lda.npz",)),
                               ("lr", ["--optimizer", "adam", "--batch", "2000", "--epochs"], ("weights.npz",))):
        _run("run", algo, *flags, "4", "--out", str(tmp_path / f"{algo}-full"))
        _run("run", algo, *flags, "1", "--checkpoint-every", "1", "--checkpoint-dir", str(tmp_path / f"{algo}-ck"))
        _run("run", algo, *flags, "4", "--resume", str(tmp_path / f"{algo}-ck"), "--out", str(tmp_path / f"{algo}-res"))
        _same(_arrays(tmp_path / f"{algo}-full", files), _arrays(tmp_path / f"{algo}-res", files))


@pytest.mark.slow
def test_resume_with_other_settings_is_refused(ratings, tmp_path):
    _run("run", "mf", ratings, "--k", "4", "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir",
         str(tmp_path / "ck"))
    r = run_cli("run", "mf", ratings, "--k", "5", "--epochs", "2", "--resume", str(tmp_path / "ck"))
    assert r.returncode == 2 and "other settings: --k 4 there, --k 5 now" in r.stderr
    assert "resume with the first --k 4" in r.stderr
    r = run_cli("run", "mf", ratings, "--k", "4", "--lr", "0.5", "--epochs", "2", "--resume", str(tmp_path / "ck"))
    assert r.returncode == 2 and "--lr (unset) there, --lr 0.5 now; resume without --lr" in r.stderr, r.stderr
    r = run_cli("run", "mf", ratings, "--epochs", "2", "--resume", str(tmp_path / "nothing"))
    assert r.returncode == 2 and f"{tmp_path / 'nothing'}: no such directory" in r.stderr
    _run("run", "mf", ratings, "--k", "4", "--epochs", "1", "--checkpoint-every", "1", "--out", str(tmp_path / "m"))
    r = run_cli("run", "mf", ratings, "--k", "4", "--epochs", "2", "--resume", str(tmp_path / "m"))
    inside = tmp_path / "m" / "checkpoints"
    assert r.returncode == 2 and f"no checkpoint here (no LATEST file); {inside} has one (--resume {inside})" \
        in r.stderr, r.stderr
    # the workers (and the --partitions they imply) may change (tests/test_relayout.py), the settings not
    r = run_cli("run", "mf", ratings, "--k", "5", "--epochs", "2", "--workers", "2", "--timeout", "20",
                "--resume", str(tmp_path / "ck"), timeout=240)
    assert r.returncode == 2 and "other settings: --k 4 there, --k 5 now" in r.stderr, r.stderr
    assert "--partitions" not in r.stderr and "workers" not in r.stderr, r.stderr


def _engine(seed=0):
    tr, _ = netflix_like(n_users=200, n_items=50, n_ratings=3000, seed=seed)
    return Engine(mf.program(k=4, mode="minibatch", mu=float(tr.values.mean()), batch_size=1000), tr, partitions=3,
                  partitioner="random", seed=seed)


def test_a_crash_while_writing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    eng = _engine()
    eng.run(2)
    checkpoint.save(tmp_path, eng, {"run": 1})
    at_2 = eng.vertex_data("user").copy()
    eng.run(1)

    def torn(f, **arrays):                 # the process dies halfway through the file
        f.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint.np, "savez", torn)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(tmp_path, eng, {"run": 1})
    monkeypatch.undo()
    assert checkpoint.latest(tmp_path).endswith("ckpt-00000002")
    fresh = _engine()
    checkpoint.load(tmp_path, fresh, {"run": 1})
    np.testing.assert_array_equal(fresh.vertex_data("user"), at_2)
    assert fresh.iteration == 2
    # and the next complete save replaces both the old checkpoint and the torn leftover
    checkpoint.save(tmp_path, eng, {"run": 1})
    assert sorted(os.listdir(tmp_path)) == ["LATEST", "ckpt-00000003"]
    fresh.run(1)
    np.testing.assert_array_equal(fresh.vertex_data("user"), eng.vertex_data("user"))


def test_a_run_killed_while_writing_leaves_nothing_in_the_next_runs_checkpoint(tmp_path):
    """A run of two workers killed (SIGKILL: no cleanup) while writing its checkpoint of
    iteration 3 left ckpt-00000003.partial with its ranks' files and a torn temporary one.
    The resume ignores it; a later one-process run saving iteration 3 wrote into that
    directory, and the dead run's part-1.npz and temporary file became part of its
    checkpoint (unlisted in its manifest)."""
    eng = _engine()
    eng.run(2)
    checkpoint.save(tmp_path, eng, {"run": 1})
    stale = tmp_path / "ckpt-00000003.partial"
    stale.mkdir()
    other = _engine(seed=1)
    other.run(3)
    np.savez(stale / "part-0.npz", **other.state()[0])
    np.savez(stale / "part-1.npz", **other.state()[0])
    (stale / "part-0.npz.tmp-dead").write_bytes(b"PK\x03\x04 half a zip")
    fresh = _engine()
    checkpoint.load(tmp_path, fresh, {"run": 1})          # LATEST: iteration 2, the leftover unread
    assert fresh.iteration == 2
    fresh.run(1)
    checkpoint.save(tmp_path, fresh, {"run": 1})
    assert sorted(os.listdir(tmp_path / "ckpt-00000003")) == ["manifest.json", "part-0.npz", "state.json"]
    assert sorted(os.listdir(tmp_path)) == ["LATEST", "ckpt-00000003"]
    again = _engine()
    checkpoint.load(tmp_path, again, {"run": 1})
    eng.run(1)
    np.testing.assert_array_equal(again.vertex_data("user"), eng.vertex_data("user"))


def test_restore_refuses_another_layout(tmp_path):
    eng = _engine()
    eng.run(1)
    checkpoint.save(tmp_path, eng, {})
    other = _engine(seed=1)
    with pytest.raises(Exception, match="holds other .* than this run's"):
        checkpoint.load(tmp_path, other, {})


@pytest.mark.slow          # 10 s cold (2026-11-27 durations): LDA and LR runs to make the checkpoints
def test_resume_of_another_algorithms_checkpoint_names_it_in_one_line(ratings, tmp_path):
    corpus, svm = tmp_path / "c.txt", tmp_path / "d.svm"
    corpus.write_text("the cat sat on the mat\nthe dog ate my homework\nthe cat and the dog\n")
    svm.write_text("1 1:0.5 2:1\n-1 1:1\n1 2:1\n-1 1:1 2:0.2\n")
    _run("run", "lda", str(corpus), "--iterations", "1", "--checkpoint-every", "1", "--checkpoint-dir",
         str(tmp_path / "lda"))
    _run("run", "lr", str(svm), "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", str(tmp_path / "lr"))
    for argv, was, now in ((["mf", ratings], "lda", "mf"), (["svm", str(svm)], "lr", "svm")):
        r = run_cli("run", *argv, "--epochs", "2", "--quiet", "--resume", str(tmp_path / was))
        assert r.returncode == 2 and r.stderr.splitlines() == [
            f"tux2: error: {tmp_path / was}/ckpt-00000001 is a checkpoint of tux2 run {was}, not of tux2 run {now}: "
            f"resume it with tux2 run {was}"], r.stderr


def test_a_checkpoint_from_before_an_option_existed_is_refused_naming_the_option(ratings, tmp_path):
    """An MF checkpoint written before --damping existed (its params have no 'damping'):
    the refusal said '--damping (unset) there, --damping 3.0 now; resume without
    --damping', which gives 3.0 again and the same refusal."""
    from tux2 import files
    ck = tmp_path / "ck"
    _run("run", "mf", ratings, "--k", "4", "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", str(ck))
    state = ck / "ckpt-00000001" / "state.json"
    saved = json.loads(state.read_text())
    del saved["params"]["damping"]                  # as tux2 wrote it before the option (and re-signed)
    state.write_text(json.dumps(saved))
    manifest = json.loads((state.parent / "manifest.json").read_text())
    manifest["files"]["state.json"] = files.describe(str(state))
    (state.parent / "manifest.json").write_text(json.dumps(manifest))
    for extra in ((), ("--damping", "0")):
        r = run_cli("run", "mf", ratings, "--k", "4", "--epochs", "2", "--quiet", "--resume", str(ck), *extra)
        assert r.returncode == 2 and r.stderr.splitlines() == [
            f"tux2: error: {state.parent} was written by an earlier tux2, before --damping existed: that run cannot "
            "go on under a setting it did not have; start it again without --resume"], r.stderr


def test_a_checkpoint_from_before_confidence_resumes_at_the_value_that_trains_as_it_did(ratings, tmp_path):
    """--confidence and --epsilon came after checkpoints: at linear and 1 a run trains as
    before they existed, so such a checkpoint resumes (bit for bit the run that never
    stopped); --confidence log is a setting the saved run did not have. Runs then had
    --alpha 40 by default: a resume at today's defaults (log, α 1) is refused naming both."""
    from tux2 import files
    ck, flags = tmp_path / "ck", ("--implicit", "--k", "4", "--confidence", "linear", "--alpha", "40")
    _run("run", "mf", ratings, *flags, "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir", str(ck))
    state = ck / "ckpt-00000001" / "state.json"
    saved = json.loads(state.read_text())
    for k in ("confidence", "epsilon"):
        del saved["params"][k]                      # as tux2 wrote it before the options (and re-signed)
    state.write_text(json.dumps(saved))
    manifest = json.loads((state.parent / "manifest.json").read_text())
    manifest["files"]["state.json"] = files.describe(str(state))
    (state.parent / "manifest.json").write_text(json.dumps(manifest))
    r = run_cli("run", "mf", ratings, *flags[:3], "--epochs", "2", "--quiet", "--resume", str(ck))
    assert r.returncode == 2 and r.stderr.endswith("trained as --confidence linear does: resume with "
                                                   "--confidence linear --alpha 40\n"), r.stderr
    r = run_cli("run", "mf", ratings, *flags, "--epochs", "2", "--quiet", "--resume", str(ck),
                "--out", str(tmp_path / "resumed"))
    assert r.returncode == 0, r.stderr
    _run("run", "mf", ratings, *flags, "--epochs", "2", "--out", str(tmp_path / "whole"))
    for name in ("user", "item"):
        a, b = (np.load(tmp_path / d / f"{name}.npz") for d in ("resumed", "whole"))
        for f in a.files:
            np.testing.assert_array_equal(a[f], b[f], err_msg=f"{name}.{f}")
    r = run_cli("run", "mf", ratings, *flags, "--epochs", "2", "--quiet", "--resume", str(ck),
                "--confidence", "log")
    assert r.returncode == 2 and "before --confidence existed" in r.stderr, r.stderr


def test_a_checkpoint_from_before_solver_resumes_with_solver_cholesky(ratings, tmp_path):
    """Implicit feedback trained by Cholesky before --solver existed; its default is cg since.
    Such a checkpoint (no 'solver' in its params) resumed without --solver is refused naming
    the flag that trains as it did, and resumes with it (bit for bit the run that never stopped)."""
    from tux2 import files
    ck, flags = tmp_path / "ck", ("--implicit", "--k", "4")
    _run("run", "mf", ratings, *flags, "--solver", "cholesky", "--epochs", "1", "--checkpoint-every", "1",
         "--checkpoint-dir", str(ck))
    state = ck / "ckpt-00000001" / "state.json"
    saved = json.loads(state.read_text())
    for k in ("solver", "cg_steps"):
        del saved["params"][k]                      # as tux2 wrote it before the options (and re-signed)
    state.write_text(json.dumps(saved))
    manifest = json.loads((state.parent / "manifest.json").read_text())
    manifest["files"]["state.json"] = files.describe(str(state))
    (state.parent / "manifest.json").write_text(json.dumps(manifest))
    r = run_cli("run", "mf", ratings, *flags, "--epochs", "2", "--quiet", "--resume", str(ck))
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"tux2: error: {state.parent} was written by an earlier tux2, before --solver existed, which trained as "
        "--solver cholesky does: resume with --solver cholesky"], r.stderr
    r = run_cli("run", "mf", ratings, *flags, "--solver", "cholesky", "--epochs", "2", "--quiet", "--resume", str(ck),
                "--out", str(tmp_path / "resumed"))
    assert r.returncode == 0, r.stderr
    _run("run", "mf", ratings, *flags, "--solver", "cholesky", "--epochs", "2", "--out", str(tmp_path / "whole"))
    for name in ("user", "item"):
        a, b = (np.load(tmp_path / d / f"{name}.npz") for d in ("resumed", "whole"))
        for f in a.files:
            np.testing.assert_array_equal(a[f], b[f], err_msg=f"{name}.{f}")


def test_a_checkpoint_of_mode_als_implicit_resumes_with_implicit_alone(ratings, tmp_path):
    """--implicit alone trains by ALS (the estimator's mode=None); its checkpoints record
    --mode als, as those tux2 wrote when the command line resolved the mode itself, so a
    checkpoint of --mode als --implicit resumes with --implicit alone (bit for bit the
    run that never stopped) and one of --implicit alone with --mode als --implicit."""
    flags = ("--implicit", "--k", "4")
    _run("run", "mf", ratings, "--mode", "als", *flags, "--epochs", "1", "--checkpoint-every", "1",
         "--checkpoint-dir", str(tmp_path / "ck"))
    r = run_cli("run", "mf", ratings, *flags, "--epochs", "2", "--quiet", "--resume", str(tmp_path / "ck"),
                "--out", str(tmp_path / "resumed"))
    assert r.returncode == 0, r.stderr
    _run("run", "mf", ratings, *flags, "--epochs", "2", "--out", str(tmp_path / "whole"),
         "--checkpoint-every", "1", "--checkpoint-dir", str(tmp_path / "ck2"))
    for name in ("user", "item"):
        a, b = (np.load(tmp_path / d / f"{name}.npz") for d in ("resumed", "whole"))
        for f in a.files:
            np.testing.assert_array_equal(a[f], b[f], err_msg=f"{name}.{f}")
    state = json.loads((tmp_path / "ck2" / "ckpt-00000002" / "state.json").read_text())
    assert state["params"]["mode"] == "als"
    for d in ("resumed", "whole"):
        assert json.loads((tmp_path / d / "model.json").read_text())["mode"] == "als"
    _run("run", "mf", ratings, "--mode", "als", *flags, "--epochs", "3", "--resume", str(tmp_path / "ck2"))
    r = run_cli("run", "mf", ratings, "--epochs", "3", "--quiet", "--resume", str(tmp_path / "ck2"))
    assert r.returncode == 2 and "--mode als there, --mode sgd now" in r.stderr, r.stderr
    # the remedy names the switch too: '--mode als' alone would be refused again (implicit off)
    # (--solver follows implicit as --mode does: cg with it, cholesky without)
    # (and the confidence the implicit run had: an explicit run records mf.NO_CONFIDENCE)
    assert "resume with the first --alpha 1.0 --confidence log --k 4 --mode als --solver cg and the first run's " \
        "implicit on" in r.stderr, r.stderr


def test_the_remedy_of_a_refused_resume_names_the_switches_that_differ(ratings, tmp_path):
    """A checkpoint of explicit ratings (mode sgd) resumed with implicit=True (mode als by
    default) said 'resume with the first mode=sgd' alone: that fit is refused again, as
    implicit=True has no effect with mode=sgd. The remedy names the switch's state too."""
    import tux2
    tux2.MF(k=4, epochs=1).fit(ratings, checkpoint=tmp_path / "ck")
    with pytest.raises(checkpoint.CheckpointError) as e:
        tux2.MF(k=4, epochs=2, implicit=True).fit(ratings, checkpoint=tmp_path / "ck")
    assert "mode=sgd there, mode=als now, solver=cholesky there, solver=cg now; resume with the first mode=sgd " \
        "solver=cholesky and the first run's implicit off" \
        in str(e.value), e.value
    # as it says (alpha and confidence, which explicit ratings record as mf.NO_CONFIDENCE, are not named:
    # alpha=40 would be refused as having no effect there)
    tux2.MF(k=4, epochs=2, mode="sgd", solver="cholesky").fit(ratings, checkpoint=tmp_path / "ck")


def test_a_checkpoint_that_cannot_be_resumed_stops_the_run_before_its_data_is_read(ratings, tmp_path):
    """Other settings (tux2 run) or another algorithm (fit) are refused before the input
    is loaded: no header or layout line is printed, and fit does not read its data (a
    file that is not there)."""
    _run("run", "mf", ratings, "--k", "4", "--epochs", "1", "--checkpoint-every", "1", "--checkpoint-dir",
         str(tmp_path / "ck"))
    r = run_cli("run", "mf", ratings, "--k", "5", "--epochs", "2", "--resume", str(tmp_path / "ck"))
    assert r.returncode == 2 and "--k 4 there, --k 5 now" in r.stderr, r.stderr
    assert "layout + compile" not in r.stdout and "users" not in r.stdout, r.stdout
    import tux2
    tux2.MF(k=4, epochs=1).fit(ratings, checkpoint=tmp_path / "fit")
    with pytest.raises(tux2.Tux2Error, match="is a checkpoint of tux2 run mf, not of tux2 run lr"):
        tux2.LogisticRegression(epochs=2).fit(str(tmp_path / "missing.svm"), checkpoint=tmp_path / "fit")
    with pytest.raises(checkpoint.CheckpointError) as e:       # in fit's words, not tux2 run's flags
        tux2.MF(k=6, epochs=2).fit(str(tmp_path / "missing.txt"), checkpoint=tmp_path / "fit")
    assert "k=4 there, k=6 now; resume with the first k=4" in str(e.value) and "--" not in str(e.value), e.value
    with pytest.raises(checkpoint.CheckpointError) as e:     # the workers may change (tests/test_relayout.py)
        tux2.MF(k=6, epochs=2).fit(str(tmp_path / "missing.txt"), checkpoint=tmp_path / "fit", workers=2)
    assert "k=4 there, k=6 now" in str(e.value) and "workers" not in str(e.value), e.value
    # a switch is named by its state, not as a flag that may not exist (lr's is --no-bias)
    tux2.MF(k=4, epochs=1, biases=False).fit(ratings, checkpoint=tmp_path / "nobias")
    with pytest.raises(tux2.Tux2Error, match="biases off there, biases on now; resume with the first run's"):
        tux2.MF(k=4, epochs=2).fit(str(tmp_path / "missing.txt"), checkpoint=tmp_path / "nobias")


@pytest.mark.parametrize("workers", [1, 2])
def test_fit_refuses_a_checkpoint_of_other_data_alike_with_workers(tmp_path, workers):
    """fit(workers=2) raised a plain Tux2Error where one process raises CheckpointError:
    a worker's error comes back as its own class (runner._error_class), found in tux2.errors."""
    import tux2
    u, i = np.divmod(np.arange(0, 60 * 20, 3), 20)
    r = 1.0 + (u * 7 + i) % 5
    tux2.MF(k=2, epochs=1).fit((u, i, r), checkpoint=tmp_path / "ck", workers=workers)
    with pytest.raises(tux2.CheckpointError, match=r"partition \d holds other edges than this run's: resume with the "
                                                   "same input, partitioner, partitions and seed"):
        tux2.MF(k=2, epochs=2).fit((u[:-9], i[:-9], r[:-9]), checkpoint=tmp_path / "ck", workers=workers)


@pytest.mark.slow
def test_resume_takes_the_same_file_and_layout_however_they_are_named(ratings, tmp_path):
    """The same file by another path (./r.txt, a symlink) and the same partitions asked
    for another way (--partitions 2 against --workers 2's default) are the same run;
    other partitions are another layout of it (laid out anew, tests/test_relayout.py)."""
    link = tmp_path / "link.txt"
    os.symlink(ratings, link)
    common = ["--k", "4", "--timeout", "20"]
    _run("run", "mf", ratings, *common, "--workers", "2", "--epochs", "1", "--checkpoint-every", "1",
         "--checkpoint-dir", str(tmp_path / "ck"))
    _run("run", "mf", str(link), *common, "--workers", "2", "--partitions", "2", "--epochs", "2",
         "--resume", str(tmp_path / "ck"))
    r = run_cli("run", "mf", str(link), *common, "--workers", "2", "--partitions", "4", "--epochs", "2",
                "--resume", str(tmp_path / "ck"))
    assert r.returncode == 0 and "a checkpoint of 2 workers, 2 partitions laid out on this run's 2 workers, " \
        "4 partitions" in r.stdout, r.stderr


@pytest.mark.parametrize("algo, flag, data", [("mf", "--epochs", "0 0 4\n0 1 3\n1 0 2\n1 1 5\n2 1 1\n"),
                                              ("lda", "--iterations", "ash bay cod\nbay cod dew\ncod dew ash\n"),
                                              ("lr", "--epochs", "1 1:1\n-1 2:1\n1 1:1 3:1\n")])
def test_resume_at_or_past_the_asked_iterations_says_nothing_is_trained(tmp_path, capsys, algo, flag, data):
    """--resume from a checkpoint at iteration 2 with --epochs (--iterations) 2 or 1: a
    note that nothing is trained, and the checkpoint's model written."""
    from tux2 import cli
    (tmp_path / "in.txt").write_text(data)
    common = ["run", algo, str(tmp_path / "in.txt")] + (["--k", "2", "--test-fraction", "0"] if algo == "mf" else [])
    assert cli.main([*common, flag, "2", "--checkpoint-every", "2", "--checkpoint-dir", str(tmp_path / "ck"),
                     "--quiet"]) == 0
    for n in ("2", "1"):
        capsys.readouterr()
        assert cli.main([*common, flag, n, "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / n)]) == 0
        out = capsys.readouterr().out
        unit = flag[2:-1]
        assert f"note: the checkpoint in {tmp_path / 'ck'} is at {unit} 2, {flag} {n}: nothing to train; the model " \
               f"is the checkpoint's ({flag} above 2 trains on)" in out, out
        assert json.load(open(tmp_path / n / "model.json"))["iteration"] == 2


@pytest.mark.parametrize("edit", [("1 1:0.25", "1 1:0.75"), ("-1 1:0.25", "+1 1:0.25")], ids=["value", "label"])
@pytest.mark.slow
def test_resume_refuses_an_input_whose_feature_values_or_labels_changed(tmp_path, edit):
    """A GLM keeps its feature values and labels in the program's edge and vertex
    records, not in the graph's values that the checkpoint's input checksum covers: a
    libsvm file edited in place (same size) after a checkpoint was resumed, and the
    checkpoint's copy of the old values and labels trained on silently."""
    path = tmp_path / "train.svm"
    lines = [f"{'1' if i % 2 else '-1'} {1 + i % 2}:0.{25 + 25 * (i % 2)} {3 + i % 5}:1" for i in range(40)]
    path.write_text("\n".join(lines) + "\n")
    out = str(tmp_path / "m")
    _run("run", "lr", str(path), "--epochs", "1", "--checkpoint-every", "1", "--out", out)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    r = run_cli("run", "lr", str(path), "--epochs", "2", "--resume", os.path.join(out, "checkpoints"))
    assert r.returncode == 2, r.stderr
    assert "the input's values or labels differ from those the checkpoint was trained on" in r.stderr, r.stderr


def test_a_run_that_wrote_no_checkpoint_leaves_no_checkpoint_directory(ratings, tmp_path):
    """--checkpoint-every above the epochs run (or a run stopped before its first
    checkpoint) left OUT/checkpoints/.lock behind: an --out directory with no model."""
    _run("run", "mf", ratings, "--k", "2", "--epochs", "1", "--checkpoint-every", "5", "--checkpoint-dir",
         str(tmp_path / "new" / "ck"))
    assert not (tmp_path / "new").exists()
    _run("run", "mf", ratings, "--k", "2", "--epochs", "1", "--checkpoint-every", "5", "--out", str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path / "m")) == ["item.npz", "manifest.json", "model.json", "seen.npz",
                                                  "summary.txt", "user.npz"]


@pytest.mark.slow
def test_lda_resumes_the_learnt_alpha_exactly(tmp_path):
    """α learnt at iteration 2 is in the checkpoint of iteration 3; the resumed run
    learns it again at 4 from there, as the uninterrupted run does."""
    common = ["run", "lda", "--optimize-interval", "2", "-k", "5"]
    _run(*common, "--iterations", "5", "--out", str(tmp_path / "full"))
    _run(*common, "--iterations", "3", "--checkpoint-every", "3", "--checkpoint-dir", str(tmp_path / "ck"))
    _run(*common, "--iterations", "5", "--resume", str(tmp_path / "ck"), "--out", str(tmp_path / "res"))
    full, res = _arrays(tmp_path / "full", ("lda.npz",)), _arrays(tmp_path / "res", ("lda.npz",))
    _same(full, res)
    assert any("alpha" in k for k in full) and len(full) == len(res)


def test_a_resumed_run_keeps_checkpointing_where_it_resumed_from(ratings, tmp_path, monkeypatch):
    """--resume DIR --checkpoint-every N without --checkpoint-dir writes to DIR (it wrote to
    ./tux2-checkpoints, so a second interruption resumed from the first one's checkpoint)."""
    monkeypatch.chdir(tmp_path)
    common = ["run", "mf", ratings, "--k", "4", "--batch-size", "3000", "--checkpoint-every", "1"]
    _run(*common, "--epochs", "2", "--checkpoint-dir", str(tmp_path / "ck"))
    assert open(tmp_path / "ck" / "LATEST").read().strip() == "ckpt-00000002"
    _run(*common, "--epochs", "4", "--resume", str(tmp_path / "ck"))
    assert open(tmp_path / "ck" / "LATEST").read().strip() == "ckpt-00000004"
    assert not (tmp_path / "tux2-checkpoints").exists()


def test_resume_from_a_saved_model_names_init_model(ratings, tmp_path):
    """--resume given a directory --out wrote (a model, no checkpoints): the error says
    so and names --init-model, which starts from a saved model."""
    _run("run", "mf", ratings, "--k", "4", "--epochs", "1", "--out", str(tmp_path / "m"))
    r = run_cli("run", "mf", ratings, "--k", "4", "--epochs", "2", "--resume", str(tmp_path / "m"))
    assert r.returncode == 2 and "it holds a model an --out wrote, not checkpoints" in r.stderr, r.stderr
    assert f"--init-model {tmp_path / 'm'}" in r.stderr and "Traceback" not in r.stderr


def test_resume_with_another_libsvm_index_base_names_the_flags(tmp_path):
    """The auto base's checkpoint resumed with --one-based: the message named a flag
    '--zero-based auto' that does not exist ('resume with the first --zero-based auto')."""
    rng = np.random.default_rng(5)
    data = tmp_path / "a.svm"
    data.write_text("".join(f"{int(rng.integers(2))} 0:1 {int(rng.integers(1, 9))}:{rng.random():.3f}\n"
                            for _ in range(60)))
    ck = tmp_path / "ck"
    r = run_cli("run", "lr", str(data), "--epochs", "2", "--checkpoint-every", "1", "--checkpoint-dir", str(ck))
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "lr", str(data), "--epochs", "3", "--resume", str(ck), "--one-based")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--zero-based auto" not in r.stderr
    assert ("the feature index base auto (neither --zero-based nor --one-based) there, --one-based now; resume "
            "without --zero-based or --one-based") in r.stderr
