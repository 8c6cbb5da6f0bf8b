"""Loading a model by hub id without a network: the local cache, or a one-line error at once, never the
download's minute of retries; a hub model not in the cache is downloaded from a hub on 127.0.0.1, without pickled
weights, and checked like a model folder before anything of it is built."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fimlsp.model.hub import HUB_TIMEOUT
from tests.test_model_folders import CRAFTED, REFUSAL_ADDRESS_SPACE, SMALL_PROCESS, shipped_copy

EXAMPLE = str(Path(__file__).resolve().parent.parent / "fixtures" / "example.py") + ":10:12"


def complete_with_hub(hub: str, cache: Path, *args: str, address_space: int | None = None, hang: float = 120,
                      **environment: str) -> subprocess.CompletedProcess:
    """`fimlsp complete` on the README's fixture with the hub at `hub` and the hub cache in `cache`, failing the
    test (`subprocess.TimeoutExpired`) if it is still running after `hang` seconds: a hang guard, far above what
    it takes. With `address_space`, in a process that can map no more bytes."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_ENDPOINT=hub, HF_HUB_CACHE=str(cache), HF_HUB_DISABLE_TELEMETRY="1", **environment)
    return subprocess.run([sys.executable, "-m", "fimlsp", "complete", EXAMPLE, *args], capture_output=True,
                          text=True, env=env, timeout=hang, preexec_fn=limit if address_space else None)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def assert_names_the_ways_out(process: subprocess.CompletedProcess, repo_id: str, cache: Path) -> None:
    assert process.returncode == 2 and process.stdout == ""
    line = process.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, process.stderr
    assert line.startswith(f"fimlsp complete: error: model '{repo_id}' is not in the local cache")
    assert "give a model folder instead" in line and str(cache) in line and f"hf download {repo_id}" in line


def test_a_hub_id_fails_at_once_when_the_hub_refuses_and_the_cache_lacks_it(tmp_path):
    # without the probe: 23 s of retries to a refused port, 48 s with no DNS
    process = complete_with_hub(f"http://127.0.0.1:{closed_port()}", tmp_path / "hub", "--model", "someone/fim-model",
                                hang=20)
    assert_names_the_ways_out(process, "someone/fim-model", tmp_path / "hub")
    assert "cannot be reached" in process.stderr


@pytest.mark.slow
def test_a_silent_hub_is_given_up_after_the_hub_timeout(tmp_path):
    with socket.socket() as silent:  # accepts connections into its backlog and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        process = complete_with_hub(f"http://127.0.0.1:{port}", tmp_path / "hub", "--model", "someone/fim-model",
                                    hang=HUB_TIMEOUT + 30)
    assert_names_the_ways_out(process, "someone/fim-model", tmp_path / "hub")


def test_offline_mode_fails_without_trying_the_hub(tmp_path):
    process = complete_with_hub("http://192.0.2.1", tmp_path / "hub", "--model", "someone/fim-model", hang=20,
                                HF_HUB_OFFLINE="1")
    assert_names_the_ways_out(process, "someone/fim-model", tmp_path / "hub")
    assert "HF_HUB_OFFLINE is set" in process.stderr


@pytest.mark.slow
def test_a_hub_id_in_the_cache_loads_without_the_hub(tmp_path, tiny_model_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    repository = tmp_path / "hub" / "models--someone--tiny-fim"
    shutil.copytree(tiny_model_path, repository / "snapshots" / commit)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(commit)
    process = complete_with_hub(f"http://127.0.0.1:{closed_port()}", tmp_path / "hub",
                                   "--model", "someone/tiny-fim", "--max-tokens", "4", "--json")
    assert process.returncode in (0, 1), process.stderr
    assert json.loads(process.stdout)["model"] == "someone/tiny-fim"


def test_a_model_folder_names_the_prompt_order_it_was_trained_for(tmp_path, tiny_model_path):
    from fimlsp.model import load_model
    from fimlsp.model.formats import write_fim_settings

    folder = tmp_path / "spm-model"
    shutil.copytree(tiny_model_path, folder)
    assert load_model(str(folder), "cpu").order == "psm"  # no fim.json: prefix-suffix-middle
    write_fim_settings(folder, "fimlsp", "spm")
    model = load_model(str(folder), "cpu")
    assert model.order == "spm" and load_model(str(folder), "cpu", order="psm").order == "psm"
    prompt = model.prompt("x = comp", "\nprint(x)\n", reserve=16)
    tokens = model.tokenizer.convert_ids_to_tokens(prompt)
    assert tokens[:2] == ["<fim_prefix>", "<fim_suffix>"] and "<fim_middle>" in tokens
    assert model.tokenizer.decode(prompt[tokens.index("<fim_middle>") + 1:]) == "x = comp"  # the middle goes on from the left


HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"


@contextmanager
def loopback_hub(repo_id: str, folder: Path) -> Iterator[tuple[str, list[str]]]:
    """A hub on 127.0.0.1 that serves the files of `folder` as the model `repo_id`, as huggingface_hub asks for
    them (the model's info, its file tree, each file); its address, and the paths of the files it sent."""
    files = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    sent: list[str] = []

    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def answer(self, body: bytes, head: bool, **headers: str) -> None:
            self.send_response(200)
            for name, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def serve(self, head: bool) -> None:
            path = self.path.partition("?")[0]
            resolve = f"/{repo_id}/resolve/{HUB_COMMIT}/"
            if path.startswith(f"/api/models/{repo_id}/tree/"):
                tree = [{"type": "file", "path": name, "size": len(body), "oid": hashlib.sha1(body).hexdigest()}
                        for name, body in files.items()]
                return self.answer(json.dumps(tree).encode(), head)
            if path.startswith(f"/api/models/{repo_id}"):
                info = {"id": repo_id, "sha": HUB_COMMIT, "siblings": [{"rfilename": name} for name in files]}
                return self.answer(json.dumps(info).encode(), head)
            name = path[len(resolve):] if path.startswith(resolve) else None
            if name in files:
                if not head:
                    sent.append(name)
                return self.answer(files[name], head, **{"X-Repo-Commit": HUB_COMMIT,
                                                         "ETag": f'"{hashlib.sha1(files[name]).hexdigest()}"'})
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self.serve(head=False)

        def do_HEAD(self) -> None:
            self.serve(head=True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", sent
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.slow
def test_a_hub_model_is_downloaded_without_pickles_and_checked_before_it_is_built(tmp_path):
    crafted = shipped_copy(tmp_path / "crafted", CRAFTED["a million layers"][0])
    (crafted / "pytorch_model.bin").write_bytes(b"not fetched")
    with loopback_hub("someone/huge-fim", crafted) as (hub, sent):
        process = complete_with_hub(hub, tmp_path / "hub", "--model", "someone/huge-fim", "--device", "cpu",
                                       address_space=REFUSAL_ADDRESS_SPACE, **SMALL_PROCESS)
    assert process.returncode == 2 and process.stdout == "", process.stderr
    line = process.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, process.stderr
    assert line == ("fimlsp complete: error: model 'someone/huge-fim': config.json: n_layer = 1000000 is not an "
                    "integer from 1 to 1024")
    assert "config.json" in sent and "model.safetensors" in sent and "pytorch_model.bin" not in sent

    with loopback_hub("someone/fim", shipped_copy(tmp_path / "shipped")) as (hub, sent):
        process = complete_with_hub(hub, tmp_path / "hub", "--model", "someone/fim", "--device", "cpu",
                                       "--max-tokens", "4", "--json")
    assert process.returncode in (0, 1) and process.stderr.count("\n") <= 1, process.stderr
    assert json.loads(process.stdout)["model"] == "someone/fim"
