"""One-time and per-token cost of `fimlsp.quotient` on standard-library cases, next to `ast.parse`.

For each random-span case: the one-time setup `quotient(left, right)` (split into the right context's quotient
grammar and feeding the left context), and the per-token cost of `feed` with model-sized pieces of 3-4
characters of the true middle. The same machine's `ast.parse` of the whole file, timed in the same run, gives a
scale that holds on a noisy machine.

    python benchmarks/quotient_bench.py [--cases N] [--seed S]
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import sys
import time

from benchmarks.quotient_correctness import stdlib_files
from fimlsp.cases import random_span_cases
from fimlsp.python.quotient import RightContext


def pieces(text: str, rng: random.Random) -> list[str]:
    result, index = [], 0
    while index < len(text):
        size = rng.choice((3, 4))
        result.append(text[index:index + size])
        index += size
    return result


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a x + b."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    variance = sum((x - mean_x) ** 2 for x in xs) or 1.0
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / variance
    return slope, mean_y - slope * mean_x


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="random-span cases to time")
    parser.add_argument("--seed", type=int, default=1, help="seed of the case construction")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows = []
    feed_times: list[float] = []
    for case in random_span_cases(stdlib_files(), args.seed, args.cases):
        source = case.left + case.middle + case.right
        clock = time.perf_counter()
        ast.parse(source)
        parse_time = time.perf_counter() - clock
        clock = time.perf_counter()
        context = RightContext(case.right)
        right_time = time.perf_counter() - clock
        clock = time.perf_counter()
        state = context.start(case.left)
        left_time = time.perf_counter() - clock
        if state is None:
            print(f"rejected: {case.name}", file=sys.stderr)
            continue
        for piece in pieces(case.middle, rng):
            clock = time.perf_counter()
            next_state = state.feed(piece)
            feed_times.append(time.perf_counter() - clock)
            if next_state is None:
                break
            state = next_state
        rows.append((len(case.left), len(case.right), right_time, left_time, parse_time, len(source)))
    contexts = [left + right for left, right, *_ in rows]
    setups = [right_time + left_time for _, _, right_time, left_time, _, _ in rows]
    per_thousand = [1e6 * setup / max(1, context) for setup, context in zip(setups, contexts)]
    parse_per_thousand = [1e6 * row[4] / row[5] for row in rows]
    right_per_thousand = [1e6 * row[2] / max(1, row[1]) for row in rows]
    left_per_thousand = [1e6 * row[3] / max(1, row[0]) for row in rows]
    slope, intercept = fit([float(c) for c in contexts], [1e3 * s for s in setups])
    feed_ms = sorted(1e3 * t for t in feed_times)
    print(f"cases: {len(rows)} random spans of standard-library files (seed {args.seed})")
    print(f"context size: median {statistics.median(contexts):.0f} chars, max {max(contexts)}")
    print(f"one-time setup: median {1e3 * statistics.median(setups):.0f} ms; "
          f"median {statistics.median(per_thousand):.1f} ms per 1,000 context chars "
          f"(right context {statistics.median(right_per_thousand):.1f}, left {statistics.median(left_per_thousand):.1f} "
          f"ms per 1,000 of their chars); fit: {slope * 1e3:.1f} ms per 1,000 chars + {intercept:.0f} ms")
    print(f"per token (3-4 chars): median {statistics.median(feed_ms):.3f} ms, "
          f"p90 {feed_ms[int(0.9 * len(feed_ms))]:.3f} ms over {len(feed_ms)} tokens")
    print(f"reference: ast.parse of the whole file, median {statistics.median(parse_per_thousand):.2f} ms per 1,000 "
          f"chars; setup costs {statistics.median(per_thousand) / statistics.median(parse_per_thousand):.0f}x that")
    return 0


if __name__ == "__main__":
    sys.exit(main())
