"""The server's completion engine on its own (`fimlsp.server.completion`): the time budget counts from a request's
arrival, a right context is compiled once, and what the user is told when there is no middle."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from fimlsp.python import quotient
from fimlsp.server.completion import CompletionEngine, NoSuggestion, Request
from fimlsp.server.config import Settings

LEFT = "def area(width, height):\n    return "
RIGHT = "\n\n\nprint(area(2, 3))\n"
HANG_GUARD = 60.0  # seconds: only proves that a wait ended (the budget here is half a second)


@pytest.mark.asyncio
async def test_time_spent_queued_counts_against_the_budget_and_is_reported_apart(tiny_model_path):
    engine = CompletionEngine(Settings(model=str(tiny_model_path), device="cpu", time_budget=0.5, max_tokens=8))
    late = Request("file:///area.py", LEFT, RIGHT, single_line=False, where="area.py:2:12")
    try:
        await engine.load(engine.settings)
        first = Request("file:///area.py", LEFT, RIGHT, single_line=True, where="area.py:2:12")
        ready = await engine.complete(first)
        assert {"waiting", "setup", "tokens"} <= first.timings.keys()  # the queue's share, apart from decoding's

        # The worker is busy until the late request has its answer (a slow earlier job on a loaded machine).
        release = threading.Event()
        busy = asyncio.get_running_loop().run_in_executor(engine._worker.executor, release.wait, HANG_GUARD)
        answered = await asyncio.wait_for(engine.complete(late), HANG_GUARD)
        still_busy = not busy.done()
        release.set()
        await busy
    finally:
        engine.shutdown()
    assert not isinstance(ready, NoSuggestion) or "budget" not in ready.reason
    assert still_busy  # answered when its budget ran out, while the worker was still busy
    assert isinstance(answered, NoSuggestion), answered
    assert "budget" in answered.reason and "waited" in answered.reason, answered.reason
    assert late.timings["waiting"] >= 500 and "tokens" not in late.timings, late.timings


@pytest.mark.asyncio
@pytest.mark.parametrize("cache", [True, False])
async def test_the_server_compiles_a_right_context_once_for_its_requests(tiny_model_path, monkeypatch, cache):
    """Two requests with the same right context, the second not an extension of the first: both build their
    promise, and the server's cache compiles the right context once (with `cache` off, every time)."""
    built = []

    compile_right_context = quotient.RightContext.__init__

    def counted(self, right, *args, **kwargs):
        compile_right_context(self, right, *args, **kwargs)
        built.append(right)

    monkeypatch.setattr(quotient.RightContext, "__init__", counted)  # wherever the class is imported from
    engine = CompletionEngine(Settings(model=str(tiny_model_path), device="cpu", time_budget=30, max_tokens=4,
                                       cache=cache))
    requests = [Request("file:///area.py", left, RIGHT, single_line=True, where="area.py:2")
                for left in (LEFT + "width", LEFT)]
    try:
        await engine.load(engine.settings)
        for request in requests:
            await engine.complete(request)
    finally:
        engine.shutdown()
    assert all("setup" in request.timings for request in requests)
    assert built.count(RIGHT) == (1 if cache else 2)


def test_the_server_says_why_a_middle_that_looped_has_no_valid_end():
    from fimlsp.server.completion import _why_invalid
    from fimlsp.server.config import Settings

    looped = SimpleNamespace(stop="loop", loop_chars=18, tokens=5, refusal="", unchecked=False)
    assert _why_invalid(looped, Settings()) == (
        "the model fell into a loop (18 characters cut) and no valid end was found before it")
    refused = SimpleNamespace(stop="no_candidate", loop_chars=0, tokens=3, unchecked=False,
                              refusal="after 'x' (1 characters into the middle)")
    assert _why_invalid(refused, Settings()).endswith(": after 'x' (1 characters into the middle)")
