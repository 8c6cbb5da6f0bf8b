"""The optimisation: the learning-rate schedule, and tiny runs whose end-of-middle weight and repeat unlikelihood
move the probabilities they target."""

import json

import pytest

from fimlsp.training.epochs import fim_tokens
from fimlsp.training.fim import middle_ends, repeat_candidates
from fimlsp.training.loop import lr_at
from fimlsp.training.options import TrainOptions
from fimlsp.training.tokenizer import load_tokenizer
from tests.training_fixtures import losses, train
from tests.training_fixtures import sample_root  # noqa: F401, F811 (pytest fixtures)


def test_learning_rate_warms_up_then_decays_by_cosine_to_the_floor():
    options = TrainOptions(tokens=100 * 16 * 512, warmup_steps=10, lr=1e-3, min_lr_ratio=0.1)
    assert options.planned_steps == 100
    assert lr_at(0, options) == pytest.approx(1e-4)
    assert lr_at(9, options) == pytest.approx(1e-3)
    assert lr_at(55, options) == pytest.approx(0.55e-3)
    assert lr_at(100, options) == pytest.approx(1e-4)
    assert all(lr_at(s, options) >= lr_at(s + 1, options) for s in range(10, 100))



@pytest.mark.slow
def test_eos_weight_raises_the_end_of_sequence_after_middles_and_logs_the_plain_loss(sample_root, tmp_path):
    import numpy as np
    import torch
    from transformers import GPTBigCodeForCausalLM

    common = ["--tokens", str(40 * 4 * 64), "--lr", "3e-3", "--eval-cases", "0"]
    assert train(sample_root, tmp_path / "plain", *common) == 0
    assert train(sample_root, tmp_path / "weighted", *common, "--eos-weight", "8") == 0
    assert losses(tmp_path / "plain")[0] == pytest.approx(losses(tmp_path / "weighted")[0])  # same start, same data

    windows = np.load(tmp_path / "plain" / "data" / "train-epoch0.npy").astype(np.int64)
    ends = torch.from_numpy(middle_ends(windows, fim_tokens(load_tokenizer(tmp_path / "plain" / "model"))))
    eos_probability = {}
    for name in ("plain", "weighted"):
        model = GPTBigCodeForCausalLM.from_pretrained(tmp_path / name / "model", torch_dtype=torch.float32).eval()
        with torch.no_grad():
            probabilities = model(input_ids=torch.from_numpy(windows[:, :-1])).logits.softmax(-1)[..., 0]
        eos_probability[name] = float(probabilities[ends].mean())
    assert eos_probability["weighted"] > 1.5 * eos_probability["plain"]


@pytest.mark.slow
def test_repeat_unlikelihood_lowers_the_probability_of_repeating_an_earlier_ngram(sample_root, tmp_path):
    import numpy as np
    import torch
    from transformers import GPTBigCodeForCausalLM

    common = ["--tokens", str(40 * 4 * 64), "--lr", "3e-3", "--eval-cases", "0", "--repeat-ngram", "3"]
    assert train(sample_root, tmp_path / "plain", *common) == 0
    assert train(sample_root, tmp_path / "unlikely", *common, "--repeat-unlikelihood", "1000") == 0
    assert losses(tmp_path / "plain")[0] == pytest.approx(losses(tmp_path / "unlikely")[0])  # same start, same data
    logged = [json.loads(line) for line in (tmp_path / "unlikely" / "log.jsonl").read_text().splitlines()]
    assert all(record["repeat_loss"] >= 0 for record in logged) and any(record["repeat_loss"] > 0 for record in logged)

    windows = np.load(tmp_path / "plain" / "data" / "train-epoch0.npy").astype(np.int64)
    candidates = torch.from_numpy(repeat_candidates(windows, fim_tokens(load_tokenizer(tmp_path / "plain" / "model")), 3))
    where = candidates >= 0
    repeat_probability = {}
    for name in ("plain", "unlikely"):
        model = GPTBigCodeForCausalLM.from_pretrained(tmp_path / name / "model", torch_dtype=torch.float32).eval()
        with torch.no_grad():
            probabilities = model(input_ids=torch.from_numpy(windows[:, :-1])).logits.softmax(-1)
        repeat_probability[name] = float(probabilities[where].gather(-1, candidates[where].unsqueeze(-1)).mean())
    assert repeat_probability["unlikely"] < 0.9 * repeat_probability["plain"]
