"""Freeing big, short-lived structures off the caller's path.

A big parse's charts are millions of small sets, lists and ints. Dropping the last reference to them frees them
in one cascade of C calls that holds the interpreter for as long (a quarter of a second for three million
items), and no deadline or stop flag can interrupt it: a setup stopped by a newer keystroke would keep its
successor waiting, and a finished one would pay for it inside its time budget. So they are handed to a
background thread that frees them a step at a time (a few charts, a fraction of a millisecond; a big container
inside is taken apart the same way) and lets other threads run between two steps: the work that follows goes on
almost at full speed, and the freeing takes the time that it leaves. What a build stopped by its deadline leaves
in the exception's frames goes the same way (`discard_frames`). Until they are freed, they are also kept out of
the cycle collector's passes (`gc.freeze`), which would otherwise walk them all, again and again, in the work
that follows: charts are built with the collector off, so they are all in its youngest generation.
"""

from __future__ import annotations

import gc
import queue
import sys
import threading
import time

# Elements freed in one step (well under a millisecond); steps are taken for `_BUSY` seconds, then the reaper
# pauses for `_PAUSE` seconds.
_SLICE = 16
_BUSY = 0.0005
_PAUSE = 0.0005
# A container found among what is freed that holds more elements than this is emptied a step at a time too,
# rather than freed at once (a 36,000-entry dict takes milliseconds to free).
_BIG = 1024
_CONTAINERS = (list, dict, set)
# Elements of what a stopped build left above which it is freed in the background (a few milliseconds' worth).
_FREED_IN_THE_BACKGROUND = 50_000
# References to an element that only the reaper holds: its own name for it, and `sys.getrefcount`'s argument.
_ONLY_HERE = 2

_queue: queue.SimpleQueue = queue.SimpleQueue()
_started = threading.Lock()
_thread: threading.Thread | None = None


def discard(*containers: list | dict | set) -> None:
    """Free the containers and what they hold in the background. They are emptied there, so the caller must not
    use them again; what they hold that is also held elsewhere is left as it is."""
    global _thread
    with _started:
        if _thread is None:
            _thread = threading.Thread(target=_reap, name="earley-reaper", daemon=True)
            _thread.start()
    gc.freeze()
    _queue.put(list(containers))


def discard_frames(traceback) -> None:
    """Free what the finished frames of `traceback` hold: work stopped by its deadline leaves its partial
    structures there, to be freed wherever the exception is handled, after the collector has walked them. The
    frames are cleared (one still running, the caller's, is left as it is); what they held is freed here when it
    is small, and in the background when it is big (a thousand-line literal's window: 0.1 s to free at once).
    Call it with the collector off: the background's `gc.freeze` moves every object to the oldest generation once
    freed, which the next full collection walks, so it is kept for what is worth it."""
    held: list = []
    while traceback is not None:
        frame = traceback.tb_frame
        values = list(frame.f_locals.values())
        try:
            frame.clear()
        except RuntimeError:
            pass
        else:
            held.extend(values)
        traceback = traceback.tb_next
    if _size(held) > _FREED_IN_THE_BACKGROUND:
        discard(held)


def _size(values: list) -> int:
    """The elements of the containers among `values` and among their objects' attributes (one level down)."""
    size = 0
    for value in values:
        for inner in (value,) if isinstance(value, _CONTAINERS) else getattr(value, "__dict__", {}).values():
            if isinstance(inner, _CONTAINERS):
                size += len(inner)
    return size


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
        while work:
            until = time.perf_counter() + _BUSY
            while work and time.perf_counter() < until:
                _free_a_step(work)
            # A real pause, not `sleep(0)`: a thread that gives up the interpreter and asks for it back at
            # once wins it back before a waiting thread wakes up, and would starve it.
            time.sleep(_PAUSE)


def _free_a_step(pending: list) -> None:
    """Free up to `_SLICE` elements of the last container of `pending`, which is dropped once empty. A big
    container among them that nothing else holds, or the attributes of an object that holds one, is put on
    `pending` to be emptied a step at a time in its turn."""
    container = pending[-1]
    for _ in range(_SLICE):
        if not container:
            pending.pop()
            return
        element = container.popitem()[1] if isinstance(container, dict) else container.pop()
        if sys.getrefcount(element) > _ONLY_HERE:
            continue
        if isinstance(element, _CONTAINERS):
            if len(element) > _BIG:
                pending.append(element)
        else:
            attributes = getattr(element, "__dict__", None)
            if attributes is not None and any(
                    isinstance(value, _CONTAINERS) and len(value) > _BIG for value in attributes.values()):
                pending.append(attributes)
