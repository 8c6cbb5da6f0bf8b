"""No true middle that is, holds or follows a star import is refused (issue 49): every star import of the standard
library and of the held-out packages, cut across its line (its whole line, from a few places in it to its end and to
the next line's end, with up to three lines after it) and over the three lines after it, with the star imports'
names now judged (`tests/test_python_star_imports.py`)."""

from __future__ import annotations

import ast
import functools
import random
from pathlib import Path

import pytest

from fimlsp.python.flakes import undefined_places
from fimlsp.python.names import FileNames, syntax_tree
from fimlsp.python.relaxation import spelt_out
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, package_files, stdlib_files
from tests.test_python_members import HELD_OUT
from tests.test_python_star_imports import judged


@functools.lru_cache(maxsize=1)
def star_files() -> tuple[tuple[str, str], ...]:
    """(path, text) of the standard library's and the held-out packages' files with a star import."""
    files = [(str(STDLIB / name), text) for name, text in stdlib_files()]
    for name in HELD_OUT:
        files += package_files(name, 200_000)
    return tuple((path, text) for path, text in files if "*" in text and any(
        isinstance(node, ast.ImportFrom) and node.names[0].name == "*" for node in ast.walk(parsed(text))))


def _clean(path: str, text: str) -> bool:
    """Whether pyflakes finds no undefined name in the file, its star imports spelt out: where the true file loads
    a name nothing binds (ctypes' test_strings.py's disabled c_wstring), a middle that could bind it owes it, with
    or without star imports (`fimlsp.python.debt`); that the names read are all a star import brings is
    `test_the_names_read_are_those_a_star_import_brings_at_run_time`'s."""
    tree = syntax_tree(text)
    with spelt_out(tree, str(Path(path).parent), ()) as known:
        return known is False or not undefined_places(tree, text)


def _cuts(text: str, node: ast.ImportFrom, rng: random.Random):
    """(start, end) of the middles over one star import's line and the lines after it."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    first, last = node.lineno - 1, node.end_lineno - 1
    begin = starts[first]
    line_end = starts[last + 1] - (lines[last].endswith("\n"))
    indented = begin + len(lines[first]) - len(lines[first].lstrip())
    places = {begin, indented, line_end, *rng.sample(range(begin, line_end + 1), min(4, line_end + 1 - begin))}
    for place in sorted(places):
        yield place, line_end
        yield place, starts[min(last + 2, len(lines))]
    for more in (1, 3):
        yield begin, starts[min(last + 1 + more, len(lines))]
    for after in range(last + 1, min(last + 4, len(lines))):
        yield starts[after], starts[after + 1]


def _refused(files) -> tuple[list, int, int]:
    rng = random.Random(49)
    refused, count, judged_files = [], 0, 0
    for path, text in files:
        if not _clean(path, text):
            continue
        judged_files += 1
        folder = str(Path(path).parent)
        for node in ast.walk(parsed(text)):
            if isinstance(node, ast.ImportFrom) and node.names[0].name == "*":
                for start, end in _cuts(text, node, rng):
                    count += 1
                    if judged(text[:start], text[start:end], text[end:], folder) != "complete":
                        refused.append((path, text[start:end]))
    return refused, count, judged_files


def test_true_middles_over_the_held_out_packages_and_asyncio_star_imports_are_never_refused():
    files = [pair for pair in star_files() if "site-packages" in pair[0] or pair[0].endswith("asyncio/__init__.py")]
    refused, count, _files = _refused(files)
    assert count > 200 and refused == []


@pytest.mark.slow
def test_true_middles_over_every_star_import_are_never_refused():
    files = star_files()
    refused, count, judged_files = _refused(files)
    assert len(files) > 120 and judged_files >= len(files) - 3
    assert count > 2000 and refused == []


def test_the_cuts_of_a_star_import_are_judged_not_relaxed():
    """Most files with a star import are judged at all (their modules readable): the corpus tests judge."""
    files = star_files()
    judged_files = sum(FileNames.of(text, "", str(Path(path).parent)).relaxed is None for path, text in files)
    assert judged_files > len(files) // 2
