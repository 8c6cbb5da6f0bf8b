"""The prompt of a completion as typing goes on: its contexts cut where a keystroke does not move the cut, and its
forward pass read ahead, a chunk at a time, so that a superseded keystroke's work stays in the engine's cache."""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence

from fimlsp.lines import after_line
from fimlsp.model import FimModel, OutOfTime, PromptPass
from fimlsp.model.backend import Snippet

# Where a prompt's contexts are cut (`steady_contexts`): at a line start on a multiple of this many characters (and,
# for a short left context, the right one's room in steps of this many tokens), looking at most this many
# characters per token of room.
STEADY_STEP = 64
STEADY_CHARS_PER_TOKEN = 8
# The characters after the last left cut that must be the same for a keystroke to keep it (`_last_left_cut`).
STEADY_ANCHOR = 256
# The last left cut per model, by its id (its engine's cache holds that prompt): (the model, the right context
# kept, the cut, its anchor).
_LEFT_CUTS: dict[int, tuple[weakref.ref, str, int, str]] = {}


class PromptOnDemand(PromptPass):
    """The prompt's forward pass, read ahead of the start's search or when a decoder first asks for it: a request
    stopped while it reads (`OutOfTime`) leaves what it read in the engine's cache, for the next keystroke, and its
    decoders end as it did. `heal`: the bytes token healing took back from the left context."""

    def __init__(self, model: FimModel, prompt: list[int], shared: bool, deadline: float | None, heal: bytes):
        self.model, self.prompt, self.shared, self.deadline, self.heal = model, prompt, shared, deadline, heal
        self.reading_seconds = 0.0  # the pass's time, as the `prompt` stage counts it
        self._pass: PromptPass | None = None
        self._late: OutOfTime | None = None

    def read_ahead(self) -> None:
        try:
            self._read()
        except OutOfTime as late:
            self._late = late  # raised again where a decoder asks for the pass

    def _read(self) -> PromptPass:
        if self._late is not None:
            raise self._late
        if self._pass is None:
            clock = time.perf_counter()
            try:
                self._pass = self.model.prompt_pass(self.prompt, shared=self.shared, deadline=self.deadline)
            finally:
                self.reading_seconds = time.perf_counter() - clock
        return self._pass

    @property
    def log_probs(self):
        return self._read().log_probs

    @property
    def seconds(self) -> float:
        return 0.0 if self._pass is None else self._pass.seconds

    def session(self, rows: int = 1):
        return self._read().session(rows)


def steady(limit: int | None) -> int | None:
    """A prompt's token limit rounded down to a power of two, so that the same cut holds from one keystroke to the
    next while the measured speed of the model wavers."""
    return None if limit is None else 1 << (limit.bit_length() - 1)


def steady_contexts(model: FimModel, left: str, right: str, reserve: int, limit: int | None,
                    extra: Sequence[Snippet] = ()) -> tuple[str, str]:
    """What the prompt keeps of `left` and `right`, cut where typing at the cursor does not move the cut: the right
    context ends and the left one starts at a line start on a multiple of `STEADY_STEP` characters. The model cut
    both by tokens, so the left context's first token moved with every character typed, and the engine's cache of
    the last keystroke's prompt (`LlamaCppModel`) was read again from there: now a keystroke reads its new tokens.
    The right context gets half the room (all the left one leaves, in steps of `STEADY_STEP` tokens, where the
    left is short), the left one what the right one's tokens leave. The room is what the `extra` snippets leave, so
    that the model does not cut the contexts again by tokens."""
    room = min(model.context_window - reserve, limit or model.context_window) - len(
        model.prompt("", "", reserve, extra=extra))
    if room < 2 * STEADY_STEP:  # a short prompt is cheap to read again: the model's cut keeps every token it can
        return left, right
    right_room = room // 2
    if len(left) < STEADY_CHARS_PER_TOKEN * room:  # a short left context may leave the right one more room
        used = len(model.encode(left))
        right_room = max(right_room, room - STEADY_STEP * (used // STEADY_STEP + 1))
    end = min(len(right), STEADY_CHARS_PER_TOKEN * right_room)  # typing before the cursor leaves it as it is
    while end > 0 and len(model.encode(right[:_line_start(right, end)])) > right_room:
        end -= STEADY_STEP
    right = right[:_line_start(right, end)]
    left_room = room - len(model.encode(right))
    cut = _last_left_cut(model, left, right, left_room)
    if cut is None:
        start = max(0, len(left) - STEADY_CHARS_PER_TOKEN * left_room) // STEADY_STEP * STEADY_STEP
        while start < len(left) and len(model.encode(left[_line_start(left, start):])) > left_room:
            start += STEADY_STEP
        cut = _line_start(left, start) if start else 0
    _LEFT_CUTS[id(model)] = (weakref.ref(model), right, cut, left[cut:cut + STEADY_ANCHOR])
    return left[cut:], right


def _last_left_cut(model: FimModel, left: str, right: str, left_room: int) -> int | None:
    """The last keystroke's cut of the left context, where the prompt's right context is the same (typing at the
    cursor, not another cursor) and the cut still fits: a token count that wavers about the room as a word is
    typed (`complete_m`, `complete_mi`) moved the cut back and forth, and each move read ~250 tokens again."""
    owner, last_right, cut, anchor = _LEFT_CUTS.get(id(model), (None, "", 0, ""))
    if owner is None or owner() is not model or last_right != right or left[cut:cut + len(anchor)] != anchor:
        return None
    return cut if len(model.encode(left[cut:])) <= left_room else None


def _line_start(text: str, offset: int) -> int:
    """The first line start at or after `offset` (the end of `text` without one)."""
    if offset <= 0 or offset >= len(text):
        return max(0, min(offset, len(text)))
    return offset if text[offset - 1] in "\r\n" else after_line(text, offset)
