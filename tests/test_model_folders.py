"""Model folders and model settings that must be refused with a clear reason: a folder with code of its own
(`auto_map`), which must never run; a file given as a folder; a `fim.json` that is not JSON; a device no model can
run on; a crafted config (a million layers, sizes the weights do not have, a list), pickled weights, a model
bigger than the memory; a name that is both a folder here and a hub id, and a relative path in the server's
settings. The CLI exits 2 with one line (1 means "no valid middle"); the server says why and keeps the model that
works."""

from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.rpc_client import RpcClient, document_params, position_params
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


def complete(*args: str, stdin: str = "", env: dict | None = None, cwd: Path | None = None,
             address_space: int | None = None) -> subprocess.CompletedProcess:
    """`fimlsp complete` on the README's fixture; with `address_space`, in a process that can map no more bytes."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run([sys.executable, "-m", "fimlsp", "complete", EXAMPLE, *args], input=stdin,
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}, cwd=cwd,
                          preexec_fn=limit if address_space else None)


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


@pytest.mark.slow
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


# ------------------------------------------------------------------------------------------- crafted model folders

# Address space for a `fimlsp complete` that refuses a model folder: what it takes (about 100 MB) many times over,
# and less than importing torch takes (640 MB with the CPU build), let alone building any of the crafted models
# (1.9 GB and more): the refusal comes before anything is built.
REFUSAL_ADDRESS_SPACE = 512 << 20
SMALL_PROCESS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # numpy's thread buffers stay small
SHIPPED_FILES = ("config.json", "fim.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                 "tokenizer_config.json")


def shipped_copy(folder: Path, config=lambda config: config) -> Path:
    """A copy of the shipped model's folder (what loading reads of it) whose config.json is `config` of its own."""
    from fimlsp.weights import default_model_path

    folder.mkdir(parents=True)
    for file in SHIPPED_FILES:
        shutil.copy(default_model_path() / file, folder / file)
    (folder / "config.json").write_text(json.dumps(config(json.loads((folder / "config.json").read_text()))))
    return folder


def complete_refused(folder: Path) -> subprocess.CompletedProcess:
    return complete("--model", str(folder), "--device", "cpu", env=SMALL_PROCESS,
                    address_space=REFUSAL_ADDRESS_SPACE)


CRAFTED = {  # config.json as crafted, and what the one line must say
    "a million layers": (lambda config: {**config, "n_layer": 1_000_000}, "n_layer = 1000000 is not an integer"),
    "40000 positions": (lambda config: {**config, "n_positions": 40_000},
                        "n_positions = 40000, but the weights' position embeddings have 512 rows"),
    "a list": (lambda config: [config], "config.json holds a JSON list, not an object"),
    "vocabulary 10^12": (lambda config: {**config, "vocab_size": 10 ** 12}, "vocab_size = 1000000000000"),
    "vocabulary 2^31": (lambda config: {**config, "vocab_size": 2 ** 31}, "vocab_size = 2147483648"),
    "vocabulary -5": (lambda config: {**config, "vocab_size": -5}, "vocab_size = -5 is not an integer from 1"),
    "vocabulary the weights lack": (lambda config: {**config, "vocab_size": 16384},
                                    "vocab_size = 16384, but the weights' token embeddings have 8192 rows"),
    "layers the weights lack": (lambda config: {**config, "n_layer": 8}, "n_layer = 8, but the weights hold 4"),
    "a width the weights lack": (lambda config: {**config, "n_embd": 384},
                                 "n_embd = 384, but the weights' token embeddings are 256 wide"),
    "a feed-forward width the weights lack": (lambda config: {**config, "n_inner": 3000},
                                              "n_inner = 3000 is the size of no dimension of the weights"),
    "layers as text": (lambda config: {**config, "n_layer": "4"}, "n_layer = '4' is not an integer"),
}


@pytest.mark.slow
@pytest.mark.parametrize("crafted", CRAFTED)
def test_cli_refuses_a_crafted_model_folder_in_one_line_before_building_it(crafted, tmp_path):
    edit, says = CRAFTED[crafted]
    folder = shipped_copy(tmp_path / "model", edit)
    assert_one_line_error(complete_refused(folder), f"model folder '{folder}'", says)


def test_cli_refuses_pickled_weights_without_unpickling_them(tmp_path):
    folder = shipped_copy(tmp_path / "model")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "unpickled"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Unpickled(str(marker))))
    process = complete("--model", str(folder), "--device", "cpu")
    assert not marker.exists(), "the pickle ran"
    assert_one_line_error(process, "pytorch_model.bin, a pickle", "loads only model.safetensors")


class Unpickled:
    """An object that, unpickled, writes a marker file: what a hostile pytorch_model.bin does with any code."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return Path.write_text, (Path(self.marker), "ran")


def test_cli_refuses_a_model_bigger_than_the_memory_available(tmp_path):
    """A model whose token embeddings alone take twice the memory this machine has available: a sparse weights
    file (it takes no disk) whose header says so, with a config that agrees."""
    from fimlsp.model.folder_checks import memory_available

    vocabulary = 1 << 22
    width = 2 * memory_available() // (vocabulary * 2) + 1
    folder = shipped_copy(tmp_path / "model", lambda config: {**config, "vocab_size": vocabulary, "n_embd": width})
    weights = folder / "model.safetensors"
    with open(weights, "rb") as stream:
        header = json.loads(stream.read(struct.unpack("<Q", stream.read(8))[0]))
    header["transformer.wte.weight"]["shape"] = [vocabulary, width]
    offset = 0
    for name in sorted(key for key in header if key != "__metadata__"):
        begin, end = header[name]["data_offsets"]
        size = vocabulary * width * 2 if name == "transformer.wte.weight" else end - begin
        header[name]["data_offsets"] = [offset, offset + size]
        offset += size
    encoded = json.dumps(header).encode()
    with open(weights, "wb") as stream:
        stream.write(struct.pack("<Q", len(encoded)) + encoded)
        stream.truncate(8 + len(encoded) + offset)
    process = complete_refused(folder)
    assert_one_line_error(process, "the model needs about", "GiB of memory to load and this machine has")


def test_server_reports_a_crafted_model_folder_in_one_line_and_stays_up(tmp_path):
    folder = shipped_copy(tmp_path / "model", CRAFTED["a million layers"][0])
    with RpcClient("--model", str(folder), "--device", "cpu") as client:
        # as small as the CLI's refusal, with room for the server's own imports: building the model cannot fit
        resource.prlimit(client.process.pid, resource.RLIMIT_AS, (2 * REFUSAL_ADDRESS_SPACE,) * 2)
        client.initialize()
        status = client.wait_for_model()
        assert not status["ready"] and "\n" not in status["error"], status
        assert "n_layer = 1000000 is not an integer from 1 to 1024" in status["error"], status
        client.notify("textDocument/didOpen", document_params(URI, SOURCE))
        client.response(client.request("textDocument/completion", position_params(URI, 13, 8)))
        assert "no model" in client.request_statuses()[-1]["message"]
        assert shut_down(client) == 0


# -------------------------------------------------------------------------------------- folders and hub ids

HUB_LOOKALIKE = "bigcode/tiny_starcoder"


@pytest.fixture
def hub_listener():
    """A hub endpoint on 127.0.0.1 that counts the connections made to it and answers none."""
    connections = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0.2)
        stop = threading.Event()

        def accept() -> None:
            while not stop.is_set():
                try:
                    connections.append(listener.accept()[0])
                except OSError:
                    continue

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", connections
        stop.set()
        thread.join()
        for connection in connections:
            connection.close()


@pytest.mark.slow
def test_cli_refuses_a_name_that_is_both_a_folder_here_and_a_hub_id(tmp_path, hub_listener):
    endpoint, connections = hub_listener
    shipped_copy(tmp_path / HUB_LOOKALIKE)
    hub = {"HF_ENDPOINT": endpoint, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "0"}
    process = complete("--model", HUB_LOOKALIKE, "--device", "cpu", env=hub, cwd=tmp_path)
    assert_one_line_error(process, f"write ./{HUB_LOOKALIKE} for the folder", f"hf:{HUB_LOOKALIKE} for the model on "
                          "the hub")
    assert connections == [], "the hub was asked before the name was refused"

    folder = complete("--model", f"./{HUB_LOOKALIKE}", "--device", "cpu", "--max-tokens", "4", "--json", env=hub,
                      cwd=tmp_path)
    assert folder.returncode in (0, 1), folder.stderr
    assert json.loads(folder.stdout)["model"] == f"./{HUB_LOOKALIKE}"
    hub_model = complete("--model", f"hf:{HUB_LOOKALIKE}", env={**hub, "HF_HUB_OFFLINE": "1"}, cwd=tmp_path)
    assert_one_line_error(hub_model, f"model '{HUB_LOOKALIKE}' is not in the local cache")
    assert connections == []


def test_the_server_reads_no_model_from_its_working_directory(tmp_path, monkeypatch, hub_listener):
    """An editor starts the server in the workspace folder, whose files a repository chooses: a hub id in the
    settings is the hub's model and a relative path is refused, never a folder of the workspace."""
    endpoint, connections = hub_listener
    shipped_copy(tmp_path / HUB_LOOKALIKE)
    shipped_copy(tmp_path / "model")
    monkeypatch.chdir(tmp_path)
    for key, value in {"HF_ENDPOINT": endpoint, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, value)
    with RpcClient("--device", "cpu") as client:
        client.initialize({"model": HUB_LOOKALIKE})
        status = client.wait_for_model()
        assert not status["ready"], status
        assert f"model '{HUB_LOOKALIKE}' is not in the local cache" in status["error"], status

        for relative in ("model", "./model", f"./{HUB_LOOKALIKE}", "../model", "model/../model"):
            client.notify("workspace/didChangeConfiguration", {"settings": {"fimlsp": {"model": relative}}})
            warning = client.wait_for(lambda message: message.get("method") == "window/logMessage"
                                      and f"{relative!r} ignored" in message["params"]["message"])
            assert "a relative path would be read from the server's working directory" in warning["params"]["message"]
        assert not client.wait_for_model()["ready"]
        assert shut_down(client) == 0
    assert connections == []


@pytest.mark.parametrize("value, taken", [
    ("/models/fim", "/models/fim"), ("~/models/fim", "~/models/fim"), ("~/fim.gguf", "~/fim.gguf"),
    ("bigcode/tiny_starcoder", "hf:bigcode/tiny_starcoder"), ("hf:gpt2", "hf:gpt2"),
    ("fim", None), ("./fim", None), ("models/fim/v2", None), ("fim.gguf", None), ("models/fim.gguf", None),
    ("../fim", None),
])
def test_the_servers_model_setting_is_an_absolute_path_or_a_hub_id(value, taken):
    from fimlsp.server import config

    settings, problems = config.update(config.Settings(), {"model": value})
    assert settings.model == taken
    assert bool(problems) == (taken is None), problems
