"""Finish searches that no text can end (`fimlsp.python.finish.hopeless`): the middle owes a name nothing binds,
or the word the cursor is in ended as a load of one. They stop at once rather than check every end they meet
until their budget runs out; where the word can still end otherwise, its other ends are still found."""

from __future__ import annotations

import pytest

from fimlsp.language import named
from fimlsp.python.names import FileNames
from fimlsp.python.quotient import FimState

PYTHON = named("python")


def judged(left: str, right: str):
    """The start of a middle between `left` and `right`, the name judge on."""
    guarantee, reason = PYTHON.judging_names(PYTHON.constrain(left, right), left, right)
    assert not reason
    return guarantee.state


@pytest.fixture
def checks(monkeypatch) -> list[str]:
    """The ends a search had the name judge read on the whole file (`FileNames.unbound`, after CPython compiled
    it: a check's costly part), each the text's last characters."""
    asked = []
    unbound = FileNames.unbound
    monkeypatch.setattr(FileNames, "unbound", lambda self, text: asked.append(text[-24:]) or unbound(self, text))
    return asked


LEFT = "def count(items):\n    axis = 0\n    pos = 0\n    for item in items:\n        pos += a"
RIGHT = "\n    return pos\n"


@pytest.mark.parametrize("written", ["rray.", "rray[pos", "rray(item", "rray + 1"])
def test_a_cursor_word_ended_as_an_unbound_load_ends_the_search_after_one_refused_end(checks, written):
    """The user typed `pos += a`, the model went on to `array.`: `array` is bound nowhere, and no text after it
    can bind it before its load. The search found no finish either way; it used to check ends (`array.a`,
    `array.a;`, ...) until its 200 nodes ran out, each refused for `array`."""
    state = judged(LEFT, RIGHT).feed(written)
    assert state.finish(60, None, 200) is None
    assert len(checks) <= 1, checks


def test_the_cursor_word_is_still_completed_where_the_file_binds_a_longer_name(checks):
    """`pos += a`: the finish is `xis` (`axis`), found first; the ends that keep `a` (`a;`, `a#`, `a +0`), each
    refused for `a`, are no longer checked one by one to prove that nothing shorter exists."""
    assert judged(LEFT, RIGHT).finish(60, None, 400) == "xis"
    assert len(checks) <= 6, checks


def test_a_cursor_word_a_target_may_follow_is_not_given_up(checks):
    """At a statement's start the word may be bound by what follows (`valu` then `e = 0`): not a load, and its
    finish is found."""
    left, right = "def count(items):\n    valu", "\n    return value\n"
    finish = judged(left, right).feed("e").finish(20, None, 400)
    assert finish is not None and PYTHON.parses(left + "e" + finish + right), finish


def test_a_middle_owing_a_name_nothing_binds_is_given_up_at_once(monkeypatch):
    """Inside a call's brackets `nope` may still be bound later (a comprehension's target comes after its element),
    so the judge lets the middle owe it; a finish search writes no name to pay it, and used to feed texts on until
    its nodes ran out, every end refused for the debt."""
    state = judged("def listed(items):\n    return len(", "\n")
    assert state.finish(20, None, 200) is not None
    owing = state.feed("nope + ")
    assert owing.names.debt == {"nope"}
    fed = []
    feed = FimState.feed
    monkeypatch.setattr(FimState, "feed", lambda self, text: fed.append(text) or feed(self, text))
    assert owing.finish(20, None, 200) is None
    assert fed == [], len(fed)


def test_a_word_in_a_string_is_no_name(checks):
    """The cursor in a string's word: the string is closed, whatever the word."""
    assert judged('def greet():\n    return "hel', "\n").feed("lo wor").finish(20, None, 200) == '"'


def test_a_cursor_word_no_name_goes_on_with_is_given_up_while_it_is_written(checks):
    """`raise SecurePost`: after `raise` the word is a load whatever follows, the file's check refuses it, and no
    name the file binds begins with it: no text after it can be complete, and the search ends at its first check
    (it used to check `SecurePost;`, `SecurePost(0)`, ... until its nodes ran out)."""
    left, right = "class SettingsError(Exception):\n    pass\n\n\ndef check(value):\n    if value:\n        raise Se", (
        "\n    return value\n")
    state = judged(left, right)
    assert state.finish(40, None, 200) == "ttingsError"
    checks.clear()
    assert state.feed("curePost").finish(40, None, 200) is None
    assert len(checks) <= 1, checks


def test_the_ends_that_keep_a_refused_cursor_word_as_it_is_are_not_checked(checks):
    """`return F`: the file's check refuses `F`, so `F ` and `F#` before the right context are refused too; only the
    start and the finish that completes the word (`alse`) are checked."""
    left, right = "def ready(flag):\n    if flag:\n        return True\n    return F", "\n\n\nprint(ready(1))\n"
    assert judged(left, right).finish(40, None, 200) == "alse"
    assert len(checks) == 2, checks
