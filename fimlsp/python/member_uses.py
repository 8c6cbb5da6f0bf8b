"""The names the file around the cursor writes after a receiver (`self.lock`), each use weighed by how near the
cursor it stands and known by the tokens it follows on its logical line, for decoding to weigh a receiver's members
(`fimlsp.python.members.Members.likely`).

A cache model of the file's own code (Tu, Su and Devanbu, "On the Localness of Software", FSE 2014), whose gain is
in its n-grams more than its unigrams: a name the file writes after `await self.` is likelier after `await self.`
at the cursor than one it writes after `x = self.`. So the uses that count are those whose context shares the most
last tokens with the cursor's (backed off to fewer, down to none). On 200 held-out dot prompts (seed 49) where the
file writes the receiver elsewhere, the file's likeliest name is the true one 94 times of 189 by context and 62 by
count and nearness alone.

Tokens as the recognizer's terminals are: a string or a number is one (`STRING`, `NUMBER`), a comment none, and a
logical line ends at a line break outside brackets (a NEWLINE terminal).
"""

from __future__ import annotations

import bisect
import math
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache

from fimlsp.python.analysis import after_receiver

CONTEXT_TOKENS = 4  # the longest context compared (on the dot prompts 3 and 4 gave the same, 2 fewer)
NEARBY_LINES = 30  # a use `d` lines from the cursor counts `exp(-d / NEARBY_LINES)`: code repeats itself locally

_STRING = (r"""[rRbBuUfF]{0,2}(?:'''(?:\\[\s\S]|[^\\])*?'''|\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\""""
           r"""|'(?:\\[\s\S]|[^'\\\n])*'|"(?:\\[\s\S]|[^"\\\n])*")""")
# What decides where logical lines end: strings and comments (their brackets and line breaks are not code's),
# brackets, line breaks (one after a backslash joins two lines), and a quote no string closes.
_STRUCTURE = re.compile(rf"{_STRING}|#[^\n]*|(?P<open>[(\[{{])|(?P<close>[)\]}}])|\\\n|(?P<end>\n)|(?P<quote>['\"])")
# Tokens as CPython's tokenizer reads them (a number with its exponent's sign, `...` one operator).
_TOKEN = re.compile(rf"(?P<string>{_STRING})|(?P<comment>#[^\n]*)"
                    r"|(?P<number>(?:\d|\.\d)(?:[\w.]|(?<=[eE])[-+])*)|[^\W\d]\w*"
                    r"|\.\.\.|\*\*=?|//=?|->|:=|[<>=!]=|<<=?|>>=?|[-+*/%&|^@]=|[^\s\\]")
# A line's start up to a comment's `#` (code and one-line strings before it).
_COMMENTED = re.compile(r"""(?:[^#'"\n]|'[^'\n]*'|"[^"\n]*")*#""")
_RECENT: list[LogicalLines] = []  # the latest texts read, the latest first
_RECENT_KEPT = 8
_RECENT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Use:
    name: str
    weight: float  # nearness to the cursor
    side: int  # 0: in the left context, 1: in the right
    offset: int  # where the receiver begins in its side's text


@dataclass(frozen=True)
class LogicalLines:
    """Where a text's logical lines begin (offsets after the line breaks that end one), the brackets open at its
    start and at its end (what a right context after it begins inside), and the last start that what follows the text
    cannot move (none after a quote the text leaves open: more text may close it)."""

    text: str
    starts: list[int]
    opened: int
    depth: int
    settled: int

    @staticmethod
    def of(text: str, opened: int = 0) -> LogicalLines:
        """The logical lines of `text`, which begins with `opened` brackets open: read on from a recent text's last
        settled start where `text` goes on from there (a keystroke adds to the left context's last line, and leaves
        the right context as it was)."""
        with _RECENT_LOCK:
            base = max((lines for lines in _RECENT if lines.opened == opened and lines.resumes(text)),
                       key=lambda lines: lines.settled, default=None)
        if base is not None and base.text == text:
            return base
        at = 0 if base is None else base.settled
        starts = [0] if base is None else base.starts[:bisect.bisect_right(base.starts, at)]
        depth, settled = opened if at == 0 else 0, None
        for match in _STRUCTURE.finditer(text, at):
            kind = match.lastgroup
            if kind == "open":
                depth += 1
            elif kind == "close":
                depth = max(depth - 1, 0)
            elif kind == "end" and not depth:
                starts.append(match.end())
            elif kind == "quote" and settled is None:
                settled = starts[-1]
        found = LogicalLines(text, starts, opened, depth, starts[-1] if settled is None else settled)
        with _RECENT_LOCK:
            _RECENT.insert(0, found)
            del _RECENT[_RECENT_KEPT:]
        return found

    def resumes(self, text: str) -> bool:
        """Whether `text` is this one up to its settled start, and may be read on from there."""
        return text.startswith(self.text[:self.settled])

    def context_before(self, offset: int) -> tuple[str, ...]:
        """The last `CONTEXT_TOKENS` tokens of the logical line before `offset`."""
        start = self.starts[bisect.bisect_right(self.starts, offset) - 1]
        return line_tokens(self.text[start:offset])


@lru_cache(maxsize=8192)
def line_tokens(text: str) -> tuple[str, ...]:
    """The last `CONTEXT_TOKENS` tokens of `text`, a piece of one logical line (kept: a keystroke later the file's
    lines are the same)."""
    tokens = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind != "comment":
            tokens.append("STRING" if kind == "string" else "NUMBER" if kind == "number" else match.group())
    return tuple(tokens[-CONTEXT_TOKENS:])


def shared_suffix(one: tuple[str, ...], other: tuple[str, ...]) -> int:
    """How many last tokens the two contexts share."""
    shared = 0
    for mine, theirs in zip(reversed(one), reversed(other)):
        if mine != theirs:
            break
        shared += 1
    return shared


@dataclass(eq=False)
class FileUses:
    """The uses of receivers' members in the file around the cursor (`left` + middle + `right`), found once per
    receiver; the logical lines read only where a context is asked for."""

    left: str
    right: str
    _uses: dict[str, list[Use]] = field(default_factory=dict)
    _lines: tuple[LogicalLines, LogicalLines] | None = None
    _in_context: dict[tuple[str, tuple[str, ...]], dict[str, tuple[int, float]]] = field(default_factory=dict)

    def weights(self, receiver: str) -> dict[str, float]:
        """Each name the file writes after `receiver.`, but at the cursor, with its uses' nearness summed."""
        found: dict[str, float] = {}
        for use in self.uses(receiver):
            found[use.name] = found.get(use.name, 0.0) + use.weight
        return found

    def in_context(self, receiver: str, context: tuple[str, ...]) -> dict[str, tuple[int, float]]:
        """Each name the file writes after `receiver.`: the most last tokens one of its uses shares with `context`,
        and the nearness of its uses that share that many, summed."""
        key = (receiver, context)
        found = self._in_context.get(key)
        if found is None:
            found = self._in_context[key] = {}
            for use in self.uses(receiver):
                shared = shared_suffix(context, self.context_of(use))
                best, weight = found.get(use.name, (-1, 0.0))
                if shared >= best:
                    found[use.name] = (shared, use.weight + (weight if shared == best else 0.0))
        return found

    def uses(self, receiver: str) -> list[Use]:
        """Each use of a name after `receiver.`, but the name being written at the cursor and uses in comments."""
        found = self._uses.get(receiver)
        if found is None:
            pattern, found = after_receiver(receiver), []
            for side, text in enumerate((self.left, self.right)):
                breaks = [match.start() for match in re.finditer("\n", text)]
                for match in pattern.finditer(text):
                    if side == 0 and match.end() == len(text):
                        continue
                    if _COMMENTED.match(text, text.rfind("\n", 0, match.start()) + 1, match.start()):
                        continue  # a comment's `self._cache.swap(...)` is no use (this only ranks: a docstring's
                        # use is kept, and one after a `#` in a string with escaped quotes dropped)
                    line = bisect.bisect_left(breaks, match.start())
                    lines = len(breaks) - line if side == 0 else line
                    found.append(Use(match.group(1), math.exp(-lines / NEARBY_LINES), side, match.start()))
            self._uses[receiver] = found
        return found

    def context_of(self, use: Use) -> tuple[str, ...]:
        """The last tokens before the use's receiver on its logical line (the logical lines read at the first ask)."""
        return self._logical_lines()[use.side].context_before(use.offset)

    def _logical_lines(self) -> tuple[LogicalLines, LogicalLines]:
        if self._lines is None:
            before = LogicalLines.of(self.left)
            self._lines = (before, LogicalLines.of(self.right, before.depth))
        return self._lines
