"""The runs that made a model, read from its training record, and the `fimlsp train` commands that rebuild it:
what the card quotes, what a recipe's stage announces, and what a benchmark's run passes on."""

from __future__ import annotations

import dataclasses

from fimlsp.training.options import TrainOptions


def option_flags(options: dict) -> list[str]:
    """The `fimlsp train` flags and values that reproduce these options (defaults left out), each apart."""
    defaults = dataclasses.asdict(TrainOptions())
    return [part for name, value in options.items() if defaults.get(name) != value
            for part in (f"--{name.replace('_', '-')}", str(value))]


def train_command(options: dict, output: str, export: str, init_from: str | None = None) -> str:
    """The `fimlsp train` command line that reproduces these options (defaults left out)."""
    start = [f"--init-from {init_from}"] if init_from else []
    return " ".join(["fimlsp train", *start, f"--output {output}", f"--export {export}", *option_flags(options)])


def lineage(record: dict) -> list[dict]:
    """The training records of the runs that made a model, first run first: a continued run (`--init-from`) keeps
    the record of the model it started from."""
    earlier = lineage(record["continued_from"]) if "continued_from" in record else []
    return [*earlier, record]


def rebuild_commands(record: dict, export: str) -> list[str]:
    """The `fimlsp train` commands that rebuild a model into `export`, one per run of its lineage, each later run
    starting from the model the one before it wrote in its run folder."""
    runs = lineage(record)
    commands, start = [], None
    for number, run in enumerate(runs, 1):
        target = export if number == len(runs) else f"{run['output']}/model"
        commands.append(train_command(run["options"], run["output"], target, start))
        start = target
    return commands
