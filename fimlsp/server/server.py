"""The language server: pygls wiring of documents, settings, model loading and the two completion methods.

- `textDocument/inlineCompletion` (LSP 3.18, advertised through `InlineCompletionOptions`) answers ghost text;
  `textDocument/completion` answers one item whose `textEdit` inserts the middle at the cursor.
- Documents are synced incrementally into `fimlsp.server.documents` with LSP's line rules.
- Settings come from `initializationOptions` and `workspace/didChangeConfiguration` (pushed, or pulled with
  `workspace/configuration` when the notification carries none).
- The model starts loading at `initialize`, in the background; the client hears of it through
  `window/workDoneProgress` (`loading model …`, then `… ready in N s`), the `fimlsp/status` notification (the same
  messages, with a null `uri`, and the status itself as `model`) and `fimlsp.modelStatus`. It reloads when the model or the device setting changes.
- `workspace/executeCommand` `fimlsp.modelStatus` answers when the model has loaded (for a client's status bar).
- After each completion request the `fimlsp/status` notification says what came of it (`suggestion: ...` or
  `no suggestion: <reason>`), so that a client can show why nothing appears, where its time went (`timings`,
  see docs/server.md) and how it was had (`cached`, `recognizer`).
- Log lines go to the client as `window/logMessage` with their level; stderr is left to errors.
- Every handler answers: a bad request is logged and gets an empty answer. Framing, params checks and the
  lifecycle are `fimlsp.server.transport`'s and `fimlsp.server.protocol`'s.
- A text change that cannot be applied leaves the document out of sync, which the client is told: no suggestions
  for it until a full-text change or `didOpen` gives the server its text again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
import uuid

from fimlsp.server.attrs_code import attrs_code_cached

with attrs_code_cached("lsprotocol"):  # the first import of lsprotocol's types and pygls: most of the server's start
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

from fimlsp import __version__
from fimlsp.lines import LINE_BREAK
from fimlsp.server import config
from fimlsp.server.cache import Suggestion
from fimlsp.server.completion import CompletionEngine, ModelLoadError, NoSuggestion, Request
from fimlsp.server.documents import Document, Documents
from fimlsp.server.positions import UTF16, PositionError
from fimlsp.server.protocol import FimProtocol

log = logging.getLogger("fimlsp.server")

MODEL_STATUS = "fimlsp.modelStatus"  # workspace/executeCommand: wait for the model, then say how it went
# notification: what came of a completion request, {uri, line, character, suggestion, message}; and the model's
# loading, with a null uri, line and character
STATUS = "fimlsp/status"

_MESSAGE_TYPES = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
)


class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as `window/logMessage`, from any thread, at the level of the `fimlsp`
    logger (`--log-level`); debug records go as `Log`, with their traceback if they carry one."""

    def __init__(self, server: FimServer):
        super().__init__()
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.server.loop
        if loop is None or loop.is_closed():
            return
        kind = next((kind for level, kind in _MESSAGE_TYPES if record.levelno >= level), types.MessageType.Log)
        try:
            params = types.LogMessageParams(type=kind, message=f"fimlsp: {self.format(record)}")
            if threading.current_thread() is threading.main_thread():
                self.server.window_log_message(params)
            else:
                loop.call_soon_threadsafe(self.server.window_log_message, params)
        except Exception:  # logging must never take the server down (a closed pipe, a stopped loop)
            self.handleError(record)


class FimServer(LanguageServer):
    def __init__(self, settings: config.Settings):
        super().__init__("fimlsp", __version__, protocol_cls=FimProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.base_settings = settings
        self.engine = CompletionEngine(settings)
        self.documents = Documents()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loading: asyncio.Future | None = None  # the latest model load
        self.model_status = {"ready": False, "model": None, "error": None, "message": "no model loaded",
                             "seconds": None}
        self.initialized = False  # the client has been told that the session began: notifications may go
        self.change_ms: dict[str, float] = {}  # per document, what applying its latest didChange took

    def shutdown(self) -> None:
        """Stop the generation too when the connection ends, so the process can exit at once."""
        self.engine.shutdown()
        super().shutdown()

    @property
    def settings(self) -> config.Settings:
        return self.engine.settings

    @property
    def position_encoding(self) -> str:
        capabilities = getattr(self.protocol, "server_capabilities", None)
        encoding = getattr(capabilities, "position_encoding", None) or UTF16
        return getattr(encoding, "value", encoding)

    def apply_settings(self, options, origin: str) -> None:
        """Apply client settings; reload the model in the background if the model or the device changed."""
        previous = self.settings
        settings, problems = config.update(previous, options, self.base_settings)
        for problem in problems:
            log.warning("%s: %s", origin, problem)
        if settings == previous:
            return
        self.engine.settings = settings
        self.engine.suggestions.clear()
        log.info("settings: %s", _describe(settings))
        if settings.model_key() != previous.model_key() and self.loading is not None:
            self.engine.supersede()
            self.start_loading()
            asyncio.ensure_future(self.report_loading())

    def start_loading(self) -> None:
        """Queue loading the configured model in the worker, at once: requests wait for it."""
        name = self.settings.model or "the default model"
        self.model_status = {"ready": False, "model": None, "error": None, "message": f"loading model {name}…",
                             "seconds": None}
        self.loading = asyncio.ensure_future(self._record_load(self.engine.load(self.settings), time.perf_counter()))
        if self.initialized:
            self.notify_model_status()

    async def report_loading(self) -> None:
        """Report the latest load with a progress report, if the client supports one, until it ends."""
        loading = self.loading
        if loading is None:
            return
        token = None
        window = getattr(self.client_capabilities, "window", None)
        if window is not None and window.work_done_progress:
            token = f"fimlsp-load-{uuid.uuid4()}"
            try:
                await self.work_done_progress.create_async(token)
                self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="fimlsp", message=self.model_status["message"], cancellable=False))
            except Exception as error:
                log.debug("no progress report: %s", error)
                token = None
        status = await loading
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=status["message"]))

    def notify_model_status(self) -> None:
        """The model's status as a `fimlsp/status` notification, with no document; `model` carries what
        `fimlsp.modelStatus` answers (ready, model, error, seconds), for a client to read without parsing words."""
        self.protocol.notify(STATUS, {"uri": None, "line": None, "character": None, "suggestion": False,
                                      "message": self.model_status["message"], "model": dict(self.model_status)})

    async def _record_load(self, loading: asyncio.Future, started: float) -> dict:
        try:
            name = await loading
        except ModelLoadError as error:
            if self.loading is not asyncio.current_task():  # a load a newer one replaced and abandoned
                log.debug("model load replaced: %s", error)
                return self.model_status
            log.error("%s", error)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"fimlsp: {error}"))
            message = f"{error}" if error.kept is not None else f"no model: {error}"
            self.model_status = {"ready": error.kept is not None, "model": error.kept, "error": str(error),
                                 "message": message, "seconds": None}
        else:
            seconds = time.perf_counter() - started
            log.info("model %s ready in %.1f s", name, seconds)
            self.model_status = {"ready": True, "model": name, "error": None,
                                 "message": f"model {name} ready in {seconds:.1f} s", "seconds": round(seconds, 3)}
        if self.initialized and self.loading is asyncio.current_task():  # not a load a newer one replaced
            self.notify_model_status()
        return self.model_status

    def refuse_change(self, uri: str | None, reason: str) -> None:
        """A `didChange` that cannot be applied: the document is out of sync until its full text comes again, and
        the client hears why (a warning, and the `fimlsp/status` notification)."""
        document = self.documents.get(uri) if uri is not None else None
        message = (f"a change to {uri or 'a document'} was refused ({reason}); no suggestions for it until the "
                   "editor sends its full text again (reopen the file)")
        log.warning("%s", message)
        if document is None or document.sync_problem is None:  # said once, when the document falls out of sync
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                             message=f"fimlsp: {message}"))
        if document is None or not self.documents.lose_sync(uri, reason):
            return
        self.engine.forget(uri)
        self.protocol.notify(STATUS, {"uri": uri, "line": 0, "character": 0, "suggestion": False,
                                      "message": f"no suggestion: {self.documents.get(uri).sync_problem}"})

    async def suggest(self, uri: str, position: types.Position, single_line: bool) -> Suggestion | NoSuggestion:
        """The suggestion at `position`, or why there is none; the client hears which through `fimlsp/status`,
        with the milliseconds of the request's stages."""
        started = time.perf_counter()
        timings: dict[str, float] = {}
        facts: dict[str, object] = {"cached": False, "recognizer": None}
        outcome = await self._suggest(uri, position, single_line, timings, facts)
        timings["total"] = round(1e3 * (time.perf_counter() - started), 2)
        if uri in self.change_ms:
            timings["change"] = self.change_ms[uri]
        if isinstance(outcome, Suggestion):
            message = f"suggestion: {outcome.detail}"
        else:
            message = f"no suggestion: {outcome.reason}"
        self.protocol.notify(STATUS, {"uri": uri, "line": position.line, "character": position.character,
                                      "suggestion": isinstance(outcome, Suggestion), "message": message,
                                      "timings": timings, **facts})
        return outcome

    async def _suggest(self, uri: str, position: types.Position, single_line: bool, timings: dict[str, float],
                       facts: dict[str, object]) -> Suggestion | NoSuggestion:
        document = self.documents.get(uri)
        if document is None:
            log.warning("%s: completion asked for a document that is not open", uri)
            return NoSuggestion("the document is not open")
        if document.sync_problem is not None:
            return NoSuggestion(document.sync_problem)
        language = document.language
        if language is None:
            return NoSuggestion(f"no language fimlsp completes ({document.language_id or 'no language id'})")
        where = f"{uri}:{position.line + 1}:{position.character + 1}"
        started = time.perf_counter()
        try:  # a big document's window: the request's work is bounded by the size budget, not the document
            cursor = document.around(position.line, position.character, self.position_encoding,
                                     self.settings.size_budget)
        except PositionError as error:
            log.warning("%s: %s: no completion", where, error)
            return NoSuggestion(str(error))
        timings["document"] = round(1e3 * (time.perf_counter() - started), 2)
        return await self.engine.complete(Request(uri, cursor.left, cursor.right, single_line, where, language.name,
                                                  cursor.window, timings, facts))

    def single_line(self, automatic: bool) -> bool:
        """Single-line mode from the setting; `auto` is single-line for automatic triggers only."""
        mode = self.settings.single_line
        return mode == "always" or (mode == "auto" and automatic)


def _describe(settings: config.Settings) -> str:
    return ", ".join(f"{key}={getattr(settings, name)!r}" for key, (name, _) in config.KEYS.items())


def _answers_empty(empty):
    """A request handler that logs any failure and answers `empty` instead of an error."""

    def decorate(handler):
        @functools.wraps(handler)
        async def wrapper(server: FimServer, params):
            try:
                return await handler(server, params)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.error("%s failed: %s: %s", handler.__name__, type(error).__name__, error)
                log.debug("handler failed", exc_info=True)
                return empty()

        return wrapper

    return decorate


def _never_fails(handler):
    """A notification handler that logs any failure."""

    @functools.wraps(handler)
    def wrapper(server: FimServer, params):
        try:
            handler(server, params)
        except Exception as error:
            log.error("%s failed: %s: %s", handler.__name__, type(error).__name__, error)
            log.debug("handler failed", exc_info=True)

    return wrapper


def build_server(settings: config.Settings) -> FimServer:
    """The server with its LSP handlers, registered in three groups: the session's life and settings, the
    documents, the completions. Each handler is a few lines, read best beside the others of its group."""
    server = FimServer(settings)
    _lifecycle_handlers(server)
    _document_handlers(server)
    _completion_handlers(server)
    return server


def _lifecycle_handlers(server: FimServer) -> None:
    """`initialize` (the model starts loading), `initialized`, settings changes, the model's status, `shutdown`."""

    @server.feature(types.INITIALIZE)
    @_never_fails
    def initialize(ls: FimServer, params: types.InitializeParams):
        ls.loop = asyncio.get_running_loop()
        logging.getLogger("fimlsp").addHandler(ClientLogHandler(ls))
        ls.apply_settings(params.initialization_options, "initializationOptions")
        ls.engine.context.initialize(params.workspace_folders, params.root_uri, params.root_path)
        ls.start_loading()  # no notification may go before the answer: `initialized` reports it

    @server.feature(types.INITIALIZED)
    async def initialized(ls: FimServer, params: types.InitializedParams):
        ls.initialized = True
        ls.notify_model_status()
        await ls.report_loading()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: FimServer, params: types.DidChangeConfigurationParams):
        settings = params.settings
        if not config.section(settings):
            workspace = getattr(ls.client_capabilities, "workspace", None)
            if workspace is None or not workspace.configuration:
                return
            try:
                answer = await ls.workspace_configuration_async(types.ConfigurationParams(
                    items=[types.ConfigurationItem(section=config.SECTION)]))
            except Exception as error:
                log.warning("workspace/configuration failed: %s", error)
                return
            settings = answer[0] if answer else None
        ls.apply_settings(settings, "workspace/didChangeConfiguration")

    @server.command(MODEL_STATUS)
    async def model_status(ls: FimServer, *args):
        """Answers once the latest model load has finished: {"ready", "model", "error"} (for status displays)."""
        while ls.loading is not None and not ls.loading.done():
            await asyncio.wait([ls.loading])
        return ls.model_status

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: FimServer, params):
        ls.engine.shutdown()


def _document_handlers(server: FimServer) -> None:
    """The documents' text as the client edits it."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @_never_fails
    def did_open(ls: FimServer, params: types.DidOpenTextDocumentParams):
        document = params.text_document
        ls.documents.open(document.uri, document.text, document.version, document.language_id)
        ls.engine.context.opened(document.uri, document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @_never_fails
    def did_change(ls: FimServer, params: types.DidChangeTextDocumentParams):
        document = params.text_document
        started = time.perf_counter()
        try:
            changed = ls.documents.change(document.uri, document.version, params.content_changes,
                                          ls.position_encoding)
        except Exception as error:
            ls.refuse_change(document.uri, f"{type(error).__name__}: {error}")
            return
        ls.change_ms[document.uri] = round(1e3 * (time.perf_counter() - started), 2)
        if changed is None:
            log.warning("%s: change to a document that is not open ignored", document.uri)
        else:
            ls.engine.context.changed(document.uri, changed.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_never_fails
    def did_close(ls: FimServer, params: types.DidCloseTextDocumentParams):
        ls.documents.close(params.text_document.uri)
        ls.engine.context.closed(params.text_document.uri)
        ls.change_ms.pop(params.text_document.uri, None)
        ls.engine.forget(params.text_document.uri)


def _completion_handlers(server: FimServer) -> None:
    """Inline completions (ghost text) and the completion list's one item."""

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    @_answers_empty(lambda: types.InlineCompletionList(items=[]))
    async def inline_completion(ls: FimServer, params: types.InlineCompletionParams):
        automatic = params.context.trigger_kind == types.InlineCompletionTriggerKind.Automatic
        suggestion = await ls.suggest(params.text_document.uri, params.position, ls.single_line(automatic))
        if isinstance(suggestion, NoSuggestion):
            return types.InlineCompletionList(items=[])
        cursor = types.Range(start=params.position, end=params.position)
        middles = (suggestion.middle, *suggestion.alternatives)
        return types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text=middle, range=cursor)
                                                 for middle in middles])

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
    @_answers_empty(lambda: types.CompletionList(is_incomplete=True, items=[]))
    async def completion(ls: FimServer, params: types.CompletionParams):
        suggestion = await ls.suggest(params.text_document.uri, params.position, ls.single_line(True))
        if isinstance(suggestion, NoSuggestion):
            return types.CompletionList(is_incomplete=True, items=[])
        middle = suggestion.middle
        cursor = types.Range(start=params.position, end=params.position)
        item = types.CompletionItem(
            label=_label(middle),
            kind=types.CompletionItemKind.Text,
            detail=f"fimlsp · {suggestion.detail}",
            documentation=_shown_as_code(middle, ls.documents.get(params.text_document.uri)),
            filter_text=middle,
            sort_text="0",
            insert_text_format=types.InsertTextFormat.PlainText,
            text_edit=types.TextEdit(range=cursor, new_text=middle),
        )
        # Incomplete: the client asks again as the user types, and gets the rest of this item from the cache.
        return types.CompletionList(is_incomplete=True, items=[item])


def _shown_as_code(middle: str, document: Document | None) -> types.MarkupContent | None:
    """The middle as a Markdown code block of its document's language, for the completion item's documentation
    (none where the document closed while the middle was decoded)."""
    language = document.language if document is not None else None
    if language is None:
        return None
    opening, closing = language.fence
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=f"{opening}\n{middle}\n{closing}")


def _label(middle: str, width: int = 60) -> str:
    """The middle's first non-blank line, shortened, as the completion item's label."""
    lines = [line.strip() for line in LINE_BREAK.split(middle) if line.strip()]
    label = lines[0] if lines else repr(middle)
    if len(label) > width or len(lines) > 1:
        label = label[:width].rstrip() + " …"
    return label
