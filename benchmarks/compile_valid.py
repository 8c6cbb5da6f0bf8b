"""Constrained middles that CPython's compiler refuses, at fresh lines in class bodies, function bodies and loops.

`ast.parse` accepts `return` at class level, `break` after a loop, `await` in a plain `def`; `compile` does not. At
`--count` cursors of each kind in the model's held-out files (seeded), a new line is started after a statement
of a class body (after a method, as a user who presses Enter there has it), of a function body, or of a loop
body, with the cursor at the block's indentation and the right context going on at the line break. The shipped
model completes each in the constrained mode (multi-line, `--attempts` attempts, `--max-tokens`), and the middle
shown first is judged by `compile(left + middle + right, "<fim>", "exec", dont_inherit=True)` (nothing is run):
the figure is how many middles the decoder called valid that the compiler refuses, and why. It runs with
whichever `fimlsp` is first on the path, so the same script measures a branch before and after.

    python benchmarks/compile_valid.py [--model DIR] [--count N] [--seed S] [--max-tokens T] [--show]
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import random
import warnings
from pathlib import Path

from fimlsp.decoding import DecodingOptions, complete_middles
from fimlsp.language import Caches
from fimlsp.model.loading import load_model
from fimlsp.weights import default_model_path
from fimlsp.corpus_manifest import resolve_files
from fimlsp.model.folder import CORPUS_MANIFEST

KINDS = ("class body", "function body", "loop body")


def compile_error(text: str) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<fim>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as error:
            return getattr(error, "msg", None) or str(error)
    return None


def _bodies(tree: ast.Module):
    """(kind, body) for each class, function and loop body of the module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield "class body", node.body
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield "function body", node.body
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield "loop body", node.body


def fresh_lines(files: list[Path], kind: str, count: int, seed: int):
    """(left, right) at `count` fresh lines after a statement of a body of `kind` (in a class body, after a
    method), the cursor at the body's indentation."""
    rng = random.Random(f"{seed} {kind}")
    found = attempts = 0
    while found < count and attempts < 100 * count:
        attempts += 1
        text = rng.choice(files).read_text(encoding="utf-8")
        if "\t" in text or compile_error(text) is not None:
            continue
        statements = [(body, statement) for each, body in _bodies(ast.parse(text)) if each == kind
                      for statement in body
                      if kind != "class body" or isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not statements:
            continue
        body, statement = rng.choice(statements)
        lines = text.splitlines(keepends=True)
        indentation = " " * body[0].col_offset
        end = statement.end_lineno
        yield "".join(lines[:end]) + indentation, "\n" + "".join(lines[end:])
        found += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=default_model_path())
    parser.add_argument("--count", type=int, default=20, help="cursors of each kind")
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    model = load_model(args.model)
    manifest = json.loads((args.model / CORPUS_MANIFEST).read_text(encoding="utf-8"))
    files = [Path(path) for _name, path in resolve_files(manifest, "heldout")[0]]
    options = DecodingOptions(max_tokens=args.max_tokens, attempts=args.attempts)
    caches = Caches()
    print("| cursor | cases | called valid | compile refuses | why |")
    print("|---|---|---|---|---|")
    totals = [0, 0, 0]
    for kind in KINDS:
        cases = valid = refused = 0
        reasons: collections.Counter[str] = collections.Counter()
        for left, right in fresh_lines(files, kind, args.count, args.seed):
            result = complete_middles(model, left, right, options, 1, caches=caches)[0]
            cases += 1
            if not result.valid:
                continue
            valid += 1
            error = compile_error(left + result.middle + right)
            if error is not None:
                refused += 1
                reasons[error] += 1
            if args.show:
                print(f"  {kind}: {result.middle!r} -> {error or 'compiles'}")
        why = "; ".join(f"{reason} ({number})" for reason, number in reasons.most_common())
        print(f"| {kind} | {cases} | {valid} | {refused} | {why} |", flush=True)
        totals = [totals[0] + cases, totals[1] + valid, totals[2] + refused]
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | |")


if __name__ == "__main__":
    main()
