"""Where the right context can be cut without changing the quotient, as `fimlsp.python.window` cuts the left: the
statement-window cache that proves, with CPython's parser, that the rest of the file from a line is whole
statements (a column-0 line) or what one `pass` per level can stand in for (an indented line)."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Sequence

from fimlsp.lines import line_offsets, line_start
from fimlsp.python.facts import CODE_LINE, CONTINUING_CLAUSE
from fimlsp.python.lexer import indentation_column
from fimlsp.python.syntax import module_or_error_line, syntax_error_line
from fimlsp.python.window import statement_line


class StandaloneCache:
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
