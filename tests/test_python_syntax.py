"""CPython's verdict (`fimlsp.python.syntax`) holds while another thread builds syntax trees: a tree another
thread's conversion kept from being built (`fimlsp.syntax_trees`, gh-106905) is no verdict on the text."""

from __future__ import annotations

import ast

from fimlsp.python import member_lists, syntax
from tests.test_syntax_trees import racing


def test_a_parse_that_lost_the_race_gives_the_text_s_verdict(monkeypatch):
    calls = racing(monkeypatch, failures=2)
    assert syntax.parses("x = 1\n") and len(calls) == 3


def test_a_parse_that_keeps_losing_is_a_syntax_error_not_a_crash(monkeypatch):
    racing(monkeypatch, failures=10)
    assert isinstance(syntax.module_or_error("x = 1\n"), SyntaxError)


def test_a_tree_other_threads_kept_from_being_built_is_not_kept_as_the_file_s(monkeypatch, tmp_path):
    """The member judge's cache of source files (`member_lists._parsed`) keeps a file's verdict while it stands:
    three lost races are no verdict, and the next read builds the tree."""
    source = tmp_path / "base.py"
    source.write_text("class Base:\n    def __init__(self):\n        self.lasttag = 1\n")
    parse = ast.parse
    racing(monkeypatch, failures=3)
    assert member_lists._parsed(str(source)) == (None, "")
    monkeypatch.setattr(ast, "parse", parse)
    assert member_lists._class_names(str(source), ("Base",)) == {"__init__", "lasttag"}
