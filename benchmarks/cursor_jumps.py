"""The constraint's setup after a cursor jump in a big, valid file: what an editor user pays when the right context
changes (a jump, a paste, an undo) and the document's statement starts are known (the server's cache keeps them).

For each file, seeded cursors at the start of the code of random lines; for each, `quotient(left, right)` with a
`RightContextCache` that has parsed the document (CPU time), against one `ast.parse` of the file measured in the
same run; then the same after typing at the cursor (`EDIT`), which leaves the document unparsable. The tail is what matters: cursors in docstrings, at the `except` of a long `try` or the `else` of a long
`if` chain, in a class of a thousand lines.

    python benchmarks/cursor_jumps.py [--jumps N] [--seed S] [FILE ...]   (default: five big standard-library files)
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import sys
import sysconfig
import time
from pathlib import Path

from fimlsp.lines import split_lines
from fimlsp.python.context_cache import RightContextCache
from fimlsp.python.grammar import python_quotients
from fimlsp.python.quotient import quotient

# What the user types at the cursor after the jump: the document no longer parses, and is not parsed again when
# the cache knows the version before the edit (`StatementStarts.edited`).
EDIT = "x = ("
FILES = ("tkinter/__init__.py", "argparse.py", "turtle.py", "email/_header_value_parser.py", "pydoc.py")


def jumps(text: str, count: int, rng: random.Random) -> list[int]:
    """Offsets of the code of `count` random lines that hold code."""
    starts, offset = [], 0
    for line in split_lines(text):
        code = len(line) - len(line.lstrip(" \t\f"))
        if line.strip():
            starts.append(offset + code)
        offset += len(line)
    return [rng.choice(starts) for _ in range(count)]


def _timed(work, *args, **keywords) -> float:
    """CPU seconds of one call."""
    clock = time.process_time()
    work(*args, **keywords)
    return time.process_time() - clock


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--jumps", type=int, default=60, help="cursors per file (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = args.files or [stdlib / name for name in FILES]
    python_quotients()
    everything: dict[str, list[float]] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        parse_ms = 1e3 * min(_timed(ast.parse, text) for _ in range(3))
        cache = RightContextCache()
        cache.statement_starts(text)
        setups, edited = [], []
        for cursor in jumps(text, args.jumps, random.Random(f"{args.seed}:{path.name}")):
            setups.append(1e3 * _timed(quotient, text[:cursor], text[cursor:], cache=cache))
            typed = text[:cursor] + EDIT + text[cursor:]
            edited.append(1e3 * _timed(quotient, typed[:cursor + len(EDIT)], typed[cursor + len(EDIT):], cache=cache))
            cache.statement_starts(text)  # back to the file as it is, for the next jump
        name = path.relative_to(stdlib) if path.is_relative_to(stdlib) else path
        print(f"{str(name):31} {len(text):>8,} chars, ast.parse {parse_ms:5.1f} ms")
        for label, times in (("jump", setups), ("jump, then an edit", edited)):
            times.sort()
            everything.setdefault(label, []).extend(time / parse_ms for time in times)
            print(f"  {label:20} median {statistics.median(times):6.1f} ms, p90 {times[int(0.9 * len(times))]:6.1f} "
                  f"ms, max {times[-1]:6.1f} ms")
    for label, ratios in everything.items():
        ratios.sort()
        print(f"{label}: setup as a multiple of the file's ast.parse: median {statistics.median(ratios):.2f}x, p90 "
              f"{ratios[int(0.9 * len(ratios))]:.2f}x, max {ratios[-1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
