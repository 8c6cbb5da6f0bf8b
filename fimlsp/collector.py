"""The cycle collector paused: around work in which no collection need run (a parse's big, acyclic structures) or
may run (a syntax tree's conversion, where a collection's finalizers could hand the interpreter to another thread);
and settled between completions, so that its collections walk what a completion allocates, not the whole heap.

The collector's switch is one for the process, while pauses come from several threads and overlap: the switch is
turned on again when the last pause ends, not the first (one thread's end must not turn it on under another's
conversion), and only where it was on when the first began."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Settled, the frozen objects are counted once in this many settles (counting walks them all: 5 ms for 900,000), and
# a full collection runs once they number this many times what the last full collection left.
_COUNTED_EVERY = 16
_GROWTH_BEFORE_FULL = 2.0

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


_SETTLE_LOCK = threading.Lock()
_settles = 0
_frozen_after_full: int | None = None


def settle() -> None:
    """After a completion: what survived it joins the objects that no collection walks (`gc.freeze`), so that the
    next completion's collections walk what it allocates itself. Without it, a collection of the oldest generation
    walked the whole heap (jedi's trees, the grammar, the model's modules: 900,000 objects), 0.3 to 0.8 s inside
    whichever keystroke's completion allocated past the collector's threshold. Cycles that die among the frozen
    objects are reclaimed by a full collection here, once the frozen objects have grown to `_GROWTH_BEFORE_FULL`
    times what the last one left: memory stays within that factor of what is live. None runs during a pause (a
    conversion on another thread)."""
    global _settles, _frozen_after_full
    with _SETTLE_LOCK:
        _settles += 1
        if _settles % _COUNTED_EVERY == 0:
            frozen = gc.get_freeze_count()
            if _frozen_after_full is None:
                _frozen_after_full = frozen
            elif frozen > _GROWTH_BEFORE_FULL * _frozen_after_full and not _pauses:
                gc.unfreeze()
                gc.collect()
                gc.freeze()
                _frozen_after_full = gc.get_freeze_count()
                return
        gc.freeze()
