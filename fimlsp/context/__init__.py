"""Repository context: what other files say, as snippets for the prompt (`Snippet(path, text)`).

A size budget (characters) is filled in this order, each source's best first:
1. declarations of the names the code around the cursor uses that other files of the workspace or the
   environment's packages define (`declarations`), the nearest use first;
2. recently edited and viewed regions of other open documents (`recent`), the newest first;
3. chunks of the workspace's files lexically like the code around the cursor (`search`).

`context` says which: `off` (the document alone), `file` (1: what the file's own code names), `workspace` (all
three); `auto` is `workspace` for a model whose window has room for it (`WORKSPACE_WINDOW`) and `off` otherwise.
The document being completed is never a source: its left and right contexts are in the prompt already.

A completion only reads what is ready (`gather` does dictionary look-ups, a bounded search and string joins); the
resolving and indexing run on one background thread (`start`), or at once for a one-shot command (`wait=True`).
The background waits while a completion runs (`pause`, `resume`): it would hold the interpreter's lock that the
completion's decoding needs; a batch of files it is indexing stops at the next file and goes on after.
Nothing is read outside the workspace's roots and the environment's packages (`fimlsp.workspace`).
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from fimlsp.context.declarations import Declaration, Declarations, environment_folders, uses_near
from fimlsp.context.recent import RecentChunks, first_changed_line
from fimlsp.context.search import SearchIndex
from fimlsp.model.formats import Snippet
from fimlsp.workspace import Workspace

log = logging.getLogger(__name__)

# The smallest context window (tokens) whose model gets the workspace's context by default: below it the left and
# right contexts fill the window (the shipped model's 512 tokens; benchmarks/cross_file.py).
WORKSPACE_WINDOW = 2048
SUFFIXES = (".py", ".pyi")
QUERY_LINES_ABOVE, QUERY_LINES_BELOW = 12, 4
QUERY_CHARS = 4000  # of each side, enough for those lines unless they are very long
INDEX_BATCH = 64  # files indexed per turn of the background thread, between other work


def effective(context: str, context_window: int) -> str:
    """What the `context` setting means for a model with this window: `auto` becomes `workspace` or `off`."""
    if context not in ("auto", "off", "file", "workspace"):
        raise ValueError(f"unknown context {context!r}; choose one of auto, off, file, workspace")
    if context != "auto":
        return context
    return "workspace" if context_window >= WORKSPACE_WINDOW else "off"


def budget_for(context_window: int) -> int:
    """Characters of context for a model's window: about a quarter of it (≈ 4 characters a token), as llama.cpp's
    server leaves the window beyond the left and right contexts' batch to the extras."""
    return context_window


def _query(left: str, right: str) -> str:
    """The lines above and below the cursor's own: what search looks for. The cursor's line changes with every
    keystroke; leaving it out keeps the chunks found, and so the prompt's prefix, the same while a line is typed."""
    above = left[:left.rfind("\n") + 1][-QUERY_CHARS:]
    below = right[right.find("\n") + 1:][:QUERY_CHARS] if "\n" in right else ""
    return "\n".join(above.split("\n")[-QUERY_LINES_ABOVE - 1:] + below.split("\n")[:QUERY_LINES_BELOW])


class RepositoryContext:
    """The context sources of one workspace, kept up to date by the editor's events and a background thread."""

    def __init__(self, workspace: Workspace, suffixes: Sequence[str] = SUFFIXES,
                 environment: tuple[Path, ...] | None = None):
        self.workspace = workspace
        self.suffixes = tuple(suffixes)
        self.environment = environment_folders() if environment is None else environment
        self.declarations = Declarations(workspace, self.environment)
        self.recent = RecentChunks()
        self.index = SearchIndex(workspace.read)
        self.indexed = threading.Event()
        self._jobs: deque = deque()  # what a completion asked for: before the index's next batch
        self._indexing: deque[Path] | None = None
        self._pending: set[tuple[Path, str]] = set()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._busy = False
        self._paused = 0  # completions running: the background starts no work until they end
        self._display: dict[Path, str] = {}  # resolved path -> its name in a prompt
        workspace.on_change(self._file_changed)

    # -- the editor's events (cheap: they queue work)

    def start(self) -> None:
        """Index the workspace and resolve what completions ask for, on a background thread."""
        if self._thread is None:
            self._busy = True  # until it has listed the files to index
            self._thread = threading.Thread(target=self._work, name="fimlsp-context", daemon=True)
            self._thread.start()

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def pause(self) -> None:
        """A completion starts: the background finishes the file it is on and waits until `resume`."""
        with self._wake:
            self._paused += 1

    def resume(self) -> None:
        with self._wake:
            self._paused -= 1
            self._wake.notify_all()

    def settle(self, timeout: float = 60.0) -> bool:
        """Wait until the background thread has nothing left to do (tests and benchmarks); whether it got there."""
        with self._wake:
            return self._wake.wait_for(lambda: self._closed or not (self._jobs or self._indexing or self._busy),
                                       timeout)

    def opened(self, path: Path, text: str) -> None:
        self.workspace.set_text(path, text)

    def changed(self, path: Path, text: str, line: int | None = None, previous: str | None = None) -> None:
        """An open document's new text; where it changed (`line`, 0-based, else found against its `previous`
        text in the background) becomes a recent chunk."""
        self.workspace.set_text(path, text)
        if line is not None or previous is not None:
            self._queue(("chunk", Path(path).resolve(), text, line, previous))

    def closed(self, path: Path) -> None:
        self.workspace.close(path)

    def _file_changed(self, path: Path) -> None:
        with self._wake:
            if (path, "") in self._pending:
                return  # its change is queued already: the job reads the newest text
            self._pending.add((path, ""))
        self._queue(("file", path))

    def _queue(self, job) -> None:
        if self._thread is None:
            self._run(job)
            return
        with self._wake:
            self._jobs.append(job)
            self._wake.notify()

    # -- a completion

    def gather(self, path: str | Path, left: str, right: str, context: str, budget: int,
               wait: bool = False) -> list[Snippet]:
        """Snippets within `budget` characters for a completion at the end of `left` in the document at `path`,
        the most useful first. With `wait`, what is not resolved or indexed yet is done first (a one-shot
        command); without, it is asked of the background thread, for the next completion."""
        if context == "off" or budget <= 0:
            return []
        path = Path(path).resolve()
        uses = uses_near(left, right)
        found, missing = self.declarations.lookup(path, uses)
        if missing:
            if wait:
                self.declarations.resolve(path, left + right, missing)
                found, _ = self.declarations.lookup(path, uses)
            else:
                self._queue_resolve(path, left + right, missing)
        pieces: list[tuple[Path, int, str]] = []  # (file, first line or -1 for declarations, text)
        by_file: dict[Path, list[Declaration]] = {}
        for declaration in found:
            by_file.setdefault(declaration.path, []).append(declaration)
        for source, declarations in by_file.items():
            pieces.append((source, -1, "\n\n".join(each.text for each in declarations) + "\n"))
        if context == "workspace":
            if wait and not self.indexed.is_set():
                self.index.build(self.workspace.files(self.suffixes))
                self.indexed.set()
            for chunk in self.recent.chunks(excluding=path):
                pieces.append((chunk.path, chunk.first_line, chunk.text))
            query = _query(left, right)
            for hit in self.index.search(query, excluding=path, unread=None if wait else self._queue_lines):
                pieces.append((hit.path, hit.first_line, hit.text))
        return self._within_budget(pieces, budget)

    def _within_budget(self, pieces: list[tuple[Path, int, str]], budget: int) -> list[Snippet]:
        snippets, taken, left = [], [], budget
        for source, first, text in pieces:
            span = range(first, first + text.count("\n")) if first >= 0 else None
            if span is not None and any(path == source and other is not None and span.start < other.stop
                                        and other.start < span.stop for path, other in taken):
                continue  # overlaps a chunk already in
            if len(text) > left:
                continue
            left -= len(text)
            taken.append((source, span))
            snippets.append(Snippet(self.display_path(source), text))
        return snippets

    def display_path(self, path: Path) -> str:
        """The path a prompt names a file by: relative to its workspace root or package folder."""
        shown = self._display.get(path)
        if shown is None:
            root = next((folder for folder in (*self.workspace.roots, *self.environment) if folder in path.parents),
                        None)
            shown = self._display[path] = path.name if root is None else path.relative_to(root).as_posix()
        return shown

    # -- the background

    def _queue_resolve(self, path: Path, text: str, uses) -> None:
        with self._wake:
            fresh = [use for use in uses if (path, use.chain) not in self._pending]
            if not fresh:
                return
            self._pending.update((path, use.chain) for use in fresh)
        self._queue(("resolve", path, text, fresh))

    def _queue_lines(self, path: Path) -> None:
        with self._wake:
            if (path, "lines") in self._pending:
                return
            self._pending.add((path, "lines"))
        self._queue(("lines", path))

    def _work(self) -> None:
        files = deque(self.workspace.files(self.suffixes))  # outside the lock: an editor's event never waits on it
        with self._wake:
            self._indexing = files
        while True:
            with self._wake:
                self._busy = False
                self._wake.notify_all()
                self._wake.wait_for(lambda: self._closed or ((self._jobs or self._indexing) and not self._paused))
                if self._closed:
                    return
                self._busy = True
                job = self._jobs.popleft() if self._jobs else None
                batch = [] if job is not None else [self._indexing.popleft()
                                                    for _ in range(min(INDEX_BATCH, len(self._indexing)))]
            try:
                if job is not None:
                    self._run(job)
                    continue
                done = self.index.build(batch, should_stop=lambda: self._closed or self._paused > 0)
                with self._wake:
                    self._indexing.extendleft(reversed(batch[done:]))  # after the completion that paused it
            except Exception:  # a bug in one job must not end the context for the session
                log.exception("repository context: %s failed", job[0] if job else "indexing")
            if not self._indexing:
                self.indexed.set()

    def _run(self, job) -> None:
        kind = job[0]
        if kind == "resolve":
            _, path, text, uses = job
            try:
                self.declarations.resolve(path, text, uses)
            finally:
                with self._wake:
                    self._pending.difference_update((path, use.chain) for use in uses)
        elif kind == "chunk":
            _, path, text, line, previous = job
            if line is None:
                line = first_changed_line(previous, text)
            if self.workspace.allowed(path):
                self.recent.add(path, text, line)
        elif kind == "lines":
            _, path = job
            try:
                self.index.load_lines(path)
            finally:
                with self._wake:
                    self._pending.discard((path, "lines"))
        elif kind == "file":
            _, path = job
            with self._wake:
                self._pending.discard((path, ""))
            self.declarations.changed(path)
            if path.name.endswith(self.suffixes) and (self.indexed.is_set() or self._thread is not None):
                self.index.update(path)
