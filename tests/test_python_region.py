"""`constrain`: the promise narrows to the statements around the cursor when the file is broken elsewhere or too
big, and holds: whatever completes under it parses once the rest of the file is valid."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from earley import DeadlineExceeded
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.broken_elsewhere import evaluate, is_statement_boundary
from harness.corpus import STDLIB
from fimlsp.python.lexer import INITIAL, advance
from fimlsp.python import region
from fimlsp.python import context_cache
from fimlsp.python.context_cache import RightContextCache
from fimlsp.python.quotient import RightContext
from fimlsp.python.region import FILE, NONE, REGION, constrain
from fimlsp.python.statement_ends import statement_ends
from fimlsp.python.syntax import parses
from fimlsp.python.window import start_between_statements, statement_starts


def test_statement_starts_skip_continuations_closers_and_decorated_lines():
    left = "import os\n\n@dec\n@dec2(\n  1)\ndef f():\n    x = 1\nelse:\n  pass\n)\nclass A:\n    de"
    assert statement_starts(left, 5) == [left.index("class"), left.index("@dec\n"), 0]
    assert statement_starts(left.replace("\n", "\r\n"), 1) == [left.replace("\n", "\r\n").index("class")]
    assert statement_starts(left.replace("\n", "\r"), 1) == [left.index("class")]


def test_a_cursor_after_the_last_line_of_code_may_start_a_region_of_its_own():
    left = "import os\nclass A:\n    x = (\n\n# TODO: fix"
    blank = left.index("\n\n") + 1
    assert start_between_statements(left, "") == blank
    assert start_between_statements(left, "\n\nprint(1)\n") == blank
    assert start_between_statements(left, "\n    y = 1\n") is None  # the block above goes on below the cursor
    assert start_between_statements(left, "\n)\n") is None  # so does the bracket
    assert start_between_statements(left + "\ndef g(a,", "") is None  # code since
    assert start_between_statements(left.replace("\n", "\r"), "") == blank
    broken_above = "import os\nclass A(:\n    x = 1\n\n"
    promise = constrain(broken_above, "\nprint(2)\n")
    assert promise.scope == REGION and promise.left_cut == broken_above.index("\n\n") + 1
    assert promise.state.feed("y = 3").complete


@pytest.mark.parametrize("right, expected", [
    ("x)\n\ny = 1\n", "x)\n\n"),
    ("\n    z\n]\nelse:\n  pass\nfoo()\n", "\n    z\n]\nelse:\n  pass\n"),
    ("\n@d\ndef f(): pass\nq=1\n", "\n@d\ndef f(): pass\n"),  # the middle may end with a decorator
    ("\nclass A: pass\n@d\nclass B: pass\n", "\nclass A: pass\n"),
    ("\n    y\nx = 1\n", "\n    y\n"),
    ('s = """\nx = 1\n"""\ny=2\n', 's = """\nx = 1\n"""\n'),
    ("a\r\n\r\nb\r\n", "a\r\n\r\n"),
    ("a\rb", "a\r"),
    ('x = "abc\ny=1\n', 'x = "abc\n'),  # the cursor's line does not lex as it stands: the middle opens a string
    ("\n)\nx = 1\n", "\n"),  # no bracket open at the cursor: a stray closer, and what holds it is broken
])
def test_statement_end_is_the_next_column_0_statement_as_the_lexer_sees_it(right, expected):
    in_brackets = right.startswith("\n    z")  # its `]` closes the cursor's bracket
    assert right[:statement_ends(right, 1, in_brackets=in_brackets)[0]] == expected
    assert len(right) in statement_ends(right, 3, in_brackets=in_brackets)


def test_statement_end_when_the_middle_opens_a_string_that_the_cursor_line_closes():
    left, right = "def f(self):\n    self.a", 'b").x()\n    y = 1\nz = 2\n'
    pending = advance(INITIAL, left)[0].token
    assert right[:statement_ends(right, 1, pending, "    ")[0]] == 'b").x()\n'
    promise = constrain(left, right + "class (:\n")
    assert promise.scope == REGION and promise.state.feed('ssertTrue("').complete


def test_statement_end_resumes_after_a_string_the_cursor_is_in():
    left = 'x = """doc\n'
    right = 'more\nif = 1\n"""\ny = 2\n'
    pending = advance(INITIAL, left)[0].token
    assert right[:statement_ends(right, 1, pending=pending)[0]] == 'more\nif = 1\n"""\n'
    assert statement_ends(right, 1)[0] == right.index("if")  # from a token boundary, the string looks like code


@pytest.mark.parametrize("left, right, lines", [
    ("import os\n\ndef f(x):\n    return x +", " 1\n\nprint(f(2)\n\ndef g(:\n    pass\n", (3, 5)),
    ("import os\nx = (1,\n\ndef f(x):\n    return x +", " 1\n\nprint(f(2))\n", (4, 6)),
    ("x = )\ndef f(x):\n    return x +", " 1\n\nclass (:\n", (2, 4)),
    ("x = )\n@dec\ndef f(x):\n    return x +", " 1\n\n@d\nclass (:\n", (2, 5)),
    ("x = )\r\ndef f(x):\r\n    return x +", " 1\r\n\r\ny = 2\r\nz = (\r\n", (2, 4)),
    ('x = )\ns = """doc\n', 'more\nif = 1\n"""\ny = 2\n', (2, 5)),
    # the cursor at column 0 of a decorator: the region holds what it decorates
    ("", "@decorator\ndef g():\n    pass\n)import os\n", (1, 3)),
    # the cursor at column 0 of a line whose code is indented: inside the block, not between statements
    ("def f(a, b=2):\n    '''doc\n\nstring'''\n", "    return a + b\nprint((\n", (1, 5)),
])
def test_broken_elsewhere_gives_the_statements_around_the_cursor(left, right, lines):
    promise = constrain(left, right)
    assert promise.scope == REGION and promise.lines(left, right) == lines
    assert "does not parse" in promise.reason
    middle = " 2 *" if left.endswith("+") else ""
    state = promise.state.feed(middle)
    assert state is not None and state.complete
    assert promise.kept_by(left, middle, right)
    assert not parses(left + middle + right)
    if middle:
        assert promise.state.feed(" )") is None


def test_a_middle_may_decorate_the_definition_below_the_cursor():
    left, right = "import os\n", "\nclass A:\n    y = 1\nz = (\n"
    promise = constrain(left, right)
    assert promise.scope == REGION and right[:promise.right_cut] == "\nclass A:\n    y = 1\n"
    assert promise.state.feed("@dataclass").complete
    assert constrain(left, "\nclass A(:\n").state.feed("x = 1").complete  # when that class is broken


def test_a_valid_file_gets_the_whole_file_promise():
    left, right = "import os\n\ndef f(x):\n    return x +", " 1\n\nprint(f(2))\n"
    promise = constrain(left, right)
    assert promise.scope == FILE and (promise.left_cut, promise.right_cut) == (0, len(right))
    assert promise.extended(" 2 *").state.feed("").complete


def test_a_block_is_checked_when_its_header_is_broken():
    left, right = "x = 1\ndef f(:\n    y = 2\n    return ", " 1\n\nprint(x)\n"
    promise = constrain(left, right)
    assert promise.scope == REGION and promise.indent == "    " and promise.lines(left, right) == (4, 5)
    assert promise.state.feed("y +").complete
    assert promise.state.feed("y\nz = 1") is None  # a statement dedented out of the block


def test_nothing_to_promise_when_the_statement_at_the_cursor_is_broken():
    promise = constrain("def f():\n    return (", "\n        1,,\n    )\n")
    assert promise.scope == NONE and promise.state is None and "around the cursor" in promise.reason


def test_files_over_the_size_budget_are_checked_around_the_cursor_only():
    left = "x = 1\n" * 100 + "def f(x):\n    return x +"
    right = " 1\n" + "y = 2\n" * 100
    promise = constrain(left, right, budget=500)
    assert promise.scope == REGION and promise.lines(left, right) == (101, 102)
    assert "not checked" in promise.reason
    huge_statement = constrain("x = [" + "1, " * 300, "]\n", budget=500)
    assert huge_statement.scope == NONE and "more than 500 characters" in huge_statement.reason


def test_setup_past_its_deadline_gives_no_promise_and_is_not_retried_for_free(monkeypatch):
    cache = RightContextCache()
    items = ", ".join("1" for _ in range(20_000))
    left, right = f"x = [{items}, ", f"{items}]\n"
    promise = constrain(left, right, deadline=time.perf_counter() + 0.2, cache=cache)
    assert promise.scope == NONE and "time budget" in promise.reason
    builds = []
    monkeypatch.setattr(context_cache, "RightContext", lambda *given, **named: builds.append(given) or
                        RightContext(*given, **named))
    for _ in range(2):
        with pytest.raises(DeadlineExceeded):
            cache.right_context(right + "\n", time.perf_counter() + 0.05)
    assert len(builds) == 1  # offered no more time than it ran out of, the slow right context is not built again
    with contextlib.suppress(DeadlineExceeded):  # whether it then finishes depends on the machine's speed
        cache.right_context(right + "\n", time.perf_counter() + 0.5)
    assert len(builds) == 2  # offered more than twice the time, it is tried again


STATEMENTS = [
    "import os\n",
    "x = [1, 2,\n     3]\n",
    "def f(a, b=2):\n    '''doc\n\nstring'''\n    return a + b\n",
    "class C(object):\n    y = 1\n\n    def m(self):\n        return self.y\n",
    "@decorator\ndef g():\n    pass\n",
    "if x:\n    y = 1\nelse:\n    y = 2\n",
    "try:\n    pass\nexcept Exception as error:\n    raise\nfinally:\n    z = 3\n",
    "s = '''\nline at column 0\n'''\n",
    "for i in range(3):\n    print(i)\n",
]
BREAKS = ["print((\n", ")", "def broken(:\n", 'x = "unterminated\n', "    indented = 1\n"]


@st.composite
def units(draw) -> list[tuple[str, str]]:
    """A module as (indentation, text) units: top-level statements, and classes whose bodies hold statements and
    methods (the headers are units too, so they can be broken)."""
    units = []
    for _ in range(draw(st.integers(2, 5))):
        if draw(st.integers(0, 2)):
            units.append(("", draw(st.sampled_from(STATEMENTS))))
            continue
        units.append(("", "class K:\n"))
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.booleans()):
                units.append(("    ", draw(st.sampled_from(STATEMENTS))))
                continue
            units.append(("    ", "def m(self):\n"))
            units.extend(("        ", draw(st.sampled_from(STATEMENTS))) for _ in range(draw(st.integers(1, 3))))
    return units


def _indented(indent: str, text: str) -> str:
    return "".join(indent + line for line in text.splitlines(keepends=True))


@settings(max_examples=100, deadline=None)
@given(units(), st.data())
def test_the_promise_holds_once_the_rest_of_the_file_is_repaired(module, data):
    """A file of statements, some inside classes and methods, one with the cursor span, another broken. Whatever
    completes under the promise parses in its region, and in the repaired file whenever the cuts are statement
    boundaries of the repaired file (the promise's premise; a cut inside a string of the file makes it false, and
    the promise empty or narrow, not wrong). Where the premise holds
    and the true middle makes a valid region of the promise's kind, the true middle completes (a region chosen
    for another reading of the cursor's line, `|return` as a top-level statement, can exclude it)."""
    pieces = [_indented(indent, text) for indent, text in module]
    cursor_at = data.draw(st.integers(0, len(pieces) - 1))
    broken_at = data.draw(st.integers(0, len(pieces) - 1).filter(lambda i: i != cursor_at))
    breaking = data.draw(st.sampled_from(BREAKS))
    text = pieces[cursor_at]
    span_start = data.draw(st.integers(0, len(text)))
    span_end = data.draw(st.integers(span_start, len(text)))
    middle = text[span_start:span_end]
    repaired_left = "".join(pieces[:cursor_at]) + text[:span_start]
    repaired_right = text[span_end:] + "".join(pieces[cursor_at + 1:])
    broken = [breaking + piece if i == broken_at else piece for i, piece in enumerate(pieces)]
    left = "".join(broken[:cursor_at]) + text[:span_start]
    right = text[span_end:] + "".join(broken[cursor_at + 1:])
    promise = constrain(left, right)
    if promise.scope != REGION or parses(left + middle + right):
        return  # a whole-file promise here means some middle repairs the file (e.g. one that ends in `#`)
    if broken_at < cursor_at:  # the break was inserted into the left context here
        at = len("".join(broken[:broken_at]))
        outside = promise.left_cut > at
        left_cut, right_cut = promise.left_cut - len(breaking), promise.right_cut
    else:
        at = len(text) - span_end + len("".join(broken[cursor_at + 1:broken_at]))
        outside = promise.right_cut <= at
        left_cut, right_cut = promise.left_cut, promise.right_cut
    premise = outside and is_statement_boundary(repaired_left[:left_cut], repaired_right[right_cut:], promise.indent)
    if premise and promise.kept_by(left, middle, right):
        state = promise.state.feed(middle)
        assert state is not None and state.complete, (left, middle, right, promise)
    for candidate in [middle, middle + "\n", middle[:-1], "(" + middle, middle + ")", "pass\n", "#", ""]:
        state = promise.state.feed(candidate)
        if state is not None and state.complete:
            assert promise.kept_by(left, candidate, right)
            if premise:
                assert parses(repaired_left + candidate + repaired_right), (candidate, promise)


@pytest.mark.slow
def test_standard_library_files_broken_elsewhere():
    outcome = evaluate(count=25, mutations=2, seed=1)
    assert outcome.cases == 25
    assert not outcome.unsound and not outcome.false_rejects
    assert outcome.scopes[NONE] < outcome.cases / 4, outcome.scopes  # the fallback stays the exception


def test_a_refused_context_says_where_cpython_refuses_the_file():
    promise = constrain("import os\nx = 1 2", "\ny = 3\n")
    assert promise.scope == NONE and promise.state is None
    assert promise.reason == ("no middle can make the statements around the cursor parse (without a middle, "
                              "CPython refuses line 2, column 7: invalid syntax)")


# Issue 33: a module docstring cut in its text, the right context the tail of a long set literal. Read as the
# middle leaves it (after a string that the middle closes), the right context's first statement end is the set's
# closing `}`, and the text from there does not parse: the file looked broken elsewhere, and a region was promised
# whose middles (`…"""\nif x:#`) break the file.
MODULE_NAMES = ["aifc", "argparse", "array", "ast", "asynchat"] * 60
DOCSTRING_LEFT = '"""\nA list of module names.\n\nDO NOT EDIT. Regenerate it with\nthe mk'
DOCSTRING_MIDDLE = 'list.py script.\n"""\n\nNAMES = {\n    "abc"'
SET_TAIL = ",\n" + "".join(f'    "{name}",\n' for name in MODULE_NAMES) + "}\n"


@pytest.mark.parametrize("quick", [0.0, region.QUICK_WHOLE_FILE])
def test_a_docstring_cut_before_a_long_literal_gets_the_whole_file_promise(monkeypatch, quick):
    monkeypatch.setattr(region, "QUICK_WHOLE_FILE", quick)  # 0: the quick whole-file attempt never finishes
    assert parses(DOCSTRING_LEFT + DOCSTRING_MIDDLE + SET_TAIL)
    promise = constrain(DOCSTRING_LEFT, SET_TAIL)
    assert promise.scope == FILE and not promise.reason, promise
    state = promise.state.feed(DOCSTRING_MIDDLE)
    assert state is not None and state.complete


def _small_stdlib_files() -> list[Path]:
    return sorted(path for path in STDLIB.glob("*.py") if path.stat().st_size < 12_000)


SMALL_STDLIB_FILES = _small_stdlib_files()
LITERALS = [("{", "}"), ("[", "]"), ("(", ")"), ("dict(", ")")]


@st.composite
def docstring_before_a_literal(draw) -> str:
    """A valid module like the one of issue 33: a docstring, then a long literal of strings (or a call of
    keywords), sometimes between other statements."""
    words = st.text("abcdefghij .", min_size=0, max_size=24)
    doc = "\n".join(draw(st.lists(words, min_size=1, max_size=5)))
    opener, closer = draw(st.sampled_from(LITERALS))
    count = draw(st.integers(1, 80))
    items = "".join(f"    k{i}='{i}',\n" if opener == "dict(" else f'    "n{i}",\n' for i in range(count))
    before = draw(st.sampled_from(["", "import os\n", "\n\n"]))
    after = draw(st.sampled_from(["", "print(NAMES)\n", "\ndef f():\n    return NAMES\n"]))
    return f'"""{doc}"""\n{before}\nNAMES = {opener}\n{items}{closer}\n{after}'


@st.composite
def valid_files(draw) -> str:
    if draw(st.booleans()):
        return draw(docstring_before_a_literal())
    text = draw(st.sampled_from(SMALL_STDLIB_FILES)).read_text(encoding="utf-8", errors="replace")
    assume(parses(text))
    return text


@settings(max_examples=40, deadline=None)
@given(valid_files(), st.data(), st.sampled_from([0.0, region.QUICK_WHOLE_FILE]))
def test_a_file_valid_but_for_the_middle_is_never_taken_for_a_file_broken_elsewhere(text, data, quick):
    """Random cuts of valid files (often inside a string: a docstring, the literal's strings): the true middle
    proves that the whole file can be completed, so the promise is the whole file's, whether or not the quick
    whole-file attempt finishes (`quick` 0: it never does, and the regions' guesses come first)."""
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 160)))
    left, right = text[:start], text[end:]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(region, "QUICK_WHOLE_FILE", quick)
        promise = constrain(left, right)
    assert promise.scope == FILE, (left[-80:], text[start:end], right[:80], promise)
    assert "whatever the middle" not in promise.reason
