"""HTTP/1.1 exchanges bounded in time and size, for model servers (`fimlsp.model.remote`).

`http.client`'s timeout is per socket operation: a server that sends a byte a second holds a request forever, and
`read()` takes a body of any size. Here one deadline covers connecting, sending and the whole answer, every wait is
a short slice that also polls a stop flag (cancellation and shutdown interrupt a request at once), and a body is
read in chunks against a byte limit. Redirects are not followed: the caller sees the status.
"""

from __future__ import annotations

import errno
import select
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable

SLICE = 0.05  # seconds a socket waits at a time before the deadline and the stop flag are checked again
CHUNK = 64 * 1024  # bytes asked of the socket at a time
MAX_HEADER = 64 * 1024  # bytes of a status line and header fields
ERROR_BODY = 64 * 1024  # bytes kept of an answer that is not a success (its message)


class WireError(OSError):
    """The exchange failed; `reason` in a few words."""


class Refused(WireError):
    """Nothing listens at the address."""


class Closed(WireError):
    """The server closed the connection before its answer began (a kept-alive connection it dropped)."""


class TimedOut(WireError):
    """The deadline passed before the whole answer came."""


class Interrupted(WireError):
    """The stop flag was raised: the answer is not wanted any more."""


class TooLarge(WireError):
    """The answer's body is over the limit."""


class NotHttp(WireError):
    """The server answered something other than HTTP."""


class Connection:
    """One kept-alive connection to `url`'s host, opened when first needed and again after a failure."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        self.host, self.tls = parts.hostname, parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self._socket: socket.socket | None = None

    def close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.close()
            finally:
                self._socket = None

    def exchange(self, method: str, path: str, body: bytes | None, deadline: float, limit: int,
                 should_stop: Callable[[], bool] | None = None) -> tuple[int, bytes]:
        """The status and body of the answer to one request, all of it by `deadline` (a `time.perf_counter()`
        value); a body of a success over `limit` bytes raises `TooLarge`, another's is cut to `ERROR_BODY`.
        Raises a `WireError` and closes the connection on any failure."""
        clock = _Clock(deadline, should_stop)
        reused = self._socket is not None
        try:
            if self._socket is None:
                self._socket = _connect(self.host, self.port, self.tls, clock)
            host = f"[{self.host}]" if ":" in self.host else self.host
            head = (f"{method} {path or '/'} HTTP/1.1\r\nHost: {host}:{self.port}\r\n"
                    "Content-Type: application/json\r\nAccept: application/json\r\n"
                    f"Content-Length: {len(body or b'')}\r\n\r\n").encode()
            _send(self._socket, head + (body or b""), clock)
            status, payload, keep = _Answer(self._socket, clock).read(limit)
        except Closed:
            self.close()
            if reused:  # the server dropped the kept-alive connection: once more on a new one
                return self.exchange(method, path, body, deadline, limit, should_stop)
            raise
        except BaseException:
            self.close()
            raise
        if not keep:
            self.close()
        return status, payload


class _Clock:
    def __init__(self, deadline: float, should_stop: Callable[[], bool] | None):
        self.deadline, self.should_stop = deadline, should_stop

    def slice(self) -> float:
        """Seconds the next wait may take; raises when the time is up or the stop flag is raised."""
        if self.should_stop is not None and self.should_stop():
            raise Interrupted("stopped")
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise TimedOut("no whole answer in time")
        return min(SLICE, left)


def _connect(host: str, port: int, tls: bool, clock: _Clock) -> socket.socket:
    clock.slice()
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise WireError(error.strerror or str(error)) from None
    problem: OSError = Refused("connection refused")
    for family, kind, protocol, _name, address in addresses:
        connection = socket.socket(family, kind, protocol)
        try:
            connection.setblocking(False)
            code = connection.connect_ex(address)
            while code in (errno.EINPROGRESS, errno.EALREADY, errno.EWOULDBLOCK):
                _ready, writable, _ = select.select([], [connection], [], clock.slice())
                if writable:
                    code = connection.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code == errno.ECONNREFUSED:
                raise Refused("connection refused")
            if code:
                raise WireError(errno.errorcode.get(code, str(code)))
            connection.settimeout(SLICE)
            if tls:
                connection = _handshake(connection, host, clock)
            return connection
        except WireError as error:
            connection.close()
            problem = error
        except BaseException:
            connection.close()
            raise
    raise problem


def _handshake(connection: socket.socket, host: str, clock: _Clock) -> socket.socket:
    connection.setblocking(False)
    wrapped = ssl.create_default_context().wrap_socket(connection, server_hostname=host, do_handshake_on_connect=False)
    while True:
        try:
            wrapped.do_handshake()
            break
        except ssl.SSLWantReadError:
            select.select([wrapped], [], [], clock.slice())
        except ssl.SSLWantWriteError:
            select.select([], [wrapped], [], clock.slice())
        except ssl.SSLError as error:
            raise WireError(f"TLS: {error.reason or error}") from None
    wrapped.settimeout(SLICE)
    return wrapped


def _send(connection: socket.socket, data: bytes, clock: _Clock) -> None:
    view = memoryview(data)
    while view:
        connection.settimeout(clock.slice())
        try:
            sent = connection.send(view)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            raise Closed("the server closed the connection") from None
        view = view[sent:]


class _Answer:
    """An HTTP response read from the socket into a buffer that never holds more than a chunk past the limit."""

    def __init__(self, connection: socket.socket, clock: _Clock):
        self.connection, self.clock = connection, clock
        self.buffer = bytearray()
        self.ended = False  # the server closed its side
        self.started = False  # a byte of the answer has come

    def _more(self) -> bool:
        """Read what comes next into the buffer; False at the end of the stream."""
        while True:
            self.connection.settimeout(self.clock.slice())
            try:
                data = self.connection.recv(CHUNK)
            except TimeoutError:
                continue
            except ssl.SSLWantReadError:
                continue
            except ConnectionResetError:
                data = b""
            if not data:
                self.ended = True
                if not self.started:
                    raise Closed("the server closed the connection without an answer")
                return False
            self.started = True
            self.buffer += data
            return True

    def _line(self, limit: int) -> bytes:
        while True:
            end = self.buffer.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 2]
                return line
            if len(self.buffer) > limit:
                raise NotHttp(f"a line of more than {limit} bytes")
            if not self._more():
                raise NotHttp("the answer ended in its header")

    def _head(self) -> tuple[int, bytes, dict[str, str]]:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self.buffer) > MAX_HEADER:
                raise NotHttp(f"a header of more than {MAX_HEADER} bytes")
            if not self._more():
                raise NotHttp("the answer ended in its header")
        head = bytes(self.buffer[:end]).decode("latin-1")
        del self.buffer[:end + 4]
        status_line, *lines = head.split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isdigit() and len(parts[1]) == 3):
            raise NotHttp(f"not an HTTP status line: {status_line[:60]!r}")
        fields: dict[str, str] = {}
        for line in lines:
            name, separator, value = line.partition(":")
            if not separator:
                raise NotHttp(f"not a header field: {line[:60]!r}")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length" and fields.get(name, value) != value:
                raise NotHttp("two different Content-Lengths")
            fields[name] = value
        return int(parts[1]), parts[0].encode(), fields

    def read(self, limit: int) -> tuple[int, bytes, bool]:
        """The status, the body and whether the connection may serve another request."""
        status, version, fields = self._head()
        while 100 <= status < 200:  # an interim answer: the real one follows
            status, version, fields = self._head()
        success = 200 <= status < 300
        kept = ERROR_BODY if not success else limit
        if status in (204, 304):
            body, delimited = b"", True
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            body, delimited = self._chunked(kept, success), True
        elif "content-length" in fields:
            length = fields["content-length"]
            if not length.isdigit():
                raise NotHttp(f"Content-Length {length[:40]!r} is not a number")
            body, delimited = self._sized(int(length), kept, success), True
        else:
            body, delimited = self._to_end(kept, success), False
        keep = (delimited and not self.ended and not self.buffer and version == b"HTTP/1.1"
                and "close" not in fields.get("connection", "").lower())
        return status, body, keep

    def _over(self, limit: int, success: bool, size: int | None = None) -> None:
        if success:
            said = f"{size} bytes" if size is not None else f"more than {limit} bytes"
            raise TooLarge(f"a body of {said}, over the limit of {limit}")

    def _sized(self, length: int, limit: int, success: bool) -> bytes:
        if length > limit:
            self._over(limit, success, length)
            self.ended = True  # the rest is not read: the connection cannot serve again
            return self._take(limit)
        return self._take(length)

    def _take(self, length: int) -> bytes:
        while len(self.buffer) < length:
            if not self._more():
                raise NotHttp("the body ended before its Content-Length")
        body = bytes(self.buffer[:length])
        del self.buffer[:length]
        return body

    def _to_end(self, limit: int, success: bool) -> bytes:
        while len(self.buffer) <= limit:
            if not self._more():
                return bytes(self.buffer[:limit])
        self._over(limit, success)
        self.ended = True
        return bytes(self.buffer[:limit])

    def _chunked(self, limit: int, success: bool) -> bytes:
        body = bytearray()
        while True:
            size_field = self._line(1024).split(b";")[0].strip()
            try:
                size = int(size_field, 16)
            except ValueError:
                raise NotHttp(f"a chunk size {size_field[:20]!r} that is not a number") from None
            if size == 0:
                while self._line(MAX_HEADER):  # trailer fields, up to the blank line
                    pass
                return bytes(body)
            if len(body) + size > limit:
                self._over(limit, success)
                self.ended = True
                body += self._take(min(size, limit - len(body)))
                return bytes(body)
            body += self._take(size)
            if self._line(2):
                raise NotHttp("a chunk not followed by its line end")
