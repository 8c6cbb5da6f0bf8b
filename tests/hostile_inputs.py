"""Hostile documents for the library, the CLI and the server: one table, each document built by a small function.

A case is the file's bytes and a cursor (1-based line, 1-based column in characters, as `fimlsp complete`
takes it). A case whose bytes Python cannot read as source names the `problem` that `read_source` must report in
its one-line error. `text` is the document as an editor holds it and an LSP client sends it: the decoded source,
or for bytes that do not decode, the closest JSON string (undecodable bytes become U+FFFD, a NUL byte is a "\\x00"
character, and an encoded surrogate a lone surrogate, which JSON escapes carry).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fimlsp.source import read_source, split_at

MEGABYTE = 1 << 20
DEEP_BRACKETS = 10_000
DEEP_INDENT = 1_400  # levels; a level costs a column on every line below, so 1,400 is ~1 MB


@dataclass(frozen=True)
class Hostile:
    name: str
    data: bytes
    line: int  # 1-based
    column: int  # 1-based, in characters
    description: str
    problem: str | None = None  # for bytes that are not Python source: a word the error message must contain

    @property
    def text(self) -> str:
        """The document as an editor holds it (see the module's text)."""
        if self.problem is None:
            return read_source(self.data)
        try:
            return self.data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return self.data.decode("utf-8", "replace")

    def split(self) -> tuple[str, str]:
        """The left and right contexts of the cursor in `text`."""
        return split_at(self.text, self.line, self.column)

    @property
    def target(self) -> str:
        return f"{self.line}:{self.column}"


def _binary() -> Hostile:
    noise = random.Random(263).randbytes(64 * 1024)
    return Hostile("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + noise, 1, 1,
                   "a PNG header and 64 kB of random bytes", problem="binary")


def _invalid_utf8() -> Hostile:
    return Hostile("invalid-utf8", b"x = 1\ny = '\xff\xfe caf\xc3'\nz = 3\n", 3, 5,
                   "lone 0xff/0xfe and a truncated 2-byte sequence in a string, no coding line", problem="utf-8")


def _encoded_surrogate() -> Hostile:
    return Hostile("utf8-encoded-surrogate", b"x = '\xed\xa0\x80'\n", 1, 6,
                   "a UTF-8-encoded lone surrogate (CESU), which is invalid UTF-8", problem="utf-8")


def _escaped_surrogate() -> Hostile:
    return Hostile("unicode-escape-surrogate", b'# coding: unicode_escape\nx = "\\ud800"\ny = 1\n', 3, 5,
                   "a unicode_escape coding line that decodes an escape to a lone surrogate", problem="surrogate")


def _nul_bytes() -> Hostile:
    return Hostile("nul-bytes", b"x = 1\ny = 'a\x00b'\n\x00z = 3\n", 1, 6,
                   "NUL bytes inside a string and at a line start of otherwise valid text", problem="NUL")


def _long_list() -> Hostile:
    items = MEGABYTE // 3
    line = "x = [" + ", ".join("0" * items) + "]\n"
    return Hostile("long-list-line", line.encode(), 1, len(line) // 2,
                   f"a 1 MB single line: a list literal of {items:,} zeros, the cursor in its middle")


def _long_comment() -> Hostile:
    line = "# " + "comment " * (MEGABYTE // 8) + "\n"
    text = "x = 1\n" + line + "y = 2\n"
    return Hostile("long-comment-line", text.encode(), 2, len(line) // 2,
                   "a 1 MB comment line between two statements, the cursor in its middle")


def _long_line_end() -> Hostile:
    line = "x = " + " + ".join(["1"] * (MEGABYTE // 4)) + "\n"
    return Hostile("long-expression-line-end", line.encode(), 1, len(line),
                   "a 1 MB expression on one line, the cursor at its end")


def _deep_brackets() -> Hostile:
    text = "x = " + "[" * DEEP_BRACKETS + "]" * DEEP_BRACKETS + "\n"
    return Hostile("deep-brackets", text.encode(), 1, 5 + DEEP_BRACKETS,
                   f"{DEEP_BRACKETS:,} nested brackets (CPython allows 200), the cursor at the innermost")


def _deep_brackets_unclosed() -> Hostile:
    text = "y = 1\nx = " + "(" * DEEP_BRACKETS + "\n"
    return Hostile("deep-brackets-unclosed", text.encode(), 2, 5 + DEEP_BRACKETS,
                   f"{DEEP_BRACKETS:,} opened parentheses and no closing one, the cursor at the line end")


def _deep_indentation() -> Hostile:
    lines = [" " * depth + "if x:\n" for depth in range(DEEP_INDENT)] + [" " * DEEP_INDENT + "pass\n"]
    text = "".join(lines)
    return Hostile("deep-indentation", text.encode(), DEEP_INDENT + 1, DEEP_INDENT + 1,
                   f"{DEEP_INDENT:,} nested `if x:` blocks (CPython allows 100), the cursor before the last `pass`")


def _deep_indentation_shallow_cursor() -> Hostile:
    lines = [" " * depth + "if x:\n" for depth in range(DEEP_INDENT)] + [" " * DEEP_INDENT + "pass\n", "y = 1\n"]
    return Hostile("deep-indentation-cursor-at-top", "".join(lines).encode(), 1, 1,
                   f"{DEEP_INDENT:,} nested blocks after the cursor, which is at the start of the file")


def _tab_indentation() -> Hostile:
    lines = ["\t" * depth + "if x:\n" for depth in range(DEEP_INDENT)] + ["\t" * DEEP_INDENT + "pass\n"]
    return Hostile("deep-tab-indentation", "".join(lines).encode(), DEEP_INDENT // 2, DEEP_INDENT // 2,
                   f"{DEEP_INDENT:,} levels indented with tabs, the cursor halfway down at the line's first token")


def _wide_indentation() -> Hostile:
    text = "if x:\n" + " " * MEGABYTE + "y = 1\n"
    return Hostile("1MB-indentation-column", text.encode(), 2, MEGABYTE // 2,
                   "one block indented by a million spaces, the cursor inside the indentation")


def _long_triple_quoted() -> Hostile:
    body = "".join(f"line {number} of a long docstring\n" for number in range(3_500))
    text = 'x = 1\ns = """' + body + '"""\ny = 2\n'
    return Hostile("cursor-in-100kB-triple-quoted-string", text.encode(), 2 + 1_750, 6,
                   f"the cursor inside a {len(body) // 1000} kB triple-quoted string")


def _long_single_line_string() -> Hostile:
    body = "abcdefghij" * 10_000
    text = f"x = 1\ns = '{body}'\ny = 2\n"
    return Hostile("cursor-in-100kB-string-line", text.encode(), 2, 6 + len(body) // 2,
                   "the cursor in the middle of a 100 kB single-quoted string on one line")


_SMALL = "import os\n\n\ndef f(a, b):\n    if a:\n        return b\n    return os.sep\n\n\nprint(f(1, 2))\n"


def _crlf() -> Hostile:
    return Hostile("crlf", _SMALL.replace("\n", "\r\n").encode(), 6, 16, "CRLF line endings, the cursor after `b`")


def _mixed_endings() -> Hostile:
    lines = _SMALL.splitlines(keepends=True)
    endings = ["\n", "\r\n", "\r"]
    text = "".join(line.rstrip("\n") + endings[index % 3] for index, line in enumerate(lines))
    return Hostile("mixed-endings", text.encode(), 6, 16, "\\n, \\r\\n and \\r line endings in turn")


def _lone_cr() -> Hostile:
    return Hostile("cr-only", _SMALL.replace("\n", "\r").encode(), 5, 9, "old Mac \\r line endings only")


def _form_feeds() -> Hostile:
    text = "\fimport os\n\f\n\fdef f():\n\f    x = 1\n\f    return x  \f# c\n\f\nprint(f())\n"
    return Hostile("form-feeds", text.encode(), 5, 6, "form feeds at line starts, before indentation and a comment")


def _bom() -> Hostile:
    return Hostile("bom", b"\xef\xbb\xbf" + _SMALL.encode(), 1, 1, "a UTF-8 BOM, the cursor at the very start")


def _bom_with_other_coding() -> Hostile:
    text = b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nx = 1\n"
    return Hostile("bom-and-latin1-coding", text, 2, 3, "a UTF-8 BOM and a coding line that says latin-1",
                   problem="byte order mark")


def _bad_codec() -> Hostile:
    return Hostile("punycode-coding-line", b"# coding: punycode\nx = 1\n", 2, 1,
                   "a coding line naming a codec that fails on the file (a UnicodeError with no position)",
                   problem="punycode")


def _latin1() -> Hostile:
    text = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\nprint(name)\n".encode("latin-1")
    return Hostile("pep263-latin1", text, 2, 12, "a PEP 263 latin-1 file with a non-ASCII byte")


def _tabs_and_spaces() -> Hostile:
    text = "if x:\n\tif y:\n\t    z = 1\n\t    w = 2\n\tv = 3\n"
    return Hostile("tabs-and-spaces-consistent", text.encode(), 4, 6,
                   "a tab then four spaces, consistently: valid Python")


def _tab_error() -> Hostile:
    text = "if x:\n\tif y:\n\t\tz = 1\n        w = 2\n"
    return Hostile("tabs-and-spaces-taberror", text.encode(), 3, 3,
                   "a tab-indented block continued with eight spaces: a TabError")


def _empty() -> Hostile:
    return Hostile("empty", b"", 1, 1, "an empty file")


def _whitespace_only() -> Hostile:
    return Hostile("whitespace-only", b"  \n\t\n\f\n   \r\n\n", 3, 2, "spaces, tabs, a form feed and blank lines only")


def _unicode_lines() -> Hostile:
    text = "s = 'a\u2028b'  # U+2028 and U+0085 \x85 inside\nt = '😋'\n"
    return Hostile("unicode-line-separators", text.encode(), 2, 7,
                   "U+2028, U+0085 and a non-BMP character, which end no line in Python or LSP")


CASES: list[Hostile] = [
    make() for make in (
        # bytes that are not Python source
        _binary, _invalid_utf8, _encoded_surrogate, _escaped_surrogate, _nul_bytes, _bom_with_other_coding, _bad_codec,
        # size and depth
        _long_list, _long_comment, _long_line_end, _deep_brackets, _deep_brackets_unclosed, _deep_indentation,
        _deep_indentation_shallow_cursor, _tab_indentation, _wide_indentation, _long_triple_quoted,
        _long_single_line_string,
        # line ends, whitespace and encodings
        _crlf, _mixed_endings, _lone_cr, _form_feeds, _bom, _latin1, _tabs_and_spaces, _tab_error, _empty,
        _whitespace_only, _unicode_lines,
    )
]
BY_NAME = {case.name: case for case in CASES}
