"""The protocol layer under faults a well-behaved client never makes, driven with raw bytes (`tests/rpc_client.py`):
lying and huge `Content-Length`s, headers without an end, broken JSON, params that do not validate, requests out
of the lifecycle, text changes that cannot be applied; and a burst of requests, edits and cancellations.
Each wait is bounded, so a deaf server fails the test rather than hanging it."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest
from lsprotocol import types

from fimlsp.server.completion import NoSuggestion
from fimlsp.server.config import Settings
from fimlsp.server.server import build_server
from fimlsp.server.transport import BadFrame, FrameReader, Message, Skipped, dispatch
from tests.rpc_client import RpcClient, document_params, position_params
from tests.test_hostile_input import peak_rss
from tests.test_server import SOURCE

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


def test_frame_reader_takes_messages_split_anywhere_and_resynchronises():
    """Sans-IO: the same stream, fed byte by byte or whole, gives the same messages, junk and lies included."""
    messages = [{"jsonrpc": "2.0", "id": n, "method": "m", "params": {"text": "é\r\n" * n}} for n in range(4)]
    bodies = [json.dumps(message, ensure_ascii=False).encode() for message in messages]
    stream = (b"Content-Length: %d\r\n\r\n" % len(bodies[0]) + bodies[0]
              + b"junk between messages\r\n"
              + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n"
              % (len(bodies[1]) + 7) + bodies[1]
              + b"Content-Length: %d\r\n\r\n" % (len(bodies[2]) - 3) + bodies[2]
              + b"Content-Length: 12\r\n\r\n{not json!!}"
              + b"Content-Length: %d\r\n\r\n" % len(bodies[3]) + bodies[3])
    for size in (1, 7, len(stream)):
        reader = FrameReader()
        events = [event for start in range(0, len(stream), size) for event in reader.feed(stream[start:start + size])]
        assert [event.value for event in events if isinstance(event, Message)] == messages
        assert sum(isinstance(event, BadFrame) for event in events) == 1
        assert any(isinstance(event, Skipped) and "outside any message" in event.reason for event in events)


def test_frame_reader_memory_is_bounded_by_its_limits():
    reader = FrameReader(max_header=100, max_content=1000)
    events = reader.feed(b"Content-Length: 5\r\n\r\n" + b"[" * 5000)
    assert any(isinstance(event, BadFrame) for event in events)
    events = reader.feed(b"Content-Length: 2\r\n\r\n{}")
    assert [event.value for event in events if isinstance(event, Message)] == [{}]
    reader.feed(b"x" * 100_000)
    assert len(reader._buffer) < 100


# ----------------------------------------------------------------------------------------------------- params

BAD_PARAMS = {
    "line -1": ("textDocument/completion", position_params(URI, -1, 0), "$.params.position.line"),
    "line 2**31": ("textDocument/completion", position_params(URI, 2**31, 0), "$.params.position.line"),
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
        status = client.wait_for(lambda message: message.get("method") == "fimlsp/status")
        assert not status["params"]["suggestion"] and "out of sync" in status["params"]["message"]

        client.notify("textDocument/didChange", change(URI, 3, edit((0, 0), (0, 0), "# ")))  # valid, but on what?
        answer = client.response(client.request("textDocument/completion", position_params(URI, 13, 8)))
        assert answer["result"]["items"] == []
        assert "out of sync" in client.notifications("fimlsp/status")[-1]["message"]

        client.notify("textDocument/didChange", change(URI, 4, {"text": SOURCE}))
        client.response(client.request("textDocument/completion", position_params(URI, 13, 8)))
        assert "out of sync" not in client.notifications("fimlsp/status")[-1]["message"]
        assert shut_down(client) == 0


REFUSED_CHANGES = [
    edit((-1, 0), (0, 0), "x"),
    edit((0, 0), (2**31, 0), "x"),
    {"range": {"start": {"line": 0, "character": 0}}, "text": "x"},
    {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}},
    {"range": 7, "text": "x"},
]


def test_documents_never_differ_silently():
    """Random edits sent in-process, some of which the server cannot apply (the client's text changes, the
    server's cannot follow): after each, the server's copy equals the client's, or the server has said so (a
    warning when it fell out of sync) and offers nothing for it; a full text brings it back."""
    sent: list[dict] = []

    class Writer:
        def write(self, data: bytes) -> None:
            sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

        def close(self) -> None:
            pass

    async def session() -> None:
        server = build_server(Settings())
        protocol = server.protocol
        protocol.set_writer(Writer())
        protocol.initialize_received = True  # `initialize` itself would start the client's log forwarding
        text = "a = 1\nb = 2\n"
        dispatch(protocol, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": document_params(URI, text)})
        rng = random.Random(7)
        told, refused = False, 0
        for version in range(2, 300):
            del sent[:]
            lines = text.split("\n")
            line = rng.randrange(len(lines))
            column = rng.randrange(len(lines[line]) + 1)
            offset = sum(len(each) + 1 for each in lines[:line]) + column
            insert = rng.choice(["x", "\n", "()", "é"])
            if rng.random() < 0.15:
                changes, refused = [rng.choice(REFUSED_CHANGES)], refused + 1
            elif rng.random() < 0.1:
                changes, insert, offset = [{"text": text}], "", 0
            else:
                changes = [edit((line, column), (line, column), insert)]
            text = text[:offset] + insert + text[offset:]
            dispatch(protocol, {"jsonrpc": "2.0", "method": "textDocument/didChange",
                                "params": change(URI, version, *changes)})
            document = server.documents.get(URI)
            told = told or any(message.get("method") == "window/showMessage" for message in sent)
            if document.text != text:
                assert told and document.sync_problem is not None, version
            if document.sync_problem is None:
                told = False
            else:
                outcome = await server.suggest(URI, types.Position(line=0, character=0), True)
                assert isinstance(outcome, NoSuggestion) and "out of sync" in outcome.reason
        assert refused > 10
        server.engine.shutdown()

    asyncio.run(session())


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
