"""Source files as users hand them over: bytes to text, and a (line, column) cursor to left and right contexts.

Lines are counted by `fimlsp.lines`, as CPython and LSP count them, so line numbers agree with the ones compilers
and editors print.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize

from fimlsp.lines import line_end, line_starts

_SURROGATE = re.compile("[\ud800-\udfff]")


class SourceError(ValueError):
    """The source cannot be completed: not text, or the position is outside it."""


def read_source(data: bytes, name: str = "<input>") -> str:
    """Decode like Python does (a BOM or a PEP 263 coding line, UTF-8 otherwise); refuse binary files."""
    if b"\x00" in data:
        raise SourceError(f"{name}: is a binary file (it contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if data.startswith(codecs.BOM_UTF8):
            raise SourceError(f"{name}: starts with a UTF-8 byte order mark but declares another encoding") from None
        raise SourceError(f"{name}: is not UTF-8 text and declares no usable encoding ({error})") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceError(f"{name}: is not valid {error.encoding} text (byte {error.start})") from None
    except UnicodeError as error:  # codecs like punycode fail without a position
        raise SourceError(f"{name}: is not valid {encoding} text ({error})") from None
    except LookupError:  # a codec that maps bytes to bytes, like rot13 or hex
        raise SourceError(f"{name}: declares the encoding {encoding!r}, which is not a text encoding") from None
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:  # `# coding: unicode_escape` can make one; CPython refuses such a file too
        raise SourceError(f"{name}: decodes to a lone surrogate (U+{ord(surrogate.group()):04X} at character "
                          f"{surrogate.start()}), which Python source cannot contain")
    return text


def split_at(text: str, line: int, column: int) -> tuple[str, str]:
    """Split at a 1-based line and 1-based column counted in characters (column = length + 1 is the line end)."""
    starts = line_starts(text)
    if not 1 <= line <= len(starts):
        raise SourceError(f"line {line} is outside the file (it has {len(starts)} lines)")
    start = starts[line - 1]
    length = line_end(text, starts, line - 1) - start
    if not 1 <= column <= length + 1:
        raise SourceError(f"column {column} is outside line {line} (it has {length} characters)")
    offset = start + column - 1
    return text[:offset], text[offset:]
