"""The repository context as the server and the commands drive it."""

import threading
from pathlib import Path

from fimlsp.context import RepositoryContext
from fimlsp.context.editor import EditorContext, for_command
from fimlsp.context.recent import first_changed_line

HELPERS = "def shipping_cost(weight, zone):\n    \"\"\"Cost in cents.\"\"\"\n    return weight * zone\n"
MAIN = "from helpers import shipping_cost\n\n\ndef total(order):\n    return "


def project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("")
    (root / "helpers.py").write_text(HELPERS)
    main = root / "main.py"
    main.write_text(MAIN)
    return root, main


def test_first_changed_line():
    assert first_changed_line("a\nb\nc\n", "a\nb\nX\n") == 2
    assert first_changed_line("a\nb\n", "a\nb\nmore\n") == 2
    assert first_changed_line("same", "same") == 0
    assert first_changed_line("", "new\n") == 0


def test_a_model_without_room_starts_nothing(tmp_path):
    root, main = project(tmp_path)
    editor = EditorContext()
    editor.initialize([{"uri": root.as_uri()}], None)
    editor.opened(main.as_uri(), MAIN)
    assert editor.snippets(main.as_uri(), MAIN, "", "auto", "", context_window=512) == []
    assert editor._context is None  # no thread, no index, no file read


def test_the_server_context_fills_in_the_background(tmp_path, monkeypatch):
    root, main = project(tmp_path)
    editor = EditorContext()
    editor.initialize(None, root.as_uri())
    editor.opened(main.as_uri(), MAIN)
    background = threading.Event()  # the background thread waits for it to begin: a completion must not wait
    work = RepositoryContext._work

    def held(self):
        background.wait()
        work(self)

    monkeypatch.setattr(RepositoryContext, "_work", held)
    try:
        assert editor.snippets(main.as_uri(), MAIN, "", "auto", "", context_window=4096) == []
        background.set()
        assert editor._context.settle()
        snippets = editor.snippets(main.as_uri(), MAIN, "", "auto", "", context_window=4096)
        assert snippets[0].path == "helpers.py"
        assert snippets[0].text.startswith('def shipping_cost(weight, zone):\n    """Cost in cents."""\n')
        other = root / "notes.py"
        editor.opened(other.as_uri(), "alpha = 1\n")
        editor.changed(other.as_uri(), "alpha = 1\nbeta_region = 2\n")
        assert editor._context.settle()
        chunks = [s for s in editor.snippets(main.as_uri(), MAIN, "", "workspace", "", 4096)
                  if s.path == "notes.py"]
        assert chunks and "beta_region = 2" in chunks[0].text
        editor.snippets(main.as_uri(), MAIN, "", "workspace", "helpers.py", 4096)  # excludes changed: rebuilt
        assert editor._context.settle()
        shown = editor.snippets(main.as_uri(), MAIN, "", "workspace", "helpers.py", 4096)
        assert all("shipping_cost(weight" not in s.text for s in shown)
    finally:
        editor.shutdown()


def test_a_command_resolves_at_once_from_the_project_root(tmp_path):
    root, main = project(tmp_path)
    (root / "pkg").mkdir()
    snippets = for_command(main, MAIN, "", "workspace", "", 4096)
    assert [s.path for s in snippets][:1] == ["helpers.py"]
    assert for_command(main, MAIN, "", "off", "", 4096) == []
    assert for_command(None, MAIN, "", "workspace", "", 4096) == []
    assert for_command(main, MAIN, "", "workspace", "", 4096, project=root / "pkg") == []


def test_a_context_that_fails_leaves_the_command_s_completion_without_it_saying_why(tmp_path, monkeypatch, caplog):
    """CPython 3.11's ast.parse can raise SystemError when two threads parse at once (the context's and the
    judges'): a one-shot completion goes on without other files rather than ending in a traceback."""
    root, main = project(tmp_path)

    def broken(*args, **kwargs):
        raise SystemError("AST constructor recursion depth mismatch (before=36, after=301)")

    monkeypatch.setattr(RepositoryContext, "gather", broken)
    assert for_command(main, MAIN, "", "workspace", "", 4096) == []
    assert [record.getMessage() for record in caplog.records] == [
        f"no context from other files for {main}: SystemError: AST constructor recursion depth mismatch "
        "(before=36, after=301)"]
