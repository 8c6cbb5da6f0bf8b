"""The `fimlsp` command line as a user meets it: exit codes, output, and one-line errors."""

from __future__ import annotations

import subprocess
import sys

from fimlsp.cli import main


def test_demo_checks_middles_against_both_contexts(capsys):
    assert main(["demo", "--try", "ID", "--try", "RPAR"]) == 0
    out = capsys.readouterr().out
    assert "Args!2 -> ArgCont!3" in out
    lines = {line.split()[0]: line.split()[-1] for line in out.splitlines()[-2:]}
    assert lines == {"ID": "complete", "RPAR": "rejected"}


def test_demo_reports_contexts_that_cannot_connect(capsys):
    assert main(["demo", "--left", "ID LPAR", "--right", "LPAR"]) == 1
    assert "no middle can connect" in capsys.readouterr().out


def test_unknown_terminal_is_a_one_line_error():
    result = subprocess.run(
        [sys.executable, "-m", "fimlsp", "demo", "--left", "ID )"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "fimlsp demo: error: NFA label ')' is not a terminal of the grammar"
    assert "Traceback" not in result.stderr
