"""The cycle collector held off while the big, acyclic structures of a parse are built."""

from __future__ import annotations

from contextlib import contextmanager

from earley import DeadlineExceeded
from earley.reaper import discard_frames
from fimlsp.collector import collector_paused


@contextmanager
def no_cycle_collection():
    """The cycle collector held off while a right context is compiled or a left context fed: the charts are
    millions of small sets and lists that hold no cycles, and full collections over them took more than half of
    a big build's time."""
    with collector_paused():
        try:
            yield
        except DeadlineExceeded as stopped:
            # The stopped build's partial structures are still held by the exception's frames: freed while the
            # collector is still off (built with it off, they are all young, and its first pass would walk them
            # all), in the background when they are big.
            discard_frames(stopped.__traceback__)
            raise
