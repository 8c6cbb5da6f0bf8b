"""The fill-in-the-middle transformation (Bavarian et al., 2022) and document packing.

Each document is cut into segments that fit one training context, so that the prefix, suffix and middle of a
FIM sample are all visible in the same window (context-level FIM). A segment is transformed with probability
`fim_rate`: two character positions chosen uniformly split it into prefix, middle and suffix, which are
tokenized separately and laid out in one of two orders:

- PSM: `<fim_prefix> prefix <fim_suffix> suffix <fim_middle> middle <|endoftext|>`
- SPM: `<fim_prefix> <fim_suffix> suffix <fim_middle> prefix middle <|endoftext|>` (the SPM variant of the
  paper's appendix, also used by StarCoder, in which prefix and middle stay contiguous)

Samples are then packed back to back into one token stream that is cut into fixed-length windows.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Iterable, Iterator, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class FimTokens:
    """Ids of the control tokens of the FIM layout."""

    prefix: int
    middle: int
    suffix: int
    eos: int


def split_at_random_points(text: str, rng: random.Random) -> tuple[str, str, str]:
    """Cut text at two uniformly random character positions into (prefix, middle, suffix)."""
    first, second = sorted((rng.randint(0, len(text)), rng.randint(0, len(text))))
    return text[:first], text[first:second], text[second:]


def psm_layout(prefix: list[int], middle: list[int], suffix: list[int], ids: FimTokens) -> list[int]:
    return [ids.prefix, *prefix, ids.suffix, *suffix, ids.middle, *middle, ids.eos]


def spm_layout(prefix: list[int], middle: list[int], suffix: list[int], ids: FimTokens) -> list[int]:
    return [ids.prefix, ids.suffix, *suffix, ids.middle, *prefix, *middle, ids.eos]


def segment_document(text: str, offsets: Sequence[tuple[int, int]], max_tokens: int) -> Iterator[str]:
    """Cut text at token boundaries into pieces of at most `max_tokens` tokens (offsets are per-token char spans)."""
    starts = [span[0] for span in offsets]
    for first in range(0, len(starts), max_tokens):
        begin = starts[first]
        end = starts[first + max_tokens] if first + max_tokens < len(starts) else len(text)
        if end > begin:
            yield text[begin:end]


class FimTransform:
    """Turns documents into training samples: context-sized segments, each FIM-transformed with probability fim_rate."""

    def __init__(self, tokenizer, ids: FimTokens, *, segment_tokens: int, fim_rate: float, spm_rate: float):
        self.tokenizer = tokenizer
        self.ids = ids
        self.segment_tokens = segment_tokens
        self.fim_rate = fim_rate
        self.spm_rate = spm_rate

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Tokenize plain text; control-token look-alikes inside source code stay ordinary text."""
        return self.tokenizer(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]

    def samples(self, documents: Iterable[str], rng: random.Random) -> Iterator[list[int]]:
        """Yield one token list per segment of each document, every sample ending with EOS."""
        for document in documents:
            encoded = self.tokenizer(
                document, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True
            )
            for segment in segment_document(document, encoded["offset_mapping"], self.segment_tokens):
                yield self.transform(segment, rng)

    def transform(self, segment: str, rng: random.Random) -> list[int]:
        """One sample: the segment as plain text or in PSM or SPM layout."""
        if rng.random() >= self.fim_rate:
            return [*self.encode([segment])[0], self.ids.eos]
        prefix, middle, suffix = self.encode(list(split_at_random_points(segment, rng)))
        layout = spm_layout if rng.random() < self.spm_rate else psm_layout
        return layout(prefix, middle, suffix, self.ids)


def pack(samples: Iterable[list[int]]) -> np.ndarray:
    """Concatenate samples into one token stream (each already ends with EOS, which separates documents)."""
    chunks = [np.asarray(sample, dtype=np.int32) for sample in samples]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)


def window_count(stream_length: int, seq_len: int) -> int:
    """How many training windows of seq_len inputs (plus one shifted target) a stream holds."""
    return max(0, (stream_length - 1) // seq_len)


def window(stream: np.ndarray, index: int, seq_len: int) -> np.ndarray:
    """The index-th window: seq_len + 1 tokens, the last token of one window being the first of the next."""
    start = index * seq_len
    return stream[start : start + seq_len + 1]
