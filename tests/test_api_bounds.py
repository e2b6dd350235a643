"""The Python API's bounds: what the command line refuses when parsed, ``fit``
refuses with a clear exception, before any layout (a huge value used to hang in it)."""
import subprocess
import sys

import pytest

PROGRAM = """
import tux2
from tux2.datasets import netflix_like
train, _ = netflix_like(n_users=200, n_items=50, n_ratings=2000, seed=0)
try:
    tux2.MF(epochs=1, k=4).fit(train, partitions={value})
except Exception as e:
    print(type(e).__name__, e)
"""


@pytest.mark.parametrize("value, expect", [
    ("10**9", "Tux2Error partitions must be a whole number from 1 to 1048576, got 1000000000"),
    ("2.5", "Tux2Error partitions must be a whole number from 1 to 1048576, got 2.5"),
    ("True", "Tux2Error partitions must be a whole number from 1 to 1048576, got True"),
    ("0", "Tux2Error partitions must be a whole number from 1 to 1048576, got 0"),
    ("5000", "Tux2Error --partitions 5000 for 1795 edges: some partitions would be empty"),
])
def test_fit_refuses_partitions_out_of_bounds(value, expect):
    r = subprocess.run([sys.executable, "-c", PROGRAM.format(value=value)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(expect), r.stdout + r.stderr
