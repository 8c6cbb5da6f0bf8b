"""The fallback (`fimlsp.decoding.fallback`): what is shown when the model does not end a middle itself."""

from __future__ import annotations

import dataclasses

import pytest

from fimlsp.decoding import DecodingOptions, complete_middle
from tests.decoding_fixtures import scripted_text


def test_a_cancelled_completion_runs_no_fallback_search(tiny):
    """A superseded request's middle is not wanted: it ends at once, without searching finishes for it."""
    calls = iter(range(10**6))
    result = complete_middle(tiny, "x = f(1, [2", "\n", DecodingOptions(max_tokens=40),
                             should_stop=lambda: next(calls) >= 3)
    assert result.stop == "cancelled" and result.ending == "none" and not result.valid, result


def test_a_fallback_that_would_invent_code_ends_at_the_last_valid_line_instead(tiny):
    """The loop is cut inside an `if` header: its finish would write a condition's end and a body (`:x`), code
    the model never wrote; the line before it is a valid end as it is, and is the middle."""
    left, right = "def f(items):\n    ", "\n    return total\n"
    script = "total = len(items)\n    if total and " + "total and " * 8
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle == "total = len(items)" and result.finish_chars == 0 and result.parses


def test_a_constrained_fallback_keeps_what_the_model_wrote_rather_than_nothing(tiny, monkeypatch):
    """When no late prefix can be finished in the tokens left (as when a real model's multi-character tokens ran
    into a string at the token limit), a valid prefix the model wrote is the suggestion, not the empty middle that the
    file is also valid with (after `open(`: `path`, not nothing)."""
    from fimlsp.decoding import fallback

    finish = fallback._fitting_finish
    monkeypatch.setattr(fallback, "_fitting_finish",
                        lambda steering, prefix, bounds: finish(steering, prefix, bounds) if not prefix.text else None)
    left, right = "with open(", ") as handle:\n    pass\n"
    script = 'path, "' + "spam " * 12  # a loop, cut inside the string
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=80, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle and script.startswith(result.middle) and result.finish_chars == 0 and result.parses, result


@pytest.mark.parametrize("python_with", [{"closers": frozenset(map(chr, range(128)))}], indirect=True)
def test_what_a_fallbacks_finish_may_write_is_the_languages(tiny, python_with, monkeypatch):
    """Where every character counts as closing, the finish that writes an `if` header's end and a body is taken
    as closing what the middle opened, and ends the middle, instead of the valid line before it. (The finish
    searches get all the time they need: one cut by its clock on a busy machine changes the middle.)"""
    from fimlsp.decoding import fallback, start_finish, steering

    for module, name in ((steering, "SEARCH_SECONDS"), (start_finish, "START_SEARCH_SECONDS"),
                         (fallback, "FALLBACK_SEARCH_SECONDS")):
        monkeypatch.setattr(module, name, 600.0)
    left, right = "def f(items):\n    ", "\n    return total\n"
    script = "total = len(items)\n    if total and " + "total and " * 8
    options = DecodingOptions(max_tokens=60, attempts=1)
    python = complete_middle(scripted_text(tiny, script), left, right, options)
    other = complete_middle(scripted_text(tiny, script), left, right, dataclasses.replace(options, language=python_with))
    assert python.middle == "total = len(items)" and python.finish_chars == 0, python
    assert other.ending == "fallback" and other.finish_chars > 0 and other.parses, other
    assert other.middle.startswith("total = len(items)\n    if total and"), other


def test_a_fallback_that_would_invent_code_shows_nothing_where_the_file_is_valid_without_a_middle(tiny):
    """The loop is cut inside an `if` header the model began on the cursor's line: its finish would invent the
    condition's end and a body (`:0`), and no text of the model's ends validly; the empty middle does, and is
    shown: nothing, rather than code the model never wrote (held out, such middles added a type error 44 times in
    71)."""
    left, right = "def f(items):\n    total = len(items)\n    ", "\n    return total\n"
    script = "if total and " + "total and " * 8
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle == "" and result.finish_chars == 0, result


def test_invented_code_is_the_last_resort_where_nothing_the_model_wrote_ends_validly(tiny):
    """In a loop's body, the empty middle is no valid end either: the finish that invents code is the middle."""
    left, right = "def f(items):\n    for x in items:\n        ", "\n    return 1\n"
    script = "if x and " + "x and " * 8
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle.startswith("if x and") and result.finish_chars > 0 and result.parses, result


def test_a_middle_that_says_the_next_word_again_gives_way_to_one_that_does_not(tiny):
    """The loop is cut inside a string after `der[`; of what the model wrote, `der` ends validly, but the right
    context's `der` follows it: `headerder`, one name that says the word twice (held out, each such fallback added
    a type error). The empty middle ends validly too (`header`), and is shown."""
    left, right = "def f(header):\n    if hea", "der is None:\n        return 1\n    return 2\n"
    script = 'der["' + "spam " * 12
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle == "" and result.parses, result


def test_without_invented_finishes_no_suggestion_is_shown_where_only_one_would_end_the_middle(tiny):
    """As the editors ask: where only invented code would end the middle (a loop's body, as in the test above),
    there is no suggestion, and the result says why."""
    left, right = "def f(items):\n    for x in items:\n        ", "\n    return 1\n"
    script = "if x and " + "x and " * 8
    options = DecodingOptions(max_tokens=60, attempts=1, invented_finish=False)
    result = complete_middle(scripted_text(tiny, script), left, right, options)
    assert result.stop == "loop" and result.ending == "none" and not result.valid, result
    assert "invented finishes are off" in result.refusal, result


def test_without_invented_finishes_a_steered_end_that_writes_code_gives_way_to_the_models_last_valid_line(tiny):
    """The model ends after `if y`: the steering must write the header's end and a body to finish the file, code
    the model never wrote. With invented finishes that is the middle; without them (the editors), the middle is
    what the model wrote up to its last line that ends validly."""
    left, right = "def f(x):\n    ", "\n    return x\n"
    script = "y = x + 1\n    if y"
    inventing = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=40, attempts=1))
    assert inventing.ending == "finish" and inventing.middle.startswith(script) and inventing.parses, inventing
    options = DecodingOptions(max_tokens=40, attempts=1, invented_finish=False)
    own = complete_middle(scripted_text(tiny, script), left, right, options)
    assert own.ending == "fallback" and own.middle == "y = x + 1" and own.parses, own
