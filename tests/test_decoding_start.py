"""The start's finish (`fimlsp.decoding.start_finish.start_with_finish`): is the end reachable from the empty middle at all, and by
what shortest text. An editor asks at every keystroke at one cursor, where the right context stays the same: the
finish the last request found is taken again, or its rest where the character typed began it, or else the rest of
the middle it wrote, without a search."""

from __future__ import annotations

import pytest

from fimlsp.decoding import DecodingOptions, complete_middles, start_finish
from fimlsp.language import named
from tests.decoding_fixtures import scripted_text

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


def test_a_character_typed_that_began_the_middle_written_leaves_the_middle_s_rest_without_a_search():
    """`return ` ends there (its finish is empty); the completion wrote `width * height`: its `w` typed, the rest is
    the finish, where a search would look for the shortest one again."""
    left = "def area(width, height):\n    return "
    assert start(left) == ("", 1)
    start_finish.remember_middle(left, RIGHT, OPTIONS, "width * height")
    assert start(left + "w") == ("idth * height", 0)
    assert start(left + "wi") == ("dth * height", 0)
    start_finish.remember_middle(left + "wi", RIGHT, OPTIONS, "dth")
    assert start(left + "wid") == ("th * height", 0)  # the finish first, where it began with the character


def test_a_middle_written_that_the_judges_refuse_now_is_searched_again():
    left = "def area(width, height):\n    return "
    assert start(left) == ("", 1)
    start_finish.remember_middle(left, RIGHT, OPTIONS, "width * heigt")  # `heigt`: no name binds it
    finish, searches = start(left + "w")
    assert searches == 1 and finish != "idth * heigt"


def test_the_middle_a_completion_writes_is_the_next_keystroke_s_start_finish(tiny):
    """Through `complete_middles`: the model writes `width * height`, and typing its first character starts the
    next completion from its rest (no finish search at all: the model writes that rest again)."""
    left = "def area(width, height):\n    return "
    options = DecodingOptions(scope="block", names="strict", max_tokens=32, attempts=1, token_healing=False)
    first = complete_middles(scripted_text(tiny, "width * height"), left, RIGHT, options)[0]
    assert first.middle == "width * height" and first.valid and first.finish_searches == 1
    typed = complete_middles(scripted_text(tiny, "idth * height"), left + "w", RIGHT, options)[0]
    assert typed.middle == "idth * height" and typed.valid and typed.finish_searches == 0


def test_where_the_model_writes_the_start_s_finish_the_file_is_read_for_names_once(tiny, monkeypatch):
    """A keystroke later the start's finish is the last middle's rest, and the model writes it again: the end's check
    judges the text the start's check judged, and takes its verdict (pyflakes reads a file once, not twice)."""
    from fimlsp.python.names import FileNames

    read: list[str] = []
    reading = FileNames._unbound
    monkeypatch.setattr(FileNames, "_unbound", lambda self, text: read.append(text) or reading(self, text))
    left = "def area(width, height):\n    return "
    options = DecodingOptions(scope="block", names="strict", max_tokens=32, attempts=1, token_healing=False)
    complete_middles(scripted_text(tiny, "width * height"), left, RIGHT, options)
    read.clear()
    typed = complete_middles(scripted_text(tiny, "idth * height"), left + "w", RIGHT, options)[0]
    assert typed.middle == "idth * height" and typed.valid
    assert read == [left + "width * height" + RIGHT]
