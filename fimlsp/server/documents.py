"""The open documents, kept in sync with the client's incremental changes with LSP's own line rules."""

from __future__ import annotations

from dataclasses import dataclass

from fimlsp.language import Language, for_language_id, for_path
from fimlsp.server.positions import UTF16, apply_change


@dataclass
class Document:
    uri: str
    text: str
    version: int | None
    language_id: str
    # Why the server's copy may differ from the client's (a change it could not apply); None while in sync.
    sync_problem: str | None = None

    @property
    def language(self) -> Language | None:
        """The language of its language id, or of its name where the client sent no language id."""
        return for_language_id(self.language_id) if self.language_id else for_path(self.uri)


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
        text, problem = document.text, document.sync_problem
        for change in changes:
            change_range = getattr(change, "range", None)
            if change_range is None:
                text, problem = change.text, None
            elif problem is None:
                start, end = change_range.start, change_range.end
                text = apply_change(text, (start.line, start.character), (end.line, end.character), change.text,
                                    encoding)
        document.text = text
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
