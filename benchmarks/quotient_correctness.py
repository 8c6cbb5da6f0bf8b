"""Zero false rejects and soundness of `fimlsp.quotient` on standard-library fill-in-the-middle cases.

For each case (random spans and boundary cuts of Sec. VII-A, fixed seed), the true middle is fed one character at
a time: it must never be rejected, and must end `complete` (a false reject otherwise). Then the middle is mutated
(a character deleted, inserted or replaced, a closing bracket dropped or added, a line's indentation changed):
whenever CPython does not compile `left + mutated + right` (`compile`, not only `ast.parse`: `return` outside
a function is invalid), `complete` must be False (a false accept otherwise). The
script also reports how often the quotient alone, before the exact confirmation, would have accepted such a
mutation (the indentation trade-off of Sec. VI-B), and how early invalid mutations are rejected.

    python benchmarks/quotient_correctness.py [--cases N] [--mutations M] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fimlsp import quotient  # noqa: E402
from fimlsp.cases import boundary_cases, random_span_cases  # noqa: E402
from fimlsp.python.syntax import compiles  # noqa: E402
from harness.corpus import MAX_FILE_BYTES, mutate, stdlib_files  # noqa: E402


def feed_by_characters(state, text: str):
    """Feed one character at a time; returns (final state or None, index of the rejected character)."""
    for index, char in enumerate(text):
        state = state.feed(char)
        if state is None:
            return None, index
    return state, len(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000, help="cases of each kind (random span, boundary)")
    parser.add_argument("--mutations", type=int, default=3, help="mutations of each case's middle")
    parser.add_argument("--seed", type=int, default=0, help="seed of the case construction")
    args = parser.parse_args()
    files = stdlib_files()
    print(f"corpus: {len(files)} standard-library files that CPython compiles (<= {MAX_FILE_BYTES} bytes)")
    cases = [("randspan", case) for case in random_span_cases(files, args.seed, args.cases)]
    cases += [("boundary", case) for case in boundary_cases(files, args.seed, args.cases)]
    rng = random.Random(args.seed)
    false_rejects = []
    mutations = false_accepts = quotient_false_accepts = early = 0
    setup_seconds = feed_seconds = fed_chars = 0.0
    started = time.perf_counter()
    for number, (kind, case) in enumerate(cases, 1):
        clock = time.perf_counter()
        state = quotient(case.left, case.right)
        setup_seconds += time.perf_counter() - clock
        if state is None:
            false_rejects.append((kind, case.name, "quotient() returned None", len(case.left)))
            continue
        clock = time.perf_counter()
        final, rejected_at = feed_by_characters(state, case.middle)
        feed_seconds += time.perf_counter() - clock
        fed_chars += len(case.middle)
        if final is None:
            false_rejects.append((kind, case.name, f"rejected at middle[{rejected_at}]", case.middle[:rejected_at + 1]))
        elif not final.complete:
            false_rejects.append((kind, case.name, "not complete at the end", case.middle))
        for _ in range(args.mutations):
            mutated = mutate(case.middle, rng)
            if mutated == case.middle or compiles(case.left + mutated + case.right):
                continue
            mutations += 1
            end, rejected_at = feed_by_characters(state, mutated)
            if end is None:
                early += 1
                continue
            if end.complete:
                false_accepts += 1
            if end.quotient_accepts():
                quotient_false_accepts += 1
        if number % 100 == 0:
            print(f"  {number}/{len(cases)} cases, {len(false_rejects)} false rejects, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    print(f"cases: {len(cases)} ({args.cases} random spans and boundary cuts requested, seed {args.seed})")
    print(f"false rejects: {len(false_rejects)}")
    for kind, name, what, detail in false_rejects[:20]:
        print(f"  {kind} {name}: {what}: {detail!r}")
    print(f"invalid mutations: {mutations}; accepted as complete (false accepts): {false_accepts} "
          f"({100 * false_accepts / max(1, mutations):.2f}%)")
    print(f"  accepted by the quotient alone, before the exact confirmation: {quotient_false_accepts} "
          f"({100 * quotient_false_accepts / max(1, mutations):.2f}%)")
    print(f"  rejected while being fed (early rejection): {early} ({100 * early / max(1, mutations):.1f}%)")
    print(f"time: setup {1e3 * setup_seconds / len(cases):.0f} ms per case, "
          f"feed {1e3 * feed_seconds / max(1, fed_chars):.3f} ms per character")
    return 1 if false_rejects or false_accepts else 0


if __name__ == "__main__":
    sys.exit(main())
