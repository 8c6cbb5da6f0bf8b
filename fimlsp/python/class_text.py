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
    while start > 0 and depth:  # (at depth 0 no class can hold the line: the lines above are not read)
        start -= 1
        match = _CLASS_LINE.match(lines[start])
        if match and len(match.group(1)) < depth:
            break
        text = lines[start]
        if text.strip() and not text.lstrip().startswith("#"):
            depth = min(depth, len(_INDENT.match(text).group()))
    else:
        return None
    return start, _block_end(lines, start)


def _block_end(lines: list[str], start: int) -> int:
    """The line (0-based) after the block whose header is `lines[start]`: the first line of code indented no deeper
    than its header."""
    indent = len(_INDENT.match(lines[start]).group())
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].lstrip().startswith("#")
                                or len(_INDENT.match(lines[end]).group()) > indent):
        end += 1
    return end


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
    heads = _class_heads(code)
    names: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, bases, start in heads:
            if name not in family and bases & family:
                family.add(name)
                grew = True
                for statement in _BODY_BINDING.finditer("\n".join(lines[start + 1:_block_end(lines, start)])):
                    names.update(part.strip() for part in (statement.group(1) or statement.group(2)).split(","))
    return names


def related_classes(code: str, line: int) -> str | None:
    """The text of the classes of `code` that inheritance within it ties to the innermost class around `line`
    (1-based), the class itself among them: its bases and subclasses in the file, theirs, and so on (a mixin that
    a subclass combines it with too). What `self` is there is an instance of one of them, never of a class of the
    file that none of them inherits from or passes to. None where no class holds `line`."""
    span = class_lines(code, line)
    if span is None:
        return None
    lines = code.split("\n")
    heads = _class_heads(code)
    defined = {name for name, _bases, _start in heads}
    family = {_CLASS_NAME.match(lines[span[0]]).group(2)}
    grew = True
    while grew:
        grew = False
        for name, bases, _start in heads:
            linked = {name} | (bases & defined)
            if family & linked and not linked <= family:
                family |= linked
                grew = True
    return "\n".join("\n".join(lines[start:_block_end(lines, start)]) for name, _bases, start in heads
                     if name in family)


def _class_heads(code: str) -> list[tuple[str, set[str], int]]:
    """Each class statement of `code`: its name, the words of its bases, and its line (0-based)."""
    return [(match.group(2), set(re.findall(r"\w+", match.group(3) or "")), code.count("\n", 0, match.start()))
            for match in _CLASS_HEAD.finditer(code)]


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
