"""Fuzz targets: the quotient API on arbitrary text, the server's document sync against a brute-force oracle, and
a real `fimlsp serve` under malformed JSON-RPC messages of every kind (seeded, bounded in count).

The example counts are small so that the suite stays fast; set `FIMLSP_FUZZ_EXAMPLES` to run every target
with that many examples instead, e.g.

    FIMLSP_FUZZ_EXAMPLES=100000 python -m pytest tests/test_fuzz.py

Hypothesis keeps the failures it finds in `.hypothesis/` and replays them first on the next run.
"""

from __future__ import annotations

import json
import os
import random
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fimlsp import quotient
from fimlsp.python.syntax import compiles
from fimlsp.server.documents import Documents
from fimlsp.server.positions import ENCODINGS
from harness.corpus import stdlib_text
from harness.rpc_client import RpcClient, document_params, position_params
from tests.oracles import compilable
from tests.test_protocol import shut_down
from tests.test_python_meaning import swallows_code
from tests.test_server import POSITIONS, SOURCE, URI

FUZZ_EXAMPLES = int(os.environ.get("FIMLSP_FUZZ_EXAMPLES", "0"))


def fuzz(default: int):
    """Hypothesis settings: `default` examples, or `FIMLSP_FUZZ_EXAMPLES` when it is set."""
    return settings(max_examples=FUZZ_EXAMPLES or default, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------------------------- the quotient API

# Pieces that reach the lexer's corners: line ends of every kind, form feeds, NUL, a lone surrogate, non-ASCII
# names, U+2028 (no line end in Python), string prefixes and quotes, continuations, brackets and keywords.
PIECES = [
    " ", "\t", "\f", "\n", "\r", "\r\n", "\x00", "\ud800", "\u2028", "\x85", "é", "😋", "\ufeff", "x", "_1", "0",
    "0x", "1e", "1.", ".", "..", "j", "(", ")", "[", "]", "{", "}", "'", '"', "'''", '"""', "f'", "rb'", "{x}",
    "\\", "\\\n", "#", ":", ",", ";", "=", "+", "*", "**", "->", ":=", "@", "!", "$", "?", "`", "if ", "else",
    "elif ", "def ", "class ", "return", "pass", "lambda", "async ", "await ", "match ", "case ", "    ",
]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.characters()), max_size=24).map("".join)
# Middles a user or a model may type: if one of these makes the file valid, the state before it was alive.
TAILS = ("", "\n", ")", "]", "'", '"', "pass\n", ":\n    pass\n")


@fuzz(300)
@given(TEXT, st.integers(0, 10_000), st.lists(TEXT, max_size=4))
def test_quotient_never_raises_and_complete_is_exact(text, cut, chunks):
    """Anything split anywhere and fed in any chunks: no exception, `complete` agrees with `ast.parse` (but where
    the middle would comment or quote the right context's code away: `swallows_code`), and a state is None only
    where no tail makes the file valid."""
    cut %= len(text) + 1
    left, right = text[:cut], text[cut:]
    state = quotient(left, right)
    fed = ""
    for chunk in chunks:
        if state is None:
            break
        assert state.complete == (compiles(left + fed + right) and not swallows_code(state)), (left, fed, right)
        state = state.feed(chunk)
        fed += chunk
    if state is None:
        assert not any(compiles(left + fed + tail + right) for tail in TAILS), (left, fed, right)
    else:
        assert state.complete == (compiles(left + fed + right) and not swallows_code(state)), (left, fed, right)


SIMPLE_STATEMENTS = [
    "x = 1", "y = (a,\n     b)", "s = 'a\\'b' \"c\" r'\\d'", "e = b'e' rb'\\x'", 'd = """doc\n  string"""',
    "z = [i for i in y if i]", "f(x, *a, k=1, **kw)", "pass", "import os.path as p", "from . import (a,\n  b)",
    "x += 1; y = 2", "t = 1if x else 2", "n = 0x1f + 1e-3j + 1_000 + .5", "g = lambda a, /, *b: a",
    "total = 1 + \\\n    2", "v = f'{x!r:>{w}}'", "del a[1:2, ::3]", "assert x, 'msg'", "return x", "yield",
    "raise E from e", "x: int = 0", "é = π = 1", "print(x)  # comment ( [",
]
HEADERS = ["if x:", "while x:", "for i in y:", "def f(a, b=1):", "class C(B):", "with a as b:", "async def g():",
           "try:"]
TRAILERS = {"if x:": "else:", "while x:": "else:", "for i in y:": "else:", "try:": "finally:"}


def _statement(children):
    """A compound statement: a header, a block of children, and the trailer a `try` needs (optional for others)."""
    return st.tuples(st.sampled_from(HEADERS), st.lists(children, min_size=1, max_size=3), st.booleans(),
                     st.lists(children, min_size=1, max_size=2)).map(_compound)


def _compound(parts):
    header, body, trailed, tail = parts
    lines = [(0, header)] + [(depth + 1, line) for statement in body for depth, line in statement]
    if header == "try:" or (trailed and header in TRAILERS):
        lines += [(0, TRAILERS[header])] + [(depth + 1, line) for statement in tail for depth, line in statement]
    return lines


STATEMENTS = st.recursive(st.sampled_from(SIMPLE_STATEMENTS).map(lambda line: [(0, line)]), _statement,
                          max_leaves=8)


@st.composite
def valid_modules(draw) -> str:
    """A module that CPython compiles, in one of many lexical styles: indentation unit, line ends, form feeds,
    blank and comment lines."""
    statements = [compilable(statement) for statement in draw(st.lists(STATEMENTS, min_size=1, max_size=4))]
    unit = draw(st.sampled_from(["    ", "\t", "  ", " ", "\t    "]))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    feeds = draw(st.booleans())
    lines = []
    for statement in statements:
        for depth, line in statement:
            lines.append(("\f" if feeds else "") + unit * depth + line)
            if draw(st.integers(0, 5)) == 0:
                lines.append(draw(st.sampled_from(["", "   ", "# note", "\t\t# deeper comment", "\f"])))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))
    return text.replace("\n", ending)


STDLIB_FILES = ["bisect.py", "colorsys.py", "secrets.py", "signal.py", "token.py", "_weakrefset.py"]


@st.composite
def stdlib_modules(draw) -> str:
    """A small standard-library module, with its line ends optionally changed (still a valid module)."""
    text = stdlib_text(draw(st.sampled_from(STDLIB_FILES)))
    return text.replace("\n", draw(st.sampled_from(["\n", "\r\n", "\r"])))


@fuzz(100)
@given(st.one_of(valid_modules(), stdlib_modules()), st.data())
def test_valid_modules_have_no_false_rejects(text, data):
    """For a valid module cut at any span, the quotient accepts the true middle fed in any chunks, and ends
    complete."""
    assert compiles(text), text
    start = data.draw(st.integers(0, len(text)), label="start")
    end = data.draw(st.integers(start, min(len(text), start + 300)), label="end")
    left, middle, right = text[:start], text[start:end], text[end:]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(middle)), max_size=6), label="chunk cuts"))
    state = quotient(left, right)
    assert state is not None, (left, right)
    for first, last in zip([0, *cuts], [*cuts, len(middle)]):
        state = state.feed(middle[first:last])
        assert state is not None, (left, middle[:last], right)
    assert state.complete, (left, middle, right)


# ----------------------------------------------------------------------------------- the server's documents

DOCUMENT_PIECES = ["a", "bc", " ", "\t", "\n", "\r", "\r\n", "\f", "\u2028", "\x85", "é", "€", "😋", "\ud800",
                   "\x00"]
DOCUMENT_TEXT = st.lists(st.sampled_from(DOCUMENT_PIECES), max_size=16).map("".join)


def oracle_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line's content, ending lines at \\n, \\r\\n and \\r only, one character at a time."""
    lines, start, index = [], 0, 0
    while index < len(text):
        if text[index] in "\r\n":
            lines.append((start, index))
            index += 2 if text.startswith("\r\n", index) else 1
            start = index
        else:
            index += 1
    return lines + [(start, len(text))]


def oracle_units(text: str, encoding: str) -> int:
    """The length of `text` in code units of a position encoding, by encoding it (lone surrogates too)."""
    if encoding == "utf-32":
        return len(text)
    data = text.encode("utf-16-le" if encoding == "utf-16" else "utf-8", "surrogatepass")
    return len(data) // 2 if encoding == "utf-16" else len(data)


def oracle_offset(text: str, line: int, character: int, encoding: str) -> int:
    """LSP's rules by brute force: a line past the end is the end of the document, a column past the line end is
    the line end, and a column inside a character is that character's start; negative numbers count as 0."""
    lines = oracle_lines(text)
    if line >= len(lines):
        return len(text)
    start, end = lines[max(0, line)]
    fitting = [offset for offset in range(start, end + 1)
               if oracle_units(text[start:offset], encoding) <= max(0, character)]
    return max(fitting)


def oracle_apply(text: str, change, encoding: str) -> str:
    if change.range is None:
        return change.text
    start, end = change.range.start, change.range.end
    first = oracle_offset(text, start.line, start.character, encoding)
    last = oracle_offset(text, end.line, end.character, encoding)
    first, last = min(first, last), max(first, last)
    return text[:first] + change.text + text[last:]


def _position(line: int, character: int):
    return SimpleNamespace(line=line, character=character)


@st.composite
def changes(draw):
    """A content change: mostly a range, with positions in, at the edge of and past the document (or negative,
    which a lenient server clamps), sometimes the whole document."""
    text = draw(DOCUMENT_TEXT)
    if draw(st.integers(0, 9)) == 0:
        return SimpleNamespace(range=None, text=text)
    coordinate = st.one_of(st.integers(0, 6), st.integers(-2, 40))
    start = _position(draw(coordinate), draw(coordinate))
    end = _position(draw(coordinate), draw(coordinate))
    return SimpleNamespace(range=SimpleNamespace(start=start, end=end), text=text)


@fuzz(400)
@given(DOCUMENT_TEXT, st.sampled_from(ENCODINGS), st.data())
def test_incremental_changes_match_the_oracle(text, encoding, data):
    """Random sequences of didChange edits, batched as a client sends them, give the oracle's text."""
    documents = Documents()
    documents.open("file:///fuzz.py", text, 1, "python")
    expected = text
    for version in range(2, 2 + data.draw(st.integers(1, 4), label="batches")):
        batch = data.draw(st.lists(changes(), min_size=1, max_size=3), label="changes")
        for change in batch:
            expected = oracle_apply(expected, change, encoding)
        document = documents.change("file:///fuzz.py", version, batch, encoding)
        assert document.text == expected, (text, batch)
        assert document.version == version


def test_the_oracle_agrees_with_lsp_examples():
    """The oracle itself, on the cases the protocol spells out."""
    text = "a😋b\r\ncé\rz"
    assert oracle_lines(text) == [(0, 3), (5, 7), (8, 9)]
    assert oracle_offset(text, 0, 3, "utf-16") == 2 and oracle_offset(text, 0, 2, "utf-16") == 1
    assert oracle_offset(text, 0, 5, "utf-8") == 2 and oracle_offset(text, 1, 99, "utf-8") == 7
    assert oracle_offset(text, 7, 0, "utf-32") == len(text)


# ------------------------------------------------------------------------------------ the server's protocol

FUZZ_URI = "file:///work/fuzz.py"  # the malformed messages' document; the valid requests use test_server's
NOTEBOOK = {"uri": "file:///work/fuzz.ipynb", "notebookType": "jupyter-notebook", "version": 1, "cells": []}
# Valid params of every method the server registers, and of the `$/` notifications: the malformed messages are
# made from these. `exit`, and `shutdown` with a usable id, are never sent malformed: valid, they would end it.
TEMPLATES = {
    "initialize": {"processId": 1, "rootUri": "file:///work", "capabilities": {"window": {"workDoneProgress": True}}},
    "initialized": {},
    "shutdown": None,
    "exit": None,
    "textDocument/didOpen": {"textDocument": {"uri": FUZZ_URI, "languageId": "python", "version": 1,
                                              "text": "x = 1\n"}},
    "textDocument/didChange": {"textDocument": {"uri": FUZZ_URI, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "text": "y"}]},
    "textDocument/didClose": {"textDocument": {"uri": FUZZ_URI}},
    "textDocument/completion": {"textDocument": {"uri": FUZZ_URI}, "position": {"line": 0, "character": 1}},
    "textDocument/inlineCompletion": {"textDocument": {"uri": FUZZ_URI}, "position": {"line": 0, "character": 1},
                                      "context": {"triggerKind": 1}},
    "workspace/didChangeConfiguration": {"settings": {"fimlsp": {"maxTokens": 4}}},
    "workspace/executeCommand": {"command": "fimlsp.modelStatus", "arguments": []},
    "workspace/didChangeWorkspaceFolders": {"event": {"added": [], "removed": []}},
    "notebookDocument/didOpen": {"notebookDocument": NOTEBOOK, "cellTextDocuments": []},
    "notebookDocument/didChange": {"notebookDocument": {"uri": NOTEBOOK["uri"], "version": 2}, "change": {}},
    "notebookDocument/didClose": {"notebookDocument": {"uri": NOTEBOOK["uri"]}, "cellTextDocuments": []},
    "window/workDoneProgress/cancel": {"token": "fuzz-token"},
    "$/setTrace": {"value": "off"},
    "$/cancelRequest": {"id": "fuzz-no-such-request"},
    "$/progress": {"token": "fuzz-token", "value": {"kind": "end"}},
}
NEVER_VALID = {"initialize", "shutdown", "exit"}  # sent only in forms no server may take
NULLABLE = {"processId", "rootUri"}  # fields whose null is valid
UNKNOWN_METHODS = ["fuzz/unknown", "$/fuzz", "textDocument/hover", "", "$/", "textDocument/completion/", "é"]


def nested(depth: int, leaf=0):
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


WRONG_VALUES = [None, True, False, 0, -1, 2**31, 2**64, 10**30, 1.5, -0.0, 1e308, "", "x", "\ud800", "é" * 1000,
                [], [1], [[[]]], [None] * 50, {}, {"a": 1}, {"uri": 5}, nested(20), nested(400), nested(900)]
BAD_IDS = [[1], {}, {"id": 1}, 1.5, None, True, False, [[]], nested(50)]


def json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def field_paths(value, path=()):
    """Every place in a params value a field's value sits at, nested ones included."""
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, list):
        children = enumerate(value)
    else:
        return
    for key, child in children:
        yield (*path, key)
        yield from field_paths(child, (*path, key))


def replaced(value, path, new):
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


def removed(value, path):
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return copy


def wrong_params(rng: random.Random, method: str):
    """(kind, params) with one field of a wrong JSON type, one field missing, or params that are no object."""
    params = TEMPLATES[method]
    paths = list(field_paths(params))
    choice = rng.randrange(3)
    if paths and choice == 0:
        path = rng.choice(paths)
        current = params
        for key in path:
            current = current[key]
        allowed = {json_type(current)} | ({"null"} if path[-1] in NULLABLE else set())
        return "wrong type", replaced(params, path, rng.choice(
            [value for value in WRONG_VALUES if json_type(value) not in allowed]))
    if paths and choice == 1 and method not in NEVER_VALID:
        return "missing field", removed(params, rng.choice(paths))
    return "params not an object", rng.choice([[1], "params", 5, True, nested(30)] +
                                              ([] if method in NEVER_VALID or params is None else [None]))


def malformed_message(rng: random.Random, number: int):
    """(kind, JSON value, id or None): a message of one of the protocol's kinds that no server may take as
    valid, and the id an answer to it must have (None where it gets none, or one with id null)."""
    method = rng.choice(sorted(TEMPLATES))
    answer_id = f"fuzz-{number}" if rng.random() < 0.5 else 2**64 + number
    kind = rng.choice(["params", "params", "params", "id", "jsonrpc", "method", "unknown method", "batch",
                       "not an object", "response", "huge id"])
    if kind == "params" and method not in ("shutdown", "exit"):
        what, params = wrong_params(rng, method)
        as_request = rng.random() < 0.5
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        return f"params: {what}", ({**message, "id": answer_id} if as_request else message), \
            (answer_id if as_request else None)
    if kind in ("params", "id"):
        return "id", {"jsonrpc": "2.0", "id": rng.choice(BAD_IDS), "method": method,
                      "params": TEMPLATES[method]}, None
    if kind == "jsonrpc":
        message = {"id": answer_id, "method": method, "params": TEMPLATES[method]}
        version = rng.choice([None, "1.0", 2.0, 2, ["2.0"]])
        return kind, (message if version is None else {**message, "jsonrpc": version}), answer_id
    if kind == "method":
        return kind, {"jsonrpc": "2.0", "id": answer_id, "method": rng.choice([None, 5, [], {}, True, nested(5)])}, \
            answer_id
    if kind == "unknown method":
        as_request = rng.random() < 0.5
        message = {"jsonrpc": "2.0", "method": rng.choice(UNKNOWN_METHODS), "params": rng.choice(WRONG_VALUES[:20])}
        return kind, ({**message, "id": answer_id} if as_request else message), (answer_id if as_request else None)
    if kind == "batch":
        batch = [{"jsonrpc": "2.0", "id": answer_id, "method": "workspace/executeCommand",
                  "params": TEMPLATES["workspace/executeCommand"]}] * rng.randrange(3) + [rng.choice(WRONG_VALUES)]
        return kind, batch, None
    if kind == "not an object":
        return kind, rng.choice(WRONG_VALUES + [[{"jsonrpc": "2.0"}]]), None
    if kind == "response":
        return kind, {"jsonrpc": "2.0", "id": rng.choice([answer_id, *BAD_IDS]),
                      rng.choice(["result", "error"]): rng.choice(WRONG_VALUES)}, None
    # an id with more digits than Python's JSON reader converts: a parse error, answered with id null
    return kind, f'{{"jsonrpc": "2.0", "id": {"9" * 5000}, "method": "{method}"}}'.encode(), None


MALFORMED = 2400
VALID_EVERY = 12  # malformed messages between two valid requests
WARM_UP = 300  # malformed messages before the memory that the end is compared with is read


@pytest.mark.slow
def test_the_server_survives_malformed_messages_of_every_kind(tiny_model_path):
    """2,400 malformed messages of every kind the protocol has, made from every method the server registers,
    interleaved with valid requests, against one `fimlsp serve`: every valid request is answered with a result,
    every malformed request that has a usable id with an answer, the process lives, and its resident memory
    ends within 10% of what it was after a warm-up."""
    from fimlsp.server.config import Settings
    from fimlsp.server.server import build_server

    features = build_server(Settings()).protocol.fm
    assert set(features.features) | set(features.builtin_features) <= set(TEMPLATES), "a method without a template"
    rng = random.Random(43)
    kinds: dict[str, int] = {}
    answers_due: list = []
    with RpcClient("--model", str(tiny_model_path), "--device", "cpu", "--time-budget", "0.5", "--max-tokens", "4",
                   "--log-level", "warning") as client:
        client.initialize()
        client.wait_for_model()
        client.notify("textDocument/didOpen", document_params(URI, SOURCE))
        baseline = None
        for number in range(MALFORMED):
            kind, message, answer_id = malformed_message(rng, number)
            kinds[kind] = kinds.get(kind, 0) + 1
            client.send(message if isinstance(message, bytes) else json.dumps(message).encode())
            if answer_id is not None:
                answers_due.append(answer_id)
            if number % VALID_EVERY == VALID_EVERY - 1:
                valid_request(client, number // VALID_EVERY)
            if number == WARM_UP:
                baseline = client.resident_memory()
        for answer_id in answers_due:
            client.response(answer_id)
        assert client.process.poll() is None
        valid_request(client, 0)
        after = client.resident_memory()
        assert shut_down(client) == 0
        stderr = b"".join(client.stderr).decode()
        assert "Traceback" not in stderr, stderr[-3000:]
    assert min(kinds.values()) >= 100 and len(kinds) == 11, kinds
    if baseline is not None:
        assert after <= baseline * 1.1, f"resident memory grew from {baseline / 2**20:.0f} to {after / 2**20:.0f} MiB"


def valid_request(client: RpcClient, number: int) -> None:
    """A valid request, answered with a result: the model's status, or a completion on the open document."""
    if number % 4:
        answer = client.response(client.request("workspace/executeCommand", {"command": "fimlsp.modelStatus"}))
    else:
        params = position_params(URI, *POSITIONS[number % len(POSITIONS)])
        if number % 8:
            params["context"] = {"triggerKind": 1}
        method = "textDocument/inlineCompletion" if number % 8 else "textDocument/completion"
        answer = client.response(client.request(method, params))
    assert "result" in answer, answer
