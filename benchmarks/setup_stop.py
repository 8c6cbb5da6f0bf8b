"""How soon a superseded setup stops: the time from a newer keystroke's stop flag to the setup giving up.

A 2,000-line class whose method builds a long table; the cursor is at the start of the table, so the right
context's window is the whole table (windowing stops at statements) and the setup takes seconds. A worker thread
runs `fimlsp.python.region.constrain` with an `earley.Deadline` that a `threading.Event` stops, as the server
does; the main thread sets the event after a delay and times (wall clock) how long the worker takes to raise
`earley.Stopped`. Delays are spread over the setup so that every stage (windowing, Earley over the right
context, quotient extraction, the left context) gets interrupted. The long single steps left on a window this
big are CPython's parses (the whole file, the rest of the class: ~9 ms each, in one C call). The Earley charts
(millions of ints, ~0.3 s to free) and what a stopped build of the window's NFA leaves (~0.1 s to free, and a
pass of the cycle collector over it) are freed in the background (`earley.reaper`).

    python benchmarks/setup_stop.py [--rows N] [--delays 5,20,...]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import threading
import time

from earley import Deadline, Stopped
from fimlsp.python.region import constrain

DELAYS_MS = (1, 5, 10, 20, 50, 100, 200, 400, 800, 1600)


def large_class(rows: int) -> tuple[str, str]:
    """(left, right) of a class with a method that fills a table of `rows` lines, the cursor at its start."""
    methods = "".join(f"    def method_{i}(self, x):\n        return x + {i}\n\n" for i in range(rows // 4))
    left = f"class Large:\n{methods}    def table(self):\n        rows = {{\n"
    right = "".join(f"            {i}: [{i}, ({i}, 'v{i}'), {{'k': {i}}}],\n" for i in range(rows)) + (
        f"        }}\n        return rows\n\n{methods}\nvalue = Large().table()\n")
    return left, right


def stop_after(left: str, right: str, delay: float) -> tuple[float, str]:
    """Run the setup in a thread, stop it after `delay` seconds: (seconds from the stop to the worker's end, how
    it ended)."""
    stop = threading.Event()
    ended: dict[str, object] = {}

    def work() -> None:
        try:
            constrain(left, right, deadline=Deadline(math.inf, stop.is_set))
            ended["how"] = "finished"
        except Stopped:
            ended["how"] = "stopped"
        ended["at"] = time.perf_counter()

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(delay)
    stopped_at = time.perf_counter()
    stop.set()
    worker.join()
    return max(0.0, ended["at"] - stopped_at), str(ended["how"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000, help="lines of the table (and half as many of methods)")
    parser.add_argument("--delays", default=",".join(map(str, DELAYS_MS)), help="ms before the stop, comma-separated")
    args = parser.parse_args()
    left, right = large_class(args.rows)
    print(f"class of {left.count(chr(10)) + right.count(chr(10)):,} lines, {len(left) + len(right):,} characters")
    started = time.perf_counter()
    constrain(left, right)
    print(f"setup without a stop: {time.perf_counter() - started:.2f} s (wall)")
    latencies = []
    for delay in (int(value) for value in args.delays.split(",")):
        latency, how = stop_after(left, right, delay / 1e3)
        print(f"stop after {delay:5d} ms: {how}, {1e3 * latency:6.2f} ms from the stop to the end")
        if how == "stopped":
            latencies.append(latency)
    if latencies:
        print(f"stopped {len(latencies)} times: median {1e3 * statistics.median(latencies):.2f} ms, "
              f"max {1e3 * max(latencies):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
