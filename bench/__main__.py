"""python -m bench NAME [--quick]"""
import argparse
import sys

EXPERIMENTS = {"mf": "bench.mf", "lda": "bench.lda", "blockpg": "bench.blockpg", "partition": "bench.partition", "distributed": "bench.distributed",
               "glm": "bench.glm", "glm_scaling": "bench.glm_scaling", "io": "bench.io"}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench", description="tux2 benchmarks (JSON lines on stdout)")
    ap.add_argument("name", choices=sorted(EXPERIMENTS) + ["all"])
    ap.add_argument("--quick", action="store_true", help="smaller data, fewer epochs")
    args = ap.parse_args(argv)
    import importlib
    names = sorted(EXPERIMENTS) if args.name == "all" else [args.name]
    rc = 0
    for n in names:
        rc |= importlib.import_module(EXPERIMENTS[n]).main(args) or 0
    return rc


if __name__ == "__main__":
    sys.exit(main())
