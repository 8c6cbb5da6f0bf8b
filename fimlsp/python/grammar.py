"""The Python 3.11 grammar (`python.ebnf`) and the terminal alphabet it is written over.

The lexer emits exactly these terminal names: `NAME`, `NUMBER`, `STRING`, `NEWLINE`, `INDENT`, `DEDENT`, every
keyword by its text, the soft keywords `match` and `case` by their text (always, even where they are used as
identifiers: the grammar takes them wherever it takes a NAME), and every operator or delimiter by its text. The
token stream has the shape of CPython's `tokenize` output without NL, COMMENT, ENCODING and ENDMARKER tokens.
"""

from __future__ import annotations

import gc
from functools import lru_cache
from pathlib import Path

from earley import Grammar, RightQuotients, parse_ebnf
from fimlsp.python import finish as finishing
from fimlsp.python import lexemes as lx

GRAMMAR_PATH = Path(__file__).with_name("python.ebnf")

START = "file_input"

#: The terminal alphabet, defined once with the lexemes that produce it.
TERMINALS = lx.TERMINALS


def grammar_text() -> str:
    """The EBNF text of the grammar."""
    return GRAMMAR_PATH.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_grammar() -> Grammar:
    """The Python 3.11 grammar, start symbol `file_input`, over exactly the lexer's terminals (parsed once, cached)."""
    grammar = parse_ebnf(grammar_text(), start=START)
    names = {grammar.names[symbol] for symbol in grammar.terminals}
    if names != TERMINALS:
        raise ValueError(
            f"python.ebnf's terminals differ from the lexer's: extra {sorted(names - TERMINALS)}, "
            f"missing {sorted(TERMINALS - names)}"
        )
    return grammar


@lru_cache(maxsize=None)
def python_quotients() -> RightQuotients:
    """Python's grammar, ready to be quotiented by right contexts (built once a process). It depends on no input:
    it is the grammar, not a cache of anyone's text (compiled right contexts are, and live in the
    `RightContextCache` of their owner). What it holds lives as long as the process, so the cycle collector is
    told to leave it out of its passes (`gc.freeze`)."""
    quotients = RightQuotients(load_grammar(), finishing.TERMINAL_COSTS)
    gc.collect()
    gc.freeze()
    return quotients
