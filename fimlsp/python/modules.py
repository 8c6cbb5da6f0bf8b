"""Modules read without running them (issue 49): found as the import system would, through
`importlib.machinery.PathFinder`, which imports nothing (the file's folder, the project's roots, then the project's
environment for a star import, `sys.path` otherwise; a relative import from the file's folder), and read with `ast`.

- `star_names`: the names `from M import *` brings: M's literal `__all__`, else its top-level bindings (those without
  a leading underscore where it has no `__all__`), its star imports' in turn and its submodules. The name judge
  binds them where the file or the middle star-imports M (`fimlsp.python.relaxation`).
- `imported_names`: the names `from M import NAME` may import from a module of the project: every name M's top level
  may bind, its star imports' and its submodules, read from an open document's unsaved text where there is one
  (`fimlsp.python.module_existence.set_unsaved`), for the name judge's check that `from .util import helper` imports
  what `util` has.

Whether a module may be imported at all (`module_may_exist`) is `fimlsp.python.module_existence`.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
import time
from importlib.machinery import PathFinder, all_suffixes
from pathlib import Path

from fimlsp.python.environment import importable
from fimlsp.python.environment_finder import find_environment
from fimlsp.python.module_existence import _UNSAVED, _UNSAVED_LOCK
from fimlsp.syntax_trees import parsed

# What a module read for its star import's names may do that hides them.
_RUNTIME_NAMES = re.compile(r"\bsys\.modules\s*\[\s*__name__\s*\]|\b__builtins__\b")
_GLOBALS = re.compile(r"(?<![.\w])globals\s*\(\s*\)")
# A use of globals() that only reads: `name in globals()`, `globals().get(...)`, `globals()[name]` but assigned,
# `__import__(name, globals(), ...)`.
_READ_BEFORE = re.compile(r"\bin\s*$|\b__import__\s*\([^()]*$")
_READ_AFTER = re.compile(r"\s*(?:\.\s*get\b|\[[^\]\n]*\](?!\s*(?:=(?!=)|\.|\()))")
_MODULE_SUFFIXES = tuple(sorted(set(all_suffixes()) | {".pyi"}, key=len, reverse=True))  # the longest first
_MOST_DEPTH = 8  # star imports followed through this many modules
_FOUND_SECONDS = 10  # how long where a module was found is kept
_MOST_BYTES = 2_000_000  # larger modules are not read
_NOT_FOUND = "the module is not found"  # why `_module_file` found none: no module of that name anywhere searched
# What every module has that its text need not bind (`from email import __file__`).
_MODULE_ATTRIBUTES = frozenset({"__file__", "__doc__", "__name__", "__spec__", "__loader__", "__package__",
                                "__path__", "__cached__", "__builtins__", "__dict__", "__annotations__", "__all__"})


def star_names(level: int, module: str, folder: str | None, roots: tuple[str, ...] = ()) -> frozenset[str] | str:
    """The names `from <level dots><module> import *` brings in a file of `folder` of a project whose modules lie in
    `roots` (an absolute import: in the file's folder, the roots, then the project's environment,
    `fimlsp.python.environment_finder.find_environment`); a string says why they cannot be known. An open
    document's unsaved text is read instead of its file."""
    search = _environment_path(folder, roots, _epoch())
    path = _found_module(level, module, folder, roots, search, _epoch())
    if isinstance(path, str):
        return path
    with _UNSAVED_LOCK:
        unsaved = _UNSAVED.get(str(path.resolve()))
    if unsaved is not None:
        return _unsaved_star_names(str(path), unsaved, search)
    try:
        stat = path.stat()
    except OSError as error:
        return f"{path} cannot be read: {error.strerror}"
    return _module_names(str(path), stat.st_mtime_ns, stat.st_size, (), search)


def _epoch() -> int:
    """Where modules were found is kept this long: a completion asks for the same modules at every keystroke."""
    return int(time.monotonic() // _FOUND_SECONDS)


@functools.lru_cache(maxsize=64)
def _environment_path(folder: str | None, roots: tuple[str, ...], _epoch: int) -> tuple[str, ...]:
    """Where the project's environment finds modules: its standard library, site-packages and the folders its `.pth`
    files add, and the folders above the packages its editable installs map; fimlsp's own `sys.path` where the
    environment's path is not known (code it runs at start-up may change it)."""
    found = importable(find_environment(roots[0] if roots else folder))
    if found.unknown is not None:
        return tuple(entry for entry in sys.path if entry)
    mapped = (os.path.dirname(place) for name, places in found.mapped.items() if "." not in name
              for place in places if os.path.basename(place) == name)
    return tuple(dict.fromkeys((*found.folders, *mapped)))


@functools.lru_cache(maxsize=512)
def _found_module(level: int, module: str, folder: str | None, roots: tuple[str, ...], search: tuple[str, ...],
                  _epoch: int) -> Path | str:
    return _module_file(level, module, folder, roots, search)


def module_found(module: str, folder: str | None, roots: tuple[str, ...]) -> bool:
    """Whether `import <module>` finds it in a file of `folder`: a builtin module, or one with a file in the folder,
    the project's `roots` or the project's environment (compiled ones too)."""
    if module.split(".")[0] in sys.builtin_module_names:
        return True
    found = _found_module(0, module, folder, roots, _environment_path(folder, roots, _epoch()), _epoch())
    return found != _NOT_FOUND  # a file, or a reason that is not the absence of one


def imported_names(level: int, module: str, folder: str | None, roots: tuple[str, ...]) -> frozenset[str] | None:
    """The names `from <level dots><module> import NAME` may import in a file of `folder`, where the module is one of
    the project's (a relative import, or found in `roots`) or of the project's environment (whose search path is
    known: `fimlsp.python.environment`), as source: every name its top level may bind, its star imports' and, for a
    package, its submodules. None where they cannot be known: compiled or not found, a module with a module
    `__getattr__`, or one that makes its names at run time."""
    path = _project_module(level, module, folder if level else None, roots, _epoch())
    if path is None and not level and importable(find_environment(roots[0] if roots else folder)).unknown is None:
        found = _found_module(0, module, None, (), _environment_path(folder, roots, _epoch()), _epoch())
        path = None if isinstance(found, str) else found  # the environment's (`from typing import Any`)
    if path is None:
        return None
    with _UNSAVED_LOCK:
        unsaved = _UNSAVED.get(str(path.resolve()))
    if unsaved is not None:
        return _unsaved_names(str(path), unsaved)
    try:
        stat = path.stat()
    except OSError:
        return None
    return _defined_names(str(path), stat.st_mtime_ns, stat.st_size)


def _project_module(level: int, module: str, folder: str | None, roots: tuple[str, ...], _epoch: int) -> Path | None:
    """The project's source file of a module; None where it is not the project's. Kept for `_FOUND_SECONDS` (the
    `_epoch`): a completion asks for the same modules at every keystroke, and finding one takes milliseconds."""
    path = _module_file(level, module, folder, roots)
    if isinstance(path, str) or not (level or any(_within(path, Path(root)) for root in roots)):
        return None
    if not level:  # the project's module, unless the environment has another of that name (which one is run?)
        elsewhere = _module_file(0, module, None)
        if not isinstance(elsewhere, str) and elsewhere.resolve() != path.resolve():
            return None
    return path


def _within(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


@functools.lru_cache(maxsize=8)
def _unsaved_names(path: str, unsaved: str) -> frozenset[str] | None:
    """`imported_names` of an open document's unsaved text: a few kept (each keystroke in it is another text)."""
    return _defined_names.__wrapped__(path, 0, len(unsaved), unsaved)


@functools.lru_cache(maxsize=512)
def _defined_names(path: str, _mtime: int, size: int, unsaved: str | None = None) -> frozenset[str] | None:
    """`imported_names` of the module at `path` (`_mtime` and `size` key the cache), or of its `unsaved` text."""
    if size > _MOST_BYTES:
        return None
    try:
        source = Path(path).read_text(encoding="utf-8") if unsaved is None else unsaved
        tree = parsed(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if _top_level_exec(tree) or _reaches_its_namespace(tree):
        return None
    names = _top_level_bindings(tree)
    if "__getattr__" in names:
        return None
    folder = os.path.dirname(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            inner = _module_file(node.level, node.module or "", folder)
            if isinstance(inner, str):
                return None
            stat = inner.stat()
            brought = _module_names(str(inner), stat.st_mtime_ns, stat.st_size, (path,))
            if isinstance(brought, str):
                return None
            names |= brought
    if os.path.basename(path) == "__init__.py":
        names |= _submodules(folder)
    return frozenset(names | _MODULE_ATTRIBUTES)


def _reads_only(call: ast.Call, parent: ast.AST | None) -> bool:
    """Whether `globals()` is only read where it stands: `globals()[name]` loaded, `globals().get(name)`,
    `name in globals()`, `__import__(name, globals())` (typing's `globals()[self._name]`)."""
    if isinstance(parent, ast.Subscript):
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        return parent.attr in ("get", "copy", "keys", "values", "items", "__contains__")
    if isinstance(parent, ast.Compare):
        return call in parent.comparators and all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "__import__")


def _reaches_its_namespace(tree: ast.Module) -> bool:
    """Whether the module's code may bind names its text does not show: it calls `globals()`, names
    `__builtins__` or `global_enum`, or reads `sys.modules[__name__]`."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"
                and not _reads_only(node, parents.get(node))):
            return True
        if (isinstance(node, ast.Name) and node.id in ("__builtins__", "global_enum")) or (
                isinstance(node, ast.Attribute) and node.attr == "global_enum"):
            return True  # (enum's `global_enum` puts a flag class's members among the module's names: re's)
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == "__name__"
                and isinstance(node.value, ast.Attribute) and node.value.attr == "modules"):
            return True
    return False


def _module_file(level: int, module: str, folder: str | None, roots: tuple[str, ...] = (),
                 search: tuple[str, ...] | None = None) -> Path | str:
    """The source file of a module, found without importing anything (a relative import from `folder`, else in
    `folder`, `roots` and `search`, in that order; None: `sys.path`); a string says why there is none."""
    parts = [part for part in module.split(".") if part]
    if level:
        if folder is None:
            return "a relative import, and the file's folder is not known"
        base = Path(folder)
        for _ in range(level - 1):
            base = base.parent
        if not parts:
            return _source(base / "__init__.py")
        locations = [str(base)]
    else:
        if parts and parts[0] in sys.builtin_module_names:
            return "a builtin module"
        path = [entry for entry in sys.path if entry] if search is None else list(search)
        locations = ([folder] if folder else []) + list(roots) + path
    spec, name = None, ""
    for part in parts:
        name = f"{name}.{part}" if name else part
        try:
            spec = PathFinder.find_spec(name, locations)
        except Exception:  # a namespace package's path reads its parent in sys.modules (KeyError), and the like
            spec = None
        if spec is None:
            return _NOT_FOUND
        locations = list(spec.submodule_search_locations or [])
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return "a namespace package or a module without a source file"
    return _source(Path(spec.origin))


def _source(path: Path) -> Path | str:
    if path.suffix != ".py":
        return "a compiled module"
    return path if path.is_file() else _NOT_FOUND


@functools.lru_cache(maxsize=8)
def _unsaved_star_names(path: str, unsaved: str, search: tuple[str, ...]) -> frozenset[str] | str:
    """`star_names` of an open document's unsaved text: a few kept (each keystroke in it is another text)."""
    return _module_names.__wrapped__(path, 0, len(unsaved), (), search, unsaved)


@functools.lru_cache(maxsize=512)
def _module_names(path: str, _mtime: int, size: int, seen: tuple[str, ...], search: tuple[str, ...] | None = None,
                  unsaved: str | None = None) -> frozenset[str] | str:
    """The names a star import of the module at `path` brings (`_mtime` and `size` key the cache), or of its
    `unsaved` text; the modules it star-imports in turn found in `search` (None: `sys.path`)."""
    if size > _MOST_BYTES:
        return "the module is too large to read"
    if len(seen) >= _MOST_DEPTH or path in seen:
        return "its star imports go round or too deep"
    try:
        source = Path(path).read_text(encoding="utf-8") if unsaved is None else unsaved
        tree = parsed(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, MemoryError, RecursionError):
        return f"{Path(path).name} does not parse"
    listed = _literal_all(tree)
    if listed is not None:
        return listed
    if _RUNTIME_NAMES.search(source) or _top_level_exec(tree) or any(
            not (_READ_BEFORE.search(source, 0, use.start()) or _READ_AFTER.match(source, use.end()))
            for use in _GLOBALS.finditer(source)):
        return f"{Path(path).name} makes its names at run time"
    names = _top_level_bindings(tree)
    folder = os.path.dirname(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            inner = _module_file(node.level, node.module or "", folder, (), search)
            if isinstance(inner, str):
                return f"its star import of {'.' * node.level}{node.module or ''} cannot be read ({inner})"
            stat = inner.stat()
            brought = _module_names(str(inner), stat.st_mtime_ns, stat.st_size, seen + (path,), search)
            if isinstance(brought, str):
                return brought
            names |= brought
    if os.path.basename(path) == "__init__.py":
        names |= _submodules(folder)
    if "__all__" in names:  # made at run time: any of the module's names, a private one too
        if "__getattr__" in names:
            return f"{Path(path).name} makes its __all__ at run time and has a module __getattr__"
        return frozenset(names)
    return frozenset(name for name in names if not name.startswith("_"))


def _top_level_exec(tree: ast.Module) -> bool:
    """Whether the module's own code (not a function's or class's) calls `exec` or `eval`, which may bind its names
    (a function's binds its own unless given `globals()`, which counts apart)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exec", "eval"):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _literal_all(tree: ast.Module) -> frozenset[str] | None:
    """The module's `__all__` where every top-level statement that touches it is a literal list or tuple of strings
    (assigned, added, extended or appended to); None otherwise."""
    names: set[str] | None = None
    for node in tree.body:
        target, value = _all_change(node)
        if target is None:
            if any(isinstance(inner, ast.Name) and inner.id == "__all__" for inner in ast.walk(node)):
                return None
            continue
        strings = _strings(value)
        if strings is None or (target != "=" and names is None):
            return None
        names = set(strings) if target == "=" else names | set(strings)
    return None if names is None else frozenset(names)


def _all_change(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """How a statement changes `__all__`: ("=", value), ("+", value) or (None, None)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is_all(node.targets[0]):
        return "=", node.value
    if isinstance(node, ast.AnnAssign) and _is_all(node.target) and node.value is not None:
        return "=", node.value
    if isinstance(node, ast.AugAssign) and _is_all(node.target) and isinstance(node.op, ast.Add):
        return "+", node.value
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute) and _is_all(node.value.func.value)
            and node.value.func.attr in ("extend", "append") and len(node.value.args) == 1
            and not node.value.keywords):
        argument = node.value.args[0]
        return "+", ast.List([argument], ast.Load()) if node.value.func.attr == "append" else argument
    return None, None


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "__all__"


def _strings(node: ast.expr | None) -> list[str] | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _strings(node.left), _strings(node.right)
        return None if left is None or right is None else left + right
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    strings = [element.value for element in node.elts
               if isinstance(element, ast.Constant) and isinstance(element.value, str)]
    return strings if len(strings) == len(node.elts) else None


def _top_level_bindings(tree: ast.Module) -> set[str]:
    """Every name the module's top level may bind (more, not fewer): its statements' targets, imports, definitions,
    exception and match captures, walrus targets anywhere, and the names any function declares `global`."""
    names: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        if not isinstance(node, ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif isinstance(node, ast.NamedExpr):
            names.add(node.target.id)
    return names


def _submodules(folder: str) -> set[str]:
    """The modules and packages of a package's folder (a star import may bind those that were imported): its
    sources, compiled modules (`_speedups.cpython-311-x86_64-linux-gnu.so`) and folders."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return set()
    found = set()
    for entry in entries:
        module = next((entry[:-len(suffix)] for suffix in _MODULE_SUFFIXES if entry.endswith(suffix)), None)
        if module is None and os.path.isdir(os.path.join(folder, entry)):
            module = entry
        if module is not None and module.isidentifier():
            found.add(module)
    return found
