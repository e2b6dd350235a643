"""tux2 info, tux2 plot, --config TOML files and the terminal progress bar."""
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios

import numpy as np
import pytest

from tests.conftest import run_cli


def test_info_value_moments_near_the_float32_limit(tmp_path):
    """Values load as float32; their mean and std are taken in float64 (a square of
    3.4e38 overflows float32: std inf and a RuntimeWarning on stderr)."""
    path = tmp_path / "r.txt"
    path.write_text("0 0 3.4e38\n1 1 -3.4e38\n2 0 1\n")
    r = run_cli("info", str(path), "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    vals = json.loads(r.stdout)["values"]
    assert vals["std"] == pytest.approx(2.776e38, rel=1e-3) and (vals["min"], vals["max"]) == (-3.4e38, 3.4e38)
    (tmp_path / "a.svm").write_text("1 1:1e300 2:1\n-1 1:-1e300\n")     # float64: std inf and an overflow warning
    r = run_cli("info", str(tmp_path / "a.svm"), "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)["values"]["std"] == pytest.approx(1e300 * (2 / 3) ** 0.5, rel=1e-6)
    path.write_text("0 0 10.3711\n1 1 -3.15089\n")       # min and max read as written, not as float32 digits
    vals = json.loads(run_cli("info", str(path), "--json").stdout)["values"]
    assert (vals["min"], vals["max"]) == (-3.15089, 10.3711)


def test_info_reports_counts_degrees_duplicates_and_hints(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("# ratings\n1 1 5\n1 2 3\n2 1 4\n2 1 4\n3 3 1\n")
    r = run_cli("info", str(p), "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["format"] == "edges" and res["edges"] == 5
    assert res["src"]["vertices_with_edges"] == 3 and res["src"]["id_range"] == [1, 3]
    assert res["src"]["max"] == 2 and res["dst"]["max"] == 3 and res["dst"]["ids_without_edges"] == 0
    assert res["duplicate_pairs"] == 1 and res["duplicate_example"] == [2, 1]
    assert res["values"]["histogram"] == {"1": 1, "3": 1, "4": 2, "5": 1}
    assert any("1-based" in h for h in res["hints"]) and any("duplicate" in h for h in res["hints"])
    r = run_cli("info", str(p))
    assert r.returncode == 0 and "duplicates: 1 extra edges on 1 pairs" in r.stdout
    p.write_text("1 1 5\n1 x 3 4\n")
    r = run_cli("info", str(p))
    assert r.returncode == 2 and f"{p}:2:" in r.stderr


def test_info_on_a_model_directory_says_what_it_is(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.json").write_text('{"algorithm": "mf"}')
    r = run_cli("info", str(tmp_path / "m"))
    assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: {tmp_path / 'm'}: a model directory: tux2 info "
                                                     "describes data files"), r.stderr


def test_info_on_libsvm_and_text(tmp_path):
    (tmp_path / "a.svm").write_text("1 0:1 3:2\n-1 2:1\n1 3:1\n")
    res = json.loads(run_cli("info", str(tmp_path / "a.svm"), "--json").stdout)
    assert res["format"] == "libsvm" and res["labels"] == {"-1": 1, "1": 2}
    assert res["feature_index_base"].startswith("0") and res["feature"]["ids_declared"] == 4
    (tmp_path / "b.svm").write_text("1 1:1 3:2\n-1 2:1\n1 3:1\n")     # 1-based: no phantom feature 0 counted
    res = json.loads(run_cli("info", str(tmp_path / "b.svm"), "--json").stdout)
    assert res["feature_index_base"].startswith("1") and res["feature"]["ids_declared"] == 3
    assert res["feature"]["vertices_with_edges"] == 3
    (tmp_path / "d.txt").write_text("the cat sat on the mat\nthe dog\n")
    res = json.loads(run_cli("info", str(tmp_path / "d.txt"), "--json").stdout)
    assert res["format"] == "text" and res["vocabulary"] == 6 and res["edges"] == 7


def test_info_reads_a_csv_corpus_as_run_lda_does(tmp_path):
    # MovieLens' tags.csv-like file with a text column: the header is no document, the id column no words
    p = tmp_path / "notes.csv"
    p.write_text('id,text\n1,"apple banana, melon"\n2,goal team coach\n3,apple melon\n')
    res = json.loads(run_cli("info", str(p), "--json").stdout)
    assert res["format"] == "csv" and res["doc"]["vertices_with_edges"] == 3 and res["vocabulary"] == 6
    # a header naming no text column (movies.csv: movieId,title,genres) stops info as it stops run lda
    q = tmp_path / "movies.csv"
    q.write_text("movieId,title,genres\n1,Toy Story (1995),Animation|Comedy\n2,Jumanji (1995),Adventure\n")
    r = run_cli("info", str(q))
    assert r.returncode == 2 and "none is named as a text column" in r.stderr and "--text-column NAME" in r.stderr
    res = json.loads(run_cli("info", str(q), "--text-column", "title", "--json").stdout)
    assert res["format"] == "csv" and res["doc"]["ids_declared"] == 2 and res["tokens"] == 5


def test_info_on_a_file_of_comments_alone_says_it_has_no_data_lines(tmp_path):
    """A file of '#' and '%' lines was read as a text corpus of the comments' words
    (trial brk38); --format text still reads such lines as text (hashtags)."""
    p = tmp_path / "c.txt"
    for text in ("# exported 2026-11-27\n# user item rating\n", "% a comment\n\n# another\n", ""):
        p.write_text(text)
        r = run_cli("info", str(p))
        assert (r.returncode, r.stdout, r.stderr) == (
            2, "", f"tux2: error: {p}: no edges found (the file is empty or has only comments)\n")
    p.write_text("#python rocks\n#tux2 too\n")
    r = run_cli("info", str(p), "--format", "text", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["vocabulary"] == 4


def test_info_on_a_libsvm_file_of_labels_alone(tmp_path):
    """Lines of a label alone are a libsvm file without features (which the run commands
    refuse), not a text corpus of one-word documents."""
    (tmp_path / "labels.svm").write_text("1\n-1\n1\n")
    r = run_cli("info", str(tmp_path / "labels.svm"))
    assert r.returncode == 0 and r.stdout.splitlines() == [
        f"{tmp_path / 'labels.svm'}: libsvm, 0.0 MB, 0 edges (density 0)",
        "  sample: 0 with edges of 3",
        "  feature: 0 with edges of 0",
        "  labels: {'-1': 1, '1': 2}",
        "  note: no features: every line has a label but no index:value pairs (tux2 run lr, svm, softmax, fm, linreg "
        "and blockpg stop on it)"], r.stdout
    r = run_cli("run", "lr", str(tmp_path / "labels.svm"))
    assert r.returncode == 2 and "no features: every line has a label but no index:value pairs" in r.stderr


@pytest.mark.slow
def test_plot_writes_an_image_and_names_bad_lines(tmp_path):
    pytest.importorskip("matplotlib")
    for name, k in (("a", 4), ("b", 8)):
        r = run_cli("run", "mf", "--epochs", "2", "--k", str(k), "--metrics", str(tmp_path / f"{name}.jsonl"),
                    "--quiet")
        assert r.returncode == 0, r.stderr
    out = tmp_path / "p.png"
    r = run_cli("plot", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "-o", str(out), "--x", "total_time_s")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "2 metric(s) from 2 file(s)" in r.stdout
    (tmp_path / "bad.jsonl").write_text('{"epoch": 1, "rmse": 1}\n{"epoch": 2, \n')
    r = run_cli("plot", str(tmp_path / "bad.jsonl"), "-o", str(out))
    assert r.returncode == 2 and "bad.jsonl:2: not a JSON object" in r.stderr


def test_plot_reads_standard_input_as_dash(tmp_path):
    """'tux2 run … --metrics - | tux2 plot - -o p.png': plot took '-' for a file name ('-: cannot
    read metrics: No such file'), where every other command reads standard input."""
    pytest.importorskip("matplotlib")
    r = run_cli("run", "mf", "--epochs", "2", "--k", "2", "--metrics", "-", "--quiet")
    assert r.returncode == 0 and r.stdout.count("\n") == 2, r.stderr
    out = tmp_path / "p.png"
    p = subprocess.run([sys.executable, "-m", "tux2.cli", "plot", "-", "-o", str(out)], input=r.stdout,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p.stderr
    p = subprocess.run([sys.executable, "-m", "tux2.cli", "plot", "-", "-o", str(out)], input='{"epoch": 1,\n',
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.startswith("tux2: error: <stdin>:1: not a JSON object"), p.stderr


def test_plot_on_a_full_disk_names_its_file_and_keeps_the_old_image(tmp_path):
    """A full disk (here the file size limit) at savefig was reported as 'standard output: File
    too large', and left a truncated image in place of the previous one."""
    pytest.importorskip("matplotlib")
    import resource
    m, out = tmp_path / "m.jsonl", tmp_path / "p.png"
    m.write_text("".join(json.dumps({"epoch": i, "rmse": 1 / i}) + "\n" for i in range(1, 4)))
    assert run_cli("plot", str(m), "-o", str(out)).returncode == 0
    before = out.read_bytes()
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "plot", str(m), "-o", str(out)], capture_output=True,
                       text=True, timeout=120,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) // 2,) * 2))
    assert r.returncode == 2 and f"{out}: cannot write" in r.stderr and "standard output" not in r.stderr, r.stderr
    assert out.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["m.jsonl", "p.png"]


def test_keys_on_a_full_disk_names_the_directory_and_leaves_no_half_key(tmp_path):
    """A full disk (here the file size limit) made 'tux2 keys DIR' report 'standard output: …' and
    leave an empty tux2.key, which the next 'tux2 keys DIR' refused to overwrite."""
    import resource
    d = tmp_path / "k"
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "keys", str(d)], capture_output=True, text=True,
                       timeout=120, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64)))
    assert r.returncode == 2 and r.stderr.startswith(f"tux2: error: {d}: cannot write"), r.stderr
    assert os.listdir(d) == []
    r = run_cli("keys", str(d))
    assert r.returncode == 0 and sorted(os.listdir(d)) == ["tux2.key", "tux2.key_secret"], r.stderr


@pytest.mark.slow          # 6-10 s: the default suite's budget (2026-11-26 durations)
def test_plot_puts_epoch_and_iteration_files_on_one_axis(tmp_path):
    """An MF run's metrics (epochs) beside an LDA run's (iterations) plot together; a
    missing --x field names only the --x values the file has."""
    pytest.importorskip("matplotlib")
    ratings = tmp_path / "u.data"
    rng = np.random.default_rng(1)
    ratings.write_text("".join(f"{u}\t{i}\t{rng.integers(1, 6)}\t{881250949 + u}\n" for u in range(1, 120)
                               for i in sorted(rng.choice(np.arange(1, 50), 6, replace=False))))
    docs = tmp_path / "docs.txt"
    docs.write_text("".join(" ".join(rng.choice(["goal", "team", "vote", "party", "coach"], 12)) + "\n"
                            for _ in range(40)))
    for argv in (["mf", str(ratings), "--epochs", "3"], ["lda", str(docs), "-k", "2", "--iterations", "4"]):
        r = run_cli("run", *argv, "--metrics", str(tmp_path / f"{argv[0]}.jsonl"), "--quiet", timeout=300)
        assert r.returncode == 0, r.stderr
    out = tmp_path / "both.png"
    r = run_cli("plot", str(tmp_path / "mf.jsonl"), str(tmp_path / "lda.jsonl"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "from 2 file(s)" in r.stdout
    r = run_cli("plot", str(tmp_path / "lda.jsonl"), "--x", "epoch", "-o", str(out))
    assert r.returncode == 2
    assert "lda.jsonl: no 'epoch' field (use --x with one of: iteration, clock, total_time_s)" in r.stderr


def test_plot_leaves_out_a_metric_that_never_changes_and_says_so(tmp_path):
    """An LDA run without --optimize-interval has alpha_sum the same in every record: it
    drew a flat panel; now it is named as not drawn, and --y still draws it."""
    pytest.importorskip("matplotlib")
    (tmp_path / "l.jsonl").write_text("".join(f'{{"iteration": {i}, "ll_per_token": {-9 + 1 / i}, "alpha_sum": 2.0}}\n'
                                              for i in range(1, 5)))
    r = run_cli("plot", str(tmp_path / "l.jsonl"), "-o", str(tmp_path / "p.png"))
    assert r.returncode == 0 and r.stdout.startswith("1 metric(s) from 1 file(s)"), r.stderr
    assert "(the same in every record, so not drawn: alpha_sum; --y draws them)" in r.stdout
    r = run_cli("plot", str(tmp_path / "l.jsonl"), "-o", str(tmp_path / "p.png"), "--y", "alpha_sum", "ll_per_token")
    assert r.returncode == 0 and r.stdout.strip().endswith("2 metric(s) from 1 file(s) written to "
                                                           f"{tmp_path / 'p.png'}"), r.stdout


@pytest.mark.parametrize("lines, output, expect", [
    (b'{"epoch": 1, "rmse": 1}\n{"epoch": 2, "rmse": 1, "n": "\xff"}\n', "p.png",
     "m.jsonl:2: not UTF-8 text"),                                    # was UnicodeDecodeError
    (b'{"epoch": 1, "rmse": 1e400}\n{"epoch": 2, "rmse": -1e308}\n', "p.png",
     "p.png: cannot draw these values"),                              # was matplotlib's ValueError (arange)
    (b'{"epoch": 1, "rmse": 1}\n', "p.unknownext", "-o 'p.unknownext': name an image file ending in one of"),
    (b'{"epoch": 1, "rmse": 1}\n', "curves", "-o 'curves': name an image file"),   # wrote curves.png, said curves
    (b'{"epoch": 1, "rmse": 1}\n', "", "-o/--output: expected a value, got an empty string"),
    (b'{"epoch": 1, "rmse": 1}\n', "dir.png", "dir.png: -o must be a file, and this is a directory"),
    (b'{"epoch": "one", "rmse": 1}\n', "p.png",                      # drew an empty panel, matplotlib warned
     "no record has a number for 'rmse' beside a number for 'epoch'"),
])
def test_plot_refuses_what_it_cannot_read_or_draw(tmp_path, lines, output, expect):
    pytest.importorskip("matplotlib")
    (tmp_path / "m.jsonl").write_bytes(lines)
    (tmp_path / "dir.png").mkdir()
    r = subprocess.run([sys.executable, "-m", "tux2.cli", "plot", "m.jsonl", "-o", output], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    error = [line for line in r.stderr.strip().splitlines() if not line.startswith("try 'tux2")]   # a usage error's hint
    assert error[-1].startswith("tux2: error:") and expect in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["dir.png", "m.jsonl"]           # nothing written


def test_plot_refuses_a_metric_no_file_has(tmp_path):
    """--y with a misspelt name drew an empty panel (matplotlib's warning on stderr) and
    exited 0; now it names what the files have."""
    pytest.importorskip("matplotlib")
    (tmp_path / "m.jsonl").write_text('{"epoch": 1, "test_rmse": 1}\n{"epoch": 2, "test_rmse": 0.9}\n')
    r = run_cli("plot", str(tmp_path / "m.jsonl"), "-o", str(tmp_path / "p.png"), "--y", "test_rmse", "tset_rmse")
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("tux2: error: no record has a number for 'tset_rmse' beside a number for 'epoch'; "
                        "the files' metrics: test_rmse\n")
    assert not (tmp_path / "p.png").exists()


def test_info_reads_columns_past_the_lines_end_as_an_error_not_a_corpus(tmp_path):
    """--columns 99,1 on a 3-column file sniffed as no edge list, and info described it
    as 'doc word count' triples, the flag ignored and exit 0; tux2 run mf names the line."""
    (tmp_path / "r.txt").write_text("1 2 3\n2 3 4\n3 1 5\n")
    r = run_cli("info", str(tmp_path / "r.txt"), "--columns", "99,1")
    assert r.returncode == 2 and "r.txt:1: missing column (fewer columns than named by --columns)" in r.stderr, r.stderr
    r = run_cli("info", str(tmp_path / "r.txt"), "--columns", "2,1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["format"] == "edges", r.stderr


def test_plot_log_y_draws_a_panel_of_values_at_or_below_zero(tmp_path):
    """--log-y on an LDA log-likelihood (all < 0) printed matplotlib's UserWarning with
    plot.py's path ('Data has no positive values') and drew an empty panel; such a
    panel now has a symmetric log axis."""
    pytest.importorskip("matplotlib")
    (tmp_path / "m.jsonl").write_text('{"iteration": 1, "ll": -900.5, "perplexity": 3.5}\n'
                                      '{"iteration": 2, "ll": -700.25, "perplexity": 2.5}\n')
    r = run_cli("plot", str(tmp_path / "m.jsonl"), "-o", str(tmp_path / "p.png"), "--log-y")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "2 metric(s) from 1 file(s)" in r.stdout


@pytest.mark.slow          # 6-10 s: the default suite's budget (2026-11-26 durations)
def test_config_file_keys_are_flags_and_the_command_line_wins(tmp_path):
    conf = tmp_path / "mf.toml"
    conf.write_text('epochs = 1\nk = 6\nbatch-size = 200000\nno_biases = true\nout = "%s"\n' % (tmp_path / "m"))
    r = run_cli("run", "mf", "--config", str(conf), "--k", "5", "--quiet")
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["k"] == 5 and meta["epochs"] == 1
    conf.write_text("epochs = 1\nbatch_sise = 3\n")
    r = run_cli("run", "mf", "--config", str(conf))
    assert r.returncode == 2 and "unknown key 'batch_sise'" in r.stderr and "batch-size" in r.stderr
    conf.write_text('mode = "fast"\n')
    r = run_cli("run", "mf", "--config", str(conf))
    assert r.returncode == 2 and "invalid choice: 'fast'" in r.stderr
    conf.write_text('config = "other.toml"\n')         # was ignored without a word
    r = run_cli("run", "mf", "--config", str(conf))
    assert r.returncode == 2 and f"{conf}: config: a config file cannot name another" in r.stderr, r.stderr
    conf.write_text("k = [\n")
    r = run_cli("run", "mf", "--config", str(conf))
    assert r.returncode == 2 and f"{conf}:1: not valid TOML: Invalid value (at end of document) (line text: 'k = ['" in r.stderr


def _on_terminal(*args):
    """Run the CLI with stdout on a 100-column pseudo-terminal; return what it drew."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "tux2.cli", *args], stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return out.decode("utf-8", "replace")


@pytest.mark.slow
def test_progress_bar_on_a_terminal_plain_lines_otherwise():
    args = ("run", "mf", "--epochs", "3", "--k", "8", "--batch-size", "60000")
    drawn = _on_terminal(*args)
    assert "/3 epochs" in drawn and "rmse" in drawn and "epoch   3/3" in drawn
    plain = run_cli(*args)
    assert plain.returncode == 0 and "\r" not in plain.stdout and "epochs [" not in plain.stdout
    assert run_cli(*args, "--quiet").stdout == ""


def test_os_errors_name_the_path_and_partition_save_is_checked_first(tmp_path):
    ratings = tmp_path / "r.txt"
    ratings.write_text("".join(f"{u} {i} 3\n" for u in range(20) for i in range(5)))
    r = run_cli("partition", str(ratings), "-p", "2", "--save", str(ratings))     # was [Errno 17] File exists
    assert r.returncode == 2 and r.stderr == f"tux2: error: {ratings}: --save must be a directory, and this is a file\n"
    r = run_cli("keys", str(ratings / "sub"))                                    # was [Errno 20] Not a directory: '…'
    assert r.returncode == 2 and r.stderr == f"tux2: error: {ratings / 'sub'}: Not a directory\n", r.stderr


def test_a_bug_of_tux2s_own_is_one_line_not_a_traceback(tmp_path):
    """An unexpected exception (a bug: 'tux2 info --json' once met a numpy int64 it could
    not write) printed a Python traceback; now one line saying it is a bug, exit 70, and
    the traceback with TUX2_DEBUG=1."""
    code = ("import sys, tux2.cli.info as i\n"
            "def boom(args): return {}['missing']\n"
            "i.info = boom\n"
            "from tux2.cli import main\n"
            "sys.exit(main(['info', sys.argv[1]]))\n")
    (tmp_path / "r.txt").write_text("0 1 2\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.txt")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 70 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("tux2: internal error: KeyError: 'missing'") and "TUX2_DEBUG=1" in r.stderr
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.txt")], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "TUX2_DEBUG": "1"})
    assert r.returncode == 1 and "Traceback" in r.stderr and "KeyError" in r.stderr


def test_predict_makes_missing_directories_of_its_outputs_as_plot_and_run_do(tmp_path):
    """plot -o and run --metrics make DIR/missing/ for their files; predict -o and --metrics
    passed the check and then stopped on 'cannot write: No such file or directory' (trial leftover)."""
    import tux2
    from tux2 import cli
    ratings = tmp_path / "r.txt"
    ratings.write_text("".join(f"{u} {i} {(u + i) % 5 + 1}\n" for u in range(6) for i in range(5)))
    tux2.MF(k=2, epochs=1).fit(str(ratings)).save(tmp_path / "model")
    out, metrics = tmp_path / "a" / "b" / "p.txt", tmp_path / "c" / "m.json"
    assert cli.main(["predict", str(tmp_path / "model"), str(ratings), "-o", str(out), "--metrics", str(metrics)]) == 0
    assert len(out.read_text().splitlines()) == 31 and "rmse" in json.loads(metrics.read_text())


def test_info_describes_a_wide_table_of_words_as_a_table_not_an_edge_list(tmp_path, capsys):
    """Kaggle's Titanic train.csv (a header of 12 names, quoted names holding commas, Sex, Ticket …)
    was described as an edge list of its first three columns (891 edges, 'src'/'dst' degrees);
    it is a table of samples, and tux2 info says what tux2 run lr says of it (trial leftover)."""
    from tux2 import cli
    f = tmp_path / "titanic.csv"
    f.write_text("PassengerId,Survived,Pclass,Name,Sex,Age,SibSp,Parch,Ticket,Fare,Cabin,Embarked\n" + "".join(
        f'{i},{i % 2},{i % 3 + 1},"Smith, Mr. John {i}",{("male", "female")[i % 2]},{20 + i % 40},0,0,'
        f'A/5 {1000 + i},{7.25 + i:.4f},{"C85" if i % 4 else ""},S\n' for i in range(1, 31)))
    assert cli.main(["info", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{f}: table, 0.0 MB, 30 samples × 12 columns\n"), out
    assert "5 columns of words (4 ('Name'), 5 ('Sex'), 9 ('Ticket'), 11 ('Cabin'), …)" in out and " edges (density" not in out
    r = run_cli("run", "lr", str(f))
    assert r.returncode == 2 and "a table with 5 columns of words (4 ('Name')" in r.stderr, r.stderr
    assert cli.main(["info", str(f), "--format", "edges"]) == 0         # as tux2 run mf --columns 1,2,3 reads it
    assert capsys.readouterr().out.startswith(f"{f}: edges, 0.0 MB, 30 edges")
    # tux2 run mf trained on PassengerId, Survived and Pclass as users, items and ratings (a cold-start note
    # among the header lines); it is refused unless --columns names three
    assert cli.main(["run", "mf", str(f), "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert "a table of 12 named columns, not a rating file" in err and "--columns PassengerId,Survived,Pclass" in err
    import tux2
    with pytest.raises(tux2.errors.InputError, match="columns=PassengerId,Survived,Pclass"):
        tux2.MF(epochs=1).fit(str(f))
    assert tux2.MF(k=2, epochs=1, columns="PassengerId,Pclass,Survived").fit(str(f)).n_users == 30
