"""Names a middle leaves possibly unbound (pyright's reportPossiblyUnbound; issue 49): a local of the function
around the middle that the right context loads where some path to the load does not bind it, through code the
middle wrote. uvicorn's `_subprocess`: `try: stdin_fileno = sys.stdin.fileno()` / `except OSError:` + the middle
+ `kwargs = {"stdin_fileno": stdin_fileno}`; the true middle binds it (`stdin_fileno = None`), `pass` does not.

A definite-assignment pass over the function's statements (`_Flow`), permissive wherever it cannot be sure, so that
it never finds unbound what Python would bind: a statement that is a call (or awaits one) may never return
(`sys.exit(1)`), a `match` is taken to be exhaustive, a `del` unbinds nothing, the loads in nested scopes and
comprehensions are not read. A load is the middle's fault only where the same pass, with every block the middle
wrote whole (of simple statements) binding what the other blocks of its statement bind and nothing binds before it
(a handler's body what the `try` body binds, an `else` what its `if` binds), finds it bound, and straight-line code
leads from the middle to the load: nothing binds the name again, and nothing branches (idlelib's `except TclError:
pos = None` then `if not pos: first = ...`, http.client's `except ValueError: version = ""` then `if not
version.startswith("HTTP/"): raise`): the gap is the middle's arm of a branch whose other arm binds the name. Loads
that code around the middle leaves unbound anyway (a loop's variable read after the loop, a name bound under one
`if` and read under another) are not, nor those in a loop whose body does not hold the middle (multiprocessing's
`wait_for` binds `waittime` in its loop where a condition that an earlier branch set up holds).
"""

from __future__ import annotations

import ast

from fimlsp.python.syntax import node_offsets

# Statements that branch (or may end the function) between the middle and a load: past one, the load may be
# reached only where the middle's branch set something up (filecmp's `except OSError: ok = 0`, then `if ok:`).
_BRANCHING = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.Match,
              ast.Assert)
_ALL = None  # the state after code that binds every name, or that does not complete (the join's identity)


def left_unbound(tree: ast.Module, text: str, start: int, end: int) -> frozenset[str]:
    """The locals of the function holding the middle, `text[start:end]`, that a load in the right context reads
    possibly unbound because of the middle (`tree` is `text`'s)."""
    offset = node_offsets(text)

    function, statements = None, tree.body
    while statements:  # down the statements that hold the middle, to the innermost function body among them
        holder = next((node for node in statements if offset(node.lineno, node.col_offset) <= start
                       and end <= offset(node.end_lineno, node.end_col_offset)), None)
        if holder is None:
            break
        if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)) and offset(
                holder.body[0].lineno, holder.body[0].col_offset) <= start:
            function = holder
        statements = [statement for block in _blocks(holder) for statement in block]
    if function is None:
        return frozenset()
    local = _locals(function)
    if not local:
        return frozenset()
    arguments = function.args
    parameters = frozenset(each.arg for each in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                                 arguments.vararg, arguments.kwarg] if each is not None)
    actual = _Flow(local, lambda block: frozenset(),
                   lambda loop: start < offset(loop.body[0].lineno, loop.body[0].col_offset))
    actual.block(function.body, parameters)

    def written(block: list[ast.stmt]) -> bool:
        """The middle wrote the whole block, of simple statements (`pass`)."""
        return start <= offset(block[0].lineno, block[0].col_offset) and offset(
            block[-1].end_lineno, block[-1].end_col_offset) <= end and not any(
            _blocks(statement) or isinstance(statement, _BRANCHING) for statement in block)

    stores = [(node.id, offset(node.lineno, node.col_offset)) for node in ast.walk(function)
              if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)]

    def could_bind(node: ast.stmt, block: list[ast.stmt]) -> frozenset[str]:
        """What the middle's `block` of `node` could bind: what its other blocks bind (a handler's `pass`, the
        `try` body's names) that nothing binds before it (difflib binds `best_i` in a loop before the `if` whose
        `else` relies on it)."""
        begins = offset(node.lineno, node.col_offset)
        before = {name for name, place in stores if place < begins}
        return frozenset().union(*(_stores(other) for other in _blocks(node) if other is not block)) - before

    credit = {id(block): could_bind(node, block) for node in ast.walk(function) if isinstance(node, ast.stmt)
              for block in _blocks(node) if written(block)}
    possible = _Flow(local, lambda block: credit.get(id(block), frozenset()))
    possible.block(function.body, parameters)
    branches = [offset(node.lineno, node.col_offset) for node in ast.walk(function) if isinstance(node, _BRANCHING)]
    found = set()
    for (name, line, column), bound in actual.loads.items():
        at = offset(line, column)
        if at >= end and bound is not _ALL and name not in bound and (name, line, column) not in actual.in_other_loops:
            after = possible.loads.get((name, line, column), _ALL)
            # bound where the middle's blocks bind; reached from the middle in a straight line, where nothing binds
            # it again (no condition on the way that the middle's branch may have decided)
            if (after is _ALL or name in after) and not any(end <= place < at for place in branches) and not any(
                    stored == name and end <= place < at for stored, place in stores):
                found.add(name)
    return frozenset(found)


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The names the function's own body binds, less those it declares global or nonlocal."""
    bound, declared = set(), set()
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(bound - declared)


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds."""
    blocks = [getattr(statement, part, None) for part in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    blocks += [case.body for case in getattr(statement, "cases", ())]
    return [block for block in blocks if isinstance(block, list) and block and isinstance(block[0], ast.stmt)]


def _stores(block: list[ast.stmt]) -> frozenset[str]:
    return frozenset(node.id for statement in block for node in ast.walk(statement)
                     if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))


def _join(*states):
    present = [state for state in states if state is not _ALL]
    return frozenset.intersection(*present) if present else _ALL


class _Flow:
    """Definite assignment over a function's statements: the names bound on every path to each load of a local
    (`loads`); `also_binds` says what a block counts as binding besides what it does."""

    def __init__(self, local: frozenset[str], also_binds, apart=lambda loop: False):
        self.local, self.also_binds, self.apart = local, also_binds, apart
        self.loads: dict[tuple[str, int, int], frozenset[str] | None] = {}
        self.in_other_loops: set[tuple[str, int, int]] = set()  # loads in a loop `apart` says is another's
        self._breaks: list[list] = []
        self._loops: list[ast.stmt] = []

    def block(self, statements: list[ast.stmt], state):
        for statement in statements:
            state = self.statement(statement, state)
        return state if state is _ALL else state | self.also_binds(statements)

    def _read(self, node: ast.AST | None, state) -> frozenset[str] | None:
        """Record the loads of `node` (not in nested scopes); returns `state` with its walrus targets bound."""
        if node is None:
            return state
        stack, walrus = [node], set()
        while stack:
            current = stack.pop()
            if isinstance(current, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(current, ast.NamedExpr):
                walrus.add(current.target.id)
            if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load) and current.id in self.local:
                self._load(current.id, current.lineno, current.col_offset, state)
            stack.extend(ast.iter_child_nodes(current))
        return state if state is _ALL or not walrus else state | walrus

    def _load(self, name: str, line: int, column: int, state) -> None:
        key = (name, line, column)
        self.loads[key] = state if key not in self.loads else _join(self.loads[key], state)
        if any(self.apart(loop) for loop in self._loops):
            self.in_other_loops.add(key)

    def statement(self, node: ast.stmt, state):
        if isinstance(node, (ast.Return, ast.Raise, ast.Continue)):
            self._read(node, state)
            return _ALL
        if isinstance(node, ast.Break):
            if self._breaks:
                self._breaks[-1].append(state)
            return _ALL
        if isinstance(node, ast.Expr):
            self._read(node.value, state)
            call = node.value.value if isinstance(node.value, ast.Await) else node.value
            return _ALL if isinstance(call, ast.Call) else state  # it may never return (sys.exit)
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Constant) and not node.test.value:
            return _ALL  # `assert False`
        if isinstance(node, ast.If):
            state = self._read(node.test, state)
            return _join(self.block(node.body, state), self.block(node.orelse, state))
        if isinstance(node, (ast.While, ast.For, ast.AsyncFor)):
            return self._loop(node, state)
        if isinstance(node, (ast.Try, ast.TryStar)):
            return self._try(node, state)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                state = self._read(item.context_expr, state)
                state = self._bind(item.optional_vars, state)
            return self.block(node.body, state)
        if isinstance(node, ast.Match):
            state = self._read(node.subject, state)
            cases = [self.block(case.body, self._bind(case.pattern, self._read(case.guard, state)))
                     for case in node.cases]
            return _join(*cases)  # taken to be exhaustive
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                self._read(decorator, state)
            return state if state is _ALL else state | {node.name}
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            return state if state is _ALL else state | names
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            state = self._read(getattr(node, "value", None), state)
            if isinstance(node, ast.AugAssign):
                self._read(node.target, state)
                if isinstance(node.target, ast.Name) and node.target.id in self.local:  # its target is read too
                    self._load(node.target.id, node.target.lineno, node.target.col_offset, state)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is None:
                return state
            for target in targets:
                state = self._bind(target, state)
            return state
        self._read(node, state)
        return state

    def _bind(self, target: ast.AST | None, state):
        """`state` with the names `target` (an assignment's target, a pattern) binds; reads its loads."""
        if target is None or state is _ALL:
            return state
        names = set()
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                names.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                names.add(node.rest)
            elif isinstance(node, (ast.Subscript, ast.Attribute)):
                self._read(node, state)
        return state | names

    def _loop(self, node: ast.While | ast.For | ast.AsyncFor, state):
        if isinstance(node, ast.While):
            state = self._read(node.test, state)
            body_start = state
            endless = isinstance(node.test, ast.Constant) and bool(node.test.value)
        else:
            state = self._read(node.iter, state)
            body_start = self._bind(node.target, state)
            endless = False
        self._breaks.append([])
        self._loops.append(node)
        self.block(node.body, body_start)
        self._loops.pop()
        breaks = self._breaks.pop()
        after = _ALL if endless else self.block(node.orelse, state)
        return _join(after, *breaks)

    def _try(self, node: ast.Try | ast.TryStar, state):
        normal = self.block(node.orelse, self.block(node.body, state))
        handled = []
        for handler in node.handlers:
            self._read(handler.type, state)
            start = state if state is _ALL or not handler.name else state | {handler.name}
            handled.append(self.block(handler.body, start))
        out = _join(normal, *handled)
        if node.finalbody:
            final = self.block(node.finalbody, state)
            if final is _ALL:
                return _ALL
            return out if out is _ALL else out | (final - state)
        return out
