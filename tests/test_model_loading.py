"""Loading a model by hub id without a network: the local cache, or a one-line error at once, never the
download's minute of retries."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from fimlsp.model.loading import HUB_TIMEOUT

EXAMPLE = str(Path(__file__).resolve().parent.parent / "fixtures" / "example.py") + ":10:12"


def complete_with_hub(hub: str, cache: Path, *args: str,
                      **environment: str) -> tuple[subprocess.CompletedProcess, float]:
    """`fimlsp complete` on the README's fixture with the hub at `hub` and the hub cache in `cache`; and its time."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_ENDPOINT=hub, HF_HUB_CACHE=str(cache), HF_HUB_DISABLE_TELEMETRY="1", **environment)
    started = time.monotonic()
    process = subprocess.run([sys.executable, "-m", "fimlsp", "complete", EXAMPLE, *args], capture_output=True,
                             text=True, env=env, timeout=120)
    return process, time.monotonic() - started


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
    process, seconds = complete_with_hub(f"http://127.0.0.1:{closed_port()}", tmp_path / "hub",
                                         "--model", "someone/fim-model")
    assert_names_the_ways_out(process, "someone/fim-model", tmp_path / "hub")
    assert "cannot be reached" in process.stderr
    assert seconds < 5, seconds  # without the probe: 23 s of retries to a refused port, 48 s with no DNS


def test_a_silent_hub_is_given_up_after_the_hub_timeout(tmp_path):
    with socket.socket() as silent:  # accepts connections into its backlog and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        process, seconds = complete_with_hub(f"http://127.0.0.1:{port}", tmp_path / "hub",
                                             "--model", "someone/fim-model")
    assert_names_the_ways_out(process, "someone/fim-model", tmp_path / "hub")
    assert seconds < HUB_TIMEOUT + 5, seconds


def test_offline_mode_fails_without_trying_the_hub(tmp_path):
    process, seconds = complete_with_hub("http://192.0.2.1", tmp_path / "hub", "--model", "someone/fim-model",
                                         HF_HUB_OFFLINE="1")
    assert_names_the_ways_out(process, "someone/fim-model", tmp_path / "hub")
    assert "HF_HUB_OFFLINE is set" in process.stderr and seconds < 5


def test_a_hub_id_in_the_cache_loads_without_the_hub(tmp_path, tiny_model_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    repository = tmp_path / "hub" / "models--someone--tiny-fim"
    shutil.copytree(tiny_model_path, repository / "snapshots" / commit)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(commit)
    process, _ = complete_with_hub(f"http://127.0.0.1:{closed_port()}", tmp_path / "hub",
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
