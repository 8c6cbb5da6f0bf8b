"""pyflakes' undefined names of a whole file, each function body read once across the texts that hold it.

The name judge asks pyflakes about every end a finish search checks: the same file with another middle, dozens
of times a keystroke, and pyflakes spends most of its time in function bodies the middle is not in (a 22 kB module:
100 ms a check). A body's undefined loads depend on its own text and on the scopes around it; for an outer function
(a module's, or a method of a class at any depth: class scopes are not visible in the bodies of their methods) that
is the module scope alone. So each outer function's body is read once on its own (`_BodyReader`: its module scope
binds nothing, not even the builtins, so every load its own scopes do not bind is reported) and its *free loads* kept under its
text; a file's check (`_FileReader`) reads the module's code and class bodies as pyflakes does, takes each outer
body's free loads from what was kept, and reports those the module scope, as it stands when pyflakes' deferred
bodies run, does not bind. The verdict is pyflakes' own (`tests/test_python_flakes.py` compares them): what else
pyflakes lets a body depend on travels with the text it is kept under, namely whether the body is in a class
(`__class__`), under an `if` or `while` (a conditional `del`), and `from __future__ import annotations`; names a
body declares `global` or `nonlocal` (pyflakes binds them in the module scope and forgets what it reported of
them) are kept with it; where the module scope binds a free load by a bare annotation (`x: int`, whose meaning for
a load depends on where in an annotation it is), the file is read whole as pyflakes reads it.
"""

from __future__ import annotations

import ast
import copy
import threading
import warnings
from collections import OrderedDict

from fimlsp.python.syntax import node_offsets
from fimlsp.python.window import statement_line

try:
    from pyflakes import checker, messages
except ImportError:  # pyflakes is the judge's: without it no name is judged undefined
    checker = messages = None

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_CONDITIONAL = (ast.If, ast.While, ast.IfExp)  # pyflakes' conditional branches (a `del` under one is not judged)
_KEPT_CHARS = 2_000_000  # the most characters of function text kept (least recently used go): about 10 MB in all
_kept: OrderedDict[tuple, tuple] = OrderedDict()  # (free loads, undefined deletions, declared names)
_kept_chars = 0
_lock = threading.Lock()

Place = tuple[str, int, int]  # a name, the line and the (UTF-8) column of a load of it


def undefined_places(tree: ast.Module, text: str | None = None) -> list[Place] | None:
    """The loads of undefined names pyflakes reports in `tree` (the syntax tree of `text`, where given: then each
    outer function body's free loads are read once); None without pyflakes or where pyflakes gives up."""
    if checker is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if text is not None:
                found = _FileReader(tree, text).undefined()
                if found is not None:
                    return found
            return [_place(message) for message in checker.Checker(tree, filename="<fim>").messages
                    if isinstance(message, messages.UndefinedName)]
        except RecursionError:
            return None


def _place(message) -> Place:
    return message.message_args[0], message.lineno, message.col


if checker is not None:

    class _FileReader(checker.Checker):
        """pyflakes on a whole file, but for the bodies of outer functions: their free loads are each read once."""

        def __init__(self, tree: ast.Module, text: str):
            self._text, self._offset = text, None
            self._remembered: list[Place] = []  # outer bodies' free loads, at their places in this text
            self._deleted: list[Place] = []  # outer bodies' deletions of names their scope does not bind
            self._declared: set[str] = set()  # names outer bodies declare global or nonlocal
            self._module = None
            super().__init__(tree, filename="<fim>")

        def undefined(self) -> list[Place] | None:
            """The undefined loads, as pyflakes reports them; None where this reading cannot tell."""
            module, declared = self._module, self._declared
            found = [_place(message) for message in self.messages
                     if isinstance(message, messages.UndefinedName) and message.message_args[0] not in declared]
            for name, line, column in self._remembered:
                if name in declared:
                    continue
                binding = module.get(name)
                if isinstance(binding, checker.Annotation):
                    return None
                if binding is None and not module.importStarred:
                    found.append((name, line, column))
            if not declared.isdisjoint(name for name, _line, _column in self._deleted):
                return None  # whether pyflakes forgets the `del` depends on the order it reads the bodies in
            return found + self._deleted

        def _run_deferred(self):
            super()._run_deferred()
            self._module = self.scopeStack[0]

        def handleChildren(self, tree, omit=None):
            if (isinstance(tree, _FUNCTIONS) and self._running_deferred
                    and all(type(scope) in (checker.ModuleScope, checker.ClassScope)
                            for scope in self.scopeStack[:-1])):
                self._read_once(tree)
                return
            super().handleChildren(tree, omit)

        def _read_once(self, node) -> None:
            """The free loads of the body of the outer function `node`: kept ones, else read now and kept."""
            if self._offset is None:
                self._offset = node_offsets(self._text)
            first = statement_line(node)
            in_class = any(type(scope) is checker.ClassScope for scope in self.scopeStack[:-1])
            key = (in_class, self._conditional(node), bool(self.annotationsFutureEnabled),
                   self._text[self._offset(first, 0):self._offset(node.end_lineno, node.end_col_offset)])
            with _lock:
                kept = _kept.get(key)
                if kept is not None:
                    _kept.move_to_end(key)
            if kept is None:
                kept = _read_alone(node, first, *key[:3])
                _keep(key, kept)
            loads, deletions, declared = kept
            self._remembered.extend((name, first + line, column) for name, line, column in loads)
            self._deleted.extend((name, first + line, column) for name, line, column in deletions)
            self._declared.update(declared)

        def _conditional(self, node) -> bool:
            parents = self._parents
            current = parents.get(node)
            while current is not None:
                if isinstance(current, _CONDITIONAL):
                    return True
                current = parents.get(current)
            return False

    class _BodyReader(checker.Checker):
        """pyflakes on one outer function alone, reporting only the undefined loads of its body, with the module
        scope emptied before the bodies run and no builtins: every load its own scopes do not bind (a builtin's too:
        the file's module scope binds it)."""

        builtIns = property(lambda self: frozenset(), lambda self, value: None)  # pyflakes binds each, per reader

        def __init__(self, tree: ast.Module, future: bool):
            self._future, self._deleting = future, False
            self.declared: set[str] = set()
            self.deletions: set[int] = set()  # the reports of a `del` (undefined whatever the module binds)
            super().__init__(tree, filename="<fim>")

        def handleChildren(self, tree, omit=None):
            if tree is self.root:
                self.scopeStack[0]._annotations_future_enabled = self._future
            super().handleChildren(tree, omit)

        def _run_deferred(self):
            self.scopeStack[0].clear()
            super()._run_deferred()

        def report(self, messageClass, *args, **kwargs):
            if messageClass is messages.UndefinedName and any(
                    isinstance(scope, checker.FunctionScope) for scope in self.scopeStack):
                super().report(messageClass, *args, **kwargs)
                if self._deleting:
                    self.deletions.add(id(self.messages[-1]))

        def handleNodeDelete(self, node):
            self._deleting = True
            try:
                super().handleNodeDelete(node)
            finally:
                self._deleting = False

        def GLOBAL(self, node):
            if self.scope is not self.scopeStack[0]:
                self.declared.update(node.names)
            super().GLOBAL(node)

        NONLOCAL = GLOBAL


def _read_alone(node, first: int, in_class: bool, conditional: bool, future: bool):
    """The free loads of `node`'s body, its deletions of names it does not bind (both with lines counted from
    `first`) and the names it declares global or nonlocal, read with what pyflakes lets them depend on around it: a
    class, an `if`, the annotations future."""
    node = _body_only(node)
    statement = ast.Expr(value=node) if isinstance(node, ast.Lambda) else node
    if in_class:
        statement = ast.ClassDef(name="_", bases=[], keywords=[], body=[statement], decorator_list=[])
    if conditional:
        statement = ast.If(test=ast.Constant(value=True), body=[statement], orelse=[])
    for made in ast.walk(statement):
        if made is node:
            break
        made.lineno = made.end_lineno = node.lineno
        made.col_offset = made.end_col_offset = node.col_offset
    reader = _BodyReader(ast.Module(body=[statement], type_ignores=[]), future)
    found = {False: [], True: []}
    for message in reader.messages:
        name, line, column = _place(message)
        found[id(message) in reader.deletions].append((name, line - first, column))
    return tuple(found[False]), tuple(found[True]), frozenset(reader.declared)


def _body_only(node):
    """A copy of the function `node` without what pyflakes reads around its body (decorators, annotations and
    defaults, read in the file's reading): its body and its parameters' names, all its body's reading needs."""
    bare = copy.copy(node)
    arguments = bare.args = copy.copy(node.args)
    arguments.defaults, arguments.kw_defaults = [], [None] * len(arguments.kwonlyargs)
    for field in ("posonlyargs", "args", "kwonlyargs"):
        setattr(arguments, field, [_unannotated(argument) for argument in getattr(arguments, field)])
    for field in ("vararg", "kwarg"):
        if getattr(arguments, field) is not None:
            setattr(arguments, field, _unannotated(getattr(arguments, field)))
    if not isinstance(node, ast.Lambda):
        bare.decorator_list, bare.returns = [], None
    return bare


def _unannotated(argument: ast.arg) -> ast.arg:
    bare = copy.copy(argument)
    bare.annotation = None
    return bare


def forget_bodies() -> None:
    """Forget every kept body (a measurement's cold start)."""
    global _kept_chars
    with _lock:
        _kept.clear()
        _kept_chars = 0


def _keep(key: tuple, kept) -> None:
    global _kept_chars
    with _lock:
        if key in _kept:
            return
        _kept[key] = kept
        _kept_chars += len(key[-1])
        while _kept_chars > _KEPT_CHARS and len(_kept) > 1:
            old, _ = _kept.popitem(last=False)
            _kept_chars -= len(old[-1])
