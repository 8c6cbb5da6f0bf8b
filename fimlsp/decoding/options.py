"""What a completion is asked for: the decoding options, the one declaration of each.

Each option's field says how the commands and the editors show it: its help, its choices, the metavar of its
flag, `bounds`, the values a number may take, `setting`, the camelCase key of the server's setting where the
editors expose it, and `editors`, its value in an editor's suggestion where that is not the library's default
(with `editors_bounds` where the server refuses what the library allows). `fimlsp.settings` makes from it, and from
the server's own settings declared the same way, the commands' flags, the server's settings and checks
(`fimlsp.server.config`), the VS Code schema, the Neovim plugin's list and docs/settings.md: a new option is one
field here (then `python -m fimlsp.settings write`).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import Field, dataclass, field, fields, replace

from fimlsp.language import DEFAULT_BUDGET, DEFAULT_LANGUAGE, named

MODES = ("constrained", "checked", "unconstrained")  # the one list of modes; the first is the default
SCOPES = ("file", "block")  # the first is the default
# strict: the constrained mode refuses a middle that loads a name nothing binds (`Language.judging_names`);
# fallback: the same, but where no middle binds them one decoded without the judge is offered anyway
NAMES = ("off", "strict", "fallback")  # the first is the default
MEMBERS = ("off", "strict")  # the first is the default (`Language.judging_members`)
CALLS = ("off", "strict")  # the first is the default (`Language.judging_calls`)
CONTEXTS = ("auto", "off", "file", "workspace")  # the first is the default (`fimlsp.context.effective`)


@dataclass(frozen=True)
class Bounds:
    """The values a number may take: finite, from `least` to `most` (above `least` when `above`), or `off`. Stated
    once per option or setting and read by every check of it. Unbounded, a client's `attempts: 1000000` kept the
    worker busy long past its budget, and `timeBudget: Infinity` made every request fail with OverflowError."""

    least: int | float
    most: int | float
    integer: bool = True
    above: bool = False  # `least` itself is out (a time must be more than 0)
    off: int | None = None  # a value under `least` that turns the option off (loopRepeats 0)

    def __str__(self) -> str:
        kind, least, most = "an integer" if self.integer else "a number", f"{self.least:,}", f"{self.most:,}"
        within = f"{kind} above {least} and at most {most}" if self.above else f"{kind} from {least} to {most}"
        return within if self.off is None else f"{self.off} (off) or {within}"

    def __contains__(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above_least = self.least < value if self.above else self.least <= value
        return value == self.off or (above_least and value <= self.most)

    def check(self, value):
        """`value` (an int as a float where numbers are not integers); ValueError if it is out of bounds."""
        if value not in self:
            raise ValueError(f"expected {self}")
        return value if self.integer else float(value)

    def parse(self, word: str):
        """A flag's value (argparse's `type`): the number `word` writes, if it is in bounds."""
        try:
            return self.check((int if self.integer else float)(word))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {self}, got {word!r}") from None

    def schema(self) -> dict:
        """The bounds as JSON Schema keywords (VS Code's settings)."""
        low = "exclusiveMinimum" if self.above else "minimum"
        return {low: self.least if self.off is None else self.off, "maximum": self.most}

    def narrowed(self, least: int | float) -> Bounds:
        """The same bounds from `least` on (a setting that refuses what the library allows)."""
        return replace(self, least=least, off=None if self.off is not None and self.off < least else self.off)


# Seconds: a command-line run may take minutes (a big model on a CPU), not hours.
SECONDS = Bounds(0, 600, integer=False, above=True)
_LIBRARY = object()  # `editors` not given: the editors use the library's default


def option_field(default, help: str, *, choices: tuple[str, ...] = (), metavar: str | None = None,
            setting: str | None = None, bounds: Bounds | None = None, editors=_LIBRARY,
            editors_bounds: Bounds | None = None, **more):
    """An option that the commands offer as a flag and, with `setting`, the editors as a setting; `editors` is its
    value in an editor's suggestion (and `fimlsp complete`'s default), `editors_bounds` the server's bounds. `more`:
    what a server setting adds (`fimlsp.settings`)."""
    return field(default=default, metadata={
        "help": help, "choices": choices, "metavar": metavar, "setting": setting, "bounds": bounds,
        "editors": default if editors is _LIBRARY else editors, "editors_bounds": editors_bounds or bounds, **more})


@dataclass(frozen=True)
class DecodingOptions:
    mode: str = option_field(
        MODES[0], "decoding mode: constrained keeps every middle valid; checked generates freely and keeps a middle "
                  "only if the file compiles with it; unconstrained checks nothing", choices=MODES, setting="mode")
    # 4,096: 8 times the shipped model's whole window; a suggestion of 0 tokens is none
    max_tokens: int = option_field(
        500, "most tokens to generate; the prompt and the middle share the model's context window, so fewer may fit",
        setting="maxTokens", bounds=Bounds(0, 4096), editors=128, editors_bounds=Bounds(1, 4096))
    top_k: int = option_field(
        50, "candidates checked per token, the model's first; the rest of the vocabulary is tried only when none of "
            "them is valid", setting="topK", bounds=Bounds(1, 1000))
    temperature: float = option_field(0.0, "sampling temperature; 0 is greedy", bounds=Bounds(0, 2, integer=False))
    top_p: float = option_field(1.0, "nucleus sampling mass", bounds=Bounds(0, 1, integer=False, above=True))
    # the editors' budget is a suggestion's, a minute at most; a command's may be minutes (a big model on a CPU).
    # 0.6 s: with the shipped model on 2 idle cores a single-line suggestion takes 0.06-0.45 s of CPU (24 held-out
    # cursors, benchmarks/keystroke.py's), so the budget binds on a busy machine, not on an idle one (issue 44)
    time_budget: float | None = option_field(
        None, "seconds for the whole completion, from the request's arrival (waiting and connecting to a model "
              "server included); when they run out, a shorter valid middle or none. Raising it trades latency for "
              "longer suggestions (several lines, where the model writes them) and, on a slow or busy machine, for "
              "a suggestion more often", metavar="SECONDS",
        setting="timeBudget", bounds=SECONDS, editors=0.6, editors_bounds=Bounds(0, 60, integer=False, above=True))
    seed: int = option_field(0, "seed for sampling", bounds=Bounds(0, 2**32 - 1))
    single_line: bool = False  # stop at the first line end where the file is valid: the setting single_line's
    statement_end: bool = option_field(
        False, "stop where the statement or block that holds the cursor ends, if the file is valid there "
               "(constrained mode; what the editors do for a multi-line suggestion); off, the middle runs on to "
               "the model's end", editors=True)
    # at most 4 M: CPython's proofs of the text outside the window take ~0.3 ms per 1,000 characters
    size_budget: int = option_field(DEFAULT_BUDGET, "files with more characters are checked only around the cursor",
                               metavar="CHARS", setting="sizeBudget", bounds=Bounds(1, 4_000_000))
    setup_timeout: float = option_field(
        10.0, "time to build the constraint (within the time budget); past it the middle is generated unconstrained "
              "and shown only if the file compiles with it", metavar="SECONDS", bounds=SECONDS)
    scope: str = option_field(
        SCOPES[0], "block: the middle stays in the block that holds the cursor and leaves the code after it as it "
                   "reads (falls back to the file when the block admits no middle), as the editors ask; file: any "
                   "middle that makes the file valid, the paper's setup", choices=SCOPES, setting="scope",
        editors="block")
    language: str = DEFAULT_LANGUAGE  # the name of a `fimlsp.language.Language`
    loop_repeats: int = option_field(
        3, "a middle that comes to end in the same chunk of text N times in a row is stopped and cut back after the "
           "first (open(path, path, path, → open(path)); 0: never", metavar="N", setting="loopRepeats",
        bounds=Bounds(2, 100, off=0))
    invented_finish: bool = option_field(
        True, "end a middle with code the model did not write where nothing it wrote ends validly: after an early "
              "stop (the time budget, the token limit, a loop) or where the model wants to end before the file is "
              "valid, a finish that invents code (`:0`, `=0`, a `#` before the code after the cursor, a word fused "
              "with the next one), so that a constrained middle always comes; off (the editors' default): the "
              "model's own text ends the middle where it can, else there is no suggestion (on 240 held-out cuts, "
              "such finishes added a type error 59 times in 119)",
        setting="inventedFinish", editors=False)
    token_healing: bool = option_field(
        True, "take the left context's last tokens back for the model to write again (a cursor after `return ` no "
              "longer prompts a comment); off, the prompt has the left context as it is")
    attempts: int = option_field(
        3, "greedy middles to decode, each from another of the model's best valid first tokens; the one that ended "
           "best comes first (valid, ended by the model rather than cut back by a fallback, then the best mean "
           "log-probability per token); 1: plain greedy decoding", metavar="K", setting="attempts",
        bounds=Bounds(1, 10))
    names: str = option_field(
        NAMES[0], "strict: a constrained middle may not load a name that nothing in the file or the middle binds "
                  "(not judged in a function that uses locals(), exec or eval, in files with globals() or a star "
                  "import that cannot be read, ...); where no middle binds them, one decoded without the judge is "
                  "shown only if it does (the editors' and fimlsp complete's default); fallback: the same, but that "
                  "middle is shown even if it does not; off: only the file's syntax and compile are checked (fimlsp "
                  "eval's default)",
        choices=NAMES, setting="names",
        editors="strict")  # 1 of 48 held-out constrained middles adds an undefined name with it, 14 without
    members: str = option_field(
        MEMBERS[0], "strict: after a dot, a constrained middle may write only a member of the receiver where its "
                  "members are known statically (modules, classes and their instances, self and cls, builtins' "
                  "types; not Any, __getattr__, setattr, mocks, nor a receiver the analysis does not answer in "
                  "time), no attribute the class loads on self is left unassigned (where its bases are known too), "
                  "self is not rebound to a built-in value that lacks what the method loads on it later, no member "
                  "of an attribute the class declares optional is loaded where nothing narrowed it, and the right "
                  "context loads no member that a call the middle closed returns a built-in value without (the "
                  "editors' default); off: any name "
                  "(fimlsp eval's default)", choices=MEMBERS,
        setting="members", editors="strict")  # held out, attribute errors in 8 of 121 shown middles, 15 of 122 without
    member_usage: float = option_field(
        0.5, "the share of the choice of a name that goes to the names the file makes likely there: with members "
             "strict, after a dot, the names the file already writes after the same receiver, where it follows the "
             "tokens the receiver follows here (backed off to fewer), by how often and how near the cursor it writes "
             "each; with names on, in an import the middle writes, the names the code "
             "around the cursor loads and nothing binds (those the module defines), by how often it loads each; the "
             "rest is the model's own choice (a cache model's mixture: a small model seldom copies from the context "
             "what the file repeats or needs); 0: the model's alone", metavar="SHARE", setting="memberUsage",
        bounds=Bounds(0, 1, integer=False))
    calls: str = option_field(
        CALLS[0], "strict: a constrained middle's call of a callable whose signature is known statically (the "
                  "file's, the workspace's, the standard library's) must fit it: no extra positional argument, no "
                  "unknown or repeated keyword, no required one missing at its ); not judged with *args or "
                  "**kwargs, decorators that may change the signature, metaclasses, or a signature the analysis does "
                  "not give in time; a function header it rewrites must still fit the file's own calls of it; a "
                  "built-in class it assigns where an annotation declares an instance is called (`x: set[str] = "
                  "set()`); and no attribute of self that holds only literals (True, 0, '') is called (the editors' "
                  "default); off: any call (fimlsp eval's default)", choices=CALLS, setting="calls",
        editors="strict")  # held out, 19 of 126 shown middles add a pyright error with it, 22 of 129 without
    search_budget: int | None = option_field(
        None, "nodes a finish search of the token loop may expand (a fallback's and the start's, which may take "
              "longer, in proportion), with no clock but the completion's time budget: the middles are the same on a "
              "busy machine as on an idle one (eval's runs); none: searches end after their share of a second, for "
              "an editor's latency", metavar="NODES", setting="searchBudget", bounds=Bounds(1, 10**9))
    # auto: workspace where the model's window has room for it (fimlsp.context.WORKSPACE_WINDOW), else off
    context: str = option_field(
        CONTEXTS[0], "what other files put into the prompt: workspace: the declarations of the names the code around "
                     "the cursor uses that other files of the project or its installed packages define, recently "
                     "edited regions of other open files, and similar code found in the project; file: only those "
                     "declarations; off: nothing; auto: workspace for a model with a window of 2,048 tokens or more, "
                     "else off. A model server receives it with the prompt", choices=CONTEXTS, setting="context")
    context_exclude: str = option_field(
        "", "paths the context never reads, as comma-separated .gitignore-style globs (files that .gitignore "
            "ignores are never read)", metavar="GLOBS", setting="contextExclude")

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.scope not in SCOPES:
            raise ValueError(f"unknown scope {self.scope!r}; choose one of {', '.join(SCOPES)}")
        if self.names not in NAMES:
            raise ValueError(f"unknown names setting {self.names!r}; choose one of {', '.join(NAMES)}")
        check_bounds(self, offered())
        named(self.language)


def check_bounds(holder, declared: tuple[Field, ...]) -> None:
    """Each of `holder`'s `declared` numbers within its declaration's bounds (a none that is the declared default is
    no number: `search_budget`); ValueError naming the first that is not."""
    for each in declared:
        value, bounds = getattr(holder, each.name), each.metadata["bounds"]
        if bounds is not None and not (value is None and each.default is None):
            try:
                bounds.check(value)
            except ValueError:
                raise ValueError(f"{each.name} must be {bounds}, got {value!r}") from None


def offered() -> tuple[Field, ...]:
    """The options that the commands offer as flags, in their order (`language` is the command's own flag)."""
    return tuple(each for each in fields(DecodingOptions) if "help" in each.metadata)


def option(name: str) -> Field:
    """The declaration of the option `name`."""
    return next(each for each in offered() if each.name == name)
