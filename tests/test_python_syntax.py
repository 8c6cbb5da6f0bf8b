"""CPython's verdict (`fimlsp.python.syntax`) holds while another thread builds syntax trees: CPython 3.11 raises
SystemError from `ast.parse` when two threads convert trees at once (gh-106905: the workspace analysis' and the
context's threads beside a judge's), which is no verdict on the text, so the parse is tried again."""

from __future__ import annotations

import ast

import pytest

from fimlsp.python import syntax


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
    with pytest.raises(SyntaxError):
        syntax.parsed("x = 1\n")
