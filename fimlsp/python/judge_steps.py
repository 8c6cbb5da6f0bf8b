"""The member and call judges as the recognizer (`fimlsp.python.quotient.FimState`) steps them: each step's time
counted as theirs (`fimlsp.python.waits.timed`: what they add to the completion), and no step taken once their work
at a keystroke is spent (`WaitBudget.spent_out`): they let the rest of the middle go rather than delay the
suggestion (issue 49, item 8)."""

from __future__ import annotations

from collections.abc import Callable

from fimlsp.python import lexemes as lx
from fimlsp.python.calls import Calls
from fimlsp.python.lexer import LexerState
from fimlsp.python.members import Members, likely_names
from fimlsp.python.waits import timed


def judging(judge: Members | Calls | None) -> bool:
    """Whether `judge` is on and still judges."""
    return judge is not None and not judge.source.budget.spent_out


def members_after(members: Members, terminals: list[str], pending: frozenset[str] | None, begun: str,
                  allowed: Callable[[], frozenset[str]]) -> Members | None:
    """The member judge after `terminals`, with the token being written, `begun` so far, which may become one of
    `pending` (None: it is whole), `allowed()` the terminals the parser takes next: None where it refuses them."""
    if not judging(members):
        return members
    return timed(members.source, _members_after, members, terminals, pending, begun, allowed)


def _members_after(members: Members, terminals: list[str], pending: frozenset[str] | None, begun: str,
                   allowed: Callable[[], frozenset[str]]) -> Members | None:
    members = members.feed(terminals) if terminals else members
    if members is None or (pending is not None and lx.NAME in pending and not members.admits(begun)):
        return None
    if members.pending and pending is not None and not members.continued(pending & allowed()):
        return None  # (`self.kill(`: no store can follow a name that is not a member)
    return members


def calls_after(calls: Calls, terminals: list[str], pending: frozenset[str] | None, begun: str) -> Calls | None:
    """The call judge after `terminals`, with the token being written: None where it refuses them."""
    return timed(calls.source, _calls_after, calls, terminals, pending, begun) if judging(calls) else calls


def _calls_after(calls: Calls, terminals: list[str], pending: frozenset[str] | None, begun: str) -> Calls | None:
    calls = calls.feed(terminals) if terminals else calls
    if calls is None or (pending is not None and lx.NAME in pending and not calls.admits(begun)):
        return None
    return calls


def judges_end(members: Members | None, calls: Calls | None, terminals: list[str], lexer: LexerState, right: str,
               index: int) -> bool:
    """Whether the judges let the middle end where `lexer` stands, its last `terminals` settled at `index` of the
    right context `right`."""
    if judging(members) and not timed(members.source, _members_end, members, terminals, right[index:]):
        return False
    return not judging(calls) or timed(calls.source, calls.ends, lexer, right)


def _members_end(members: Members, terminals: list[str], rest: str) -> bool:
    judged = members.feed(terminals)
    return judged is not None and judged.ends(rest)


def likely_members(members: Members | None, lexer: LexerState) -> tuple[str, dict[str, float]] | None:
    """The member being written after a dot and the names the file writes there (`members.likely_names`)."""
    return timed(members.source, likely_names, members, lexer) if judging(members) else None
