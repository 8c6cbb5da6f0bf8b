"""The caches that make completion cheap for a typing user.

- `Recognizers` keeps, per document, the promises (`fimlsp.language.Guarantee`, with their recognizer states)
  after the last few left contexts for the current right context and language; a new left context that extends
  one of them is fed only the added text. It also holds the server's `fimlsp.language.Caches`, where a language
  keeps what it compiles below its seam, for every document: Python's quotient grammar of a right context, keyed
  by the right text, which typing at the cursor leaves unchanged.
- `Suggestions` keeps the last suggestion per document: when the user types its start, the rest of it is still
  a valid middle for the same right context and is served without running the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from fimlsp.language import NONE, Caches, Guarantee, Language


class Recognizers:
    """Left-context promises per document, for one right context at a time, and the languages' `caches` that
    building them fills (one server's, shared by its documents)."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self.caches = Caches()
        self._entries: dict[str, tuple[tuple[str, str], list[tuple[str, Guarantee]]]] = {}

    def guarantee(self, uri: str, left: str, right: str, budget: int, deadline: float | None,
                  language: Language) -> tuple[Guarantee, str]:
        """The promise after `left` for `right`, and how it was obtained: `reused`, `extended` or `built`.

        A promise that the typed text breaks is built anew: the text may have moved the cursor into another
        top-level statement, or broken the region it covered."""
        entry = self._entries.get(uri)
        if entry is None or entry[0] != (language.name, right):
            entry = ((language.name, right), [])
            self._entries[uri] = entry
        states = entry[1]
        base: tuple[str, Guarantee] | None = None
        for cached_left, cached in states:
            if len(cached_left) <= len(left) and left.startswith(cached_left):
                if base is None or len(cached_left) > len(base[0]):
                    base = (cached_left, cached)
        found, how = None, "built"
        if base is not None and len(base[0]) == len(left):
            found, how = base[1], "reused"
        elif base is not None:
            found, how = base[1].extended(left[len(base[0]):]), "extended"
        if found is None:
            found, how = language.constrain(left, right, budget, deadline, self.caches), "built"
        if found.scope != NONE and how != "reused":
            states.append((left, found))
            del states[:-self.keep]
        return found, how

    def forget(self, uri: str) -> None:
        self._entries.pop(uri, None)


@dataclass(frozen=True)
class Suggestion:
    """A middle for the client, and what it was checked against, in words for the completion item's detail."""

    middle: str
    detail: str
    alternatives: tuple[str, ...] = ()  # other valid middles, less probable (inline completions cycle through them)


@dataclass(frozen=True)
class _Remembered:
    left: str
    suggestion: Suggestion
    right: str
    single_line: bool


class Suggestions:
    """The last suggestion per document."""

    def __init__(self):
        self._items: dict[str, _Remembered] = {}

    def remember(self, uri: str, left: str, suggestion: Suggestion, right: str, single_line: bool) -> None:
        self._items[uri] = _Remembered(left, suggestion, right, single_line)

    def lookup(self, uri: str, left: str, right: str, single_line: bool) -> Suggestion | None:
        """The rest of the last suggestion if `left` is its left context plus a start of it, for the same right."""
        item = self._items.get(uri)
        if item is None or item.single_line != single_line or len(item.right) != len(right):
            return None
        middle = item.suggestion.middle
        if len(left) < len(item.left) or len(left) >= len(item.left) + len(middle):
            return None
        typed = left[len(item.left):]
        if not middle.startswith(typed) or not left.startswith(item.left) or item.right != right:
            return None
        return Suggestion(middle[len(typed):], item.suggestion.detail)

    def forget(self, uri: str) -> None:
        self._items.pop(uri, None)

    def clear(self) -> None:
        self._items.clear()
