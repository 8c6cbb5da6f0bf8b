"""Windowing inside blocks leaves the quotient exactly as it was: the windowed recognizer against the whole one.

`RightContext(right, window=False)` reads both contexts whole; the windowed one feeds the headers of the blocks
around the cursor and the cursor's statement, and stops the right context at a stand-in. For every middle fed
character by character, both must agree on being alive, on the terminals allowed next, on quotient membership
and on `complete`.
"""

from __future__ import annotations

import bisect
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fimlsp.python import window
from fimlsp.python.facts import STATEMENT_LINE
from fimlsp.python.quotient import RightContext
from fimlsp.python.right_context import _window_tokens
from fimlsp.python.right_tokens import Scanner
from fimlsp.python.right_window import StandaloneCache
from fimlsp.python.syntax import parses
from fimlsp.python.window import left_window, module_statement_starts
from tests.oracles import compilable
from tests.test_fuzz import fuzz, valid_modules

SIMPLE = [
    "x = 1", "y = f(a,\n  b)", "return x", "pass", "s = '''doc\nat column 0\n'''", "z = [\n1,\n]",
    "t = 1 + \\\n  2", "@d\ndef g(): pass", "class K: pass", "yield", "del a", "print(x)  # (",
]
HEADERS = [
    "if x:", "while x:", "for i in y:", "def f(a, b=1):", "class C(B):", "with a as b:", "async def g():",
    "@dec\ndef h(self):", "@dec(\n    1)\nclass D:", "try:", "match p:", "def f(\n    a,\n):",
]
CLAUSES = {"if x:": ["elif y:", "else:"], "while x:": ["else:"], "for i in y:": ["else:"],
           "try:": ["except E:", "except:", "else:", "finally:"]}


def _block(children):
    return st.tuples(st.sampled_from(HEADERS), st.lists(children, min_size=1, max_size=3),
                     st.lists(st.lists(children, min_size=1, max_size=2), max_size=2)).map(_compound)


def _compound(parts):
    header, body, clauses = parts
    if header == "match p:":
        cases = [body, *clauses]
        return [(0, header)] + [line for index, case in enumerate(cases)
                                for line in [(1, f"case {index}:")] + _indented(case, 2)]
    lines = [(0, line) for line in header.split("\n")] + _indented(body, 1)
    words = CLAUSES.get(header, [])
    if header == "try:" and not clauses:
        clauses = [body]
    for word, clause in zip(words if header != "try:" else ["except E:", "finally:"], clauses):
        lines += [(0, word)] + _indented(clause, 1)
    return lines


def _indented(statements, depth):
    return [(depth + inner, line) for statement in statements for inner, line in statement]


STATEMENTS = st.recursive(st.sampled_from(SIMPLE).map(lambda text: [(0, text)]), _block, max_leaves=10)


@st.composite
def nested_modules(draw) -> str:
    """Modules of nested classes, functions and clauses, with decorators, `match`, multi-line brackets and
    strings whose lines are less indented than their statement."""
    unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    lines = []
    for statement in draw(st.lists(STATEMENTS, min_size=1, max_size=3)):
        for depth, text in compilable(statement):
            first, *rest = text.split("\n")
            lines.append(unit * depth + first)
            lines += [unit * depth + line if not line.startswith(("1", "at")) else line for line in rest]
            if draw(st.integers(0, 6)) == 0:
                lines.append(draw(st.sampled_from(["", "# note", unit * (depth + 1) + "# deeper"])))
    return "\n".join(lines) + "\n"


MIDDLES = st.lists(st.sampled_from([
    "x", "1", " ", "\n", "    ", "  ", "\t", "(", ")", ":", "=", "else:", "elif y:", "except:", "finally:",
    "@d\n", "def f():", "class C:", "pass", "return", "'", '"""', "#", "\\\n", "case 1:", "async ", "with a:",
]), max_size=6).map("".join)


def assert_same_quotient(left: str, middle: str, right: str) -> None:
    """The windowed recognizer, and when `left + right` parses the one windowed with its statement starts (a
    cursor that jumped), agree with the whole one on every prefix of `middle`."""
    whole = RightContext(right, window=False).start(left)
    windowed = [RightContext(right).start(left)]
    starts = module_statement_starts(left + right)
    if starts:
        split = bisect.bisect_right(starts, len(left))
        right_starts = [start - len(left) for start in starts[split:]]
        windowed.append(RightContext(right, statement_starts=right_starts).start(left, None, starts[:split]))
    for index in range(len(middle) + 1):
        where = (left, middle[:index], right)
        if whole is None:
            assert all(state is None for state in windowed), where
            return
        assert all(state is not None for state in windowed), where
        assert all(_next_terminals(state) == _next_terminals(whole) for state in windowed), where
        assert all(state.complete == whole.complete for state in windowed), where
        if index < len(middle):
            whole, windowed = whole.feed(middle[index]), [state.feed(middle[index]) for state in windowed]


def _next_terminals(state) -> frozenset[str]:
    """The terminals the parser allows next that the token in progress can still become (all it allows when
    none is in progress): while the first token of the cursor's line is in progress, the whole recognizer has
    seen the statements before it and the windowed one has not, which only changes terminals no text gives."""
    pending = state.lexer.possible_terminals()
    allowed = state.parser.allowed()
    return allowed if pending is None else allowed & pending


@fuzz(120)
@given(st.one_of(nested_modules(), valid_modules()), st.data())
def test_windows_leave_the_quotient_unchanged(text, data):
    assert parses(text), text
    start = data.draw(st.integers(0, len(text)), label="start")
    end = data.draw(st.one_of(st.just(start), st.integers(start, min(len(text), start + 40))), label="end")
    middle = data.draw(st.one_of(st.just(text[start:end]), MIDDLES), label="middle")
    assert_same_quotient(text[:start], middle, text[end:])


def test_the_left_window_keeps_one_header_per_level():
    left = ("import os\nclass A:\n    x = 1\n    def f(self):\n        return 1\n\n    @dec\n"
            "    def g(self, a,\n          b):\n        if a:\n            pass\n        else:\n"
            "            y = 2\n            for i in b:\n                z = 3\n                q = ")
    headers, cut = left_window(left)
    assert headers == ("class A:\n    @dec\n    def g(self, a,\n          b):\n        if a:\n            pass\n"
                       "        else:\n            for i in b:\n")
    assert left[cut:] == "                q = "


def test_the_left_window_writes_earlier_clauses_as_pass_and_skips_continuations():
    left = "try:\n    a\nexcept E:\n    b = 1\n    c = 2\n    d"
    headers, cut = left_window(left)
    assert (headers, left[cut:]) == ("try:\n    pass\nexcept E:\n", "    d")
    left = ("if a:\n    x = 1\n    y = (2,\n 3)\n\n# note\nelif b: z = 3\nelif c:\n    @d\n    def g(): pass\n"
            "else:\n    w = 5\n    r")
    headers, cut = left_window(left)
    expected = "if a:\n    pass\n\n# note\nelif b: z = 3\nelif c:\n    @d\n    def g(): pass\nelse:\n"
    assert (headers, left[cut:]) == (expected, "    r")
    left = "if x:\n    y = 1\n    if z:\n        pass\n    el"  # `el` may become `else`, the `if z`'s
    headers, cut = left_window(left)
    assert (headers, left[cut:]) == ("if x:\n    if z:\n", "        pass\n    el")
    assert left_window("x = (1,\n   2,\n   3") == ("", 0)


def test_the_left_window_cuts_inside_a_try_body_that_the_right_context_closes():
    """A `try` body cannot end a file, so the probe that proves a cut inside one ends it with `finally: pass`: a
    cursor at the `except` of a long `try` body costs its last statement, not the whole body."""
    body = "".join(f"                a{index} = {index}\n" for index in range(200))
    left = f"def f():\n    for x in y:\n        try:\n            with c:\n{body}                b = 1\n        "
    headers, cut = left_window(left)
    assert (headers, left[cut:]) == ("def f():\n    for x in y:\n        try:\n            with c:\n",
                                     "                b = 1\n        ")
    right = "except E:\n            pass\n"
    assert_same_quotient(left, "", right)
    assert_same_quotient(left, "    c = 2\n        ", right)


def test_a_line_that_begins_with_a_continuation_is_no_cut():
    """`\\` at a line's start joins it to the next line, inside the function: a cut there, proved by a `pass` in
    the line's place at column 0, fed the cursor's statement as one of the module's and refused the file (found
    by the edit property in `test_python_quotient`, in `colorsys.py`)."""
    left, right = "def f(a):\n    b = a\n\\\n", "    if b:\n        return 0\n    return b\n"
    assert parses(left + right)
    assert left_window(left) == ("def f(a):\n", left.index("    b"))
    assert_same_quotient(left, "", right)


def test_the_right_context_stops_at_one_line_per_level():
    right = ("x)\n        y = 2\n        if y:\n            z = 3\n    def g(self):\n        pass\n\n"
             "    @property\n    def h(self): return 1\nclass B:\n    pass\n")
    window, text, _ = _window_tokens(Scanner(right), 0, StandaloneCache(right))
    assert text == "x)\n        pass\n    pass\npass\n"
    assert [token.terminal for token in window] == ["NAME", ")", "pass", "pass", "pass"]


def test_no_stand_in_before_a_clause_of_an_enclosing_statement():
    right = "x\n        y = 2\n    else:\n        z = 3\nw = 1\n"
    window, text, _ = _window_tokens(Scanner(right), 0, StandaloneCache(right))
    assert text == "x\n        y = 2\n    else:\n        pass\npass\n"


def test_a_definition_stands_in_for_a_definition():
    """A decorator the middle ends with may decorate the statement after the cut: the stand-in keeps that."""
    right = "\n    def g(self):\n        pass\nx = 1\n"
    window, text, _ = _window_tokens(Scanner(right), 0, StandaloneCache(right))
    assert text == "\n    class _: pass\npass\n"
    assert_same_quotient("class A:\n    ", "@d", right)


_LINES = st.lists(st.tuples(st.sampled_from(["", " ", "   ", "\t", "\f "]), st.sampled_from(["x", "#", ")", "\\", ""]),
                           st.sampled_from(["\n", "\r", "\r\n", ""])).map("".join), max_size=8).map("".join)


@given(_LINES, st.integers(1, 6))
def test_candidate_lines_scanned_in_chunks_from_the_end_are_those_of_one_scan(left, chunk):
    """The left window's candidate lines, found a chunk at a time from the end (lines of any length, `\\r` and
    `\\r\\n` breaks), are the lines one scan of the whole text finds, from the last up."""
    everything = [(match.start(), match.end()) for match in STATEMENT_LINE.finditer(left) if match.start()]
    with patch.object(window, "_CHUNK", chunk):
        assert list(window._candidates_backwards(left)) == everything[::-1]


@pytest.mark.parametrize("left, first_line", [
    ("import os\n\nresult = call(\n    first,\n    second,  # (\n\n    thi", "result"),
    ("import os\n\nclass K:\n    @property\n    def na", "    @property"),
])
def test_lines_that_continue_the_line_above_are_not_probed(left, first_line):
    """A cursor in the arguments of a call written over several lines, or in a decorated definition: the lines
    after a comma, an opening bracket or a decorator are passed over without a parse, and the one probe proves
    the line the statement starts on."""
    probes = []
    real_probe = window._probe
    with patch.object(window, "_probe", lambda *args: probes.append(args[2]) or real_probe(*args)):
        _, cut = left_window(left)
    assert probes == [cut] == [left.index(first_line)]
