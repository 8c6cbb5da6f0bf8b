"""CPython's own verdict on a source text, the final judge of validity everywhere in fimlsp."""

from __future__ import annotations

import ast
import warnings


def syntax_error_line(source: str) -> int | None:
    """None if `source` is a valid module, else the 1-based line CPython blames (1 when it names none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like are warnings, not errors
        try:
            ast.parse(source)
        except SyntaxError as error:
            return max(1, error.lineno or 1)
        except (ValueError, MemoryError, RecursionError):  # NUL bytes; inputs too deep for the parser
            return 1
    return None


def parses(source: str) -> bool:
    """True iff `ast.parse(source)` succeeds."""
    return syntax_error_line(source) is None
