"""The file's uses of a receiver's members and the tokens each follows (`fimlsp.python.member_uses`): logical lines
and tokens as CPython's tokenizer reads them (the oracle: `tokenize` over the standard library's files), and the
weights a context gives each name, backed off to the longest context the file shares with the cursor."""

from __future__ import annotations

import io
import math
import random
import tokenize

import pytest

from fimlsp.python.member_uses import CONTEXT_TOKENS, FileUses, LogicalLines, NEARBY_LINES, line_tokens
from harness.corpus import stdlib_files

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def _tokenized(text: str) -> tuple[set[int], list[tuple[int, str, int]]]:
    """By `tokenize`: the offsets where logical lines begin (after a NEWLINE, or after a blank or comment line's NL
    outside brackets), and each token's (offset, token as `line_tokens` names it, logical line's start)."""
    starts_of_lines = [0]
    for line in text.splitlines(keepends=True):
        starts_of_lines.append(starts_of_lines[-1] + len(line))
    offset = lambda position: starts_of_lines[position[0] - 1] + position[1]  # noqa: E731
    starts, tokens, depth, line_start = {0}, [], 0, 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NEWLINE or (token.type == tokenize.NL and not depth):
            line_start = offset(token.end)
            starts.add(line_start)
        if token.type in _SKIPPED:
            continue
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        name = {tokenize.STRING: "STRING", tokenize.NUMBER: "NUMBER"}.get(token.type, token.string)
        tokens.append((offset(token.start), name, line_start))
    return starts, tokens


@pytest.mark.parametrize("part", range(4))
def test_logical_lines_and_their_tokens_are_the_tokenizer_s_on_the_standard_library(part):
    """For a quarter of the standard library's files each: every logical line's start, and at 40 random tokens of
    each file the context before it, as `tokenize` reads them; the file read on from a random cut of it read first
    (as a keystroke's left context is read on from the last one's)."""
    rng = random.Random(part)
    files = stdlib_files()[part::4]
    assert len(files) > 100
    for name, text in files:
        starts, tokens = _tokenized(text)
        LogicalLines.of(text[:rng.randrange(len(text) + 1)])
        lines = LogicalLines.of(text)
        assert set(lines.starts) - {len(text)} == starts - {len(text)}, name
        for at in rng.sample(range(len(tokens)), min(40, len(tokens))):
            offset, _token, line_start = tokens[at]
            expected = tuple(token for start, token, _line in tokens[:at] if start >= line_start)[-CONTEXT_TOKENS:]
            assert lines.context_before(offset) == expected, (name, offset)


def test_strings_comments_and_continuations_do_not_end_or_split_a_logical_line():
    text = ('call(a,  # a comment (\n    self.x)\ns = "(#" + \'\'\'\n)\'\'\'\nself.y\nz = 1e-5 + \\\n  self.w\n'
            'f(b"\\\n)", self.v)\n')
    lines = LogicalLines.of(text)
    contexts = [lines.context_before(text.index(chain)) for chain in ("self.x", "self.y", "self.w", "self.v")]
    assert contexts == [("call", "(", "a", ","), (), ("z", "=", "NUMBER", "+"), ("f", "(", "STRING", ",")]
    assert line_tokens("await ... .5 é") == ("await", "...", "NUMBER", "é")


def test_a_right_context_begins_inside_the_brackets_its_left_context_left_open():
    """Its own tokens are the context (the middle's are not known), but its line breaks inside them end no line."""
    uses = FileUses("x = call(\n    first,\n    ", "second,\n    self.send(),\n)\nself.close()\n")
    assert [uses.context_of(use) for use in uses.uses("self")] == [("second", ","), ()]


@pytest.fixture
def serve():
    left = ("async def serve(self):\n    await self.send()\n    self.state = 1\n    self.state = 2\n"
            "    x = self.stop()\n    await self.")
    right = "\n    self.state = 3\n" + "\n" * 60 + "    await self.receive()\n"
    return FileUses(left, right)


def test_each_name_counts_its_uses_that_share_the_most_tokens_with_the_context(serve):
    by_await = serve.in_context("self", ("await",))
    assert {name: shared for name, (shared, _weight) in by_await.items()} == {
        "send": 1, "receive": 1, "state": 0, "stop": 0}
    assert by_await["receive"][1] == pytest.approx(math.exp(-62 / NEARBY_LINES))
    assert by_await["send"][1] == pytest.approx(math.exp(-4 / NEARBY_LINES))
    # none shares a token with `return`: every use counts, the state's three most
    by_nothing = serve.in_context("self", ("return",))
    assert all(shared == 0 for shared, _weight in by_nothing.values())
    assert by_nothing["state"][1] == pytest.approx(math.exp(-3 / NEARBY_LINES) + math.exp(-2 / NEARBY_LINES)
                                                   + math.exp(-1 / NEARBY_LINES))
    assert by_nothing["state"][1] == pytest.approx(serve.weights("self")["state"])


def test_the_name_at_the_cursor_and_uses_in_comments_are_no_uses():
    uses = FileUses("self.a()\n# self.b()\nx = '#'; self.c\nself.", "\n")
    assert set(uses.weights("self")) == {"a", "c"}
