"""Source files as users hand them over: bytes to text, and a (line, column) cursor to left and right contexts."""

from __future__ import annotations

import io
import tokenize


class SourceError(ValueError):
    """The source cannot be completed: not text, or the position is outside it."""


def read_source(data: bytes, name: str = "<input>") -> str:
    """Decode like Python does (a BOM or a PEP 263 coding line, UTF-8 otherwise); refuse binary files."""
    if b"\x00" in data:
        raise SourceError(f"{name}: is a binary file (it contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError) as error:
        raise SourceError(f"{name}: is not UTF-8 text and declares no usable encoding ({error})") from None
    except UnicodeDecodeError as error:
        raise SourceError(f"{name}: is not valid {error.encoding} text (byte {error.start})") from None


def split_at(text: str, line: int, column: int) -> tuple[str, str]:
    """Split at a 1-based line and 1-based column counted in characters (column = length + 1 is the line end)."""
    lines = text.splitlines(keepends=True) or [""]
    if text.endswith(("\n", "\r")):
        lines.append("")
    if not 1 <= line <= len(lines):
        raise SourceError(f"line {line} is outside the file (it has {len(lines)} lines)")
    content = lines[line - 1].rstrip("\r\n")
    if not 1 <= column <= len(content) + 1:
        raise SourceError(f"column {column} is outside line {line} (it has {len(content)} characters)")
    offset = sum(len(previous) for previous in lines[: line - 1]) + column - 1
    return text[:offset], text[offset:]
