"""Deadlines for the work whose cost grows faster than its input (see `NFAParse`), checked cooperatively.

A deadline is a `time.perf_counter()` value; a `Deadline` is one that its caller can also end early (a newer
keystroke supersedes the request): the same checks raise `Stopped` as soon as its `stopped()` is true.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# Steps between two looks at the clock: rare enough to cost nothing, often enough to stop within milliseconds.
CLOCK_INTERVAL = 1024


class DeadlineExceeded(Exception):
    """The work ran past the deadline its caller gave (a `time.perf_counter()` value)."""


class Stopped(DeadlineExceeded):
    """The caller stopped the work before its deadline: the result is no longer wanted (nothing was too slow)."""


class Deadline(float):
    """A `time.perf_counter()` value that a caller can also end early: `stopped()` true stops the work."""

    def __new__(cls, at: float, stopped: Callable[[], bool]) -> Deadline:
        deadline = super().__new__(cls, at)
        deadline.stopped = stopped
        return deadline


def check_deadline(deadline: float | None) -> None:
    if deadline is None:
        return
    if time.perf_counter() > deadline:
        raise DeadlineExceeded
    if isinstance(deadline, Deadline) and deadline.stopped():
        raise Stopped


def within(deadline: float | None, seconds: float) -> float:
    """The sooner of `deadline` and `seconds` from now, stopped by the same flag when `deadline` has one."""
    sooner = time.perf_counter() + seconds
    if deadline is None:
        return sooner
    if isinstance(deadline, Deadline):
        return Deadline(min(deadline, sooner), deadline.stopped)
    return min(deadline, sooner)
