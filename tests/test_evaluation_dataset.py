"""Evaluation cases and files (`fimlsp.evaluation.dataset`)."""

from __future__ import annotations


def test_read_named_keeps_the_files_that_parse(tmp_path):
    from fimlsp.evaluation.dataset import read_named

    (tmp_path / "good.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    named_paths = [("good.py", tmp_path / "good.py"), ("broken.py", tmp_path / "broken.py"),
                   ("missing.py", tmp_path / "missing.py")]
    assert read_named(named_paths) == [("good.py", "x = 1\n")]
    assert read_named(named_paths, max_chars=3) == []
