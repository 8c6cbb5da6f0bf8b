"""What a completion is asked for: the decoding options, the one declaration of each.

Each option's field says how the commands and the editors show it: its help, its choices, the metavar of its
flag, and `setting`, the camelCase key of the server's setting where the editors expose it. The CLI's flags
(`add_arguments`, `from_arguments`) and the server's settings (`fimlsp.server.config`) are made from it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import Field, dataclass, field, fields

from fimlsp.language import DEFAULT_BUDGET, DEFAULT_LANGUAGE, named

MODES = ("constrained", "checked", "unconstrained")  # the one list of modes; the first is the default
SCOPES = ("file", "block")  # the first is the default
# strict: the constrained mode refuses a middle that loads a name nothing binds (`Language.judging_names`)
NAMES = ("off", "strict")  # the first is the default


def _option(default, help: str, *, choices: tuple[str, ...] = (), metavar: str | None = None,
            setting: str | None = None):
    """A decoding option that the commands offer as a flag (and, with `setting`, the editors as a setting)."""
    return field(default=default, metadata={"help": help, "choices": choices, "metavar": metavar, "setting": setting})


@dataclass(frozen=True)
class DecodingOptions:
    mode: str = _option(MODES[0], "decoding mode", choices=MODES, setting="mode")
    max_tokens: int = _option(
        500, "most tokens to generate; the prompt and the middle share the model's context window, so fewer may fit",
        setting="maxTokens")
    top_k: int = _option(50, "candidates checked per token, the model's first; the rest of the vocabulary is tried "
                             "only when none of them is valid", setting="topK")
    temperature: float = _option(0.0, "sampling temperature; 0 is greedy")
    top_p: float = _option(1.0, "nucleus sampling mass")
    timeout: float | None = _option(None, "time budget in seconds for the whole completion", metavar="SECONDS")
    seed: int = _option(0, "seed for sampling")
    single_line: bool = _option(False, "stop at the first line end where the file is valid")
    statement_end: bool = _option(
        False, "stop where the statement or block that holds the cursor ends, if the file is valid there "
               "(constrained mode; what the editors do for a multi-line suggestion); off, the middle runs on to "
               "the model's end")
    size_budget: int = _option(DEFAULT_BUDGET, "files with more characters are checked only around the cursor",
                               metavar="CHARS", setting="sizeBudget")
    setup_timeout: float = _option(
        10.0, "time to build the constraint (within --timeout); past it the middle is generated unconstrained and "
              "shown only if the file compiles with it", metavar="SECONDS")
    scope: str = _option(
        SCOPES[0], "block: the middle stays in the block that holds the cursor and leaves the code after it as it "
                   "reads (falls back to the file when the block admits no middle), as the editors ask; file: any "
                   "middle that makes the file valid, the paper's setup", choices=SCOPES, setting="scope")
    language: str = DEFAULT_LANGUAGE  # the name of a `fimlsp.language.Language`
    loop_repeats: int = _option(
        3, "a middle that comes to end in the same chunk of text N times in a row is stopped and cut back after the "
           "first (open(path, path, path, → open(path)); 0: never", metavar="N", setting="loopRepeats")
    token_healing: bool = _option(
        True, "take the left context's last tokens back for the model to write again (a cursor after `return ` no "
              "longer prompts a comment); off, the prompt has the left context as it is")
    attempts: int = _option(
        3, "greedy middles to decode, each from another of the model's best valid first tokens; the one that ended "
           "best comes first (valid, ended by the model rather than cut back by a fallback, then the best mean "
           "log-probability per token); 1: plain greedy decoding", metavar="K", setting="attempts")
    names: str = _option(
        NAMES[0], "strict: a constrained middle may not load a name that nothing in the file or the middle binds "
                  "(off in files with star imports, globals(), exec, eval, ...)", choices=NAMES, setting="names")
    search_budget: int | None = _option(
        None, "nodes a finish search of the token loop may expand (a fallback's and the start's, which may take "
              "longer, in proportion), with no clock but the completion's --timeout: the middles are the same on a "
              "busy machine as on an idle one (eval's runs); none: searches end after their share of a second, for "
              "an editor's latency", metavar="NODES")

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.scope not in SCOPES:
            raise ValueError(f"unknown scope {self.scope!r}; choose one of {', '.join(SCOPES)}")
        if self.names not in NAMES:
            raise ValueError(f"unknown names setting {self.names!r}; choose one of {', '.join(NAMES)}")
        if self.max_tokens < 0 or self.top_k < 1 or self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError("max_tokens >= 0, top_k >= 1, temperature >= 0 and 0 < top_p <= 1 are required")
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.loop_repeats < 0 or self.loop_repeats == 1:
            raise ValueError("loop_repeats must be 0 (off) or at least 2")
        if self.search_budget is not None and self.search_budget < 1:
            raise ValueError("search_budget must be a positive number of nodes")
        if self.size_budget < 1:
            raise ValueError("size_budget must be a positive number of characters")
        if (self.timeout is not None and self.timeout <= 0) or self.setup_timeout <= 0:
            raise ValueError("timeout and setup_timeout must be positive")
        named(self.language)


_TYPES = {"int": int, "int | None": int, "float": float, "float | None": float, "str": str}


def offered() -> tuple[Field, ...]:
    """The options that the commands offer as flags, in their order."""
    return tuple(each for each in fields(DecodingOptions) if "help" in each.metadata)


def option(name: str) -> Field:
    """The declaration of the option `name`."""
    return next(each for each in offered() if each.name == name)


def add_arguments(parser, defaults: DecodingOptions = DecodingOptions(), only: Iterable[str] | None = None) -> None:
    """A flag for each offered option (or those in `only`), `--max-tokens` for `max_tokens`, with `defaults`' value
    as its default (a command's defaults may be the editors', not the library's); on/off options get `--x` and
    `--no-x`."""
    for each in offered():
        if only is not None and each.name not in only:
            continue
        flag, default, meta = "--" + each.name.replace("_", "-"), getattr(defaults, each.name), each.metadata
        if each.type == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                                help=f"{meta['help']} (default: {'on' if default else 'off'})")
        else:
            parser.add_argument(flag, type=_TYPES[each.type], choices=meta["choices"] or None, default=default,
                                metavar=meta["metavar"], help=meta["help"] + (
                                    " (default: none)" if default is None else " (default: %(default)s)"))


def from_arguments(args: argparse.Namespace, only: Iterable[str] | None = None, **given) -> DecodingOptions:
    """The options of flags that `add_arguments` added (with the same `only`), with `given` on top; ValueError if
    one is bad."""
    parsed = {each.name: getattr(args, each.name) for each in offered() if only is None or each.name in only}
    return DecodingOptions(**{**parsed, **given})
