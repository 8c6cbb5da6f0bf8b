"""A built-in class left uncalled where its annotation declares an instance of it (issue 49, calls that fit):
`self.trusted_hosts: set[str] = set` stores the class `set`, not a set (held-out uvicorn proxy_headers.py, where the
model forgot the call: pyright's "Cannot assign to attribute" and, on a name, reportAssignmentType).

Judged on the middle's lines of the whole file at the middle's end, with the call judge. A pattern finds the lines
where an annotated assignment's value is one bare name, and only there the file is parsed: the statement must be
an annotated assignment in code (not a string's text), its value a built-in class the file never binds again, and
every part of its annotation an instance of a built-in class or None (`set[str] | None`, `Optional[Set[str]]`,
`List[int]`, `int | str`). A class object is none of them, whatever the class (`type[int]`, `Any`, `object`,
`Callable` and the file's own classes are not judged).
"""

from __future__ import annotations

import ast
import re

from fimlsp.lines import line_bounds
from fimlsp.python.syntax import module_or_error, node_offsets, overlaps

# The built-in classes judged, by the names an annotation may give their instances (typing's aliases too).
_INSTANCE_NAMES = {
    "list": "list", "List": "list", "dict": "dict", "Dict": "dict", "set": "set", "Set": "set",
    "frozenset": "frozenset", "FrozenSet": "frozenset", "tuple": "tuple", "Tuple": "tuple", "str": "str",
    "int": "int", "float": "float", "complex": "complex", "bytes": "bytes", "bytearray": "bytearray", "bool": "bool",
}
_CLASSES = frozenset(_INSTANCE_NAMES.values())
_TYPING = ("typing", "typing_extensions")
_ANNOTATED_NAME_VALUE = re.compile(r"^[ \t]*[A-Za-z_][\w.]*[ \t]*:[^=\n#]+=[ \t]*(?P<value>[A-Za-z_]\w*)[ \t]*(?:#.*)?$",
                                   re.MULTILINE)


def uncalled_classes(text: str, middle_start: int, middle_end: int) -> frozenset[str]:
    """The built-in classes that an annotated assignment on the lines of the middle, `text[middle_start:middle_end]`,
    assigns uncalled where its annotation declares an instance of a built-in class or None (`text` compiles)."""
    line_start, line_end = line_bounds(text, middle_start, middle_end)
    lines = text[line_start:line_end]
    suspects = {match.group("value") for match in _ANNOTATED_NAME_VALUE.finditer(lines)} & _CLASSES
    if not suspects:
        return frozenset()
    tree = module_or_error(text)
    if not isinstance(tree, ast.Module):
        return frozenset()
    first, last = text.count("\n", 0, line_start) + 1, text.count("\n", 0, middle_end) + 1
    bound, offset = _bound_names(tree), node_offsets(text)

    return frozenset(node.value.id for node in ast.walk(tree)
                     if isinstance(node, ast.AnnAssign) and first <= node.lineno <= last
                     and isinstance(node.value, ast.Name) and node.value.id in suspects - bound
                     and (overlaps(offset, node.annotation, middle_start, middle_end)  # (not the target alone)
                          or overlaps(offset, node.value, middle_start, middle_end))
                     and _instance_classes(node.annotation, bound) is not None)


def _instance_classes(annotation: ast.expr, bound: set[str]) -> set[str] | None:
    """The built-in classes whose instances (or None) every part of `annotation` declares; None where a part may
    hold something else (a class object: `type[int]`, `Any`, `Callable`, a class of the file, a string, a name of
    `bound`, the file's own)."""
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return set()
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        left, right = _instance_classes(annotation.left, bound), _instance_classes(annotation.right, bound)
        return None if left is None or right is None else left | right
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    if not isinstance(head, ast.Name) or head.id in bound:
        return None
    if isinstance(annotation, ast.Subscript) and head.id in ("Optional", "Union"):
        parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        found: set[str] = set()
        for part in parts:
            classes = _instance_classes(part, bound)
            if classes is None:
                return None
            found |= classes
        return found
    return {_INSTANCE_NAMES[head.id]} if head.id in _INSTANCE_NAMES else None


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the file binds anywhere but by an import from typing: a built-in class's name (or typing's alias
    of it) that the file binds otherwise is not that class there."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not (
                isinstance(node, ast.ImportFrom) and node.module in _TYPING):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return bound
