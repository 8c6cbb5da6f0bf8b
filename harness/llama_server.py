"""Real llama.cpp servers serving the shipped model as a GGUF file on 127.0.0.1, for the tests and the benchmark of
the server backend (`fimlsp.model.remote`). Two engines: the Python package's
`python -m llama_cpp.server` (OpenAI-compatible API only) and llama.cpp's own `llama-server` (its `/completion` API
too), which `tests/install-llama-server.sh` builds into tests/.llama-server/."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

STARTUP_SECONDS = 120  # loading the model and importing the server's web stack, on a busy machine
PYTHON_ENGINE, LLAMA_CPP_ENGINE = "llama_cpp.server", "llama-server"
TESTS = Path(__file__).resolve().parent.parent / "tests"
LLAMA_SERVER = TESTS / ".llama-server" / "bin" / "llama-server"
INSTALL_LLAMA_SERVER = TESTS / "install-llama-server.sh"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_command(engine: str, gguf: Path, port: int) -> list[str]:
    """One thread, a 2,048-token context and (llama-server) one slot, which then has the whole context."""
    if engine == LLAMA_CPP_ENGINE:
        return [str(LLAMA_SERVER), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
                "--ctx-size", "2048", "--threads", "1", "--parallel", "1"]
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "2048", "--n_threads", "1"]


@contextlib.contextmanager
def llama_server(folder: Path, engine: str = PYTHON_ENGINE, arguments: Sequence[str] = (),
                 model: Path | None = None) -> Iterator[str]:
    """The URL of a llama.cpp server of `engine` serving the model folder `model` (default: the shipped model),
    exported into `folder`, with the server's own `arguments` after fimlsp's; stopped on leaving."""
    from fimlsp.model.gguf_export import export_gguf
    from fimlsp.weights import default_model_path

    gguf = export_gguf(model or default_model_path(), folder / "default.gguf")
    port = free_port()
    log = open(folder / "llama-server.log", "wb")
    process = subprocess.Popen([*server_command(engine, gguf, port), *arguments], stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{engine} did not start: {(folder / 'llama-server.log').read_text()}")
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
