"""Where lines end: the one rule for line breaks in fimlsp.

Lines end at `\\n`, `\\r\\n` or `\\r` and nowhere else, as in CPython's tokenizer and in LSP. Unlike
`str.splitlines`, a form feed, U+0085 or U+2028 inside a line does not end it, so line numbers and offsets agree
with the ones compilers and editors use, and a cut at a line start never falls inside a token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import accumulate

LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A line with its line break, or the last one without.
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_LINE_END = re.compile(r"[\r\n]")


def normalize(text: str) -> str:
    """`text` with every line break as `\\n`, as CPython reads it."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its line break (the last one may have none)."""
    return LINE.findall(text)


def line_starts(text: str) -> list[int]:
    """The offset of the first character of every line; a trailing line break opens a last, empty line."""
    return [0, *(match.end() for match in LINE_BREAK.finditer(text))]


def line_end(text: str, starts: list[int], line: int) -> int:
    """The offset of the end of 0-based `line` (of `starts = line_starts(text)`), before its line break."""
    if line + 1 < len(starts):
        end = starts[line + 1]
        return end - 2 if text.startswith("\r\n", end - 2) else end - 1
    return len(text)


def line_start(text: str, line: int, start: int = 0) -> int:
    """The offset at which 1-based `line` of `text[start:]` starts (the length of `text` past its last line)."""
    return line_offsets(text, [line], start)[0]


def line_offsets(text: str, lines: list[int], start: int = 0) -> list[int]:
    """Where the given 1-based lines (ascending) of `text[start:]` start, in one pass (one C-level split of the
    text when it has only `\n` line breaks: a line-by-line search costs as much as parsing the file)."""
    if not lines:
        return []
    rest = text[start:]
    if "\r" in rest:
        return _line_offsets_searched(text, lines, start)
    pieces = rest.split("\n", max(lines) - 1)
    starts = list(accumulate([len(piece) + 1 for piece in pieces[:-1]], initial=start))
    return [starts[line - 1] if line <= len(starts) else len(text) for line in (max(1, line) for line in lines)]


def _line_offsets_searched(text: str, lines: list[int], start: int) -> list[int]:
    """`line_offsets`, line break by line break."""
    offsets = []
    line, position = 1, start
    for target in lines:
        for _ in range(target - line):
            found = LINE_BREAK.search(text, position)
            if found is None:
                position = len(text)
                break
            position = found.end()
        line = max(line, target)
        offsets.append(position)
    return offsets


def line_of(text: str, offset: int) -> int:
    """The 1-based line of `text` that holds `offset`."""
    before = text[:offset]
    if before.endswith("\r") and text.startswith("\n", offset):  # the \r of the \r\n that ends this line
        before = before[:-1]
    return before.count("\n") + before.count("\r") - before.count("\r\n") + 1


def first_line(text: str, start: int) -> str:
    """The line of `text` that begins at `start`, without its line break."""
    end = _LINE_END.search(text, start)
    return text[start:] if end is None else text[start:end.start()]


def after_line(text: str, start: int) -> int:
    """The offset of the line after the one that begins at `start` (the length of `text` after the last)."""
    found = LINE_BREAK.search(text, start)
    return len(text) if found is None else found.end()


def line_starts_backwards(text: str, end: int | None = None) -> Iterator[int]:
    """Where the lines of `text[:end]` start, from the last to the first."""
    end = len(text) if end is None else end
    while end > 0:
        found = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end))
        if found < 0:
            break
        if not (text[found] == "\r" and text.startswith("\n", found + 1)):
            yield found + 1
        end = found
    yield 0
