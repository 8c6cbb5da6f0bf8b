"""Fill in the middle of a Python file at LINE:COL (1-based, column in characters) and print the middle.

The file is split at the position; the middle that the model generates, constrained so that the whole file
stays valid Python, goes to stdout and nothing else does. `-` as the file reads standard input. When the file is
broken elsewhere (or bigger than `--size-budget`), the middle is checked against the statements around the
cursor (top-level ones, or a block's), and stderr says which lines; when not even those admit a middle (or the
constraint cannot be built within `--setup-timeout`), it is generated unconstrained and printed only if the file
parses with it: a middle that may break the file is never printed.

By default the middle is the one an editor suggests when asked for one: the flags' defaults are the language
server's default settings (its name judge, scope, attempts, token limit, loop repeats, ...), so the middle stays in
the block that holds the cursor and ends where the cursor's statement does (`--scope file --no-statement-end` for
the paper's setup). One default differs: no time budget here (the editors' is 2 s), so that the middle does not
depend on the machine's speed; while typing, the editors also stop at the line end (`--single-line always`).
`--json` names the settings that differ from the editors', the flags given included, under "differs_from_editors".

The prompt and the middle share the model's context window, so fewer tokens than `--max-tokens` may fit (128 with
the shipped 512-token model on a long file); the JSON's max_tokens is the limit that applied.

On a terminal the middle is followed by a line end; piped, stdout is exactly the middle.

Exit status: 0 a middle was printed (or the JSON object, whatever the result), 1 no valid middle was found,
2 bad input (the file, the position, an option, the model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from fimlsp import settings
from fimlsp.cli import UserError
from fimlsp.decoding import Completion, DecodingOptions
from fimlsp.language import DEFAULT_LANGUAGE, for_path, languages, named
from fimlsp.model.remote import PROTOCOLS
from fimlsp.source import SourceError, read_source, split_at

SETTINGS = settings.offered_by("complete")
# The editors' defaults, but no time budget: a middle that does not depend on the machine's speed.
DEFAULTS = {"time_budget": None}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="FILE:LINE:COL", help="the file and the cursor position (FILE may be -)")
    settings.add_flags(parser, SETTINGS, DEFAULTS)
    parser.add_argument("--project", metavar="DIR",
                        help="the project whose files --context and the judges read (default: the nearest folder "
                             "above FILE that holds pyproject.toml, setup.py, setup.cfg or .git, else FILE's folder)")
    parser.add_argument("--language", choices=[language.name for language in languages()],
                        help="the file's language (default: from its suffix, else %s)" % DEFAULT_LANGUAGE)
    parser.add_argument("--model-server-api", choices=PROTOCOLS, default="auto",
                        help="the model server's API: openai (/v1/completions) or llamacpp (/completion) (default: "
                             "detected)")
    parser.add_argument("--format", dest="fim_format", help="FIM prompt format (default: detected from the model)")
    parser.add_argument("--order", choices=("psm", "spm"), default=None,
                        help="FIM prompt order (default: the one the model folder names in fim.json, else psm)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object with the middle and its costs; \"timings\" holds the seconds spent "
                             "loading the model, in the constraint's setup, in the model, in the constraint while "
                             "decoding (with the finish searches, also given apart) and in total")
    parser.add_argument("--verbose", action="store_true", help="print the timings of --json on stderr")


def decoding_options(values: dict, language: str) -> DecodingOptions:
    """The options of a completion with the settings `values`: a request made on purpose, not while typing, so
    several lines unless single_line is always."""
    return settings.decoding_options(values, language=language, single_line=values["single_line"] == "always")


def parse_target(target: str) -> tuple[str, int, int]:
    path, separator, rest = target.rpartition(":")
    path, separator2, line = path.rpartition(":")
    if not separator or not separator2 or not path:
        raise UserError(f"expected FILE:LINE:COL, got {target!r}")
    try:
        return path, int(line), int(rest)
    except ValueError:
        raise UserError(f"LINE and COL must be numbers in {target!r}") from None


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    from fimlsp.context.editor import for_command
    from fimlsp.decoding import complete_middles, shown
    from fimlsp.model import ModelError, load_model

    path, line, column = parse_target(args.target)
    try:
        text = read_source(sys.stdin.buffer.read() if path == "-" else _read_file(path), path)
        left, right = split_at(text, line, column)
        language = named(args.language) if args.language else for_path(path) or named(DEFAULT_LANGUAGE)
        values = settings.given(args, SETTINGS)
        decoding = decoding_options(values, language.name)
    except (SourceError, ValueError) as error:
        raise UserError(str(error)) from error
    loading = time.perf_counter()
    try:
        if args.model_server:
            from fimlsp.model.remote import TIMEOUT, connect

            # the whole completion's time budget covers connecting to the server and its answers
            within = TIMEOUT if decoding.time_budget is None else min(TIMEOUT, decoding.time_budget)
            model = connect(args.model_server, args.model, args.fim_format, args.order, args.model_server_api,
                            within)
            if model.status:
                print(f"fimlsp complete: {model.status}", file=sys.stderr)
        else:
            model = load_model(args.model, args.device, args.fim_format, args.order)
        loaded = time.perf_counter()
        if args.model_server and decoding.time_budget is not None:
            decoding = replace(decoding, time_budget=max(0.0, decoding.time_budget - (loaded - loading)))
        extra = for_command(None if path == "-" else path, left, right, decoding.context,
                            decoding.context_exclude, model.context_window, args.project)
        results = complete_middles(model, left, right, decoding, args.alternatives, extra=extra,
                                   place=(None if path == "-" else path, args.project))
    except ModelError as error:  # a server can also fail during the completion
        raise UserError(str(error)) from error
    result = results[0]
    succeeded = shown(result)
    spent = timings(result, loaded - loading, time.perf_counter() - started)
    if args.verbose:
        print("fimlsp complete: timings: " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in spent.items()),
              file=sys.stderr)
    if args.json:
        where = {"file": path, "line": line, "column": column, "model": model.name,
                 "context": [{"path": snippet.path, "chars": len(snippet.text)} for snippet in extra],
                 "differs_from_editors": settings.differing_from_editors(values), "timings": spent}
        if args.model_server:
            where["server"] = {"url": model.url, "api": model.protocol, "round_trips": model.round_trips,
                               "steps": model.steps, "speculated": model.speculated}
        if args.alternatives == 1:
            print(json.dumps({**where, **result.to_json(), "shown": succeeded}))
        else:
            print(json.dumps({**where, "completions": [{**each.to_json(), "shown": shown(each)} for each in results]}))
    elif succeeded:
        sys.stdout.write(result.middle)
        if sys.stdout.isatty() and not result.middle.endswith("\n"):
            sys.stdout.write("\n")  # the shell's prompt starts on a line of its own
        sys.stdout.flush()
    if result.unchecked:
        print(f"fimlsp complete: no valid middle: {result.reason}; the middle generated unconstrained does not "
              "compile (try --mode unconstrained)", file=sys.stderr)
    elif result.region is not None:
        first, last = result.region
        print(f"fimlsp complete: checked lines {first}-{last} only: {result.reason}", file=sys.stderr)
    elif not succeeded:
        detail = result.refusal or result.reason  # the reason: why the names policy showed no middle
        why = f": {detail}" if detail else ""
        print(f"fimlsp complete: no valid middle found ({result.stop} after {result.tokens} tokens{why}); "
              "try --mode unconstrained", file=sys.stderr)
    return 0 if succeeded else 1


def timings(result: Completion, load: float, total: float) -> dict[str, float]:
    """Where the seconds of a completion went: loading the model (or connecting to its server), the constraint's
    setup, the model's forward passes, the constraint while decoding the middle returned (`searches`, its finish
    searches, are part of it), and the whole command from the start of its run. The parts do not overlap: they add
    up to at most the total."""
    return {"load": load, "setup": result.setup_seconds, "model": result.model_seconds,
            "constraint": result.constraint_seconds, "searches": result.search_seconds, "total": total}


def _read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
