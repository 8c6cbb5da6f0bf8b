"""One-time and per-token cost of `fimlsp.quotient` on standard-library cases, next to `ast.parse`.

A thin wrapper over `fimlsp.evaluation.bench` (the logic of `fimlsp bench`) on random-span cases of the running
Python's standard library; `fimlsp bench PATH... | --cases FILE` runs the same measurement on any corpus or on
the case file of an evaluation.

    python -m benchmarks.quotient_bench [--cases N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys

from fimlsp.evaluation import bench
from fimlsp.evaluation.dataset import build_cases
from harness.corpus import stdlib_files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="random-span cases to time")
    parser.add_argument("--seed", type=int, default=1, help="seed of the case construction")
    args = parser.parse_args()
    cases = build_cases(stdlib_files(), "randspan", args.seed, files_limit=args.cases)
    print(f"random spans of standard-library files (seed {args.seed})")
    print(bench.summarize(bench.run(cases, seed=args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
