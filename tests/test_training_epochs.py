"""A run's data: windows whose samples fit, epochs built in other processes or parts the same as in one, and a resumed
run that builds only what it still needs."""

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

from fimlsp.training import epochs, prepare
from fimlsp.training.epochs import SAMPLE_SLACK
from fimlsp.training.fim import pack
from fimlsp.training.options import RunControl
from fimlsp.training.run_folder import DATA_DIR, Run
from harness.corpus import STDLIB
from tests.training_fixtures import fim_transform, run_of, tiny_stage, train
from tests.training_fixtures import sample_root, tokenizer  # noqa: F401, F811 (pytest fixtures)


def test_every_fim_window_starts_with_a_sample_whose_middle_sees_its_context(tokenizer):
    transform = fim_transform(tokenizer, fim_rate=1.0, segment_tokens=65 - 1 - SAMPLE_SLACK)
    texts = [(STDLIB / name).read_text() for name in ("textwrap.py", "bisect.py")]
    samples = list(transform.samples(texts, random.Random(6)))
    windows = pack(samples, window_tokens=65, pad=4)
    assert all(row[0] == 1 for row in windows.tolist())  # <fim_prefix>: as a prompt starts at inference
    assert sorted(token for row in windows.tolist() for token in row if token != 4) == sorted(
        token for sample in samples if len(sample) <= 65 for token in sample
    )
    rows = [" ".join(map(str, row)) for row in windows.tolist()]
    assert all(any(" ".join(map(str, sample)) in row for row in rows) for sample in samples if len(sample) <= 65)
    assert sum(len(sample) > 65 for sample in samples) <= 0.01 * len(samples)  # the slack leaves room


def _assert_same_data_and_weights(one: Path, other: Path) -> list[str]:
    """Assert that two run folders hold the same data files, window for window, and export the same weights; the
    data files' names."""
    names = sorted(path.name for path in (one / DATA_DIR).glob("*.npy"))
    assert sorted(path.name for path in (other / DATA_DIR).glob("*.npy")) == names
    for name in names:
        assert np.array_equal(np.load(one / DATA_DIR / name), np.load(other / DATA_DIR / name)), name
    first = load_file(one / "model" / "model.safetensors")
    second = load_file(other / "model" / "model.safetensors")
    assert all(first[name].equal(second[name]) for name in first)
    return names


@pytest.mark.slow
def test_data_workers_build_the_same_windows_and_weights_as_one_process(sample_root, tmp_path):
    """Epochs built in other processes while the model trains (spawned, as `fimlsp train` does by default) are the
    windows one process builds, so the run ends with the same weights; a resumed run builds only what it still
    needs."""
    common = ["--tokens", str(90 * 4 * 64), "--eval-cases", "0", "--max-train-mb", "0.012"]
    assert train(sample_root, tmp_path / "alone", *common) == 0
    assert train(sample_root, tmp_path / "workers", *common, "--data-workers", "2") == 0
    alone = _assert_same_data_and_weights(tmp_path / "alone", tmp_path / "workers")
    assert len(alone) >= 3, alone  # the run spans several epochs


@pytest.mark.slow
def test_a_resumed_run_builds_only_the_epochs_it_still_needs(sample_root, tmp_path):
    common = ["--tokens", str(90 * 4 * 64), "--eval-cases", "0", "--max-train-mb", "0.012", "--checkpoint-every", "10"]
    assert train(sample_root, tmp_path / "run", *common, "--stop-after", "80") == 0
    data = tmp_path / "run" / DATA_DIR
    for path in data.glob("*.npy"):
        if path.name != "train-epoch0.npy":
            path.unlink()
    assert train(sample_root, tmp_path / "run", *common, "--data-workers", "1") == 0
    per_epoch = len(np.load(data / "train-epoch0.npy"))
    needed = set(range(80 * 4 // per_epoch, (90 * 4 - 1) // per_epoch + 1))  # steps 80 to 89, 4 windows each
    assert min(needed) > 1  # the steps before 80 drew from epochs that the resumed run does not need
    assert sorted(path.name for path in data.glob("*.npy")) == sorted(
        f"train-epoch{epoch}.npy" for epoch in needed | {0})


@pytest.mark.slow
def test_data_parts_cut_each_pass_into_files_built_apart_with_the_same_result(sample_root, tmp_path):
    """With `--data-parts 3` a pass over the training files is three data files of about equal size, together the
    pass's files once each, which workers build in parallel into the same windows and weights as one process."""
    common = ["--tokens", str(100 * 4 * 64), "--eval-cases", "0", "--max-train-mb", "0.03", "--data-parts", "3"]
    assert train(sample_root, tmp_path / "alone", *common) == 0
    assert train(sample_root, tmp_path / "workers", *common, "--data-workers", "2") == 0
    names = _assert_same_data_and_weights(tmp_path / "alone", tmp_path / "workers")
    assert len(names) > 3

    run = run_of(tmp_path / "alone")
    files = sorted(prepare.documents(run, "train"))
    passes = [[epochs.part_documents(run, epoch)[0] for epoch in range(3 * number, 3 * number + 3)] for number in (0, 1)]
    for parts in passes:
        assert sorted(document for part in parts for document in part) == files
        sizes = [sum(map(len, part)) for part in parts]
        assert max(sizes) - min(sizes) <= 2 * max(map(len, files)), sizes
    assert passes[0] != passes[1]  # each pass shuffles the files anew


def test_a_pass_splits_into_parts_of_about_equal_size_none_empty():
    documents = ["x" * length for length in (50, 10, 10, 30, 20, 40, 5, 35)]
    parts = epochs.split_by_size(documents, 3)
    assert [document for part in parts for document in part] == documents  # in order, each once
    sizes = [sum(map(len, part)) for part in parts]
    assert max(sizes) - min(sizes) <= 50, sizes
    assert all(epochs.split_by_size(documents[:count], count) == [[document] for document in documents[:count]]
               for count in (1, 2, 3))
    assert epochs.split_by_size(documents[:2], 3)[-1] == []  # fewer documents than parts: the last part is empty


def test_the_batch_of_a_step_depends_only_on_the_step(sample_root, tmp_path, tokenizer):
    """A run resumed at any step draws the batches a run from the start would: the windows are a function of the
    seed, and each epoch's order too."""
    run = Run.of(tiny_stage(tokens=30 * 4 * 64, max_train_mb=0.012),
                 RunControl(output=tmp_path / "run", export=tmp_path / "model", roots={"src": sample_root}))
    prepare.check_options(run)
    from_start = epochs.batches(run, tokenizer)
    steps = [from_start(step) for step in range(30)]
    assert steps[0].shape == (4, 65) and any(not np.array_equal(steps[0], other) for other in steps[1:])
    assert len(list((tmp_path / "run" / DATA_DIR).glob("*.npy"))) >= 2  # the steps span several epochs
    resumed = epochs.batches(run, tokenizer, first_step=17)
    assert all(np.array_equal(resumed(step), steps[step]) for step in (29, 17, 3))
    other = Run.of(dataclasses.replace(run.options, seed=7),
                   dataclasses.replace(run.control, output=tmp_path / "other"))
    prepare.check_options(other)
    assert not np.array_equal(epochs.batches(other, tokenizer)(3), steps[3])
