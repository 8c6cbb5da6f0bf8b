"""The start's finish: whether the end is reachable from the empty middle at all, searched once per completion."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

from fimlsp.decoding.options import DecodingOptions
from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.decoding.steering import search_bounds
from fimlsp.language import State

# The first search (is the end guaranteed at all?) may take longer than the loop's: it runs once.
START_SEARCH_SECONDS = 2.0
START_SEARCH_SHARE = 0.25  # of the completion's time budget, when it has one


def start_with_finish(state: State, options: DecodingOptions, deadline: float | None, searches_deadline: float | None,
           left: str = "", right: str = "") -> tuple[PartialMiddle, str, str, int]:
    """The empty middle, with its finish searched for (is the end reachable at all?), in the scope asked for; a
    block that admits no finish falls back to the whole file, and says so. With the searches run, which end at
    `searches_deadline` (`deadline` with the completion's stop flag). A finish that the completion just before at
    this cursor found, or the middle it wrote (`_known_start_finish`), is taken without a search."""
    seconds = START_SEARCH_SECONDS
    if deadline is not None and options.search_budget is None:  # an editor's time budget: the model gets most of it
        seconds = min(seconds, START_SEARCH_SHARE * (deadline - time.perf_counter()))
    limit, reason = options.max_tokens, ""
    bounds = search_bounds(options, seconds, searches_deadline)  # the block's search and the file's share its time
    key = _key(right, options)

    def finish(start: State) -> str | None:
        return start.finish(limit, *bounds)

    scoped = state.in_block() if options.scope == "block" else state
    known = _known_start_finish(key, left, scoped, limit)
    if known is not None:
        _remember_start_finish(key, left, known)
        return PartialMiddle("", b"", scoped, 0, finish=known, searched=True), options.scope, "", 0
    if options.scope == "block":
        finish_in_block = finish(scoped)
        if finish_in_block is not None:
            _remember_start_finish(key, left, finish_in_block)
            return PartialMiddle("", b"", scoped, 0, finish=finish_in_block, searched=True), "block", "", 1
        finish_in_file = finish(state)
        if finish_in_file is None:
            return PartialMiddle("", b"", scoped, 0, searched=True), "block", "", 2
        reason = "the block at the cursor admits no middle within the limit: the whole file was the scope"
        return PartialMiddle("", b"", state, 0, finish=finish_in_file, searched=True), "file", reason, 2
    found = finish(state)
    if found is not None:
        _remember_start_finish(key, left, found)
    return PartialMiddle("", b"", state, 0, finish=found, searched=True), "file", reason, 1


@dataclass
class _Known:
    """What the completion after `left` knew: the start's finish, and later the middle it wrote."""

    left: str
    finish: str
    middle: str | None = None  # the valid middle the completion wrote after `left`, once it has


# The start's finishes that the latest completions found, each under its right context and the options that shape
# it, with its left context and the middle the completion then wrote (`_known_start_finish`)
START_FINISHES = 8
_START_FINISHES: OrderedDict[tuple, _Known] = OrderedDict()


def _key(right: str, options: DecodingOptions) -> tuple:
    return right, options.scope, options.max_tokens, options.language, options.names, options.members, options.calls


def _known_start_finish(key: tuple, left: str, start: State, limit: float) -> str | None:
    """A finish of the empty middle after `left` that a completion just before found under the same right context:
    the same cursor asked again, or one character typed that its finish began with (the rest of it then finishes
    the same file, and is as short as any: a shorter one would have made a shorter finish before), or else that the
    middle it wrote began with. That middle is no shortest finish, but the search after a typed character that no
    shortest finish began with is the start's costliest (its ends are judged on the whole file, and under the member
    judge a name begun is seldom a member yet: `self.r` ends only as `self.reload` or `self.r: int`), and its rest
    is the text the user is typing along, which a steered middle then follows (`Steering.follow_finish`). Checked on
    `start` (the file complete after it), which the judges of this cursor shape, within `limit` characters; None
    where none is known."""
    known = _START_FINISHES.get(key)
    if known is None:
        return None
    if left == known.left:
        candidates = [known.finish]
    elif len(left) == len(known.left) + 1 and left.startswith(known.left):
        candidates = [text[1:] for text in dict.fromkeys((known.finish, known.middle)) if text and text[0] == left[-1]]
    else:
        return None
    for rest in candidates:
        after = start.feed(rest) if rest else start
        if len(rest) <= limit and after is not None and after.complete:
            return rest
    return None


def _remember_start_finish(key: tuple, left: str, finish: str) -> None:
    _START_FINISHES.pop(key, None)
    _START_FINISHES[key] = _Known(left, finish)
    while len(_START_FINISHES) > START_FINISHES:
        _START_FINISHES.popitem(last=False)


def remember_middle(left: str, right: str, options: DecodingOptions, middle: str) -> None:
    """The valid middle a completion wrote after `left`, where its start's finish is remembered: the next keystroke's
    start may take its rest (`_known_start_finish`)."""
    known = _START_FINISHES.get(_key(right, options))
    if known is not None and known.left == left:
        known.middle = middle
