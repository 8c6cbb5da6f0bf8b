"""`fimlsp train` from end to end: prepare the run folder, optimise, export the model, evaluate it and write its
card; and a recipe's stages one after the other, each continuing the model the stage before it exported."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

from fimlsp.corpus_manifest import resolve_files
from fimlsp.model.folder import TRAINING_RECORD
from fimlsp.training import card, checkpoints, epochs, evaluate, loop, prepare, recipe
from fimlsp.training.export import export_model
from fimlsp.training.lineage import train_command
from fimlsp.training.options import RunControl, TrainOptions
from fimlsp.training.run_folder import EVALUATION_RECORDS, Run


def train(options: TrainOptions, control: RunControl) -> Path | None:
    """Train to the planned step (or until a stop option says so), then export, evaluate and write the card;
    returns the export folder when finished, None when `stop_after` paused the run."""
    import torch

    started = time.monotonic()
    run = Run.of(options, control)
    if control.threads:
        torch.set_num_threads(control.threads)
    if not control.progress:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    prepare.check_options(run)
    tokenizer = prepare.tokenizer(run)
    first_step = checkpoints.checkpointed_step(run)
    builders = epochs.data_builders(run)
    try:
        trained = loop.optimise(run, tokenizer, epochs.batches(run, tokenizer, first_step, builders), started)
    finally:
        if builders is not None:
            builders.shutdown(wait=True, cancel_futures=True)
    if trained is None:
        return None
    target = export_model(run, trained, tokenizer)
    evaluate_export(run, target, trained.device)
    card.write_card(target)
    return target


def evaluate_export(run: Run, target: Path, device) -> None:
    """Measure the exported model on the run's held-out files (those this machine has unchanged) and write the
    figures into its folder; the per-case records go to the run folder, replacing an earlier export's."""
    heldout, missing = resolve_files(prepare.manifest(run), "heldout")
    records = run.output / EVALUATION_RECORDS
    records.unlink(missing_ok=True)
    results = evaluate.evaluate_model(
        target, heldout, records, seed=run.options.seed, cases=run.control.eval_cases,
        max_bytes=run.control.eval_bytes, device=device, progress=run.control.progress, skipped_files=missing,
    )
    evaluate.write_results(results, target)


def stage_folder(output: Path, number: int) -> Path:
    return output / f"stage-{number}"


def finished(export: Path, options: TrainOptions, output: Path) -> bool:
    """Whether `export` holds the model of this stage's folder, trained to its planned end with these options."""
    path = export / TRAINING_RECORD
    if not path.is_file():
        return False
    record = json.loads(path.read_text(encoding="utf-8"))
    return record.get("output") == str(output) and recipe.matches([record], (options,))


def run_recipe(stages: tuple[TrainOptions, ...], control: RunControl,
               announce: Callable[[str], None] | None = None) -> Path | None:
    """Train every stage in `control.output`/stage-N from the model the stage before exported, and export the last
    to `control.export`; only the last is evaluated on FIM cases. A stage already finished is not run again, so
    rerunning the same command resumes where it stopped. Returns the export, or None when `stop_after` paused.
    `announce` is told each stage's equivalent command as it starts (a recipe runs for hours)."""
    start = control.init_from
    for number, options in enumerate(stages, 1):
        last = number == len(stages)
        folder = stage_folder(control.output, number)
        export = control.export if last else folder / "model"
        if not finished(export, options, folder):
            command = train_command(dataclasses.asdict(options), str(folder), str(export),
                                    str(start) if start else None)
            stage = dataclasses.replace(control, output=folder, export=export, init_from=start, command=command,
                                        eval_cases=control.eval_cases if last else 0)
            if announce is not None:
                announce(f"stage {number} of {len(stages)}: {command}")
            if train(options, stage) is None:
                return None
        start = export
    return start
