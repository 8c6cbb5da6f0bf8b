"""The name judge following the middle terminal by terminal (`Names`); what the file binds is in `names`."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from fimlsp.python import lexemes as lx
from fimlsp.python.blocks import ASYNC_FUNCTION, CLASS, FUNCTION, OTHER, Blocks
from fimlsp.python.debt import FAILING_NAMES
from fimlsp.python.facts import STATEMENT_ENDS as _STATEMENT_ENDS
from fimlsp.python.names import DYNAMIC_NAMES, FileNames
from fimlsp.python.relaxation import star_import_names

_FREE_LINES = frozenset({"import", "from", "global", "nonlocal", "del", "match", "case"})
_BINDING_NEXT = frozenset({"=", ":=", ",", ":", ")", "]"})
_BINDING_NEXT_IN_CALL = frozenset({"=", ":="})
_CALLABLE_ENDS = frozenset({lx.NAME, ")", "]", lx.STRING})
# The terminals that change more than the previous one (NAME stands for every name).
_WATCHED = (frozenset({lx.NAME, lx.NEWLINE, ";", "def", "class", "for", "in", "lambda", ":", "as", "*"}) | _FREE_LINES
            | lx.OPENING_BRACKETS | lx.CLOSING_BRACKETS)


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
    expects_failure: bool = False  # the middle named NameError: an `except` of it may excuse the debt
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
            if module and not module.strip(".") and "import".startswith(begun):
                return True  # `from . import x`: the keyword, where a module's name might have been
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
        # where the file names NameError (`try: abc` before the right context's `except NameError`), the debt is
        # the whole-file check's (pyflakes lets such a `try` go), which the end runs anyway
        return not state.debt or state.expects_failure or _names_failures(self.file.right)

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
            if text in FAILING_NAMES:
                changes["expects_failure"] = True
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
            brought = state._star_brought()
            if brought is None:
                changes["off"] = True
            else:
                changes.update(written=state.written | brought, debt=state.debt - brought)
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

    def _star_brought(self) -> frozenset[str] | None:
        """The names the star import of the `from` line the middle writes brings; None where they cannot be known
        (its module's name unknown, or the module unreadable: `fimlsp.python.relaxation.star_import_names`)."""
        if self.from_module is None:
            return None
        brought = star_import_names(self.from_module, self.file.folder, self.file.roots)
        return None if isinstance(brought, str) else brought

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



def _in_function(blocks: Blocks) -> bool:
    """A load here runs later than the text after it (a function body), or its scope is not known."""
    return blocks.lambda_line or blocks._scope() in (FUNCTION, ASYNC_FUNCTION, OTHER)


@functools.lru_cache(maxsize=8)
def _names_failures(right: str) -> bool:
    return any(name in right for name in FAILING_NAMES)
