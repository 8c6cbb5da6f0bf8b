"""A run's training data: the packed windows of each epoch (FIM-transformed training files, a pure function of the
seed, cached in the run folder), built ahead in other processes while the model trains, and the batch of every
step drawn from them in a seeded order that depends only on the step."""

from __future__ import annotations

import random
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

import numpy as np

from fimlsp.training import prepare
from fimlsp.training.fim import FimTokens, FimTransform, SpanMix, pack
from fimlsp.training.options import TrainingError
from fimlsp.training.run_folder import DATA_DIR, Run
from fimlsp.training.tokenizer import EOS, FIM_MIDDLE, FIM_PAD, FIM_PREFIX, FIM_SUFFIX, special_token_ids

# Tokens a segment leaves free in its window: the four FIM control tokens, and the few more that tokenizing the
# prefix, middle and suffix apart can take.
SAMPLE_SLACK = 12


def fim_tokens(tokenizer) -> FimTokens:
    ids = special_token_ids(tokenizer)
    return FimTokens(prefix=ids[FIM_PREFIX], middle=ids[FIM_MIDDLE], suffix=ids[FIM_SUFFIX], eos=ids[EOS])


def epoch_file(run: Run, epoch: int) -> Path:
    return run.output / DATA_DIR / f"train-epoch{epoch}.npy"


def epoch_windows(run: Run, epoch: int, tokenizer) -> np.ndarray:
    """The training windows (seq_len + 1 tokens each, whole samples padded) of one pass over the training
    files (cached; a function of the seed)."""
    path = epoch_file(run, epoch)
    if path.exists():
        return np.load(path, mmap_mode="r")
    options = run.options
    transform = FimTransform(
        tokenizer,
        fim_tokens(tokenizer),
        segment_tokens=options.seq_len - SAMPLE_SLACK,
        min_segment_tokens=options.min_segment_tokens,
        fim_rate=options.fim_rate,
        spm_rate=options.spm_rate,
        spans=SpanMix(line=options.line_span_rate, node=options.node_span_rate,
                      random_length=options.random_span_length),
    )
    documents, rng = part_documents(run, epoch)
    pad = special_token_ids(tokenizer)[FIM_PAD]
    windows = pack(transform.samples(documents, rng), options.seq_len + 1, pad)
    windows = windows.astype(np.uint16 if len(tokenizer) <= 65536 else np.int32)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".tmp"), "wb") as handle:
        np.save(handle, windows)
    path.with_suffix(".tmp").replace(path)
    return windows


def part_documents(run: Run, epoch: int) -> tuple[list[str], random.Random]:
    """The training files of one data file, in its order, and the generator of its FIM choices. A pass over the
    files is `data_parts` data files (`epoch` counts data files), each a share of about equal bytes of the
    pass's shuffled files drawn with a generator of its own, so the parts of a pass are built in parallel and
    the first steps wait for a part rather than a pass."""
    parts = run.options.data_parts
    documents = prepare.documents(run, "train")
    if parts == 1:  # the single-part seeds, so that runs from before parts existed get the same data
        random.Random(run.data_seed("order", epoch)).shuffle(documents)
        return documents, random.Random(run.data_seed("fim", epoch))
    pass_number, part = divmod(epoch, parts)
    random.Random(run.data_seed("order", pass_number)).shuffle(documents)
    chosen = split_by_size(documents, parts)[part]
    if not chosen:
        raise TrainingError(f"part {part + 1} of {parts} of a pass holds no training file: use fewer --data-parts")
    return chosen, random.Random(run.data_seed("fim", pass_number, "part", part))


def split_by_size(documents: list[str], parts: int) -> list[list[str]]:
    """`documents` cut in order into `parts` runs of about equal total length; no run is empty while there are
    as many documents as parts."""
    total = sum(len(document) for document in documents)
    split: list[list[str]] = [[]]
    placed = 0
    for index, document in enumerate(documents):
        unopened = parts - len(split)
        if split[-1] and unopened and (placed >= total * len(split) / parts or len(documents) - index <= unopened):
            split.append([])
        split[-1].append(document)
        placed += len(document)
    return split + [[] for _ in range(parts - len(split))]


def data_builders(run: Run) -> ProcessPoolExecutor | None:
    """The processes that build the coming epochs' windows (`RunControl.data_workers`), or None."""
    if not run.control.data_workers:
        return None
    # spawned, not forked: the training process holds torch's threads, which a fork would copy half-stopped
    return ProcessPoolExecutor(run.control.data_workers, mp_context=get_context("spawn"))


def build_epochs(run: Run, epochs: range, builders: ProcessPoolExecutor) -> dict[int, Future]:
    """Start building the windows of `epochs` that are not on disk yet, in the builders' processes; each writes
    the file `epoch_windows` then reads. An epoch is a pure function of the seed, so the windows are the same
    as those built in this process."""
    return {epoch: builders.submit(_build_epoch, run, epoch) for epoch in epochs
            if not epoch_file(run, epoch).exists()}


def _build_epoch(run: Run, epoch: int) -> None:
    """A data builder's work: one epoch's windows, written to the run folder."""
    epoch_windows(run, epoch, prepare.tokenizer(run))


def epochs_needed(run: Run, first_step: int, windows_per_epoch: int) -> range:
    """The epochs that the steps from `first_step` to the planned end draw their windows from."""
    batch_size = run.options.batch_size
    last = (run.options.planned_steps * batch_size - 1) // windows_per_epoch
    return range(first_step * batch_size // windows_per_epoch, last + 1)


def batches(run: Run, tokenizer, first_step: int = 0,
            builders: ProcessPoolExecutor | None = None) -> Callable[[int], np.ndarray]:
    """A function from step number to its batch of windows, walking seeded permutations epoch by epoch. With
    `builders`, the epochs that the steps from `first_step` need are built in their processes meanwhile.

    Every epoch contributes as many windows as epoch 0 holds (later epochs, FIM-transformed with other random
    spans, differ slightly in length), so the position of a step's windows never depends on later data.
    """
    batch_size = run.options.batch_size
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    building: dict[int, Future] = {}
    if builders is not None:
        # Epoch 0 sets the epoch's length, which says which epochs are needed: a run from the start builds the
        # next one with it.
        building = build_epochs(run, range(0, 2 if first_step == 0 else 1), builders)

    def epoch_data(epoch: int) -> tuple[np.ndarray, np.ndarray]:
        if epoch not in cache:
            cache.clear()
            if epoch in building:
                building.pop(epoch).result()  # a builder's error is raised here
            windows = epoch_windows(run, epoch, tokenizer)
            if len(windows) == 0:
                raise TrainingError("the training corpus holds no sample that fits a context window")
            order = np.random.default_rng(run.window_seed(epoch)).permutation(len(windows))
            cache[epoch] = (windows, order)
        return cache[epoch]

    windows_per_epoch = len(epoch_data(0)[1])
    if builders is not None:
        needed = epochs_needed(run, first_step, windows_per_epoch)
        building.update(build_epochs(run, range(max(2, needed.start), needed.stop), builders))

    def batch(step: int) -> np.ndarray:
        rows = []
        for position in range(step * batch_size, (step + 1) * batch_size):
            epoch, offset = divmod(position, windows_per_epoch)
            windows, order = epoch_data(epoch)
            rows.append(np.asarray(windows[int(order[offset % len(order)])], dtype=np.int64))
        return np.stack(rows)

    return batch
