"""Attempts and alternatives (`fimlsp.decoding.attempts`): distinct valid middles ranked, attempts within the time
budget, one batch of them through the model, and the prompt cut to the budget's share."""

from __future__ import annotations

import dataclasses

import pytest

from fimlsp.decoding import DecodingOptions, complete_middle
from fimlsp.model import load_model
from fimlsp.weights import default_model_path
from tests.decoding_fixtures import LEFT, RIGHT, ScriptedModel, branching, byte_token, fixed_ranking


def test_alternatives_are_distinct_valid_and_ranked(tiny):
    from fimlsp.decoding import complete_middles, preference

    results = complete_middles(tiny, LEFT, RIGHT, DecodingOptions(max_tokens=12), n=3)
    assert 1 <= len(results) <= 3
    assert len({result.middle for result in results}) == len(results)
    assert all(result.parses for result in results)
    assert [preference(r) for r in results] == sorted((preference(r) for r in results), reverse=True)


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_attempts_return_the_middle_that_ended_not_the_greedy_one_that_looped(tiny, mode):
    """The first token of a loop is ranked a hair above the first of a statement the model ends: plain greedy
    decoding follows the loop; with two attempts the middle that ended by the model's end of sequence is first."""
    from fimlsp.decoding import complete_middles

    left, right = "def mean(values):\n    total = sum(values)\n    ", "\n"
    loop, ended = "if total and " + "total and " * 8, "return total / len(values)"
    options = DecodingOptions(mode=mode, max_tokens=60, token_healing=False, attempts=1)
    greedy = complete_middle(branching(tiny, loop, ended), left, right, options)
    assert greedy.stop == "loop" and greedy.ending in ("fallback", "none"), greedy
    results = complete_middles(branching(tiny, loop, ended), left, right, dataclasses.replace(options, attempts=2), 2)
    best = results[0]
    assert best.middle == ended and best.ending == "eos" and best.parses, best
    assert best.end_log_probability is not None and best.end_log_probability > -1  # its end of sequence, ranked first
    assert [result.middle for result in results[1:]] == [greedy.middle]


def test_no_attempt_starts_once_the_time_budget_is_spent(tiny, monkeypatch):
    """The first middle ends after the deadline (its last step began before it): a second attempt would only time
    out and spend its fallback's moment past the budget, so none starts."""
    import time as clock

    from fimlsp.decoding import loop

    class SlowScriptedModel(ScriptedModel):
        def forward(self, *args, **kwargs):
            clock.sleep(0.4)
            return super().forward(*args, **kwargs)

    complete_middle(tiny, "x = ", "\n", DecodingOptions(max_tokens=1, attempts=1))  # the grammar's tables, built
    calls = []
    steps = loop.Decoder.steps
    monkeypatch.setattr(loop.Decoder, "steps", lambda self, *args: calls.append(1) or steps(self, *args))
    model = dataclasses.replace(tiny, model=SlowScriptedModel([byte_token(tiny, ord("1"))], min(tiny.stop_ids),
                                                              len(tiny.token_bytes)))
    result = complete_middle(model, "x = ", "\n", DecodingOptions(max_tokens=4, time_budget=0.7, token_healing=False))
    assert result.middle == "1" and result.stop == "eos" and len(calls) == 1, (result, calls)


def test_an_alternative_passes_over_the_end_of_sequence_too(tiny):
    """At a cursor where the model ranks its end of sequence first, the empty middle is the first attempt and the
    second writes the model's next choice; the empty middle, much more probable, stays first."""
    from fimlsp.decoding import complete_middles

    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("x")), byte_token(tiny, ord("\n"))])
    results = complete_middles(model, "a = 1\n", "", DecodingOptions(max_tokens=4, token_healing=False), n=2)
    assert [result.middle for result in results][:1] == [""] and len(results) == 2, results
    assert results[1].middle.startswith("x") and results[1].parses


def test_an_alternative_starts_only_from_the_models_top_tokens(tiny):
    """Past the top `top_k`, a first token is the model's noise (`ρ;` before `return`): an alternative that finds
    no other valid first token among the top ones is not decoded, and fewer middles come back."""
    from fimlsp.decoding import complete_middles

    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("x")), byte_token(tiny, ord("y"))])
    options = DecodingOptions(max_tokens=4, token_healing=False, top_k=2)
    results = complete_middles(model, "a = 1\n", "", options, n=3)
    assert [result.middle[:1] for result in results] == ["", "x"], results
    wider = complete_middles(model, "a = 1\n", "", dataclasses.replace(options, top_k=3), n=3)
    assert [result.middle[:1] for result in wider] == ["", "x", "y"], wider


def test_attempts_share_the_prompts_forward_pass(tiny, monkeypatch):
    """Every attempt goes on from one forward pass over the prompt, each from its own copy of the key-value cache:
    the same middles and log-probabilities as when each attempt runs the pass again."""
    from fimlsp import decoding

    prompts = []
    forward = type(tiny).forward
    monkeypatch.setattr(type(tiny), "forward",
                        lambda self, ids, cache: prompts.append(cache is None) or forward(self, ids, cache))
    left, right = "def area(width, height):\n    return ", "\n"
    options = DecodingOptions(max_tokens=6, attempts=3)
    shared = decoding.complete_middles(tiny, left, right, options, n=3)
    assert sum(prompts) == 1 and len(shared) == 3, (prompts, shared)

    from fimlsp.model import transformers as engine

    session = engine._TransformersPromptPass.session
    monkeypatch.setattr(engine._TransformersPromptPass, "session",
                        lambda self, rows=1: (setattr(self, "_output", None), session(self, rows))[1])
    again = decoding.complete_middles(tiny, left, right, options, n=3)
    assert [(r.middle, round(r.log_probability, 4)) for r in shared] == [
        (r.middle, round(r.log_probability, 4)) for r in again]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["tiny", "shipped"])
def test_attempts_decoded_as_one_batch_give_the_middles_decoded_one_after_another(tiny, which, monkeypatch):
    """The attempts go through the model side by side, one forward pass of a batch of sequences a step, and give
    the same greedy middles, in the same order, as attempts decoded one at a time, on standard-library cuts. (The
    finish searches get all the time they need: a search cut by its clock on a busy machine changes a middle.)"""
    from fimlsp.decoding import complete_middles, fallback, start_finish, steering
    from fimlsp.model.transformers import TransformersModel
    from tests.test_python_quotient import _stdlib_sample

    model = tiny if which == "tiny" else load_model(default_model_path(), "cpu")
    for module, name in ((steering, "SEARCH_SECONDS"), (start_finish, "START_SEARCH_SECONDS"),
                         (fallback, "FALLBACK_SEARCH_SECONDS")):
        monkeypatch.setattr(module, name, 600.0)
    rows = []
    forward = TransformersModel.forward
    monkeypatch.setattr(TransformersModel, "forward",
                        lambda self, ids, cache: rows.append(len(ids)) or forward(self, ids, cache))
    options = DecodingOptions(max_tokens=12, attempts=3, statement_end=True)
    cases = _stdlib_sample("randspan", 5) + _stdlib_sample("boundary", 5)
    batched = [complete_middles(model, case.left, case.right, options, n=3) for case in cases]
    together, rows[:] = list(rows), []
    monkeypatch.setattr(TransformersModel, "batches", property(lambda self: False))
    alone = [complete_middles(model, case.left, case.right, options, n=3) for case in cases]
    for case, side_by_side, one_by_one in zip(cases, batched, alone):
        assert [result.middle for result in side_by_side] == [result.middle for result in one_by_one], case.name
        assert [result.log_probability for result in side_by_side] == pytest.approx(
            [result.log_probability for result in one_by_one], abs=1e-4), case.name
    assert max(together) == 3 and max(rows) == 1  # three sequences a pass, or one
    assert len(together) < len(rows), (len(together), len(rows))  # fewer passes than one a token each


def test_within_a_time_budget_the_prompt_is_cut_to_what_the_model_reads_in_its_share(tmp_path):
    """The speed is forced (a measured 25 ms a prompt token), not measured on a busy machine: a 5 s budget lets the
    prompt's pass take 0.4 of it, so the model reads at most 80 tokens of a prompt that would fill its context (the
    budget is long enough that the constraint's setup leaves the prompt's pass its turn on a loaded machine)."""
    from fimlsp.decoding.attempts import PROMPT_SHARE
    from fimlsp.model.backend import MIN_PROMPT_TOKENS
    from harness.tiny_model import build_tiny_model

    model = load_model(build_tiny_model(tmp_path / "long-model", n_positions=4096), "cpu")
    left, right = "def f(x):\n    return x\n\n\n" * 400 + "y = ", "\n"
    passes = []
    forward = model.forward
    model.forward = lambda ids, past: passes.append(ids.shape[1]) or forward(ids, past)
    complete_middle(model, left, right, DecodingOptions(max_tokens=2, attempts=1))
    unbudgeted = passes[0]
    rate, budget = 0.025, 5.0
    model.prompt_seconds_per_token = rate
    passes.clear()
    complete_middle(model, left, right, DecodingOptions(max_tokens=2, attempts=1, time_budget=budget))
    assert unbudgeted > 1000
    assert MIN_PROMPT_TOKENS <= passes[0] <= PROMPT_SHARE * budget / rate
