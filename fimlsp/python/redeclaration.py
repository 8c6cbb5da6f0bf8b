"""No redeclaration of what the file defines (issue 49, pyright's reportRedeclaration): a middle may not define a
function or class whose name the right context or the middle itself defines again in the same block, nor define
again one the left context defined there (a model that loops writes the same method over and over).

Checked on the whole file at the middle's end (`FileNames.redeclared`, with the name judge): a `def` or `class`
header the middle writes may still end up in another block, as the middle can close it and open another (a method
of one class, then `class B:` and the right context's method of the same name), so only the finished file tells. What
the true code could do is never refused: overloads (`@overload`, `@typing.overload`), a property's setter, getter or
deleter, `@f.register` registrations (`functools.singledispatch`), any decorator called on an attribute
(`@app.route(...)`, which registers the first definition), definitions in different blocks (the right context's
inside an `if` or `try`: a conditional definition), and a first definition that is used before the second.

Nor may a middle write an annotated declaration (`x: T`, `self.x: T` or `cls.x: T` in a method) of a variable or
attribute that its scope declares elsewhere with another type: pyright reports each annotated declaration of a symbol
whose declared type is not the same as its last typed declaration's (`Declaration "x" is obscured by a declaration of
the same name`), a symbol being a name of a module, function or class (a class's also holds the attributes its
methods declare on their first parameter). Refused only where the two types differ for certain (`_Types`: builtin
classes, `typing`'s names for them, `Optional`, unions, `Literal` values (each a type of its own: `1` is not `True`),
TypedDict items' qualifiers (`NotRequired[int]` declares `int`) and the file's own classes, read as pyright reads
them, a bare generic class unlike one with certain arguments, `list` and `list[str]`; a name the file binds otherwise
may alias anything, and `Any` is taken to be the same as anything, as the true code refines an `Any` it declared:
pyparsing's `_tokdict`). Never refused, though pyright reports some: `Final` and `TypeAlias`
(other rules), declarations in different arms of one statement (an `if` and its `else`, a `try` and its handler:
transformers, llama_cpp), a parameter or a function of the same name (common in real code: torch, jinja2), and a
declaration pyright may find unreachable (under `TYPE_CHECKING`, a version or platform check; after a `return`).
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from dataclasses import dataclass

from fimlsp.python.syntax import module_or_error, node_offsets
from fimlsp.syntax_trees import parsed

_DEFINES = re.compile(r"(?<![.\w])(?:def|class)\s")
# a line (or a statement after `;`) that may begin an annotated declaration: `x:`, `self.x:`, `(x):`
_ANNOTATES = re.compile(r"(?:^|;)[ \t]*\(?[ \t]*(?!(?:else|try|except|finally|lambda)\b)[^\W\d]\w*"
                        r"(?:[ \t]*\.[ \t]*[^\W\d]\w*)?[ \t]*\)?[ \t]*:(?!=)", re.MULTILINE)
_EXEMPT_DECORATORS = frozenset({"overload", "setter", "getter", "deleter", "register"})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def redeclared(text: str, middle_start: int, middle_end: int) -> frozenset[str]:
    """The names of functions and classes defined twice in one block of `text` (which compiles) where the middle,
    `text[middle_start:middle_end]`, writes one of the two definitions, and of the variables and attributes the
    middle declares with a type their scope declares otherwise elsewhere (its syntax tree shared with the end's
    other checks within `syntax.one_parse`)."""
    defines = _DEFINES.search(text, middle_start, middle_end) is not None
    first_line = text.rfind("\n", 0, middle_start) + 1
    last_line = text.find("\n", middle_end)
    annotates = _ANNOTATES.search(text, first_line, len(text) if last_line < 0 else last_line) is not None
    if not (defines or annotates):
        return frozenset()
    tree = module_or_error(text)
    if not isinstance(tree, ast.Module):
        return frozenset()
    offset = node_offsets(text)

    def position(node: ast.AST) -> int:
        return offset(node.lineno, node.col_offset)

    found = set(_redeclared_variables(tree, offset, middle_start, middle_end)) if annotates else set()
    for block in _blocks(tree) if defines else ():
        for index, first in enumerate(block):
            if not isinstance(first, _DEFINITIONS) or position(first) >= middle_end:
                continue
            later = _next_definition(block, index, first.name)
            if (later is None or position(later) < middle_start or _exempt(first) or _exempt(later)
                    or not (middle_start <= position(first) or position(later) < middle_end)):
                continue
            if not any(_loads(statement, first.name) for statement in block[index + 1:block.index(later)]):
                found.add(first.name)
    return frozenset(found)


def _blocks(tree: ast.AST):
    """Every statement list of the tree (a module's, a body, an `else`, a handler's, a case's)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                yield statements


def _next_definition(block: list[ast.stmt], index: int, name: str) -> ast.stmt | None:
    for statement in block[index + 1:]:
        if isinstance(statement, _DEFINITIONS) and statement.name == name:
            return statement
    return None


def _exempt(definition: ast.stmt) -> bool:
    for decorator in definition.decorator_list:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute):
            return True
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        last = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if last in _EXEMPT_DECORATORS:
            return True
    return False


def _loads(statement: ast.stmt, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(statement))


@dataclass(frozen=True)
class _Declaration:
    """An annotated declaration `target: annotation` of `name` in the symbol table of `scope` (a module, class or
    function node), reached through `arms` (each enclosing statement and the arm of it that holds the declaration)."""
    scope: ast.AST
    name: str
    statement: ast.AnnAssign
    arms: tuple[tuple[ast.stmt, str], ...]


_STATIC_CONDITIONS = frozenset({"TYPE_CHECKING", "version_info", "platform"})
_TERMINAL = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _redeclared_variables(tree: ast.Module, offset, middle_start: int, middle_end: int) -> set[str]:
    """The names the middle declares with an annotation whose type another annotated declaration of the same
    symbol certainly does not have."""
    declarations = list(_declarations(tree.body, tree, (), None))
    written = [declaration for declaration in declarations if _overlaps(declaration.statement, offset, middle_start,
                                                                        middle_end)]
    pairs = [(mine, other) for mine in written for other in declarations
             if other is not mine and other.scope is mine.scope and other.name == mine.name
             and not _exclusive(mine.arms, other.arms)]
    if not pairs:
        return set()
    types = _Types(tree)
    return {mine.name for mine, other in pairs
            if types.definitely_different(mine.statement.annotation, other.statement.annotation)}


def _overlaps(statement: ast.AnnAssign, offset, middle_start: int, middle_end: int) -> bool:
    """Whether the middle writes part of the declaration's `target: annotation`."""
    start = offset(statement.target.lineno, statement.target.col_offset)
    end = offset(statement.annotation.end_lineno, statement.annotation.end_col_offset)
    return start < middle_end and middle_start < end


def _declarations(statements: list[ast.stmt], scope: ast.AST, arms: tuple, method: tuple[ast.ClassDef, str] | None):
    """The annotated declarations of a block that pyright may reach, and of the blocks in it: a name's in `scope`,
    and in a method (`method`: its class and the name of its first parameter) an attribute's on that parameter."""
    for statement in statements:
        if isinstance(statement, ast.AnnAssign):
            target = statement.target
            if isinstance(target, ast.Name):
                yield _Declaration(scope, target.id, statement, arms)
            elif (method is not None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id == method[1]):
                yield _Declaration(method[0], target.attr, statement, arms)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parameters = statement.args.posonlyargs + statement.args.args
            static = any(getattr(decorator, "id", None) == "staticmethod" for decorator in statement.decorator_list)
            receiver = (scope, parameters[0].arg) if isinstance(scope, ast.ClassDef) and parameters and not static \
                else None
            yield from _declarations(statement.body, statement, arms + ((statement, "body"),), receiver)
        elif isinstance(statement, ast.ClassDef):
            yield from _declarations(statement.body, statement, arms + ((statement, "body"),), None)
        elif isinstance(statement, ast.If) and _may_be_unreachable(statement.test):
            continue
        else:
            for arm, block in _arms(statement):
                yield from _declarations(block, scope, arms + ((statement, arm),), method)
        if isinstance(statement, _TERMINAL):
            return


def _arms(statement: ast.stmt):
    """(arm, block) of each block a compound statement holds; arms of one statement that exclude each other have
    different names, but a `try`'s body and its `else` (which runs after the body) share one."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            arm = "body" if field == "orelse" and isinstance(statement, (ast.Try, ast.TryStar)) else field
            yield arm, block
    for index, handler in enumerate(getattr(statement, "handlers", ())):
        yield f"handler {index}", handler.body
    for index, case in enumerate(getattr(statement, "cases", ())):
        yield f"case {index}", case.body


def _may_be_unreachable(test: ast.expr) -> bool:
    """Whether pyright may evaluate an `if` test statically (`TYPE_CHECKING`, `sys.version_info`, `sys.platform`,
    `os.name`) and find one of its arms unreachable."""
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and node.id in _STATIC_CONDITIONS:
            return True
        if isinstance(node, ast.Attribute) and (node.attr in _STATIC_CONDITIONS or node.attr == "name" and isinstance(
                node.value, ast.Name) and node.value.id == "os"):
            return True
    return False


def _exclusive(arms: tuple, other_arms: tuple) -> bool:
    """Whether two declarations lie in different arms of one statement but a `finally`: an `if` and its `else`, a
    `try` and its handler, two cases (pyright reports those too, but the true code writes them), a loop and its
    `else`."""
    for (statement, arm), (other_statement, other_arm) in zip(arms, other_arms):
        if statement is not other_statement:
            return False
        if arm != other_arm:
            return arm != "finalbody" and other_arm != "finalbody"
    return False


# `typing`'s names for builtin classes, and the forms that only wrap the declared type
_TYPING_ALIASES = {"List": "list", "Dict": "dict", "Set": "set", "FrozenSet": "frozenset", "Tuple": "tuple",
                   "Type": "type", "Text": "str"}
# What pyright reads through to the type it wraps (a TypedDict's item qualifiers among them: `NotRequired[int]` is
# declared `int`).
_WRAPPERS = frozenset({"ClassVar", "Annotated", "NotRequired", "Required", "ReadOnly"})
_UNCOMPARABLE = frozenset({"Final", "TypeAlias"})
_TYPING_MODULES = frozenset({"typing", "typing_extensions"})
_BUILTIN_CLASSES = frozenset(name for name, value in vars(builtins).items() if isinstance(value, type))


class _Types:
    """Annotations read as pyright reads them, as far as a name's meaning is certain from the file alone: a builtin
    class the file never binds, a `typing` name the file binds only by importing it, a class the file defines once at
    module level and binds nowhere else. Any other name may be an alias of any type."""

    def __init__(self, tree: ast.Module):
        bindings: dict[str, int] = {}
        for node in ast.walk(tree):
            for name in _bound_names(node):
                bindings[name] = bindings.get(name, 0) + 1
        self._once = {name for name, count in bindings.items() if count == 1}
        self._bound = bindings.keys()
        self._classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        self._typing_names: dict[str, str] = {}
        self._typing_modules: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module in _TYPING_MODULES and node.level == 0:
                for alias in node.names:
                    self._typing_names[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.Import):
                self._typing_modules.update(alias.asname or alias.name for alias in node.names
                                            if alias.name in _TYPING_MODULES)

    def definitely_different(self, annotation: ast.expr, other: ast.expr) -> bool:
        """Whether the two annotations certainly declare different types (pyright's `isTypeSame` is false)."""
        mine, theirs = self._term(annotation), self._term(other)
        if mine is _SKIP or theirs is _SKIP:
            return False
        return _different(mine, theirs)

    def _term(self, node: ast.expr):
        """The type `node` denotes: a class's name (`"list"`, `"file.Part"`, `"None"`) and its arguments as a tuple
        (None where it has none), a union as a frozenset, None where it is not certain (`Any` among them), `_SKIP`
        where the annotation is `Final` or `TypeAlias` (other rules of pyright's)."""
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ("None", None)
            if node.value is Ellipsis:
                return ("...", None)
            if isinstance(node.value, str):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a string in `Annotated` or `Literal` need not be code
                    try:
                        return self._term(parsed(node.value.strip(), mode="eval").body)
                    except (SyntaxError, ValueError, MemoryError, RecursionError):
                        return None
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            members = self._term(node.left), self._term(node.right)
            return _SKIP if _SKIP in members else _union(*members)
        name = self._name(node.value if isinstance(node, ast.Subscript) else node)
        if name in _UNCOMPARABLE:
            return _SKIP
        if not isinstance(node, ast.Subscript):
            return None if name is None or name in _WRAPPERS or name in ("Any", "Optional", "Union") else (name, None)
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "Literal":
            return _union(*(self._literal(element) for element in elements))
        arguments = [self._term(element) for element in elements]
        if _SKIP in arguments:
            return _SKIP
        if name == "Optional":
            return _union(arguments[0], ("None", None)) if len(arguments) == 1 else None
        if name == "Union":
            return _union(*arguments)
        if name in _WRAPPERS:
            return arguments[0]
        if name is None or name == "Any":
            return None
        return (name, tuple(arguments))

    def _literal(self, node: ast.expr):
        """The type of one value of `Literal[...]`, a type of its own (`Literal["a"]` is not `Literal["b"]`, nor `1`
        `True`): a nested `Literal`'s values, or None where the value is no plain constant (an enum's member)."""
        if isinstance(node, ast.Subscript):
            term = self._term(node)
            return None if term is _SKIP else term
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return ("None", None) if value is None else (f"Literal[{value!r}: {type(value).__name__}]", None)

    def _name(self, node: ast.expr) -> str | None:
        """The certain meaning of a name or `typing.name`: a builtin class's name, `file.` and a class of the file,
        `typing`'s `Any`, `Optional`, `Union` and the wrappers, or None."""
        if isinstance(node, ast.Attribute):
            if (isinstance(node.value, ast.Name) and node.value.id in self._typing_modules
                    and node.value.id in self._once):
                return _typing_meaning(node.attr)
            return None
        if not isinstance(node, ast.Name):
            return None
        if node.id not in self._bound:
            return node.id if node.id in _BUILTIN_CLASSES else None
        if node.id not in self._once:
            return None
        if node.id in self._typing_names:
            return _typing_meaning(self._typing_names[node.id])
        return f"file.{node.id}" if node.id in self._classes else None


_SKIP = object()


def _typing_meaning(name: str) -> str | None:
    if name in _TYPING_ALIASES:
        return _TYPING_ALIASES[name]
    if name in _WRAPPERS or name in _UNCOMPARABLE or name in ("Any", "Optional", "Union", "Literal"):
        return name
    return None


def _union(*members):
    """A union's members, flattened, as a frozenset (a member that is not certain stays None in it)."""
    flat = set()
    for member in members:
        flat.update(member if isinstance(member, frozenset) else (member,))
    return next(iter(flat)) if len(flat) == 1 else frozenset(flat)


def _different(mine, theirs) -> bool:
    """Whether two terms certainly denote different types: one union has a member certainly unlike every member of
    the other, or two classes differ, or the same class has an argument certainly different at the same place."""
    if mine is None or theirs is None:
        return False
    if isinstance(mine, frozenset) or isinstance(theirs, frozenset):
        mine_members = mine if isinstance(mine, frozenset) else {mine}
        their_members = theirs if isinstance(theirs, frozenset) else {theirs}
        return (any(all(_different(member, their) for their in their_members) for member in mine_members)
                or any(all(_different(their, member) for member in mine_members) for their in their_members))
    (name, arguments), (other_name, other_arguments) = mine, theirs
    if name != other_name:
        return True
    if arguments is None or other_arguments is None:
        # a bare generic class is one of unknown arguments to pyright (`list`: `list[Unknown]`), unlike one whose
        # arguments are all certain (`list[str]`); one of `Any`'s might be the same
        given = other_arguments if arguments is None else arguments
        return bool(given) and all(_certain(argument) for argument in given)
    if len(arguments) != len(other_arguments):
        return False
    return any(_different(argument, other) for argument, other in zip(arguments, other_arguments))


def _certain(term) -> bool:
    """Whether a term is certain all through: no part of it is `Any` or a name that may alias anything."""
    if term is None:
        return False
    if isinstance(term, frozenset):
        return all(_certain(member) for member in term)
    return term[1] is None or all(_certain(argument) for argument in term[1])


def _bound_names(node: ast.AST):
    """The names a node binds in its scope."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.id
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield alias.asname or alias.name.split(".")[0]
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest
    elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):  # a type parameter (3.12)
        yield node.name
