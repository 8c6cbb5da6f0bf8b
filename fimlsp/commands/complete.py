"""Fill in the middle of a Python file at LINE:COL (1-based, column in characters) and print the middle.

The file is split at the position; the middle that the model generates, constrained so that the whole file
stays valid Python, goes to stdout and nothing else does. `-` as the file reads standard input. When the file is
broken elsewhere (or bigger than `--size-budget`), the middle is checked against the statements around the
cursor (top-level ones, or a block's), and stderr says which lines; when not even those admit a middle (or the
constraint cannot be built within `--setup-timeout`), it is generated unconstrained and printed only if the file
parses with it: a middle that may break the file is never printed.

By default the middle is what the editors suggest: it stays in the block that holds the cursor and ends where the
cursor's statement does (`--scope file --no-statement-end` for the paper's setup), the best of three greedy
attempts (`--attempts`).

On a terminal the middle is followed by a line end; piped, stdout is exactly the middle.

Exit status: 0 a middle was printed (or the JSON object, whatever the result), 1 no valid middle was found,
2 bad input (the file, the position, an option, the model).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fimlsp.cli import UserError
from fimlsp.decoding import MODES, NAMES, SCOPES, DecodingOptions
from fimlsp.language import for_path, languages, named
from fimlsp.model.remote import PROTOCOLS
from fimlsp.source import SourceError, read_source, split_at

DEFAULTS = DecodingOptions()  # the options' defaults are the command's


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="FILE:LINE:COL", help="the file and the cursor position (FILE may be -)")
    parser.add_argument("--mode", choices=MODES, default=DEFAULTS.mode, help="decoding mode (default: %(default)s)")
    parser.add_argument("--scope", choices=SCOPES, default="block",
                        help="block: the middle stays in the block that holds the cursor and leaves the code after "
                             "it as it reads (falls back to the file when the block admits no middle), as the "
                             "editors ask; file: any middle that makes the file valid, the paper's setup (default: "
                             "%(default)s)")
    parser.add_argument("--names", choices=NAMES, default=DEFAULTS.names,
                        help="strict: a constrained middle may not load a name that nothing in the file or the middle "
                             "binds (off in files with star imports, globals(), exec, eval, ...) (default: "
                             "%(default)s)")
    parser.add_argument("--language", choices=[language.name for language in languages()],
                        help="the file's language (default: from its suffix, else %s)" % DEFAULTS.language)
    parser.add_argument("--model", help="model folder, hub id, or .gguf file run by llama.cpp (default: the model "
                        "shipped with fimlsp); with --server, the folder or .gguf file with the served model's "
                        "vocabulary")
    parser.add_argument("--server", metavar="URL",
                        help="complete with the model served at URL (vLLM, llama.cpp's server, python -m "
                             "llama_cpp.server: http://HOST:PORT); the constraint runs here")
    parser.add_argument("--server-api", choices=PROTOCOLS, default="auto",
                        help="the server's API: openai (/v1/completions) or llamacpp (/completion) (default: "
                             "detected)")
    parser.add_argument("--device", help="torch device, e.g. cpu or cuda:0 (default: a GPU if present)")
    parser.add_argument("--format", dest="fim_format", help="FIM prompt format (default: detected from the model)")
    parser.add_argument("--order", choices=("psm", "spm"), default=None,
                        help="FIM prompt order (default: the one the model folder names in fim.json, else psm)")
    parser.add_argument("--max-tokens", type=int, default=DEFAULTS.max_tokens,
                        help="most tokens to generate (default: %(default)s); the prompt and the middle share the "
                             "model's context window, so fewer may fit (128 with the shipped 512-token model on a long "
                             "file); the JSON's max_tokens is the limit that applied")
    parser.add_argument("--top-k", type=int, default=DEFAULTS.top_k,
                        help="candidates checked per token (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=DEFAULTS.temperature,
                        help="sampling temperature; 0 is greedy (default: %(default)s)")
    parser.add_argument("--top-p", type=float, default=DEFAULTS.top_p,
                        help="nucleus sampling mass (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed, help="seed for sampling (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=DEFAULTS.timeout,
                        help="time budget in seconds for the completion (default: none)")
    parser.add_argument("--single-line", action="store_true", help="stop at the first line end where it is valid")
    parser.add_argument("--statement-end", action=argparse.BooleanOptionalAction, default=True,
                        help="stop where the statement or block that holds the cursor ends, if the file is valid "
                             "there (constrained mode; what the editors do for a multi-line suggestion); "
                             "--no-statement-end lets the middle run on to the model's end (default: on)")
    parser.add_argument("--loop-repeats", type=int, default=DEFAULTS.loop_repeats, metavar="N",
                        help="a middle that comes to end in the same chunk of text N times in a row is stopped and cut "
                             "back after the first (open(path, path, path, → open(path)); 0: never (default: "
                             "%(default)s)")
    parser.add_argument("--attempts", type=int, default=DEFAULTS.attempts, metavar="K",
                        help="greedy middles to decode, each from another of the model's best valid first tokens; the "
                             "one that ended best is printed (valid, ended by the model rather than cut back by a "
                             "fallback, then the best mean log-probability per token); 1: plain greedy decoding "
                             "(default: %(default)s)")
    parser.add_argument("--no-token-healing", dest="token_healing", action="store_false",
                        help="prompt with the left context as it is, instead of taking its last tokens back for the "
                             "model to write again (token healing, the default: a cursor after `return ` no longer "
                             "prompts a comment)")
    parser.add_argument("--setup-timeout", type=float, default=DEFAULTS.setup_timeout, metavar="SECONDS",
                        help="time to build the constraint; past it the middle is generated unconstrained and "
                             "printed only if the file compiles with it (default: %(default)s)")
    parser.add_argument("--size-budget", type=int, default=DEFAULTS.size_budget, metavar="CHARS",
                        help="files with more characters are checked only around the cursor (default: %(default)s)")
    parser.add_argument("--n", type=int, default=1, metavar="K",
                        help="up to K distinct middles, the best first (see --attempts): with --json, a list under "
                             "\"completions\"; plain output prints the first (default: 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the middle and its costs")


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
    from fimlsp.decoding import complete_middles, shown
    from fimlsp.model import ModelError, load_model

    path, line, column = parse_target(args.target)
    try:
        text = read_source(sys.stdin.buffer.read() if path == "-" else _read_file(path), path)
        left, right = split_at(text, line, column)
        language = named(args.language) if args.language else for_path(path) or named(DEFAULTS.language)
        options = DecodingOptions(
            language=language.name, mode=args.mode, max_tokens=args.max_tokens, top_k=args.top_k,
            temperature=args.temperature, top_p=args.top_p, timeout=args.timeout, seed=args.seed,
            single_line=args.single_line, statement_end=args.statement_end, size_budget=args.size_budget,
            setup_timeout=args.setup_timeout, scope=args.scope, loop_repeats=args.loop_repeats,
            token_healing=args.token_healing, attempts=args.attempts, names=args.names,
        )
        if args.n < 1:
            raise ValueError("--n must be at least 1")
    except (SourceError, ValueError) as error:
        raise UserError(str(error)) from error
    try:
        if args.server:
            from fimlsp.model.remote import connect

            model = connect(args.server, args.model, args.fim_format, args.order, args.server_api)
            if model.status:
                print(f"fimlsp complete: {model.status}", file=sys.stderr)
        else:
            model = load_model(args.model, args.device, args.fim_format, args.order)
        results = complete_middles(model, left, right, options, args.n)
    except ModelError as error:  # a server can also fail during the completion
        raise UserError(str(error)) from error
    result = results[0]
    succeeded = shown(result)
    if args.json:
        where = {"file": path, "line": line, "column": column, "model": model.name}
        if args.server:
            where["server"] = {"url": model.url, "api": model.protocol, "round_trips": model.round_trips,
                               "steps": model.steps, "speculated": model.speculated}
        if args.n == 1:
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
        why = f": {result.refusal}" if result.refusal else ""
        print(f"fimlsp complete: no valid middle found ({result.stop} after {result.tokens} tokens{why}); "
              "try --mode unconstrained", file=sys.stderr)
    return 0 if succeeded else 1


def _read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
