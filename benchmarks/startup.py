"""From starting `fimlsp serve` to `initialize` answered, to the model ready, and to the first completion answered,
each next to a reference measured in the same run: starting `python -c pass`.

A client starts the server as an editor does (no settings: the shipped model through its default engine), sends
`initialize` at once, then `initialized`, opens a small file and asks for an inline completion at once (the
request waits for the model). Each run is a new process; the figures are the median over `--runs` of:

- `initialize`: the process's start to `initialize` answered (the server's imports and its setup);
- `ready`: to the answer of `fimlsp.modelStatus` (sent after the completion request), the model ready;
- `first answer`: to the first completion's answer;
- `initialize cpu`, `ready cpu`: the CPU seconds the server had used by then (all its threads): what the machine's
  load does not change, where the wall-clock figures grow with it;
- the reference: `python -c pass`, started and ended, run between the server's runs.

With `--baseline DIR` (a copy of another commit's `fimlsp` and `earley` packages, e.g. `git archive REV fimlsp
earley | tar -x -C DIR`), each run also starts the server from DIR, so that the two compare in the same run.

    python benchmarks/startup.py [--runs 5] [--model NAME] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.rpc_client import RpcClient, document_params, position_params  # noqa: E402

URI = "file:///startup/example.py"
TEXT = "def area(width, height):\n    return width * height\n\n\ntotal = \n"
AUTOMATIC = 2  # InlineCompletionTriggerKind.Automatic


def reference_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


@contextlib.contextmanager
def working_directory(folder: Path | None):
    """`python -m fimlsp` started in `folder` runs the packages there (the current directory comes first)."""
    previous = Path.cwd()
    if folder is not None:
        os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def one_run(model: str | None, checkout: Path | None = None) -> dict[str, float]:
    """Seconds from the process's start to each milestone of one server run (of the packages in `checkout`)."""
    started = time.perf_counter()
    with working_directory(checkout):
        client = RpcClient()
    with client:
        client.response(client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                                      "initializationOptions": {"model": model} if model else None}))
        initialized = time.perf_counter() - started
        initialized_cpu = cpu_seconds(client.process.pid)
        client.notify("initialized", {})
        client.notify("textDocument/didOpen", document_params(URI, TEXT))
        asked = client.request("textDocument/inlineCompletion", {
            **position_params(URI, 4, len("total = ")), "context": {"triggerKind": AUTOMATIC}})
        status = client.wait_for_model()
        assert status["ready"], status
        ready = time.perf_counter() - started
        ready_cpu = cpu_seconds(client.process.pid)
        client.response(asked)
        answered = time.perf_counter() - started
        client.response(client.request("shutdown"))
        client.notify("exit")
        client.exit_status()
    return {"initialize": initialized, "ready": ready, "first answer": answered,
            "initialize cpu": initialized_cpu, "ready cpu": ready_cpu}


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, all threads) the process has used so far, from Linux's /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", help="a model name or path (default: the shipped model)")
    parser.add_argument("--baseline", type=Path, help="a folder holding another commit's fimlsp and earley")
    args = parser.parse_args()
    servers = {"this checkout": None, **({f"baseline {args.baseline}": args.baseline.resolve()} if args.baseline else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    references = []
    for _ in range(args.runs):
        references.append(reference_seconds())
        for name, checkout in servers.items():
            runs[name].append(one_run(args.model, checkout))
    reference = statistics.median(references)
    print(f"reference (python -c pass): median {1e3 * reference:.0f} ms over {args.runs} runs")
    for name, measured in runs.items():
        print(name)
        for milestone in measured[0]:
            values = [run[milestone] for run in measured]
            seconds = statistics.median(values)
            ratio = "" if milestone.endswith("cpu") else f" = {seconds / reference:5.1f} x reference"
            print(f"  {milestone:>14}: median {seconds:6.2f} s{ratio} (range {min(values):.2f}-{max(values):.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
