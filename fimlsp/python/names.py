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

`Names` follows the terminal stream beside the parser (the middle's terminals, NAME terminals carrying their text,
`fimlsp.python.lexer.NameTerminal`) and, when a NAME completes, knows whether it may be a binding:
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
Writing `globals`, `locals`, `vars`, `exec`, `eval`, `__builtins__` or `import *` in the middle relaxes it from
then on.

Where the file's place is known (its folder and the project's roots), a name the middle imports from a module of the
project (`from .util import helper`, `from pkg.mod import Thing`) must be one the module defines
(`fimlsp.python.relaxation.imported_names`, read without running it): refused as it is written at module level or
in a function or class body, and judged on the whole file at an end (`FileNames.unbound`); not inside `try` or
`with`, where an import may be meant to fail. So is the module an import names (`import pyflask`,
`from uvic.config import Config`): refused where it is found nowhere in the project's environment, the project or
the file's folder, nor named by the file's text elsewhere (`fimlsp.python.modules.module_may_exist`), as its name
is written (no module begins so) and at its end; not under an `if`, a `try` or a `with`, not in a file that changes
`sys.path`, and not a module whose name began in the left context.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from dataclasses import dataclass, field, replace

from fimlsp.python import lexemes as lx
from fimlsp.python.blocks import ASYNC_FUNCTION, CLASS, FUNCTION, OTHER, Blocks
from fimlsp.python.debt import owed
from fimlsp.python.facts import STATEMENT_ENDS as _STATEMENT_ENDS
from fimlsp.python.lexer import INITIAL, advance
from fimlsp.python.redeclaration import redeclared
from fimlsp.python.modules import import_path_changes, imported_names, module_may_exist
from fimlsp.python.syntax import parsed
from fimlsp.python.relaxation import names_written, relaxation

# Names through which a module's names are made or read in ways its text does not show.
DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "exec", "eval", "__builtins__"})
_IDENTIFIER = re.compile(r"(?<![.\w])(?!\d)\w+")
_WALRUS_TARGET = re.compile(r"(?<![.\w])((?!\d)\w+)\s*:=")
# The most left context lexed to read its names (more: every identifier counts).
LEXED_CHARS = 1_000_000
_FREE_LINES = frozenset({"import", "from", "global", "nonlocal", "del", "match", "case"})
_BINDING_NEXT = frozenset({"=", ":=", ",", ":", ")", "]"})
_BINDING_NEXT_IN_CALL = frozenset({"=", ":="})
_CALLABLE_ENDS = frozenset({lx.NAME, ")", "]", lx.STRING})
# The terminals that change more than the previous one (NAME stands for every name).
_WATCHED = (frozenset({lx.NAME, lx.NEWLINE, ";", "def", "class", "for", "in", "lambda", ":", "as", "*"}) | _FREE_LINES
            | lx.OPENING_BRACKETS | lx.CLOSING_BRACKETS)


def undefined_names(text: str) -> set[str] | None:
    """The names pyflakes reports undefined in `text`; None without pyflakes or where `text` does not parse."""
    found = undefined_loads(text)
    return None if found is None else {name for name, _line in found}


def undefined_loads(text: str) -> list[tuple[str, int]] | None:
    """The loads pyflakes reports of undefined names in `text`, with their lines (1-based); None without pyflakes
    or where `text` does not parse."""
    return _undefined_loads_in(_tree(text))


def _tree(text: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return parsed(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None


def _undefined_loads_in(tree: ast.Module | None) -> list[tuple[str, int]] | None:
    found = _undefined_places_in(tree)
    return None if found is None else [(name, line) for name, line, _column in found]


def _undefined_places_in(tree: ast.Module | None) -> list[tuple[str, int, int]] | None:
    """The undefined loads pyflakes reports in `tree`: (name, line, column of its node)."""
    try:
        from pyflakes import checker, messages
    except ImportError:
        return None
    if tree is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = checker.Checker(tree, filename="<fim>").messages
        except RecursionError:
            return None
    return [(message.message_args[0], message.lineno, message.col) for message in found
            if isinstance(message, messages.UndefinedName)]


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

    @staticmethod
    def of(left: str, right: str, folder: str | None = None, roots: tuple[str, ...] = ()) -> FileNames:
        """The file's names for a middle between `left` and `right` in a file of `folder` (where its relative star
        imports are read; None: they relax the judge) in a project whose modules lie in `roots`."""
        relaxing = relaxation(left, right, folder, roots)
        if relaxing.reason:
            return FileNames(frozenset(), relaxing.reason, left, right, folder, roots)
        context = None if import_path_changes(left) or import_path_changes(right) else (
            left[:left.rfind("\n") + 1], right[right.find("\n") + 1:] if "\n" in right else "")
        return FileNames(visible_names(left, right) | relaxing.star_names, None, left, right, folder, roots, context)

    def module_exists(self, module: str, partial: bool = False) -> bool | None:
        """Whether `import <module>` (with its leading dots; `partial`: its last name still being written) may find
        a module (`fimlsp.python.modules.module_may_exist`); None where that is not known."""
        if (self.folder is None and not self.roots) or self.import_context is None:
            return None
        dotted = module.lstrip(".")
        return module_may_exist(dotted, len(module) - len(dotted), self.folder, self.roots, partial=partial,
                                context=self.import_context)

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
        already) writes in a `from M import NAME` of a project module M that M does not define, outside `try` and
        `with` blocks."""
        start, end = len(self.left), len(text) - len(self.right)
        if ((self.folder is None and not self.roots) or not text.startswith(self.left)
                or "import" not in text[text.rfind("\n", 0, start) + 1:text.find("\n", end) % (len(text) + 1)]):
            return frozenset()
        tree = tree or _tree(text)
        if tree is None:
            return frozenset()
        lines = text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        missing = set()
        for node in _imports_of_bodies(tree.body):
            for module, first in _modules_written(node, text, lines, offsets):
                if start <= first < end and self.module_exists(module) is False:
                    missing.add(module)
        for node in _imports_outside_guards(tree.body):
            for alias in node.names:
                line = lines[alias.lineno - 1].encode("utf-8")
                first = offsets[alias.lineno - 1] + len(line[:alias.col_offset].decode("utf-8", "replace"))
                if alias.name == "*" or not (first < end and first + len(alias.name) > start):
                    continue
                defined = self.imported("." * node.level + (node.module or ""))
                if defined is not None and alias.name not in defined:
                    missing.add(alias.name)
        return frozenset(missing)

    def unbound(self, text: str) -> frozenset[str]:
        """The names the whole file `text` (which compiles) loads that the middle was to bind: those pyflakes finds
        undefined that the middle owes (`fimlsp.python.debt`: not those the writer uses unbound anyway, in the left
        context's whole lines or where no middle here could bind them). That is the middle's debt to the right
        context (a `def` header that no longer binds a parameter the body below uses, an import left out) and the
        loads it made itself. A text that is not the left context's continuation (a region's) is not judged."""
        if self.relaxed is not None or not text.startswith(self.left):
            return frozenset()
        tree = _tree(text)
        missing = self.missing_imports(text, tree)
        found = _undefined_places_in(tree)
        if not found:
            return missing
        middle_end = len(text) - len(self.right) if text.endswith(self.right) else len(text)
        middle = text[len(self.left):middle_end]
        if names_written(middle) or not DYNAMIC_NAMES.isdisjoint(_IDENTIFIER.findall(middle)):
            return missing  # the middle makes names unknowable (the judge relaxed as it wrote it)
        return missing | owed(text, tree, found, len(self.left), middle_end, self.left.count("\n"))

    def redeclared(self, text: str) -> frozenset[str]:
        """The functions and classes defined twice in one block of the whole file `text` (which compiles), one of the
        two by the middle (`fimlsp.python.redeclaration`); none where `text` is not the left context, a middle and
        the right context."""
        if not text.startswith(self.left) or not text.endswith(self.right):
            return frozenset()
        return redeclared(text, len(self.left), len(text) - len(self.right))


@dataclass(frozen=True, slots=True)
class Names:
    """The middle's names so far: those it may have bound, those it loaded unbound inside a function or brackets
    (its debt), the name whose role the next terminal decides, and where the line stands."""

    file: FileNames
    written: frozenset[str] = frozenset()
    debt: frozenset[str] = frozenset()
    pending: str | None = None
    pending_deferred: bool = False
    pending_known: bool = False  # the pending name is bound already: only whether the middle binds it is open
    exempt: bool = False  # the next name began in the left context (the cursor inside it)
    off: bool = False
    line_free: bool = False
    header_free: bool = False
    targets: int = 0  # `for`s waiting for their `in`
    lambdas: int = 0  # `lambda`s waiting for their `:`
    after_as: bool = False
    calls: tuple[bool, ...] = ()  # the open brackets, innermost last: a call's or subscript's
    from_module: str | None = None  # on a `from` line: the module written so far (its dots and names)
    importing: bool = False  # after that line's `import`
    # on an `import` line: the module written so far (None: an alias or no module comes next)
    import_module: str | None = None
    module_exempt: bool = False  # the module being written began in the left context
    previous: str = lx.NEWLINE

    @staticmethod
    def start(file: FileNames, statement: list[str] | None, in_name: bool) -> Names:
        """The judge for a middle written after a text whose last statement (from a line that starts one) lexes to
        `statement` (None: not known; then the rest of the line is not judged); `in_name`: the text ends inside a
        word, which the middle's first name continues."""
        names = Names(file, off=file.relaxed is not None)
        primed = None if statement is None or names.off else names
        for terminal in statement if primed is not None else ():
            primed = primed._step(terminal, _OUTSIDE, _OUTSIDE)
            if primed is None:
                break
            # what the statement's own text relaxes (a star import, locals()) the file's reading judged already
            primed = replace(primed, off=False)
        if primed is None:
            primed = replace(names, line_free=True)
        begun = bool(primed.import_module) or bool(primed.from_module and not primed.importing)  # the left's module
        return replace(primed, written=frozenset(), debt=frozenset(), pending=None, exempt=in_name,
                       module_exempt=begun)

    def feed(self, terminals: list[str], before: Blocks, after: Blocks) -> Names | None:
        """The judge after `terminals`, which the open blocks `before` lead to `after` (the parser's company,
        `fimlsp.python.blocks`); None where one of them loads a name that nothing can bind."""
        if self.off:
            return self
        state = self
        for terminal in terminals:
            state = state._step(terminal, before, after)
            if state is None:
                return None
            if state.off:
                return state
        return state

    def admits(self, begun: str, blocks: Blocks) -> bool:
        """Whether a name in progress, `begun` so far, may go on to one the judge accepts: after a `from` line's
        `import`, one its module defines (where that is known); in a module's name, one that may exist."""
        module = self.import_module if self.import_module is not None else (
            self.from_module if self.from_module is not None and not self.importing else None)
        if module is not None and self.previous in _BEFORE_MODULES:
            return (not begun or self.exempt or self.module_exempt or self.off or not _imports_judged(blocks)
                    or self.file.module_exists(module + begun, partial=True) is not False)
        if not (begun and self.importing and self.previous in ("import", ",", "(") and not self.exempt
                and not self.off and _imports_judged(blocks)):
            return True
        defined = self.file.imported(self.from_module)
        return defined is None or any(name.startswith(begun) for name in defined)

    def ends(self, terminals: list[str]) -> bool:
        """Whether the middle may end with `terminals` (those of the right context up to where it settles) after
        it: the last name's role decided by what follows, and no debt left."""
        if self.off:
            return True
        state = self
        if state.pending is not None:
            state = state._decide(terminals[0] if terminals else ",")
            if state is None:
                return False
        return not state.debt

    def _decide(self, terminal: str) -> Names | None:
        name, in_call = self.pending, bool(self.calls) and self.calls[-1]
        if terminal in (_BINDING_NEXT_IN_CALL if in_call else _BINDING_NEXT):
            return replace(self, pending=None, written=self.written | {name}, debt=self.debt - {name})
        if self.pending_known:
            return replace(self, pending=None)
        if self.pending_deferred:
            return replace(self, pending=None, debt=self.debt | {name})
        return None

    def _step(self, terminal: str, before: Blocks, after: Blocks) -> Names | None:
        state = self if self.pending is None else self._decide(terminal)
        if state is None:
            return None
        if state.from_module is not None and not state.importing and terminal != "import":
            state = replace(state, from_module=state.from_module + getattr(terminal, "text", str(terminal)))
        if state.import_module is not None and terminal not in (",", "as", lx.NEWLINE, ";"):
            state = replace(state, import_module=state.import_module + getattr(terminal, "text", str(terminal)))
        elif state.import_module is not None or (terminal == "import" and state.from_module is not None):
            if not state._module_may_exist(before, after):
                return None
            state = replace(state, import_module="" if terminal == "," else None, module_exempt=False)
        if terminal not in _WATCHED:
            return replace(state, previous=terminal)
        # Where the terminals fed together open or close a block, either side may hold: the more lenient counts.
        statement_start = (state.previous in _STATEMENT_ENDS or before.opened is not None
                           or after.opened is not None)
        changes: dict = {"previous": terminal}
        text = getattr(terminal, "text", None)
        if text is not None:
            if (state.importing and state.previous in ("import", ",", "(") and not state.exempt
                    and _imports_judged(before) and _imports_judged(after)):
                defined = state.file.imported(state.from_module)
                if defined is not None and text not in defined:
                    return None
            changes.update(state._named(text, _in_function(before) or _in_function(after)))
        elif terminal in (lx.NEWLINE, ";"):  # a statement's end: `from .util import helper; import os`
            changes.update(line_free=False, header_free=False, targets=0, lambdas=0, after_as=False, calls=(),
                           from_module=None, importing=False, import_module=None, module_exempt=False)
        elif terminal == "import" and state.from_module is not None:
            changes.update(line_free=True, importing=True)
        elif statement_start and terminal in _FREE_LINES:
            changes["line_free"] = True
            if terminal == "from":
                changes.update(from_module="", importing=False)
            elif terminal == "import":
                changes["import_module"] = ""
        elif terminal in ("def", "class"):
            changes["header_free"] = True
        elif terminal == "for":
            changes["targets"] = state.targets + 1
        elif terminal == "in" and state.targets:
            changes["targets"] = state.targets - 1
        elif terminal == "lambda":
            changes["lambdas"] = state.lambdas + 1
        elif terminal == ":":
            if state.lambdas:
                changes["lambdas"] = state.lambdas - 1
            elif not state.calls:
                changes["header_free"] = False
        elif terminal == "as":
            changes["after_as"] = True
        elif terminal == "*" and state.previous == "import":
            changes["off"] = True
        elif terminal in lx.OPENING_BRACKETS:
            changes["calls"] = state.calls + (state.previous in _CALLABLE_ENDS and terminal != "{",)
        elif terminal in lx.CLOSING_BRACKETS:
            changes["calls"] = state.calls[:-1]
        return replace(state, **changes)

    def _module_may_exist(self, before: Blocks, after: Blocks) -> bool:
        """Whether the module an `import` line or a `from` line has written (its end reached) may exist."""
        module = self.import_module if self.import_module is not None else self.from_module
        return (not module or self.module_exempt or self.off or not (_imports_judged(before) and _imports_judged(after))
                or self.file.module_exists(module) is not False)

    def _named(self, name: str, in_function: bool) -> dict:
        """What a completed NAME changes."""
        if self.exempt:
            changes = {"exempt": False, "written": self.written | {name}}
            if self.import_module is not None or (self.from_module is not None and not self.importing):
                changes["module_exempt"] = True
            return changes
        if self.previous == ".":
            return {}
        if self.line_free or self.header_free or self.targets or self.lambdas or self.after_as:
            return {"written": self.written | {name}, "debt": self.debt - {name}, "after_as": False}
        if name in DYNAMIC_NAMES:
            return {"off": True}
        known = name in self.file.known or name in self.written or (name.startswith("__") and name.endswith("__"))
        return {"pending": name, "pending_deferred": bool(self.calls) or in_function, "pending_known": known}


_BEFORE_MODULES = frozenset({"from", "import", ",", ".", "..."})  # what a module's name (or its next part) follows
_OUTSIDE = Blocks()  # the blocks of a statement read again from its start (`Names.start`): none known


def _imports_judged(blocks: Blocks) -> bool:
    """An import here is judged: at module level or in a function's or class's body, known to be so (not in a
    `try`, where it may be meant to fail)."""
    return not blocks.unknown and all(kind in (FUNCTION, ASYNC_FUNCTION, CLASS) for kind in blocks.kinds)


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


def _modules_written(node: ast.Import | ast.ImportFrom, text: str, lines: list[str], offsets: list[int]):
    """(module with its leading dots, where its text starts) of each module an import names."""
    def offset(line: int, column: int) -> int:
        return offsets[line - 1] + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8", "replace"))

    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, offset(alias.lineno, alias.col_offset)
    else:
        found = _FROM_MODULE.match(text, offset(node.lineno, node.col_offset))
        if found is not None:
            yield "." * node.level + (node.module or ""), found.end()


def _in_function(blocks: Blocks) -> bool:
    """A load here runs later than the text after it (a function body), or its scope is not known."""
    return blocks.lambda_line or blocks._scope() in (FUNCTION, ASYNC_FUNCTION, OTHER)
