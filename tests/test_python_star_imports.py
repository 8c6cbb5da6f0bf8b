"""A star import the middle writes brings exactly the names its module brings, where the module can be read (issue
49): the name judge binds them as the middle writes it (`fimlsp.python.middle_names`) and the end check reads the
file with its star imports spelt out (`fimlsp.python.relaxation.spelt_out`), where both once let every name go.
A module that cannot be read (compiled, not found, names made at run time) still relaxes."""

from __future__ import annotations

import ast
import importlib
import sysconfig
from pathlib import Path

import pytest

from fimlsp.python.module_existence import set_unsaved
from fimlsp.python.names import FileNames
from fimlsp.python.quotient import quotient
from fimlsp.python.relaxation import star_import_names
from fimlsp.syntax_trees import parsed

SITE = Path(sysconfig.get_paths()["purelib"])


def judged(left: str, middle: str, right: str, folder: str | None = None, roots: tuple[str, ...] = ()) -> str:
    """"complete", "incomplete" (every character fed, the end refused) or "refused" (a character refused)."""
    state = quotient(left, right).judging_names(FileNames.of(left, right, folder, roots))
    for char in middle:
        state = state.feed(char)
        if state is None:
            return "refused"
    return "complete" if state.complete else "incomplete"


@pytest.fixture
def package(tmp_path):
    """A package whose `__init__` lists what its star import brings (uvicorn's: main, run, Config, Server)."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("import os\n\n__all__ = ['run', 'Config']\n\ndef run():\n    pass\n\n"
                                        "class Config:\n    pass\n")
    (folder / "helpers.py").write_text("import os\n\nVALUE = 1\n_private = 2\n\ndef helper():\n    return os\n")
    return str(folder)


def test_uvicorn_subprocess_middle_from_dot_import_star_binds_only_the_packages_names(package):
    """uvicorn/_subprocess.py's shown middle `from . import*;`: what the right context loads is not in __all__."""
    right = "\nprint(os.getpid())\n"
    assert judged("", "from . import*;", right, package) == "incomplete"
    assert judged("", "from . import*;x = os\n", "\n", package) == "refused"  # refused as it is written
    assert judged("", "from . import*;", "\nprint(run, Config)\n", package) == "complete"


def test_a_relative_star_import_of_a_module_without_all_brings_its_public_names(package):
    assert judged("", "from .helpers import *\n", "\nprint(helper(), VALUE)\n", package) == "complete"
    assert judged("", "from .helpers import *\n", "\nprint(_private)\n", package) == "incomplete"
    assert judged("", "from .helpers import *\nx = _private\n", "\n", package) == "refused"
    # the submodule itself is bound too (in a package's __init__: asyncio's base_events.__all__)
    assert judged("", "from .helpers import *\n", "\nprint(helpers.VALUE)\n", package) == "complete"


@pytest.mark.parametrize("module, brought, missing", [
    ("urllib.parse", "unquote", "Request"),  # the benchmark's `from urllib.parse import*`
    ("typing", "Any", "Enum"),  # starlette/websockets.py's `from typing import*`: Enum is enum's
    ("tkinter.constants", "LEFT", "Tk"),
])
def test_a_standard_library_star_import_the_middle_writes_binds_its_all(module, brought, missing):
    left = "import os\n"
    assert judged(left, f"from {module} import*\n", f"\nprint({brought}, os)\n") == "complete"
    assert judged(left, f"from {module} import*\n", f"\nprint({missing}, os)\n") == "incomplete"
    assert judged(left, f"from {module} import*\nx = {missing}\n", "\n") == "refused"


@pytest.mark.skipif(not (SITE / "starlette" / "requests.py").is_file(), reason="starlette is not installed")
def test_starlette_authentication_middle_after_from_binds_what_requests_brings():
    """starlette/middleware/authentication.py's shown middle ` starlette.requests import*` after the left's `from`:
    the right context needs AuthenticationBackend, which starlette.requests does not have."""
    left = "from __future__ import annotations\n\nfrom"
    right = "\n\nclass M:\n    backend: AuthenticationBackend\n    request: HTTPConnection\n"
    assert judged(left, " starlette.requests import*", right) == "incomplete"
    assert judged(left, " starlette.requests import*", "\n\nclass M:\n    request: HTTPConnection\n") == "complete"


@pytest.mark.skipif(not (SITE / "gguf" / "gguf_writer.py").is_file(), reason="gguf is not installed")
def test_gguf_init_middle_star_imports_one_module_where_the_right_needs_another():
    """gguf/__init__.py's shown middle `from .gguf_writer import*` where the file goes on to use GGUFReader."""
    folder = str(SITE / "gguf")
    assert judged("", "from .gguf_writer import*\n", "\nprint(GGUFReader)\n", folder) == "incomplete"
    assert judged("", "from .gguf_writer import*\n", "\nprint(GGUFWriter)\n", folder) == "complete"


def test_a_star_import_whose_module_cannot_be_read_still_relaxes(tmp_path):
    assert judged("", "from _socket import *\nx = nowhere\n", "\n") == "complete"  # compiled
    (tmp_path / "dynamic.py").write_text("for name in 'ab':\n    globals()[name] = 1\n")
    assert judged("", "from dynamic import *\nx = a\n", "\nprint(b)\n", str(tmp_path)) == "complete"
    assert judged("", "from .nowhere import *\nx = a\n", "\n", str(tmp_path)) == "complete"  # not found


def test_the_end_check_judges_the_names_of_a_file_with_a_star_import_in_its_context(package):
    """A star import of the context's: the end check once read every name pyflakes said a star import might bring
    as bound, so a middle that left the right context's name unbound passed."""
    left = "from .helpers import *\n\n\ndef f("
    assert judged(left, "a", "):\n    return a + b + helper()\n", package) == "incomplete"
    assert judged(left, "a, b", "):\n    return a + b + helper()\n", package) == "complete"


def test_a_load_that_expects_name_error_is_not_owed_under_a_star_import(package):
    """pyflakes reports a name under a star import even where a `try` catches NameError; spelt out, it does not."""
    right = "\ntry:\n    later\nexcept NameError:\n    pass\n"
    assert judged("", "from .helpers import *\n", right, package) == "complete"
    assert judged("", "from .helpers import *\n", "\nlater\n", package) == "incomplete"


def test_an_open_documents_unsaved_text_is_what_its_star_import_brings(package):
    path = Path(package) / "helpers.py"
    right = "\nprint(added)\n"
    assert judged("", "from .helpers import *\n", right, package) == "incomplete"
    set_unsaved(path, path.read_text() + "\nadded = 3\n")
    try:
        assert judged("", "from .helpers import *\n", right, package) == "complete"
    finally:
        set_unsaved(path, None)


def test_a_star_import_is_found_in_the_projects_environment(tmp_path, monkeypatch):
    """The project's virtual environment, not fimlsp's own, holds the module."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /nowhere/bin\nversion_info = 3.11.7\n")
    (site / "extstar.py").write_text("__all__ = ['shipped']\nshipped = 1\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    roots = (str(tmp_path),)
    assert star_import_names("extstar", str(tmp_path), roots) == {"shipped"}
    assert judged("", "from extstar import *\nx = shipped\n", "\n", str(tmp_path), roots) == "complete"
    assert judged("", "from extstar import *\nx = other\n", "\n", str(tmp_path), roots) == "refused"


def _star_imports(path: Path) -> list[tuple[str, str]]:
    """(module with its leading dots, the importing module's package) of each star import of a file."""
    tree = parsed(path.read_text(encoding="utf-8"))
    for base in (Path(sysconfig.get_paths()["stdlib"]), SITE):
        if base in path.parents:
            package = ".".join(path.relative_to(base).parent.parts)
    return [("." * node.level + (node.module or ""), package) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)]


@pytest.mark.slow
def test_the_names_read_are_those_a_star_import_brings_at_run_time():
    """Every readable star import of the corpus's (`test_python_star_corpus`) brings at most the names read:
    imported here (the standard library's and the held-out packages' modules), its __all__ or public names."""
    from tests.test_python_star_corpus import star_files

    checked, less = 0, []
    for path, _text in star_files():
        for module, package in _star_imports(Path(path)):
            read = star_import_names(module, str(Path(path).parent), ())
            if isinstance(read, str):
                continue
            try:
                imported = importlib.import_module(module, package or None)
            except Exception:  # noqa: BLE001 (a platform's module: windows_events)
                continue
            names = getattr(imported, "__all__", None)
            names = set(names) if names is not None else {name for name in vars(imported) if name[0] != "_"}
            names = {name for name in names if name.isidentifier()}  # (pytest's rewriting adds @py_builtins)
            checked += 1
            if not names <= read:
                less.append((path, module, sorted(names - read)[:5]))
    assert checked > 100 and less == []
