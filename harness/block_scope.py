"""Where a middle goes at the end of a block, read with CPython's tokenizer: cursors at the end of function bodies,
the lowest column at which a middle starts a logical line (below the cursor's line: it escaped the block), and
whether it changes how the right context lexes. The block-scope benchmark measures these on decoded middles; the
tests check the recognizer's finishes against them."""

from __future__ import annotations

import ast
import io
import random
import tokenize

from fimlsp.python.lexer import indentation_column
from fimlsp.syntax_trees import parsed

LINE_STRUCTURE = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def function_end_cuts(files: list[tuple[str, str]], count: int, seed: int) -> list[tuple[str, str, str, int]]:
    """(name, left, right, indentation) with the cursor at the end of a function body's last statement, and the
    indentation (a column) of the line it is on: the block that holds the cursor."""
    found = []
    for name, text in files:
        try:
            tree = parsed(text)
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
