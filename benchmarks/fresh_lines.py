"""What a user sees at fresh indented lines: the cursor after Enter and the editor's indentation.

At `--count` code lines of the model's held-out files (seeded), the line is taken out and the cursor put after its
indentation, the right context going on at the line break, as an editor has it when a new line is started. The
completion is asked as the server asks at an automatic trigger (single line, block scope, the default attempts,
3 alternatives). Counted over the middles shown first: empty ones (the editor shows nothing), ones that begin
with whitespace (the accepted line is misindented), ones that are only whitespace, and ones equal to the line's
code. `--show` prints each line's code and the middles.

    python benchmarks/fresh_lines.py [--model DIR] [--count N] [--seed S] [--show]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fimlsp.decoding import DecodingOptions, complete_middles  # noqa: E402
from fimlsp.language import Caches  # noqa: E402
from fimlsp.model.loading import load_model  # noqa: E402
from fimlsp.weights import default_model_path  # noqa: E402
from fimlsp.corpus_manifest import resolve_files  # noqa: E402
from fimlsp.model.folder import CORPUS_MANIFEST  # noqa: E402
from harness.corpus import fresh_lines  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=default_model_path())
    parser.add_argument("--count", type=int, default=80)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    model = load_model(args.model)
    manifest = json.loads((args.model / CORPUS_MANIFEST).read_text(encoding="utf-8"))
    files, _missing = resolve_files(manifest, "heldout")
    options = DecodingOptions(max_tokens=128, scope="block", single_line=True)
    caches = Caches()
    firsts = []
    for left, right, code in fresh_lines([Path(path) for _name, path in files], args.count, args.seed):
        middles = [result.middle for result in complete_middles(model, left, right, options, 3, caches=caches)]
        firsts.append((middles[0], code))
        if args.show:
            print(f"{code!r}\n    {middles}")
    shown = [middle for middle, _code in firsts]
    print(f"{len(firsts)} fresh lines; middles shown first: empty {sum(not m for m in shown)}, "
          f"beginning with whitespace {sum(m[:1].isspace() for m in shown)}, "
          f"only whitespace {sum(bool(m) and m.isspace() for m in shown)}, "
          f"the line's code {sum(middle == code for middle, code in firsts)}")


if __name__ == "__main__":
    main()
