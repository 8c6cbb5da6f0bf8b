"""The attempts of a completion when the time budget ends: side by side, some time out and some find no alternative
first token, and still a middle comes back (the first attempt's, ended by a fallback), valid if it is shown."""

from __future__ import annotations

import pytest
import torch

from fimlsp.decoding import DecodingOptions, complete_middles, shown
from fimlsp.model import OutOfTime, TransformersModel, load_model
from fimlsp.python.syntax import parses

LEFT, RIGHT = "x = ", "\n"  # the empty middle is no valid end: the first attempt must write a token


@pytest.fixture(scope="module")
def tiny(tiny_model_path):
    return load_model(tiny_model_path, "cpu")


def stalling_after(monkeypatch, tiny, ranked: str, answered: int) -> list[int]:
    """The tiny model (batched: a real key-value cache with a row per attempt) ranks the characters of `ranked` first
    at every step, answers the prompt and `answered` steps, then no more within the budget, as a model server that
    stalls: the attempts that wait on it end as `timeout`, without a clock. The tokens of each step, logged."""
    tokens = [tiny.token_bytes.index(character.encode()) for character in ranked]
    forward, steps = TransformersModel.forward, []

    def ranked_forward(self, ids, cache):
        if cache is not None:  # a step after the prompt
            if len(steps) == answered:
                raise OutOfTime("the model server did not answer within the time budget")
            steps.append(ids.flatten().tolist())
        logits, cache = forward(self, ids, cache)
        fixed = torch.zeros_like(logits)
        for rank, token in enumerate(tokens):
            fixed[..., token] = 10.0 - rank
        return fixed, cache

    monkeypatch.setattr(TransformersModel, "forward", ranked_forward)
    return steps


@pytest.mark.parametrize("top_k, answered, outcomes", [
    (1, 0, "timeout, no_alternative, no_alternative"),
    (1, 2, "timeout, no_alternative, no_alternative"),
    (2, 0, "timeout, timeout, no_alternative"),
    (3, 0, "timeout, timeout, timeout"),
])
def test_attempts_that_time_out_beside_alternatives_that_find_none_still_give_the_first_middle(
        tiny, monkeypatch, top_k, answered, outcomes):
    """Three attempts side by side: the first takes `1`, the others the next of the model's top `top_k` first
    tokens or, with none left, stop as `no_alternative`; the model stops answering after `answered` steps. An
    alternative that found no first token decoded nothing: it once passed for a finished middle (its empty start's
    fallback), the timed-out first attempt was dropped for it, and `complete_middles` raised IndexError on no
    results (the server answered an empty list). Now the first attempt's middle, ended by a fallback, comes back."""
    from fimlsp.decoding import attempts

    assert tiny.batches  # the attempts go through the model as one batch, the path where they were lost
    steps = stalling_after(monkeypatch, tiny, "123", answered)
    seen = []
    side_by_side = attempts._decode_side_by_side
    monkeypatch.setattr(attempts, "_decode_side_by_side",
                        lambda *args: seen.append(side_by_side(*args)) or seen[-1])
    options = DecodingOptions(max_tokens=4, attempts=3, top_k=top_k, token_healing=False, statement_end=True)
    results = complete_middles(tiny, LEFT, RIGHT, options, n=3)
    assert [", ".join(outcome[1] for outcome in batch) for batch in seen] == [outcomes]  # the path under test
    assert len(steps) == answered
    first = results[0]
    assert first.stop == "timeout" and first.middle.startswith("1" * (answered + 1)), results
    for result in results:  # a middle shown keeps the file valid; one that does not is marked invalid
        assert shown(result) == result.valid == parses(LEFT + result.middle + RIGHT), result
    assert shown(first)  # the fallback ends the first attempt's `1…` validly: a suggestion rather than none
