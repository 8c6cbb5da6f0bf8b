"""The context's background waits while a completion runs (`EditorContext.completing`): it would hold the
interpreter's lock that the completion's decoding needs (issue 44). Counted: files indexed, not time."""

from pathlib import Path

from fimlsp.context.editor import EditorContext

FILES = 150  # more than a batch of the background's (INDEX_BATCH)
MAIN = "from helpers import shipping_cost\n\n\ndef total(order):\n    return "


def workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    for number in range(FILES):
        (root / "pkg" / f"module_{number}.py").write_text(f"def function_{number}(value):\n    return value\n")
    main = root / "main.py"
    main.write_text(MAIN)
    return root, main


def indexed_files(editor: EditorContext) -> int:
    return len(editor._context.index._files)


def test_a_context_started_by_a_completion_indexes_nothing_until_it_ends(tmp_path):
    root, main = workspace(tmp_path)
    editor = EditorContext()
    editor.initialize([{"uri": root.as_uri()}], None)
    editor.opened(main.as_uri(), MAIN)
    try:
        with editor.completing():
            editor.snippets(main.as_uri(), MAIN, "", "workspace", "", context_window=4096)  # starts the background
            assert not editor._context.settle(timeout=1.0)  # it waits, with the whole workspace to index
            assert indexed_files(editor) == 0
        assert editor._context.settle()
        assert indexed_files(editor) == FILES + 1
    finally:
        editor.shutdown()


def test_indexing_stops_at_the_next_file_when_a_completion_starts_and_loses_none(tmp_path):
    root, main = workspace(tmp_path)
    editor = EditorContext()
    editor.initialize([{"uri": root.as_uri()}], None)
    editor.opened(main.as_uri(), MAIN)
    try:
        editor.snippets(main.as_uri(), MAIN, "", "workspace", "", context_window=4096)
        for _ in range(20):  # completions one after the other while it indexes
            with editor.completing():
                before = indexed_files(editor)
                editor._context.settle(timeout=0.05)
                assert indexed_files(editor) <= before + 1  # at most the file it was on when the completion began
        assert editor._context.settle()
        assert indexed_files(editor) == FILES + 1
    finally:
        editor.shutdown()
