"""What a run keeps as it goes, so that a stopped run resumes where it stopped: checkpoints of the model and the
optimizer, and the log of every step, cut back to the last checkpoint so that a resumed run's log reads as one."""

from __future__ import annotations

import json
from pathlib import Path

from fimlsp.training.options import TrainingError
from fimlsp.training.run_folder import CHECKPOINT_DIR, LOG, Run


def checkpoints(run: Run) -> list[Path]:
    return sorted((run.output / CHECKPOINT_DIR).glob("step-*.pt"))


def checkpointed_step(run: Run) -> int:
    """The step the latest checkpoint holds (0 without one): where a resumed run goes on from."""
    found = checkpoints(run)
    return int(found[-1].stem.removeprefix("step-")) if found else 0


def save_checkpoint(run: Run, model, optimizer, step: int, tokens_seen: int, train_seconds: float) -> None:
    import torch

    directory = run.output / CHECKPOINT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step-{step:07d}.pt"
    staging = path.with_suffix(".tmp")
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
         "tokens_seen": tokens_seen, "train_seconds": train_seconds},
        staging,
    )
    staging.replace(path)
    for old in checkpoints(run)[: -run.control.keep_checkpoints]:
        old.unlink()
    truncate_log(run, step)


def load_checkpoint(run: Run, model, optimizer, device) -> dict:
    """Restore the latest checkpoint into the model and optimizer (without one, the continued model's weights, if
    any); its step, tokens seen and training seconds."""
    import torch

    existing = checkpoints(run)
    if not existing:
        truncate_log(run, 0)
        if run.init_model:
            load_init_weights(run, model)
        return {"step": 0, "tokens_seen": 0, "train_seconds": 0.0}
    state = torch.load(existing[-1], map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    truncate_log(run, state["step"])
    return state


def load_init_weights(run: Run, model) -> None:
    import torch
    from transformers import GPTBigCodeForCausalLM

    start = GPTBigCodeForCausalLM.from_pretrained(run.init_model, dtype=torch.float32, trust_remote_code=False)
    try:
        model.load_state_dict(start.state_dict())
    except RuntimeError as error:
        raise TrainingError(f"--init-from {run.control.init_from} does not fit these options: "
                            f"{str(error).splitlines()[-1].strip()}") from None


def log(run: Run, record: dict) -> None:
    with open(run.output / LOG, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def truncate_log(run: Run, step: int) -> None:
    """Drop log lines past the last checkpoint, so a resumed run's log reads as one run."""
    path = run.output / LOG
    if not path.exists():
        return
    kept = [line for line in path.read_text(encoding="utf-8").splitlines() if json.loads(line)["step"] <= step]
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def recent_loss(run: Run, last: int = 50) -> float | None:
    """The mean logged loss of the last steps: the training record's final loss."""
    path = run.output / LOG
    if not path.exists():
        return None
    losses = [json.loads(line)["loss"] for line in path.read_text(encoding="utf-8").splitlines()[-last:]]
    return round(sum(losses) / len(losses), 4) if losses else None
