"""Token healing (`fimlsp.decoding.partial_middle`): the tokens the cursor cuts into are taken back and written
again."""

from __future__ import annotations

import dataclasses

import pytest

from fimlsp.decoding import DecodingOptions, complete_middle
from tests.decoding_fixtures import fixed_ranking, scripted, text_token


def test_token_healing_takes_back_the_tokens_the_cursor_cuts_into(tiny):
    """In SPM order the middle goes on from the left context: its last token is taken back (a lone space after
    `return`), and the one before too while both could start one token (` p`, `ri` before ` print`). So is a
    line's indentation with its line break where nothing follows on the line (the tokenizer gives its last space to
    the word after it). At a line's start, inside an indentation that the line goes on with, and in PSM order,
    where the middle does not follow the left, the prompt stays as it is."""
    spm = dataclasses.replace(tiny, order="spm")
    for left, taken, count in [("def f(x):\n    return ", b" ", 1), ("def f(x):\n    pri", b" pri", 2),
                               ("def f(x):\n    ", b"\n    ", 1)]:
        prompt = spm.prompt(left, "\n", 16)
        assert spm.healed_prompt(left, "\n", 16, blanks=" \t\f") == (prompt[:-count], taken)
        assert b"".join(spm.token_bytes[token] for token in prompt[-count:]) == taken
    for model, left, right in [(spm, "def f(x):\n", "\n"), (spm, "def f(x):\n    ", "return x\n"),
                               (tiny, "def f(x):\n    return ", "\n"), (tiny, "def f(x):\n    ", "\n")]:
        assert model.healed_prompt(left, right, 16, blanks=" \t\f") == (model.prompt(left, right, 16), b"")


@pytest.mark.parametrize("data", [b" ", b" pri", b"(", "é".encode()[:1], b"\n    "])
def test_the_tokens_agreeing_with_taken_back_bytes_write_them_again_or_begin_to(tiny, data):
    agreeing = set(tiny.tokens_agreeing(data))
    for token, spelled in enumerate(tiny.token_bytes):
        writes_again = spelled is not None and (spelled.startswith(data) or data.startswith(spelled))
        assert (token in agreeing) == (writes_again and token not in tiny.stop_ids), (token, spelled)


def test_at_a_fresh_indented_line_the_middle_writes_code_not_more_whitespace(tiny):
    """The cursor after Enter and the editor's indentation: the model ranks a deeper indentation first, then
    spaces, which would move the user's line or write a run of blanks; healed, the indentation is written again as
    the tokenizer splits it before code (the line break and three spaces, then ` return`), and then code. Once
    code is written, whitespace may follow."""
    blanks = [text_token(tiny, b"\n        "), text_token(tiny, b"  ")]
    ranked = [*blanks, text_token(tiny, b"\n   "), text_token(tiny, b" return")]
    model = dataclasses.replace(fixed_ranking(tiny, ranked), order="spm")
    result = complete_middle(model, "def f(x):\n    ", "\n", DecodingOptions(max_tokens=3, mode="unconstrained"))
    assert result.middle == "return\n        " and result.tokens == 3, result
    exact = dataclasses.replace(fixed_ranking(tiny, [*blanks, text_token(tiny, b"\n    "), text_token(tiny, b"x")]),
                                order="spm")
    result = complete_middle(exact, "def f(x):\n    ", "\n", DecodingOptions(max_tokens=2, mode="unconstrained"))
    assert result.middle == "x" and result.tokens == 2, result


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_a_healed_middle_is_what_the_model_writes_after_the_bytes_taken_back(tiny, mode):
    """After `return ` the model writes ` x`: healed, the space it writes again is the user's and the middle is
    `x`; with the prompt as it is, the middle is ` x`."""
    left, right = "def f(x):\n    return ", "\n"
    model = dataclasses.replace(scripted(tiny, [text_token(tiny, b" x")]), order="spm")
    healed = complete_middle(model, left, right, DecodingOptions(max_tokens=8, mode=mode))
    assert healed.middle == "x" and healed.parses and healed.stop == "eos", healed
    model = dataclasses.replace(scripted(tiny, [text_token(tiny, b" x")]), order="spm")
    as_it_is = complete_middle(model, left, right, DecodingOptions(max_tokens=8, mode=mode, token_healing=False))
    assert as_it_is.middle == " x" and as_it_is.parses, as_it_is


def test_a_token_that_does_not_write_the_bytes_taken_back_again_is_never_taken_first(tiny):
    """The model ranks `#` first and ` x` second at every step: `#` would drop the space the user typed, so the
    first token is ` x`; after it, `#` may follow."""
    ranked = [text_token(tiny, b"#"), text_token(tiny, b" x"), min(tiny.stop_ids)]
    model = dataclasses.replace(fixed_ranking(tiny, ranked), order="spm")
    result = complete_middle(model, "def f(x):\n    return ", "\n", DecodingOptions(max_tokens=4, mode="unconstrained"))
    assert result.middle == "x###" and result.tokens == 4, result
