"""Run evaluation cases in each decoding mode and write one JSON line per (case, mode) as results arrive.

The results file starts with a `{"type": "run", ...}` line holding the settings (model, token limit, top-k) and
then holds `{"type": "result", ...}` lines. Running again with the same file resumes: (case, mode) pairs already
there are skipped and only new lines are appended; a run with other settings is refused, so that one file never
mixes two models. A last line cut short by a crash is dropped before appending.

With `workers` > 1, cases run in that many spawned processes, each loading the model once; a case's modes run
one after the other in the same process, so they see the same machine load.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator

from fimlsp import decoding
from fimlsp.context.editor import CommandContexts
from fimlsp.evaluation.dataset import EvalCase
from fimlsp.evaluation.names import added_undefined_names
from fimlsp.decoding.options import option
from fimlsp.language import Caches
from fimlsp.model import FimModel, load_model
from fimlsp.model.backend import Snippet
from fimlsp.model.remote import RemoteModel

MODES = decoding.MODES[::-1]  # the paper's order, the weakest first
# The decoding options a run takes (its other options are the library's defaults: file scope, no statement end).
DECODING = ("max_tokens", "top_k", "time_budget", "scope", "loop_repeats", "token_healing", "attempts", "names",
            "search_budget", "calls", "members", "member_usage", "context", "context_exclude", "invented_finish")
# A run's finish searches are bounded by nodes expanded, not by the clock: the same cases give the same middles on a
# busy machine as on an idle one, and two runs compare (about what an editor's searches expand in their seconds).
SEARCH_BUDGET = 20
# The keys of a results file's header for the settings that were named otherwise when the format was set.
_HEADER_KEYS = {"time_budget": "timeout", "model_server": "server"}
SETTING_KEYS = tuple(_HEADER_KEYS.get(name, name) for name in ("model", *DECODING, "model_server"))
# Settings that results files written before them lack, with the value those runs had.
_SETTINGS_ADDED_LATER = {"scope": decoding.SCOPES[0], "loop_repeats": 0, "token_healing": False, "attempts": 1,
                         "names": decoding.NAMES[0], "server": None, "search_budget": None, "calls": "off",
                         "members": "off", "member_usage": 0.0, "context": "off", "context_exclude": "",
                         "invented_finish": True}


class ResumeError(Exception):
    """The results file cannot be resumed with these settings."""


def _declared(name: str):
    """The library's default of the decoding option `name` (`fimlsp.decoding.options`)."""
    return option(name).default


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """A run's settings: those of its model, and its decoding options with the library's defaults (the paper's
    setup: file scope, no name judge) but for the search budget and the context (the paper's: the file alone)."""

    model: str | None = None  # folder or hub id; None: the shipped default model
    max_tokens: int = _declared("max_tokens")
    top_k: int = _declared("top_k")
    device: str | None = None  # None: as the setting device's default
    threads: int | None = None  # torch threads per process
    time_budget: float | None = _declared("time_budget")
    scope: str = _declared("scope")
    loop_repeats: int = _declared("loop_repeats")
    token_healing: bool = _declared("token_healing")
    attempts: int = _declared("attempts")
    names: str = _declared("names")
    calls: str = _declared("calls")
    members: str = _declared("members")
    member_usage: float = _declared("member_usage")
    context: str = "off"  # other files of the case's project in the prompt (`fimlsp.context`)
    context_exclude: str = _declared("context_exclude")
    invented_finish: bool = _declared("invented_finish")
    search_budget: int | None = SEARCH_BUDGET  # nodes a finish search expands; None: the clock bounds it too
    model_server: str | None = None  # the URL of a shared server that runs the model (`fimlsp.model.remote`)

    def header(self) -> dict:
        held = {"model": self.model_name, **{name: getattr(self, name) for name in DECODING},
                "model_server": self.model_server}
        if self.members == "off" and self.names == "off":
            held["member_usage"] = 0.0  # it weighs nothing without the member and name judges: any value decodes alike
        return {"type": "run", **{_HEADER_KEYS.get(name, name): value for name, value in held.items()}}

    def decoding_options(self, mode: str) -> decoding.DecodingOptions:
        """The options of a completion in `mode` under these settings."""
        return decoding.DecodingOptions(mode=mode, **{name: getattr(self, name) for name in DECODING})

    @property
    def model_name(self) -> str:
        """The model as recorded: a local folder by its absolute path (the shipped model's included)."""
        if self.model is None:
            from fimlsp.weights import default_model_path

            return str(default_model_path())
        location = Path(os.path.expanduser(str(self.model)))
        return str(location.resolve()) if location.is_dir() else str(self.model)


def read_results(path: Path) -> tuple[dict | None, list[dict]]:
    """The run header and the result records of a results file (missing file: none); a cut-short last line is
    ignored."""
    header, records = None, []
    if not Path(path).exists():
        return header, records
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.endswith("\n"):
                break  # cut short by a crash: not a record
            if not line.strip():
                continue
            data = json.loads(line)
            if data.get("type") == "run":
                header = header or data
            elif data.get("type") == "result":
                records.append(data)
    return header, records


def _truncate_partial_line(path: Path) -> None:
    with open(path, "rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


def pending_work(
    cases: Iterable[EvalCase], modes: Iterable[str], done: set[tuple[str, str]],
) -> list[tuple[EvalCase, list[str]]]:
    """The cases with the modes still to run for each, in the cases' order."""
    work = []
    for case in cases:
        missing = [mode for mode in modes if (case.id, mode) not in done]
        if missing:
            work.append((case, missing))
    return work


def prepare(path: Path, settings: RunSettings) -> set[tuple[str, str]]:
    """Check that `path` can take results with these settings, write the header of a new file, and return the
    (case id, mode) pairs it already holds."""
    path = Path(path)
    header, records = read_results(path)
    if header is not None:
        expected = settings.header()
        recorded = {key: header.get(key, _SETTINGS_ADDED_LATER.get(key)) for key in SETTING_KEYS}
        differing = [key for key in SETTING_KEYS if recorded[key] != expected[key]]
        if differing:
            raise ResumeError(
                f"{path} holds results of another run ({', '.join(f'{k}={recorded[k]!r}' for k in differing)}, "
                f"not {', '.join(f'{k}={expected[k]!r}' for k in differing)}); give another --out"
            )
    if path.exists():
        _truncate_partial_line(path)
    if header is None:
        if path.exists() and path.stat().st_size:
            raise ResumeError(f"{path} exists and is not a results file of fimlsp eval")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(json.dumps({**settings.header(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                  "python": sys.version.split()[0]}) + "\n")
    return {(record["case"], record["mode"]) for record in records}


class _Worker:
    """What one process runs cases with: the model, loaded once, the run's settings, and the languages' caches and
    the projects' contexts, kept from case to case of the process (as a server keeps them from keystroke to
    keystroke)."""

    def __init__(self, model: FimModel, settings: RunSettings):
        self.model = model
        self.settings = settings
        self.caches = Caches()
        self.contexts = CommandContexts()

    @classmethod
    def loading(cls, settings: RunSettings) -> _Worker:
        if settings.model_server:
            from fimlsp.model.remote import connect

            return cls(connect(settings.model_server, settings.model), settings)
        import torch

        if settings.threads:
            torch.set_num_threads(settings.threads)
        return cls(load_model(settings.model, settings.device), settings)

    def run(self, case: EvalCase, modes: list[str]) -> list[dict]:
        return run_case(case, modes, self.model, self.settings, self.caches, self.contexts)


# The worker of a pool's process: a `multiprocessing.Pool` initializer can hand its tasks nothing but a global.
_pool_worker: _Worker | None = None


def _init_pool_worker(settings: RunSettings) -> None:
    global _pool_worker
    _pool_worker = _Worker.loading(settings)


def _run_in_pool_worker(item: tuple[dict, list[str]]) -> list[dict]:
    case, modes = item
    return _pool_worker.run(EvalCase.from_json(case), modes)


class _CountedPasses:
    """Counts the model passes of a completion, whatever the engine: the prompt's and one a decoding step (the
    Completion's `tokens`, the length of the middle chosen, maybe a shorter valid prefix, does not give them)."""

    def __init__(self, model: FimModel):
        self.calls = 0
        self._prompt_pass = model.prompt_pass

    def prompt_pass(self, ids, shared=False, deadline=None):
        self.calls += 1
        return _CountedPromptPass(self._prompt_pass(ids, shared, deadline), self)


class _CountedPromptPass:
    def __init__(self, inner, counter: _CountedPasses):
        self._inner, self._counter = inner, counter

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def session(self, rows: int = 1):
        session, counter = self._inner.session(rows), self._counter
        step = session.step

        def counted(tokens):
            counter.calls += 1
            return step(tokens)

        session.step = counted
        return session


def run_case(case: EvalCase, modes: list[str], model: FimModel, settings: RunSettings,
             caches: Caches | None = None, contexts: CommandContexts | None = None) -> list[dict]:
    """One record per mode for `case`, with the same model and prompt in every mode; the constrained mode's setup
    reuses and keeps what it compiles in `caches`, when given. The prompt holds what the settings' context finds in
    the case's project (`case_context`), assembled once for all modes, with `contexts`' projects when given."""
    clock = time.perf_counter()
    extra = case_context(case, settings, model.context_window, contexts)
    context = {"context": [{"path": snippet.path, "chars": len(snippet.text)} for snippet in extra],
               "context_seconds": time.perf_counter() - clock}
    counter = _CountedPasses(model)
    model.prompt_pass = counter.prompt_pass  # this case's passes are counted; the class's method is kept aside
    try:
        return [{**_run_mode(case, mode, model, settings, caches, counter, extra), **context} for mode in modes]
    finally:
        del model.prompt_pass


def case_context(case: EvalCase, settings: RunSettings, context_window: int,
                 contexts: CommandContexts | None = None) -> list[Snippet]:
    """The snippets of other files that a completion of the case's file would have in its prompt: those of
    `fimlsp complete --context SETTING --project PROJECT` (the case's own file on disk, which holds the true middle,
    is never a source). A case without a path has none."""
    return (contexts or CommandContexts()).snippets(case.path, case.left, case.right, settings.context,
                                                     settings.context_exclude, context_window, case.project)


def _run_mode(case: EvalCase, mode: str, model: FimModel, settings: RunSettings, caches: Caches | None,
              counter: _CountedPasses, extra: list[Snippet]) -> dict:
    from fimlsp.decoding.attempts import complete_middles

    counter.calls = 0
    remote = isinstance(model, RemoteModel)
    if remote:
        round_trips, speculated = model.round_trips, model.speculated
    record = {"type": "result", "case": case.id, "kind": case.kind, "file": case.file, "draw": case.draw,
              "mode": mode, "context_chars": case.context_chars, "left_chars": len(case.left),
              "right_chars": len(case.right), "expected_chars": len(case.middle)}
    clock = time.perf_counter()
    try:
        result = complete_middles(model, case.left, case.right, settings.decoding_options(mode), caches=caches,
                                  extra=extra, place=(case.path, case.project))[0]
    except Exception as error:  # noqa: BLE001 - one broken case must not end a long run; it is recorded
        record.update(error=f"{type(error).__name__}: {error}"[:500], parses=False, stop="error",
                      wall_seconds=time.perf_counter() - clock)
        return record
    record.update(exact=result.middle == case.middle, **result.to_json(), wall_seconds=time.perf_counter() - clock,
                  steps=counter.calls)  # the prompt's pass and one a decoding step
    if remote:  # a prompt pass or a new speculative run is a round trip; the rest were answered by a run
        record.update(round_trips=model.round_trips - round_trips, speculated=model.speculated - speculated)
    if result.parses:
        record["added_undefined"] = added_undefined_names(case.left, result.middle, case.right, case.middle)
    return record


def run_cases(
    cases: list[EvalCase], modes: list[str], settings: RunSettings, out: Path, workers: int = 1,
    progress: bool = True, model=None,
) -> tuple[int, int]:
    """Run what `out` does not hold yet, appending records as cases finish; returns (cases run, cases skipped).

    `model`, an already loaded model, is used in-process (tests); otherwise each process loads `settings.model`.
    """
    from tqdm import tqdm

    done = prepare(out, settings)
    work = pending_work(cases, modes, done)
    skipped = len(cases) - len(work)
    if not work:
        return 0, skipped
    bar = tqdm(total=len(work), unit="case", disable=not progress, dynamic_ncols=True, file=sys.stderr,
               desc=f"{len(work)} cases ({skipped} done before)" if skipped else f"{len(work)} cases")
    try:
        with open(out, "a", encoding="utf-8") as sink:
            for records in _results(work, settings, workers, model):
                for record in records:
                    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                sink.flush()
                bar.update(1)
                failures = sum(1 for r in records if not r["parses"])
                bar.set_postfix_str(f"last: {records[0]['case'][:40]} {len(records) - failures}/{len(records)} ok",
                                    refresh=False)
    finally:
        bar.close()
    return len(work), skipped


def _results(work, settings: RunSettings, workers: int, model) -> Iterator[list[dict]]:
    if workers <= 1 or model is not None:
        worker = _Worker.loading(settings) if model is None else _Worker(model, settings)
        for case, modes in work:
            yield worker.run(case, modes)
        return
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, initializer=_init_pool_worker, initargs=(settings,)) as pool:
        items = [(case.to_json(), modes) for case, modes in work]
        yield from pool.imap_unordered(_run_in_pool_worker, items, chunksize=1)


def default_threads(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))
