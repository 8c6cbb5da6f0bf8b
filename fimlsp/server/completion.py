"""Completion requests: the model and the decoder run in one worker thread, off the event loop.

One generation runs at a time. A newer request stops the running one at its next token (a cooperative stop flag
that the decoder polls every step) unless it asks for exactly the same completion, in which case it shares the
result: VS Code asks for an inline completion and a completion list at the same keystroke. A client's
`$/cancelRequest` cancels the awaiting task; the generation stops once no request waits for it any more.
Model loads go through the same worker, so requests made while a model loads wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from fimlsp.server.cache import Recognizers, Suggestion, Suggestions
from fimlsp.server.config import Settings

log = logging.getLogger("fimlsp.server")


class ModelLoadError(Exception):
    """The configured model cannot be loaded; the message is one line for the user."""


@dataclass(frozen=True)
class Request:
    uri: str
    left: str
    right: str
    single_line: bool
    where: str = field(default="", compare=False)  # "uri:line:column" (1-based) for the logs


@dataclass
class _Job:
    request: Request
    stop: threading.Event
    future: asyncio.Future | None = None
    waiters: int = 1


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

    async def complete(self, request: Request) -> Suggestion | None:
        """The suggestion for `request`, or None when there is none (no valid middle, superseded, no model)."""
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
                self._executor, self._generate, request, settings, job.stop, time.perf_counter(),
            )
            self._job = job
        try:
            suggestion = await asyncio.shield(job.future)
        except asyncio.CancelledError:
            job.waiters -= 1
            if job.waiters == 0:
                job.stop.set()
            raise
        finally:
            if self._job is job and job.future.done():
                self._job = None
        if suggestion is None or job.stop.is_set():
            return None
        if settings.cache:
            self.suggestions.remember(request.uri, request.left, suggestion, request.right, request.single_line)
        return suggestion

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

    def _generate(self, request: Request, settings: Settings, stop: threading.Event,
                  submitted: float) -> Suggestion | None:
        """Worker thread: run the decoder. Never raises: a failure is logged and gives no completion. The time
        budget runs from `submitted`, when the request was queued: waiting for a model load counts in it."""
        if stop.is_set():
            return None
        if self._model is None:
            log.info("%s: no completion: %s", request.where, self._model_error or "no model is loaded")
            return None
        try:
            return self._decode(request, settings, stop, submitted)
        except Exception as error:
            log.error("%s: completion failed: %s: %s", request.where, type(error).__name__, error)
            log.debug("completion failed", exc_info=True)
            return None

    def _decode(self, request: Request, settings: Settings, stop: threading.Event,
                submitted: float) -> Suggestion | None:
        from earley import Deadline, Stopped
        from fimlsp.decoding import DecodingOptions, complete_middle
        from fimlsp.python.region import NONE, constrain

        started = time.perf_counter()
        deadline = Deadline(submitted + settings.time_budget, stop.is_set)  # a newer request stops the setup too
        guarantee, how = None, "none"
        if settings.mode == "constrained":
            try:
                if settings.cache:
                    guarantee, how = self.recognizers.guarantee(request.uri, request.left, request.right,
                                                                settings.size_budget, deadline)
                else:
                    guarantee = constrain(request.left, request.right, settings.size_budget, deadline)
                    how = "built without caches"
            except Stopped:
                log.info("%s: superseded while preparing the constraint (%.0f ms)", request.where,
                         1e3 * (time.perf_counter() - started))
                return None
            if guarantee.scope == NONE:
                log.info("%s: %s; decoding unconstrained", request.where, guarantee.reason)
        setup = time.perf_counter() - started
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            log.info("%s: the time budget ran out before decoding (%.0f ms queued, %.0f ms preparing the "
                     "constraint)", request.where, 1e3 * (started - submitted), 1e3 * setup)
            return None
        options = DecodingOptions(
            mode=settings.mode, max_tokens=settings.max_tokens, top_k=settings.top_k, timeout=remaining,
            single_line=request.single_line, size_budget=settings.size_budget,
        )
        result = complete_middle(self._model, request.left, request.right, options, should_stop=stop.is_set,
                                 guarantee=guarantee)
        usable = result.valid or result.unchecked or settings.mode == "unconstrained"
        detail = _detail(result)
        log.info(
            "%s: %d characters, stop=%s, %d tokens, %s, recognizer %s in %.1f ms, total %.0f ms%s", request.where,
            len(result.middle), result.stop, result.tokens, detail, how, 1e3 * setup,
            1e3 * (time.perf_counter() - started), "" if usable else " (no valid middle: not shown)",
        )
        return Suggestion(result.middle, detail) if usable and result.middle else None


def _detail(result) -> str:
    """What the middle was checked against, in a few words (the completion item's detail and the log)."""
    if result.unchecked:
        return "unchecked"
    if result.region is not None:
        return f"checked lines {result.region[0]}-{result.region[1]} (the rest of the file is not)"
    if result.guarantee == "file":
        return "checked: the file parses"
    return "unchecked"
