"""CPython's own verdict on a source text: `compiles` is the final judge of validity everywhere in fimlsp; `parses`
(the parser's alone) answers where the question is the shape of the text (where statements start, which blocks
hold a line)."""

from __future__ import annotations

import ast
import threading
import warnings
from collections.abc import Callable
from contextlib import contextmanager

from fimlsp.lines import line_starts
from fimlsp.syntax_trees import parsed


def node_offsets(source: str) -> Callable[[int, int], int]:
    """What turns a syntax tree node's place in `source` (its 1-based line and its column in UTF-8 bytes, as `ast`
    gives them) into a character offset."""
    starts = line_starts(source)  # (split once in C, sliced only where asked: a judge asks at each end a search checks)

    def offset(line: int, column: int) -> int:
        if line > len(starts):
            return len(source)
        start = starts[line - 1]
        text = source[start:starts[line]] if line < len(starts) else source[start:]
        if text.isascii():
            return start + min(column, len(text))
        return start + len(text.encode("utf-8")[:column].decode("utf-8", "replace"))

    return offset


def overlaps(offset: Callable[[int, int], int], node: ast.AST, start: int, end: int) -> bool:
    """Whether `node` (placed by `offset`, `node_offsets`'s) has text in the span `start:end` (a middle's)."""
    return offset(node.lineno, node.col_offset) < end and offset(node.end_lineno, node.end_col_offset) > start


@contextmanager
def one_parse():
    """Within it (on this thread), `module_or_error` parses a text once, however often it is asked of the same
    string: the judges of a middle's end each read the whole file (names, redeclarations, members, calls), and on a
    big file each parse costs more than a keystroke's share (20-70 ms on 277 kB). The trees go with the scope."""
    if getattr(_SCOPE, "trees", None) is not None:
        yield
        return
    _SCOPE.trees = {}
    try:
        yield
    finally:
        _SCOPE.trees = None


_SCOPE = threading.local()


def module_or_error(source: str) -> ast.Module | Exception:
    """The module CPython parses from `source`, or the error it raises (parsed once for a text within `one_parse`:
    the tree is shared, and its readers must leave it as they found it)."""
    trees = getattr(_SCOPE, "trees", None)
    if trees is not None:
        kept = trees.get(id(source))
        if kept is not None and kept[0] is source:
            return kept[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like are warnings, not errors
        try:
            module = parsed(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as error:  # NUL bytes; too deep to parse
            module = error
    if trees is not None:
        trees[id(source)] = source, module
    return module


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


# CPython's compiler errors that depend on bindings elsewhere in the file: a text that stands for the file (a window)
# may leave out the binding that a `nonlocal` names.
_BINDING_ELSEWHERE = ("no binding for nonlocal",)


def compile_error(source: str) -> Exception | None:
    """The error CPython's compiler raises on `source` as a module, or None: the parser's errors and what its symbol
    table and code generator refuse after parsing (`return` outside a function, `break` outside a loop, a late
    `from __future__` import, duplicate parameters …). Nothing is run; fimlsp's own `from __future__` imports are
    not inherited."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes, `is` with a literal and the like are warnings, not errors
        try:
            compile(source, "<fim>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as error:
            return error
    return None


def compiles(source: str) -> bool:
    """True iff CPython compiles `source` as a module (see `compile_error`)."""
    return compile_error(source) is None


def compiles_standing_in(source: str) -> bool:
    """`compiles` for a text that stands for a file, leaving some of its statements out: an error that may come from
    a binding left out is not counted (the whole file's `compiles` judges it)."""
    error = compile_error(source)
    return error is None or (isinstance(error, SyntaxError) and str(error.msg).startswith(_BINDING_ELSEWHERE))


def parses_statements(source: str, indent: str = "") -> bool:
    """True iff `source` is a valid run of statements of a block indented by `indent` all through (of the module
    when `indent` is empty): it is the body of a compound statement with that indentation, and nothing in it
    dedents out of the block."""
    if not indent:
        return parses(source)
    module = module_or_error_line(f"if 1:\n{indent}pass\n{source}")
    return not isinstance(module, int) and len(module.body) == 1
