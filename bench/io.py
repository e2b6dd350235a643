"""Input parsing speed: tux2's edge-list and libsvm parsers vs the pandas C parser and
scikit-learn's svmlight reader, on the same files, in one run.

Files: a HIGGS-shaped table of samples (label and 28 features, CSV), a Netflix-shaped rating list ``user item rating`` (tab separated, ratings with
one decimal), the same ratings in MovieLens' layout ``user item rating timestamp``
(1-based ids; the loaders ignore the fourth column and detect the base), the same
ratings with string ids (``U12,I0345,4.0,874724710``: pandas also numbers the ids, with
``factorize``), and a kdd-shaped libsvm file, written once to the cache. Each reader
runs 3 times after a warm-up read (the file in the page cache, numba compiled); the
best time counts. MB/s is file bytes over seconds. tux2 is timed both as the raw
parser (``tux2.io.read_edge_list``) and as the user-facing loader with the duplicate
check (``tux2.loaders.load_edges``, duplicates='error'). Final line:
{"bench": "io", "tux2_over_pandas_MBps": R, ...} (target R >= 1).
"""
import os
import time

import numpy as np

from bench.common import CACHE, RESULTS, classification_cached, emit, ensure, figure, machine, netflix_cached, report

LOG = "io"


def _best(fn, repeat=3):
    fn()                                      # warm: page cache, numba, imports
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


_LAYOUTS = {     # file name's end, line
    "plain": (".tsv", "{a}\t{b}\t{r:.1f}\n"),
    "timestamps": ("_ts.tsv", "{a1}\t{b1}\t{r:.1f}\t{t}\n"),       # MovieLens: 1-based, a 9-10 digit Unix time
    "strings": ("_strings.csv", "U{a},I{b:04d},{r:.1f},{t}\n")}       # Amazon's, Book-Crossing's: string ids


def ratings_file(n_ratings, layout="plain"):
    """The rating list as ``user item rating`` lines; ``layout`` "timestamps": MovieLens'
    ``user item rating timestamp`` (1-based ids); "strings": string ids,
    ``U12,I0345,4.0,874724710`` (comma-separated, a timestamp the loaders ignore)."""
    tr, _, _ = netflix_cached(max(n_ratings // 50, 1000), max(n_ratings // 500, 200), n_ratings)
    end, line = _LAYOUTS[layout]
    path = os.path.join(CACHE, f"ratings_{n_ratings}{end}")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            for lo in range(0, tr.num_edges, 1 << 20):
                hi = min(lo + (1 << 20), tr.num_edges)
                t = 874724710 + (np.arange(lo, hi) * 7919) % 400_000_000
                f.write("".join(line.format(a=a, b=b, a1=a + 1, b1=b + 1, r=r, t=s) for a, b, r, s in
                                zip(tr.src[lo:hi].tolist(), tr.dst[lo:hi].tolist(), tr.values[lo:hi].tolist(),
                                    t.tolist())))
        os.replace(path + ".tmp", path)
    return path, tr.num_edges


def table_file(rows):
    """A HIGGS-shaped table: a 0/1 label, then 28 features written with 7 significant
    digits, comma-separated, no header."""
    path = os.path.join(CACHE, f"table_{rows}.csv")
    if not os.path.exists(path):
        rng = np.random.default_rng(28)
        with open(path + ".tmp", "w") as f:
            for lo in range(0, rows, 100_000):
                X = rng.normal(size=(min(100_000, rows - lo), 28)) * rng.choice([1.0, 1.0, 1.0, 0.0], size=28)
                y = (X[:, 0] + X[:, 1] > 0).astype(int)
                f.write("".join(f"{a:.6e}," + ",".join(f"{v:.7g}" for v in x) + "\n" for a, x in zip(y, X)))
        os.replace(path + ".tmp", path)
    return path


def main(args):
    quick = getattr(args, "quick", False)
    n = 2_000_000 if quick else 10_000_000
    pd = ensure("pandas")
    from tux2 import io, loaders
    path, edges = ratings_file(n)
    mb = os.path.getsize(path) / 1e6
    info = {"bench": "io", "file": os.path.basename(path), "MB": round(mb, 1), "lines": edges, **machine()}
    emit({**info, "event": "dataset"}, LOG)

    def pandas_read():
        df = pd.read_csv(path, sep="\t", header=None, names=["u", "i", "r"], engine="c",
                         dtype={"u": np.int64, "i": np.int64, "r": np.float64})
        return df["u"].to_numpy(), df["i"].to_numpy(), df["r"].to_numpy()

    t_pd, (pu, pi, pr) = _best(pandas_read)
    t_raw, g = _best(lambda: io.read_edge_list(path))
    t_load, g2 = _best(lambda: loaders.load_edges(path, ids="int", duplicates="error"))
    assert np.array_equal(g.src, pu) and np.array_equal(g.dst, pi) and np.allclose(g.values, pr)
    assert g2.num_edges == g.num_edges
    rows = {"pandas read_csv (C engine)": t_pd, "tux2 io.read_edge_list": t_raw,
            "tux2 loaders.load_edges (duplicate check)": t_load}
    for name, t in rows.items():
        emit({"bench": "io", "format": "edge list", "reader": name, "seconds": t, "MB_per_s": mb / t,
              "lines_per_s": edges / t, "version": pd.__version__ if name.startswith("pandas") else None}, LOG)

    # the MovieLens layout: 4 columns, 1-based ids; pandas reads all four, tux2 skips the fourth unread
    path4, _ = ratings_file(n, "timestamps")
    mb4 = os.path.getsize(path4) / 1e6

    def pandas_read4():
        df = pd.read_csv(path4, sep="\t", header=None, names=["u", "i", "r", "t"], engine="c",
                         dtype={"u": np.int64, "i": np.int64, "r": np.float64, "t": np.int64})
        return df["u"].to_numpy(), df["i"].to_numpy(), df["r"].to_numpy()

    t_pd4, (qu, qi, qr) = _best(pandas_read4)
    t_raw4, g4 = _best(lambda: io.read_edge_list(path4, base="auto"))
    t_load4, _ = _best(lambda: loaders.load_edges(path4, duplicates="error"))
    assert np.array_equal(g4.src, qu - 1) and np.array_equal(g4.dst, qi - 1) and np.allclose(g4.values, qr)
    rows4 = {"pandas read_csv (C engine)": t_pd4, "tux2 io.read_edge_list": t_raw4,
             "tux2 loaders.load_edges (duplicate check)": t_load4}
    for name, t in rows4.items():
        emit({"bench": "io", "format": "edge list, 4 columns", "reader": name, "MB": round(mb4, 1), "seconds": t,
              "MB_per_s": mb4 / t, "lines_per_s": edges / t,
              "version": pd.__version__ if name.startswith("pandas") else None}, LOG)

    # string ids: pandas reads, then numbers each side's ids by first appearance (factorize), as tux2 does
    paths, _ = ratings_file(n, "strings")
    mbs = os.path.getsize(paths) / 1e6

    def pandas_strings():
        df = pd.read_csv(paths, header=None, names=["u", "i", "r", "t"], engine="c",
                         dtype={"u": str, "i": str, "r": np.float64, "t": np.int64})
        return pd.factorize(df["u"]), pd.factorize(df["i"]), df["r"].to_numpy()

    t_pds, ((su, nu), (si, ni), sr) = _best(pandas_strings)
    t_loads, gs = _best(lambda: loaders.load_edges(paths, duplicates="error"))
    assert np.array_equal(gs.src, su) and np.array_equal(gs.dst, si) and np.allclose(gs.values, sr)
    assert gs.ids[0].tokens.tolist() == nu.tolist() and gs.ids[1].tokens.tolist() == ni.tolist()
    for name, t in (("pandas read_csv + factorize", t_pds), ("tux2 loaders.load_edges (string ids)", t_loads)):
        emit({"bench": "io", "format": "edge list, string ids", "reader": name, "MB": round(mbs, 1), "seconds": t,
              "MB_per_s": mbs / t, "lines_per_s": edges / t,
              "version": pd.__version__ if name.startswith("pandas") else None}, LOG)

    # libsvm: sklearn's Cython reader
    g3, y, _, npz = classification_cached(100_000 if quick else 400_000, 100_000 if quick else 500_000, 32)
    from bench.glm import libsvm_cached
    svm = libsvm_cached(g3, y, npz)
    svm_mb = os.path.getsize(svm) / 1e6
    sk = ensure("sklearn", "scikit-learn")
    from sklearn.datasets import load_svmlight_file
    t_sk, _ = _best(lambda: load_svmlight_file(svm), repeat=2)
    t_svm, _ = _best(lambda: io.read_libsvm(svm), repeat=2)
    for name, t in (("sklearn load_svmlight_file", t_sk), ("tux2 io.read_libsvm", t_svm)):
        emit({"bench": "io", "format": "libsvm", "reader": name, "MB": round(svm_mb, 1), "seconds": t,
              "MB_per_s": svm_mb / t, "version": sk.__version__ if name.startswith("sklearn") else None}, LOG)
    # a dense table of samples (HIGGS' layout: label first, 28 features with 7 significant digits)
    table = table_file(200_000 if quick else 1_000_000)
    table_mb = os.path.getsize(table) / 1e6

    def pandas_table():
        return pd.read_csv(table, header=None, engine="c", dtype=np.float64).to_numpy()

    t_pdt, dense = _best(pandas_table, repeat=2)
    t_tab, (gt, yt) = _best(lambda: loaders.load_libsvm(table), repeat=2)
    assert np.array_equal(yt, dense[:, 0]) and np.array_equal(gt.values, dense[:, 1:][dense[:, 1:] != 0])
    for name, t in (("pandas read_csv (C engine)", t_pdt), ("tux2 loaders.load_libsvm (table)", t_tab)):
        emit({"bench": "io", "format": "table", "reader": name, "MB": round(table_mb, 1), "seconds": t,
              "MB_per_s": table_mb / t, "version": pd.__version__ if name.startswith("pandas") else None}, LOG)
    with figure("io", figsize=(7, 4)) as ax:
        if ax is not None:
            bars = [(k, mb / t) for k, t in rows.items()] + [("sklearn load_svmlight_file (libsvm)", svm_mb / t_sk),
                                                            ("tux2 io.read_libsvm (libsvm)", svm_mb / t_svm)]
            ax.barh([b[0] for b in bars], [b[1] for b in bars], color="tab:blue", label="best of 3 (libsvm: 2)")
            ax.set_xlabel("parse throughput (MB/s)")
            ax.set_title(f"Reading a {mb:.0f} MB edge list and a {svm_mb:.0f} MB libsvm file")
            ax.legend()
    report("io", "Peer: parsing, tux2 vs pandas and scikit-learn",
           f"edge list {os.path.basename(path)}: {mb:.0f} MB, {edges:,} lines; libsvm {svm_mb:.0f} MB "
           f"({g3.n_src:,} samples, {g3.num_edges:,} non-zeros)", ["reader", "format", "seconds", "MB/s"],
           [[k, "edge list", t, mb / t] for k, t in rows.items()]
           + [[k, "edge list, 4 columns", t, mb4 / t] for k, t in rows4.items()]
           + [["pandas read_csv + factorize", "edge list, string ids", t_pds, mbs / t_pds],
              ["tux2 loaders.load_edges", "edge list, string ids", t_loads, mbs / t_loads]]
           + [["sklearn load_svmlight_file", "libsvm", t_sk, svm_mb / t_sk],
              ["tux2 io.read_libsvm", "libsvm", t_svm, svm_mb / t_svm],
              ["pandas read_csv (C engine)", "table (HIGGS layout)", t_pdt, table_mb / t_pdt],
              ["tux2 loaders.load_libsvm", "table (HIGGS layout)", t_tab, table_mb / t_tab]],
           peers={"pandas": pd.__version__, "scikit-learn": sk.__version__},
           notes=[f"tux2 / pandas MB/s: **{t_pd / t_raw:.2f}×** (4-column MovieLens layout, {mb4:.0f} MB: "
                  f"**{t_pd4 / t_raw4:.2f}×**; string ids, with the duplicate check, against pandas and "
                  f"factorize: **{t_pds / t_loads:.2f}×**); libsvm tux2 / sklearn: **{t_sk / t_svm:.2f}×**; a "
                  f"{table_mb:.0f} MB table of samples, tux2 / pandas: **{t_pdt / t_tab:.2f}×** (the same numbers)."],
           pngs=[os.path.join(RESULTS, "io.png")])
    emit({"bench": "io", "tux2_over_pandas_MBps": t_pd / t_raw, "loader_over_pandas_MBps": t_pd / t_load,
          "four_columns_tux2_over_pandas_MBps": t_pd4 / t_raw4, "four_columns_loader_over_pandas_MBps": t_pd4 / t_load4,
          "four_columns_tux2_MBps": mb4 / t_raw4, "four_columns_pandas_MBps": mb4 / t_pd4,
          "tux2_MBps": mb / t_raw, "pandas_MBps": mb / t_pd, "libsvm_tux2_over_sklearn_MBps": t_sk / t_svm,
          "string_ids_loader_over_pandas_MBps": t_pds / t_loads,
          "table_tux2_over_pandas_MBps": t_pdt / t_tab, "table_MB": round(table_mb, 1),
          "MB": round(mb, 1), "lines": edges, "pandas_version": pd.__version__, "sklearn_version": sk.__version__},
         LOG)
    return 0
