"""The member and call judges as the recognizer steps them (`fimlsp.python.judge_steps`): their time counted, and
past a keystroke's bound on their work they let the rest of the middle go, saying so."""

from __future__ import annotations

import pytest

from fimlsp.python.analysis import analysis_for
from fimlsp.python.members import MemberSource
from fimlsp.python.quotient import quotient
from fimlsp.python.signatures import SignatureSource
from fimlsp.python.waits import WaitBudget


def verdict(state, middle: str) -> str:
    for char in middle:  # a character at a time: any token may end mid-name
        state = state.feed(char)
        if state is None:
            return "refused"
    return "complete" if state.complete else "incomplete"


@pytest.mark.parametrize("work, judged", [(None, "refused"), (3600.0, "refused"), (0.0, "complete")])
def test_judges_whose_keystroke_s_work_is_spent_let_the_rest_of_the_middle_go(work, judged):
    """Past its work's bound a keystroke's judges relax (issue 49, item 8: rather than delay the suggestion) for
    the rest of the completion, and the reason says so; until then they judge as ever: a member the receiver lacks,
    a call with more arguments than the signature takes (a bound of an hour: not reached however busy the machine)."""
    left, right = "import os\n\nprint(", ")\n"
    source = MemberSource(analysis_for(None), left, right, seconds=None, budget=WaitBudget(None, work))
    assert verdict(quotient(left, right).judging_members(source), "os.no_such_member") == judged
    assert ("were spent" in source.reason) == (work == 0.0), source.reason

    left, right = "import os\n\n", "\n"
    calls = SignatureSource(left, right, budget=WaitBudget(None, work))
    assert verdict(quotient(left, right).judging_calls(calls), "os.unlink('a', 'b', 'c', 'd')") == judged
    assert ("were spent" in calls.reason) == (work == 0.0), calls.reason


def test_a_judge_s_time_is_counted_as_it_steps():
    """Each step of the judge (its start, its feeds, its end's checks) adds to its `spent` and to the shared
    budget's: what `complete_middles` reports as the judge's stage, and what the work's bound is measured against."""
    left, right = "import os\n\nprint(", ")\n"
    budget = WaitBudget(None)
    members = MemberSource(analysis_for(None), left, right, seconds=None, budget=budget)
    state = quotient(left, right).judging_members(members)
    started = members.spent
    assert verdict(state, "os.sep") == "complete"
    assert 0 < started < members.spent == budget.spent
