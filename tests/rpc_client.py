"""A JSON-RPC-over-stdio client that writes raw bytes to `fimlsp serve`, for faults a well-behaved client never
makes (wrong lengths, broken JSON, invalid params, requests out of the lifecycle). Every wait has a timeout, so a
deaf server fails the test instead of hanging it."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Callable

TIMEOUT = 60.0  # seconds to wait for any one answer: a hang guard, far above what an answer takes


class RpcClient:
    def __init__(self, *args: str):
        self.process = subprocess.Popen([sys.executable, "-m", "fimlsp", "serve", *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.received: list[dict] = []
        self.stderr: list[bytes] = []
        self._incoming: queue.Queue[dict | None] = queue.Queue()
        self._next_id = 0
        self._writing = threading.Lock()  # the reader thread answers the server's requests
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    # Sending --------------------------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        with self._writing:
            self.process.stdin.write(data)
            self.process.stdin.flush()

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
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self._incoming.put(None)
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:  # the server asks (window/workDoneProgress/create)
                try:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                except OSError:
                    pass  # the server has gone
            self._incoming.put(message)

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
                raise AssertionError(f"the server closed its output; exit status {self.process.poll()}; stderr: "
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

    def wait_for_model(self) -> dict:
        """The model status once the model load has ended."""
        return self.response(self.request("workspace/executeCommand", {"command": "fimlsp.modelStatus"}))["result"]

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


def document_params(uri: str, text: str, version: int = 1) -> dict:
    return {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}


def position_params(uri: str, line: int, character: int) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
