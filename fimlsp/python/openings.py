"""Starts of compound statements and indentations that a finish may write (`fimlsp.python.finish`): the pieces
its search takes where the recognizer's estimate cannot lead it, since it does not see the right context's
indentation until the left is known."""

from __future__ import annotations

import re

from fimlsp.python import lexemes as lx
from fimlsp.python.facts import TRY_CLAUSE
from fimlsp.python.lexer import indentation_column

# The right context's first line goes on a `for` header, or is a `def` header's name and parameters.
_REST_OF_FOR = re.compile(r"([ \t]*)in\b")
_DEF_REST = re.compile(r"[^\W\d]\w*[ \t]*\(")
_OPENER = {")": "(", "]": "[", "}": "{"}
# Lines of the right context in which a header's rest is looked for.
HEADER_LINES = 8
# How far after the right context's first line a clause that needs a `try` before it is looked for.
CLAUSE_LOOKAHEAD = 2000


def header(name: str) -> str:
    """The start of a compound statement's header, for a right context that begins with the header's colon or with
    a line indented deeper than any open block (then with the colon)."""
    return "if " + name


def compound_openings(right: str, indents: tuple[tuple[int, int], ...], indentation: str, name: str) -> list[str]:
    """Starts of a compound statement, written on a line indented by `indentation`, that the right context goes on
    with validly (`name`: the name written where one is needed, `x` below):

    - `if x:` before a first line of code deeper than every open block;
    - `if `, `if x` or `for x` before the rest of a header (`all(y):`, `or y:`, ` in y:`), and `if x(` before the
      rest of a header whose bracket the middle must open (`y,\n    z):`);
    - a header and a deeper line before a statement that a line deeper than the header follows (`if x:`) or an
      `except` or `finally` at the header's column (`try:`), and `except:` and a deeper line left of the
      innermost block (a `try` body the middle must close); the deeper line starts with a name where the right
      context goes on with an operator (`= f(y)`).

    The recognizer's estimate cannot lead a search to them (it does not see the right context's indentation
    until the left is known), and without them a finish before such a right context is rarely found."""
    line_end = right.find("\n")
    first_line = right if line_end < 0 else right[:line_end]
    openings = []
    code = first_line.strip(" \t\f")
    if not code:
        if line_end >= 0 and _first_code_column(right, line_end + 1) > indents[-1][0]:
            openings.append(header(name) + ":")
    elif not code.startswith("#") and "#" not in first_line and code.endswith(":"):
        rest_of_for = _REST_OF_FOR.match(first_line)
        openings.append(("for x" if rest_of_for.group(1) else "for x ") if rest_of_for else "if ")
        if lx.is_identifier_char(first_line[0]):  # `or y:` goes on `if x` as `if xor y:`
            openings.append(header(name))
        if _DEF_REST.match(first_line):  # `from_dict(config):` is a `def` header whose parameters the body loads
            openings.append("def ")
        elif _header_openers(right[:CLAUSE_LOOKAHEAD]) == "(":  # `**kwargs):`: the rest of its parameters
            openings.append("def " + name + "(")
    else:
        openers = _header_openers(right[:CLAUSE_LOOKAHEAD])
        if openers:  # `y,\n    z):` ends a header whose bracket the middle opens: `if x(`
            openings.append("if " + "".join(("" if opener == "{" else name) + opener for opener in openers))
            if openers == "(":  # or the parameters of a `def` (`**kwargs):` and a body that loads them)
                openings.append("def " + name + "(")
    if code and line_end >= 0 and " " * len(indentation) == indentation:
        column = len(indentation)
        unit = indents[-1][0] - indents[-2][0] if len(indents) > 1 else 4  # the innermost block's step
        body = "\n" + indentation + " " * max(1, unit)
        bodies = [body]
        if not (lx.is_identifier_char(code[0]) or code[0] in "\"'"):  # `= f(x)`, `.append(y)`: a name before it
            bodies.append(body + name + " ")
        if _clause_at(right[line_end + 1:line_end + 1 + CLAUSE_LOOKAHEAD], column):
            openings.extend("try:" + body for body in bodies)
        elif _first_code_column(right, line_end + 1) > column:  # the right context's first lines are a body
            openings.extend(header(name) + ":" + body for body in bodies)
        if column < indents[-1][0]:  # a `try` body open deeper may need its clause before the right context
            openings.extend("except:" + body for body in bodies)
    return openings


def _header_openers(text: str) -> str:
    """The brackets a middle must open for `text` to be the rest of a header (`a, b):` and then its body: `(`),
    outermost first; empty when `text` closes none within its first lines, or the logical line that closes them
    does not end with a colon. Strings and comments are skipped roughly: the recognizer checks the opening."""
    stack: list[str] = []
    openers, last, lines = "", "", 0
    index = 0
    while index < len(text):
        char = text[index]
        if char in "([{":
            stack.append(char)
        elif char in ")]}":
            if stack:
                stack.pop()
            else:
                openers = _OPENER[char] + openers
        elif char in "\"'#":
            index = text.find("\n" if char == "#" else char, index + 1)
            if index < 0:
                return ""
            if char == "#":
                continue
        elif char == "\n":
            if openers and not stack:
                return openers if last == ":" else ""
            lines += 1
            if lines > HEADER_LINES:
                return ""
        if not char.isspace():
            last = char
        index += 1
    return ""


def _first_code_column(text: str, start: int = 0) -> int:
    """The column of the first line of `text` from `start` that holds code; -1 when none does. Line by line, as
    far as that line: the search asks it at every line break it considers, and a right context may be long."""
    while True:
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        code = line.lstrip(" \t\f")
        if code and not code.startswith("#"):
            return indentation_column(line[:len(line) - len(code)])
        if end < 0:
            return -1
        start = end + 1


def _clause_at(text: str, column: int) -> bool:
    """Whether a line of `text` at `column` (spaces) starts an `except` or `finally` clause, before any other line
    at or left of that column."""
    for line in text.split("\n"):
        code = line.lstrip(" ")
        if not code or code.startswith("#") or len(line) - len(code) > column:
            continue
        return len(line) - len(code) == column and TRY_CLAUSE.match(code) is not None
    return False


def indentations(indents: tuple[tuple[int, int], ...], written: str, following: str = "") -> list[str]:
    """Texts that, between the indentation `written` so far on a line and `following` (the right context's, for a
    finish that ends there), reach an open block's column or one unit deeper than the innermost: spaces where the
    file indents with spaces, tabs where it indents with tabs only."""
    (column, alt_column) = indents[-1]
    unit = column - indents[-2][0] if len(indents) > 1 else 4
    tabs = column != alt_column
    targets = set(indents) | {(column + 8, alt_column + 1) if tabs else (column + unit, alt_column + unit)}
    texts = []
    for level, alt_level in sorted(targets):
        for count in range(level + 1):
            text = "\t" * count if tabs else " " * count
            line = written + text + following
            if indentation_column(line) == level and _alt_column(line) == alt_level:
                texts.append(text)
                break
    return texts


def written_indentation(column: int, alt_column: int) -> str | None:
    """The indentation a line holds so far, where it is all spaces or all tabs."""
    if column == alt_column:
        return " " * column
    return "\t" * alt_column if column == 8 * alt_column else None


def _alt_column(whitespace: str) -> int:
    """The column with tabs as one column, as CPython's consistency check counts it."""
    column = 0
    for char in whitespace:
        column = 0 if char == "\f" else column + 1
    return column
