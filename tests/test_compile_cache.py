"""Compile once per machine: a second process with the same program loads every
generated loop from the kernel cache (numba compiles none of them); a corrupted
entry, or a UDF whose source changed, is compiled afresh and never trusted.

Each run is a fresh Python process (the cache is about processes) with its own
TUX2_CACHE_DIR; numba's "numba:compile" events count what it compiled."""
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import run_cli

UDFS = '''
import math

SCALE = {scale}


def exchange(u, v, e, a_u, a_v, ctx):
    a_u.s += e.w * v.y
    a_v.s += SCALE * e.w * math.tanh(u.x)


def apply_a(v, a, ctx):
    v.x += 0.5 * a.s


def apply_b(v, a, ctx):
    v.y -= 0.25 * a.s


def total(v, ctx):
    ctx.t += v.x
'''

SCRIPT = '''
import json, sys
import numpy as np
from numba.core import event
import tux2
from tux2 import Apply, ContextSpec, Exchange, GlobalSync, MiniBatch, Program, VertexType
sys.path.insert(0, sys.argv[1])
import cache_udfs as u

rng = np.random.default_rng(0)
m = 400
g = tux2.BipartiteGraph(rng.integers(0, 50, m), rng.integers(0, 30, m), rng.normal(size=m), 50, 30, ("a", "b"))
prog = Program([VertexType("a", sync={"x": "f8"}, accum={"s": "f8"}), VertexType("b", sync={"y": "f8"}, accum={"s": "f8"})],
               edge={"w": "f8"}, context=ContextSpec(fields={"t": "f8"}, sum=("t",)),
               stages=[MiniBatch(64, [Exchange(u.exchange), Apply(u.apply_a, types=("a",)), Apply(u.apply_b, types=("b",))]),
                       GlobalSync(aggregate=u.total, over="a")],
               init_vertices=lambda name, data, rng: data.__setitem__("x" if name == "a" else "y", 1.0))
compiled = []

with event.install_recorder("numba:compile") as rec:
    for parts in (1, 3):
        eng = tux2.Engine(prog, g, partitions=parts, partitioner="random", seed=0)
        eng.run(2)
        compiled.append(eng.context()["t"])
loops = sorted({e.data["dispatcher"].py_func.__module__ for _, e in rec.buffer
                if e.is_start and e.data["dispatcher"].py_func.__module__.startswith("tux2_kernel")})
print(json.dumps({"loops": loops, "t": compiled, "lowering": "numba.cpython.setobj" in sys.modules}))
'''


def run(tmp_path, scale=1.0):
    (tmp_path / "cache_udfs.py").write_text(UDFS.format(scale=scale))
    env = {**os.environ, "TUX2_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def numba_files(tmp_path):
    return [os.path.join(d, n) for d, _, names in os.walk(tmp_path / "cache") for n in names
            if n.endswith((".nbi", ".nbc"))]


@pytest.mark.slow
def test_a_second_process_compiles_no_loop(tmp_path):
    first = run(tmp_path)
    assert len(first["loops"]) >= 4          # exchange, two applies, aggregate, the fused loop
    stamps = {p: os.stat(p).st_mtime_ns for p in (tmp_path / "cache").rglob("*") if p.is_file()}
    second = run(tmp_path)
    assert {p: os.stat(p).st_mtime_ns for p in (tmp_path / "cache").rglob("*") if p.is_file()} == stamps
    assert second["loops"] == []
    assert second["t"] == first["t"]
    # loading them needed none of numba's lowering registries (tux2.config._quick_cache_loads)
    assert first["lowering"] and not second["lowering"]


@pytest.mark.slow
def test_loops_unused_for_days_are_trimmed_and_loops_in_use_are_kept(tmp_path):
    """Go's build-cache rule: a loaded loop's directory is marked used; once a day the
    loops unused for KEEP_DAYS are deleted, so edited UDFs do not fill the disk."""
    first = run(tmp_path)
    kernels = tmp_path / "cache" / "kernels"
    old = time.time() - 30 * 86400
    (kernels / "exchange-stale").mkdir()
    for d in [*kernels.iterdir(), kernels / "trimmed"]:
        os.utime(d, (old, old))
    second = run(tmp_path)                    # loads every loop (marking them), then trims
    assert second["loops"] == [] and second["t"] == first["t"]
    assert not (kernels / "exchange-stale").exists()
    assert len([d for d in kernels.iterdir() if d.is_dir()]) >= len(first["loops"])
    assert run(tmp_path)["loops"] == []


def test_trim_deletes_only_old_loops_and_at_most_once_a_day(tmp_path, monkeypatch):
    from tux2 import compile as c
    monkeypatch.setitem(c._CACHE, "dir", str(tmp_path))
    kernels = tmp_path / "kernels"
    now = time.time()
    for name, age_days in (("apply-old", c.KEEP_DAYS + 1), ("apply-recent", 1)):
        (kernels / name).mkdir(parents=True)
        (kernels / name / "kernel.py").write_text("x = 1\n")
        t = now - age_days * 86400
        os.utime(kernels / name, (t, t))
    c._trim(now)
    assert sorted(p.name for p in kernels.iterdir()) == ["apply-recent", "trimmed"]
    (kernels / "apply-old").mkdir()
    t = now - 30 * 86400
    os.utime(kernels / "apply-old", (t, t))
    c._trim(now + 3600)                       # within the day: nothing is looked at
    assert (kernels / "apply-old").exists()
    c._trim(now + 86400 + 1)
    assert not (kernels / "apply-old").exists() and (kernels / "apply-recent").exists()
    (kernels / "apply-old").mkdir()
    os.utime(kernels / "apply-old", (t, t))
    future = now + 400 * 86400                # a stamp from a clock that was once wrong stops nothing
    os.utime(kernels / "trimmed", (future, future))
    c._trim(now + 2 * 86400)
    assert not (kernels / "apply-old").exists()
    c._trim(now + 3 * 86400)                  # a missing or read-only cache is no error
    monkeypatch.setitem(c._CACHE, "dir", str(tmp_path / "nowhere"))
    c._trim(now)


@pytest.mark.slow
def test_a_corrupted_entry_is_rebuilt_not_trusted(tmp_path):
    first = run(tmp_path)
    files = numba_files(tmp_path)
    assert files
    for path in files:                       # same size, different bytes: only a checksum notices
        data = bytearray(open(path, "rb").read())
        for k in range(len(data) // 3, len(data), 97):
            data[k] ^= 0x5A
        open(path, "wb").write(bytes(data))
    again = run(tmp_path)
    assert again["t"] == first["t"]
    assert sorted(again["loops"]) == sorted(first["loops"])       # every corrupted loop compiled afresh
    assert run(tmp_path)["loops"] == []                            # and cached again


@pytest.mark.slow
def test_a_changed_udf_is_compiled_again(tmp_path):
    first = run(tmp_path, scale=1.0)
    changed = run(tmp_path, scale=2.0)        # SCALE is a global the UDF reads: frozen into the machine code
    assert changed["loops"] and changed["t"] != first["t"]
    assert run(tmp_path, scale=1.0)["t"] == first["t"]


@pytest.mark.slow
def test_no_cache_flag_writes_nothing(tmp_path):
    cache = tmp_path / "cache"
    r = run_cli("run", "blockpg", "--epochs", "1", "--no-cache", "-q", env={"TUX2_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    assert not (cache / "kernels").exists()
    r = run_cli("run", "blockpg", "--epochs", "1", "-q", env={"TUX2_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    assert (cache / "kernels").exists()


LOCK_CHILD = '''
import sys
import numpy as np
from tux2 import compile as C
k = C._kernel("locktest", sys.argv[1], "twice", {}, ["locktest"])
print(k(np.arange(10, dtype=np.dtype(sys.argv[2]))), flush=True)
'''
TWICE = "\ndef twice(a):\n    s = 0.0\n    for i in range(a.shape[0]):\n        s += a[i]\n    return 2.0 * s\n"


@pytest.mark.slow
def test_numba_cache_files_are_written_under_a_lock(tmp_path):
    """numba numbers a new overload's cache file by reading its index unlocked, so two
    processes compiling two signatures of one loop at once both wrote ``….1.nbc`` and
    the index could name the other signature's code (a run then read records with the
    wrong stride: NaN, heap corruption). A process saving or loading an overload now
    holds an flock on the index: here a compiling child waits while this process holds
    it, then goes on, and a second child loads both signatures right."""
    import fcntl
    from tux2 import compile as C
    env = {**os.environ, "TUX2_CACHE_DIR": str(tmp_path)}
    C.set_cache_dir(str(tmp_path))
    try:
        k = C._kernel("locktest", TWICE, "twice", {}, ["locktest"])
        lock = k._cache._cache_file._index_path + ".lock"
    finally:
        C.set_cache_dir(C.default_cache_dir())
    child = [sys.executable, "-c", LOCK_CHILD, TWICE]
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = subprocess.Popen(child + ["float64"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=4)                         # started, and waiting for the lock
    finally:
        os.close(fd)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and out.strip() == "90.0", err
    r = subprocess.run(child + ["int32"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "90.0", r.stderr
    for dt in ("float64", "int32"):                   # both from the cache now, each its own code
        r = subprocess.run(child + [dt], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "90.0", r.stderr
    assert len([f for f in os.listdir(os.path.dirname(lock)) if f.endswith(".nbc")]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("k", ["8", "50"])
def test_a_run_compiling_its_loops_learns_the_model_of_a_run_loading_them(tmp_path, ratings_file, k):
    """Mini-batch MF sums gradients under fastmath: the run that compiles the loops
    and the runs that load them from the cache must execute the same code (they
    once ended ~2e-9 apart in RMSE: the UDF was optimised with the loop in one and
    linked apart in the other; with k = 50, also when the fused loop was loaded before the
    stage kernels it calls, whose copy inside it then ran)."""
    env = {"TUX2_CACHE_DIR": str(tmp_path / "cache")}
    rmse = []
    for i in range(2):
        metrics = tmp_path / f"m{i}.jsonl"
        p = run_cli("run", "mf", ratings_file, "--mode", "minibatch", "--epochs", "3", "--k", k, "-q",
                    "--metrics", str(metrics), env=env)
        assert p.returncode == 0, p.stderr
        rmse.append([json.loads(line)["train_rmse"] for line in metrics.read_text().splitlines()])
    assert numba_files(tmp_path)                     # the second run loaded its loops
    assert rmse[0] == rmse[1]


QUICK_UDFS = '''
import math
import numpy as np


def exchange(u, v, e, a_u, a_v, ctx):
    err = e.rating - np.dot(u.p, v.p)
    if not math.isfinite(err):
        raise ValueError("diverged", err)
    ctx.loss += err * err
    ctx.n += np.int32(1)
    for j in range(4):
        a_u.p[j] += 0.05 * u.p[j] - err * v.p[j] * math.exp(-abs(u.p[j]))
        a_v.p[j] += 0.05 * v.p[j] - err * u.p[j]


def apply(v, a, ctx):
    step = np.empty(4)
    for j in range(4):
        step[j] = 0.02 * a.p[j]
    for j in range(4):
        v.p[j] -= step[j] / (1.0 + math.sqrt(step @ step))
'''

QUICK = '''
import hashlib, json, sys
from numba.core import base
refreshes = []
full_refresh = base.BaseContext.refresh


def counted(self):
    refreshes.append(1)
    return full_refresh(self)


base.BaseContext.refresh = counted
import tux2.config
if sys.argv[3] == "numba":
    from numba.core.caching import Cache
    Cache.load_overload = getattr(Cache.load_overload, "__wrapped__", Cache.load_overload)
import numpy as np
import tux2
from tux2 import Apply, ContextSpec, Exchange, MiniBatch, Program, VertexType
from tux2.io import read_edge_list
sys.path.insert(0, sys.argv[1])
import quick_udfs as u

g = read_edge_list(sys.argv[2], type_names=("user", "item"))
parsed = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (g.src, g.dst, g.values))).hexdigest()
prog = Program([VertexType("user", sync={"p": ("f8", 4)}), VertexType("item", sync={"p": ("f8", 4)})],
               edge={"rating": "f8"}, context=ContextSpec(fields={"loss": "f8", "n": "i4"}, sum=("loss", "n")),
               stages=[MiniBatch(500, [Exchange(u.exchange), Apply(u.apply)])],
               init_vertices=lambda name, data, rng: data.__setitem__("p", rng.normal(0, 0.3, (len(data), 4))))
eng = tux2.Engine(prog, g, partitions=2, partitioner="random", seed=0)
eng.run(2)
print(json.dumps({"refreshes": len(refreshes), "parsed": parsed, "loss": repr(eng.context()["loss"]),
                  "n": int(eng.context()["n"])}))
'''


@pytest.mark.slow
def test_loading_tux2s_functions_without_numbas_refresh_runs_what_numbas_own_load_runs(tmp_path, ratings_file):
    """tux2.config loads tux2's cached functions (its modules, the parallel file parser,
    generated loops with BLAS, NRT allocations and raises) without numba's target-context
    refresh: a warm process refreshes nothing and gets, bit for bit, what a process
    loading the same cache files through numba's own load_overload gets."""
    (tmp_path / "quick_udfs.py").write_text(QUICK_UDFS)
    env = {**os.environ, "TUX2_CACHE_DIR": str(tmp_path / "cache")}

    def run_quick(load):
        p = subprocess.run([sys.executable, "-c", QUICK, str(tmp_path), ratings_file, load], capture_output=True,
                           text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    cold = run_quick("tux2")
    quick, full = run_quick("tux2"), run_quick("numba")
    assert numba_files(tmp_path)
    assert quick["refreshes"] == 0                  # nothing compiled, nothing refreshed
    assert full["refreshes"] > 0                    # numba's own load refreshes first
    for r in (quick, full):
        r.pop("refreshes")
    cold.pop("refreshes")
    assert quick == full == cold


@pytest.mark.slow
def test_the_setup_line_says_what_numba_compiled(tmp_path, ratings_file):
    env = {"TUX2_CACHE_DIR": str(tmp_path / "cache")}
    lines, notes = [], []
    for _ in range(2):
        # stderr a terminal, as someone waiting at one sees it (pipes and logs get no note)
        master, slave = os.openpty()
        p = subprocess.run([sys.executable, "-m", "tux2.cli", "run", "mf", ratings_file, "--epochs", "1", "--k", "3"],
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=300, env={**os.environ, **env})
        os.close(slave)
        try:
            err = os.read(master, 1 << 16).decode()
        except OSError:                 # EIO: nothing was written, and the writer is gone
            err = ""
        os.close(master)
        assert p.returncode == 0, err
        lines.append(next(line for line in p.stdout.splitlines() if "layout + compile" in line))
        notes.append("note: compiling tux2's edge-list reader, once per tux2 version" in err)
    assert notes == [True, False]       # before the first run's silent seconds, and only then
    assert "numba compiled" in lines[0] and "later runs load them from the kernel cache" in lines[0]
    assert "compiled" not in lines[1].replace("layout + compile", "")
    # a cache that cannot be written (a file where its kernels/ directory goes; read-only for others):
    # the run works, compiling, and the line says that every run will
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "kernels").write_text("not a directory\n")
    p = run_cli("run", "mf", ratings_file, "--epochs", "1", "--k", "3",
                env={"TUX2_CACHE_DIR": str(tmp_path / "blocked")})
    assert p.returncode == 0, p.stderr
    line = next(line for line in p.stdout.splitlines() if "layout + compile" in line)
    assert f"the kernel cache {tmp_path / 'blocked'} cannot be written, so every run compiles them" in line, line


PLACES = '''
import os, pkgutil, importlib, json, sys
import tux2, tux2.udfs, tux2.partitioning
from numba.core.registry import CPUDispatcher
names = [m.name for pkg in (tux2, tux2.udfs, tux2.partitioning)
         for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".") if ".cli" not in m.name]
for n in names:
    importlib.import_module(n)
paths = {}
for n, mod in list(sys.modules.items()):
    if n == "tux2" or n.startswith("tux2."):
        for f in vars(mod).values():
            if isinstance(f, CPUDispatcher) and getattr(f, "_cache", None) is not None \\
                    and getattr(f._cache, "_cache_path", None):
                paths[f"{n}.{f.__name__}"] = f._cache._cache_path
print(json.dumps(paths))
'''


def test_numba_keeps_tuxs_functions_in_the_cache_directory_not_in_the_package(tmp_path):
    """Every @njit(cache=True) function of tux2's modules keeps its machine code under
    TUX2_CACHE_DIR/numba: beside the installed sources (site-packages/tux2/__pycache__),
    `pip install .` then `pip install -e .` left a directory that hid the editable install."""
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    r = subprocess.run([sys.executable, "-c", PLACES], capture_output=True, text=True, timeout=300,
                       env={**env, "TUX2_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    paths = json.loads(r.stdout)
    assert len(paths) > 20 and "tux2.compile._bytes" in paths, paths
    outside = {n: p for n, p in paths.items() if not p.startswith(str(cache / "numba") + os.sep)}
    assert not outside, outside


HELPER = '''
import numpy as np
from tux2.compile import counting_compiles, group_by_part
with counting_compiles() as n:
    order, start = group_by_part(np.array([1, 0, 1, 2]), 3)
print(order.tolist(), start.tolist(), n.n)
'''


@pytest.mark.slow      # the default suite's heaviest (6-25 s); .ci/run's slow pass runs it
def test_a_damaged_cache_file_of_a_helper_is_compiled_again_not_a_crash(tmp_path):
    """Bytes overwritten in the middle of every machine-code file numba keeps for tux2's
    own @njit(cache=True) helpers: the next process compiles them again (no traceback)
    and saves over the damage, so the one after loads them."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["TUX2_CACHE_DIR"] = str(tmp_path / "cache")

    def run():
        r = subprocess.run([sys.executable, "-c", HELPER], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        *out, compiled = r.stdout.split()
        return " ".join(out), int(compiled)

    first, compiled = run()
    assert first == "[1, 0, 2, 3] [0, 1, 3, 4]" and compiled > 0
    assert run() == (first, 0)
    damaged = 0
    for root, _, names in os.walk(tmp_path / "cache" / "numba"):
        for n in names:
            if n.endswith(".nbc"):
                p = os.path.join(root, n)
                size = os.path.getsize(p)
                with open(p, "r+b") as f:
                    f.seek(size // 2)
                    f.write(b"\xff" * 8)
                damaged += 1
    assert damaged > 0
    out, compiled = run()
    assert out == first and compiled > 0
    assert run() == (first, 0)
    for root, _, names in os.walk(tmp_path / "cache" / "numba"):     # and an index cut short
        for n in names:
            if n.endswith(".nbi"):
                p = os.path.join(root, n)
                os.truncate(p, os.path.getsize(p) // 2)
    out, compiled = run()
    assert out == first and compiled > 0
    assert run() == (first, 0)


def test_a_cache_directory_whose_name_is_not_utf8_compiles_without_it(tmp_path):
    # TUX2_CACHE_DIR=$(printf 'cache\xff') tux2 run mf r.txt stopped with "numba could not compile UDF
    # 'sgd_exchange' … 'utf-8' codec can't encode character '\udcff'": numba's errors, raised and caught while
    # it types, encode the loop's source path (there, under the cache directory)
    program = textwrap.dedent("""
        from tux2 import compile as c
        import numpy as np                  # (typing a[i] raises and catches a numba error naming the file)
        k = c._kernel("probe", "def f(a, i):\\n    return a[i] + 1\\n", "f", {}, ["x"])
        print(k(np.arange(50), 41), c.cache_unwritable() == c.cache_dir())
    """)
    cache = os.fsdecode(bytes(tmp_path) + b"/cache\xff")
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TUX2_CACHE_DIR": cache})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["42", "True"], r.stdout
