import os
import subprocess
import sys

# The tests keep their compiled loops and data sets apart from the user's (a tux2 run
# after the tests still starts from the user's own cache, as the README tells it); a
# TUX2_CACHE_DIR already set is kept. Before tux2 is imported: it reads it then.
os.environ.setdefault("TUX2_CACHE_DIR", os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tux2-tests"))

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
