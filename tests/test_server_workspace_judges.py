"""End to end: `fimlsp serve` hands the judges the document's path and the workspace root of `initialize`
(`workspaceFolders`, else `rootUri`), with the tiny random model: what a suggestion imports from the project is
there (issue 49, item 7)."""

from __future__ import annotations

import ast
import contextlib
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities, make_test_lsp_client

from tests.test_server import inline_params, open_document, options_for, stop, wait_for_model

from fimlsp.syntax_trees import parsed

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

LEFT = "import sys\nfrom pkg.util import "
RIGHT = "\n\nprint(sys)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """No project marker: only the workspace root says where `pkg` is found from `scripts/run.py`."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text("def helper(x):\n    return x\n")
    (root / "scripts" / "run.py").write_text(LEFT + "helper" + RIGHT)
    return root


@contextlib.asynccontextmanager
async def serve_workspace(options: dict, root: Path, folders: bool):
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "fimlsp", "serve")
    graceful = False
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), initialization_options=options,
            root_uri=None if folders else root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")] if folders else None))
        await wait_for_model(client)
        yield client
        await client.shutdown_session()
        graceful = True
    finally:
        await stop(client, graceful)


def imported(middle: str) -> set[str]:
    """The names the completed line imports from pkg.util."""
    tree = parsed(LEFT + middle + RIGHT)
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.parametrize("folders", [True, False], ids=["workspaceFolders", "rootUri"])
async def test_a_suggestion_imports_only_what_the_workspace_module_defines(tiny_model_path, project, folders):
    uri = (project / "scripts" / "run.py").as_uri()
    options = options_for(tiny_model_path, names="strict", maxTokens=8, singleLine="never", context="off")
    async with serve_workspace(options, project, folders) as client:
        open_document(client, LEFT + RIGHT, uri)
        answer = await client.text_document_inline_completion_async(inline_params(1, len(LEFT.split("\n")[1]), uri))
    middles = [item.insert_text for item in answer.items]
    assert middles  # the random model's first choice (`INIT`) is not in pkg.util: the judge made it write another
    assert all(imported(middle) <= {"helper", "*"} for middle in middles)
