"""Random-span fill-in-the-middle cases, built as in Sec. VII-A of Melcer et al.

For each file: a start point uniform in the first 90% of the file; the deleted span runs for
min(100 characters, 20% of the file) or to the end of the file, whichever comes first. The text before the span
is the left context, the span is the expected middle, the rest is the right context.

Cases are deterministic for a seed and independent of the order in which files are given: each file's random
draw is seeded by the seed and the file's content, and files are visited in an order fixed by the same hash.
With `per_file=K`, a file gives up to K cases (the paper draws 10 per file): draw 0 is the single-case draw, draw
k > 0 is seeded by the same key and k; splits that repeat an earlier draw of the same file are skipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from typing import Iterable, Iterator

from fimlsp.lines import line_starts, split_lines

MAX_SPAN_CHARS = 100
MAX_SPAN_SHARE = 0.2
START_SHARE = 0.9


@dataclasses.dataclass(frozen=True)
class Case:
    """One FIM case: the model sees `left` and `right` and should produce `middle`."""

    name: str
    left: str
    middle: str
    right: str
    draw: int = 0  # which of the file's draws made it (0 unless `per_file` > 1)


def random_span_case(text: str, rng: random.Random) -> tuple[str, str, str]:
    """Split text into (left, middle, right) by the Sec. VII-A rule; middle is empty only for tiny texts."""
    start = rng.randrange(max(1, int(len(text) * START_SHARE)))
    end = min(start + min(MAX_SPAN_CHARS, int(len(text) * MAX_SPAN_SHARE)), len(text))
    return text[:start], text[start:end], text[end:]


def case_key(seed: int, text: str) -> str:
    """A per-file seed derived from the run's seed and the file's content, never from its position."""
    return hashlib.sha256(f"{seed}:".encode() + text.encode("utf-8", "surrogatepass")).hexdigest()


def draw_seed(key: str, draw: int) -> str:
    """The seed of a file's `draw`-th case: the file's key itself for draw 0, as in the one-case-per-file rule."""
    return key if draw == 0 else f"{key}:{draw}"


def _cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None, per_file: int, split, prefix: str = "",
) -> Iterator[Case]:
    if per_file < 1:
        raise ValueError("per_file must be at least 1")
    keyed = sorted(((case_key(seed, text), name, text) for name, text in files), key=lambda item: (item[0], item[1]))
    produced = 0
    for key, name, text in keyed:
        seen: set[tuple[int, int]] = set()
        for draw in range(per_file):
            if count is not None and produced >= count:
                return
            parts = split(text, random.Random(prefix + draw_seed(key, draw)))
            if parts is None or not parts[1]:
                continue
            left, middle, right = parts
            if (len(left), len(middle)) in seen:
                continue
            seen.add((len(left), len(middle)))
            produced += 1
            yield Case(name, left, middle, right, draw)


def random_span_cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None = None, per_file: int = 1,
) -> Iterator[Case]:
    """Yield up to `count` cases from (name, text) pairs, `per_file` draws per file (one by default), skipping files
    too small to hold a span."""
    return _cases(files, seed, count, per_file, random_span_case)


MAX_BOUNDARY_TOKENS = 40


def boundary_case(text: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Split text between two tokens at the same indentation level, cutting into the first token (Sec. VII-A).

    The middle runs from a random offset inside the first token to the start of the second, which is one of the
    next `MAX_BOUNDARY_TOKENS` tokens at the same indentation level: an IDE user completing as they type. Tokens
    come from the standard library's `tokenize` (dataset construction only). None if the text has no such pair.
    Tokenizer and offsets read the same lines (`fimlsp.lines`), so a cut never falls inside a token.
    """
    import tokenize

    skipped = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT,
               tokenize.ENDMARKER, tokenize.ENCODING}
    try:
        raw = list(tokenize.generate_tokens(iter(split_lines(text)).__next__))
    except (tokenize.TokenError, SyntaxError):
        return None
    line_offsets = line_starts(text)
    level = 0
    tokens: list[tuple[int, int, int]] = []  # (level, start offset, end offset)
    for token in raw:
        if token.type == tokenize.INDENT:
            level += 1
        elif token.type == tokenize.DEDENT:
            level -= 1
        if token.type in skipped or not token.string:
            continue
        start = line_offsets[token.start[0] - 1] + token.start[1]
        end = line_offsets[token.end[0] - 1] + token.end[1]
        tokens.append((level, start, end))
    if len(tokens) < 2:
        return None
    for _ in range(20):
        first = rng.randrange(len(tokens) - 1)
        level, start, end = tokens[first]
        following = [t for t in tokens[first + 1: first + 1 + MAX_BOUNDARY_TOKENS] if t[0] == level]
        if following:
            second = rng.choice(following)
            cut = start + rng.randrange(end - start)
            return text[:cut], text[cut:second[1]], text[second[1]:]
    return None


def boundary_cases(
    files: Iterable[tuple[str, str]], seed: int, count: int | None = None, per_file: int = 1,
) -> Iterator[Case]:
    """Like `random_span_cases`, with `boundary_case` cuts."""
    return _cases(files, seed, count, per_file, boundary_case, prefix="boundary:")
