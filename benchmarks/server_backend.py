"""The server backend (`fimlsp complete --model-server URL`): round trips per completion and the share of tokens that
speculation answered without a request, against a real llama.cpp server (`python -m llama_cpp.server`, or with
`--engine llama-server` llama.cpp's own, built by tests/install-llama-server.sh) serving the shipped model as GGUF,
at seeded cursors in CPython's standard library (after `return ` or `= `).

Each cursor is completed as `fimlsp complete` does by default (constrained, block scope, ending with the
statement, three greedy attempts). Reported: the middles that make the file valid; round trips (completion requests)
per completion; steps (tokens decoded, over all attempts) per completion; the share of steps answered from a
speculative run; the server's milliseconds per step (wall time of the requests over the steps); wall time per
completion; and, with the same cursors and options, how many middles equal those of the transformers backend (the
same weights in fp32 rather than in the GGUF file's fp16/fp32 mix), and the CLI's wall time for one completion
through the server (a cold start: Python, fimlsp, the vocabulary, connecting).

    OMP_NUM_THREADS=1 python benchmarks/server_backend.py [--cursors N] [--seed S] [--attempts K] [--engine E]
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
sys.path.insert(0, str(ROOT))

from fimlsp.decoding import DecodingOptions, complete_middles  # noqa: E402
from fimlsp.model.remote import connect  # noqa: E402
from harness.corpus import split, stdlib_cuts  # noqa: E402
from harness.llama_server import LLAMA_CPP_ENGINE, PYTHON_ENGINE, llama_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cursors", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--attempts", type=int, default=DecodingOptions.attempts)
    parser.add_argument("--no-transformers", action="store_true", help="skip the comparison with transformers")
    parser.add_argument("--engine", choices=(PYTHON_ENGINE, LLAMA_CPP_ENGINE), default=PYTHON_ENGINE)
    args = parser.parse_args()
    options = DecodingOptions(scope="block", statement_end=True, attempts=args.attempts, max_tokens=128)
    cuts = stdlib_cuts(args.cursors, args.seed)
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder), args.engine) as url:
        model = connect(url)
        rows = []
        for path, line, column in cuts:
            left, right = split(path, line, column)
            before = model.round_trips, model.steps, model.speculated
            clock = time.perf_counter()
            result = complete_middles(model, left, right, options)[0]
            wall = time.perf_counter() - clock
            if result.valid:
                ast.parse(left + result.middle + right)
            rows.append({"cursor": f"{path.name}:{line}:{column}", "middle": result.middle, "valid": result.valid,
                         "round_trips": model.round_trips - before[0], "steps": model.steps - before[1],
                         "speculated": model.speculated - before[2], "model_seconds": result.model_seconds,
                         "wall": wall, "ending": result.ending})
        path, line, column = cuts[0]
        clock = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "fimlsp", "complete", f"{path}:{line}:{column}",
                               "--model-server", url], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        cli_seconds = time.perf_counter() - clock
        model.close()
    report(rows, cli_seconds if done.returncode == 0 else None, engine=args.engine, api=model.protocol,
           prompts="token ids" if model.token_prompts else "text")
    if not args.no_transformers:
        agreement(cuts, rows, options)


def report(rows: list[dict], cli_seconds: float | None, engine: str, api: str, prompts: str) -> None:
    for row in rows:
        print(f"{row['cursor']:24} valid={row['valid']!s:5} trips={row['round_trips']:3} steps={row['steps']:4} "
              f"speculated={row['speculated']:4} {row['wall']:6.2f} s  {row['ending']:9} {row['middle'][:40]!r}")
    completions = len(rows)
    steps = sum(row["steps"] for row in rows)
    trips = sum(row["round_trips"] for row in rows)
    print(f"\nserver: {engine} ({api} API, {prompts} prompts), shipped model as GGUF; {completions} completions")
    print(f"valid middles:                {sum(row['valid'] for row in rows)}/{completions}")
    print(f"round trips per completion:   {trips / completions:.1f} (median {statistics.median(r['round_trips'] for r in rows)})")
    print(f"steps per completion:         {steps / completions:.1f}")
    print(f"steps answered speculatively: {sum(row['speculated'] for row in rows) / max(1, steps):.1%}")
    print(f"server ms per step:           {1e3 * sum(row['model_seconds'] for row in rows) / max(1, steps):.1f}")
    print(f"wall per completion:          median {statistics.median(row['wall'] for row in rows):.2f} s")
    print(f"CLI, one completion:          {'failed' if cli_seconds is None else f'{cli_seconds:.2f} s'}")


def agreement(cuts, rows: list[dict], options: DecodingOptions) -> None:
    from fimlsp.model import load_model

    model = load_model(device="cpu")
    same = 0
    for (path, line, column), row in zip(cuts, rows):
        left, right = split(path, line, column)
        same += complete_middles(model, left, right, options)[0].middle == row["middle"]
    print(f"same middle as transformers:  {same}/{len(rows)}")


if __name__ == "__main__":
    main()
