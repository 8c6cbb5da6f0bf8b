"""The name judge's debt at an end, before and after `fimlsp.python.debt` (issue 49): what it refuses and what it keeps.

Two counts, on the same cuts (random spans, whole lines, statements):
- refusals: standard-library files in which pyflakes reports undefined names (the true file loads a name nothing
  binds); a true middle refused by the end's check, unless it is itself the only place that loads one of those
  names unbound (that is the judge's purpose), is a false refusal: strict names then show nothing;
- debt kept: standard-library files without undefined names and held-out packages' files; the true middle with
  every name it writes renamed (so it binds none of what it bound) must leave names unbound that the true middle
  bound: the cuts and names the end's check demands of it, with the old rule (only loads in the left context's
  whole lines excused) and the new one.

    python benchmarks/names_debt.py [--cuts N] [--seed S]
"""

from __future__ import annotations

import argparse
import ast
import keyword
import random
import re
import sys
import time
from bisect import bisect_right
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fimlsp.python.names import FileNames, undefined_loads  # noqa: E402
from fimlsp.python.syntax import compiles  # noqa: E402
from harness.corpus import package_files, stdlib_files  # noqa: E402

HELD_OUT = ("fastapi", "starlette", "uvicorn", "pyflakes", "diskcache", "gguf")
MAX_CHARS = 30_000
_WORD = re.compile(r"(?<![.\w])(?!\d)\w+")
FRESH = "_qq"


def cuts(text: str, rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Up to `count` cuts of `text`: single lines, statements (whole lines) and random spans of up to 100
    characters, drawn evenly."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    lines = [(starts[i], starts[i + 1]) for i in range(len(starts) - 1)]
    statements = sorted({(starts[node.lineno - 1], starts[node.end_lineno]) for node in ast.walk(ast.parse(text))
                         if isinstance(node, ast.stmt)})
    spans = []
    for _ in range(count):
        start = rng.randrange(max(1, int(len(text) * 0.9)))
        spans.append((start, min(start + min(100, len(text) // 5), len(text))))
    chosen = set()
    for kind in (lines, statements, spans):
        chosen.update(rng.sample(kind, min(len(kind), count // 3 + 1)))
    return sorted((start, end) for start, end in chosen if text[start:end].strip())


def old_unbound(left: str, text: str) -> frozenset[str]:
    """The end's check before `fimlsp.python.debt`: every undefined name but those loaded in the left context's
    whole lines."""
    found = undefined_loads(text) or []
    left_lines = left.count("\n")
    excused = {name for name, line in found if line <= left_lines}
    return frozenset(name for name, _line in found if name not in excused)


def new_unbound(left: str, right: str, text: str) -> frozenset[str]:
    return FileNames.of(left, right).unbound(text)


def refusals(files, seed: int, count: int) -> tuple[int, int, int, list]:
    """Cuts judged, true middles the old and the new check refuse, and the new refusals."""
    judged = old = new = 0
    refused = []
    for name, text in files:
        undefined = undefined_loads(text) or []
        lines_of = text.splitlines(keepends=True)
        line_starts = [0]
        for line in lines_of:
            line_starts.append(line_starts[-1] + len(line))
        for start, end in cuts(text, random.Random(f"{seed}:{name}"), count):
            left, middle, right = text[:start], text[start:end], text[end:]
            file = FileNames.of(left, right)
            if file.relaxed is not None:
                continue
            first, last = _line_at(line_starts, start), _line_at(line_starts, max(start, end - 1))
            inside = {n for n, line in undefined if first <= line <= last}
            outside = {n for n, line in undefined if not first <= line <= last}
            by_design = inside - outside  # the middle alone loads them unbound: the judge refuses it on purpose
            judged += 1
            old += bool(old_unbound(left, text) - by_design)
            found = new_unbound(left, right, text) - by_design
            if found:
                new += 1
                refused.append((name, start, end, sorted(found), middle[:50]))
    return judged, old, new, refused


def _line_at(starts: list[int], position: int) -> int:
    """The 1-based line of `position`, `starts` being the lines' offsets and the text's end."""
    return min(bisect_right(starts, position), len(starts) - 1)


def debt_kept(files, seed: int, count: int) -> tuple[int, int, int, int, int]:
    """Cuts judged, and the cuts and names the old and the new check demand of the true middle renamed."""
    judged = old_cuts = new_cuts = old_names = new_names = 0
    for name, text in files:
        for start, end in cuts(text, random.Random(f"{seed}:{name}"), count):
            left, middle, right = text[:start], text[start:end], text[end:]
            renamed = _WORD.sub(lambda word: word.group() if keyword.iskeyword(word.group()) else word.group() + FRESH,
                                middle)
            other = left + renamed + right
            if renamed == middle or not compiles(other):
                continue
            file = FileNames.of(left, right)
            if file.relaxed is not None:
                continue
            judged += 1
            before = {n for n in old_unbound(left, other) - old_unbound(left, text) if FRESH not in n}
            after = {n for n in new_unbound(left, right, other) - new_unbound(left, right, text) if FRESH not in n}
            old_cuts += bool(before)
            new_cuts += bool(after)
            old_names += len(before)
            new_names += len(after)
    return judged, old_cuts, new_cuts, old_names, new_names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", type=int, default=60, help="cuts per file")
    parser.add_argument("--seed", type=int, default=49)
    args = parser.parse_args()
    started = time.perf_counter()
    stdlib = [(name, text) for name, text in stdlib_files() if len(text) <= MAX_CHARS]
    with_undefined = [(name, text) for name, text in stdlib if undefined_loads(text)]
    judged, old, new, refused = refusals(with_undefined, args.seed, args.cuts)
    print(f"standard-library files with undefined names: {len(with_undefined)}; cuts judged {judged}")
    print(f"  true middles refused at the end: {old} before, {new} after")
    for name, start, end, names, middle in refused[:40]:
        print(f"    {name} [{start}:{end}] {names} {middle!r}")
    rng = random.Random(args.seed)
    clean = [(name, text) for name, text in stdlib if undefined_loads(text) == []]
    clean = rng.sample(clean, min(len(clean), 60))
    held_out = [(path, text) for package in HELD_OUT for path, text in package_files(package)]
    for label, files in (("standard library, no undefined names", clean), ("held-out packages", held_out)):
        judged, old_cuts, new_cuts, old_names, new_names = debt_kept(files, args.seed, args.cuts // 3)
        print(f"debt on the renamed true middle, {label} ({len(files)} files, {judged} cuts): "
              f"cuts owing {old_cuts} before, {new_cuts} after; names {old_names} before, {new_names} after")
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
