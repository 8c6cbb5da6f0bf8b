"""The recipes: the shipped model's is what `fimlsp train` without options runs (its training record says so), and
the GPU one fits its budget."""

import json

from fimlsp.model.folder import CARD, TRAINING_RECORD
from fimlsp.weights import default_model_path
from fimlsp.training import recipe
from fimlsp.training.lineage import lineage, rebuild_commands
from fimlsp.training.options import TrainOptions


def test_fimlsp_train_without_options_is_the_shipped_models_recipe():
    """The README promises that `fimlsp train` with no options rebuilds the shipped model: its runs are the
    recipe's stages, each to its planned end, and the card gives their commands and says so."""
    folder = default_model_path()
    record = json.loads((folder / TRAINING_RECORD).read_text())
    runs = lineage(record)
    assert recipe.matches(runs), [run["options"] for run in runs]
    card = (folder / CARD).read_text()
    commands = rebuild_commands(record, "fimlsp/weights/default")
    assert len(commands) == len(runs) and all(command in card for command in commands)
    assert f"These {len(runs)} runs are the recipe that `fimlsp train` runs without options" in card


def test_the_gpu_recipe_takes_every_file_fits_nine_minutes_and_comes_back_in_few_small_parts():
    """The next model's GPU run (`benchmarks/gpu_run.py`): the whole corpus (the default budget, above the 187
    MB of training files the project machine holds), its steps within six minutes at the 1.3M window tokens a
    second its run measured on an H200, and fp16 weights that fit files of 15 MiB, at most seven of them (the
    device tool returns eight files; the rest of the folder travels as one archive)."""
    import math

    import torch
    from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM

    (stage,) = recipe.GPU_RECIPE
    assert stage.max_train_mb == TrainOptions().max_train_mb >= 200
    assert all(options.max_train_mb == 66.0 for options in recipe.DEFAULT_RECIPE)  # the shipped model's records
    assert stage.planned_steps * stage.batch_size * stage.seq_len / 1_300_000 <= 360
    assert stage.data_parts >= 8  # the first step waits for an eighth of a pass or less
    with torch.device("meta"):
        model = GPTBigCodeForCausalLM(GPTBigCodeConfig(
            vocab_size=stage.vocab_size, n_positions=stage.seq_len, n_embd=stage.n_embd, n_layer=stage.n_layer,
            n_head=stage.n_head, n_inner=4 * stage.n_embd, multi_query=True, tie_word_embeddings=True))
    sizes = [2 * parameter.numel() for parameter in model.parameters()]
    assert max(sizes) <= 15 * 2**20 and math.ceil(sum(sizes) / (15 * 2**20)) + 1 <= 7
