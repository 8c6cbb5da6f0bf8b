"""The middle when generation stopped early (the time budget, a full context, no candidate, a loop): the prefix
completed by its shortest finish, unless that finish invents code and a line the model wrote ends validly, or else
the valid prefix the model most wanted to end at (`Completion.ending` is `fallback`)."""

from __future__ import annotations

import re

from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.decoding.steering import Steering, search_bounds
from fimlsp.lines import LINE_BREAK

FALLBACK_SEARCH_SECONDS = 0.5  # a fallback's searches may take longer than the loop's: each runs once
# How far a fallback's finish search looks, in characters per token left (the finish is then tokenized to check
# that it fits).
FALLBACK_CHARACTERS_PER_TOKEN = 4
_WORD = re.compile(r"\w+")


def fallback(steering: Steering, seen: list[PartialMiddle]) -> tuple[PartialMiddle, int] | None:
    """A late prefix completed by a shortest finish that fits the tokens left (the last prefix, then ones further
    back, each back twice as far), or else the valid prefix with the best end-of-sequence probability weighted by
    its length; with the characters the finish added. A finish that does more than close (the language's
    `closers`: brackets, quotes, line breaks and indentation) invents code (`:0`, `=0`, `import*`, a `#` that
    comments out the rest of the line), and gives way to the latest prefix that ends a line and is valid as it is,
    then to the model's own text where it ends validly as it is: invented code is the last resort, after every end
    of the model's own text (on 240 held-out cuts, 44 of the 71 fallbacks that invented code added a type error).
    An invented finish of nothing the model wrote (`id` for `Reporter(` before `.stdout`) is never a suggestion. A
    middle whose last word the right context's first word repeats, fusing the two (`der` before `der is None`:
    `derder`), comes after all of these (`_stutters`). Without `invented_finish` (the editors) neither is given."""
    judge = steering.judge
    whole = [prefix for prefix in seen if not prefix.pending]
    # the searches of one fallback share its time (each its own nodes, where they are counted)
    bounds = search_bounds(steering.options, FALLBACK_SEARCH_SECONDS, steering.deadline)
    invented, stuttering, written = None, None, seen[-1].text
    if judge.constrained:
        backs = [back for back in (2 ** power for power in range(len(whole).bit_length())) if back < len(whole)]
        for prefix in [whole[-back] for back in backs]:
            ended = _finished(steering, prefix, whole, written, bounds)
            if ended is None:
                continue
            if _splits_a_word(ended[0].text if not ended[1] else prefix.text, written) or (
                    ended[1] and not judge.language.closers.issuperset(ended[0].text[len(prefix.text):])):
                invented = invented or ended
                continue
            if _stutters(ended[0].text, judge.left, judge.right):
                stuttering = stuttering or ended
                continue
            return ended
    ranked = sorted(seen, key=lambda p: (bool(p.text), p.eos_probability * (p.tokens + 1), p.tokens),
                    reverse=True)
    for candidate in ranked:
        if not _splits_a_word(candidate.text, written) and judge.valid_end(candidate):
            if not _stutters(candidate.text, judge.left, judge.right):
                return candidate, 0
            stuttering = stuttering or (candidate, 0)
    return (invented or stuttering) if steering.options.invented_finish else None


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


def _splits_a_word(text: str, written: str) -> bool:
    """Whether `text` ends inside a name or number that the model's `written` text goes on with (`i` of `if`,
    `new_process.wait` of `wait_until_ready`): a piece of a word is no text of the model's."""
    return bool(text) and len(written) > len(text) and (text[-1].isalnum() or text[-1] == "_") and (
        written[len(text)].isalnum() or written[len(text)] == "_")


def _stutters(middle: str, left: str, right: str) -> bool:
    """Whether the middle ends a word (after `left`) with the word that `right` begins with, so that the one word
    the two fuse into says it twice (`self.assert` `Equal` + `assertEqual(`): on 240 held-out cuts, each of the 6
    fallbacks that did this added a type error, and no true middle did it."""
    head = _WORD.match(right)
    if head is None or not middle or _WORD.match(middle[-1]) is None:
        return False
    word = head.group()
    return (left[-len(word):] + middle).endswith(word)


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
