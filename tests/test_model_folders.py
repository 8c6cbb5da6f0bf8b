"""Model folders and model settings that must be refused with a clear reason: a folder with code of its own
(`auto_map`), which must never run; a file given as a folder; a `fim.json` that is not JSON; a device no model can
run on. The CLI exits 2 with one line (1 means "no valid middle"); the server says why and keeps the model that
works."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rpc_client import RpcClient, document_params, position_params
from tests.test_protocol import URI, shut_down
from tests.test_server import SOURCE

EXAMPLE = str(Path(__file__).resolve().parent.parent / "fixtures" / "example.py") + ":10:12"


@pytest.fixture
def folder_with_code(tiny_model_path, tmp_path) -> tuple[Path, Path]:
    """A copy of the tiny model whose config and tokenizer config map classes to its own `evil.py`, which writes
    a marker file when imported; (the folder, the marker)."""
    folder = tmp_path / "model-with-code"
    shutil.copytree(tiny_model_path, folder)
    marker = tmp_path / "code-ran"
    (folder / "evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM, PreTrainedTokenizerFast\n"
        "class EvilConfig(GPTBigCodeConfig):\n    model_type = 'evil_bigcode'\n"
        "class EvilModel(GPTBigCodeForCausalLM):\n    config_class = EvilConfig\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n")
    for file, code in (("config.json", {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"}),
                       ("tokenizer_config.json", {"AutoTokenizer": [None, "evil.EvilTokenizer"]})):
        settings = json.loads((folder / file).read_text())
        settings = {**settings, "auto_map": code}
        if file == "config.json":  # an architecture transformers lacks: only the folder's code could load it
            settings["model_type"] = "evil_bigcode"
        (folder / file).write_text(json.dumps(settings))
    return folder, marker


def complete(*args: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fimlsp", "complete", EXAMPLE, *args], input=stdin,
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def assert_one_line_error(process: subprocess.CompletedProcess, *words: str) -> None:
    assert process.returncode == 2, (process.returncode, process.stderr)
    assert process.stdout == ""
    line = process.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, process.stderr
    assert line.startswith("fimlsp complete: error: ")
    for word in words:
        assert word in line, line


def test_cli_refuses_a_model_folder_with_code_and_runs_none_of_it(folder_with_code, tmp_path):
    folder, marker = folder_with_code
    process = complete("--model", str(folder), "--device", "cpu", stdin="y\ny\ny\n",
                       env={"HF_MODULES_CACHE": str(tmp_path / "modules")})
    assert not marker.exists(), "the model folder's code ran"
    assert_one_line_error(process, "code of its own", "config.json maps AutoConfig, AutoModelForCausalLM")


def test_server_refuses_a_model_folder_with_code_and_says_why(folder_with_code, tmp_path):
    folder, marker = folder_with_code
    with RpcClient("--model", str(folder), "--device", "cpu") as client:
        client.initialize()
        status = client.wait_for_model()
        assert not status["ready"] and "code of its own" in status["error"], status
        shown = client.wait_for(lambda message: message.get("method") == "window/showMessage")
        assert "code of its own" in shown["params"]["message"]
        assert shut_down(client) == 0
    assert not marker.exists(), "the model folder's code ran"


@pytest.mark.parametrize("device", ["bogus", "meta"])
def test_cli_refuses_a_device_no_model_runs_on(tiny_model_path, device):
    process = complete("--model", str(tiny_model_path), "--device", device)
    assert_one_line_error(process, f"device {device!r}", "cpu, cuda, cuda:N or mps")


def test_cli_refuses_a_model_whose_fim_json_is_not_json(tiny_model_path, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_path, folder)
    (folder / "fim.json").write_text("{order: psm")
    assert_one_line_error(complete("--model", str(folder), "--device", "cpu"), "fim.json cannot be read as JSON")


def test_cli_says_a_file_is_not_a_model_folder(tmp_path):
    file = tmp_path / "passwd"
    file.write_text("root:x:0:0:root:/root:/bin/bash\n")
    assert_one_line_error(complete("--model", str(file)), "is a file, not a model folder")


def test_server_keeps_its_model_when_a_new_model_or_device_setting_is_refused(tiny_model_path, tmp_path):
    file = tmp_path / "passwd"
    file.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with RpcClient("--log-level", "info") as client:
        client.initialize({"model": str(tiny_model_path), "device": "cpu", "timeBudget": 20, "maxTokens": 8})
        assert client.wait_for_model()["ready"]
        client.notify("textDocument/didOpen", document_params(URI, SOURCE))

        client.notify("workspace/didChangeConfiguration", {"settings": {"fimlsp": {"model": str(file)}}})
        status = client.wait_for_model()
        assert status["ready"] and str(tiny_model_path) in status["model"], status
        assert "is a file, not a model folder" in status["error"] and "still serving" in status["error"]
        client.response(client.request("textDocument/completion", position_params(URI, 13, 8)))
        assert "no model" not in client.request_statuses()[-1]["message"]

        client.notify("workspace/didChangeConfiguration", {"settings": {"fimlsp": {"device": "meta"}}})
        warning = client.wait_for(lambda message: message.get("method") == "window/logMessage"
                                  and "'device'" in message["params"]["message"])
        assert "cpu, cuda, cuda:N or mps" in warning["params"]["message"]
        client.response(client.request("textDocument/completion", position_params(URI, 5, 18)))
        message = client.request_statuses()[-1]["message"]
        assert "no model" not in message and "failed" not in message, message
        assert shut_down(client) == 0
