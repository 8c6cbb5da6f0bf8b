"""Deadlines for the work whose cost grows faster than its input (see `NFAParse`), checked cooperatively."""

from __future__ import annotations

import time

# Steps between two looks at the clock: rare enough to cost nothing, often enough to stop within milliseconds.
CLOCK_INTERVAL = 4096


class DeadlineExceeded(Exception):
    """The work ran past the deadline its caller gave (a `time.perf_counter()` value)."""


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise DeadlineExceeded
