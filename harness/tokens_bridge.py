"""Test-only bridge: Python source text to the grammar's terminals, via the standard library's `tokenize`.

This is the test oracle for `fimlsp/python/python.ebnf`, not product code (the product has its own lexer). The
terminal stream has the shape the grammar expects: tokenize's stream without NL, COMMENT, ENCODING and
ENDMARKER, keywords and the soft keywords `match`/`case` by their text, other identifiers as NAME, operators by
their text, NUMBER, STRING, NEWLINE, INDENT, DEDENT.
"""

from __future__ import annotations

import io
import keyword
import tokenize
from typing import NamedTuple

from fimlsp.python.lexemes import KEYWORDS, OPERATORS, SOFT_KEYWORDS

_KEYWORDS = frozenset(KEYWORDS)
_SOFT_KEYWORDS = frozenset(SOFT_KEYWORDS)
_OPERATORS = frozenset(OPERATORS)
_DROPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.ENDMARKER})
_CLASSES = {
    tokenize.NUMBER: "NUMBER",
    tokenize.STRING: "STRING",
    tokenize.NEWLINE: "NEWLINE",
    tokenize.INDENT: "INDENT",
    tokenize.DEDENT: "DEDENT",
}

assert _KEYWORDS == frozenset(keyword.kwlist), "grammar KEYWORDS differ from this Python's keyword.kwlist"


class BridgeError(ValueError):
    """The source does not tokenize, or yields a token that is no terminal of the grammar."""


class Terminal(NamedTuple):
    name: str  # the grammar terminal
    text: str  # the token's source text ('' for DEDENT and for an implicit final NEWLINE)
    start: tuple[int, int]  # (row, column) as tokenize reports it, rows from 1
    end: tuple[int, int]


def tokens(source: str | bytes) -> list[Terminal]:
    """The grammar terminals of `source`, with their text and positions. Raises BridgeError."""
    if isinstance(source, str):
        readline = io.StringIO(source).readline
        generate = tokenize.generate_tokens
    else:
        readline = io.BytesIO(source).readline
        generate = tokenize.tokenize
    result: list[Terminal] = []
    try:
        for token in generate(readline):
            kind = token.type
            if kind in _DROPPED:
                continue
            if kind == tokenize.ERRORTOKEN and result and _continues_name(result[-1], token):
                # tokenize's `\w` misses some identifier characters (U+E0100 in test_unicode_identifiers.py)
                last = result[-1]
                text = last.text + token.string
                result[-1] = Terminal(_name_terminal(text), text, last.start, token.end)
                continue
            if kind == tokenize.NAME:
                name = _name_terminal(token.string)
            elif kind == tokenize.OP:
                if token.string not in _OPERATORS:
                    raise BridgeError(f"{token.start}: operator {token.string!r} is no terminal")
                name = token.string
            elif kind in _CLASSES:
                name = _CLASSES[kind]
            else:
                raise BridgeError(f"{token.start}: {tokenize.tok_name[kind]} {token.string!r}")
            result.append(Terminal(name, token.string, token.start, token.end))
    except (tokenize.TokenError, IndentationError, SyntaxError) as error:
        raise BridgeError(str(error)) from error
    return result


def _name_terminal(text: str) -> str:
    return text if text in _KEYWORDS or text in _SOFT_KEYWORDS else "NAME"


def _continues_name(last: Terminal, token: tokenize.TokenInfo) -> bool:
    return (
        last.end == token.start
        and last.text.isidentifier()
        and (last.text + token.string).isidentifier()
    )


def terminals(source: str | bytes) -> list[str]:
    """Just the terminal names of `source`. Raises BridgeError."""
    return [token.name for token in tokens(source)]
