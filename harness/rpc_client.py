"""A JSON-RPC client that writes raw bytes to `fimlsp serve` (over stdio, or a socket with --tcp), for faults a
well-behaved client never makes (wrong lengths, broken JSON, invalid params, requests out of the lifecycle).
Every wait has a timeout, so a deaf server fails the test instead of hanging it."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable

TIMEOUT = 60.0  # seconds to wait for any one answer: a hang guard, far above what an answer takes


class RpcConnection:
    """The client's side of one connection: bytes go to `to_server`, messages come from `from_server`."""

    def __init__(self, to_server: BinaryIO, from_server: BinaryIO):
        self.to_server, self.from_server = to_server, from_server
        self.received: list[dict] = []
        self.stderr: list[bytes] = []  # the server's, where it is this client's process
        self._incoming: queue.Queue[dict | None] = queue.Queue()
        self._next_id = 0
        self._writing = threading.Lock()  # the reader thread answers the server's requests
        threading.Thread(target=self._read, daemon=True).start()

    # Sending --------------------------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        with self._writing:
            self.to_server.write(data)
            self.to_server.flush()

    @staticmethod
    def frame(message: dict | bytes, length_error: int = 0) -> bytes:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % (len(body) + length_error) + body

    def send(self, message: dict | bytes, length_error: int = 0) -> None:
        self.send_raw(self.frame(message, length_error))

    def request_message(self, method: str, params: Any = None) -> dict:
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        return message if params is None else {**message, "params": params}

    def request(self, method: str, params: Any = None) -> int:
        message = self.request_message(method, params)
        self.send(message)
        return message["id"]

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({} if params is None else {"params": params})})

    def initialize(self, options: dict | None = None) -> dict:
        answer = self.response(self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {
            "window": {"workDoneProgress": True}}, "initializationOptions": options}))
        self.notify("initialized", {})
        return answer

    # Receiving ------------------------------------------------------------------------------------------------

    def _read(self) -> None:
        stream = self.from_server
        while True:
            try:
                body = self._read_body(stream)
            except (OSError, ValueError):  # the connection was closed on this side
                body = None
            if body is None:
                self._incoming.put(None)
                return
            message = json.loads(body)
            if "method" in message and "id" in message:  # the server asks (window/workDoneProgress/create)
                try:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                except OSError:
                    pass  # the server has gone
            self._incoming.put(message)

    @staticmethod
    def _read_body(stream: BinaryIO) -> bytes | None:
        """The next message's body, or None at the end of the stream."""
        length = None
        while True:
            line = stream.readline()
            if not line:
                return None
            if line == b"\r\n":
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return stream.read(length)

    def wait_for(self, matches: Callable[[dict], bool], timeout: float = TIMEOUT) -> dict:
        """The first message received (earlier or within `timeout` seconds) that `matches`."""
        for message in self.received:
            if matches(message):
                return message
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                message = self._incoming.get(timeout=max(0.0, left))
            except queue.Empty:
                raise AssertionError(f"no matching message within {timeout:g} s; stderr: "
                                     f"{b''.join(self.stderr)[-2000:]!r}") from None
            if message is None:
                raise AssertionError(f"the server closed its output; {self.ended()}; stderr: "
                                     f"{b''.join(self.stderr)[-2000:]!r}")
            self.received.append(message)
            if matches(message):
                return message

    def response(self, message_id: Any, timeout: float = TIMEOUT) -> dict:
        return self.wait_for(lambda message: message.get("id") == message_id and "method" not in message, timeout)

    def notifications(self, method: str) -> list[dict]:
        return [message["params"] for message in self.received if message.get("method") == method]

    def request_statuses(self) -> list[dict]:
        """The `fimlsp/status` notifications about requests (those about the model's loading have no uri)."""
        return [params for params in self.notifications("fimlsp/status") if params["uri"] is not None]

    def wait_for_model(self, timeout: float = TIMEOUT) -> dict:
        """The model status once the model load has ended (within `timeout` seconds)."""
        request = self.request("workspace/executeCommand", {"command": "fimlsp.modelStatus"})
        return self.response(request, timeout)["result"]

    def closed_by_server(self, timeout: float = TIMEOUT) -> bool:
        """Whether the server ends the connection within `timeout` seconds (what it sent before is received)."""
        try:
            self.wait_for(lambda message: False, timeout)
        except AssertionError as error:
            return "closed its output" in str(error)
        return False

    def ended(self) -> str:
        return "the connection ended"


class RpcClient(RpcConnection):
    """`fimlsp serve` in a subprocess, spoken to over its stdin and stdout."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen([sys.executable, "-m", "fimlsp", "serve", *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        super().__init__(self.process.stdin, self.process.stdout)
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    def ended(self) -> str:
        return f"exit status {self.process.poll()}"

    def resident_memory(self) -> int | None:
        """The server's resident set size now (Linux's VmRSS), or None where /proc does not say."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        sizes = [int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")]
        return sizes[0] if sizes else None

    # Ending -----------------------------------------------------------------------------------------------------

    def exit_status(self, timeout: float = TIMEOUT) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not exit within {timeout:g} s") from None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()

    def __enter__(self) -> RpcClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SocketClient(RpcConnection):
    """A connection to `fimlsp serve --tcp HOST:PORT`."""

    def __init__(self, host: str, port: int):
        self.socket = socket.create_connection((host, port), timeout=TIMEOUT)
        self.socket.settimeout(None)  # the reader waits for as long as the server is quiet
        super().__init__(self.socket.makefile("wb"), self.socket.makefile("rb"))

    def close(self) -> None:
        """Shut the socket down first: the reader thread's pending read then ends, and with it its hold on the
        stream that closing waits for."""
        for closing in (lambda: self.socket.shutdown(socket.SHUT_RDWR), self.to_server.close, self.from_server.close,
                        self.socket.close):
            try:
                closing()
            except OSError:
                pass  # the server has closed the connection already

    def __enter__(self) -> SocketClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def document_params(uri: str, text: str, version: int = 1) -> dict:
    return {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}


def position_params(uri: str, line: int, character: int) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
