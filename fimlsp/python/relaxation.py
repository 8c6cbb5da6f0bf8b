"""Where the name judge lets go, as local as the construct that hides names (issue 49).

- `globals()` and `__builtins__` can bind or read any module name from anywhere: the file is not judged. Nor is
  one that writes its names through an enum (`@global_enum`, `_convert_`: ssl's `CERT_NONE`, re's `DEBUG`),
  through `sys.modules[__name__]`, or the builtins through gettext's `install()` (`_`).
- `locals()`, `vars()`, `exec`, `eval` relax the function scope that uses them (at module level: the module). A
  construct in a function other than the cursor's leaves the judge on.
- A star import brings the names of the module it imports where that module can be read without running it
  (`fimlsp.python.modules.star_names`), in the context as in the middle (`star_import_names`) and at the end, where
  pyflakes reads the file with its star imports spelt out (`spelt_out`). Where the module cannot be read (a
  compiled or builtin module, one not found, one whose names are made at run time), a star import of the context's
  leaves the file unjudged, and one the middle writes the rest of the middle.
- A module `__getattr__` is no reason at all: it answers attribute access on the module from elsewhere (the member
  judge's concern), never a name loaded in the module itself.
"""

from __future__ import annotations

import ast
import contextlib
import keyword
import os
import re
from bisect import bisect_right
from dataclasses import dataclass

from fimlsp.python.modules import star_names

_FILE_WIDE = re.compile(r"(?<![.\w])(?:(globals)\s*\(|(__builtins__)\b)")
# Module names written at run time: an enum's members exported (`@global_enum`, `Enum._convert_`), the module's own
# entry in `sys.modules`, and gettext's `install()`, which writes `_` and others into the builtins.
_WRITTEN_NAMES = re.compile(r"(?<!\w)(global_enum)\b|\.(_convert_)\s*\(|(sys\.modules\s*\[\s*__name__\s*\])")
_INSTALL = re.compile(r"(?<!\w)install\s*\(")
_SCOPED = re.compile(r"(?<![.\w])(locals|vars|exec|eval)\s*\(")
_STAR = re.compile(r"\bimport\s*\(?\s*\*")
_FROM_STAR = re.compile(r"\bfrom\s+(\.*)\s*([\w.]*)\s+import\s*\(?\s*\*")
_HEADER = re.compile(r"[ \t]*(async\s+)?(def|class)\b")


@dataclass(frozen=True)
class Relaxation:
    """Why the judge is off at the cursor (None: it is on), and the names the file's star imports bring."""

    reason: str | None
    star_names: frozenset[str] = frozenset()


def relaxation(left: str, right: str = "", folder: str | os.PathLike | None = None,
               roots: tuple[str, ...] = ()) -> Relaxation:
    """The relaxation of the name judge for a middle between `left` and `right`, in a file of `folder` (where
    relative star imports are found; None: they relax the judge), in a project whose modules lie in `roots`
    (searched before `sys.path`)."""
    text = left + right
    found = _FILE_WIDE.search(text)
    if found:
        used = f"{found.group(1)}()" if found.group(1) else "__builtins__"
        return Relaxation(f"names not judged: the file uses {used}")
    written = names_written(text)
    if written:
        return Relaxation(f"names not judged: {written}")
    reason = _scoped_reason(text, len(left))
    if reason:
        return Relaxation(reason)
    names: set[str] = set()
    stars = _STAR.findall(text)
    if stars:
        imports = _FROM_STAR.findall(text)
        if len(imports) < len(stars):
            return Relaxation("names not judged: the file has a star import whose module cannot be read from its text")
        for dots, module in imports:
            brought = star_import_names(dots + module, None if folder is None else str(folder), roots)
            if isinstance(brought, str):
                return Relaxation(f"names not judged: the star import of {dots + module} cannot be read ({brought})")
            names |= brought
    return Relaxation(None, frozenset(names))


def star_import_names(module: str, folder: str | None, roots: tuple[str, ...]) -> frozenset[str] | str:
    """The names `from <module> import *` (`module` with its leading dots) may bind in a file of `folder` of a
    project whose modules lie in `roots`: those the module brings, and the submodules on the way to it (in a
    package's `__init__`, `from .base_events import *` binds `base_events` too); a string says why they cannot be
    known."""
    dotted = module.lstrip(".")
    level = len(module) - len(dotted)
    brought = star_names(level, dotted, folder, roots)
    if isinstance(brought, str):
        return brought
    parts = [part for part in dotted.split(".") if part]
    return brought | frozenset(parts if level else parts[1:])


@contextlib.contextmanager
def spelt_out(tree: ast.Module, folder: str | None, roots: tuple[str, ...]):
    """Within it, the star imports of `tree` import by name the names their modules bring (pyflakes then reports
    a name none of them brings as undefined, where it says only that a star import might bring it); yields whether
    they do: False (and `tree` unchanged) where some star import's names cannot be known. Names with two
    underscores each side are left out (never owed, and `__all__` is pyflakes' own)."""
    stars = list(_star_imports(tree.body))
    spelt = []
    for node in stars:
        brought = star_import_names("." * node.level + (node.module or ""), folder, roots)
        if isinstance(brought, str):
            yield False
            return
        star = node.names[0]
        spelt.append([ast.copy_location(ast.alias(name), star) for name in sorted(brought)
                      if name.isidentifier() and not keyword.iskeyword(name)
                      and not (name.startswith("__") and name.endswith("__"))])
    originals = [node.names for node in stars]
    for node, names in zip(stars, spelt):
        node.names = names
    try:
        yield True
    finally:
        for node, names in zip(stars, originals):
            node.names = names


def _star_imports(body: list[ast.stmt]):
    """The star imports among statements (only module-level code may hold one: not function or class bodies)."""
    for node in body:
        if isinstance(node, ast.ImportFrom):
            if node.names[0].name == "*":
                yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for part in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(node, part, None)
                if isinstance(inner, list):
                    yield from _star_imports(inner)


def names_written(text: str) -> str | None:
    """How `text` writes module or builtin names at run time that no binding shows; None where it does not."""
    found = _WRITTEN_NAMES.search(text)
    if found:
        return f"the file writes its names through {found.group(found.lastindex)}"
    if "gettext" in text and _INSTALL.search(text):
        return "the file installs gettext's names in the builtins"
    return None


def _scoped_reason(text: str, cursor: int) -> str | None:
    """Why the cursor's scope is not judged: a `locals()`, `vars()`, `exec` or `eval` at module level or in a function
    that holds the cursor."""
    found = list(_SCOPED.finditer(text))
    if not found:
        return None
    lines = text.splitlines(keepends=True)
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line)
    cursor_line = _line_of(starts, cursor)
    cursor_functions = set(_enclosing_functions(lines, cursor_line, _cursor_column(text, cursor, starts[cursor_line]
                                                                                   if starts else 0)))
    for use in found:
        line = _line_of(starts, use.start())
        functions = _enclosing_functions(lines, line, _indentation(lines[line]))
        if not functions:
            return f"names not judged: the file uses {use.group(1)}() at module level"
        if functions[0] in cursor_functions or line == cursor_line:
            return f"names not judged in this function: it uses {use.group(1)}()"
    return None


def _line_of(starts: list[int], position: int) -> int:
    return max(0, bisect_right(starts, position) - 1)


def _cursor_column(text: str, cursor: int, line_start: int) -> int:
    """The indentation the cursor's line has, as far as the left context writes it (all of it before the cursor)."""
    before = text[line_start:cursor]
    return len(before) - len(before.lstrip(" \t")) if before.strip() else len(before) + 1


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _enclosing_functions(lines: list[str], line: int, column: int) -> list[int]:
    """The lines of the `def` headers that enclose code at `column` on `line`, innermost first, by indentation (a
    header less indented above it; classes are passed through)."""
    functions = []
    for number in range(line - 1, -1, -1):
        if column == 0:
            break
        code = lines[number]
        stripped = code.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indentation = _indentation(code)
        if indentation < column:
            header = _HEADER.match(code)
            if header and header.group(2) == "def":
                functions.append(number)
            column = indentation
    return functions
