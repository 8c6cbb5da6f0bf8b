"""Freeing big, short-lived structures off the caller's path.

A big parse's charts are millions of small sets, lists and ints. Dropping the last reference to them frees them
in one cascade of C calls that holds the interpreter for as long (a quarter of a second for three million
items), and no deadline or stop flag can interrupt it: a setup stopped by a newer keystroke would keep its
successor waiting, and a finished one would pay for it inside its time budget. So they are handed to a
background thread that frees them a slice at a time (a few charts, a fraction of a millisecond) and lets other
threads run between two slices: the work that follows goes on almost at full speed, and the freeing takes
the time that it leaves. Until they are freed, they are also kept out of the cycle collector's passes
(`gc.freeze`), which would otherwise walk them all, again and again, in the work that follows: charts are
built with the collector off, so they are all in its youngest generation.
"""

from __future__ import annotations

import gc
import queue
import threading
import time

# Charts freed in one slice (well under a millisecond); slices are freed for `_BUSY` seconds, then the reaper
# pauses for `_PAUSE` seconds.
_SLICE = 16
_BUSY = 0.0005
_PAUSE = 0.0005

_queue: queue.SimpleQueue = queue.SimpleQueue()
_started = threading.Lock()
_thread: threading.Thread | None = None


def discard(*charts: list) -> None:
    """Free the lists `charts` and what they hold in the background. They are emptied there, so the caller must
    not use them again."""
    global _thread
    with _started:
        if _thread is None:
            _thread = threading.Thread(target=_reap, name="earley-reaper", daemon=True)
            _thread.start()
    gc.freeze()
    _queue.put(charts)


def wait_until_freed() -> None:
    """Return once everything discarded so far is freed."""
    done = threading.Event()
    _queue.put(done)
    if _thread is not None:
        done.wait()


def _reap() -> None:
    while True:
        if _queue.empty():
            gc.unfreeze()  # what was frozen with the charts goes to the oldest generation
        work = _queue.get()
        if isinstance(work, threading.Event):
            work.set()
            continue
        for charts in work:
            while charts:
                until = time.perf_counter() + _BUSY
                while charts and time.perf_counter() < until:
                    del charts[-_SLICE:]
                # A real pause, not `sleep(0)`: a thread that gives up the interpreter and asks for it back at
                # once wins it back before a waiting thread wakes up, and would starve it.
                time.sleep(_PAUSE)
