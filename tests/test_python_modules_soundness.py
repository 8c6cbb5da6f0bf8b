"""`module_may_exist` never refuses a module that real files import and the import system finds (issue 49): every
`import` and `from` statement (outside `try` and `with`, where an import may be meant to fail) of the standard
library's files and of held-out packages' files, judged in the environment fimlsp runs in with the project's root
as the held-out package's folder. What it refuses, the import system does not find either (the true file's own
missing import: an undeclared optional dependency such as uvicorn's `gunicorn`, which pyright reports too)."""

from __future__ import annotations

import ast
import importlib.util
import warnings
from pathlib import Path

import pytest

from fimlsp.python.modules import import_path_changes, module_may_exist
from harness.corpus import STDLIB, package_files

HELD_OUT = ("starlette", "uvicorn", "fastapi", "pyflakes", "diskcache", "gguf")


def _imports(tree: ast.Module):
    """(module, level) of each import statement outside `try` and `with` blocks."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            yield from ((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.level
        elif not isinstance(node, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)):
            stack.extend(ast.iter_child_nodes(node))


def _found_by_the_import_system(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:  # a parent that is not found, or not a package
        return False


def _judged(files, root: str) -> tuple[int, int, list[str]]:
    """How many imports were judged, how many may exist, and the refused ones the import system finds."""
    judged, may, wrong = 0, 0, []
    for path, text in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # old files' invalid escapes
                tree = ast.parse(text)
        except SyntaxError:
            continue
        if import_path_changes(text):
            continue
        folder = str(Path(path).resolve().parent)
        for module, level in _imports(tree):
            verdict = module_may_exist(module, level, folder, (root,))
            judged += 1
            may += verdict is True
            if verdict is False and (level or _found_by_the_import_system(module)):
                wrong.append(f"{path}: {'.' * level}{module}")
    return judged, may, wrong


def _stdlib_files(step: int):
    paths = sorted(path for path in STDLIB.rglob("*.py") if "site-packages" not in path.parts)[::step]
    return [(str(path), path.read_text(encoding="utf-8", errors="replace")) for path in paths]


@pytest.mark.parametrize("package", HELD_OUT)
def test_held_out_packages_imports_are_never_refused(package):
    files = package_files(package, 10**9)
    if not files:
        pytest.skip(f"{package} is not installed")
    judged, may, wrong = _judged(files, str(Path(files[0][0]).parents[1]))
    assert wrong == []
    assert judged >= 40 and may >= 0.9 * judged  # most are known to exist, few unknown


def test_a_sample_of_the_standard_librarys_imports_are_never_refused():
    judged, may, wrong = _judged(_stdlib_files(25), str(STDLIB))
    assert wrong == [] and judged > 200 and may >= 0.85 * judged


@pytest.mark.slow
def test_the_standard_librarys_imports_are_never_refused():
    """Every file of the standard library (about 1,800 files, 9,000 imports)."""
    judged, may, wrong = _judged(_stdlib_files(1), str(STDLIB))
    assert wrong == [] and judged > 8000 and may >= 0.9 * judged
