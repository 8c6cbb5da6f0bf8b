"""Measuring a model: bits per byte, the FIM figures' table, and `fimlsp evaluate-model`."""

import json
import math

import pytest

from fimlsp.training.evaluate import format_figures, heldout_loss, load_model
from fimlsp.training.tokenizer import load_tokenizer
from harness.corpus import STDLIB
from tests.training_fixtures import train
from tests.training_fixtures import sample_root  # noqa: F401, F811 (pytest fixtures)


def test_bits_per_byte_is_the_total_loss_in_bits_over_bytes(tiny_model_path):
    import torch

    model = load_model(tiny_model_path, torch.device("cpu"))
    tokenizer = load_tokenizer(tiny_model_path)
    texts = [(STDLIB / name).read_text() for name in ("bisect.py", "colorsys.py")]
    result = heldout_loss(model, tokenizer, texts, seq_len=128, max_bytes=10**9)
    assert result["files"] == 2 and result["bytes"] == sum(len(t.encode()) for t in texts)
    assert result["bits_per_byte"] == pytest.approx(result["loss"] * result["tokens"] / math.log(2) / result["bytes"])
    assert abs(result["loss"] - math.log(len(tokenizer))) < 1.0  # an untrained model is near uniform


def test_a_card_of_a_model_evaluated_before_empty_middles_were_counted_says_so():
    row = {"cases": 4, "parse_rate": 0.5, "eos_rate": 0.75, "exact_match_rate": 0.25, "median_tokens": 7,
           "model_ms_per_token": 2.0}
    fim = {"cases_per_kind": 4, "seed": 1, "max_new_tokens": 16, "kinds": {"line": {"unconstrained": row}}}
    assert "| line | unconstrained | 4 | 50.0% | 75.0% | n/a | 25.0% | 7 | 2.0 |" in format_figures(fim)
    fim["kinds"]["line"]["unconstrained"] = {**row, "empty_rate": 0.25}
    assert "| line | unconstrained | 4 | 50.0% | 75.0% | 25.0% | 25.0% | 7 | 2.0 |" in format_figures(fim)


@pytest.mark.slow
def test_evaluate_model_measures_resumes_and_rewrites_the_card(sample_root, tmp_path, capsys):
    from fimlsp.cli import main

    assert train(sample_root, tmp_path / "run", "--tokens", str(8 * 4 * 64), "--eval-cases", "1") == 0
    model, records = tmp_path / "run" / "model", tmp_path / "records.jsonl"
    capsys.readouterr()
    command = ["evaluate-model", "--model", str(model), "--cases", "2", "--eval-bytes", "2000", "--device", "cpu",
               "--records", str(records), "--write-card"]
    assert main(command) == 0
    printed = capsys.readouterr().out
    assert "bits/byte" in printed and "| line | constrained | 2 |" in printed
    first = records.read_text()
    results = json.loads((model / "evaluation.json").read_text())
    assert results["fim"]["cases_per_kind"] == 2 and "| random span | unconstrained | 2 |" in (model / "README.md").read_text()
    assert main(command) == 0 and records.read_text() == first  # every case was there: nothing run again
    capsys.readouterr()
    (model / "corpus.json").unlink()
    assert main(command) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "corpus.json" in error
