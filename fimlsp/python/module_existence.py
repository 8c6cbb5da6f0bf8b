"""Whether a module may be imported at all, asked of folder listings and the environment, apart from reading its names.

Nothing is imported (issue 49); reading a module's names is `fimlsp.python.modules`'.

- `module_may_exist`: whether `import M` (or `from M import ...`) may find M in the project's environment
  (`fimlsp.python.environment`), the project or the file's folder: False only where it is found nowhere, for the
  name judge's refusal of `import pyflask` or `from uvic.config import Config`; with `partial`, whether a module name
  being written may still become one. `import_path_changes`: why a file's own text may make other modules importable.
- `set_unsaved`: an open document's unsaved text, which makes its module exist (and which `fimlsp.python.modules`
  reads the module's names from).
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from importlib.machinery import all_suffixes
from pathlib import Path

from fimlsp.python.environment import Environment, declared_by, importable, listing, module_key
from fimlsp.python.environment_finder import find_environment

# Open documents' unsaved text, by resolved path (`set_unsaved`): the editor's text overrides the disk's.
_UNSAVED: dict[str, str] = {}
_UNSAVED_LOCK = threading.Lock()

# What in a package's `__init__.py` may make submodules its folder does not hold.
_DYNAMIC_PACKAGE = re.compile(
    r"__path__|\bsys\s*\.\s*modules\b|\bfrom\s+sys\s+import\b[^\n]*\bmodules\b|meta_path|path_hooks|extend_path"
    r"|declare_namespace")
# What in a file may make modules importable that no folder holds, or its relative imports reach other packages.
_IMPORT_PATH_CHANGE = re.compile(r"\bsys\s*\.\s*(?:path|meta_path|path_hooks|modules)\b|\baddsitedir\b|\bpyximport\b"
                                 r"|\b__package__\s*=(?!=)")
# Where a word is no module: subscripted, called or in a union (after it), an annotation or in a union (before it);
# an attribute read off it makes it one wherever it stands.
_MODULE_AFTER = re.compile(r"\s*\.(?!\.)")
_NO_MODULE_AFTER = re.compile(r"[ \t]*[\[(|]")
_NO_MODULE_BEFORE = re.compile(r"(?:->|[:|])[ \t]*$")
_FROM_LINE_NAMES = re.compile(r"[ \t]*from[ \t]+[\w.]+[ \t]+import\b")  # a `from` line up to a name it imports
_REGULAR, _NAMESPACE, _OPAQUE = "regular", "namespace", "opaque"
_KEPT_SECONDS = 2
_IMPORTABLE_SUFFIXES = tuple(all_suffixes())


def set_unsaved(path: str | os.PathLike, text: str | None) -> None:
    """An open document's unsaved text (None: closed), which the names of the module at `path` are read from
    instead of the disk."""
    key = str(Path(path).resolve())
    with _UNSAVED_LOCK:
        if text is None:
            new = _UNSAVED.pop(key, None) is not None
        else:
            new = key not in _UNSAVED
            _UNSAVED[key] = text
    if new:  # a module opened or closed, not yet saved: whether it exists changed
        _may_exist.cache_clear()
        _package_state.cache_clear()
        _plain_module.cache_clear()


def module_may_exist(module: str, level: int = 0, folder: str | None = None, roots: tuple[str, ...] = (),
                     environment: Environment | None = None, *, partial: bool = False,
                     context: tuple[str, ...] = ()) -> bool | None:
    """Whether `import <level dots><module>` in a file of `folder` (resolved), in a project whose modules lie in
    `roots` (its root first), may find the module. False only where no module of that name is in `environment`
    (None: the project's, `find_environment(roots[0])`), the roots, the file's folder or those above it up to its
    root, and none is a requirement of the project or of an installed distribution (one not installed here may be
    where the project runs). A relative import is False where it reaches beyond the top-level package
    (`_package_depth`: `from .. import x` in `site-packages/fastapi/`), or names a submodule that a regular package
    does not hold, or a submodule of a plain source module (`__future__.id`). None where that cannot be known: an
    environment that runs code at start-up, a parent that is a module that writes `sys.modules` (`os.path`), an
    extension module or a package whose `__init__` may make submodules, a relative import from a folder
    that is no regular package. With `partial`, the last part is a name still being written (`"os.pa"`,
    `"pyfl"`): whether some module's name begins with it. `context`, the file's texts around the import statement
    (not the statement itself): a top-level module they name where a module may be named (`zttp.Request(...)`,
    `from gunicorn.workers import Worker`, `_named_in`) is one the file uses, which may be installed where it runs
    though not here (None, not False); a package installed here keeps its False for a submodule it lacks. Reads
    folder listings only, kept two seconds."""
    found = _may_exist(module, level, folder, roots, environment, partial, _epoch())
    top, begun = module.split(".")[0], partial and "." not in module
    if found is False and context and not level and _named_in(top, begun, context) and (
            begun or _may_exist(top, 0, folder, roots, environment, False, _epoch()) is not True):
        return None  # a package not installed here, which the file uses: not one installed here without the module
    return found


@functools.lru_cache(maxsize=32)  # (it holds the texts: a few completions' worth)
def _named_in(top: str, begun: bool, context: tuple[str, ...]) -> bool:
    """Whether the texts of `context` name `top` (a name beginning so, where `begun`) as a word, not an attribute,
    where a module may be named: not where only a class or function may be (`_NO_MODULE_BEFORE` and `_AFTER`:
    `Callable[[], None]`, `-> Coroutine`, `x: Any | None`), nor as a name a `from` line imports (`from typing import
    Callable`), which is no top-level module."""
    word = re.compile(r"(?<![\w.])" + re.escape(top) + (r"\w*" if begun else r"(?!\w)"))
    for text in context:
        for found in word.finditer(text):
            line = text[text.rfind("\n", 0, found.start()) + 1:found.start()]
            if _MODULE_AFTER.match(text, found.end()) or not (
                    _NO_MODULE_AFTER.match(text, found.end()) or _NO_MODULE_BEFORE.search(line)
                    or _FROM_LINE_NAMES.match(line)):
                return True
    return False


@functools.lru_cache(maxsize=4096)
def _may_exist(module: str, level: int, folder: str | None, roots: tuple[str, ...], environment: Environment | None,
               partial: bool, epoch: int) -> bool | None:
    """`module_may_exist`, kept for the `epoch` (a name being written asks at every token tried)."""
    parts = module.split(".") if module else []
    if any(not part.isidentifier() for part in parts[:-1]) or (
            parts and not (parts[-1].isidentifier() or (partial and not parts[-1]))):
        return None
    if level:
        if folder is None:
            return None
        depth = _package_depth(folder, roots, environment, epoch)
        if depth is not None and level > depth:
            return False  # beyond the top-level package: ImportError at run time, whatever the module
        base = folder
        for _ in range(level - 1):
            base = os.path.dirname(base)
        if _package_state(base, epoch) != _REGULAR:
            return None
        return True if not parts else _walk([base], (), None, parts, partial, {}, frozenset(), epoch)
    if not parts:
        return None
    found = importable(environment or find_environment(roots[0] if roots else folder))
    if found.unknown is not None:
        return None
    places = _project_folders(folder, roots)
    top = parts[0]
    if partial and len(parts) == 1:
        return found.begins(top) or any(_begins_in(place, top) for place in places)
    if not (found.has(top) or any(_has_in(place, top) for place in places)):
        declared = module_key(top)
        if declared in found.declared or any(declared in declared_by(root) for root in roots[:1]):
            return True if len(parts) == 1 else None  # a requirement not installed here: it may be where it runs
        return False
    if len(parts) == 1:
        return True
    if top in found.opaque or (not found.has(top) and module_key(top) in found.declared):
        return None  # (a requirement not installed here, and a folder of the project's of its name)
    portions: list[str] = []
    modules: list[tuple[str, str]] | None = None if top in found.mapped_modules else []
    for place in places + tuple(place for place in found.folders if place not in places):
        entries = listing(place)
        if entries is not None:
            if top in entries.folders:
                portions.append(os.path.join(place, top))
            if top in entries.modules and modules is not None:
                modules.append((place, top))
    portions += found.mapped.get(top, ())
    return _walk(portions, modules, top, parts[1:], partial, found.mapped, found.mapped_modules, epoch)


@functools.lru_cache(maxsize=256)
def _package_depth(folder: str, roots: tuple[str, ...], environment: Environment | None, epoch: int) -> int | None:
    """How many folders, from `folder` up, the package of a module of `folder` may span: how far up a relative
    import from it may reach (`from .. import x` needs 2). Its name's parts are the names of the folders between an
    entry of the import path and the module, so it stops below the first folder whose name is no identifier
    (`site-packages`, `python3.11`); and where the highest import root that holds `folder` (the environment's path,
    the project's roots) is no package, at that root, else above it through regular packages only (a namespace
    package's folder that is not a root may be one: it may reach beyond the root but not beyond the parent of the
    regular packages above it). A finder's mapping of a dotted name to a folder counts that name's parts. None
    where the environment's path is not known (code run at start-up may map any folder)."""
    found = importable(environment or find_environment(roots[0] if roots else folder))
    if found.unknown is not None:
        return None
    chain = [folder]  # the folders whose names may be the package's parts, and the one above them
    while os.path.basename(chain[-1]).isidentifier() and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    at = {place: index for index, place in enumerate(chain)}
    mapped = [at[place] + len(name.split(".")) for name, places in found.mapped.items()
              for place in map(os.path.realpath, places) if place in at]
    holding = [at[place] for place in map(os.path.realpath, (*roots, *found.folders)) if place in at]
    if not holding:
        return max([len(chain) - 1, *mapped])
    depth = max(holding)
    while depth < len(chain) - 1 and _package_state(chain[depth], epoch) != _NAMESPACE:
        depth += 1
    return max([depth, *mapped])


def import_path_changes(text: str) -> str | None:
    """Why a file's text may make modules importable that no folder holds (it names `sys.path`, `sys.modules`,
    `sys.meta_path`, `site.addsitedir`, `pyximport`) or set the package its relative imports start from
    (`__package__ = "pkg.sub"`, PEP 366); None where it does not. Its imports are not judged then."""
    found = _IMPORT_PATH_CHANGE.search(text)
    return None if found is None else f"the file changes where modules are found ({found.group()})"


def _walk(portions: list[str], modules: list[tuple[str, str]] | None, name: str | None, parts: list[str],
          partial: bool, mapped: dict[str, tuple[str, ...]], mapped_modules: frozenset[str], epoch: int) -> bool | None:
    """Whether the submodules `parts` may exist under the package whose folders are `portions`; `modules`, the
    (folder, name) of the modules of its name (None: a finder maps one); `name`, its dotted name (None: a relative
    import's package). A plain module has no submodules (`__future__.id`), unless it makes them (`os.path`)."""
    for index, part in enumerate(parts):
        if modules and not portions:
            return False if all(_plain_module(*module, epoch) for module in modules) else None
        if modules is None or modules or not portions:
            return None
        children: set[str] = set()
        for portion in portions:
            if _package_state(portion, epoch) == _OPAQUE:
                return None
            entries = listing(portion)
            if entries is None:
                return None
            children.update(entries.names)
            children.update(_unsaved_in(portion))
        if name is not None:
            children.update(key[len(name) + 1:].split(".")[0] for key in mapped if key.startswith(name + "."))
        last = index == len(parts) - 1
        if last and partial:
            return any(child.startswith(part) for child in children)
        if part not in children:
            return False
        if last:
            return True
        name = None if name is None else f"{name}.{part}"
        inner, modules = [], None if name in mapped_modules else []
        for portion in portions:
            entries = listing(portion)
            if part in entries.folders:
                inner.append(os.path.join(portion, part))
            if part in entries.modules and modules is not None:
                modules.append((portion, part))
        portions = inner + list(mapped.get(name, ()) if name is not None else ())
    return True


@functools.lru_cache(maxsize=1024)
def _plain_module(folder: str, name: str, _epoch: int) -> bool:
    """Whether the module `name` of `folder` is a source file alone (no extension module or bytecode of its name
    beside it) that does not touch `sys.modules` or the import hooks, where a module makes submodules
    (`sys.modules["os.path"] = path`)."""
    try:
        files = [entry for entry in os.listdir(folder)
                 if entry.split(".", 1)[0] == name and entry.endswith(_IMPORTABLE_SUFFIXES)]
    except OSError:
        return False
    if files != [f"{name}.py"]:
        return False
    path = str(Path(folder, files[0]).resolve())  # as `set_unsaved` keys an open document's text
    with _UNSAVED_LOCK:
        text = _UNSAVED.get(path)
    try:
        text = text if text is not None else Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return not _DYNAMIC_PACKAGE.search(text)


def _epoch() -> int:
    """The span of time an answer is kept for (a folder's listing is, `fimlsp.python.environment`)."""
    return int(time.monotonic() // _KEPT_SECONDS)


@functools.lru_cache(maxsize=2048)
def _package_state(folder: str, _epoch: int) -> str:
    """A folder's package kind: regular (a plain `__init__.py`), namespace (none), or opaque (a compiled
    `__init__`, or one that may make submodules its folder does not hold: it sets `__path__`, or touches
    `sys.modules` or the import hooks)."""
    try:
        inits = [entry for entry in os.listdir(folder) if entry.startswith("__init__.")]
    except OSError:
        return _OPAQUE
    modules = [entry for entry in inits if entry.endswith(_IMPORTABLE_SUFFIXES)]
    if not modules:
        return _NAMESPACE
    if modules != ["__init__.py"]:
        return _OPAQUE
    with _UNSAVED_LOCK:
        unsaved = _UNSAVED.get(os.path.join(folder, "__init__.py"))
    try:
        text = unsaved if unsaved is not None else Path(folder, "__init__.py").read_text(encoding="utf-8",
                                                                                         errors="replace")
    except OSError:
        return _OPAQUE
    return _OPAQUE if _DYNAMIC_PACKAGE.search(text) else _REGULAR


@functools.lru_cache(maxsize=256)
def _project_folders(folder: str | None, roots: tuple[str, ...]) -> tuple[str, ...]:
    """Where the project's own modules may be imported from: the file's folder and those above it up to the root
    that holds it (a script's, a test runner's, `python -m`'s folder), and the roots."""
    found: list[str] = []
    if folder is not None:
        holding = [root for root in roots if folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)]
        top = min(holding, key=len) if holding else folder
        place = folder
        while True:
            found.append(place)
            if place == top or os.path.dirname(place) == place:
                break
            place = os.path.dirname(place)
    return tuple(dict.fromkeys(found + list(roots)))


def _has_in(place: str, name: str) -> bool:
    entries = listing(place)
    return (entries is not None and entries.has(name)) or name in _unsaved_in(place)


def _begins_in(place: str, prefix: str) -> bool:
    entries = listing(place)
    return ((entries is not None and entries.begins(prefix))
            or any(name.startswith(prefix) for name in _unsaved_in(place)))


def _unsaved_in(folder: str) -> set[str]:
    """The modules open documents not yet saved make in `folder`."""
    with _UNSAVED_LOCK:
        paths = list(_UNSAVED)
    return {os.path.basename(path).split(".", 1)[0] for path in paths if os.path.dirname(path) == folder}
