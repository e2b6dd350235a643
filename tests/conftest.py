import os
import subprocess
import sys

# The tests keep their compiled loops and data sets apart from the user's (a tux2 run
# after the tests still starts from the user's own cache, as the README tells it); a
# TUX2_CACHE_DIR already set is kept. Before tux2 is imported: it reads it then.
_CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
os.environ.setdefault("TUX2_CACHE_DIR", os.path.join(_CACHE_HOME, "tux2-tests"))
# The hundreds of command lines the tests start are Python processes: where the shell says
# PYTHONDONTWRITEBYTECODE (as some CI images do), each would compile the project's modules
# from source again (~0.5 s a command here; a user's Python keeps their bytecode). They
# are compiled once here, into the source tree's __pycache__ (git ignores it), and read
# from there; nothing else is written (a run under a file-size limit could leave a cut one).
import compileall  # noqa: E402

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _pkg in ("tux2", "udfs", "partitioning", "bench"):
    compileall.compile_dir(os.path.join(_ROOT, _pkg), quiet=2)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tux2  # noqa: E402


def random_graph(n_a=30, n_b=20, m=150, seed=0, values=True):
    """A small random bipartite graph without duplicate edges."""
    rng = np.random.default_rng(seed)
    key = np.unique(rng.integers(0, n_a * n_b, m))
    key = key[rng.permutation(len(key))]
    return tux2.BipartiteGraph(key // n_b, key % n_b, rng.normal(size=len(key)) if values else None,
                               n_a, n_b, ("a", "b"))


def clinical_rows(n=600, seed=0):
    """Dense unscaled rows as UCI's Pima diabetes set: 8 positive features in their own
    units (counts to ~17, glucose ~120, insulin to ~500, BMI ~32, …), a tenth of them 0,
    and ±1 labels from a logistic model of three of them: (X, y)."""
    rng = np.random.default_rng(seed)
    mean = np.array([3.8, 120.0, 69.0, 20.0, 80.0, 32.0, 0.47, 33.0])
    sd = np.array([3.4, 32.0, 19.0, 16.0, 115.0, 7.9, 0.33, 11.8])
    X = np.round(np.abs(mean + sd * rng.standard_normal((n, 8))), 1)
    X[rng.random((n, 8)) < 0.1] = 0.0
    z = (X[:, 1] - 120) / 32 + 0.5 * (X[:, 5] - 32) / 8 + 0.3 * (X[:, 0] - 4) / 3 - 0.7
    return X, np.where(rng.random(n) < 1 / (1 + np.exp(-z)), 1, -1)


def write_rows(path, X, y):
    """A libsvm file of rows X (zeros left out, as libsvm files leave them) and labels y."""
    path.write_text("".join(f"{t:+d} " + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(x) if v) + "\n"
                            for t, x in zip(y, X)))
    return str(path)


# gensim's Lee corpus, shortened: news prose, a document a line, whose quotation runs on into the next
# paragraph (a line with an odd number of '"'s)
LEE_PROSE = "\n".join([
    'Hundreds of people have been forced to vacate their homes, as strong winds today pushed a '
    'huge bushfire towards the town. "The falls have been quite isolated," she said, "but the rain',
    'Fire crews say the weather, which had been forecast to ease, will stay hot and dry for days '
    'to come across the whole of the state and beyond it',
    '"We are doing everything we can, the commissioner said, to protect every home out there today']) + "\n"


def run_cli(*args, timeout=300, env=None, cwd=None):
    """Run the tux2 CLI in a subprocess; return CompletedProcess with text output."""
    return subprocess.run([sys.executable, "-m", "tux2.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


@pytest.fixture(scope="module")
def ratings_file(tmp_path_factory):
    """A small Netflix-shaped rating file (the distributed and attack tests' input)."""
    from tux2.datasets import netflix_like
    from tux2.io import write_edge_list
    train, _ = netflix_like(n_users=400, n_items=90, n_ratings=8000, rank=4, seed=2)
    path = tmp_path_factory.mktemp("ratings") / "ratings.txt"
    write_edge_list(str(path), train)
    return str(path)
