"""Where a class statement is in a text that need not parse (a file with the cursor's line cut back), by
indentation: its lines, its header, and the names its subclasses in the file bind, for the member judge."""

from __future__ import annotations

import re

_INDENT = re.compile(r"[ \t]*")
_CLASS_LINE = re.compile(r"([ \t]*)class\b")
_CLASS_NAME = re.compile(r"([ \t]*)class[ \t]+(\w+)")
_CLASS_HEAD = re.compile(r"^([ \t]*)class[ \t]+(\w+)[ \t]*(\([^)]*\))?", re.MULTILINE)
_PLAIN_HEAD = re.compile(r"[ \t]*class[ \t]+\w+[ \t]*(?:\([ \t]*(?:object)?[ \t]*\))?[ \t]*:")
# A statement of a class body that binds names: a definition, or an assignment's (or annotation's) targets.
_BODY_BINDING = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)"
                           r"|^[ \t]*(\w+(?:[ \t]*,[ \t]*\w+)*)[ \t]*,?[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE)


def class_lines(code: str, line: int) -> tuple[int, int] | None:
    """The lines (0-based, end excluded) of the innermost class statement of `code` that holds `line` (1-based), by
    indentation; None where none does."""
    lines = code.split("\n")
    depth = len(_INDENT.match(lines[line - 1]).group())
    start = line - 1
    while start > 0:
        start -= 1
        match = _CLASS_LINE.match(lines[start])
        if match and len(match.group(1)) < depth:
            break
        text = lines[start]
        if text.strip() and not text.lstrip().startswith("#"):
            depth = min(depth, len(_INDENT.match(text).group()))
    else:
        return None
    indent = len(_CLASS_LINE.match(lines[start]).group(1))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].lstrip().startswith("#")
                                or len(_INDENT.match(lines[end]).group()) > indent):
        end += 1
    return start, end


def subclass_names(code: str, line: int) -> set[str]:
    """The names that the file's subclasses (direct or not) of the class around `line` (1-based) bind in their
    bodies: a base's method may load what only its subclasses define (xml.dom's DOMException._get_code returns
    self.code, which IndexSizeErr and its other subclasses set in their bodies). Their methods' stores are the
    file's stored attributes, counted anyway."""
    span = class_lines(code, line)
    if span is None:
        return set()
    lines = code.split("\n")
    family = {_CLASS_NAME.match(lines[span[0]]).group(2)}
    heads = [(match.group(2), set(re.findall(r"\w+", match.group(3) or "")), code.count("\n", 0, match.start()))
             for match in _CLASS_HEAD.finditer(code)]
    names: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, bases, start in heads:
            if name not in family and bases & family:
                family.add(name)
                grew = True
                indent = len(_INDENT.match(lines[start]).group())
                end = start + 1
                while end < len(lines) and (not lines[end].strip() or len(_INDENT.match(lines[end]).group()) > indent):
                    end += 1
                for statement in _BODY_BINDING.finditer("\n".join(lines[start + 1:end])):
                    names.update(part.strip() for part in (statement.group(1) or statement.group(2)).split(","))
    return names


def in_plain_class(code: str, line: int) -> bool:
    """The innermost class around `line` (1-based) of `code` is undecorated and has no base but `object` (what its
    instances hold is what the file says)."""
    span = class_lines(code, line)
    lines = code.split("\n")
    if span is None or (span[0] and lines[span[0] - 1].lstrip().startswith("@")):
        return False
    return _PLAIN_HEAD.match(lines[span[0]]) is not None


def class_around(code: str, line: int) -> str:
    """The text of the innermost class statement that holds `line` (1-based) of `code`."""
    span = class_lines(code, line)
    return "" if span is None else "\n".join(code.split("\n")[span[0]:span[1]])
