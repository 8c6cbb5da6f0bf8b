"""Where the left context can start without changing the quotient: at a top-level statement.

If `left[:cut]` is a valid module and `left[cut:]` starts a new statement at column 0 (not `else`, `elif`,
`except` or `finally`, which continue the statement before), then for every middle and right context,
`left + middle + right` is valid exactly when `left[cut:] + middle + right` is: at a column-0 line every block is
closed, and two statement sequences concatenate. So the recognizer can start at `cut`, and its one-time cost is
bounded by the enclosing top-level statement instead of the file. `ast.parse(left[:cut])` also proves that the
cut is not inside a string, a bracket or a backslash continuation, which would leave that prefix unfinished.
"""

from __future__ import annotations

import re

from fimlsp.python.syntax import syntax_error_line

_STATEMENT_LINE = re.compile(r"^(?![ \t\f#\r\n])", re.MULTILINE)
_CONTINUING = re.compile(r"(?:else|elif|except|finally)\b")


def left_window(left: str) -> int:
    """The latest index at which the recognizer can start on `left` (0 if there is none)."""
    candidates = [match.start() for match in _STATEMENT_LINE.finditer(left) if 0 < match.start() < len(left)]
    while candidates:
        cut = candidates.pop()
        if _CONTINUING.match(left, cut):
            continue
        error_line = syntax_error_line(left[:cut])
        if error_line is None:
            return cut
        error_offset = line_start(left, error_line)
        while candidates and candidates[-1] > error_offset:
            candidates.pop()
    return 0


def line_start(text: str, line: int, start: int = 0) -> int:
    """The index at which 1-based `line` of `text[start:]` starts (the length of `text` past its last line)."""
    offset = start
    for _ in range(line - 1):
        offset = text.find("\n", offset) + 1
        if offset == 0:
            return len(text)
    return offset
