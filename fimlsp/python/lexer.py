"""The incremental Python lexer: characters in, grammar terminals out, with indentation and bracket depth.

A `LexerState` is an immutable value: the token in progress (an automaton state of `fimlsp.python.lexemes` and its
text), the bracket depth, the indentation stack, and where the line stands. `advance(state, text)` returns the new
state and the terminals completed on the way, or None at the first character that no valid Python text can
contain there. Line logic follows CPython's tokenizer: NEWLINE ends a non-empty logical line outside brackets;
blank and comment-only lines emit nothing; the first token of a line compares its column with the stack (tabs to
multiples of 8, and the same comparison with tabs as 1 column must agree, or it is a TabError).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from fimlsp.lines import normalize
from fimlsp.python import lexemes as lx
from fimlsp.python.syntax import parses

MAX_INDENT_LEVELS = 100
MAX_BRACKET_DEPTH = 200


@dataclass(frozen=True, slots=True)
class LexerState:
    token: int = lx.START
    text: str = ""
    depth: int = 0
    indents: tuple[tuple[int, int], ...] = ((0, 0),)
    at_line_start: bool = True
    column: int = 0
    alt_column: int = 0
    line_has_tokens: bool = False
    after_number: bool = False
    pending_cr: bool = False

    def possible_terminals(self) -> frozenset[str] | None:
        """What the token in progress can still become; None when no token is in progress."""
        if self.token == lx.START or self.token in lx.SKIPPED:
            return None
        terminals = lx.possible_terminals(self.token, self.text)
        if self.after_number:
            terminals = terminals & lx.KEYWORDS_AFTER_NUMBER
        return terminals


INITIAL = LexerState()


class NameTerminal(str):
    """The terminal NAME, equal to it for the parser, that carries the identifier's text for the name judge."""

    def __new__(cls, text: str) -> NameTerminal:
        terminal = super().__new__(cls, lx.NAME)
        terminal.text = text
        return terminal


# One carrier per identifier, shared: making one per NAME lexed made whole-file lexing about 45% slower.
name_terminal = functools.lru_cache(maxsize=1 << 16)(NameTerminal)


def indentation_column(whitespace: str) -> int:
    """The column that a line's leading `whitespace` reaches: tabs to the next multiple of 8, a form feed back
    to 0, as CPython counts it."""
    if "\t" not in whitespace and "\f" not in whitespace:
        return len(whitespace)
    column = 0
    for char in whitespace:
        column = (column // 8 + 1) * 8 if char == "\t" else 0 if char == "\f" else column + 1
    return column


def block_start(indent: str) -> LexerState:
    """The state at the start of a run of statements of a block indented by `indent` (spaces, tabs): its
    column is the floor of the indentation stack, and a dedent below it is an error."""
    state = advance(INITIAL, indent)[0] if indent else INITIAL
    return LexerState(indents=((state.column, state.alt_column),))


def string_is_valid(text: str) -> bool:
    """Escapes, f-string fields and bytes' ASCII rule are checked by CPython itself on the lone literal."""
    prefix_length = 0
    while text[prefix_length] not in "'\"":
        prefix_length += 1
    prefix = text[:prefix_length].lower()
    if "f" not in prefix and "\\" not in text and ("b" not in prefix or text.isascii()):
        return True
    return parses(text)


def advance(state: LexerState, text: str) -> tuple[LexerState, list[str]] | None:
    """Lex `text` after `state`; None if the text is invalid whatever follows it. CPython reads `\\r\\n` and `\\r`
    as `\\n`; so does everything here.

    One piece on purpose: this is the per-character loop of every feed, and it keeps its state in locals; split
    into helpers, it would pay a call and a state object per character."""
    if "\x00" in text:
        return None
    if state.pending_cr and text.startswith("\n"):
        text = text[1:]
    pending_cr = text.endswith("\r")
    text = normalize(text)
    out: list[str] = []
    token, depth, indents = state.token, state.depth, state.indents
    at_line_start, column, alt_column = state.at_line_start, state.column, state.alt_column
    line_has_tokens, after_number = state.line_has_tokens, state.after_number
    carried = state.text  # text of the token in progress that began before this chunk
    token_start = 0
    step, skips = lx.step, lx.SKIP_TO
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if token != lx.START:
            skip = skips.get(token)
            if skip is not None:  # inside a string or comment: jump to the next character that matters
                found = skip.search(text, index)
                if found is None:
                    break
                if found.start() != index:
                    index = found.start()
                    continue
            following = step(token, char)
            if following != lx.DEAD:
                token = following
                index += 1
                continue
            token_text = carried + text[token_start:index]
            carried = ""
            backed = lx.BACK_UP.get(token)
            if backed is not None:  # the last character starts a token of its own
                terminal, token = backed
                out.append(terminal)
                token_start, carried, after_number = index, token_text[-1], terminal == lx.NUMBER
                line_has_tokens = True
                continue
            closed = _close(token, token_text, char, depth, after_number, out)
            if closed is None:
                return None
            depth, after_number, real = closed
            line_has_tokens = line_has_tokens or real
            token = lx.START
        # Between tokens.
        if at_line_start:
            if char == " ":
                column += 1
                alt_column += 1
                index += 1
                continue
            if char == "\t":
                column = (column // 8 + 1) * 8
                alt_column += 1
                index += 1
                continue
            if char == "\f":
                column = alt_column = 0
                index += 1
                continue
            if char == "\n":
                column = alt_column = 0
                index += 1
                continue
            if char != "#" and char != "\\":
                emitted = _indentation(indents, column, alt_column)
                if emitted is None:
                    return None
                indents, tokens = emitted
                out.extend(tokens)
                at_line_start = False
        if char in " \t\f":
            index += 1
            continue
        if char == "\n":
            if depth == 0:
                if line_has_tokens:
                    out.append(lx.NEWLINE)
                    line_has_tokens = False
                at_line_start = True
                column = alt_column = 0
            index += 1
            continue
        token = step(lx.START, char)
        if token == lx.DEAD:
            return None
        token_start = index
        index += 1
    # A comment's or a continuation's text is never looked at again: not carrying it keeps each state small when
    # the text ends inside a long comment (every state fed from there would hold its own copy).
    carried = carried + text[token_start:] if token != lx.START and token not in lx.SKIPPED else ""
    new_state = LexerState(
        token, carried, depth, indents, at_line_start, column, alt_column, line_has_tokens, after_number,
        pending_cr,
    )
    return new_state, out


def _close(
    token: int, text: str, following: str | None, depth: int, after_number: bool, out: list[str]
) -> tuple[int, bool, bool] | None:
    """Complete the token `text` (automaton state `token`), followed by `following` (None at the end).

    Appends its terminal to `out`; returns the new bracket depth, whether the next token follows a number
    directly, and whether a real token (not a comment or continuation) was completed. None if it is invalid.
    """
    kind = lx.KIND[token]
    if kind is None:
        return None
    if kind == lx.KIND_NAME:
        terminal = lx.word_terminal(text)
        if after_number and terminal not in lx.KEYWORDS_AFTER_NUMBER:
            return None
        out.append(name_terminal(text) if terminal == lx.NAME else terminal)
        return depth, False, True
    if kind == lx.KIND_NUMBER:
        out.append(lx.NUMBER)
        return depth, following is not None and lx.is_identifier_start(following), True
    if kind == lx.KIND_STRING:
        if after_number or not string_is_valid(text):
            return None
        out.append(lx.STRING)
        return depth, False, True
    if kind == lx.KIND_OPERATOR:
        out.append(text)
        if text in lx.OPENING_BRACKETS:
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                return None
        elif text in lx.CLOSING_BRACKETS:
            depth -= 1
            if depth < 0:
                return None
        return depth, False, True
    return depth, after_number, False


def close_token(state: LexerState, following: str | None) -> tuple[LexerState, list[str]] | None:
    """End the token in progress as if `following` came next, without consuming it (None: end of text)."""
    if state.token == lx.START:
        return state, []
    out: list[str] = []
    token, text, after_number = state.token, state.text, state.after_number
    backed = lx.BACK_UP.get(token)
    if backed is not None:  # the last character starts a token of its own
        terminal, token = backed
        after_number = terminal == lx.NUMBER
        out.append(terminal)
        text = text[-1]
        if following is not None and lx.step(token, following) != lx.DEAD:
            return replace(state, token=token, text=text, after_number=after_number, line_has_tokens=True), out
    closed = _close(token, text, following, state.depth, after_number, out)
    if closed is None:
        return None
    depth, after_number, real = closed
    return replace(
        state, token=lx.START, text="", depth=depth, after_number=after_number,
        line_has_tokens=state.line_has_tokens or real,
    ), out


def _indentation(
    indents: tuple[tuple[int, int], ...], column: int, alt_column: int
) -> tuple[tuple[tuple[int, int], ...], list[str]] | None:
    top, alt_top = indents[-1]
    if column == top:
        return (indents, []) if alt_column == alt_top else None
    if column > top:
        if alt_column <= alt_top or len(indents) >= MAX_INDENT_LEVELS:
            return None
        return indents + ((column, alt_column),), [lx.INDENT]
    popped = 0
    while popped < len(indents) and indents[-1 - popped][0] > column:
        popped += 1
    remaining = indents[: len(indents) - popped]
    if not remaining or remaining[-1] != (column, alt_column):  # below the floor of a block's statements
        return None
    return remaining, [lx.DEDENT] * popped


def end_of_file(state: LexerState) -> list[str] | None:
    """Terminals that ending the text here adds (the last NEWLINE and the closing DEDENTs), or None if invalid."""
    if state.token in (lx.S_BACKSLASH, lx.S_CONTINUATION):
        return None
    closed = close_token(state, None)
    if closed is None or closed[0].depth != 0 or closed[0].token != lx.START:
        return None
    state, tokens = closed
    if state.line_has_tokens:
        tokens.append(lx.NEWLINE)
    return tokens + [lx.DEDENT] * (len(state.indents) - 1)


def tokenize(text: str) -> list[str] | None:
    """The whole text's terminals, as the parser sees a complete file; None if it does not lex."""
    result = advance(INITIAL, text)
    if result is None:
        return None
    state, tokens = result
    tail = end_of_file(state)
    return None if tail is None else tokens + tail

