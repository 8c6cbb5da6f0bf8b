"""Attempts once one has ended (`fimlsp.decoding.attempts`): a middle a fallback would end never ranks above a valid
one the model ended, so the fallback's searches run only where too few such middles were found; and within a time
budget no attempt starts after one the model ended."""

from __future__ import annotations

import dataclasses

from fimlsp.decoding import DecodingOptions, attempts, complete_middles, loop
from fimlsp.model import TransformersModel
from tests.decoding_fixtures import branching

LEFT, RIGHT = "def mean(values):\n    total = sum(values)\n    ", "\n"
LOOP, ENDED = "if total and " + "total and " * 8, "return total / len(values)"
OPTIONS = DecodingOptions(max_tokens=60, token_healing=False, attempts=2)


def counted_fallbacks(monkeypatch) -> list[str]:
    """The fallbacks run, each the middle it ended."""
    ended = []
    fallback = attempts.fallback

    def counted(steering, seen):
        ended.append(seen[-1].text)
        return fallback(steering, seen)

    monkeypatch.setattr(attempts, "fallback", counted)
    return ended


def test_no_fallback_runs_for_an_attempt_beside_one_the_model_ended(tiny, monkeypatch):
    """The first attempt loops (a fallback would end it), the second ends by the model's end of sequence: the
    ended one is shown either way, and the loop's fallback, its searches, no longer runs for nothing."""
    fallbacks = counted_fallbacks(monkeypatch)
    best = complete_middles(branching(tiny, LOOP, ENDED), LEFT, RIGHT, OPTIONS)[0]
    assert best.middle == ENDED and best.ending == "eos" and best.parses, best
    assert fallbacks == []


def test_a_fallback_still_ends_the_attempt_that_another_middle_needs(tiny, monkeypatch):
    """Two middles asked for and one ended by the model: the loop's fallback ends the second."""
    fallbacks = counted_fallbacks(monkeypatch)
    results = complete_middles(branching(tiny, LOOP, ENDED), LEFT, RIGHT, OPTIONS, 2)
    assert [result.middle for result in results][0] == ENDED and len(results) == 2, results
    assert results[1].ending == "fallback" and results[1].parses, results[1]
    assert len(fallbacks) == 1


def test_within_a_time_budget_no_attempt_starts_after_one_the_model_ended(tiny, monkeypatch):
    """Attempts one after another (an engine that decodes one sequence at a time, as llama.cpp's): the first ends
    by the model's end of sequence, and within a time budget it is shown at once; without one, the next attempts
    still decode to rank their middles."""
    monkeypatch.setattr(TransformersModel, "batches", property(lambda self: False))
    started = []
    steps = loop.Decoder.steps
    monkeypatch.setattr(loop.Decoder, "steps", lambda self, *args: started.append(1) or steps(self, *args))
    model = branching(tiny, ENDED, LOOP)
    first = complete_middles(model, LEFT, RIGHT, dataclasses.replace(OPTIONS, attempts=3, time_budget=60.0))[0]
    assert first.middle == ENDED and first.ending == "eos", first
    assert len(started) == 1
    started.clear()
    assert complete_middles(model, LEFT, RIGHT, dataclasses.replace(OPTIONS, attempts=3))[0].middle == ENDED
    assert len(started) == 3
