"""The names `from M import NAME` may import (`fimlsp.python.modules.imported_names`) for modules of the project's
environment too, read as source (issue 49: `from typing import PlainTextResponse`, `from starlette.middleware.wsgi
import Macro` were shown), never refusing a name the module has."""

from __future__ import annotations

import ast
import importlib.util
import os
from pathlib import Path

import pytest

from fimlsp.python.modules import imported_names
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, stdlib_files

HELD_OUT = ("fastapi", "starlette", "uvicorn", "pyflakes", "diskcache", "gguf")


def test_a_name_an_environment_module_does_not_define_is_not_among_its_names():
    typing_names = imported_names(0, "typing", str(STDLIB), ())
    assert typing_names is not None and {"Any", "Optional", "TYPE_CHECKING"} <= typing_names
    assert "PlainTextResponse" not in typing_names and "UnionCORSMiddleware" not in typing_names


def test_names_made_at_run_time_and_every_modules_own_attributes_are_kept():
    assert imported_names(0, "re", str(STDLIB), ()) is None  # enum.global_enum writes IGNORECASE and the rest
    email = imported_names(0, "email", str(STDLIB), ())
    assert email is not None and {"__file__", "__doc__", "message_from_string"} <= email


def _from_imports_outside_guards(body):
    for node in body:
        if isinstance(node, ast.ImportFrom):
            yield node
        elif not isinstance(node, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.If)):
            for part in ("body", "orelse", "finalbody"):
                inner = getattr(node, part, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    yield from _from_imports_outside_guards(inner)


def _corpus() -> list[tuple[str, str]]:
    files = [(str(STDLIB / name), text) for name, text in stdlib_files()]
    for name in HELD_OUT:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations)))
            files += [(str(path), path.read_text(encoding="utf-8")) for path in sorted(folder.rglob("*.py"))]
    return files


@pytest.mark.slow
def test_every_absolute_from_import_of_the_standard_library_and_held_out_packages_finds_its_names():
    judged, refused = 0, []
    for path, text in _corpus():
        try:
            tree = parsed(text)
        except SyntaxError:
            continue
        for node in _from_imports_outside_guards(tree.body):
            if node.level or not node.module or any(alias.name == "*" for alias in node.names):
                continue
            names = imported_names(0, node.module, os.path.dirname(path), ())
            if names is None:
                continue
            judged += 1
            refused += [(path, node.module, alias.name) for alias in node.names if alias.name not in names]
    assert not refused, refused[:10]
    assert judged > 3000  # the environment's modules are read, not let go
