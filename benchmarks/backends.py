"""The same model on each in-process engine: transformers + torch on the shipped model folder, llama.cpp on the
same model exported as a GGUF file (`fimlsp export-gguf`), one CPU thread each (torch's and llama.cpp's threads,
and OMP_NUM_THREADS=1 in the child processes).

On the same seeded cursors (a line of CPython's standard library cut in two, as `fimlsp eval --cases line`):

- model ms/token: the engine alone, a prompt pass (ms per prompt token) and greedy steps of one token (ms per step);
- suggestion latency: `complete_middle` with the CLI's defaults (the statement's end, 3 attempts), in a warm process:
  median and p95 wall time, the share of middles with which the file parses, and how many middles are the same on
  both engines;
- CLI cold start: `fimlsp complete FILE:LINE:COL --max-tokens 1` in a fresh process (imports, model load, the
  constraint's setup, one token), median of `--runs`; and the first suggestion in a fresh process with the
  defaults.

    python benchmarks/backends.py [--cases N] [--steps N] [--runs N]
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.corpus import STDLIB  # noqa: E402

FILES = ("textwrap.py", "shlex.py", "string.py", "fnmatch.py", "glob.py", "bisect.py", "colorsys.py", "heapq.py",
         "keyword.py", "copy.py", "graphlib.py", "numbers.py", "argparse.py", "difflib.py", "ast.py", "json/decoder.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12, help="cursors (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=32, help="greedy steps timed per cursor (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=3, help="cold starts per engine (default: %(default)s)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"

    from fimlsp.cases import line_cases
    from fimlsp.model.gguf_export import export_gguf
    from fimlsp.weights import default_model_path

    cases = list(line_cases([(name, (STDLIB / name).read_text()) for name in FILES], seed=7, count=args.cases))
    with tempfile.TemporaryDirectory() as folder:
        gguf = export_gguf(default_model_path(), Path(folder) / "default.gguf")
        engines = {"transformers": _load_transformers, "llama.cpp": lambda: _load_gguf(gguf)}
        middles: dict[str, list[str]] = {}
        print(f"{len(cases)} cursors (stdlib lines), one thread per engine\n")
        print(f"{'engine':14}{'prompt ms/tok':>14}{'step ms/tok':>12}{'median ms':>11}{'p95 ms':>8}{'parses':>8}"
              f"{'cold start s':>14}{'first suggestion s':>20}")
        for name, load in engines.items():
            model = load()
            prompt_rate, step_rate = _engine_rates(model, cases, args.steps)
            latencies, parsed, middles[name] = _suggestions(model, cases)
            model.close()
            target = _cold_start_target(Path(folder))
            model_argument = [] if name == "transformers" else ["--model", str(gguf)]
            cold = _cold_start(target, model_argument + ["--max-tokens", "1"], args.runs)
            first = _cold_start(target, model_argument, 1)
            print(f"{name:14}{prompt_rate:14.3f}{step_rate:12.2f}{statistics.median(latencies):11.0f}"
                  f"{_p95(latencies):8.0f}{f'{parsed}/{len(cases)}':>8}{cold:14.2f}{first:20.2f}")
        same = sum(ours == theirs for ours, theirs in zip(*middles.values()))
        print(f"\nthe same middle on both engines: {same}/{len(cases)}")
    return 0


def _load_transformers():
    import torch

    from fimlsp.model import load_model
    from fimlsp.weights import default_model_path

    torch.set_num_threads(1)
    return load_model(default_model_path(), "cpu")


def _load_gguf(path: Path):
    from fimlsp.model.llama_engine import load_gguf

    return load_gguf(path, threads=1)


def _engine_rates(model, cases, steps: int) -> tuple[float, float]:
    """Milliseconds per prompt token and per greedy step, over all cursors (after one untimed warm-up)."""
    prompt_seconds = step_seconds = 0.0
    prompt_tokens = stepped = 0
    for index, case in enumerate([cases[0], *cases]):
        ids = model.prompt(case.left, case.right, steps)
        clock = time.perf_counter()
        prompt_pass = model.prompt_pass(ids)
        log_probs = prompt_pass.log_probs
        prompted = time.perf_counter()
        session = prompt_pass.session()
        for _ in range(steps):
            log_probs = session.step([int(log_probs.argmax())])[0]
        session.close()
        if index:
            prompt_seconds += prompted - clock
            step_seconds += time.perf_counter() - prompted
            prompt_tokens += len(ids)
            stepped += steps
    return 1e3 * prompt_seconds / prompt_tokens, 1e3 * step_seconds / stepped


def _suggestions(model, cases) -> tuple[list[float], int, list[str]]:
    from fimlsp.decoding import DecodingOptions, complete_middle

    options = DecodingOptions(statement_end=True)
    complete_middle(model, cases[0].left, cases[0].right, options)  # the grammar's tables, built once a process
    latencies, parsed, middles = [], 0, []
    for case in cases:
        clock = time.perf_counter()
        result = complete_middle(model, case.left, case.right, options)
        latencies.append(1e3 * (time.perf_counter() - clock))
        middles.append(result.middle)
        try:
            ast.parse(case.left + result.middle + case.right)
            parsed += 1
        except SyntaxError:
            pass
    return latencies, parsed, middles


def _cold_start_target(folder: Path) -> str:
    """FILE:LINE:COL in a copy of textwrap.py: after a `return ` keyword."""
    text = (STDLIB / "textwrap.py").read_text()
    source = folder / "textwrap.py"
    source.write_text(text)
    lines = text.splitlines()
    line = next(index for index, each in enumerate(lines, 1) if each.strip().startswith("return ") and index > 100)
    column = lines[line - 1].index("return ") + len("return ") + 1
    return f"{source}:{line}:{column}"


def _cold_start(target: str, extra: list[str], runs: int) -> float:
    """Median wall seconds of `fimlsp complete` in a fresh interpreter."""
    seconds = []
    for _ in range(runs):
        clock = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fimlsp", "complete", target, *extra], capture_output=True, check=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
        seconds.append(time.perf_counter() - clock)
    return statistics.median(seconds)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


if __name__ == "__main__":
    sys.exit(main())
