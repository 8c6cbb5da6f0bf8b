"""Files broken away from the cursor: how often the constraint still applies, and whether its promise holds.

For each standard-library fill-in-the-middle case (random spans, fixed seed), the file is broken away from the
middle so that it no longer parses. `--unit statement` breaks one unrelated top-level statement (not one the
middle touches), one of three ways: an unfinished line inserted before it (`print((`), a stray closing bracket at
its start, or a character deleted from it. `--unit line` breaks one random non-blank line that the middle does
not touch, anywhere (in the cursor's own function or class too): cut short at a random point, a random bracket
inserted, or a character deleted. `--unit nothing` breaks nothing: the file is valid but for the middle, and every
promise must be the whole file's (a region there is a valid file taken for a broken one, issue 33). Then `fimlsp.python.region.constrain` runs on the broken file, and the script
reports:

- the share of cases whose promise is the whole file, a region, or none (unconstrained fallback);
- the share of region promises inside a class or function body, and of those whose cuts are not statement
  boundaries of the repaired file (`is_statement_boundary`) or that the true middle cannot keep (a region chosen
  for another reading of the cursor's line);
- false rejects: the true middle keeps the promise (`Guarantee.kept_by`) but is not accepted under it (`feed`
  rejects it or it never completes);
- soundness: every middle that completes under the promise (the true one and mutations of it) keeps it, and,
  put into the file with the break repaired, parses there whenever the region's cuts are statement boundaries;
- setup time (CPU), and as a ratio to `ast.parse` of the whole file measured in the same run.

`--quick SECONDS` sets how long the whole file is tried first (`region.QUICK_WHOLE_FILE`); 0 makes the regions'
guesses come first wherever they say the file is broken, as a process's first call did while the grammar's
one-time build ran inside that attempt.

    python -m benchmarks.broken_elsewhere [--unit statement|line|nothing] [--cases N] [--mutations M] [--seed S]
        [--quick SECONDS]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from fimlsp.python import region
from fimlsp.python.region import FILE, NONE, REGION
from harness.broken_elsewhere import UNITS, evaluate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--mutations", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--unit", choices=UNITS, default="statement", help="what is broken (default: statement)")
    parser.add_argument("--quick", type=float, default=region.QUICK_WHOLE_FILE, metavar="SECONDS",
                        help="how long the whole file is tried first (default: %(default)s)")
    args = parser.parse_args(argv)
    region.QUICK_WHOLE_FILE = args.quick
    outcome = evaluate(args.cases, args.mutations, args.seed, unit=args.unit)
    total = max(1, outcome.cases)
    what = {"line": "an unrelated random non-blank line", "statement": "an unrelated top-level statement",
            "nothing": "nothing"}[args.unit]
    print(f"{outcome.cases} cases with {what} broken (seed {args.seed}, whole file tried first for {args.quick} s)")
    for scope in (FILE, REGION, NONE):
        count = outcome.scopes[scope]
        print(f"  promise {scope:6}: {count:5} ({100 * count / total:.1f}%)")
    constrained = outcome.scopes[FILE] + outcome.scopes[REGION]
    print(f"  constrained (not the unconstrained fallback): {100 * constrained / total:.1f}%")
    print(f"  region promises inside a class or function body: {outcome.nested}")
    print(f"  region promises whose cuts are not statement boundaries of the repaired file: {outcome.cut_inside}")
    print(f"  region promises that the true middle cannot keep (the cursor's line read another way): "
          f"{outcome.misfits}")
    print(f"  false rejects of the true middle where it keeps the promise: {len(outcome.false_rejects)}")
    for name, scope in outcome.false_rejects[:10]:
        print(f"    {scope}: {name}")
    print(f"  middles completing under the promise: {outcome.checked}; unsound (the promise's text does not parse, "
          f"or with real cuts the repaired file does not): {len(outcome.unsound)}")
    for name, scope, middle in outcome.unsound[:10]:
        print(f"    {scope}: {name}: {middle[:60]!r}")
    if len(outcome.ratios) > 1:
        setups = [1e3 * setup for setup in outcome.setups]
        print(f"  setup (CPU): median {statistics.median(setups):.0f} ms, "
              f"p90 {statistics.quantiles(setups, n=10)[-1]:.0f} ms, max {max(setups):.0f} ms; "
              f"as a ratio to ast.parse of the file: median {statistics.median(outcome.ratios):.1f}x, "
              f"p90 {statistics.quantiles(outcome.ratios, n=10)[-1]:.1f}x")
    valid_taken_for_broken = args.unit == "nothing" and outcome.scopes[REGION]
    return 1 if outcome.false_rejects or outcome.unsound or valid_taken_for_broken else 0


if __name__ == "__main__":
    sys.exit(main())
