"""A header the middle rewrites must still fit the file's calls of it (`fimlsp.python.callers`): refused where a
call of the rest of the file no longer fits, never where which function a call reaches is not certain, and no true
middle of a real file's function headers is refused."""

from __future__ import annotations

import ast
import random
import warnings

import pytest

from fimlsp.python.callers import broken_callers
from fimlsp.python.quotient import quotient
from fimlsp.python.signatures import SignatureSource
from fimlsp.syntax_trees import parsed
from harness.corpus import package_files, stdlib_files
from tests.test_python_members import HELD_OUT

# uvicorn's h11_impl.py, cut down around the held-out cut: the shipped model gave the warning a parameter `msg`
H11 = '''class H11Protocol:
    def _unsupported_upgrade_warning(self@@ -> None:
        self.logger.warning("Unsupported upgrade request.")

    def handle_events(self) -> None:
        if self.upgrade:
            self._unsupported_upgrade_warning()
'''


def _broken(source: str, middle: str) -> frozenset[str]:
    left, right = source.split("@@")
    return broken_callers(left + middle + right, len(left), len(left) + len(middle))


def test_a_header_that_no_longer_fits_the_files_calls_is_refused():
    assert _broken(H11, ", msg: str)") == {"_unsupported_upgrade_warning"}
    assert _broken(H11, ")") == frozenset()
    assert _broken(H11, ", msg: str = '')") == frozenset()  # a default keeps the call fitting
    assert _broken(H11, ", *args)") == frozenset()


@pytest.mark.parametrize("source, middle", [
    # a module function, a keyword the call passes that the new header does not name
    ("def fetch(url@@:\n    return url\n\n\nfetch(url='x')\n", ", /)"),
    # a staticmethod: no first parameter to leave out
    ("class A:\n    @staticmethod\n    def make(@@):\n        pass\n\n    def run(self):\n        self.make(1)\n", ""),
    # a classmethod, called through self
    ("class A:\n    @classmethod\n    def make(cls@@):\n        pass\n\n    def run(self):\n        self.make(1, 2)\n",
     ", x"),
])
def test_calls_through_the_name_or_self_are_judged(source, middle):
    assert _broken(source, middle)


@pytest.mark.parametrize("source", [
    "import functools\n\n\n@functools.cache\ndef fetch(@@):\n    pass\n\n\nfetch(1)\n",  # a decorator may change it
    "def fetch(@@):\n    pass\n\n\nfetch = print\nfetch(1)\n",  # bound twice: which one a call reaches is not certain
    "class A:\n    def run(self@@):\n        pass\n\n\nclass B:\n    def run(self, x):\n        pass\n\n    "
    "def go(self):\n        self.run(1)\n",  # another class's method of the name
    "def fetch(@@):\n    pass\n\n\nfetch(*[1])\n",  # unpacked: fits whatever it unpacks to
    "class A:\n    def run(self@@):\n        pass\n\n    def go(self):\n        other = A()\n        other.run(1)\n",
])
def test_calls_that_may_reach_something_else_are_not_judged(source):
    assert _broken(source, ")") == frozenset()


def test_the_call_judges_end_refuses_the_middle_and_accepts_the_true_one():
    left, right = H11.split("@@")
    state = quotient(left, right).judging_calls(SignatureSource(left, right))
    assert state.feed(")").complete
    assert not state.feed(", msg: str)").complete


def _headers(text: str, tree: ast.Module):
    """(start, end) of each function header of `text`: from `def` (or `async`) to its body."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + len(lines[line - 1].encode()[:column].decode("utf-8", "replace"))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield offset(node.lineno, node.col_offset), offset(node.body[0].lineno, node.body[0].col_offset)


@pytest.mark.slow
def test_no_true_header_of_the_standard_library_or_the_held_out_packages_is_refused():
    """Every function header of the held-out packages and of a tenth of the standard library's files as the
    middle, whole and cut at a random place on either side (about 20,000 cuts)."""
    files = list(stdlib_files())[::10] + [each for name in HELD_OUT for each in package_files(name, 10**9)]
    draw, judged, refused = random.Random(49), 0, []
    for path, text in files:
        if "\r" in text:
            continue  # (the sweep's offsets count lines by `\n` alone)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parsed(text)
        for start, end in _headers(text, tree):
            for cut in ((start, end), (draw.randint(start, end), end), (start, draw.randint(start, end))):
                judged += 1
                if broken_callers(text, *cut, tree):
                    refused.append(f"{path}:{text.count(chr(10), 0, start) + 1}")
    assert refused == [] and judged > 15_000
