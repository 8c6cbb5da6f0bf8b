"""The right context as a regular language of terminals (Sec. V-B and VI of the FIM quotient paper).

Two things about the right context are unknown until the middle is written:

- where the middle's last token ends. The middle may end inside a name, a number, an operator, a string, a
  comment or a line's indentation, and that token then runs on into the right context. `boundary_indices` finds
  every index at which the lexer can be between tokens again (Fig. 6-7): it runs the lexer automaton from every
  state over the start of the right context. The runs are deterministic, so each state has one end index.
- the lexer's state at that index: bracket depth, indentation stack, whether the logical line has tokens.
  The bracket depth is fixed by the text itself (the file must end at depth 0, so the depth at the index is minus
  the right context's net bracket change). The rest is written into the language: the first fresh line is
  `(INDENT | DEDENT*)` against the unknown stack, a dedent below every column seen so far is `DEDENT{0,n}` more
  than the known levels, the first NEWLINE is optional when no token precedes it.

The language over-approximates what the right context can lex to, so a recognizer built from it never rejects a
valid middle; `fimlsp.python.quotient` confirms membership exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from earley import NFA, Regex, alt, opt, repeat, star, sym, union_of_sequences
from earley.deadline import check_deadline
from fimlsp.python import lexemes as lx
from fimlsp.python.facts import CONTINUING, DECORATABLE
from fimlsp.python.grammar import load_grammar
from fimlsp.python.lexer import MAX_BRACKET_DEPTH, MAX_INDENT_LEVELS, indentation_column
from fimlsp.python.right_tokens import Scanner, Token, token_end
from fimlsp.python.right_window import StandaloneCache


def boundary_indices(right: str) -> list[int]:
    """Indices of `right` at which, after some middle, the lexer is between tokens (sorted)."""
    return sorted(boundary_arrivals(right))


class Arrival(NamedTuple):
    """How a middle's last token can end at a boundary index: the fewest characters it writes beyond the shortest
    texts of its terminals (the `#` of a comment, the backslash of a line continuation, that runs on to the
    index), and the bracket depth it must leave there when only a middle that ends at a line's start gets there
    (None: any).

    No more is counted: a lower bound is what the finish search and the decoder need. A comment that runs into
    code is refused bare only after code on its line (`fimlsp.python.meaning`); one that begins its line (a middle
    `\n#`, whose NEWLINE a terminal counts already, or a left context ending at a line's start) needs just its
    `#`, and the marker cannot tell the two apart."""

    chars: int
    depth: int | None


_BETWEEN_TOKENS = Arrival(0, None)
_RUN_ON = {lx.S_COMMENT: Arrival(1, None), lx.S_BACKSLASH: Arrival(1, None), lx.S_CONTINUATION: Arrival(1, None)}


def boundary_arrivals(right: str) -> dict[int, list[Arrival]]:
    """The boundary indices of `right`, each with the ways a middle's last token ends there (see `Arrival`).

    A middle that ends at a line's start leaves the bracket depth 0 there (a line break in brackets starts no
    line), so after the line's first token the depth is what that token opens: a stream from there that needs
    another depth is one that no such middle reaches (`x = {` before `,}`: the stream after the `,` needs 1).
    """
    arrivals: dict[int, list[Arrival]] = {0: [_BETWEEN_TOKENS]}
    memo: dict[tuple[int, int], int | None] = {}

    def arrive(index: int | None, arrival: Arrival) -> None:
        if index is not None and arrival not in arrivals.setdefault(index, []):
            arrivals[index].append(arrival)

    for state in range(1, lx.N_STATES):
        arrive(token_end(right, state, 0, memo), _RUN_ON.get(state, _BETWEEN_TOKENS))
    starts = [0]
    if right.startswith("\n"):  # the middle ended in "\r": this "\n" completes its line break
        arrive(1, _BETWEEN_TOKENS)
        starts.append(1)
    for start in starts:
        end = _line_start_end(right, start, memo)
        if end is not None:
            arrive(end, Arrival(0, _opened(right, start, end)))
    return arrivals


def _opened(text: str, start: int, end: int) -> int:
    """The brackets that the tokens of `text[start:end]` open, less those they close."""
    change = 0
    for token in Scanner(text[:end]).tokens_from(start):
        if token is None:
            break
        if token.terminal in lx.OPENING_BRACKETS:
            change += 1
        elif token.terminal in lx.CLOSING_BRACKETS:
            change -= 1
    return change


def _line_start_end(text: str, index: int, memo: dict[tuple[int, int], int | None]) -> int | None:
    """Where the lexer settles when the middle ends at the start of a line, in its indentation."""
    while True:
        while index < len(text) and text[index] in lx.WHITESPACE:
            index += 1
        if index == len(text) or text[index] == "\n":
            return index
        if text[index] in "#\\":
            end = token_end(text, lx.S_COMMENT if text[index] == "#" else lx.S_BACKSLASH, index + 1, memo)
            if end is None or text[index] == "#":
                return end
            index = end
            continue
        first = lx.step(lx.START, text[index])
        return None if first == lx.DEAD else token_end(text, first, index + 1, memo)


# Tokens of a window between two looks at the clock (a token costs up to 20 microseconds).
_TOKENS_BETWEEN_CLOCKS = 256


class Stream(NamedTuple):
    """What `right[start:]` can lex to, and the text that its window stands for in place of the whole `right`:
    `right[:cut]` when the rest from a column-0 cut is a module of its own, `right[:line]` and one statement per
    level at an indented cut, None without a cut. Whatever comes before, the file is valid with it exactly
    when it is valid with the whole right context, so CPython can judge a middle on it alone."""

    parts: list[Regex]
    stands_for: str | None
    depth: int  # the bracket depth the middle leaves at the stream's start


def stream(
    scanner: Scanner, start: int, standalone: StandaloneCache | None = None, deadline: float | None = None,
    floor: int = 0,
) -> Stream | None:
    """The terminals that `right[start:]`, lexed from a token boundary after an unknown middle, can produce.

    Returned as a sequence of small expressions, or None if no lexer state makes the text valid (it does not
    lex, or its brackets cannot balance). With `standalone`, the stream stops at the first line at column 0
    after which the rest of the file is a valid module that the text before cannot continue or decorate: there
    every block is closed and the bracket depth is 0, so the language there is the same as at the end of the
    file; or, sooner, at an indented line from which one `pass` per level stands in for the rest of the file
    (`StandaloneCache.tails`). Windowing bounds the one-time cost by the statement around the cursor, not the
    file. `floor` is the lowest column a line may start at: the indentation of a block whose statements the
    text ends.
    """
    window, text, end = _window_tokens(scanner, start, standalone, deadline)
    if window is None:
        return None
    change = lowest_change = 0
    for token in window:
        if token.terminal in lx.OPENING_BRACKETS:
            change += 1
        elif token.terminal in lx.CLOSING_BRACKETS:
            change -= 1
            lowest_change = min(lowest_change, change)
    depth = opened = -change  # the file ends, and a window is cut, at depth 0
    if depth < 0 or lowest_change < change or depth > MAX_BRACKET_DEPTH:
        return None
    parts: list[Regex] = []
    line_has_tokens: bool | None = None
    known_levels: list[int] | None = None
    lowest_level = 0
    position = start
    for token in window:
        if depth == 0 and "\n" in text[position:token.start]:
            parts.extend(_newline(line_has_tokens))
            line_has_tokens = False
            if token.terminal is not None:
                column = indentation_column(text[text.rfind("\n", start, token.start) + 1:token.start])
                if column < floor:
                    return None
                if known_levels is None:
                    parts.append(alt(sym(lx.INDENT), star(sym(lx.DEDENT))))
                    known_levels, lowest_level = [column], column
                elif column > known_levels[-1]:
                    if len(known_levels) >= MAX_INDENT_LEVELS:  # too deep for CPython, whatever the middle
                        return None
                    parts.append(sym(lx.INDENT))
                    known_levels.append(column)
                elif column < known_levels[-1]:
                    popped = 0
                    while known_levels and known_levels[-1] > column:
                        known_levels.pop()
                        popped += 1
                    if known_levels and known_levels[-1] != column:
                        return None
                    unknown = 0 if known_levels else max(0, lowest_level - column - 1)
                    parts.append(repeat(sym(lx.DEDENT), popped, popped + unknown))
                    if not known_levels:
                        known_levels, lowest_level = [column], column
        position = token.end
        if token.terminal is None:
            continue
        parts.append(_symbol(token.terminal))
        line_has_tokens = True
        if token.terminal in lx.OPENING_BRACKETS:
            depth += 1
        elif token.terminal in lx.CLOSING_BRACKETS:
            depth -= 1
    parts.extend(_newline(line_has_tokens))  # a cut is at a line start at depth 0: the same as the end of file
    parts.append(_closing_dedents(known_levels, lowest_level, floor))
    return Stream(parts, None if text is scanner.text and end == len(text) else text[:end], opened)


def _window_tokens(
    scanner: Scanner, start: int, standalone: StandaloneCache | None, deadline: float | None = None
) -> tuple[list[Token] | None, str, int]:
    """The tokens from `start` up to the window's cut (the end of the file if there is none), or None if they
    do not lex; the text they index, which past an indented cut ends with its stand-in; and where in it the
    window ends (the cut, or the end of the text).

    A cut is a line that starts at column 0 with a token that does not continue the statement before (`else`
    …), after which the rest of the file parses, and which no decorator precedes: a `def`, `class`, `async` or
    `@` line is a cut only if the nearest earlier column-0 line that starts a statement (the rest of the file
    parses from there too) is not a decorator. Lines inside brackets (a decorator's closing `)`) start none.
    An indented line is a cut where `StandaloneCache.tails` finds a stand-in for the rest of the file, whose
    tokens then end the window.
    """
    text = scanner.text
    if standalone is not None:
        standalone.start_stream()
    window: list[Token] = []
    earlier_lines: list[int] = []  # column-0 token lines seen since `start`
    change = lowest_change = 0  # brackets opened minus closed since `start`, and the least it has been
    last: str | None = None  # the last terminal before `token`
    last_end = start
    adjacent = _adjacent_terminals()
    for token in scanner.tokens_from(start):
        if token is None or token.terminal == "":
            return None, text, len(text)
        if token.terminal is not None:
            # Two terminals on one line that the grammar never puts side by side: no middle makes this stream
            # valid (a middle that ends inside a string reads the file's strings as code and its code as strings
            # from here on, which would otherwise be lexed to the end of the file).
            if last is not None and (last, token.terminal) not in adjacent and "\n" not in text[last_end:token.start]:
                return None, text, len(text)
            last_end = token.end
        if len(window) % _TOKENS_BETWEEN_CLOCKS == 0:
            check_deadline(deadline)
        indent = None if standalone is None or token.terminal is None else _line_indent(text, start, window, token)
        if indent == "":
            if (
                token.terminal not in CONTINUING
                and standalone(token.start)
                and (token.terminal not in DECORATABLE or _follows_undecorated(text, earlier_lines, standalone))
            ):
                return window, text, token.start
            earlier_lines.append(token.start)
        elif indent is not None and change == lowest_change and _may_start_statement(last, token):
            stand_in = standalone.tails(token.start, indent)
            if stand_in is not None:
                windowed = text[:token.start - len(indent)] + stand_in
                window.extend(Scanner(windowed).tokens_from(token.start - len(indent)))
                return window, windowed, len(windowed)
        if token.terminal in lx.OPENING_BRACKETS:
            change += 1
        elif token.terminal in lx.CLOSING_BRACKETS:
            change -= 1
            lowest_change = min(lowest_change, change)
        last = token.terminal if token.terminal is not None else last
        window.append(token)
    return window, text, len(text)


@lru_cache(maxsize=1)
def _adjacent_terminals() -> frozenset[tuple[str, str]]:
    """The pairs of terminals that can be side by side in Python (`Grammar.adjacent_terminals`), by name."""
    grammar = load_grammar()
    return frozenset((grammar.names[a], grammar.names[b]) for a, b in grammar.adjacent_terminals)


# Tokens after which a line goes on inside a bracket or an expression: worth no parse as a statement start.
_CONTINUED_BY = frozenset({",", "(", "[", "{", "=", "+", "-", "*", "/", "%", "|", "&", "^", "and", "or", "not",
                           "in", "is", "if", "else", "lambda", ".", "@", "->", ":=", "**", "//", "<", ">", "==", "!="})


def _may_start_statement(before: str | None, token: Token) -> bool:
    """A cheap guess of whether a line that begins with `token` after the terminal `before` starts a statement,
    to spare `StandaloneCache.tails` a parse where it would fail: not a continuation word or a closing bracket,
    not after a token that leaves the expression open, and not a string after a string (inside brackets, lines
    of adjacent strings join). Only ever a guess against: every cut is proved by the parse."""
    if token.terminal in CONTINUING or token.terminal in lx.CLOSING_BRACKETS:
        return False
    return before not in _CONTINUED_BY and not (before == lx.STRING and token.terminal == lx.STRING)


def _follows_undecorated(text: str, earlier_lines: list[int], standalone: StandaloneCache) -> bool:
    """True if the statement before the line being cut is known and is not a decorator."""
    for line in reversed(earlier_lines):
        if standalone(line):
            return text[line] != "@"
    return False


def _line_indent(text: str, start: int, window: list[Token], token: Token) -> str | None:
    """The indentation of `token`'s line when the token is the first on a line after `start` that does not
    continue the line before (`window`: the tokens before it); None otherwise."""
    newline = text.rfind("\n", start, token.start)
    if newline < 0:
        return None
    indent = text[newline + 1:token.start]
    if indent.strip(lx.WHITESPACE) or (window and window[-1].end > newline and text[window[-1].start] == "\\"):
        return None
    return indent


@lru_cache(maxsize=None)
def _symbol(terminal: str) -> Regex:
    return sym(terminal)


def _closing_dedents(known_levels: list[int] | None, lowest_level: int, floor: int) -> Regex:
    """The DEDENTs that close every block above `floor` at the end of the text (or before a column-0 statement):
    one per known level, and up to one per column between `floor` and the lowest known level."""
    if known_levels is None:
        return star(sym(lx.DEDENT))
    exact = sum(1 for level in known_levels if level > floor)
    return repeat(sym(lx.DEDENT), exact, exact + max(0, lowest_level - floor - 1))


def _newline(line_has_tokens: bool | None) -> list[Regex]:
    if line_has_tokens is None:
        return [opt(sym(lx.NEWLINE))]
    return [sym(lx.NEWLINE)] if line_has_tokens else []


class RightLanguage(NamedTuple):
    """A right context's token streams as one NFA (`reversed_right_context_nfa`), the boundary indices that
    took part, each with the text its window stands for (`Stream.stands_for`), and with the fewest characters
    a middle writes beyond its terminals to end there (`Arrival.chars`)."""

    nfa: NFA
    windows: dict[int, str | None]
    chars: dict[int, int]


def reversed_right_context_nfa(
    right: str, window: bool = True, deadline: float | None = None, floor: int = 0,
    statement_starts: Sequence[int] = (),
) -> RightLanguage:
    """The NFA of the reversed union, over boundary indices, of the streams of `right[index:]`, each begun with
    its boundary's marker (`boundary_marker`).

    Reversed because the quotient is computed over reversed languages; built as a trie so that the streams'
    common tail (usually everything after the first line) is shared. Also returns the indices that took part,
    each with the text its window stands for (`Stream.stands_for`); raises `DeadlineExceeded` past `deadline`.
    `floor`: see `stream`. `statement_starts`, ascending: known starts of top-level statements of `right` from
    which the rest of it is whole statements (the window's proofs then parse no further).

    A way to a boundary that needs a bracket depth other than its stream's is no way there: a boundary with none
    left takes no part.
    """
    standalone = StandaloneCache(right, statement_starts) if window else None
    scanner = Scanner(right)
    reversed_streams = []
    used: dict[int, str | None] = {}
    chars: dict[int, int] = {}
    for index, ways in sorted(boundary_arrivals(right).items()):
        found = stream(scanner, index, standalone, deadline, floor)
        ways = [] if found is None else [way for way in ways if way.depth in (None, found.depth)]
        if ways:
            reversed_streams.append([*found.parts[::-1], _symbol(boundary_marker(index))])
            used[index] = found.stands_for
            chars[index] = min(way.chars for way in ways)
    return RightLanguage(union_of_sequences(reversed_streams, deadline), used, chars)


def boundary_marker(index: int) -> str:
    """The marker that begins the stream of the boundary at `index` (`RightQuotients.recognizer_of`): a middle
    whose last token ends there is complete when the quotient accepts it followed by this marker, as that
    stream alone (not another boundary's) completes it."""
    return f"<boundary {index}>"
