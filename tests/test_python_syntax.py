"""CPython's verdict (`fimlsp.python.syntax`) holds while another thread builds syntax trees: CPython 3.11 raises
SystemError from `ast.parse` when two threads convert trees at once (gh-106905: the workspace analysis' and the
context's threads beside a judge's), which is no verdict on the text: fimlsp's own threads parse one at a time,
and a parse another library's interleaved with is tried again."""

from __future__ import annotations

import ast
import threading
import time

import pytest

from fimlsp.python import member_lists, syntax


def _racing(monkeypatch, failures: int) -> list[int]:
    """`ast.parse` raising SystemError as under the race for its first `failures` calls; the calls are counted."""
    calls, parse = [], ast.parse

    def racing_parse(source, *args, **kwargs):
        calls.append(1)
        if len(calls) <= failures:
            raise SystemError("AST constructor recursion depth mismatch (before=36, after=301)")
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(syntax.ast, "parse", racing_parse)
    return calls


def test_a_parse_that_lost_the_race_is_tried_again(monkeypatch):
    calls = _racing(monkeypatch, failures=2)
    assert syntax.parses("x = 1\n") and len(calls) == 3
    assert isinstance(syntax.parsed("y = 2\n"), ast.Module)


def test_a_parse_that_keeps_losing_is_a_syntax_error_not_a_crash(monkeypatch):
    _racing(monkeypatch, failures=10)
    assert isinstance(syntax.module_or_error("x = 1\n"), SyntaxError)
    with pytest.raises(syntax.TreeNotBuilt):
        syntax.parsed("x = 1\n")


def test_fimlsp_s_threads_build_syntax_trees_one_at_a_time(monkeypatch):
    """A parse waits for another thread's (the lock `_CONVERTING`): ours never interleave, so never race."""
    inside, most, parse = [], [], ast.parse

    def slow_parse(source, *args, **kwargs):
        inside.append(1)
        most.append(len(inside))
        time.sleep(0.02)  # the interpreter's lock is free meanwhile: another thread could start its own
        inside.pop()
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(syntax.ast, "parse", slow_parse)
    threads = [threading.Thread(target=syntax.parsed, args=(f"x = {n}\n",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(most) == 4 and max(most) == 1


def test_a_tree_other_threads_kept_from_being_built_is_not_kept_as_the_file_s(monkeypatch, tmp_path):
    """The member judge's cache of source files (`member_lists._parsed`) keeps a file's verdict while it stands:
    three lost races are no verdict, and the next read builds the tree."""
    source = tmp_path / "base.py"
    source.write_text("class Base:\n    def __init__(self):\n        self.lasttag = 1\n")
    parse = ast.parse
    _racing(monkeypatch, failures=3)
    assert member_lists._parsed(str(source)) == (None, "")
    monkeypatch.setattr(syntax.ast, "parse", parse)
    assert member_lists._class_names(str(source), ("Base",)) == {"__init__", "lasttag"}
