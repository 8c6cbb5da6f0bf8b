"""What the document's place costs the judges (issues 49 and 45): the name judge (and, with `--calls`, the call
judge) given the file's path and project against the same judges given none, on held-out cuts of installed
packages, next to the recognizer's setup that every constrained completion pays (the reference, measured in the
same run on the same cuts).

Per cut, the judges' work of one completion: their setup (`Language.judging_names`, `judging_calls`), the true middle
fed character by character, the end's verdict (`complete`) and the whole middle's (`binds_names`). Cuts are line
cuts and every module-level `from ... import` line's names (where the place adds the most work: the imported
module is read), each timed without and with the place in alternating order, the least of `--repeats` runs; the
first completion of the project (nothing read yet) is reported apart.

    python -m benchmarks.workspace_judges --package starlette --cuts 120
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import time
from pathlib import Path

from fimlsp.cases import line_cases
from fimlsp.language import named
from harness.corpus import package_files
from harness.imports import import_cuts

PYTHON = named("python")


def judged(case, place: tuple, calls: bool) -> tuple[float, bool]:
    """Seconds of the judges' work on the case's true middle, and whether they accepted it."""
    guarantee = PYTHON.constrain(case.left, case.right)
    clock = time.perf_counter()
    guarantee, _reason = PYTHON.judging_names(guarantee, case.left, case.right, *place)
    if calls:
        guarantee, _source = PYTHON.judging_calls(guarantee, case.left, case.right, *place)
    state = guarantee.state
    for char in case.middle:
        state = state.feed(char) if state is not None else None
    accepted = state is not None and state.complete and PYTHON.binds_names(case.left, case.middle, case.right, *place)
    return time.perf_counter() - clock, accepted


def setup_seconds(case) -> float:
    clock = time.perf_counter()
    PYTHON.constrain(case.left, case.right)
    return time.perf_counter() - clock


def quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="starlette")
    parser.add_argument("--cuts", type=int, default=120, help="line cuts and import cuts, half each")
    parser.add_argument("--calls", action="store_true", help="the call judge too")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--repeats", type=int, default=3, help="each timing the least of this many (a loaded "
                                                                 "machine's noise only adds)")
    args = parser.parse_args()
    files = package_files(args.package)
    if not files:
        raise SystemExit(f"{args.package} is not installed")
    project = str(Path(files[0][0]).parents[1])
    imports = import_cuts(files)
    random.Random(args.seed).shuffle(imports)
    lines = list(line_cases(files, args.seed, args.cuts // 2))
    cases = lines + imports[:args.cuts - len(lines)]
    importlib.import_module("fimlsp.workspace")  # the server and the CLI have imported it before any completion

    judged(cases[-1], (None, None), args.calls)  # what every completion loads once (pyflakes), outside the place
    first_without, _ = judged(cases[0], (None, None), args.calls)
    first, _ = judged(cases[0], (cases[0].name, project), args.calls)
    without, with_place, added, setups, refused = [], [], [], [], 0
    for index, case in enumerate(cases):
        place = (case.name, project)
        order = [(None, None), place] if index % 2 else [place, (None, None)]
        seconds = {}
        for each in order:
            runs = [judged(case, each, args.calls) for _ in range(args.repeats)]
            seconds[each] = min(spent for spent, _accepted in runs)
            refused += not runs[0][1]
        without.append(seconds[(None, None)])
        with_place.append(seconds[place])
        added.append(seconds[place] - seconds[(None, None)])
        setups.append(min(setup_seconds(case) for _ in range(args.repeats)))
    setup_median, setup_p95 = quantiles(setups)
    print(f"{args.package}: {len(cases)} cuts ({len(lines)} line cuts, the rest from-import names), judges: "
          f"names{' and calls' if args.calls else ''}; true middles refused: {refused}")
    print(f"first completion in the project (its modules not read yet): {1e3 * first:.1f} ms with the place, "
          f"{1e3 * first_without:.1f} ms without")
    for label, values in (("judges without the place", without), ("judges with the place", with_place),
                          ("added by the place", added), ("reference: the recognizer's setup", setups)):
        median, p95 = quantiles(values)
        print(f"{label:36} median {1e3 * median:7.2f} ms ({median / setup_median:5.2f} x setup)   "
              f"p95 {1e3 * p95:7.2f} ms ({p95 / setup_p95:5.2f} x setup p95)")


if __name__ == "__main__":
    main()
