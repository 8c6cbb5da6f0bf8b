"""Model servers on 127.0.0.1 that a user may be unlucky enough to point fimlsp at: one that drips its answer a byte a
second, one that accepts and never answers, one that floods (a 200 MB body, a redirect with an answer's body, a
completion with thousands of probability rows). With an `upstream` (a real llama.cpp server), only the decoding's
completion requests meet the hostility, once the `hostile` event is set: the rest pass through, so that fimlsp
connects and then meets it mid-decoding."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

COMPLETIONS = ("/completion", "/v1/completions")
DRIP, STALL, FLOOD, REDIRECT, ROWS = "drip", "stall", "flood", "redirect", "rows"
FLOOD_BYTES = 200 * 1000 * 1000
EXTRA_ROWS = 25_000  # probability rows added to a completion's answer


class _Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server = self.server
        server.requests.append(self.path)
        try:
            if server.upstream is not None and not (server.hostile.is_set() and _decoding(self.path, body)):
                self._answer(*self._passed_on(body))
            else:
                getattr(self, f"_{server.mode}")(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # fimlsp hung up, as it should

    do_GET = do_POST

    def _passed_on(self, body: bytes) -> tuple[int, bytes]:
        request = urllib.request.Request(self.server.upstream + self.path, method=self.command,
                                         data=body if self.command == "POST" else None,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def _answer(self, status: int, payload: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(payload)),
                            **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _drip(self, body: bytes) -> None:
        """A byte a second of an answer that never ends, until fimlsp hangs up or the test ends."""
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Padding: " + b"a" * 10**6
        for byte in answer:
            if self.server.closing.wait(1.0):
                return
            self.wfile.write(bytes([byte]))

    def _stall(self, body: bytes) -> None:
        self.server.closing.wait(600)

    def _flood(self, body: bytes) -> None:
        """A 200 MB chunked body, as fast as fimlsp reads it."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b" " * (1 << 20)
        start = b'{"content": "'
        self.wfile.write(b"%x\r\n" % len(start) + start + b"\r\n")
        for _ in range(FLOOD_BYTES // len(chunk)):
            if self.server.closing.is_set():
                return
            self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")

    def _redirect(self, body: bytes) -> None:
        """A redirect whose body looks like an answer (taken as one, it would complete with it)."""
        upstream = self.server.upstream
        payload = self._passed_on(body)[1] if upstream is not None else json.dumps({"tokens": [1, 2]}).encode()
        self._answer(302, payload, {"Location": "http://127.0.0.1:9/elsewhere"})

    def _rows(self, body: bytes) -> None:
        """The server's real answer followed by `EXTRA_ROWS` more probability rows, each as short as its protocol
        allows (about 1 MB in all): a row costs a reader that keeps it the vocabulary's size."""
        status, payload = self._passed_on(body)
        answer = json.loads(payload)
        if status == 200:
            entry = {"id": 0, "logprob": 0.0, "top_logprobs": []}
            if "completion_probabilities" in answer:
                answer["completion_probabilities"] += [entry] * EXTRA_ROWS
            else:
                logprobs = answer["choices"][0]["logprobs"]
                if logprobs.get("content"):
                    logprobs["content"] += [entry] * EXTRA_ROWS
                else:
                    padding = {"tokens": "x", "top_logprobs": {}, "token_logprobs": 0.0, "text_offset": 0}
                    for key, value in padding.items():
                        logprobs[key] = (logprobs.get(key) or []) + [value] * EXTRA_ROWS
            payload = json.dumps(answer, separators=(",", ":")).encode()
        self._answer(status, payload)

    def log_message(self, *args):
        pass


def _decoding(path: str, body: bytes) -> bool:
    """A completion request of the decoding's, not connect's probe (which asks for 2 tokens)."""
    if path not in COMPLETIONS:
        return False
    asked = json.loads(body)
    return max(asked.get("n_predict", 0), asked.get("max_tokens", 0)) > 2


@contextlib.contextmanager
def hostile_server(mode: str, upstream: str | None = None) -> Iterator[http.server.ThreadingHTTPServer]:
    """A server of `mode` (which may change while it runs) on a free loopback port (its `url`), hostile at once or,
    with an `upstream`, to the decoding's completion requests once its `hostile` event is set. Its `requests` are
    the paths asked."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    server.mode, server.upstream, server.requests = mode, upstream, []
    server.closing, server.hostile = threading.Event(), threading.Event()
    if upstream is None:
        server.hostile.set()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()
