"""`fimlsp train`'s command line: its help, its errors, and when it runs the recipe."""

import argparse

import pytest

from fimlsp.cli import main
from fimlsp.commands.train import add_arguments
from fimlsp.training import pipeline, recipe
from fimlsp.training.options import TrainOptions


def test_bad_corpus_root_is_a_one_line_user_error(tmp_path, capsys):
    assert main(["train", "--output", str(tmp_path / "run"), "--corpus-root", str(tmp_path / "missing")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("fimlsp train: error:") and error.count("\n") == 1


def test_train_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    options = [action for action in parser._actions if action.option_strings and action.dest != "help"]
    assert {"--output", "--export", "--max-minutes", "--stop-after", "--threads"} <= {
        flag for action in options for flag in action.option_strings}
    assert {f"--{name.replace('_', '-')}" for name in TrainOptions.__dataclass_fields__} <= {
        flag for action in options for flag in action.option_strings}
    for action in options:
        assert action.help and len(action.help) > 15
        assert action.option_strings[0] in help_text
        assert " ".join(action.help.split()) in help_text


def test_fimlsp_train_runs_the_recipe_only_without_result_options(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(pipeline, "run_recipe",
                        lambda stages, control, announce: ran.append(("recipe", stages, control)))
    monkeypatch.setattr(pipeline, "train", lambda options, control: ran.append(("run", options, control)))
    assert main(["train", "--output", str(tmp_path / "run"), "--threads", "1", "--no-progress"]) == 0
    assert main(["train", "--output", str(tmp_path / "one"), "--lr", "0.0015"]) == 0  # the default, but given
    assert [(kind, stages) for kind, stages, _ in ran][:1] == [("recipe", recipe.DEFAULT_RECIPE)]
    assert ran[0][2].export == tmp_path / "run" / "model" and ran[1][0] == "run"
    assert "paused" in capsys.readouterr().out
    assert main(["train", "--output", str(tmp_path / "run"), "--max-minutes", "5"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--max-minutes" in error and "--stop-after" in error
