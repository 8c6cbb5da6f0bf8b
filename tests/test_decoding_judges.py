"""The judges (`fimlsp.decoding.judges`): what a middle is checked against (the file, the statements around the
cursor, the block, the names it loads) and what the user is told when nothing passes."""

from __future__ import annotations

import dataclasses

import pytest

from fimlsp import quotient
from fimlsp.decoding import DecodingOptions, complete_middle, shown
from fimlsp.python.syntax import parses
from tests.decoding_fixtures import BROKEN_LEFT, BROKEN_RIGHT, GREET_LEFT, GREET_RIGHT, LEFT, RIGHT, byte_token, scripted


def test_a_file_broken_elsewhere_is_checked_in_the_statements_around_the_cursor(tiny):
    result = complete_middle(tiny, BROKEN_LEFT, BROKEN_RIGHT, DecodingOptions(max_tokens=16))
    assert result.valid and result.guarantee == "region" and result.region == (3, 5), result
    assert result.parses is False and not result.unchecked and "does not parse" in result.reason
    assert parses("def f(a):\n    return a + " + result.middle + "\n\n")


def test_unchecked_when_not_even_the_statement_at_the_cursor_admits_a_middle(tiny):
    result = complete_middle(tiny, "def f():\n    return (", "\n        1,,\n    )\n", DecodingOptions(max_tokens=5))
    assert result.unchecked and result.guarantee == "none" and not result.valid and result.region is None
    assert result.tokens == 5 and result.mode == "constrained" and "around the cursor" in result.reason
    assert not shown(result)


def test_a_middle_decoded_past_the_setup_deadline_is_shown_only_if_the_file_parses_with_it(tiny):
    """The setup always runs past a deadline of a nanosecond: the middle is decoded without a constraint, judged
    by the parser on the whole file, and shown exactly when the file compiles with it."""
    outcomes = set()
    for left, right in [(GREET_LEFT, GREET_RIGHT), (LEFT, RIGHT), (BROKEN_LEFT, BROKEN_RIGHT)]:
        result = complete_middle(tiny, left, right, DecodingOptions(max_tokens=8, setup_timeout=1e-9))
        assert "could not be built within its time budget" in result.reason
        assert result.parses == parses(left + result.middle + right)
        assert shown(result) == result.parses == result.valid == (result.guarantee == "file") == (not result.unchecked)
        outcomes.add(shown(result))
    assert outcomes == {True, False}, "the tiny model's unconstrained middles: one parses here, one does not"


def test_block_scope_keeps_the_middle_in_the_block_and_falls_back_to_the_file_when_it_must(tiny):
    left = "class Queue:\n    def put(self):\n        self._sem.acquire()\n        "
    right = "self._sem.release()\n        return 1\n"
    result = complete_middle(tiny, left, right, DecodingOptions(max_tokens=16, scope="block"))
    assert result.parses and result.scope == "block", result
    state = quotient(left, right).in_block().feed(result.middle)
    assert state is not None and state.complete
    cornered = complete_middle(tiny, "if a:\n    if b:\n        x = 1\n        ", "else:\n    y = 2\n",
                               DecodingOptions(max_tokens=16, scope="block"))
    assert cornered.parses and cornered.scope == "file" and "block" in cornered.reason, cornered


def test_a_middle_refused_everywhere_says_where_and_what_was_expected(tiny):
    """Thirty open brackets cannot be closed in three tokens: the result names the place and the expected tokens."""
    result = complete_middle(tiny, "x = " + "(" * 30, "\n", DecodingOptions(max_tokens=3))
    assert not result.valid and result.stop == "no_candidate"
    assert "at the cursor, after '((((" in result.refusal and "within the token limit" in result.refusal
    assert "expected one of: " in result.refusal and ")" in result.refusal.split("expected one of: ")[1].split(", ")


def test_the_middle_shown_is_judged_on_the_whole_file(tiny, monkeypatch):
    """Decoding's checks are the recognizer's (the windows around the cursor, then the whole text); the middle it
    returns is judged on the whole file by the language once more, so a recognizer that is wrong could cost a
    suggestion but never show an invalid one."""
    from fimlsp.language import named
    from fimlsp.python.quotient import RightContext

    monkeypatch.setattr(RightContext, "valid_in_windows", lambda self, *window: True)  # a window that is wrong
    monkeypatch.setattr(RightContext, "valid", lambda self, text: True)  # and a confirmation that is wrong
    left, right = "def f():\n    a = 1\n", "    b = 2\nc = 3\n"  # `x` is in the quotient (indentation aside)
    result = complete_middle(scripted(tiny, [byte_token(tiny, ord("x"))]), left, right,
                             DecodingOptions(max_tokens=4, attempts=1))
    assert result.middle.startswith("x") and result.stop == "eos"
    # `x` alone does not compile: it is not shown; a finish the whole file accepts may be (`x#`)
    assert result.valid == result.parses == named("python").parses(left + result.middle + right)
    assert not (result.middle == "x" and result.valid)


def test_a_middle_the_language_refuses_once_its_late_answers_come_is_not_shown(tiny, monkeypatch):
    """The end's checks may let an answer go for lack of time (`Language.late_refusal`): the middle about to be
    shown is asked once more, and where the language then refuses it, it is not shown, and the refusal says why."""
    from fimlsp.python.language import Python

    asked = []
    monkeypatch.setattr(Python, "late_refusal", lambda self, state: asked.append(state.text) or "late no")
    result = complete_middle(scripted(tiny, [byte_token(tiny, ord("x"))]), "y = ", "\n",
                             DecodingOptions(max_tokens=4, attempts=1))
    assert asked == ["y = x"] and result.middle == "x"
    assert not result.valid and not shown(result) and result.refusal == "late no"


@pytest.mark.parametrize("names, shown_", [("off", True), ("strict", False)])
def test_with_the_name_judge_an_unchecked_middle_that_loads_an_unbound_name_is_not_valid(tiny, names, shown_):
    """The setup runs out of time, so the middle is decoded unconstrained and judged on the whole file afterwards:
    `zz` compiles after `x = `, and with the name judge on it is still refused, as it loads a name nothing binds."""
    script = [byte_token(tiny, ord("z"))] * 2
    options = DecodingOptions(max_tokens=2, setup_timeout=1e-9, names=names, attempts=1)
    result = complete_middle(scripted(tiny, script), "x = ", "\n", options)
    assert result.middle == "zz" and result.parses and result.unchecked == (not shown_)
    assert shown(result) == shown_


def test_python_binds_names_is_the_name_judges_verdict_on_a_whole_middle():
    from fimlsp.language import named

    python = named("python")
    assert python.binds_names("import os\nx = ", "os.sep", "\n")
    assert not python.binds_names("x = ", "undefined_thing", "\n")
    assert not python.binds_names("def f(", "a", "):\n    return b\n")  # the body needs `b` bound by the header
    assert python.binds_names("from m import *\nx = ", "anything", "\n")  # a star import: names not judged


def test_strict_names_says_when_no_middle_within_the_limit_binds_what_the_right_context_needs(tiny):
    """Two tokens cannot bind `a_long_name_nothing_binds`: no judged middle exists, the middle is decoded again
    without the judge and, with names fallback, shown: the reason says that it does not bind the name either."""
    right = "\nprint(a_long_name_nothing_binds)\n"
    result = complete_middle(tiny, "import os\n", right, DecodingOptions(max_tokens=2, attempts=1, names="fallback",
                                                                      search_budget=20))
    assert result.parses and "decoded without the name judge" in result.reason, result
    assert "does not bind them either" in result.reason, result.reason


def test_strict_names_offers_a_middle_where_the_judge_leaves_only_the_empty_one(tiny):
    """After `return` the random model writes names nothing binds, so the judged decoding ends empty, which
    an editor shows as no suggestion at all: the middle decoded without the judge is offered, as it would be with
    names off (names fallback; strict shows it only if it binds its names), and its reason says so."""
    left = "class Counter:\n    def bump(self, step=1):\n        self.count += step\n        return "
    right = "\n"
    options = DecodingOptions(max_tokens=24, attempts=1, scope="block", search_budget=20)
    plain = complete_middle(tiny, left, right, dataclasses.replace(options, names="off"))
    strict = complete_middle(tiny, left, right, dataclasses.replace(options, names="fallback"))
    assert plain.valid and plain.middle, plain
    assert strict.valid and strict.middle == plain.middle, strict
    assert "decoded without the name judge" in strict.reason, strict.reason
