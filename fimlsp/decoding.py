"""Fill-in-the-middle decoding: constrained, checked and unconstrained (Sec. VII-B of the FIM quotient paper).

All three modes share one loop and the same stopping rules; they differ only in how a candidate token and an
end of sequence are judged:

- `constrained`: a candidate is taken only if the quotient recognizer can still complete the file after it
  (`FimState.feed`), trying the top `top_k` tokens in order; end of sequence only if the file is complete.
- `checked`: unconstrained, but end of sequence (and the final choice) only where `ast.parse` of the whole file
  succeeds (the paper's "checked unconstrained").
- `unconstrained`: plain greedy or sampled FIM.

When generation ends without an accepted end of sequence (token limit, no candidate, time budget, cancellation),
the middle is the prefix, at a token boundary, with the best length-weighted end-of-sequence probability among
those that make the file valid; with none, the result says so.

The constrained mode's promise comes from `fimlsp.python.region.constrain`: the whole file, or the statements
around the cursor (top-level ones, or a block's) when the file is broken elsewhere or bigger than the budget
(`guarantee` and `region` in the result say which). When not even those admit a middle, it decodes
unconstrained and marks the result unchecked rather than giving nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from fimlsp.model import FimModel
from fimlsp.model.token_text import split_utf8
from fimlsp.python.quotient import FimState
from fimlsp.python.region import DEFAULT_BUDGET, FILE, NONE, REGION, Guarantee, constrain
from fimlsp.python.syntax import parses

MODES = ("constrained", "checked", "unconstrained")


@dataclass(frozen=True)
class DecodingOptions:
    mode: str = "constrained"
    max_tokens: int = 500
    top_k: int = 50
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    timeout: float | None = None  # seconds for the whole completion
    seed: int = 0
    single_line: bool = False  # stop at the end of the first line where the file is valid
    size_budget: int = DEFAULT_BUDGET  # characters: bigger files are checked around the cursor only
    setup_timeout: float = 10.0  # seconds for the constraint's setup (within `timeout`); past it, unchecked

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.max_tokens < 0 or self.top_k < 1 or self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError("max_tokens >= 0, top_k >= 1, temperature >= 0 and 0 < top_p <= 1 are required")
        if self.size_budget < 1:
            raise ValueError("size_budget must be a positive number of characters")
        if (self.timeout is not None and self.timeout <= 0) or self.setup_timeout <= 0:
            raise ValueError("timeout and setup_timeout must be positive")


@dataclass
class Completion:
    """What a completion produced and what it cost."""

    middle: str
    parses: bool | None  # ast.parse(left + middle + right) succeeds; None: not checked (file over the budget)
    mode: str
    stop: str  # eos, line, max_tokens, context_full, no_candidate, timeout, cancelled
    tokens: int = 0  # tokens in the middle returned
    candidates_tried: int = 0
    model_seconds: float = 0.0
    setup_seconds: float = 0.0  # one-time constraint setup: constrain(left, right)
    constraint_seconds: float = 0.0  # every feed, membership test and parse check during decoding
    fallback: bool = False  # the middle was chosen among prefixes, without an end of sequence
    generated_tokens: int = 0  # tokens generated, which the fallback may have cut back
    guarantee: str = NONE  # what the middle was checked against: file, region or none
    region: tuple[int, int] | None = None  # first and last line of the file that a region guarantee covers
    unchecked: bool = False  # constrained mode could not constrain (see `reason`), and the middle it decoded
    # unconstrained was checked against nothing (one that happens to make the file parse is `file`)
    reason: str = ""  # why the guarantee is narrower than the whole file
    max_tokens: int | None = None  # the token limit that applied: the option's, or what the context window left

    @property
    def valid(self) -> bool:
        """The middle passed the check its guarantee names."""
        return self.guarantee != NONE

    @property
    def constraint_ms_per_token(self) -> float:
        return 1e3 * self.constraint_seconds / max(1, self.generated_tokens)

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
    eos_probability: float = 0.0


class _Judge:
    """Accepts or refuses candidates according to the mode, and keeps time."""

    def __init__(self, mode: str, left: str, right: str):
        self.mode, self.left, self.right = mode, left, right
        self.seconds = 0.0

    def extend(self, prefix: _Prefix, text: str) -> tuple[bool, FimState | None]:
        if self.mode != "constrained" or not text:
            return True, prefix.state
        clock = time.perf_counter()
        state = prefix.state.feed(text)
        self.seconds += time.perf_counter() - clock
        return state is not None, state

    def valid_end(self, prefix: _Prefix) -> bool:
        if prefix.pending:
            return False
        if self.mode == "unconstrained":
            return True
        clock = time.perf_counter()
        if self.mode == "constrained":
            valid = prefix.state.complete
        else:
            valid = parses(self.left + prefix.text + self.right)
        self.seconds += time.perf_counter() - clock
        return valid


def complete_middle(
    model: FimModel,
    left: str,
    right: str,
    options: DecodingOptions = DecodingOptions(),
    should_stop: Callable[[], bool] | None = None,
    guarantee: Guarantee | None = None,
) -> Completion:
    """Generate the middle between `left` and `right`. `should_stop` is polled once per token (cancellation).

    `guarantee`, the promise and recognizer after `left` for this `right` (from a cache of an editor's typing,
    extended with `Guarantee.extended`), saves the constrained mode's one-time setup.
    """
    import torch

    started = time.perf_counter()
    deadline = None if options.timeout is None else started + options.timeout
    mode = options.mode
    state = None
    setup_seconds = 0.0
    if mode == "constrained":
        if guarantee is None:
            setup_deadline = started + options.setup_timeout
            guarantee = constrain(left, right, options.size_budget, min(setup_deadline, deadline or setup_deadline))
        setup_seconds = time.perf_counter() - started
        state = guarantee.state
        if state is None:
            mode = "unconstrained"
    judge = _Judge(mode, left, right)
    prefix = _Prefix("", b"", state, 0)
    boundaries: list[_Prefix] = []
    reserve = min(options.max_tokens, model.context_window // 4)
    prompt = model.prompt(left, right, reserve)
    max_tokens = min(options.max_tokens, model.context_window - len(prompt))
    generator = torch.Generator().manual_seed(options.seed)
    input_ids = torch.tensor([prompt], device=model.device)
    past = None
    model_seconds = 0.0
    tried = 0
    stop = "max_tokens"
    stop_ids = sorted(model.stop_ids)
    with torch.inference_mode():
        while True:
            if should_stop is not None and should_stop():
                stop = "cancelled"
                break
            if deadline is not None and time.perf_counter() > deadline:
                stop = "timeout"
                break
            if prefix.tokens >= options.max_tokens:
                break
            if len(prompt) + prefix.tokens >= model.context_window:
                stop = "context_full"
                break
            clock = time.perf_counter()
            output = model.model(input_ids=input_ids, past_key_values=past, use_cache=True)
            past = output.past_key_values
            logits = output.logits[0, -1].float()
            model_seconds += time.perf_counter() - clock
            log_probs = torch.log_softmax(logits, dim=-1)
            prefix.eos_probability = float(log_probs[stop_ids].exp().sum()) if stop_ids else 0.0
            boundaries.append(prefix)
            ranked = _candidates(log_probs, options, generator, options.top_k)
            chosen = None
            for token in ranked:
                tried += 1
                if token in model.stop_ids:
                    if judge.valid_end(prefix):
                        stop = "eos"
                        break
                    continue
                data = model.token_bytes[token] if token < len(model.token_bytes) else None
                if data is None:  # control and special tokens are never text
                    continue
                split = split_utf8(prefix.pending + data)
                if split is None:
                    continue
                text, pending = split
                accepted, next_state = judge.extend(prefix, text)
                if accepted:
                    chosen = (token, _Prefix(prefix.text + text, pending, next_state, prefix.tokens + 1))
                    break
            if stop == "eos":
                break
            if chosen is None:
                stop = "no_candidate"
                break
            previous = prefix
            token, prefix = chosen
            if options.single_line and "\n" in prefix.text[len(previous.text):]:
                line_end = _line_end(previous, prefix.text[len(previous.text):], judge)
                if line_end is not None:
                    prefix, stop = line_end, "line"
                    break
            input_ids = torch.tensor([[token]], device=model.device)
    generated = prefix.tokens
    fallback = False
    if stop not in ("eos", "line") and mode != "unconstrained":
        boundaries.append(prefix)
        best = _best_valid_prefix(boundaries, judge)
        if best is not None:
            prefix, fallback = best, True
    middle = prefix.text if not prefix.pending else prefix.text + prefix.pending.decode("utf-8", "replace")
    confirmed = mode != "unconstrained" and (stop in ("eos", "line") or fallback)  # judge.valid_end said so
    scope = FILE if mode == "checked" or guarantee is None else guarantee.scope
    whole = None
    if confirmed and scope == FILE:
        whole = True
    elif len(left) + len(middle) + len(right) <= options.size_budget or options.mode != "constrained":
        whole = parses(left + middle + right)
    checked = scope if confirmed else FILE if whole else NONE
    unchecked = guarantee is not None and guarantee.state is None and checked == NONE
    narrowed = guarantee is not None and guarantee.scope != FILE
    return Completion(
        middle, whole, options.mode, stop, prefix.tokens, tried, model_seconds, setup_seconds, judge.seconds,
        fallback, generated, checked,
        guarantee.lines(left, right) if checked == REGION else None,
        unchecked, guarantee.reason if narrowed else "", max_tokens,
    )


def _candidates(log_probs, options: DecodingOptions, generator, limit: int) -> list[int]:
    """Token ids in the order to try them: by probability, or a sample without replacement when sampling."""
    import torch

    if options.temperature == 0:
        return torch.topk(log_probs, min(limit, log_probs.numel())).indices.tolist()
    scaled = log_probs / options.temperature
    if options.top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, descending=True)
        cumulative = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        cut = int((cumulative < options.top_p).sum()) + 1
        keep = order[:cut]
        masked = torch.full_like(scaled, float("-inf"))
        masked[keep] = scaled[keep]
        scaled = masked
    uniform = torch.rand(scaled.shape, generator=generator).clamp_(1e-12, 1.0)
    perturbed = scaled - torch.log(-torch.log(uniform))  # Gumbel-top-k: sampling without replacement
    ranked = torch.topk(perturbed, min(limit, perturbed.numel())).indices.tolist()
    return [token for token in ranked if scaled[token] != float("-inf")]


def _line_end(previous: _Prefix, text: str, judge: _Judge) -> _Prefix | None:
    """The middle cut at a newline in the newly accepted `text`, if the file is valid there (single-line mode)."""
    if previous.pending:
        return None
    position = text.find("\n")
    while position != -1:
        accepted, state = judge.extend(previous, text[:position])
        candidate = _Prefix(previous.text + text[:position], b"", state, previous.tokens + 1)
        if accepted and judge.valid_end(candidate):
            return candidate
        position = text.find("\n", position + 1)
    return None


def _best_valid_prefix(boundaries: list[_Prefix], judge: _Judge) -> _Prefix | None:
    """The valid prefix with the best end-of-sequence probability weighted by its length in tokens."""
    ranked = sorted(boundaries, key=lambda p: (p.eos_probability * (p.tokens + 1), p.tokens), reverse=True)
    for candidate in ranked:
        if judge.valid_end(candidate):
            return candidate
    return None
