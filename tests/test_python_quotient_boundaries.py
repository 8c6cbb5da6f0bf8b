"""The quotient's membership is CPython's where the middle's last token may end at several indices of the right
context (`fimlsp.python.right_context.boundary_indices`): each index's stream completes only the middles that end
there. The streams are one language, and a middle that ended at one index was accepted where another's stream
completed it (`x = {` before `,}`: the stream after the `,`, read as a line's first token, closes the `{`).

The property test draws short middles of brackets, commas, colons and stars before real right contexts cut from
standard-library files, and compares the quotient with `ast.parse` (the grammar's oracle) and `complete` with
`compile`. Such a middle adds no line, so the indentation the quotient over-approximates is the file's own."""

from __future__ import annotations

import io
import tokenize
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fimlsp import quotient
from fimlsp.python.right_context import reversed_right_context_nfa
from fimlsp.python.syntax import compiles, parses
from harness.corpus import stdlib_text

FILES = ["asyncio/transports.py", "bisect.py", "colorsys.py", "textwrap.py", "json/decoder.py", "shlex.py",
         "string.py", "dataclasses.py"]
# Tokens the cursor is put before: where a middle of brackets and commas meets the right context.
CUT_BEFORE = frozenset(",:)]}([{=*.")
# No letter but `x`, which no keyword holds: a middle cannot make a keyword (a block) with the text around it.
PIECES = ["(", ")", "[", "]", "{", "}", ",", ":", "*", "**", "x", "1", "=", " ", "lambda", "."]


@lru_cache(maxsize=None)
def _cuts(name: str) -> tuple[int, ...]:
    """Offsets of the file's tokens in `CUT_BEFORE`, and of the ends of its names (the cursor after a word)."""
    text = stdlib_text(name)
    lines = [0]
    for line in text.splitlines(keepends=True):
        lines.append(lines[-1] + len(line))
    offsets = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.OP and token.string in CUT_BEFORE:
            offsets.append(lines[token.start[0] - 1] + token.start[1])
        elif token.type == tokenize.NAME:
            offsets.append(lines[token.end[0] - 1] + token.end[1])
    return tuple(offsets)


@lru_cache(maxsize=64)
def _start(name: str, cut: int):
    text = stdlib_text(name)
    return quotient(text[:cut], text[cut:])


@st.composite
def cuts(draw) -> tuple[str, int]:
    name = draw(st.sampled_from(FILES))
    offsets = _cuts(name)
    return name, offsets[draw(st.integers(0, len(offsets) - 1))]


MIDDLES = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)


def assert_membership_is_cpythons(left: str, middle: str, right: str, state) -> None:
    """`state` (after `left`, before `right`) fed `middle`: the quotient accepts what `ast.parse` does, and the
    file is complete where `compile` accepts it."""
    assert state is not None, (left[-60:], right[:60])
    fed = state.feed(middle)
    accepted = fed is not None and fed.quotient_accepts()
    assert accepted == parses(left + middle + right), (left[-60:], middle, right[:60])
    assert (fed is not None and fed.complete) == compiles(left + middle + right), (left[-60:], middle, right[:60])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts(), MIDDLES)
def test_short_middles_before_standard_library_cuts_are_judged_as_cpython_judges_them(cut, middle):
    name, offset = cut
    text = stdlib_text(name)
    assert_membership_is_cpythons(text[:offset], middle, text[offset:], _start(name, offset))


@pytest.mark.parametrize("left, middle, right", [
    ("x = ", "{", ",}\n"),
    ("x = ", "[", ",]\n"),
    ("x = ", "(", ",)\n"),
    ("x = ", "{", ",1}\n"),
    ("x = ", "1", ",]\n"),  # `x = 1` and a comment that eats `,]`, but the middle wrote none
    ("x = [", "1", "b]\n"),  # `[1` and the stream after a name that runs on into `b`, but `1b` is no name
    ("x = ", "(1)", "g()\n"),  # `x = (1)` and the stream after `g`, read as its line's first token
    ("handler", "({", ",\n    'exception': exc,\n})\n"),
])
def test_a_middle_is_judged_by_the_stream_of_the_index_it_ends_at(left, middle, right):
    """Each of these was accepted by the stream of another index: the one after the right context's first token,
    read as the first token of a line or the rest of a name or comment the middle ends in."""
    state = quotient(left, right).feed(middle)
    assert not parses(left + middle + right)
    assert state is None or not state.quotient_accepts()


def test_asyncio_transports_cut_accepts_exactly_what_cpython_does():
    """The decoding loop's known case, `call_exception_handler|,\n 'exception': exc, ...})`: `({1: 1`, `({**a`
    and a comment of the middle's own (`({# x`) are finishes, `({` and `(` are not."""
    text = stdlib_text("asyncio/transports.py")
    call = text.index("call_exception_handler(") + len("call_exception_handler")
    left, right = text[:call], text[text.index(",", call):]
    state = quotient(left, right)
    for middle in ["(", "({", "({1", "({1:", "({1: 1", "({**a", "({# x", "({1, 2", "({*a"]:
        assert_membership_is_cpythons(left, middle, right, state)


def test_a_boundary_only_a_line_start_reaches_needs_the_depth_its_line_opens():
    """After `,` read as a line's first token the depth is 0 (a line starts only outside brackets), and `]` then
    closes nothing: no middle ends there. `#` to the line's end is a boundary of its own, and the `#` it needs
    costs a character that no terminal counts."""
    language = reversed_right_context_nfa(",]\n")
    assert sorted(language.windows) == [0, 2] and language.chars == {0: 0, 2: 1}
    assert reversed_right_context_nfa("(x,\n  y)\n").chars[1] == 0  # `(` opens what the stream closes


def test_the_start_of_the_asyncio_transports_cut_finds_its_finish_in_a_few_nodes():
    """The random-model decoding test's case: the stream after the `,` (read as a line's first token, or after a
    comment that swallows it) made `({` look finished, and 400 nodes of the finish search met no finish."""
    text = stdlib_text("asyncio/transports.py")
    call = text.index("call_exception_handler(") + len("call_exception_handler")
    left, right = text[:call], text[text.index(",", call):]
    finish = quotient(left, right).finish(24, None, 20)
    assert finish is not None and compiles(left + finish + right)
