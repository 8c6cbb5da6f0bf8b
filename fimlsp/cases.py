"""Fill-in-the-middle cuts: random spans and token boundaries as in Sec. VII-A of Melcer et al., and the line and
syntax-node cuts an editor's user makes.

For each file: a start point uniform in the first 90% of the file; the deleted span runs for
min(100 characters, 20% of the file) or to the end of the file, whichever comes first. The text before the span
is the left context, the span is the expected middle, the rest is the right context.

Cases are deterministic for a seed and independent of the order in which files are given: each file's random
draw is seeded by the seed and the file's content, and files are visited in an order fixed by the same hash.
With `per_file=K`, a file gives up to K cases (the paper draws 10 per file): draw 0 is the single-case draw, draw
k > 0 is seeded by the same key and k; splits that repeat an earlier draw of the same file are skipped.

`line` and `node` cuts are the shapes of middle an editor asks for (and the training span mixture teaches, so
that a model learns where a middle ends): the rest of a line from a point inside it, one to three whole lines,
or one syntax node (an expression, a call's arguments, a statement, a block) of at most `MAX_NODE_CHARS`.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import random
from typing import Iterable, Iterator

from fimlsp.lines import line_end, line_starts, split_lines
from fimlsp.syntax_trees import parsed

MAX_SPAN_CHARS = 100
MAX_SPAN_SHARE = 0.2
START_SHARE = 0.9


@dataclasses.dataclass(frozen=True)
class Case:
    """One FIM case: the model sees `left` and `right` and should produce `middle`."""

    name: str
    left: str
    middle: str
    right: str
    draw: int = 0  # which of the file's draws made it (0 unless `per_file` > 1)


def random_span_case(text: str, rng: random.Random) -> tuple[str, str, str]:
    """Split text into (left, middle, right) by the Sec. VII-A rule; middle is empty only for tiny texts."""
    start = rng.randrange(max(1, int(len(text) * START_SHARE)))
    end = min(start + min(MAX_SPAN_CHARS, int(len(text) * MAX_SPAN_SHARE)), len(text))
    return text[:start], text[start:end], text[end:]


def case_key(seed: int, text: str) -> str:
    """A per-file seed derived from the run's seed and the file's content, never from its position."""
    return hashlib.sha256(f"{seed}:".encode() + text.encode("utf-8", "surrogatepass")).hexdigest()


def draw_seed(key: str, draw: int) -> str:
    """The seed of a file's `draw`-th case: the file's key itself for draw 0, as in the one-case-per-file rule."""
    return key if draw == 0 else f"{key}:{draw}"


def _cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None, per_file: int, split, prefix: str = "",
) -> Iterator[Case]:
    if per_file < 1:
        raise ValueError("per_file must be at least 1")
    keyed = sorted(((case_key(seed, text), name, text) for name, text in files), key=lambda item: (item[0], item[1]))
    produced = 0
    for key, name, text in keyed:
        seen: set[tuple[int, int]] = set()
        for draw in range(per_file):
            if count is not None and produced >= count:
                return
            parts = split(text, random.Random(prefix + draw_seed(key, draw)))
            if parts is None or not parts[1]:
                continue
            left, middle, right = parts
            if (len(left), len(middle)) in seen:
                continue
            seen.add((len(left), len(middle)))
            produced += 1
            yield Case(name, left, middle, right, draw)


def random_span_cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None = None, per_file: int = 1,
) -> Iterator[Case]:
    """Yield up to `count` cases from (name, text) pairs, `per_file` draws per file (one by default), skipping files
    too small to hold a span."""
    return _cases(files, seed, count, per_file, random_span_case)


MAX_BOUNDARY_TOKENS = 40


def boundary_case(text: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Split text between two tokens at the same indentation level, cutting into the first token (Sec. VII-A).

    The middle runs from a random offset inside the first token to the start of the second, which is one of the
    next `MAX_BOUNDARY_TOKENS` tokens at the same indentation level: an IDE user completing as they type. Tokens
    come from the standard library's `tokenize` (dataset construction only). None if the text has no such pair.
    Tokenizer and offsets read the same lines (`fimlsp.lines`), so a cut never falls inside a token.
    """
    import tokenize

    skipped = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT,
               tokenize.ENDMARKER, tokenize.ENCODING}
    try:
        raw = list(tokenize.generate_tokens(iter(split_lines(text)).__next__))
    except (tokenize.TokenError, SyntaxError):
        return None
    line_offsets = line_starts(text)
    level = 0
    tokens: list[tuple[int, int, int]] = []  # (level, start offset, end offset)
    for token in raw:
        if token.type == tokenize.INDENT:
            level += 1
        elif token.type == tokenize.DEDENT:
            level -= 1
        if token.type in skipped or not token.string:
            continue
        start = line_offsets[token.start[0] - 1] + token.start[1]
        end = line_offsets[token.end[0] - 1] + token.end[1]
        tokens.append((level, start, end))
    if len(tokens) < 2:
        return None
    for _ in range(20):
        first = rng.randrange(len(tokens) - 1)
        level, start, end = tokens[first]
        following = [t for t in tokens[first + 1: first + 1 + MAX_BOUNDARY_TOKENS] if t[0] == level]
        if following:
            second = rng.choice(following)
            cut = start + rng.randrange(end - start)
            return text[:cut], text[cut:second[1]], text[second[1]:]
    return None


def boundary_cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None = None, per_file: int = 1,
) -> Iterator[Case]:
    """Like `random_span_cases`, with `boundary_case` cuts."""
    return _cases(files, seed, count, per_file, boundary_case, prefix="boundary:")


MAX_WHOLE_LINES = 3
MID_LINE_SHARE = 0.6


def line_case(text: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Cut out the rest of a line from a point inside it, or one to `MAX_WHOLE_LINES` whole lines after their
    indentation; the line break after the middle stays in the right context. None if no line has code."""
    starts = line_starts(text)
    lines = []  # (first and last character of code, end before the line break) of each non-blank line
    for line, start in enumerate(starts):
        end = line_end(text, starts, line)
        code = text[start:end]
        if code.strip(" \t\f"):
            lines.append((start + len(code) - len(code.lstrip(" \t\f")), start + len(code.rstrip(" \t\f")) - 1, end))
    if not lines:
        return None
    first = rng.randrange(len(lines))
    if rng.random() < MID_LINE_SHARE:
        begin, last, end = lines[first]
        cut = rng.randint(begin, last)
    else:
        cut = lines[first][0]
        end = lines[min(len(lines), first + rng.randint(1, MAX_WHOLE_LINES)) - 1][2]
    return text[:cut], text[cut:end], text[end:]


MAX_NODE_CHARS = 240
NODE_KINDS = (("expression", 0.4), ("arguments", 0.2), ("statement", 0.25), ("block", 0.15))


def node_spans(text: str) -> dict[str, list[tuple[int, int]]]:
    """Character spans of the syntax nodes a `node` cut may delete, by kind; empty if `text` does not parse.

    f-strings are not entered: Python 3.11 gives their inner expressions unreliable positions.
    """
    try:
        tree = parsed(text)
    except (SyntaxError, ValueError):
        return {kind: [] for kind, _share in NODE_KINDS}
    starts = line_starts(text)
    encoded_lines: dict[int, bytes] = {}

    def offset(line: int, column: int) -> int:
        if line not in encoded_lines:
            code = text[starts[line - 1]:line_end(text, starts, line - 1)]
            encoded_lines[line] = code.encode("utf-8", "surrogatepass")
        return starts[line - 1] + len(encoded_lines[line][:column].decode("utf-8", "surrogatepass"))

    def span(first: ast.AST, last: ast.AST) -> tuple[int, int]:
        return offset(first.lineno, first.col_offset), offset(last.end_lineno, last.end_col_offset)

    spans: dict[str, list[tuple[int, int]]] = {kind: [] for kind, _share in NODE_KINDS}
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.expr):
            spans["expression"].append(span(node, node))
        elif isinstance(node, ast.stmt):
            spans["statement"].append(span(node, node))
        if isinstance(node, ast.Call) and (node.args or node.keywords):
            arguments = sorted([*node.args, *node.keywords], key=lambda item: (item.lineno, item.col_offset))
            spans["arguments"].append(span(arguments[0], arguments[-1]))
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            is_block = isinstance(block, list) and block and isinstance(block[0], ast.stmt)
            if is_block and not isinstance(node, ast.Module):
                spans["block"].append(span(block[0], block[-1]))
        if not isinstance(node, ast.JoinedStr):
            pending.extend(ast.iter_child_nodes(node))
    return spans


def cut_at_node(
    text: str, spans: dict[str, list[tuple[int, int]]], rng: random.Random, offset: int = 0,
) -> tuple[str, str, str] | None:
    """Cut one of `spans` out of `text`, where `spans` are the node spans of a document in which `text` starts at
    `offset`: a kind drawn by its share among those with a span inside `text` of at most `MAX_NODE_CHARS`, then
    one such span. None if no span fits."""
    fitting = {kind: sorted((start - offset, end - offset) for start, end in spans.get(kind, ())
                            if offset <= start and end <= offset + len(text) and 0 < end - start <= MAX_NODE_CHARS)
               for kind, _share in NODE_KINDS}
    kinds = [(kind, share) for kind, share in NODE_KINDS if fitting[kind]]
    if not kinds:
        return None
    kind = rng.choices([kind for kind, _ in kinds], weights=[share for _, share in kinds])[0]
    start, end = rng.choice(fitting[kind])
    return text[:start], text[start:end], text[end:]


def node_case(text: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Cut out one syntax node (see `node_spans`); None if the text does not parse or has no node that fits."""
    return cut_at_node(text, node_spans(text), rng)


def line_cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None = None, per_file: int = 1,
) -> Iterator[Case]:
    """Like `random_span_cases`, with `line_case` cuts."""
    return _cases(files, seed, count, per_file, line_case, prefix="line:")


def node_cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None = None, per_file: int = 1,
) -> Iterator[Case]:
    """Like `random_span_cases`, with `node_case` cuts."""
    return _cases(files, seed, count, per_file, node_case, prefix="node:")
