"""The Python 3.11 grammar (`python.ebnf`) and the terminal alphabet it is written over.

The lexer emits exactly these terminal names: `NAME`, `NUMBER`, `STRING`, `NEWLINE`, `INDENT`, `DEDENT`, every
keyword by its text, the soft keywords `match` and `case` by their text (always, even where they are used as
identifiers: the grammar takes them wherever it takes a NAME), and every operator or delimiter by its text. The
token stream has the shape of CPython's `tokenize` output without NL, COMMENT, ENCODING and ENDMARKER tokens.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from earley import Grammar, parse_ebnf

GRAMMAR_PATH = Path(__file__).with_name("python.ebnf")

START = "file_input"

#: Hard keywords of Python 3.11 (`keyword.kwlist`), each a terminal named by its text.
KEYWORDS: tuple[str, ...] = (
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
)  # fmt: skip

#: Soft keywords that the lexer always emits by their text; `_` and `type` are plain NAMEs.
SOFT_KEYWORDS: tuple[str, ...] = ("match", "case")

#: Operators and delimiters, each a terminal named by its text (`...`, `->` and `:=` are single tokens).
OPERATORS: tuple[str, ...] = (
    "(", ")", "[", "]", "{", "}", ":", ",", ";", ".", "+", "-", "*", "/", "//", "%", "**", "@", "|", "&", "^",
    "~", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=",
    "|=", "&=", "^=", "<<=", ">>=", "->", "...", ":=",
)  # fmt: skip

#: Terminals that stand for a class of lexemes or for layout.
TOKEN_CLASSES: tuple[str, ...] = ("NAME", "NUMBER", "STRING", "NEWLINE", "INDENT", "DEDENT")

#: The whole terminal alphabet of the grammar.
TERMINALS: tuple[str, ...] = TOKEN_CLASSES + KEYWORDS + SOFT_KEYWORDS + OPERATORS


def grammar_text() -> str:
    """The EBNF text of the grammar."""
    return GRAMMAR_PATH.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_grammar() -> Grammar:
    """The Python 3.11 grammar, start symbol `file_input`, over exactly `TERMINALS` (parsed once, cached)."""
    grammar = parse_ebnf(grammar_text(), start=START)
    names = {grammar.names[symbol] for symbol in grammar.terminals}
    if names != set(TERMINALS):
        raise ValueError(
            f"python.ebnf's terminals differ from TERMINALS: extra {sorted(names - set(TERMINALS))}, "
            f"missing {sorted(set(TERMINALS) - names)}"
        )
    return grammar
