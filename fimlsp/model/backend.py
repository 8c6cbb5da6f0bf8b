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
from fimlsp.model.formats import CURRENT_FILE, LEFT, REPOSITORY_NAME, RIGHT, FimFormat, Snippet

# Tokens at the left context's end that token healing may take back (`FimModel.healed_prompt`).
MAX_HEALED_TOKENS = 4

# Taken-back byte strings whose agreeing tokens are kept (`FimModel.tokens_agreeing`).
MAX_KEPT_AGREEING = 1024

# The fewest tokens a prompt is cut to when a time budget would leave it fewer (`FimModel.prompt_tokens_within`),
# and the shortest prompt whose forward pass measures the model's speed (shorter ones are mostly overhead).
MIN_PROMPT_TOKENS = 64

# The left and right contexts' share of a large window where repository context fills the rest: llama.cpp's server
# gives them its batch (2,048 tokens by default) and its `input_extra` the rest of the window.
LOCAL_CONTEXT_TOKENS = 2048

# Snippets whose tokens are kept (`FimModel.prompt`): repository context stays the same from keystroke to keystroke.
MAX_KEPT_SNIPPETS = 256


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
    extra_tokens: int | None = field(default=None, kw_only=True)  # set by a measurement: see `extra_tokens_budget`

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """The ids of `text` as plain text (no special tokens added); lone surrogates read as U+FFFD."""

    @abstractmethod
    def control_id(self, piece: str) -> int:
        """The id of a FIM control token (`<fim_prefix>`); KeyError where the vocabulary has no such token."""

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

    @property
    def extra_tokens_budget(self) -> int:
        """The most tokens of repository context a prompt holds (`prompt`'s `extra`): `extra_tokens` where a
        measurement set it, else what llama.cpp's server leaves beside `LOCAL_CONTEXT_TOKENS` for the left and right
        contexts, and a quarter of a window smaller than twice that (the shipped model's 512 tokens: 128)."""
        if self.extra_tokens is not None:
            return self.extra_tokens
        return max(self.context_window // 4, self.context_window - LOCAL_CONTEXT_TOKENS)

    def prompt(self, left: str, right: str, reserve: int, limit: int | None = None,
               extra: Sequence[Snippet] = ()) -> list[int]:
        """Token ids of the FIM prompt, cutting the left context's start and the right context's end by tokens
        so that `reserve` tokens of middle still fit the context window, and the prompt has at most `limit` tokens.

        `extra`, other files of the repository, the most useful first, go first (`fimlsp.model.formats`) and take
        the room `split_room` leaves them; a snippet that does not fit whole is left out. They are the same from
        keystroke to keystroke, so an engine's cache of a prompt's start keeps them."""
        pieces = []
        for piece in self.format.templates[self.order]:
            if piece in (LEFT, RIGHT):
                pieces.append(piece)
            elif piece in self.format.controls:
                pieces.append([self.control_id(piece)])
            else:
                pieces.append(self.encode(piece))
        fixed = sum(len(piece) for piece in pieces if isinstance(piece, list))
        whole = max(0, self.context_window - reserve - fixed)
        room = max(0, min(self.context_window - reserve, limit or self.context_window) - fixed)
        left_ids = self._encode_end(left, room, from_end=True)
        right_ids = self._encode_end(right, room, from_end=False)
        extra_ids: list[int] = []
        if extra:
            most = split_room(room, whole, self.extra_tokens_budget, len(left_ids) + len(right_ids))
            extra_ids = self._extra_ids(extra, most)
        keep_left, keep_right = split_local(room - len(extra_ids), len(left_ids), len(right_ids))
        left_ids = left_ids[len(left_ids) - keep_left:]
        right_ids = right_ids[:keep_right]
        files_first = self._repository_tokens is not None
        ids: list[int] = extra_ids if files_first else []
        for piece in pieces:
            if piece == LEFT and not files_first:
                ids.extend(extra_ids)
            ids.extend(left_ids if piece == LEFT else right_ids if piece == RIGHT else piece)
        return ids

    def _extra_ids(self, extra: Sequence[Snippet], tokens: int) -> list[int]:
        """At most `tokens` tokens of repository context: whole snippets, in their order, each that fits."""
        files = self._repository_tokens
        opening = [files[0]] + self._encoded(REPOSITORY_NAME + "\n") if files else []
        closing = [files[1]] + self._encoded(CURRENT_FILE + "\n") if files else []
        used = len(opening) + len(closing)
        body: list[int] = []
        for snippet in extra:
            ids = self._snippet_ids(snippet)
            if used + len(ids) <= tokens:
                body.extend(ids)
                used += len(ids)
        return opening + body + closing if body else []

    def _snippet_ids(self, snippet: Snippet) -> list[int]:
        """A snippet as the format writes another file: its separator, path and text, or a path comment and text."""
        files = self._repository_tokens
        if files:
            return [files[1]] + self._encoded(snippet.path + "\n") + self._encoded(snippet.text)
        text = snippet.text if snippet.text.endswith("\n") else snippet.text + "\n"
        return self._encoded(f"{self.format.path_comment}{snippet.path}\n{text}")

    def _encoded(self, text: str) -> list[int]:
        """`encode`, kept for the snippets that come back with every keystroke."""
        kept = self._kept_encodings
        found = kept.get(text)
        if found is None:
            if len(kept) >= MAX_KEPT_SNIPPETS:
                kept.clear()
            found = kept[text] = self.encode(text)
        return found

    @cached_property
    def _kept_encodings(self) -> dict[str, list[int]]:
        return {}

    @cached_property
    def _repository_tokens(self) -> tuple[int, int] | None:
        """The ids of the format's repository-name and file-separator tokens, where the vocabulary has both."""
        if self.format.repository is None:
            return None
        try:
            return self.control_id(self.format.repository[0]), self.control_id(self.format.repository[1])
        except KeyError:
            return None

    def healed_prompt(self, left: str, right: str, reserve: int, limit: int | None = None, *,
                      blanks: str, extra: Sequence[Snippet] = ()) -> tuple[list[int], bytes]:
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
        ids = self.prompt(left, right, reserve, limit, extra)
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


def split_room(room: int, whole: int, budget: int, local: int) -> int:
    """The most tokens of repository context in a prompt with `room` tokens for its contexts (`whole` where no time
    budget cuts it) whose left and right contexts have `local` tokens: those come first, up to what the model's
    `budget` for repository context leaves of the whole room (a quarter of it at least), and the repository context
    takes what they leave, up to the budget; where they fill the room, none."""
    budget = max(0, min(budget, whole * 3 // 4))
    return max(0, min(budget, room - min(local, whole - budget)))


def split_local(room: int, left: int, right: int) -> tuple[int, int]:
    """The tokens kept of a left and a right context of `left` and `right` tokens in `room`: all of both where they
    fit, else half each, a side that needs less giving the rest to the other."""
    if left + right <= room:
        return left, right
    keep_right = min(right, room // 2 if left > room // 2 else room - left)
    return min(left, room - keep_right), keep_right
