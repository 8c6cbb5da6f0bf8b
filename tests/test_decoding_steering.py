"""Steering (`fimlsp.decoding.steering`): a model that does not stop is led to a valid end by finish searches
bounded by nodes, following the model's own candidates and the file's style."""

from __future__ import annotations

import pytest

from fimlsp.decoding import DecodingOptions, complete_middle
from tests.decoding_fixtures import byte_token, fixed_ranking, quotient_guarantee


@pytest.mark.parametrize("max_tokens", [6, 10, 17])
def test_a_model_that_never_stops_is_steered_to_a_valid_end_within_the_limit(tiny, max_tokens):
    """The model always wants another `[`: the budget steers it to close them in time."""
    model = fixed_ranking(tiny, [byte_token(tiny, ord("[")), byte_token(tiny, ord("]"))])
    result = complete_middle(model, "x = ", "\n", DecodingOptions(max_tokens=max_tokens))
    assert result.parses and result.ending == "finish" and result.tokens <= max_tokens, result
    assert result.middle.startswith("[") and result.finish_chars > 0
    # the searches that steered it are part of the constraint's time, reported apart from its cost per token
    assert result.finish_searches > 0 and 0 < result.search_seconds <= result.constraint_seconds
    per_token = 1e3 * (result.constraint_seconds - result.search_seconds) / result.generated_tokens
    assert result.constraint_ms_per_token == pytest.approx(per_token)


@pytest.mark.parametrize("style", [", ", ","])
def test_a_comma_of_the_code_is_followed_as_the_file_follows_its_commas(tiny, style):
    """The model ranks `,` then `b` (no space) first: in a file that writes `, ` the middle takes the token ` b`
    instead; in one that writes `,` it keeps `b`. The comma inside the string is left as it is."""
    import re

    assert tiny.tokens_of(b" b")
    model = fixed_ranking(tiny, [byte_token(tiny, ord(",")), byte_token(tiny, ord("b"))])
    left = f"import os{style}sys\ns = 'x,y'\nt = (a"
    result = complete_middle(model, left, ")\n", DecodingOptions(max_tokens=40, attempts=1))
    assert result.parses and result.middle.startswith(",") and "b" in result.middle, result
    if style == ", ":
        assert re.search(r",[^ ]", result.middle) is None, result.middle
    else:
        assert result.middle.startswith(",b"), result.middle


def test_searches_bounded_by_nodes_find_the_same_middles_on_a_busy_machine(tiny, monkeypatch):
    """With a search budget, or with no time budget at all, the finish searches count nodes, not seconds: a
    machine so busy that a second passes between two looks at the clock gives the middle an idle one gives (an
    eval's figures do not move with load). Bounded by the clock of a time budget, the same searches find nothing
    there."""
    import time

    model = fixed_ranking(tiny, [byte_token(tiny, ord("[")), byte_token(tiny, ord("]"))])
    left, right = "x = ", "\n"
    guarantee = quotient_guarantee(left, right)
    counted = DecodingOptions(max_tokens=10, search_budget=20)
    idle = complete_middle(model, left, right, counted, guarantee=guarantee)
    assert idle.parses and idle.ending == "finish", idle
    real = time.perf_counter
    ticks = iter(range(10**9))
    monkeypatch.setattr(time, "perf_counter", lambda: real() + next(ticks))  # a second more at every look
    busy = complete_middle(model, left, right, counted, guarantee=guarantee)
    untimed_busy = complete_middle(model, left, right, DecodingOptions(max_tokens=10), guarantee=guarantee)
    timed_busy = complete_middle(model, left, right, DecodingOptions(max_tokens=10, time_budget=600.0),
                                 guarantee=guarantee)
    assert busy.middle == idle.middle and busy.finish_searches == idle.finish_searches, (busy, idle)
    assert untimed_busy.middle == idle.middle, (untimed_busy, idle)
    assert timed_busy.middle != idle.middle, timed_busy


def test_an_early_end_of_sequence_starts_a_finish_written_by_the_model(tiny):
    """End of sequence is ranked first while `f(1, [2` is open: the finish takes the model's most probable tokens
    that bring the end closer (`]` before `)`), never the ones that do not (`(`)."""
    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("(")), byte_token(tiny, ord("]")),
                                 byte_token(tiny, ord(")"))])
    result = complete_middle(model, "y = f(1, [2", "\n", DecodingOptions(max_tokens=20))
    assert result.middle == "])" and result.ending == "finish" and result.finish_chars == 2, result
    assert result.stop == "eos" and result.parses


def test_past_the_top_candidates_the_finish_is_followed(tiny):
    """None of the top 3 candidates can ever be valid in `"..."` nor ends it: the finish's first character is
    found down the whole vocabulary."""
    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("\n")), byte_token(tiny, 0)])
    result = complete_middle(model, 's = "abc', "\n", DecodingOptions(max_tokens=8, top_k=3))
    assert result.middle == '"' and result.parses and result.ending == "finish", result
