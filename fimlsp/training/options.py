"""What a training run is asked: the options that determine its weights, how this invocation runs, and the error
for a run that cannot go on. Every other module of the pipeline reads these; they read none of it."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """Everything that determines the trained weights. Changing any of these needs a fresh output folder."""

    seed: int = 1234
    heldout_fraction: float = 0.05
    max_train_mb: float = 1000.0  # more than the machine holds: every usable file (docs/results/corpus-size.txt)
    max_heldout_mb: float = 6.0
    max_file_kb: float = 200.0
    data_parts: int = 1
    vocab_size: int = 8192
    tokenizer_mb: float = 16.0
    n_layer: int = 4
    n_embd: int = 256
    n_head: int = 4
    seq_len: int = 512
    min_segment_tokens: int = 64
    fim_rate: float = 0.9
    spm_rate: float = 1.0
    line_span_rate: float = 0.35
    node_span_rate: float = 0.35
    random_span_length: str = "uniform"
    eos_weight: float = 1.0
    repeat_unlikelihood: float = 0.0
    repeat_ngram: int = 4
    tokens: int = 14_000_000
    batch_size: int = 16
    lr: float = 1.5e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    precision: str = "bf16"

    @property
    def planned_steps(self) -> int:
        return max(1, math.ceil(self.tokens / (self.batch_size * self.seq_len)))


@dataclasses.dataclass(frozen=True)
class RunControl:
    """How this invocation runs, without changing the result: where, on what, and for how long."""

    output: Path
    export: Path
    roots: dict[str, Path]
    device: str = "auto"
    threads: int | None = None
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    max_minutes: float | None = None
    stop_after: int | None = None
    eval_cases: int = 100  # per cut kind
    eval_bytes: int = 1_000_000
    progress: bool = True
    command: str | None = None
    init_from: Path | None = None  # a model folder whose weights, tokenizer and split this run continues from
    # where the corpus roots of `init_from`'s manifest are on this machine, by label (`corpus_manifest.relocate`)
    corpus_map: dict[str, Path] = dataclasses.field(default_factory=dict)
    # processes that build the packed windows of the coming epochs while the model trains (0: built in turn, in
    # this process, when an epoch starts)
    data_workers: int = max(0, (os.cpu_count() or 1) - 1)
    # export the weights in safetensors files of at most this many MiB, with an index (None: one file), so that a
    # model can be copied through a channel that limits file sizes
    max_shard_mib: float | None = None


class TrainingError(Exception):
    """The run cannot go on as asked (e.g. resuming a folder made with other options)."""
