"""What a completion is asked for: the decoding options, with the one list of each kind of choice."""

from __future__ import annotations

from dataclasses import dataclass

from fimlsp.language import DEFAULT_BUDGET, DEFAULT_LANGUAGE, named

MODES = ("constrained", "checked", "unconstrained")  # the one list of modes; the first is the default
SCOPES = ("file", "block")  # the first is the default
# strict: the constrained mode refuses a middle that loads a name nothing binds (`Language.judging_names`)
NAMES = ("off", "strict")  # the first is the default


@dataclass(frozen=True)
class DecodingOptions:
    mode: str = MODES[0]
    max_tokens: int = 500
    top_k: int = 50  # candidates ranked first; the rest of the vocabulary is tried only when none of them is valid
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    timeout: float | None = None  # seconds for the whole completion
    seed: int = 0
    single_line: bool = False  # stop at the end of the first line where the file is valid
    # stop where the statement or block that holds the cursor ends and the file is valid (a multi-line suggestion)
    statement_end: bool = False
    size_budget: int = DEFAULT_BUDGET  # characters: bigger files are checked around the cursor only
    setup_timeout: float = 10.0  # seconds for the constraint's setup (within `timeout`); past it, unchecked
    scope: str = SCOPES[0]  # "block": the middle stays in the block that holds the cursor (`State.in_block`)
    language: str = DEFAULT_LANGUAGE  # the name of a `fimlsp.language.Language`
    loop_repeats: int = 3  # a middle ending in the same chunk this many times is cut back to the first; 0: never
    token_healing: bool = True  # the left context's last tokens are taken back and written again by the model
    attempts: int = 3  # greedy middles decoded, each from another valid first token; the best ended comes first
    names: str = NAMES[0]  # "strict": constrained middles load only names that the file or the middle binds

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
        if self.size_budget < 1:
            raise ValueError("size_budget must be a positive number of characters")
        if (self.timeout is not None and self.timeout <= 0) or self.setup_timeout <= 0:
            raise ValueError("timeout and setup_timeout must be positive")
        named(self.language)
