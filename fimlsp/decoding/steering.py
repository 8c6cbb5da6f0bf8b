"""Steering toward the end, the constrained mode's promise: once a quotient exists the middle always ends valid,
within the token limit, whatever the model.

A token is never taken if the file could no longer be finished in the tokens left (`State.distance_bound`, and
near the limit `State.finish`, measured in characters since every character is at most one token), and when
the model ranks end of sequence first before the file is complete, decoding enters a finishing phase that takes
the model's most probable token among those that shorten the distance to a complete file. The model writes the
finish; the shortest finish is only the yardstick.
"""

from __future__ import annotations

import math

from earley.deadline import within
from fimlsp.decoding.judges import Judge
from fimlsp.decoding.options import DecodingOptions
from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.language import State
from fimlsp.model import FimModel
from fimlsp.model.token_text import completions_of

# Near the token limit every candidate's shortest finish is searched for; further away the recognizer's lower
# bound decides. "Near": fewer tokens left than twice the bound plus this many.
NEAR_LIMIT_MARGIN = 16
# Shortest-finish searches a completion may run, and seconds each may take: most take a few milliseconds, and a
# search that fails (no finish within the limit) takes longest.
SEARCHES = 12
SEARCH_SECONDS = 0.1
# A completion without a time budget counts its searches' nodes, this many for a search of `SEARCH_SECONDS` (the
# start's 1,000, a fallback's 250), so that a busy machine finds what an idle one does; eval's 20 missed the end
# inside a middle's last token (`):` after `isinstance(x, int`) and steered the middle away from it.
UNTIMED_SEARCH_BUDGET = 50


class Steering:
    """One token loop's budget: whether the end is guaranteed, whether and since when it is steered, and the
    finish searches it may still run."""

    def __init__(self, model: FimModel, judge: Judge, options: DecodingOptions, deadline: float | None):
        self.model, self.judge, self.options, self.deadline = model, judge, options, deadline
        self.finishing = False  # the model wanted to end before the file was complete
        self.steered_from: int | None = None  # characters of the middle when the budget or a finish first steered
        self.steerable = False  # a finish within the token limit was found from the start: the end is guaranteed
        self.searches_left = SEARCHES
        self.searched_this_step = False  # one search a step for a candidate off the known finish

    def follow_finish(self, prefix: PartialMiddle, log_probs):
        """The model's most probable token among those that begin the known finish (a byte-level vocabulary has
        one for its first character): past the top candidates, steering needs no search down the vocabulary."""
        finish, best = prefix.finish, None
        for length in range(1, len(finish) + 1):
            for token in self.model.tokens_of(prefix.heal + finish[:length].encode()):
                if best is None or log_probs[token] > log_probs[best[0]]:
                    best = (token, finish[:length])
        if best is None:
            return "no_candidate"
        token, text = best
        accepted, state = self.judge.extend(prefix, text)
        if not accepted:
            return "no_candidate"
        return token, PartialMiddle(prefix.text + text, b"", state, prefix.tokens + 1,
                             prefix.log_probability + float(log_probs[token]), finish=finish[len(text):])

    def tokens_left(self, prefix: PartialMiddle) -> int:
        return self.options.max_tokens - prefix.tokens

    def within_budget(self, prefix: PartialMiddle, following: PartialMiddle, text: str) -> bool:
        """Whether the file can still be finished within the tokens left after `following` (and, when finishing,
        whether `following` brings the end closer). Sets `following.finish` where it is known."""
        left = self.tokens_left(following)
        known = prefix.finish
        if following.pending:  # half a character: judged once it is whole, if some whole one could be valid
            return not self.finishing and any(
                self.judge.extend(following, char)[0] for char in completions_of(following.pending))
        limit = min(left, len(known) - 1) if self.finishing and known is not None else left
        if known is not None and text and known.startswith(text) and len(known) - len(text) <= limit:
            following.finish = known[len(text):]
            return True
        bound = self.judge.bound(following.state)
        if bound > limit:
            self.steer(prefix)
            return False
        if not self.steerable or (not self.finishing and left >= 2 * bound + NEAR_LIMIT_MARGIN):
            return True
        if self.searched_this_step or self.searches_left == 0:
            # With a finish known, a later candidate follows it; without one (the searches failed or are spent),
            # the bound alone admits it.
            return known is None
        self.searched_this_step = True
        if self.known_finish(following, limit) is None:
            self.steer(prefix)
            return False
        return True

    def steer(self, prefix: PartialMiddle) -> None:
        """A candidate was refused for the budget, or the model wanted to end: the end is steered from here on,
        along candidates that keep a finish within reach (the current prefix's is searched for once)."""
        if self.steered_from is None:
            self.steered_from = len(prefix.text)
        if not prefix.pending:
            self.known_finish(prefix)

    def known_finish(self, prefix: PartialMiddle, limit: int | None = None) -> str | None:
        """The prefix's finish, searched for once (within `limit` characters, by default the tokens left)."""
        if prefix.finish is None and not prefix.searched and self.searches_left > 0:
            prefix.searched = True
            self.searches_left -= 1
            limit = self.tokens_left(prefix) if limit is None else limit
            prefix.finish = self.finish(prefix.state, limit, SEARCH_SECONDS)
        return prefix.finish

    def finish(self, state: State, limit: float, seconds: float) -> str | None:
        """A shortest finish of `state` within `limit` characters, searched for within the search's bounds
        (`search_bounds`)."""
        return self.judge.finish(state, limit, *search_bounds(self.options, seconds, self.deadline))


def search_bounds(options: DecodingOptions, seconds: float, deadline: float | None) -> tuple[float | None, int | None]:
    """The deadline and the nodes of a finish search that may take `seconds`: `seconds` from now and no later than
    the completion's `deadline`, and the language's default nodes. Counted instead where a search budget is set, or
    where the completion has no time budget (`UNTIMED_SEARCH_BUDGET`): nodes for a search of `SEARCH_SECONDS` (in
    proportion for a longer one), and no clock but the completion's: a busy machine then finds the same finishes
    as an idle one, and the start's finish, which every fallback can end with, is found however slow the machine."""
    budget = options.search_budget
    if budget is None and (deadline is None or deadline == math.inf):  # no budget, maybe a stop flag
        budget = UNTIMED_SEARCH_BUDGET
    if budget is not None:
        return deadline, max(1, round(budget * seconds / SEARCH_SECONDS))
    return within(deadline, seconds), None  # the sooner, with the completion's stop flag (`earley.Deadline`)
