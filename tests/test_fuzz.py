"""Fuzz targets: the quotient API on arbitrary text, and the server's document sync against a brute-force oracle.

The example counts are small so that the suite stays fast; set `FIMLSP_FUZZ_EXAMPLES` to run every target
with that many examples instead, e.g.

    FIMLSP_FUZZ_EXAMPLES=100000 python -m pytest tests/test_fuzz.py

Hypothesis keeps the failures it finds in `.hypothesis/` and replays them first on the next run.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fimlsp import quotient
from fimlsp.python.syntax import compiles
from fimlsp.server.documents import Documents
from fimlsp.server.positions import ENCODINGS
from tests.oracles import compilable

FUZZ_EXAMPLES = int(os.environ.get("FIMLSP_FUZZ_EXAMPLES", "0"))


def fuzz(default: int):
    """Hypothesis settings: `default` examples, or `FIMLSP_FUZZ_EXAMPLES` when it is set."""
    return settings(max_examples=FUZZ_EXAMPLES or default, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------------------------- the quotient API

# Pieces that reach the lexer's corners: line ends of every kind, form feeds, NUL, a lone surrogate, non-ASCII
# names, U+2028 (no line end in Python), string prefixes and quotes, continuations, brackets and keywords.
PIECES = [
    " ", "\t", "\f", "\n", "\r", "\r\n", "\x00", "\ud800", "\u2028", "\x85", "é", "😋", "\ufeff", "x", "_1", "0",
    "0x", "1e", "1.", ".", "..", "j", "(", ")", "[", "]", "{", "}", "'", '"', "'''", '"""', "f'", "rb'", "{x}",
    "\\", "\\\n", "#", ":", ",", ";", "=", "+", "*", "**", "->", ":=", "@", "!", "$", "?", "`", "if ", "else",
    "elif ", "def ", "class ", "return", "pass", "lambda", "async ", "await ", "match ", "case ", "    ",
]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.characters()), max_size=24).map("".join)
# Middles a user or a model may type: if one of these makes the file valid, the state before it was alive.
TAILS = ("", "\n", ")", "]", "'", '"', "pass\n", ":\n    pass\n")


@fuzz(300)
@given(TEXT, st.integers(0, 10_000), st.lists(TEXT, max_size=4))
def test_quotient_never_raises_and_complete_is_exact(text, cut, chunks):
    """Anything split anywhere and fed in any chunks: no exception, `complete` agrees with `ast.parse`, and a
    state is None only where no tail makes the file valid."""
    cut %= len(text) + 1
    left, right = text[:cut], text[cut:]
    state = quotient(left, right)
    fed = ""
    for chunk in chunks:
        if state is None:
            break
        assert state.complete == compiles(left + fed + right), (left, fed, right)
        state = state.feed(chunk)
        fed += chunk
    if state is None:
        assert not any(compiles(left + fed + tail + right) for tail in TAILS), (left, fed, right)
    else:
        assert state.complete == compiles(left + fed + right), (left, fed, right)


SIMPLE_STATEMENTS = [
    "x = 1", "y = (a,\n     b)", "s = 'a\\'b' \"c\" r'\\d'", "e = b'e' rb'\\x'", 'd = """doc\n  string"""',
    "z = [i for i in y if i]", "f(x, *a, k=1, **kw)", "pass", "import os.path as p", "from . import (a,\n  b)",
    "x += 1; y = 2", "t = 1if x else 2", "n = 0x1f + 1e-3j + 1_000 + .5", "g = lambda a, /, *b: a",
    "total = 1 + \\\n    2", "v = f'{x!r:>{w}}'", "del a[1:2, ::3]", "assert x, 'msg'", "return x", "yield",
    "raise E from e", "x: int = 0", "é = π = 1", "print(x)  # comment ( [",
]
HEADERS = ["if x:", "while x:", "for i in y:", "def f(a, b=1):", "class C(B):", "with a as b:", "async def g():",
           "try:"]
TRAILERS = {"if x:": "else:", "while x:": "else:", "for i in y:": "else:", "try:": "finally:"}


def _statement(children):
    """A compound statement: a header, a block of children, and the trailer a `try` needs (optional for others)."""
    return st.tuples(st.sampled_from(HEADERS), st.lists(children, min_size=1, max_size=3), st.booleans(),
                     st.lists(children, min_size=1, max_size=2)).map(_compound)


def _compound(parts):
    header, body, trailed, tail = parts
    lines = [(0, header)] + [(depth + 1, line) for statement in body for depth, line in statement]
    if header == "try:" or (trailed and header in TRAILERS):
        lines += [(0, TRAILERS[header])] + [(depth + 1, line) for statement in tail for depth, line in statement]
    return lines


STATEMENTS = st.recursive(st.sampled_from(SIMPLE_STATEMENTS).map(lambda line: [(0, line)]), _statement,
                          max_leaves=8)


@st.composite
def valid_modules(draw) -> str:
    """A module that CPython compiles, in one of many lexical styles: indentation unit, line ends, form feeds,
    blank and comment lines."""
    statements = [compilable(statement) for statement in draw(st.lists(STATEMENTS, min_size=1, max_size=4))]
    unit = draw(st.sampled_from(["    ", "\t", "  ", " ", "\t    "]))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    feeds = draw(st.booleans())
    lines = []
    for statement in statements:
        for depth, line in statement:
            lines.append(("\f" if feeds else "") + unit * depth + line)
            if draw(st.integers(0, 5)) == 0:
                lines.append(draw(st.sampled_from(["", "   ", "# note", "\t\t# deeper comment", "\f"])))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))
    return text.replace("\n", ending)


STDLIB = Path(sysconfig.get_paths()["stdlib"])
STDLIB_FILES = ["bisect.py", "colorsys.py", "secrets.py", "signal.py", "token.py", "_weakrefset.py"]


@st.composite
def stdlib_modules(draw) -> str:
    """A small standard-library module, with its line ends optionally changed (still a valid module)."""
    text = (STDLIB / draw(st.sampled_from(STDLIB_FILES))).read_text(encoding="utf-8")
    return text.replace("\n", draw(st.sampled_from(["\n", "\r\n", "\r"])))


@fuzz(100)
@given(st.one_of(valid_modules(), stdlib_modules()), st.data())
def test_valid_modules_have_no_false_rejects(text, data):
    """For a valid module cut at any span, the quotient accepts the true middle fed in any chunks, and ends
    complete."""
    assert compiles(text), text
    start = data.draw(st.integers(0, len(text)), label="start")
    end = data.draw(st.integers(start, min(len(text), start + 300)), label="end")
    left, middle, right = text[:start], text[start:end], text[end:]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(middle)), max_size=6), label="chunk cuts"))
    state = quotient(left, right)
    assert state is not None, (left, right)
    for first, last in zip([0, *cuts], [*cuts, len(middle)]):
        state = state.feed(middle[first:last])
        assert state is not None, (left, middle[:last], right)
    assert state.complete, (left, middle, right)


# ----------------------------------------------------------------------------------- the server's documents

DOCUMENT_PIECES = ["a", "bc", " ", "\t", "\n", "\r", "\r\n", "\f", "\u2028", "\x85", "é", "€", "😋", "\ud800",
                   "\x00"]
DOCUMENT_TEXT = st.lists(st.sampled_from(DOCUMENT_PIECES), max_size=16).map("".join)


def oracle_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line's content, ending lines at \\n, \\r\\n and \\r only, one character at a time."""
    lines, start, index = [], 0, 0
    while index < len(text):
        if text[index] in "\r\n":
            lines.append((start, index))
            index += 2 if text.startswith("\r\n", index) else 1
            start = index
        else:
            index += 1
    return lines + [(start, len(text))]


def oracle_units(text: str, encoding: str) -> int:
    """The length of `text` in code units of a position encoding, by encoding it (lone surrogates too)."""
    if encoding == "utf-32":
        return len(text)
    data = text.encode("utf-16-le" if encoding == "utf-16" else "utf-8", "surrogatepass")
    return len(data) // 2 if encoding == "utf-16" else len(data)


def oracle_offset(text: str, line: int, character: int, encoding: str) -> int:
    """LSP's rules by brute force: a line past the end is the end of the document, a column past the line end is
    the line end, and a column inside a character is that character's start; negative numbers count as 0."""
    lines = oracle_lines(text)
    if line >= len(lines):
        return len(text)
    start, end = lines[max(0, line)]
    fitting = [offset for offset in range(start, end + 1)
               if oracle_units(text[start:offset], encoding) <= max(0, character)]
    return max(fitting)


def oracle_apply(text: str, change, encoding: str) -> str:
    if change.range is None:
        return change.text
    start, end = change.range.start, change.range.end
    first = oracle_offset(text, start.line, start.character, encoding)
    last = oracle_offset(text, end.line, end.character, encoding)
    first, last = min(first, last), max(first, last)
    return text[:first] + change.text + text[last:]


def _position(line: int, character: int):
    return SimpleNamespace(line=line, character=character)


@st.composite
def changes(draw):
    """A content change: mostly a range, with positions in, at the edge of and past the document (or negative,
    which a lenient server clamps), sometimes the whole document."""
    text = draw(DOCUMENT_TEXT)
    if draw(st.integers(0, 9)) == 0:
        return SimpleNamespace(range=None, text=text)
    coordinate = st.one_of(st.integers(0, 6), st.integers(-2, 40))
    start = _position(draw(coordinate), draw(coordinate))
    end = _position(draw(coordinate), draw(coordinate))
    return SimpleNamespace(range=SimpleNamespace(start=start, end=end), text=text)


@fuzz(400)
@given(DOCUMENT_TEXT, st.sampled_from(ENCODINGS), st.data())
def test_incremental_changes_match_the_oracle(text, encoding, data):
    """Random sequences of didChange edits, batched as a client sends them, give the oracle's text."""
    documents = Documents()
    documents.open("file:///fuzz.py", text, 1, "python")
    expected = text
    for version in range(2, 2 + data.draw(st.integers(1, 4), label="batches")):
        batch = data.draw(st.lists(changes(), min_size=1, max_size=3), label="changes")
        for change in batch:
            expected = oracle_apply(expected, change, encoding)
        document = documents.change("file:///fuzz.py", version, batch, encoding)
        assert document.text == expected, (text, batch)
        assert document.version == version


def test_the_oracle_agrees_with_lsp_examples():
    """The oracle itself, on the cases the protocol spells out."""
    text = "a😋b\r\ncé\rz"
    assert oracle_lines(text) == [(0, 3), (5, 7), (8, 9)]
    assert oracle_offset(text, 0, 3, "utf-16") == 2 and oracle_offset(text, 0, 2, "utf-16") == 1
    assert oracle_offset(text, 0, 5, "utf-8") == 2 and oracle_offset(text, 1, 99, "utf-8") == 7
    assert oracle_offset(text, 7, 0, "utf-32") == len(text)
