"""What `fimlsp/status` tells a client as fields, not words: the model's status as `model` (what
`fimlsp.modelStatus` answers), and for each answer whether it came from the last suggestion (`cached`), how the
constraint's recognizer was had (`recognizer`) and how long the request waited for the model's load
(`timings.loading`). A real `fimlsp serve` with the shipped model (its GGUF, greedy: the default engine)."""

from __future__ import annotations

import pytest

from harness.rpc_client import RpcClient, document_params, position_params

pytestmark = pytest.mark.slow

URI = "file:///work/area.py"
TEXT = "def area(width, height):\n    return width * height\n\n\ntotal = \n"
CURSOR = (4, len("total = "))
INVOKED = 1
# No decoding here may be cut short by a busy machine, so that the answers are the model's greedy middles.
OPTIONS = {"timeBudget": 60, "names": "off"}


def ask(client: RpcClient, line: int, character: int) -> tuple[list[str], dict]:
    """The inline completion's middles at (line, character) and the status that followed it."""
    answer = client.response(client.request("textDocument/inlineCompletion", {
        **position_params(URI, line, character), "context": {"triggerKind": INVOKED}}))["result"]
    return [item["insertText"] for item in answer["items"]], client.request_statuses()[-1]


def type_at(client: RpcClient, line: int, character: int, text: str, version: int) -> None:
    edit = {"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}},
            "text": text}
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version},
                                             "contentChanges": [edit]})


def model_statuses(client: RpcClient) -> list[dict]:
    return [params["model"] for params in client.notifications("fimlsp/status") if params["uri"] is None]


def mapped_libraries(pid: int) -> set[str]:
    """The file names of the shared libraries the process has mapped (Linux's /proc)."""
    with open(f"/proc/{pid}/maps") as maps:
        return {line.split()[-1].rpartition("/")[2] for line in maps if ".so" in line}


def test_the_model_status_goes_to_the_client_as_a_field_with_a_request_made_while_it_loads():
    """No model named: the shipped model runs as its GGUF through llama.cpp, and torch is never loaded."""
    with RpcClient() as client:
        client.initialize(OPTIONS)
        client.notify("textDocument/didOpen", document_params(URI, TEXT))
        middles, status = ask(client, *CURSOR)  # sent at once: it waits for the model
        loading, *_, ready = model_statuses(client)
        answered = client.wait_for_model()
        libraries = mapped_libraries(client.process.pid)
    assert any(name.startswith("libllama") for name in libraries), sorted(libraries)
    assert not any(name.startswith(("libtorch", "libc10")) for name in libraries), sorted(libraries)
    assert loading == {"ready": False, "model": None, "error": None, "seconds": None,
                       "message": "loading model the default model…"}
    assert ready == answered and ready["ready"] and ready["error"] is None and ready["seconds"] > 0
    assert ready["model"].endswith("default.gguf on cpu")
    assert middles and status["suggestion"] and not status["cached"] and status["recognizer"] == "built"
    assert 0 < status["timings"]["loading"] <= status["timings"]["waiting"]


def test_typing_the_start_of_a_suggestion_is_answered_from_it_and_the_status_says_so():
    with RpcClient() as client:
        client.initialize(OPTIONS)
        assert client.wait_for_model()["ready"]
        client.notify("textDocument/didOpen", document_params(URI, TEXT))
        (middle,), first = ask(client, *CURSOR)
        assert len(middle) > 1 and "\n" not in middle[:1], middle
        type_at(client, *CURSOR, middle[0], version=2)
        (rest,), second = ask(client, CURSOR[0], CURSOR[1] + 1)
        type_at(client, CURSOR[0], CURSOR[1] + 1, "\n", version=3)
        _, third = ask(client, CURSOR[0] + 1, 0)  # not the suggestion's rest: decoded, the recognizer extended
    assert rest == middle[1:]
    assert (first["cached"], first["recognizer"]) == (False, "built")
    assert (second["cached"], second["recognizer"]) == (True, None)
    assert "loading" not in first["timings"] and not set(second["timings"]) & {"setup", "prompt", "tokens"}
    assert (third["cached"], third["recognizer"]) == (False, "extended")
