"""LSP's base protocol (`Content-Length` framed JSON-RPC) read from a byte stream so that no frame can stop the
server: fimlsp's own loop instead of pygls' `start_io` / `start_tcp`.

pygls' reader recognises a header only when it fills a whole line and then reads exactly the length it names: one
wrong `Content-Length` leaves it reading bodies from the middle of messages for good (a deaf server), a huge one
allocates it (`MemoryError`), and a header line without a break is buffered whole. Here the length is a hint that
the JSON is checked against:

- a body is the JSON value that starts after the header; when the declared length does not end it, the value's own
  end does (a lying length costs a warning, not the stream), and it is taken as soon as it is complete;
- bytes outside any message are skipped up to the next `Content-Length` header (resynchronisation);
- a header is at most `MAX_HEADER` bytes and a body at most `MAX_CONTENT`: past either, what was read is dropped;
- a frame that cannot be read is answered with a -32700 parse error (id null, since its id is unknown), a message
  that is not a JSON-RPC request or notification with -32600 (a request whose id is not an integer or a string
  too), one whose params do not validate with -32602; a response or a notification is never answered, only logged;
- no message ends the server: an exception while handling one is logged, and a request gets -32603.

`--tcp` serves one client: a second connection while the first is open is told so (`window/showMessage`) and
closed at once, so that no client sees another's documents or answers; the process ends with the first client's
connection, as it does with stdio's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Awaitable

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdoutWriter

log = logging.getLogger("fimlsp.server")

MAX_HEADER = 8 * 1024  # bytes of header fields before the blank line that ends them
MAX_CONTENT = 64 * 1024 * 1024  # bytes of one message's JSON body
CHUNK = 64 * 1024  # bytes read from the stream at a time

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_HEADER_END = b"\r\n\r\n"
_FIELD_START = re.compile(rb"[A-Za-z0-9-]+[ \t]*:")  # a header starts with a field name
_NEXT_HEADER = re.compile(rb"(?i)content-(?:length|type)[ \t]*:")
_LENGTH_FIELD = re.compile(rb"(?i)content-length[ \t]*:[ \t]*(\S*)[ \t]*")
_WHITESPACE = b" \t\r\n"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Message:
    """A JSON value read from a frame."""

    value: Any


@dataclass(frozen=True)
class BadFrame:
    """A frame that could not be read: answered with a parse error (id null)."""

    reason: str


@dataclass(frozen=True)
class Skipped:
    """Bytes dropped or a header corrected while resynchronising: a warning, no answer."""

    reason: str


class FrameReader:
    """Splits a byte stream into JSON-RPC messages: feed it bytes as they come, and it returns what they complete.

    Memory stays within `max_header` + `max_content` + one chunk, whatever the stream holds."""

    def __init__(self, max_header: int = MAX_HEADER, max_content: int = MAX_CONTENT):
        self.max_header = max_header
        self.max_content = max_content
        self._buffer = bytearray()
        self._in_body = False
        self._declared: int | None = None  # the body length the header named, if it named a usable one
        self._skipped = 0  # bytes dropped since the last header, reported once at the next one

    def feed(self, data: bytes) -> list[Message | BadFrame | Skipped]:
        self._buffer += data
        events: list[Message | BadFrame | Skipped] = []
        while True:
            before = len(events)
            progressed = self._body(events) if self._in_body else self._header(events)
            if not progressed and len(events) == before:
                return events

    def _header(self, events: list) -> bool:
        """Read a header at the buffer's start; True when the reader moved on."""
        buffer = self._buffer
        start = len(buffer) - len(buffer.lstrip(_WHITESPACE))
        if start:
            del buffer[:start]
        if not buffer:
            return False
        if not _FIELD_START.match(buffer[:self.max_header]):
            return self._resynchronise(0)
        end = buffer.find(_HEADER_END, 0, self.max_header + len(_HEADER_END))
        if end < 0:
            if len(buffer) < self.max_header + len(_HEADER_END):
                return False
            events.append(BadFrame(f"a header of more than {self.max_header} bytes without the blank line that "
                                   "ends it: skipped to the next Content-Length header"))
            return self._resynchronise(1)
        header = bytes(buffer[:end])
        del buffer[:end + len(_HEADER_END)]
        if self._skipped:
            events.append(Skipped(f"{self._skipped} bytes outside any message skipped"))
            self._skipped = 0
        self._in_body, self._declared = True, None
        fields = [field for field in header.split(b"\r\n") if _LENGTH_FIELD.fullmatch(field)]
        value = _LENGTH_FIELD.fullmatch(fields[-1]).group(1) if fields else None
        if value is None:
            events.append(Skipped("a header without Content-Length: the body is read up to its JSON value's end"))
        elif not value.isdigit():
            events.append(Skipped(f"Content-Length {_shown(value)} is not a number: the body is read up to its JSON "
                                  "value's end"))
        elif int(value) > self.max_content:
            events.append(Skipped(f"Content-Length {_shown(value)} is over the limit of {self.max_content} bytes: "
                                  "the body is read up to its JSON value's end, within the limit"))
        else:
            self._declared = int(value)
        return True

    def _body(self, events: list) -> bool:
        """Read the body after a header; True when the reader moved on."""
        buffer, declared = self._buffer, self._declared
        if declared is not None and len(buffer) >= declared:
            try:
                value = json.loads(bytes(buffer[:declared]))
            except (ValueError, RecursionError):
                pass  # a wrong length, or not JSON: the value's own end decides below
            else:
                del buffer[:declared]
                self._in_body = False
                events.append(Message(value))
                return True
        start = len(buffer) - len(buffer.lstrip(_WHITESPACE))
        within_limit = len(buffer) - start < self.max_content
        if within_limit and (declared is None or len(buffer) < declared) \
                and not buffer.rstrip(_WHITESPACE).endswith((b"}", b"]")):
            return False  # no JSON-RPC message (an object) can have ended yet
        text = buffer[start:start + self.max_content].decode("utf-8", "surrogateescape")
        try:
            value, end = _DECODER.raw_decode(text)
        except RecursionError:
            self._in_body = False
            events.append(BadFrame("the body's JSON is nested too deeply"))
            return self._resynchronise(1 if declared is None else min(declared, len(buffer)))
        except json.JSONDecodeError as error:
            incomplete = error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string")
            if incomplete and within_limit:
                return False
            self._in_body = False
            why = (f"no complete JSON value within {self.max_content} bytes" if incomplete
                   else f"the body is not JSON ({error.msg})")
            events.append(BadFrame(why))
            return self._resynchronise(1 if declared is None else min(declared, len(buffer)))
        except ValueError as error:  # JSON that Python will not convert: an integer of more than 4,300 digits
            self._in_body = False
            events.append(BadFrame(f"the body's JSON cannot be read ({str(error).split(':')[0]})"))
            return self._resynchronise(1 if declared is None else min(declared, len(buffer)))
        size = start + len(text[:end].encode("utf-8", "surrogateescape"))
        body = bytes(buffer[:size])
        del buffer[:size]
        self._in_body = False
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            events.append(BadFrame(f"the body is not UTF-8 ({error.reason} at byte {error.start})"))
            return True
        if declared is not None and declared != size:
            events.append(Skipped(f"Content-Length {declared} does not match the JSON body's {size} bytes: "
                                  "read the JSON value, resynchronised"))
        events.append(Message(value))
        return True

    def _resynchronise(self, skip: int) -> bool:
        """Drop bytes up to the next header after `skip` bytes (all but a possible header's start when there is
        none yet); they are reported at the next header."""
        buffer = self._buffer
        found = _NEXT_HEADER.search(buffer, skip)
        dropped = found.start() if found else max(skip, len(buffer) - len(b"content-length:"))
        if dropped == 0:
            return False
        self._skipped += dropped
        del buffer[:dropped]
        return True


def _shown(data: bytes, width: int = 40) -> str:
    text = repr(bytes(data[:width]))[2:-1]
    return text + ("..." if len(data) > width else "")


def message_error(value: Any) -> tuple[Any, int, str] | None:
    """(id, code, message) for a JSON value that is not a JSON-RPC message the protocol can take; None for one it
    can."""
    if not isinstance(value, dict):
        return None, INVALID_REQUEST, f"a JSON-RPC message is an object, not {type(value).__name__}"
    message_id = value.get("id") if valid_id(value.get("id")) else None
    if value.get("jsonrpc") != "2.0":
        return message_id, INVALID_REQUEST, 'not a JSON-RPC 2.0 message ("jsonrpc": "2.0" is missing)'
    if "method" in value and not isinstance(value["method"], str):
        return message_id, INVALID_REQUEST, "the method is not a string"
    if "method" not in value and "id" not in value:
        return None, INVALID_REQUEST, "neither a request, a notification nor a response"
    if "id" in value and message_id is None:
        return None, INVALID_REQUEST, f"the id is {_kind(value['id'])}, not an integer or a string"
    return None


def valid_id(message_id: Any) -> bool:
    """LSP's ids are integers or strings: anything else (null, a float, a list, an object) could be neither
    matched with a request nor used as a key."""
    return isinstance(message_id, (int, str)) and not isinstance(message_id, bool)


def _kind(value: Any) -> str:
    return "null" if value is None else {dict: "an object", list: "a list", bool: "a boolean", float: "a number"}.get(
        type(value), f"a {type(value).__name__}")


async def run(protocol, read: Callable[[], Awaitable[bytes]]) -> int | None:
    """Read and handle messages until the stream ends (None) or the client's `exit` (its exit status)."""
    reader = FrameReader()
    while True:
        data = await read()
        if not data:
            return None
        for event in reader.feed(data):
            if isinstance(event, Skipped):
                log.warning("protocol: %s", event.reason)
            elif isinstance(event, BadFrame):
                log.warning("protocol: parse error: %s", event.reason)
                send_error(protocol, None, PARSE_ERROR, f"Parse error: {event.reason}")
            else:
                dispatch(protocol, event.value)
            if protocol.exit_code is not None:
                return protocol.exit_code
            await asyncio.sleep(0)  # let handlers run between messages of one chunk, as they would between chunks


def dispatch(protocol, value: Any) -> None:
    """Hand one JSON value to the protocol, answering what it cannot take with the JSON-RPC error that says why
    (a response or a notification gets no answer: the spec forbids it). No message can end the server: what
    fails in handling one is logged, and a request gets an internal error."""
    problem = message_error(value)
    if problem is not None:
        message_id, code, reason = problem
        if isinstance(value, dict) and "id" in value and "method" not in value:
            log.warning("protocol: response dropped: %s", reason)
        else:
            log.warning("protocol: %s", reason)
            send_error(protocol, message_id, code, f"Invalid request: {reason}")
        return
    try:
        _hand_over(protocol, value)
    except ConnectionError:  # the client has gone: the transport stops
        raise
    except Exception as error:
        log.error("protocol: %s failed: %s: %s", value.get("method", "a response"), type(error).__name__, error)
        log.debug("message failed", exc_info=True)
        if "id" in value and "method" in value:
            send_error(protocol, value["id"], INTERNAL_ERROR, f"Internal error: {type(error).__name__}")


def _hand_over(protocol, value: dict) -> None:
    """A JSON-RPC message to the protocol, once its params are checked."""
    try:
        message = protocol.structure_message(value)
    except JsonRpcException as error:
        method = value.get("method")
        if "id" in value and method is not None:
            log.warning("protocol: %s %r refused: %s", method, value["id"], error.message)
            send_error(protocol, value["id"], error.code, error.message)
        elif method is not None and isinstance(error, JsonRpcInvalidParams):
            protocol.refuse_notification(method, value.get("params"), error.message)
        else:
            log.warning("protocol: message dropped: %s", error.message)
        return
    protocol.handle_message(message)


def send_error(protocol, message_id: Any, code: int, message: str) -> None:
    """Answer a request (or a message whose id is unknown, with id null) with a JSON-RPC error."""
    protocol._send_data({"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message}})


def serve_stdio(server, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve one client over a pair of pipes; the exit status: 0 after `shutdown` and `exit` (or the end of the
    input), 1 after an `exit` without `shutdown`."""
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        return asyncio.run(_serve_stream(server.protocol, stdin)) or 0
    except BrokenPipeError:
        log.error("the connection to the client is lost: stopping")
        return 0
    finally:
        server.shutdown()


async def _serve_stream(protocol, stdin: BinaryIO) -> int | None:
    """`run` on a blocking stream, read by a daemon thread: an `exit` never waits for a read to return. The thread
    reads the file descriptor, not the buffered stream, whose lock it would hold at the interpreter's exit."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)  # the reader waits while the server catches up
    descriptor = stdin.fileno()

    def read_all() -> None:
        while True:
            try:
                data = os.read(descriptor, CHUNK)
            except (OSError, ValueError):
                data = b""
            try:
                asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
            except RuntimeError:  # the loop has stopped
                return
            if not data:
                return

    threading.Thread(target=read_all, name="fimlsp-stdin", daemon=True).start()
    return await run(protocol, chunks.get)


def serve_tcp(server, host: str, port: int) -> int:
    """Serve one client on a TCP socket: the first connection, to its end; its exit status as for `serve_stdio`.
    A connection that comes while it is open is refused: the server's state (documents, settings, the lifecycle)
    is one client's."""

    async def main() -> int | None:
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        served: list[str] = []  # the client being served

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peer = _peer(writer)
            if served or done.done():
                await _refuse(writer, peer, served[0] if served else "an earlier client")
                return
            served.append(peer)
            log.info("serving %s", peer)
            server.protocol.set_writer(writer)
            try:
                status = await run(server.protocol, lambda: reader.read(CHUNK))
            except Exception as error:  # a reset connection
                log.error("the connection to the client failed: %s", error)
                status = None
            if not done.done():
                done.set_result(status)

        listener = await asyncio.start_server(connection, host, port)
        log.info("serving on %s", ", ".join(str(sock.getsockname()) for sock in listener.sockets))
        async with listener:
            return await done

    try:
        return asyncio.run(main()) or 0
    finally:
        server.shutdown()


def _peer(writer: asyncio.StreamWriter) -> str:
    address = writer.get_extra_info("peername")
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


async def _refuse(writer: asyncio.StreamWriter, peer: str, client: str) -> None:
    """Tell a second client why it is not served (a message its editor shows), and close its connection."""
    reason = f"fimlsp serves one client at a time and is serving {client}: connection from {peer} refused"
    log.warning("protocol: %s", reason)
    body = json.dumps({"jsonrpc": "2.0", "method": "window/showMessage",
                       "params": {"type": 1, "message": reason}}).encode()
    try:
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()
