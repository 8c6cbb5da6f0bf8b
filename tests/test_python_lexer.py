"""The Python lexer against CPython: the standard library's tokens, and the tokenizer's quirks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import INITIAL, advance, tokenize
from fimlsp.python.syntax import parses
from harness.corpus import STDLIB
from harness.tokens_bridge import tokens as reference_tokens

SAMPLE_FILES = [
    "typing.py", "dataclasses.py", "tokenize.py", "textwrap.py", "re/_parser.py", "asyncio/base_events.py",
    "email/_header_value_parser.py", "decimal.py", "string.py", "json/decoder.py", "ast.py", "inspect.py",
]



@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_standard_library_files_lex_like_cpython(name):
    text = (STDLIB / name).read_text(encoding="utf-8")
    assert tokenize(text) == [token.name for token in reference_tokens(text)]


@pytest.mark.parametrize(
    "source, terminals",
    [
        ("x = 0x_1f + 0o7 + 0b1 + 1_000.5e-3j + .5 + 1.",
         "NAME = NUMBER + NUMBER + NUMBER + NUMBER + NUMBER + NUMBER NEWLINE"),
        ("1if x else 2", "NUMBER if NAME else NUMBER NEWLINE"),
        ("0x1for x in y", "NUMBER or NAME in NAME NEWLINE"),  # 0x1f, then `or`
        ("1..real", "NUMBER . NAME NEWLINE"),
        ("00or's'", "NUMBER or STRING NEWLINE"),  # a radix letter after the second 0 starts a word
        ("0_0 if 00.5 else 00j", "NUMBER if NUMBER else NUMBER NEWLINE"),
        ("x[...]", "NAME [ ... ] NEWLINE"),
        ("a**=b;c//=(d:=e)", "NAME **= NAME ; NAME //= ( NAME := NAME ) NEWLINE"),
        ("x = rb'\\x00', Rb\"a\", f'{x!r}' u'', br'''a\nb'''", "NAME = STRING , STRING , STRING STRING , STRING NEWLINE"),
        ("match x:\n case _: pass", "match NAME : NEWLINE INDENT case NAME : pass NEWLINE DEDENT"),
        ("x = (1,\n     2)", "NAME = ( NUMBER , NUMBER ) NEWLINE"),
        ("x = 1 + \\\n    2", "NAME = NUMBER + NUMBER NEWLINE"),
        ("if x:\n\tpass\n# c\n\n        \n", "if NAME : NEWLINE INDENT pass NEWLINE DEDENT"),
        ("x = 1\r\ny = 2\r", "NAME = NUMBER NEWLINE NAME = NUMBER NEWLINE"),
        ("# only a comment", ""),
        ("", ""),
        ("π = 1; é·x = 2", "NAME = NUMBER ; NAME = NUMBER NEWLINE"),
    ],
)
def test_terminals(source, terminals):
    assert tokenize(source) == terminals.split()
    assert parses(source)


@pytest.mark.parametrize(
    "source",
    [
        "0or 1", "1ex", "1e+x", "1_a", "1__0", "0x", "01", "0_1", "1e", "1.__class__", "0x1and 2", "1as x", "00x1", "0_0o7",
        "'abc\n'", "'''abc", "x = $", "a ! b", "x = 1 \\ \n", "x\x00", "if x:\n\tpass\n        pass",
        "if x:\n    a\n  b", "b'é'", "f'{'", "'\\N{nonsense}'", "(" * 201 + ")" * 201, "\ufeffx = 1",
    ],
)
def test_invalid_text_is_rejected_like_cpython(source):
    assert not parses(source)
    assert tokenize(source) is None


def test_advance_is_incremental():
    """Lexing a text in pieces gives the same terminals as lexing it whole, with the token in progress kept."""
    text = "def f(a, b=0x1f):\n    return a  +  b ** 2  # done\n"
    whole = advance(INITIAL, text)
    state, collected = INITIAL, []
    for char in text:
        state, terminals = advance(state, char)
        collected += terminals
    assert collected == whole[1] and state == whole[0]


FRAGMENTS = st.sampled_from(
    ["x", "1", "0", "0x1", "1.5", "e5", "j", " ", "\t", "\n", "\\\n", "#c", "'s'", '"""d"""', "f'{x}'", "(", ")",
     "[", "]", ":", ",", ".", "..", "=", "==", "if", "else", "or", "and", "in", "not", "lambda", "    ", "\r\n",
     "pass", "def", "return", "*", "**", "->", "@", ";", "\f", "é", "_"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(FRAGMENTS, max_size=14))
def test_lexer_never_rejects_what_cpython_parses(fragments):
    """No false reject, ever; and the same terminals as the `tokenize` module where that module is faithful to
    CPython's C tokenizer (it is not on continuation lines and non-ASCII identifiers: `x\\\n ` or `a·b`)."""
    source = "".join(fragments)
    if parses(source):
        result = tokenize(source)
        assert result is not None, source
        if "\\" not in source and source.isascii():
            assert result == [token.name for token in reference_tokens(source)], source


@given(st.lists(st.tuples(st.integers(0, lx.N_STATES - 1), st.characters()), max_size=20))
def test_remembered_transitions_are_the_automatons(steps):
    """`step` answers from its table what the automaton says, asked in any order, for any character (only ASCII
    ones are kept)."""
    for state, char in steps * 2:
        assert lx.step(state, char) == lx._step(state, char)
    assert all(char < "\x80" for table in lx._STEPS[:-1] for char in table)
