"""Single-line suggestions (`DecodingOptions.single_line`, what the editors ask while the user types) end at the
line's end (`fimlsp.decoding.loop`): where the file is not valid there, the middle so far is ended as at any early
stop, not decoded on over the next lines until the token limit or the time budget."""

from __future__ import annotations

from fimlsp.decoding import DecodingOptions, complete_middle
from tests.decoding_fixtures import scripted_text

LEFT, RIGHT = "def area(width, height):\n    total = ", "\n    return total\n"


def test_a_line_broken_inside_brackets_ends_the_single_line_suggestion_there(tiny):
    """The model breaks the line inside `compute(` and writes the arguments on the next lines: the suggestion is
    `compute()`, its bracket closed, after one model step past the line break rather than the whole script."""
    script = "compute(\n        width,\n        height,\n        width,\n    )"
    options = DecodingOptions(max_tokens=64, attempts=1, single_line=True)
    result = complete_middle(scripted_text(tiny, script), LEFT, RIGHT, options)
    assert result.stop == "line_break" and result.ending == "fallback", result
    assert result.middle == "compute()" and result.parses, result
    assert result.generated_tokens == len("compute("), result


def test_a_line_that_ends_validly_still_ends_as_a_line(tiny):
    script = "width * height\n    total = 0"
    options = DecodingOptions(max_tokens=64, attempts=1, single_line=True)
    result = complete_middle(scripted_text(tiny, script), LEFT, RIGHT, options)
    assert result.stop == "line" and result.middle == "width * height", result
