"""Block scope against file scope at the end of function bodies, where a middle is most tempted to escape.

Each cut puts the cursor at the end of the last statement of a function body (maybe inside its last block) in a
held-out standard-library file (the code after it dedents). A middle *escapes* when it starts a logical line
below the indentation of the cursor's line (it closes the block and writes past it), and it *re-lexes* the
right context when the right context's tokens after the first one change (`tokenize` of `left + right` against
`left + middle + right`). Both scopes decode the same cuts, greedy and constrained, with a randomly initialised
model of the shipped tokenizer (it never chooses to stop) and with the shipped model.

    python -m benchmarks.block_scope [--cases N] [--max-tokens T] [--seed S]
"""

from __future__ import annotations

import argparse
import ast
import io
import random
import tempfile
import tokenize
from pathlib import Path

from fimlsp.python.lexer import indentation_column

LINE_STRUCTURE = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def function_end_cuts(files: list[tuple[str, str]], count: int, seed: int) -> list[tuple[str, str, str, int]]:
    """(name, left, right, indentation) with the cursor at the end of a function body's last statement, and the
    indentation (a column) of the line it is on: the block that holds the cursor."""
    found = []
    for name, text in files:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines(keepends=True)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                last = node.body[-1]
                offset = sum(len(line) for line in lines[:last.end_lineno - 1]) + len(
                    lines[last.end_lineno - 1].encode("utf-8")[:last.end_col_offset].decode("utf-8"))
                line = lines[last.end_lineno - 1]
                found.append((f"{name}:{last.end_lineno}", text[:offset], text[offset:],
                              indentation_column(line[:len(line) - len(line.lstrip(" \t"))])))
    return random.Random(seed).sample(found, min(count, len(found)))


def tokens_with_offsets(text: str) -> list[tuple[tokenize.TokenInfo, int, int]]:
    """CPython's tokens of `text` with their start and end offsets, up to where the tokenizer gives up (a buffer
    whose middle is missing may end inside brackets or a string)."""
    offsets = [0]
    for line in io.StringIO(text).readlines():
        offsets.append(offsets[-1] + len(line))
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            tokens.append((token, offsets[token.start[0] - 1] + token.start[1], offsets[token.end[0] - 1] + token.end[1]))
    except (tokenize.TokenError, SyntaxError):  # IndentationError included
        pass
    return tokens


def lowest_new_line(left: str, middle: str, right: str) -> float:
    """The lowest column at which a logical line begins in `middle`, or in the line its last break starts."""
    tokens = tokens_with_offsets(left + middle + right)
    first_line, last_line = left.count("\n") + 1, (left + middle).count("\n") + 1
    columns = [token.start[1] for (token, _, _), (previous, _, _) in zip(tokens[1:], tokens)
               if previous.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
               and token.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.COMMENT)
               and first_line < token.start[0] <= last_line]
    return min(columns, default=float("inf"))


def right_tokens_after_first(left: str, middle: str, right: str) -> list[tuple[int, str]]:
    """The right context's tokens after the one the cursor is in or before (as `left + right` lexes), as (type,
    text); line structure aside, which a middle that closes a bracket or a block rightly changes."""
    first_end = next((end for _, _, end in tokens_with_offsets(left + right) if end > len(left)), len(left))
    position = first_end + len(middle)
    return [(token.type, token.string) for token, start, _ in tokens_with_offsets(left + middle + right)
            if start >= position and token.type not in LINE_STRUCTURE]


def relexes(left: str, middle: str, right: str) -> bool:
    before = right_tokens_after_first(left, "", right)
    return right_tokens_after_first(left, middle, right)[:len(before)] != before


def main() -> int:
    from fimlsp.decoding import DecodingOptions, complete_middle
    from fimlsp.evaluation.dataset import heldout_files, read_named
    from fimlsp.model import load_model
    from fimlsp.models import default_model_path
    from fimlsp.training.tiny import build_tiny_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="function-end cuts")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    named, _ = heldout_files(default_model_path(), ["stdlib"])
    cuts = function_end_cuts(read_named(named, 60_000), args.cases, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        models = {"random": load_model(build_tiny_model(Path(scratch) / "random"), "cpu"),
                  "shipped": load_model(None, "cpu")}
        print(f"{len(cuts)} function-end cuts, greedy, constrained, {args.max_tokens} tokens")
        print(f"{'model':<8} {'scope':<6} {'valid':>6} {'escaped':>8} {'re-lexed':>9} {'fell back':>10} "
              f"{'median chars':>13}")
        for label, model in models.items():
            for scope in ("block", "file"):
                valid = escaped = relexed = fell_back = 0
                lengths = []
                for _, left, right, indentation in cuts:
                    result = complete_middle(model, left, right, DecodingOptions(max_tokens=args.max_tokens,
                                                                                 scope=scope))
                    valid += bool(result.parses)
                    escaped += lowest_new_line(left, result.middle, right) < indentation
                    relexed += relexes(left, result.middle, right)
                    fell_back += scope == "block" and result.scope == "file"
                    lengths.append(len(result.middle))
                lengths.sort()
                total = len(cuts)
                print(f"{label:<8} {scope:<6} {valid / total:>6.1%} {escaped / total:>8.1%} {relexed / total:>9.1%} "
                      f"{fell_back / total:>10.1%} {lengths[total // 2]:>13}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
