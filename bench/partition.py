"""Partitioning: throughput and memory of every strategy, and a λ table on
PowerGraph power-law graphs next to PowerLyra's analytic model, the per-graph
closed form, KaHIP's edge partitioner and Mt-KaHyPar.

Prints JSON lines; writes bench/results/partition.jsonl and partition.md.
Throughput is measured in a fresh subprocess per strategy after a warm-up
(numba compilation excluded); peak memory is the rise of the process's peak
RSS (VmHWM, reset through /proc/self/clear_refs) during the call, compared with
the bytes of the two int64 edge arrays. bicut and aweto need two vertex types:
they run on the bipartite view of the same edges (sources and targets as two
types), so their λ is over 2n vertices and not comparable column for column.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from bench.common import CACHE, RESULTS, emit, figure, machine

LOG = "partition"
HASH_BASED = ("random", "grid", "dbh", "bicut", "hybrid")
STREAMING = ("greedy", "hdrf")


def powerlaw_cached(n, alpha, seed=0):
    from tux2.partitioning.powerlaw import powerlaw_graph
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"powerlaw_in_{n}_{alpha}_{seed}.npz")
    if not os.path.exists(path):
        s, t = powerlaw_graph(n, alpha, in_degree=True, seed=seed)
        np.savez(path + ".tmp.npz", s=s, t=t)
        os.replace(path + ".tmp.npz", path)
    d = np.load(path)
    return d["s"], d["t"], path


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def worker(args):
    """One strategy, one measurement (runs in its own process)."""
    from tux2 import partitioning as P
    d = np.load(args.graph)
    s, t = d["s"], d["t"]
    n = int(max(s.max(), t.max())) + 1
    n_dst = n if P.get(args.strategy).bipartite_only else None
    P.partition(args.strategy, s[:1000], t[:1000], n, n_dst, args.parts)          # compile
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        rss0 = _status("VmRSS")
    except OSError:
        rss0 = None
    t0 = time.perf_counter()
    a = P.partition(args.strategy, s, t, n, n_dst, args.parts)
    secs = time.perf_counter() - t0
    peak = _status("VmHWM") if rss0 is not None else None
    out = {"strategy": args.strategy, "edges": len(s), "seconds": secs, "edges_per_s": len(s) / secs,
           "edge_array_bytes": int(s.nbytes + t.nbytes),
           "peak_extra_bytes": None if peak is None else peak - rss0}
    del a
    print(json.dumps(out))


def measure_throughput(path, parts, strategies):
    rows = []
    for name in strategies:
        r = subprocess.run([sys.executable, "-m", "bench.partition", "--worker", name, "--graph", path,
                            "--parts", str(parts)], capture_output=True, text=True, timeout=1800,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if r.returncode != 0:
            emit({"bench": "partition_throughput", "strategy": name, "error": r.stderr[-400:]}, LOG)
            continue
        rec = json.loads(r.stdout.strip().splitlines()[-1])
        target = 10e6 if name in HASH_BASED else 1e6 if name in STREAMING else None
        rec.update({"bench": "partition_throughput", "parts": parts,
                    "target_edges_per_s": target,
                    "meets_target": None if target is None else rec["edges_per_s"] >= target,
                    "peak_over_edge_arrays": (rec["peak_extra_bytes"] / rec["edge_array_bytes"]
                                              if rec["peak_extra_bytes"] is not None else None)})
        emit(rec, LOG)
        rows.append(rec)
    return rows


def lambda_table(sizes, alphas, parts_list, strategies, peers_n, peer_timeout):
    from tux2 import partitioning as P
    from tux2.partitioning.powerlaw import expected_replication, powerlyra_model
    rows = []
    for n in sizes:
        for alpha in alphas:
            s, t, _ = powerlaw_cached(n, alpha)
            for p in parts_list:
                model = powerlyra_model(n, p, alpha)
                base = {"bench": "partition_lambda", "n": n, "alpha": alpha, "parts": p, "edges": len(s)}
                for name in strategies:
                    bip = P.get(name).bipartite_only
                    a = P.partition(name, s, t, n, n if bip else None, p)
                    q = P.quality(a, s, t, n, n if bip else None)
                    rec = {**base, "strategy": name, "view": "bipartite" if bip else "directed",
                           "replication_factor": q["replication_factor"],
                           "replication_factor_no_master_only": q["replication_factor_no_master_only"],
                           "edge_balance": q["edge_balance"], "seconds": a.seconds}
                    if name in model:
                        rec["powerlyra_model"] = model[name]
                    if name in ("random", "hybrid"):
                        rec["closed_form"] = expected_replication(name, s, t, n, p)
                    elif name == "bicut":
                        fav = 0 if (a.edge_part == a.master[0][s]).all() else 1
                        rec["closed_form"] = expected_replication("bicut", s, t + n, 2 * n, p, n_src=n,
                                                                  favorite=fav)
                    emit(rec, LOG)
                    rows.append(rec)
                if n <= peers_n:
                    rows += run_peers(s, t, n, p, base, peer_timeout)
    return rows


def run_peers(s, t, n, p, base, timeout):
    from tux2 import partitioning as P
    from bench.peers import edgepart
    rows = []
    for peer in ("kahip", "mtkahypar"):
        try:
            version = edgepart.ensure(peer)
            ep, secs = edgepart.run(peer, s, t, n, p, timeout=timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            rec = {**base, "strategy": peer, "skipped": str(e)[:300]}
            emit(rec, LOG)
            rows.append(rec)
            continue
        # masters on a part holding the vertex's edges: λ with = λ without master-only replicas
        a = P.Assignment(ep, (P.Hasher().vertex_part(n, p),), p, peer)
        q = P.quality(a, s, t, n, None)
        rec = {**base, "strategy": peer, "version": version, "view": "directed",
               "replication_factor_no_master_only": q["replication_factor_no_master_only"],
               "edge_balance": q["edge_balance"], "seconds": secs}
        emit(rec, LOG)
        rows.append(rec)
    return rows


def write_markdown(thr, lam, info):
    os.makedirs(RESULTS, exist_ok=True)
    out = [f"## Peer: vertex-cut partitioning vs KaHIP / Mt-KaHyPar ({info['date']}; {info['cpus']} × {info['cpu']}, "
           f"{info['mem_gib']} GiB)", "", "**Data:** PowerGraph-style power-law graphs (Zipf in-degree α), sizes in "
           "the tables; peer versions beside their names.", ""]
    if thr:
        out += [f"### Throughput and memory ({thr[0]['edges']:,} edges, p = {thr[0]['parts']}, 1 core)", "",
                "| strategy | M edges/s | target | peak extra memory / edge arrays |", "|---|---|---|---|"]
        for r in thr:
            tgt = f"≥ {r['target_edges_per_s'] / 1e6:.0f} M" if r["target_edges_per_s"] else "–"
            pk = f"{r['peak_over_edge_arrays']:.2f}×" if r["peak_over_edge_arrays"] is not None else "n/a"
            out.append(f"| {r['strategy']} | {r['edges_per_s'] / 1e6:.1f} | {tgt} | {pk} |")
        out.append("")
    groups = {}
    for r in lam:
        groups.setdefault((r["n"], r["alpha"], r["parts"], r["edges"]), []).append(r)
    out += ["### Replication factor λ on power-law graphs (Zipf in-degree)", "",
            "λ counts master-only replicas (PowerGraph); λ′ does not (KaHIP / Mt-KaHyPar count λ′). "
            "`model` = PowerLyra's analytic Table 1 at this n; `closed form` = the per-graph expectation "
            "(partitioning.md §2.3). bicut/aweto: bipartite view (2n vertices).", "",
            "| n | α | p | edges | strategy | λ | λ′ | model | closed form | edge balance | s |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (n, alpha, p, m), rs in groups.items():
        for r in rs:
            if "skipped" in r:
                out.append(f"| {n:,} | {alpha} | {p} | {m:,} | {r['strategy']} | skipped: {r['skipped'][:60]} |"
                           " | | | | |")
                continue
            f = lambda k, d=3: f"{r[k]:.{d}f}" if r.get(k) is not None else "–"  # noqa: E731
            name = r["strategy"] + (f" {r['version']}" if "version" in r else "")
            out.append(f"| {n:,} | {alpha} | {p} | {m:,} | {name} | {f('replication_factor')} | "
                       f"{f('replication_factor_no_master_only')} | {f('powerlyra_model')} | {f('closed_form')} | "
                       f"{f('edge_balance')} | {f('seconds', 2)} |")
    png = plot(lam)
    if png:
        out += ["", f"![partition]({os.path.basename(png)})"]
    with open(os.path.join(RESULTS, "partition.md"), "w") as fh:
        fh.write("\n".join(out) + "\n")


def plot(lam):
    """λ vs α per strategy at the largest graph and p, one line each (peers included)."""
    ok = [r for r in lam if "skipped" not in r and r.get("replication_factor") is not None]
    if not ok:
        return None
    n, p = max(r["n"] for r in ok), max(r["parts"] for r in ok)
    sel = [r for r in ok if r["n"] == n and r["parts"] == p]
    with figure("partition", figsize=(7, 4.5)) as ax:
        if ax is None:
            return None
        for s in sorted({r["strategy"] for r in sel}):
            rs = sorted((r for r in sel if r["strategy"] == s), key=lambda r: r["alpha"])
            key = "replication_factor_no_master_only" if s in ("kahip", "mtkahypar") else "replication_factor"
            ax.plot([r["alpha"] for r in rs], [r[key] for r in rs], marker="o", label=s + (" (λ′)" if
                    key != "replication_factor" else ""))
        ax.set_xlabel("Zipf exponent α of the in-degree")
        ax.set_ylabel("replication factor λ (replicas per vertex)")
        ax.set_title(f"n = {n:,} vertices, p = {p}")
        ax.legend(fontsize=7, ncol=2)
    return os.path.join(RESULTS, "partition.png")


def main(args):
    from tux2 import partitioning as P
    quick = getattr(args, "quick", False)
    info = {**machine(), "date": time.strftime("%Y-%m-%d")}
    strategies = P.available()
    n_thr = 200_000 if quick else 1_000_000
    _, _, path = powerlaw_cached(n_thr, 2.0)
    thr = measure_throughput(path, 48, strategies)
    sizes = [100_000] if quick else [1_000_000]
    peers_n = 10_000 if quick else 30_000
    lam = lambda_table(sizes, (1.8, 2.0, 2.2), (16, 48), strategies, peers_n=0, peer_timeout=0)
    lam += lambda_table([peers_n], (1.8, 2.0, 2.2), (16, 48), strategies, peers_n=peers_n,
                        peer_timeout=600 if quick else 1800)
    write_markdown(thr, lam, info)
    ok_thr = all(r["meets_target"] is not False for r in thr)
    ok_mem = all((r["peak_over_edge_arrays"] or 0) <= 3 for r in thr)
    emit({"bench": "partition", "throughput_targets_met": ok_thr, "memory_target_met": ok_mem,
          "markdown": os.path.join(RESULTS, "partition.md"), **info}, LOG)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--graph")
    ap.add_argument("--parts", type=int)
    a = ap.parse_args()
    if a.worker:
        worker(argparse.Namespace(strategy=a.worker, graph=a.graph, parts=a.parts))
