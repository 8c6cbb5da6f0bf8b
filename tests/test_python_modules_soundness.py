"""`module_may_exist` never refuses a module that real files import and the import system finds (issue 49): every
`import` and `from` statement (outside `try` and `with`, where an import may be meant to fail) of the standard
library's files and of held-out packages' files, judged in the environment fimlsp runs in with the project's root
as the held-out package's folder. Without the file's text, what it refuses the import system does not find either
(the true file's own missing import: an undeclared optional dependency such as uvicorn's `gunicorn`, which pyright
reports too); with the file's text around the statement (the judge's context), it refuses none of them."""

from __future__ import annotations

import ast
import importlib.util
import warnings
from pathlib import Path

import pytest

from fimlsp.python.module_existence import import_path_changes, module_may_exist
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, package_files

HELD_OUT = ("starlette", "uvicorn", "fastapi", "pyflakes", "diskcache", "gguf")


def _imports(tree: ast.Module):
    """The import statements outside `try` and `with` blocks, and (module, level) of each module they name."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            yield from ((node, alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node, node.module or "", node.level
        elif not isinstance(node, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)):
            stack.extend(ast.iter_child_nodes(node))


def _found_by_the_import_system(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:  # a parent that is not found, or not a package
        return False


def _judged(files, root: str) -> tuple[int, int, list[str], list[str]]:
    """How many imports were judged and how many may exist; the refused ones the import system finds; and the
    refused ones the file's text around the statement names too (the judge's context)."""
    judged, may, found, named = 0, 0, [], []
    for path, text in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # old files' invalid escapes
                tree = parsed(text)
        except SyntaxError:
            continue
        if import_path_changes(text):
            continue
        folder, lines = str(Path(path).resolve().parent), text.splitlines()
        for node, module, level in _imports(tree):
            verdict = module_may_exist(module, level, folder, (root,))
            judged += 1
            may += verdict is True
            if verdict is False and (level or _found_by_the_import_system(module)):
                found.append(f"{path}: {'.' * level}{module}")
            context = ("\n".join(lines[:node.lineno - 1]), "\n".join(lines[node.end_lineno:]))
            if module_may_exist(module, level, folder, (root,), context=context) is False:
                named.append(f"{path}: {'.' * level}{module}")
    return judged, may, found, named


def _stdlib_files(step: int):
    paths = sorted(path for path in STDLIB.rglob("*.py") if "site-packages" not in path.parts)[::step]
    return [(str(path), path.read_text(encoding="utf-8", errors="replace")) for path in paths]


# Standard-library test files that import a module that exists nowhere on purpose.
DELIBERATELY_MISSING = {"test_compile.py: __mangled_mod", "badsyntax_future5.py: foo"}


def _named(refused: list[str]) -> set[str]:
    return {Path(line).name for line in refused}


@pytest.mark.parametrize("package", HELD_OUT)
def test_held_out_packages_imports_are_never_refused(package):
    files = package_files(package, 10**9)
    if not files:
        pytest.skip(f"{package} is not installed")
    judged, may, found, named = _judged(files, str(Path(files[0][0]).parents[1]))
    assert found == [] and named == []
    assert judged >= 40 and may >= 0.9 * judged  # most are known to exist, few unknown


def test_a_sample_of_the_standard_librarys_imports_are_never_refused():
    judged, may, found, named = _judged(_stdlib_files(25), str(STDLIB))
    assert found == [] and _named(named) <= DELIBERATELY_MISSING
    assert judged > 200 and may >= 0.85 * judged


@pytest.mark.slow
def test_the_standard_librarys_imports_are_never_refused():
    """Every file of the standard library (about 1,800 files, 9,000 imports)."""
    judged, may, found, named = _judged(_stdlib_files(1), str(STDLIB))
    assert found == [] and _named(named) <= DELIBERATELY_MISSING
    assert judged > 8000 and may >= 0.9 * judged
