"""Completion requests: the model and the decoder run in one worker thread, off the event loop.

One generation runs at a time. A newer request stops the running one at its next token (a cooperative stop flag
that the decoder polls every step) unless it asks for exactly the same completion, in which case it shares the
result: VS Code asks for an inline completion and a completion list at the same keystroke. A client's
`$/cancelRequest` cancels the awaiting task; the generation stops once no request waits for it any more.
Model loads go through the same worker, so requests made while a model loads wait for it. The time budget counts
from the request's arrival: a request still waiting for the worker when it runs out answers then, and is skipped,
so a backlog cannot build up.
Every request ends in a `Suggestion` or a `NoSuggestion` that says why, for the client's status display.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from fimlsp.language import DEFAULT_LANGUAGE
from fimlsp.server.cache import Recognizers, Suggestion, Suggestions
from fimlsp.server.config import Settings

log = logging.getLogger("fimlsp.server")

SUPERSEDED = "a newer request replaced this one"


class ModelLoadError(Exception):
    """The configured model cannot be loaded; the message is one line for the user."""


@dataclass(frozen=True)
class NoSuggestion:
    """Why a request has no suggestion, in a few words for the user (`no suggestion: <reason>`)."""

    reason: str


@dataclass(frozen=True)
class Request:
    uri: str
    left: str
    right: str
    single_line: bool
    where: str = field(default="", compare=False)  # "uri:line:column" (1-based) for the logs
    language: str = DEFAULT_LANGUAGE  # the name of the document's `fimlsp.language.Language`


@dataclass
class _Job:
    request: Request
    stop: threading.Event
    future: asyncio.Future | None = None
    waiters: int = 1
    started: threading.Event = field(default_factory=threading.Event)  # the worker has taken it up


class CompletionEngine:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.recognizers = Recognizers()
        self.suggestions = Suggestions()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fimlsp-model")
        self._model = None
        self._model_key: tuple | None = None
        self._model_error: str | None = None
        self._job: _Job | None = None

    # Model ---------------------------------------------------------------------------------------------------

    def load(self, settings: Settings) -> asyncio.Future:
        """Queue loading the model of `settings` (a no-op if it is loaded); the future names the model and its device."""
        return asyncio.get_running_loop().run_in_executor(self._executor, self._load, settings.model_key())

    def _load(self, key: tuple) -> str:
        if key == self._model_key:
            if self._model_error is not None:
                raise ModelLoadError(self._model_error)
            return f"{self._model.name} on {self._model.device}"
        from fimlsp.model import ModelError, load_model

        self._model, self._model_key, self._model_error = None, key, None
        name, device = key
        try:
            self._model = load_model(name, device)
        except ModelError as error:
            self._model_error = str(error)
        except Exception as error:  # a broken model folder can fail deep inside torch or transformers
            log.debug("loading the model failed", exc_info=True)
            self._model_error = f"cannot load model {name or '(default)'}: {type(error).__name__}: {error}"
        if self._model_error is not None:
            raise ModelLoadError(self._model_error)
        return f"{self._model.name} on {self._model.device}"

    # Requests ------------------------------------------------------------------------------------------------

    async def complete(self, request: Request) -> Suggestion | NoSuggestion:
        """The suggestion for `request`, or why there is none (no valid middle, superseded, no model, no time)."""
        received = time.perf_counter()
        settings = self.settings
        if settings.cache:
            cached = self.suggestions.lookup(request.uri, request.left, request.right, request.single_line)
            if cached:
                self.supersede()
                log.info("%s: %d characters from the last suggestion (no model run)", request.where,
                         len(cached.middle))
                return cached
        job = self._job
        if job is not None and job.request == request and not job.stop.is_set():
            job.waiters += 1
        else:
            if job is not None:
                job.stop.set()
            job = _Job(request, threading.Event())
            job.future = asyncio.get_running_loop().run_in_executor(
                self._executor, self._generate, job, settings, received,
            )
            self._job = job
        try:
            budget_left = received + settings.time_budget - time.perf_counter()
            done, _ = await asyncio.wait([job.future], timeout=max(0.0, budget_left))
            if not done and not job.started.is_set():
                self._leave(job)
                return _queued_too_long(request, settings, time.perf_counter() - received)
            suggestion = await asyncio.shield(job.future)
        except asyncio.CancelledError:
            self._leave(job)
            raise
        finally:
            if self._job is job and job.future.done():
                self._job = None
        if job.stop.is_set():
            return NoSuggestion(SUPERSEDED)
        if isinstance(suggestion, NoSuggestion):
            return suggestion
        if settings.cache:
            self.suggestions.remember(request.uri, request.left, suggestion, request.right, request.single_line)
        return suggestion

    @staticmethod
    def _leave(job: _Job) -> None:
        """A request stops waiting for `job`; with no request left waiting, the job stops."""
        job.waiters -= 1
        if job.waiters == 0:
            job.stop.set()

    def supersede(self) -> None:
        """Stop the running generation: its requests answer with no completion."""
        if self._job is not None:
            self._job.stop.set()
            self._job = None

    def forget(self, uri: str) -> None:
        self.recognizers.forget(uri)
        self.suggestions.forget(uri)

    def shutdown(self) -> None:
        self.supersede()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _generate(self, job: _Job, settings: Settings, received: float) -> Suggestion | NoSuggestion:
        """Worker thread: run the decoder. Never raises: a failure is logged and gives no completion."""
        job.started.set()
        request, stop = job.request, job.stop
        if stop.is_set():
            return NoSuggestion(SUPERSEDED)
        if self._model is None:
            reason = f"no model: {self._model_error}" if self._model_error else "no model is loaded"
            log.info("%s: no completion: %s", request.where, reason)
            return NoSuggestion(reason)
        try:
            return self._decode(request, settings, stop, received)
        except Exception as error:
            log.error("%s: completion failed: %s: %s", request.where, type(error).__name__, error)
            log.debug("completion failed", exc_info=True)
            return NoSuggestion(f"the completion failed: {type(error).__name__}: {error}")

    def _decode(self, request: Request, settings: Settings, stop: threading.Event,
                received: float) -> Suggestion | NoSuggestion:
        from earley import Deadline, Stopped
        from fimlsp.decoding import DecodingOptions, complete_middles
        from fimlsp.language import NONE, named

        started = time.perf_counter()
        queued = started - received
        deadline = Deadline(received + settings.time_budget, stop.is_set)  # a newer request stops the setup too
        if started >= deadline:
            return _queued_too_long(request, settings, queued)
        guarantee, how = None, "none"
        if settings.mode == "constrained":
            try:
                language = named(request.language)
                if settings.cache:
                    guarantee, how = self.recognizers.guarantee(request.uri, request.left, request.right,
                                                                settings.size_budget, deadline, language)
                else:
                    guarantee = language.constrain(request.left, request.right, settings.size_budget, deadline)
                    how = "built without caches"
            except Stopped:
                log.info("%s: superseded while preparing the constraint (%.0f ms)", request.where,
                         1e3 * (time.perf_counter() - started))
                return NoSuggestion(SUPERSEDED)
            if guarantee.scope == NONE:
                log.info("%s: %s; decoding unconstrained", request.where, guarantee.reason)
        setup = time.perf_counter() - started
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            reason = (f"the {settings.time_budget:g} s time budget ran out while preparing the constraint "
                      f"(queued {1e3 * queued:.0f} ms, setup {1e3 * setup:.0f} ms)")
            log.info("%s: no completion: %s", request.where, reason)
            return NoSuggestion(reason)
        options = DecodingOptions(
            mode=settings.mode, max_tokens=settings.max_tokens, top_k=settings.top_k, timeout=remaining,
            loop_repeats=settings.loop_repeats, attempts=settings.attempts,
            single_line=request.single_line, statement_end=not request.single_line, size_budget=settings.size_budget,
            language=request.language, scope=settings.scope,
        )
        results = complete_middles(self._model, request.left, request.right, options, settings.alternatives,
                                   should_stop=stop.is_set, guarantee=guarantee)
        result = results[0]
        decoding = time.perf_counter() - started - setup
        usable = result.valid or result.unchecked or settings.mode == "unconstrained"
        detail = _detail(result)
        log.info(
            "%s: %d characters, stop=%s, %d tokens, %s; queued %.0f ms, recognizer %s in %.1f ms, decoding %.0f ms, "
            "total %.0f ms%s", request.where, len(result.middle), result.stop, result.tokens, detail,
            1e3 * queued, how, 1e3 * setup, 1e3 * decoding, 1e3 * (time.perf_counter() - received),
            "" if usable else " (no valid middle: not shown)",
        )
        if not usable:
            return NoSuggestion(_why_invalid(result, settings))
        if not result.middle:
            return NoSuggestion("the model's best middle here is empty")
        others = tuple(other.middle for other in results[1:] if other.middle and _detail(other) == detail)
        return Suggestion(result.middle, detail, others)


def _queued_too_long(request: Request, settings: Settings, queued: float) -> NoSuggestion:
    reason = (f"the {settings.time_budget:g} s time budget ran out while the request waited {1e3 * queued:.0f} ms "
              "for the model (loading, or busy with an earlier request)")
    log.info("%s: no completion: %s", request.where, reason)
    return NoSuggestion(reason)


def _why_invalid(result, settings: Settings) -> str:
    """Why decoding ended without a valid middle, in words."""
    reasons = {
        "timeout": f"the {settings.time_budget:g} s time budget ran out before a valid middle",
        "no_candidate": f"none of the model's top {settings.top_k} tokens could continue a valid middle",
        "max_tokens": f"no valid middle within maxTokens ({settings.max_tokens})",
        "context_full": "the model's context window filled before a valid middle",
        "loop": f"the model fell into a loop ({result.loop_chars} characters cut) and no valid end was found before it",
        "cancelled": SUPERSEDED,
    }
    reason = reasons.get(result.stop, f"no valid middle ({result.stop} after {result.tokens} tokens)")
    return f"{reason}: {result.refusal}" if result.refusal else reason


def _detail(result) -> str:
    """What the middle was checked against, in a few words (the completion item's detail and the log)."""
    if result.unchecked:
        return "unchecked"
    if result.region is not None:
        return f"checked lines {result.region[0]}-{result.region[1]} (the rest of the file is not)"
    if result.guarantee == "file":
        return "checked: the file compiles"
    return "unchecked"
