"""The finish search (`fimlsp.python.finish`) keeps the right context's code as code: a finish that ends in a
comment running over the right context's first line (which the meaning judge lets through where a blank and a
word follow the `#`) is returned only where the search finds no other."""

from __future__ import annotations

import pytest

from fimlsp.python import finish
from fimlsp.python.names import FileNames
from fimlsp.python.quotient import FimState, quotient
from fimlsp.python.syntax import compiles


@pytest.mark.parametrize("left, right", [
    ("x = 1", "  name = 2\n"),  # `#` and `;` are as short
    ("value = 1\nx = value", " value\n"),
    ("import os\nx = os.getcwd()", " path = 2\n"),
    # the header the deeper line needs, then the line's start (not a comment over ` "end-1c")`)
    ("def f(self, prefix):\n    while True:\n        if prefix:\n            return\n        else:\n          ",
     ' "end-1c")\n                self.text.insert("iomark", prefix)\n            pointer = None\n        break\n'),
])
@pytest.mark.parametrize("judging_names", [False, True])
def test_a_finish_leaves_the_right_contexts_first_line_code_where_another_finish_does(left, right, judging_names):
    state = quotient(left, right)
    if judging_names:
        state = state.judging_names(FileNames.of(left, right))
    found = state.finish()
    assert found is not None and "#" not in found, found
    assert compiles(left + found + right)


def test_a_comment_over_the_right_context_is_the_finish_where_no_other_is(monkeypatch):
    """Prose after the cursor (`  note that ...`) is code no finish can go on from: the comment is the finish,
    after a bounded search for another (`SECOND_CHOICE_GRACE` nodes once the comment was found)."""
    checks = []
    complete = FimState.complete.fget
    monkeypatch.setattr(FimState, "complete", property(lambda self: checks.append(1) or complete(self)))
    left, right = "def f():\n    x = 1", "  and then some prose\n    return x\n"
    assert quotient(left, right).finish() == "#"
    assert len(checks) <= finish.SECOND_CHOICE_GRACE, len(checks)
