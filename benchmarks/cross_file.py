"""Does the repository's context help? Completions of lines that use a name another module of the same package
defines, with `--context off` and `workspace`, and of lines that use only the file's own names (nothing may fall).

The packages are installed third-party packages the shipped model never saw (no file of theirs in its
`corpus.json`, train or held-out). Each package is the workspace; a cut's middle is the rest of a one-line
statement from the first use of such a name; the file being completed is no source of context (its copy on disk
holds the answer), only its own left and right contexts. Greedy, constrained, one line. Reported: exact match of
the line, identifier match (the middle's identifiers equal the true one's, in order), edit similarity (1 - the
Levenshtein distance over the longer length), and the context's assembly time per completion (cold: resolved
and indexed at once, as `fimlsp complete` does; warm: what a completion in the server pays once the background
has resolved and indexed) next to the model's.

    python -m benchmarks.cross_file [--packages starlette,pyflakes,...] [--cases N] [--model PATH] [--budget CHARS]
                                    [--index-files N]
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

from fimlsp.context import RepositoryContext, budget_for  # noqa: E402
from fimlsp.workspace import Workspace  # noqa: E402

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


def while_indexing(files: int, seed: int) -> None:
    """A workspace of `files` generated modules indexed by the background thread while completions ask for context
    every 5 ms: the context's time per completion during the build against after it, and the build's time."""
    import tempfile

    rng = random.Random(seed)
    words = [f"name_{n}" for n in range(2000)]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for n in range(files):
            body = "".join(f"def {rng.choice(words)}_{k}(a, b):\n    return {rng.choice(words)}(a) + {rng.choice(words)}\n"
                           for k in range(20))
            (root / f"module_{n}.py").write_text(f"from module_{rng.randrange(files)} import {rng.choice(words)}\n"
                                                 + body)
        left = "from module_1 import name_1\n\n\ndef use(a):\n    x = name_1(a) + name_2(a)\n    return "
        context = RepositoryContext(Workspace([root]))
        clock = time.perf_counter()
        context.start()
        during, after = [], []
        while not context.indexed.is_set():
            tick = time.perf_counter()
            context.gather(root / "module_0.py", left, "\n", "workspace", 2048)
            during.append(time.perf_counter() - tick)
            time.sleep(0.005)
        built = time.perf_counter() - clock
        context.settle()
        for _ in range(100):
            tick = time.perf_counter()
            context.gather(root / "module_0.py", left, "\n", "workspace", 2048)
            after.append(time.perf_counter() - tick)
        context.close()
    print(f"\nindexing {files} files in the background: {built:.1f} s; context per completion, ms (median, p95): "
          f"during {statistics.median(during) * 1000:.2f}, {_p95(during) * 1000:.2f} ({len(during)} completions); "
          f"after {statistics.median(after) * 1000:.2f}, {_p95(after) * 1000:.2f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", default=",".join(PACKAGES), help="installed packages to cut (comma-separated)")
    parser.add_argument("--cases", type=int, default=12, help="cuts of each kind per package (default: 12)")
    parser.add_argument("--model", help="model folder or .gguf (default: the shipped model)")
    parser.add_argument("--budget", type=int, help="context characters (default: by the model's window)")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index-files", type=int, default=5000,
                        help="then index a generated workspace of N files while completions ask (0: skip)")
    args = parser.parse_args(argv)

    from fimlsp.decoding import DecodingOptions
    from fimlsp.decoding.attempts import complete_middles
    from fimlsp.model import load_model
    from fimlsp.weights import default_model_path

    packages = untrained_packages(args.packages.split(","), default_model_path())
    model = load_model(args.model, "cpu")
    budget = args.budget if args.budget is not None else budget_for(model.context_window)
    options = DecodingOptions(max_tokens=args.max_tokens, single_line=True, attempts=1, search_budget=20_000)
    print(f"model {model.name} (window {model.context_window} tokens), context budget {budget} characters, "
          f"packages {', '.join(name for name, _ in packages)}, {args.cases} cuts of each kind per package")
    rows: dict[tuple[str, str], list[dict]] = {}
    cold, warm, model_seconds, index_seconds = [], [], [], {}
    for name, folder in packages:
        context = RepositoryContext(Workspace([folder]))
        clock = time.perf_counter()
        context.index.build(context.workspace.files(context.suffixes))
        context.indexed.set()
        index_seconds[name] = (time.perf_counter() - clock, len(context.index))
        cuts = cuts_of(name, folder)
        rng = random.Random(args.seed)
        for kind in ("cross-file", "in-file"):
            chosen = [cut for cut in cuts if cut.kind == kind]
            for cut in rng.sample(chosen, min(args.cases, len(chosen))):
                clock = time.perf_counter()
                snippets = context.gather(cut.path, cut.left, cut.right, "workspace", budget, wait=True)
                cold.append(time.perf_counter() - clock)
                clock = time.perf_counter()
                again = context.gather(cut.path, cut.left, cut.right, "workspace", budget)
                warm.append(time.perf_counter() - clock)
                assert again == snippets
                for setting, extra in (("off", ()), ("workspace", snippets)):
                    clock = time.perf_counter()
                    middle = complete_middles(model, cut.left, cut.right, options, extra=extra)[0].middle
                    model_seconds.append(time.perf_counter() - clock)
                    got = middle.split("\n")[0].rstrip()
                    rows.setdefault((kind, setting), []).append({
                        "exact": got == cut.middle.rstrip(),
                        "identifiers": identifiers(got) == identifiers(cut.middle),
                        "similarity": edit_similarity(got, cut.middle.rstrip()),
                        "context_chars": sum(len(s.text) for s in extra)})
        context.close()
    print(f"\n{'cuts':<11}{'context':<11}{'n':>5}{'exact':>8}{'ident':>8}{'edit sim':>10}{'ctx chars':>11}")
    for (kind, setting), group in sorted(rows.items()):
        n = len(group)
        print(f"{kind:<11}{setting:<11}{n:>5}{sum(r['exact'] for r in group) / n:>8.1%}"
              f"{sum(r['identifiers'] for r in group) / n:>8.1%}"
              f"{statistics.mean(r['similarity'] for r in group):>10.3f}"
              f"{statistics.mean(r['context_chars'] for r in group):>11.0f}")
    print("\nper completion, ms     median      p95")
    for label, values in (("context, cold", cold), ("context, warm", warm), ("model", model_seconds)):
        print(f"{label:<20}{statistics.median(values) * 1000:>9.2f}{_p95(values) * 1000:>9.2f}")
    for name, (seconds, files) in index_seconds.items():
        print(f"index {name}: {files} files in {seconds:.2f} s")
    if args.index_files:
        while_indexing(args.index_files, args.seed)


if __name__ == "__main__":
    main()
