"""The language seam: what decoding, the server, the CLI and the evaluation need of a language, and the languages.

A language constrains a left and a right context into a promise (`Guarantee`) holding a recognizer `State`, and
judges whether a whole text is valid; it names its file suffixes and LSP language ids so that callers pick it by
either. What a language compiles and may reuse for the next promise it keeps in `Caches` that the caller owns
(a server, one CLI run) and passes down: no language keeps a user's text process-wide. Nothing above this module
imports a language's package: adding a language is one package with a `Language` subclass plus one line in
`_BUILT_IN` (or a `register` call from outside fimlsp).
"""

from __future__ import annotations

import importlib
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from fimlsp.lines import line_of

FILE, REGION, NONE = "file", "region", "none"
# Files up to this many characters get the whole-file promise; bigger ones a region around the cursor.
DEFAULT_BUDGET = 1_000_000
# Modules that define a language as `LANGUAGE`.
_BUILT_IN = ("fimlsp.python.language",)
DEFAULT_LANGUAGE = "python"


class State(Protocol):
    """A recognizer after the left context and what was fed since: a value, never changed by feeding."""

    @property
    def complete(self) -> bool:
        """The left context, everything fed and the right context make a valid text."""

    def feed(self, text: str) -> State | None:
        """The state after `text`; None when no valid middle starts with what was fed."""

    def distance_bound(self) -> float:
        """A lower bound, in characters, on what must still be fed for the text to be complete."""

    def finish(self, limit: float, deadline: float | None = None, work: int | None = None) -> str | None:
        """A shortest text of at most `limit` characters that completes it; None if none is found in time (before
        `deadline`) or within `work`, the steps the search may take (None: the language's default)."""

    def statement_column(self) -> int:
        """The column of the statement the text fed so far ends in (where a line's indentation is all there is
        of it yet, that indentation's)."""

    def at_statement_start(self) -> bool:
        """The text fed so far ends a statement, and the next one has not begun."""

    def in_block(self) -> State:
        """This state, admitting only middles that stay in the block that holds the cursor and leave the text
        after the cursor as it reads now (a language without blocks: the same state)."""

    def likely_names(self) -> tuple[str, dict[str, float]] | None:
        """Where the text fed so far is writing a name that the file's own text makes likely (Python: a member
        after a dot that the file writes after the same receiver; an import's or a parameter's name that the code
        around the cursor loads and nothing binds), what of the name is written and each likely name with its
        weight, for decoding to rank by; None elsewhere (a language without such names: always)."""

    def expected(self) -> tuple[str, ...]:
        """What may come next, in the language's own terms (its tokens), for a message that says why a text was
        refused."""


class CompiledRightContext(Protocol):
    """A right context compiled once (its quotient), from which recognizers start after any left context."""

    def start(self, left: str) -> State | None:
        """The state after `left`; None if no middle can make a valid text."""


@dataclass(frozen=True)
class Guarantee:
    """The promise: `left[left_cut:] + middle + right[:right_cut]` is valid for every middle that `state`
    completes (with `indent`, where the language reads a region as an indented block).

    `scope` is `file` (the cuts are the file's ends, or provably change nothing), `region` (the rest of the file
    is invalid, or was too big to check) or `none` (nothing admits a middle; `state` is None, `reason` says why).
    """

    scope: str
    state: State | None
    left_cut: int
    right_cut: int
    reason: str = ""
    indent: str = ""

    def lines(self, left: str, right: str) -> tuple[int, int]:
        """The first and last line (1-based, of the file without the middle) that the promise covers."""
        if self.scope == FILE:
            return 1, line_of(left + right, max(0, len(left) + len(right) - 1))
        return line_of(left, self.left_cut), line_of(left + right, len(left) + max(0, self.right_cut - 1))

    def extended(self, text: str) -> Guarantee | None:
        """The same promise after the user typed `text` at the cursor; None if it no longer holds."""
        state = self.state.feed(text) if self.state is not None else None
        return None if state is None else replace(self, state=state)


Kept = TypeVar("Kept")


class Caches:
    """What the languages keep from one promise to the next for one owner (a server, one CLI run): each language's
    own cache, made at its first use. Two owners share nothing. Safe to share between threads (the languages'
    caches must be too)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._of: dict[str, object] = {}

    def of(self, language: Language, make: Callable[[], Kept]) -> Kept:
        """`language`'s cache, made by `make` the first time it is asked for."""
        with self._lock:
            if language.name not in self._of:
                self._of[language.name] = make()
            return self._of[language.name]


class Language(ABC):
    """One language: its names and the two judgements decoding needs."""

    name: str
    language_ids: tuple[str, ...] = ()  # LSP language ids, lower case
    suffixes: tuple[str, ...] = ()  # file name suffixes, lower case, with the dot
    # The language's text facts that decoding and the server read (a language without them keeps the defaults:
    # decoding then cuts and trims less, never more).
    blanks: str = ""  # what separates tokens within a line and is not a line break
    # What a finish may write and still only close what the middle opened (brackets, quotes, blanks, line breaks):
    # a fallback's finish that writes more invents code (`fimlsp.decoding.fallback`).
    closers: frozenset[str] = frozenset()
    line_closers: str = ""  # what closes a line's brackets or begins its block; a middle does not write it twice
    fence: tuple[str, str] = ("```", "```")  # the Markdown code fence that shows the language's code in an editor

    def spaces_after_comma(self, state: State) -> bool:
        """Whether the text up to `state` ends in a comma of the code (not of a string or a comment) that the file
        would follow with a space before more code (`os, shutil`): decoding then prefers the model's token that
        writes it. A language without the rule never does."""
        return False

    @abstractmethod
    def constrain(self, left: str, right: str, budget: int = DEFAULT_BUDGET,
                  deadline: float | None = None, caches: Caches | None = None) -> Guarantee:
        """The widest promise for a middle between `left` and `right`. `deadline` (a `time.perf_counter()`
        value or an `earley.Deadline`) bounds the setup: past it the promise is `none`. With `caches`, what the
        setup compiles may be kept there for the next call; without, nothing outlives the call."""

    @abstractmethod
    def right_context(self, right: str) -> CompiledRightContext:
        """The right context alone, compiled for the whole-file promise (setup measured apart from the left)."""

    def judging_names(self, guarantee: Guarantee, left: str, right: str, path: str | None = None,
                      project: str | None = None) -> tuple[Guarantee, str]:
        """The promise with a judge of names on: a middle may not load a name that nothing binds. Returns it and
        why the judge is off (a language without one, a file whose names its text does not show), or "" where
        it is on. Every judge takes the document's place where it is known: its `path` and its `project` root
        (None: found from the path), whose other files the judges read."""
        return guarantee, f"names not judged: {self.name} has no name judge"

    def judging_members(self, guarantee: Guarantee, left: str, right: str, path: str | None = None,
                        project: str | None = None) -> tuple:
        """The promise with a judge of members after a dot on, and what says which receivers it let go (None: a
        language without one)."""
        return guarantee, None

    def judging_calls(self, guarantee: Guarantee, left: str, right: str, path: str | None = None,
                      project: str | None = None) -> tuple:
        """The promise with a judge of calls on (a call must fit its callable's signature), and what says which
        calls it let go (None: a language without one)."""
        return guarantee, None

    def binds_names(self, left: str, middle: str, right: str, path: str | None = None,
                    project: str | None = None) -> bool:
        """Whether `middle` (with which the file is valid) loads no name that nothing binds and leaves no name the
        right context needs unbound: the name judge's verdict on a whole middle, for ends it did not see being
        written. True in a language without a name judge, and where the judge is off."""
        return True

    def late_refusal(self, state) -> str:
        """Why the judges refuse the end of `state` (a complete one, about to be shown) once they wait afresh for
        the answers its end check let go for lack of time; "" where they do not, and in a language whose judges
        never wait."""
        return ""

    def completing(self) -> AbstractContextManager:
        """Held while a completion decodes: a language whose analysis works in the background between completions
        (answers its judges may need later) holds that work back meanwhile, so that it takes no time from the
        decoding (a thread of Python code shares one interpreter lock with it). Nothing, in a language without."""
        return nullcontext()

    def workspace_analysis(self, root: str | os.PathLike | None) -> object | None:
        """The language's one analysis of the project at `root` (None: of the environment alone), which its judges
        use and the repository context shares (same project, same caches); None for a language without one."""
        return None

    def document_text(self, path: str | os.PathLike, text: str | None) -> None:
        """An open document's unsaved text (None: closed), which the judges read instead of the file on disk where
        another document imports from it. A language without judges that read other files ignores it."""

    def undefined_names(self, text: str) -> set[str] | None:
        """The names a static checker reports undefined in the whole `text` (for Python, pyflakes'), for the
        evaluation's measure of what a parser lets through; None where that is not measured (no checker, a text
        that does not parse, a language without one)."""
        return None

    @abstractmethod
    def parses(self, text: str) -> bool:
        """Whether `text` is a valid file of the language: the final judge of a middle (for Python, that CPython
        compiles it, not only that it parses)."""


_REGISTERED: dict[str, Language] = {}


def register(language: Language) -> Language:
    """Make `language` known by its name, suffixes and language ids, after the built-in ones."""
    _REGISTERED[language.name] = language
    return language


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def languages() -> tuple[Language, ...]:
    """The known languages: the built-in ones (each module's `LANGUAGE`), then the registered ones."""
    built_in = tuple(importlib.import_module(module).LANGUAGE for module in _BUILT_IN)
    names = {language.name for language in built_in}
    return built_in + tuple(language for language in _REGISTERED.values() if language.name not in names)


def named(name: str) -> Language:
    """The language called `name`; ValueError naming the known ones otherwise."""
    for language in languages():
        if language.name == name:
            return language
    raise ValueError(f"unknown language {name!r}; known: {', '.join(each.name for each in languages())}")


def for_language_id(language_id: str) -> Language | None:
    """The language of an LSP language id (any case), or None."""
    wanted = language_id.lower()
    return next((language for language in languages() if wanted in language.language_ids), None)


def for_path(path: str) -> Language | None:
    """The language of a file name or URI by its suffix (any case, a URI's query left out), or None."""
    name = path.split("?", 1)[0].lower()
    return next((language for language in languages() if name.endswith(language.suffixes)), None)
