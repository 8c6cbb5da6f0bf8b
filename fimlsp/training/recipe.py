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

# The next model's run on one GPU (`benchmarks/gpu_run.py`): the shipped model's architecture, from random weights,
# on the default corpus budget (every usable file but the benchmarks' packages: 187 MB of training files on the
# project machine), with the shipped model's last options from the start (short random middles, the end of
# sequence that closes a middle weighted 8). Its 300M window tokens were 211 s of steps on one H200, at the 1.3M
# tokens a second that 14 data workers build; the model it made is `models/gpu-5m`.
GPU_RECIPE: tuple[TrainOptions, ...] = (
    TrainOptions(random_span_length="log", eos_weight=8.0, tokens=300_000_000, batch_size=64, lr=0.002,
                 warmup_steps=300, data_parts=16),
)


def matches(runs: list[dict], stages: tuple[TrainOptions, ...] = DEFAULT_RECIPE) -> bool:
    """Whether a model's runs (`lineage.lineage`, first first) are the recipe's stages, each to its planned end (a
    record from before an option existed has its default)."""
    return len(runs) == len(stages) and all(
        TrainOptions(**run["options"]) == options and run["steps"] == run["planned_steps"]
        for run, options in zip(runs, stages))
