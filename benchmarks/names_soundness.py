"""The name judge never refuses a true middle: standard-library cuts of all four kinds, with `--names strict`.

For each case the true middle is fed a character at a time to the recognizer with the name judge on
(`FimState.judging_names`); it must never be refused and must end `complete`, which then includes the whole file's
pyflakes check (a false refusal otherwise). The corpus
is the standard-library files that compile and in which pyflakes reports no undefined name: where the file itself
loads a name nothing binds, a true middle that loads it is one the judge is meant to refuse. Also reports the
judge's cost: the feed time per character with it and without it, on the same cases (the end's check apart).

    python benchmarks/names_soundness.py [--cases N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.quotient_correctness import feed_by_characters  # noqa: E402
from fimlsp import quotient  # noqa: E402
from fimlsp.cases import boundary_cases, line_cases, node_cases, random_span_cases  # noqa: E402
from fimlsp.python.names import FileNames, undefined_names  # noqa: E402
from harness.corpus import stdlib_files  # noqa: E402


def clean_files() -> list[tuple[str, str]]:
    """Standard-library files that compile and in which pyflakes reports no undefined name."""
    return [(name, text) for name, text in stdlib_files() if undefined_names(text) == set()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500, help="cases of each cut kind")
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    files = clean_files()
    print(f"corpus: {len(files)} standard-library files that compile, with no undefined name (pyflakes)")
    cases = []
    for kind, make in (("randspan", random_span_cases), ("boundary", boundary_cases), ("line", line_cases),
                       ("node", node_cases)):
        cases += [(kind, case) for case in make(files, args.seed, args.cases)]
    refused, relaxed, judged_chars = [], 0, 0
    plain_seconds = judged_seconds = plain_end_seconds = judged_end_seconds = 0.0
    started = time.perf_counter()
    for number, (kind, case) in enumerate(cases, 1):
        state = quotient(case.left, case.right)
        if state is None:
            refused.append((kind, case.name, "quotient() returned None", ""))
            continue
        file = FileNames.of(case.left, case.right)
        relaxed += file.relaxed is not None
        clock = time.perf_counter()
        plain, _ = feed_by_characters(state, case.middle)
        plain_seconds += time.perf_counter() - clock
        clock = time.perf_counter()
        assert plain is not None and plain.complete, case.name  # the recognizer's own promise
        plain_end_seconds += time.perf_counter() - clock
        judging = state.judging_names(file)
        clock = time.perf_counter()
        final, at = feed_by_characters(judging, case.middle)
        judged_seconds += time.perf_counter() - clock
        judged_chars += len(case.middle)
        if final is None:
            refused.append((kind, case.name, f"refused at middle[{at}]", case.middle[max(0, at - 60):at + 1]))
            continue
        clock = time.perf_counter()
        complete = final.complete
        judged_end_seconds += time.perf_counter() - clock
        if not complete:
            refused.append((kind, case.name, "not complete at the end", case.middle[-80:]))
        if number % 200 == 0:
            print(f"  {number}/{len(cases)} cases, {len(refused)} refused, {time.perf_counter() - started:.0f} s",
                  flush=True)
    print(f"cases: {len(cases)} ({args.cases} of each cut kind, seed {args.seed}); judge relaxed in {relaxed}")
    print(f"true middles refused with the name judge on: {len(refused)}")
    for kind, name, what, detail in refused[:30]:
        print(f"  {kind} {name}: {what}: {detail!r}")
    print(f"feed per character: {1e3 * plain_seconds / max(1, judged_chars):.4f} ms without the judge, "
          f"{1e3 * judged_seconds / max(1, judged_chars):.4f} ms with it "
          f"(+{100 * (judged_seconds - plain_seconds) / max(1e-9, plain_seconds):.1f}%)")
    print(f"end check per case: {1e3 * plain_end_seconds / len(cases):.2f} ms without the judge, "
          f"{1e3 * judged_end_seconds / len(cases):.2f} ms with it (pyflakes on the completed file)")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
