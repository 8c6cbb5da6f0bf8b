"""Request-to-response time of `fimlsp serve` for a completion after a one-character edit, on a 2,000-line file,
with and without the server's caches.

A client drives the server over stdio like an editor: it opens a generated 2,000-line Python file, asks for an
inline completion in the middle of it, then repeatedly types one character at the cursor and asks again. Three
cases, each timed over `--edits` edits (median and range of wall time from sending the request to the answer):

- `no caches`: the server runs with `cache: false`: every request rebuilds the right context's quotient grammar
  and feeds the whole left context, then runs the model;
- `caches, new text`: the typed character is not the start of the last suggestion: the quotient grammar is reused
  and the cached left-context recognizer is fed one character, then the model runs;
- `caches, typed the suggestion`: the typed character is the start of the last suggestion: the rest of it is
  served without running the model;
- `caches, cursor jumps`: instead of typing, the cursor jumps to another line of code (seeded, anywhere in the
  file, at the start of its code) before each request: the right context is new every time, so the quotient
  grammar is built anew. The constraint's share is the server's setup time for it (median and p95).

The server's log lines (window/logMessage) say how each request got its recognizer and how long that took. The model is
the tiny random test model unless `--model` names another; `--max-tokens` keeps its share of the time small.

    python benchmarks/server_latency.py [--model DIR] [--device DEV] [--edits N] [--max-tokens N] [--jumps N]
                                        [--attempts K]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from fimlsp.server.config import Settings

URI = "file:///benchmark/big.py"
TEMPLATE = '''

class Record{n}:
    """A record with a name, a size and tags, number {n}."""

    def __init__(self, name, size=0, tags=None):
        self.name = name
        self.size = size
        self.tags = list(tags or [])

    def describe(self, verbose=False):
        parts = [f"{{self.name}} ({{self.size}})"]
        if verbose and self.tags:
            parts.append(", ".join(sorted(self.tags)))
        return " - ".join(parts)

    def grow(self, amount):
        if amount < 0:
            raise ValueError("amount must not be negative")
        self.size += amount
        return self


def summarise_{n}(records):
    totals = {{}}
    for record in records:
        for tag in record.tags:
            totals[tag] = totals.get(tag, 0) + record.size
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))
'''


def big_file(lines: int = 2000) -> str:
    """A deterministic, valid Python module of exactly `lines` lines."""
    text, n = "import os\nimport sys\n", 0
    while text.count("\n") + TEMPLATE.count("\n") <= lines:
        text += TEMPLATE.format(n=n)
        n += 1
    text += "# end of module\n" * (lines - text.count("\n"))
    ast.parse(text)
    return text


def cursor_line(text: str) -> int:
    """The 0-based line of a `self.size += amount` in the middle of the file: the cursor goes at its start."""
    lines = text.splitlines()
    middle = len(lines) // 2
    return next(i for i in range(middle, len(lines)) if lines[i].strip() == "self.size += amount")


class Client:
    """An editor's side: a language client that types at a cursor and asks for inline completions."""

    def __init__(self):
        self.client = LanguageClient("fimlsp-benchmark", "1")
        self.client.feature(types.WINDOW_LOG_MESSAGE)(lambda *args: self._log(args[-1]))
        self.line = self.character = 0
        self.version = 1
        self.setups: list[tuple[str, float]] = []

    def _log(self, params: types.LogMessageParams) -> None:
        match = re.search(r"recognizer (.*) in ([\d.]+) ms", params.message)
        if match:
            self.setups.append((f"recognizer {match.group(1)}", float(match.group(2))))
        elif "from the last suggestion" in params.message:
            self.setups.append(("served from cache", 0.0))

    async def request(self) -> tuple[float, str]:
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=types.Position(line=self.line, character=self.character),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
        )
        started = time.perf_counter()
        answer = await self.client.text_document_inline_completion_async(params)
        elapsed = time.perf_counter() - started
        return elapsed, answer.items[0].insert_text if answer and answer.items else ""

    def type(self, character: str) -> None:
        position = types.Position(line=self.line, character=self.character)
        self.version += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=self.version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=position, end=position), text=character)],
        ))
        self.character += 1


def jump_targets(text: str, count: int, seed: int = 0) -> list[tuple[int, int]]:
    """`count` (line, column) positions at the start of the code of random non-blank, non-comment lines."""
    lines = text.splitlines()
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    rng = random.Random(seed)
    return [(i, len(lines[i]) - len(lines[i].lstrip())) for i in rng.sample(code, count)]


async def run_case(command: list[str], settings: dict, text: str, edits: int, follow: bool,
                   jumps: list[tuple[int, int]] | None = None) -> tuple[list[float], list[tuple[str, float]]]:
    driver = Client()
    client = driver.client
    await client.start_io(*command)
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options=settings))
        client.initialized(types.InitializedParams())
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fimlsp.modelStatus", arguments=[]))
        if not status["ready"]:
            raise SystemExit(f"server_latency: the model did not load: {status['error']}")
        driver.line = cursor_line(text)
        content = text.splitlines()[driver.line]
        driver.character = len(content) - len(content.lstrip())
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=URI, language_id="python", version=1, text=text)))
        _, suggestion = await driver.request()  # the first request builds everything once
        times: list[float] = []
        driver.setups.clear()
        for edit in range(edits):
            if jumps is not None:
                driver.line, driver.character = jumps[edit]
                elapsed, answer = await driver.request()
                times.append(elapsed)
                continue
            typed = suggestion[0] if follow and suggestion else "x"
            driver.type(typed)
            elapsed, answer = await driver.request()
            times.append(elapsed)
            suggestion = suggestion[1:] if follow and suggestion else answer
            if follow and not suggestion:
                _, suggestion = await driver.request()
        await client.shutdown_async(None)
        client.exit(None)
        return times, driver.setups
    finally:
        await client.stop()


def summary(times: list[float]) -> str:
    ms = sorted(1e3 * t for t in times)
    return f"median {statistics.median(ms):7.1f} ms  (min {ms[0]:.1f}, max {ms[-1]:.1f}, n={len(ms)})"


async def main_async(args: argparse.Namespace) -> int:
    text = big_file(2000)
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if model is None:
            import torch

            from fimlsp.training.tiny import build_tiny_model

            torch.set_num_threads(1)
            model = str(build_tiny_model(Path(scratch) / "tiny"))
        command = [sys.executable, "-m", "fimlsp", "serve", "--log-level", "info"]
        base = {"model": model, "device": args.device, "maxTokens": args.max_tokens, "attempts": args.attempts,
                "timeBudget": 60, "singleLine": "never"}
        print(f"file: 2,000 lines, {len(text):,} characters; cursor at line {cursor_line(text) + 1}; "
              f"model: {'tiny random test model' if args.model is None else model}; max tokens {args.max_tokens}; "
              f"attempts {args.attempts}")
        cases = [
            ("no caches", {**base, "cache": False}, False, None),
            ("caches, new text", base, False, None),
            ("caches, typed the suggestion", base, True, None),
            ("caches, cursor jumps", base, False, jump_targets(text, args.jumps)),
        ]
        for name, settings, follow, jumps in cases:
            count = args.edits if jumps is None else len(jumps)
            times, setups = await run_case(command, settings, text, count, follow, jumps)
            print(f"{name:30s} {summary(times)}   server: {setup_summary(setups)}")
    return 0


def setup_summary(setups: list[tuple[str, float]]) -> str:
    """How the server got the recognizer for each request, and the median time it took."""
    kinds: dict[str, list[float]] = {}
    for how, ms in setups:
        kinds.setdefault(how, []).append(ms)
    return "; ".join(
        f"{how} x{len(ms)}" + (f" (median {statistics.median(ms):.1f} ms, p95 {_p95(ms):.1f} ms)"
                               if how != "served from cache" else "")
        for how, ms in kinds.items()
    )


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: build the tiny random test model)")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument("--edits", type=int, default=10, help="one-character edits per case (default: 10)")
    parser.add_argument("--max-tokens", type=int, default=8, help="most tokens per completion (default: 8)")
    parser.add_argument("--jumps", type=int, default=40, help="cursor jumps in the last case (default: 40)")
    parser.add_argument("--attempts", type=int, default=Settings.attempts,
                        help="the server's attempts setting: greedy middles per completion (default: %(default)s)")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
