"""The open documents, kept in sync with the client's incremental changes with LSP's own line rules.

A document is kept as its lines, so that an edit costs the lines it touches and a request reads the window it
needs, not the whole text: with the text as one string, a one-character edit to a 20 MB document found every line
start again and copied the text (0.35 s a keystroke, with the event loop blocked for every other document), and
each request read and judged all of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fimlsp.language import Language, for_language_id, for_path
from fimlsp.lines import split_lines
from fimlsp.server.positions import UTF16, PositionError, check_encoding, column_offset, content_end

# A line that may start a top-level statement: at column 0, not a comment, a closing bracket or a clause that
# continues the statement above. Windows end at such lines where one is near (`_SNAP_LINES`).
_TOP_LEVEL = re.compile(r"(?!(?:else|elif|except|finally)\b)[^\s#)\]}]")
_SNAP_LINES = 1000


def _lines(text: str) -> list[str]:
    """`text` as lines, each with its line break; the last one has none (it is empty after a final break)."""
    lines = split_lines(text)
    if not lines or content_end(lines[-1]) < len(lines[-1]):
        lines.append("")
    return lines


@dataclass(frozen=True)
class Cursor:
    """The text before and after a position, and, where they are a window of a big document, the 1-based lines
    of the document that they cover (None: they are the whole document)."""

    left: str
    right: str
    window: tuple[int, int] | None = None


class Document:
    def __init__(self, uri: str, text: str, version: int | None, language_id: str, sync_problem: str | None = None):
        self.uri = uri
        self.version = version
        self.language_id = language_id
        # Why the server's copy may differ from the client's (a change it could not apply); None while in sync.
        self.sync_problem = sync_problem
        self.text = text

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._lines)
        return self._text

    @text.setter
    def text(self, text: str) -> None:
        self._lines, self._length, self._text = _lines(text), len(text), text

    @property
    def length(self) -> int:
        return self._length

    def reset(self, text: str) -> Callable[[], None]:
        """Take `text` as the whole document; returns what puts the one before back."""
        before = self._lines, self._length, self._text
        self.text = text

        def undo():
            self._lines, self._length, self._text = before

        return undo

    @property
    def language(self) -> Language | None:
        """The language of its language id, or of its name where the client sent no language id."""
        return for_language_id(self.language_id) if self.language_id else for_path(self.uri)

    def replace(self, start: tuple[int, int], end: tuple[int, int], new_text: str, encoding: str = UTF16):
        """Replace the range from `start` to `end` (LSP positions; lines past the end mean the document's end, so
        that a client's edit at the very end always applies) by `new_text`, reading and splitting only the lines it
        touches. Returns what puts the lines back."""
        lines = self._lines
        (first, first_column), (last, last_column) = sorted((self._place(start, encoding), self._place(end, encoding)))
        changed = lines[first][:first_column] + new_text + lines[last][last_column:]
        if first > 0 and changed.startswith("\n") and lines[first - 1].endswith("\r"):  # \r and \n make one break
            first -= 1
            changed = lines[first] + changed
        pieces = _lines(changed)
        if last + 1 < len(lines):
            pieces.pop()  # the line after `last` starts where `changed` ends: its break opens no empty line
        removed, growth = lines[first:last + 1], sum(map(len, pieces)) - sum(map(len, lines[first:last + 1]))
        lines[first:last + 1] = pieces
        self._length += growth
        self._text = None

        def undo():
            lines[first:first + len(pieces)] = removed
            self._length -= growth
            self._text = None

        return undo

    def _place(self, position: tuple[int, int], encoding: str) -> tuple[int, int]:
        """The line index and the offset in that line of an LSP position, clamped to the document."""
        line, character = max(0, position[0]), max(0, position[1])
        if line >= len(self._lines):
            return len(self._lines) - 1, len(self._lines[-1])
        return line, column_offset(self._lines[line], character, encoding)

    def around(self, line: int, character: int, encoding: str = UTF16, budget: int | None = None) -> Cursor:
        """The text before and after an LSP position: all of it, or in a document of more than `budget`
        characters, the lines within `budget` characters of the cursor's on each side, widened to the nearest
        top-level statements within another `budget` (a side with a line longer than the budget is cut to 3 times
        the budget). That is all
        of the document that a constraint for a file over the budget reads (`fimlsp.python.region`: regions of at
        most `budget` characters around the cursor), and the decoding reads no more: the cost of a request is
        bounded by the budget, not the document. Raises PositionError for a line outside the document."""
        check_encoding(encoding)
        lines = self._lines
        if line < 0 or character < 0:
            raise PositionError(f"position {line}:{character} is negative")
        if line >= len(lines):
            raise PositionError(f"line {line} is outside the document (it has {len(lines)} lines)")
        column = column_offset(lines[line], character, encoding)
        if budget is None or self._length <= budget:
            offset = sum(map(len, lines[:line])) + column
            return Cursor(self.text[:offset], self.text[offset:])
        first, size = line, column
        while first > 0 and size <= budget:
            first -= 1
            size += len(lines[first])
        first = self._snapped(first, -1, budget)
        end, size = line + 1, len(lines[line]) - column
        while end < len(lines) and size <= budget:
            size += len(lines[end])
            end += 1
        end = self._snapped(end, 1, budget)
        left = "".join(lines[first:line]) + lines[line][:column]
        right = lines[line][column:] + "".join(lines[line + 1:end])
        if first == 0 and end == len(lines):
            return Cursor(left, right)
        return Cursor(left[-3 * budget:], right[:3 * budget], (first + 1, end))

    def _snapped(self, line: int, step: int, room: int) -> int:
        """`line`, or the nearest line from it in the direction of `step` (within `_SNAP_LINES` lines and `room`
        characters) that may start a top-level statement; the document's start and end are such lines."""
        lines = self._lines
        stop = max(-1, line - _SNAP_LINES) if step < 0 else min(len(lines) + 1, line + _SNAP_LINES)
        for candidate in range(line, stop, step):
            if candidate in (0, len(lines)) or (_TOP_LEVEL.match(lines[candidate]) and not _continued(
                    lines[candidate - 1])):
                return candidate
            room -= len(lines[candidate - (step < 0)])
            if room < 0:
                break
        return line


def _continued(line: str) -> bool:
    """Whether the line after `line` belongs to the same statement or definition (a decorator, a backslash)."""
    return line.startswith("@") or line[:content_end(line)].endswith("\\")


class Documents:
    def __init__(self):
        self._documents: dict[str, Document] = {}

    def open(self, uri: str, text: str, version: int | None, language_id: str) -> Document:
        document = Document(uri, text, version, language_id or "")
        self._documents[uri] = document
        return document

    def change(self, uri: str, version: int | None, changes, encoding: str = UTF16) -> Document | None:
        """Apply `textDocument/didChange` content changes in order; None for a document that is not open.

        A document out of sync takes only a full-text change, which puts it back in sync; a change that fails to
        apply raises and leaves the document as it was."""
        document = self._documents.get(uri)
        if document is None:
            return None
        check_encoding(encoding)
        problem, undos = document.sync_problem, []
        try:
            for change in changes:
                change_range = getattr(change, "range", None)
                if change_range is None:
                    undos.append(document.reset(change.text))
                    problem = None
                elif problem is None:
                    start, end = change_range.start, change_range.end
                    undos.append(document.replace((start.line, start.character), (end.line, end.character),
                                                  change.text, encoding))
        except Exception:
            for undo in reversed(undos):
                undo()
            raise
        document.version = version
        document.sync_problem = problem
        return document

    def lose_sync(self, uri: str, reason: str) -> bool:
        """Mark an open document out of sync after a change that could not be applied; False if it is not open."""
        document = self._documents.get(uri)
        if document is None:
            return False
        document.sync_problem = (f"the server's copy of the document is out of sync after a refused change "
                                 f"({reason}); waiting for a full-text change or didOpen")
        return True

    def close(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        return self._documents.get(uri)
