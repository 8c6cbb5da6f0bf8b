"""`fimlsp complete --project DIR`: the judges read the project's modules (issue 49, item 7)."""

from __future__ import annotations

import ast
import json

from fimlsp.cli import main
from fimlsp.syntax_trees import parsed

LEFT = "import sys\nfrom pkg.util import "
RIGHT = "\n\nprint(sys)\n"


def test_a_completion_imports_only_what_the_projects_module_defines(tmp_path, tiny_model_path, capsys):
    """No project marker: only `--project` says where `pkg` is found from `scripts/run.py`."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "util.py").write_text("def helper(x):\n    return x\n")
    (tmp_path / "scripts" / "run.py").write_text(LEFT + RIGHT)
    target = f"{tmp_path / 'scripts' / 'run.py'}:2:{len(LEFT.split(chr(10))[1]) + 1}"
    main(["complete", target, "--model", str(tiny_model_path), "--device", "cpu", "--names", "strict",
          "--max-tokens", "8", "--json", "--project", str(tmp_path)])
    answer = json.loads(capsys.readouterr().out)
    assert answer["shown"]  # the tiny model's first choice (`INIT`) is not in pkg.util: the judge made it write another
    tree = parsed(LEFT + answer["middle"] + RIGHT)
    assert {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            for alias in node.names} <= {"helper", "*"}
