"""A module whose name the left context began and the middle ends, and the modules after the middle of an import
statement the left began, are judged at the end (issue 49): held-out fastapi's `from star| import Server` (the
module `star`), `from starlette.m|ouse import (`, gguf's `from .co|nfig import *` were shown. The statement's own
text is no evidence that its module exists."""

from __future__ import annotations

import ast
import importlib.util
import os
import random
from pathlib import Path

import pytest

from fimlsp.python.names import FileNames
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, stdlib_files


@pytest.fixture()
def package(tmp_path):
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "reader.py").write_text("class Reader:\n    pass\n")
    return folder


@pytest.mark.parametrize("left, shown, true_middle, right", [
    ("from .rea", "s import *", "der import *", "\n"),  # a module of the package that it does not hold
    ("from o", "ss import path", "s import path", "\n"),  # no module of that name anywhere
    ("import json\nimport coll", "ectionz", "ections", "\n"),
    ("from star", " import status", "lette import status", "\n"),
])
def test_a_module_the_left_began_and_the_middle_ended_must_exist(package, left, shown, true_middle, right):
    if "star" in left and importlib.util.find_spec("starlette") is None:
        pytest.skip("starlette is not installed (a held-out package: pip install starlette)")
    names = FileNames.of(left, right, str(package), (str(package.parent),))
    assert names.missing_imports(left + shown + right)
    assert not names.missing_imports(left + true_middle + right)


def test_the_modules_after_the_middle_of_an_import_the_left_began_must_exist(package):
    """held-out uvicorn _compat.py: `i|mport sys, asyncio,|Callable, Coroutine` makes the right context's names
    modules (its true middle ends a `from collections.abc import` line)."""
    left, right = "from __future__ import annotations\n\ni", "Callable, Coroutine\nfrom typing import Any\n"
    names = FileNames.of(left, right, str(package), (str(package.parent),))
    assert names.missing_imports(left + "mport sys, asyncio," + right) == {"Callable", "Coroutine"}
    assert not names.missing_imports(left + "mport asyncio\nfrom collections.abc import " + right)


def _cut_module_names(files: list[tuple[str, str, str]], rng: random.Random):
    for path, text, root in files:
        try:
            tree = parsed(text)
        except SyntaxError:
            continue
        offsets = [0]
        for line in text.splitlines(keepends=True):
            offsets.append(offsets[-1] + len(line))
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            start = offsets[node.lineno - 1] + node.col_offset
            keyword = "from" if isinstance(node, ast.ImportFrom) else "import"
            module = "." * node.level + (node.module or "") if keyword == "from" else node.names[0].name
            at = start + len(keyword)
            while text[at].isspace():
                at += 1
            if len(module) < 2 or not text.startswith(module, at):
                continue
            cut, end = at + rng.randrange(1, len(module) + 1), at + len(module) + rng.randrange(0, 8)
            yield path, root, text[:cut], text[cut:end], text[end:]


@pytest.mark.slow
def test_no_true_middle_that_ends_a_module_name_is_refused():
    rng = random.Random(5)
    files = []
    for name in ("fastapi", "starlette", "uvicorn", "pyflakes", "diskcache", "gguf"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations)))
            files += [(str(path), path.read_text(encoding="utf-8"), str(folder)) for path in sorted(folder.rglob("*.py"))]
    files += rng.sample([(str(STDLIB / name), text, str(STDLIB)) for name, text in stdlib_files()
                         if "test" not in name], 400)
    judged, refused = 0, []
    for path, root, left, middle, right in _cut_module_names(files, rng):
        names = FileNames.of(left, right, os.path.dirname(path), (root,))
        if names.relaxed:
            continue
        judged += 1
        if names.missing_imports(left + middle + right):
            refused.append((path, middle))
    assert not refused, refused[:5]
    assert judged > 1000
