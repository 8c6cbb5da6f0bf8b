"""A model and the one thread that runs it: the completion engine's worker (`fimlsp.server.completion`)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("fimlsp.server")

WARM_UP_SECONDS = 5.0  # the longest a model server's warm-up may take (a local model's has no limit)
# The warm-up's left context: long enough for a prompt that measures the model's speed.
_WARM_UP_LEFT = "def area(width, height):\n    return width * height\n\n\n" * 16 + "total = "


class ModelLoadError(Exception):
    """The configured model cannot be loaded; the message is one line for the user. `kept`: the model still
    served instead (the one loaded before), if any."""

    def __init__(self, message: str, kept: str | None = None):
        super().__init__(message)
        self.kept = kept


class Worker:
    """A model and the one thread that runs it. Abandoned (a newer model replaced it, or the server shuts down), its
    load and its requests to a model server stop at once and its model is closed once its thread is free."""

    def __init__(self, key: tuple):
        self.key = key
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fimlsp-model")
        self.abandoned = threading.Event()
        self.model = None
        self.error: str | None = None
        self.job_stop: threading.Event | None = None  # the flag of the job it runs

    @property
    def remote(self) -> bool:
        return self.key[2] is not None

    def should_stop(self) -> bool:
        """A model server's request is not wanted any more: the worker is abandoned, or its job stopped."""
        job_stop = self.job_stop
        return self.abandoned.is_set() or (job_stop is not None and job_stop.is_set())

    def describe(self) -> str:
        note = getattr(self.model, "status", "")  # a server whose tokenization could not be checked
        return f"{self.model.name} on {self.model.device}" + (f" ({note})" if note else "")

    def load(self) -> str:
        """Worker thread: load the model and warm it up; the model's description, or a ModelLoadError."""
        from fimlsp.model import ModelError, load_model

        name, device, server = self.key
        try:
            if server:
                from fimlsp.model.remote import connect  # its HTTP client only where a model server is used

                self.model = connect(server, name, should_stop=self.should_stop)
            else:
                self.model = load_model(name, device)
        except ModelError as error:
            self.error = str(error)
        except Exception as error:  # a broken model folder can fail deep inside torch or transformers
            log.debug("loading the model failed", exc_info=True)
            self.error = f"cannot load model {name or '(default)'}: {type(error).__name__}: {error}"
        if self.error is not None:
            raise ModelLoadError(self.error)
        self._warm_up()
        return self.describe()

    def _warm_up(self) -> None:
        """One small completion as part of the load: the language builds its tables and the model's speed over a
        prompt is measured (`FimModel.prompt_tokens_within`) before the first request, which has a budget."""
        from fimlsp.decoding import DecodingOptions, complete_middle

        try:
            budget = WARM_UP_SECONDS if self.remote else None  # a model server may stall
            options = DecodingOptions(max_tokens=2, attempts=1, time_budget=budget)
            complete_middle(self.model, _WARM_UP_LEFT, "\n", options, should_stop=self.abandoned.is_set)
        except Exception as error:  # the first request will say what is wrong
            log.debug("warming up failed: %s: %s", type(error).__name__, error)

    def abandon(self) -> None:
        self.abandoned.set()
        try:
            self.executor.submit(self._close)
        except RuntimeError:  # abandoned before
            return
        self.executor.shutdown(wait=False)

    def _close(self) -> None:
        if self.model is not None:
            self.model.close()
