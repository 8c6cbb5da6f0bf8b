"""One-time constraint setup against file size, up to 5 MB: valid files, and files broken above or below the cursor.

Files are standard-library modules concatenated (each parses, so the whole does) and cut at a top-level `def`;
the cursor is in the middle of a `return` line half way through. For each size the script times
`fimlsp.python.region.constrain` (CPU time, compiled afresh: no cache is given) and `ast.parse` of the valid text
in the same run, and prints the promise it got: the whole file up to the size budget, the statements around the
cursor beyond it.

    python -m benchmarks.setup_vs_size [--sizes 100000,500000,...] [--budget CHARS]
"""

from __future__ import annotations

import argparse
import ast
import sys
import sysconfig
import time
from pathlib import Path

from fimlsp.python.region import DEFAULT_BUDGET, constrain
from fimlsp.python.syntax import parses

SIZES = (100_000, 250_000, 500_000, 1_000_000, 2_000_000, 3_500_000, 5_000_000)
BREAK = "x = = 1\n"  # balanced brackets: the recognizer only finds it by parsing up to it


def corpus(size: int) -> str:
    """At least `size` characters of valid Python from the standard library, ending before a top-level def."""
    pieces, total = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if parses(text):
            pieces.append(text if text.endswith("\n") else text + "\n")
            total += len(pieces[-1])
            if total > size * 1.2:
                break
    text = "".join(pieces)
    cut = text.rfind("\ndef ", 0, size)
    while not parses(text[:cut + 1]):  # that "def" was inside a string
        cut = text.rfind("\ndef ", 0, cut)
    return text[:cut + 1]


def cursor(text: str) -> int:
    return text.find("\n    return ", len(text) // 2) + 12


def broken(text: str, fraction: float) -> str:
    at = text.find("\ndef ", int(len(text) * fraction)) + 1
    return text[:at] + BREAK + text[at:]


def measure(text: str, at: int, budget: int) -> tuple[float, str]:
    clock = time.process_time()
    promise = constrain(text[:at], text[at:], budget)
    return time.process_time() - clock, promise.scope


def parse_seconds(text: str) -> float:
    clock = time.process_time()
    ast.parse(text)
    return time.process_time() - clock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    text = corpus(max(sizes))
    print(f"size budget {args.budget:,} characters; CPU seconds; ratio = setup / ast.parse of the valid file")
    print(f"{'characters':>11} {'file':>18} {'broken below':>24} {'broken above':>24}")
    for size in sizes:
        valid = corpus(size) if size < len(text) else text
        at = cursor(valid)
        parse = parse_seconds(valid)
        row = [f"{len(valid):>11,}"]
        for variant, shift in ((valid, 0), (broken(valid, 0.95), 0), (broken(valid, 0.05), len(BREAK))):
            setup, scope = measure(variant, at + shift, args.budget)
            row.append(f"{setup:6.2f}s {setup / parse:6.1f}x {scope:6}")
        print(" ".join(f"{cell:>24}" if i else cell for i, cell in enumerate(row)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
