"""The judges read the document's place (issues 49 and 45): a project on disk with a package and relative imports;
what a middle imports from the project's modules must be there; one workspace analysis per project, shared with
the repository context."""

from __future__ import annotations

from pathlib import Path

import pytest

from fimlsp.cases import boundary_cases, line_cases, node_cases, random_span_cases
from fimlsp.context import RepositoryContext
from fimlsp.language import named
from fimlsp.python.analysis import analysis_for
from fimlsp.python.names import FileNames
from fimlsp.workspace import Workspace
from harness.corpus import package_files
from harness.imports import import_cuts, imported_module

PYTHON = named("python")
UTIL = "import os\n\n\ndef helper(x):\n    return x\n\n\nclass Thing:\n    size = 1\n\n\nLIMIT = 3\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project: pyproject.toml, a package with a module and a subpackage, and a script folder."""
    root = tmp_path / "project"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text(UTIL)
    (root / "pkg" / "sub" / "__init__.py").write_text("from ..util import *\n")
    (root / "pkg" / "main.py").write_text("from .util import helper\n\nprint(helper(1))\n")
    return root.resolve()


def judged(left: str, right: str, place: tuple):
    """The name judge's state at the cursor, for a document at `place` (path, project)."""
    guarantee, reason = PYTHON.judging_names(PYTHON.constrain(left, right), left, right, *place)
    assert reason == ""
    return guarantee.state


def accepts(left: str, middle: str, right: str, place: tuple) -> bool:
    """The judge writes `middle` and may end there, and the whole middle's verdict agrees."""
    state = judged(left, right, place).feed(middle)
    ended = state is not None and state.complete
    assert ended == PYTHON.binds_names(left, middle, right, *place)
    return ended


@pytest.mark.parametrize("middle", ["missing", "helper, missing", "Thing, nothing as n"])
def test_a_name_the_sibling_module_does_not_define_is_refused(project, middle):
    left, right = "from .util import ", "\n\nprint(1)\n"
    main = str(project / "pkg" / "main.py")
    assert not accepts(left, middle, right, (main, None))
    assert not accepts(left, middle, right, (main, str(project)))
    assert accepts(left, middle, right, (None, None))  # no place: the module cannot be found, nothing judged


@pytest.mark.parametrize("middle", ["helper", "helper, LIMIT", "Thing as T, os"])
def test_a_name_the_sibling_module_defines_is_accepted(project, middle):
    assert accepts("from .util import ", middle, "\n\nprint(1)\n", (str(project / "pkg" / "main.py"), None))


def test_a_semicolon_ends_a_from_import(project):
    """`from .util import helper; import sys`: `sys` is imported by a statement of its own, not from `.util` (the
    judge refused it at its first letter; found on the standard library's test_future_stmt/future_test2.py)."""
    main = str(project / "pkg" / "main.py")
    assert accepts("", "from .util import helper; import sys\n", "\nprint(helper, sys)\n", (main, None))
    assert not accepts("", "from .util import helper; from .util import os2\n", "\nprint(helper, os2)\n",
                       (main, None))


def test_a_name_being_written_must_begin_one_the_module_defines(project):
    state = judged("from .util import ", "\n", (str(project / "pkg" / "main.py"), None))
    assert state.feed("hel") is not None and state.feed("LIM") is not None
    assert state.feed("x") is None and state.feed("helper, q") is None
    assert state.feed("helper as q") is not None  # an alias is a new name


def test_whole_import_statements_in_the_middle_and_absolute_imports_through_the_project_root(project):
    script, root = str(project / "scripts" / "run.py"), str(project)
    left, right = "import sys\n", "\nprint(sys)\n"
    for middle in ("from pkg.util import missing", "from pkg.sub import helper, nothing", "from pkg import absent"):
        assert not accepts(left, middle, right, (script, root)), middle
        assert accepts(left, middle, right, (None, None)), middle
    for middle in ("from pkg.util import Thing", "from pkg.sub import helper", "from pkg import util, sub"):
        assert accepts(left, middle, right, (script, root)), middle


def test_a_star_import_of_a_sibling_binds_its_names_and_no_others(project):
    left, right = "from .util import *\n\nvalue = ", "\n"
    place = (str(project / "pkg" / "main.py"), None)
    assert accepts(left, "helper(LIMIT)", right, place)
    assert judged(left, right, place).feed("missing(1)") is None
    reason = PYTHON.judging_names(PYTHON.constrain(left, right), left, right)[1]
    assert "relative import" in reason  # without the place the judge lets the file go


def test_imports_that_may_fail_or_whose_names_are_not_known_are_not_judged(project):
    (project / "pkg" / "lazy.py").write_text("def __getattr__(name):\n    return name\n")
    (project / "pkg" / "made.py").write_text("globals()['late'] = 1\n")
    (project / "types.py").write_text("X = 1\n")  # shadows the standard library's only where run from the root
    (project / "pkg" / "compiled.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    place = (str(project / "pkg" / "main.py"), str(project))
    right = "\nprint(1)\n"
    assert accepts("", "try:\n    from .util import missing\nexcept ImportError:\n    pass", right, place)
    assert accepts("", "from .lazy import anything", right, place)
    assert accepts("", "from .made import late", right, place)
    assert accepts("", "from types import SimpleNamespace", right, place)
    assert accepts("", "from .compiled import anything", right, place)  # no source file to read


def test_unsaved_text_is_not_needed_for_the_document_itself(project):
    """The document's own text is the left and right contexts, whatever its file on disk holds."""
    main = project / "pkg" / "main.py"
    main.write_text("")
    assert accepts("from .util import helper\n\nvalue = ", "helper(1)", "\n", (str(main), None))


def test_one_analysis_per_project_shared_by_the_judges_and_the_context(project):
    main = project / "pkg" / "main.py"
    analysis = analysis_for(str(main))
    assert analysis is analysis_for(None, project) is PYTHON.workspace_analysis(project)
    assert analysis.root == project
    context = RepositoryContext(Workspace([project]))
    before = analysis.jobs
    left = "from .util import Thing\n\nvalue = Thing"
    snippets = context.gather(main, left, "\n", "file", 4000, wait=True)
    assert any("class Thing" in snippet.text for snippet in snippets)
    assert analysis.jobs > before  # the context's jedi work ran in the judges' analysis


# Soundness: true middles of a real held-out package, read with its real path and the folder that holds it as the
# project (its absolute imports of itself and of the other installed packages are then judged too).

HELD_OUT = ("starlette", "fastapi", "uvicorn")


def _refused(cases, project: str) -> list[tuple[str, str, str]]:
    """The true middles that the name and call judges, given the file's path and project, refuse (a character
    refused, the end refused, or the whole middle's verdict) where the constraint without them accepts them."""
    refused = []
    for case in cases:
        place = (case.name, project)
        plain = PYTHON.constrain(case.left, case.right)
        if _verdict(plain, case.middle) != "complete":
            continue  # the file's own constraint (its meaning, its blocks) is another test's
        guarantee, _reason = PYTHON.judging_names(plain, case.left, case.right, *place)
        guarantee, _calls = PYTHON.judging_calls(guarantee, case.left, case.right, *place)
        verdict = _verdict(guarantee, case.middle)
        if verdict != "complete" or not PYTHON.binds_names(case.left, case.middle, case.right, *place):
            refused.append((case.name, case.middle, verdict))
    return refused


def _verdict(guarantee, middle: str) -> str:
    state = guarantee.state
    for char in middle:
        state = state.feed(char) if state is not None else None
    return "refused" if state is None else "complete" if state.complete else "incomplete"


def _held_out(name: str) -> tuple[tuple[tuple[str, str], ...], str]:
    files = package_files(name)
    if not files:
        pytest.skip(f"{name} is not installed")
    return files, str(Path(files[0][0]).parents[1])  # site-packages: the package and those it imports


def test_true_imports_of_a_held_out_package_are_never_refused():
    files, project = _held_out("starlette")
    cases = import_cuts(files)[::12]
    judged = [case for case in cases if FileNames.of(case.left, case.right, str(Path(case.name).parent),
                                                     (project,)).imported(imported_module(case)) is not None]
    assert len(judged) > 20  # the check reads the package's own modules and the installed ones it imports
    assert _refused(cases, project) == []


def test_true_middles_of_a_few_cuts_of_a_held_out_package_are_never_refused():
    files, project = _held_out("starlette")
    cases = [case for make in (random_span_cases, boundary_cases, line_cases, node_cases)
             for case in make(files, 45, 8, per_file=1)]
    assert len(cases) == 32 and _refused(cases, project) == []


@pytest.mark.slow
@pytest.mark.parametrize("package", HELD_OUT)
def test_true_middles_of_held_out_packages_read_with_their_paths_are_never_refused(package):
    """Over 2,000 cuts with their imports: 160 of each kind per package and every import."""
    files, project = _held_out(package)
    cases = [case for make in (random_span_cases, boundary_cases, line_cases, node_cases)
             for case in make(files, 46, 160, per_file=4)] + import_cuts(files)
    assert _refused(cases, project) == []


def test_an_open_documents_unsaved_text_overrides_the_disk(project):
    """The editor's text of pkg/util.py (not saved) is what a middle imports from, through the server's context."""
    from fimlsp.context.editor import EditorContext

    editor = EditorContext()
    editor.initialize(None, project.as_uri())
    util = (project / "pkg" / "util.py").as_uri()
    left, right, place = "from .util import ", "\n\nprint(1)\n", editor.place((project / "pkg" / "main.py").as_uri())
    assert place == (str(project / "pkg" / "main.py"), str(project))
    assert accepts(left, "helper", right, place) and not accepts(left, "fresh", right, place)
    editor.opened(util, "def fresh():\n    pass\n")
    assert accepts(left, "fresh", right, place) and not accepts(left, "helper", right, place)
    editor.closed(util)
    assert accepts(left, "helper", right, place) and not accepts(left, "fresh", right, place)


def test_a_compiled_submodule_of_a_package_may_be_imported_from_it(project):
    (project / "pkg" / "_speedups.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    place = (str(project / "pkg" / "main.py"), None)
    assert accepts("from . import ", "_speedups, util", "\n\nprint(1)\n", place)
    assert not accepts("from . import ", "_slowdowns", "\n\nprint(1)\n", place)


def test_members_and_signatures_of_a_sibling_module_come_from_the_project(project):
    place = (str(project / "pkg" / "main.py"), None)
    left, right = "from . import util\n\nvalue = util.", "\n"
    members, source = PYTHON.judging_members(PYTHON.constrain(left, right), left, right, *place)
    assert _verdict(members, "helper") == "complete" != _verdict(members, "nothing")
    unplaced, source = PYTHON.judging_members(PYTHON.constrain(left, right), left, right)
    # without a path, `.` is nowhere: nothing is judged
    assert _verdict(unplaced, "nothing") == "complete" and "no type inferred" in source.reason
    left, right = "from .util import helper\n\nvalue = helper(", ")\n"
    calls, _source = PYTHON.judging_calls(PYTHON.constrain(left, right), left, right, *place)
    assert _verdict(calls, "1") == "complete" != _verdict(calls, "1, 2")


def test_a_module_in_nested_namespace_packages_is_not_judged_and_breaks_nothing(project):
    """PathFinder reads a nested namespace package's parent in sys.modules (KeyError where it was not imported)."""
    (project / "space" / "inner").mkdir(parents=True)
    (project / "space" / "inner" / "mod.py").write_text("X = 1\n")
    assert accepts("import sys\n", "from space.inner.mod import Y", "\nprint(sys)\n",
                   (str(project / "scripts" / "run.py"), str(project)))


def test_opening_a_document_gets_its_projects_analysis_ready_once(project):
    """The first judge to ask in a fresh server would wait for jedi's import and the builtins' stubs (about a
    second, inside a completion's time budget): an opened document starts that work in the background."""
    main = project / "pkg" / "main.py"
    analysis = analysis_for(str(main))
    PYTHON.document_text(main, main.read_text())
    warming = analysis.warm()
    assert warming.result(timeout=120) is None  # (the timeout only guards a hang)
    jobs = analysis.jobs
    PYTHON.document_text(main, main.read_text() + "\nx = 1\n")
    assert analysis.warm() is warming and analysis.jobs == jobs
    PYTHON.document_text(main, None)
