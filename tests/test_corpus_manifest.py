"""A corpus manifest read on another machine: its files found by content where they are, changed ones counted
and left out, a moved root relocated by label and a file that moved within it found by its hash."""

import shutil
from pathlib import Path

import pytest

from fimlsp.corpus_manifest import keep_present, load_manifest, relocate, resolve_files
from fimlsp.training import corpus
from tests.training_fixtures import module_text


@pytest.fixture
def manifest(tmp_path):
    root = tmp_path / "lib"
    (root / "pkg").mkdir(parents=True)
    for index in range(12):
        (root / ("pkg" if index % 2 else "") / f"m{index:02d}.py").write_text(module_text(index))
    built = corpus.build_corpus({"lib": root}, seed=5, heldout_fraction=0.3, max_train_bytes=10**9,
                                max_heldout_bytes=10**9, max_file_bytes=10**6)
    corpus.write_manifest(built, tmp_path / "corpus.json")
    return load_manifest(tmp_path / "corpus.json")


def test_a_changed_file_is_counted_missing_and_left_out_of_its_split(manifest):
    found, missing = resolve_files(manifest, "train")
    assert missing == 0 and [name for name, _path in found] == [row[0] for row in manifest["train"]]
    changed_name, changed_path = found[0]
    changed_path.write_text("changed = True\n")
    kept = keep_present(manifest, "train")
    assert [row[0] for row in kept["train"]] == [row[0] for row in manifest["train"][1:]]
    assert kept["train_files_gone"] == 1 and kept["train_bytes"] == sum(row[2] for row in manifest["train"][1:])
    assert kept["heldout"] == manifest["heldout"]  # the other split is the model's still
    assert resolve_files(manifest, "train")[1] == 1


def test_a_root_moved_elsewhere_is_found_by_label_and_a_moved_file_by_its_content(manifest, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.move(tmp_path / "lib", elsewhere)
    assert resolve_files(manifest, "train")[1] == len(manifest["train"])  # the roots as the manifest has them
    moved = manifest["heldout"][0][0].partition("/")[2]
    (elsewhere / "nested").mkdir()
    shutil.move(elsewhere / moved, elsewhere / "nested" / Path(moved).name)

    relocated = relocate(manifest, {"lib": elsewhere})
    assert relocated["roots"]["lib"] == str(elsewhere)
    assert f"lib/nested/{Path(moved).name}" in [row[0] for row in relocated["heldout"]]
    assert resolve_files(relocated, "train")[1] == 0 and resolve_files(relocated, "heldout")[1] == 0
    with pytest.raises(ValueError, match="no root labelled site"):
        relocate(manifest, {"site": elsewhere})
