"""The right context keeps its meaning: no middle turns the code after the cursor into a comment or string content.

A middle's last token may run on into the right context. Where it is a comment (`x = 1  #` before `foo(bar)`) or a
string (an open docstring before the rest of the file), the file may still compile, with the code the user wrote
after the cursor gone into it: the binding it held or the use it made vanishes with it. Such an end is refused
wherever the right context reads as code from the cursor, as the buffer lexes it (from the token the cursor is in,
the reading's boundary is one the quotient keeps). What a comment or string may run over is what is prose already:
the rest of the comment or string the cursor is in, or else the blanks after the cursor and the comments and
strings that the right context's line begins with.

A comment or string in which the middle wrote text of its own (anything after its `#` but blanks and more `#`s; a
letter or digit after a string's quotes) is the middle's prose, whose text the right context may go on with even
where that text reads as code (a cut of a real file inside `# Called by t|he above`, `# see str(x)|.zfill(6)`): it
is not refused. So is a bare `#` that begins its line (a banner, commented-out code: `#print(x)`) or that a blank
and a word follow, in the middle or the right context (`x = 1  #| note`, `# |noqa`, as comments are written): real
files cut right after such a `#` go on with its words. What is left is the swallowing end: a `#` after code on its
line, glued to the code after the cursor or before an operator (`x = 1  #foo(bar)`, `x# = 2`), and a string's bare
quotes (a docstring's three, `' #`) before code. A true middle is refused only where it ends so; the property test over
standard-library cuts right after a `#` or quotes holds the count of those at none.
"""

from __future__ import annotations

import re

from fimlsp.python import lexemes as lx
from fimlsp.python.right_tokens import Scanner, token_end

PROSE_STATES = lx.STRING_STATES | {lx.S_COMMENT}
_PREFIX_STATES = frozenset(lx.S_PREFIX.values())
_WORD = re.compile(r"[^\W_]")
_BLANK_THEN_WORD = re.compile(r"[ \t]+[^\W_]")
_OPENING = re.compile("[A-Za-z]*(?:'''|\"\"\"|'|\")")
# The most characters of a comment's line looked back at for its text (a longer line has some).
_COMMENT_LOOKBACK = 400


def prose_limit(right: str, cursor: int, boundaries: frozenset[int]) -> int | None:
    """How far into `right` a middle's last comment or string may run, for a cursor in the token state `cursor`
    (`lx.START` between tokens); None where the right context does not read as code from the cursor, so that
    there is no code to keep."""
    reading = 0 if cursor == lx.START else token_end(right, cursor, 0, {})
    if reading is None or reading not in boundaries:
        return None
    if cursor in PROSE_STATES:  # the comment or string the cursor is in, which the right context goes on with
        return reading
    if cursor != lx.START:  # the rest of the name, number or operator the cursor is in is code
        return 0
    start = len(right) - len(right.lstrip(lx.WHITESPACE))
    if start == len(right) or right[start] == "\n":
        return start
    return _prose_run_end(right, start)


def _prose_run_end(right: str, start: int) -> int:
    """The end of the comments and strings that begin the right context's line at `start`: prose already, and so
    is a string that follows one with no line between (a docstring cut after its first two quotes leaves the
    string `"Doc."` and an empty string, which the middle's two quotes make one docstring of)."""
    end = start
    for token in Scanner(right).tokens_from(start):
        if (token is None or "\n" in right[end:token.start]
                or not (token.terminal == lx.STRING or right[token.start] == "#")):
            break
        end = token.end
    return end


def runs_on_as_prose(token: int, right: str) -> bool:
    """Whether a middle whose last token is in state `token` ends it as a comment or string run on into `right`
    (a string prefix, `f` before `"…"`, too)."""
    return token in PROSE_STATES or (token in _PREFIX_STATES and right[:1] in ("'", '"'))


def is_own_prose(token: int, token_text: str, chunks: tuple | None, right: str) -> bool:
    """Whether the middle's last token, a comment or string in state `token`, is prose the right context may go on
    with: a letter or digit after a string's opening quotes (`token_text`, the lexer's text of it); for a comment
    (`chunks`, the text as `(earlier chunks, piece)` pairs: a comment's text is not the lexer's), anything but
    blanks and `#` after the first `#` of its line, or a `#` that begins its line, or one that a blank and a word
    follow in the middle and `right` (a `#` inside a string before it only lets more through)."""
    if token != lx.S_COMMENT:
        opening = _OPENING.match(token_text)
        return bool(_WORD.search(token_text, opening.end() if opening else 0))
    line = ""
    while chunks and len(line) < _COMMENT_LOOKBACK and "\n" not in line:
        chunks, piece = chunks
        line = piece[-_COMMENT_LOOKBACK:] + line
    code, _, words = line.rpartition("\n")[2].partition("#")
    return (bool(words.strip(" \t\f#")) or not code.strip(" \t\f")
            or bool(_BLANK_THEN_WORD.match(words.lstrip("#") + right[:_COMMENT_LOOKBACK])))
