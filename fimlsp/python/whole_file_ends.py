"""The member and call judges' checks of the whole file at a middle's end (issue 49): what no token-by-token judge
sees, because it hangs on code on both sides of the middle or on the whole of what the middle wrote. Each check
reads the file only where a pattern on the middle's lines makes a refusal possible. None is judged in a region's
text (a big file's or a broken one's), which is not the file: the text must begin with the left context."""

from __future__ import annotations

from fimlsp.python.call_results import missing_member
from fimlsp.python.callers import broken_callers
from fimlsp.python.literal_attributes import called_literals
from fimlsp.python.calls import Calls
from fimlsp.python.judge_steps import judging
from fimlsp.python.members import Members, MemberSource
from fimlsp.python.optional_receivers import unnarrowed
from fimlsp.python.rebound_receiver import rebound_members
from fimlsp.python.signatures import SignatureSource
from fimlsp.python.uncalled import uncalled_classes
from fimlsp.python.waits import WaitBudget, timed


def judges_refuse(members: Members | None, calls: Calls | None, text: str, whole: str) -> bool:
    """Whether the member or the call judge, where it still judges, refuses the middle that makes `text` at its end
    (`members_refuse`, `calls_refuse`)."""
    if judging(members) and timed(members.source, members_refuse, members.source, text, whole):
        return True
    return judging(calls) and timed(calls.source, calls_refuse, calls.source, text, whole)


def members_refuse(source: MemberSource, text: str, whole: str) -> bool:
    """Whether the member judge refuses the middle that makes `text` (the file up to the right context; `whole`
    with it) at its end: an attribute the class loads left unassigned (`attribute_debt`), a receiver rebound to a
    built-in value that lacks what the method loads on it later, a member of an optional attribute loaded where
    nothing narrowed it, or a member the right context loads on the built-in value of a call the middle closed."""
    if source.attribute_debt(whole):
        return True
    if not text.startswith(source.left):
        return False
    start, end = len(source.left), len(text)
    return bool(rebound_members(whole, start, end) or unnarrowed(whole, start, end)
                or missing_member(source.analysis, text, whole, source.left, source.path, source.budget))


def late_refusal(state) -> str:
    """Why the member judge refuses the end of `state` (a `FimState`, complete, about to be shown) once it waits
    afresh for what its end's check let go for lack of time: the member the right context loads on the built-in
    value of a call the middle closed (held-out diskcache fanout.py: a finish search spent the budget on `))`, `),)`
    and `0))`, each refused, and the end shown, ` retry))`, loaded `_remove` on the int unjudged), asked again with
    the judge's `seconds` to wait. "" where it does not refuse it, or still does not know."""
    if not judging(state.members) or not state.complete:
        return ""
    source, text = state.members.source, state.text
    if not text.startswith(source.left):
        return ""
    missing = timed(source, missing_member, source.analysis, text, text + state.context.right, source.left,
                    source.path, WaitBudget(source.seconds))
    return "" if missing is None else (f"the member judge refuses the end once its answer came: the right context "
                                       f"loads {missing} on the built-in value of the call it closes")


def calls_refuse(source: SignatureSource, text: str, whole: str) -> bool:
    """Whether the call judge refuses the middle that makes `text` at its end: a function header it rewrote that the
    file's own calls no longer fit, a built-in class it assigns uncalled where an annotation declares an instance,
    or a call of an attribute that holds only literals (`self.close_sent()`, a bool)."""
    if not text.startswith(source.left):
        return False
    start, end = len(source.left), len(text)
    return bool(broken_callers(whole, start, end) or uncalled_classes(whole, start, end)
                or called_literals(whole, start, end))
