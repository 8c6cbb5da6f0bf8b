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
    """The offset of the first character of every line; a trailing line break opens a last, empty line (one C-level
    split where `\n` is the only line break: a search break by break costs milliseconds on a big file, at each end
    a search checks)."""
    if "\r" in text:
        return [0, *(match.end() for match in LINE_BREAK.finditer(text))]
    return list(accumulate((len(piece) + 1 for piece in text.split("\n")[:-1]), initial=0))


def line_end(text: str, starts: list[int], line: int) -> int:
    """The offset of the end of 0-based `line` (of `starts = line_starts(text)`), before its line break."""
    if line + 1 < len(starts):
        end = starts[line + 1]
        return end - 2 if text.startswith("\r\n", end - 2) else end - 1
    return len(text)


def line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the lines of `text[start:end]` begin and end (the end's line break excluded)."""
    found = text.find("\n", end)
    return text.rfind("\n", 0, start) + 1, len(text) if found < 0 else found


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


def line_break_at(left: str, right: str) -> str:
    """The line break of a file at a cursor between `left` and `right`: the one that ends the cursor's line, else
    the last one before it, else `\\n` (a file of one line)."""
    if left.endswith("\r") and right.startswith("\n"):
        return "\r\n"
    found = LINE_BREAK.search(right)
    if found is not None:
        return found.group()
    last = max(left.rfind("\n"), left.rfind("\r"))
    if last < 0:
        return "\n"
    return "\r\n" if left.startswith("\r\n", last - 1) else left[last]



def with_line_breaks_of(middle: str, left: str, right: str) -> str:
    """`middle` with its line breaks written as the file's (`line_break_at`), for an editor that inserts it as it
    is. The file keeps its line breaks where they were, so CPython reads it the same: a `\\n` that completes the
    `\\r` ending `left` (or a `\\r` that the `\\n` starting `right` completes) is the file's break there, kept only
    where the file's breaks are `\\r\\n`; where the file's breaks are mixed at the cursor and a rewritten break
    would join one of them, the middle is left as it is."""
    line_break = line_break_at(left, right)
    joins_left = left.endswith("\r") and middle.startswith("\n")
    joins_right = right.startswith("\n") and middle.endswith("\r") and len(middle) > joins_left
    inner = LINE_BREAK.sub(line_break, middle[joins_left:len(middle) - joins_right])
    crlf = line_break == "\r\n"
    written = ("\n" if joins_left and crlf else "") + inner + ("\r" if joins_right and crlf else "")
    before, after = left[-1:], right[:1]
    return written if normalize(before + written + after) == normalize(before + middle + after) else middle
