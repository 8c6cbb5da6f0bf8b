"""Where the statement around the cursor may end in the right context: the region's candidate ends, apart from
the right context's language (`fimlsp.python.right_context`), whose token scan they share."""

from __future__ import annotations

from earley.deadline import check_deadline
from fimlsp.lines import line_start, normalize
from fimlsp.python import lexemes as lx
from fimlsp.python.facts import CONTINUING, DECORATABLE
from fimlsp.python.lexer import indentation_column
from fimlsp.python.right_context import _TOKENS_BETWEEN_CLOCKS, _line_indent
from fimlsp.python.right_tokens import Scanner, Token, token_end
from fimlsp.python.syntax import parses_statements


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
    scanner = Scanner(text)
    resume = token_end(text, pending, 0, {}) if pending != lx.START else 0
    if resume is None or not _lexes_through_its_line(scanner, resume):
        resume = text.find("\n") + 1  # the middle opens what the cursor's line closes: read on from the next line
    floor = indentation_column(indent)
    window: list[Token] = []
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


def _lexes_through_its_line(scanner: Scanner, index: int) -> bool:
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
