"""CPython's own verdict on a source text, the final judge of validity everywhere in fimlsp."""

from __future__ import annotations

import ast
import warnings


def module_or_error(source: str) -> ast.Module | Exception:
    """The module CPython parses from `source`, or the error it raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like are warnings, not errors
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as error:  # NUL bytes; too deep to parse
            return error


def module_or_error_line(source: str) -> ast.Module | int:
    """The module CPython parses from `source`, or the 1-based line it blames (1 when it names none)."""
    module = module_or_error(source)
    return blamed_line(module) if isinstance(module, Exception) else module


def blamed_line(error: Exception) -> int:
    """The 1-based line a parse error blames: a syntax error's line, else (or when it names none) 1."""
    return max(1, error.lineno or 1) if isinstance(error, SyntaxError) else 1


def error_text(source: str) -> str | None:
    """Where and why CPython refuses `source` (`line 3, column 5: expected ':'`); None if it parses."""
    module = module_or_error(source)
    if isinstance(module, SyntaxError):
        return f"line {max(1, module.lineno or 1)}, column {module.offset or 1}: {module.msg}"
    return f"{type(module).__name__}: {module}" if isinstance(module, Exception) else None


def syntax_error_line(source: str) -> int | None:
    """None if `source` is a valid module, else the 1-based line CPython blames (1 when it names none)."""
    module = module_or_error_line(source)
    return module if isinstance(module, int) else None


def parses(source: str) -> bool:
    """True iff `ast.parse(source)` succeeds."""
    return syntax_error_line(source) is None


def parses_statements(source: str, indent: str = "") -> bool:
    """True iff `source` is a valid run of statements of a block indented by `indent` all through (of the module
    when `indent` is empty): it is the body of a compound statement with that indentation, and nothing in it
    dedents out of the block."""
    if not indent:
        return parses(source)
    module = module_or_error_line(f"if 1:\n{indent}pass\n{source}")
    return not isinstance(module, int) and len(module.body) == 1
