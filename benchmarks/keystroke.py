"""Keystroke to answer through `fimlsp serve`, typing as the editors do, and where each answer's time went.

A client types real edits into held-out files of installed third-party packages (the shipped model's `corpus.json`
held them out of its training; the standard library is left out, most of it was trained on) through a real `fimlsp
serve` subprocess, with the shipped model (the GGUF through llama.cpp, when no model is named) and the editors'
default settings (no settings sent: the server's defaults are the extensions'). At each cursor, a seeded
single-line statement of the file, the statement is cut from its line and retyped, one character every
`--interval` seconds, as VS Code does: a `didChange` per keystroke, then an automatic
`textDocument/inlineCompletion`, the previous request cancelled (`$/cancelRequest`, as VS Code's language client
does when a newer request supersedes it). Reported:

- the time from starting the server to `initialize` answered, and to the model ready (`fimlsp.modelStatus`);
- keystroke to answer (median, p95) for the answers the user would see: the last request of each burst, timed from
  its keystroke (the `didChange`) to the answer's arrival; and how the burst's other requests ended;
- typing through a shown suggestion: its first `--through` characters typed one at a time, each answer awaited (the
  server's cache of the last suggestion should answer them without the model);
- the stage breakdown of the answers the user would see, from the `timings` of the server's `fimlsp/status`
  notification (docs/server.md): each stage's median and its share of the summed keystroke-to-answer time; `client
  side` is what the server's `total` leaves of it (the transport, `didChange`, the event loop), `decoder` what the
  stages leave of `total`.

    python benchmarks/keystroke.py [--files 3] [--bursts 2] [--characters 8] [--interval 0.15] [--through 3]
                                   [--seed 0] [--verbose]
"""

from __future__ import annotations

import argparse
import ast
import queue
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.server_latency import _p95  # noqa: E402
from fimlsp.evaluation.dataset import heldout_files, read_named  # noqa: E402
from fimlsp.weights import default_model, default_model_path  # noqa: E402
from harness.rpc_client import RpcClient, document_params, position_params  # noqa: E402

THIRD_PARTY = ("site-packages", "site-packages-1")  # the corpus's roots that are not the standard library
STAGES = ("document", "waiting", "context", "setup", "prompt", "tokens", "judges", "start", "searches", "checks")
AUTOMATIC = 2  # InlineCompletionTriggerKind.Automatic: what an editor sends as the user types


@dataclass(frozen=True)
class Cursor:
    """A single-line statement of a file, cut from its line: `text` is the file without it, the user retypes
    `statement` at (`line`, `column`), 0-based."""

    name: str
    uri: str
    text: str
    line: int
    column: int
    statement: str


@dataclass
class Answer:
    """One request: when its keystroke was sent, when its answer came, what it offered and the server's status."""

    keystroke: float
    answered: float | None = None
    middle: str = ""
    status: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.answered - self.keystroke


class StampedQueue(queue.Queue):
    """The client's incoming messages, each stamped with its arrival time (`_at`) by the reader thread."""

    def put(self, message, *args, **kwargs):
        if message is not None:
            message["_at"] = time.perf_counter()
        super().put(message, *args, **kwargs)


class Typist(RpcClient):
    """`fimlsp serve` and an editor's side of it that types and asks for an inline completion at each keystroke."""

    def __init__(self, *args: str):
        super().__init__(*args)
        self._incoming = StampedQueue()  # nothing has come yet: the server speaks only when spoken to
        self.version = 0

    def open(self, cursor: Cursor) -> None:
        self.version += 1
        self.notify("textDocument/didOpen", document_params(cursor.uri, cursor.text, self.version))

    def replace_text(self, cursor: Cursor) -> None:
        self.version += 1
        self.notify("textDocument/didChange", {"textDocument": {"uri": cursor.uri, "version": self.version},
                                               "contentChanges": [{"text": cursor.text}]})

    def keystroke(self, uri: str, line: int, column: int, character: str) -> tuple[int, Answer]:
        """Type `character` at (`line`, `column`) and ask for an inline completion after it, as an editor does."""
        answer = Answer(time.perf_counter())
        self.version += 1
        here = {"line": line, "character": column}
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.version},
                                               "contentChanges": [{"range": {"start": here, "end": here},
                                                                   "text": character}]})
        request = self.request("textDocument/inlineCompletion", {
            **position_params(uri, line, column + 1), "context": {"triggerKind": AUTOMATIC}})
        return request, answer

    def cancel(self, request: int) -> None:
        self.notify("$/cancelRequest", {"id": request})

    def answer(self, request: int, answer: Answer, uri: str, line: int, column: int) -> Answer:
        """Wait for `request`'s answer and the status notification that says how it went (a cancelled request
        gets none)."""
        message = self.response(request)
        answer.answered = message["_at"]
        if "error" in message:
            answer.status = {"message": f"cancelled: {message['error'].get('message')}"}
            return answer
        items = (message.get("result") or {}).get("items") or []
        answer.middle = items[0]["insertText"] if items else ""
        answer.status = self.wait_for(lambda status: status.get("method") == "fimlsp/status"
                                      and status["_at"] >= answer.keystroke
                                      and (status["params"]["uri"], status["params"]["line"],
                                           status["params"]["character"]) == (uri, line, column))["params"]
        return answer


def held_out_cursors(files: int, bursts: int, characters: int, seed: int) -> list[Cursor]:
    """`bursts` cursors in each of `files` seeded held-out third-party files (2-40 kB): single-line statements of
    plain ASCII, long enough to leave a middle after `characters` typed, docstrings left out."""
    found, _missing = heldout_files(default_model_path(), THIRD_PARTY)
    named = [(name, path) for name, path in found if 2_000 <= path.stat().st_size <= 40_000]
    random.Random(seed).shuffle(named)
    rng = random.Random(seed)
    cursors: list[Cursor] = []
    texts = dict(read_named(named))  # those that read and parse
    for name, path in named:
        if name not in texts:
            continue
        text = texts[name]
        lines = text.splitlines(keepends=True)
        statements = [node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.stmt)
                      and node.lineno == node.end_lineno and lines[node.lineno - 1].isascii()
                      and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
                      and characters + 4 <= node.end_col_offset - node.col_offset <= 80]
        if len(statements) < bursts:
            continue
        for node in sorted(rng.sample(statements, bursts), key=lambda node: node.lineno):
            line = lines[node.lineno - 1]
            statement = line[node.col_offset:node.end_col_offset]
            start = sum(len(previous) for previous in lines[:node.lineno - 1])
            cut = text[:start] + line[:node.col_offset] + line[len(line.rstrip("\r\n")):] + text[
                start + len(line):]
            cursors.append(Cursor(name, path.as_uri(), cut, node.lineno - 1, node.col_offset, statement))
        if len(cursors) == files * bursts:
            return cursors
    raise SystemExit(f"keystroke: found only {len(cursors) // bursts} held-out files with {bursts} cursors")


@dataclass
class Burst:
    """A statement retyped, and the suggestion shown after it typed through."""

    cursor: Cursor
    answers: list[Answer]  # one per keystroke, the last the one the user sees
    through: list[Answer]  # typing through the last answer's suggestion


def type_burst(typist: Typist, cursor: Cursor, characters: int, interval: float, through: int) -> Burst:
    """Retype the cursor's statement's first `characters` characters, a request per keystroke, each cancelling the
    last; then type through the suggestion shown at the end, a character at a time."""
    line, column = cursor.line, cursor.column
    pending: list[tuple[int, Answer, int]] = []
    for offset, character in enumerate(cursor.statement[:characters]):
        if pending:
            typist.cancel(pending[-1][0])
        request, answer = typist.keystroke(cursor.uri, line, column + offset, character)
        pending.append((request, answer, column + offset + 1))
        if offset + 1 < characters:
            time.sleep(interval)
    answers = [typist.answer(request, answer, cursor.uri, line, at) for request, answer, at in pending]
    shown, typed, at = answers[-1].middle, [], column + characters
    for character in shown[:min(through, len(shown) - 1)]:  # the last character would leave nothing to show
        if character in "\r\n":
            break
        request, answer = typist.keystroke(cursor.uri, line, at, character)
        typed.append(typist.answer(request, answer, cursor.uri, line, at + 1))
        at += 1
    return Burst(cursor, answers, typed)


def milliseconds(values: list[float]) -> str:
    if not values:
        return "n=0"
    ms = [1e3 * value for value in values]
    return f"median {statistics.median(ms):6.0f} ms, p95 {_p95(ms):6.0f} ms, max {max(ms):6.0f} ms (n={len(ms)})"


def breakdown(answers: list[Answer]) -> list[str]:
    """Each stage's median over `answers` and its share of their summed keystroke-to-answer time."""
    whole = sum(1e3 * answer.seconds for answer in answers)
    rows = []

    def row(stage: str, values: list[float]) -> None:
        share = 100 * sum(values) / whole if whole else 0.0
        rows.append(f"    {stage:12s} median {statistics.median(values):7.1f} ms  {share:5.1f}% of the time")

    timings = [answer.status.get("timings", {}) for answer in answers]
    for stage in STAGES:
        row(stage, [timing.get(stage, 0.0) for timing in timings])
    row("decoder", [timing["total"] - sum(timing.get(stage, 0.0) for stage in STAGES) for timing in timings])
    row("client side", [1e3 * answer.seconds - timing["total"] for answer, timing in zip(answers, timings)])
    rows.append(f"    (didChange applied in median {statistics.median(t.get('change', 0.0) for t in timings):.2f} ms,"
                " before each request)")
    return rows


def outcome(answer: Answer) -> str:
    message = answer.status.get("message", "")
    if answer.middle:
        return "suggestion"
    for kind in ("cancelled", "superseded"):
        if kind in message:
            return kind
    return message or "no status"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3, help="held-out files (default: 3)")
    parser.add_argument("--bursts", type=int, default=2, help="typing bursts per file (default: 2)")
    parser.add_argument("--characters", type=int, default=8, help="keystrokes per burst (default: 8)")
    parser.add_argument("--interval", type=float, default=0.15,
                        help="seconds between keystrokes in a burst (default: 0.15, about 80 words a minute)")
    parser.add_argument("--through", type=int, default=3,
                        help="characters of the shown suggestion typed through after each burst (default: 3)")
    parser.add_argument("--seed", type=int, default=0, help="which files and statements (default: 0)")
    parser.add_argument("--verbose", action="store_true", help="one line per burst")
    args = parser.parse_args()

    cursors = held_out_cursors(args.files, args.bursts, args.characters, args.seed)
    print(f"model: the shipped default ({default_model().name}); the editors' default settings; "
          f"{args.files} held-out files x {args.bursts} bursts of {args.characters} keystrokes every "
          f"{1e3 * args.interval:.0f} ms")
    started = time.perf_counter()
    with Typist("--log-level", "warning") as typist:
        typist.initialize()
        initialized = time.perf_counter() - started
        status = typist.wait_for_model()
        ready = time.perf_counter() - started
        if not status["ready"]:
            raise SystemExit(f"keystroke: the model did not load: {status['error']}")
        print(f"initialize answered {1e3 * initialized:.0f} ms after start; model ready {ready:.2f} s after start "
              f"({status['message']})")
        bursts, opened = [], set()
        for cursor in cursors:
            if cursor.uri in opened:
                typist.replace_text(cursor)
            else:
                typist.open(cursor)
                opened.add(cursor.uri)
            time.sleep(0.5)  # the user moves to the line before typing
            bursts.append(type_burst(typist, cursor, args.characters, args.interval, args.through))
            if args.verbose:
                last = bursts[-1].answers[-1]
                print(f"    {cursor.name}:{cursor.line + 1} typed {cursor.statement[:args.characters]!r} "
                      f"({cursor.statement!r}): {1e3 * last.seconds:.0f} ms {outcome(last)} {last.middle[:40]!r} "
                      f"{last.status.get('timings')}")
        typist.response(typist.request("shutdown"))
        typist.notify("exit")
        typist.exit_status()

    seen = [burst.answers[-1] for burst in bursts]
    print(f"keystroke to answer, last request of a burst: {milliseconds([answer.seconds for answer in seen])}; "
          f"{sum(bool(answer.middle) for answer in seen)}/{len(seen)} with a suggestion")
    earlier = [outcome(answer) for burst in bursts for answer in burst.answers[:-1]]
    print("    the bursts' earlier requests: " + ", ".join(
        f"{earlier.count(kind)} {kind}" for kind in sorted(set(earlier))))
    typed = [answer for burst in bursts for answer in burst.through]
    cached = sum("waiting" not in answer.status.get("timings", {}) for answer in typed)
    print(f"typing through a shown suggestion: {milliseconds([answer.seconds for answer in typed])}; "
          f"{cached}/{len(typed)} answered from the last suggestion")
    print("stages of the answers the user sees (the server's fimlsp/status timings):")
    print("\n".join(breakdown(seen)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
