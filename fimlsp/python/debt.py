"""Which of a completed file's undefined loads the middle owes a binding (the name judge's end, issue 49).

A name the file loads that nothing binds (pyflakes' undefined names) is the middle's fault only where the middle
could have been its binding; where the writer uses the name unbound anyway, refusing the middle refuses the true
one too, and strict names then show nothing. A load is not owed:
- in the left context's whole lines (the writer loaded it before the cursor, whatever the middle);
- where no middle here would be its binding: the middle touches the own code (a header and body, less the bodies
  of the functions and classes in it) of none of the scopes it reads: its function, the functions around it (up
  to a class), and the module, but from a function nested in a function (a test's fixture, `def f(): return a +
  b` made to be compiled only: what the module would bind for it is not the middle's to guess);
- where Python does not evaluate it or the code expects it to fail: a function's local annotation (`x: List[int]
  = []`), a `with` or a call that names `NameError` (`assertRaises(NameError, lambda: x)`; pyflakes itself lets
  a `try` that catches it go);
- a function's local (a name it binds) where the middle is outside the function's own code: no binding there
  reaches the load (a loop that loads a local before it binds it, which pyflakes finds undefined where no star
  import hides it).
A name with a load that is not owed is one the writer uses unbound (a local annotation's tells nothing of the
name's other loads), and so is every name a function loads unbound where it loads such a name (test bodies of
undefined names: `try: a() except: b()`): none of its loads is owed, the middle's own loads included. Dunder
names (`__path__`, a package's) are never owed, nor are a function's loads of names code at module level binds
(pyflakes reads function bodies after a module's `del`).
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass

from fimlsp.python.window import statement_line

FAILING_NAMES = frozenset({"NameError", "UnboundLocalError"})  # what code that expects a load to fail names
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True)
class _Load:
    scope: ast.AST  # the innermost function, class or module (lambdas and comprehensions are their parent's)
    chain: tuple[ast.AST, ...]  # the scopes whose bindings it may read that a middle there would write
    excused: bool  # not evaluated, or expected to fail
    evaluated: bool = True  # False: a local annotation, which shows nothing of how the writer uses the name


def owed(text: str, tree: ast.Module, undefined: list[tuple[str, int, int]], middle_start: int,
         middle_end: int, left_lines: int) -> frozenset[str]:
    """The names of `undefined` ((name, line, column) of pyflakes' undefined loads in `text`, whose syntax tree is
    `tree`) that the middle, `text[middle_start:middle_end]`, must bind or not load; `left_lines`: the whole lines of
    the left context."""
    offsets = _line_offsets(text)

    def offset(line: int, column: int) -> int:
        encoded = text[offsets[line - 1]:offsets[line]].encode("utf-8")
        return offsets[line - 1] + len(encoded[:column].decode("utf-8", "replace"))

    # the walks read only the statements that hold an undefined load, and those the middle's lines meet: once per
    # end a search checks, on a file of 80-280 kB a whole walk took 80-250 ms
    lines = sorted({line for _name, line, _column in undefined})
    loads = _loads(tree, lines)
    if any((line, column) not in loads for _name, line, column in undefined):
        loads = _loads(tree)  # (a load placed outside its statement's lines)
    places = [i for i in range(middle_start, middle_end) if not text[i].isspace()] or [middle_start]
    # (lines as `offset` counts them, by which the regions place their scopes)
    lines_of_middle = range(_line_of(offsets, min(places)), _line_of(offsets, max(places)) + 1)
    regions = _Regions(tree, offset, len(text), lines_of_middle)
    touched = regions.touched(places)
    module_bound = _module_bindings(tree)
    found = []  # (name, in the middle, the load's facts, not owed on its own merits, whether that tells of the writer)
    for name, line, column in undefined:
        at = offset(line, column)
        load = loads.get((line, column)) or _Load(tree, (tree,), False)
        in_middle = at < middle_end and at + len(name) > middle_start  # (a name the middle ends is its own)
        free = (line <= left_lines or load.excused
                or (at >= middle_end and not any(scope in touched for scope in load.chain)))
        # a local annotation's load is not owed, but shows nothing of the name's other loads (io's BytesIO in
        # `self.value: BytesIO | None` is still owed where `BytesIO()` loads it)
        telling = free and (load.evaluated or line <= left_lines
                            or (at >= middle_end and not any(scope in touched for scope in load.chain)))
        found.append((name, in_middle, load, free, telling))
    unbound_by_writer = {name for name, in_middle, _load, _free, telling in found if telling and not in_middle}
    while True:  # a function that loads a name the writer uses unbound is code of unbound names
        careless = {load.scope for name, in_middle, load, _free, _telling in found
                    if name in unbound_by_writer and not in_middle and isinstance(load.scope, _FUNCTIONS)}
        more = {name for name, in_middle, load, _free, _telling in found if not in_middle and load.scope in careless}
        if more <= unbound_by_writer:
            break
        unbound_by_writer |= more
    locals_of: dict[ast.AST, set[str]] = {}

    def local_outside(name: str, load: _Load) -> bool:
        """A local of the load's function, which the middle, outside that function's own code, cannot bind."""
        if not isinstance(load.scope, _FUNCTIONS) or load.scope in touched:
            return False
        if load.scope not in locals_of:
            locals_of[load.scope] = _function_locals(load.scope)
        return name in locals_of[load.scope]

    return frozenset(name for name, in_middle, load, free, _telling in found
                     if name not in unbound_by_writer and not (free and not load.evaluated and not in_middle)
                     and not (name in module_bound and isinstance(load.scope, _FUNCTIONS))
                     and not (name.startswith("__") and name.endswith("__"))
                     and not (not in_middle and local_outside(name, load)))


def _line_of(offsets: list[int], at: int) -> int:
    """The line (from 1) that holds offset `at` of the text whose line starts are `offsets`."""
    return bisect.bisect_right(offsets, at, 0, len(offsets) - 1)


def _meets(statement: ast.stmt, lines: list[int]) -> bool:
    """Whether one of `lines` (sorted) is one of the statement's, its decorators' included."""
    at = bisect.bisect_left(lines, statement_line(statement))
    return at < len(lines) and lines[at] <= statement.end_lineno


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    offsets.append(len(text))
    return offsets


def _mentions_failure(node: ast.AST | None) -> bool:
    return node is not None and any(isinstance(inner, ast.Name) and inner.id in FAILING_NAMES
                                    for inner in ast.walk(node))


def _loads(tree: ast.Module, lines: list[int] | None = None) -> dict[tuple[int, int], _Load]:
    """Every expression's place (line, column) and what its load would read, the innermost node's at a place; with
    `lines` (sorted), only those of the statements that one of them is a line of."""
    found: dict[tuple[int, int], _Load] = {}

    def chain_of(scopes: tuple[ast.AST, ...]) -> tuple[ast.AST, ...]:
        # the innermost scope, the functions around it up to a class (a method's closure over the function its
        # class is defined in: rare), and the module, but from a function nested in a function (a test's fixture,
        # `def f(): return a + b` made to be compiled only)
        around = []
        for scope in reversed(scopes[1:-1]):
            if isinstance(scope, ast.ClassDef):
                break
            around.append(scope)
        nested = any(isinstance(scope, _FUNCTIONS) for scope in scopes[1:-1])
        return (scopes[-1], *around) + (() if nested else (tree,))

    def visit(node: ast.AST, scopes: tuple[ast.AST, ...], excused: bool, evaluated: bool = True) -> None:
        if lines is not None and isinstance(node, ast.stmt) and not _meets(node, lines):
            return
        if isinstance(node, ast.expr):
            found[(node.lineno, node.col_offset)] = _Load(scopes[-1], chain_of(scopes), excused, evaluated)
        if isinstance(node, _SCOPES):
            for outer in node.decorator_list + _header_parts(node):
                visit(outer, scopes, excused, evaluated)
            inner = scopes + (node,)
            if isinstance(node, _FUNCTIONS):
                for argument in _arguments(node.args):
                    if argument.annotation is not None:
                        visit(argument.annotation, scopes, excused, evaluated)
            for statement in node.body:
                visit(statement, inner, excused, evaluated)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            expects = any(_mentions_failure(item.context_expr) for item in node.items)
            for item in node.items:
                visit(item, scopes, excused, evaluated)
            for statement in node.body:
                visit(statement, scopes, excused or expects, evaluated)
            return
        if isinstance(node, ast.Call):
            excused = excused or any(_mentions_failure(argument) for argument in node.args)
        if isinstance(node, ast.AnnAssign) and isinstance(scopes[-1], _FUNCTIONS):
            visit(node.target, scopes, excused, evaluated)
            if node.value is not None:
                visit(node.value, scopes, excused, evaluated)
            visit(node.annotation, scopes, True, False)  # a local annotation is never evaluated
            return
        for child in ast.iter_child_nodes(node):
            visit(child, scopes, excused, evaluated)

    visit(tree, (tree,), False)
    return found


def _header_parts(node: ast.AST) -> list[ast.AST]:
    """What a `def` or `class` header evaluates in the scope around it (but its parameters' annotations)."""
    if isinstance(node, ast.ClassDef):
        return node.bases + node.keywords
    parts = [default for default in node.args.defaults + node.args.kw_defaults if default is not None]
    return parts + ([node.returns] if node.returns is not None else [])


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    return (arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            + [extra for extra in (arguments.vararg, arguments.kwarg) if extra is not None])


class _Regions:
    """Which scopes' own code (their header and body, less the bodies of the functions and classes in them) holds a
    place of the text."""

    def __init__(self, tree: ast.Module, offset, length: int, lines: range):
        """The regions of the scopes whose lines (decorators' included) meet `lines`: the places `touched` is asked
        of lie there."""
        # (start, where its body starts, end, scope, the scope around it), outer first
        self._spans: list[tuple[int, int, int, ast.AST, ast.AST | None]] = [(0, 0, length, tree, None)]
        for node, parent in _scopes_meeting(tree, lines):
            start = offset(node.lineno, node.col_offset)
            body = offset(node.body[0].lineno, node.body[0].col_offset)
            self._spans.append((start, body, offset(node.end_lineno, node.end_col_offset), node, parent))
        self._spans.sort(key=lambda span: (span[0], -span[2]))

    def touched(self, places: list[int]) -> set[ast.AST]:
        """The scopes whose own code holds one of `places`: the innermost scope spanning it, and the one around it
        where it is in its header (which binds the function's or class's name there)."""
        scopes = set()
        low, high = min(places), max(places)
        around = [span for span in self._spans if span[0] <= high and span[2] > low]
        for place in places:
            innermost = None
            for start, body, end, scope, parent in around:
                if start > place:
                    break
                if start <= place < end:
                    innermost = (scope, parent if place < body else None)
            if innermost is not None:
                scopes.update(scope for scope in innermost if scope is not None)
        return scopes


def _scopes_meeting(tree: ast.Module, lines: range):
    """(scope, the scope whose own code defines it) of the functions and classes that one of `lines` is a line of
    (statements only: no expression holds one)."""
    stack = [(child, tree) for child in ast.iter_child_nodes(tree)]
    while stack:
        node, around = stack.pop()
        if isinstance(node, ast.expr) or (isinstance(node, ast.stmt) and not _meets(node, lines)):
            continue
        if isinstance(node, _SCOPES):
            yield node, around
            around = node
        stack.extend((child, around) for child in ast.iter_child_nodes(node))


def _module_bindings(tree: ast.Module) -> set[str]:
    """The names code at module level binds (pyflakes finds them undefined in a function where the module deletes
    them later: it reads function bodies after the module's end)."""
    return _bindings(tree.body)


def _function_locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names local to `function`: its parameters and what its own code binds, less what it declares global or
    nonlocal. A load of one reads no binding outside the function, whatever pyflakes says (it finds a local that a
    loop loads before it binds undefined where no star import hides it: tokenize's `_tokenize` and `strstart`)."""
    declared = {name for node in _module_level(function.body) if isinstance(node, (ast.Global, ast.Nonlocal))
                for name in node.names}
    return ({argument.arg for argument in _arguments(function.args)} | _bindings(function.body)) - declared


def _bindings(body: list[ast.stmt]) -> set[str]:
    """The names the code of `body` binds, not counting the bodies of the functions and classes in it."""
    bound = set()
    declared_only = {id(node.target) for node in _module_level(body)
                     if isinstance(node, ast.AnnAssign) and node.value is None}  # `main: int` binds nothing
    for node in _module_level(body):
        if id(node) in declared_only:
            continue
        if isinstance(node, (*_SCOPES,)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


def _module_level(body: list[ast.stmt]):
    """The nodes of module-level code, not inside function or class bodies."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(node))
