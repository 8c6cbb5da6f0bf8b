"""The repository context as the LSP server and the commands use it: a few calls from their handlers.

The server's workspace is `initialize`'s (`workspaceFolders`, else `rootUri`); open documents feed it their text
and where they changed. Nothing is indexed or resolved until a completion asks for context (the setting is `off`,
or `auto` for a model whose window has no room, for the shipped model): then one background thread starts, which
waits while a completion runs (`completing`).
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

from fimlsp.context import RepositoryContext, budget_for, effective
from fimlsp.language import for_path
from fimlsp.model.formats import Snippet
from fimlsp.workspace import Workspace, globs, path_from_uri

log = logging.getLogger(__name__)


class EditorContext:
    """One server's context: built on the first completion that wants it, rebuilt when the excludes change."""

    def __init__(self):
        self._folders: tuple = ((), None, None)
        self._roots = Workspace(())
        self._exclude = ""
        self._context: RepositoryContext | None = None
        self._texts: dict[Path, str] = {}
        self._lock = threading.Lock()
        self._completions = 0  # running: a context started meanwhile starts paused for each

    def initialize(self, workspace_folders, root_uri: str | None, root_path: str | None = None) -> None:
        self._folders = (tuple(workspace_folders or ()), root_uri, root_path)
        self._roots = Workspace.from_initialize(*self._folders)

    def place(self, uri: str) -> tuple[str | None, str | None]:
        """The document's path and the workspace root that holds it, for the judges (`complete_middles`' `place`):
        no path for a document that is not a file, no root where no root of `initialize` holds it (the judges then
        find the file's own project)."""
        path = path_from_uri(uri)
        if path is None:
            return None, None
        root = self._roots.root_of(path)
        return str(path), None if root is None else str(root)

    def opened(self, uri: str, text: str) -> None:
        self.changed(uri, text)

    def changed(self, uri: str, text: str) -> None:
        """An open document's whole new text (didOpen, didChange): the work is the background's."""
        path = path_from_uri(uri)
        if path is None:
            return
        path = path.resolve()
        _judges_read(path, text)
        with self._lock:
            previous = self._texts.get(path)
            self._texts[path] = text
            context = self._context
        if context is not None:
            context.changed(path, text, previous=previous)

    def closed(self, uri: str) -> None:
        path = path_from_uri(uri)
        if path is None:
            return
        _judges_read(path.resolve(), None)
        with self._lock:
            self._texts.pop(path.resolve(), None)
            context = self._context
        if context is not None:
            context.closed(path)

    def snippets(self, uri: str, left: str, right: str, setting: str, exclude: str,
                 context_window: int) -> list[Snippet]:
        """The context for a completion in the document `uri`: what is ready now, never waiting."""
        mode = effective(setting, context_window)
        path = path_from_uri(uri)
        if mode == "off" or path is None:
            return []
        return self._started(exclude).gather(path, left, right, mode, budget_for(context_window))

    @contextlib.contextmanager
    def completing(self) -> Iterator[None]:
        """While a completion runs, the context's background waits (it would slow the decoding down)."""
        with self._lock:
            self._completions += 1
            context = self._context
        if context is not None:
            context.pause()
        try:
            yield
        finally:
            with self._lock:
                self._completions -= 1
                context = self._context  # the one paused, or one started paused during the completion
            if context is not None:
                context.resume()

    def _started(self, exclude: str) -> RepositoryContext:
        with self._lock:
            if self._context is not None and exclude == self._exclude:
                return self._context
            stale, self._exclude = self._context, exclude
            folders, root_uri, root_path = self._folders
            workspace = Workspace.from_initialize(folders, root_uri, root_path, exclude=globs(exclude))
            context = self._context = RepositoryContext(workspace)
            for _ in range(self._completions):
                context.pause()
            texts = dict(self._texts)
        if stale is not None:
            stale.close()
        context.start()  # first: what the open documents' texts queue is the background's, not this completion's
        for path, text in texts.items():
            context.opened(path, text)
        return context

    def shutdown(self) -> None:
        with self._lock:
            context, self._context = self._context, None
        if context is not None:
            context.close()


def _judges_read(path: Path, text: str | None) -> None:
    """An open document's unsaved text (None: closed) to its language, whose judges read it instead of the disk."""
    language = for_path(str(path))
    if language is not None:
        language.document_text(path, text)


class CommandContexts:
    """The context of one-shot completions (`fimlsp complete`, eval's cases): resolved and indexed at once, one
    workspace per project root and excludes, kept from one completion to the next (a run of many cases of a
    project indexes it once). The workspace is the completion's `project`, else the file's project root; a file
    read from standard input has none."""

    def __init__(self):
        self._contexts: dict[tuple, RepositoryContext] = {}

    def snippets(self, path: str | Path | None, left: str, right: str, setting: str, exclude: str,
                 context_window: int, project: str | Path | None = None) -> list[Snippet]:
        mode = effective(setting, context_window)
        if mode == "off" or path is None:
            return []
        workspace = Workspace.for_file(path, project, exclude=globs(exclude))
        key = (workspace.roots, exclude)
        context = self._contexts.get(key)
        if context is None:
            context = self._contexts[key] = RepositoryContext(workspace)
        try:
            return context.gather(path, left, right, mode, budget_for(context_window), wait=True)
        except Exception as error:  # noqa: BLE001 - the completion goes on without other files, and says why
            log.warning("no context from other files for %s: %s: %s", path, type(error).__name__, error)
            return []


def for_command(path: str | Path | None, left: str, right: str, setting: str, exclude: str, context_window: int,
                project: str | Path | None = None) -> list[Snippet]:
    """The context of one completion of `fimlsp complete` (`CommandContexts`)."""
    return CommandContexts().snippets(path, left, right, setting, exclude, context_window, project)
