"""A boundary's marker costs at most the characters a middle writes to end there that no terminal counts
(`fimlsp.python.right_context.Arrival`), so that the finish search's estimate (`fimlsp.python.finish.estimate`)
stays a lower bound: an estimate above the characters a true finish needs orders the search away from it.

The property test cuts standard-library files inside comments and after line continuations (the middle's last
token runs on into the right context, where only a marker stands for it) and checks the estimate after every
prefix of the true middle against the characters the middle has left to write."""

from __future__ import annotations

import io
import tokenize
from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fimlsp import quotient
from fimlsp.python.finish import estimate
from fimlsp.python.right_context import reversed_right_context_nfa
from harness.corpus import stdlib_text

FILES = ["colorsys.py", "textwrap.py", "shlex.py", "bisect.py"]
# The most characters of the true middle before the token that runs on.
MIDDLE_BEFORE = 12


@lru_cache(maxsize=None)
def _run_on_starts(name: str) -> tuple[int, ...]:
    """Where a comment's `#` or a line continuation's backslash stands in the file."""
    text = stdlib_text(name)
    comments = [token.start for token in tokenize.generate_tokens(io.StringIO(text).readline)
                if token.type == tokenize.COMMENT]
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    starts = [offsets[row - 1] + column for row, column in comments]
    starts += [index for index in range(len(text) - 1) if text.startswith("\\\n", index)]
    return tuple(sorted(starts))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FILES), st.data())
def test_the_estimate_is_at_most_what_a_true_middle_that_runs_on_has_left_to_write(name, data):
    text = stdlib_text(name)
    run_on = data.draw(st.sampled_from(_run_on_starts(name)))
    start = run_on - data.draw(st.integers(0, min(MIDDLE_BEFORE, run_on)))
    end = run_on + data.draw(st.integers(1, 3 if text[run_on] == "#" else 2))
    left, middle, right = text[:start], text[start:end], text[end:]
    state = quotient(left, right)
    for cut in range(len(middle) + 1):
        fed = state.feed(middle[:cut])
        assert fed is not None, (name, middle[:cut])
        assert estimate(fed) <= len(middle) - cut, (name, left[-30:], middle[:cut], middle[cut:], right[:30])


def test_a_comment_that_begins_its_line_costs_its_hash_alone():
    """The right context's first line is code after a string (`)`): a `#` after code on its line may not run into
    it bare (`fimlsp.python.meaning`), but one that begins its line may, and costs one character: the finish of
    this cut (an `if` header, then a `#` on the deeper line) was out of the search's reach where it cost two."""
    left = "def f(self, prefix):\n    while True:\n        if prefix:\n            return\n        else:\n          "
    right = ' "end-1c")\n                self.text.insert("iomark", prefix)\n            pointer = None\n        break\n'
    assert reversed_right_context_nfa(right).chars[right.index("\n")] == 1
    header = "\n            if x:\n                "
    assert estimate(quotient(left, right).feed(header)) <= len("#")
    assert quotient(left, right).feed(header + "#").complete


def test_a_hash_already_written_is_not_counted_again():
    left = "class P:\n    @property\n    def no_proxy(self)"
    right = "from_dict(config):\n        return config\n"
    ended = quotient(left, right).feed(":# x")
    assert ended.complete and estimate(ended) == 0
