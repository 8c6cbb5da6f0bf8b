"""A member the right context loads on the result of a call the middle closed (`fimlsp.python.call_results`):
refused where jedi infers the result as an instance of one built-in type that lacks it, never where the result
is anything else or the call is not the middle's; and no such member of real code is refused."""

from __future__ import annotations

import ast
import random
import threading

import pytest

from fimlsp.python.analysis import Analysis, analysis_for
from fimlsp.python.call_results import missing_member
from fimlsp.python.members import MemberSource
from fimlsp.python.quotient import quotient
from fimlsp.python.waits import WaitBudget
from fimlsp.python.whole_file_ends import late_refusal
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, package_files, stdlib_files
from tests.end_checks import ends_at_marker
from tests.test_python_members import HELD_OUT

# diskcache's fanout.py, cut down around the held-out boundary cut: the middle closed the first call early, and
# the right context's `._remove` became a member of the int it returns.
FANOUT = '''class FanoutCache:
    def __init__(self, shards):
        self._shards = shards

    def _remove(self, name, args=(), retry=False):
        total = 0
        for shard in self._shards:
            total += getattr(shard, name)(*args, retry=retry)
        return total

    def evict(self, tag, retry=False):
        return self._remove('evict', args=(tag,@@._remove('cull', retry=retry)
'''


def _missing(source: str, middle: str, left_part: str = "") -> str | None:
    left, right = source.split("@@")
    text = left + middle
    return missing_member(analysis_for(None), text, text + right, left + left_part, None, None)


@pytest.mark.parametrize("middle, missing", [
    (" retry))", "_remove"),  # the held-out middle: an int has no _remove
    ("), retry=retry) or self._shards[0].size()", None),  # the call closed last returns what jedi does not know
    ("), retry=retry)\n\n    def cull(self, retry=False):\n        return self", None),  # the true middle
])
def test_a_member_of_a_built_in_call_result_it_lacks_is_refused(middle, missing):
    assert _missing(FANOUT, middle) == missing


@pytest.mark.parametrize("source", [
    FANOUT.replace("total = 0", "total = Total()"),  # not a built-in type
    FANOUT.replace("retry=False):\n        total", "retry=False) -> int | str:\n        total"),  # two types
    FANOUT.replace("        return total", "        return self._shards[0]"),  # nothing jedi infers
])
def test_a_result_of_another_type_is_not_judged(source):
    assert _missing(source, " retry))") is None


def test_a_call_the_user_closed_is_not_the_middles():
    """The left context holds the whole call: what follows it is the user's."""
    assert _missing(FANOUT, " retry))", left_part=" retry))") is None


def test_ends_that_differ_only_in_spaces_before_the_dot_ask_jedi_once(monkeypatch):
    """A finish search checks `))` and `)) ` in turn: one question (each took jedi 0.1-0.5 s on fanout.py)."""
    import fimlsp.python.call_results as call_results_module

    asked = []
    real = call_results_module._result_type
    monkeypatch.setattr(call_results_module, "_result_type", lambda *args: asked.append(args) or real(*args))
    source = FANOUT.replace("def evict", "def expire")  # (a question no earlier test asked)
    assert [_missing(source, middle) for middle in ("))", ")) ", "))\t")] == ["_remove"] * 3
    assert len(asked) == 1


def test_a_member_the_type_has_is_not_refused():
    assert _missing(FANOUT.replace("._remove('cull', retry=retry)", ".bit_length()"), " retry))") is None


def test_the_member_judges_end_refuses_the_middle_and_accepts_another():
    assert not ends_at_marker("members", FANOUT, " retry))")
    true = "), retry=retry)\n\n    def cull(self, retry=False):\n        return self"
    assert ends_at_marker("members", FANOUT, true)


@pytest.mark.parametrize("middle, refused", [
    (" retry))", True),
    ("), retry=retry)\n\n    def cull(self, retry=False):\n        return self", False),  # the true middle
])
def test_an_end_let_go_for_lack_of_time_is_judged_once_its_answer_comes(middle, refused):
    """The end's check read only an answer that was in (the completion's time spent, jedi busy): the middle ended
    unjudged. Before it is shown, the answer is waited on afresh: the held-out middle is refused then, the true one
    not."""
    left, right = FANOUT.replace("def evict", "def evict_late").split("@@")  # (a question no earlier test asked)
    analysis = Analysis(None)
    gate = threading.Event()
    analysis.run(gate.wait, 30)  # jedi busy: the end's question waits behind
    try:
        source = MemberSource(analysis, left, right, None, seconds=None, budget=WaitBudget(0.0))
        ended = quotient(left, right).judging_members(source).feed(middle)
        assert ended is not None and ended.complete  # let go
    finally:
        gate.set()
    assert ("_remove" in late_refusal(ended)) == refused


@pytest.mark.slow
def test_no_member_of_a_call_result_in_real_code_is_refused():
    """Every `call(...).name` of the held-out packages and of 60 standard-library files (seed 7), the call as what
    the middle closed: none is refused, and some are judged. (A one-off sweep of the 1,407 such members of the held-out
    packages and 900 files of the standard library, seed 49, judged 291 and refused none.)"""
    files = [each for name in HELD_OUT for each in package_files(name)]
    standard = [(str(STDLIB / name), text) for name, text in stdlib_files() if "test" not in name]
    files += random.Random(7).sample(standard, 60)
    refused, judged = [], 0
    for path, text in files:
        tree = parsed(text)
        lines = text.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        analysis = analysis_for(path)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call)
                    and node.end_lineno == node.value.end_lineno and lines[node.end_lineno - 1].isascii()):
                continue
            end = starts[node.value.end_lineno - 1] + node.value.end_col_offset
            left = text[:end - 1]  # the middle: the call's closing bracket
            judged += 1
            if missing_member(analysis, text[:end], text, left, path, None) is not None:
                refused.append(f"{path}:{node.lineno} {node.attr}")
    assert refused == []
    assert judged > 300
