"""What decoding needs of a FIM model engine, whatever runs it: transformers in-process, llama.cpp in-process, or a
shared server. Decoding talks only to this interface (and to the `Language`), so an engine is one module.

Log-probabilities cross it as NumPy arrays over the vocabulary (float32, `-inf` for a token the engine did not
rank): an engine that reports only its top candidates (a server's `logprobs`) leaves the rest at `-inf`.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fimlsp.lines import LINE_BREAK, line_starts
from fimlsp.model.formats import LEFT, RIGHT, FimFormat

# Tokens at the left context's end that token healing may take back (`FimModel.healed_prompt`).
MAX_HEALED_TOKENS = 4

# Taken-back byte strings whose agreeing tokens are kept (`FimModel.tokens_agreeing`).
MAX_KEPT_AGREEING = 1024

# The fewest tokens a prompt is cut to when a time budget would leave it fewer (`FimModel.prompt_tokens_within`),
# and the shortest prompt whose forward pass measures the model's speed (shorter ones are mostly overhead).
MIN_PROMPT_TOKENS = 64


@dataclass(frozen=True)
class Snippet:
    """A piece of another file of the repository for the prompt (`FimModel.prompt`'s `extra`): its path as the prompt
    names it (relative to the project or the package folder) and its text."""

    path: str
    text: str


class Session(ABC):
    """Sequences that go on from one prompt, a row each, decoded one token a step together: the rows share the
    prompt and always hold as many tokens as each other."""

    @abstractmethod
    def step(self, tokens: Sequence[int]) -> list[np.ndarray]:
        """Append `tokens[row]` to each row; the next token's log-probabilities of each row, in order."""

    @abstractmethod
    def keep(self, rows: Sequence[int]) -> None:
        """Keep only the given rows, in that order (a sequence that stopped leaves the batch)."""

    def close(self) -> None:
        """Release what the session holds (a cache, a connection)."""


class PromptPass(ABC):
    """The prompt read once, for every attempt that goes on from it."""

    log_probs: np.ndarray  # the first token's log-probabilities, after the prompt
    seconds: float  # what reading the prompt took

    @abstractmethod
    def session(self, rows: int = 1) -> Session:
        """A session of `rows` sequences going on from the prompt; may be called again for later attempts, each
        session independent of the others."""


@dataclass
class FimModel(ABC):
    """A loaded FIM model as decoding sees it: its vocabulary as bytes, its FIM format, its context window, and
    prompt passes that go on a token a step. The prompt and token-healing rules are the same for every engine
    and live here; an engine supplies `encode`, `control_id` and `prompt_pass`."""

    format: FimFormat
    order: str
    token_bytes: list[bytes | None]  # per token id; None for control and special tokens, which are never text
    stop_ids: frozenset[int]
    context_window: int
    name: str
    device: str  # where it runs, as a user reads it (`cpu`, `cuda:0`, a server's address)
    prompt_seconds_per_token: float | None = field(default=None, kw_only=True)  # measured (`timed_prompt`)

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """The ids of `text` as plain text (no special tokens added); lone surrogates read as U+FFFD."""

    @abstractmethod
    def control_id(self, piece: str) -> int:
        """The id of a FIM control token (`<fim_prefix>`)."""

    @abstractmethod
    def prompt_pass(self, ids: list[int], shared: bool = False, deadline: float | None = None) -> PromptPass:
        """Read the prompt `ids` (at once or at the first use): the first token's log-probabilities, and sessions
        that go on from it. `shared`: more than one session will be taken (the engine keeps the prompt's state
        apart from the first session's). `deadline` (a `time.perf_counter()` time): an engine that waits on
        another process stops waiting then and raises `OutOfTime`; one that computes in this process finishes
        the pass or step it is in."""

    @property
    def batches(self) -> bool:
        """Whether a session may hold several rows decoded side by side (else attempts go one after another)."""
        return False

    def close(self) -> None:
        """Release the engine (a loaded model, a connection pool)."""

    def timed_prompt(self, tokens: int, seconds: float) -> None:
        """Record a prompt's forward pass: the speed `prompt_tokens_within` expects, from passes long enough to
        measure it, half the latest, half what came before (the machine's load changes)."""
        if tokens < MIN_PROMPT_TOKENS:
            return
        rate = seconds / tokens
        previous = self.prompt_seconds_per_token
        self.prompt_seconds_per_token = rate if previous is None else (rate + previous) / 2

    def prompt_tokens_within(self, seconds: float) -> int | None:
        """The most prompt tokens whose forward pass should take at most `seconds`, never fewer than
        `MIN_PROMPT_TOKENS`; None (no cut) until a pass has been measured."""
        rate = self.prompt_seconds_per_token
        if rate is None or rate <= 0:
            return None
        return max(MIN_PROMPT_TOKENS, int(seconds / rate))

    def tokens_of(self, data: bytes) -> tuple[int, ...]:
        """The ids of the tokens whose bytes are exactly `data`."""
        return self._tokens_by_bytes.get(data, ())

    @cached_property
    def _tokens_by_bytes(self) -> dict[bytes, tuple[int, ...]]:
        found: dict[bytes, list[int]] = {}
        for token, data in enumerate(self.token_bytes):
            if data and token not in self.stop_ids:
                found.setdefault(data, []).append(token)
        return {data: tuple(tokens) for data, tokens in found.items()}

    def prompt(self, left: str, right: str, reserve: int, limit: int | None = None) -> list[int]:
        """Token ids of the FIM prompt, cutting the left context's start and the right context's end by tokens
        so that `reserve` tokens of middle still fit the context window, and the prompt has at most `limit` tokens."""
        pieces = []
        for piece in self.format.templates[self.order]:
            if piece in (LEFT, RIGHT):
                pieces.append(piece)
            elif piece in self.format.controls:
                pieces.append([self.control_id(piece)])
            else:
                pieces.append(self.encode(piece))
        fixed = sum(len(piece) for piece in pieces if isinstance(piece, list))
        room = max(0, min(self.context_window - reserve, limit or self.context_window) - fixed)
        left_ids = self._encode_end(left, room, from_end=True)
        right_ids = self._encode_end(right, room, from_end=False)
        if len(left_ids) + len(right_ids) > room:
            keep_right = min(len(right_ids), room // 2 if len(left_ids) > room // 2 else room - len(left_ids))
            keep_left = min(len(left_ids), room - keep_right)
            left_ids = left_ids[len(left_ids) - keep_left:]
            right_ids = right_ids[:keep_right]
        ids: list[int] = []
        for piece in pieces:
            ids.extend(left_ids if piece == LEFT else right_ids if piece == RIGHT else piece)
        return ids

    def healed_prompt(self, left: str, right: str, reserve: int, limit: int | None = None, *,
                      blanks: str) -> tuple[list[int], bytes]:
        """`prompt` with the left context's last tokens taken back, where the middle goes on from the left context
        (SPM order), and their bytes, which the middle's first tokens must write again (token healing).

        A cursor rarely falls where the tokenizer would end a token: after `return ` the prompt ends in a lone space
        token, which training text puts before a comment far more often than before code, so a model asked to go
        on from it writes a comment. Taken back, the space becomes the start of the token the model prefers there
        (` None`, ` x`). The last token is taken back, and the one before it too while what is taken back could
        still be the start of one token (`    pri` ends in ` p`, `ri`: both go, and ` print` can follow).

        So is the indentation of a line with nothing after the cursor, where an editor puts it after Enter: the
        tokenizer gives an indentation's last space to the word after it (a line break and seven spaces, then
        ` return`), so a prompt that ends in the whole indentation ends in a token that code rarely goes on from,
        and the model ended there at once (an empty middle) or wrote a stray space before its code. Nothing is
        taken back at a line's start (the middle may write its own indentation) or inside an indentation that the
        line goes on with. An indentation is made of the language's `blanks`."""
        ids = self.prompt(left, right, reserve, limit)
        last_line = left[line_starts(left)[-1]:]
        inside_indentation = not last_line.strip(blanks) and bool(right) and LINE_BREAK.match(right) is None
        if not last_line or inside_indentation or self.format.templates[self.order][-1] != LEFT:
            return ids, b""
        taken = b""
        count = 0
        while count < min(MAX_HEALED_TOKENS, len(ids)):
            data = self.token_bytes[ids[-1 - count]] if ids[-1 - count] < len(self.token_bytes) else None
            if not data or (count and not self._starts_a_token(data + taken)):
                break
            taken, count = data + taken, count + 1
        return ids[:len(ids) - count], taken

    def _starts_a_token(self, data: bytes) -> bool:
        """Whether some text token's bytes start with `data`."""
        spelled = self._spelled_tokens
        found = bisect.bisect_left(spelled, (data,))
        return found < len(spelled) and spelled[found][0].startswith(data)

    def tokens_agreeing(self, data: bytes) -> list[int]:
        """The ids of the text tokens that write `data` again or begin to: their bytes start with it (a run of the
        tokens sorted by their bytes), or are a non-empty start of it. Kept: every attempt of every completion
        after a space asks for the same thousands of tokens."""
        found = self._agreeing.get(data)
        if found is None:
            if len(self._agreeing) >= MAX_KEPT_AGREEING:
                self._agreeing.clear()
            found = self._agreeing[data] = self._find_agreeing(data)
        return found

    @cached_property
    def _agreeing(self) -> dict[bytes, list[int]]:
        return {}

    def _find_agreeing(self, data: bytes) -> list[int]:
        spelled = self._spelled_tokens
        found = [token for length in range(1, len(data)) for token in self.tokens_of(data[:length])]
        index = bisect.bisect_left(spelled, (data,))
        while index < len(spelled) and spelled[index][0].startswith(data):
            found.append(spelled[index][1])
            index += 1
        return found

    @cached_property
    def blank_tokens(self) -> list[tuple[int, int]]:
        """(id, length in bytes) of the text tokens that write only whitespace."""
        return [(token, len(data)) for data, tokens in self._tokens_by_bytes.items() if data.isspace()
                for token in tokens]

    @cached_property
    def _spelled_tokens(self) -> list[tuple[bytes, int]]:
        """(bytes, id) of every text token, sorted."""
        return sorted((data, token) for data, tokens in self._tokens_by_bytes.items() for token in tokens)

    def _encode_end(self, text: str, tokens: int, from_end: bool) -> list[int]:
        """At least `tokens` tokens of `text` next to the cursor (all of it if shorter), without encoding a large
        file whole: the slice grows until it yields enough tokens."""
        reach = 8 * max(tokens, 1)
        while True:
            piece = text[-reach:] if from_end else text[:reach]
            ids = self.encode(piece) if piece else []
            if len(ids) >= tokens or reach >= len(text):
                return ids
            reach *= 4


