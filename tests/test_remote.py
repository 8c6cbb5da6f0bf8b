"""The server backend (`fimlsp.model.remote`) against real llama.cpp servers serving the shipped model exported to
GGUF, started by the tests on 127.0.0.1: the Python package's `python -m llama_cpp.server` (OpenAI-compatible API)
and llama.cpp's own `llama-server` (its `/completion` API, and its OpenAI-compatible one). `llama-server` is built by
`tests/install-llama-server.sh`, which `.ci/run` runs; without it its tests fail under CI and are skipped
elsewhere."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from lsprotocol import types

from fimlsp.decoding import DecodingOptions, complete_middles
from fimlsp.decoding.steering import UNTIMED_SEARCH_BUDGET
from fimlsp.model import ModelError
from fimlsp.model.backend import FimModel, PromptPass, Session, Snippet
from fimlsp.model.remote import RemoteModel, connect
from fimlsp.model.server_vocabulary import PROBE
from fimlsp.syntax_trees import parsed
from fimlsp.weights import default_model_path
from harness.corpus import STDLIB, split, stdlib_cuts
from harness.llama_server import (INSTALL_LLAMA_SERVER, LLAMA_CPP_ENGINE, LLAMA_SERVER, PYTHON_ENGINE, free_port,
                                  llama_server)
from harness.rpc_client import RpcClient, document_params, position_params
from tests.hostile_server import DRIP, FLOOD, REDIRECT, ROWS, STALL, hostile_server

ROOT = Path(__file__).resolve().parent.parent


def fimlsp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fimlsp", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})


API = {PYTHON_ENGINE: "openai", LLAMA_CPP_ENGINE: "llamacpp"}  # the protocol fimlsp detects on each


@pytest.fixture(scope="module", params=[pytest.param(name, marks=pytest.mark.slow) for name in API])
def engine(request):
    if request.param == LLAMA_CPP_ENGINE and not LLAMA_SERVER.exists():
        message = f"llama-server is not built (run {INSTALL_LLAMA_SERVER.relative_to(ROOT)})"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return request.param


@pytest.fixture(scope="module")
def server_folder(tmp_path_factory, engine):
    return tmp_path_factory.mktemp(engine)


@pytest.fixture(scope="module")
def server(server_folder, engine):
    with llama_server(server_folder, engine) as url:
        yield url


@pytest.fixture(scope="module")
def model(server):
    connected = connect(server)
    yield connected
    connected.close()


def test_cli_completes_stdlib_cuts_through_the_server_in_fewer_round_trips_than_tokens(server, engine):
    steps = round_trips = 0
    for path, line, column in stdlib_cuts(3):
        done = fimlsp("complete", f"{path}:{line}:{column}", "--model-server", server, "--json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        left, right = split(path, line, column)
        parsed(left + result["middle"] + right)
        assert result["guarantee"] == "file"
        assert result["server"]["api"] == API[engine]
        steps += result["server"]["steps"]
        round_trips += result["server"]["round_trips"]
    assert 0 < round_trips < steps  # runs answered steps without a request: speculation works


@pytest.mark.slow
@pytest.mark.parametrize("engine", [LLAMA_CPP_ENGINE], indirect=True)
def test_llama_servers_openai_api_gives_the_middles_of_its_own_api(server):
    """llama-server answers its OpenAI-compatible API with its own kind of entries (`logprobs.content`, ids and
    log-probabilities): read as such, both APIs give the same greedy middles."""
    native, openai = connect(server), connect(server, protocol="openai")
    try:
        assert (native.protocol, openai.protocol) == ("llamacpp", "openai")
        options = DecodingOptions(max_tokens=32, attempts=1, search_budget=20)
        for path, line, column in stdlib_cuts(3, seed=2):
            left, right = split(path, line, column)
            by_native, by_openai = (complete_middles(each, left, right, options)[0] for each in (native, openai))
            assert by_native.valid and by_native.middle == by_openai.middle, (path, line, by_native, by_openai)
            parsed(left + by_native.middle + right)
    finally:
        native.close()
        openai.close()


def test_the_vocabulary_may_come_from_the_gguf_file_the_server_runs(server, server_folder):
    gguf = server_folder / "default.gguf"
    path, line, column = stdlib_cuts(2, seed=5)[1]
    done = fimlsp("complete", f"{path}:{line}:{column}", "--model-server", server, "--model", str(gguf), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["model"] == str(gguf) and result["guarantee"] == "file"
    left, right = split(path, line, column)
    parsed(left + result["middle"] + right)
    from_folder, from_gguf = connect(server), connect(server, gguf)
    assert from_gguf.token_bytes == from_folder.token_bytes and from_gguf.stop_ids == from_folder.stop_ids
    assert from_gguf.encode(left[-2000:]) == from_folder.encode(left[-2000:])
    from_folder.close()
    from_gguf.close()


def test_speculative_rows_are_the_servers_next_positions(model):
    """Each step that takes the server's token is answered by the run's next row without a request, and that row
    ranks first the token the server took there (greedy): the rows line up with the positions."""
    left, right = split(*stdlib_cuts(1, seed=3)[0])
    prompt, _heal = model.healed_prompt(left, right, 64, blanks=" \t\f")
    first = model.prompt_pass(prompt)
    run = first._run()
    taken = [next(iter(ids)) for ids in run.taken]
    assert len(taken) >= 4 and all(len(ids) == 1 for ids in run.taken[:4])
    assert np.argmax(first.log_probs) == taken[0]
    session = first.session()
    trips = model.round_trips
    for position, token in enumerate(taken[:-1], 1):
        row = session.step([token])[0]
        assert np.argmax(row) == taken[position]
    assert model.round_trips == trips


def test_another_token_than_the_servers_asks_again_from_it(model):
    left, right = split(*stdlib_cuts(1, seed=4)[0])
    prompt = model.prompt(left, right, 64)
    first = model.prompt_pass(prompt)
    server_token = next(iter(first._run().taken[0]))
    other = next(token for token in np.argsort(-first.log_probs) if token != server_token)
    trips = model.round_trips
    row = first.session().step([int(other)])[0]
    assert model.round_trips == trips + 1
    assert np.allclose(row[np.isfinite(row)], model.run(prompt, [int(other)], 1).rows[0][np.isfinite(row)],
                       atol=1e-2)


def test_one_candidate_a_position_still_gives_valid_middles(server):
    """The sparsest rows a server gives (its own token only): decoding picks among them, and where none is valid
    the steered finish or the fallback ends the middle; it never fails or loops."""
    sparse = connect(server)
    sparse.top_logprobs = 1
    try:
        for path, line, column in stdlib_cuts(3, seed=1):
            left, right = split(path, line, column)
            result = complete_middles(sparse, left, right, DecodingOptions(max_tokens=48))[0]
            assert result.valid, (path, line, column, result)
            parsed(left + result.middle + right)
    finally:
        sparse.close()


class _NoCandidates(FimModel):
    """The shipped vocabulary with rows that rank no token at all: what a text-prompt server leaves where the
    tokens taken end inside a character."""

    def __init__(self, vocabulary: RemoteModel):
        super().__init__(vocabulary.format, vocabulary.order, vocabulary.token_bytes, vocabulary.stop_ids,
                         vocabulary.context_window, "no candidates", "nowhere")
        self.vocabulary = vocabulary

    def encode(self, text):
        return self.vocabulary.encode(text)

    def control_id(self, piece):
        return self.vocabulary.control_id(piece)

    def prompt_pass(self, ids, shared=False, deadline=None):
        return _NoCandidatesPass(len(self.token_bytes))


class _NoCandidatesPass(PromptPass, Session):
    def __init__(self, size):
        self.log_probs, self.seconds = np.full(size, -np.inf, dtype=np.float32), 0.0

    def session(self, rows=1):
        return self

    def step(self, tokens):
        return [self.log_probs for _ in tokens]

    def keep(self, rows):
        pass


def test_rows_without_candidates_end_in_a_valid_fallback(model):
    left, right = "def f(x):\n    return max(x, ", "\n"
    result = complete_middles(_NoCandidates(model), left, right, DecodingOptions())[0]
    assert result.valid and result.stop == "no_candidate"
    assert result.candidates_tried == 0  # a token the engine did not rank is never tried
    parsed(left + result.middle + right)


def test_a_server_that_tokenizes_otherwise_is_refused(server, tmp_path):
    folder = default_model_path()
    for name in ("config.json", "fim.json", "tokenizer_config.json"):
        shutil.copy(folder / name, tmp_path / name)
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocabulary = tokenizer["model"]["vocab"]
    names = {number: name for name, number in vocabulary.items()}
    first, second = connect(server).encode(PROBE)[:2]  # two tokens of the probe trade ids
    vocabulary[names[first]], vocabulary[names[second]] = second, first
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    with pytest.raises(ModelError, match="tokenizes differently"):
        connect(server, tmp_path)


def test_no_server_is_one_line_and_exit_status_2():
    url = f"http://127.0.0.1:{free_port()}"
    done = fimlsp("complete", f"{STDLIB / 'textwrap.py'}:10:1", "--model-server", url)
    assert done.returncode == 2
    assert done.stderr.strip() == f"fimlsp complete: error: no server at {url} (connection refused)"


class _NoLogProbabilities(http.server.BaseHTTPRequestHandler):
    """A server that completes without log-probabilities (the error path only)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/completions":
            self.send_error(404)
            return
        body = json.dumps({"choices": [{"text": "x", "index": 0, "logprobs": None, "finish_reason": "length"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    do_GET = do_POST

    def log_message(self, *args):
        pass


def test_a_server_without_log_probabilities_is_refused_clearly():
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoLogProbabilities)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    try:
        done = fimlsp("complete", f"{STDLIB / 'textwrap.py'}:10:1", "--model-server", url)
    finally:
        stub.shutdown()
        stub.server_close()
    assert done.returncode == 2
    assert done.stderr.strip() == (f"fimlsp complete: error: the server at {url} returned no log-probabilities: "
                                   "fimlsp needs them; vLLM and llama.cpp's server give them with logprobs/n_probs")


class _StallingProxy(http.server.BaseHTTPRequestHandler):
    """Passes requests on to the real model server, except that completion requests after the first `answered`
    ones are held unanswered until the test releases them: a shared server too busy to answer in time."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))) if self.command == "POST" else None
        proxy = self.server
        if self.path in ("/completion", "/v1/completions") and proxy.stall:
            if proxy.answered == 0:
                proxy.held += 1
                proxy.released.wait(120)
                return  # closes the connection without an answer
            proxy.answered -= 1
        request = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, payload = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("answered", [0, 1])
def test_a_server_that_stops_answering_ends_the_decoding_within_its_budget(server, answered):
    """Without a deadline on its requests the decoding would wait out the HTTP timeout (30 s), then fail; with it,
    the token loop ends at its deadline and the fallback finishes the middle, as when the local clock runs out.
    `answered` 0 holds the prompt's request, 1 the first step that needs the server again."""
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StallingProxy)
    proxy.upstream, proxy.stall, proxy.answered, proxy.held = server, False, answered, 0
    proxy.released = threading.Event()
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    model = connect(f"http://127.0.0.1:{proxy.server_address[1]}")
    model.run_tokens = 1  # every step after the prompt's asks the server again
    # A budget long enough that the constraint's setup and the answered request end well within it on a loaded
    # machine, and short of the HTTP timeout, which the held request would otherwise wait out.
    budget = 12.0
    assert budget < model.timeout
    path, line, column = stdlib_cuts(1, seed=3)[0]
    left, right = split(path, line, column)
    try:
        proxy.stall = True
        result = complete_middles(model, left, right, DecodingOptions(time_budget=budget, max_tokens=32))[0]
    finally:
        proxy.released.set()
        proxy.shutdown()
        proxy.server_close()
        model.close()
    assert proxy.held == 1
    assert result.stop == "timeout" and result.valid, result
    parsed(left + result.middle + right)


@pytest.mark.asyncio
async def test_the_language_server_completes_through_the_model_server(server):
    from tests.test_server import SOURCE, inline_params, open_document, parses, serve
    from tests.test_server import split as split_document

    # searches counted, not timed: on a busy machine a 0.1 s search fails and the middle at a cursor with it
    async with serve({"fimlsp": {"modelServer": server, "maxTokens": 24, "timeBudget": 20,
                                 "searchBudget": UNTIMED_SEARCH_BUDGET}}) as client:
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fimlsp.modelStatus", arguments=[]))
        assert status["ready"] and status["model"].endswith(f"on {server}"), status
        open_document(client, SOURCE)
        shown = 0
        for line, character in [(4, 14), (13, 8), (17, 6)]:
            left, right = split_document(SOURCE, line, character)
            inline = await client.text_document_inline_completion_async(inline_params(line, character))
            for item in inline.items:
                assert parses(left + item.insert_text + right), (line, character, item.insert_text)
                shown += 1
        assert shown >= 2


# Hostile servers: dripping, stalling, flooding ---------------------------------------------------------------

TIMEOUT = 5.0  # `fimlsp complete --time-budget`
BUDGET = 2.0  # `fimlsp serve --time-budget`
# A hang guard on every wait below, not a measure: several times what the wait takes on a loaded machine, and short
# of what the bugs held fimlsp for (the 30 s HTTP timeout waited out, or forever).
HANG = 20.0
MEMORY = 600 * 2**20  # bytes of resident memory fimlsp may reach against any server
CURSOR = stdlib_cuts(1, seed=3)[0]


# `fimlsp` that writes its peak resident memory (VmHWM, kB) to PEAK_FILE as it exits: the child's own figure.
# (The rusage of a waited child also counts the memory of the test process it was forked from, before its exec.)
REPORTING_PEAK = """
import atexit, os, sys
def report_peak():
    with open("/proc/self/status") as status, open(os.environ["PEAK_FILE"], "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")).split()[1])
atexit.register(report_peak)
from fimlsp.cli import main
sys.exit(main(sys.argv[1:]))
"""


def complete_with_peak(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """`fimlsp complete` at a stdlib cursor with `args`: its result and its peak resident memory in bytes (killed,
    and the test failed, after `HANG` seconds)."""
    path, line, column = CURSOR
    with (tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr,
          tempfile.NamedTemporaryFile("r") as peak_file):
        command = [sys.executable, "-c", REPORTING_PEAK, "complete", f"{path}:{line}:{column}", *args]
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, cwd=ROOT,
                                   env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                                        "PEAK_FILE": peak_file.name})
        hung = threading.Event()
        guard = threading.Timer(HANG, lambda: (hung.set(), process.kill()))
        guard.start()
        process.wait()
        guard.cancel()
        assert not hung.is_set(), f"fimlsp complete was still waiting on the server after {HANG:g} s"
        stdout.seek(0)
        stderr.seek(0)
        done = subprocess.CompletedProcess(process.args, process.returncode, stdout.read(), stderr.read())
        peak = int(peak_file.read() or 0) * 1024
    assert peak, "fimlsp complete did not report its peak memory"
    return done, peak


@pytest.mark.slow
@pytest.mark.parametrize("mode", [DRIP, STALL, FLOOD, REDIRECT])
def test_complete_against_a_hostile_server_fails_in_one_line_within_its_timeout(mode):
    """One byte a second used to hold `fimlsp complete --model-server URL --time-budget 5` forever (the HTTP timeout was per
    read), a 200 MB body was read whole, a redirect's body was taken as the answer. Each is now one line and exit
    status 2 at the timeout (the error says so; a hang fails the guard), in bounded memory."""
    with hostile_server(mode) as server:
        done, peak = complete_with_peak("--model-server", server.url, "--time-budget", str(TIMEOUT))
    assert done.returncode == 2, (done.returncode, done.stderr)
    error = done.stderr.strip()
    assert error.startswith(f"fimlsp complete: error: the server at {server.url} ") and "\n" not in error, error
    expected = {DRIP: f"did not answer within {TIMEOUT:g} s", STALL: f"did not answer within {TIMEOUT:g} s",
                FLOOD: "over the limit of", REDIRECT: "answered 302 to POST"}
    assert expected[mode] in error, error
    assert peak < MEMORY, f"{peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("mode", [DRIP, STALL, FLOOD, REDIRECT, ROWS])
def test_complete_meeting_a_hostile_server_mid_decoding_ends_within_its_timeout(server, mode):
    """A server that connects well and then drips, stalls or floods its completions: the decoding ends within its
    timeout, with a valid fallback middle (out of time) or a one-line error (an answer refused), and probability
    rows beyond what was asked cost nothing."""
    with hostile_server(mode, upstream=server) as proxy:
        proxy.hostile.set()
        done, peak = complete_with_peak("--model-server", proxy.url, "--time-budget", str(TIMEOUT), "--json")
    assert peak < MEMORY, f"{peak / 2**20:.0f} MiB"
    if mode in (FLOOD, REDIRECT):
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert ("over the limit of" if mode == FLOOD else "fimlsp follows no redirects") in done.stderr
        return
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    if mode == ROWS:
        assert result["shown"], result
    else:
        assert result["stop"] == "timeout" and result["shown"], result
    left, right = split(*CURSOR)
    parsed(left + result["middle"] + right)


def completion_params(uri: str, line: int, character: int) -> dict:
    return {**position_params(uri, line, character), "context": {"triggerKind": 1}}


def shut_down(client: RpcClient) -> None:
    """Shut the server down as a client does: the process ends with exit status 0 (within the hang guard)."""
    shutdown = client.request("shutdown")
    client.notify("exit")
    assert client.exit_status(timeout=HANG) == 0
    assert "result" in client.response(shutdown)


def test_the_language_server_keeps_its_budget_and_exits_at_once_against_a_hostile_server(server):
    """`fimlsp serve` whose model server turns hostile: a request with a 2 s budget had no answer after 25 s and
    the process ignored shutdown and exit for 30 s. Now each completion answers, resident memory stays under
    600 MB, and shutdown and exit end the process while a request waits on a stalled server."""
    from tests.test_server import SOURCE

    uri = "file:///work/source.py"
    with hostile_server(DRIP, upstream=server) as proxy, RpcClient("--time-budget", str(BUDGET)) as client:
        client.initialize({"fimlsp": {"modelServer": proxy.url}})
        status = client.wait_for_model()
        assert status["ready"] and proxy.url in status["model"], status
        client.notify("textDocument/didOpen", document_params(uri, SOURCE))
        proxy.hostile.set()
        peak = 0
        for mode in (DRIP, STALL, FLOOD, REDIRECT, ROWS):
            proxy.mode = mode
            answer = client.response(client.request("textDocument/inlineCompletion", completion_params(uri, 4, 14)),
                                     timeout=HANG)
            assert "result" in answer, (mode, answer)
            peak = max(peak, client.resident_memory() or 0)
        assert peak < MEMORY, f"{peak / 2**20:.0f} MiB"
        proxy.mode = STALL
        waiting = len(proxy.requests)
        client.request("textDocument/inlineCompletion", completion_params(uri, 13, 8))
        deadline = time.monotonic() + BUDGET
        while len(proxy.requests) == waiting and time.monotonic() < deadline:
            time.sleep(0.05)  # until the request waits on the stalled server
        shut_down(client)


@pytest.mark.slow
def test_a_server_that_stalls_from_the_start_holds_up_no_request_no_other_model_and_no_exit():
    """A model server that accepts and never answers, named in the settings: requests answer (empty) while fimlsp
    connects, switching modelServer off loads the shipped model without waiting out the stuck connection's 30 s,
    and shutdown and exit end the process."""
    from tests.test_server import SOURCE

    uri = "file:///work/source.py"
    with hostile_server(STALL) as stalled, RpcClient("--time-budget", str(BUDGET)) as client:
        client.initialize({"fimlsp": {"modelServer": stalled.url}})
        client.notify("textDocument/didOpen", document_params(uri, SOURCE))
        answer = client.response(client.request("textDocument/inlineCompletion", completion_params(uri, 4, 14)),
                                 timeout=HANG)
        assert answer["result"]["items"] == []
        assert "while connecting to the model server" in client.request_statuses()[-1]["message"]
        client.notify("workspace/didChangeConfiguration", {"settings": {"fimlsp": {"modelServer": None}}})
        status = client.wait_for_model(timeout=HANG)
        assert status["ready"] and stalled.url not in status["model"], status
        client.notify("workspace/didChangeConfiguration", {"settings": {"fimlsp": {"modelServer": stalled.url}}})
        time.sleep(0.5)  # connecting again, and stuck
        shut_down(client)


class _Chunked(http.server.BaseHTTPRequestHandler):
    """Answers every request with its path as JSON in chunks (as a proxy may), on a kept-alive connection."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.server.connections.add(self.client_address)
        body = json.dumps({"path": self.path, "padding": "x" * 100_000}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for start in range(0, len(body), 30_000):
                piece = body[start:start + 30_000]
                self.wfile.write(b"%x;note=1\r\n" % len(piece) + piece + b"\r\n")
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        except ConnectionError:
            pass  # fimlsp refused the answer and hung up

    def log_message(self, *args):
        pass


def test_chunked_answers_are_read_whole_on_one_kept_alive_connection():
    from fimlsp.model import wire

    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Chunked)
    stub.connections = set()
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    connection = wire.Connection(f"http://127.0.0.1:{stub.server_address[1]}")
    try:
        for path in ("/props", "/v1/models"):
            status, body = connection.exchange("GET", path, None, time.perf_counter() + 30, 1 << 20)
            assert status == 200 and json.loads(body)["path"] == path
        with pytest.raises(wire.TooLarge):
            connection.exchange("GET", "/small", None, time.perf_counter() + 30, 50_000)
        status, body = connection.exchange("GET", "/again", None, time.perf_counter() + 30, 1 << 20)
        assert json.loads(body)["path"] == "/again"
    finally:
        connection.close()
        stub.shutdown()
        stub.server_close()
    assert len(stub.connections) == 2  # three answers on the first; the refused one closed it


ORDERS = Snippet("shop/models.py", "class Order:\n    amount: int\n    customer: str\n")
ORDER_LEFT, ORDER_RIGHT = "from shop.models import Order\n\n\ndef total(order: Order) -> int:\n    return order.", "\n"


def test_repository_context_reaches_the_server_in_the_prompt(model):
    """The prompt with another file's snippet, as the engine builds it (token ids, or text where the server takes
    only text), is read by the server: its rows after the prompt are not those of the prompt without it."""
    plain = model.prompt(ORDER_LEFT, ORDER_RIGHT, 64)
    with_extra = model.prompt(ORDER_LEFT, ORDER_RIGHT, 64, extra=[ORDERS])
    assert len(with_extra) > len(plain)
    if not model.token_prompts:
        assert "# shop/models.py\n" + ORDERS.text + ORDER_LEFT in model.text_of(with_extra)
    rows = [model.prompt_pass(ids).log_probs for ids in (plain, with_extra)]
    assert not np.array_equal(*rows)


@pytest.fixture(scope="module")
def infill_server(tmp_path_factory):
    """llama-server with a batch of 256 tokens: `/infill` leaves the rest of the shipped model's 512-token context
    to extras (with its default batch, 2,048 tokens, it leaves them none)."""
    if not LLAMA_SERVER.exists():
        message = f"llama-server is not built (run {INSTALL_LLAMA_SERVER.relative_to(ROOT)})"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with llama_server(tmp_path_factory.mktemp("infill"), LLAMA_CPP_ENGINE,
                      ("--batch-size", "256", "--ubatch-size", "256")) as url:
        yield url


@pytest.mark.slow
def test_llama_servers_infill_takes_input_extra_into_the_prompt_it_evaluates(infill_server):
    """llama.cpp's `/infill` with `input_extra`, the layout fimlsp's prompt follows for a family with file tokens,
    is accepted and puts the file's text before the left context in the prompt the server evaluated."""
    model = connect(infill_server)
    try:
        asked = {"input_prefix": ORDER_LEFT, "input_suffix": ORDER_RIGHT, "n_predict": 1, "temperature": 0,
                 "cache_prompt": False}
        plain = model.request("POST", "/infill", asked)
        extra = model.request("POST", "/infill", {**asked, "input_extra": [
            {"filename": ORDERS.path, "text": ORDERS.text}]})
        snippet_tokens = len(model.encode(ORDERS.text))
    finally:
        model.close()
    assert ORDERS.text not in plain["prompt"]
    assert ORDERS.text in extra["prompt"] and extra["prompt"].index(ORDERS.text) < extra["prompt"].index(ORDER_LEFT)
    assert extra["tokens_evaluated"] >= plain["tokens_evaluated"] + snippet_tokens


@pytest.mark.slow
def test_the_prompt_with_repository_context_is_evaluated_whole_by_llama_server(infill_server):
    """Through llama.cpp's own API the engine sends its prompt as ids: the server evaluates every one, the snippet
    written as the format writes it (a path comment for the shipped vocabulary) just before the left context."""
    model = connect(infill_server)
    try:
        ids = model.prompt(ORDER_LEFT, ORDER_RIGHT, 64, extra=[ORDERS])
        answer = model.request("POST", "/completion", {"prompt": ids, "n_predict": 1, "temperature": 0,
                                                       "cache_prompt": False})
    finally:
        model.close()
    assert answer["tokens_evaluated"] == len(ids)
    assert "<fim_middle># shop/models.py\n" + ORDERS.text + ORDER_LEFT in answer["prompt"]
