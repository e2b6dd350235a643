"""Shared helpers: cache directory, JSON output, cached datasets, peers, plots."""
import contextlib
import json
import os
import platform
import sys
import time

import numpy as np

CACHE = os.environ.get("TUX2_BENCH_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "tux2-bench"))
RESULTS = os.path.join(os.path.dirname(__file__), "results")


def emit(obj, log=None):
    """Print one JSON result line (and append it to bench/results/<log>.jsonl)."""
    line = json.dumps(obj)
    print(line, flush=True)
    if log:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, f"{log}.jsonl"), "a") as f:
            f.write(line + "\n")


def machine():
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def netflix_cached(n_users, n_items, n_ratings, seed=0, rank=10, noise=0.5):
    """netflix_like() arrays, generated once and cached on disk outside the repo."""
    from tux2.datasets import netflix_like
    from tux2.graph import BipartiteGraph
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"netflix_{n_users}_{n_items}_{n_ratings}_{rank}_{noise}_{seed}.npz")
    names = ("user", "item")
    if not os.path.exists(path):
        t = time.perf_counter()
        tr, te = netflix_like(n_users, n_items, n_ratings, rank=rank, noise=noise, seed=seed)
        np.savez(path + ".tmp.npz", tr_u=tr.src, tr_i=tr.dst, tr_r=tr.values, te_u=te.src, te_i=te.dst,
                 te_r=te.values)
        os.replace(path + ".tmp.npz", path)
        print(f"# generated {path} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    d = np.load(path)
    tr = BipartiteGraph(d["tr_u"], d["tr_i"], d["tr_r"], n_users, n_items, names, path)
    te = BipartiteGraph(d["te_u"], d["te_i"], d["te_r"], n_users, n_items, names, path)
    return tr, te, path


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
        return importlib.import_module(module)


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
