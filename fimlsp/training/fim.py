"""The fill-in-the-middle transformation (Bavarian et al., 2022) and document packing.

Each document is cut into segments that fit one training context, so that the prefix, suffix and middle of a
FIM sample are all visible in the same window (context-level FIM). A segment is transformed with probability
`fim_rate` into prefix, middle and suffix by one cut of the span mixture (`SpanMix`):

- `random`: two character positions chosen uniformly (robustness to any cursor; long middles), or with
  `random_length="log"` a uniform start and a length drawn log-uniformly from zero characters to the segment's
  length (any cursor still, but most middles short: after two uniform points the middle averages a third of the
  segment, ~100 tokens, and the end of sequence comes too rarely to be learnt). About one in ten of those
  middles is empty, which teaches a model to end at once; `random_length="log-nonempty"` draws the length from
  one character;
- `line`: the rest of a line from a point inside it, or one to three whole lines (`fimlsp.cases.line_case`);
- `node`: one syntax node of the document inside the segment (`fimlsp.cases.node_spans`).

Line and node middles are mostly 1-64 tokens: they are the shapes an editor asks for, and the ones after which a
model must learn to write the end of sequence. The three parts are tokenized separately and laid out in one of
two orders, the prompt templates of the `fimlsp` format that decoding uses (`fimlsp.model.formats`), followed by the
middle and the end of sequence:

- PSM: `<fim_prefix> prefix <fim_suffix> suffix <fim_middle> middle <|endoftext|>`
- SPM: `<fim_prefix> <fim_suffix> suffix <fim_middle> prefix middle <|endoftext|>` (the SPM variant of the
  paper's appendix, also used by StarCoder, in which prefix and middle stay contiguous)

Segment lengths vary (`segment_document`), so that the end of sequence falls anywhere in a window, and samples
are packed into fixed-length windows that hold whole samples only (`pack`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from typing import Iterable, Iterator, Sequence

import numpy as np

from fimlsp.cases import cut_at_node, line_case, node_spans
from fimlsp.model.formats import FORMATS, LEFT, RIGHT

TRAINING_FORMAT = FORMATS["fimlsp"]


@dataclasses.dataclass(frozen=True)
class FimTokens:
    """Ids of the control tokens of the FIM layout."""

    prefix: int
    middle: int
    suffix: int
    eos: int

    def control(self, name: str) -> int:
        """The id of a control token of `TRAINING_FORMAT`."""
        return {"<fim_prefix>": self.prefix, "<fim_middle>": self.middle, "<fim_suffix>": self.suffix}[name]


@dataclasses.dataclass(frozen=True)
class SpanMix:
    """Shares of the FIM cuts; `random` takes what `line` and `node` leave, its middle's length drawn as
    `random_length` says (one of `RANDOM_LENGTHS`)."""

    line: float
    node: float
    random_length: str = "uniform"

    def __post_init__(self):
        if self.line < 0 or self.node < 0 or self.line + self.node > 1:
            raise ValueError("line and node span rates must be non-negative and sum to at most 1")
        if self.random_length not in RANDOM_LENGTHS:
            raise ValueError(f"random_length must be one of {', '.join(RANDOM_LENGTHS)}")


def split_at_random_points(text: str, rng: random.Random) -> tuple[str, str, str]:
    """Cut text at two uniformly random character positions into (prefix, middle, suffix)."""
    first, second = sorted((rng.randint(0, len(text)), rng.randint(0, len(text))))
    return text[:first], text[first:second], text[second:]


def split_at_short_random_span(text: str, rng: random.Random, nonempty: bool = False) -> tuple[str, str, str]:
    """Cut text into (prefix, middle, suffix) at a uniform start, the middle's length log-uniform in characters
    (median about the square root of the text's length), cut short by the text's end; from one character when
    `nonempty` (and the text is not empty), else from zero."""
    shortest = 1 if nonempty and text else 0
    start = rng.randint(0, len(text) - shortest)
    length = max(shortest, int(math.exp(rng.uniform(math.log(shortest + 1), math.log(len(text) + 1)))) - 1)
    end = min(len(text), start + length)
    return text[:start], text[start:end], text[end:]


RANDOM_SPLITS = {"uniform": split_at_random_points, "log": split_at_short_random_span,
                 "log-nonempty": functools.partial(split_at_short_random_span, nonempty=True)}
RANDOM_LENGTHS = tuple(RANDOM_SPLITS)


def layout(order: str, prefix: list[int], middle: list[int], suffix: list[int], ids: FimTokens) -> list[int]:
    """A sample: the prompt of `order` as decoding builds it, then the middle and the end of sequence."""
    sample: list[int] = []
    for piece in TRAINING_FORMAT.templates[order]:
        sample.extend(prefix if piece == LEFT else suffix if piece == RIGHT else [ids.control(piece)])
    return [*sample, *middle, ids.eos]


def segment_document(
    text: str, offsets: Sequence[tuple[int, int]], max_tokens: int, min_tokens: int | None = None,
    rng: random.Random | None = None,
) -> Iterator[tuple[int, str]]:
    """Cut text at token boundaries into pieces of at most `max_tokens` tokens (offsets are per-token char spans);
    yields each piece with the offset at which it starts.

    With `min_tokens` (and `rng`), each piece's length is drawn uniformly from [min_tokens, max_tokens]: samples of
    one fixed length all end at the same window position, and a model trained on them learns to write the end of
    sequence where the window ends rather than where the middle does."""
    starts = [span[0] for span in offsets]
    first = 0
    while first < len(starts):
        length = max_tokens
        if min_tokens is not None and rng is not None:
            length = rng.randint(min(min_tokens, max_tokens), max_tokens)
        begin = starts[first]
        end = starts[first + length] if first + length < len(starts) else len(text)
        if end > begin:
            yield begin, text[begin:end]
        first += length


class FimTransform:
    """Turns documents into training samples: segments of at most a context (at least `min_segment_tokens` when
    given), each FIM-transformed with probability fim_rate."""

    def __init__(
        self, tokenizer, ids: FimTokens, *, segment_tokens: int, fim_rate: float, spm_rate: float, spans: SpanMix,
        min_segment_tokens: int | None = None,
    ):
        self.tokenizer = tokenizer
        self.ids = ids
        self.segment_tokens = segment_tokens
        self.min_segment_tokens = min_segment_tokens
        self.fim_rate = fim_rate
        self.spm_rate = spm_rate
        self.spans = spans

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Tokenize plain text; control-token look-alikes inside source code stay ordinary text."""
        return self.tokenizer(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]

    def samples(self, documents: Iterable[str], rng: random.Random) -> Iterator[list[int]]:
        """Yield one token list per segment of each document, every sample ending with EOS."""
        for document in documents:
            encoded = self.tokenizer(
                document, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True
            )
            nodes = node_spans(document) if self.spans.node else {}
            segments = segment_document(
                document, encoded["offset_mapping"], self.segment_tokens, self.min_segment_tokens, rng
            )
            for offset, segment in segments:
                yield self.transform(segment, rng, offset, nodes)

    def transform(
        self, segment: str, rng: random.Random, offset: int = 0, nodes: dict[str, list[tuple[int, int]]] | None = None,
    ) -> list[int]:
        """One sample: the segment as plain text or in PSM or SPM layout, cut by a draw from the span mixture.

        `nodes` are the document's syntax-node spans and `offset` where the segment starts in it; a line or node
        cut that finds nothing to cut falls back to random points."""
        if rng.random() >= self.fim_rate:
            return [*self.encode([segment])[0], self.ids.eos]
        draw = rng.random()
        parts = None
        if draw < self.spans.line:
            parts = line_case(segment, rng)
        elif draw < self.spans.line + self.spans.node:
            parts = cut_at_node(segment, nodes or {}, rng, offset)
        if parts is None:
            parts = RANDOM_SPLITS[self.spans.random_length](segment, rng)
        prefix, middle, suffix = self.encode(list(parts))
        return layout("spm" if rng.random() < self.spm_rate else "psm", prefix, middle, suffix, self.ids)


def pack(samples: Iterable[list[int]], window_tokens: int, pad: int, open_windows: int = 16) -> np.ndarray:
    """Pack samples into windows of `window_tokens` tokens, each holding whole samples only, the rest padded.

    A FIM sample's middle must see its own prefix and suffix: split across two windows, its middle would be
    learnt without its context (which is what packing into a plain stream cut at fixed strides did). A window
    starts with a sample, as a prompt does at inference. Samples go first-fit into up to `open_windows` windows
    being filled (the fullest is closed when none has room), which keeps padding low when sample lengths vary.
    Samples longer than a window are dropped (segments are cut short enough that none is); `pad` fills the rest
    and is left out of the loss.
    """
    windows: list[np.ndarray] = []
    filling: list[list[int]] = []
    for sample in samples:
        if len(sample) > window_tokens:
            continue
        room = next((window for window in filling if len(window) + len(sample) <= window_tokens), None)
        if room is None:
            if len(filling) == open_windows:
                fullest = max(filling, key=len)
                filling.remove(fullest)
                windows.append(_padded(fullest, window_tokens, pad))
            room = []
            filling.append(room)
        room.extend(sample)
    windows.extend(_padded(window, window_tokens, pad) for window in filling)
    return np.stack(windows) if windows else np.zeros((0, window_tokens), dtype=np.int32)


def middle_ends(windows: np.ndarray, ids: FimTokens) -> np.ndarray:
    """Which next-token targets of packed windows are the end of sequence that closes a FIM middle.

    `windows` are token rows whose inputs are `[:, :-1]` and targets `[:, 1:]`; the result has the targets' shape.
    An end of sequence closes a middle when a `<fim_middle>` came after the previous end of sequence; a plain
    sample's end of sequence (where its segment was cut) says nothing about where a middle stops.
    """
    positions = np.arange(windows.shape[1])
    last_middle = np.maximum.accumulate(np.where(windows == ids.middle, positions, -1), axis=1)[:, :-1]
    last_eos = np.maximum.accumulate(np.where(windows == ids.eos, positions, -1), axis=1)[:, :-1]
    return (windows[:, 1:] == ids.eos) & (last_middle > last_eos)


def _padded(tokens: list[int], length: int, pad: int) -> np.ndarray:
    return np.asarray(tokens + [pad] * (length - len(tokens)), dtype=np.int32)


def repeat_candidates(windows: np.ndarray, ids: FimTokens, ngram: int) -> np.ndarray:
    """Per next-token target of packed windows, the token that would repeat an earlier n-gram of the text a model
    writes after `<fim_middle>` (SPM: the prefix and the middle; PSM: the middle), where the target is another
    token; -1 elsewhere. Same shape as the targets (`middle_ends`).

    A small model's middles end in loops (`import sys` line after line): greedy decoding follows the text it
    wrote before. Where the last `ngram - 1` tokens were seen before in the same middle, the token that followed
    them then is the one a loop writes; when the true next token differs, it is a negative for an unlikelihood
    loss (Welleck et al., 2019, with n-gram candidates rather than every earlier token)."""
    context = ngram - 1
    candidates = np.full((windows.shape[0], windows.shape[1] - 1), -1, dtype=np.int64)
    for row, window in enumerate(windows.tolist()):
        start = None  # where the current text after <fim_middle> begins
        seen: dict[tuple[int, ...], int] = {}
        for position in range(len(window) - 1):
            token = window[position]
            if token == ids.middle:
                start, seen = position + 1, {}
                continue
            if token == ids.eos:
                start, seen = None, {}
                continue
            if start is None or position + 1 - start < context:
                continue
            key = tuple(window[position + 1 - context:position + 1])
            following = seen.get(key)
            if following is not None and following != window[position + 1]:
                candidates[row, position] = following
            seen[key] = window[position + 1]
    return candidates
