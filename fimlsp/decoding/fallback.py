"""The middle when generation stopped early (the time budget, a full context, no candidate, a loop): the prefix
completed by its shortest finish, unless that finish invents code and a line the model wrote ends validly, or else
the valid prefix the model most wanted to end at (`Completion.ending` is `fallback`)."""

from __future__ import annotations

from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.decoding.steering import Steering, search_bounds
from fimlsp.lines import LINE_BREAK

FALLBACK_SEARCH_SECONDS = 0.5  # a fallback's searches may take longer than the loop's: each runs once
# How far a fallback's finish search looks, in characters per token left (the finish is then tokenized to check
# that it fits).
FALLBACK_CHARACTERS_PER_TOKEN = 4


def fallback(steering: Steering, seen: list[PartialMiddle]) -> tuple[PartialMiddle, int] | None:
    """A late prefix completed by a shortest finish that fits the tokens left (the last prefix, then ones further
    back, each back twice as far), or else the valid prefix with the best end-of-sequence probability weighted by
    its length, or else the empty middle and its finish: an empty suggestion is none at all (after `open(`, a model
    that ran into an unclosed string at the token limit suggests a prefix it wrote, `path,`, not nothing). A finish
    that does more than close (the language's `closers`: brackets, quotes, line breaks and indentation) invents
    code (`"":x`, a `#` that comments out the rest of the line), and gives way to the latest prefix that ends a
    line and is valid as it is, which reads better. With the characters the finish added."""
    judge = steering.judge
    whole = [prefix for prefix in seen if not prefix.pending]
    # the searches of one fallback share its time (each its own nodes, where they are counted)
    bounds = search_bounds(steering.options, FALLBACK_SEARCH_SECONDS, steering.deadline)
    if judge.constrained:
        backs = [back for back in (2 ** power for power in range(len(whole).bit_length())) if back < len(whole)]
        for prefix in [whole[-back] for back in backs]:
            ended = _finished(steering, prefix, whole, seen[-1].text, bounds)
            if ended is not None:
                return ended
    ranked = sorted(seen, key=lambda p: (bool(p.text), p.eos_probability * (p.tokens + 1), p.tokens),
                    reverse=True)
    for candidate in ranked:
        if judge.valid_end(candidate):
            return candidate, 0
    return _finished(steering, whole[0], whole, seen[-1].text, bounds) if judge.constrained and whole else None


def _finished(steering: Steering, prefix: PartialMiddle, whole: list[PartialMiddle],
              written: str, bounds: tuple) -> tuple[PartialMiddle, int] | None:
    """`prefix` completed by a shortest finish that fits the tokens left, or the latest valid line end of
    `whole` where that finish would do more than close what the middle opened."""
    fitting = _fitting_finish(steering, prefix, bounds)
    if fitting is None:
        return None
    finish, tokens = fitting
    if not steering.judge.language.closers.issuperset(finish):
        line_end = _valid_line_end(steering, whole, written)
        if line_end is not None:
            return line_end, 0
    state = prefix.state.feed(finish) if finish else prefix.state
    return PartialMiddle(prefix.text + finish, b"", state, prefix.tokens + tokens, prefix.log_probability), len(finish)


def _valid_line_end(steering: Steering, whole: list[PartialMiddle], written: str) -> PartialMiddle | None:
    """The latest non-empty prefix that `written` follows with a line break and that is a valid end."""
    for prefix in reversed(whole):
        if (prefix.text.strip() and LINE_BREAK.match(written, len(prefix.text))
                and steering.judge.valid_end(prefix)):
            return prefix
    return None


def _fitting_finish(steering: Steering, prefix: PartialMiddle, bounds: tuple) -> tuple[str, int] | None:
    """A shortest finish whose tokens fit the tokens left, and their number: a token may hold several
    characters, so the search may look further than one character a token."""
    left = steering.tokens_left(prefix)
    finish = prefix.finish
    if finish is None:
        limit = FALLBACK_CHARACTERS_PER_TOKEN * left
        finish = steering.judge.finish(prefix.state, limit, *bounds)
    if finish is None:
        return None
    tokens = len(steering.model.encode(finish))
    return (finish, tokens) if tokens <= left else None
