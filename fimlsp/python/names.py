"""Names in scope, judged as the middle is written: a middle may not load a name that nothing in the file binds.

`FileNames.of(left, right)` reads what the file around the middle can bind (`visible_names`): the names of the
left context as the language's lexer reads them (not the words of its comments and strings), less those of the
bodies of functions and classes that end before the cursor (invisible there, but for their `global`s); every
identifier of the right context that is not an attribute (after a dot: what the middle makes of the right
context's strings and comments is not known); and the builtins. It over-approximates the scopes visible at the
cursor, on purpose: a name bound in any scope open at the cursor or later in the file counts as bound, so the judge
never refuses a name the true middle could load. Where the
names cannot be known from the text, the judge relaxes as locally as the construct (`fimlsp.python.relaxation`):
`globals()` and `__builtins__` the file, `locals()`, `vars()`, `exec`, `eval` the function that uses them, a star
import only where its module cannot be read (else its names are bound); it refuses nothing there, and
`FileNames.relaxed` says why.

`Names` (`fimlsp.python.middle_names`) follows the terminal stream beside the parser (the middle's terminals, NAME
terminals carrying their text, `fimlsp.python.lexer.NameTerminal`) and, when a NAME completes, knows whether it may
be a binding:
- after a dot (an attribute), on `import`/`from`/`global`/`nonlocal`/`del`/`match`/`case` lines, in a `def` or
  `class` header, in `for` targets (statements and comprehensions) up to `in`, in `lambda` parameters, after `as`:
  anything, and it is bound from then on;
- a name the file or the middle already binds: a load, accepted (where the next terminal makes it a binding, the
  middle binds it too: an end the right context needs it from, `FileNames.unbound`);
- any other name is pending until the next terminal decides: followed by `=` or `:=` (an assignment, a keyword
  argument) or, outside a call's or subscript's brackets, by `,` `:` `)` `]` (a target list, an annotation) it
  may be a binding; followed by anything else it is a load of a name nothing binds. At module level outside
  brackets that load is refused at once. In a function body, inside brackets (a comprehension's target comes
  after its element) or on a `lambda` line it can still be bound later in the middle: it is the middle's debt,
  paid by a later binding, and an end is accepted only with no debt left.
Writing `globals`, `locals`, `vars`, `exec`, `eval` or `__builtins__` in the middle relaxes it from then on; a
`from M import *` brings M's names where they can be read (`fimlsp.python.relaxation.star_import_names`), and
relaxes it only where they cannot.

Where the file's place is known (its folder and the project's roots), a name the middle imports from a module of the
project or of its environment read as source (`from .util import helper`, `from typing import Any`) must be one the
module defines (`fimlsp.python.modules.imported_names`, read without running it): refused as it is written at module
level or in a function or class body, and judged on the whole file at an end (`FileNames.unbound`); not inside `try`
or `with`, where an import may be meant to fail. So is the module an import names (`import pyflask`,
`from uvic.config import Config`): refused where it is found nowhere in the project's environment, the project or
the file's folder, nor named by the file's text elsewhere (`fimlsp.python.module_existence.module_may_exist`), as
its name is written (no module begins so) and at its end; not under an `if`, a `try` or a `with`, not in a file
that changes `sys.path`, and, as it is written, not a module whose name began in the left context. On the whole
file, every module of an import statement the middle makes (`FileNames._statement_is_the_middles`) is judged, the
right context's too (`import asyncio,` before the right's `Callable`), so are those after the middle of a statement
the left began and a module whose name the left began where that part may begin a module (`from star| import X`),
and a relative import beyond the top-level package is refused.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

from fimlsp.python import lexemes as lx
from fimlsp.python.debt import owed
from fimlsp.python.flakes import undefined_places
from fimlsp.python.lexer import INITIAL, advance
from fimlsp.python.redeclaration import redeclared
from fimlsp.python.module_existence import import_path_changes, module_may_exist
from fimlsp.python.modules import imported_names
from fimlsp.python.unbound_paths import left_unbound
from fimlsp.python.relaxation import names_written, relaxation, spelt_out
from fimlsp.python.syntax import module_or_error

# Names through which a module's names are made or read in ways its text does not show.
DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "exec", "eval", "__builtins__"})
_IDENTIFIER = re.compile(r"(?<![.\w])(?!\d)\w+")
_WALRUS_TARGET = re.compile(r"(?<![.\w])((?!\d)\w+)\s*:=")
# The most left context lexed to read its names (more: every identifier counts).
LEXED_CHARS = 1_000_000
_VERDICTS_KEPT = 8  # whole texts whose verdicts a completion keeps (a finish search judges several)


def undefined_names(text: str) -> set[str] | None:
    """The names pyflakes reports undefined in `text`; None without pyflakes or where `text` does not parse."""
    found = undefined_loads(text)
    return None if found is None else {name for name, _line in found}


def undefined_loads(text: str) -> list[tuple[str, int]] | None:
    """The loads pyflakes reports of undefined names in `text`, with their lines (1-based); None without pyflakes
    or where `text` does not parse."""
    return undefined_loads_in(syntax_tree(text), text)


def syntax_tree(text: str) -> ast.Module | None:
    """The syntax tree of `text`; None where it does not parse (its warnings silenced)."""
    module = module_or_error(text)
    return module if isinstance(module, ast.Module) else None


def undefined_loads_in(tree: ast.Module | None, text: str | None = None) -> list[tuple[str, int]] | None:
    """`undefined_loads` of the syntax tree `tree` (of `text`, where given: its function bodies are read once,
    `fimlsp.python.flakes`)."""
    found = None if tree is None else undefined_places(tree, text)
    return None if found is None else [(name, line) for name, line, _column in found]


def visible_names(left: str, right: str) -> frozenset[str]:
    """Every name the file around the middle may bind in a scope visible at the cursor, and the builtins (a
    superset of the names bound there): the left context's (`left_names`) and the right context's identifiers
    that are not attributes."""
    names = left_names(left)
    names.update(_IDENTIFIER.findall(right))
    names.update(dir(builtins))
    return frozenset(names)


def left_names(left: str) -> set[str]:
    """The names of the left context that a scope visible after it may bind: the NAME tokens that are not
    attributes, as the language's lexer reads them (not the words of comments and strings), less those of the
    bodies of functions and classes that end before the cursor (their names are not visible outside them), but
    for the names such a body declares `global` or `nonlocal`. A walrus anywhere (in an f-string too: the lexer
    reads an f-string as one token) binds its target. Every identifier where the text does not lex."""
    lexed = advance(INITIAL, left) if len(left) <= LEXED_CHARS else None
    if lexed is None:
        return set(_IDENTIFIER.findall(left))
    scopes: list[tuple[bool, set[str]]] = [(False, set())]  # the open blocks: a function's or class's body or not
    declared = set(_WALRUS_TARGET.findall(left))  # names visible whatever block binds them
    header = body_next = declaring = False  # on a `def` or `class` line; the INDENT after it opens its body
    previous = lx.NEWLINE
    for terminal in lexed[1]:
        if terminal == lx.NAME:
            if previous != ".":
                (declared if declaring else scopes[-1][1]).add(terminal.text)
        elif terminal in ("def", "class"):
            header = True
        elif terminal in ("global", "nonlocal"):
            declaring = True
        elif terminal == lx.NEWLINE:
            body_next, header, declaring = header, False, False
        elif terminal == lx.INDENT:  # (always right after a NEWLINE)
            scopes.append((body_next, set()))
        elif terminal == lx.DEDENT:
            body, names = scopes.pop()
            if not body:
                scopes[-1][1].update(names)
        previous = terminal
    for _body, names in scopes:
        declared.update(names)
    return declared


def relaxed(left: str, right: str = "", folder: str | None = None, roots: tuple[str, ...] = ()) -> str | None:
    """Why the names at the cursor between `left` and `right` cannot be known from the text; None when they can."""
    return relaxation(left, right, folder, roots).reason


@dataclass(frozen=True, slots=True)
class FileNames:
    """What the file around the middle binds, and why the judge is off in it (None: it is on)."""

    known: frozenset[str]
    relaxed: str | None = None
    left: str = ""  # the left context
    right: str = ""  # the right context
    folder: str | None = None  # the file's folder (None: not known)
    roots: tuple[str, ...] = ()  # where the project's modules lie
    # the texts around the statement at the cursor (the left's whole lines before it, the right's after its line),
    # whose words may name a module installed where the file runs; None: the file changes where modules are found
    import_context: tuple[str, ...] | None = ()
    # the names of the modules imported from, once a completion: a name being written asks at every character
    _imported: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    # the last whole texts' verdicts (`unbound`): a keystroke later, the start's finish is the last middle's rest,
    # and where the model writes it on, the end's check reads the same file again (pyflakes: 40-100 ms on 60 kB)
    _verdicts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @staticmethod
    def of(left: str, right: str, folder: str | None = None, roots: tuple[str, ...] = ()) -> FileNames:
        """The file's names for a middle between `left` and `right` in a file of `folder` (where its relative star
        imports are read; None: they relax the judge) in a project whose modules lie in `roots`."""
        relaxing = relaxation(left, right, folder, roots)
        context = None if import_path_changes(left) or import_path_changes(right) else (
            left[:left.rfind("\n") + 1], right[right.find("\n") + 1:] if "\n" in right else "")
        if relaxing.reason:  # names unknowable, modules not: the imports the middle writes are still judged
            return FileNames(frozenset(), relaxing.reason, left, right, folder, roots, context)
        return FileNames(visible_names(left, right) | relaxing.star_names, None, left, right, folder, roots, context)

    def module_exists(self, module: str, partial: bool = False, context: tuple[str, ...] | None = None) -> bool | None:
        """Whether `import <module>` (with its leading dots; `partial`: its last name still being written) may find
        a module (`fimlsp.python.module_existence.module_may_exist`); None where that is not known. `context`: the
        file's texts around the statement (None: those around the statement at the cursor, `import_context`)."""
        if (self.folder is None and not self.roots) or self.import_context is None:
            return None
        dotted = module.lstrip(".")
        return module_may_exist(dotted, len(module) - len(dotted), self.folder, self.roots, partial=partial,
                                context=self.import_context if context is None else context)

    def imported(self, module: str) -> frozenset[str] | None:
        """The names `from <module> import NAME` may import (`module` with its leading dots), where `module` is one of
        the project's and its names can be read; None where they cannot be known."""
        if self.folder is None and not self.roots:
            return None
        if module not in self._imported:
            dotted = module.lstrip(".")
            self._imported[module] = imported_names(len(module) - len(dotted), dotted, self.folder, self.roots)
        return self._imported[module]

    def missing_imports(self, text: str, tree: ast.Module | None = None) -> frozenset[str]:
        """The names the middle of the whole file `text` (which compiles; `tree`, its syntax tree where it was built
        already) writes in a `from M import NAME` of a module M read as source that M does not define, outside `try` and
        `with` blocks."""
        start, end = len(self.left), len(text) - len(self.right)
        if ((self.folder is None and not self.roots) or not text.startswith(self.left)
                or "import" not in text[text.rfind("\n", 0, start) + 1:text.find("\n", end) % (len(text) + 1)]):
            return frozenset()
        tree = tree or syntax_tree(text)
        if tree is None:
            return frozenset()
        lines = text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        missing = set()
        for node in _imports_of_bodies(tree.body):
            begins = _offset(lines, offsets, node.lineno, node.col_offset)
            ends = _offset(lines, offsets, node.end_lineno, node.end_col_offset)
            # the statement's modules the middle writes or makes: all where it begins the statement, those after it
            # where the left began it (`i|mport sys, asyncio,|Callable`), and the one whose name the left began and
            # the middle ends (`from star| import X`) where what the left wrote may begin a module (else the
            # user's: one not installed here)
            whole = self._statement_is_the_middles(text, begins)
            written = [module for module, first in _modules_written(node, text, lines, offsets)
                       if whole or start <= first < end or (begins < start < end <= first < ends) or (
                           first < start <= first + len(module) and self.module_exists(
                               text[first:start], partial=True, context=(text[:min(start, begins)],)) is not False)]
            if written:  # the file's text but the middle and the statement may name its modules
                context = (text[:min(start, begins)], text[max(end, ends):])
                missing.update(module for module in written if self.module_exists(module, context=context) is False)
        for node in _imports_outside_guards(tree.body):
            # where the middle writes part of `from M` (`from .` before the right's `import GZipMiddleware`), every
            # name the statement imports must be M's
            begins = _offset(lines, offsets, node.lineno, node.col_offset)
            keyword = _IMPORT_KEYWORD.search(text, begins + len("from"))
            module_written = keyword is not None and begins < end and start < keyword.start()
            for alias in node.names:
                line = lines[alias.lineno - 1].encode("utf-8")
                first = offsets[alias.lineno - 1] + len(line[:alias.col_offset].decode("utf-8", "replace"))
                if alias.name == "*" or not (module_written or (first < end and first + len(alias.name) > start)):
                    continue
                defined = self.imported("." * node.level + (node.module or ""))
                if defined is not None and alias.name not in defined:
                    missing.add(alias.name)
        return frozenset(missing)

    def _statement_is_the_middles(self, text: str, begins: int) -> bool:
        """Whether the middle of `text` makes the statement that begins at `begins` (all of its modules are judged):
        it begins in the middle, or where the middle ends (blanks aside) in a line the left context began with code.
        There the user's text reads the right context's first words on in the left's line (`fr|import X` is a
        `from` line and X no module); the middle that breaks the line there makes them a statement of its own.
        A statement that begins a line of the user's own (the left ends at a line's start) is the user's."""
        start, end = len(self.left), len(text) - len(self.right)
        if start <= begins < end:
            return True
        return (start < end and begins >= end and not text[end:begins].strip(" \t\f")
                and bool(self.left[self.left.rfind("\n") + 1:].strip()))

    def unbound(self, text: str) -> frozenset[str]:
        """The names the whole file `text` (which compiles) loads that the middle was to bind: those pyflakes finds
        undefined that the middle owes (`fimlsp.python.debt`: not those the writer uses unbound anyway, in the left
        context's whole lines or where no middle here could bind them). That is the middle's debt to the right
        context (a `def` header that no longer binds a parameter the body below uses, an import left out) and the
        loads it made itself. Star imports bring the names their modules bring (`fimlsp.python.relaxation.spelt_out`:
        a name none of them brings is undefined), and none is judged undefined where one's names cannot be known
        (pyflakes then only says a star import might bring it). So are the locals the right context loads possibly
        unbound because of the middle's branch (`fimlsp.python.unbound_paths`). A text that is not the left
        context's continuation (a region's) is not judged; in a file whose names cannot be known (`relaxed`), only
        its imports are."""
        if not text.startswith(self.left):
            return frozenset()
        found = self._verdicts.get(text)
        if found is None:
            found = self._verdicts[text] = self._unbound(text)
            if len(self._verdicts) > _VERDICTS_KEPT:
                del self._verdicts[next(iter(self._verdicts))]
        return found

    def _unbound(self, text: str) -> frozenset[str]:
        tree = syntax_tree(text)
        missing = self.missing_imports(text, tree)
        if self.relaxed is not None:
            return missing
        if tree is None:
            return missing
        middle_end = len(text) - len(self.right) if text.endswith(self.right) else len(text)
        if middle_end < len(text):  # a local the right context loads possibly unbound for the middle's branch
            missing |= left_unbound(tree, text, len(self.left), middle_end)
        with spelt_out(tree, self.folder, self.roots):
            found = undefined_places(tree, text)
        if not found:
            return missing
        middle = text[len(self.left):middle_end]
        if names_written(middle) or not DYNAMIC_NAMES.isdisjoint(_IDENTIFIER.findall(middle)):
            return missing  # the middle makes names unknowable (the judge relaxed as it wrote it)
        return missing | owed(text, tree, found, len(self.left), middle_end, self.left.count("\n"))

    def redeclared(self, text: str) -> frozenset[str]:
        """The functions, classes and annotated variables or attributes declared twice in one scope of the whole file
        `text` (which compiles), one of the two by the middle (`fimlsp.python.redeclaration`); none where `text` is
        not the left context, a middle and the right context."""
        if not text.startswith(self.left) or not text.endswith(self.right):
            return frozenset()
        return redeclared(text, len(self.left), len(text) - len(self.right))


def _imports_outside_guards(body: list[ast.stmt]):
    """The `from` imports of a block and of the blocks in it, but for those in a `try` or `with`."""
    for node in body:
        if isinstance(node, ast.ImportFrom):
            yield node
        elif not isinstance(node, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)):
            for part in ("body", "orelse", "finalbody"):
                inner = getattr(node, part, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    yield from _imports_outside_guards(inner)
            for case in getattr(node, "cases", ()):
                yield from _imports_outside_guards(case.body)


def _imports_of_bodies(body: list[ast.stmt]):
    """The imports at module level and in functions' and classes' bodies: not those under an `if`, a `try`, a
    `with` or a loop (`if sys.version_info < (3, 11): import tomli`), which may be meant not to run."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _imports_of_bodies(node.body)


_FROM_MODULE = re.compile(r"from\b(?:\s|\\\r?\n)*")
_IMPORT_KEYWORD = re.compile(r"\bimport\b")


def _offset(lines: list[str], offsets: list[int], line: int, column: int) -> int:
    """The offset in the text of the syntax tree's (line, UTF-8 column)."""
    return offsets[line - 1] + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8", "replace"))


def _modules_written(node: ast.Import | ast.ImportFrom, text: str, lines: list[str], offsets: list[int]):
    """(module with its leading dots, where its text starts) of each module an import names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, _offset(lines, offsets, alias.lineno, alias.col_offset)
    else:
        found = _FROM_MODULE.match(text, _offset(lines, offsets, node.lineno, node.col_offset))
        if found is not None:
            yield "." * node.level + (node.module or ""), found.end()
