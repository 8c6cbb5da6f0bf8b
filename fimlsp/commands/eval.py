"""Measure how much the constraint helps and what it costs: run FIM cases of a corpus in each decoding mode.

Cases are built from PATHs (Python files or directories; files that the running Python does not compile are
skipped), from a model's held-out files (`--heldout-of MODEL_DIR`, read from its corpus.json; `--heldout-label
stdlib` keeps the standard library's), or read from a case file (`--cases`). `--cuts randspan` deletes, at a
point uniform in the first 90% of the file, min(100 chars, 20% of the file) or to the end; `--cuts boundary`
removes the text between two tokens at the same indentation level plus a random part of the first token; `--cuts
line` the rest of a line or one to three whole lines; `--cuts node` one syntax node (an expression, a call's
arguments, a statement or a block). Several may be given (`--cuts randspan,boundary`). Cases are deterministic
for `--seed` and do not depend on the order of files on disk; `--dump-cases FILE` writes them as JSON lines and
exits, for other tools (and `fimlsp bench`).

Each case runs in each mode (`unconstrained`, `checked`, `constrained`) with the same model and prompt, greedy.
Results go to `--out` as JSON lines as they finish; running the same command again resumes. At the end (or with
`--report FILE` alone) it prints the contingency tables of Tables I-II of the paper, each mode's validity rate,
the fitted timing lines, and writes the timing figure (the analogue of Fig. 11) next to the results as a PNG.

Example: the shipped model on its held-out standard-library files (15 in its manifest, so 17 draws per file give
about 250 cases of each kind); `fimlsp eval --report runs/eval.jsonl` prints the tables again:

    fimlsp eval --heldout-of fimlsp/weights/default --heldout-label stdlib --cuts randspan,boundary \\
        --per-file 17 --max-tokens 128 --out runs/eval.jsonl --workers 2
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fimlsp import settings
from fimlsp.evaluation.dataset import KINDS as KIND_NAMES
from fimlsp.evaluation.runner import DECODING, RunSettings
from fimlsp.evaluation.runner import MODES as MODE_NAMES

SETTINGS = (*settings.offered_by("eval"), *DECODING)  # the model's, and the decoding options a run records


def _list_of(choices: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        unknown = [item for item in items if item not in choices]
        if not items or unknown:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(choices)}, got {text!r}")
        return list(dict.fromkeys(items))
    return parse


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cases")
    group.add_argument("paths", nargs="*", metavar="PATH", help="Python files or directories to draw cases from")
    group.add_argument("--cuts", type=_list_of(KIND_NAMES), default=None,
                       help=f"comma-separated cut kinds of {', '.join(KIND_NAMES)} "
                            "(default: randspan; with --cases: all in the file)")
    group.add_argument("--files", type=_positive, help="use the first N files (in the seed's order) that give a case")
    group.add_argument("--per-file", type=_positive, help="cases drawn per file (default: 1)")
    group.add_argument("--seed", type=int, help="seed of the case construction (default: 0)")
    group.add_argument("--max-file-chars", type=_positive, help="skip files longer than this")
    group.add_argument("--heldout-of", type=Path, metavar="MODEL_DIR",
                       help="use the held-out files recorded in MODEL_DIR/corpus.json (those unchanged here)")
    group.add_argument("--heldout-label", action="append", default=[], metavar="LABEL",
                       help="with --heldout-of: keep only files under this root label, e.g. stdlib (repeatable)")
    group.add_argument("--cases", type=Path, metavar="FILE", help="read the cases from a case file instead")
    group.add_argument("--dump-cases", type=Path, metavar="FILE", help="write the cases to FILE as JSON lines and exit")


def cases_from_args(args: argparse.Namespace, *, quiet: bool = False) -> list:
    """The cases the dataset arguments ask for; writes them and returns None when --dump-cases is given."""
    from fimlsp.cli import UserError
    from fimlsp.evaluation import dataset

    if args.cases is not None:
        if args.paths or args.heldout_of:
            raise UserError("give either --cases or PATHs/--heldout-of, not both")
        given = [option for option, value in (("--files", args.files), ("--per-file", args.per_file),
                                               ("--seed", args.seed), ("--max-file-chars", args.max_file_chars))
                 if value is not None]
        if given:
            raise UserError(f"{', '.join(given)} shape how cases are built, not cases read with --cases")
        try:
            cases = dataset.load_cases(args.cases)
        except OSError as error:
            raise UserError(f"cannot read {args.cases}: {error.strerror}") from None
        except ValueError as error:
            raise UserError(str(error)) from None
        if args.cuts:
            cases = [case for case in cases if case.kind in args.cuts]
    else:
        if not args.paths and args.heldout_of is None:
            raise UserError("give PATHs, --heldout-of MODEL_DIR or --cases FILE")
        if args.heldout_label and args.heldout_of is None:
            raise UserError("--heldout-label needs --heldout-of")
        files: list[tuple[str, str]] = []
        locations: dict[str, dataset.Location] = {}
        try:
            if args.paths:
                found, skipped = dataset.discover(args.paths, args.max_file_chars)
                files += found
                locations.update(dataset.locate(args.paths))
                if not quiet and any(skipped.values()):
                    print(f"skipped files: {', '.join(f'{n} {why}' for why, n in skipped.items() if n)}")
            if args.heldout_of is not None:
                named, missing = dataset.heldout_files(args.heldout_of, args.heldout_label)
                files += dataset.read_named(named, args.max_file_chars)
                locations.update((name, dataset.Location(str(Path(path).resolve()))) for name, path in named)
                if not quiet and missing:
                    print(f"{missing} held-out files of {args.heldout_of} are missing or changed here and were skipped")
        except FileNotFoundError as error:
            raise UserError(str(error)) from None
        files = sorted(dict(files).items())
        if not files:
            raise UserError("no Python file that the running Python compiles was found")
        cases = []
        args.cuts = args.cuts or ["randspan"]
        args.seed = 0 if args.seed is None else args.seed
        args.per_file = args.per_file or 1
        for kind in args.cuts:
            cases += dataset.build_cases(files, kind, args.seed, args.files, args.per_file, locations)
        cases = dataset.schedule(cases)
        if not quiet:
            print(f"{len(cases)} cases ({', '.join(f'{sum(c.kind == k for c in cases)} {k}' for k in args.cuts)}) "
                  f"from {len({c.file for c in cases})} of {len(files)} files, seed {args.seed}")
    if args.dump_cases is not None:
        count = dataset.dump_cases(cases, args.dump_cases)
        print(f"wrote {count} cases to {args.dump_cases}")
        return None
    if not cases:
        raise UserError("no cases")
    return cases


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_dataset_arguments(parser)
    group = parser.add_argument_group("decoding")
    group.add_argument("--modes", type=_list_of(MODE_NAMES), default=list(MODE_NAMES),
                       help="comma-separated modes to run (default: unconstrained,checked,constrained)")
    # a run's defaults are its own (`RunSettings`): the paper's setup and a search budget rather than a time budget
    settings.add_flags(group, SETTINGS, {name: getattr(RunSettings(), name) for name in SETTINGS})
    group = parser.add_argument_group("running and reporting")
    group.add_argument("--out", type=Path, default=Path("eval-results.jsonl"),
                       help="results file, JSON lines; an existing one is resumed (default: eval-results.jsonl)")
    group.add_argument("--limit", type=_positive,
                       help="run only the first N cases, in an order that takes every file's first draw first and "
                            "alternates kinds (a sample of the whole set; run again without it to finish)")
    group.add_argument("--workers", type=_positive, default=1, help="cases run in parallel processes (default: 1)")
    group.add_argument("--threads", type=_positive, help="torch threads per process (default: cores / workers)")
    group.add_argument("--plot", type=Path, help="timing figure (default: the results file with .png)")
    group.add_argument("--report", type=Path, metavar="RESULTS",
                       help="only print the tables and write the figure of a finished results file")
    group.add_argument("--no-progress", action="store_true", help="no progress bar")


def decoding_header(args: argparse.Namespace) -> str:
    """The run's decoding options, and those that are not the editors' (eval keeps its own defaults: a search budget
    rather than a time budget, so that a run's figures do not move with the machine's load)."""
    values = {name: getattr(args, name) for name in DECODING}
    differing = [f"{name} (editors: {both['editors']})"
                 for name, both in settings.differing_from_editors(values).items()]
    return (f"decoding: {', '.join(f'{name}={value}' for name, value in values.items())}"
            + (f"; not the editors' defaults: {', '.join(differing)}" if differing else ""))


def run(args: argparse.Namespace) -> int:
    from fimlsp.cli import UserError
    from fimlsp.evaluation import report

    if args.report is not None:
        if not args.report.is_file():
            raise UserError(f"no such results file: {args.report}")
        png = args.plot or args.report.with_suffix(".png")
        try:
            print(report.report(args.report, png))
        except (ValueError, KeyError) as error:
            raise UserError(f"{args.report}: {error}") from None
        return 0
    cases = cases_from_args(args)
    if cases is None:
        return 0
    if args.limit is not None:
        cases = cases[:args.limit]
    if args.context in ("file", "workspace") and any(case.path is None for case in cases):
        raise UserError(f"--context {args.context} reads the project of each case's file, and the cases of {args.cases} "
                        "do not say where their files lie (written before cases had a path); build them again")

    from fimlsp.evaluation import runner
    from fimlsp.model import ModelError, load_model

    try:  # bad settings fail here, with one line, rather than in every case
        values = settings.given(args, SETTINGS)
        settings.decoding_options(values)
    except ValueError as error:
        raise UserError(str(error)) from None
    if values["device"] is None and not args.model_server:
        from fimlsp.model.transformers import default_device

        values["device"] = default_device()
    print(decoding_header(args))
    threads = args.threads or runner.default_threads(args.workers)
    run_settings = runner.RunSettings(**values, threads=threads)
    try:
        if args.model_server:
            from fimlsp.model.remote import connect

            model = connect(args.model_server, args.model)  # one connection: the server runs the cases' model passes
        else:
            model = load_model(args.model, values["device"])  # fail here, with one line, rather than in every worker
    except ModelError as error:
        raise UserError(str(error)) from None
    if not args.model_server and args.workers > 1:
        model = None  # each worker loads its own
    elif not args.model_server:
        import torch

        torch.set_num_threads(run_settings.threads)
    try:
        ran, skipped = runner.run_cases(cases, args.modes, run_settings, args.out, args.workers,
                                        progress=not args.no_progress, model=model)
    except runner.ResumeError as error:
        raise UserError(str(error)) from None
    print(f"ran {ran} cases, {skipped} were already in {args.out}")
    print(report.report(args.out, args.plot or args.out.with_suffix(".png")))
    return 0
