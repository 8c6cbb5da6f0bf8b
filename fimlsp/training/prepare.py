"""A run folder's preparation, done once and reused when the run resumes: its options recorded (and a resume with
other ones refused), the model it continues copied in, its corpus manifest and its tokenizer."""

from __future__ import annotations

import dataclasses
import json
import shutil

from fimlsp.corpus_manifest import keep_present, load_manifest, relocate, resolve_files
from fimlsp.model.folder import CONFIG, TOKENIZER, TRAINING_RECORD
from fimlsp.training import corpus
from fimlsp.training.options import TrainingError, TrainOptions
from fimlsp.training.run_folder import INIT_MODEL_DIR, MANIFEST, RUN_OPTIONS, TOKENIZER_DIR, Run
from fimlsp.training.tokenizer import load_tokenizer, train_tokenizer


def check_options(run: Run) -> None:
    """Write the options on first use; refuse to continue a folder that was made with different ones."""
    path = run.output / RUN_OPTIONS
    current = dataclasses.asdict(run.options) | ({"init_from": run.init_weights} if run.init_weights else {})
    if path.exists():
        # An option a folder does not name did not exist when it was made; its default keeps the old behaviour.
        saved = dataclasses.asdict(TrainOptions()) | json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(k for k in current.keys() | saved.keys() if saved.get(k) != current.get(k))
        if changed:
            raise TrainingError(
                f"{run.output} was started with other options ({', '.join(changed)}); "
                "use the same options to resume or a new --output"
            )
    else:
        run.output.mkdir(parents=True, exist_ok=True)
        if run.init_weights:
            copy_init_model(run)
        path.write_text(json.dumps(current, indent=1) + "\n", encoding="utf-8")


def copy_init_model(run: Run) -> None:
    """Keep the starting model in the run folder, after checking that it fits these options."""
    start = run.control.init_from
    config = json.loads((start / CONFIG).read_text(encoding="utf-8"))
    expected = {"n_layer": run.options.n_layer, "n_embd": run.options.n_embd, "n_head": run.options.n_head,
                "n_positions": run.options.seq_len}
    differing = [f"{name} {config.get(name)} (not {value})" for name, value in expected.items()
                 if config.get(name) != value]
    if differing:
        raise TrainingError(f"--init-from {start} has {', '.join(differing)}; give the options it was trained with")
    for needed in (MANIFEST, TRAINING_RECORD, TOKENIZER):
        if not (start / needed).exists():
            raise TrainingError(f"--init-from {start} has no {needed}: not a model fimlsp trained")
    staging = run.output / (INIT_MODEL_DIR + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(start, staging)
    shutil.rmtree(run.output / INIT_MODEL_DIR, ignore_errors=True)  # left by a run stopped before run.json
    staging.replace(run.output / INIT_MODEL_DIR)


def manifest(run: Run) -> dict:
    """The run's corpus manifest: the continued model's (its files found on this machine) or a new corpus."""
    path = run.output / MANIFEST
    if not path.exists() and run.init_model:
        try:
            relocated = relocate(load_manifest(run.init_model / MANIFEST), run.control.corpus_map)
        except ValueError as error:
            raise TrainingError(f"--corpus-map: {error}") from None
        inherited = keep_present(relocated, "train")
        if not inherited["train"]:
            roots = ", ".join(f"{label}={root}" for label, root in relocated["roots"].items())
            raise TrainingError(f"none of the training files of {run.control.init_from} is on this machine (its "
                                f"corpus roots: {roots}; --corpus-map LABEL=DIR says where a root is here)")
        path.with_suffix(".tmp").write_text(json.dumps(inherited), encoding="utf-8")
        path.with_suffix(".tmp").replace(path)
    if not path.exists():
        built = corpus.build_corpus(
            run.control.roots,
            seed=run.options.seed,
            heldout_fraction=run.options.heldout_fraction,
            max_train_bytes=int(run.options.max_train_mb * 1e6),
            max_heldout_bytes=int(run.options.max_heldout_mb * 1e6),
            max_file_bytes=int(run.options.max_file_kb * 1e3),
        )
        if not built.train or not built.heldout:
            raise TrainingError("the corpus roots hold no usable Python files for both splits")
        corpus.write_manifest(built, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
    return load_manifest(path)


def documents(run: Run, split: str) -> list[str]:
    """The texts of a split's files, in the manifest's order; a TrainingError when any changed since."""
    paths, missing = resolve_files(manifest(run), split)
    if missing:
        raise TrainingError(f"{missing} {split} files of {run.output / MANIFEST} changed or vanished since it was made")
    return [path.read_text(encoding="utf-8") for _name, path in paths]


def tokenizer(run: Run):
    """The run's tokenizer: the continued model's, or one trained on the run's first training files."""
    directory = run.output / TOKENIZER_DIR
    if not (directory / TOKENIZER).exists() and run.init_model:
        load_tokenizer(run.init_model).save_pretrained(directory)
    if not (directory / TOKENIZER).exists():
        staging = directory.with_name(TOKENIZER_DIR + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        train_tokenizer(tokenizer_texts(run), run.options.vocab_size, staging)
        shutil.rmtree(directory, ignore_errors=True)
        staging.replace(directory)
    return load_tokenizer(directory)


def tokenizer_texts(run: Run) -> list[str]:
    """The training files a new tokenizer learns from: the first ones, in the manifest's order, up to
    `tokenizer_mb`."""
    budget = int(run.options.tokenizer_mb * 1e6)
    texts, used = [], 0
    for text in documents(run, "train"):
        if used >= budget:
            break
        texts.append(text)
        used += len(text)
    return texts
