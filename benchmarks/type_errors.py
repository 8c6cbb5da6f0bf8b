"""Type errors a suggestion adds: what a developer's type checker underlines in the file with the middle and not in
the file with its true middle (issue 49's measure). pyright (standard mode, pinned) is the judge here and only here;
it is never a dependency of fimlsp.

Cases are `fimlsp eval`'s cuts (all four kinds by default) of installed third-party packages that the shipped model
never saw (neither its training nor its held-out files list them: `corpus.json`). Each judge setting runs through
`fimlsp eval --modes constrained` on the same case file; every valid middle's file and the true file are written
side by side into one copy of the package (so relative and absolute imports resolve alike) and pyright checks them
all in one run. A middle *adds* an error when the file with it has an error (keyed by rule and message, not line)
more often than the true file has it.

    python benchmarks/type_errors.py --out runs/type-errors \\
        --setting "editors=--names strict --members strict --calls strict --no-invented-finish" \\
        --setting "names off=--names off"

(`fimlsp eval` keeps the library's defaults: the editors' judges and their policy on invented finishes are flags.)

The report gives, per setting: valid middles (shown: the file compiles with them and they passed their judges), the share that add any pyright error, the share that add an error of
a kind fimlsp's judges cover (attribute access, undefined or unbound names, call arity, redeclaration), pyflakes'
undefined names, exact match per cut kind, and the added errors by rule. `--report` prints it again from `--out`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from harness.pyright import errors_by_file, pyright

PACKAGES = ("fastapi", "starlette", "uvicorn", "pyflakes", "diskcache", "gguf")
KINDS = ("randspan", "boundary", "line", "node")
# The decoding of every setting: the editors' block scope, greedy, one attempt, at most 128 tokens.
COMMON = "--scope block --max-tokens 128 --attempts 1"
EDITORS = "editors=--names strict --members strict --calls strict --no-invented-finish"  # the editors' judges, by default
# pyright rules of the errors fimlsp's judges are meant to prevent (issue 49).
COVERED = {
    "attribute access": {"reportAttributeAccessIssue", "reportOptionalMemberAccess", "reportFunctionMemberAccess"},
    "undefined name": {"reportUndefinedVariable"},
    "unbound name": {"reportUnboundVariable", "reportPossiblyUnbound"},
    "call arity": {"reportCallIssue"},
    "redeclaration": {"reportRedeclaration"},
}


def package_folder(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"type_errors: package {name!r} is not installed here")
    return Path(next(iter(spec.submodule_search_locations)))


def run_eval(arguments: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "fimlsp", "eval", "--no-progress", *arguments],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"type_errors: fimlsp eval {shlex.join(arguments)} failed: {done.stderr.strip()[-800:]}")


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def shown(row: dict) -> bool:
    """Whether an editor shows the middle: the file compiles with it and it passed its judges (a middle that
    strict names decoded without the judge and that does not bind its names compiles, but is not shown)."""
    return bool(row["parses"]) and row.get("guarantee", "file") != "none"


def judge(out: Path, settings: dict[str, str], program: Path, packages: list[str]) -> dict:
    """Every setting's valid middles and the pyright errors they add, written to `out`/judged.json."""
    cases = {case["id"]: case for case in read_jsonl(out / "cases.jsonl")}
    mirror = out / "mirror"
    shutil.rmtree(mirror, ignore_errors=True)
    for name in packages:
        shutil.copytree(package_folder(name), mirror / name, ignore=shutil.ignore_patterns("__pycache__"))
    written: dict[tuple[str, str], Path] = {}  # (setting or "true", case id) -> file

    def write(label: str, case: dict, middle: str, index: int) -> None:
        folder = (mirror / case["file"]).parent
        path = folder / f"_fim_{index}_{len(written)}.py"
        path.write_text(case["left"] + middle + case["right"], encoding="utf-8")
        written[label, case["id"]] = path

    rows: dict[str, dict[str, dict]] = {}
    for index, (label, _arguments) in enumerate(settings.items()):
        rows[label] = {row["case"]: row for row in read_jsonl(out / f"setting-{index}.jsonl")
                       if row.get("type") == "result"}
    for index, case_id in enumerate(sorted(cases)):
        case = cases[case_id]
        write("true", case, case["middle"], index)
        for label in settings:
            row = rows[label].get(case_id)
            if row is not None and shown(row):
                write(label, case, row["middle"], index)
    errors = errors_by_file(program, mirror, list(written.values()))
    judged = {}
    for label in settings:
        entries = []
        for case_id, row in sorted(rows[label].items()):
            entry = {"case": case_id, "kind": row["kind"], "valid": shown(row), "exact": row["exact"] and shown(row),
                     "undefined": bool(row.get("added_undefined")), "added": []}
            if entry["valid"]:
                true_errors = errors[str(written["true", case_id])]
                added = errors[str(written[label, case_id])] - true_errors
                entry["added"] = sorted(f"{rule}: {message}" for rule, message in added.elements())
            entries.append(entry)
        judged[label] = entries
    (out / "judged.json").write_text(json.dumps(judged, indent=1))
    shutil.rmtree(mirror, ignore_errors=True)
    return judged


def report(judged: dict) -> str:
    lines = []
    header = (f"{'setting':<24} {'cases':>5} {'valid':>6} {'any':>12} {'covered':>12} {'attribute':>11} "
              f"{'undef(pyflakes)':>15} " + " ".join(f"{'exact ' + kind:>14}" for kind in KINDS))
    lines.append(header)
    for label, entries in judged.items():
        valid = [entry for entry in entries if entry["valid"]]

        def share(count: int, of: int) -> str:
            return f"{count}/{of} {100 * count / of:.0f}%" if of else "-"

        def adds(rules: set[str] | None) -> int:
            return sum(any(rules is None or added.split(":")[0] in rules for added in entry["added"])
                       for entry in valid)

        covered = set().union(*COVERED.values())
        exact = []
        for kind in KINDS:
            of_kind = [entry for entry in entries if entry["kind"] == kind]
            exact.append(share(sum(entry["exact"] for entry in of_kind), len(of_kind)))
        lines.append(f"{label:<24} {len(entries):>5} {share(len(valid), len(entries)):>6} "
                     f"{share(adds(None), len(valid)):>12} {share(adds(covered), len(valid)):>12} "
                     f"{share(adds(COVERED['attribute access']), len(valid)):>11} "
                     f"{share(sum(entry['undefined'] for entry in valid), len(valid)):>15} "
                     + " ".join(f"{each:>14}" for each in exact))
    lines.append("")
    lines.append("middles adding an error, by rule:")
    rules = sorted({added.split(":")[0] for entries in judged.values() for entry in entries
                    for added in entry["added"]})
    lines.append(f"{'rule':<32} " + " ".join(f"{label[:14]:>14}" for label in judged))
    for rule in rules:
        counts = [sum(any(added.split(":")[0] == rule for added in entry["added"]) for entry in entries)
                  for entries in judged.values()]
        lines.append(f"{rule:<32} " + " ".join(f"{count:>14}" for count in counts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the cases, eval results and verdicts")
    parser.add_argument("--packages", default=",".join(PACKAGES), help="comma-separated installed packages")
    parser.add_argument("--cuts", default=",".join(KINDS))
    parser.add_argument("--files", type=int, default=60, help="files drawn from, over all packages")
    parser.add_argument("--per-file", type=int, default=1)
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--max-file-chars", type=int, default=40_000)
    parser.add_argument("--common", default=COMMON, help=f"fimlsp eval flags of every setting (default: {COMMON})")
    parser.add_argument("--setting", action="append", metavar="LABEL=FLAGS",
                        help="a judge setting: a label and the fimlsp eval flags that make it (repeatable)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="print the report of --out again")
    args = parser.parse_args(argv)
    out: Path = args.out
    if args.report:
        print(report(json.loads((out / "judged.json").read_text())))
        return
    settings = dict(each.split("=", 1) for each in (args.setting or [EDITORS]))
    packages = args.packages.split(",")
    program = pyright()
    out.mkdir(parents=True, exist_ok=True)
    (out / "settings.json").write_text(json.dumps({"common": args.common, "settings": settings}))
    if not (out / "cases.jsonl").exists():
        run_eval([*map(str, map(package_folder, packages)), "--cuts", args.cuts, "--files", str(args.files),
                  "--per-file", str(args.per_file), "--seed", str(args.seed), "--max-file-chars",
                  str(args.max_file_chars), "--dump-cases", str(out / "cases.jsonl")])
    for index, (label, flags) in enumerate(settings.items()):
        print(f"type_errors: decoding the cases with {label!r} ({args.common} {flags})", file=sys.stderr, flush=True)
        run_eval(["--cases", str(out / "cases.jsonl"), "--modes", "constrained", "--workers", str(args.workers),
                  "--out", str(out / f"setting-{index}.jsonl"), *shlex.split(args.common), *shlex.split(flags)])
    print(report(judge(out, settings, program, packages)))


if __name__ == "__main__":
    main()
