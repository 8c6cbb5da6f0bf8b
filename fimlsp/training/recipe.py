"""The shipped model's recipe: the runs that made it, first first, each continuing the model the one before it wrote.

`fimlsp train` without result options runs them one after the other in one output folder (`stage-1`, `stage-2`,
…; `pipeline.run_recipe`), each stage to its planned end, and exports the last. A test holds the recipe to the
shipped model's training record, so that the command and the model cannot drift apart.
"""

from __future__ import annotations

import dataclasses

from fimlsp.training.options import TrainOptions

# The shipped model was trained on 66 MB; the default corpus budget has since grown to every usable file
# (`docs/results/corpus-size.txt`), so its stages pin the budget their records hold.
_SHIPPED = TrainOptions(max_train_mb=66.0)
_CONTINUED = dataclasses.replace(_SHIPPED, random_span_length="log")
DEFAULT_RECIPE: tuple[TrainOptions, ...] = (
    _SHIPPED,  # from random weights, uniform random spans
    dataclasses.replace(_CONTINUED, lr=0.001, tokens=30_000_000),  # mostly short random middles
    dataclasses.replace(_CONTINUED, eos_weight=4.0, lr=0.0006, tokens=8_000_000),  # learning to stop
    dataclasses.replace(_CONTINUED, eos_weight=6.0, lr=0.0005, tokens=20_000_000),
    dataclasses.replace(_CONTINUED, eos_weight=8.0, lr=0.0005, tokens=18_000_000),
)

# The next model's run on one GPU (`benchmarks/gpu_run.py`, at most nine minutes on one H100 or H200): the
# architecture of `../shared/models/gpu-26m` (26.3M parameters, about 890k window tokens per second at batch
# 32x1024 on an H100), on the default corpus budget (every usable file: 189 MB of training files on the project
# machine), its passes built in 16 parts by the data workers; 356M window tokens are 400 s of steps at that speed.
GPU_RECIPE: tuple[TrainOptions, ...] = (
    TrainOptions(n_layer=8, n_embd=512, n_head=8, seq_len=1024, batch_size=32, lr=0.001, warmup_steps=200,
                 random_span_length="log", eos_weight=4.0, tokens=356_000_000, data_parts=16),
)


def matches(runs: list[dict], stages: tuple[TrainOptions, ...] = DEFAULT_RECIPE) -> bool:
    """Whether a model's runs (`lineage.lineage`, first first) are the recipe's stages, each to its planned end (a
    record from before an option existed has its default)."""
    return len(runs) == len(stages) and all(
        TrainOptions(**run["options"]) == options and run["steps"] == run["planned_steps"]
        for run, options in zip(runs, stages))
