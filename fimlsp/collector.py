"""The cycle collector paused: around work in which no collection need run (a parse's big, acyclic structures) or
may run (a syntax tree's conversion, where a collection's finalizers could hand the interpreter to another thread).

The collector's switch is one for the process, while pauses come from several threads and overlap: the switch is
turned on again when the last pause ends, not the first (one thread's end must not turn it on under another's
conversion), and only where it was on when the first began."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_PAUSES_LOCK = threading.Lock()
_pauses = 0
_on_before_pauses = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, and on again after the last overlapping pause where it was on before."""
    global _pauses, _on_before_pauses
    with _PAUSES_LOCK:
        if _pauses == 0:
            _on_before_pauses = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _PAUSES_LOCK:
            _pauses -= 1
            if _pauses == 0 and _on_before_pauses:
                gc.enable()
