"""The type of an instance attribute whose every store is a literal of one built-in type, for the member judge
(`fimlsp.python.member_lists`).

jedi infers `self.response_complete` from one assignment's literal (`False`), not from the attribute's type, so a
literal answer alone says nothing of what else the attribute may hold (lib2to3's fix_exitfunc stores None, then a
node). Where the file's text shows every store of the attribute and each stores a literal of one type, the attribute
holds that type (pyright's declared type of it): `self.response_complete = False` in `__init__` and `= True` later
make a bool, whose members judge `self.response_complete.close()`. Read by pattern, conservatively: anything that
may store it otherwise (an augmented assignment, a target list, a `for` or `with` target, a name the class body
binds, a base class or decorator the attribute may come from) leaves the type unknown.
"""

from __future__ import annotations

import ast
import re

from fimlsp.lines import line_bounds
from fimlsp.python.syntax import module_or_error, node_offsets, overlaps

# The literals of each built-in type whose attributes are judged, as a whole assigned value (a comment may follow).
_LITERALS = {
    "builtins.bool": (bool, r"(?:True|False)"),
    "builtins.int": (int, r"-?(?:0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*)"),
    "builtins.str": (str, r"(?:'[^'\\\n]*'|\"[^\"\\\n]*\")"),
    "builtins.bytes": (bytes, r"[bB](?:'[^'\\\n]*'|\"[^\"\\\n]*\")"),
}
_SELF = ("self", "cls")


def literal_type(code: str, receiver: str, full_name: str, plain_class: bool) -> type | None:
    """The built-in type that `receiver` (`self.name` or `cls.name`, in a class that is `plain_class`: undecorated,
    with no base but `object`) holds in `code`, where jedi inferred a literal of the type `full_name`: that type
    where every store of `name` in `code` assigns a literal of it, else None."""
    parts = receiver.split(".")
    literal = _LITERALS.get(full_name)
    if literal is None or len(parts) != 2 or parts[0] not in _SELF or not plain_class:
        return None
    values = _stored_values(code, parts[1])
    return literal[0] if values and _all_literals(values, literal) else None


def _stored_values(code: str, name: str) -> list[str] | None:
    """What each store of the attribute `name` in `code` assigns (the rest of its line after the name: ` = 0  #`),
    or None where `code` binds the name otherwise: a class body (or a module) its own value or annotation, an
    augmented assignment, a target list, a `for` or `with` target."""
    name = re.escape(name)
    if re.search(r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+" + name + r"\b|" + name + r"\b[ \t]*[:=,])", code, re.MULTILINE):
        return None
    values = []
    for match in re.finditer(r"\.[ \t]*" + name + r"\b", code):
        line_end = code.find("\n", match.end())
        after = code[match.end():len(code) if line_end < 0 else line_end]
        line_start = code.rfind("\n", 0, match.start()) + 1
        before = code[line_start:match.start()]
        store = re.match(r"[ \t]*=(?!=)", after) or (re.fullmatch(r"[ \t]*\w+[ \t]*", before)
                                                       and re.match(r"[ \t]*:", after))
        if store:  # plain (chained too), or annotated at a statement's start (elsewhere `:` is a slice's, a dict's)
            values.append(after)
        elif re.match(r"[ \t]*[-+*/%&|^@<>]{1,2}=(?!=)", after):
            return None  # an augmented assignment
        elif re.match(r"[ \t]*[,)\]]", after) and re.search(r"(?<![=!<>])=(?!=)", after):
            return None  # possibly in a target list
        elif re.search(r"\b(?:for|as)\b", before) or re.match(r"[ \t]*\bin\b", after):
            return None  # a `for` or `with` target
    return values


def _all_literals(values: list[str], literal: tuple[type, str]) -> bool:
    """Whether every stored value (`_stored_values`) is a literal of `literal`'s type, its annotation (if any) that
    type's name: no store of anything else, and no other annotation."""
    kind, value = literal
    assigned = re.compile(r"[ \t]*(?::[ \t]*" + kind.__name__ + r"[ \t]*)?=[ \t]*" + value + r"[ \t]*(?:#.*)?\Z")
    return all(assigned.match(after) for after in values)


_SELF_CALL = re.compile(r"\bself[ \t]*\.[ \t]*([A-Za-z_]\w*)[ \t]*\(")


def called_literals(text: str, middle_start: int, middle_end: int) -> frozenset[str]:
    """The attributes of `self` that a call the middle, `text[middle_start:middle_end]`, writes (in part) calls where
    every store of them in the whole file `text` (which compiles) is a literal of a built-in type that is not
    callable: `self.close_sent()` where the class stores only `True` and `False` there (held-out uvicorn
    wsproto_impl.py: pyright's reportCallIssue). An instance attribute hides a base's method of its name, so a base
    class does not make it callable (only a base's property or `__setattr__` could, which nothing here reads)."""
    names = set(_SELF_CALL.findall(text, *line_bounds(text, middle_start, middle_end)))
    stored = {name: _stored_values(text, name) for name in names}  # (the whole file read once for each name)
    literal = {name for name, values in stored.items()
               if values and any(_all_literals(values, literal) for literal in _LITERALS.values())}
    if not literal:
        return frozenset()
    tree = module_or_error(text)
    if not isinstance(tree, ast.Module):
        return frozenset()
    offset = node_offsets(text)
    return frozenset(node.func.attr for node in ast.walk(tree)
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                     and node.func.attr in literal and isinstance(node.func.value, ast.Name)
                     and node.func.value.id == "self"
                     and overlaps(offset, node, middle_start, middle_end))
