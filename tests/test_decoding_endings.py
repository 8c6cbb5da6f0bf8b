"""Where a middle ends (`fimlsp.decoding.endings`): before the right context written again, at the statement or
block at the cursor, before a loop, at the line's closer, as the language's facts say."""

from __future__ import annotations

import dataclasses

import pytest

from fimlsp.decoding import DecodingOptions, complete_middle
from tests.decoding_fixtures import byte_token, scripted, scripted_text, text_token


@pytest.mark.parametrize("mode", ["constrained", "checked"])
def test_a_middle_that_writes_the_right_context_again_is_cut_before_it(tiny, mode):
    left, right = "def f(x):\n    y = ", "\n    return y\n"
    result = complete_middle(scripted_text(tiny, "x + 1\n    return y"), left, right,
                             DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == "x + 1" and result.repeated_chars == len("\n    return y") and result.parses, result
    kept = complete_middle(scripted_text(tiny, "x + 1\n    return x"), left, right,
                           DecodingOptions(max_tokens=30, mode=mode))
    assert kept.middle == "x + 1\n    return x" and kept.repeated_chars == 0, kept


@pytest.mark.parametrize("mode", ["constrained", "checked"])
def test_blank_lines_that_end_a_middle_before_a_line_break_are_cut(tiny, mode):
    options = DecodingOptions(max_tokens=30, mode=mode)
    before_a_line_break = complete_middle(scripted_text(tiny, "items\n\n"), "def f(items):\n    return ",
                                          "\n\n\ndef g():\n    pass\n", options)
    assert before_a_line_break.middle == "items" and before_a_line_break.repeated_chars == 2, before_a_line_break
    assert before_a_line_break.parses
    inside_brackets = complete_middle(scripted_text(tiny, "items\n\n"), "def f(items):\n    return (", ")\n",
                                      options)
    assert inside_brackets.middle == "items\n\n" and inside_brackets.repeated_chars == 0, inside_brackets


@pytest.mark.parametrize("left, right, script, middle", [
    # a statement: it ends where the next one at its column begins
    ("def f(x):\n    y = ", "\n", "x + 1\n    return y\n", "x + 1"),
    # a block's header: the block ends where a statement at the header's column begins
    ("def f(x):", "\n\nx = 1\n", "\n    y = x\n    return y\n\ndef g():\n    pass\n", "\n    y = x\n    return y"),
    # a comment line at or below the statement's column starts what comes after it
    ("class A:\n    def f(self):\n        self.", "\n", "pop()\n\n    # The type of the type\n    x = 1\n", "pop()"),
    ("def f(x):\n    y = ", "\n", "x + 1\n    # then\n    return y\n", "x + 1"),
])
def test_a_multi_line_suggestion_ends_with_the_statement_or_block_at_the_cursor(tiny, left, right, script, middle):
    options = DecodingOptions(max_tokens=60, statement_end=True)
    result = complete_middle(scripted_text(tiny, script), left, right, options)
    assert result.middle == middle and result.ending == "statement" and result.parses, result
    whole = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60))
    assert whole.middle.startswith(middle) and len(whole.middle) > len(middle), whole


@pytest.mark.parametrize("text, kept", [
    ("open(path, path, path, ", "open(path"),
    ("open(path, path, path, path", "open(path"),  # the run starts where the repetition does, not at a chunk edge
    ("x = self.config.config.config.", "x = self.config"),
    ("def f(\n        self,\n        self,\n        self,", "def f(\n        self"),
    ("self.set_event_event_event_ev", "self.set_event"),  # a run inside a word ends with the word's first part
    ("x = aaaaaaaaaaaaaaaa", "x = aaaa"),  # one word all through: its first chunk
    ("x = [0, 0, 0", None),  # too short to be a loop
    ('line = "===================="', None),  # no word character: a rule, not a loop
    ("a.b.c.d.e.f.g", None),
])
def test_loop_start_cuts_after_the_first_chunk_of_a_repetition(text, kept):
    from fimlsp.decoding import loop_start

    cut = loop_start(text, 3)
    assert (text[:cut] if cut is not None else None) == kept


def test_loop_start_needs_as_many_repeats_as_asked():
    from fimlsp.decoding import loop_start

    assert loop_start("open(path, path, path, ", 4) is None
    assert loop_start("open(path, path, path, path, ", 4) == len("open(path")


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_a_model_caught_in_a_loop_is_stopped_and_its_middle_ended(tiny, mode):
    left, right = "with open(", ") as handle:\n    pass\n"
    script = "path, " * 12
    options = DecodingOptions(max_tokens=60, mode=mode, attempts=1)  # one greedy middle: the loop's own
    result = complete_middle(scripted_text(tiny, script), left, right, options)
    assert result.stop == "loop" and result.middle == "path", result
    assert result.loop_chars == len("path, path, path, ") - len("path") and result.parses
    assert result.generated_tokens == len("path, path, path, ")  # one byte token a character
    endless = complete_middle(scripted_text(tiny, script), left, right,
                              dataclasses.replace(options, loop_repeats=0))
    assert endless.stop != "loop" and endless.loop_chars == 0 and endless.middle.startswith("path, path, path, path")


@pytest.mark.parametrize("mode", ["constrained", "checked"])
@pytest.mark.parametrize("left, right, script, middle", [
    ("def f(path):\n    with open(", ") as f:\n        return f.read()\n", "path) as f:\n", "path"),
    ("def f(x):\n    if ", ":\n        return x\n", "len(x) == 0:\n", "len(x) == 0"),
    # a `)` that closes the middle's own bracket is not the line's: the middle is no valid end before it
    ("x = f(", ")\n", "a(b))\n", "a(b)"),
])
def test_a_middle_ends_where_the_model_writes_the_rest_of_the_line_again(tiny, mode, left, right, script, middle):
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == middle and result.ending == "right" and result.parses, result
    alone = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=30,
                                                                                        mode="unconstrained"))
    assert alone.middle.startswith(middle + script[len(middle)]), alone


@pytest.mark.parametrize("mode", ["constrained", "checked"])
@pytest.mark.parametrize("left, right, middle, token", [
    ("def f(path):\n    with open(", ") as f:\n        return f.read()\n", "path", b"):"),
    ("x = a[", "]\n", "0", b"],"),
])
def test_a_token_that_closes_the_lines_bracket_and_goes_on_ends_the_middle(tiny, mode, left, right, middle, token):
    """`):` is one token: after `open(path` it closes the call and writes a colon where the line has `) as f:`."""
    script = [*(byte_token(tiny, ord(character)) for character in middle), text_token(tiny, token),
              byte_token(tiny, ord("\n"))]
    result = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == middle and result.ending == "right" and result.parses, result


@pytest.mark.parametrize("mode", ["constrained", "checked"])
@pytest.mark.parametrize("left, right, written, token, middle", [
    ("def f(x):\n    if ", ":\n        return x\n", "isinstance(x, int", b"):", "isinstance(x, int)"),
    ("def f(path):\n    with open(", ") as f:\n        return f.read()\n", 'path, "rb', b'")', 'path, "rb"'),
])
def test_a_token_that_ends_the_middle_and_begins_the_line_ends_the_middle_inside_it(
        tiny, mode, left, right, written, token, middle):
    """`):` after `isinstance(x, int` closes the middle's own call and writes the colon the line has: the middle
    ends between the two, where it is a valid end."""
    script = [*(byte_token(tiny, ord(character)) for character in written), text_token(tiny, token),
              byte_token(tiny, ord("\n"))]
    result = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == middle and result.ending == "right" and result.parses, result


@pytest.mark.parametrize("python_with", [{"line_closers": ""}], indirect=True)
def test_the_line_closers_are_the_languages(tiny, python_with):
    """Without `)` among the language's line closers, `):` after `isinstance(x, int` is not the line's colon
    written again: the middle does not end inside it, as it does in Python."""
    left, right = "def f(x):\n    if ", ":\n        return x\n"
    script = [*(byte_token(tiny, ord(character)) for character in "isinstance(x, int"), text_token(tiny, b"):"),
              byte_token(tiny, ord("\n"))]
    python = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=30, attempts=1))
    other = complete_middle(scripted(tiny, script), left, right,
                            DecodingOptions(max_tokens=30, attempts=1, language=python_with))
    assert python.ending == "right" and python.middle == "isinstance(x, int)", python
    assert other.ending != "right" and other.parses, other


@pytest.mark.parametrize("python_with", [{"blanks": ""}], indirect=True)
def test_the_blanks_before_the_rest_of_the_line_are_the_languages(tiny, python_with):
    """With no blanks, the space before `) as f:` is part of the rest of the line: the model's `)` no longer
    begins it, and the middle goes on past it instead of ending there."""
    left, right = "def f(path):\n    with open(", " ) as f:\n        return f.read()\n"
    script = "path) as f:\n"
    python = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=30, attempts=1))
    other = complete_middle(scripted_text(tiny, script), left, right,
                            DecodingOptions(max_tokens=30, attempts=1, language=python_with))
    assert python.ending == "right" and python.middle == "path", python
    assert other.ending != "right", other
