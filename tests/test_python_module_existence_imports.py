"""Imports a middle writes that cannot run (issue 49), refused by the whole-file check: a middle that makes the right
context's names into modules (`import asyncio,` before `Callable, Coroutine`), and a relative import beyond the
top-level package (`from .._typing import ParamSpec` in `site-packages/fastapi/templating.py`); never the true
middles, nor any relative import of the standard library's or the held-out packages' files."""

from __future__ import annotations

import ast
import importlib.util
import os
import random
import sysconfig
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fimlsp.language import named
from fimlsp.python.environment import Environment
from fimlsp.python.module_existence import import_path_changes, module_may_exist
from fimlsp.python.names import FileNames
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, package_files
from tests.test_python_modules_soundness import HELD_OUT
from tests.test_python_workspace_judges import accepts, project  # noqa: F401 (a fixture)

PYTHON = named("python")


def _package(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _compat_case():
    text = (_package("uvicorn") / "_compat.py").read_text()
    cut, right = text.index("mport asyncio"), text.index("Callable, Coroutine")
    return "uvicorn", "_compat.py", text[:cut], "mport sys\nimport asyncio,", text[cut:right], text[right:]


def _templating_module_case():
    text = (_package("fastapi") / "templating.py").read_text()
    right = text.index("import Jinja2Templates")
    middle = "om __future__ import annotations\n\nfrom typing import Any, TYPE_CHECKING, Any, Callable, Sequence\n"
    return "fastapi", "templating.py", "fr", middle, text[2:right], text[right:]


def _templating_relative_case():
    text = (_package("fastapi") / "templating.py").read_text()
    right = text.index("  # noqa")
    middle = "from __future__ import annotations\nfrom .._typing import ParamSpec"
    return "fastapi", "templating.py", "", middle, text[:right], text[right:]


def _convertors_case():
    text = (_package("starlette") / "convertors.py").read_text()
    cut = text.index("    def convert(self, value: str) -> str:\n        return value")
    return ("starlette", "convertors.py", text[:cut], "from ...import*\nif id:\n    def x", "    def ",
            text[cut + len("    def "):])


BENCHMARK_CASES = {"right-names-as-modules": _compat_case, "right-line-as-import": _templating_module_case,
                   "beyond-top-level": _templating_relative_case, "star-beyond-top-level": _convertors_case}


@pytest.mark.parametrize("case", sorted(BENCHMARK_CASES))
def test_the_benchmarks_middles_are_refused_and_their_true_middles_accepted(case):
    """Where eval puts them: the installed file, its package's folder as the project."""
    package, file, left, middle, true, right = BENCHMARK_CASES[case]()
    place = (str(_package(package) / file), str(_package(package)))
    assert compile(left + middle + right, file, "exec") and compile(left + true + right, file, "exec")
    assert not PYTHON.binds_names(left, middle, right, *place)
    assert PYTHON.binds_names(left, true, right, *place)
    folder = str(_package(package))
    assert FileNames.of(left, right, folder, (folder,)).missing_imports(left + middle + right)


def _site_packages(tmp_path: Path) -> Path:
    """A tree shaped like an installation's: `lib/python3.11/site-packages/fastapi/templating.py`."""
    package = tmp_path / "lib" / "python3.11" / "site-packages" / "fastapi"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_compat.py").write_text("x = 1\n")
    (package / "templating.py").write_text("from starlette.templating import Jinja2Templates  # noqa\n")
    return package.resolve()


@pytest.mark.parametrize("middle", ["from .._typing import ParamSpec", "from .. import _typing", "from ... import *",
                                    "from .._compat import x", "from ..fastapi import _compat"])
def test_a_relative_import_beyond_the_top_level_package_is_refused(tmp_path, middle):
    """`site-packages` is no package's name: its packages are top-level (ImportError at run time)."""
    package = _site_packages(tmp_path)
    for root in (str(package), None):
        place = (str(package / "templating.py"), root)
        assert not accepts("", middle, "  # noqa\n", place)  # as it is written, and on the whole file
    assert accepts("", "from ._compat import x", "  # noqa\n", (str(package / "templating.py"), str(package)))


def _module(folder: Path, level: int, roots: tuple[Path, ...], environment: Environment | None = None):
    return module_may_exist("", level, str(folder.resolve()), tuple(str(root.resolve()) for root in roots),
                            environment)


def test_how_far_a_relative_import_reaches_in_a_project(tmp_path):
    """A root is no package (but one with an `__init__.py`); a namespace package's folder under it may be one."""
    root, packaged = tmp_path / "proj", tmp_path / "packaged" / "proj"
    for top in (root, packaged):
        for folder in ("pkg/sub", "ns/inner", "src/srcpkg", "my-scripts"):
            (top / folder).mkdir(parents=True)
        for init in ("pkg", "pkg/sub", "src/srcpkg"):
            (top / init / "__init__.py").write_text("")
    for name in ("stubbed.pyi", "ext.cpython-311-x86_64-linux-gnu.so"):
        (root / "pkg" / name).write_text("")
    (packaged / "__init__.py").write_text("")  # a root that is a package: what holds it may be on the path
    (root / "dyn").mkdir()
    (root / "dyn" / "__init__.py").write_text("__path__.append('/elsewhere')\n")  # submodules found elsewhere
    roots = (root,)
    assert _module(root, 1, roots) is False  # a top-level module has no parent package
    assert _module(root / "pkg", 1, roots) is True and _module(root / "pkg", 2, roots) is False
    assert _module(root / "pkg" / "sub", 2, roots) is True and _module(root / "pkg" / "sub", 3, roots) is False
    assert _module(root / "ns" / "inner", 2, roots) is None  # `ns.inner` may be a namespace package's
    assert _module(root / "ns" / "inner", 3, roots) is False
    assert _module(root / "my-scripts", 1, roots) is False  # no package is named `my-scripts`
    with_src = (root, root / "src")  # `src.srcpkg` may be imported from the root
    assert _module(root / "src" / "srcpkg", 2, with_src) is None and _module(root / "src" / "srcpkg", 3,
                                                                               with_src) is False
    judged = [module_may_exist(name, 1, str((root / "pkg").resolve()), (str(root.resolve()),))
              for name in ("stubbed", "ext", "nothing")]
    assert judged == [True, True, False]  # a regular package's submodules are its folder's
    assert module_may_exist("nothing", 1, str((root / "dyn").resolve()), (str(root.resolve()),)) is None
    assert _module(packaged, 1, (packaged,)) is True and _module(packaged / "pkg", 2, (packaged,)) is True
    assert _module(packaged / "pkg", 3, (packaged,)) is False  # (the folder above it is no regular package)


def test_a_finders_mapping_counts_the_dotted_names_parts(tmp_path):
    """An editable install may map `ns.edpkg` to a folder of any name: its modules are two packages deep."""
    from setuptools.command.editable_wheel import _finder_template

    site, source = tmp_path / "site-packages", tmp_path / "proj" / "code-src"
    site.mkdir()
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("")
    name = "__editable___edpkg_1_0_finder"
    (site / f"{name}.py").write_text(_finder_template("__editable__.edpkg-1.0.finder",
                                                      {"ns.edpkg": str(source)}, {}))
    (site / "__editable__.edpkg-1.0.pth").write_text(f"import {name}; {name}.install()")
    environment = Environment("setting", str(tmp_path), (), (str(site),))
    roots = (tmp_path / "proj",)
    assert _module(source, 1, roots, environment) is True and _module(source, 2, roots, environment) is not False
    assert _module(source, 3, roots, environment) is False
    assert _module(source, 1, roots, Environment("setting", str(tmp_path), (), ())) is False  # no mapping: no package


def test_a_word_only_subscripted_called_or_annotated_is_no_module_the_file_names(project):
    """A word of the file names a module it may use where a module may stand (uvicorn's workers.py names gunicorn,
    not installed, in a comment's link too); not `Callable[[], None]`, which no module is."""
    folder, roots = str(project / "pkg"), (str(project),)
    for used in ("print(zttp.Request)", "from zttp.client import C", "x = 1; import zttp as z", "print(zttp)",
                 "importlib.import_module('zttp')", "zttp .Request", "# https://github.com/o/zttp/issues",
                 "if ok: zttp.run()"):
        assert module_may_exist("zttp", 0, folder, roots, context=("", used)) is None, used
    for used in ("x: zttp[int] = 1", "zttp(1)", "from typing import Any, zttp", "def f() -> zttp:\n    pass",
                 "y: int | zttp = 0", "zttpx.Request", "a.zttp"):
        assert module_may_exist("zttp", 0, folder, roots, context=("", used)) is False, used
    assert module_may_exist("ztt", 0, folder, roots, partial=True, context=("", "zttp.Request")) is None


def test_a_middle_that_makes_the_rights_line_an_import_is_judged_but_not_the_users_own_line(project):
    main, root = str(project / "pkg" / "main.py"), str(project)
    right = "import pyflask\n\nprint(sys)\n"
    assert not PYTHON.binds_names("import sys\nfr", "om os import path\n", right, main, root)
    assert PYTHON.binds_names("import sys\nfr", "om os ", right, main, root)  # `from os import pyflask`: not a module
    assert PYTHON.binds_names("import sys\n", "import os\n", right, main, root)  # the user's own line
    assert PYTHON.binds_names("import sys\nfr", "", "om os " + right, main, root)  # nothing written
    assert not PYTHON.binds_names("import sys\n", "import os, ", "pyflask\n\nprint(sys)\n", main, root)


def test_a_module_the_files_other_imports_name_is_not_refused_next_to_them(project):
    """uvicorn's workers.py imports two modules of gunicorn, not installed: each names the other's package, on the
    left context's last line or the right context's first (a true middle refused as the judge first read them)."""
    main, root = str(project / "pkg" / "main.py"), str(project)
    right = "from zttp.workers.base import Worker\n\nprint(sys, Arbiter, Worker)\n"
    assert PYTHON.binds_names("import sys\nfrom zttp.arbiter import A", "rbiter\n", right, main, root)
    assert PYTHON.binds_names("import sys\n", "from zttp.arbiter import Arbiter\n", right, main, root)
    assert not PYTHON.binds_names("import sys\n", "from zttq.arbiter import Arbiter\n", right, main, root)


def test_a_submodule_that_a_package_installed_here_lacks_is_refused_though_the_file_names_the_package():
    """The shipped model's middle of a held-out line of uvicorn's `__init__.py` (pyright: could not be resolved): the
    file names uvicorn, which is installed here and has no `configuration_utils`; naming lets go only of a package
    not installed here, which may be where the file runs."""
    package = _package("uvicorn")
    text = (package / "__init__.py").read_text()
    cut = text.index("from uvicorn.main import")
    right = text[text.index("\n", cut):]
    path, root = str(package / "__init__.py"), str(package.parent)
    middle = "from uvicorn.configuration_utils import (\n    Config)"
    assert not PYTHON.binds_names(text[:cut], middle, right, path, root)
    assert PYTHON.binds_names(text[:cut], "from uvicorn.main import Server, main, run", right, path, root)
    folder, context = str(package), ("from uvicorn.config import Config\n", "")
    assert module_may_exist("uvicorn.configuration_utils", 0, folder, (), context=context) is False
    assert module_may_exist("uvicorn.conf", 0, folder, (), partial=True, context=context) is True
    assert module_may_exist("uvicorn.zzz", 0, folder, (), partial=True, context=context) is False


def _relative_imports(text: str):
    """The level of every relative import of a file, wherever it stands."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parsed(text)
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]


def _corpus() -> list[tuple[str, str, str]]:
    """(path, text, root) of the standard library's files and the held-out packages'."""
    found = [(str(path), path.read_text(encoding="utf-8", errors="replace"), str(STDLIB))
             for path in sorted(STDLIB.rglob("*.py")) if "site-packages" not in path.parts]
    for package in HELD_OUT:
        found += [(path, text, str(Path(path).parents[1])) for path, text in package_files(package, 10**9)]
    return found


@pytest.mark.slow
def test_no_relative_import_of_the_standard_library_or_the_held_out_packages_is_refused():
    """Every relative import, in `try` and `if` blocks too; most reach a regular package and are known to exist
    (516 of 643; 90 more stand in files that change the import path, whose imports are not judged)."""
    judged, refused, known = 0, [], 0
    for path, text, root in _corpus():
        if import_path_changes(text):
            continue  # (the judge judges none of its imports)
        folder = str(Path(path).resolve().parent)
        for node in _relative_imports(text):
            verdict = module_may_exist(node.module or "", node.level, folder, (str(Path(root).resolve()),))
            judged += 1
            known += verdict is True
            if verdict is False and "badsyntax" not in path:
                refused.append(f"{path}:{node.lineno}: {'.' * node.level}{node.module or ''}")
    assert refused == [] and judged > 600 and known > 0.75 * judged


def _cuts_at_imports(text: str, seed: int):
    """Cuts around each import statement of a file (its modules, start, end): the middle ends where the statement
    begins (the left in the line before it, where that holds code), or begins it and ends within or after it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parsed(text)
    except SyntaxError:
        return
    draw, lines, offsets = random.Random(seed), text.splitlines(keepends=True), [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return offsets[line - 1] + len(lines[line - 1].encode()[:column].decode("utf-8", "replace"))

    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        modules = {alias.name for alias in node.names} if isinstance(node, ast.Import) else {
            "." * node.level + (node.module or "")}
        begins, ends = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
        before = text.rfind("\n", 0, begins)
        line_before = text[text.rfind("\n", 0, before) + 1:before]
        if line_before.strip():
            yield modules, before - draw.randint(0, len(line_before) - 1), begins
        yield modules, begins, draw.randint(begins + 1, max(begins + 1, ends + 40))


@pytest.mark.slow
def test_true_middles_around_the_imports_of_real_files_are_never_refused():
    """Cuts of a third of the standard library's files and the held-out packages' (8,718 judged, in files whose
    names are known): no module an import statement names is refused where the middle writes the statement, or ends
    where it begins."""
    files = [(str(path), path.read_text(encoding="utf-8", errors="replace"), STDLIB)
             for path in sorted(STDLIB.rglob("*.py"))[::3] if "site-packages" not in path.parts]
    site = Path(sysconfig.get_paths()["purelib"])
    for package in HELD_OUT:  # the project as eval gives it: the package's folder
        files += [(path, text, site / package) for path, text in package_files(package, 10**9)]
    judged, refused = 0, []
    for path, text, root in files:
        folder = str(Path(path).resolve().parent)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tree = parsed(text)  # the whole file, once for all its cuts (`missing_imports` takes it built)
            except SyntaxError:
                continue  # (no cuts: `_cuts_at_imports` draws from its tree)
        for modules, start, end in _cuts_at_imports(text, len(path)):
            names = FileNames.of(text[:start], text[end:], folder, (str(Path(root).resolve()),))
            judged += names.relaxed is None
            wrong = names.missing_imports(text, tree) & modules
            if wrong and "badsyntax" not in path:
                refused.append(f"{path}: {sorted(wrong)}")
    assert refused == [] and judged > 8_000


def _package_folders() -> list[tuple[str, int, str]]:
    """(folder, how many packages deep its modules are, the project's root as eval gives it) of the standard
    library's and the held-out packages' folders whose names are all identifiers (the import system's names)."""
    places = [(STDLIB, path.parent) for path in STDLIB.rglob("__init__.py") if "site-packages" not in path.parts]
    site = Path(sysconfig.get_paths()["purelib"])
    places += [(site, path.parent) for package in HELD_OUT if (site / package).is_dir()
               for path in (site / package).rglob("__init__.py")]
    found = set()
    for top, folder in places:
        parts = folder.relative_to(top).parts
        if all(part.isidentifier() for part in parts):
            root = top if top == STDLIB else top / parts[0]
            found.add((os.path.realpath(folder), len(parts), os.path.realpath(root)))
    return sorted(found)


PACKAGE_FOLDERS = _package_folders()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PACKAGE_FOLDERS), st.integers(min_value=1, max_value=6))
def test_a_relative_import_is_refused_exactly_where_it_reaches_beyond_the_top_level_package(place, level):
    """`from <level dots> import x` in a package `depth` deep: found while level <= depth, else ImportError."""
    folder, depth, root = place
    verdict = module_may_exist("", level, folder, (root,))
    assert (verdict is False) == (level > depth)
