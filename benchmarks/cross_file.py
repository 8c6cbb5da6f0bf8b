"""Does the repository's context help? Completions of lines that use a name another module of the same package
defines, with `--context off` and `workspace`, and of lines that use only the file's own names (nothing may fall).

The packages are installed third-party packages the shipped model never saw (no file of theirs in its `corpus.json`,
train or held-out). Each package is the workspace; a cut's middle is the rest of a one-line statement from the first
use of such a name; the file being completed is no source of context (its copy on disk holds the answer), only its
own left and right contexts. The context is what `fimlsp eval --context` puts into the prompt (each cut is an eval
case of the package's project: `runner.case_context`, as `fimlsp complete --project` assembles it), and the prompt
is the model's own (`complete_middles(extra=)`). Greedy, constrained, one line, the finish searches bounded as
eval's (`SEARCH_BUDGET` nodes). Reported: exact match of the line, identifier match (the middle's identifiers equal
the true one's, in order), edit similarity (1 - the Levenshtein distance over the longer length), the characters of
context assembled and those the prompt holds (what the window left room for), and the context's assembly time per
completion (cold: resolved at once, as `fimlsp complete` does; warm: what a completion pays once its names are
resolved) next to the model's. `--window` assembles the context for a larger model's window (its budget), the prompt
still the model's.

    python -m benchmarks.cross_file [--packages starlette,pyflakes,...] [--cases N] [--model PATH] [--window TOKENS]
                                    [--contexts off,file,workspace] [--json FILE]
"""
from __future__ import annotations

import argparse
import ast
import json
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fimlsp.context import budget_for  # noqa: E402
from fimlsp.context.editor import CommandContexts  # noqa: E402
from fimlsp.evaluation.dataset import EvalCase  # noqa: E402
from fimlsp.evaluation.runner import SEARCH_BUDGET, RunSettings, case_context  # noqa: E402

PACKAGES = ("starlette", "pyflakes", "uvicorn", "fastapi", "pathspec", "gguf")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Cut:
    package: str
    kind: str  # cross-file or in-file
    path: Path
    line: int  # 1-based
    left: str
    middle: str
    right: str


def untrained_packages(names, model_dir: Path) -> list[tuple[str, Path]]:
    """(name, folder) of each package of `names` installed here of which no file is in the model's corpus."""
    import sysconfig

    corpus = json.loads((model_dir / "corpus.json").read_text())
    seen = {row[0].split("/")[1] for row in corpus["train"] + corpus["heldout"] if row[0].count("/") >= 2}
    found = []
    for name in names:
        for key in ("purelib", "platlib"):
            folder = Path(sysconfig.get_paths()[key]) / name
            if (folder / "__init__.py").is_file():
                if name in seen:
                    print(f"cross_file: {name} is in the model's corpus; left out", file=sys.stderr)
                else:
                    found.append((name, folder))
                break
    return found


def _imported_from_package(tree: ast.Module, package: str) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").split(".")[0] == package):
            names.update((alias.asname or alias.name) for alias in node.names if alias.name != "*")
    return names


def _defined_here(tree: ast.Module) -> set[str]:
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def cuts_of(package: str, folder: Path) -> list[Cut]:
    """Every candidate cut of the package: one-line statements inside functions, from a name's first use on."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        try:
            text = path.read_text("utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        imported, defined = _imported_from_package(tree, package), _defined_here(tree)
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for statement in function.body:
                if statement.lineno != statement.end_lineno or isinstance(statement, ast.Expr) and isinstance(
                        statement.value, ast.Constant):
                    continue
                names = [node for node in ast.walk(statement) if isinstance(node, ast.Name)
                         and node.lineno == statement.lineno]
                cross = [node for node in names if node.id in imported]
                local = [node for node in names if node.id in defined and node.id not in imported]
                chosen, kind = (cross, "cross-file") if cross else (local, "in-file") if local else ([], "")
                if not chosen:
                    continue
                first = min(chosen, key=lambda node: node.col_offset)
                line = lines[statement.lineno - 1]
                column = len(line.encode("utf-8")[:first.col_offset].decode("utf-8"))
                start = starts[statement.lineno - 1] + column
                end = starts[statement.lineno - 1] + len(line.rstrip("\r\n"))
                middle = text[start:end]
                if len(middle) < 4 or len(middle) > 100:
                    continue
                found.append(Cut(package, kind, path, statement.lineno, text[:start], middle, text[end:]))
    return found


def identifiers(text: str) -> list[str]:
    return _IDENTIFIER.findall(text)


def edit_similarity(a: str, b: str) -> float:
    if not a and not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return 1 - previous[-1] / max(len(a), len(b))


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def as_case(cut: Cut, folder: Path, number: int) -> EvalCase:
    """The cut as an eval case of the package's workspace: what `fimlsp eval --context` runs."""
    name = f"{cut.package}/{cut.path.relative_to(folder).as_posix()}"
    return EvalCase(f"line:{name}#{number}", "line", name, number, 0, cut.left, cut.middle, cut.right,
                    str(cut.path), str(folder))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", default=",".join(PACKAGES), help="installed packages to cut (comma-separated)")
    parser.add_argument("--cases", type=int, default=12, help="cuts of each kind per package (default: 12)")
    parser.add_argument("--model", help="model folder or .gguf (default: the shipped model)")
    parser.add_argument("--window", type=int,
                        help="the context window to assemble context for (default: the model's): a larger one "
                             "gives the context budget of a larger model's window, the prompt still the model's")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every completion as a JSON line")
    parser.add_argument("--contexts", default="off,workspace", help="the context settings compared (default: "
                        "off,workspace; file: the declarations alone)")
    args = parser.parse_args(argv)

    from fimlsp.decoding import DecodingOptions
    from fimlsp.decoding.attempts import complete_middles
    from fimlsp.model import load_model
    from fimlsp.weights import default_model_path

    packages = untrained_packages(args.packages.split(","), default_model_path())
    model = load_model(args.model, "cpu")
    window = args.window or model.context_window
    contexts_compared = args.contexts.split(",")
    settings = {context: RunSettings(context=context) for context in {"workspace", *contexts_compared}}
    options = DecodingOptions(max_tokens=args.max_tokens, single_line=True, attempts=1, search_budget=SEARCH_BUDGET)
    print(f"model {model.name} (window {model.context_window} tokens, format {model.format.name}), context "
          f"assembled for a {window}-token window ({budget_for(window)} characters), packages "
          f"{', '.join(name for name, _ in packages)}, {args.cases} cuts of each kind per package")
    rows: dict[tuple[str, str], list[dict]] = {}
    cold, warm, model_seconds, first = [], [], [], {}
    sink = open(args.json, "w", encoding="utf-8", buffering=1) if args.json else None
    contexts = CommandContexts()  # as a run of fimlsp eval's worker: one workspace per package, indexed once
    for name, folder in packages:
        cuts = cuts_of(name, folder)
        rng = random.Random(args.seed)
        for kind in ("cross-file", "in-file"):
            chosen = [cut for cut in cuts if cut.kind == kind]
            for number, cut in enumerate(rng.sample(chosen, min(args.cases, len(chosen)))):
                case = as_case(cut, folder, number)
                clock = time.perf_counter()
                snippets = case_context(case, settings["workspace"], window, contexts)
                (cold if name in first else first.setdefault(name, [])).append(time.perf_counter() - clock)
                clock = time.perf_counter()
                again = case_context(case, settings["workspace"], window, contexts)
                warm.append(time.perf_counter() - clock)
                assert again == snippets
                for setting in contexts_compared:
                    extra = case_context(case, settings[setting], window, contexts)
                    clock = time.perf_counter()
                    middle = complete_middles(model, cut.left, cut.right, options, extra=extra)[0].middle
                    model_seconds.append(time.perf_counter() - clock)
                    got = middle.split("\n")[0].rstrip()
                    row = {"exact": got == cut.middle.rstrip(),
                           "identifiers": identifiers(got) == identifiers(cut.middle),
                           "similarity": edit_similarity(got, cut.middle.rstrip()),
                           "context_chars": sum(len(s.text) for s in extra),
                           "chars_in_prompt": _chars_in_prompt(model, cut, options, extra)}
                    rows.setdefault((kind, setting), []).append(row)
                    if sink:
                        sink.write(json.dumps({"case": case.id, "kind": kind, "context": setting, "middle": got,
                                               "expected": cut.middle, **row}) + "\n")
    if sink:
        sink.close()
    print(f"\n{'cuts':<11}{'context':<11}{'n':>5}{'exact':>8}{'ident':>8}{'edit sim':>10}{'ctx chars':>11}"
          f"{'in prompt':>11}")
    for (kind, setting), group in sorted(rows.items()):
        n = len(group)
        print(f"{kind:<11}{setting:<11}{n:>5}{sum(r['exact'] for r in group) / n:>8.1%}"
              f"{sum(r['identifiers'] for r in group) / n:>8.1%}"
              f"{statistics.mean(r['similarity'] for r in group):>10.3f}"
              f"{statistics.mean(r['context_chars'] for r in group):>11.0f}"
              f"{statistics.mean(r['chars_in_prompt'] for r in group):>11.0f}")
    print("\nper completion, ms            median      p95")
    for label, values in (("context, first of a package", [v for each in first.values() for v in each]),
                          ("context, cold (resolving)", cold), ("context, warm", warm), ("model", model_seconds)):
        if values:
            print(f"{label:<28}{statistics.median(values) * 1000:>9.2f}{_p95(values) * 1000:>9.2f}")
    print("(the first of a package indexes it; the server does that in the background: benchmarks/context_index.py)")


def _chars_in_prompt(model, cut: Cut, options, extra) -> int:
    """The characters of the snippets that the prompt holds whole: what the window left room for."""
    if not extra:
        return 0
    ids = model.prompt(cut.left, cut.right, options.max_tokens, None, extra)
    written = b"".join(model.token_bytes[token] or b"" for token in ids)
    return sum(len(snippet.text) for snippet in extra if snippet.text.encode() in written)


if __name__ == "__main__":
    main()
