"""Fill-in-the-middle decoding: constrained, checked and unconstrained (Sec. VII-B of the FIM quotient paper).

The three modes share one loop and differ only in their `Judge`: which candidate tokens it accepts and where it
lets the middle end.

- `constrained`: a candidate is taken only if the quotient recognizer can still complete the file after it
  (`FimState.feed`), trying the model's candidates in order (the top `top_k`, then the rest of the vocabulary);
  end of sequence only if the file is complete. Once a quotient exists the middle always ends valid, within the
  token limit, whatever the model: a token is never taken if the file could no longer be finished in the tokens
  left (`FimState.distance_bound`, and near the limit `FimState.finish`, measured in characters since every
  character is at most one token), and when the model ranks end of sequence first before the file is complete,
  decoding enters a finishing phase that takes the model's most probable token among those that shorten the
  distance to a complete file. The model writes the finish; the shortest finish is only the yardstick.
- `checked`: unconstrained, but end of sequence (and the final choice) only where the language's judge accepts the
  whole file (Python: CPython compiles it) (the paper's "checked unconstrained").
- `unconstrained`: plain greedy or sampled FIM.

How a completion ended is in `Completion.ending`: `eos` (the model's own end of sequence), `finish` (a steered
finish), `line` (cut at the end of the first line where the file is valid, in single-line mode), `statement`
(cut where the statement or block that holds the cursor ends, with `statement_end`, constrained), `right` (the
model went on to write the rest of the cursor's line again, `)` before `)`, and the middle before it is a valid
end: constrained and checked), `fallback`
(generation stopped early, by the time budget, a full context, no candidate or a loop: the middle is the prefix
completed by its shortest finish, unless that finish invents code and a line the model wrote ends validly, or
else the valid prefix the model most wanted to end at) or `none`.

A small model falls into loops (`open(path, path, path, …`, `self.config.config.config…`) that only the token
limit would end. With `loop_repeats`, a middle that comes to end in the same chunk of text that many times in a
row stops there (`stop` is `loop`) and is cut back after the first chunk's last word (`open(path`), and the
constrained modes end it as at any early stop (`open(path)`); `Completion.loop_chars` says how much was cut.

Greedy decoding is one path, and a small model's first choice is often a near tie that leads it astray: after
`total = sum(values)` it ranks `if` a hair above `return`, then loops in an `if` condition. So a completion
decodes `attempts` greedy middles, each from another of the best valid first tokens (among the model's top
`top_k`: further down they are noise), all going on from one forward pass over the prompt, and returns first the
one that ended best (`preference`): valid, then ended by the model or where it was asked to end before cut back by
a fallback, then by the model's mean log-probability per token with the token that ended the middle (a sum would
prefer the shortest: `pass` over `return total / len(values)`). `attempts=1` is plain greedy decoding. The
attempts are decoded side by side (`_decode_side_by_side`): one forward pass a step for a batch of their
sequences, where the model's key-value cache keeps a row per sequence (`FimModel.batches`), else one after
another. Within a time budget (`timeout`) they share it: the prompt is cut to what the model reads in
`PROMPT_SHARE` of it, the token loops end `FALLBACK_SHARE` before its end, and when it ends a middle already
finished is offered, or else the first unfinished one ended by a fallback.

The prompt is token-healed (`token_healing`, `FimModel.healed_prompt`): where the middle goes on from the left
context, the left context's last tokens are taken back, and the model's first tokens must write their bytes again
(`_Prefix.heal`) before anything it writes counts as the middle. Whitespace taken back (an indentation, the space
after `return `) is the user's: the first tokens write it again and then code, not more whitespace.

The constrained mode's promise comes from the language's `constrain` (`fimlsp.language`): the whole file, or the
statements around the cursor when the file is broken elsewhere or bigger than the budget (`guarantee` and `region`
say which).
When not even those admit a middle, or the setup runs past its time, it decodes unconstrained and marks the result
unchecked unless the language's parser accepts the file with it. A middle is shown (`shown`) only if it passed its
mode's check: never one that may break a file that is valid but for the middle.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass, replace

import numpy as np

from fimlsp.model import FimModel, PromptPass
from fimlsp.model.token_text import completions_of, split_utf8
from fimlsp.lines import LINE_BREAK, split_lines, with_line_breaks_of
from fimlsp.language import DEFAULT_BUDGET, DEFAULT_LANGUAGE, FILE, NONE, REGION, Caches, Guarantee, Language, named
from fimlsp.language import State as FimState

MODES = ("constrained", "checked", "unconstrained")  # the one list of modes; the first is the default
SCOPES = ("file", "block")  # the first is the default
# strict: the constrained mode refuses a middle that loads a name nothing binds (`Language.judging_names`)
NAMES = ("off", "strict")  # the first is the default
# Near the token limit every candidate's shortest finish is searched for; further away the recognizer's lower
# bound decides. "Near": fewer tokens left than twice the bound plus this many.
NEAR_LIMIT_MARGIN = 16
# Shortest-finish searches a completion may run, and seconds each may take: most take a few milliseconds, and a
# search that fails (no finish within the limit) takes longest.
SEARCHES = 12
SEARCH_SECONDS = 0.1
# The first search (is the end guaranteed at all?) and a fallback's searches may take longer: each runs once.
START_SEARCH_SECONDS = 2.0
START_SEARCH_SHARE = 0.25  # of the completion's time budget, when it has one
FALLBACK_SEARCH_SECONDS = 0.5
# Within a time budget: the share of the time left that the prompt's forward pass may take (the prompt is cut to
# fit it), and the share at the end left to a fallback's searches (the token loop ends before it).
PROMPT_SHARE = 0.4
FALLBACK_SHARE = 0.15
# A loop is a chunk of at most this many characters, holding a letter or digit, whose `loop_repeats` copies make at
# least this many characters (at 3 repeats, `path, path, path, ` is one; `0, 0, 0, ` and a `====` rule are not).
LOOP_MAX_CHUNK = 64
LOOP_MIN_CHARS = 12
_ALNUM = re.compile(r"[^\W_]")
_NOT_ALNUM = re.compile(r"[\W_]")
# How far a fallback's finish search looks, in characters per token left (the finish is then tokenized to check
# that it fits).
FALLBACK_CHARACTERS_PER_TOKEN = 4
# What a fallback's finish may write and still only close what the middle opened: brackets, quotes, line breaks
# and indentation. A finish that writes more (`"":x`, a `#` that comments out the rest of the line) invents code,
# and the latest prefix that ends a line validly as it is reads better.
CLOSING = frozenset(")]}\"'` \t\n")


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


@dataclass
class Completion:
    """What a completion produced and what it cost."""

    middle: str
    parses: bool | None  # the language judges left + middle + right valid (Python: it compiles); None: not checked
    mode: str
    stop: str  # why generation stopped: eos, line, statement, right, max_tokens, context_full, no_candidate, loop,
    # timeout, cancelled
    ending: str = "none"  # how the middle ended: eos, finish, line, statement, right, fallback, none (see the module's
    # text)
    finish_chars: int = 0  # characters written after decoding was steered toward the end (or a fallback added)
    tokens: int = 0  # tokens in the middle returned
    log_probability: float = 0.0  # the model's log-probability of the middle's tokens
    candidates_tried: int = 0
    finish_searches: int = 0  # shortest-finish searches run
    model_seconds: float = 0.0
    setup_seconds: float = 0.0  # one-time constraint setup: constrain(left, right)
    constraint_seconds: float = 0.0  # every feed, distance, membership test, parse check and search of decoding
    fallback: bool = False  # the middle was not ended by the model's end of sequence, a steered finish or a line
    generated_tokens: int = 0  # tokens generated, which the fallback may have cut back
    guarantee: str = NONE  # what the middle was checked against: file, region or none
    region: tuple[int, int] | None = None  # first and last line of the file that a region guarantee covers
    unchecked: bool = False  # constrained mode could not constrain (see `reason`), and the middle it decoded
    # unconstrained was checked against nothing (one that happens to make the file parse is `file`)
    reason: str = ""  # why the guarantee is narrower than the whole file
    max_tokens: int | None = None  # the token limit that applied: the option's, or what the context window left
    scope: str = "file"  # the scope the constrained middle kept to: block, or file (asked for, or fallen back to)
    repeated_chars: int = 0  # characters cut from the end because they wrote again the right context's first lines
    refusal: str = ""  # where decoding found no token to go on with, and what the language allowed there
    loop_chars: int = 0  # characters of a loop cut from the end of what the model wrote (`loop_repeats`)
    search_seconds: float = 0.0  # of constraint_seconds, the shortest-finish searches (the start's, near the token
    # limit, a fallback's): a few a completion, whatever its length, so not a cost per token
    # the log-probability of the model's token that ended the middle (its end of sequence, or the token that began
    # the rest of the line or the next statement); None when the model did not end it (a steered finish, a fallback)
    end_log_probability: float | None = None

    @property
    def valid(self) -> bool:
        """The middle passed the check its guarantee names."""
        return self.guarantee != NONE

    @property
    def constraint_ms_per_token(self) -> float:
        """What the constraint costs each generated token: feeds, distance bounds, membership and parse checks."""
        return 1e3 * (self.constraint_seconds - self.search_seconds) / max(1, self.generated_tokens)

    def to_json(self) -> dict:
        data = asdict(self)
        data["constraint_ms_per_token"] = self.constraint_ms_per_token
        return data


@dataclass
class _Prefix:
    """The middle up to a token boundary, with what is needed to judge it and to continue from it."""

    text: str
    pending: bytes
    state: FimState | None
    tokens: int
    log_probability: float = 0.0
    eos_probability: float = 0.0
    finish: str | None = None  # a known text that completes the file after this prefix (constrained mode)
    searched: bool = False  # a search for `finish` was run
    heal: bytes = b""  # bytes of the left context's last tokens still to be written again (token healing)


class Judge:
    """The unconstrained mode: every token is taken, the middle may end anywhere. The other modes refine it."""

    constrained = False

    def __init__(self, left: str, right: str, language: Language):
        self.left, self.right, self.language = left, right, language
        self.seconds = 0.0
        self.searches = 0
        self.search_seconds = 0.0

    def extend(self, prefix: _Prefix, text: str) -> tuple[bool, FimState | None]:
        """Whether `text` may follow `prefix`, and the recognizer state after it."""
        return True, prefix.state

    def valid_end(self, prefix: _Prefix) -> bool:
        return not prefix.pending

    def _timed(self, work: Callable, *args):
        clock = time.perf_counter()
        try:
            return work(*args)
        finally:
            self.seconds += time.perf_counter() - clock


class CheckedJudge(Judge):
    """Every token is taken; the middle ends only where the language's judge accepts the whole file."""

    def valid_end(self, prefix: _Prefix) -> bool:
        return not prefix.pending and self._timed(self.language.parses, self.left + prefix.text + self.right)


class ConstrainedJudge(Judge):
    """Tokens are taken only while the quotient recognizer can still complete the file."""

    constrained = True

    def extend(self, prefix: _Prefix, text: str) -> tuple[bool, FimState | None]:
        if not text:
            return True, prefix.state
        state = self._timed(prefix.state.feed, text)
        return state is not None, state

    def valid_end(self, prefix: _Prefix) -> bool:
        return not prefix.pending and self._timed(lambda: prefix.state.complete)

    def bound(self, state: FimState) -> float:
        return self._timed(state.distance_bound)

    def finish(self, state: FimState, limit: float, deadline: float | None = None) -> str | None:
        """A shortest finish of at most `limit` characters; None if none is found (or not before `deadline`)."""
        self.searches += 1
        before = self.seconds
        try:
            return self._timed(state.finish, limit, deadline)
        finally:
            self.search_seconds += self.seconds - before


_JUDGES = {"constrained": ConstrainedJudge, "checked": CheckedJudge, "unconstrained": Judge}


_LINE_CLOSERS = ")]}:"  # what a middle that is a valid end must not write again when the line has it


class _Decoder:
    """One run of the token loop: the model's candidates, the judge's verdicts, the budget's rules."""

    def __init__(self, model: FimModel, judge: Judge, options: DecodingOptions, deadline: float | None,
                 should_stop: Callable[[], bool] | None, steps_deadline: float | None = None):
        self.model, self.judge, self.options = model, judge, options
        self.deadline, self.should_stop = deadline, should_stop
        # the token loop ends here, leaving the rest of the time to a fallback's searches
        self.steps_deadline = deadline if steps_deadline is None else steps_deadline
        self.stop_ids = sorted(model.stop_ids)
        self.tried = 0
        self.finishing = False  # the model wanted to end before the file was complete
        self.steered_from: int | None = None  # characters of the middle when the budget or a finish first steered
        self.steerable = False  # a finish within the token limit was found from the start: the end is guaranteed
        self.searches_left = SEARCHES
        self.searched_this_step = False  # one search a step for a candidate off the known finish
        self.statement_column: int | None = None  # with `statement_end`: the column of the cursor's statement
        self.looped: _Prefix | None = None  # the middle that ended in a loop, before it was cut back
        self.end_log_probability: float | None = None  # of the token that ended the middle (`Completion`'s)
        # The rest of the cursor's line after its spaces: a middle that goes on to write it again ends before it.
        line = LINE_BREAK.search(judge.right)
        self.rest_of_line = judge.right[:line.start() if line else len(judge.right)].lstrip(" \t\f")

    def steps(self, prompt_length: int, start: _Prefix, skip_first: int = 0) -> Generator:
        """Decode from `start`, a token a step, after a prompt of `prompt_length` tokens: yields the token taken (None
        first: the prompt) and is sent the model's logits after it (`_decode_side_by_side` runs the model); returns
        the last prefix, why it stopped, and the prefixes passed on the way.
        `skip_first` valid first tokens are passed over (the alternatives of a greedy completion); an alternative
        starts only from one of the model's top `top_k` tokens, and stops as `no_alternative` when none is left."""
        options, model, judge = self.options, self.model, self.judge
        self.steerable = judge.constrained and start.finish is not None
        self.statement_column = start.state.statement_column() if options.statement_end and start.state else None
        generator = np.random.default_rng(options.seed)
        token, prefix, seen = None, start, []
        while True:
            stop = self._stopped(prompt_length, prefix)
            if stop is not None:
                return prefix, stop, seen
            log_probs = yield token
            if prefix.heal:  # only tokens that write the taken-back bytes again, and no end before them
                agreeing = model.tokens_agreeing(prefix.heal)
                healing = np.full_like(log_probs, -np.inf)
                healing[agreeing] = log_probs[agreeing]
                log_probs = healing
            elif start.heal.isspace() and not prefix.text and not prefix.pending:
                log_probs = log_probs.copy()  # the row is the engine's: the mask below is this step's alone
            if start.heal.isspace() and not prefix.text and not prefix.pending:
                # taken-back indentation (or the space after `return `) is the user's: the middle writes it
                # again and then code, not more whitespace (a deeper line, a stray space, a run of spaces)
                longer = [token for token, length in model.blank_tokens if length > len(prefix.heal)]
                log_probs[longer] = -np.inf
            prefix.eos_probability = float(np.exp(log_probs[self.stop_ids]).sum()) if self.stop_ids else 0.0
            seen.append(prefix)
            chosen = self._choose(prefix, log_probs, generator, skip_first if prefix is start else 0)
            if chosen in ("eos", "no_candidate", "no_alternative"):
                return prefix, chosen, seen
            token, following = chosen
            # Where the middle ends before this token, the token is the model's end of it.
            self.end_log_probability = following.log_probability - prefix.log_probability
            ended = self._right_end(prefix, following)
            if ended is not None:
                return ended, "right", seen
            if self.options.single_line and "\n" in following.text[len(prefix.text):]:
                line_end = _line_end(prefix, following.text[len(prefix.text):], judge)
                if line_end is not None:
                    return line_end, "line", seen
            if self.statement_column is not None:
                ended = self._statement_end(start, prefix, following)
                if ended is not None:
                    return ended, "statement", seen
            self.end_log_probability = None
            prefix = following
            if self.finishing and not prefix.pending and judge.valid_end(prefix):
                return prefix, "eos", seen
            if options.loop_repeats and not prefix.pending:
                looped = self._before_loop(start, prefix, seen)
                if looped is not None:
                    return looped, "loop", [each for each in seen if len(each.text) <= len(looped.text)]

    def _right_end(self, prefix: _Prefix, following: _Prefix) -> _Prefix | None:
        """The middle, when the model begins to write the rest of the cursor's line after a valid end (`open(path`
        then `)` before `) as f:`; `len(x) == 0` then `:` before `:`): it ends there, rather than write the
        brackets and colons that follow the cursor twice (the constrained and checked modes).

        A token can close the line's bracket and go on (`):` before `) as f:`): after a valid end, a closing
        bracket or colon that the line begins with is the line's own, whatever the token writes after it. And a
        token can end the middle and begin the line at once (`):` before `:` after `isinstance(x, int`, `")`
        before `) as f:` after `open(path, "rb`): the middle ends inside it, where it is a valid end."""
        if not (self.judge.constrained or isinstance(self.judge, CheckedJudge)):  # the model alone is left as it is
            return None
        rest = self.rest_of_line
        if prefix.heal or not rest:
            return None
        new = following.text[len(prefix.text):]
        written = new.lstrip(" \t\f")
        if written and not written[0].isspace() and (
                rest.startswith(written) or (written[0] in _LINE_CLOSERS and written[0] == rest[0])):
            return prefix if prefix.text.strip() and self.judge.valid_end(prefix) else None
        if rest[0] not in _LINE_CLOSERS:
            return None
        inside = new.find(rest[0], 1)
        if inside < 1 or not (prefix.text + new[:inside]).strip():
            return None
        accepted, state = self.judge.extend(prefix, new[:inside])
        if not accepted:
            return None
        candidate = _Prefix(prefix.text + new[:inside], b"", state, prefix.tokens + 1, prefix.log_probability)
        return candidate if self.judge.valid_end(candidate) else None

    def _statement_end(self, start: _Prefix, prefix: _Prefix, following: _Prefix) -> _Prefix | None:
        """The middle up to the end of the statement or block that holds the cursor, when `following`'s new text
        begins a statement or a comment line at or below its column after a logical line's end, and the file is
        valid there (a comment there starts the code after the statement, not the statement)."""
        text = following.text
        line_start = text.rfind("\n") + 1
        line = text[line_start:]
        first = len(line) - len(line.lstrip(" \t\f"))
        if line_start == 0 or first == len(line) or line_start + first < len(prefix.text):
            return None
        if following.state is None or following.state.statement_column() > self.statement_column:
            return None
        kept = text[:line_start].rstrip(" \t\f\n")
        accepted, state = self.judge.extend(start, kept)
        if not accepted:
            return None
        candidate = _Prefix(kept, b"", state, prefix.tokens, prefix.log_probability)
        accepted, broken = self.judge.extend(candidate, text[len(kept):line_start])  # the blank end of the middle
        if not accepted or not broken.at_statement_start():
            return None
        return candidate if self.judge.valid_end(candidate) else None

    def _before_loop(self, start: _Prefix, prefix: _Prefix, seen: list[_Prefix]) -> _Prefix | None:
        """The middle cut back to the first chunk of the loop it ends in (`loop_start`), when it ends in one."""
        cut = loop_start(prefix.text, self.options.loop_repeats)
        if cut is None:
            return None
        self.looped, text = prefix, prefix.text[:cut]
        found = next((each for each in reversed(seen) if each.text == text and not each.pending), None)
        if found is not None:
            return found
        _accepted, state = self.judge.extend(start, text)  # a prefix of an accepted middle: accepted too
        tokens = len(self.model.encode(text)) if text else 0
        return _Prefix(text, b"", state, tokens, prefix.log_probability)

    def _stopped(self, prompt_length: int, prefix: _Prefix) -> str | None:
        if self.should_stop is not None and self.should_stop():
            return "cancelled"
        if self.steps_deadline is not None and time.perf_counter() > self.steps_deadline:
            return "timeout"
        if prompt_length + prefix.tokens >= self.model.context_window:
            return "context_full"
        if prefix.tokens >= self.options.max_tokens:
            return "max_tokens"
        return None

    def _choose(self, prefix: _Prefix, log_probs, generator, skip: int):
        """The next token and the prefix after it, "eos" when the middle ends here, or "no_candidate"; with `skip`,
        the first token of an alternative, or "no_alternative" when the top `top_k` hold no other valid one (the
        rest of the vocabulary is the model's noise: `ρ;` before `return`)."""
        model, judge = self.model, self.judge
        self.searched_this_step = False
        alternative = skip > 0
        for rank, token in enumerate(_ranking(log_probs, self.options, generator, judge.constrained)):
            if rank == self.options.top_k and alternative:
                return "no_alternative"
            if rank == self.options.top_k and self.steered_from is not None and prefix.finish is not None:
                return self._follow_finish(prefix, log_probs)
            self.tried += 1
            if token in model.stop_ids:
                if judge.valid_end(prefix):
                    if skip > 0:  # the empty middle is one of the first choices an alternative passes over
                        skip -= 1
                        continue
                    self.end_log_probability = float(log_probs[token])
                    return "eos"
                if self.steerable and not self.finishing:
                    self.finishing = True
                    self._steer(prefix)
                continue
            data = model.token_bytes[token] if token < len(model.token_bytes) else None
            if data is None:  # control and special tokens are never text
                continue
            data, heal = _after_healing(prefix.heal, data)
            split = split_utf8(prefix.pending + data)
            if split is None:
                continue
            text, pending = split
            accepted, state = judge.extend(prefix, text)
            if not accepted:
                continue
            following = _Prefix(prefix.text + text, pending, state, prefix.tokens + 1,
                                prefix.log_probability + float(log_probs[token]), heal=heal)
            if judge.constrained:
                if not self._within_budget(prefix, following, text):
                    continue
            if skip > 0:
                skip -= 1
                self.searched_this_step = False  # the step's one search is for the token taken
                continue
            return token, following
        return "no_alternative" if alternative else "no_candidate"

    def _follow_finish(self, prefix: _Prefix, log_probs):
        """The model's most probable token among those that begin the known finish (a byte-level vocabulary has
        one for its first character): past the top candidates, steering needs no search down the vocabulary."""
        finish, best = prefix.finish, None
        for length in range(1, len(finish) + 1):
            for token in self.model.tokens_of(prefix.heal + finish[:length].encode()):
                if best is None or log_probs[token] > log_probs[best[0]]:
                    best = (token, finish[:length])
        if best is None:
            return "no_candidate"
        token, text = best
        accepted, state = self.judge.extend(prefix, text)
        if not accepted:
            return "no_candidate"
        return token, _Prefix(prefix.text + text, b"", state, prefix.tokens + 1,
                              prefix.log_probability + float(log_probs[token]), finish=finish[len(text):])

    def _tokens_left(self, prefix: _Prefix) -> int:
        return self.options.max_tokens - prefix.tokens

    def _within_budget(self, prefix: _Prefix, following: _Prefix, text: str) -> bool:
        """Whether the file can still be finished within the tokens left after `following` (and, when finishing,
        whether `following` brings the end closer). Sets `following.finish` where it is known."""
        left = self._tokens_left(following)
        known = prefix.finish
        if following.pending:  # half a character: judged once it is whole, if some whole one could be valid
            return not self.finishing and any(
                self.judge.extend(following, char)[0] for char in completions_of(following.pending))
        limit = min(left, len(known) - 1) if self.finishing and known is not None else left
        if known is not None and text and known.startswith(text) and len(known) - len(text) <= limit:
            following.finish = known[len(text):]
            return True
        bound = self.judge.bound(following.state)
        if bound > limit:
            self._steer(prefix)
            return False
        if not self.steerable or (not self.finishing and left >= 2 * bound + NEAR_LIMIT_MARGIN):
            return True
        if self.searched_this_step or self.searches_left == 0:
            # With a finish known, a later candidate follows it; without one (the searches failed or are spent),
            # the bound alone admits it.
            return known is None
        self.searched_this_step = True
        if self._known_finish(following, limit) is None:
            self._steer(prefix)
            return False
        return True

    def _steer(self, prefix: _Prefix) -> None:
        """A candidate was refused for the budget, or the model wanted to end: the end is steered from here on,
        along candidates that keep a finish within reach (the current prefix's is searched for once)."""
        if self.steered_from is None:
            self.steered_from = len(prefix.text)
        if not prefix.pending:
            self._known_finish(prefix)

    def fallback(self, seen: list[_Prefix]) -> tuple[_Prefix, int] | None:
        """The middle when generation stopped early: a late prefix completed by a shortest finish that fits the
        tokens left (the last prefix, then ones further back, each back twice as far), or else the valid prefix
        with the best end-of-sequence probability weighted by its length, or else the empty middle and its finish:
        an empty suggestion is none at all (after `open(`, a model that ran into an unclosed string at the token
        limit suggests a prefix it wrote, `path,`, not nothing). A finish that does more than close (`CLOSING`)
        gives way to the latest prefix that ends a line and is valid as it is. With the characters the finish
        added."""
        judge = self.judge
        whole = [prefix for prefix in seen if not prefix.pending]
        if judge.constrained:
            backs = [back for back in (2 ** power for power in range(len(whole).bit_length())) if back < len(whole)]
            for prefix in [whole[-back] for back in backs]:
                ended = self._finished(prefix, whole, seen[-1].text)
                if ended is not None:
                    return ended
        ranked = sorted(seen, key=lambda p: (bool(p.text), p.eos_probability * (p.tokens + 1), p.tokens),
                        reverse=True)
        for candidate in ranked:
            if judge.valid_end(candidate):
                return candidate, 0
        return self._finished(whole[0], whole, seen[-1].text) if judge.constrained and whole else None

    def _finished(self, prefix: _Prefix, whole: list[_Prefix], written: str) -> tuple[_Prefix, int] | None:
        """`prefix` completed by a shortest finish that fits the tokens left, or the latest valid line end of
        `whole` where that finish would do more than close what the middle opened."""
        fitting = self._fitting_finish(prefix)
        if fitting is None:
            return None
        finish, tokens = fitting
        if not CLOSING.issuperset(finish):
            line_end = self._valid_line_end(whole, written)
            if line_end is not None:
                return line_end, 0
        state = prefix.state.feed(finish) if finish else prefix.state
        return _Prefix(prefix.text + finish, b"", state, prefix.tokens + tokens, prefix.log_probability), len(finish)

    def _valid_line_end(self, whole: list[_Prefix], written: str) -> _Prefix | None:
        """The latest non-empty prefix that `written` follows with a line break and that is a valid end."""
        for prefix in reversed(whole):
            if (prefix.text.strip() and LINE_BREAK.match(written, len(prefix.text))
                    and self.judge.valid_end(prefix)):
                return prefix
        return None

    def _fitting_finish(self, prefix: _Prefix) -> tuple[str, int] | None:
        """A shortest finish whose tokens fit the tokens left, and their number: a token may hold several
        characters, so the search may look further than one character a token."""
        left = self._tokens_left(prefix)
        finish = prefix.finish
        if finish is None:
            limit = FALLBACK_CHARACTERS_PER_TOKEN * left
            finish = self.judge.finish(prefix.state, limit, self._search_deadline(FALLBACK_SEARCH_SECONDS))
        if finish is None:
            return None
        tokens = len(self.model.encode(finish))
        return (finish, tokens) if tokens <= left else None

    def _known_finish(self, prefix: _Prefix, limit: int | None = None) -> str | None:
        """The prefix's finish, searched for once (within `limit` characters, by default the tokens left)."""
        if prefix.finish is None and not prefix.searched and self.searches_left > 0:
            prefix.searched = True
            self.searches_left -= 1
            limit = self._tokens_left(prefix) if limit is None else limit
            prefix.finish = self.judge.finish(prefix.state, limit, self._search_deadline(SEARCH_SECONDS))
        return prefix.finish

    def _search_deadline(self, seconds: float) -> float:
        """`seconds` from now, and no later than the completion's deadline."""
        deadline = time.perf_counter() + seconds
        return deadline if self.deadline is None else min(deadline, self.deadline)


def complete_middle(
    model: FimModel,
    left: str,
    right: str,
    options: DecodingOptions = DecodingOptions(),
    should_stop: Callable[[], bool] | None = None,
    guarantee: Guarantee | None = None,
    caches: Caches | None = None,
) -> Completion:
    """Generate the middle between `left` and `right`. `should_stop` is polled once per token (cancellation).

    `guarantee`, the promise and recognizer after `left` for this `right` (from a cache of an editor's typing,
    extended with `Guarantee.extended`), saves the constrained mode's one-time setup. Without it the setup
    reuses and keeps what it compiles in `caches`, when given (a run of many completions).
    """
    return complete_middles(model, left, right, options, 1, should_stop, guarantee, caches)[0]


def complete_middles(
    model: FimModel,
    left: str,
    right: str,
    options: DecodingOptions = DecodingOptions(),
    n: int = 1,
    should_stop: Callable[[], bool] | None = None,
    guarantee: Guarantee | None = None,
    caches: Caches | None = None,
) -> list[Completion]:
    """Up to `n` distinct middles, the best first (`preference`), of at least `options.attempts` decoded.

    Greedy decoding gives its alternatives by passing over the first valid first tokens; sampling by drawing
    again with the next seeds. The constraint's setup (kept in `caches`, see `complete_middle`), the start's
    finish search and the prompt's forward pass are shared, and counted in the middle returned first. Always
    returns at least one completion."""
    if n < 1:
        raise ValueError("n must be at least 1")
    started = time.perf_counter()
    deadline = None if options.timeout is None else started + options.timeout
    mode, setup_seconds, names_reason = options.mode, 0.0, ""
    if mode == "constrained":
        if guarantee is None:
            setup_deadline = started + options.setup_timeout
            guarantee = named(options.language).constrain(left, right, options.size_budget,
                                                          min(setup_deadline, deadline or setup_deadline), caches)
        plain = guarantee
        if options.names == "strict":
            guarantee, names_reason = named(options.language).judging_names(guarantee, left, right)
        setup_seconds = time.perf_counter() - started
        if guarantee.state is None:
            mode = "unconstrained"
    reserve = min(options.max_tokens, model.context_window // 4)
    # Within a time budget, the prompt is cut to what the model can read in its share of the time left.
    limit = None if deadline is None else model.prompt_tokens_within(PROMPT_SHARE * (deadline - time.perf_counter()))
    prompt, heal = model.healed_prompt(left, right, reserve, limit) if options.token_healing else (
        model.prompt(left, right, reserve, limit), b"")
    # The context window may leave fewer tokens than asked for; the steering must know the limit that applies.
    options = replace(options, max_tokens=max(0, min(options.max_tokens, model.context_window - len(prompt))))
    prompt_pass = model.prompt_pass(prompt, shared=options.attempts > 1 or n > 1)
    # One start for every attempt: its finish (is the end reachable at all?) is searched for once.
    start, scope, scope_reason, start_searches = _Prefix("", b"", None, 0), "file", "", 0
    clock = time.perf_counter()
    if mode == "constrained":
        start, scope, scope_reason, start_searches = _start(guarantee.state, options, deadline)
    start_seconds = time.perf_counter() - clock
    start.heal = heal
    # The token loops end early enough to leave a fallback its searches within the budget.
    steps_deadline = None if deadline is None else deadline - FALLBACK_SHARE * (deadline - time.perf_counter())
    results: list[Completion] = []
    attempts = 0
    steps_clock = _Clock()
    while attempts < options.attempts or (len(results) < n and attempts < 2 * n):
        if results and deadline is not None and time.perf_counter() >= deadline:
            break  # a later attempt would only time out, and its fallback run past the budget
        together = options.attempts - attempts if attempts < options.attempts and model.batches else 1
        decoders, runs = [], []
        for attempt in range(attempts, attempts + together):
            run_options = options if options.temperature == 0 else replace(options, seed=options.seed + attempt)
            skip = attempt if options.temperature == 0 else 0
            judge = _JUDGES[mode](left, right, named(options.language))
            decoders.append(_Decoder(model, judge, run_options, deadline, should_stop, steps_deadline))
            runs.append(decoders[-1].steps(len(prompt), start, skip))
        attempts += together
        outcomes = _decode_side_by_side(prompt_pass, runs, steps_clock)
        # When the budget ends, a middle that was finished is offered and the unfinished ones are dropped; with
        # none finished, the first unfinished one is ended by a fallback.
        judged = [None if outcome[1] == "timeout" else
                  _judged(model, left, right, decoder, mode, guarantee, start, outcome)
                  for decoder, outcome in zip(decoders, outcomes)]
        finished = any(result is not None and result.valid for result in judged)
        timed_out = [index for index, outcome in enumerate(outcomes) if outcome[1] == "timeout"]
        if timed_out and not finished:
            first = timed_out[0]
            judged[first] = _judged(model, left, right, decoders[first], mode, guarantee, start, outcomes[first])
        ended = False
        for outcome, result in zip(outcomes, judged):
            if outcome[1] == "no_alternative":  # no other valid first token among the model's top ones
                ended = True
                break
            if result is None:
                continue
            result.setup_seconds = setup_seconds
            result.scope = scope
            result.reason = "; ".join(reason for reason in (scope_reason, names_reason, result.reason) if reason)
            if any(result.middle == other.middle for other in results):
                continue
            results.append(result)
            if result.stop in ("cancelled", "timeout"):
                ended = True
                break
        if ended or timed_out:
            break
    results.sort(key=preference, reverse=True)
    first = results[0]
    first.model_seconds += prompt_pass.seconds + steps_clock.seconds
    first.constraint_seconds += start_seconds
    first.search_seconds += start_seconds
    first.finish_searches += start_searches
    if mode == "constrained" and options.names == "strict" and not names_reason and not first.valid:
        # Names are a judgement on top of validity: where no valid middle binds what it must, a valid one is
        # worth more than none.
        remaining = None if deadline is None else deadline - time.perf_counter()
        if remaining is None or remaining > 0:
            again = complete_middles(model, left, right, replace(options, names="off", timeout=remaining), n,
                                     should_stop, plain, caches)
            again[0].reason = "; ".join(reason for reason in (
                "no valid middle was found that binds every name it needs: decoded without the name judge",
                again[0].reason) if reason)
            return again
    return results[:n]


def _decode_side_by_side(prompt_pass: PromptPass, runs: list[Generator], clock: _Clock) -> list[tuple[_Prefix, str, list]]:
    """Run the decoders' `steps` together, one model step for all: a session with a row each (a decoder that stops
    leaves it). The decoders' outcomes, in order; the model's time on the steps is added to `clock`."""
    outcomes: list = [None] * len(runs)
    waiting = []  # the runs that wait for the model, in the order of the session's rows
    for index, run in enumerate(runs):
        try:
            next(run)
            waiting.append(index)
        except StopIteration as done:
            outcomes[index] = done.value
    if not waiting:
        return outcomes
    rows = [prompt_pass.log_probs] * len(waiting)
    session = prompt_pass.session(len(waiting))
    try:
        while waiting:
            going, tokens = [], []
            for index, row in zip(waiting, rows):
                try:
                    tokens.append(runs[index].send(row))
                    going.append(index)
                except StopIteration as done:
                    outcomes[index] = done.value
            if not going:
                break
            if len(going) < len(waiting):
                session.keep([waiting.index(index) for index in going])
            waiting = going
            started = time.perf_counter()
            rows = session.step(tokens)
            clock.seconds += time.perf_counter() - started
    finally:
        session.close()
    return outcomes


@dataclass
class _Clock:
    """Seconds spent, summed over calls."""

    seconds: float = 0.0


def shown(result: Completion) -> bool:
    """Whether a middle may be shown to a user: it passed the check its mode asks for (`valid`: the file compiles
    with it or, in a file that admits no middle, the region of its promise does), or the mode asks for none
    (`unconstrained`). An unchecked middle, decoded without a constraint in the constrained mode, was judged by the
    language's judge (compile) on the whole file: it is shown only as a valid one, so that a setup that ran out of time (or
    of middles) never lets a middle break a file that is valid but for it."""
    return result.valid or result.mode == "unconstrained"


def preference(result: Completion) -> tuple[bool, bool, float]:
    """How middles rank: valid before invalid (the checked and constrained modes; the model alone is not judged);
    ended by the model (its end of sequence, a steered finish) or where it was asked to end (line, statement, the
    right context) before those a fallback cut or nothing ended; then by the model's mean log-probability per token,
    the token that ended the middle counted (an empty middle is worth its end's probability)."""
    ended_by_token = result.end_log_probability is not None
    counted = result.tokens + ended_by_token
    total = result.log_probability + (result.end_log_probability or 0.0)
    mean = total / counted if counted else -math.inf
    judged = result.valid or result.mode == "unconstrained"
    return judged, result.ending not in ("fallback", "none"), mean


def _start(state: FimState, options: DecodingOptions, deadline: float | None) -> tuple[_Prefix, str, str, int]:
    """The empty middle, with its finish searched for (is the end reachable at all?), in the scope asked for; a
    block that admits no finish falls back to the whole file, and says so. With the searches run."""
    seconds = START_SEARCH_SECONDS
    if deadline is not None:  # an editor's time budget: the model gets most of it
        seconds = min(seconds, START_SEARCH_SHARE * (deadline - time.perf_counter()))
    limit, reason = options.max_tokens, ""
    if options.scope == "block":
        scoped = state.in_block()
        finish = scoped.finish(limit, time.perf_counter() + seconds)
        if finish is not None:
            return _Prefix("", b"", scoped, 0, finish=finish, searched=True), "block", "", 1
        finish = state.finish(limit, time.perf_counter() + seconds)
        if finish is None:
            return _Prefix("", b"", scoped, 0, searched=True), "block", "", 2
        reason = "the block at the cursor admits no middle within the limit: the whole file was the scope"
        return _Prefix("", b"", state, 0, finish=finish, searched=True), "file", reason, 2
    return _Prefix("", b"", state, 0, finish=state.finish(limit, time.perf_counter() + seconds),
                   searched=True), "file", reason, 1


# Stops where the model ended the middle: its end of sequence, or a token past where it was asked to end.
_MODEL_ENDS = ("eos", "line", "statement", "right")


def _judged(model, left, right, decoder: _Decoder, mode, guarantee, start, outcome) -> Completion:
    """The middle a decoder's `steps` ended with, judged (ended by a fallback where generation stopped early)."""
    judge, options = decoder.judge, decoder.options
    prefix, stop, seen = outcome
    refused = prefix if stop == "no_candidate" else None
    looped = decoder.looped
    generated, ending, finish_chars = (looped or prefix).tokens, "none", 0
    loop_chars = len(looped.text) - len(prefix.text) if looped is not None else 0
    steered = decoder.steered_from is not None
    steered_to_the_limit = stop in ("max_tokens", "context_full") and steered and judge.valid_end(prefix)
    if stop in _MODEL_ENDS or steered_to_the_limit:
        ending = stop if stop in ("line", "statement", "right") else "finish" if steered else "eos"
        if ending == "finish":
            finish_chars = len(prefix.text) - decoder.steered_from
    elif mode != "unconstrained" and stop != "cancelled":  # a cancelled middle is not wanted: no searches for it
        ended = decoder.fallback(seen + [prefix])
        if ended is not None:
            (prefix, finish_chars), ending = ended, "fallback"
    repeated_chars = 0
    if ending != "none" and mode != "unconstrained" and not prefix.pending:
        trimmed = _without_repeated_suffix(prefix, seen, start, right, judge, model)
        if trimmed is not None:
            repeated_chars, prefix = len(prefix.text) - len(trimmed.text), trimmed
    middle = prefix.text if not prefix.pending else prefix.text + prefix.pending.decode("utf-8", "replace")
    middle = with_line_breaks_of(middle, left, right)  # an editor inserts it as it is, among the file's lines
    ended_by_model = ending in _MODEL_ENDS and not repeated_chars
    confirmed = mode != "unconstrained" and ending != "none"  # the judge said the end is valid
    scope = FILE if mode == "checked" or guarantee is None else guarantee.scope
    whole = None
    if confirmed and scope == FILE and mode == "constrained":
        # The judge's verdicts came from the windows around the cursor: the middle shown is judged on the file.
        whole = confirmed = judge.language.parses(left + middle + right)
    elif confirmed and scope == FILE:
        whole = True
    elif len(left) + len(middle) + len(right) <= options.size_budget or options.mode != "constrained":
        whole = judge.language.parses(left + middle + right)
    checked = scope if confirmed else FILE if whole else NONE
    narrowed = guarantee is not None and guarantee.scope != FILE
    return Completion(
        middle, whole, options.mode, stop, ending, finish_chars, prefix.tokens, prefix.log_probability,
        decoder.tried, judge.searches, 0.0, 0.0, judge.seconds, ending == "fallback", generated,
        checked, guarantee.lines(left, right) if checked == REGION else None,
        guarantee is not None and guarantee.state is None and checked == NONE,
        guarantee.reason if narrowed else "", options.max_tokens, repeated_chars=repeated_chars,
        refusal=_refusal(refused, left) if refused is not None and checked == NONE else "", loop_chars=loop_chars,
        search_seconds=judge.search_seconds,
        end_log_probability=decoder.end_log_probability if ended_by_model else None,
    )


def _refusal(prefix: _Prefix, left: str) -> str:
    """Where no candidate could go on, and what the language allowed there, in one line."""
    where = (f"after {prefix.text[-24:]!r} ({len(prefix.text)} characters into the middle)" if prefix.text
             else f"at the cursor, after {left[-24:]!r}")
    expected = prefix.state.expected() if prefix.state is not None else ()
    shown = ", ".join(expected[:12]) + (f" and {len(expected) - 12} more" if len(expected) > 12 else "")
    return (f"{where}, no token kept a valid end within the token limit"
            + (f"; expected one of: {shown}" if expected else ""))


def _without_repeated_suffix(prefix: _Prefix, seen: list[_Prefix], start: _Prefix, right: str, judge: Judge,
                             model: FimModel) -> _Prefix | None:
    """The middle cut before its last lines where they write again the right context's first lines (surrounding
    whitespace and blank lines aside), if what remains is still a valid end; the longest such repetition. Blank
    lines alone count where the right context begins with a line break: a suggestion that ends in line breaks
    before one would put blank lines into the code below it (`return items` and two empty lines)."""
    lines = split_lines(prefix.text)
    following = [line.strip() for line in LINE_BREAK.split(right) if line.strip()]
    blank_lines_repeat = LINE_BREAK.match(right) is not None
    for first in range(1, len(lines) + 1):
        repeated = [line.strip() for line in lines[first:] if line.strip()]
        if not (repeated or blank_lines_repeat) or repeated != following[:len(repeated)]:
            continue
        with_break = "".join(lines[:first])
        last = lines[first - 1]
        for text in (with_break[:len(with_break) - len(last) + len(last.rstrip("\r\n"))], with_break):
            if text == prefix.text:
                continue
            candidate = next((each for each in seen if each.text == text and not each.pending), None)
            if candidate is None:
                accepted, state = judge.extend(start, text)
                if not accepted:
                    continue
                tokens = len(model.encode(text)) if text else 0
                candidate = _Prefix(text, b"", state, tokens, prefix.log_probability)
            if judge.valid_end(candidate):
                return candidate
    return None


def loop_start(text: str, repeats: int) -> int | None:
    """Where `text` should end when it ends in a loop: `repeats` or more equal chunks in a row (see `LOOP_MAX_CHUNK`),
    cut after the first chunk of the run: after its last letter or digit (`open(path, path, path, ` → `open(path`),
    or at the end of the word it ends inside (`set_event_event_event` → `set_event`). None when it ends in none."""
    for length in range(1, min(LOOP_MAX_CHUNK, len(text) // repeats) + 1):
        chunk = text[-length:]
        if length * repeats < LOOP_MIN_CHARS or not _ALNUM.search(chunk) or not text.endswith(chunk * repeats):
            continue
        end = len(text) - repeats * length
        while end > 0 and text[end - 1] == text[end - 1 + length]:  # back to where the repetition begins
            end -= 1
        end += length
        if text[end - 1].isalnum() and text[end].isalnum():
            word_end = _NOT_ALNUM.search(text, end)
            return word_end.start() if word_end is not None else end  # a run inside one word: its first chunk
        while not text[end - 1].isalnum():
            end -= 1
        return end
    return None


def _ranking(log_probs: np.ndarray, options: DecodingOptions, generator: np.random.Generator,
             whole_vocabulary: bool) -> Iterator[int]:
    """Token ids in the order to try them: by probability, or (sampling) by Gumbel-perturbed scores, which makes
    the first valid token an exact sample of the model's distribution renormalised over the valid tokens. The
    top `top_k` come first; with `whole_vocabulary`, the rest follow in the same order. Ties go to the lower id."""
    scores = log_probs
    if options.temperature > 0:
        scores = log_probs / options.temperature
        if options.top_p < 1.0:
            order = _descending(scores)
            shifted = np.exp(scores[order] - scores[order[0]])
            cumulative = np.cumsum(shifted) / shifted.sum()
            cut = int((cumulative < options.top_p).sum()) + 1
            masked = np.full_like(scores, -np.inf)
            masked[order[:cut]] = scores[order[:cut]]
            scores = masked
        uniform = np.clip(generator.random(scores.shape), 1e-12, 1.0)
        scores = scores - np.log(-np.log(uniform))
    count = min(options.top_k, scores.size)
    best = np.argpartition(-scores, count - 1)[:count] if count < scores.size else np.arange(scores.size)
    first = best[np.lexsort((best, -scores[best]))].tolist()
    yield from (token for token in first if scores[token] != -np.inf)
    if whole_vocabulary and count < scores.size:
        taken = set(first)
        yield from (token for token in _descending(scores).tolist() if token not in taken and scores[token] != -np.inf)


def _descending(scores: np.ndarray) -> np.ndarray:
    """Token ids by descending score, ties to the lower id."""
    return np.argsort(-scores, kind="stable")


def _after_healing(heal: bytes, data: bytes) -> tuple[bytes, bytes]:
    """A token's bytes that are new text while `heal` is still to be written again, and what then remains of
    `heal` (the token agrees with it: `FimModel.tokens_agreeing`)."""
    if data.startswith(heal):
        return data[len(heal):], b""
    return b"", heal[len(data):]


def _line_end(previous: _Prefix, text: str, judge: Judge) -> _Prefix | None:
    """The middle cut at a newline in the newly accepted `text`, if the file is valid there (single-line mode)."""
    if previous.pending:
        return None
    position = text.find("\n")
    while position != -1:
        accepted, state = judge.extend(previous, text[:position])
        candidate = _Prefix(previous.text + text[:position], b"", state, previous.tokens + 1,
                            previous.log_probability)
        if accepted and judge.valid_end(candidate):
            return candidate
        position = text.find("\n", position + 1)
    return None
