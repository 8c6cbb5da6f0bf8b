"""In-process checks of the protocol layer: the frame reader on its own, and text synchronisation through the
protocol's dispatch (the raw-bytes tests over a real pipe are in `tests/test_protocol.py`)."""

from __future__ import annotations

import asyncio
import json
import random

from lsprotocol import types

from fimlsp.server.completion import NoSuggestion
from fimlsp.server.config import Settings
from fimlsp.server.server import build_server
from fimlsp.server.transport import BadFrame, FrameReader, Message, Skipped, dispatch
from harness.rpc_client import document_params
from tests.test_protocol import URI, change, edit


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
