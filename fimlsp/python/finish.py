"""How far a middle is from a valid file, and a shortest text that gets it there.

A constrained decoder must never take a token after which the file can no longer be finished within the tokens
left, and when it has to stop it needs a way to close what is open. Both come from the quotient recognizer:

- `distance_bound(state)`: a lower bound on the characters any finishing text needs: the recognizer's shortest
  completion (`earley`'s `distance`), each terminal costing its shortest lexeme, NEWLINE its line break, INDENT and
  DEDENT nothing (a line's indentation writes them, maybe the right context's), the token in progress nothing (it
  may be complete already, or be completed by the right context), less `MERGE_ALLOWANCE` for a last token that
  runs on into the right context's first and so needs only one of its own characters.
- `shortest_finish(state, limit)`: a best-first search (A*) over texts made of shortest lexemes, the line breaks
  and indentations the open blocks allow, and the text that closes a token in progress (an open string's quotes, a
  comment's line break), ordered by the characters written plus the recognizer's estimate, until the file is
  complete (`FimState.complete`, CPython's verdict). When it ends within its budget (expansions, time), its result
  is the shortest finish among texts of that kind: one space between tokens only where they would otherwise
  merge, new blocks indented by the file's unit.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from functools import lru_cache
from typing import TYPE_CHECKING

from fimlsp.python import lexemes as lx

if TYPE_CHECKING:
    from fimlsp.python.quotient import FimState

# The longest shortest lexeme is three characters ("...", "**=", "not"): merged with the right context's first
# token, it may need just one character of the middle.
MERGE_ALLOWANCE = 2
# Nodes the search expands before it gives up: a finish is a handful of tokens, and the estimate guides it there.
EXPANSIONS = 400
# Tokens that can run on into the right context: a comment to the end of its line, a string to a closing quote.
RUNNING_ON = ("#", '"', "'", '"""', "'''")
# Characters of the right context that a token of the middle can run on into (the longest keyword is 8 long).
MERGE_LOOKAHEAD = 8
TERMINAL_COSTS = {terminal: len(text) for terminal, text in lx.SHORTEST_TEXT.items()}


def estimate(state: FimState) -> float:
    """The recognizer's shortest completion in characters, the token in progress taken as free."""
    parser = state.parser
    pending = state.lexer.possible_terminals()
    if pending is None:
        return parser.distance()
    best = math.inf
    for terminal in pending & parser.allowed():
        fed = parser.feed(terminal)
        if fed is not None:
            best = min(best, fed.distance())
    return best


def distance_bound(state: FimState) -> float:
    """No text shorter than this finishes the file (`math.inf`: none can)."""
    return max(0.0, estimate(state) - MERGE_ALLOWANCE)


def shortest_finish(
    state: FimState, limit: float = math.inf, deadline: float | None = None, expansions: int = EXPANSIONS,
) -> str | None:
    """A shortest text after which the file is complete, of at most `limit` characters; None if the search finds
    none within its budget.

    Where a comment or a string could swallow the right context, the estimate says little and the search is
    uniform: a finish found on the way is kept, and returned as soon as nothing cheaper is left to expand, or when
    `expansions` nodes or the time up to `deadline` (a `time.perf_counter()` value) are spent."""
    if state.complete:
        return ""
    best: str | None = None
    order = itertools.count()
    frontier = [(estimate(state), 0, next(order), state, "")]
    while frontier and expansions > 0 and (deadline is None or time.perf_counter() < deadline):
        cost, _, _, node, text = heapq.heappop(frontier)
        if best is not None and cost >= len(best):
            break
        expansions -= 1
        for piece in _pieces(node):
            child = node.feed(piece)
            if child is None:
                continue
            written = text + piece
            if len(written) > limit or (best is not None and len(written) >= len(best)):
                continue
            if child.quotient_accepts() and child.complete:
                best = written
                continue
            guess = estimate(child)
            if len(written) + max(0.0, guess - MERGE_ALLOWANCE) <= limit:
                heapq.heappush(frontier, (len(written) + guess, -len(written), next(order), child, written))
    return best


def _pieces(state: FimState) -> list[str]:
    """The texts the search may write next: what closes the token in progress, or else what extends it into a
    longer terminal (`im` to `import`), a shortest lexeme of each terminal that may follow (after a space where it
    would merge with the token before), a line break with the indentation of each open block or of a new one, and
    a comment or a string that runs on into the right context."""
    lexer = state.lexer
    closing = lx.closing_text(lexer.token)
    if closing:
        return [closing]
    parser = state.parser
    pending = lexer.possible_terminals()
    pieces = []
    if pending is None:
        following = parser.allowed()
    else:
        following = set()
        for terminal in pending & parser.allowed():
            text = lx.SHORTEST_TEXT[terminal]
            if len(text) > len(lexer.text) and text.startswith(lexer.text):
                pieces.append(text[len(lexer.text):])
            fed = parser.feed(terminal)
            if fed is not None:
                following |= fed.allowed()
    for terminal in following:
        text = lx.SHORTEST_TEXT[terminal]
        if text:
            pieces.append(_separated(lexer.token, text))
    if lx.NEWLINE in following:
        pieces.extend("\n" + indentation for indentation in _indentations(lexer.indents))
    if lexer.at_line_start and lexer.column == 0 and lexer.depth == 0:
        pieces.extend(_indentations(lexer.indents))
    pieces.extend(_separated(lexer.token, text) for text in RUNNING_ON)
    if lexer.token == lx.START:
        pieces.extend(_merging(state.context.right[:MERGE_LOOKAHEAD]))
    else:
        pieces.append(" ")  # ends the token before the right context's first
    return pieces


def _separated(token: int, text: str) -> str:
    """`text` after a space where it would otherwise merge with the token in progress."""
    return " " + text if token != lx.START and _would_merge(token, text[0]) else text


@lru_cache(maxsize=256)
def _merging(right: str) -> tuple[str, ...]:
    """Starts of terminals whose rest begins the right context (`im` before `port x`): the middle's last token
    runs on into the right context's first."""
    found = set()
    for text in lx.SHORTEST_TEXT.values():
        for split in range(1, len(text)):
            if right.startswith(text[split:]):
                found.add(text[:split])
    return tuple(sorted(found))


def _would_merge(token: int, char: str) -> bool:
    return lx.step(token, char) != lx.DEAD or (lx.KIND[token] == lx.KIND_NUMBER and lx.is_identifier_start(char))


def _indentations(indents: tuple[tuple[int, int], ...]) -> list[str]:
    """Indentations that reach an open block's column, or one unit deeper than the innermost: spaces where the
    file indents with spaces, tabs where it indents with tabs only."""
    (column, alt_column) = indents[-1]
    unit = column - indents[-2][0] if len(indents) > 1 else 4
    texts = [_indentation(level, alt) for level, alt in indents if level > 0]
    texts.append(" " * (column + unit) if column == alt_column else "\t" * (alt_column + 1))
    return [text for text in texts if text]


def _indentation(column: int, alt_column: int) -> str:
    if column == alt_column:
        return " " * column
    return "\t" * alt_column if column == 8 * alt_column else ""
