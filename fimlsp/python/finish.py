"""How far a middle is from a valid file, and a shortest text that gets it there.

A constrained decoder must never take a token after which the file can no longer be finished within the tokens
left, and when it has to stop it needs a way to close what is open. Both come from the quotient recognizer:

- `distance_bound(state)`: a lower bound on the characters any finishing text needs: the recognizer's shortest
  completion (`earley`'s `distance`), each terminal costing its shortest lexeme, NEWLINE its line break, INDENT and
  DEDENT nothing (a line's indentation writes them, maybe the right context's), the token in progress nothing (it
  may be complete already, or be completed by the right context), less `MERGE_ALLOWANCE` for a last token that
  runs on into the right context's first and so needs only one of its own characters.
- `shortest_finish(state, limit)`: a best-first search (A*) over texts made of shortest lexemes, the line breaks
  and indentations the open blocks allow, and the text that closes a token in progress (an open string's quotes
  after a truncated escape's digits, a comment's line break), ordered by the characters written plus the
  recognizer's estimate, until the file is complete (`FimState.complete`, CPython's verdict). When it ends within
  its share of the budget (expansions, time), its result is the shortest finish among texts of that kind: one
  space between tokens only where they would otherwise merge, new blocks indented by the file's unit. Otherwise a
  greedy search (the estimate weighted) takes the rest of the budget and returns the first finish it meets: the
  estimate is flat where it cannot see what CPython will refuse (indentation, and ends that only some of the right
  context's boundaries allow), and there the exact search drowns in equally cheap texts.
"""

from __future__ import annotations

import builtins
import heapq
import itertools
import math
import re
import time
from collections import OrderedDict
from functools import lru_cache
from typing import TYPE_CHECKING

from earley.deadline import Deadline, within
from fimlsp.python import lexemes as lx
from fimlsp.python.finish_ends import (WORD, binds, bracket_change, comments_code_out, dedents_below,
                                      first_line_words, line_so_far)
from fimlsp.python.finish_pieces import _pieces, right_block_column

if TYPE_CHECKING:
    from fimlsp.python.quotient import FimState

# The longest shortest lexeme is three characters ("...", "**=", "not"): merged with the right context's first
# token, it may need just one character of the middle.
MERGE_ALLOWANCE = 2
# Nodes the search expands before it gives up: a finish is a handful of tokens, and the estimate guides it there.
EXPANSIONS = 400
# A check of a whole file (`FimState.complete`: CPython's compile and the name judge's reading of every name) costs
# one expansion and one more per this many characters of the file: counted, a search on a big file checks fewer
# ends, and a search never runs on past its budget for the checks a node's children ask for.
CHECK_CHARS = 4_000
# The exact search's share of them and of the time; the rest go to the greedy one, whose estimate counts this
# many times.
EXACT_SHARE = 0.3
GREEDY_WEIGHT = 5.0
# The expansions a search goes on for, once it found a finish that comments out code of the right context (`x#`
# before ` name=1`) or takes its lines from their block, for one that keeps them (in the finish, names and decoding
# tests, each of the 53 code finishes found after 155 such comments came within 15; the whole budget found no more,
# for 3% more nodes in all)
SECOND_CHOICE_GRACE = 16
# The most names that ends of a search left unbound (`FimState.unbound_names`) that it tries to bind.
WANTED_NAMES = 3
_BUILTINS = frozenset(dir(builtins))
TERMINAL_COSTS = {terminal: len(text) for terminal, text in lx.SHORTEST_TEXT.items()}
_RUN_ON_STATES = frozenset({lx.S_COMMENT, lx.S_BACKSLASH, lx.S_CONTINUATION})


def estimate(state: FimState) -> float:
    """The recognizer's shortest completion in characters, the token in progress taken as free: a comment or a
    line continuation in progress has written the `#` or backslash that a boundary's marker costs (`RightLanguage
    .chars`), so one character less is counted."""
    parser = state.parser
    pending = state.lexer.possible_terminals()
    if pending is None:
        return max(0.0, parser.distance() - (state.lexer.token in _RUN_ON_STATES))
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
    """A text of at most `limit` characters after which the file is complete: the shortest when the exact search
    ends within its share of the budget, else the first one a greedy search finds; None if neither finds one
    within `expansions` nodes and the time up to `deadline` (a `time.perf_counter()` value)."""
    if hopeless(state):
        return None
    if state.complete:
        return ""
    if _refused(state) or _unbound_to_the_end(state, limit):
        return None
    budget = _Budget(expansions, deadline)
    # names an end left unbound: the finish may bind them (not the word the cursor is in: it may end otherwise)
    unbound = state.unbound_names() - {_begun(state), _run_on(_begun(state), state.context.right)}
    wanted = sorted(unbound) if len(unbound) <= WANTED_NAMES else []
    found, second = _search(state, limit, budget.share(EXACT_SHARE), 1.0, wanted)
    if found is None and budget.left():
        found, greedy_second = _search(state, limit, budget, GREEDY_WEIGHT, wanted)
        second = second or greedy_second
    found = found if found is not None else second
    return found if found is None else with_comma_spaces(state, found, limit)


def with_comma_spaces(state: FimState, finish: str, limit: float) -> str:
    """`finish` with a space after each comma of its code that more code follows on the line (`os, shutil`, not
    `os,shutil`), as the file writes its commas (`comma_spaced`); `finish` as it is where the file does not, where
    the spaces would take it past `limit`, or where the spaced text would not finish the file. A comma in a string
    or a comment is text, not code: it is left as it is."""
    commas = [match.start() for match in _COMMA_BEFORE_CODE.finditer(finish)]
    if not commas or len(finish) + len(commas) > limit or not comma_spaced(state.text):
        return finish
    in_code = [index for index in commas if ends_a_comma(state.feed(finish[:index + 1]))]
    if not in_code:
        return finish
    spaced = "".join(finish[start:end] + ("," + " " if end in in_code else finish[end:end + 1])
                     for start, end in zip([0] + [index + 1 for index in commas], commas + [len(finish)]))
    after = state.feed(spaced)
    return spaced if after is not None and after.complete else finish


def comma_spaced(text: str) -> bool:
    """Whether a file writes a space after its commas: it does at least as often as it does not (PEP 8's style
    where a file has no comma yet)."""
    text = text[-COMMA_STYLE_CHARS:]
    return text.count(", ") >= len(_COMMA_BEFORE_CODE.findall(text))


def ends_a_comma(state: FimState | None) -> bool:
    """The text up to `state` ends in a comma of the code (the token in progress is a comma)."""
    return state is not None and state.lexer.possible_terminals() == _COMMA


_COMMA = frozenset({","})
# A comma that more code follows on its line: not a line's last, nor one before a closing bracket (`(x,)`).
_COMMA_BEFORE_CODE = re.compile(r",(?=[^\s)\]}])")
# The end of the file's text in which its style of commas is counted.
COMMA_STYLE_CHARS = 20_000


class _Budget:
    """Expansions and time a search may spend; a share of it may go to a first phase."""

    def __init__(self, expansions: int, deadline: float | None):
        self.expansions, self.deadline = expansions, deadline
        self._parent: _Budget | None = None

    def share(self, fraction: float) -> _Budget:
        deadline = self.deadline
        if deadline is not None:  # a caller's stop flag goes with it (`earley.Deadline`)
            deadline = within(deadline, fraction * max(0.0, deadline - time.perf_counter()))
        part = _Budget(max(1, int(fraction * self.expansions)), deadline)
        part._parent = self
        return part

    def spend(self, work: int = 1) -> None:
        self.expansions -= work
        if self._parent is not None:
            self._parent.spend(work)

    def cap(self, work: int) -> None:
        """At most `work` more expansions, for this part and the whole."""
        self.expansions = min(self.expansions, work)
        if self._parent is not None:
            self._parent.cap(work)

    def left(self) -> bool:
        """Expansions and time are left, and the caller has not stopped the search (a superseded request)."""
        deadline = self.deadline
        return self.expansions > 0 and (deadline is None or time.perf_counter() < deadline and not (
            isinstance(deadline, Deadline) and deadline.stopped()))


def _search(
    state: FimState, limit: float, budget: _Budget, weight: float, wanted: list[str],
) -> tuple[str | None, str | None]:
    """Best-first over texts, ordered by characters written plus `weight` times the estimate: with weight 1 (A*)
    the first finish that nothing cheaper can beat is a shortest; a heavier weight dives toward the end where the
    estimate is flat (indentation costs characters it does not count). A finish found on the way is kept.

    A text the quotient accepts is checked at once (`complete`: CPython's and pyflakes' verdict on the whole file,
    the costly part of a search, counted as `check_work`): a finish found prunes every longer text, and where the
    estimate is flat the checks are what tells the ends apart. Where the name judge refuses an end because it
    leaves a few names unbound, they join `wanted` and the search starts again: a wanted name the text has not
    written where it may bind it counts as the characters it needs (one ahead of the others), and an end that binds
    none of them is not checked. An end the check refused is at least one character from a finish, though the
    quotient accepts it (its estimate 0): the greedy search counts it so, or it follows a plateau of such ends (`(+`,
    `(-~`, ... where a line deeper than every open block follows) and never reaches the header that it needs.

    A finish that ends in a comment of its own over the code of the right context's first line (`x#` before
    ` name=1`: the meaning judge lets a comment run on where a blank and a word follow it), or that writes a line
    left of both the block the left context ends in and the right context's next lines (which it takes from their
    block: `if x:` before a class's methods), is kept aside, the first such: it is returned (second) only where no
    other finish is found within `SECOND_CHOICE_GRACE` more nodes."""
    best: str | None = None
    second: str | None = None
    floor = min(state.lexer.indents[-1][0], right_block_column(state.context.right))
    line = line_so_far(state)
    depth = state.lexer.depth - bracket_change(line)  # the brackets open where that line begins
    begun = _begun(state)
    check = check_work(state)  # the middle's few characters aside, every check reads the same file
    order = itertools.count()
    root = (weight * estimate(state), 0, next(order), state, "", 0)
    frontier = [root]
    while frontier and budget.left():
        cost, _, _, node, text, discount = heapq.heappop(frontier)
        wanted_before = len(wanted)
        if best is not None and (weight > 1 or cost >= len(best)):
            break
        budget.spend()
        continuing, final, openings = _pieces(node, wanted)
        for piece in itertools.chain(sorted(final), sorted(openings), continuing):  # sorted, as in `_pieces`
            written = text + piece
            if len(written) > limit or (best is not None and len(written) >= len(best)):
                continue
            child = node.feed(piece)
            if child is None or hopeless(child, wanted):
                continue
            refused = False
            # an end that binds none of the names others left unbound would leave them unbound too: not checked
            if child.quotient_accepts() and (not wanted or any(binds(child, name) for name in wanted)):
                if not budget.left():  # a node's children may ask for many checks: each is counted
                    return best, second
                budget.spend(check)
                if child.complete:
                    kept = not (comments_code_out(child)
                                or dedents_below(line + written, child.context.right, floor, depth))
                    if kept:
                        best = written
                    elif second is None:
                        second = written
                        budget.cap(SECOND_CHOICE_GRACE)
                    continue
                refused = True
                if _refused(child):  # and so is every text after it
                    continue
                # a name the finish (or the word the cursor is in) loads unbound is to be written otherwise, not
                # bound; so is the word its last one makes with the right context's first (`offset_` before `int`)
                unbound = (child.unbound_names() - set(wanted) - set(WORD.findall(begun + written))
                           - {_run_on(begun + written, child.context.right)})
                if len(wanted) + len(unbound) <= WANTED_NAMES:  # (more: the end made loads of other text)
                    wanted.extend(sorted(unbound))
            if piece in final:
                continue
            guess = estimate(child)
            if refused and weight > 1:
                guess = max(guess, 1.0)
            if len(written) + max(0.0, guess - MERGE_ALLOWANCE) <= limit:
                # (one for a name the right context's first line writes: a keyword before the line may bind it,
                # `def ` before `from_dict(config):`, and the estimate may count that keyword already)
                right_words = first_line_words(child.context.right)
                guess += sum(1 if name in right_words else len(name) + 1
                             for name in wanted if not binds(child, name))
                # the greedy search dives into a compound statement's start (one a path): what it wrote is not held
                # against it
                child_discount = len(written) if weight > 1 and piece in openings and not discount else discount
                heapq.heappush(frontier, (len(written) - child_discount + weight * guess, -len(written),
                                          next(order), child, written, child_discount))
        if len(wanted) > wanted_before and best is None:  # the texts so far were ordered without these names
            frontier = [root]
    return best, second


def hopeless(state: FimState, wanted: list[str] = ()) -> bool:
    """No text the search writes can complete the file after `state`, with the name judge on: the middle loaded a
    name that nothing binds inside a function or brackets (its debt, `fimlsp.python.middle_names.Names`) and the
    search is not writing it, or the word the cursor is in (which the judge leaves to the file's check: it began in
    the left context) ended as a load that the file's check found unbound at another end (`pos += array.`: `array`,
    or `raise TTHRIGHT(`, `_refused`). A finish could bind such a name only by writing it again, after its load; a
    search that went on checked every end it met, each refused for that name, until its budget ran out."""
    names = state.names
    if names is None or names.off:
        return False
    if names.debt - set(wanted):
        return True
    word = _loaded_cursor_word(state, names)
    return word is not None and word not in wanted and word in _REFUSED_WORDS.get(names.file, ())


def _refused(state: FimState) -> bool:
    """Whether `state`, which the file's check refused, was refused for the word the cursor is in, ended as a load
    of a name nothing binds: it is remembered for the file (`hopeless`), and no text after it is complete."""
    names = state.names
    if names is None or names.off:
        return False
    word = _loaded_cursor_word(state, names)
    if word is None or word not in state.unbound_names():
        return False
    _remember_refused(names.file, word)
    return True


def _unbound_to_the_end(state: FimState, limit: float) -> bool:
    """Whether `state`, which the file's check refused, ends in the word the cursor is in, after an operator or a
    keyword that makes it a load (`raise SecurePost`), refused for it, and no text the search writes goes on with
    the word (no name the file binds begins with it): every text after it loads the word unbound. Where it was
    refused, the texts that end it as it is (`return F;`, `return F  # x`) are not checked (`hopeless`)."""
    names = state.names
    if names is None or names.off:
        return False
    where = _cursor_word_start(names.file.left)
    begun = _begun(state)
    if where is None or not where[1] or not begun or begun not in state.unbound_names() or begun in _BUILTINS:
        return False
    text = state.text
    if len(text) - len(begun) != where[0] or not text.startswith(names.file.left):
        return False
    _remember_refused(names.file, begun)  # ended here, by whatever does not go on with it, it is a load refused
    continuing, final, openings = _pieces(state)
    return not any(piece[0].isidentifier() or piece[0].isdigit()
                   for piece in itertools.chain(continuing, final, openings))


def _remember_refused(file, word: str) -> None:
    refused = _REFUSED_WORDS.pop(file, set())
    refused.add(word)
    _REFUSED_WORDS[file] = refused
    while len(_REFUSED_WORDS) > REFUSED_FILES:
        _REFUSED_WORDS.popitem(last=False)


# The words the cursor is in that the file's check refused as loads, for the latest files' names (`FileNames`, a
# left and right context): one completion's searches, and those of an editor's next requests at the same cursor
REFUSED_FILES = 8
_REFUSED_WORDS: OrderedDict = OrderedDict()


def _loaded_cursor_word(state: FimState, names) -> str | None:
    """The word the cursor is in, begun in the left context and ended in `state`'s text, where the middle
    completed it as a name of the code and it is a load: at its line's bracket depth 0, no binding keyword or dot
    before it, and after it what no target takes. After an operator or a keyword that begins an expression
    (`pos += a`, `return a`), anything but a walrus; else neither a word nor `=`, `,`, `:`, `)`, `]`, `\\` (a
    statement's start: `a.b = 1` loads `a`, `a, b = 1, 2` does not)."""
    file = names.file
    where = _cursor_word_start(file.left)
    if where is None:
        return None
    start, in_expression = where
    text = state.text
    end = _FIRST_WORD.match(text, len(file.left)).end()
    word = text[start:end]
    if word not in names.written or word in _BUILTINS or not text.startswith(file.left):
        return None
    after = _NEXT_CHARACTER.match(text, end)
    if after is None:  # blanks to the end of the text, then the right context: a load in an expression but a walrus's
        closed = end < len(text) and not state.context.right.lstrip(" \t").startswith(":=")
        return word if closed and in_expression else None
    following = after.group(1)
    if in_expression:
        return None if text.startswith(":=", after.start(1)) else word
    return word if following not in _TARGET_NEXT and not following.isidentifier() else None


@lru_cache(maxsize=8)
def _cursor_word_start(left: str) -> tuple[int, bool] | None:
    """Where the word that `left` ends in begins, where a load of it may be judged by what follows: no dot or
    binding keyword before it on its line, and no bracket open there (a comprehension binds its names after its
    element); and whether an operator or a keyword before it makes it an expression's (not a target). None where
    `left` ends in no word, or in a number."""
    begun = _LAST_WORD.search(left, max(0, len(left) - _LONGEST_WORD)).group()
    if not begun or begun[0].isdigit() or len(begun) == _LONGEST_WORD:
        return None
    start = len(left) - len(begun)
    line = left[left.rfind("\n", 0, start) + 1:start]
    if _BEFORE_WORD.search(line) or any(line.count(opening) > line.count(closing) for opening, closing in _BRACKETS):
        return None
    return start, _IN_EXPRESSION.search(line) is not None


# What may follow a name that an assignment, a `for`, an annotation or a walrus binds (a word: `for`, `in`), or a
# line continuation
_TARGET_NEXT = frozenset("=,:)]\\")
# The first character after a name, past blanks: a line break or comment too
_NEXT_CHARACTER = re.compile(r"[ \t]*(\r|\n|[^\s])")
# A dot, or a keyword after which a name is bound (or is not a name at all: an attribute)
_BEFORE_WORD = re.compile(r"(?:\.|\b(?:def|class|import|as|for|global|nonlocal|del|lambda|from|except|with))\s*\Z")
# An augmented assignment, a binary or unary operator (not `*`, which may star a target), or a keyword an
# expression follows: a name after it is loaded
_IN_EXPRESSION = re.compile(
    r"(?:(?:\+|-|\*|/|//|%|@|&|\||\^|>>|<<|\*\*)=|(?<![=!<>])=="
    r"|!=|<=|>=|(?<![-=<>])[<>]|(?<![-+*/%@&|^<>=!*])[-+/%@&|^~]"
    r"|\b(?:return|raise|yield|assert|if|elif|while|not|and|or|in|is|await|else))\s*\Z")
_BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"))
_LONGEST_WORD = 200  # a cursor word is judged up to this long


def check_work(state: FimState) -> int:
    """The expansions that checking whether a text after `state` completes the file counts for (`CHECK_CHARS`)."""
    return 1 + (len(state.text) + len(state.context.right)) // CHECK_CHARS


def _run_on(written: str, right: str) -> str:
    """The word that the last word of `written` and the right context's first make together (`offset_` before
    `int` is `offset_int`), or "" where either has none."""
    last, first = _LAST_WORD.search(written).group(), _FIRST_WORD.match(right).group()
    return last + first if last and first else ""


_LAST_WORD = re.compile(r"\w*\Z")
_FIRST_WORD = re.compile(r"\w*")


def _begun(state: FimState) -> str:
    """The name in progress, which the finish may go on (empty if none)."""
    return state.lexer.text if WORD.fullmatch(state.lexer.text) else ""
