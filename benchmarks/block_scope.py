"""Block scope against file scope at the end of function bodies, where a middle is most tempted to escape.

Each cut puts the cursor at the end of the last statement of a function body (maybe inside its last block) in a
held-out standard-library file (the code after it dedents). A middle *escapes* when it starts a logical line
below the indentation of the cursor's line (it closes the block and writes past it), and it *re-lexes* the
right context when the right context's tokens after the first one change (`tokenize` of `left + right` against
`left + middle + right`). Both scopes decode the same cuts, greedy and constrained, with a randomly initialised
model of the shipped tokenizer (it never chooses to stop) and with the shipped model.

    python -m benchmarks.block_scope [--cases N] [--max-tokens T] [--seed S]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness.block_scope import function_end_cuts, lowest_new_line, relexes


def main() -> int:
    from fimlsp.decoding import DecodingOptions, complete_middle
    from fimlsp.evaluation.dataset import heldout_files, read_named
    from fimlsp.model import load_model
    from fimlsp.weights import default_model_path
    from harness.tiny_model import build_tiny_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="function-end cuts")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    named, _ = heldout_files(default_model_path(), ["stdlib"])
    cuts = function_end_cuts(read_named(named, 60_000), args.cases, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        models = {"random": load_model(build_tiny_model(Path(scratch) / "random"), "cpu"),
                  "shipped": load_model(None, "cpu")}
        print(f"{len(cuts)} function-end cuts, greedy, constrained, {args.max_tokens} tokens")
        print(f"{'model':<8} {'scope':<6} {'valid':>6} {'escaped':>8} {'re-lexed':>9} {'fell back':>10} "
              f"{'median chars':>13}")
        for label, model in models.items():
            for scope in ("block", "file"):
                valid = escaped = relexed = fell_back = 0
                lengths = []
                for _, left, right, indentation in cuts:
                    result = complete_middle(model, left, right, DecodingOptions(max_tokens=args.max_tokens,
                                                                                 scope=scope))
                    valid += bool(result.parses)
                    escaped += lowest_new_line(left, result.middle, right) < indentation
                    relexed += relexes(left, result.middle, right)
                    fell_back += scope == "block" and result.scope == "file"
                    lengths.append(len(result.middle))
                lengths.sort()
                total = len(cuts)
                print(f"{label:<8} {scope:<6} {valid / total:>6.1%} {escaped / total:>8.1%} {relexed / total:>9.1%} "
                      f"{fell_back / total:>10.1%} {lengths[total // 2]:>13}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
