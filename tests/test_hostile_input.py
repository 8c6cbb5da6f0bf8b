"""Hostile input (`tests/hostile_inputs.py`) at every level: the quotient API, `fimlsp complete` and the server.

Each level must answer within a bounded time, with bounded memory, and never with a traceback: the library with
a state, None or `DeadlineExceeded` past the deadline it was given; the CLI with a one-line error (exit 2) or a
JSON result; the server with a possibly empty answer, after which it keeps serving. The time limits here are the
waits' timeouts, hang guards far above what any case needs on a loaded machine; no test asserts a time taken.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from lsprotocol import types

from earley import DeadlineExceeded
from fimlsp import quotient
from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import INITIAL, advance
from fimlsp.python.syntax import compiles, error_text
from fimlsp.server.positions import UTF16, position_at
from fimlsp.source import split_at
from tests.hostile_inputs import BY_NAME, CASES, Hostile
from tests.test_python_meaning import swallows_code
from tests.test_server import POSITIONS, SOURCE, completion_params, inline_params, open_document, options_for, serve

HANG_GUARD = 60.0  # seconds past a level's own budget after which an answer counts as a hang
DEADLINE = 5.0  # seconds given to `quotient`; documents of a megabyte may give up with DeadlineExceeded
SMALL = 200_000  # characters: documents up to this size must be answered well within the deadline
# Middles fed to every state, with a few that reach the lexer's corners.
PROBES = ["", "x", "0", " ", "\t", "\f", "\n", "\r", "\r\n", ")", "]", "'", '"""', "#", "\\\n", "pass\n", "\x00",
          "\ud800"]
BIG_PROBES = ["", "x", "\n", ")"]  # each probe of a megabyte document costs an `ast.parse` of it
MEMORY_BOUND = 1 << 30  # bytes that `quotient` may hold at its peak on a ~1 MB document (seen: up to ~230 MiB)


def ids(case: Hostile) -> str:
    return case.name


# --------------------------------------------------------------------------------------------------- library

@pytest.mark.parametrize("case", CASES, ids=ids)
def test_quotient_answers_soundly_in_bounded_time(case):
    """A state, None, or `DeadlineExceeded` once the deadline passed; every state's `complete` is exact (a middle
    that would comment or quote the right context's code away is not complete: `swallows_code`), and a state is
    None only where no probe middle makes the file valid."""
    left, right = case.split()
    try:
        state = quotient(left, right, deadline=time.perf_counter() + DEADLINE)
    except DeadlineExceeded:
        assert len(left) + len(right) > SMALL, f"{case.name}: a small document ran out of time"
        return
    probes = PROBES if len(left) + len(right) <= SMALL else BIG_PROBES
    if state is None:
        assert not any(compiles(left + probe + right) for probe in probes), case.name
        return
    for probe in probes:
        fed = state.feed(probe)
        if fed is None:
            assert not compiles(left + probe + right), (case.name, probe)
        else:
            assert fed.complete == (compiles(left + probe + right) and not swallows_code(fed)), (case.name, probe)


@pytest.mark.parametrize("name", ["long-list-line", "long-comment-line"])
def test_quotient_memory_stays_bounded_on_megabyte_documents(name):
    """The peak of what `quotient` allocates, whether it finishes or gives up at its deadline (tracemalloc's
    overhead slows it down, so it may give up where the test above does not)."""
    left, right = BY_NAME[name].split()
    tracemalloc.start()
    try:
        quotient(left, right, deadline=time.perf_counter() + DEADLINE)
    except DeadlineExceeded:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < MEMORY_BOUND, f"{name}: {peak / 2**20:.0f} MiB"


def test_lexer_states_inside_a_long_comment_stay_small():
    """Feeding token after token inside a long comment (a cursor there, a model writing) keeps every state:
    none of them may hold its own copy of the comment."""
    state = advance(INITIAL, "x = 1  # " + "comment " * 25_000)[0]
    tracemalloc.start()
    try:
        states = [state]
        for _ in range(200):
            states.append(advance(states[-1], " word")[0])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert states[-1].token == lx.S_COMMENT
    assert peak < 2 << 20, f"{peak / 2**20:.1f} MiB for 200 states"


# ------------------------------------------------------------------------------------------------------- CLI

CLI_TIMEOUT = 20


def test_cli_lines_end_where_python_ends_them():
    """LINE counts \\n, \\r\\n and \\r only: a form feed, U+0085 or U+2028 inside a line does not end it."""
    text = "a\fb\x85c\u2028d\r\ne\rf\n"
    assert split_at(text, 1, 8) == ("a\fb\x85c\u2028d", "\r\ne\rf\n")
    assert split_at(text, 2, 2) == ("a\fb\x85c\u2028d\r\ne", "\rf\n")
    assert split_at(text, 4, 1) == (text, "")


@pytest.fixture(scope="module")
def cli_runs(tiny_model_path, tmp_path_factory):
    """`fimlsp complete --json` on every case, two processes at a time: (exit status or None, stdout, stderr)."""
    folder = tmp_path_factory.mktemp("hostile")

    def run(case: Hostile):
        path = folder / f"{case.name}.py"
        path.write_bytes(case.data)
        command = [sys.executable, "-m", "fimlsp", "complete", f"{path}:{case.target}", "--model",
                   str(tiny_model_path), "--json", "--max-tokens", "8", "--time-budget", str(CLI_TIMEOUT)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                                  timeout=CLI_TIMEOUT + HANG_GUARD)
        except subprocess.TimeoutExpired:
            return None, "", ""
        return done.returncode, done.stdout, done.stderr

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip([case.name for case in CASES], pool.map(run, CASES)))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_cli_gives_a_one_line_error_or_a_json_result(case, cli_runs):
    status, out, err = cli_runs[case.name]
    assert status is not None, f"{case.name}: no answer within {CLI_TIMEOUT + HANG_GUARD:.0f} s"
    assert "Traceback" not in err, err
    if case.problem is not None:
        assert status == 2 and out == "", (status, out)
        assert err.count("\n") == 1 and err.startswith("fimlsp complete: error: "), err
        assert case.problem.lower() in err.lower(), err
        return
    assert status in (0, 1), (status, err)
    assert err.count("\n") <= 1, err
    result = json.loads(out)
    assert isinstance(result, dict) and isinstance(result["middle"], str)
    if result["parses"]:
        left, right = case.split()
        # parsed as fimlsp parses user code: an invalid escape the middle writes in a string is its warning, not the
        # test run's
        assert error_text(left + result["middle"] + right) is None, result["middle"]


# ---------------------------------------------------------------------------------------------------- server

REQUEST_GUARD = 5.0 + HANG_GUARD  # the server's time budget per completion below, plus the hang guard
RSS_BOUND = 3 << 30  # bytes: the server's peak resident memory after every hostile document (seen: ~0.8 GiB)


def peak_rss(pid: int) -> int | None:
    """The peak resident set size of a process (Linux's VmHWM), or None where /proc does not say."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


async def ask_at_cursor(client, case: Hostile, uri: str) -> None:
    """Open the document, type a character at the cursor, ask for both kinds of completion there, close it."""
    text = case.text
    left, _ = case.split()
    open_document(client, text, uri=uri)
    line, character = position_at(text, len(left), UTF16)
    cursor = types.Position(line=line, character=character)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=cursor, end=cursor),
                                                                 text="1")]))
    inline = await asyncio.wait_for(client.text_document_inline_completion_async(
        inline_params(line, character + 1, uri)), REQUEST_GUARD)
    assert isinstance(inline, types.InlineCompletionList), case.name
    listed = await asyncio.wait_for(client.text_document_completion_async(
        completion_params(line, character + 1, uri)), REQUEST_GUARD)
    assert isinstance(listed, types.CompletionList), case.name
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


def error_messages(client) -> list[str]:
    return [message.message for message in client.log_messages if message.type == types.MessageType.Error]


def has_surrogate(case: Hostile) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in case.text)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_server_answers_every_hostile_document_and_keeps_serving(tiny_model_path):
    """One session: every document opened, edited at the cursor, asked for both kinds of completion (an empty
    answer is fine, an error or a hang is not), closed; then an ordinary document still gets completions."""
    # the tiny random model's text ends validly only by invented finishes: without them it would suggest nothing
    async with serve(options_for(tiny_model_path, maxTokens=8, timeBudget=5, inventedFinish=True)) as client:
        for number, case in enumerate(CASES):
            if not has_surrogate(case):  # see the next test
                await ask_at_cursor(client, case, f"file:///work/hostile/{number}.py")
        assert not error_messages(client)

        open_document(client, SOURCE)
        shown = 0
        for line, character in POSITIONS:
            inline = await asyncio.wait_for(client.text_document_inline_completion_async(
                inline_params(line, character)), REQUEST_GUARD)
            shown += len(inline.items)
        assert shown, "after the hostile documents the server should still complete an ordinary one"
        peak = peak_rss(client._server.pid)
        if peak is None:  # every other check has passed by now
            pytest.skip("the server's peak memory is read from /proc/PID/status, which this system lacks")
        assert peak < RSS_BOUND, f"the server peaked at {peak / 2**20:.0f} MiB"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_server_completes_a_document_with_a_lone_surrogate(tiny_model_path):
    """JSON escapes carry lone surrogates, so a client can send one; the server answers and logs no error."""
    async with serve(options_for(tiny_model_path, maxTokens=8, timeBudget=5)) as client:
        for number, case in enumerate(filter(has_surrogate, CASES)):
            await ask_at_cursor(client, case, f"file:///work/surrogate/{number}.py")
        assert not error_messages(client)
