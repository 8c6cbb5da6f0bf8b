"""A completion: the constraint's setup, the prompt's forward pass, and the attempts decoded from them.

Greedy decoding is one path, and a small model's first choice is often a near tie that leads it astray: after
`total = sum(values)` it ranks `if` a hair above `return`, then loops in an `if` condition. So a completion
decodes `attempts` greedy middles, each from another of the best valid first tokens (among the model's top
`top_k`: further down they are noise), all going on from one forward pass over the prompt, and returns first the
one that ended best (`preference`). `attempts=1` is plain greedy decoding. The attempts are decoded side by side
(`side_by_side.decode_side_by_side`): one forward pass a step for a batch of their sequences, where the model's key-value
cache keeps a row per sequence (`FimModel.batches`), else one after another. Within a time budget (`time_budget`)
they share it: the prompt is cut to what the model reads in `PROMPT_SHARE` of it, the token loops end
`FALLBACK_SHARE` before its end, and when it ends a middle already finished is offered, or else the first
unfinished one ended by a fallback.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from earley.deadline import Deadline
from fimlsp.collector import settle
from fimlsp.decoding.endings import without_repeated_suffix
from fimlsp.decoding.fallback import fallback
from fimlsp.decoding.judges import JUDGES
from fimlsp.decoding.loop import Decoder
from fimlsp.decoding.options import DecodingOptions
from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.decoding.prompts import PromptOnDemand, steady, steady_contexts
from fimlsp.decoding.results import Completion, preference
from fimlsp.decoding.side_by_side import StepsClock, decode_side_by_side
from fimlsp.decoding.start_finish import remember_middle, start_with_finish
from fimlsp.language import FILE, NONE, REGION, Caches, Guarantee, named
from fimlsp.lines import with_line_breaks_of
from fimlsp.model import FimModel, Snippet

# Within a time budget: the share of the time left that the prompt's forward pass may take (the prompt is cut to
# fit it), and the share at the end left to a fallback's searches (the token loop ends before it).
PROMPT_SHARE = 0.4
FALLBACK_SHARE = 0.15
# With the name judge on, the judged decoding's share of a time budget: the rest is left to the retry without it,
# so that a middle the judge refuses still leaves time for a valid one (a suggestion rather than none).
NAMES_SHARE = 0.6


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
    stages: dict[str, float] | None = None,
    extra: Sequence[Snippet] = (),
    place: tuple[str | None, str | None] = (None, None),
) -> list[Completion]:
    """Up to `n` distinct middles, the best first (`preference`), of at least `options.attempts` decoded.

    Greedy decoding gives its alternatives by passing over the first valid first tokens; sampling by drawing again
    with the next seeds. The constraint's setup (kept in `caches`, see `complete_middle`), the start's finish search
    and the prompt's forward pass are shared, and counted in the middle returned first. Always returns at least one
    completion. `stages`, when given, gets the seconds of each stage added, over every attempt (those dropped too)
    and the retry without the name judge: `setup`, `prompt` (building and reading it), `tokens` (the model's steps),
    `judges` (the constraint's work per token), `start` (the start's shortest-finish search), `searches` (steering's
    and fallbacks'), `checks` (the ended middles' judgement on the whole file); and, of those, the member and call
    judges' own time, their waits included: `member_judge`, `call_judge`. `extra`: other files of the repository,
    for the prompt only (`FimModel.prompt`), never for a judge. `place`: the document's path and project root, where
    the judges read the project's other files (`Language.judging_names`). `should_stop` ends every stage within a
    few milliseconds: the searches and the prompt's reading (a chunk at a time) poll it, and a stopped request runs
    no fallback, no final check and no retry."""
    if n < 1:
        raise ValueError("n must be at least 1")
    language = named(options.language)
    with language.completing():  # the language's background work waits meanwhile
        stages = {} if stages is None else stages
        started = time.perf_counter()
        budget_end = None if options.time_budget is None else started + options.time_budget
        mode, plain, names_reason, setup_seconds, members, calls = options.mode, guarantee, "", 0.0, None, None
        if mode == "constrained":
            if guarantee is None:
                setup_deadline = started + options.setup_timeout
                plain = language.constrain(left, right, options.size_budget,
                                           min(setup_deadline, budget_end or setup_deadline), caches)
            if options.members == "strict":
                plain, members = language.judging_members(plain, left, right, *place)
            if options.calls == "strict":
                plain, calls = language.judging_calls(plain, left, right, *place)
            guarantee = plain  # the retry without the name judge keeps the member and call judges
            if options.names != "off":
                guarantee, names_reason = language.judging_names(plain, left, right, *place)
            if guarantee.state is None:
                mode = "unconstrained"
            setup_seconds = time.perf_counter() - started
        _add(stages, setup=setup_seconds)
        names_retry = mode == "constrained" and options.names != "off" and not names_reason
        deadline = budget_end
        if names_retry and deadline is not None:
            now = time.perf_counter()
            deadline = now + NAMES_SHARE * max(0.0, deadline - now)
        run = _Run(model, left, right, n, should_stop, stages, tuple(extra), tuple(place))
        results = run.attempts(options, mode, guarantee, deadline, setup_seconds, names_reason)
        first = results[0]
        if names_retry and not (first.valid and first.middle) and first.stop != "cancelled" and (
                budget_end is None or time.perf_counter() < budget_end):
            results = _without_names(run, left, right, options, plain, budget_end)
        if members is not None:
            members.ask_ahead()
        for stage, judge in (("member_judge", members), ("call_judge", calls)):
            if judge is not None:
                _add(stages, **{stage: judge.spent})
                for result in results if judge.reason else ():
                    result.reason = "; ".join(reason for reason in (result.reason, judge.reason) if reason)
        settle()  # the next completion's collections walk what it allocates, not all that this one kept
        return results


def _without_names(run: _Run, left: str, right: str, options: DecodingOptions, plain: Guarantee,
                   budget_end: float | None) -> list[Completion]:
    """The retry without the name judge (`plain` has the member and call judges that are on), where no judged middle
    bound its names, for the time that is left."""
    # Where no judged middle binds what it must, one decoded without the judge may: strict shows it only if it
    # passes the judge's verdict on the whole middle (as an unchecked middle); fallback shows a valid one anyway.
    again = run.attempts(replace(options, names="off"), "constrained" if plain.state is not None else "unconstrained",
                         plain, budget_end, 0.0, "")
    binding = [result.valid and named(options.language).binds_names(left, result.middle, right, *run.place)
               for result in again]
    # stable: among those that bind their names (or not), the preferred first
    again = [result for _binds, result in sorted(zip(binding, again), key=lambda pair: pair[0], reverse=True)]
    said = "no valid middle was found that binds every name it needs: decoded without the name judge"
    if options.names == "strict":
        for binds, result in zip(sorted(binding, reverse=True), again):
            if not binds:
                result.guarantee, result.region = NONE, None
        if not any(binding):
            said += ", and no middle decoded so binds them either: no suggestion (names strict)"
    elif not any(binding):
        said += ", and this middle does not bind them either (names fallback)"
    again[0].reason = "; ".join(reason for reason in (said, again[0].reason) if reason)
    return again


@dataclass
class _Run:
    """What a completion's attempts share: the cursor, how many middles are wanted, the stop flag, the stages."""

    model: FimModel
    left: str
    right: str
    n: int
    should_stop: Callable[[], bool] | None
    stages: dict[str, float]
    extra: Sequence[Snippet] = ()
    place: tuple[str | None, str | None] = (None, None)

    def attempts(self, options: DecodingOptions, mode: str, guarantee: Guarantee | None, deadline: float | None,
                 setup_seconds: float, names_reason: str) -> list[Completion]:
        """The attempts decoded from one prompt and one start, the best first: the first attempts side by side, then
        one after another until `n` distinct middles (or twice as many attempts) or the deadline."""
        model, n = self.model, self.n
        prompt, options, prompt_pass, steps_deadline = self._prompt(options, deadline)
        if not self._stopped():  # before the start's search: a superseded request leaves its chunks in the cache
            prompt_pass.read_ahead()
        searches_deadline = _stoppable(deadline, self.should_stop)
        start, scope, scope_reason, start_searches = PartialMiddle("", b"", None, 0), "file", "", 0
        clock = time.perf_counter()
        if mode == "constrained" and not self._stopped():
            start, scope, scope_reason, start_searches = start_with_finish(guarantee.state, options, deadline, searches_deadline,
                                                                self.left, self.right)
        start_seconds = time.perf_counter() - clock
        start.heal = prompt_pass.heal
        results: list[Completion] = []
        unfinished: list[tuple[Decoder, tuple]] = []  # attempts a fallback would end, in order (`_judge`)
        attempts, steps_clock = 0, StepsClock()
        while attempts < options.attempts or (len(results) + len(unfinished) < n and attempts < 2 * n):
            if (results or unfinished) and deadline is not None and time.perf_counter() >= deadline:
                break  # a later attempt would only time out, and its fallback run past the budget
            if deadline is not None and _finished(results) >= n:
                break  # within a time budget, the first middles the model ended are shown, not bettered
            together = options.attempts - attempts if attempts < options.attempts and model.batches else 1
            decoders = []
            for attempt in range(attempts, attempts + together):
                run_options = options if options.temperature == 0 else replace(options, seed=options.seed + attempt)
                judge = JUDGES[mode](self.left, self.right, named(options.language), self.place)
                decoders.append(Decoder(model, judge, run_options, searches_deadline, self.should_stop,
                                        steps_deadline))
            runs = [decoder.steps(len(prompt), start, attempt if options.temperature == 0 else 0)
                    for attempt, decoder in enumerate(decoders, attempts)]
            attempts += together
            judged, waiting, ended = self._judge(decoders, decode_side_by_side(prompt_pass, runs, steps_clock),
                                                 mode, guarantee, start)
            unfinished += waiting
            if self._keep(judged, results, setup_seconds, scope, scope_reason, names_reason) or ended:
                break
        if _finished(results) < n:
            # no later attempt ended as well as these: their fallbacks' searches run only now, when needed
            self._keep(self._ended_by_fallbacks(unfinished, mode, guarantee, start, any(each.valid for each in results)),
                       results, setup_seconds, scope, scope_reason, names_reason)
        results.sort(key=preference, reverse=True)
        first = results[0]
        if mode == "constrained" and first.valid and first.middle:
            remember_middle(self.left, self.right, options, first.middle)
        first.model_seconds += prompt_pass.seconds + steps_clock.seconds
        first.prompt_tokens = len(prompt)
        _add(self.stages, tokens=steps_clock.seconds, start=start_seconds, prompt=prompt_pass.reading_seconds)
        first.constraint_seconds += start_seconds
        first.search_seconds += start_seconds
        first.finish_searches += start_searches
        return results[:n]

    def _stopped(self) -> bool:
        return self.should_stop is not None and self.should_stop()

    def _prompt(self, options: DecodingOptions, deadline: float | None):
        """The prompt's tokens, the options with the token limit that the context window leaves, the prompt's
        forward pass (run when a decoder first needs it), and when the token loops end."""
        model, clock = self.model, time.perf_counter()
        reserve = min(options.max_tokens, model.context_window // 4)
        # Within a time budget, the prompt is cut to what the model can read in its share of the time left.
        limit = None if deadline is None else steady(model.prompt_tokens_within(PROMPT_SHARE * (deadline - clock)))
        blanks = named(options.language).blanks
        left, right = steady_contexts(model, self.left, self.right, reserve, limit, self.extra)
        prompt, heal = model.healed_prompt(left, right, reserve, limit, blanks=blanks, extra=self.extra) if (
            options.token_healing) else (model.prompt(left, right, reserve, limit, self.extra), b"")
        # The context window may leave fewer tokens than asked for; the steering must know the limit that applies.
        options = replace(options, max_tokens=max(0, min(options.max_tokens, model.context_window - len(prompt))))
        # The token loops (and the wait for a model server's answers) end early enough to leave a fallback its
        # searches within the budget.
        steps_deadline = None if deadline is None else deadline - FALLBACK_SHARE * (deadline - time.perf_counter())
        shared = options.attempts > 1 or self.n > 1
        _add(self.stages, prompt=time.perf_counter() - clock)
        reading = PromptOnDemand(model, prompt, shared, _stoppable(steps_deadline, self.should_stop), heal)
        return prompt, options, reading, steps_deadline

    def _keep(self, judged: list[Completion], results: list[Completion], setup_seconds: float, scope: str,
              scope_reason: str, names_reason: str) -> bool:
        """Add the middles of `judged` that are new to `results`; whether one was cancelled or timed out (no later
        attempt is worth decoding)."""
        for result in judged:
            result.setup_seconds, result.scope = setup_seconds, scope
            result.reason = "; ".join(reason for reason in (scope_reason, names_reason, result.reason) if reason)
            if any(result.middle == other.middle for other in results):
                continue
            results.append(result)
            if result.stop in ("cancelled", "timeout"):
                return True
        return False

    def _judge(self, decoders: list[Decoder], outcomes: list, mode: str, guarantee: Guarantee | None,
               start: PartialMiddle) -> tuple[list[Completion], list[tuple[Decoder, tuple]], bool]:
        """The middles of a batch of attempts that the model ended (or that need no fallback), judged; the attempts
        that a fallback would end, not judged yet (`_ended_by_fallbacks`); and whether no later attempt is worth
        decoding.

        A fallback's middle never ranks above a valid one the model ended (`preference`): its searches run only
        where too few such middles were found. An alternative that found no other valid first token among the
        model's top ones decoded nothing: no middle, finished or not. The first attempt never lacks a first token,
        so at least one middle is kept."""
        judging = _judging(decoders)
        judged, waiting = [], []
        for decoder, outcome in zip(decoders, outcomes):
            if outcome[1] == "no_alternative":
                continue
            if _needs_fallback(decoder, mode, outcome):
                waiting.append((decoder, outcome))
            else:
                judged.append(_judged(self.model, self.left, self.right, decoder, mode, guarantee, start, outcome))
        self._add_judging(decoders, judging, counted=False)
        ended = any(outcome[1] in ("timeout", "no_alternative") for outcome in outcomes)
        return judged, waiting, ended

    def _ended_by_fallbacks(self, unfinished: list[tuple[Decoder, tuple]], mode: str, guarantee: Guarantee | None,
                            start: PartialMiddle, valid_before: bool) -> list[Completion]:
        """The unfinished attempts' middles, each ended by a fallback, in order; a timed-out one only where no
        middle before it is valid (`valid_before`: one the model ended): when the budget ends, a finished middle
        is offered and the unfinished dropped."""
        decoders = [decoder for decoder, _outcome in unfinished]
        judging = _judging(decoders)
        judged: list[Completion] = []
        for decoder, outcome in unfinished:
            if outcome[1] == "timeout" and (valid_before or any(result.valid for result in judged)):
                continue
            judged.append(_judged(self.model, self.left, self.right, decoder, mode, guarantee, start, outcome))
        self._add_judging(decoders, judging, counted=True)
        return judged

    def _add_judging(self, decoders: list[Decoder], before: tuple[float, float, float], counted: bool) -> None:
        """The decoders' judges' work and searches (since `before` where the rest was `counted` already), and the
        final checks: what judging the ended middles since `before` took beyond them."""
        judges, searches, now = _judging(decoders)
        checks = now - before[2] - (judges - before[0]) - (searches - before[1])
        if counted:
            judges, searches = judges - before[0], searches - before[1]
        _add(self.stages, judges=judges, searches=searches, checks=checks)


def _finished(results: list[Completion]) -> int:
    """How many of `results` are valid middles the model ended (or was steered to end): none that a fallback could
    end ranks above them (`preference`)."""
    return sum(result.valid and result.ending not in ("fallback", "none") for result in results)


def _stoppable(deadline: float | None, should_stop: Callable[[], bool] | None) -> float | None:
    """The deadline that the searches get: `deadline` carrying the stop flag (`earley.Deadline`, never later
    than `deadline`, which may be none), so that a superseded request's searches end at their next node."""
    if should_stop is None:
        return deadline
    return Deadline(math.inf if deadline is None else deadline, should_stop)


def _add(stages: dict[str, float], **seconds: float) -> None:
    for stage, value in seconds.items():
        stages[stage] = stages.get(stage, 0.0) + value


def _judging(decoders: list[Decoder]) -> tuple[float, float, float]:
    """The decoders' judges' seconds outside searches and in them, and the time now."""
    searches = sum(decoder.judge.search_seconds for decoder in decoders)
    return sum(decoder.judge.seconds for decoder in decoders) - searches, searches, time.perf_counter()


# Stops where the model ended the middle: its end of sequence, or a token past where it was asked to end.
_MODEL_ENDS = ("eos", "line", "statement", "right")


def _needs_fallback(decoder: Decoder, mode: str, outcome: tuple) -> bool:
    """Whether `_judged` would end the decoder's middle by a fallback: generation stopped early, not where the model
    or the steering ended it (constrained and checked modes; a cancelled middle is not wanted)."""
    prefix, stop, _seen = outcome
    return not _ended_as_it_stands(decoder, mode, prefix, stop) and mode != "unconstrained" and stop != "cancelled"


def _ended_as_it_stands(decoder: Decoder, mode: str, prefix: PartialMiddle, stop: str) -> bool:
    """Whether the middle ends where it stopped: the model ended it, or the steering did at a valid end within the
    token limit (not, without invented finishes, where the steering wrote code to get there)."""
    steered_to_the_limit = (stop in ("max_tokens", "context_full") and decoder.steering.steered_from is not None
                            and decoder.judge.valid_end(prefix))
    return (stop in _MODEL_ENDS or steered_to_the_limit) and not _steered_invention(decoder, mode, prefix, stop)


def _steered_invention(decoder: Decoder, mode: str, prefix: PartialMiddle, stop: str) -> bool:
    """Whether, without invented finishes, the steering's end is none: it wrote more than closers after the model
    wanted to end or ran out of tokens (`#` before the right context's code, `=0`, `):x(`), so the middle is ended
    as at an early stop, from what the model wrote before the steering (on 240 held-out cuts, 15 of the 48 steered
    ends added a type error)."""
    steered_from = decoder.steering.steered_from
    return (mode == "constrained" and not decoder.options.invented_finish and steered_from is not None
            and stop in ("eos", "max_tokens", "context_full")
            and not decoder.judge.language.closers.issuperset(prefix.text[steered_from:]))


def _judged(model, left, right, decoder: Decoder, mode, guarantee, start, outcome) -> Completion:
    """The middle a decoder's `steps` ended with, judged (ended by a fallback where generation stopped early)."""
    judge, options = decoder.judge, decoder.options
    prefix, stop, seen = outcome
    refused = prefix if stop == "no_candidate" else None
    looped = decoder.looped
    generated, ending, finish_chars = (looped or prefix).tokens, "none", 0
    loop_chars = len(looped.text) - len(prefix.text) if looped is not None else 0
    steered = decoder.steering.steered_from is not None
    declined = False  # the fallback gave no end (without invented finishes): what it passed over is not shown
    if _ended_as_it_stands(decoder, mode, prefix, stop):
        ending = stop if stop in ("line", "statement", "right") else "finish" if steered else "eos"
        if ending == "finish":
            finish_chars = len(prefix.text) - decoder.steering.steered_from
    elif mode != "unconstrained" and stop != "cancelled":  # a cancelled middle is not wanted: no searches for it
        own = seen + [prefix]  # what the model wrote: before the steering, where that invented code
        if _steered_invention(decoder, mode, prefix, stop):
            own = [each for each in own if len(each.text) <= decoder.steering.steered_from]
        ended = fallback(decoder.steering, own) if own else None
        if ended is not None:
            (prefix, finish_chars), ending = ended, "fallback"
        else:
            declined = mode == "constrained" and not options.invented_finish
    repeated_chars = 0
    if ending != "none" and mode != "unconstrained" and not prefix.pending:
        trimmed = without_repeated_suffix(prefix, seen, start, right, judge, model)
        if trimmed is not None:
            repeated_chars, prefix = len(prefix.text) - len(trimmed.text), trimmed
    middle = prefix.text if not prefix.pending else prefix.text + prefix.pending.decode("utf-8", "replace")
    middle = with_line_breaks_of(middle, left, right)  # an editor inserts it as it is, among the file's lines
    ended_by_model = ending in _MODEL_ENDS and not repeated_chars
    confirmed = mode != "unconstrained" and ending != "none"  # the judge said the end is valid
    # An answer the end's check let go for lack of time, waited on afresh now that this middle is to be shown.
    late = (judge.language.late_refusal(prefix.state)
            if confirmed and stop != "cancelled" and prefix.state is not None else "")
    confirmed = confirmed and not late
    scope = FILE if mode == "checked" or guarantee is None else guarantee.scope
    whole = None
    if confirmed and scope == FILE and mode == "constrained":
        # The judge's verdicts came from the windows around the cursor: the middle shown is judged on the file.
        whole = confirmed = judge.language.parses(left + middle + right)
    elif confirmed and scope == FILE:
        whole = True
    elif stop != "cancelled" and not declined and not late and (
            len(left) + len(middle) + len(right) <= options.size_budget
            or options.mode != "constrained"):  # a cancelled middle is not wanted
        whole = judge.language.parses(left + middle + right)
    if whole and not confirmed and options.names != "off" and options.mode == "constrained":
        # an end the judge did not accept (a loop cut back, an unchecked middle) is valid only if it binds its names
        whole_names = judge.language.binds_names(left, middle, right, *judge.place)
    else:
        whole_names = True
    checked = scope if confirmed else FILE if whole and whole_names else NONE
    narrowed = guarantee is not None and guarantee.scope != FILE
    return Completion(
        middle, whole, options.mode, stop, ending, finish_chars, prefix.tokens, prefix.log_probability,
        decoder.tried, judge.searches, 0.0, 0.0, judge.seconds, ending == "fallback", generated,
        checked, guarantee.lines(left, right) if checked == REGION else None,
        guarantee is not None and guarantee.state is None and checked == NONE,
        guarantee.reason if narrowed else "", options.max_tokens, repeated_chars=repeated_chars,
        refusal=(_refusal(refused, left) if refused is not None and checked == NONE else _DECLINED if declined
                 else late),
        loop_chars=loop_chars, search_seconds=judge.search_seconds,
        end_log_probability=decoder.end_log_probability if ended_by_model else None,
    )


_DECLINED = ("no text the model wrote ends validly, and only a finish that invents code would end the middle "
             "(invented finishes are off, as in the editors; --invented-finish turns them on)")


def _refusal(prefix: PartialMiddle, left: str) -> str:
    """Where no candidate could go on, and what the language allowed there, in one line."""
    where = (f"after {prefix.text[-24:]!r} ({len(prefix.text)} characters into the middle)" if prefix.text
             else f"at the cursor, after {left[-24:]!r}")
    expected = prefix.state.expected() if prefix.state is not None else ()
    shown = ", ".join(expected[:12]) + (f" and {len(expected) - 12} more" if len(expected) > 12 else "")
    return (f"{where}, no token kept a valid end within the token limit"
            + (f"; expected one of: {shown}" if expected else ""))
