"""A member of an attribute its class declares optional, loaded where nothing narrowed it (issue 49, members after
a dot): `self._form: FormData | None` and a middle's `if not self._form.close:` in a method that does not test
`self._form` first (held-out starlette requests.py, boundary cut: pyright's reportOptionalMemberAccess). The member
judge takes an optional receiver by its other type while the middle writes it; this is its end's check on the whole
file, where what narrows the receiver is known.

Judged only in a method of the class that declares the attribute (`x: T | None` in its body, `self.x: Optional[T]`
in a method), on `self`, for a load of a member (not a dunder) that the middle wrote part of, where the method says
nothing of `self.x` before it or in its statement (a test, an assignment, an `assert`: anything may narrow it) and
calls no method of the instance up to it (`super().__post_init__()` may set it), and neither the line nor the one
before asks a type checker to ignore it. And only where the file shows that it narrows: it loads a member of `self.x` somewhere else where it
tested `self.x` (in a method that calls no other first), and no member of an optional attribute unnarrowed outside
the middle. Code that relies on what a type checker does
not see (transformers' configurations, whose fields `__post_init__` converts; a buffer that a flag says is
allocated) loads them unnarrowed, and a true middle there would be refused.
"""

from __future__ import annotations

import ast
import functools
import re

from fimlsp.lines import line_bounds, split_lines
from fimlsp.python.syntax import module_or_error, node_offsets, overlaps

_MEMBER_OF_SELF_ATTRIBUTE = re.compile(r"\bself[ \t]*\.[ \t]*(\w+)[ \t]*\.[ \t]*\w")
# An annotation of one of the names that may admit None (`x: T | None`, `self.x: Optional[T]`, `: Union[T, None]`),
# on its line: the whole file is parsed only where the middle loads a member of an attribute so declared.
_OPTIONAL_ANNOTATION = r"(?<![\w.])(?:self[ \t]*\.[ \t]*)?(?:{})[ \t]*:[^=\n]*(?:\bNone\b|\bOptional\b)"
# A type checker told to ignore a line (pyrefly's comment stands on the line before)
_IGNORED = re.compile(r"#[ \t]*(?:type|pyright|mypy|pyrefly):[ \t]*ignore")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def unnarrowed(text: str, middle_start: int, middle_end: int) -> frozenset[str]:
    """The optional attributes of `self` (their names) that the middle, `text[middle_start:middle_end]`, loads a
    member of where nothing narrowed them, in the whole file `text` (which compiles)."""
    first, last = line_bounds(text, middle_start, middle_end)
    attributes = set(_MEMBER_OF_SELF_ATTRIBUTE.findall(text, first, last))
    if not attributes:
        return frozenset()
    annotation = _OPTIONAL_ANNOTATION.format("|".join(sorted(attributes)))
    # (one line's pattern: the lines around the middle's are read once a completion, whatever its ends)
    if not (_declares(annotation, text[:first]) or re.search(annotation, text[first:last])
            or _declares(annotation, text[last:])):
        return frozenset()
    tree = module_or_error(text)
    if not isinstance(tree, ast.Module):
        return frozenset()
    offset = node_offsets(text)
    lines = split_lines(text)  # as the tokenizer counts them (a form feed ends none)
    # the middle's own methods first: most ends load nothing unnarrowed, and the whole file is not read for them
    found = _loads(_classes_around(tree.body, offset, middle_start, middle_end), offset, lines, middle_start,
                   middle_end, overlapping=True)[0]
    if not found:
        return frozenset()
    classes = (holder for holder in ast.walk(tree) if isinstance(holder, ast.ClassDef))
    found, narrowed, outside = _loads(classes, offset, lines, middle_start, middle_end, overlapping=False)
    return frozenset() if outside else frozenset(found & narrowed)


@functools.lru_cache(maxsize=8)
def _declares(annotation: str, lines: str) -> bool:
    """Whether whole lines of the file declare an optional attribute (`annotation`, `_OPTIONAL_ANNOTATION`'s)."""
    return re.search(annotation, lines) is not None


def _loads(holders, offset, lines: list[str], middle_start: int, middle_end: int, overlapping: bool
           ) -> tuple[set[str], set[str], bool]:
    """Of the methods of `holders` (those with text in the middle alone, where `overlapping`): the optional
    attributes the middle loads a member of unnarrowed, those loaded elsewhere where tested, and whether one is
    loaded unnarrowed outside the middle."""
    found, narrowed, outside = set(), set(), False
    for holder in holders:
        optional = _optional_attributes(holder)
        if not optional:
            continue
        for method in holder.body:
            if not isinstance(method, _FUNCTIONS) or not method.args.args or method.args.args[0].arg != "self":
                continue
            if overlapping and not overlaps(offset, method, middle_start, middle_end):
                continue
            for access, tested, set_up in _member_loads(method, optional):
                ignored = _IGNORED.search("".join(lines[max(0, access.lineno - 2):access.lineno]))
                if overlaps(offset, access, middle_start, middle_end):
                    if not (tested or set_up or ignored):
                        found.add(access.value.attr)
                elif tested and not set_up:
                    narrowed.add(access.value.attr)
                elif not (set_up or ignored):
                    outside = True
    return found, narrowed, outside


def _classes_around(body: list[ast.stmt], offset, start: int, end: int):
    """The classes, at any depth of `body`, whose text overlaps `start:end`."""
    for node in body:
        if not overlaps(offset, node, start, end):
            continue
        if isinstance(node, ast.ClassDef):
            yield node
        for block in _blocks(node):
            yield from _classes_around(block, offset, start, end)


def _optional_attributes(holder: ast.ClassDef) -> set[str]:
    """The attributes `holder` declares optional: in its body (`x: T | None`) or on `self` in its methods."""
    declared = set()
    for node in ast.walk(holder):
        if not isinstance(node, ast.AnnAssign) or not _is_optional(node.annotation):
            continue
        target = node.target
        if isinstance(target, ast.Name) and node in holder.body:
            declared.add(target.id)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            declared.add(target.attr)
    return declared


def _is_optional(annotation: ast.expr) -> bool:
    """Whether `annotation` admits None: `T | None`, `Optional[T]`, `Union[T, None]` (a string's is not read)."""
    if isinstance(annotation, ast.Constant):
        return annotation.value is None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_optional(annotation.left) or _is_optional(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, (ast.Name, ast.Attribute)):
        head = annotation.value.id if isinstance(annotation.value, ast.Name) else annotation.value.attr
        if head == "Optional":
            return True
        if head == "Union":
            parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            return any(_is_optional(part) for part in parts)
    return False


def _member_loads(method: ast.FunctionDef | ast.AsyncFunctionDef, optional: set[str]):
    """(access, tested, set up) for each load of a member (not a dunder) of `self.x`, x one of `optional`, in the
    method's own statements: tested where the method mentions `self.x` before that statement or elsewhere in it,
    set up where it calls a method of the instance up to it (which may set `self.x`, or not)."""
    mentioned: set[str] = set()
    set_up = False
    for statement in _statements(method.body):
        nodes = list(_own_nodes(statement))
        set_up = set_up or any(_sets_up(node) for node in nodes)
        # `self.x` itself, where it may narrow (a test, a comparison, an assignment, an argument), not where a
        # member, item or call of it is loaded (which does not)
        used = {id(node.value) for node in nodes if isinstance(node, (ast.Attribute, ast.Subscript))} | {
            id(node.func) for node in nodes if isinstance(node, ast.Call)}
        mentions = [node.attr for node in nodes if isinstance(node, ast.Attribute) and id(node) not in used
                    and isinstance(node.value, ast.Name) and node.value.id == "self" and node.attr in optional]
        for node in nodes:
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
                    and node.value.value.id == "self" and node.value.attr in optional):
                attribute = node.value.attr
                yield node, attribute in mentioned or attribute in mentions, set_up
        mentioned.update(mentions)


def _sets_up(node: ast.AST) -> bool:
    """Whether `node` calls a method of the instance (`self.setup()`, `super().__init__()`)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    receiver = node.func.value
    return (isinstance(receiver, ast.Name) and receiver.id == "self") or (
        isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super")


def _statements(body: list[ast.stmt]):
    """The statements of a block and of the blocks in them, in the text's order, but those of nested functions and
    classes (whose code runs later); a compound statement before its blocks, with its header alone."""
    for statement in body:
        yield statement
        if not isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
            for block in _blocks(statement):
                yield from _statements(block)


def _blocks(statement: ast.stmt):
    """The blocks of statements that `statement` holds, in the text's order."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for part in getattr(statement, "handlers", []) + getattr(statement, "cases", []):
        yield part.body


def _own_nodes(statement: ast.stmt):
    """The expressions of `statement` itself: a compound statement's header (its test, target, items), not its
    blocks; nothing of a nested function's or class's body."""
    if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
        return
    stack = [child for field, child in ast.iter_fields(statement)
             if field not in ("body", "orelse", "finalbody", "handlers", "cases")]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, ast.AST):
            yield item
            if not isinstance(item, ast.Lambda):
                stack.extend(ast.iter_child_nodes(item))
