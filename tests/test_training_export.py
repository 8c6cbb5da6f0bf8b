"""The exported model folder: sharded weights that load, continue and convert like one file, and a training record that
names the machine."""

import json
from pathlib import Path

import pytest

from fimlsp.training.export import hardware
from tests.training_fixtures import TINY, losses, train
from tests.training_fixtures import sample_root  # noqa: F401, F811 (pytest fixtures)


@pytest.mark.slow
def test_a_model_exported_in_shards_loads_continues_and_converts_like_one_file(sample_root, tmp_path):
    """`--max-shard-mib` writes the weights as safetensors files of at most that size with an index (so that a
    model can be copied where file sizes are limited); fimlsp loads, continues (`--init-from`) and converts such a
    folder, with the weights the run trained."""
    import torch
    from safetensors.torch import load_file

    from fimlsp.cli import main
    from fimlsp.model import load_model
    from fimlsp.model.gguf_export import export_gguf
    from fimlsp.model.llama_engine import load_gguf

    limit = 0.02
    assert train(sample_root, tmp_path / "run", "--tokens", str(30 * 4 * 64), "--lr", "3e-3", "--eval-cases", "1",
                 "--max-shard-mib", str(limit)) == 0
    folder = tmp_path / "run" / "model"
    shards = sorted(folder.glob("*.safetensors"))
    assert not (folder / "model.safetensors").exists() and len(shards) >= 3
    for shard in shards:  # a tensor larger than the limit gets a file of its own
        assert shard.stat().st_size <= limit * 2**20 + 1024 or len(load_file(shard)) == 1, shard.name
    trained = torch.load(sorted((tmp_path / "run" / "checkpoints").glob("*.pt"))[-1], weights_only=True)["model"]
    loaded = load_model(folder, "cpu").model.state_dict()
    assert all(torch.equal(loaded[name], trained[name].half().float()) for name in trained if name in loaded)
    assert json.loads((folder / "evaluation.json").read_text())["heldout"]["tokens"] > 0

    continued = ["train", "--init-from", str(folder), "--output", str(tmp_path / "second"), *TINY,
                 "--tokens", str(2 * 4 * 64), "--eval-cases", "0"]
    assert main(continued) == 0
    assert losses(tmp_path / "second")[0] < losses(tmp_path / "run")[0] - 0.5  # from the trained weights

    model = load_gguf(export_gguf(folder, tmp_path / "sharded.gguf"), threads=1)
    model.close()


def test_the_training_record_names_the_hardware_without_proc_cpuinfo(monkeypatch):
    import platform

    import torch

    def unreadable(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(Path, "read_text", unreadable)
    record = hardware(torch.device("cpu"))
    assert record["device"] == "cpu" and record["cpu"] == (platform.processor() or platform.machine())
