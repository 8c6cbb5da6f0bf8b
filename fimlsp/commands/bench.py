"""Measure the constraint alone, without a model: one-time setup and per-token feed cost against context size.

Runs on the same cases as `fimlsp eval` (PATHs, `--heldout-of`, or a case file from `fimlsp eval --dump-cases`).
For each case it times `ast.parse` of the whole file, the constraint's one-time setup (right-context quotient,
then the left context), and `feed` of the true middle in 3-4 character pieces, and prints medians, fitted lines
and ratios to the same file's `ast.parse` time measured in the same run, so the figures hold on a noisy machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fimlsp.commands.eval import add_dataset_arguments, cases_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dataset_arguments(parser)
    group = parser.add_argument_group("output")
    group.add_argument("--json", type=Path, metavar="FILE", help="also write every case's timings as JSON lines")
    group.add_argument("--plot", type=Path, metavar="PNG", help="write a figure of the timings against context size")
    group.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                       help="CPU time of this process (robust on a shared machine) or elapsed time (default: cpu)")
    group.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from fimlsp.evaluation import bench

    cases = cases_from_args(args)
    if cases is None:
        return 0
    startup_ms = bench.start_up(args.clock)
    rows = bench.run(cases, seed=args.seed or 0, progress=not args.no_progress, clock=args.clock)
    print(f"{args.clock} time")
    print(f"start-up, once a process before the first case (the grammar's tables): {startup_ms:.1f} ms")
    print(bench.summarize(rows))
    if args.json is not None:
        bench.write_rows(rows, args.json)
    if args.plot is not None:
        print(f"figure: {bench.plot(rows, args.plot)}")
    return 0
