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

With `--first-seconds` it measures instead what a new user meets, with the shipped model and the server's default
settings (default time budget, attempts and token limit), at real cursors: seeded lines of code in CPython's standard
library, each cut after its first word-and-operator and with the rest of the line removed (the middle to write):

- the time from starting the server to the first suggestion: `initialize`, then one request at once, asked again
  (as an editor does at the next keystroke) until it gets a suggestion;
- on the quiet machine, then with two busy processes beside the server (a CPU load made by the benchmark, for the
  phase only), `--cursors` requests one after another: the share answered with a suggestion with which the file
  compiles, and the median and p95 latency;
- with `timeBudget` 0.1, 0.25 and 0.4 s, the median and p95 latency (does the budget bound the answer's time?).

The server's timing line for each request (queued, setup, decoding) is summarised per phase.

    python benchmarks/server_latency.py [--model DIR] [--device DEV] [--edits N] [--max-tokens N] [--jumps N]
                                        [--attempts K]
    python benchmarks/server_latency.py --first-seconds [--model DIR] [--cursors N]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import multiprocessing
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fimlsp.python.syntax import compiles  # noqa: E402
from fimlsp.server.config import Settings  # noqa: E402
from harness.corpus import STDLIB  # noqa: E402

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

            from harness.tiny_model import build_tiny_model

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


# --first-seconds ------------------------------------------------------------------------------------------------

# A line whose middle is an expression: `name = <middle>` or `return <middle>` (the cursor after the space).
_EXPRESSION_LINE = re.compile(r"^([ \t]*(?:return|[A-Za-z_][\w.]*[ \t]*=)[ \t])(\S.*)$")
BUDGETS = (0.1, 0.25, 0.4)
BUSY_PROCESSES = 2


@dataclass(frozen=True)
class Cursor:
    """A real file cut at a cursor: `left` + `right` is the file with the rest of the cursor's line removed."""

    uri: str
    line: int
    character: int
    left: str
    right: str


def stdlib_cursors(count: int, seed: int = 0) -> list[Cursor]:
    """`count` cursors in distinct standard-library modules (2-40 kB), after `name = ` or `return ` of a line whose
    rest is a one-line expression: the middle is that expression, and a valid middle makes the file parse."""
    rng = random.Random(seed)
    paths = sorted(path for path in STDLIB.glob("*.py") if 2_000 <= path.stat().st_size <= 40_000)
    rng.shuffle(paths)
    cursors: list[Cursor] = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines(keepends=True)
        candidates = []
        for number, line in enumerate(lines):
            match = _EXPRESSION_LINE.match(line.rstrip("\r\n"))
            if match and not match.group(2).rstrip().endswith(("(", "[", "{", "\\", ",")):
                try:
                    ast.parse(match.group(2).strip(), mode="eval")
                except SyntaxError:
                    continue
                candidates.append((number, match))
        if not candidates:
            continue
        number, match = rng.choice(candidates)
        start = sum(len(line) for line in lines[:number])
        left = text[:start] + match.group(1)
        right = lines[number][len(match.group(0)):] + "".join(lines[number + 1:])
        cursors.append(Cursor(path.as_uri(), number, len(match.group(1)), left, right))
        if len(cursors) == count:
            return cursors
    raise SystemExit(f"server_latency: found only {len(cursors)} cursors in {STDLIB}")


def _busy(seconds: float) -> None:
    """A busy process: spins on the CPU for `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(10_000))


class BusyProcesses:
    """`count` busy processes beside the server while the block runs, each ending by itself after `seconds`."""

    def __init__(self, count: int, seconds: float):
        self.count, self.seconds = count, seconds
        self.processes: list[multiprocessing.Process] = []

    def __enter__(self):
        self.processes = [multiprocessing.Process(target=_busy, args=(self.seconds,), daemon=True)
                          for _ in range(self.count)]
        for process in self.processes:
            process.start()
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            process.terminate()
            process.join()


@dataclass
class Answer:
    cursor: Cursor
    seconds: float
    middle: str  # "" when no suggestion
    valid: bool
    message: str  # the server's `fimlsp/status` message


class FirstSecondsClient:
    """A client that opens real files and asks once at each cursor, collecting the server's status messages and
    timing lines."""

    def __init__(self):
        self.client = LanguageClient("fimlsp-benchmark", "1")
        self.statuses: list[str] = []
        self.timings: list[str] = []
        self.opened: set[str] = set()
        self.client.feature("fimlsp/status")(lambda *args: self.statuses.append(args[-1].message))
        self.client.feature(types.WINDOW_LOG_MESSAGE)(lambda *args: self._log(args[-1]))

    def _log(self, params: types.LogMessageParams) -> None:
        if "total" in params.message and "queued" in params.message:
            self.timings.append(params.message)

    async def ask(self, cursor: Cursor) -> Answer:
        if cursor.uri not in self.opened:
            self.opened.add(cursor.uri)
            self.client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=cursor.uri, language_id="python", version=1,
                                                     text=cursor.left + cursor.right)))
        statuses = len(self.statuses)
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=cursor.uri),
            position=types.Position(line=cursor.line, character=cursor.character),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked))
        started = time.perf_counter()
        answer = await self.client.text_document_inline_completion_async(params)
        seconds = time.perf_counter() - started
        middle = answer.items[0].insert_text if answer and answer.items else ""
        for _ in range(100):  # the status notification follows the answer
            if len(self.statuses) > statuses:
                break
            await asyncio.sleep(0.01)
        message = self.statuses[-1] if len(self.statuses) > statuses else "(no status)"
        valid = bool(middle) and compiles(cursor.left + middle + cursor.right)
        return Answer(cursor, seconds, middle, valid, message)


def phase_summary(name: str, answers: list[Answer]) -> str:
    valid = sum(answer.valid for answer in answers)
    ms = sorted(1e3 * answer.seconds for answer in answers)
    return (f"{name:34s} {valid}/{len(answers)} with a valid suggestion; "
            f"latency median {statistics.median(ms):6.0f} ms, p95 {_p95(ms):6.0f} ms, max {ms[-1]:6.0f} ms")


def _timing_summary(lines: list[str]) -> str:
    """The server's own breakdown of the phase's requests: median of each part it reports."""
    parts: dict[str, list[float]] = {}
    for line in lines:
        for name, value in re.findall(r"(queued|in|decoding|total) ([\d.]+) ms", line):
            parts.setdefault("setup" if name == "in" else name, []).append(float(value))
    return ", ".join(f"{name} {statistics.median(values):.0f} ms" for name, values in parts.items()) or "none"


async def first_seconds(args: argparse.Namespace) -> int:
    phases = 2 + len(BUDGETS)
    cursors = stdlib_cursors(1 + phases * args.cursors, args.seed)
    command = [sys.executable, "-m", "fimlsp", "serve", "--log-level", "info"]
    settings = {"model": args.model, "device": args.device}
    print(f"model: {args.model or 'the shipped default'}; the server's default settings "
          f"(timeBudget {Settings.time_budget:g} s, attempts {Settings.attempts}, maxTokens {Settings.max_tokens}); "
          f"cursors in {STDLIB}")
    driver = FirstSecondsClient()
    client = driver.client
    started = time.perf_counter()
    await client.start_io(*command)
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options=settings))
        client.initialized(types.InitializedParams())
        initialized = time.perf_counter() - started
        asks, first = 0, None
        while time.perf_counter() - started < 120:
            asks += 1
            first = await driver.ask(cursors[0])
            if first.middle:
                break
        ready = time.perf_counter() - started
        print(f"first suggestion after start: {ready:.1f} s (initialize answered at {initialized:.1f} s; "
              f"{asks} request(s); valid: {first.valid}; last status: {first.message})")
        phases_cursors = [cursors[1 + phase * args.cursors:1 + (phase + 1) * args.cursors] for phase in range(phases)]
        for name, load in (("quiet", 0), (f"{BUSY_PROCESSES} busy processes beside it", BUSY_PROCESSES)):
            chosen = phases_cursors.pop(0)
            driver.timings.clear()
            with BusyProcesses(load, seconds=120):
                if load:
                    await asyncio.sleep(1.0)
                answers = [await driver.ask(cursor) for cursor in chosen]
            print(phase_summary(name, answers))
            _details(answers, driver.timings, args.verbose)
        for budget in BUDGETS:
            client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"fimlsp": {**settings, "timeBudget": budget}}))
            chosen = phases_cursors.pop(0)
            driver.timings.clear()
            answers = [await driver.ask(cursor) for cursor in chosen]
            print(phase_summary(f"quiet, timeBudget {budget:g} s", answers))
            _details(answers, driver.timings, args.verbose)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
    return 0


def _details(answers: list[Answer], timings: list[str], verbose: bool) -> None:
    print(f"    server's medians: {_timing_summary(timings)}")
    if verbose:
        for answer in answers:
            path = answer.cursor.uri.rsplit("/", 1)[-1]
            print(f"    {path}:{answer.cursor.line + 1}:{answer.cursor.character + 1} {1e3 * answer.seconds:6.0f} ms "
                  f"{'valid' if answer.valid else 'NOT VALID' if answer.middle else 'none'} {answer.middle[:40]!r}: "
                  f"{answer.message[:140]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: build the tiny random test model)")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument("--edits", type=int, default=10, help="one-character edits per case (default: 10)")
    parser.add_argument("--max-tokens", type=int, default=8, help="most tokens per completion (default: 8)")
    parser.add_argument("--jumps", type=int, default=40, help="cursor jumps in the last case (default: 40)")
    parser.add_argument("--attempts", type=int, default=Settings.attempts,
                        help="the server's attempts setting: greedy middles per completion (default: %(default)s)")
    parser.add_argument("--first-seconds", action="store_true",
                        help="measure the first suggestion after start, and answers at real cursors, quiet and under "
                             "load, with the shipped model and default settings (see above)")
    parser.add_argument("--cursors", type=int, default=5, help="requests per phase of --first-seconds (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="which standard-library cursors (default: 0)")
    parser.add_argument("--verbose", action="store_true", help="--first-seconds: one line per request")
    args = parser.parse_args()
    return asyncio.run(first_seconds(args) if args.first_seconds else main_async(args))


if __name__ == "__main__":
    sys.exit(main())
