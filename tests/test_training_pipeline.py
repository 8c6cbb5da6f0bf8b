"""`fimlsp train` from end to end: a run trains, exports, evaluates and writes its card; a recipe runs its stages
in turn, resumes a paused one and skips those finished."""

import dataclasses
import json

import pytest

from fimlsp.decoding import DecodingOptions
from fimlsp.model.folder import EVALUATION, TRAINING_RECORD
from fimlsp.training import pipeline, recipe
from fimlsp.training.lineage import lineage
from fimlsp.training.options import RunControl
from tests.training_fixtures import losses, tiny_stage, train
from tests.training_fixtures import sample_root  # noqa: F401, F811 (pytest fixtures)


@pytest.mark.slow
def test_training_lowers_the_loss_and_exports_a_complete_model(sample_root, tmp_path):
    assert train(sample_root, tmp_path / "run", "--tokens", str(40 * 4 * 64), "--lr", "3e-3") == 0
    history = losses(tmp_path / "run")
    assert len(history) == 40
    assert sum(history[-5:]) / 5 < sum(history[:3]) / 3 - 0.5
    model = tmp_path / "run" / "model"
    files = {p.name for p in model.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "corpus.json", "training.json", "evaluation.json",
            "README.md"} <= files
    record = json.loads((model / "training.json").read_text())
    assert record["steps"] == 40 and 0.5 * 40 * 4 * 64 < record["tokens_seen"] <= 40 * 4 * 64  # padding not counted
    results = json.loads((model / "evaluation.json").read_text())
    assert results["fim"]["cases_per_kind"] == 3
    assert set(results["fim"]["kinds"]) == {"randspan", "boundary", "line", "node"}
    card = (model / "README.md").read_text()
    assert f"{results['heldout']['bits_per_byte']:.4f}" in card
    for kind in results["fim"]["kinds"].values():
        assert set(kind) == {"unconstrained", "constrained"}
        assert kind["constrained"]["cases"] == 3 and f"{kind['constrained']['parse_rate']:.1%}" in card
    assert len(results["examples"]) == 5 and all(f"→ ``{e['middle']!r}``" in card for e in results["examples"])
    # the FIM figures are the model's greedy ones; the everyday suggestions are decoded as the server does
    assert json.loads((tmp_path / "run" / "evaluation.jsonl").read_text().splitlines()[0])["attempts"] == 1
    attempts = DecodingOptions().attempts
    assert all(e["attempts"] == attempts for e in results["examples"])
    assert f"the best ended of {attempts} greedy middles" in card


@pytest.mark.slow
def test_a_recipe_runs_its_stages_in_turn_resumes_and_skips_finished_ones(sample_root, tmp_path, monkeypatch):
    stages = (tiny_stage(tokens=10 * 4 * 64, lr=3e-3), tiny_stage(tokens=4 * 4 * 64, lr=1e-3, eos_weight=4.0))
    control = RunControl(output=tmp_path / "run", export=tmp_path / "run" / "model", roots={"src": sample_root},
                         threads=1, eval_cases=1, eval_bytes=2000, progress=False)
    assert pipeline.run_recipe(stages, dataclasses.replace(control, stop_after=4)) is None  # paused in stage 1
    announced = []
    assert pipeline.run_recipe(stages, control, announced.append) == control.export
    assert [line.split(":")[0] for line in announced] == ["stage 1 of 2", "stage 2 of 2"]
    record = json.loads((control.export / TRAINING_RECORD).read_text())
    runs = lineage(record)
    assert recipe.matches(runs, stages) and not recipe.matches(runs)
    assert [run["output"] for run in runs] == [str(tmp_path / "run" / "stage-1"), str(tmp_path / "run" / "stage-2")]
    assert runs[1]["command"].startswith(f"fimlsp train --init-from {tmp_path / 'run' / 'stage-1' / 'model'} ")
    assert "--eos-weight 4.0" in runs[1]["command"]
    assert len(losses(tmp_path / "run" / "stage-1")) == 10  # resumed after the pause, not started again
    stage_results = json.loads((tmp_path / "run" / "stage-1" / "model" / EVALUATION).read_text())
    final_results = json.loads((control.export / EVALUATION).read_text())
    assert stage_results["fim"]["cases_per_kind"] == 0 and final_results["fim"]["cases_per_kind"] == 1

    monkeypatch.setattr(pipeline, "train", lambda options, control: pytest.fail(f"{control.output} trained again"))
    assert pipeline.run_recipe(stages, control) == control.export

