"""The standard library of the running Python as a corpus: its files that CPython compiles, cursors in a few of
them, cursors at fresh lines of any files, and mutations of a middle. Deterministic for a seed; the tests' samples and the benchmarks' runs take the
same files."""

from __future__ import annotations

import functools
import importlib.util
import random
import sysconfig
from pathlib import Path

from fimlsp.python.syntax import compiles

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MAX_FILE_BYTES = 100_000
CURSOR_FILES = ("textwrap.py", "shlex.py", "fnmatch.py", "colorsys.py", "bisect.py", "glob.py")


@functools.lru_cache(maxsize=1)
def stdlib_files() -> tuple[tuple[str, str], ...]:
    """(path relative to the standard library, text) of its modules of at most `MAX_FILE_BYTES` that decode as
    UTF-8 and compile, site-packages left out, in path order."""
    files = []
    for path in sorted(STDLIB.rglob("*.py")):
        relative = path.relative_to(STDLIB).as_posix()
        if "site-packages" in relative or path.stat().st_size > MAX_FILE_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if compiles(text):
            files.append((relative, text))
    return tuple(files)


@functools.lru_cache(maxsize=None)
def package_files(name: str, max_chars: int = 30_000) -> tuple[tuple[str, str], ...]:
    """(path, text) of the installed package `name`'s files under `max_chars` characters that CPython compiles, in
    path order; none where it is not installed (a held-out corpus: packages the shipped model never saw)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return ()
    found = []
    for path in sorted(Path(spec.origin).parent.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(text) < max_chars and compiles(text):
            found.append((str(path), text))
    return tuple(found)


def stdlib_text(relative: str) -> str:
    """The text of the standard library's module at `relative` (`"textwrap.py"`, `"json/decoder.py"`)."""
    return (STDLIB / relative).read_text(encoding="utf-8")


def mutate(middle: str, rng: random.Random) -> str:
    kind = rng.choice(["delete", "insert", "replace", "drop_closer", "add_closer", "indent"])
    position = rng.randrange(len(middle) + 1)
    if kind == "delete" and middle:
        position = min(position, len(middle) - 1)
        return middle[:position] + middle[position + 1:]
    if kind == "insert":
        return middle[:position] + rng.choice("()[]{}:,.'\"\n =+#\\ab1") + middle[position:]
    if kind == "replace" and middle:
        position = min(position, len(middle) - 1)
        return middle[:position] + rng.choice("()[]{}:,.'\"\n =+ab1") + middle[position + 1:]
    if kind == "drop_closer":
        closers = [i for i, c in enumerate(middle) if c in ")]}"]
        if closers:
            i = rng.choice(closers)
            return middle[:i] + middle[i + 1:]
    if kind == "add_closer":
        return middle[:position] + rng.choice(")]}") + middle[position:]
    if kind == "indent":
        lines = middle.split("\n")
        if len(lines) > 1:
            i = rng.randrange(1, len(lines))
            lines[i] = (" " * rng.choice([1, 2, 4])) + lines[i] if rng.random() < 0.5 else lines[i][1:]
            return "\n".join(lines)
    return middle + rng.choice(")]}:")


def stdlib_cuts(count: int, seed: int = 0) -> list[tuple[Path, int, int]]:
    """(file, line, column) cursors after `return ` or `= ` in lines of CPython's standard library (1-based)."""
    chooser = random.Random(seed)
    cuts = []
    for index in range(count):
        path = STDLIB / CURSOR_FILES[index % len(CURSOR_FILES)]
        lines = path.read_text(encoding="utf-8").splitlines()
        candidates = [(number, line) for number, line in enumerate(lines, 1)
                      if line.strip().startswith("return ") or (" = " in line and not line.strip().startswith("#"))]
        number, line = chooser.choice(candidates)
        marker = "return " if line.strip().startswith("return ") else " = "
        cuts.append((path, number, line.index(marker) + len(marker) + 1))
    return cuts


def fresh_lines(files: list[Path], count: int, seed: int):
    """(left, right, code) at `count` code lines of `files`: the cursor after the line's indentation."""
    rng = random.Random(seed)
    found = 0
    while found < count:
        lines = rng.choice(files).read_text(encoding="utf-8").splitlines(keepends=True)
        candidates = [index for index, line in enumerate(lines) if line.startswith("    ")
                      and 8 < len(line.strip()) < 70 and not line.strip().startswith(("#", '"', "'"))]
        if not candidates:
            continue
        index = rng.choice(candidates)
        line = lines[index]
        indentation = line[:len(line) - len(line.lstrip())]
        yield "".join(lines[:index]) + indentation, "\n" + "".join(lines[index + 1:]), line.strip()
        found += 1


def split(path: Path, line: int, column: int) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    offset = sum(len(each) for each in lines[:line - 1]) + column - 1
    return text[:offset], text[offset:]
