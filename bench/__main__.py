"""python -m bench NAME [--quick]"""
import argparse
import os
import sys

EXPERIMENTS = {   # name: (module, what it measures); `all` runs them in this order
    "layout": ("bench.layout", "Fig. 8: array vs hash-table layout, MF / LDA / BlockPG"),
    "heterogeneity": ("bench.heterogeneity", "Fig. 9: homogeneous vs typed vs master/mirror vertex data, BlockPG"),
    "slack": ("bench.slack", "Fig. 10–11: slack 0…16, time to a common objective with breakdown, MF / BlockPG"),
    "straggler": ("bench.straggler", "one of 2 workers slowed 1.5× / 3×, slack 0…8: time to a common objective, "
                  "staleness histograms, MF / BlockPG"),
    "minibatch": ("bench.minibatch", "Fig. 12: mini-batch size, objective vs time, MF / BlockPG"),
    "gas": ("bench.gas", "Fig. 13: MEGA vs GAS formulations of MF"),
    "ps": ("bench.ps", "Fig. 14: tux2 vs a parameter-server implementation of MF"),
    "balance": ("bench.balance", "Fig. 15: mini-batch balance, vertex-cut vs edge-cut, BlockPG"),
    "setup": ("bench.setup", "before the first epoch: parse, partition, layout, compile vs np.argsort and peers"),
    "growth": ("bench.growth", "cost growth: MF time and memory per epoch, 10^5 → 10^8 edges"),
    "mf": ("bench.mf", "peer: MF vs LibMF"),
    "als": ("bench.als", "peer: ALS vs Spark MLlib (explicit) and implicit (implicit feedback)"),
    "als_confidence": ("bench.als_confidence", "implicit ALS: linear vs log confidence, play counts and events, "
                       "vs implicit"),
    "lda": ("bench.lda", "peer: LDA vs tomotopy"),
    "lda_threads": ("bench.lda_threads", "LDA in tiles on 1, 2 threads and 2 workers vs untiled, at equal quality"),
    "blockpg": ("bench.blockpg", "peer: BlockPG vs liblinear"),
    "blockpg_text": ("bench.blockpg_text", "BlockPG on text-like data: epochs to 1e-4 of liblinear's optimum"),
    "glm": ("bench.glm", "peer: GLM strategies vs scikit-learn and Spark MLlib"),
    "glm_scaling": ("bench.glm_scaling", "ColumnSGD Fig. 10: per-step time vs model size"),
    "glm_floor": ("bench.glm_floor", "GLM on one core: tux2's Adam and AdaGrad vs the same loops written by hand"),
    "partition": ("bench.partition", "peer: partitioners vs KaHIP / Mt-KaHyPar, replication factors"),
    "distributed": ("bench.distributed", "2 workers vs 1, bytes vs minimum"),
    "io": ("bench.io", "peer: parsing vs pandas / scikit-learn"),
}


def run_all(quick, names):
    """Each experiment in its own process (a crash or a leak stays there), timed;
    then results/all.md and the results section of bench/README.md."""
    import json
    import subprocess
    import time
    from bench.common import emit, machine, report
    times, codes = {}, {}
    t_all = time.perf_counter()
    for n in names:
        t = time.perf_counter()
        codes[n] = subprocess.call([sys.executable, "-m", "bench", n] + (["--quick"] if quick else []),
                                   cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        times[n] = time.perf_counter() - t
        print(json.dumps({"bench": "all", "experiment": n, "seconds": round(times[n], 1), "rc": codes[n]}),
              file=sys.stderr, flush=True)
    total = time.perf_counter() - t_all
    report("all", f"`python -m bench all{' --quick' if quick else ''}`: {total / 60:.1f} minutes",
           "each experiment's own table below (datasets cached and peers installed before: a first run "
           "also generates and installs them)", ["experiment", "what", "seconds", "exit code"],
           [[n, EXPERIMENTS[n][1], round(times[n], 1), codes[n]] for n in names])
    readme_results(names)
    emit({"bench": "all", "quick": quick, "minutes": total / 60, "experiments": {n: round(times[n], 1) for n in names},
          "failed": [n for n in names if codes[n]], **machine()}, "all")
    return 1 if any(codes.values()) else 0


BEGIN, END = "<!-- results: begin (python -m bench all writes this) -->", "<!-- results: end -->"


def readme_results(names):
    """Copy results/all.md and every experiment's results/NAME.md into bench/README.md."""
    from bench.common import RESULTS
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "README.md")
    text = open(path).read()
    if BEGIN not in text:
        text = text.rstrip() + "\n\n# Latest results\n\n" + BEGIN + "\n" + END + "\n"
    parts = []
    for n in ["all"] + list(names):
        md = os.path.join(RESULTS, f"{n}.md")
        if os.path.exists(md):
            body = open(md).read().rstrip()
            parts.append(body.replace("](", "](results/") if "](results/" not in body else body)
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n\n*Copied from bench/results/ by the last `bench all`; the plots it links are "
                "written there by the run (not committed).*\n\n" + "\n\n".join(parts) + "\n\n" + END + tail)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench", description="tux2 benchmarks (JSON lines on stdout; "
                                 "JSON lines, a markdown table and plots under bench/results/)",
                                 epilog="\n".join(f"{n}: {w}" for n, (_, w) in EXPERIMENTS.items()),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=list(EXPERIMENTS) + ["all"])
    ap.add_argument("--quick", action="store_true", help="smaller data, fewer epochs (all: <= 20 minutes)")
    args = ap.parse_args(argv)
    if args.name == "all":
        return run_all(args.quick, list(EXPERIMENTS))
    import importlib
    return importlib.import_module(EXPERIMENTS[args.name][0]).main(args) or 0


if __name__ == "__main__":
    sys.exit(main())
