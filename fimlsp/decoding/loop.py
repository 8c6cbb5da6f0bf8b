"""The token loop: the model's candidates in order, the judge's verdicts, the steering's budget, the endings."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator

import numpy as np

from fimlsp.decoding.endings import before_loop, line_end, rest_of_line, right_end, statement_end
from fimlsp.decoding.judges import Judge
from fimlsp.decoding.likely_names import weighed
from fimlsp.decoding.options import DecodingOptions
from fimlsp.decoding.partial_middle import PartialMiddle, after_healing
from fimlsp.decoding.steering import NEAR_LIMIT_MARGIN, Steering
from fimlsp.model import FimModel, OutOfTime
from fimlsp.model.token_text import split_utf8


class Decoder:
    """One run of the token loop: the model's candidates, the judge's verdicts, the budget's rules."""

    def __init__(self, model: FimModel, judge: Judge, options: DecodingOptions, deadline: float | None,
                 should_stop: Callable[[], bool] | None, steps_deadline: float | None = None):
        self.model, self.judge, self.options = model, judge, options
        self.should_stop = should_stop
        # the token loop ends here, leaving the rest of the time to a fallback's searches
        self.steps_deadline = deadline if steps_deadline is None else steps_deadline
        self.steering = Steering(model, judge, options, deadline)
        self.stop_ids = sorted(model.stop_ids)
        self.tried = 0
        self.statement_column: int | None = None  # with `statement_end`: the column of the cursor's statement
        self.looped: PartialMiddle | None = None  # the middle that ended in a loop, before it was cut back
        self.end_log_probability: float | None = None  # of the token that ended the middle (`Completion`'s)
        self.rest_of_line = rest_of_line(judge.right, judge.language.blanks)

    def steps(self, prompt_length: int, start: PartialMiddle, skip_first: int = 0) -> Generator:
        """Decode from `start`, a token a step, after a prompt of `prompt_length` tokens: yields the token taken (None
        first: the prompt) and is sent the model's logits after it (`side_by_side.decode_side_by_side` runs the
        model); returns the last prefix, why it stopped, and the prefixes passed on the way.
        `skip_first` valid first tokens are passed over (the alternatives of a greedy completion); an alternative
        starts only from one of the model's top `top_k` tokens, and stops as `no_alternative` when none is left."""
        options, model, judge = self.options, self.model, self.judge
        self.steering.steerable = judge.constrained and start.finish is not None
        self.statement_column = start.state.statement_column() if options.statement_end and start.state else None
        generator = np.random.default_rng(options.seed)
        token, prefix, seen = None, start, []
        while True:
            stop = self._stopped(prompt_length, prefix)
            if stop is not None:
                return prefix, stop, seen
            try:
                log_probs = yield token
            except OutOfTime:  # the model server did not answer before the token loop's end, or it was stopped
                return prefix, "cancelled" if self.should_stop is not None and self.should_stop() else "timeout", seen
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
            log_probs = self._with_likely_names(prefix, log_probs)
            prefix.eos_probability = float(np.exp(log_probs[self.stop_ids]).sum()) if self.stop_ids else 0.0
            seen.append(prefix)
            chosen = self._choose(prefix, log_probs, generator, skip_first if prefix is start else 0)
            if chosen in ("eos", "no_candidate", "no_alternative"):
                return prefix, chosen, seen
            token, following = chosen
            # Where the middle ends before this token, the token is the model's end of it.
            self.end_log_probability = following.log_probability - prefix.log_probability
            ended = right_end(judge, self.rest_of_line, prefix, following)
            if ended is not None:
                return ended, "right", seen
            if self.options.single_line and "\n" in following.text[len(prefix.text):]:
                ended = line_end(prefix, following.text[len(prefix.text):], judge)
                if ended is not None:
                    return ended, "line", seen
                # a single-line suggestion ends at the line's end: where the file is not valid there, the middle
                # so far is ended as at any early stop (a fallback's finish), not decoded on to the budget's end
                return prefix, "line_break", seen
            if self.statement_column is not None:
                ended = statement_end(judge, self.statement_column, start, prefix, following)
                if ended is not None:
                    return ended, "statement", seen
            self.end_log_probability = None
            prefix = following
            if self.steering.finishing and not prefix.pending and judge.valid_end(prefix):
                return prefix, "eos", seen
            if options.loop_repeats and not prefix.pending:
                looped = before_loop(judge, model, options.loop_repeats, start, prefix, seen)
                if looped is not None:
                    self.looped = prefix
                    return looped, "loop", [each for each in seen if len(each.text) <= len(looped.text)]

    def _with_likely_names(self, prefix: PartialMiddle, log_probs: np.ndarray) -> np.ndarray:
        """The step's row with the names the file makes likely here mixed in (`fimlsp.decoding.likely_names`)."""
        share = self.options.member_usage
        if not share or prefix.pending or prefix.state is None or not self.judge.constrained:
            return log_probs
        likely = prefix.state.likely_names()
        if likely is None:
            return log_probs
        return weighed(self.model, log_probs, prefix.heal, *likely, share)

    def _stopped(self, prompt_length: int, prefix: PartialMiddle) -> str | None:
        if self.should_stop is not None and self.should_stop():
            return "cancelled"
        if self.steps_deadline is not None and time.perf_counter() > self.steps_deadline:
            return "timeout"
        if prompt_length + prefix.tokens >= self.model.context_window:
            return "context_full"
        if prefix.tokens >= self.options.max_tokens:
            return "max_tokens"
        return None

    def _choose(self, prefix: PartialMiddle, log_probs, generator, skip: int):
        """The next token and the prefix after it, "eos" when the middle ends here, or "no_candidate"; with `skip`,
        the first token of an alternative, or "no_alternative" when the top `top_k` hold no other valid one (the
        rest of the vocabulary is the model's noise: `ρ;` before `return`)."""
        model, judge, steering = self.model, self.judge, self.steering
        steering.searched_this_step = False
        alternative = skip > 0
        for rank, token in enumerate(_ranking(log_probs, self.options, generator, judge.constrained)):
            if rank == self.options.top_k and alternative:
                return "no_alternative"
            if rank == self.options.top_k and steering.steered_from is not None and prefix.finish is not None:
                return steering.follow_finish(prefix, log_probs)
            self.tried += 1
            if token in model.stop_ids:
                if judge.valid_end(prefix):
                    if skip > 0:  # the empty middle is one of the first choices an alternative passes over
                        skip -= 1
                        continue
                    self.end_log_probability = float(log_probs[token])
                    return "eos"
                if steering.steerable and not steering.finishing:
                    steering.finishing = True
                    steering.steer(prefix)
                continue
            data = model.token_bytes[token] if token < len(model.token_bytes) else None
            if data is None:  # control and special tokens are never text
                continue
            data, heal = after_healing(prefix.heal, data)
            split = split_utf8(prefix.pending + data)
            if split is None:
                continue
            text, pending = split
            accepted, state = judge.extend(prefix, text)
            if not accepted:
                continue
            following = PartialMiddle(prefix.text + text, pending, state, prefix.tokens + 1,
                               prefix.log_probability + float(log_probs[token]), heal=heal)
            if judge.constrained:
                if not steering.within_budget(prefix, following, text):
                    continue
            if skip > 0:
                skip -= 1
                steering.searched_this_step = False  # the step's one search is for the token taken
                continue
            return self._spaced_after_comma(prefix, following, text, log_probs) or (token, following)
        return "no_alternative" if alternative else "no_candidate"

    def _spaced_after_comma(self, prefix: PartialMiddle, chosen: PartialMiddle, text: str,
                            log_probs) -> tuple[int, PartialMiddle] | None:
        """After a comma of the code, the token that writes the chosen `text` with a space before it, where the file
        writes `, ` (`Language.spaces_after_comma`): `os, shutil`, not `os,shutil`. None where there is no such
        token, the constraint refuses it, or the end is near (steered, or a finish search would judge it): there the
        finish, which spaces its own commas, is followed."""
        judge, steering = self.judge, self.steering
        if (not judge.constrained or prefix.pending or prefix.heal or chosen.pending
                or steering.steered_from is not None or not (prefix.text or judge.left).endswith(",")
                or not text or text[0].isspace() or text[0] in ")]}"):
            return None
        tokens = [token for token in self.model.tokens_of((" " + text).encode()) if log_probs[token] > -np.inf]
        if not tokens or not judge.language.spaces_after_comma(prefix.state):
            return None
        token = max(tokens, key=lambda each: log_probs[each])
        accepted, state = judge.extend(prefix, " " + text)
        if not accepted:
            return None
        following = PartialMiddle(prefix.text + " " + text, b"", state, prefix.tokens + 1,
                           prefix.log_probability + float(log_probs[token]))
        left, bound = steering.tokens_left(following), judge.bound(state)
        if steering.steerable and left < 2 * bound + NEAR_LIMIT_MARGIN or bound > left:
            return None
        return token, following


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
    best = _best(scores, count)
    first = best[np.lexsort((best, -scores[best]))].tolist()
    yield from (token for token in first if scores[token] != -np.inf)
    if whole_vocabulary and count < scores.size:
        taken = set(first)
        yield from (token for token in _descending(scores).tolist() if token not in taken and scores[token] != -np.inf)


def _best(scores: np.ndarray, count: int) -> np.ndarray:
    """The ids of the `count` best scores, ties to the lower ids. `np.argpartition` alone leaves which of tied
    scores it keeps to its implementation, and that differs between machines (numpy's AVX-512 sort keeps others
    than its AVX2 one): the candidates, and so the middles, would depend on the CPU."""
    if count >= scores.size:
        return np.arange(scores.size)
    threshold = np.partition(scores, scores.size - count)[scores.size - count]
    above = np.flatnonzero(scores > threshold)
    tied = np.flatnonzero(scores == threshold)[:count - above.size]
    return np.concatenate((above, tied))


def _descending(scores: np.ndarray) -> np.ndarray:
    """Token ids by descending score, ties to the lower id."""
    return np.argsort(-scores, kind="stable")

