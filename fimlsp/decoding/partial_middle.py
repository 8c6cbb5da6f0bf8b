"""The middle as decoding builds it, a token at a time.

The prompt is token-healed (`token_healing`, `FimModel.healed_prompt`): where the middle goes on from the left
context, the left context's last tokens are taken back, and the model's first tokens must write their bytes again
(`PartialMiddle.heal`) before anything it writes counts as the middle.
"""

from __future__ import annotations

from dataclasses import dataclass

from fimlsp.language import State


@dataclass
class PartialMiddle:
    """The middle up to a token boundary, with what is needed to judge it and to continue from it."""

    text: str
    pending: bytes
    state: State | None
    tokens: int
    log_probability: float = 0.0
    eos_probability: float = 0.0
    finish: str | None = None  # a known text that completes the file after this prefix (constrained mode)
    searched: bool = False  # a search for `finish` was run
    heal: bytes = b""  # bytes of the left context's last tokens still to be written again (token healing)


def after_healing(heal: bytes, data: bytes) -> tuple[bytes, bytes]:
    """A token's bytes that are new text while `heal` is still to be written again, and what then remains of
    `heal` (the token agrees with it: `FimModel.tokens_agreeing`)."""
    if data.startswith(heal):
        return data[len(heal):], b""
    return b"", heal[len(data):]
