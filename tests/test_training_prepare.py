"""A run folder's preparation: options kept and checked on resume, and a run that continues a model (its weights,
tokenizer and split; its files where they are on this machine)."""

import json

import pytest

from fimlsp import corpus_manifest
from tests.training_fixtures import TINY, losses, train
from tests.training_fixtures import sample_root  # noqa: F401, F811 (pytest fixtures)


def test_resuming_with_other_options_is_a_user_error(sample_root, tmp_path, capsys):
    assert train(sample_root, tmp_path / "run", "--tokens", "256", "--stop-after", "0") == 0
    capsys.readouterr()
    assert train(sample_root, tmp_path / "run", "--tokens", "256", "--lr", "0.01") == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "lr" in error and "Traceback" not in error


@pytest.mark.slow
def test_a_folder_made_before_an_option_existed_resumes_with_its_default(sample_root, tmp_path):
    assert train(sample_root, tmp_path / "run", "--tokens", "256", "--stop-after", "0") == 0
    options = json.loads((tmp_path / "run" / "run.json").read_text())
    del options["eos_weight"]
    (tmp_path / "run" / "run.json").write_text(json.dumps(options))
    assert train(sample_root, tmp_path / "run", "--tokens", "256") == 0
    assert train(sample_root, tmp_path / "other", "--tokens", "256", "--stop-after", "0") == 0
    (tmp_path / "other" / "run.json").write_text(json.dumps(options))
    assert train(sample_root, tmp_path / "other", "--tokens", "256", "--eos-weight", "2") == 2


@pytest.mark.slow
def test_a_run_continues_a_model_with_its_weights_tokenizer_and_split(sample_root, tmp_path, capsys):
    from fimlsp.cli import main

    assert train(sample_root, tmp_path / "first", "--tokens", str(30 * 4 * 64), "--lr", "3e-3", "--eval-cases", "1") == 0
    first = tmp_path / "first" / "model"
    continued = ["train", "--init-from", str(first), "--output", str(tmp_path / "second"), *TINY,
                 "--tokens", str(6 * 4 * 64), "--lr", "1e-3", "--eval-cases", "1"]
    stopped_copy = tmp_path / "second" / "init-model"  # a run stopped after copying its start, before run.json
    stopped_copy.mkdir(parents=True)
    (stopped_copy / "config.json").write_text("{}")
    assert main(continued) == 0
    assert losses(tmp_path / "second")[0] < losses(tmp_path / "first")[0] - 0.5  # trained weights, not random ones
    second = tmp_path / "second" / "model"
    assert (second / "tokenizer.json").read_text() == (first / "tokenizer.json").read_text()
    manifests = [json.loads((folder / "corpus.json").read_text()) for folder in (first, second)]
    assert manifests[0]["heldout"] == manifests[1]["heldout"] and manifests[0]["train"] == manifests[1]["train"]
    record = json.loads((second / "training.json").read_text())
    assert record["continued_from"] == json.loads((first / "training.json").read_text())
    card = (second / "README.md").read_text()
    total = record["tokens_seen"] + record["continued_from"]["tokens_seen"]
    assert f"In all: {total:,} tokens" in card
    assert f"--init-from {tmp_path / 'first' / 'model'} --output {tmp_path / 'second'}" in card

    capsys.readouterr()
    assert train(sample_root, tmp_path / "second") == 2  # the folder was started from a model: resuming needs it
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "init_from" in error
    assert main([*continued[:2], str(tmp_path), *continued[3:]]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not a model folder" in error


@pytest.mark.slow
def test_a_continued_run_exports_its_manifest_when_its_data_was_copied_in(sample_root, tmp_path):
    import shutil

    from fimlsp.cli import main

    assert train(sample_root, tmp_path / "first", "--tokens", str(2 * 4 * 64), "--eval-cases", "0") == 0
    continued = ["train", "--init-from", str(tmp_path / "first" / "model"), *TINY, "--tokens", str(2 * 4 * 64),
                 "--eval-cases", "0"]
    assert main([*continued, "--output", str(tmp_path / "second")]) == 0
    (tmp_path / "third").mkdir()
    shutil.copytree(tmp_path / "second" / "data", tmp_path / "third" / "data")  # the packed data: a pure function
    assert main([*continued, "--output", str(tmp_path / "third")]) == 0
    assert (tmp_path / "third" / "model" / "corpus.json").read_text() == (
        tmp_path / "second" / "model" / "corpus.json").read_text()


@pytest.mark.slow
def test_a_continued_run_trains_on_the_files_still_there(sample_root, tmp_path):
    import shutil

    sample_root = shutil.copytree(sample_root, tmp_path / "src")
    assert train(sample_root, tmp_path / "first", "--tokens", str(2 * 4 * 64), "--eval-cases", "0") == 0
    manifest = corpus_manifest.load_manifest(tmp_path / "first" / "model" / "corpus.json")
    gone = manifest["train"][0][0]
    (sample_root / gone.partition("/")[2]).write_text("changed = True\n")
    kept = corpus_manifest.keep_present(manifest, "train")
    assert [row[0] for row in kept["train"]] == [row[0] for row in manifest["train"][1:]]
    assert kept["train_files_gone"] == 1 and kept["train_bytes"] == sum(row[2] for row in manifest["train"][1:])
    assert kept["heldout"] == manifest["heldout"]

    from fimlsp.cli import main

    (sample_root / manifest["heldout"][0][0].partition("/")[2]).write_text("changed = True\n")
    continued = tmp_path / "second"
    assert main(["train", "--init-from", str(tmp_path / "first" / "model"), "--output", str(continued), *TINY,
                 "--tokens", str(2 * 4 * 64), "--eval-cases", "0"]) == 0
    results = json.loads((continued / "model" / "evaluation.json").read_text())
    assert results["heldout"]["skipped_files"] == 1  # the card says its held-out figures left a file out
    assert "1 held-out files of the manifest were missing or changed" in (continued / "model" / "README.md").read_text()


@pytest.mark.slow
def test_a_model_from_another_machine_finds_its_corpus_through_corpus_map(sample_root, tmp_path, capsys):
    """A model trained elsewhere names its roots as that machine had them: `--corpus-map LABEL=DIR` says where
    a root is here, and files that moved within it are found by their content hashes (held-out ones too)."""
    import shutil

    from fimlsp.cli import main
    original = shutil.copytree(sample_root, tmp_path / "src")
    assert train(original, tmp_path / "first", "--tokens", str(2 * 4 * 64), "--eval-cases", "0") == 0
    manifest = corpus_manifest.load_manifest(tmp_path / "first" / "model" / "corpus.json")
    elsewhere = tmp_path / "elsewhere"
    moved = manifest["train"][0][0].partition("/")[2]
    shutil.move(original, elsewhere)  # the root is gone from where the manifest says
    (elsewhere / "nested").mkdir()
    shutil.move(elsewhere / moved, elsewhere / "nested" / moved)  # and one file moved within it
    continued = ["train", "--init-from", str(tmp_path / "first" / "model"), *TINY, "--tokens", str(2 * 4 * 64),
                 "--eval-cases", "0"]
    assert main([*continued, "--output", str(tmp_path / "lost")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--corpus-map" in error

    assert main([*continued, "--output", str(tmp_path / "second"), "--corpus-map", f"src={elsewhere}"]) == 0
    found = corpus_manifest.load_manifest(tmp_path / "second" / "corpus.json")
    assert found["train_files_gone"] == 0 and len(found["train"]) == len(manifest["train"])
    assert f"src/nested/{moved}" in [row[0] for row in found["train"]]
    assert corpus_manifest.resolve_files(found, "heldout")[1] == 0  # the held-out files are found there too

    assert main([*continued, "--output", str(tmp_path / "third"), "--corpus-map", "site=" + str(elsewhere)]) == 2
    assert "no root labelled site" in capsys.readouterr().err
