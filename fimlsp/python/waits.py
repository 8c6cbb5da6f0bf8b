"""What a judge waits on the workspace analysis (`fimlsp.python.analysis`) over one completion: a bound in all,
shorter at the keystrokes along a line than at its first completion."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fimlsp.python.analysis import Analysis


class WaitBudget:
    """What the judges of one completion may wait on the analysis, `seconds` in all (None: no bound): a question
    jedi is slow on (uvicorn's `self.flow`, over 20 s), asked again at each token, costs the completion `seconds`
    once, not each time. Once it is spent, an answer is read only where it is ready. And what their own work may
    take in all, `work` seconds (None: no bound): once they have `spent` it, the judges let the rest of the middle
    go (`spent_out`) rather than delay the suggestion (issue 49, item 8)."""

    def __init__(self, seconds: float | None, work: float | None = None):
        self.seconds = seconds
        self.waited = 0.0
        self.work = work
        self.spent = 0.0

    @property
    def spent_out(self) -> bool:
        return self.work is not None and self.spent >= self.work

    @property
    def reason(self) -> str:
        """Why the judges stopped judging, where they did."""
        return f"the judges' {1000 * self.work:.0f} ms of a keystroke were spent" if self.spent_out else ""

    def left(self) -> float | None:
        """The seconds left to wait (None: no bound)."""
        return None if self.seconds is None else max(0.0, self.seconds - self.waited)

    def within(self, most: float | None) -> float | None:
        """The seconds a wait of at most `most` (None: no bound) may take from what is left."""
        left = self.left()
        return most if left is None else left if most is None else min(left, most)

    def result(self, future: Future, most: float | None = None):
        """`future`'s result within the time left (and `most` seconds), the wait counted (raises
        `concurrent.futures.TimeoutError`)."""
        clock = time.perf_counter()
        try:
            return future.result(self.within(most))
        finally:
            self.waited += time.perf_counter() - clock


def timed(source, work: Callable, *args):
    """`work(*args)`, its time counted as the judge's whose source (`MemberSource`, `SignatureSource`) is `source`:
    its `spent`, what the judge adds to the completion, and its budget's."""
    clock = time.perf_counter()
    try:
        return work(*args)
    finally:
        elapsed = time.perf_counter() - clock
        source.spent += elapsed
        source.budget.spent += elapsed


# What the judges wait on the analysis in all (the member and call judges share it) in a completion on a line of a
# document where one was made before: the answers asked then are kept, and what a receiver or callable typed since
# needs is answered for the keystroke after.
KEYSTROKE_SECONDS = 0.02
# What the judges' own work (their waits included) may take in such a completion before they let the rest of the
# middle go: below the 50 ms that a keystroke's judges may add in all (issue 49), with room for the one check that
# runs past it (a whole-file check of a 277 kB file: 10-20 ms).
KEYSTROKE_WORK_SECONDS = 0.035
_LINES_KEPT = 64
_LINES: OrderedDict[tuple, None] = OrderedDict()
_LINES_LOCK = threading.Lock()


def judge_budget(analysis: Analysis, path: str | None, left: str, right: str, first: float | None) -> WaitBudget:
    """What a completion's judges may wait on `analysis` and work in all: `first` to wait and no bound on the work
    at the first completion on the cursor's line of the document at `path`; `KEYSTROKE_SECONDS` and
    `KEYSTROKE_WORK_SECONDS` at each one after it while the text above the line and the right context stand (typing
    along the line), which then adds no more than a keystroke's share."""
    around = (left[:left.rfind("\n") + 1] + "\0" + right).encode("utf-8", "surrogatepass")
    key = (id(analysis), path, hashlib.blake2b(around, digest_size=16).digest())
    with _LINES_LOCK:
        seen = key in _LINES
        _LINES[key] = None
        _LINES.move_to_end(key)
        while len(_LINES) > _LINES_KEPT:
            _LINES.popitem(last=False)
    return WaitBudget(KEYSTROKE_SECONDS, KEYSTROKE_WORK_SECONDS) if seen and first is not None else WaitBudget(first)


def forget_lines() -> None:
    """Forget where completions were made (a benchmark's first completion of a document)."""
    with _LINES_LOCK:
        _LINES.clear()
