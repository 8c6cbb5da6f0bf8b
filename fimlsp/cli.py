"""The `fimlsp` command: a thin dispatcher over subcommand modules.

Each subcommand lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`, imported only
when that subcommand runs: `fimlsp --help` stays fast, and one command's dependencies never break another.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

SUBCOMMANDS = {
    "complete": ("fimlsp.commands.complete", "fill in the middle of a Python file at FILE:LINE:COL"),
    "demo": ("fimlsp.commands.demo", "show the Earley quotient on the paper's worked example"),
    "train": ("fimlsp.commands.train", "train, export and evaluate the small default FIM model"),
    "evaluate-model": ("fimlsp.commands.evaluate_model", "held-out bits per byte and random-span FIM figures of a model"),
    "serve": ("fimlsp.commands.serve", "run the language server (LSP over stdio, or TCP with --tcp HOST:PORT)"),
    "eval": ("fimlsp.commands.eval", "run FIM cases of a corpus in each decoding mode: the paper's tables and timings"),
    "bench": ("fimlsp.commands.bench", "the constraint's setup and per-token cost alone, next to ast.parse"),
    "export-gguf": ("fimlsp.commands.export_gguf", "write a model folder as a GGUF file for llama.cpp"),
}

CLOSED_PIPE = 141  # 128 + SIGPIPE: the status a shell reports for a tool stopped by a closed pipe


# What the `torch` extra installs: transformers models, training and the evaluations that run them need it; the
# shipped model (its GGUF, through llama.cpp) and model servers do not.
TORCH_EXTRA = ("torch", "transformers")


def missing_torch(name: str) -> str:
    return f"this needs {name}, which is not installed: pip install 'fimlsp[torch]'"


class UserError(Exception):
    """An error caused by the user's input: printed as one line, never as a traceback."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of `command` (the subcommand about to run) and the names of the rest."""
    parser = argparse.ArgumentParser(
        prog="fimlsp", description="Fill-in-the-middle code completion for Python that keeps the file valid Python."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        if name != command:
            subparsers.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        # The docstrings are wrapped by hand into paragraphs and lists: keep their layout.
        sub = subparsers.add_parser(name, help=help_text, description=module.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `-:LINE:COL` names standard input; argparse would take it for an option.
    stdin_targets = [arg for arg in argv if arg.startswith("-:")]
    argv = [arg for arg in argv if arg not in stdin_targets] + (["--", *stdin_targets] if stdin_targets else [])
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    try:
        args = build_parser(command).parse_args(argv)
        try:
            return args.run(args)
        except UserError as error:
            print(f"fimlsp {args.command}: error: {error}", file=sys.stderr)
            return 2
    except ModuleNotFoundError as error:  # a command of the `torch` extra, which is not installed
        if error.name not in TORCH_EXTRA:
            raise
        print(f"fimlsp {command}: error: {missing_torch(error.name)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """The reader of stdout went away (`| head`): exit quietly with a shell's status for SIGPIPE.

    stdout is pointed at /dev/null so that the interpreter's final flush does not report the pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return CLOSED_PIPE


if __name__ == "__main__":
    sys.exit(main())
