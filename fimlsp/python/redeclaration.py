"""No redeclaration of what the file defines (issue 49, pyright's reportRedeclaration): a middle may not define a
function or class whose name the right context or the middle itself defines again in the same block, nor define
again one the left context defined there (a model that loops writes the same method over and over).

Checked on the whole file at the middle's end (`FileNames.redeclared`, with the name judge): a `def` or `class`
header the middle writes may still end up in another block, as the middle can close it and open another (a method
of one class, then `class B:` and the right context's method of the same name), so only the finished file tells. What
the true code could do is never refused: overloads (`@overload`, `@typing.overload`), a property's setter, getter or
deleter, `@f.register` registrations (`functools.singledispatch`), any decorator called on an attribute
(`@app.route(...)`, which registers the first definition), definitions in different blocks (the right context's
inside an `if` or `try`: a conditional definition), and a first definition that is used before the second.
"""

from __future__ import annotations

import ast
import re

from fimlsp.python.syntax import parsed

_DEFINES = re.compile(r"(?<![.\w])(?:def|class)\s")
_EXEMPT_DECORATORS = frozenset({"overload", "setter", "getter", "deleter", "register"})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def redeclared(text: str, middle_start: int, middle_end: int) -> frozenset[str]:
    """The names of functions and classes defined twice in one block of `text` (which compiles) where the middle,
    `text[middle_start:middle_end]`, writes one of the two definitions."""
    if not _DEFINES.search(text, middle_start, middle_end):
        return frozenset()
    try:
        tree = parsed(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    lines = text.splitlines(keepends=True)

    def position(node: ast.AST) -> int:
        line = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
        return line_starts[node.lineno - 1] + len(line.encode("utf-8")[:node.col_offset].decode("utf-8", "replace"))

    found = set()
    for block in _blocks(tree):
        for index, first in enumerate(block):
            if not isinstance(first, _DEFINITIONS) or position(first) >= middle_end:
                continue
            later = _next_definition(block, index, first.name)
            if (later is None or position(later) < middle_start or _exempt(first) or _exempt(later)
                    or not (middle_start <= position(first) or position(later) < middle_end)):
                continue
            if not any(_loads(statement, first.name) for statement in block[index + 1:block.index(later)]):
                found.add(first.name)
    return frozenset(found)


def _blocks(tree: ast.AST):
    """Every statement list of the tree (a module's, a body, an `else`, a handler's, a case's)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                yield statements


def _next_definition(block: list[ast.stmt], index: int, name: str) -> ast.stmt | None:
    for statement in block[index + 1:]:
        if isinstance(statement, _DEFINITIONS) and statement.name == name:
            return statement
    return None


def _exempt(definition: ast.stmt) -> bool:
    for decorator in definition.decorator_list:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute):
            return True
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        last = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if last in _EXEMPT_DECORATORS:
            return True
    return False


def _loads(statement: ast.stmt, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(statement))
