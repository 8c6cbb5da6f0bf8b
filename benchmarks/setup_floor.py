"""The setup's fixed cost on small files, next to `ast.parse` of the same file.

`fimlsp bench` reports setup as a multiple of `ast.parse`. On a file of a few hundred characters `ast.parse`
takes ~10 µs, and the multiple is set by what any setup costs whatever the context: the quotient of the grammar by
the shortest right context there is (the empty one: the file's end) and the start of a recognizer. This measures
that floor on small standard-library files (the first of 100 to 1,000 characters in path order), each cut at its
middle, in CPU time of this process:

- `ast.parse` of the file;
- the quotient for the empty right context (the floor: no right context costs less);
- the quotient for the file's own right context, and the left context fed to it.

    python -m benchmarks.setup_floor [--files 40] [--max-chars 1000] [--repeats 20]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time

from fimlsp.python.grammar import python_quotients
from fimlsp.python.quotient import RightContext
from harness.corpus import stdlib_files


def small_files(count: int, max_chars: int) -> list[str]:
    """The first `count` parsable standard-library files of 100 to `max_chars` characters, in path order."""
    return [text for _, text in stdlib_files() if 100 <= len(text) <= max_chars][:count]


def cpu_ms(work, repeats: int) -> float:
    """The median CPU milliseconds of `work()` over `repeats` runs."""
    times = []
    for _ in range(repeats):
        clock = time.process_time()
        work()
        times.append(1e3 * (time.process_time() - clock))
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--max-chars", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    python_quotients()  # the process's one-time tables, not part of any setup
    rows = []
    for text in small_files(args.files, args.max_chars):
        left, right = text[:len(text) // 2], text[len(text) // 2:]
        parse = cpu_ms(lambda: ast.parse(text), args.repeats * 20)
        empty = cpu_ms(lambda: RightContext(""), args.repeats)
        own = cpu_ms(lambda: RightContext(right), args.repeats)
        context = RightContext(right)
        feed = cpu_ms(lambda: context.start(left), args.repeats)
        rows.append((len(text), parse, empty, own, feed))
    if not rows:
        print("no small files found", file=sys.stderr)
        return 1
    median = [statistics.median(row[column] for row in rows) for column in range(5)]
    print(f"{len(rows)} standard-library files of {min(r[0] for r in rows)}-{max(r[0] for r in rows)} characters "
          f"(median {median[0]:.0f}), cut at the middle; CPU time, medians")
    print(f"ast.parse of the file:                   {median[1]:.4f} ms")
    print(f"quotient for the empty right context:    {median[2]:.3f} ms = {median[2] / median[1]:.0f}x ast.parse")
    print(f"quotient for the file's right context:   {median[3]:.3f} ms = {median[3] / median[1]:.0f}x")
    print(f"left context fed:                        {median[4]:.3f} ms = {median[4] / median[1]:.0f}x")
    print(f"setup (right + left):                    {median[3] + median[4]:.3f} ms = "
          f"{(median[3] + median[4]) / median[1]:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
