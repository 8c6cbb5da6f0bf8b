"""The start's finish (`fimlsp.decoding.start_finish.start_with_finish`): is the end reachable from the empty middle at all, and by
what shortest text. An editor asks at every keystroke at one cursor, where the right context stays the same: the
finish the last request found is taken again, or its rest where the character typed began it, without a search."""

from __future__ import annotations

import pytest

from fimlsp.decoding import DecodingOptions, start_finish
from fimlsp.language import named

LEFT, RIGHT = "def area(width, height):\n    return wid", "\n"
OPTIONS = DecodingOptions(scope="block", names="strict", max_tokens=64)


@pytest.fixture(autouse=True)
def no_finish_known(monkeypatch):
    monkeypatch.setattr(start_finish, "_START_FINISHES", type(start_finish._START_FINISHES)())


def start(left: str, right: str = RIGHT, options: DecodingOptions = OPTIONS):
    """The start's finish after `left`, and the searches it ran."""
    python = named(options.language)
    guarantee, reason = python.judging_names(python.constrain(left, right), left, right)
    assert not reason
    middle, scope, _reason, searches = start_finish.start_with_finish(guarantee.state, options, None, None, left, right)
    assert scope == options.scope
    return middle.finish, searches


def test_a_character_typed_that_began_the_finish_leaves_its_rest_without_a_search():
    assert start(LEFT) == ("th", 1)
    assert start(LEFT + "t") == ("h", 0)
    assert start(LEFT + "th") == ("", 0)
    assert start(LEFT + "th") == ("", 0)  # the same cursor asked again


def test_another_character_or_right_context_is_searched_again():
    assert start(LEFT) == ("th", 1)
    finish, searches = start(LEFT + "e")  # `wide`: not bound, searched for in the block, then in the file
    assert searches >= 1 and finish != "h"
    assert start(LEFT + "t", "\n\nprint(area(1, 2))\n") == ("h", 1)


def test_a_known_finish_the_judges_now_refuse_is_searched_again():
    """The same text under other options (the name judge off) is its own search: its finish may differ."""
    assert start(LEFT) == ("th", 1)
    other = DecodingOptions(scope="block", names="off", max_tokens=64)
    assert start(LEFT + "t", options=other)[1] == 1
