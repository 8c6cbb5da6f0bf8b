"""What the repository context costs a completion in the server, on a workspace of real files: the time to index
it in the background, what completions pay for the context while it indexes and after, and the shipped model's
completion on the same cursors for scale (all measured in this run).

The workspace is `--files` copies of the standard library's modules (packages `copy_0/`, `copy_1/`, ... each a
copy of the library, the last one partial) in a temporary folder. The server's path is driven as an editor does:
`EditorContext` with the folder as `initialize`'s workspace, the document opened, and `snippets` asked before
each completion with the budget of a model of `--window` tokens (the context is on for it). While the background
thread indexes, completions at one cursor ask every 5 ms (a user typing); then, once the workspace is indexed, each
of `--cursors` random cursors is asked twice, the second time once the background has done what the first asked
(its names resolved, the lines of the files its search found read): a second keystroke. Reported: the
index's time and size, the context's time per completion (median, p95, max) during and after, as milliseconds and
as a share of the model's time per completion (wall-clock, and the CPU time of the completion's thread, which
other processes on a loaded machine do not inflate), and the files read on the completion's thread (none: the index, the
declarations and the search's chunks are the background's).

    python -m benchmarks.context_index [--files 5000] [--cursors 40] [--window 8192] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fimlsp.context.editor import EditorContext  # noqa: E402
from fimlsp.workspace import Workspace  # noqa: E402
from harness.corpus import stdlib_files  # noqa: E402


def copied_workspace(folder: Path, count: int) -> list[tuple[Path, str]]:
    """`count` files: the standard library's modules copied under `copy_N/` folders, as (path, text)."""
    library = stdlib_files()
    written = []
    for number in range(count):
        relative, text = library[number % len(library)]
        path = folder / f"copy_{number // len(library)}" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append((path, text))
    return written


def cursors(files: list[tuple[Path, str]], count: int, rng: random.Random) -> list[tuple[Path, str, str]]:
    """(path, left, right) at the middle of a random indented line of a random file."""
    found = []
    while len(found) < count:
        path, text = rng.choice(files)
        lines = text.splitlines(keepends=True)
        indented = [number for number, line in enumerate(lines) if line.startswith("    ") and len(line.strip()) > 8]
        if not indented:
            continue
        number = rng.choice(indented)
        offset = sum(len(line) for line in lines[:number]) + len(lines[number].rstrip()) // 2
        found.append((path, text[:offset], text[offset:]))
    return found


class CountedReads:
    """Counts `Workspace.read` by thread: what the completion's own thread reads."""

    def __init__(self):
        self.by_thread: dict[int, int] = {}
        self._read = Workspace.read
        counter = self

        def read(workspace, path):
            ident = threading.get_ident()
            counter.by_thread[ident] = counter.by_thread.get(ident, 0) + 1
            return counter._read(workspace, path)

        Workspace.read = read

    def close(self) -> None:
        Workspace.read = self._read


def _summary(seconds: list[float], model_ms: float | None) -> str:
    ordered = sorted(seconds)
    median, p95 = statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000
    share = f" ({p95 / model_ms:.1%} of the model's median completion)" if model_ms else ""
    return f"median {median:.2f} ms, p95 {p95:.2f} ms{share}, max {ordered[-1] * 1000:.2f} ms over {len(ordered)}"


def model_reference(points: list[tuple[Path, str, str]]) -> float:
    """The shipped model's median completion, in ms, at `points` (16 tokens, constrained, one attempt)."""
    from fimlsp.decoding import DecodingOptions
    from fimlsp.decoding.attempts import complete_middles
    from fimlsp.model import load_model

    model = load_model(None, "cpu")
    options = DecodingOptions(max_tokens=16, attempts=1, search_budget=20_000)
    times = []
    for _, left, right in points:
        clock = time.perf_counter()
        complete_middles(model, left, right, options)
        times.append(time.perf_counter() - clock)
    return statistics.median(times) * 1000


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--cursors", type=int, default=40)
    parser.add_argument("--window", type=int, default=8192, help="the model window the context is assembled for")
    parser.add_argument("--model-cursors", type=int, default=10, help="cursors the shipped model completes (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "workspace"
        clock = time.perf_counter()
        files = copied_workspace(folder, args.files)
        print(f"workspace: {len(files)} copies of standard-library modules, "
              f"{sum(len(text) for _, text in files) / 1e6:.1f} M characters, written in "
              f"{time.perf_counter() - clock:.1f} s")
        points = cursors(files, args.cursors, rng)
        model_ms = model_reference(points[:args.model_cursors]) if args.model_cursors else None
        if model_ms:
            print(f"the shipped model's completion (16 tokens) at {args.model_cursors} of the cursors: median "
                  f"{model_ms:.1f} ms")
        reads = CountedReads()
        editor = EditorContext()
        editor.initialize([{"uri": folder.as_uri(), "name": "workspace"}], None)
        completion_thread = threading.get_ident()
        typed_path, typed_left, typed_right = points[0]  # the document being typed in while the index is built
        try:
            editor.opened(typed_path.as_uri(), typed_left + typed_right)
            clock = time.perf_counter()
            during: list[float] = []
            during_cpu: list[float] = []
            answered_early = 0
            while True:  # the first completion starts the context
                tick, cpu = time.perf_counter(), time.thread_time()
                editor.snippets(typed_path.as_uri(), typed_left, typed_right, "workspace", "", args.window)
                during.append(time.perf_counter() - tick)
                during_cpu.append(time.thread_time() - cpu)
                context = editor._started("")
                if context.indexed.is_set():
                    break
                answered_early += 1
                time.sleep(0.005)
            indexed_seconds = time.perf_counter() - clock
            indexed_files = len(context.index)
            reads_during = reads.by_thread.get(completion_thread, 0)
            context.settle(600)
            after, after_cpu, chars, reads_after = [], [], [], 0
            for path, left, right in points:  # a keystroke at each cursor, then the next once the background is done
                editor.snippets(path.as_uri(), left, right, "workspace", "", args.window)
                context.settle(600)
                before = reads.by_thread.get(completion_thread, 0)
                tick, cpu = time.perf_counter(), time.thread_time()
                found = editor.snippets(path.as_uri(), left, right, "workspace", "", args.window)
                after.append(time.perf_counter() - tick)
                after_cpu.append(time.thread_time() - cpu)
                reads_after += reads.by_thread.get(completion_thread, 0) - before
                chars.append(sum(len(snippet.text) for snippet in found))
        finally:
            editor.shutdown()
            reads.close()
        print(f"indexed {indexed_files} files in the background in {indexed_seconds:.1f} s "
              f"({indexed_files / indexed_seconds:.0f} files/s) while completions at one cursor asked every 5 ms: "
              f"{answered_early} answered before it finished, reading {reads_during} files on their own thread")
        print(f"context per completion while indexing: the first (it starts the background) "
              f"{during[0] * 1000:.2f} ms; the others {_summary(during[1:], model_ms)}; CPU time of the "
              f"completion's thread {_summary(during_cpu[1:], model_ms)}")
        print(f"context per completion once indexed, at the second keystroke of {len(points)} cursors: "
              f"{_summary(after, model_ms)}; CPU time of the completion's thread {_summary(after_cpu, model_ms)}; "
              f"{statistics.mean(chars):.0f} characters of context each, {reads_after} files read on the completion's "
              f"thread (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
