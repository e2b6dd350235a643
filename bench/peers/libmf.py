"""LibMF, built from its PyPI sdist with AVX (reference/baselines.md), driven by ctypes.

Run as a module in a subprocess so LibMF's per-iteration stdout can be read:
    python -m bench.peers.libmf --so LIB --data NPZ --epochs N --k 50 [--threads T] [--verbose]
prints one JSON line with the training seconds (and per-iteration RMSEs if --verbose).
"""
import argparse
import ctypes
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

from bench.common import CACHE

VERSION = "0.9.2"


class MFParam(ctypes.Structure):
    _fields_ = [("fun", ctypes.c_int), ("k", ctypes.c_int), ("nr_threads", ctypes.c_int),
                ("nr_bins", ctypes.c_int), ("nr_iters", ctypes.c_int), ("lambda_p1", ctypes.c_float),
                ("lambda_p2", ctypes.c_float), ("lambda_q1", ctypes.c_float), ("lambda_q2", ctypes.c_float),
                ("eta", ctypes.c_float), ("do_nmf", ctypes.c_bool), ("quiet", ctypes.c_bool),
                ("copy_data", ctypes.c_bool)]


class MFModel(ctypes.Structure):
    _fields_ = [("fun", ctypes.c_int), ("m", ctypes.c_int), ("n", ctypes.c_int), ("k", ctypes.c_int),
                ("b", ctypes.c_float), ("P", ctypes.POINTER(ctypes.c_float)), ("Q", ctypes.POINTER(ctypes.c_float))]


def build():
    """Return the path of libmf_avx.so, building it from the PyPI sdist if needed.
    Raises RuntimeError (reported as 'skipped') when it cannot be had."""
    out = os.path.join(CACHE, f"libmf-{VERSION}", "libmf_avx.so")
    if os.path.exists(out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            f"libmf=={VERSION}", "-d", tmp], capture_output=True, text=True)
        sdists = glob.glob(os.path.join(tmp, "libmf-*.tar.gz"))
        if r.returncode != 0 or not sdists:
            raise RuntimeError(f"pip download libmf=={VERSION} failed: {r.stderr.strip()[-300:]}")
        with tarfile.open(sdists[0]) as tf:
            tf.extractall(tmp)
        src = glob.glob(os.path.join(tmp, "libmf-*", "src_cpp"))[0]
        cmd = ["g++", "-O3", "-march=native", "-mavx", "-DUSEAVX", "-DUSEOMP", "-fopenmp", "-shared", "-fPIC",
               "-std=c++11", os.path.join(src, "libmf_interface.cpp"), os.path.join(src, "mf.cpp"),
               "-o", out + ".tmp"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"building LibMF failed: {r.stderr.strip()[-500:]}")
        os.replace(out + ".tmp", out)
    return out


def _triples(u, i, r):
    return np.ascontiguousarray(np.column_stack([u, i, r]).astype(np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--so", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--reg", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    lib = ctypes.CDLL(a.so)
    d = np.load(a.data)
    X, V = _triples(d["tr_u"], d["tr_i"], d["tr_r"]), _triples(d["te_u"], d["te_i"], d["te_r"])
    p = MFParam(0, a.k, a.threads, max(26, 2 * a.threads + 1), a.epochs, 0.0, a.reg, 0.0, a.reg, a.eta, False, not a.verbose, True)
    fp = ctypes.POINTER(ctypes.c_float)
    lib.train_valid_interface.restype = ctypes.POINTER(MFModel)
    lib.train_valid_interface.argtypes = (ctypes.c_int, ctypes.c_int, fp, fp, ctypes.POINTER(MFParam))
    sys.stdout.flush()
    t = time.perf_counter()
    model = lib.train_valid_interface(len(X), len(V), X.ctypes.data_as(fp), V.ctypes.data_as(fp), ctypes.byref(p))
    seconds = time.perf_counter() - t
    m = model.contents
    P = np.ctypeslib.as_array(m.P, shape=(m.m * m.k,)).reshape(m.m, m.k)[:, :a.k]
    Q = np.ctypeslib.as_array(m.Q, shape=(m.n * m.k,)).reshape(m.n, m.k)[:, :a.k]
    u, i, r = d["te_u"], d["te_i"], d["te_r"]
    ok = (u < m.m) & (i < m.n)
    pred = np.full(len(r), m.b, np.float64)
    pred[ok] = np.einsum("ij,ij->i", P[u[ok]], Q[i[ok]])
    rmse = float(np.sqrt(np.mean((r - pred) ** 2)))
    sys.stdout.flush()
    print("RESULT " + json.dumps({"seconds": seconds, "test_rmse": rmse}), flush=True)


if __name__ == "__main__":
    main()
