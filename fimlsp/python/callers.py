"""The file's own calls of a function whose header the middle writes must still fit it (issue 49, calls that fit):
a middle that gives `def _unsupported_upgrade_warning(self)` a parameter `msg` breaks the calls below that pass
none (uvicorn's h11_impl.py, held out: pyright's reportCallIssue).

Checked on the whole file at the middle's end, with the call judge (`fimlsp.python.calls` judges the calls the
middle writes; these are the right and left contexts'), and not where the promise covers a region of a big file
(its text is not the file's). Judged only where which function a call reaches is certain
from the text: a function of the module or a method of a class of it whose name the file binds once (a method's
name defined in no other class of the file: an override may take other arguments), not decorated (but
`staticmethod` and `classmethod`), called as `name(...)` (a function) or `self.name(...)`/`cls.name(...)` in a
method of its class, without `*` or `**` unpacking. Counts, keyword names and the required parameters are read as
the call judge reads a signature (`fimlsp.python.signatures.Signature`).
"""

from __future__ import annotations

import ast
import re

from fimlsp.python.signatures import Signature
from fimlsp.python.syntax import module_or_error, node_offsets

_DEFINES = re.compile(r"(?<![.\w])def\s")
_KEEPING = frozenset({"staticmethod", "classmethod"})


def broken_callers(text: str, middle_start: int, middle_end: int, tree: ast.Module | None = None) -> frozenset[str]:
    """The functions whose header the middle, `text[middle_start:middle_end]`, writes (in part) that a call of the
    rest of the file (which compiles; `tree`, its syntax tree where it was built already) does not fit."""
    header_start = text.rfind("\n", 0, middle_start) + 1
    if _DEFINES.search(text, header_start, middle_end) is None:
        return frozenset()
    tree = tree or module_or_error(text)
    if not isinstance(tree, ast.Module):
        return frozenset()
    offset = node_offsets(text)
    bound = _bindings(tree)
    broken = set()
    for holder, function in _definitions(tree):
        header = offset(function.lineno, function.col_offset), offset(function.body[0].lineno,
                                                                        function.body[0].col_offset)
        if not (header[0] < middle_end and middle_start < header[1]) or bound.get(function.name, 0) != 1:
            continue
        signature = _signature(function, holder)
        if signature is None:
            continue
        for call in _calls(tree if holder is None else holder, function.name, holder is not None):
            start, end = offset(call.lineno, call.col_offset), offset(call.end_lineno, call.end_col_offset)
            if (end <= middle_start or start >= middle_end) and not _fits(call, signature):
                broken.add(function.name)
    return frozenset(broken)


def _definitions(tree: ast.Module):
    """(None, function) for the module's functions, (class, method) for its classes' methods."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node, inner


def _bindings(tree: ast.Module) -> dict[str, int]:
    """How often the file binds each name, in any scope: a `def`, a `class`, a target, an import, a parameter, and
    an attribute's name where it is stored (`self.run = ...` puts another callable before a method)."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names = [node.attr]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef, holder: ast.ClassDef | None) -> Signature | None:
    """What a call through the name (a method: through `self` or `cls`) may pass; None where it is not certain."""
    decorators = [_last_name(decorator) for decorator in function.decorator_list]
    if any(name not in _KEEPING for name in decorators) or (holder is None and decorators):
        return None
    arguments = function.args
    every = [each.arg for each in arguments.posonlyargs + arguments.args]
    positional, only = every, len(arguments.posonlyargs)
    if holder is not None and "staticmethod" not in decorators:
        if not every:
            return None  # a method with no first parameter: every call through self fails anyway
        positional, only = every[1:], max(only - 1, 0)
    required = set(every[:len(every) - len(arguments.defaults)]) & set(positional)
    required |= {each.arg for each, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is None}
    return Signature(tuple(positional), only, frozenset(each.arg for each in arguments.kwonlyargs),
                     frozenset(required), arguments.vararg is not None, arguments.kwarg is not None)


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _calls(scope: ast.AST, name: str, method: bool):
    """The calls of `name` in `scope`: `name(...)` for a function; `self.name(...)` or `cls.name(...)` through a
    method's first parameter for a method (in the class's own methods, not in nested classes)."""
    if not method:
        yield from (node for node in ast.walk(scope) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name) and node.func.id == name)
        return
    for inner in scope.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        parameters = inner.args.posonlyargs + inner.args.args
        if not parameters or any(_last_name(each) == "staticmethod" for each in inner.decorator_list):
            continue
        first = parameters[0].arg
        for node in ast.walk(inner):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == first):
                yield node


def _fits(call: ast.Call, signature: Signature) -> bool:
    """Whether `call` may fit `signature` (unpacked arguments fit whatever they unpack to)."""
    if any(isinstance(each, ast.Starred) for each in call.args) or any(each.arg is None for each in call.keywords):
        return True
    positional = len(call.args)
    keywords = [each.arg for each in call.keywords]
    if not signature.takes_positional(positional) or len(set(keywords)) != len(keywords):
        return False
    if not all(signature.takes_keyword(keyword, positional, False) for keyword in keywords):
        return False
    return signature.satisfied(positional, frozenset(keywords))
