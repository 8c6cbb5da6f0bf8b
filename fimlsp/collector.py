"""The cycle collector paused: around work in which no collection need run (a parse's big, acyclic structures) or
may run (a syntax tree's conversion, where a collection's finalizers could hand the interpreter to another thread)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, and on again after it where it was on before (blocks nest)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
