"""Members after a dot (issue 49), after MGD's DotPrompts: the next identifier and the whole line, with `--members
strict` against `off` (with the call judge as the editors set it beside each: strict, off), and strict with the
file's own names weighed in (`member_usage`) against strict without them.

Cursors are right after a `.` that a name follows, in code (not comments or strings) of installed third-party
packages the shipped model never saw (none of their files is in its `corpus.json`, train or held out); the true
middle is the rest of the line. Each cursor is completed by the shipped model, constrained, as the editors ask
(block scope, names strict, one line, greedy, one attempt), once per member setting: off (calls off), strict with
`member_usage` 0 (the judge's mask alone) and strict with `--usage` (the option's default unless given), calls
strict with both.
Reported: next-identifier match (the first identifier written is the true one), whole-line exact match, validity,
and time: the model's (prompt and tokens) next to what the member and call judges added (their own time, waits on
the analysis included: the completion's `member_judge` and `call_judge` stages; of it, the member judge's waits; and
the whole completion's time with them on less off, median and p95, over all cursors and over those where both
settings write the same middle: elsewhere the difference is mostly the other middle's, longer or shorter), at the
cursor (the first completion of that document) and a keystroke later (the true middle's first character typed: the
same line, `--typing-gap` after the first completion: the analysis asks ahead then, as between keystrokes). How
often a keystroke's judges spent their work's bound and let the rest of the middle go
(`fimlsp.python.waits.WaitBudget`). And why the setting changes little or much: how many receivers the judge judged
(and why the others relaxed), and how often the identifier written with members off is not a member (the only
cursors where the judge's mask can change the first identifier).

    python benchmarks/dot_prompts.py --count 60
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import random
import re
import statistics
import time
import tokenize
from pathlib import Path

from fimlsp.decoding import DecodingOptions, complete_middles
from fimlsp.language import Caches
from fimlsp.model.folder import CORPUS_MANIFEST
from fimlsp.model.loading import load_model
from fimlsp.weights import default_model_path
from fimlsp.python.analysis import analysis_for, forget_answers
from fimlsp.python.member_lists import member_lists
from fimlsp.python.waits import forget_lines

PACKAGES = ("fastapi", "starlette", "uvicorn", "pyflakes", "diskcache")
_IDENTIFIER = re.compile(r"\s*([A-Za-z_]\w*)")


def package_files(name: str, manifest: str) -> list[Path]:
    """The package's modules, where none of them is in the model's corpus manifest (else none: not held out)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(next(iter(spec.submodule_search_locations)))
    if f"/{folder.name}/" in manifest:
        return []
    return sorted(path for path in folder.rglob("*.py") if "test" not in path.as_posix())


def dot_cursors(text: str) -> list[int]:
    """Offsets right after a `.` in code that a name follows (tokenize's reading: no comments or strings)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    for before, after in zip(tokens, tokens[1:]):
        if before.type == tokenize.OP and before.string == "." and after.type == tokenize.NAME \
                and before.end == after.start:
            found.append(starts[before.end[0] - 1] + before.end[1])
    return found


def cases(files: list[Path], count: int, seed: int) -> list[tuple[str, str, str, str]]:
    """(file, left, true middle, right) at `count` dot cursors drawn from `files`."""
    rng = random.Random(seed)
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    cursors = [(path, cursor) for path, text in texts.items() for cursor in dot_cursors(text)]
    chosen = rng.sample(cursors, min(count, len(cursors)))
    out = []
    for path, cursor in chosen:
        text = texts[path]
        end = text.find("\n", cursor)
        end = len(text) if end < 0 else end
        out.append((str(path), text[:cursor], text[cursor:end], text[end:]))
    return out


def first_identifier(text: str) -> str | None:
    found = _IDENTIFIER.match(text)
    return found.group(1) if found else None


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=default_model_path())
    parser.add_argument("--packages", default=",".join(PACKAGES))
    parser.add_argument("--count", type=int, default=60, help="dot cursors over all packages")
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--usage", type=float, default=DecodingOptions().member_usage,
                        help="member_usage of the last setting")
    parser.add_argument("--typing-gap", type=float, default=0.2,
                        help="seconds between a completion and the keystroke after it (a typist's 5 a second)")
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    manifest = (args.model / CORPUS_MANIFEST).read_text(encoding="utf-8")
    files = [path for name in args.packages.split(",") for path in package_files(name, manifest)]
    if not files:
        raise SystemExit("dot_prompts: none of the packages is installed and held out")
    model = load_model(args.model)
    chosen = cases(files, args.count, args.seed)
    settings = {"off": ("off", 0.0), "strict, usage 0": ("strict", 0.0), f"strict, usage {args.usage:g}":
                ("strict", args.usage)}
    strict = list(settings)[-1]
    rows = {setting: {"identifier": 0, "line": 0, "valid": 0, "model": [], "total": [], "judge": [], "next": [],
                      "next_judge": [], "written": [], "next_written": [], "own": [], "next_own": [], "spent": 0}
            for setting in settings}
    judged, off_not_member, truth_refused, relaxed = 0, 0, 0, {}
    caches = Caches()
    analysis = analysis_for(None)  # the one the completions' member judge asks (no project: the environment)
    complete_middles(model, chosen[0][1], chosen[0][3], DecodingOptions(max_tokens=1), 1, caches=caches)  # warm
    for path, left, middle, right in chosen:
        truth = first_identifier(middle)
        receiver = re.search(r"[\w.]*\Z", left).group()[:-1]
        members = member_lists(analysis).lookup(left, right, receiver, None, seconds=None).names
        if members is None:
            reason = member_lists(analysis).lookup(left, right, receiver, None, seconds=None).reason.split(" (")[0]
            relaxed[reason] = relaxed.get(reason, 0) + 1
        else:
            judged += 1
            truth_refused += truth not in members
        for setting, (members_setting, usage) in settings.items():
            forget_answers()  # each setting's first completion asks jedi itself, as in an editor
            forget_lines()
            options = DecodingOptions(scope="block", names="strict", members=members_setting, calls=members_setting,
                                      member_usage=usage, single_line=True, max_tokens=args.max_tokens, attempts=1)
            stages: dict[str, float] = {}
            clock, waited = time.perf_counter(), analysis.waited
            result = complete_middles(model, left, right, options, 1, caches=caches, stages=stages)[0]
            total = time.perf_counter() - clock
            written = result.middle.split("\n")[0]
            row = rows[setting]
            row["identifier"] += first_identifier(written) == truth
            row["line"] += written.rstrip() == middle.rstrip()
            row["valid"] += result.valid
            row["model"].append(stages.get("prompt", 0.0) + stages.get("tokens", 0.0))
            row["total"].append(total)
            row["judge"].append(analysis.waited - waited)
            row["own"].append(stages.get("member_judge", 0.0) + stages.get("call_judge", 0.0))
            row["written"].append(result.middle)
            if setting == "off" and members is not None and first_identifier(written) not in members:
                off_not_member += 1
            time.sleep(args.typing_gap)
            stages = {}
            clock, waited = time.perf_counter(), analysis.waited  # a keystroke later, on the same line
            typed = complete_middles(model, left + middle[:1], right, options, 1, caches=caches, stages=stages)[0]
            row["next"].append(time.perf_counter() - clock)
            row["next_own"].append(stages.get("member_judge", 0.0) + stages.get("call_judge", 0.0))
            row["spent"] += "were spent" in typed.reason  # the judges let the rest go (`WaitBudget.work`)
            row["next_written"].append(typed.middle)
            row["next_judge"].append(analysis.waited - waited)
            analysis.run(lambda: None, background=True).result()  # what it asks ahead is no other setting's time
            if args.show:
                print(f"{setting:16} {Path(path).name}: {middle!r} -> {written!r}", flush=True)
    count = len(chosen)
    print(f"{count} dot prompts from {len(files)} held-out files of {args.packages}; shipped model, block scope, "
          f"names strict, one line, greedy, one attempt, {args.max_tokens} tokens")
    print("| members | next identifier | whole line | valid | model time median / p95 (ms) | completion median / "
          "p95 (ms) |")
    print("|---|---|---|---|---|---|")
    for setting in settings:
        row = rows[setting]
        print(f"| {setting} | {row['identifier'] / count:.1%} ({row['identifier']}) | {row['line'] / count:.1%} "
              f"({row['line']}) | {row['valid'] / count:.1%} | {1000 * statistics.median(row['model']):.0f} / "
              f"{1000 * percentile(row['model'], 0.95):.0f} | {1000 * statistics.median(row['total']):.0f} / "
              f"{1000 * percentile(row['total'], 0.95):.0f} |")
    for label, key, total, written, own in (
            ("at the cursor (first completion)", "judge", "total", "written", "own"),
            ("a keystroke later (same line)", "next_judge", "next", "next_written", "next_own")):
        waits, spent = rows[strict][key], rows[strict][own]
        added = [on - off for on, off in zip(rows[strict][total], rows["off"][total])]
        same = [on - off for on, off, kept, free in zip(rows[strict][total], rows["off"][total],
                                                        rows[strict][written], rows["off"][written]) if kept == free]
        model_time = statistics.median(rows["off"][total])
        print(f"{label}: the member and call judges' own time median {1000 * statistics.median(spent):.1f} ms, p95 "
              f"{1000 * percentile(spent, 0.95):.1f} ms (of it the member judge's waits on the analysis median "
              f"{1000 * statistics.median(waits):.1f} ms, p95 "
              f"{1000 * percentile(waits, 0.95):.1f} ms); completion strict less off median "
              f"{1000 * statistics.median(added):.0f} ms, p95 {1000 * percentile(added, 0.95):.0f} ms, where both "
              f"write the same middle ({len(same)}) median {1000 * statistics.median(same or [0.0]):.0f} ms, p95 "
              f"{1000 * percentile(same, 0.95):.0f} ms (off's median {1000 * model_time:.0f} ms)")
    print(f"a keystroke later, the judges' work was spent and they let the rest of the middle go: "
          f"{rows[strict]['spent']} of {count}")
    print(f"receivers judged: {judged} of {count} (true identifier not a member: {truth_refused}); relaxed: "
          + ", ".join(f"{reason} {number}" for reason, number in sorted(relaxed.items(), key=lambda x: -x[1])))
    print(f"identifier written with members off is not a member of a judged receiver: {off_not_member} of {count}")


if __name__ == "__main__":
    main()
