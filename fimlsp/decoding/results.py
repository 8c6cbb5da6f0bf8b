"""What a completion produced, and how completions rank and which may be shown."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from fimlsp.language import NONE


@dataclass
class Completion:
    """What a completion produced and what it cost."""

    middle: str
    parses: bool | None  # the language judges left + middle + right valid (Python: it compiles); None: not checked
    mode: str
    stop: str  # why generation stopped: eos, line, statement, right, max_tokens, context_full, no_candidate, loop,
    # timeout, cancelled, line_break (single-line: the model broke the line where the file was not valid)
    ending: str = "none"  # how the middle ended: eos, finish, line, statement, right, fallback, none (see the module's
    # text)
    finish_chars: int = 0  # characters written after decoding was steered toward the end (or a fallback added)
    tokens: int = 0  # tokens in the middle returned
    log_probability: float = 0.0  # the model's log-probability of the middle's tokens
    candidates_tried: int = 0
    finish_searches: int = 0  # shortest-finish searches run
    model_seconds: float = 0.0
    setup_seconds: float = 0.0  # one-time constraint setup: constrain(left, right)
    constraint_seconds: float = 0.0  # every feed, distance, membership test, parse check and search of decoding
    fallback: bool = False  # the middle was not ended by the model's end of sequence, a steered finish or a line
    generated_tokens: int = 0  # tokens generated, which the fallback may have cut back
    guarantee: str = NONE  # what the middle was checked against: file, region or none
    region: tuple[int, int] | None = None  # first and last line of the file that a region guarantee covers
    unchecked: bool = False  # constrained mode could not constrain (see `reason`), and the middle it decoded
    # unconstrained was checked against nothing (one that happens to make the file parse is `file`)
    reason: str = ""  # why the guarantee is narrower than the whole file
    max_tokens: int | None = None  # the token limit that applied: the option's, or what the context window left
    prompt_tokens: int = 0  # tokens of the prompt the model read: a time budget cuts it to what fits its share
    scope: str = "file"  # the scope the constrained middle kept to: block, or file (asked for, or fallen back to)
    repeated_chars: int = 0  # characters cut from the end because they wrote again the right context's first lines
    refusal: str = ""  # where decoding found no token to go on with, and what the language allowed there (or why
    # the fallback gave no end, or why the language refused the end once its late answers came)
    loop_chars: int = 0  # characters of a loop cut from the end of what the model wrote (`loop_repeats`)
    search_seconds: float = 0.0  # of constraint_seconds, the shortest-finish searches (the start's, near the token
    # limit, a fallback's): a few a completion, whatever its length, so not a cost per token
    # the log-probability of the model's token that ended the middle (its end of sequence, or the token that began
    # the rest of the line or the next statement); None when the model did not end it (a steered finish, a fallback)
    end_log_probability: float | None = None

    @property
    def valid(self) -> bool:
        """The middle passed the check its guarantee names."""
        return self.guarantee != NONE

    @property
    def constraint_ms_per_token(self) -> float:
        """What the constraint costs each generated token: feeds, distance bounds, membership and parse checks."""
        return 1e3 * (self.constraint_seconds - self.search_seconds) / max(1, self.generated_tokens)

    def to_json(self) -> dict:
        data = asdict(self)
        data["constraint_ms_per_token"] = self.constraint_ms_per_token
        return data


def shown(result: Completion) -> bool:
    """Whether a middle may be shown to a user: it passed the check its mode asks for (`valid`: the file compiles
    with it or, in a file that admits no middle, the region of its promise does), or the mode asks for none
    (`unconstrained`). An unchecked middle, decoded without a constraint in the constrained mode, was judged by the
    language's judge (compile) on the whole file: it is shown only as a valid one, so that a setup that ran out of time (or
    of middles) never lets a middle break a file that is valid but for it."""
    return result.valid or result.mode == "unconstrained"


def preference(result: Completion) -> tuple[bool, bool, float]:
    """How middles rank: valid before invalid (the checked and constrained modes; the model alone is not judged);
    ended by the model (its end of sequence, a steered finish) or where it was asked to end (line, statement, the
    right context) before those a fallback cut or nothing ended; then by the model's mean log-probability per token,
    the token that ended the middle counted (an empty middle is worth its end's probability)."""
    ended_by_token = result.end_log_probability is not None
    counted = result.tokens + ended_by_token
    total = result.log_probability + (result.end_log_probability or 0.0)
    mean = total / counted if counted else -math.inf
    judged = result.valid or result.mode == "unconstrained"
    return judged, result.ending not in ("fallback", "none"), mean

