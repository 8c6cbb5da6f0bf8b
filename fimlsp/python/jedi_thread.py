"""The one thread that runs jedi's work (jedi is not thread-safe, whatever project it reads), every analysis's: a
judge's query (urgent, inside a completion's time) before background work, which waits, and pauses where it has
begun, while a completion decodes (jedi is Python: beside the decoding it takes the interpreter's lock)."""

from __future__ import annotations

import importlib._bootstrap
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import contextmanager


# How soon jedi's thread hands the interpreter's lock to another that asks for it, while background work it began
# runs during a completion: the model's steps release the lock for each operation and must take it back after.
# With CPython's 5 ms, a completion of 65 ms took 1.3 s beside a busy Python thread; with 0.1 ms, 154 ms. (Work a
# judge waits on runs at the interpreter's own interval: there jedi's answer is what the completion waits for.)
HELD_SWITCH_INTERVAL = 0.0001
# Background work begun before a completion runs on beside it at half the interpreter's time, even so (a keystroke
# 0.2 s after a completion: p95 of its cost over `members off` 250 ms, against 80 ms 1.5 s after). So, while held
# back, it waits at each call it makes until the hold ends or a caller waits on the analysis, for at most
# `YIELD_PAUSE` at a time and `HOLD_PAUSES` in all in one hold: a completion that waits on a lock the paused work holds
# (one the analysis's futures do not show) waits that long at most. An import is never paused: a completion's own
# `import jedi` waited on the module lock of the warm-up's, which paused at each of its thousands of calls.
YIELD_PAUSE = 0.002
HOLD_PAUSES = 0.25


class Worker:
    """One daemon thread running work in order, urgent work (a judge's query) before background work (the
    context's resolving), which waits while the worker is held back (`hold_back`); started at the first work."""

    def __init__(self, name: str):
        self._name = name
        self._urgent: deque = deque()
        self._background: deque = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._held = 0  # holders of the background work (completions decoding)
        self._in_background = False  # the work running was background work when it began
        self._lowered: float | None = None  # the interpreter's switch interval, while the worker lowers it
        self._waiters = 0  # callers waiting on a future of the worker's
        self._paused = 0.0  # seconds background work waited in the latest hold
        self._may_run = threading.Event()  # clear while background work runs held back and none waits on it
        self._may_run.set()

    @contextmanager
    def hold_back(self):
        """No background work begins while this is held (urgent and hurried work runs), and background work begun
        pauses at the calls it makes (`_yield_while_held`, within `YIELD_PAUSE` and `HOLD_PAUSES`) unless a caller
        waits on the worker, and hands the interpreter's lock back within `HELD_SWITCH_INTERVAL` of another thread's
        asking."""
        with self._wake:
            self._held += 1
            self._paused = 0.0
            self._switch_interval()
        try:
            yield
        finally:
            with self._wake:
                self._held -= 1
                self._switch_interval()
                self._wake.notify()

    @contextmanager
    def waited_on(self):
        """Held while a caller waits on a future of the worker's: the work before it must run at full speed."""
        with self._wake:
            self._waiters += 1
            self._switch_interval()
        try:
            yield
        finally:
            with self._wake:
                self._waiters -= 1
                self._switch_interval()

    def _yield_while_held(self, frame, event, arg) -> None:
        """The profile function of background work (called at each call and return it makes)."""
        if not self._may_run.is_set() and self._paused < HOLD_PAUSES and not _importing(frame):
            began = time.monotonic()
            self._may_run.wait(YIELD_PAUSE)
            self._paused += time.monotonic() - began

    def _switch_interval(self) -> None:
        """The interpreter's switch interval lowered while held back with background work running, else its own;
        background work yields while held back and not waited on (the lock held)."""
        if self._held > 0 and self._in_background and not self._waiters:
            self._may_run.clear()
        else:
            self._may_run.set()
        lower = self._held > 0 and self._in_background
        if lower and self._lowered is None:
            self._lowered = sys.getswitchinterval()
            sys.setswitchinterval(min(self._lowered, HELD_SWITCH_INTERVAL))
        elif not lower and self._lowered is not None:
            sys.setswitchinterval(self._lowered)
            self._lowered = None

    def submit(self, work: Callable, *args, background: bool = False) -> Future:
        future: Future = _WorkerFuture(self)
        with self._wake:
            (self._background if background else self._urgent).append((future, work, args))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._wake.notify()
        return future

    def hurry(self, future: Future) -> None:
        """Move `future`'s work, where it still waits among the background work, to the urgent work's end."""
        with self._wake:
            entry = self._waiting_in_background(future)
            if entry is not None:
                self._urgent.append(entry)

    def drop(self, future: Future) -> bool:
        """Cancel `future`'s work where it still waits among the background work; whether it did."""
        with self._wake:
            return self._waiting_in_background(future) is not None and future.cancel()

    def _waiting_in_background(self, future: Future) -> tuple | None:
        """`future`'s entry, taken out of the background work where it waits there (the lock held)."""
        for entry in self._background:
            if entry[0] is future:
                self._background.remove(entry)
                return entry
        return None

    def _loop(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._urgent or (self._background and not self._held))
                self._in_background = not self._urgent
                future, work, args = (self._urgent or self._background).popleft()
                self._switch_interval()
            if future.set_running_or_notify_cancel():
                if self._in_background:
                    sys.setprofile(self._yield_while_held)
                try:
                    future.set_result(work(*args))
                except BaseException as error:  # the caller's future carries it
                    future.set_exception(error)
                finally:
                    sys.setprofile(None)
            with self._wake:
                self._in_background = False
                self._switch_interval()


# where an import's frames run: `<frozen importlib._bootstrap>` where the interpreter froze importlib, else its path
_IMPORT_SYSTEM = importlib._bootstrap._find_and_load.__code__.co_filename


def _importing(frame) -> bool:
    """Whether `frame` runs inside an import (which holds the module's lock)."""
    while frame is not None:
        if frame.f_code.co_filename == _IMPORT_SYSTEM:
            return True
        frame = frame.f_back
    return False


class _WorkerFuture(Future):
    """A future whose waiters let the worker's background work run at full speed (`Worker.waited_on`): the work
    waited on may be that work, or queued after it."""

    def __init__(self, worker: Worker):
        super().__init__()
        self._worker = worker

    def result(self, timeout: float | None = None):
        with self._worker.waited_on():
            return super().result(timeout)

    def exception(self, timeout: float | None = None):
        with self._worker.waited_on():
            return super().exception(timeout)


# jedi is not thread-safe, whatever project it reads: every analysis's work runs on this one thread.
JEDI_THREAD = Worker("fimlsp-analysis")


def background_held_back():
    """Held while a completion decodes: every analysis's background work (answers asked ahead, the context's
    resolving) waits, and what has begun pauses at its calls, within bounds, unless a caller waits on the analysis
    (`Worker.hold_back`). jedi is Python: beside a completion, it slowed the model's steps and the judges' checks
    (on the dot prompts, a keystroke's cost over `members off` reached 400 ms where the next keystroke came 0.2 s
    after a completion)."""
    return JEDI_THREAD.hold_back()


def waited_on_analysis_thread(work: Callable, *args) -> Future:
    """`work(*args)` run where every analysis's jedi work runs, its end waited for (no time bound). jedi is not
    thread-safe: run beside that thread, a question shared jedi's subprocess with it, and answers crossed (the
    call judge's tests, asking inline, hung on an answer the analysis's thread had read)."""
    future = JEDI_THREAD.submit(work, *args)
    future.exception()
    return future
