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
        """Apply `textDocument/didChange` content changes in order; None for a document that is not open."""
        document = self._documents.get(uri)
        if document is None:
            return None
        text = document.text
        for change in changes:
            change_range = getattr(change, "range", None)
            if change_range is None:
                text = change.text
            else:
                start, end = change_range.start, change_range.end
                text = apply_change(text, (start.line, start.character), (end.line, end.character), change.text,
                                    encoding)
        document.text = text
        document.version = version
        return document

    def close(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        return self._documents.get(uri)
