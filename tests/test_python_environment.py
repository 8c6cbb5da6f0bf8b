"""The project's Python environment, read without running it (issue 49): real virtual environments made with
`python -m venv`, real site-packages folders with what pip and setuptools put there (an editable install's finder
written by setuptools' own template, `.pth` files), and what `module_may_exist` says of the modules they import."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fimlsp.python import environment, module_existence
from fimlsp.python.environment import importable
from fimlsp.python.environment_finder import find_environment, running_environment
from fimlsp.python.module_existence import import_path_changes, module_may_exist, set_unsaved

EXTENSION = "fastext" + sysconfig.get_config_var("EXT_SUFFIX")


@pytest.fixture(autouse=True)
def _no_process_environment(monkeypatch):
    """The process's own `VIRTUAL_ENV` (the test run's) would come first."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setattr(environment, "_RECHECK_SECONDS", 0.0)  # every query reads the folders' mtimes again
    monkeypatch.setattr(module_existence, "_epoch", itertools.count().__next__)  # and is not kept


def _venv(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    return next(folder.glob("lib/python3*/site-packages"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A project with a `.venv` that holds a package, a module, an extension module, a namespace package in two
    portions (one in a folder a `.pth` adds), an editable install and setuptools' distutils shim."""
    project = tmp_path_factory.mktemp("project")
    site = _venv(project / ".venv")
    (site / "fakepkg").mkdir()
    (site / "fakepkg" / "__init__.py").write_text("VALUE = 1\n")
    (site / "fakepkg" / "sub.py").write_text("")
    (site / "fakepkg" / "inner").mkdir()
    (site / "fakepkg" / "inner" / "__init__.py").write_text("")
    (site / "single.py").write_text("")
    (site / EXTENSION).write_bytes(b"\x7fELF")
    (site / "nsroot" / "part").mkdir(parents=True)
    (site / "nsroot" / "part" / "__init__.py").write_text("")
    (site / "pathed").mkdir()
    (site / "pathed" / "__init__.py").write_text("__path__.append('/elsewhere')\n")
    outside = project / "outside"
    (outside / "nsroot" / "other").mkdir(parents=True)
    (outside / "extmod.py").write_text("")
    (site / "extra.pth").write_text(f"# a comment\n{outside}\n\n")
    source = project / "editable_src"
    (source / "edpkg").mkdir(parents=True)
    (source / "edpkg" / "__init__.py").write_text("")
    (source / "edpkg" / "mod.py").write_text("")
    from setuptools.command.editable_wheel import _finder_template

    name = "__editable___edpkg_1_0_finder"
    (site / f"{name}.py").write_text(_finder_template("__editable__.edpkg-1.0.finder",
                                                      {"edpkg": str(source / "edpkg")}, {}))
    (site / "__editable__.edpkg-1.0.pth").write_text(f"import {name}; {name}.install()")
    distutils = Path(sysconfig.get_paths()["purelib"]) / "distutils-precedence.pth"
    if distutils.is_file():
        (site / "distutils-precedence.pth").write_text(distutils.read_text())
    (project / "local_mod.py").write_text("")
    (project / "src" / "srcpkg").mkdir(parents=True)
    (project / "src" / "srcpkg" / "__init__.py").write_text("")
    (project / "app" / "views").mkdir(parents=True)
    (project / "app" / "__init__.py").write_text("")
    (project / "app" / "util.py").write_text("")
    (project / "app" / "views" / "__init__.py").write_text("")
    (project / "scripts").mkdir()
    (project / "scripts" / "helper.py").write_text("")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\ndependencies = ["python-multipart>=0.0.18", "PySide6 (>=6.9)"]\n'
        '[project.optional-dependencies]\nweb = ["Django>=5; python_version >= \'3.10\'"]\n')
    return project


def _may_exist(project: Path, module: str, level: int = 0, folder: str = "app", **options):
    roots = (str(project), str(project / "src"))
    return module_may_exist(module, level, str(project / folder), roots, **options)


def test_the_project_venv_is_the_environment_not_fimlsps(installed):
    found = find_environment(str(installed))
    assert found.found_by == "project" and found.prefix == str(installed / ".venv")
    assert found.site == (str(next(installed.glob(".venv/lib/python3*/site-packages"))),)
    assert any(Path(folder, "os.py").is_file() for folder in found.stdlib)
    assert importable(found).unknown is None
    # installed in fimlsp's own environment, not in the project's
    assert _may_exist(installed, "starlette") is False and module_may_exist("starlette") is True


def test_installed_and_standard_library_modules_may_exist(installed):
    for module in ("json", "json.decoder", "xml.etree.ElementTree", "sys", "_thread", "fakepkg", "fakepkg.sub",
                   "fakepkg.inner", "single", "fastext", "nsroot", "nsroot.part", "nsroot.other", "extmod", "edpkg",
                   "edpkg.mod", "distutils", "local_mod", "srcpkg", "app.util", "scripts.helper", "util", "views"):
        assert _may_exist(installed, module) is True, module


def test_a_module_that_exists_nowhere_is_refused(installed):
    for module in ("pyflask", "uvic.config", "fakepkg.nope", "fakepkg.inner.nope", "json.decoderx", "xml.etreex",
                   "nsroot.nope", "edpkg.nope", "srcpkg.nope", "app.nope"):
        assert _may_exist(installed, module) is False, module


def test_what_cannot_be_listed_is_unknown(installed):
    """The submodules of a module that writes `sys.modules` (os sets sys.modules["os.path"]), of an extension
    module, a builtin, a package that extends its `__path__`: unknown, never refused."""
    for module in ("os.path", "os.nope", "fastext.x", "sys.x", "pathed.x", "distutils.x"):
        assert _may_exist(installed, module) is None, module


def test_a_plain_module_has_no_submodules(installed):
    """`import single.x` where `single` is a source file alone fails at run time ('single' is not a package)."""
    assert _may_exist(installed, "single.x") is False and _may_exist(installed, "single.x", partial=True) is False
    assert _may_exist(installed, "__future__.id") is False and _may_exist(installed, "json.decoder.x") is False


def test_an_unsaved_edit_that_makes_a_plain_module_write_sys_modules_is_seen_at_once(installed):
    """The editor's text of `single.py` is what counts (`set_unsaved`): there it may make `single.x`."""
    path = next(installed.glob(".venv/lib/python3*/site-packages/single.py"))
    assert _may_exist(installed, "single.x") is False
    set_unsaved(path, "import sys\nsys.modules['single.x'] = sys\n")
    try:
        assert _may_exist(installed, "single.x") is None
    finally:
        set_unsaved(path, None)
    assert _may_exist(installed, "single.x") is False


def test_a_requirement_of_the_project_that_is_not_installed_may_exist(installed):
    assert _may_exist(installed, "python_multipart") is True and _may_exist(installed, "multipart") is True
    assert _may_exist(installed, "PySide6") is True and _may_exist(installed, "django") is True
    assert _may_exist(installed, "django.db") is None and _may_exist(installed, "flask") is False


def test_relative_imports_read_the_files_folder(installed):
    assert _may_exist(installed, "util", 1) is True and _may_exist(installed, "views", 1) is True
    assert _may_exist(installed, "", 1) is True and _may_exist(installed, "nope", 1) is False
    assert _may_exist(installed, "views.nope", 1) is False
    assert _may_exist(installed, "util", 2, "app/views") is True
    assert _may_exist(installed, "app", 2, "app/views") is False
    assert _may_exist(installed, "app", 3, "app/views") is False  # above the project, a root and no package
    assert _may_exist(installed, "helper", 1, "scripts") is None  # no __init__.py: a namespace portion
    assert module_may_exist("util", 1, None) is None  # the file's folder is not known


def test_a_name_being_written_may_go_on_to_one_that_exists(installed):
    assert _may_exist(installed, "fakep", partial=True) is True and _may_exist(installed, "js", partial=True)
    assert _may_exist(installed, "pyfl", partial=True) is False
    assert _may_exist(installed, "fakepkg.su", partial=True) is True
    assert _may_exist(installed, "fakepkg.", partial=True) is True
    assert _may_exist(installed, "fakepkg.zz", partial=True) is False
    assert _may_exist(installed, "os.pa", partial=True) is None


def test_an_open_documents_unsaved_file_is_a_module(installed, monkeypatch):
    monkeypatch.setattr(module_existence, "_epoch", lambda: 0)  # answers kept: opening the document must drop them
    path = installed / "app" / "fresh.py"
    assert _may_exist(installed, "fresh", 1) is False
    set_unsaved(path, "x = 1\n")
    try:
        assert _may_exist(installed, "fresh", 1) is True and _may_exist(installed, "app.fresh") is True
    finally:
        set_unsaved(path, None)


def test_a_pth_that_runs_code_or_a_sitecustomize_makes_the_environment_unknown(tmp_path):
    site = _venv(tmp_path / "env")
    found = find_environment(None, str(tmp_path / "env"))
    assert found.found_by == "setting" and importable(found).unknown is None
    assert module_may_exist("pyflask", environment=found) is False
    (site / "_virtualenv.pth").write_text("import _virtualenv")  # what virtualenv writes: known not to add modules
    assert importable(found).unknown is None
    (site / "hook.pth").write_text("import sys; sys.meta_path.insert(0, object())\n")
    assert "hook.pth runs code" in importable(found).unknown
    assert module_may_exist("pyflask", environment=found) is None
    (site / "hook.pth").unlink()
    (site / "sitecustomize.py").write_text("")
    assert "start-up" in importable(found).unknown


def test_the_order_environments_are_found_in(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    assert find_environment(str(project)).found_by == "fimlsp's interpreter"
    assert find_environment(str(project)) == running_environment()
    _venv(project / "custom_env")  # any child folder with a pyvenv.cfg
    assert find_environment(str(project)).prefix == str(project / "custom_env")
    _venv(project / ".venv")
    assert find_environment(str(project)).prefix == str(project / ".venv")
    other = tmp_path / "other"
    _venv(other)
    monkeypatch.setenv("VIRTUAL_ENV", str(other))
    assert find_environment(str(project)).found_by == "VIRTUAL_ENV"
    interpreter = project / "custom_env" / "bin" / "python"
    assert find_environment(str(project), str(interpreter)).prefix == str(project / "custom_env")
    missing = find_environment(str(project), str(tmp_path / "nowhere" / "python"))
    assert "does not exist" in missing.unknown and module_may_exist("pyflask", environment=missing) is None


def test_a_module_installed_later_is_found_and_the_listing_is_kept_until_then(installed, monkeypatch):
    listed = []
    original = environment._list
    monkeypatch.setattr(environment, "_list", lambda folder: listed.append(folder) or original(folder))
    site = next(installed.glob(".venv/lib/python3*/site-packages"))
    assert _may_exist(installed, "latecomer") is False
    listed.clear()
    for _ in range(5):
        assert _may_exist(installed, "latecomer") is False
    assert listed == []  # nothing changed: no folder listed again
    (site / "latecomer").mkdir()
    os.utime(site, ns=(os.stat(site).st_atime_ns, os.stat(site).st_mtime_ns + 1_000_000_000))
    assert _may_exist(installed, "latecomer") is True and str(site) in listed


def test_a_file_that_changes_the_import_path_says_so():
    assert "sys.path" in import_path_changes("import sys\nsys.path.insert(0, 'lib')\nimport mine\n")
    assert import_path_changes("import site\nsite.addsitedir('x')\n") is not None
    assert import_path_changes("import os\nprint(os.path.join('a'))\n") is None


def test_a_module_the_files_text_names_may_be_installed_where_it_runs(installed):
    """uvicorn's zttp_impl.py imports zttp, not installed here, and uses it: the true file is not refused."""
    context = ("import asyncio\n", "\n\nclass Protocol:\n    def parse(self):\n        return zttp.Request()\n")
    assert _may_exist(installed, "zttp", context=context) is None
    assert _may_exist(installed, "zt", partial=True, context=context) is None
    assert _may_exist(installed, "zttp.h2", context=context) is None
    for unnamed in ("pyflask", "zt", "uvic.config"):  # named only as an attribute, or a name's beginning
        assert _may_exist(installed, unnamed, context=("x.pyflask + zttp.zt", "uvicorn")) is False, unnamed


def test_a_conda_environment_is_read_from_its_own_folders(tmp_path, monkeypatch):
    library = tmp_path / "conda" / "lib" / "python3.11"
    (library / "site-packages" / "condapkg").mkdir(parents=True)
    (library / "site-packages" / "condapkg" / "__init__.py").write_text("")
    (library / "os.py").write_text("")
    (library / "ownstd").mkdir()
    (library / "ownstd" / "__init__.py").write_text("")
    (tmp_path / "conda" / "conda-meta").mkdir()
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path / "conda"))
    found = find_environment(None)
    assert found.found_by == "CONDA_PREFIX" and found.stdlib == (str(library),)
    assert module_may_exist("condapkg", environment=found) is True
    assert module_may_exist("ownstd.nope", environment=found) is False
    assert module_may_exist("starlette", environment=found) is False


def test_another_pythons_library_not_found_is_not_refused(tmp_path):
    """A venv of Python 3.13 whose base interpreter is not here: its standard library's modules (those of other
    versions too, `imp`) may exist, and their submodules are unknown."""
    (tmp_path / "env" / "lib" / "python3.13" / "site-packages").mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /nowhere/bin\nversion = 3.13.1\n")
    found = find_environment(None, str(tmp_path / "env"))
    assert found.versions == ("3.13",) and found.stdlib == ()
    assert module_may_exist("imp", environment=found) and module_may_exist("json", environment=found)
    assert module_may_exist("json.nope", environment=found) is None
    assert module_may_exist("pyflask", environment=found) is False
