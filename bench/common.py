"""Shared helpers: cache directory, JSON output, cached datasets, peers, plots."""
import contextlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import sys
import time

import numpy as np

CACHE = os.environ.get("TUX2_BENCH_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "tux2-bench"))
RESULTS = os.environ.get("TUX2_BENCH_RESULTS", os.path.join(os.path.dirname(__file__), "results"))


def emit(obj, log=None):
    """Print one JSON result line (and append it to bench/results/<log>.jsonl)."""
    line = json.dumps(obj)
    print(line, flush=True)
    if log:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, f"{log}.jsonl"), "a") as f:
            f.write(line + "\n")


def machine():
    """Facts that make a number comparable: CPU model and count, memory, OS, versions."""
    cpu, mem = platform.processor() or "?", 0
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
        with open("/proc/meminfo") as f:
            mem = int(next(ln.split()[1] for ln in f if ln.startswith("MemTotal"))) / 2**20
    import numba
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem, 1),
            "platform": platform.platform(), "numpy": np.__version__, "numba": numba.__version__}


def version(dist):
    """Installed version of a distribution (a peer), or None."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as v
    try:
        return v(dist)
    except PackageNotFoundError:
        return None


def fmt(x, digits=4):
    """A table cell: floats to ``digits`` significant figures, None as '—'."""
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.{digits}g}" if abs(x) < 1e6 else f"{x:,.0f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def report(name, title, data, header, rows, peers=None, notes=(), pngs=()):
    """bench/results/NAME.md, the experiment's latest table: what ran where (machine,
    data size, peer versions), one markdown table, notes and plots. Returns the path."""
    m = machine()
    lines = [f"## {title}", "",
             f"*{time.strftime('%Y-%m-%d %H:%M')}; {m['cpus']} × {m['cpu']}, {m['mem_gib']} GiB; "
             f"Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}.*", "",
             f"**Data:** {data}", ""]
    if peers:
        lines += ["**Peers:** " + ", ".join(f"{k} {v or '(not installed: skipped)'}" for k, v in peers.items()), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    lines += [""] + [f"{n}" for n in notes] + ([""] if notes else [])
    lines += [f"![{name}]({os.path.basename(p)})" for p in pngs if p]
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{name}.md")
    with open(path, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    return path


def peak_rss_mib():
    """This process's peak resident memory (MiB)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def netflix_cached(n_users, n_items, n_ratings, seed=0, rank=10, noise=0.5):
    """netflix_like() arrays, generated once (in a process of their own, so the
    generator's temporaries never count in a bench's peak memory) and cached on disk
    outside the repo. Loaded as a tux2 loader gives them: int32 ids, float32 ratings
    (the MF program's rating field is float32)."""
    from tux2.graph import BipartiteGraph
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"netflix_{n_users}_{n_items}_{n_ratings}_{rank}_{noise}_{seed}.npz")
    names = ("user", "item")
    if not os.path.exists(path):
        t = time.perf_counter()
        code = (f"from bench.common import _generate_netflix; _generate_netflix({path!r}, {n_users}, {n_items}, "
                f"{n_ratings}, {seed}, {rank}, {noise})")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=7200,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        print(f"# generated {path} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    d = np.load(path)
    ids = np.int32 if max(n_users, n_items) < 2**31 else np.int64
    graphs = [BipartiteGraph(d[f"{p}_u"].astype(ids), d[f"{p}_i"].astype(ids), d[f"{p}_r"].astype(np.float32),
                             n_users, n_items, names, path) for p in ("tr", "te")]
    return graphs[0], graphs[1], path


def _generate_netflix(path, n_users, n_items, n_ratings, seed, rank, noise):
    from tux2.datasets import netflix_like
    tr, te = netflix_like(n_users, n_items, n_ratings, rank=rank, noise=noise, seed=seed)
    np.savez(path + ".tmp.npz", tr_u=tr.src, tr_i=tr.dst, tr_r=tr.values, te_u=te.src, te_i=te.dst, te_r=te.values)
    os.replace(path + ".tmp.npz", path)


def classification_cached(n, d, nnz, seed=0):
    """sparse_classification() arrays, generated once and cached on disk outside the
    repo: (BipartiteGraph sample → feature, labels ±1, CSR matrix, path)."""
    import scipy.sparse as sp
    from tux2.datasets import sparse_classification
    from tux2.graph import BipartiteGraph
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"classification_{n}_{d}_{nnz}_{seed}.npz")
    if not os.path.exists(path):
        t = time.perf_counter()
        g, y, _ = sparse_classification(n, d, nnz, seed=seed)
        np.savez(path + ".tmp.npz", src=g.src, dst=g.dst, val=g.values, y=y)
        os.replace(path + ".tmp.npz", path)
        print(f"# generated {path} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    z = np.load(path)
    g = BipartiteGraph(z["src"], z["dst"], z["val"], n, d, ("sample", "feature"), path)
    return g, z["y"], sp.csr_matrix((g.values, (g.src, g.dst)), shape=(n, d)), path


def ensure(module, package=None):
    """Import ``module``, installing ``package`` (default: the module's name) from PyPI
    first if needed: peers are outputs of the harness, not dependencies of tux2.
    Raises RuntimeError when pip cannot install it (the caller reports a skip)."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        import subprocess
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", package or module],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"pip install {package or module} failed: {r.stderr.strip()[-300:]}")
        importlib.invalidate_caches()
        try:
            return importlib.import_module(module)
        except ImportError as e:        # installed, yet it does not import here
            raise RuntimeError(f"{package or module} is installed but does not import: {e}") from None


def sklearn_or_skip(bench, system, log):
    """scikit-learn (installed on demand), or None after a "skipped" line for ``system``."""
    try:
        return ensure("sklearn", "scikit-learn")
    except RuntimeError as e:
        emit({"bench": bench, "system": system, "skipped": str(e)}, log)
        return None


def pyplot():
    """matplotlib's pyplot (Agg), installed on first use."""
    matplotlib = ensure("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


@contextlib.contextmanager
def figure(path, ncols=1, figsize=(6, 4), dpi=120):
    """Yield the Axes of a new figure (a tuple when ncols > 1) and save it to ``path``
    (a bare name means bench/results/NAME.png) on exit. Yields None when matplotlib
    cannot be installed: the bench goes on without its plot."""
    try:
        plt = pyplot()
    except RuntimeError as e:
        print(f"# no plot: {e}", file=sys.stderr)
        yield None
        return
    fig, axes = plt.subplots(1, ncols, figsize=figsize)
    yield axes
    fig.tight_layout()
    path = path if os.sep in path else os.path.join(RESULTS, f"{path}.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def timed(fn, iters, warmup=True):
    """Seconds of each of ``iters`` calls of ``fn()``, after one untimed warm-up call
    (compilation, first touches) unless ``warmup`` is False."""
    if warmup:
        fn()
    out = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def time_to_gap(curve, f_star, gap):
    """First time in [(seconds, objective), …] with (f − f*)/f* <= gap, else None."""
    for sec, f in curve:
        if (f - f_star) / f_star <= gap:
            return sec
    return None


def gap_plot(name, curves, f_star, gap, title, figsize=(6, 4), logx=False):
    """Relative objective gap vs time, one line per {label: [(seconds, objective), …]},
    with the target gap, saved as bench/results/NAME.png (``logx``: log time axis)."""
    with figure(name, figsize=figsize) as ax:
        if ax is None:
            return
        for label, pts in curves.items():
            ax.semilogy([p[0] for p in pts], [max((p[1] - f_star) / f_star, 1e-9) for p in pts], marker="o", ms=3,
                        label=label)
        ax.axhline(gap, color="grey", lw=0.8, ls="--", label=f"gap {gap:g}")
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("relative objective gap (f − f*) / f*")
        ax.set_title(title)
        ax.legend(fontsize=7 if len(curves) > 3 else None)


def tux2_cli(algo, args, timeout=3600):
    """Run ``tux2 run ALGO ARGS`` (with ``--workers W`` real worker processes over
    ZeroMQ) and return (metrics records, per-clock trace records of every rank,
    wall seconds)."""
    d = tempfile.mkdtemp(prefix="tux2-bench-dist-")
    cmd = [sys.executable, "-m", "tux2.cli", "run", algo, *args, "--metrics", os.path.join(d, "m.jsonl"),
           "--trace", os.path.join(d, "trace"), "--quiet"]
    t = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        wall = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
        metrics = [json.loads(x) for x in open(os.path.join(d, "m.jsonl"))]
        traces = []
        tdir = os.path.join(d, "trace")
        ingress = []
        for f in sorted(os.listdir(tdir)):
            if f.startswith("trace-"):
                traces += [json.loads(x) for x in open(os.path.join(tdir, f))]
            elif f.startswith("ingress-"):
                ingress.append(json.load(open(os.path.join(tdir, f))))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    traces.sort(key=lambda t: t["rank"])           # (stable: each rank's in its file's order, the run's)
    if ingress:
        print(json.dumps({"bench": algo, "event": "ingress", "workers": ingress}), file=sys.stderr)
    return metrics, traces, wall
