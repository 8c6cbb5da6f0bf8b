"""End to end: `fimlsp serve` over stdio, driven by a pytest-lsp client, with the tiny random model."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from fimlsp.syntax_trees import parsed

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

SOURCE = '''import os


def greet(name, greeting="hello"):
    message = f"{greeting}, {name}"
    return message


class Counter:
    def __init__(self):
        self.count = 0

    def bump(self, step=1):
        self.count += step
        return self.count


print(greet("world"), Counter().bump())
'''
URI = "file:///work/example.py"
# (line, character) pairs, 0-based: inside an expression, at a line end, at the start of a statement line,
# after a call's open parenthesis, and at the very end of the file.
POSITIONS = [(4, 14), (5, 18), (13, 8), (17, 6), (18, 0)]


@contextlib.asynccontextmanager
async def serve(options: dict, capabilities: types.ClientCapabilities | None = None, log_level: str = "debug",
                loaded: bool = True, server: str = "fimlsp"):
    """A client connected to a fresh server (`python -m <server> serve`, or the module's own command line when it
    is not fimlsp), initialized with `options` and, if `loaded`, the model loaded; the server's `fimlsp/status`
    notifications collect in `client.statuses`, as (line, character, suggestion, message), and whole in
    `client.status_params`."""
    client = make_test_lsp_client()
    client.statuses = []
    client.status_params = []

    @client.feature("fimlsp/status")
    def status(params):
        client.statuses.append((params.line, params.character, params.suggestion, params.message))
        client.status_params.append(params)

    command = ["-m", server] + (["serve"] if server == "fimlsp" else [])
    await client.start_io(sys.executable, *command, "--log-level", log_level)
    graceful = False
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=capabilities or client_capabilities("visual-studio-code"),
            initialization_options=options,
        ))
        if loaded:
            await wait_for_model(client)
        yield client
        await asyncio.wait_for(client.shutdown_session(), 30)
        graceful = True
    finally:
        await stop(client, graceful)


async def stop(client: LanguageClient, graceful: bool) -> None:
    """Stop the client; a server that was not shut down (a failed test) is killed rather than waited for."""
    server = client._server
    if not graceful and server is not None and server.returncode is None:
        server.kill()
    await client.stop()


async def wait_for_model(client: LanguageClient, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ends = [report for reports in client.progress_reports.values() for report in reports
                if isinstance(report, types.WorkDoneProgressEnd)]
        if ends:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the model did not finish loading")


def options_for(model, **extra) -> dict:
    return {"fimlsp": {"model": str(model), "device": "cpu", "maxTokens": 24, "timeBudget": 20, **extra}}


def open_document(client: LanguageClient, text: str, uri: str = URI, language: str = "python") -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))


def split(text: str, line: int, character: int) -> tuple[str, str]:
    lines = text.splitlines(keepends=True) + [""]
    offset = sum(len(previous) for previous in lines[:line]) + character
    return text[:offset], text[offset:]


def parses(source: str) -> bool:
    try:
        parsed(source)
    except SyntaxError:
        return False
    return True


def inline_params(line: int, character: int, uri: str = URI, automatic: bool = False):
    kind = types.InlineCompletionTriggerKind.Automatic if automatic else types.InlineCompletionTriggerKind.Invoked
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=kind),
    )


def completion_params(line: int, character: int, uri: str = URI):
    return types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character))


async def test_inline_completion_and_completion_make_the_file_parse(tiny_model_path):
    # names off: the tiny random model's middles load names nothing binds, which strict names never shows
    # (tests/test_decoding_names_policy.py); what is tested here is that what is shown parses
    async with serve(options_for(tiny_model_path, names="off")) as client:
        open_document(client, SOURCE)
        shown = 0
        for line, character in POSITIONS:
            left, right = split(SOURCE, line, character)
            inline = await client.text_document_inline_completion_async(inline_params(line, character))
            for item in inline.items:
                assert isinstance(item.insert_text, str)
                assert item.range.start == types.Position(line=line, character=character)
                assert parses(left + item.insert_text + right), (line, character, item.insert_text)
                shown += 1
            listed = await client.text_document_completion_async(completion_params(line, character))
            assert len(listed.items) <= 1
            for item in listed.items:
                assert item.text_edit.range.start == item.text_edit.range.end == types.Position(
                    line=line, character=character)
                assert parses(left + item.text_edit.new_text + right), (line, character, item.text_edit.new_text)
                assert item.detail == "fimlsp · checked: the file compiles"
                # shown as the document's language's code (its `Language.fence`)
                assert item.documentation.value == f"```python\n{item.text_edit.new_text}\n```"
                shown += 1
        assert shown >= len(POSITIONS), "the tiny model's constrained completions should mostly be non-empty"


async def test_inline_completion_offers_distinct_valid_alternatives(tiny_model_path):
    # names off: strict names shows none of the tiny random model's middles (their names bind nothing), and a
    # fallback no longer invents code that binds them; what is tested here is the alternatives
    async with serve(options_for(tiny_model_path, alternatives=3, names="off")) as client:
        open_document(client, SOURCE)
        offered = 0
        for line, character in POSITIONS:
            left, right = split(SOURCE, line, character)
            inline = await client.text_document_inline_completion_async(inline_params(line, character))
            middles = [item.insert_text for item in inline.items]
            assert len(middles) <= 3 and len(set(middles)) == len(middles), middles
            assert all(parses(left + middle + right) for middle in middles), middles
            offered = max(offered, len(middles))
        assert offered >= 2, "greedy alternatives pass over the first valid first tokens: some should differ"


async def test_a_document_broken_elsewhere_gets_region_checked_completions(tiny_model_path):
    from fimlsp.python.region import constrain

    repaired = SOURCE.replace('message = f"{greeting}, {name}"', "message = ")
    broken = repaired.replace("class Counter:", "class Counter(:")
    line, character = 4, 14  # after `message = `: the empty middle is no answer
    left, right = split(broken, line, character)
    promise = constrain(left, right)
    first, last = promise.lines(left, right)
    async with serve(options_for(tiny_model_path, singleLine="never")) as client:
        open_document(client, broken)
        listed = await client.text_document_completion_async(completion_params(line, character))
        assert len(listed.items) == 1, "the tiny model finds a middle valid in the region"
        item = listed.items[0]
        assert item.detail == f"fimlsp · checked lines {first}-{last} (the rest of the file is not)"
        middle = item.text_edit.new_text
        assert parses(left[promise.left_cut:] + middle + right[:promise.right_cut])
        assert parses(repaired[:len(left)] + middle + repaired[len(left):])  # valid once the class is repaired


async def test_server_advertises_both_methods_and_incremental_sync(tiny_model_path):
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "fimlsp", "serve")
    graceful = False
    try:
        result = await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), initialization_options=options_for(tiny_model_path)))
        capabilities = result.capabilities
        assert capabilities.inline_completion_provider is not None
        assert capabilities.completion_provider is not None
        sync = capabilities.text_document_sync
        assert getattr(sync, "change", sync) == types.TextDocumentSyncKind.Incremental
        await wait_for_model(client)
        await asyncio.wait_for(client.shutdown_session(), 30)
        graceful = True
    finally:
        await stop(client, graceful)


async def test_a_change_is_seen_by_the_next_request(tiny_model_path):
    async with serve(options_for(tiny_model_path)) as client:
        open_document(client, SOURCE)
        # Turn `message = f"..."` into an open call: only a middle that closes the bracket can make it parse.
        line = SOURCE.splitlines()[4]
        edit = types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=4, character=line.index("f")),
                              end=types.Position(line=4, character=len(line))),
            text="len(",
        )
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2), content_changes=[edit]))
        changed = SOURCE.replace('message = f"{greeting}, {name}"', "message = len(")
        assert not parses(changed)
        left, right = split(changed, 4, 18)
        inline = await client.text_document_inline_completion_async(inline_params(4, 18))
        for item in inline.items:
            assert parses(left + item.insert_text + right), item.insert_text
            assert ")" in item.insert_text


async def test_cancellation_and_superseding_answer_promptly(tmp_path):
    import torch

    from harness.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    # A wider context than the tiny fixture's, so that a generation can run for many seconds.
    model = build_tiny_model(tmp_path / "long-model", n_positions=4096)
    options = options_for(model, maxTokens=3000, timeBudget=60, cache=False, loopRepeats=0)  # a random model loops
    async with serve(options) as client:
        open_document(client, SOURCE)
        protocol = client.protocol
        # $/cancelRequest: the request answers with RequestCancelled, promptly.
        request = asyncio.ensure_future(protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(13, 8), msg_id="long-1"))
        await asyncio.sleep(1.0)
        assert not request.done(), "the generation should still be running"
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="long-1"))
        with pytest.raises(JsonRpcRequestCancelled):  # not the generation's answer, which runs on for its budget
            await asyncio.wait_for(request, 5)

        # A second request supersedes the first: the first answers at once with no items.
        first = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(13, 8)))
        await asyncio.sleep(1.0)
        assert not first.done()
        second = asyncio.ensure_future(protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(5, 18), msg_id="long-2"))
        answer = await asyncio.wait_for(first, 5)
        assert not answer.items
        assert not second.done()
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="long-2"))
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(second, 5)


@pytest.mark.parametrize("server", ["fimlsp", "tests.expired_setup_server"])
async def test_time_budget_gives_a_valid_middle_or_nothing(tmp_path, server):
    """Within a budget of 0.5 s, a suggestion is a valid middle or there is none: as the server runs, and with
    the setup past its deadline at every request (forced: `tests.expired_setup_server`, what a loaded machine
    does), where the middle decoded without a constraint is offered only if the file parses with it."""
    import torch

    from harness.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    model = build_tiny_model(tmp_path / "long-model", n_positions=4096)
    async with serve(options_for(model, maxTokens=3000, timeBudget=0.5), server=server) as client:
        open_document(client, SOURCE)
        for line, character in [(4, 14), (13, 8)]:  # the first also builds the grammar, once a process
            left, right = split(SOURCE, line, character)
            # a hang guard: without the budget, the generation runs on to its 3,000 tokens
            asked = client.text_document_inline_completion_async(inline_params(line, character))
            inline = await asyncio.wait_for(asked, 30)
            for item in inline.items:
                assert parses(left + item.insert_text + right), (line, character, item.insert_text)


async def test_a_setup_past_its_deadline_offers_a_middle_only_if_the_file_parses_with_it(tiny_model_path):
    """The setup runs past its deadline at every request (`tests.expired_setup_server`): inline completions and
    completion items alike offer the middles decoded without a constraint only where the file parses with them,
    and say they were checked."""
    async with serve(options_for(tiny_model_path, timeBudget=5), server="tests.expired_setup_server") as client:
        open_document(client, SOURCE)
        for line, character in POSITIONS:
            left, right = split(SOURCE, line, character)
            inline = await client.text_document_inline_completion_async(inline_params(line, character))
            listed = await client.text_document_completion_async(completion_params(line, character))
            middles = [item.insert_text for item in inline.items] + [item.text_edit.new_text for item in listed.items]
            for middle in middles:
                assert parses(left + middle + right), (line, character, middle)
            assert all(item.detail == "fimlsp · checked: the file compiles" for item in listed.items)
        refused = [message for _, _, suggested, message in client.statuses if not suggested]
        assert ("no suggestion: the constraint could not be built within its time budget, and the middle decoded "
                "without a constraint does not compile") in refused, client.statuses


@pytest.mark.parametrize("line_break", ["\r\n", "\r"])
async def test_suggestions_break_lines_as_the_document_does(tiny_model_path, line_break):
    """`x = 1|def g():`: every middle that makes the document valid holds a line break, written as the document's."""
    text = line_break.join(["import os", "x = 1def g():", "    return x", ""])
    left, right = text[:text.index("def g()")], text[text.index("def g()"):]
    # the tiny model's text ends validly only by a finish that invents an operand (`1---0`)
    settings = options_for(tiny_model_path, maxTokens=16, singleLine="never", inventedFinish=True)
    async with serve(settings) as client:
        open_document(client, text)
        inline = await client.text_document_inline_completion_async(inline_params(1, 5))
        listed = await client.text_document_completion_async(completion_params(1, 5))
        middles = [item.insert_text for item in inline.items] + [item.text_edit.new_text for item in listed.items]
        assert len(middles) == 2, "the tiny model's constrained middle is offered both ways"
        for middle in middles:
            assert parses(left + middle + right), repr(middle)
            breaks = set(re.findall(r"\r\n|\r|\n", middle))
            assert breaks == {line_break}, repr(middle)


async def test_bad_positions_and_other_languages_get_empty_answers(tiny_model_path):
    async with serve(options_for(tiny_model_path)) as client:
        open_document(client, SOURCE)
        open_document(client, "# Title\n\nSome *text*.\n", uri="file:///work/notes.md", language="markdown")
        beyond = await client.text_document_inline_completion_async(inline_params(500, 0))
        assert not beyond.items
        beyond = await client.text_document_completion_async(completion_params(500, 3))
        assert not beyond.items
        # A column past the line end means the line end.
        left, right = split(SOURCE, 4, len('    message = f"{greeting}, {name}"'))
        clamped = await client.text_document_inline_completion_async(inline_params(4, 400))
        for item in clamped.items:
            assert parses(left + item.insert_text + right)
        markdown = await client.text_document_inline_completion_async(inline_params(1, 0, "file:///work/notes.md"))
        assert not markdown.items
        markdown = await client.text_document_completion_async(completion_params(1, 0, "file:///work/notes.md"))
        assert not markdown.items
        unknown = await client.text_document_inline_completion_async(inline_params(0, 0, "file:///work/closed.py"))
        assert not unknown.items
        assert not [message for message in client.messages if message.type == types.MessageType.Error]
        empty = [(line, message) for line, _, suggested, message in client.statuses if not suggested]
        assert (500, "no suggestion: line 500 is outside the document (it has 19 lines)") in empty
        assert (1, "no suggestion: no language fimlsp completes (markdown)") in empty
        assert (0, "no suggestion: the document is not open") in empty


async def test_typing_the_start_of_a_suggestion_is_served_from_cache(tiny_model_path):
    # names off: strict names shows none of the tiny random model's middles here (their names bind nothing)
    async with serve(options_for(tiny_model_path, singleLine="never", names="off")) as client:
        text = SOURCE
        open_document(client, text)
        line, character = 13, 8
        first = await client.text_document_inline_completion_async(inline_params(line, character))
        if not first.items or "\n" in first.items[0].insert_text[:1]:
            pytest.skip("the tiny model's suggestion here does not start on the cursor's line")
        middle = first.items[0].insert_text
        typed = middle[0]
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=character),
                                  end=types.Position(line=line, character=character)), text=typed)]))
        second = await client.text_document_inline_completion_async(inline_params(line, character + 1))
        assert [item.insert_text for item in second.items] == [middle[1:]]
        first_status, second_status = client.status_params[-2:]
        assert (first_status.cached, second_status.cached) == (False, True)
        assert first_status.recognizer == "built" and second_status.recognizer is None


async def test_a_missing_model_answers_empty_and_a_configuration_change_loads_another(tmp_path, tiny_model_path):
    async with serve({"model": str(tmp_path / "no-such-model")}) as client:
        open_document(client, SOURCE)
        inline = await client.text_document_inline_completion_async(inline_params(13, 8))
        assert not inline.items
        assert client.statuses[-1][2:] == (False, f"no suggestion: no model: model folder "
                                                  f"'{tmp_path / 'no-such-model'}' does not exist")
        errors = [message.message for message in client.messages if message.type == types.MessageType.Error]
        assert len(errors) == 1 and "\n" not in errors[0] and "no-such-model" in errors[0]
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fimlsp.modelStatus", arguments=[]))
        assert not status["ready"] and "no-such-model" in status["error"]

        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings=options_for(tiny_model_path, singleLine="never", names="off")))
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fimlsp.modelStatus", arguments=[]))
        assert status["ready"] and str(tiny_model_path) in status["model"]
        left, right = split(SOURCE, 13, 8)
        inline = await client.text_document_inline_completion_async(inline_params(13, 8))
        assert inline.items and parses(left + inline.items[0].insert_text + right)
        assert client.statuses[-1] == (13, 8, True, "suggestion: checked: the file compiles")


async def test_log_lines_reach_the_client_with_their_levels_and_stderr_is_left_to_errors(tiny_model_path, capfd):
    async with serve(options_for(tiny_model_path, colour="blue"), log_level="info") as client:
        open_document(client, SOURCE)
        await client.text_document_inline_completion_async(inline_params(13, 8))
        levels = {(message.type, message.message.split(":")[0]) for message in client.log_messages}
        messages = " ".join(message.message for message in client.log_messages)
    assert any(kind == types.MessageType.Info and "ready" in text
               for kind, text in ((m.type, m.message) for m in client.log_messages)), messages
    assert (types.MessageType.Warning, "fimlsp") in levels and "unknown setting 'colour' ignored" in messages
    assert not [m for m in client.log_messages if m.type == types.MessageType.Log], "debug lines at --log-level info"
    assert "fimlsp" not in capfd.readouterr().err  # nothing but errors goes to stderr, and there were none


def model_statuses(client: LanguageClient) -> list:
    """The `fimlsp/status` notifications about the model (those with no document)."""
    return [params for params in client.status_params if params.uri is None]


async def test_the_model_loads_from_initialize_and_a_request_made_meanwhile_waits_for_it(tiny_model_path):
    # names off: the tiny random model's middles load names nothing binds, which strict names never shows
    async with serve(options_for(tiny_model_path, timeBudget=2, names="off"), loaded=False) as client:
        open_document(client, SOURCE)
        left, right = split(SOURCE, 13, 8)
        inline = await client.text_document_inline_completion_async(inline_params(13, 8))
        assert inline.items and parses(left + inline.items[0].insert_text + right)
        loading, *_, ready = model_statuses(client)
        assert not loading.model.ready and loading.model.model is None and loading.model.seconds is None
        assert loading.message == loading.model.message == "loading model " + str(tiny_model_path) + "…"
        assert ready.model.ready and ready.model.error is None and ready.model.seconds > 0
        assert ready.model.model == f"{tiny_model_path} on cpu" and ready.message == ready.model.message
        ends = [report.message for reports in client.progress_reports.values() for report in reports
                if isinstance(report, types.WorkDoneProgressEnd)]
        assert ends == [ready.message]
        # The request waited for the model (the load takes longer than the budget), then had its whole budget.
        answered = client.status_params[-1]
        assert 0 < answered.timings.loading <= answered.timings.waiting
        assert client.statuses[-1] == (13, 8, True, "suggestion: checked: the file compiles")


async def test_a_superseded_request_is_dropped_before_it_runs(tiny_model_path):
    # names off: the tiny random model's middles load names nothing binds, which strict names never shows
    async with serve(options_for(tiny_model_path, timeBudget=2, names="off"), loaded=False) as client:
        open_document(client, SOURCE)
        for round_ in ("while the model loads", "once it is ready"):
            statuses = len(client.statuses)
            first = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(13, 8)))
            second = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(5, 18)))
            dropped = await first
            assert not dropped.items, round_
            assert not second.done() or round_ == "once it is ready"
            answer = await second
            left, right = split(SOURCE, 5, 18)
            assert answer.items and parses(left + answer.items[0].insert_text + right), round_
            requests = [status for status in client.statuses[statuses:] if status[0] is not None]
            assert requests == [(13, 8, False, "no suggestion: superseded: a newer request for the document "
                                               "replaced this one"),
                                (5, 18, True, "suggestion: checked: the file compiles")], round_
            if round_ == "while the model loads":
                # The first request never ran: it reached no recognizer and no stage of decoding.
                dropped_status = [params for params in client.status_params if params.line == 13][-1]
                answered_status = [params for params in client.status_params if params.line == 5][-1]
                assert dropped_status.recognizer is None and not hasattr(dropped_status.timings, "tokens")
                assert answered_status.recognizer == "built" and hasattr(answered_status.timings, "tokens")
            client.text_document_did_change(types.DidChangeTextDocumentParams(  # no suggestion cache for the next round
                text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=SOURCE + "\n")]))


async def test_the_time_budget_bounds_the_answer_on_a_long_file(tmp_path):
    """A prompt as long as the model's context takes the tiny 4,096-token model longer than the whole budget to
    read: within a budget the prompt is cut to what the model reads in its share of it (the status's
    `prompt_tokens`, counted rather than timed: before, the 0.3 s request read the whole window's prompt in over
    1 s)."""
    import torch

    from harness.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    model = build_tiny_model(tmp_path / "long-model", n_positions=4096)
    text = SOURCE * 40
    line = 40 * SOURCE.count("\n") // 2 + 13  # `self.count += step`, half way down
    assert text.splitlines()[line].strip() == "self.count += step"
    async with serve(options_for(model, timeBudget=30, loopRepeats=0), log_level="info") as client:
        open_document(client, text)
        await client.text_document_inline_completion_async(inline_params(line, 8))  # the constraint, built once
        budget = 0.3
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings=options_for(model, timeBudget=budget, loopRepeats=0)))
        await client.text_document_inline_completion_async(inline_params(line, 8))
        first, second = [params for params in client.status_params if params.uri is not None]
        assert (first.recognizer, second.recognizer) == ("built", "reused")
        assert 0 < second.prompt_tokens < first.prompt_tokens, (first.prompt_tokens, second.prompt_tokens)


async def test_the_status_after_a_completion_says_where_its_time_went(tiny_model_path):
    """`fimlsp/status` carries the request's stages in milliseconds (benchmarks/keystroke.py sums them): each a
    non-negative number, together within the request's total; an answer from the last suggestion runs no stage of
    decoding."""
    from harness.rpc_client import RpcClient, document_params, position_params

    stages = ("document", "waiting", "context", "setup", "prompt", "tokens", "judges", "start", "searches", "checks")
    with RpcClient("--model", str(tiny_model_path), "--device", "cpu") as client:
        # The judges off: the tiny random model's text need only compile for the stages to run.
        client.initialize(options_for(tiny_model_path, singleLine="never", inventedFinish=True, names="off",
                                      members="off", calls="off"))
        assert client.wait_for_model()["ready"]
        client.notify("textDocument/didOpen", document_params(URI, SOURCE))
        edit = {"range": {"start": {"line": 13, "character": 8}, "end": {"line": 13, "character": 8}}, "text": "s"}
        client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                                 "contentChanges": [edit]})
        answer = client.response(client.request("textDocument/inlineCompletion", {
            **position_params(URI, 13, 9), "context": {"triggerKind": 1}}))["result"]
        timings = client.request_statuses()[-1]["timings"]
        assert set(timings) == {*stages, "total", "change"}, timings
        assert all(isinstance(value, (int, float)) and value >= 0 for value in timings.values()), timings
        assert sum(timings[stage] for stage in stages) <= timings["total"], timings
        assert timings["prompt"] > 0 and timings["tokens"] > 0, timings

        middle = answer["items"][0]["insertText"]
        assert middle, "the tiny model suggests something after `s` at the start of a statement"
        edit = {"range": {"start": {"line": 13, "character": 9}, "end": {"line": 13, "character": 9}},
                "text": middle[0]}
        client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3},
                                                 "contentChanges": [edit]})
        client.response(client.request("textDocument/inlineCompletion", {
            **position_params(URI, 13, 10), "context": {"triggerKind": 1}}))
        timings = client.request_statuses()[-1]["timings"]
        assert set(timings) == {"document", "total", "change"}, timings
