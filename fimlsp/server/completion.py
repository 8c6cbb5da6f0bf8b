"""Completion requests: the model and the decoder run in one worker thread, off the event loop.

One generation runs at a time. A newer request for the same document supersedes the older one: a queued one is
dropped before it runs, a running one stops within milliseconds (a cooperative stop flag that every stage polls:
the constraint's setup, the prompt's reading a chunk at a time, the searches, the token loop), and either answers
at once with no completion, so the newest keystroke never waits behind stale ones. A request that asks for exactly
the same completion shares the running one's result instead: VS Code asks for an inline completion and a
completion list at the same keystroke. A client's `$/cancelRequest` cancels
the awaiting task; the generation stops once no request waits for it any more.
Each model has its own worker (`Worker`), from `initialize` on: a settings change that names another model starts a
new worker at once and abandons the old one, whose load or requests stop (a model server's at once), so nothing
queues behind a stuck load or a stalled server. A request made while the model loads waits for it, and its time
budget counts from when the model is ready (or from its arrival, if later); connecting to a model server, which a
stalled server can hold up, counts within the budget. The budget covers the rest: the wait for the worker, the
constraint's setup and the decoding. A request still waiting for the worker when it runs out
answers then, and is skipped, so a backlog cannot build up.
Every request ends in a `Suggestion` or a `NoSuggestion` that says why, for the client's status display.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field, replace

from fimlsp.context.editor import EditorContext
from fimlsp.language import DEFAULT_LANGUAGE, REGION, Guarantee
from fimlsp.lines import after_line, line_of
from fimlsp.server.cache import Recognizers, Suggestion, Suggestions
from fimlsp.server.config import Settings
from fimlsp.server.worker import ModelLoadError, Worker

log = logging.getLogger("fimlsp.server")

SUPERSEDED = "superseded: a newer request for the document replaced this one"
# Characters on each side of the cursor that decoding reads in a big document's window, beyond the region that
# its promise covers: more than the longest prompt a model's window holds.
DECODED_AROUND = 1 << 17


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
    # the 1-based lines of the document that `left` and `right` cover, where they are a window of a big one
    window: tuple[int, int] | None = None
    # milliseconds of each stage of the request's work, filled in as it runs (the `fimlsp/status` timings)
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    # how the answer was had, for the `fimlsp/status` notification: `cached` (from the last suggestion, no model
    # run), `recognizer` (how the constraint's recognizer was had: reused, extended, built, ...)
    facts: dict[str, object] = field(default_factory=dict, compare=False)


@dataclass
class _Job:
    request: Request
    stop: threading.Event  # polled by the worker: the job's result is not wanted any more
    future: asyncio.Future | None = None
    waiters: int = 1
    started: threading.Event = field(default_factory=threading.Event)  # the worker has taken it up
    halted: asyncio.Event = field(default_factory=asyncio.Event)  # `stop`, for the requests awaiting the job
    model_wait: float = 0.0  # seconds the request waited for the model to load

    def halt(self) -> None:
        """Stop the job (from the event loop): the worker skips or stops it, its requests answer at once."""
        self.stop.set()
        self.halted.set()


class CompletionEngine:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.recognizers = Recognizers()
        self.suggestions = Suggestions()
        self._worker: Worker | None = None  # the worker whose model serves requests
        self._pending: Worker | None = None  # the worker loading the latest model, until it is served
        self._loading: asyncio.Future | None = None  # the latest model load
        self._jobs: dict[str, _Job] = {}  # the latest job of each document
        self.context = EditorContext()  # what other files say (issue 45), fed by the document events

    # Model ---------------------------------------------------------------------------------------------------

    def load(self, settings: Settings) -> asyncio.Future:
        """Start loading the model of `settings` in a worker of its own (a no-op if it is loaded or loading); the
        future names the model and its device. A load it replaces is abandoned. Requests wait for it."""
        key = settings.model_key()
        if self._pending is not None and self._pending.key == key:
            return self._loading
        if self._pending is not None:
            self._pending.abandon()
            self._pending = None
        if self._worker is not None and self._worker.key == key:
            self._loading = asyncio.get_running_loop().create_future()
            if self._worker.error is not None:
                self._loading.set_exception(ModelLoadError(self._worker.error))
            else:
                self._loading.set_result(self._worker.describe())
            return self._loading
        self._pending = Worker(key)
        self._loading = asyncio.ensure_future(self._load(self._pending))
        return self._loading

    async def _load(self, worker: Worker) -> str:
        """Load in `worker`; it serves from then on unless a newer load replaced it. A working model stays until
        another loads."""
        try:
            name = await asyncio.get_running_loop().run_in_executor(worker.executor, worker.load)
        except ModelLoadError:
            if worker is not self._pending:
                raise
            self._pending = None
            if self._worker is not None and self._worker.model is not None:
                worker.abandon()
                kept = self._worker.describe()
                raise ModelLoadError(f"{worker.error}; still serving {kept}", kept) from None
            self._serve(worker)
            raise
        if worker is not self._pending:  # replaced while it loaded
            worker.abandon()
            raise ModelLoadError(f"replaced by another model before {name} was ready")
        self._pending = None
        self._serve(worker)
        return name

    def _serve(self, worker: Worker) -> None:
        previous, self._worker = self._worker, worker
        if previous is not None:
            previous.abandon()

    # Requests ------------------------------------------------------------------------------------------------

    async def complete(self, request: Request) -> Suggestion | NoSuggestion:
        """The suggestion for `request`, or why there is none (no valid middle, superseded, no model, no time)."""
        received = time.perf_counter()
        settings = self.settings
        if settings.cache:
            cached = self.suggestions.lookup(request.uri, request.left, request.right, request.single_line)
            if cached:
                self.supersede(request.uri)
                request.facts["cached"] = True
                log.info("%s: %d characters from the last suggestion (no model run)", request.where,
                         len(cached.middle))
                return cached
        job = self._jobs.get(request.uri)
        if job is not None and job.request == request and not job.stop.is_set():
            job.waiters += 1
        else:
            if job is not None:
                job.halt()
            job = _Job(request, threading.Event())
            self._jobs[request.uri] = job
            job.future = asyncio.ensure_future(self._run(job, settings, received))
        try:
            suggestion = await asyncio.shield(job.future)
        except asyncio.CancelledError:
            self._leave(job)
            raise
        finally:
            if self._jobs.get(request.uri) is job and job.future.done():
                del self._jobs[request.uri]
        if job.request is not request:  # a request that shared another's job shares its timings
            request.timings.update(job.request.timings)
            request.facts.update(job.request.facts)
        if isinstance(suggestion, NoSuggestion):
            return suggestion
        if settings.cache:
            self.suggestions.remember(request.uri, request.left, suggestion, request.right, request.single_line)
        return suggestion

    async def _run(self, job: _Job, settings: Settings, received: float) -> Suggestion | NoSuggestion:
        """Wait for the model, then for the worker within the time budget; answers at once when superseded."""
        halted = asyncio.ensure_future(job.halted.wait())
        try:
            loading, pending = self._loading, self._pending
            remote = pending is not None and pending.remote
            start = received
            if loading is not None and not loading.done():
                # a model server's connection counts within the budget: a stalled server can hold it up
                limit = max(0.0, received + settings.time_budget - time.perf_counter()) if remote else None
                await asyncio.wait([loading, halted], timeout=limit, return_when=asyncio.FIRST_COMPLETED)
                if job.stop.is_set():
                    return _superseded(job.request, "while the model loaded")
                job.model_wait = time.perf_counter() - received
                if not loading.done():
                    return _not_connected(job.request, settings, pending.key[2])
                if not remote:
                    start = received + job.model_wait  # the budget counts from here
            worker = self._worker
            if worker is None:
                return NoSuggestion("no model is loaded")
            try:
                work = asyncio.get_running_loop().run_in_executor(worker.executor, self._generate, job, worker,
                                                                  settings, start)
            except RuntimeError:  # the worker was abandoned: the server shuts down
                return NoSuggestion(SUPERSEDED)
            budget_left = start + settings.time_budget - time.perf_counter()
            await asyncio.wait([work, halted], timeout=max(0.0, budget_left), return_when=asyncio.FIRST_COMPLETED)
            if job.stop.is_set():
                return _superseded(job.request, "running" if job.started.is_set() else "before it ran")
            if not work.done() and not job.started.is_set():
                job.stop.set()  # the worker skips it
                return _queued_too_long(job.request, settings, time.perf_counter() - start)
            suggestion = await work
            return NoSuggestion(SUPERSEDED) if job.stop.is_set() else suggestion
        finally:
            halted.cancel()

    def _leave(self, job: _Job) -> None:
        """A request stops waiting for `job`; with no request left waiting, the job stops."""
        job.waiters -= 1
        if job.waiters == 0:
            job.halt()

    def supersede(self, uri: str | None = None) -> None:
        """Stop the generation for `uri` (every generation when None): its requests answer with no completion."""
        for key in [uri] if uri is not None else list(self._jobs):
            job = self._jobs.pop(key, None)
            if job is not None:
                job.halt()

    def forget(self, uri: str) -> None:
        self.recognizers.forget(uri)
        self.suggestions.forget(uri)

    def shutdown(self) -> None:
        """Stop every generation and abandon every worker: a request waiting on a model server ends at once."""
        self.supersede()
        self.context.shutdown()
        for worker in (self._pending, self._worker):
            if worker is not None:
                worker.abandon()

    def _generate(self, job: _Job, worker: Worker, settings: Settings, start: float) -> Suggestion | NoSuggestion:
        """Worker thread: run the decoder, its time budget counted from `start`. Never raises: a failure is logged
        and gives no completion."""
        request, stop = job.request, job.stop
        if stop.is_set():  # superseded, or out of time, while it waited for the worker
            return NoSuggestion(SUPERSEDED)
        job.started.set()
        if worker.model is None:
            reason = f"no model: {worker.error}" if worker.error else "no model is loaded"
            log.info("%s: no completion: %s", request.where, reason)
            return NoSuggestion(reason)
        worker.job_stop = stop  # a model server's request stops with the job
        try:
            with self.context.completing():
                return self._decode(worker.model, request, settings, stop, start, job.model_wait)
        except Exception as error:
            log.error("%s: completion failed: %s: %s", request.where, type(error).__name__, error)
            log.debug("completion failed", exc_info=True)
            return NoSuggestion(f"the completion failed: {type(error).__name__}: {error}")
        finally:
            worker.job_stop = None

    def _decode(self, model, request: Request, settings: Settings, stop: threading.Event, received: float,
                model_wait: float) -> Suggestion | NoSuggestion:
        from earley import Deadline, Stopped
        from fimlsp.decoding import complete_middles, shown
        from fimlsp.language import NONE, named

        left, right, window = request.left, request.right, request.window
        started = time.perf_counter()
        queued = started - received
        _record(request.timings, waiting=queued + model_wait)
        if model_wait:
            _record(request.timings, loading=model_wait)  # the part of `waiting` spent on the model's load
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
            elif guarantee.scope == REGION and window is not None:
                guarantee, left, right, window = _around_region(guarantee, left, right, window)
        setup = time.perf_counter() - started
        _record(request.timings, setup=setup)
        request.facts["recognizer"] = how
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            reason = (f"the {settings.time_budget:g} s time budget ran out while preparing the constraint "
                      f"(queued {1e3 * queued:.0f} ms, setup {1e3 * setup:.0f} ms)")
            log.info("%s: no completion: %s", request.where, reason)
            return NoSuggestion(reason)
        # A window of a big document does not show every name the document binds: a name judge reading it would
        # refuse names bound outside it, so names are judged only where the decoder reads the whole document.
        names = settings.names if window is None else "off"
        options = settings.decoding_options(time_budget=remaining, single_line=request.single_line,
                                            statement_end=not request.single_line, language=request.language,
                                            names=names)
        if names != settings.names:
            log.info("%s: names not judged: the document is bigger than the size budget (%d characters)",
                     request.where, settings.size_budget)
        stages: dict[str, float] = {}
        clock = time.perf_counter()
        extra = self.context.snippets(request.uri, left, right, options.context, options.context_exclude,
                                      model.context_window)
        _record(request.timings, context=time.perf_counter() - clock)
        results = complete_middles(model, left, right, options, settings.alternatives,
                                   should_stop=stop.is_set, guarantee=guarantee, stages=stages, extra=extra,
                                   place=self.context.place(request.uri))
        stages["setup"] = setup + stages.get("setup", 0.0)  # the server's recognizer, then the name judge's
        _record(request.timings, **stages)
        result = results[0]
        request.facts["prompt_tokens"] = result.prompt_tokens
        decoding = time.perf_counter() - started - setup
        usable = shown(result)
        detail = _detail(result, window)
        log.info(
            "%s: %d characters, stop=%s, %d tokens, %s; %squeued %.0f ms, recognizer %s in %.1f ms, decoding %.0f ms, "
            "total %.0f ms%s", request.where, len(result.middle), result.stop, result.tokens, detail,
            f"waited {1e3 * model_wait:.0f} ms for the model to load, " if model_wait else "",
            1e3 * queued, how, 1e3 * setup, 1e3 * decoding, 1e3 * (time.perf_counter() - received),
            "" if usable else " (no valid middle: not shown)",
        )
        if not usable:
            return NoSuggestion(_why_invalid(result, settings))
        if not result.middle:
            return NoSuggestion("the model's best middle here is empty")
        others = tuple(other.middle for other in results[1:]
                       if other.middle and _detail(other, window) == detail)
        return Suggestion(result.middle, detail, others)


def _record(timings: dict[str, float], **seconds: float) -> None:
    """Stages' seconds into a request's timings, in milliseconds."""
    timings.update((stage, round(1e3 * value, 2)) for stage, value in seconds.items())


def _around_region(guarantee: Guarantee, left: str, right: str, window: tuple[int, int]):
    """What decoding reads of a big document's window with a region promise: the region and `DECODED_AROUND`
    characters on each side of the cursor (the window's 2 MB, read whole by the names judge and the loop and
    finish searches, cost more than its budget), the promise cut to it, and the lines of the document it covers."""
    start = min(guarantee.left_cut, max(0, len(left) - DECODED_AROUND))
    if 0 < start < guarantee.left_cut:
        start = after_line(left, start)  # a line start, at most the region's
    end = max(guarantee.right_cut, min(len(right), DECODED_AROUND))
    if guarantee.right_cut < end < len(right):
        end = after_line(right, end)
    first = window[0] + line_of(left, start) - 1
    left, right = left[start:], right[:end]
    last = first + line_of(left + right, max(0, len(left) + len(right) - 1)) - 1
    return replace(guarantee, left_cut=guarantee.left_cut - start), left, right, (first, last)


def _superseded(request: Request, when: str) -> NoSuggestion:
    log.info("%s: no completion: %s (%s)", request.where, SUPERSEDED, when)
    return NoSuggestion(SUPERSEDED)


def _not_connected(request: Request, settings: Settings, server: str) -> NoSuggestion:
    reason = f"the {settings.time_budget:g} s time budget ran out while connecting to the model server at {server}"
    log.info("%s: no completion: %s", request.where, reason)
    return NoSuggestion(reason)


def _queued_too_long(request: Request, settings: Settings, queued: float) -> NoSuggestion:
    _record(request.timings, waiting=queued)
    reason = (f"the {settings.time_budget:g} s time budget ran out while the request waited {1e3 * queued:.0f} ms "
              "for the model (busy with a request for another document)")
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
    if result.unchecked:
        return f"{result.reason}, and the middle decoded without a constraint does not compile"
    reason = reasons.get(result.stop, f"no valid middle ({result.stop} after {result.tokens} tokens)")
    return f"{reason}: {result.refusal}" if result.refusal else reason


def _detail(result, window: tuple[int, int] | None = None) -> str:
    """What the middle was checked against, in a few words (the completion item's detail and the log), in the
    document's lines where the decoder was given a `window` of it."""
    if result.unchecked:
        return "unchecked"
    before = window[0] - 1 if window is not None else 0
    if result.region is not None:
        return f"checked lines {result.region[0] + before}-{result.region[1] + before} (the rest of the file is not)"
    if result.guarantee == "file":
        return "checked: the file compiles" if window is None else (
            f"checked lines {window[0]}-{window[1]} (the rest of the file is not)")
    return "unchecked"
