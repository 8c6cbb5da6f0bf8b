"""A method's receiver rebound to a built-in value whose members its later loads lack (issue 49, members after a
dot): the middle `self` before the right context's ` = [(name, value) for ...]` makes every `self.access_log` below
an attribute of a list (held-out uvicorn zttp_impl.py, node cut: pyright's reportAttributeAccessIssue, three times).

Real code rebinds `self` (asyncio's `self = None`, weakref's `self = self()`), so only the value's type judges: a
display or comprehension (list, dict, set, tuple), a string or number literal, an f-string. Judged at the member
judge's end on the whole file, where the assignment is on the middle's lines and the middle wrote part of it: the
loads of the receiver's attributes that follow it in the function, up to the receiver's next binding, must be
members of the value's type. A pattern finds the candidate lines; only there is the file parsed.
"""

from __future__ import annotations

import ast
import re

from fimlsp.lines import line_bounds
from fimlsp.python.syntax import module_or_error, node_offsets, overlaps

_REBINDING = re.compile(r"^[ \t]*(?:self|cls)[ \t]*=(?!=)", re.MULTILINE)
_DISPLAYS = {ast.List: list, ast.ListComp: list, ast.Dict: dict, ast.DictComp: dict, ast.Set: set,
             ast.SetComp: set, ast.Tuple: tuple, ast.JoinedStr: str}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def rebound_members(text: str, middle_start: int, middle_end: int) -> frozenset[str]:
    """The attributes that a method of the whole file `text` (which compiles) loads on its receiver after the
    middle, `text[middle_start:middle_end]`, rebinds the receiver to a built-in value that lacks them."""
    if not _REBINDING.search(text, *line_bounds(text, middle_start, middle_end)):
        return frozenset()
    tree = module_or_error(text)
    if not isinstance(tree, ast.Module):
        return frozenset()
    offset = node_offsets(text)
    lacking: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not function.args.args:
            continue
        receiver = function.args.args[0].arg
        if receiver not in ("self", "cls"):
            continue
        for assignment, kind in _rebindings(function, receiver):
            if overlaps(offset, assignment, middle_start, middle_end):
                lacking |= {attribute for attribute in _loads_after(function, receiver, assignment)
                            if not hasattr(kind, attribute)}
    return frozenset(lacking)


def _own_nodes(function: ast.AST):
    """The nodes of `function`'s own code (not of the functions, classes and lambdas in it), in no set order."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _rebindings(function: ast.AST, receiver: str):
    """The assignments of `function`'s own code that bind `receiver` alone to a value of a built-in type, and the
    type."""
    for node in _own_nodes(function):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == receiver):
            kind = _DISPLAYS.get(type(node.value))
            if kind is None and isinstance(node.value, ast.Constant) and not isinstance(node.value.value, type(...)):
                kind = type(node.value.value)
            if kind is not None and kind is not type(None):
                yield node, kind


def _loads_after(function: ast.FunctionDef | ast.AsyncFunctionDef, receiver: str, assignment: ast.Assign
                 ) -> set[str]:
    """The attributes `function` loads on `receiver` in the code that runs after `assignment` where it runs (the
    statements after it in its block and in each block around it: not an `else` beside it), before the text binds
    `receiver` again (a later binding may be on another branch, so nothing after it is read)."""
    after = (assignment.end_lineno, assignment.end_col_offset)
    nodes = [node for statement in _statements_after(function.body, assignment) or []
             if not isinstance(statement, _SCOPES) for node in (statement, *_own_nodes(statement))]
    rebound = min(((node.lineno, node.col_offset) for node in nodes
                   if isinstance(node, ast.Name) and node.id == receiver and isinstance(node.ctx, ast.Store)),
                  default=(float("inf"), 0))
    return {node.attr for node in nodes
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
            and node.value.id == receiver and after < (node.lineno, node.col_offset) < rebound}


def _statements_after(body: list[ast.stmt], statement: ast.stmt) -> list[ast.stmt] | None:
    """The statements after `statement` in its block and in the blocks around it within `body`, innermost first;
    None where `body` does not hold it."""
    for index, each in enumerate(body):
        if each is statement:
            return body[index + 1:]
        if isinstance(each, _SCOPES):
            continue
        for block in _blocks(each):
            inner = _statements_after(block, statement)
            if inner is not None:
                return inner + body[index + 1:]
    return None


def _blocks(statement: ast.stmt):
    """The statement lists of a compound statement: its body, `else`, `finally`, handlers' and cases' bodies."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for part in getattr(statement, "handlers", []) + getattr(statement, "cases", []):
        yield part.body
