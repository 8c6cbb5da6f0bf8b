"""`fimlsp serve` answers `initialize` before the decoder, the grammar and the engines load (issue 44, step 3).

They load once, in the model's worker thread (`fimlsp.server.worker.Worker.load` and its warm-up), after the answer:
the package `__init__` files of `fimlsp.model` and `fimlsp.decoding` load their names on first use, and the server's
own modules import only the light ones (`fimlsp.decoding.options`, `fimlsp.model.formats`). What a process imported
is read from Python's `-X importtime` lines on its stderr (`PYTHONPROFILEIMPORTTIME`): counted, not timed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.rpc_client import RpcConnection

# What the first completion needs and `initialize` does not: the decoder, the grammar's recognizer, the engines'
# interface and numpy under it, and llama.cpp.
DEFERRED = ("fimlsp.decoding.attempts", "fimlsp.python.quotient", "earley", "fimlsp.model.backend", "numpy",
            "llama_cpp")


def imported(stderr: str) -> set[str]:
    """The modules named by `-X importtime`'s lines (`import time: self | cumulative | name`)."""
    return {line.rpartition("|")[2].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_what_the_server_imports_before_it_reads_its_input_leaves_the_decoder_and_the_engines_out():
    """The modules `fimlsp serve` imports and the server it builds before its first read: none of them loads the
    decoder, the grammar, numpy or an engine."""
    script = ("import sys\n"
              "from fimlsp.commands import serve\n"
              "from fimlsp.server.config import Settings\n"
              "from fimlsp.server.server import build_server\n"
              "from fimlsp.server.transport import serve_stdio\n"
              "build_server(Settings())\n"
              f"print(sorted(name for name in {DEFERRED!r} if name in sys.modules))\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "[]", ran.stdout


@pytest.mark.slow  # a whole `fimlsp serve` session; the test above keeps its imports in a smaller form
def test_a_server_whose_model_fails_to_load_never_imports_the_decoder_or_the_grammar(tmp_path):
    """`initialize` is answered and the session runs to its end without the decoder or the grammar: with a model
    that cannot load, nothing but `initialize` and the failed load runs, so `initialize` needs neither."""
    log = tmp_path / "stderr"
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "fimlsp", "serve"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=stderr,
                                   env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    try:
        client = RpcConnection(process.stdin, process.stdout)
        answer = client.initialize({"model": str(tmp_path / "no-such-model.gguf")})
        assert "inlineCompletionProvider" in answer["result"]["capabilities"], answer
        status = client.wait_for_model()
        assert not status["ready"] and "no-such-model" in status["error"], status
        client.response(client.request("shutdown"))
        client.notify("exit")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
    modules = imported(log.read_text())
    assert "lsprotocol.types" in modules, log.read_text()[-2000:]  # the lines were written
    loaded = sorted(name for name in ("fimlsp.decoding.attempts", "fimlsp.python.quotient", "earley")
                    if name in modules)
    assert loaded == [], loaded
