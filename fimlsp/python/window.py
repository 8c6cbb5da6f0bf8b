"""Where the left context can be cut without changing the quotient: statements of the blocks around the cursor.

A block, like a module, is a run of statements, and a run of whole statements before a statement that the text
keeps can go: `INDENT s1 s2 X …` and `INDENT X …` admit the same continuations when `s1 s2` are complete
statements and `X` starts a statement of the same block (not `else`, `elif`, `except` or `finally`, which
continue the statement before, and not a definition that a decorator above decorates). So the recognizer is fed,
for each block around the cursor from the module inward, the header of the compound statement that opens the
next block (from its first line through the clause that holds the cursor, each earlier clause's body written as
`pass`), and then the cursor's own statement: one header per level, which keeps the indentation stack (columns
as CPython compares them, tabs included) and CPython's limit of 100 levels exactly as they were. Its one-time
cost is bounded by the statement around the cursor and its headers instead of by the file, or by the clauses
before the cursor's in a long `if`/`elif` chain or `try` statement.

The proof is CPython's: `left[:cut]` followed by `pass` at the indentation of the cursor's statement must parse
(with `finally: pass` after it for each `try` whose body that leaves open: the right context closes it), which
shows that the cut is not inside a string, a bracket or a backslash continuation, that everything before
it is whole statements, and where the blocks are (the syntax tree's path to the `pass`).

The same lines, and those of each block around the cursor, are where the regions of `fimlsp.python.region`
may start in a file that does not parse: there nothing is proved, so they are candidates, tried in order.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass, field

from fimlsp.lines import after_line, first_line, line_of, line_offsets, line_start, line_starts_backwards
from fimlsp.python.facts import CONTINUING_CLAUSE, CONTINUING_WORDS, NOT_A_STATEMENT, STATEMENT_LINE
from fimlsp.python.lexer import indentation_column
from fimlsp.python.syntax import blamed_line, module_or_error, module_or_error_line

def _continues(left: str, start: int, following: str = "") -> bool:
    """True if the line at `start` continues the statement before (`else:` …). On the cursor's own line the
    word may still be growing: `e` can become `else` by the middle, so any start of such a word continues."""
    if CONTINUING_CLAUSE.match(left, start):
        return True
    if left.find("\n", start) >= 0 or left.find("\r", start) >= 0:
        return False
    line = left[start:]
    return bool(CONTINUING_CLAUSE.match(line + following[:9])) or (
        line.isidentifier() and any(word.startswith(line) for word in CONTINUING_WORDS)
    )


def left_window(left: str, statement_starts: Sequence[int] = ()) -> tuple[str, int]:
    """What to feed in place of `left[:cut]`, and `cut`: ("", 0) when nothing can be left out.

    The latest line that can start a statement is tried first; a line that CPython does not accept there (it is
    inside a string or a bracket, it follows a decorator) rules out every candidate after the line it blames.
    Past a few such failures only lines at column 0 are tried, which keeps a cursor deep inside a long bracket
    or string from costing a parse per line; and a line after one that ends with a comma or an opening bracket,
    or after a decorator, is not tried at all (`_continues_line_above`). `statement_starts`, ascending, are known starts of top-level
    statements with nothing but whole statements before them (`StatementStarts.before` of the document): the
    probe then parses from the latest one instead of from the start of the file.
    """
    failures = 0
    ruled_out = len(left)  # candidates after it are (past the line the last failed probe blames)
    for cut, code in _candidates_backwards(left):
        if (cut > ruled_out or _continues(left, code) or (failures >= _PROBES_AT_ANY_INDENT and code > cut)
                or _continues_line_above(left, cut)):
            continue
        known = bisect.bisect_right(statement_starts, cut)
        start = statement_starts[known - 1] if known else 0
        probed = _probe(left, start, cut, code)
        if isinstance(probed, int):
            failures += 1
            ruled_out = line_start(left, probed, start)
            continue
        module, completion = probed
        headers = _headers(left[start:code], module, left[cut:code], completion)
        if headers is not None:
            return headers, cut
    return "", 0


def _continues_line_above(left: str, cut: int) -> bool:
    """A cheap guess that the line at `cut` does not start a statement, to spare the probe a parse of everything
    above it that would fail (a cursor in the arguments of a call written over several lines, or under a
    decorator): the last line of code above it ends with a comma or an opening bracket (a comment after it
    aside), or starts with `@`. Only ever a guess against: a statement start it passes over (after `x = 1,`)
    leaves an earlier one to be tried, and every cut is proved by the parse."""
    end = cut
    for start in line_starts_backwards(left, cut):
        code = left[start:end].split("#", 1)[0].strip()  # a `#` inside a string cuts it short: no guess then
        if code:
            return code[-1] in ",([{" or code[0] == "@"
        end = start
    return False


def _candidates_backwards(left: str) -> Iterator[tuple[int, int]]:
    """Where each line of `left` after the first that can start a statement starts, and where its code starts,
    from the last line up: scanned a chunk at a time from the end, since the first few usually do."""
    end = len(left)
    while end > 0:
        begin = left.rfind("\n", 0, max(0, end - _CHUNK)) + 1  # a line start: the scan of a chunk is the scan of all
        found = [(match.start(), match.end()) for match in STATEMENT_LINE.finditer(left, begin, end) if match.start()]
        yield from reversed(found)
        end = begin


def module_statement_starts(text: str) -> tuple[int, ...]:
    """Where the top-level statements of `text` start (a decorated definition at its first decorator) when it is
    a valid module, else (). Whole statements come before each, and after: one parse of a document proves, for
    every cursor in it, that the text before the cursor's top-level statement and after it is whole statements,
    which the windows would otherwise each prove with a parse of their own (`RightContextCache` remembers them
    for the last few documents, and carries them over an edit: `StatementStarts`). Texts with \\r line ends get
    none (their contexts are normalized apart)."""
    if "\r" in text:
        return ()
    module = module_or_error_line(text)
    if isinstance(module, int):
        return ()
    lines = sorted({statement_line(node) for node in module.body})
    starts = _line_starts(text, lines)
    return tuple(starts[line] for line in lines)


@dataclass(frozen=True)
class StatementStarts:
    """What is known of where a document's top-level statements start, as two sets of facts: `before`, starts with
    nothing but whole statements before them (where the left window's probe may begin), and `after`, starts with
    nothing but whole statements from them on (where the right window may be cut). For a valid module both are
    its statement starts (`module_statement_starts`)."""

    before: tuple[int, ...] = ()
    after: tuple[int, ...] = ()

    @staticmethod
    def of(document: str) -> StatementStarts:
        starts = module_statement_starts(document)
        return StatementStarts(starts, starts)

    def edited(self, old: str, new: str) -> StatementStarts:
        """The facts that hold in `new`, an edit of `old` (the document these are of): the starts before in the text
        the two share at their start, and those after in the text they share at their end, moved by the edit. An
        editor sends a new version at every keystroke; this spares parsing it. None when the two share less than
        half of the longer (another document: its own parse gives more)."""
        if "\r" in new:
            return StatementStarts()
        shared = _shared_start(old, new)
        tail = _shared_end(old, new, min(len(old), len(new)) - shared)
        if 2 * (shared + tail) < max(len(old), len(new)):
            return StatementStarts()
        moved = len(new) - len(old)
        return StatementStarts(tuple(start for start in self.before if start <= shared),
                               tuple(start + moved for start in self.after if start >= len(old) - tail))


def _shared_start(a: str, b: str) -> int:
    """The length of the longest common prefix (a binary search over slice comparisons, done in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


def _shared_end(a: str, b: str, limit: int) -> int:
    """The length of the longest common suffix, at most `limit`."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a.endswith(b[len(b) - middle:]):
            low = middle
        else:
            high = middle - 1
    return low


_PROBE = "pass\n"
_CHUNK = 2048  # characters of the left context scanned at a time for candidate lines
_PROBES_AT_ANY_INDENT = 3
# CPython's complaint about a `try` whose body ends the text, and the most such bodies a probe is completed for.
_OPEN_TRY = "expected 'except' or 'finally' block"
_OPEN_TRIES_COMPLETED = 3
_TRY_HEADER = re.compile(r"try[ \t\f]*:")


def _probe(left: str, start: int, cut: int, code: int) -> tuple[ast.Module, str] | int:
    """CPython's module of `left[start:code]` followed by `pass` where the code of the cut's line starts, with
    the text that completes it: a `try` whose body holds the cut cannot end the text, so it gets a `finally: pass`
    at its indentation (innermost first, for each such `try` CPython asks for). Else the line CPython blames."""
    source = left[start:code] + _PROBE
    tries = None
    completion = ""
    while True:
        parsed = module_or_error(source + completion)
        if isinstance(parsed, ast.Module):
            return parsed, completion
        if not isinstance(parsed, SyntaxError) or parsed.msg != _OPEN_TRY:
            return blamed_line(parsed)
        if tries is None:
            tries = _enclosing_tries(left, start, cut, code)[:_OPEN_TRIES_COMPLETED]
        completed = completion.count("\n")
        if completed == len(tries):
            return blamed_line(parsed)
        completion += f"{tries[completed]}finally: pass\n"


def _enclosing_tries(left: str, start: int, cut: int, code: int) -> list[str]:
    """The indentation of each `try:` line among the headers above the line at `cut` (lines of code indented
    less than every line between them and it), innermost first. A guess from the text alone (a header may be a
    line inside a bracket or a string): the probe's parse decides."""
    found = []
    column = indentation_column(left[cut:code])
    for line, line_code in _code_lines_backwards(left[:cut], frozenset()):
        if line < start:
            break
        indent = left[line:line_code]
        line_column = indentation_column(indent)
        if line_column < column:
            column = line_column
            if _TRY_HEADER.match(left, line_code):
                found.append(indent)
            if not column:
                break
    return found


def _headers(left: str, module: ast.Module, indent: str, completion: str = "") -> str | None:
    """The text that opens, from the module inward, every block around the probe's `pass` (parsed from
    `left + "pass"`, then `completion`; `left` ends with the cut's line's `indent`): for each level, the
    enclosing statement from its first line to the first statement of the clause that holds the `pass`, each
    earlier clause's body written as one `pass` (a body is a run of statements, and any other run leaves the
    parser where it was). None if that text followed by the `pass` does not parse with the `pass` as deep (a
    check on the offsets taken from the tree)."""
    probe_line = line_of(left, len(left))
    path = _path_to(module, probe_line)
    levels = [(node, clause, _earlier_bodies(node, clause)) for (node, _), (_, clause) in zip(path, path[1:])]
    lines = [statement_line(node) for node, _ in path] + [statement_line(clause[0]) for _, clause in path]
    lines += [line for _, _, earlier in levels for body in earlier
              for line in (statement_line(body[0]), body[-1].end_lineno + 1)]
    starts = _line_starts(left, lines)
    headers = "".join(_opening(left, starts, node, clause, earlier) for node, clause, earlier in levels)
    if not headers:
        return ""
    checked = module_or_error_line(headers + indent + _PROBE + completion)
    if isinstance(checked, int) or len(_path_to(checked, line_of(headers, len(headers)))) != len(path):
        return None
    return headers


def _path_to(module: ast.Module, line: int) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """For the module and each statement list down to the statement at `line`: the statement of the list that
    holds (or is) it, and the list."""
    path = []
    statements = module.body
    while True:
        node = max((node for node in statements if statement_line(node) <= line), key=statement_line)
        path.append((node, statements))
        inner = [body for body in _statement_lists(node) if body and statement_line(body[0]) <= line]
        if not inner:
            return path
        statements = max(inner, key=lambda body: statement_line(body[0]))


def _earlier_bodies(node: ast.stmt, clause: list[ast.stmt]) -> list[list[ast.stmt]]:
    """The bodies of `node`'s clauses before `clause` whose first statement no decorator precedes, in the order
    of the text: each can be written as one `pass`, where it starts a line of its own (`_opening`)."""
    earlier = (body for body in _statement_lists(node)
               if body and body is not clause and statement_line(body[0]) < statement_line(clause[0])
               and not getattr(body[0], "decorator_list", None))
    return sorted(earlier, key=lambda body: statement_line(body[0]))


def _opening(left: str, starts: dict[int, int], node: ast.stmt, clause: list[ast.stmt],
             earlier: list[list[ast.stmt]]) -> str:
    """`left` from `node`'s first line to the first statement of `clause`, each of the `earlier` clauses' bodies
    (`_earlier_bodies`) that starts its line written as `pass` at its indentation."""
    position, end = starts[statement_line(node)], starts[statement_line(clause[0])]
    pieces = []
    for body in earlier:
        first = starts[statement_line(body[0])]
        indent = left[first:first + body[0].col_offset]  # the line's spaces, where the statement starts it
        if indent.strip(" \t\f") or left[first + len(indent):first + len(indent) + 1] in ("", " ", "\t", "\f"):
            continue
        pieces += [left[position:first], indent, _PROBE]
        position = starts[body[-1].end_lineno + 1]
    pieces.append(left[position:end])
    return "".join(pieces)


def _statement_lists(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists of a compound statement's clauses (`match` cases and `except` handlers included)."""
    for name in ("body", "orelse", "finalbody"):
        yield getattr(node, name, [])
    for clause in getattr(node, "handlers", []) + getattr(node, "cases", []):
        yield clause.body


def statement_line(node: ast.stmt) -> int:
    """The line a statement starts on: its first decorator's, for a decorated definition."""
    return min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", ()))])


def _line_starts(text: str, lines: list[int]) -> dict[int, int]:
    """The offsets at which the given 1-based lines of `text` start."""
    ordered = sorted(set(lines))
    return dict(zip(ordered, line_offsets(text, ordered)))


def statement_starts_by_block(
    left: str, limit: int, following: str = "", strings: Container[int] = frozenset()
) -> list[tuple[str, list[int]]]:
    """For the block around the cursor and each block enclosing it, out to the module (""): its indentation and up
    to `limit` candidate starts of the statement around the cursor among its statements, the best first.

    A block's lines begin with exactly its indentation and then something that can start a statement, not
    `else`-like continuations; the latest come first, and a decorated definition starts at its first decorator.
    The blocks are read off the cursor's line (or the last line of code above it) and, going up, the first line
    indented less than each: the block's header, a line of the block around it. So one pass over the lines
    finds them all, however deep the nesting. Lines that start in `strings` are string content and skipped.
    Nothing is parsed, so a candidate may lie inside a bracket of a broken file: the caller tries them in order.
    `following`, the text after the cursor, completes the cursor's own line (`e|lse:` continues a statement).
    """
    blocks: list[tuple[str, list[int]]] = []
    block: _Block | None = None
    for start, code in _code_lines_backwards(left, strings):
        indent = left[start:code]
        column = indentation_column(indent)
        if block is None or column < block.column:
            if block is not None:
                blocks.append((block.indent, block.finish()))
            block = _Block(indent, column, limit)
        if indent == block.indent:
            block.see(left, start, code, following)
            if block.full and not indent:
                break
    if block is not None:
        blocks.append((block.indent, block.finish()))
    if not blocks or blocks[-1][0]:
        blocks.append(("", []))
    return blocks


def statement_starts(
    left: str, limit: int, following: str = "", strings: Container[int] = frozenset()
) -> list[int]:
    """The module's part of `statement_starts_by_block`: where the top-level statement around the cursor may
    start, the best first."""
    return statement_starts_by_block(left, limit, following, strings)[-1][1]


@dataclass
class _Block:
    """The candidate starts found so far among one block's statements, from the cursor up."""

    indent: str
    column: int
    limit: int
    starts: list[int] = field(default_factory=list)
    pending: int | None = None  # the latest line seen: a start unless the line above it is a decorator
    full: bool = False

    def see(self, left: str, start: int, code: int, following: str) -> None:
        if self.full or left[code] in NOT_A_STATEMENT or _continues(left, code, following):
            return
        if self.pending is not None and left[code] != "@":
            self.starts.append(self.pending)
            if len(self.starts) >= self.limit:
                self.full, self.pending = True, None
                return
        self.pending = start

    def finish(self) -> list[int]:
        return self.starts if self.pending is None else [*self.starts, self.pending]


def start_between_statements(
    left: str, following: str, indent: str = "", strings: Container[int] = frozenset()
) -> int | None:
    """Where the blank and comment lines that the cursor follows, since the last line of code, begin; None if
    there are none, if they are string content (they start in `strings`), or if the next code at or after the
    cursor does not start a statement indented by `indent` (it is a line of a deeper block, a closing bracket).
    The cursor may then be between two statements, the one above broken."""
    between = None
    for start in line_starts_backwards(left):
        line = first_line(left, start)
        if start in strings or (line.strip() and not line.lstrip(" \t\f").startswith("#")):
            break
        between = start
    return between if between is not None and _code_resumes_at(left, following, indent) else None


def _code_lines_backwards(text: str, strings: Container[int]) -> Iterator[tuple[int, int]]:
    """Where the lines of `text` that hold code start, and where their code starts, from the last to the first
    (blank lines and comment lines hold none, nor do lines that start in `strings`, string content)."""
    for start in line_starts_backwards(text):
        if start in strings:
            continue
        line = first_line(text, start)
        code = line.lstrip(" \t\f")
        if code and code[0] != "#":
            yield start, start + len(line) - len(code)


def _code_resumes_at(left: str, following: str, indent: str) -> bool:
    """True if the first line with code at or after the cursor starts with exactly `indent` and then something
    that can start a statement, or no code follows: the cursor is then not inside a deeper block (or a bracket)."""
    text = left[max(left.rfind("\n"), left.rfind("\r")) + 1:] + following
    start = 0
    while start < len(text):
        line = first_line(text, start)
        code = line.lstrip(" \t\f")
        if code and not code.startswith("#"):
            indented = len(line) - len(code) == len(indent) and line.startswith(indent)
            return indented and code[0] not in NOT_A_STATEMENT
        start = after_line(text, start)
    return True
