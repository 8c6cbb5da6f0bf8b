"""The protocol layer under faults a well-behaved client never makes, driven with raw bytes (`harness/rpc_client.py`):
lying and huge `Content-Length`s, headers without an end, broken JSON, params that do not validate, requests out
of the lifecycle, text changes that cannot be applied; and a burst of requests, edits and cancellations.
Each wait is bounded, so a deaf server fails the test rather than hanging it."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from harness.rpc_client import TIMEOUT, RpcClient, SocketClient, document_params, position_params
from tests.test_hostile_input import peak_rss
from tests.test_server import SOURCE

pytestmark = pytest.mark.slow  # every test here runs a whole fimlsp serve

URI = "file:///work/example.py"
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, SERVER_NOT_INITIALIZED = -32700, -32600, -32602, -32002


def served(model, *args: str) -> RpcClient:
    return RpcClient("--model", str(model), "--device", "cpu", "--log-level", "info", *args)


def shut_down(client: RpcClient) -> int:
    """Shut the server down as a client should; its exit status."""
    assert "result" in client.response(client.request("shutdown"))
    client.notify("exit")
    return client.exit_status()


# ---------------------------------------------------------------------------------------------------- framing

@pytest.mark.parametrize("length_error", [5, -5])
def test_a_lying_content_length_costs_no_later_message(tiny_model_path, length_error):
    with served(tiny_model_path) as client:
        client.initialize()
        lying = client.request_message("textDocument/completion", position_params(URI, 0, 0))
        following = client.request_message("textDocument/completion", position_params(URI, 1, 0))
        client.send_raw(client.frame(lying, length_error) + client.frame(following))
        assert "result" in client.response(following["id"])
        assert "result" in client.response(lying["id"])
        assert shut_down(client) == 0


def test_a_lying_content_length_is_answered_before_the_next_message_comes(tiny_model_path):
    """A length 5 bytes too many: the body's JSON has ended, so it is answered without waiting for 5 more bytes."""
    with served(tiny_model_path) as client:
        client.initialize()
        lying = client.request_message("textDocument/completion", position_params(URI, 0, 0))
        client.send(lying, 5)
        assert "result" in client.response(lying["id"])
        assert shut_down(client) == 0


def test_a_huge_content_length_is_not_allocated(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize()
        message = client.request_message("textDocument/completion", position_params(URI, 0, 0))
        client.send_raw(b"Content-Length: 1000000000000\r\n\r\n" + json.dumps(message).encode())
        assert "result" in client.response(message["id"])
        assert shut_down(client) == 0


def test_a_header_without_an_end_is_dropped_in_bounded_memory(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize()
        client.wait_for_model()
        before = peak_rss(client.process.pid)
        if before is None:
            pytest.skip("the server's peak memory is read from /proc/PID/status, which this system lacks")
        line = b"Content-Type: " + b"x" * (1 << 20)
        for _ in range(100):  # 100 MB without a line break
            client.send_raw(line)
        answer = client.response(client.request("textDocument/completion", position_params(URI, 0, 0)))
        assert "result" in answer
        error = client.wait_for(lambda message: "error" in message)
        assert error["id"] is None and error["error"]["code"] == PARSE_ERROR
        assert "header of more than" in error["error"]["message"]
        grown = peak_rss(client.process.pid) - before
        assert grown < 32 << 20, f"the server's peak grew by {grown / 2**20:.0f} MiB"
        assert shut_down(client) == 0


def test_malformed_json_gets_a_parse_error_and_the_next_request_an_answer(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize()
        client.send(b'{"jsonrpc": "2.0", "id": 99, "method": "shutdown", ]')
        error = client.wait_for(lambda message: "error" in message)
        assert error["id"] is None and error["error"]["code"] == PARSE_ERROR
        client.send(b"[1, 2]")
        error = client.wait_for(lambda message: message.get("error", {}).get("code") == INVALID_REQUEST)
        assert error["id"] is None
        assert shut_down(client) == 0


# ----------------------------------------------------------------------------------------------------- params

BAD_PARAMS = {
    "line -1": ("textDocument/completion", position_params(URI, -1, 0), "Position.line should be in range"),
    "line 2**31": ("textDocument/completion", position_params(URI, 2**31, 0), "but was 2147483648"),
    "position not an object": ("textDocument/completion", {"textDocument": {"uri": URI}, "position": 5},
                               "$.params.position"),
    "no context": ("textDocument/inlineCompletion", position_params(URI, 0, 0), "$.params.context"),
}


def test_params_that_do_not_validate_get_invalid_params(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize()
        for name, (method, params, field) in BAD_PARAMS.items():
            answer = client.response(client.request(method, params))
            error = answer.get("error")
            assert error and error["code"] == INVALID_PARAMS, (name, answer)
            assert field in error["message"] and "\n" not in error["message"], (name, error)
        assert shut_down(client) == 0
        stderr = b"".join(client.stderr).decode()
        assert "Traceback" not in stderr, stderr


MALFORMED_NOTIFICATIONS = [
    ("$/cancelRequest", {"id": [1]}),
    ("$/cancelRequest", {"id": {}}),
    ("$/cancelRequest", {"id": 1.5}),
    ("$/cancelRequest", {"id": None}),
    ("$/cancelRequest", {"id": True}),
    ("$/cancelRequest", [1]),
    ("$/setTrace", {"value": 5}),
    ("$/progress", {"token": [], "value": {}}),
    ("window/workDoneProgress/cancel", {"token": {"a": 1}}),
    ("textDocument/didClose", {"textDocument": {"uri": ["file:///x.py"]}}),
]


def test_malformed_dollar_notifications_are_ignored_and_the_server_lives(tiny_model_path):
    """`$/cancelRequest` with a list or an object as its id reached pygls' cancel handler as a dict key and ended
    the server (TypeError: unhashable type). Notifications get no answer: each is dropped with a warning."""
    with served(tiny_model_path) as client:
        client.initialize()
        for method, params in MALFORMED_NOTIFICATIONS:
            client.notify(method, params)
        assert client.wait_for_model() is not None
        assert client.process.poll() is None
        answers = [message for message in client.received if "id" in message and "method" not in message]
        assert len(answers) == 2, answers  # initialize's and fimlsp.modelStatus's, no other
        warnings = [params["message"] for params in client.notifications("window/logMessage")
                    if params["type"] == 2]
        assert sum("dropped" in warning for warning in warnings) >= len(MALFORMED_NOTIFICATIONS), warnings
        assert shut_down(client) == 0
        stderr = b"".join(client.stderr).decode()
        assert "Traceback" not in stderr, stderr


BAD_IDS = {"a list": [1], "an object": {}, "a number": 1.5, "null": None, "a boolean": True}


def test_requests_with_ids_that_are_not_integers_or_strings_get_invalid_request(tiny_model_path):
    """An id that cannot be an answer's is refused with -32600 (id null); a 5,000-digit id, which Python's
    JSON reader will not convert, is a parse error; neither ends the server."""
    with served(tiny_model_path) as client:
        client.initialize()
        for name, bad_id in BAD_IDS.items():
            client.send({"jsonrpc": "2.0", "id": bad_id, "method": "shutdown"})
            error = client.wait_for(lambda message: message.get("error", {}).get("code") == INVALID_REQUEST
                                    and name in message["error"]["message"])
            assert error["id"] is None
        client.send(b'{"jsonrpc": "2.0", "id": %s, "method": "shutdown"}' % (b"9" * 5000))
        error = client.wait_for(lambda message: message.get("error", {}).get("code") == PARSE_ERROR)
        assert error["id"] is None
        answer = client.response(client.request("textDocument/completion",
                                                {**position_params(URI, 0, 0), "workDoneToken": {}}))
        assert answer["error"]["code"] == INVALID_PARAMS and "work_done_token" in answer["error"]["message"]
        assert shut_down(client) == 0


# -------------------------------------------------------------------------------------------------- lifecycle

def test_a_request_before_initialize_gets_server_not_initialized(tiny_model_path):
    with served(tiny_model_path) as client:
        answer = client.response(client.request("textDocument/completion", position_params(URI, 0, 0)))
        assert answer["error"]["code"] == SERVER_NOT_INITIALIZED
        client.initialize()
        assert "result" in client.response(client.request("textDocument/completion", position_params(URI, 0, 0)))
        assert shut_down(client) == 0


def test_a_request_after_shutdown_gets_invalid_request(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize()
        assert "result" in client.response(client.request("shutdown"))
        answer = client.response(client.request("textDocument/completion", position_params(URI, 0, 0)))
        assert answer["error"]["code"] == INVALID_REQUEST
        client.notify("exit")
        assert client.exit_status() == 0


def test_exit_without_shutdown_exits_with_status_1(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize()
        client.notify("exit")
        assert client.exit_status() == 1


# ------------------------------------------------------------------------------------------------ text changes

def change(uri: str, version: int, *changes: dict) -> dict:
    return {"textDocument": {"uri": uri, "version": version}, "contentChanges": list(changes)}


def edit(start: tuple[int, int], end: tuple[int, int], text: str) -> dict:
    return {"range": {"start": {"line": start[0], "character": start[1]},
                      "end": {"line": end[0], "character": end[1]}}, "text": text}


def test_a_refused_change_is_said_and_no_suggestion_follows_until_the_full_text(tiny_model_path):
    with served(tiny_model_path) as client:
        client.initialize({"timeBudget": 20, "maxTokens": 8})
        client.wait_for_model()
        client.notify("textDocument/didOpen", document_params(URI, SOURCE))
        client.notify("textDocument/didChange", change(URI, 2, edit((-1, 0), (0, 0), "x = 1\n")))
        warning = client.wait_for(lambda message: message.get("method") == "window/showMessage")
        assert warning["params"]["type"] == 2 and "refused" in warning["params"]["message"]
        status = client.wait_for(lambda message: message.get("method") == "fimlsp/status"
                                 and message["params"]["uri"] == URI)
        assert not status["params"]["suggestion"] and "out of sync" in status["params"]["message"]

        client.notify("textDocument/didChange", change(URI, 3, edit((0, 0), (0, 0), "# ")))  # valid, but on what?
        answer = client.response(client.request("textDocument/completion", position_params(URI, 13, 8)))
        assert answer["result"]["items"] == []
        assert "out of sync" in client.request_statuses()[-1]["message"]

        client.notify("textDocument/didChange", change(URI, 4, {"text": SOURCE}))
        client.response(client.request("textDocument/completion", position_params(URI, 13, 8)))
        assert "out of sync" not in client.request_statuses()[-1]["message"]
        assert shut_down(client) == 0


# ------------------------------------------------------------------------------------------------------- load

def test_every_request_of_a_burst_with_edits_and_cancellations_is_answered(tiny_model_path):
    """300 completion requests with an edit between each and a cancellation of every third: each gets a result
    or an LSP error code (RequestCancelled), none hangs."""
    with served(tiny_model_path, "--time-budget", "0.5", "--max-tokens", "4") as client:
        client.initialize()
        client.wait_for_model()
        client.notify("textDocument/didOpen", document_params(URI, SOURCE))
        rng = random.Random(3)
        ids = []
        started = time.monotonic()
        for number in range(300):
            line = rng.randrange(18)
            client.notify("textDocument/didChange",
                          change(URI, number + 2, edit((line, 0), (line, 0), "")))
            method = "textDocument/inlineCompletion" if number % 2 else "textDocument/completion"
            params = position_params(URI, line, 0)
            if method == "textDocument/inlineCompletion":
                params["context"] = {"triggerKind": 2}
            ids.append(client.request(method, params))
            if number % 3 == 0:
                client.notify("$/cancelRequest", {"id": ids[rng.randrange(len(ids))]})
        for message_id in ids:
            answer = client.response(message_id, timeout=max(1.0, 120 - (time.monotonic() - started)))
            assert "result" in answer or isinstance(answer.get("error", {}).get("code"), int), answer
        answered = [message["id"] for message in client.received if "id" in message and "method" not in message]
        assert sorted(id_ for id_ in answered if id_ in set(ids)) == ids  # each once
        assert shut_down(client) == 0


# -------------------------------------------------------------------------------------------------------- tcp

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served_on_tcp(model):
    """`fimlsp serve --tcp` on a free loopback port, and its first client, connected once it listens."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "fimlsp", "serve", "--tcp", f"127.0.0.1:{port}", "--model",
                                str(model), "--device", "cpu"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                first = SocketClient("127.0.0.1", port)
                break
            except ConnectionRefusedError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()[-2000:]
                time.sleep(0.2)
        with first:
            yield process, port, first
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stderr.close()


def test_tcp_serves_one_client_and_refuses_a_second(tiny_model_path):
    """A second connection was served as if it were the first: the first client's answers went to it, and it
    got completions on the first one's documents without `initialize`. It is now told why and closed; the first
    client is served on; the process ends with the first client's session."""
    with served_on_tcp(tiny_model_path) as (process, port, first):
        first.initialize({"timeBudget": 20, "maxTokens": 4})
        first.wait_for_model()
        first.notify("textDocument/didOpen", document_params(URI, SOURCE))
        with SocketClient("127.0.0.1", port) as second:
            refusal = second.wait_for(lambda message: message.get("method") == "window/showMessage")
            assert refusal["params"]["type"] == 1 and "one client" in refusal["params"]["message"]
            assert second.closed_by_server()
            assert not [message for message in second.received if "id" in message]
        answer = first.response(first.request("textDocument/completion", position_params(URI, 13, 8)))
        assert "result" in answer
        assert "result" in first.response(first.request("shutdown"))
        first.notify("exit")
        assert process.wait(TIMEOUT) == 0
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT).close()
