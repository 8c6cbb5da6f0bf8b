"""What the finish search (`fimlsp.python.finish`) makes of a text: whether it may bind the names the right context
needs, and whether, as an end, it keeps the right context as it was written (else it is a second choice)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import indentation_column

if TYPE_CHECKING:
    from fimlsp.python.quotient import FimState

WORD = re.compile(r"(?<![.\w])[^\W\d]\w*")


def line_so_far(state: FimState) -> str:
    """The text of the last line so far: a line break where it holds blanks only (the next code begins a line)."""
    tail = state.text[-HEADER_CHARS:]
    line = tail[tail.rfind("\n") + 1:]
    return "\n" + line if not line.strip(" \t\f") else line


def dedents_below(written: str, right: str, column: int, depth: int = 0) -> bool:
    """Whether a line that `written` begins outside brackets (`depth` open before it) holds code left of `column`:
    of the block the left context's last line is in and of every line of the right context's next ones (`if x:` at
    the module's column before a class's methods, which it would take from the class; `class x:` there keeps them
    a class's)."""
    first, *lines = written.split("\n")
    if not lines:
        return False
    depth += bracket_change(first)
    first_line = right.split("\n", 1)[0]
    for line in lines[:-1] + [lines[-1] + first_line]:
        code = line.lstrip(" \t\f")
        if (depth <= 0 and code and not code.startswith(("#", "class "))
                and indentation_column(line[:len(line) - len(code)]) < column):
            return True
        depth += bracket_change(line)
    return False


def bracket_change(text: str) -> int:
    """The brackets `text` opens, less those it closes (a finish writes no string but at its end)."""
    return sum(text.count(opening) for opening in "([{") - sum(text.count(closing) for closing in ")]}")


def comments_code_out(state: FimState) -> bool:
    """Whether the text up to `state` ends in a comment that the right context's first line goes on with, where
    that line holds more than blanks (code, as the right context was written, made comment)."""
    if state.lexer.token != lx.S_COMMENT:
        return False
    right = state.context.right
    line_end = right.find("\n")
    return bool((right if line_end < 0 else right[:line_end]).strip())


def binds(state: FimState, name: str) -> bool:
    """Whether the middle up to `state` wrote `name` where it may bind it (as the name judge reads it), or ends
    with it (what follows decides), or ends where the right context's first line binds what it names (`def `
    before `from_dict(config):`). A def's return annotation loads its names: the judge, lenient there, counts them
    with the parameters, and a search that took `->config` for a binding checked every end after it."""
    names = state.names
    if names is None:
        return False
    header = _open_header(state) if names.header_free else None
    if header is not None and "->" in header:
        return name in names.written and name in WORD.findall(header[:header.index("->")])
    if name in names.written or names.pending == name or state.lexer.text == name:
        return True
    return names.previous in _BINDING_KEYWORDS and name in first_line_words(state.context.right)


@lru_cache(maxsize=8)
def first_line_words(right: str) -> frozenset[str]:
    """The words of the right context's first line."""
    line_end = right.find("\n")
    return frozenset(WORD.findall(right if line_end < 0 else right[:line_end]))


def _open_header(state: FimState) -> str | None:
    """The text of the `def` header the middle is in, from its keyword (None where that is not near, or where the
    header is a class's)."""
    tail = state.text[-HEADER_CHARS:]
    keywords = list(_HEADER_KEYWORD.finditer(tail))
    return tail[keywords[-1].start():] if keywords and keywords[-1].group() == "def" else None


# Keywords after which the names that follow are bound (`import`'s, a `for`'s targets, a def's name and parameters)
_BINDING_KEYWORDS = frozenset({"def", "class", "for", "import", "as", "lambda", "global", "nonlocal"})
# The longest def header whose return annotation `binds` looks for, and the keywords that begin a header
HEADER_CHARS = 2_000
_HEADER_KEYWORD = re.compile(r"(?<![.\w])(?:def|class)\b")
