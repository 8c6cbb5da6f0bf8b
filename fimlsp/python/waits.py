"""What a judge waits on the workspace analysis (`fimlsp.python.analysis`) over one completion: a bound in all,
shorter at the keystrokes along a line than at its first completion."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fimlsp.python.analysis import Analysis


class WaitBudget:
    """What a judge may wait on the analysis over one completion, `seconds` in all (None: no bound): a question
    jedi is slow on (uvicorn's `self.flow`, over 20 s), asked again at each token, costs the completion `seconds`
    once, not each time. Once it is spent, an answer is read only where it is ready."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.waited = 0.0

    def left(self) -> float | None:
        """The seconds left to wait (None: no bound)."""
        return None if self.seconds is None else max(0.0, self.seconds - self.waited)

    def result(self, future: Future):
        """`future`'s result within the time left, the wait counted (raises `concurrent.futures.TimeoutError`)."""
        clock = time.perf_counter()
        try:
            return future.result(self.left())
        finally:
            self.waited += time.perf_counter() - clock


# What a judge waits on the analysis in a completion on a line of a document where one was made before: the
# answers asked then are kept, and what a receiver typed since needs is answered for the keystroke after. Below the
# 50 ms that a keystroke's judges may add in all (issue 49), with room for their checks.
KEYSTROKE_SECONDS = 0.03
_LINES_KEPT = 64
_LINES: OrderedDict[tuple, None] = OrderedDict()
_LINES_LOCK = threading.Lock()


def judge_seconds(analysis: Analysis, path: str | None, left: str, right: str, first: float | None) -> float | None:
    """What a completion's judge may wait on `analysis` in all (`WaitBudget`): `first` at the first completion on
    the cursor's line of the document at `path`, `KEYSTROKE_SECONDS` at each one after it while the text above the
    line and the right context stand (typing along the line), which waits on jedi no longer than a keystroke's
    share."""
    around = (left[:left.rfind("\n") + 1] + "\0" + right).encode("utf-8", "surrogatepass")
    key = (id(analysis), path, hashlib.blake2b(around, digest_size=16).digest())
    with _LINES_LOCK:
        seen = key in _LINES
        _LINES[key] = None
        _LINES.move_to_end(key)
        while len(_LINES) > _LINES_KEPT:
            _LINES.popitem(last=False)
    return KEYSTROKE_SECONDS if seen and first is not None else first


def forget_lines() -> None:
    """Forget where completions were made (a benchmark's first completion of a document)."""
    with _LINES_LOCK:
        _LINES.clear()
