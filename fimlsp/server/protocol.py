"""fimlsp's LSP protocol: pygls' `LanguageServerProtocol` with the lifecycle, the params checks and the text
synchronisation that the LSP specification asks for and pygls leaves out.

- A request before `initialize` is answered -32002 (ServerNotInitialized), one after `shutdown` -32600
  (InvalidRequest); other notifications than `exit` are dropped then. `exit` ends the server with status 0 after
  `shutdown`, else 1 (`exit_code`, read by `fimlsp.server.transport`).
- Params that do not validate make a one-line -32602 (InvalidParams) answer that names the field, not pygls'
  traceback in the log and an unanswered request; a notification whose params do not validate goes to
  `refuse_notification`, where a refused `didChange` leaves its document out of sync, visibly. `$/` notifications
  (`$/cancelRequest`, `$/setTrace`, `$/progress`) pass the same checks as any other.
- The checks are strict: lsprotocol's converter lets any value through where LSP says `integer | string` (a list
  as `$/cancelRequest`'s id reached pygls' cancel handler as a dict key and ended the server) and cattrs converts
  where it should check (`[1]` became the uri "[1]", 1.7 the line 1); here strings, integers, numbers and booleans
  must be what they say.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Union

import attrs
import cattrs
from lsprotocol import types
from lsprotocol.types import ResponseErrorMessage
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage,
                            LanguageServerProtocol, lsp_method)

from fimlsp.server.transport import INVALID_REQUEST, send_error

log = logging.getLogger("fimlsp.server")

SERVER_NOT_INITIALIZED = -32002
MAX_PROBLEMS = 3  # validation problems named in one error message
PRUNE_MINIMUM = 64  # futures in pygls' table before it is pruned


class FimProtocol(LanguageServerProtocol):
    """Leaves text synchronisation to `fimlsp.server.documents.Documents`: pygls' own copy splits lines with
    `str.splitlines`, which ends lines at form feeds and U+2028 where LSP does not, and would misplace edits."""

    def __init__(self, server, converter):
        _check_primitives(converter)
        super().__init__(server, converter)
        self.initialize_received = False
        self.exit_code: int | None = None  # set by `exit`: the process's exit status
        self._prune_at = PRUNE_MINIMUM  # the size of `_request_futures` at which finished futures are dropped

    def structure_message(self, data: dict[str, Any]):
        """The typed message of a request, a notification or a response; `JsonRpcInvalidParams` naming the fields
        that do not validate (where pygls logs a traceback and its own error)."""
        if "jsonrpc" not in data:
            return super().structure_message(data)
        if "method" in data:
            default = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            kind = self.get_message_type(data["method"]) or default
            if ("id" in data) != ("id" in attrs.fields_dict(kind)):
                # else a request for a notification's method would be handled as the notification, unanswered
                what = "a notification: it takes no id" if "id" in data else "a request: it needs an id"
                raise JsonRpcInvalidRequest(f"Invalid request: {data['method']} is {what}")
        elif "error" in data:
            kind = ResponseErrorMessage
        else:  # the client's answer to the server's request
            kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
        try:
            return self._converter.structure(data, kind)
        except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as error:
            raise JsonRpcInvalidParams(f"Invalid params: {_problems(error)}") from None
        except RecursionError:
            raise JsonRpcInvalidParams("Invalid params: nested too deeply") from None

    def handle_message(self, message) -> None:
        method = getattr(message, "method", None)
        request = method is not None and hasattr(message, "id")
        if method == types.EXIT or method is None:
            super().handle_message(message)
            return
        if method == types.INITIALIZE and not self._shutdown:
            self.initialize_received = True
        refusal = None
        if self._shutdown:
            refusal = INVALID_REQUEST, f"the server is shutting down: {method} refused"
        elif not self.initialize_received:
            refusal = SERVER_NOT_INITIALIZED, f"the server is not initialized: {method} before initialize refused"
        if refusal is None:
            super().handle_message(message)
        elif request:
            log.warning("protocol: %s", refusal[1])
            send_error(self, message.id, *refusal)
        else:
            log.warning("protocol: notification %s dropped: %s", method, refusal[1].split(": ")[0])

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        """pygls keeps the future of every notification's handler (and of every handler a builtin one hands on
        to) in `_request_futures` for good: one per keystroke's `didChange`. Finished ones are dropped here, when
        the table has doubled (not from their callbacks, which may run while pygls' `shutdown` iterates it)."""
        if len(self._request_futures) > self._prune_at:
            for key, future in list(self._request_futures.items()):
                if future.done():
                    self._request_futures.pop(key, None)
            self._prune_at = 2 * len(self._request_futures) + PRUNE_MINIMUM
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

    def refuse_notification(self, method: str, params: Any, reason: str) -> None:
        """A notification whose params do not validate: a refused text change puts its document out of sync."""
        if method == types.TEXT_DOCUMENT_DID_CHANGE:
            document = params.get("textDocument") if isinstance(params, dict) else None
            uri = document.get("uri") if isinstance(document, dict) else None
            self._server.refuse_change(uri if isinstance(uri, str) else None, reason)
        else:
            log.warning("protocol: notification %s dropped: %s", method, reason)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):
        self.exit_code = 0 if self._shutdown else 1
        if self.exit_code:
            log.warning("exit without shutdown: exit status 1")
        yield from ()

    def _user_handler(self, method: str, params):
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)


def _check_primitives(converter: cattrs.Converter) -> None:
    """Structure hooks that check LSP's primitive types instead of converting (or passing) whatever comes."""
    checks = {str: ((str,), "a string"), int: ((int,), "an integer"), float: ((int, float), "a number"),
              bool: ((bool,), "a boolean"), Union[int, str]: ((int, str), "an integer or a string"),
              Optional[Union[int, str]]: ((int, str, type(None)), "an integer, a string or null")}
    for kind, (accepted, name) in checks.items():
        converter.register_structure_hook(kind, _checked(accepted, name))


def _checked(accepted: tuple[type, ...], name: str):
    def check(value: Any, _kind: Any) -> Any:
        if isinstance(value, accepted) and (bool in accepted or not isinstance(value, bool)):
            return value
        raise ValueError(f"should be {name}, not {_JSON_NAMES.get(type(value), type(value).__name__)}")

    return check


_JSON_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
               dict: "an object", type(None): "null"}


def _problems(error: Exception) -> str:
    """What did not validate, in one line: `$.params.position.line: should be in range ...`."""
    if not isinstance(error, cattrs.BaseValidationError):
        return f"{type(error).__name__}: {error}"
    problems = cattrs.transform_error(error, format_exception=_format)
    shown = "; ".join(_path(problem) for problem in problems[:MAX_PROBLEMS])
    return shown + (f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else "")


def _format(error: BaseException, kind: Any) -> str:
    if isinstance(error, KeyError):
        return "required field missing"
    if isinstance(error, ValueError) and str(error):
        return str(error)
    return cattrs.v.format_exception(error, kind)


def _path(problem: str) -> str:
    """cattrs' `reason @ $.path` as `$.path: reason`."""
    reason, at, path = problem.rpartition(" @ ")
    return f"{path}: {reason}" if at else problem
