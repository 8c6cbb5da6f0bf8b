"""typeshed's stubs of the third-party distributions that the project's environment lacks, as a type checker reads
them (pyright's "typeshed fallback"), for the questions about a class's bases (`fimlsp.python.inherited`).

jedi reads a distribution's stub only where the distribution is installed. A class whose base comes from one the
environment lacks (held-out uvicorn's `UvicornWorker(gunicorn's Worker)`) had no known ancestry, and owed nothing,
while pyright knows the base from the stub and flags what the class loads that neither defines. A stub's class
leaves its private names out, so such an ancestry owes public names only (`Inherited.public_only`).
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

from fimlsp.python.analysis import Analysis, judges_jedi
from fimlsp.python.environment import Importable, importable
from fimlsp.python.environment_finder import find_environment

_FOLDERS: dict[tuple[str, ...], tuple[str, ...]] = {}
_PROJECTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def bases_project(analysis: Analysis):
    """The jedi project that the questions about a class's bases are asked of: the analysis's (its root, else
    jedi's default), with typeshed's stubs of the distributions its environment lacks after its own path."""
    with _LOCK:
        kept = _PROJECTS.get(analysis)
    if kept is not None:
        return kept
    jedi = judges_jedi()
    folders = fallback_folders(importable(find_environment(analysis.root)))
    root = analysis.root if analysis.root is not None else jedi.get_default_project().path
    project = jedi.Project(root, added_sys_path=folders)
    with _LOCK:
        return _PROJECTS.setdefault(analysis, project)


def typeshed_stubs() -> Path:
    """The folder of jedi's copy of typeshed's third-party stubs: a folder per distribution."""
    import jedi

    return Path(jedi.__file__).parent / "third_party" / "typeshed" / "stubs"


def fallback_folders(importable: Importable) -> tuple[str, ...]:
    """The stub folders of the distributions none of whose top-level modules `importable` has (none where what the
    environment imports is not known: every module may be installed there)."""
    if importable.unknown:
        return ()
    with _LOCK:
        kept = _FOLDERS.get(importable.names)
    if kept is not None:
        return kept
    found = []
    try:
        distributions = sorted(typeshed_stubs().iterdir())
    except OSError:
        distributions = []
    for distribution in distributions:
        try:
            modules = {entry.name.split(".")[0] for entry in distribution.iterdir()
                       if (entry.is_dir() and entry.name.isidentifier()) or entry.suffix == ".pyi"}
        except OSError:
            continue
        if modules and not any(importable.has(module) for module in modules):
            found.append(str(distribution))
    folders = tuple(found)
    with _LOCK:
        _FOLDERS[importable.names] = folders
    return folders
