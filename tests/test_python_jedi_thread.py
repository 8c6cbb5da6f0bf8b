"""The thread that runs jedi's work: urgent work before background work, which waits while a completion holds it
back and, where it has begun, pauses within bounds."""

from __future__ import annotations

import importlib
import sys
import threading
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout

import pytest

import fimlsp.python.jedi_thread as jedi_thread
from fimlsp.python.jedi_thread import HELD_SWITCH_INTERVAL, YIELD_PAUSE, Worker


def test_work_asked_for_now_runs_before_the_background_work_queued_ahead_of_it():
    worker, ran, gate = Worker("test"), [], threading.Event()
    worker.submit(gate.wait)
    first = worker.submit(ran.append, "background 1", background=True)
    second = worker.submit(ran.append, "background 2", background=True)
    third = worker.submit(ran.append, "background 3", background=True)
    worker.hurry(second)
    assert worker.drop(third) and not worker.drop(second)  # hurried: a judge may be waiting on it
    gate.set()
    first.result(10)
    assert ran == ["background 2", "background 1"] and third.cancelled()


def test_background_work_waits_while_the_worker_is_held_back_and_urgent_work_does_not():
    worker, ran, gate = Worker("test"), [], threading.Event()
    with worker.hold_back():
        worker.submit(gate.wait)  # the worker is busy while the work below is queued
        background = worker.submit(ran.append, "background", background=True)
        hurried = worker.submit(ran.append, "hurried", background=True)
        worker.hurry(hurried)
        urgent = worker.submit(ran.append, "urgent")
        gate.set()
        urgent.result(10)
        hurried.result(10)
        with pytest.raises(FutureTimeout):  # (held back: not begun however long it waits)
            background.result(0.2)
        assert ran == ["hurried", "urgent"]
    background.result(10)
    assert ran == ["hurried", "urgent", "background"]


def test_background_work_begun_yields_the_interpreter_sooner_while_held_back_and_urgent_work_does_not():
    worker, begun, gate = Worker("test"), threading.Event(), threading.Event()
    normal = sys.getswitchinterval()
    running = worker.submit(lambda: begun.set() or gate.wait(10), background=True)
    begun.wait(10)
    with worker.hold_back():
        assert sys.getswitchinterval() == pytest.approx(min(normal, HELD_SWITCH_INTERVAL))
        gate.set()
        running.result(10)
        assert worker.submit(sys.getswitchinterval).result(10) == normal  # a judge's: jedi at its own pace
    assert sys.getswitchinterval() == normal


def test_background_work_begun_waits_while_held_back_unless_a_caller_waits_on_the_worker(monkeypatch):
    monkeypatch.setattr(jedi_thread, "HOLD_PAUSES", float("inf"))  # however long a busy machine makes the hold
    worker, begun, steps = Worker("test"), threading.Event(), []

    def busy():  # Python work, as jedi's: a call per step
        begun.set()
        while len(steps) < 1_000_000:
            steps.append(None)
        return len(steps)

    running = worker.submit(busy, background=True)
    begun.wait(10)
    with worker.hold_back():
        held_at, held_since = len(steps), time.monotonic()
        assert not running.done()
        time.sleep(0.2)
        # at most a call per pause (YIELD_PAUSE) in the time held; running on, it would have ended
        assert len(steps) - held_at < 2 * (time.monotonic() - held_since) / YIELD_PAUSE + 2
        urgent = worker.submit(len, "queued after it")
        assert urgent.result(30) == len("queued after it")  # waited on: the work before it runs at full speed
        assert running.result(0) == 1_000_000


def _ended_within(future: Future, seconds: float) -> bool:
    """Whether `future` is done within `seconds`, polled: its `result` would wait on the worker and unpause it."""
    deadline = time.monotonic() + seconds
    while not future.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    return future.done()


def test_background_work_waits_at_most_its_budget_in_one_hold():
    worker, begun, steps = Worker("test"), threading.Event(), []

    def busy():  # a call per step: paused at each, it would take 2,000 s
        begun.set()
        while len(steps) < 1_000_000:
            steps.append(None)

    running = worker.submit(busy, background=True)
    begun.wait(10)
    with worker.hold_back():
        assert _ended_within(running, 60)  # a completion waiting on a lock it held waits HOLD_PAUSES at most


def test_background_work_is_not_paused_inside_an_import(tmp_path, monkeypatch):
    """A completion's `import jedi` waited on the module lock that the warm-up's import of jedi held, paused at each
    of its calls: the server's first completion hung."""
    monkeypatch.setattr(jedi_thread, "HOLD_PAUSES", float("inf"))
    (tmp_path / "slow_to_import.py").write_text("import threading\nthreading.Event().wait(0.2)\n"
                                                "for step in range(100_000):\n    len('')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_import", raising=False)
    worker, begun = Worker("test"), threading.Event()

    def importing():
        begun.set()
        return importlib.import_module("slow_to_import").step

    running = worker.submit(importing, background=True)
    begun.wait(10)
    with worker.hold_back():
        assert _ended_within(running, 60)  # 100,000 calls paused 2 ms each: 200 s
        assert running.result(0) == 99_999
