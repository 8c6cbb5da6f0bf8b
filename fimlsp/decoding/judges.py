"""The three modes' judges: which candidate tokens a mode accepts and where it lets the middle end.

- `constrained`: a candidate is taken only if the quotient recognizer can still complete the file after it
  (`State.feed`); end of sequence only if the file is complete.
- `checked`: unconstrained, but end of sequence (and the final choice) only where the language's judge accepts the
  whole file (Python: CPython compiles it) (the paper's "checked unconstrained").
- `unconstrained`: plain greedy or sampled FIM.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.language import Language
from fimlsp.language import State


class Judge:
    """The unconstrained mode: every token is taken, the middle may end anywhere. The other modes refine it."""

    constrained = False

    def __init__(self, left: str, right: str, language: Language,
                 place: tuple[str | None, str | None] = (None, None)):
        self.left, self.right, self.language = left, right, language
        self.place = place  # the document's path and project root, for the language's judges of names
        self.seconds = 0.0
        self.searches = 0
        self.search_seconds = 0.0

    def extend(self, prefix: PartialMiddle, text: str) -> tuple[bool, State | None]:
        """Whether `text` may follow `prefix`, and the recognizer state after it."""
        return True, prefix.state

    def valid_end(self, prefix: PartialMiddle) -> bool:
        return not prefix.pending

    def _timed(self, work: Callable, *args):
        clock = time.perf_counter()
        try:
            return work(*args)
        finally:
            self.seconds += time.perf_counter() - clock


class CheckedJudge(Judge):
    """Every token is taken; the middle ends only where the language's judge accepts the whole file."""

    def valid_end(self, prefix: PartialMiddle) -> bool:
        return not prefix.pending and self._timed(self.language.parses, self.left + prefix.text + self.right)


class ConstrainedJudge(Judge):
    """Tokens are taken only while the quotient recognizer can still complete the file."""

    constrained = True

    def extend(self, prefix: PartialMiddle, text: str) -> tuple[bool, State | None]:
        if not text:
            return True, prefix.state
        state = self._timed(prefix.state.feed, text)
        return state is not None, state

    def valid_end(self, prefix: PartialMiddle) -> bool:
        return not prefix.pending and self._timed(lambda: prefix.state.complete)

    def bound(self, state: State) -> float:
        return self._timed(state.distance_bound)

    def finish(self, state: State, limit: float, deadline: float | None = None, work: int | None = None
               ) -> str | None:
        """A shortest finish of at most `limit` characters; None if none is found (before `deadline`, within
        `work` steps of the search)."""
        self.searches += 1
        before = self.seconds
        try:
            return self._timed(state.finish, limit, deadline, work)
        finally:
            self.search_seconds += self.seconds - before


JUDGES = {"constrained": ConstrainedJudge, "checked": CheckedJudge, "unconstrained": Judge}

