"""Generated data sets kept on disk (tux2.datacache): a later call loads exactly what the
generator made, a damaged file is generated again and replaced, a changed generator or
other arguments make another file, --no-cache keeps nothing, and the cache stays bounded."""
import importlib.util
import os
import sys

import numpy as np
import pytest

from tests.conftest import run_cli
from tux2 import datacache
from tux2.compile import cache_dir, set_cache_dir
from tux2.datasets import netflix_like
from tux2.graph import BipartiteGraph

CALLS = []


def made(n=500, seed=0):
    """A generator of the kinds the cache keeps: an array and a graph with values."""
    CALLS.append((n, seed))
    rng = np.random.default_rng(seed)
    g = BipartiteGraph(rng.integers(0, 30, n), rng.integers(0, 7, n), rng.random(n), 30, 7, ("u", "i"), "made")
    return rng.normal(size=(n, 3)).astype(np.float32), g


@pytest.fixture
def cache(tmp_path):
    before = cache_dir()
    set_cache_dir(str(tmp_path / "cache"))
    CALLS.clear()
    yield tmp_path / "cache" / "data"
    set_cache_dir(before)


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, BipartiteGraph):
            assert (x.n, x.type_names, x.source) == (y.n, y.type_names, y.source)
            for f in ("src", "dst", "values"):
                assert getattr(x, f).dtype == getattr(y, f).dtype and np.array_equal(getattr(x, f), getattr(y, f))
        else:
            assert x.dtype == y.dtype and np.array_equal(x, y)


def test_a_second_call_loads_what_the_generator_made(cache):
    first = datacache.generated(made, n=500, seed=1)
    assert CALLS == [(500, 1)] and len(os.listdir(cache)) == 1
    again = datacache.generated(made, n=500, seed=1)
    assert CALLS == [(500, 1)]                       # loaded, not generated
    same(first, again)
    same(again, made(n=500, seed=1))


def test_the_built_in_rating_set_comes_back_bit_for_bit(cache):
    params = dict(n_users=300, n_items=40, n_ratings=3000, seed=3)
    datacache.generated(netflix_like, **params)
    same(datacache.generated(netflix_like, **params), netflix_like(**params))


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "foreign"])
def test_a_damaged_file_is_generated_again_and_replaced(cache, damage):
    first = datacache.generated(made, n=800, seed=2)
    [path] = [cache / n for n in os.listdir(cache)]
    data = bytearray(path.read_bytes())
    if damage == "flip":                             # same size, different bytes: only the checksum notices
        for k in range(len(data) // 2, len(data) - 200, 97):
            data[k] ^= 0x5A
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    else:                                            # a valid .npz of other arrays under this name
        with open(path, "wb") as f:
            np.savez(f, kinds=np.array(["a"]))
        data = path.read_bytes()
    path.write_bytes(bytes(data))
    again = datacache.generated(made, n=800, seed=2)
    assert CALLS == [(800, 2), (800, 2)]
    same(first, again)
    datacache.generated(made, n=800, seed=2)
    assert len(CALLS) == 2                           # the replacement is intact


def test_other_arguments_or_a_changed_generator_make_another_set(cache, tmp_path, monkeypatch):
    # the two sources are the same size and may be written in the same second: a .pyc
    # of the first would pass for the second (seen when bytecode is written)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    datacache.generated(made, n=500, seed=1)
    datacache.generated(made, n=500, seed=2)
    assert len(CALLS) == 2 and len(os.listdir(cache)) == 2
    source = tmp_path / "gen_mod.py"
    for scale in (1.0, 2.5):
        source.write_text(f"import numpy as np\n\ndef gen(n=4):\n    return (np.full(n, {scale}),)\n")
        spec = importlib.util.spec_from_file_location("gen_mod", source)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["gen_mod"] = mod
        try:
            (out,) = datacache.generated(mod.gen, n=4)
        finally:
            del sys.modules["gen_mod"]
        assert np.array_equal(out, np.full(4, scale))          # never the other source's set
    assert len([n for n in os.listdir(cache) if n.startswith("gen-")]) == 2



def test_a_generator_rewritten_within_one_clock_tick_makes_another_set(cache, tmp_path, monkeypatch):
    """A module's fingerprint was remembered by its file's (mtime, size); a clock that
    ticks every few ms stamps a module rewritten at once at the same size alike (the
    test above on such a kernel: the set of scale 1.0 came back for 2.5). Made certain
    here by giving the rewritten file the first one's mtime."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)      # a .pyc is keyed on (mtime, size) too
    source = tmp_path / "gen_tick.py"
    outs = []
    for scale in (1.0, 2.5):
        source.write_text(f"import numpy as np\n\ndef gen(n=4):\n    return (np.full(n, {scale}),)\n")
        if outs:
            os.utime(source, ns=(stamp, stamp))
        stamp = os.stat(source).st_mtime_ns
        spec = importlib.util.spec_from_file_location("gen_tick", source)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["gen_tick"] = mod
        try:
            outs.append(datacache.generated(mod.gen, n=4)[0])
        finally:
            del sys.modules["gen_tick"]
    assert outs[0].tolist() == [1.0] * 4 and outs[1].tolist() == [2.5] * 4

def test_the_cache_keeps_the_newest_sets_of_a_generator(cache):
    for seed in range(datacache.KEEP + 3):
        datacache.generated(made, n=50, seed=seed)
    assert len(os.listdir(cache)) == datacache.KEEP
    CALLS.clear()
    datacache.generated(made, n=50, seed=datacache.KEEP + 2)  # the newest is still there
    datacache.generated(made, n=50, seed=0)                   # the oldest is not
    assert CALLS == [(50, 0)]



def test_a_set_just_made_is_kept_though_the_clock_stamps_it_behind_the_others(cache):
    """The prune kept the sets with the latest mtimes as the file system's clock stamped
    them: sets made within one tick of a coarse clock tie (then the name decided which
    went), and a set made now sorted behind sets stamped by a clock that ran ahead, so
    it was deleted as soon as it was stored. Here the KEEP sets there are stamped an
    hour ahead; the set made now must still be one of the KEEP kept."""
    import time
    for seed in range(datacache.KEEP):
        datacache.generated(made, n=50, seed=seed)
    ahead = time.time_ns() + 3600 * 10 ** 9
    for n in os.listdir(cache):
        os.utime(cache / n, ns=(ahead, ahead))
    CALLS.clear()
    datacache.generated(made, n=50, seed=datacache.KEEP)      # made and stored
    datacache.generated(made, n=50, seed=datacache.KEEP)      # loaded: it was kept
    assert CALLS == [(50, datacache.KEEP)]
    assert len(os.listdir(cache)) == datacache.KEEP

def test_no_cache_directory_keeps_nothing(tmp_path):
    before = cache_dir()
    set_cache_dir(None)
    try:
        CALLS.clear()
        datacache.generated(made, n=50, seed=0)
        datacache.generated(made, n=50, seed=0)
        assert len(CALLS) == 2
    finally:
        set_cache_dir(before)


@pytest.mark.slow
def test_the_cli_built_in_set_is_cached_and_no_cache_keeps_none(tmp_path):
    cache = tmp_path / "cache"
    runs = [run_cli("run", "mf", "--epochs", "1", "--k", "8", *flags, env={"TUX2_CACHE_DIR": str(cache)})
            for flags in (["--no-cache"], [], [])]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    rmse = [[line.split("time")[0] for line in r.stdout.splitlines() if line.startswith("epoch")] for r in runs]
    assert rmse[0] == rmse[1] == rmse[2] and rmse[0]
    files = os.listdir(cache / "data")
    assert len(files) == 1 and files[0].startswith("netflix_like-")
    fresh = tmp_path / "fresh"
    assert run_cli("run", "mf", "--epochs", "0", "--no-cache", env={"TUX2_CACHE_DIR": str(fresh)}).returncode == 0
    assert not fresh.exists()
