"""The right context's language (`fimlsp.python.right_context`) against what CPython reads in real files: a cut of
a standard-library module anywhere in a token ends that token where `tokenize` does, which must be one of the
boundaries; the stream from that boundary is kept, and its window stands for the rest of the file; the statement
around a cut ends where `ast` says the next one starts."""

from __future__ import annotations

import io
import random
import tokenize

import pytest

from fimlsp.lines import line_offsets
from fimlsp.python import lexemes as lx
from fimlsp.python.right_context import boundary_indices, reversed_right_context_nfa, stream
from fimlsp.python.right_tokens import Scanner
from fimlsp.python.statement_ends import statement_ends
from fimlsp.python.syntax import compiles
from fimlsp.syntax_trees import parsed
from harness.corpus import stdlib_files

# Tokens a middle may end inside of: its last token then runs on into the right context.
_INSIDE = (tokenize.NAME, tokenize.NUMBER, tokenize.OP, tokenize.STRING, tokenize.COMMENT)


def _files(count: int, largest: int = 20_000) -> list[tuple[str, str]]:
    files = [item for item in stdlib_files() if len(item[1]) < largest and "\r" not in item[1]]
    return random.Random(3).sample(files, count)


def _tokens(text: str) -> list[tuple[int, int, int]]:
    """(type, start offset, end offset) of the file's tokens, by `tokenize`."""
    lines = text.splitlines(keepends=True)
    starts = [0, *line_offsets(text, range(2, len(lines) + 2))]
    return [(token.type, starts[token.start[0] - 1] + token.start[1], starts[token.end[0] - 1] + token.end[1])
            for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type in _INSIDE]


def _cuts_inside_tokens(text: str, rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Cuts strictly inside tokens of `text`, each with where its token ends."""
    tokens = [token for token in _tokens(text) if token[2] - token[1] > 1]
    chosen = rng.sample(tokens, min(count, len(tokens)))
    return [(cut, end) for _, start, end in chosen for cut in [rng.randrange(start + 1, end)]]


@pytest.mark.parametrize("name, text", _files(12))
def test_where_cpython_ends_a_cut_token_is_a_boundary(name, text):
    """A middle that ends inside a name, number, operator, string or comment: the token it began runs on into
    the right context and ends where CPython's tokenizer ends it; that index is among `boundary_indices`."""
    rng = random.Random(name)
    for cut, end in _cuts_inside_tokens(text, rng, 25):
        right = text[cut:]
        assert end - cut in boundary_indices(right), (name, text[cut - 20:cut], right[:40])


def test_boundary_indices_of_small_texts():
    """Between tokens (0), after a name's rest, after a string's closing quote, at a comment's line break."""
    assert boundary_indices("") == [0]
    found = boundary_indices("me = 1\n")
    assert {0, 2}.issubset(found)  # `na|me`: the name ends at 2
    assert 3 in boundary_indices('bc" + x\n')  # `"a|bc"`: after the string's closing quote
    assert 4 in boundary_indices("note\nx = 1\n")  # `# a |note`: the comment ends at the line break


@pytest.mark.parametrize("name, text", _files(6, largest=8_000))
def test_the_true_boundary_keeps_a_stream_whose_window_stands_for_the_file(name, text):
    """For a middle cut out of a real file, the boundary where its last token ends is kept by the right
    context's language, and the text its window stands for completes the file as the whole right context does:
    the file with the true middle compiles with it."""
    rng = random.Random(name)
    cuts = _cuts_inside_tokens(text, rng, 3)
    for cut, end in cuts:
        right = text[cut:]
        used = reversed_right_context_nfa(right).windows
        assert end - cut in used, (name, right[:40])
        stands_for = used[end - cut]
        assert compiles(text[:cut] + (right if stands_for is None else stands_for)), (name, stands_for)


def test_a_stream_that_cannot_balance_its_brackets_or_lex_is_none():
    assert stream(Scanner("x)\n"), 0) is not None  # the middle opens what the right context closes
    assert stream(Scanner("x(\n"), 0) is None  # nothing after the right context closes it
    assert stream(Scanner("x = 'open\n"), 0) is None  # a string that does not end on its line
    assert stream(Scanner("x = 1\n  y = 2\n"), 0, floor=4) is None  # a line left of the floor


@pytest.mark.parametrize("name, text", _files(8))
def test_statement_ends_hold_where_the_next_top_level_statement_starts(name, text):
    """A cut at the start of a token inside a top-level statement: the statement ends where `ast` says the next
    top-level statement starts (its first decorator's line), or at the end of the file; `statement_ends` names
    that end among its first few."""
    module = parsed(text)
    lines = [min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]) for node in module.body]
    starts = [*line_offsets(text, lines), len(text)]
    rng = random.Random(name)
    tokens = _tokens(text)
    for _, cut, _ in rng.sample(tokens, min(20, len(tokens))):
        following = next(start for start in starts if start > cut)
        ends = statement_ends(text[cut:], 3)
        assert following - cut in ends, (name, text[cut:cut + 40])


def test_statement_ends_inside_a_string_read_from_the_cursor_s_string():
    """A cursor inside a string: lines of that string are not statement starts, the line after it is."""
    right = "still the string\nx = 1\n'''\ny = 2\n"
    string_state = lx.step(lx.step(lx.step(lx.START, "'"), "'"), "'")
    assert statement_ends(right, 1, pending=string_state) == [right.index("y = 2")]
