"""The right context's tokens, lexed from any index: a token's end from any automaton state (`token_end`), and
the tokens from a token boundary on (`Scanner`), shared between the indices a middle may end at."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import string_is_valid


def token_end(text: str, state: int, index: int, memo: dict[tuple[int, int], int | None]) -> int | None:
    """Where a token in `state` before `text[index]` ends; None if it cannot end validly."""
    path = []
    result: int | None = None
    while True:
        key = (state, index)
        if key in memo:
            result = memo[key]
            break
        path.append(key)
        skip = lx.SKIP_TO.get(state)
        if skip is not None:  # inside a string or comment: jump to the next character that matters
            found = skip.search(text, index)
            index = found.start() if found else len(text)
        following = lx.step(state, text[index]) if index < len(text) else lx.DEAD
        if following != lx.DEAD:
            state, index = following, index + 1
            continue
        if state in lx.BACK_UP:  # the last character starts a token of its own
            state = lx.BACK_UP[state][1]
            continue
        result = index if lx.KIND[state] is not None else None
        break
    for key in path:
        memo[key] = result
    return result


@dataclass
class Token:
    terminal: str | None  # None for comments and line continuations
    start: int
    end: int


class Scanner:
    """Tokens of the right context from any index, lexed lazily and shared between indices.

    Lexing from a token boundary is deterministic, so the tokens found at a position are the same whichever
    index the scan began from: they are memoized by position, scans from different indices join as soon as they
    meet, and a stream cut short by windowing never lexes the rest of the file.
    """

    def __init__(self, text: str):
        self.text = text
        self.ends: dict[tuple[int, int], int | None] = {}
        self.at: dict[int, tuple[list[Token], int] | None] = {}  # token start -> (its tokens, next position)

    def tokens_from(self, index: int) -> Iterator[Token | None]:
        """The tokens of `text[index:]` lexed from a token boundary; a final None if the text does not lex."""
        text = self.text
        while index < len(text):
            char = text[index]
            if char in lx.WHITESPACE or char == "\n":
                index += 1
                continue
            found = self.at.get(index, False)
            if found is False:
                first = lx.step(lx.START, char)
                end = None if first == lx.DEAD else token_end(text, first, index + 1, self.ends)
                found = self.at[index] = None if end is None else (_classify(text, first, index, end), end)
            if found is None:
                yield None
                return
            yield from found[0]
            index = found[1]


def _classify(text: str, first: int, start: int, end: int) -> list[Token]:
    """Terminals of the text `text[start:end]`, a token begun in automaton state `first`."""
    state = first
    for index in range(start + 1, end):
        following = lx.step(state, text[index])
        if following == lx.DEAD:  # backed up: the last character starts a token of its own
            terminal, restart = lx.BACK_UP[state]
            return [Token(terminal, start, index - 1), *_classify(text, restart, index - 1, end)]
        state = following
    if state in lx.BACK_UP and lx.KIND[state] is None:  # `..` (`1e`) at the token's end: `.` then `.`
        terminal, restart = lx.BACK_UP[state]
        return [Token(terminal, start, end - 1), *_classify(text, restart, end - 1, end)]
    kind = lx.KIND[state]
    token_text = text[start:end]
    if kind == lx.KIND_NAME:
        return [Token(lx.word_terminal(token_text), start, end)]
    if kind == lx.KIND_NUMBER:
        return [Token(lx.NUMBER, start, end)]
    if kind == lx.KIND_STRING:
        return [Token(lx.STRING if string_is_valid(token_text) else "", start, end)]
    if kind == lx.KIND_OPERATOR:
        return [Token(token_text, start, end)]
    return [Token(None, start, end)]
