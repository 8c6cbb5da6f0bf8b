"""Checkpoints: a run stopped and resumed ends with the weights and the log of a run that never stopped."""

import dataclasses
import time

import pytest

from fimlsp.training import checkpoints, epochs, loop, prepare
from fimlsp.training.options import RunControl
from fimlsp.training.run_folder import Run
from tests.training_fixtures import losses, tiny_stage, train
from tests.training_fixtures import sample_root  # noqa: F401, F811 (pytest fixtures)


@pytest.mark.slow
def test_interrupted_and_resumed_run_ends_with_the_same_weights(sample_root, tmp_path, capsys):
    from safetensors.torch import load_file

    common = ["--tokens", str(12 * 4 * 64), "--checkpoint-every", "4"]
    assert train(sample_root, tmp_path / "straight", *common) == 0
    assert train(sample_root, tmp_path / "resumed", *common, "--stop-after", "6") == 0
    assert "paused" in capsys.readouterr().out
    assert not (tmp_path / "resumed" / "model").exists()
    assert len(losses(tmp_path / "resumed")) == 6
    assert train(sample_root, tmp_path / "resumed", *common) == 0

    straight = load_file(tmp_path / "straight" / "model" / "model.safetensors")
    resumed = load_file(tmp_path / "resumed" / "model" / "model.safetensors")
    assert straight.keys() == resumed.keys()
    assert all(straight[name].equal(resumed[name]) for name in straight)
    assert losses(tmp_path / "straight") == losses(tmp_path / "resumed")


def _optimise(run: Run):
    """The run's optimisation alone (no export, no evaluation): the trained model, or None when paused."""
    import torch

    torch.set_num_threads(run.control.threads)
    prepare.check_options(run)
    tokenizer = prepare.tokenizer(run)
    batches = epochs.batches(run, tokenizer, checkpoints.checkpointed_step(run))
    return loop.optimise(run, tokenizer, batches, time.monotonic())


def test_a_paused_optimisation_resumes_from_its_checkpoint_to_the_same_weights(sample_root, tmp_path):
    """The fast form of the run above: four steps straight, and two, a pause and the rest, end with the same
    weights and the same log; the pause leaves a checkpoint at the step it stopped."""
    import torch

    control = RunControl(output=tmp_path / "straight", export=tmp_path / "model", roots={"src": sample_root},
                         threads=1, checkpoint_every=3, progress=False, data_workers=0)
    options = tiny_stage(tokens=4 * 4 * 64, max_train_mb=0.012)
    straight = _optimise(Run.of(options, control))
    assert straight.step == 4 and checkpoints.checkpointed_step(Run.of(options, control)) == 4

    paused = Run.of(options, dataclasses.replace(control, output=tmp_path / "resumed", stop_after=2))
    assert _optimise(paused) is None
    assert checkpoints.checkpointed_step(paused) == 2 and len(losses(paused.output)) == 2
    resumed = _optimise(Run.of(options, dataclasses.replace(control, output=tmp_path / "resumed")))
    assert resumed.step == 4 and resumed.tokens_seen == straight.tokens_seen
    weights = straight.model.state_dict()
    assert all(torch.equal(weights[name], tensor) for name, tensor in resumed.model.state_dict().items())
    assert losses(tmp_path / "straight") == losses(tmp_path / "resumed")
