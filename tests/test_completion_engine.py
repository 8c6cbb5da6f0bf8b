"""The server's completion engine on its own: the time budget counts from a request's arrival."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from fimlsp.python import quotient
from fimlsp.server.completion import CompletionEngine, NoSuggestion, Request
from fimlsp.server.config import Settings

pytestmark = pytest.mark.asyncio

LEFT = "def area(width, height):\n    return "
RIGHT = "\n\n\nprint(area(2, 3))\n"


async def test_time_spent_queued_counts_against_the_budget_and_is_logged_apart(tiny_model_path, caplog):
    engine = CompletionEngine(Settings(model=str(tiny_model_path), device="cpu", time_budget=0.5, max_tokens=8))
    try:
        await engine.load(engine.settings)
        request = Request("file:///area.py", LEFT, RIGHT, single_line=True, where="area.py:2:12")
        caplog.set_level(logging.INFO, logger="fimlsp")
        ready = await engine.complete(request)
        assert "queued" in caplog.text and "decoding" in caplog.text  # the queue's share, apart from decoding's

        # The worker is busy for longer than the budget (a slow earlier job on a loaded machine).
        busy = asyncio.get_running_loop().run_in_executor(engine._worker.executor, time.sleep, 1.0)
        started = time.monotonic()
        late = await engine.complete(Request("file:///area.py", LEFT, RIGHT, single_line=False, where="area.py:2:12"))
        waited = time.monotonic() - started
        await busy
    finally:
        engine.shutdown()
    assert not isinstance(ready, NoSuggestion) or "budget" not in ready.reason
    assert isinstance(late, NoSuggestion), late
    assert late.reason.startswith("the 0.5 s time budget ran out while the request waited"), late.reason
    assert "the 0.5 s time budget ran out while the request waited" in caplog.text
    assert waited < 0.9, waited  # answered when its budget ran out, while the worker was still busy


@pytest.mark.parametrize("cache", [True, False])
async def test_the_server_compiles_a_right_context_once_for_its_requests(tiny_model_path, monkeypatch, caplog, cache):
    """Two requests with the same right context, the second not an extension of the first: both build their
    promise, and the server's cache compiles the right context once (with `cache` off, every time)."""
    built = []

    class CountedRightContext(quotient.RightContext):
        def __init__(self, right, *args, **kwargs):
            super().__init__(right, *args, **kwargs)
            built.append(right)

    monkeypatch.setattr(quotient, "RightContext", CountedRightContext)
    engine = CompletionEngine(Settings(model=str(tiny_model_path), device="cpu", time_budget=30, max_tokens=4,
                                       cache=cache))
    try:
        await engine.load(engine.settings)
        caplog.set_level(logging.INFO, logger="fimlsp")
        for left in (LEFT + "width", LEFT):
            await engine.complete(Request("file:///area.py", left, RIGHT, single_line=True, where="area.py:2"))
    finally:
        engine.shutdown()
    recognizers = [line for line in caplog.messages if "recognizer" in line]
    assert len(recognizers) == 2 and all("recognizer built" in line for line in recognizers), recognizers
    assert built.count(RIGHT) == (1 if cache else 2)
