"""What a completion can promise for a real file, and the recognizer that keeps the promise.

`quotient(left, right)` promises that the whole file parses. Editors send files as they are while someone types:
often broken away from the cursor, where no middle can make the whole file parse, and sometimes too big to check
within a keystroke. Then the promise narrows to a region around the cursor, `left[a:] + middle + right[:b]`: a
run of whole statements of one block, checked on its own. At the top level the region is a module of its own
(`a` and `b` start lines at column 0, and its right end is its end of file); inside a class or a function, where
a line broken elsewhere in the same class leaves no top-level region, it is a run of statements of the block
indented by the region's first line, lexed from that indentation (it may not dedent below it) and confirmed
as the body of a compound statement.

Why that is still worth something: a module is a sequence of statements, and so is a block; a run of whole
statements can replace any other run of whole statements at the same place. So if the region parses, the whole
file parses as soon as the rest of it does (with any statements in the region's place). A region result is
exactly as good as a whole-file one for a user who fixes (or never broke) the rest of the file.

Where the cuts go, for each block around the cursor, the module's first and then inward: starts are the latest
lines of the block's indentation above the cursor (the first decorator of a decorated definition; not
`else`-like lines, not lines the lexer run from the file's start finds inside a string; the first blank or
comment line after the last line of code, when the cursor is between statements); ends are the next such lines
below, lexed from the end of the token the cursor is in, then the end of the block. A few of each are tried,
nearest first: a cut inside a string or bracket of a broken file may admit no middle.

Order of attempts, the widest promise first and the cheapest first where the outcome is known: the whole file
first, for a few tens of milliseconds (in a valid file its windows stop at the statements around the cursor, so
that is plenty, and finding the regions would cost more); then, when the text after the enclosing top-level
statement parses, the whole file with all the time; when it does not, the regions go first (the whole file's
window would run to the break). A region is promised only once the whole file is proved to admit no middle (or
is over the budget): the cuts are guesses, and a cut inside a string or a bracket that the middle closes (a
docstring cut in its text, before a long literal) makes the text after it look broken in a valid file. So the
first region that admits a middle is confirmed by the whole file before it is promised. When nothing admits a
middle the promise is "none": the caller decodes unconstrained, and shows the result only if the file compiles
with it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from earley import DeadlineExceeded, Stopped
from earley.deadline import check_deadline, within
from fimlsp.language import DEFAULT_BUDGET, FILE, NONE, REGION, Guarantee
from fimlsp.lines import LINE
from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import INITIAL, MAX_INDENT_LEVELS, advance, block_start
from fimlsp.python.context_cache import RightContextCache
from fimlsp.python.grammar import python_quotients
from fimlsp.python.quotient import quotient
from fimlsp.python.statement_ends import statement_ends
from fimlsp.python.syntax import error_text, parses, parses_statements
from fimlsp.python.window import start_between_statements, statement_starts, statement_starts_by_block

# `DEFAULT_BUDGET`: the proofs behind the window (`ast.parse` of the text outside it, ~0.3 ms per 1,000
# characters) stay well under a second for a file of that many characters.
# The whole file is tried first for this long: in a valid file its windows stop at the statements around the
# cursor and it takes milliseconds; in a broken one the regions below decide the order (whole first if the text
# after the top-level statement parses), and the whole file gets the rest of the time when it comes again.
QUICK_WHOLE_FILE = 0.05
# Region starts tried per block when the latest admits no middle (it may lie inside a string of a broken file).
STARTS_TRIED = 4
# Region ends tried per start (the nearest may lie inside a string that the middle opens).
ENDS_TRIED = 2
# Lines lexed between two looks at the clock (or at the caller's stop flag).
_LINES_BETWEEN_CLOCKS = 64


@dataclass(frozen=True)
class PythonGuarantee(Guarantee):
    """Python's promise: the region is a module, or with `indent` the statements of a block indented by it."""

    def kept_by(self, left: str, middle: str, right: str) -> bool:
        """CPython's verdict on whether `middle` keeps the promise: with it, what the promise covers parses."""
        region = left[self.left_cut:] + middle + right[:self.right_cut]
        return self.scope != NONE and parses_statements(region, self.indent)


def constrain(left: str, right: str, budget: int = DEFAULT_BUDGET, deadline: float | None = None,
              cache: RightContextCache | None = None) -> PythonGuarantee:
    """The widest promise that can be had for a middle between `left` and `right` (see the module's text).

    `budget` is the file size, in characters, up to which the whole file is checked (and the most a region may
    hold); `deadline`, a `time.perf_counter()` value, bounds the setup: past it the promise is `none`. An
    `earley.Deadline` that its caller stops makes it raise `earley.Stopped` instead. The right contexts come
    from `cache`, or without one from a cache of this call's attempts alone.
    """
    cache = RightContextCache() if cache is None else cache
    whole_file = functools.partial(quotient, left, right, cache=cache)
    fits = len(left) + len(right) <= budget
    python_quotients()  # the grammar, built once a process: not within the quick attempt's time
    try:
        hopeless = False  # proved: no middle makes the whole file parse
        if fits:
            try:
                if (state := whole_file(within(deadline, QUICK_WHOLE_FILE))) is not None:
                    return PythonGuarantee(FILE, state, 0, len(right))
                hopeless = True
            except Stopped:
                raise
            except DeadlineExceeded:
                pass
        regions = _regions(left, right, budget, deadline)
        first = next(regions, None)
        top = first if first is not None and not first[2] else None
        whole_first = fits and not hopeless and (top is None or top[1] == len(right) or parses(right[top[1]:]))
        if whole_first:
            if (state := whole_file(deadline)) is not None:
                return PythonGuarantee(FILE, state, 0, len(right))
            hopeless = True
        if fits:
            reason = "the rest of the file does not parse, whatever the middle"
        else:
            reason = f"the file has more than {budget:,} characters; the rest of it was not checked"
        for cut, end, indent in itertools.chain([first] if first is not None else [], regions):
            if (state := quotient(left[cut:], right[:end], deadline, indent, cache)) is not None:
                if fits and not hopeless:  # the cuts are guesses: only a file that admits no middle gets a region
                    if (whole := whole_file(deadline)) is not None:
                        return PythonGuarantee(FILE, whole, 0, len(right))
                return PythonGuarantee(REGION, state, cut, end, reason, indent)
        if fits and not hopeless and (state := whole_file(deadline)) is not None:
            return PythonGuarantee(FILE, state, 0, len(right))
    except Stopped:
        raise
    except DeadlineExceeded:
        reason = "the constraint could not be built within its time budget"
        return PythonGuarantee(NONE, None, 0, len(right), reason)
    if not fits and first is None:
        reason = f"the statement at the cursor has more than {budget:,} characters"
    else:
        reason = "no middle can make the statements around the cursor parse"
        refused = error_text(left + right) if fits else None
        if refused is not None:  # where the text stops being Python, for a user to look at
            reason += f" (without a middle, CPython refuses {refused})"
    return PythonGuarantee(NONE, None, 0, len(right), reason)


def _regions(left: str, right: str, budget: int, deadline: float | None) -> Iterator[tuple[int, int, str]]:
    """The regions to try, in order: (start, end, the indentation of their block), the module's first, then
    each block's inward, up to CPython's limit on indentation (a region deeper is in no valid file).

    Per block, starts are the latest lines of its statements, with the start of the blank lines before the
    cursor (when it may be between two statements) second. Found lazily, with a look at the clock between
    candidates: deep nesting makes many."""
    anchor = 0 if len(left) <= budget else min(statement_starts(left, STARTS_TRIED, right) or [0])
    strings = _string_lines(left, anchor, deadline)
    blocks = statement_starts_by_block(left, STARTS_TRIED, right, strings)
    for indent, starts in reversed(blocks[-MAX_INDENT_LEVELS:]):
        check_deadline(deadline)
        starts = starts or ([] if indent else [0])
        between = start_between_statements(left, right, indent, strings) if starts else None
        starts = [cut for cut in starts if len(left) - cut <= budget]
        if between is not None and between not in starts:
            starts.insert(min(1, len(starts)), between)
        for cut in starts:
            check_deadline(deadline)
            lexed = advance(block_start(indent), left[cut:])
            if lexed is None:  # a start inside a bracket of a broken file seldom lexes to the cursor
                continue
            at_cursor, room = lexed[0], budget - (len(left) - cut)
            for end in statement_ends(right, ENDS_TRIED, at_cursor.token, indent, room, at_cursor.depth > 0,
                                      deadline):
                if (cut, end) != (0, len(right)):
                    yield cut, end, indent


def _string_lines(left: str, anchor: int, deadline: float | None = None) -> set[int]:
    """The line starts of `left` after `anchor` (the file's start when it fits the budget) at which the lexer, run
    from there, is inside a string: those lines are string content, not statements. Brackets are not held
    against a line (a stray bracket above is what a region is there to skip); after a line that does not lex,
    the lexer starts afresh at the next line. Raises `DeadlineExceeded` past `deadline`."""
    found = set()
    state = INITIAL
    for count, line in enumerate(LINE.finditer(left, anchor)):
        if count % _LINES_BETWEEN_CLOCKS == 0:
            check_deadline(deadline)
        if state.token != lx.START:
            found.add(line.start())
        lexed = advance(state, line.group())
        state = INITIAL if lexed is None else lexed[0]
    return found
