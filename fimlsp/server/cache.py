"""The caches that make completion cheap for a typing user.

- The quotient grammar of a right context is cached by `fimlsp.python.quotient.right_context`, keyed by the right
  text: typing at the cursor leaves the right context unchanged.
- `Recognizers` keeps, per document, the recognizer states after the last few left contexts for the current right
  context; a new left context that extends one of them is fed only the added text.
- `Suggestions` keeps the last suggestion per document: when the user types its start, the rest of it is still
  a valid middle for the same right context and is served without running the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from fimlsp.python.quotient import FimState, quotient


class Recognizers:
    """Left-context recognizer states per document, for one right context at a time."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self._entries: dict[str, tuple[str, list[tuple[str, FimState]]]] = {}

    def state(self, uri: str, left: str, right: str) -> tuple[FimState | None, str]:
        """The state after `left` for `right` (None: no middle can make the file valid), and how it was obtained:
        `reused`, `extended` or `built`."""
        entry = self._entries.get(uri)
        if entry is None or entry[0] != right:
            entry = (right, [])
            self._entries[uri] = entry
        states = entry[1]
        base: tuple[str, FimState] | None = None
        for cached_left, cached_state in states:
            if len(cached_left) <= len(left) and left.startswith(cached_left):
                if base is None or len(cached_left) > len(base[0]):
                    base = (cached_left, cached_state)
        if base is None:
            state, how = quotient(left, right), "built"
        elif len(base[0]) == len(left):
            state, how = base[1], "reused"
        else:
            state, how = base[1].feed(left[len(base[0]):]), "extended"
        if state is not None and how != "reused":
            states.append((left, state))
            del states[:-self.keep]
        return state, how

    def forget(self, uri: str) -> None:
        self._entries.pop(uri, None)


@dataclass(frozen=True)
class _Suggestion:
    left: str
    middle: str
    right: str
    single_line: bool


class Suggestions:
    """The last suggestion per document."""

    def __init__(self):
        self._items: dict[str, _Suggestion] = {}

    def remember(self, uri: str, left: str, middle: str, right: str, single_line: bool) -> None:
        self._items[uri] = _Suggestion(left, middle, right, single_line)

    def lookup(self, uri: str, left: str, right: str, single_line: bool) -> str | None:
        """The rest of the last suggestion if `left` is its left context plus a start of it, for the same right."""
        item = self._items.get(uri)
        if item is None or item.single_line != single_line or len(item.right) != len(right):
            return None
        if len(left) < len(item.left) or len(left) >= len(item.left) + len(item.middle):
            return None
        typed = left[len(item.left):]
        if not item.middle.startswith(typed) or not left.startswith(item.left) or item.right != right:
            return None
        return item.middle[len(typed):]

    def forget(self, uri: str) -> None:
        self._items.pop(uri, None)

    def clear(self) -> None:
        self._items.clear()
