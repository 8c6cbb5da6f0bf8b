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

import ast
import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from earley import NFA, Regex, alt, opt, repeat, star, sym, union_of_sequences
from earley.deadline import check_deadline
from fimlsp.lines import line_offsets, line_start, normalize
from fimlsp.python import lexemes as lx
from fimlsp.python.facts import CODE_LINE, CONTINUING, CONTINUING_CLAUSE, DECORATABLE
from fimlsp.python.grammar import load_grammar
from fimlsp.python.lexer import (
    MAX_BRACKET_DEPTH, MAX_INDENT_LEVELS, indentation_column, string_is_valid,
)
from fimlsp.python.syntax import module_or_error_line, parses_statements, syntax_error_line
from fimlsp.python.window import statement_line


def boundary_indices(right: str) -> list[int]:
    """Indices of `right` at which, after some middle, the lexer is between tokens (sorted)."""
    ends = {0}
    memo: dict[tuple[int, int], int | None] = {}
    for state in range(1, lx.N_STATES):
        end = token_end(right, state, 0, memo)
        if end is not None:
            ends.add(end)
    ends.add(_line_start_end(right, 0, memo))
    if right.startswith("\n"):  # the middle ended in "\r": this "\n" completes its line break
        ends |= {1, _line_start_end(right, 1, memo)}
    return sorted(index for index in ends if index is not None)


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


@dataclass
class _Token:
    terminal: str | None  # None for comments and line continuations
    start: int
    end: int


class _Scanner:
    """Tokens of the right context from any index, lexed lazily and shared between indices.

    Lexing from a token boundary is deterministic, so the tokens found at a position are the same whichever
    index the scan began from: they are memoized by position, scans from different indices join as soon as they
    meet, and a stream cut short by windowing never lexes the rest of the file.
    """

    def __init__(self, text: str):
        self.text = text
        self.ends: dict[tuple[int, int], int | None] = {}
        self.at: dict[int, tuple[list[_Token], int] | None] = {}  # token start -> (its tokens, next position)

    def tokens_from(self, index: int) -> Iterator[_Token | None]:
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


def _classify(text: str, first: int, start: int, end: int) -> list[_Token]:
    """Terminals of the text `text[start:end]`, a token begun in automaton state `first`."""
    state = first
    for index in range(start + 1, end):
        following = lx.step(state, text[index])
        if following == lx.DEAD:  # backed up: the last character starts a token of its own
            terminal, restart = lx.BACK_UP[state]
            return [_Token(terminal, start, index - 1), *_classify(text, restart, index - 1, end)]
        state = following
    if state in lx.BACK_UP and lx.KIND[state] is None:  # `..` (`1e`) at the token's end: `.` then `.`
        terminal, restart = lx.BACK_UP[state]
        return [_Token(terminal, start, end - 1), *_classify(text, restart, end - 1, end)]
    kind = lx.KIND[state]
    token_text = text[start:end]
    if kind == lx.KIND_NAME:
        return [_Token(lx.word_terminal(token_text), start, end)]
    if kind == lx.KIND_NUMBER:
        return [_Token(lx.NUMBER, start, end)]
    if kind == lx.KIND_STRING:
        return [_Token(lx.STRING if string_is_valid(token_text) else "", start, end)]
    if kind == lx.KIND_OPERATOR:
        return [_Token(token_text, start, end)]
    return [_Token(None, start, end)]


class _StandaloneCache:
    """What the text from an index of the right context to the end of the file is, when it is whole statements
    (memoized): whether it is a valid module by itself (from a line at column 0), and what can stand in for it
    (from an indented line, `tails`).

    When that text does not parse, the candidates before the line of the error are given up without parsing
    them: at worst the window is wider than it could be, and a broken right context costs one parse per error
    instead of one per statement. That holds for the candidates of one stream (`start_stream`): another may lex
    the same text another way (a middle that ends inside a string reads the file's strings as code, and
    CPython's error from one of its candidates can lie thousands of lines on), and known starts are proofs that
    no guess overrides.
    """

    def __init__(self, right: str, statement_starts: Sequence[int] = ()):
        self.right = right
        # Known starts of top-level statements, ascending, from which the rest is known to be whole statements.
        self.statement_starts = statement_starts
        self.known: dict[int, bool] = dict.fromkeys(statement_starts, True)
        self.hopeless_before = 0
        self.stand_ins: dict[int, str | None] = {}
        self.failed_tails = 0
        # Indented cuts need every column below 98: a stack of 100 levels, CPython's limit, is then out of reach
        # on both sides of a cut, so cutting cannot hide a line that is too deep (a tab may reach any column:
        # a file indented with tabs gets no indented cuts).
        self.shallow = _MAYBE_DEEP.search(right) is None

    def start_stream(self) -> None:
        """Candidates given up for the stream before stay memoized as parsed, but not as hopeless."""
        self.hopeless_before = 0

    def __call__(self, index: int) -> bool:
        found = self.known.get(index)
        if found is None:
            if index < self.hopeless_before:
                return False
            error_line = syntax_error_line(self.right[index:])
            found = self.known[index] = error_line is None
            if error_line is not None:
                self._give_up_before(error_line, index)
        return found

    def tails(self, index: int, indent: str) -> str | None:
        """What can stand in for `right[index - len(indent):]`, the rest of the file from a line indented by
        `indent`, whatever comes before it; None if nothing is proved.

        The rest of the file is statements of the block at that indentation, then of each block it dedents to,
        down to the last one; statements of a block may be replaced by any others, so one statement per level
        stands in for it: `pass` (`class _: pass` at the first line when the rest starts with a definition,
        which a decorator before it may decorate), with the indentation of the line that dedents to the level.
        The proof is CPython's: the rest of the file must parse after one `with _:` header per level below the
        first (taken from the lowest lines, as they come), which shows that it is whole statements, that
        nothing in it continues a statement before it (`else` …), and which levels it reaches.
        """
        if index < self.hopeless_before or not self.shallow or self.failed_tails >= _TAILS_TRIED:
            return None
        found = self.stand_ins.get(index, False)
        if found is not False:
            return found
        line = index - len(indent)
        known = bisect.bisect_right(self.statement_starts, line)
        end = self.statement_starts[known] if known < len(self.statement_starts) else len(self.right)
        levels = _lowest_lines(self.right, line, end)
        clause = next((start for start, code in levels[1:] if CONTINUING_CLAUSE.match(self.right, code)), None)
        if clause is not None:  # it continues a statement before the cut: give up until past it, unparsed
            self.hopeless_before = max(self.hopeless_before, self.right.find("\n", clause) + 1 or len(self.right))
            self.stand_ins[index] = None
            return None
        headers = "".join(f"{self.right[start:code]}with _:\n" for start, code in reversed(levels[1:]))
        if levels[-1][1] > levels[-1][0]:  # no line at column 0: the lowest level needs a header of its own
            headers = "with _:\n" + headers
        module = module_or_error_line(headers + self.right[line:end])
        if isinstance(module, int):
            self.failed_tails += 1
            self._give_up_before(module - headers.count("\n"), line)
            found = None
        else:
            found = _stand_in(module, headers.count("\n"), self.right, line, indent)
            if end < len(self.right):  # from a known statement start on, whole top-level statements
                found += "pass\n"
        self.stand_ins[index] = found
        return found

    def _give_up_before(self, error_line: int, index: int) -> None:
        """Give up every candidate up to the line after the blamed one (1-based, in `right[index:]`)."""
        self.hopeless_before = max(self.hopeless_before, line_start(self.right, max(1, error_line) + 1, index))


_TAILS_TRIED = 4
# Tokens of a window between two looks at the clock (a token costs up to 20 microseconds).
_TOKENS_BETWEEN_CLOCKS = 256
_MAYBE_DEEP = re.compile(r"^(?: {98}|[ \f]*\t)", re.MULTILINE)


def _lowest_lines(text: str, line: int, end: int) -> list[tuple[int, int]]:
    """Where the line at `line` and each later line of code before `end` indented less than all before it start,
    and where their code starts, up to the first at column 0. Lines inside strings or brackets may be among them:
    a header made from one is harmless when no statement dedents to it, and fails the proof otherwise."""
    lowest: list[tuple[int, int]] = []
    column = None
    for match in CODE_LINE.finditer(text, line, end):
        found = indentation_column(match.group())
        if column is None or found < column:
            lowest.append((match.start(), match.end()))
            column = found
            if not found:
                break
    return lowest


def _stand_in(module: ast.Module, header_lines: int, right: str, line: int, indent: str) -> str:
    """The text that stands in for `right[line:]`, read off the tree of the headers (one `with` per level,
    outermost first) followed by it: a level is reached when its header's block holds more than the next
    header, and its first such statement is where the text dedents to it."""
    levels = []
    statements = module.body
    while statements and isinstance(statements[0], ast.With) and statements[0].lineno <= header_lines:
        levels.append(statements)
        statements = statements[0].body
    first = statements[0]
    decoratable = isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    stand_in = [indent + ("class _: pass\n" if decoratable else "pass\n")]
    dedents = [level[1] for level in reversed(levels) if len(level) > 1]
    starts = line_offsets(right, [statement_line(statement) - header_lines for statement in dedents], line)
    for start in starts:
        code = start
        while right[code] in " \t\f":
            code += 1
        stand_in.append(right[start:code] + "pass\n")
    return "".join(stand_in)


class Stream(NamedTuple):
    """What `right[start:]` can lex to, and the text that its window stands for in place of the whole `right`:
    `right[:cut]` when the rest from a column-0 cut is a module of its own, `right[:line]` and one statement per
    level at an indented cut, None without a cut. Whatever comes before, the file is valid with it exactly
    when it is valid with the whole right context, so CPython can judge a middle on it alone."""

    parts: list[Regex]
    stands_for: str | None


def stream(
    scanner: _Scanner, start: int, standalone: _StandaloneCache | None = None, deadline: float | None = None,
    floor: int = 0,
) -> Stream | None:
    """The terminals that `right[start:]`, lexed from a token boundary after an unknown middle, can produce.

    Returned as a sequence of small expressions, or None if no lexer state makes the text valid (it does not
    lex, or its brackets cannot balance). With `standalone`, the stream stops at the first line at column 0
    after which the rest of the file is a valid module that the text before cannot continue or decorate: there
    every block is closed and the bracket depth is 0, so the language there is the same as at the end of the
    file; or, sooner, at an indented line from which one `pass` per level stands in for the rest of the file
    (`_StandaloneCache.tails`). Windowing bounds the one-time cost by the statement around the cursor, not the
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
    depth = -change  # the file ends, and a window is cut, at depth 0
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
    return Stream(parts, None if text is scanner.text and end == len(text) else text[:end])


def _window_tokens(
    scanner: _Scanner, start: int, standalone: _StandaloneCache | None, deadline: float | None = None
) -> tuple[list[_Token] | None, str, int]:
    """The tokens from `start` up to the window's cut (the end of the file if there is none), or None if they
    do not lex; the text they index, which past an indented cut ends with its stand-in; and where in it the
    window ends (the cut, or the end of the text).

    A cut is a line that starts at column 0 with a token that does not continue the statement before (`else`
    …), after which the rest of the file parses, and which no decorator precedes: a `def`, `class`, `async` or
    `@` line is a cut only if the nearest earlier column-0 line that starts a statement (the rest of the file
    parses from there too) is not a decorator. Lines inside brackets (a decorator's closing `)`) start none.
    An indented line is a cut where `_StandaloneCache.tails` finds a stand-in for the rest of the file, whose
    tokens then end the window.
    """
    text = scanner.text
    if standalone is not None:
        standalone.start_stream()
    window: list[_Token] = []
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
                window.extend(_Scanner(windowed).tokens_from(token.start - len(indent)))
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


def _may_start_statement(before: str | None, token: _Token) -> bool:
    """A cheap guess of whether a line that begins with `token` after the terminal `before` starts a statement,
    to spare `_StandaloneCache.tails` a parse where it would fail: not a continuation word or a closing bracket,
    not after a token that leaves the expression open, and not a string after a string (inside brackets, lines
    of adjacent strings join). Only ever a guess against: every cut is proved by the parse."""
    if token.terminal in CONTINUING or token.terminal in lx.CLOSING_BRACKETS:
        return False
    return before not in _CONTINUED_BY and not (before == lx.STRING and token.terminal == lx.STRING)


def statement_ends(
    right: str, limit: int, pending: int = lx.START, indent: str = "", within: int | None = None,
    in_brackets: bool = False, deadline: float | None = None,
) -> list[int]:
    """Where the statement around the start of `right` may end, best first, among the statements of the block
    indented by `indent` (the module's by default): the first `limit` later lines that start with exactly
    `indent` and a token that can start a statement (not `else`-like, not a closing bracket) and that no
    decorator precedes, then the end of the block (a line indented less, or the end of `right`) if fewer were
    found, nearest first; then, when the cursor is `in_brackets`, the first such line that starts with a closing
    bracket (usually the end of the cursor's bracket; with none open, one is stray and a line like the others);
    then the ends past text between two ends that does not parse on its own (a region that holds it is broken
    whatever the middle).

    The middle may end with a decorator (`@dataclass` typed above a class), so when the first such line after
    the cursor's can be decorated it comes last if the statement it starts parses (a region that holds it admits
    more middles), and first if not (a region must stop before it). `right` is lexed as the lexer sees it, from the
    token in progress at the cursor (an automaton state `pending`: the cursor may be inside a string), so lines
    inside its strings are not taken (a middle that ends inside a string of its own makes the later ones the
    better guess); when the rest of the cursor's line does not lex that way (`a|b")`: the middle opens a string
    that it closes), from the next line. Only the first `within` characters are looked at, when given: a region
    may not be bigger. Raises `DeadlineExceeded` past `deadline`.
    """
    truncated = within is not None and within < len(right)
    right = right[:within] if truncated else right
    text = normalize(right)
    scanner = _Scanner(text)
    resume = token_end(text, pending, 0, {}) if pending != lx.START else 0
    if resume is None or not _lexes_through_its_line(scanner, resume):
        resume = text.find("\n") + 1  # the middle opens what the cursor's line closes: read on from the next line
    floor = indentation_column(indent)
    window: list[_Token] = []
    decorated = False
    ends: list[int] = []
    decoratable_first: int | None = None
    closer: int | None = None
    block_end = len(text)
    for token in scanner.tokens_from(resume):
        if token is None or token.terminal == "" or len(ends) >= limit:
            break
        if len(window) % _TOKENS_BETWEEN_CLOCKS == 0:
            check_deadline(deadline)
        line_indent = None if token.terminal is None else _line_indent(text, 0, window, token)
        if line_indent is not None and line_indent != indent and indentation_column(line_indent) < floor:
            block_end = token.start - len(line_indent)
            break
        if line_indent == indent:
            line = token.start - len(indent)
            first = not ends and decoratable_first is None and closer is None
            if token.terminal in lx.CLOSING_BRACKETS and in_brackets:
                closer = line if closer is None else closer
            elif first and token.terminal in DECORATABLE:
                decoratable_first = line
            elif token.terminal not in CONTINUING and not (decorated and token.terminal in DECORATABLE):
                ends.append(line)
            decorated = token.terminal == "@"
        window.append(token)
    if len(ends) < limit and not (truncated and block_end == len(text)):
        ends.append(block_end)
    hopeful, hopeless = _by_hope(text, ends, indent)
    ordered = hopeful + ([closer] if closer is not None else []) + hopeless
    if decoratable_first is not None:
        later = [end for end in [*ends, *([] if closer is None else [closer])] if end > decoratable_first]
        following = min(later, default=len(text))
        if parses_statements(text[decoratable_first:following], indent):  # a region may hold what it starts
            ordered.append(decoratable_first)
        else:
            ordered.insert(0, decoratable_first)
    return ordered if text is right else [_offset_in(right, text, end) for end in ordered]


def _by_hope(text: str, ends: list[int], indent: str) -> tuple[list[int], list[int]]:
    """`ends` (ascending) split at the first text between two of them that does not parse as statements of the
    block: a region that holds it is broken whatever the middle (the text before the first end holds the
    middle's place and is not judged)."""
    for previous, end in zip(ends, ends[1:]):
        if not parses_statements(text[previous:end], indent):
            split = ends.index(end)
            return ends[:split], ends[split:]
    return ends, []


def _lexes_through_its_line(scanner: _Scanner, index: int) -> bool:
    """True if the text from `index` lexes at least to the end of its line (a token may run on past it)."""
    line_end = scanner.text.find("\n", index)
    for token in scanner.tokens_from(index):
        if token is None or token.terminal == "":
            return False
        if line_end < 0 or token.end > line_end:
            return True
    return True


def _offset_in(right: str, normalized: str, offset: int) -> int:
    """The offset in `right` of a line start (or the end) at `offset` of its newline-normalized text."""
    return len(right) if offset == len(normalized) else line_start(right, normalized.count("\n", 0, offset) + 1)


def _follows_undecorated(text: str, earlier_lines: list[int], standalone: _StandaloneCache) -> bool:
    """True if the statement before the line being cut is known and is not a decorator."""
    for line in reversed(earlier_lines):
        if standalone(line):
            return text[line] != "@"
    return False


def _line_indent(text: str, start: int, window: list[_Token], token: _Token) -> str | None:
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


def reversed_right_context_nfa(
    right: str, window: bool = True, deadline: float | None = None, floor: int = 0,
    statement_starts: Sequence[int] = (),
) -> tuple[NFA, dict[int, str | None]]:
    """The NFA of the reversed union, over boundary indices, of the streams of `right[index:]`.

    Reversed because the quotient is computed over reversed languages; built as a trie so that the streams'
    common tail (usually everything after the first line) is shared. Also returns the indices that took part,
    each with the text its window stands for (`Stream.stands_for`); raises `DeadlineExceeded` past `deadline`.
    `floor`: see `stream`. `statement_starts`, ascending: known starts of top-level statements of `right` from
    which the rest of it is whole statements (the window's proofs then parse no further).
    """
    standalone = _StandaloneCache(right, statement_starts) if window else None
    scanner = _Scanner(right)
    reversed_streams = []
    used: dict[int, str | None] = {}
    for index in boundary_indices(right):
        found = stream(scanner, index, standalone, deadline, floor)
        if found is not None:
            reversed_streams.append(found.parts[::-1])
            used[index] = found.stands_for
    return union_of_sequences(reversed_streams, deadline), used
