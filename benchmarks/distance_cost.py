"""The cost of asking how far a middle is from a valid file, next to feeding it, on standard-library cases.

The true middle of each random-span case is fed in pieces of a model token's typical size; after each piece,
`FimState.distance_bound()` is asked, as constrained decoding does for every accepted candidate. CPU time per
piece, medians and p90, and the ratio of the two medians (measured in the same run).

    python -m benchmarks.distance_cost [--cases N] [--piece CHARS] [--seed S]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.quotient_correctness import stdlib_files
from fimlsp import quotient
from fimlsp.cases import random_span_cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="random-span cases")
    parser.add_argument("--piece", type=int, default=4, help="characters fed at a time")
    parser.add_argument("--seed", type=int, default=3, help="seed of the case construction")
    args = parser.parse_args()
    files = [item for item in stdlib_files() if len(item[1]) < 30_000]
    feeding, asking = [], []
    for case in random_span_cases(files, seed=args.seed, count=args.cases):
        state = quotient(case.left, case.right)
        for start in range(0, len(case.middle), args.piece):
            clock = time.process_time()
            state = state.feed(case.middle[start:start + args.piece])
            fed = time.process_time()
            state.distance_bound()
            feeding.append(fed - clock)
            asking.append(time.process_time() - fed)
    for name, times in (("feed", feeding), ("distance_bound", asking)):
        ordered = sorted(times)
        print(f"{name:<15} median {1e3 * statistics.median(ordered):.4f} ms  "
              f"p90 {1e3 * ordered[int(0.9 * len(ordered))]:.4f} ms  mean {1e3 * statistics.mean(ordered):.4f} ms")
    print(f"{len(feeding)} pieces of {args.piece} characters; distance_bound / feed at the median: "
          f"{statistics.median(asking) / max(statistics.median(feeding), 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
