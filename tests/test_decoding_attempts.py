"""The attempts of a completion when the time budget ends: side by side, some time out and some find no alternative
first token, and still a middle comes back (the first attempt's, ended by a fallback), valid if it is shown."""

from __future__ import annotations

import pytest
import torch

from fimlsp.decoding import DecodingOptions, complete_middles, shown
from fimlsp.model import OutOfTime, TransformersModel, load_model
from fimlsp.model.backend import Snippet
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
    side_by_side = attempts.decode_side_by_side
    monkeypatch.setattr(attempts, "decode_side_by_side",
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


def test_a_request_stopped_before_its_first_token_runs_no_model_pass_and_polls_on_in_the_searches(tiny, monkeypatch):
    """A superseded request (its flag set before decoding) ends in the start's finish search, which polls the flag,
    and never reads the prompt: the server's single worker is free at once. It used to run the prompt's forward pass
    and the start's whole search first."""
    from fimlsp.python.quotient import FimState

    forwards, fed = [], []  # the model's passes; the texts the searches and the judges feed the recognizer
    forward, feed = TransformersModel.forward, FimState.feed
    monkeypatch.setattr(TransformersModel, "forward", lambda self, ids, cache: forwards.append(1) or forward(
        self, ids, cache))
    monkeypatch.setattr(FimState, "feed", lambda self, text: fed.append(text) or feed(self, text))
    polls = []
    options = DecodingOptions(max_tokens=16, attempts=3, time_budget=5.0)
    result = complete_middles(tiny, LEFT, RIGHT, options, n=3, should_stop=lambda: polls.append(1) or True)[0]
    assert result.stop == "cancelled" and result.tokens == 0 and not shown(result)
    assert forwards == []  # no prompt pass, no step
    assert fed == [LEFT]  # the setup's; the start's finish search expanded no node (it ran whole before)
    assert len(polls) <= 5  # before the prompt, before and in the start's search, each first step: no more


def test_the_searches_deadline_carries_the_stop_flag():
    """`search_bounds` keeps the completion's stop flag on the sooner deadline it picks, and a finish search under
    a stopped flag expands no node: the steering's and fallbacks' searches of a superseded request end at once."""
    import math

    from earley import Deadline
    from fimlsp.decoding.steering import search_bounds
    from fimlsp.python.quotient import quotient

    stopped = Deadline(math.inf, lambda: True)
    deadline, _nodes = search_bounds(DecodingOptions(), 0.1, stopped)
    assert isinstance(deadline, Deadline) and deadline.stopped()
    state = quotient("x = f(1, ", "\n")
    assert state.finish(16) is not None
    assert state.finish(16, deadline) is None


def test_a_request_stopped_while_llama_cpp_reads_its_prompt_ends_within_a_chunk():
    """The shipped GGUF model reads a long prompt a chunk at a time and polls the stop flag between chunks: a request
    superseded once the first chunk is read ends `cancelled` with at most two chunks read (the whole prompt was read
    before, holding the server's one worker), and what was read stays in the cache for the next keystroke."""
    from fimlsp.model import load_model
    from fimlsp.model.llama_engine import PROMPT_CHUNK

    model = load_model(None, None)
    try:
        left = "".join(f"value_{index} = compute(value_{index - 1}, {index})\n" for index in range(1, 20)) + "total = "
        options = DecodingOptions(max_tokens=16, attempts=1, time_budget=30.0, token_healing=False)
        prompt = model.prompt(left, "\n", options.max_tokens)
        assert len(prompt) > 4 * PROMPT_CHUNK
        model.llama.n_tokens = 0  # nothing cached
        result = complete_middles(model, left, "\n", options,
                                  should_stop=lambda: model.llama.n_tokens >= PROMPT_CHUNK)[0]
        assert result.stop == "cancelled" and result.tokens == 0
        assert PROMPT_CHUNK <= model.llama.n_tokens <= 2 * PROMPT_CHUNK
        assert list(model.llama.input_ids[:model.llama.n_tokens]) == prompt[:model.llama.n_tokens]
    finally:
        model.close()


@pytest.mark.parametrize("extra", [(), (Snippet("shop/models.py", "class Order:\n    quantity: int = 0\n" * 4),)],
                         ids=["alone", "with other files"])
def test_typing_at_the_cursor_reads_only_the_new_tokens_of_the_prompt(extra):
    """The prompt's contexts are cut where typing does not move the cut (`prompts.steady_contexts`), so llama.cpp's
    cache of the last keystroke's prompt holds all but the new tokens: over 24 keystrokes in a long file at most 3 read more
    than a few tokens (the model's token cut moved the left context's first token at about every other keystroke,
    and each read the left context's ~190 tokens again). Snippets of other files are counted in the room: else the
    model cut the contexts again by tokens."""
    from pathlib import Path

    import numpy as np

    from fimlsp.decoding import attempts
    from fimlsp.model import load_model

    model = load_model(None, None)
    try:
        source = Path(attempts.__file__).read_text()
        cut = source.index("def _judged(")
        typed = "result = complete_middle("
        options = DecodingOptions(max_tokens=1, attempts=1, mode="unconstrained", token_healing=False)
        reads = []
        for count in range(1, len(typed)):
            before = np.array(model.llama.input_ids[:model.llama.n_tokens])
            complete_middles(model, source[:cut] + typed[:count], source[cut:], options, extra=extra)
            after = np.array(model.llama.input_ids[:model.llama.n_tokens])
            shared = min(len(before), len(after))
            differs = np.flatnonzero(before[:shared] != after[:shared])
            reads.append(len(after) - (int(differs[0]) if len(differs) else shared))
        assert len(reads) == 24 and sum(read > 4 for read in reads[1:]) <= 3, reads
    finally:
        model.close()


def test_typing_never_moves_the_prompt_s_left_cut_back():
    """The left context's cut moves only forward as a word is typed: the cut where the left context's tokens fit
    the room wavered with the token count (`complete_m`, `complete_mi`), back and forth, and each move read about
    250 tokens of the prompt again (5 of 24 keystrokes at one place of attempts.py). Cursors in the middle of
    standard-library files; a counted bound, no clock."""
    from fimlsp.decoding.prompts import steady_contexts
    from fimlsp.model import load_model
    from harness.corpus import stdlib_files

    model = load_model(None, None)
    try:
        typed = "result = complete_middle(self.left, options)"
        moved_back = []
        for name, text in [item for item in stdlib_files() if 20_000 < len(item[1]) < 60_000][:12]:
            cursor = text.index("\n", len(text) // 2) + 1
            cuts = []
            for count in range(len(typed) + 1):
                left = text[:cursor] + typed[:count]
                kept, _ = steady_contexts(model, left, text[cursor:], 32, None)
                cuts.append(len(left) - len(kept))
            moved_back += [name for before, after in zip(cuts, cuts[1:]) if after < before]
        assert not moved_back, moved_back
    finally:
        model.close()


def test_the_member_and_call_judges_time_is_reported_among_the_stages(tiny):
    """`stages` says what the member and call judges added to the completion (issue 49's added time): a part of
    the completion's time, where they are on, and nothing where they are off."""
    import time

    left, right = "import os\n\nos.", "\n"
    for judges in ("strict", "off"):
        stages: dict[str, float] = {}
        clock = time.perf_counter()
        complete_middles(tiny, left, right, DecodingOptions(members=judges, calls=judges, max_tokens=8, attempts=1),
                         1, stages=stages)
        elapsed = time.perf_counter() - clock
        if judges == "off":
            assert "member_judge" not in stages and "call_judge" not in stages, stages
        else:
            assert 0 < stages["member_judge"] and 0 < stages["call_judge"], stages
            assert stages["member_judge"] + stages["call_judge"] <= elapsed, stages
