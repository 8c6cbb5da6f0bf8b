"""The model card: the shipped model's, its ablation runs, and the commands it quotes."""

import json
import re
import shutil

from fimlsp.model.folder import ABLATION
from fimlsp.weights import default_model_path
from fimlsp.training.card import write_card


def test_shipped_model_is_small_fp16_safetensors_with_a_card():
    from safetensors import safe_open

    folder = default_model_path()
    assert sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) < 60e6
    with safe_open(folder / "model.safetensors", framework="pt") as weights:
        dtypes = {str(weights.get_slice(name).get_dtype()) for name in weights.keys()}
    assert dtypes == {"F16"}
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "gpt_bigcode" and config["multi_query"] is True
    manifest = json.loads((folder / "corpus.json").read_text())
    assert manifest["train"] and manifest["heldout"]
    assert not {row[1] for row in manifest["train"]} & {row[1] for row in manifest["heldout"]}
    results = json.loads((folder / "evaluation.json").read_text())
    card = (folder / "README.md").read_text()
    assert results["fim"]["cases_per_kind"] >= 25 and set(results["fim"]["kinds"]) == {"randspan", "boundary", "line", "node"}
    assert f"{results['heldout']['bits_per_byte']:.4f}" in card
    for row in results["fim"]["kinds"]["randspan"].values():
        figures = (row["parse_rate"], row["eos_rate"], row["empty_rate"], row["exact_match_rate"])
        assert " | ".join(f"{share:.1%}" for share in figures) in card


def test_the_card_shows_the_ablation_runs_the_folder_records(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(default_model_path(), folder)
    runs = json.loads((folder / ABLATION).read_text())
    card = write_card(folder).read_text()
    assert "## Ablation" in card and all(f"| {run['name']} |" in card and run["command"] in card for run in runs)
    for run in runs:
        figures = run["evaluation"]["fim"]["kinds"]["line"]["unconstrained"]
        assert f"{figures['parse_rate']:.0%} / {figures['eos_rate']:.0%}" in card
    (folder / ABLATION).unlink()
    assert "## Ablation" not in write_card(folder).read_text()


def test_the_cards_commands_name_a_folder_under_the_working_directory_by_its_relative_path(tmp_path, monkeypatch):
    folder = tmp_path / "models" / "default"
    shutil.copytree(default_model_path(), folder)
    monkeypatch.chdir(tmp_path)
    card = write_card(folder).read_text()
    last_run = [line for line in card.splitlines() if line.startswith("fimlsp train")][-1]
    assert re.search(r"--export models/default( |$)", last_run) and "--model models/default " in card
    assert str(tmp_path) not in card
