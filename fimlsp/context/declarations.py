"""Declarations of the names the code around the cursor uses that other files define: class skeletons (fields,
`__init__`'s attributes, method signatures), function signatures with their docstrings' first paragraph, constants.

Resolution is jedi's (static: it reads code and never runs it), through the workspace's root and the environment's
packages, in the one workspace analysis that the judges use too (`Language.workspace_analysis`: same project, same
jedi thread, where a judge's query goes first); rendering reads the defining file's source with `ast`. Resolving
takes milliseconds to seconds (jedi's first use), so a completion only looks up what a background pass resolved (`Declarations.lookup`) and asks for the
rest to be resolved for the next keystroke (`Declarations.resolve`); the CLI resolves at once.
"""
from __future__ import annotations

import ast
import copy
import keyword
import re
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path

from fimlsp.language import named
from fimlsp.syntax_trees import TreeNotBuilt, parsed
from fimlsp.workspace import Workspace

# A dotted chain of names (`models.Cart`, `self.items`); every prefix of it is resolved.
_CHAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[ \t]*\.[ \t]*[A-Za-z_][A-Za-z0-9_]*)*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING_OR_COMMENT = re.compile(r"#[^\n]*|'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'[^'\n]*'|\"[^\"\n]*\"")
MAX_CLASS_LINES = 30
MAX_VALUE_CHARS = 60
MAX_DOC_LINES = 4
MAX_SOURCE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Use:
    """A chain of names near the cursor: its text (`models.Cart`), where its last name starts (1-based line,
    0-based column, jedi's convention), and how many lines it lies from the cursor."""

    chain: str
    line: int
    column: int
    distance: int


@dataclass(frozen=True)
class Declaration:
    path: Path  # the defining file
    qualname: str  # within its module: `Order`, `Cart` (a method's class), `LIMIT`
    text: str


@dataclass(frozen=True)
class _Definition:
    """What jedi says of a definition, read on the analysis's thread (jedi's names infer lazily)."""

    module_path: str | None
    type: str
    full_name: str | None
    module_name: str | None


def _blanked(match: re.Match) -> str:
    return " " * len(match.group())


def _tail_lines(text: str, count: int) -> str:
    """The last `count` lines of `text` (the last one maybe unfinished), found from the end."""
    at = len(text)
    for _ in range(count):
        at = text.rfind("\n", 0, at)
        if at < 0:
            return text
    return text[at + 1:]


def _head_lines(text: str, count: int) -> str:
    at = -1
    for _ in range(count):
        at = text.find("\n", at + 1)
        if at < 0:
            return text
    return text[:at]


def uses_near(left: str, right: str, above: int = 30, below: int = 10) -> list[Use]:
    """The chains of names in the lines around the cursor (at the end of `left`), outside comments and one-line
    strings, nearest first; a chain's prefixes count as uses too. The name the cursor is in the middle of is left
    out (it changes with every keystroke and names nothing yet). Reads only those lines of a big document."""
    before = _tail_lines(left, above + 1)
    cursor_line = left.count("\n")
    cursor_column = len(before) - before.rfind("\n") - 1
    lines = (before + _head_lines(right, below + 1)).split("\n")
    first = cursor_line - before.count("\n")
    found: dict[str, Use] = {}
    for index, line in enumerate(lines):
        number = first + index
        masked = _STRING_OR_COMMENT.sub(_blanked, line) if "#" in line or "'" in line or '"' in line else line
        for match in _CHAIN.finditer(masked):
            if match.start() > 0 and (masked[match.start() - 1].isdigit() or masked[match.start() - 1] == "."):
                continue
            parts, offset = [], match.start()
            for segment in _NAME.finditer(match.group()):
                if keyword.iskeyword(segment.group()):
                    break
                parts.append(segment.group())
                if number == cursor_line and offset + segment.start() < cursor_column <= offset + segment.end():
                    break  # the name being typed
                use = Use(".".join(parts), number + 1, offset + segment.start(), abs(number - cursor_line))
                kept = found.get(use.chain)
                if kept is None or use.distance < kept.distance:
                    found[use.chain] = use
    return sorted(found.values(), key=lambda use: (use.distance, use.line, use.column))


def environment_folders() -> tuple[Path, ...]:
    """The environment's package folders (site-packages): the declarations may come from there. The standard
    library is left out (a model has read it; jedi's typeshed stubs and platform modules are no better)."""
    folders = []
    for key in ("purelib", "platlib"):
        try:
            folders.append(Path(sysconfig.get_paths()[key]).resolve())
        except (KeyError, OSError):
            continue
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            folders.append(Path(entry).resolve())
    return tuple(dict.fromkeys(folders))


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _shortened(node: ast.AST) -> ast.AST:
    text = ast.unparse(node)
    return ast.Constant(...) if len(text) > MAX_VALUE_CHARS else node


def _doc(node) -> list[ast.stmt]:
    doc = ast.get_docstring(node, clean=True)
    if not doc:
        return []
    paragraph = doc.split("\n\n")[0].splitlines()[:MAX_DOC_LINES]
    return [ast.Expr(ast.Constant("\n".join(paragraph)))]


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef, with_doc: bool) -> str:
    stub = copy.copy(node)
    stub.body = [*(_doc(node) if with_doc else []), ast.Expr(ast.Constant(...))]
    text = ast.unparse(stub)
    return text[:-len(":\n    ...")] + ": ..." if text.endswith(":\n    ...") else text


def _assignment(node: ast.Assign | ast.AnnAssign) -> str:
    stub = copy.copy(node)
    if stub.value is not None:
        stub.value = _shortened(stub.value)
    return ast.unparse(stub)


def _init_attributes(node: ast.FunctionDef) -> list[str]:
    """`__init__`'s assignments to `self`'s attributes: the instances' fields."""
    seen, lines = set(), []
    for statement in ast.walk(node):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self" and not target.attr.startswith("_")
                        and target.attr not in seen):
                    seen.add(target.attr)
                    lines.append(_assignment(statement).split("\n")[0])
    return lines


def _class_skeleton(node: ast.ClassDef) -> str:
    head = copy.copy(node)
    head.body = [ast.Pass()]
    lines = [ast.unparse(head).rsplit("\n", 1)[0]]
    for statement in _doc(node):
        lines += ['    """' + statement.value.value.replace('"""', "'''") + '"""']
    for statement in node.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            lines += ["    " + line for line in _assignment(statement).splitlines()]
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = statement.name
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            if name == "__init__":
                attributes = _init_attributes(statement)
                signature = _signature(statement, False)
                if attributes:
                    lines.append("    " + signature[:-len(" ...")])
                    lines += ["        " + line for line in attributes]
                    continue
            lines += ["    " + line for line in _signature(statement, False).splitlines()]
        elif isinstance(statement, ast.ClassDef):
            lines.append(f"    class {statement.name}: ...")
        if len(lines) >= MAX_CLASS_LINES:
            lines.append("    ...")
            break
    if len(lines) == 1:
        lines.append("    ...")
    return "\n".join(lines)


def render(tree: ast.Module, qualname: str) -> tuple[str, str] | None:
    """The declaration of `qualname` in the module (a method's or attribute's class in its stead), with the
    qualname it renders; None where the module does not define it plainly."""
    body, node, path = tree.body, None, []
    for part in qualname.split("."):
        found = None
        for statement in _flattened(body):
            if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and statement.name == part:
                found = statement
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                if any(isinstance(target, ast.Name) and target.id == part for target in targets):
                    found = statement
        if found is None:
            break
        if isinstance(node, ast.ClassDef):
            break  # a class's member: the class is what shows it
        node, path = found, [*path, part]
        if not isinstance(found, ast.ClassDef):
            break
        body = found.body
    if node is None:
        return None
    name = ".".join(path)
    if isinstance(node, ast.ClassDef):
        return name, _class_skeleton(node)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return name, _signature(node, True)
    return name, _assignment(node)


def _flattened(body: list[ast.stmt]):
    """A module's or class's statements, looking into `if` and `try` (TYPE_CHECKING, version checks)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _flattened(statement.body)
            yield from _flattened(statement.orelse)
        elif isinstance(statement, ast.Try):
            yield from _flattened(statement.body)
            for handler in statement.handlers:
                yield from _flattened(handler.body)
        else:
            yield statement


def _imports(text: str) -> frozenset[str]:
    return frozenset(line.strip() for line in text.splitlines() if line.lstrip().startswith(("import ", "from ")))


class Declarations:
    """Resolved uses per document and rendered declarations per file, shared by every completion."""

    def __init__(self, workspace: Workspace, environment: tuple[Path, ...] | None = None):
        self.workspace = workspace
        self.environment = environment_folders() if environment is None else environment
        self._resolved: dict[tuple[Path, str], tuple[tuple[Path, str], ...]] = {}
        self._trees: dict[Path, tuple[str, ast.Module | None]] = {}
        self._rendered: dict[tuple[Path, str], Declaration | None] = {}
        self._imports: dict[Path, frozenset[str]] = {}
        self._lock = threading.Lock()
        self.resolutions = 0  # jedi calls made (a counted bound for tests)

    # -- the keystroke's path: dictionary look-ups only

    def lookup(self, path: Path, uses: list[Use]) -> tuple[list[Declaration], list[Use]]:
        """The declarations of the uses already resolved, nearest first and each once, and the uses not yet
        resolved."""
        found, missing, seen = [], [], set()
        with self._lock:
            for use in uses:
                targets = self._resolved.get((path, use.chain))
                if targets is None:
                    missing.append(use)
                    continue
                for target in targets:
                    declaration = self._rendered.get(target)
                    if declaration is not None and target not in seen:
                        seen.add(target)
                        found.append(declaration)
        return found, missing

    def changed(self, path: Path) -> None:
        """A file changed (the background's work): its declarations are rendered again from its new text, and
        what its own uses resolved to is dropped if its imports changed."""
        text = self.readable(path)
        imports = _imports(text or "")
        with self._lock:
            self._trees.pop(path, None)
            stale = [key for key in self._rendered if key[0] == path]
            if self._imports.get(path, imports) != imports:
                for key in [key for key in self._resolved if key[0] == path]:
                    del self._resolved[key]
            self._imports[path] = imports
        try:
            tree = self._tree(path)
        except TreeNotBuilt:  # not rendered this time: the uses that named the file resolve again
            with self._lock:
                for key in stale:
                    self._rendered.pop(key, None)
                for key in [key for key, targets in self._resolved.items() if any(t[0] == path for t in targets)]:
                    del self._resolved[key]
            return
        for key in stale:
            rendered = render(tree, key[1]) if tree is not None else None
            with self._lock:
                self._rendered[key] = None if rendered is None else Declaration(path, rendered[0], rendered[1])

    # -- the background's work

    def resolve(self, path: Path, code: str, uses: list[Use]) -> None:
        """Resolve `uses` of the document at `path` whose text is `code` (jedi), and render what they name. jedi
        runs on the workspace analysis's thread, a use at a time, so that a judge's query waits for one use at most."""
        root = self.workspace.root_of(path) or (self.workspace.roots[0] if self.workspace.roots else path.parent)
        analysis = named("python").workspace_analysis(root)
        with self._lock:
            self._imports.setdefault(path, _imports(code))
        script: list = []  # made by the first use's job, on the analysis's thread
        pending = []
        for use in uses:
            with self._lock:
                if (path, use.chain) in self._resolved:
                    continue
            pending.append((use, analysis.run(self._definitions, script, analysis.project, code, path, use,
                                              background=True)))
        for use, future in pending:
            targets = []
            try:
                for definition in future.result():
                    target = self._target(definition, path)
                    if target is not None and target not in targets:
                        targets.append(target)
            except TreeNotBuilt:  # not the use's answer: it resolves again at the next completion
                continue
            with self._lock:
                self._resolved[(path, use.chain)] = tuple(targets)

    def _definitions(self, script: list, project, code: str, path: Path, use: Use) -> list[_Definition]:
        """On the analysis's thread: where `use` is defined (the script made once for all the uses)."""
        import jedi

        self.resolutions += 1
        try:
            if not script:
                script.append(jedi.Script(code, path=path, project=project))
            found = script[0].goto(use.line, use.column, follow_imports=True)
            if all(d.module_path is not None and Path(d.module_path) == path and d.type in ("statement", "param")
                   for d in found):
                found = script[0].infer(use.line, use.column)  # a local: what its value is
            return [_Definition(None if d.module_path is None else str(d.module_path), d.type, d.full_name,
                                d.module_name) for d in found]
        except Exception:  # jedi fails on some mid-edit code; a use it cannot resolve has no declaration
            return []

    def _target(self, definition: _Definition, path: Path) -> tuple[Path, str] | None:
        if definition.module_path is None or definition.type == "module" or not definition.full_name:
            return None
        source = Path(definition.module_path).resolve()
        module = definition.module_name or ""
        if source == path.resolve() or not definition.full_name.startswith(module + "."):
            return None
        qualname = definition.full_name[len(module) + 1:]
        tree = self._tree(source)
        if tree is None:
            return None
        rendered = render(tree, qualname)
        if rendered is None:
            return None
        name, text = rendered
        key = (source, name)
        with self._lock:
            self._rendered[key] = Declaration(source, name, text)
        return key

    def readable(self, source: Path) -> str | None:
        """The defining file's text, if it lies in the workspace or the environment's packages."""
        if self.workspace.root_of(source) is not None:
            return self.workspace.read(source)
        if not any(_within(source, folder) for folder in self.environment):
            return None
        if "third_party" in source.parts and "typeshed" in source.parts:
            return None  # jedi's copy of the standard library's stubs
        try:
            if source.stat().st_size > MAX_SOURCE_BYTES:
                return None
            return source.read_text("utf-8", errors="replace")
        except OSError:
            return None

    def _tree(self, source: Path) -> ast.Module | None:
        """The syntax tree of the file at `source`, None where it is unreadable or does not parse; TreeNotBuilt
        where other threads' conversions kept it from being built (then nothing is kept)."""
        with self._lock:
            cached = self._trees.get(source)
        if cached is not None:
            return cached[1]
        text = self.readable(source)
        tree = None
        if text is not None:
            try:
                tree = parsed(text)
            except TreeNotBuilt:
                raise
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                pass
        with self._lock:
            self._trees[source] = (text or "", tree)
        return tree
