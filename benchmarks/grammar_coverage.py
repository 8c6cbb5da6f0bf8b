"""Coverage and soundness of the Python grammar (`fimlsp/python/python.ebnf`) on the standard library.

Coverage: every `.py` file under this Python's standard library (`sysconfig.get_paths()["stdlib"]`, test
directories included, third-party `site-packages` excluded) that `ast.parse` accepts is tokenized with the
standard library's `tokenize` (`harness/tokens_bridge.py`) and fed to `earley.Recognizer(load_grammar())`. A file
the grammar rejects is a false reject; the run prints each with the first rejected token and its line, and
exits non-zero if there is any. Files `ast.parse` rejects (lib2to3's test data, `test/bad*` and the like) are
skipped and counted. Reports terminals recognised per second (CPU time of recognition only).

Soundness probe: for `--probe-files` randomly chosen files, `--probe-mutations` random single-token mutations
each (delete a token's text, insert a token's text before it, or replace it), done on the source text so that
`ast.parse` can judge the result. The mutated text is tokenized with the bridge (skipped if that fails) and fed
to the recognizer; a stream the grammar accepts although `ast.parse` rejects the text is a false accept, counted
and grouped by `ast.parse`'s message. A stream the grammar rejects although `ast.parse` accepts is a false reject
as above, and fails the run too. Mutants that both accept but `compile()` rejects (`return` outside a function,
`break` outside a loop, duplicate arguments: checks after parsing, out of reach of any context-free grammar) are
listed separately, for the record. The probe feeds each mutant from the recognizer state after the prefix it
shares with the original, and a mutant the grammar rejects stops there.

Known false accepts, inherent to the terminals: a STRING's prefix (`'a' b'b'`: cannot mix bytes and nonbytes
literals), a NUMBER's kind in patterns (`case 1 + 2:`), `_` as a capture target (`case {**_}:`).

    python benchmarks/grammar_coverage.py [--jobs N] [--limit N] [--probe-files N] [--probe-mutations N]
                                          [--seed S] [--no-coverage] [--no-probe] [PATH ...]

PATHs (files or directories) replace the standard library as the corpus.
"""

from __future__ import annotations

import argparse
import ast
import collections
import multiprocessing
import os
import random
import re
import sys
import sysconfig
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from earley import Recognizer  # noqa: E402
from fimlsp.python.grammar import load_grammar  # noqa: E402
from fimlsp.python.lexemes import KEYWORDS, OPERATORS, SOFT_KEYWORDS  # noqa: E402
from harness.tokens_bridge import BridgeError, Terminal, tokens  # noqa: E402

_RECOGNIZER: Recognizer | None = None


def recognizer() -> Recognizer:
    global _RECOGNIZER
    if _RECOGNIZER is None:
        _RECOGNIZER = Recognizer(load_grammar())
    return _RECOGNIZER


def stdlib_files() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(path for path in stdlib.rglob("*.py") if "site-packages" not in path.relative_to(stdlib).parts)


def corpus(paths: list[str]) -> list[Path]:
    if not paths:
        return stdlib_files()
    files: list[Path] = []
    for path in map(Path, paths):
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def ast_accepts(source: bytes | str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(source)
        except (SyntaxError, ValueError):  # ValueError: null bytes
            return False
    return True


def ast_error(source: bytes | str) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(source)
        except (SyntaxError, ValueError) as error:
            return getattr(error, "msg", None) or str(error)
    return None


def compile_error(source: str) -> str | None:
    """The message of a SyntaxError that only `compile` (symbol table, compiler) raises, or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(source, "<mutant>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            return getattr(error, "msg", None) or str(error)
        except RecursionError:
            return None
    return None


def first_rejected(names: list[str]) -> int | None:
    """Index of the first terminal the grammar cannot take (len(names) if the end is missing), or None."""
    state = recognizer().start()
    for index, name in enumerate(names):
        state = state.feed(name)
        if state is None:
            return index
    return None if state.complete else len(names)


def describe_reject(source: bytes, toks: list[Terminal], index: int) -> str:
    lines = source.decode("utf-8", "replace").splitlines()
    if index >= len(toks):
        return "    the input ends too early (end of file rejected)"
    token = toks[index]
    row, column = token.start
    context = " ".join(t.name for t in toks[max(0, index - 8) : index])
    text = lines[row - 1] if 0 < row <= len(lines) else ""
    return (
        f"    token {index} {token.name} {token.text!r} at line {row}, column {column}\n"
        f"    line: {text}\n"
        f"          {' ' * column}^\n"
        f"    terminals before it: ... {context}"
    )


def check_file(path: Path) -> tuple[str, str, int, float, str]:
    """(path, status, terminals, seconds, detail); status: ok, reject, skip (ast rejects), bridge."""
    source = path.read_bytes()
    if not ast_accepts(source):
        return str(path), "skip", 0, 0.0, ""
    try:
        toks = tokens(source)
    except BridgeError as error:
        return str(path), "bridge", 0, 0.0, str(error)
    names = [token.name for token in toks]
    began = time.process_time()  # CPU time: robust to other processes on the machine
    index = first_rejected(names)
    seconds = time.process_time() - began
    if index is None:
        return str(path), "ok", len(names), seconds, ""
    return str(path), "reject", len(names), seconds, describe_reject(source, toks, index)


# ---------------------------------------------------------------- soundness probe

PROBE_VOCABULARY = (
    [*KEYWORDS, *SOFT_KEYWORDS, *OPERATORS] + ["x", "x", "x", "1", "'s'", "\n", "\n    "]
)


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def mutate(text: str, toks: list[Terminal], rng: random.Random) -> tuple[str, str] | None:
    """One random single-token mutation of `text` at the source level: (mutated text, description)."""
    candidates = [t for t in toks if t.text and t.name not in ("INDENT", "DEDENT")]
    if not candidates:
        return None
    token = rng.choice(candidates)
    starts = _offsets(text)
    begin = starts[token.start[0] - 1] + token.start[1]
    end = starts[token.end[0] - 1] + token.end[1]
    kind = rng.choice(("delete", "insert", "replace"))
    lead = "" if begin == 0 or text[begin - 1] in " \t\n" else " "
    if kind == "delete":
        new = " " if token.name != "NEWLINE" else ""
        return text[:begin] + new + text[end:], f"delete {token.name}"
    word = rng.choice(PROBE_VOCABULARY)
    if kind == "insert":
        return text[:begin] + lead + word + " " + text[begin:], f"insert {word!r} before {token.name}"
    return text[:begin] + lead + word + " " + text[end:], f"replace {token.name} by {word!r}"


def probe_file(job: tuple[str, int, int]) -> list[tuple[str, str, str, str]]:
    """Mutations of one file: list of (verdict, description, ast message, path); verdict in
    agree (both accept), agree_invalid (both reject), compile_only (both accept, `compile` rejects),
    false_accept, false_reject, skip."""
    path, mutations, seed = job
    rng = random.Random(seed)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return []
    if not ast_accepts(text):
        return []
    try:
        original = tokens(text)
    except BridgeError:
        return []
    names = [token.name for token in original]
    original_compiles = compile_error(text) is None  # some test files are meant not to compile
    # states after every prefix of the original stream: a mutation re-feeds only what follows the common prefix
    states = [recognizer().start()]
    for name in names:
        state = states[-1].feed(name)
        if state is None:
            return []
        states.append(state)
    results = []
    for _ in range(mutations):
        mutated = mutate(text, original, rng)
        if mutated is None:
            continue
        new_text, description = mutated
        try:
            new_names = [token.name for token in tokens(new_text)]
        except BridgeError:
            results.append(("skip", description, "", path))
            continue
        common = 0
        limit = min(len(names), len(new_names))
        while common < limit and names[common] == new_names[common]:
            common += 1
        state = states[common]
        for name in new_names[common:]:
            state = state.feed(name)
            if state is None:
                break
        grammar_accepts = state is not None and state.complete
        message = ast_error(new_text)
        if grammar_accepts and message is not None:
            results.append(("false_accept", description, message, path))
        elif not grammar_accepts and message is None:
            results.append(("false_reject", description, new_text, path))
        elif message is not None:
            results.append(("agree_invalid", description, "", path))
        else:
            compiled = compile_error(new_text) if original_compiles else None
            if compiled is not None:  # valid syntax that only the compiler rejects: out of any CFG's reach
                results.append(("compile_only", description, compiled, path))
            else:
                results.append(("agree", description, "", path))
    return results


def category(message: str) -> str:
    """An ast.parse message with its specifics (names, numbers, quoted text) blanked out."""
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r"\d+", "N", message)
    return message


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="files or directories instead of the standard library")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--limit", type=int, default=0, help="check only the first N files (0: all)")
    parser.add_argument("--probe-files", type=int, default=100, help="files for the soundness probe")
    parser.add_argument("--probe-mutations", type=int, default=20, help="mutations per probed file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-coverage", action="store_true", help="skip the coverage check")
    parser.add_argument("--no-probe", action="store_true", help="skip the soundness probe")
    args = parser.parse_args()

    files = corpus(args.paths)
    if args.limit:
        files = files[: args.limit]
    failed = False
    context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    recognizer()  # load the grammar before forking, so workers share it

    if not args.no_coverage:
        print(f"coverage: {len(files)} files under {args.paths or sysconfig.get_paths()['stdlib']}")
        began = time.perf_counter()
        counts: collections.Counter[str] = collections.Counter()
        n_terminals = 0
        seconds = 0.0
        with context.Pool(args.jobs) as pool:
            for path, status, count, spent, detail in pool.imap_unordered(check_file, files, chunksize=4):
                counts[status] += 1
                n_terminals += count
                seconds += spent
                if status == "reject":
                    print(f"FALSE REJECT {path}\n{detail}", flush=True)
                elif status == "bridge":
                    print(f"bridge (tokenize) failure, not counted: {path}: {detail}", flush=True)
        wall = time.perf_counter() - began
        checked = counts["ok"] + counts["reject"]
        print(
            f"checked {checked} files ({n_terminals} terminals); false rejects: {counts['reject']}; "
            f"skipped (ast.parse rejects): {counts['skip']}; tokenize failures: {counts['bridge']}"
        )
        if seconds:
            print(
                f"speed: {n_terminals / seconds:,.0f} terminals/s per process, CPU time "
                f"({seconds / max(n_terminals, 1) * 1e6:.1f} µs/terminal); wall {wall:.1f} s with {args.jobs} jobs"
            )
        failed |= counts["reject"] > 0

    if not args.no_probe and args.probe_files:
        rng = random.Random(args.seed)
        chosen = rng.sample(files, min(args.probe_files, len(files)))
        jobs = [(str(path), args.probe_mutations, rng.randrange(2**32)) for path in chosen]
        print(f"\nsoundness probe: {len(jobs)} files x {args.probe_mutations} single-token mutations, seed {args.seed}")
        began = time.perf_counter()
        verdicts: collections.Counter[str] = collections.Counter()
        categories: collections.Counter[str] = collections.Counter()
        compile_categories: collections.Counter[str] = collections.Counter()
        examples: dict[str, str] = {}
        with context.Pool(args.jobs) as pool:
            for results in pool.imap_unordered(probe_file, jobs):
                for verdict, description, detail, path in results:
                    verdicts[verdict] += 1
                    if verdict == "false_accept":
                        key = category(detail)
                        categories[key] += 1
                        examples.setdefault(key, f"{description} in {path}")
                    elif verdict == "compile_only":
                        key = category(detail)
                        compile_categories[key] += 1
                        examples.setdefault("compile: " + key, f"{description} in {path}")
                    elif verdict == "false_reject":
                        print(f"FALSE REJECT (mutant of {path}, {description})", flush=True)
        judged = sum(verdicts[v] for v in ("agree", "agree_invalid", "compile_only", "false_accept", "false_reject"))
        invalid = verdicts["false_accept"] + verdicts["agree_invalid"]
        print(
            f"mutants judged: {judged} (ast.parse rejects {invalid}); tokenize failed (skipped): {verdicts['skip']}\n"
            f"false accepts: {verdicts['false_accept']} = {verdicts['false_accept'] / max(judged, 1):.2%} of judged "
            f"mutants, {verdicts['false_accept'] / max(invalid, 1):.2%} of the invalid ones; "
            f"false rejects: {verdicts['false_reject']}; {time.perf_counter() - began:.1f} s"
        )
        if categories:
            print("false accepts by ast.parse message:")
            for key, count in categories.most_common(15):
                print(f"  {count:5d}  {key}    e.g. {examples[key]}")
        if compile_categories:
            print(
                f"not false accepts, for the record: {verdicts['compile_only']} mutants that ast.parse and the grammar "
                f"accept and only compile() rejects (checks after parsing, beyond any context-free grammar):"
            )
            for key, count in compile_categories.most_common(10):
                print(f"  {count:5d}  {key}    e.g. {examples['compile: ' + key]}")
        failed |= verdicts["false_reject"] > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
