"""Indexing a workspace runs in the background and never delays a suggestion (issue 45): the server's context
answers a completion while the index is still being built, and the completion's own thread reads no file: the
index, the declarations and the lines of the files the search finds are read by the background."""

import threading
from pathlib import Path

from fimlsp.context import INDEX_BATCH
from fimlsp.context.editor import EditorContext
from fimlsp.context.search import SearchIndex
from fimlsp.workspace import Workspace

HELPERS = 'def shipping_cost(weight, zone):\n    """Cost in cents."""\n    return weight * zone\n'
MAIN = "from helpers import shipping_cost\n\n\ndef total(order):\n    cost = shipping_cost(order.weight, 3)\n    return "
FILES = 6 * INDEX_BATCH  # several batches of the background's indexing


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "helpers.py").write_text(HELPERS)
    (root / "main.py").write_text(MAIN)
    for number in range(FILES):
        (root / f"module_{number}.py").write_text(
            f"def handler_{number}(order):\n    return shipping_cost(order.weight_{number}, {number})\n")
    return root


def test_a_completion_answers_while_the_index_is_being_built_and_reads_no_file(tmp_path, monkeypatch):
    root = workspace(tmp_path)
    held_name = list(Workspace([root]).files())[-1].name  # the background is held on its last batch's last file
    held, release = threading.Event(), threading.Event()
    reads: dict[int, int] = {}
    index_updates: dict[int, int] = {}
    read, update = Workspace.read, SearchIndex.update

    def counted_read(self, path):
        reads[threading.get_ident()] = reads.get(threading.get_ident(), 0) + 1
        if Path(path).name == held_name:
            held.set()
            release.wait(30)
        return read(self, path)

    def counted_update(self, path, text=None):
        index_updates[threading.get_ident()] = index_updates.get(threading.get_ident(), 0) + 1
        return update(self, path, text)

    monkeypatch.setattr(Workspace, "read", counted_read)
    monkeypatch.setattr(SearchIndex, "update", counted_update)
    main = (root / "main.py").as_uri()
    editor = EditorContext()
    editor.initialize([{"uri": root.as_uri(), "name": "proj"}], None)
    editor.opened(main, MAIN)
    me = threading.get_ident()
    try:
        assert editor.snippets(main, MAIN, "", "workspace", "", 4096) == []  # starts the background
        assert held.wait(30)  # the background is in the middle of indexing, held on one file
        context = editor._context
        indexed = len(context.index)
        asked = [editor.snippets(main, MAIN, "", "workspace", "", 4096) for _ in range(20)]
        assert not context.indexed.is_set() and len(context.index) == indexed < FILES + 2
        assert index_updates.get(me, 0) == 0 and reads.get(me, 0) == 0
        # what was resolved before the index got this far is there already: the declaration of the other file
        assert any("def shipping_cost(weight, zone)" in snippet.text for snippet in asked[-1])
        release.set()
        assert context.settle(60)
        assert context.indexed.is_set() and len(context.index) == FILES + 2
        assert index_updates.get(me, 0) == 0
    finally:
        release.set()
        editor.shutdown()


def test_the_search_s_chunks_are_read_by_the_background_for_the_next_keystroke(tmp_path, monkeypatch):
    """Finding a file's best chunk reads and splits the whole file: a keystroke leaves that to the background and
    takes the chunk at the next one."""
    root = workspace(tmp_path)
    reads: dict[int, int] = {}
    read = Workspace.read

    def counted_read(self, path):
        reads[threading.get_ident()] = reads.get(threading.get_ident(), 0) + 1
        return read(self, path)

    monkeypatch.setattr(Workspace, "read", counted_read)
    main = (root / "main.py").as_uri()
    editor = EditorContext()
    editor.initialize([{"uri": root.as_uri(), "name": "proj"}], None)
    left = MAIN + "handler_7(order)\n    weight_7 = order.weight_7\n    return "
    me = threading.get_ident()
    try:
        editor.snippets(main, left, "", "workspace", "", 4096)
        context = editor._context
        assert context.settle(60) and context.indexed.is_set()
        first = editor.snippets(main, left, "", "workspace", "", 4096)
        assert not any("handler_7" in snippet.text for snippet in first)  # its lines are not read yet
        assert context.settle(60)
        second = editor.snippets(main, left, "", "workspace", "", 4096)
        assert any(snippet.path == "module_7.py" and "def handler_7" in snippet.text for snippet in second)
        assert reads.get(me, 0) == 0
    finally:
        editor.shutdown()
