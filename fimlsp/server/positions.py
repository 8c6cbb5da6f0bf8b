"""LSP positions and string offsets.

An LSP position is a 0-based line and a 0-based column counted in code units of the negotiated position
encoding: UTF-16 by default (a character outside the Basic Multilingual Plane counts 2), or UTF-8 / UTF-32.
Lines end at `\\n`, `\\r\\n` or `\\r` and nowhere else: unlike `str.splitlines`, a form feed or U+2028 inside a
line does not end it. A column past the end of its line means the line end, as the protocol says; a column in
the middle of a character (half a surrogate pair) means the start of that character.
"""

from __future__ import annotations

from bisect import bisect_right

from fimlsp.lines import line_end, line_starts

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)


class PositionError(ValueError):
    """The position is not in the document."""


def _units(character: str, encoding: str) -> int:
    code = ord(character)
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 1


def offset_at(text: str, line: int, character: int, encoding: str = UTF16, *, starts: list[int] | None = None) -> int:
    """The string offset of an LSP position; raises PositionError for a line outside the document."""
    check_encoding(encoding)
    starts = line_starts(text) if starts is None else starts
    if line < 0 or character < 0:
        raise PositionError(f"position {line}:{character} is negative")
    if line >= len(starts):
        raise PositionError(f"line {line} is outside the document (it has {len(starts)} lines)")
    start, end = starts[line], line_end(text, starts, line)
    return start + column_offset(text[start:min(end, start + character)], character, encoding)


def check_encoding(encoding: str) -> None:
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown position encoding {encoding!r}")


def content_end(line: str) -> int:
    """The length of `line` without its line break."""
    return len(line) - (2 if line.endswith("\r\n") else 1 if line.endswith(("\n", "\r")) else 0)


def column_offset(line: str, character: int, encoding: str = UTF16) -> int:
    """The offset in `line` (with or without its line break) of the LSP column `character` (at least 0)."""
    end = content_end(line)
    if encoding == UTF32 or line[:min(end, character)].isascii():  # a code unit per character
        return min(character, end)
    offset, units = 0, 0
    while offset < end:
        units += _units(line[offset], encoding)
        if units > character:
            break
        offset += 1
    return offset


def position_at(text: str, offset: int, encoding: str = UTF16) -> tuple[int, int]:
    """The LSP (line, character) of a string offset (clamped to the document)."""
    offset = max(0, min(offset, len(text)))
    starts = line_starts(text)
    line = bisect_right(starts, offset) - 1
    start = starts[line]
    offset = min(offset, line_end(text, starts, line))
    if encoding == UTF32:
        return line, offset - start
    return line, sum(_units(character, encoding) for character in text[start:offset])


def apply_change(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str, encoding: str = UTF16) -> str:
    """The text after replacing the range from `start` to `end` (LSP positions) by `new_text`.

    Lines past the document's end mean its end, so that a client's edit at the very end always applies.
    """
    starts = line_starts(text)

    def offset(position: tuple[int, int]) -> int:
        line, character = position
        if line >= len(starts):
            return len(text)
        return offset_at(text, max(0, line), max(0, character), encoding, starts=starts)

    first, last = offset(start), offset(end)
    if last < first:
        first, last = last, first
    return text[:first] + new_text + text[last:]
