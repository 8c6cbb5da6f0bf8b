"""The `fimlsp` command line as a user meets it: exit codes, output, and one-line errors."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fimlsp.cli import CLOSED_PIPE, main


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


EXAMPLE = str(Path(__file__).resolve().parent.parent / "fixtures" / "example.py") + ":10:12"


def test_complete_help_names_the_exit_statuses_and_the_context_window(capsys):
    with pytest.raises(SystemExit):
        main(["complete", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 a middle was printed" in text
    assert "1 no valid middle was found, 2 bad input" in text
    assert "share the model's context window" in text and "max_tokens is the limit that applied" in text


def test_json_gives_the_token_limit_that_the_context_window_left(tmp_path, capsys):
    long_file = tmp_path / "long.py"
    long_file.write_text("".join(f"value_{index} = {index} * 2\n" for index in range(400)) + "total = \n")
    assert main(["complete", f"{long_file}:401:9", "--json", "--max-tokens", "500", "--time-budget", "20"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 128 <= result["max_tokens"] < 500  # the shipped model's 512-token window, shared with the prompt
    assert result["tokens"] <= result["max_tokens"]
    assert main(["complete", EXAMPLE, "--json", "--max-tokens", "5"]) == 0
    assert json.loads(capsys.readouterr().out)["max_tokens"] == 5


TIMINGS = ("load", "setup", "model", "constraint", "searches", "total")


def test_json_and_verbose_give_where_the_seconds_went(capsys):
    """`timings`: the model's load, the constraint's setup, the model, the constraint while decoding (its finish
    searches within it) and the total; the parts never add up to more than the total. --verbose prints the same
    on stderr."""
    assert main(["complete", EXAMPLE, "--json", "--verbose", "--max-tokens", "8"]) == 0
    captured = capsys.readouterr()
    timings = json.loads(captured.out)["timings"]
    assert tuple(timings) == TIMINGS
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in timings.values()), timings
    assert timings["model"] > 0 and timings["setup"] > 0
    assert timings["searches"] <= timings["constraint"]
    parts = timings["load"] + timings["setup"] + timings["model"] + timings["constraint"]
    assert parts <= timings["total"], timings
    assert captured.err == "fimlsp complete: timings: " + ", ".join(
        f"{name} {seconds:.3f} s" for name, seconds in timings.items()) + "\n"


def test_piped_output_is_exactly_the_middle_and_a_terminal_gets_a_line_end(capsys):
    assert main(["complete", EXAMPLE, "--max-tokens", "8", "--json"]) == 0
    middle = json.loads(capsys.readouterr().out)["middle"]
    assert middle and not middle.endswith("\n")
    assert main(["complete", EXAMPLE, "--max-tokens", "8"]) == 0
    assert capsys.readouterr().out == middle

    controller, terminal = pty.openpty()
    try:
        process = subprocess.run([sys.executable, "-m", "fimlsp", "complete", EXAMPLE, "--max-tokens", "8"],
                                 stdout=terminal, stderr=subprocess.PIPE, timeout=120)
        os.close(terminal)
        shown = _read_all(controller).replace(b"\r\n", b"\n").decode()
    finally:
        os.close(controller)
    assert process.returncode == 0, process.stderr
    assert shown == middle + "\n"


def test_a_closed_pipe_ends_quietly():
    reader, writer = os.pipe()
    os.close(reader)  # as `| head` does once it has read enough
    try:
        process = subprocess.run([sys.executable, "-m", "fimlsp", "complete", EXAMPLE, "--max-tokens", "8"],
                                 stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writer)
    assert process.stderr == ""
    assert process.returncode == CLOSED_PIPE


def _read_all(descriptor: int) -> bytes:
    """Everything written to a pseudo-terminal whose other side is closed (Linux then reports EIO)."""
    chunks = []
    while True:
        try:
            chunk = os.read(descriptor, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_refused_context_says_where_on_stderr(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("import os\nx = 1 2\ny = 3\n")
    assert main(["complete", f"{broken}:2:8", "--max-tokens", "4"]) == 1  # no middle parses: none is printed
    captured = capsys.readouterr()
    assert not captured.out
    error = captured.err
    assert error.count("\n") == 1 and error.startswith("fimlsp complete: no valid middle: no middle can make")
    assert ("CPython refuses line 2, column 7: invalid syntax); the middle generated unconstrained does not compile"
            in error)


def test_names_strict_says_when_a_file_turns_the_name_judge_off(tmp_path, capsys):
    source = tmp_path / "star.py"
    source.write_text("from _socket import *\n\nresult = \n")  # a compiled module: its names are not read
    assert main(["complete", f"{source}:3:10", "--json", "--names", "strict", "--max-tokens", "8"]) in (0, 1)
    assert "names not judged: the star import of _socket" in json.loads(capsys.readouterr().out)["reason"]


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# 1-based positions in fixtures/example.py where the shipped model writes a middle: after `return `, at the start
# of the line before `def describe`, and after the last `return `
EDITOR_POSITIONS = [(10, 12), (13, 1), (14, 12)]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_complete_gives_the_middle_that_a_default_server_suggests(capsys):
    """`fimlsp complete`'s defaults are the editors' (the server's `Settings`): at each position it prints what a
    `fimlsp serve` with its default settings suggests when asked, given a time budget that the shipped model never
    runs out of (the one default that differs). Before, the CLI judged no names: at 13:1 it wrote a decorator
    that nothing in the file defines."""
    from lsprotocol import types

    from fimlsp.server.config import Settings
    from tests.test_server import inline_params, open_document, serve

    budget = Settings().time_budget
    example = FIXTURES / "example.py"
    text = example.read_text()
    printed = []
    for line, column in EDITOR_POSITIONS:
        assert main(["complete", f"{example}:{line}:{column}", "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["differs_from_editors"] == {"time_budget": {"here": None, "editors": budget}}
        printed.append(result["middle"])
    assert main(["complete", f"{example}:10:12", "--json", "--names", "off", "--max-tokens", "500"]) == 0
    assert json.loads(capsys.readouterr().out)["differs_from_editors"] == {
        "time_budget": {"here": None, "editors": budget}, "names": {"here": "off", "editors": "strict"},
        "max_tokens": {"here": 500, "editors": 128}}
    uri = example.as_uri()
    async with serve({"fimlsp": {"timeBudget": 60}}) as client:
        open_document(client, text, uri)
        suggested = []
        for line, column in EDITOR_POSITIONS:
            inline = await client.text_document_inline_completion_async(inline_params(line - 1, column - 1, uri))
            suggested.append(inline.items[0].insert_text if inline.items else None)
            assert inline.items[0].range.start == types.Position(line=line - 1, character=column - 1)
    assert suggested == printed


@pytest.mark.slow
def test_a_middle_that_goes_on_a_list_writes_commas_as_the_file_does(tmp_path, capsys):
    """The shipped model's parameters for `copy(source` were written `source,shutil,target` (the finish that binds
    the names the body loads): in a file that writes `, `, so does the middle, whether the model wrote the list or a
    finish did. (A file that writes `a,b` keeps its style: `tests/test_python_finish.py`.) The finish invents
    parameters, which the editors do not show: `--invented-finish` asks for it."""
    source = tmp_path / "copying.py"
    text = "import os, sys\n\n\ndef copy(source):\n    shutil.copy(source, target)\n"
    source.write_text(text)
    assert main(["complete", f"{source}:4:16", "--invented-finish"]) == 0
    middle = capsys.readouterr().out
    assert ", " in middle and re.search(r",(?! )", middle) is None, middle
    assert {"shutil", "target"} <= set(re.findall(r"\w+", middle)), middle  # it binds what the body loads
    cursor = text.index("source)") + len("source")
    compile(text[:cursor] + middle + text[cursor:], "copying.py", "exec")


# `fimlsp` where the `torch` extra is not installed: find_spec finds neither module and importing one fails.
WITHOUT_TORCH = """
import importlib.util, sys
hidden = ("torch", "transformers")
find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *rest: None if name.split(".")[0] in hidden else find_spec(name, *rest)
sys.modules.update(dict.fromkeys(hidden))
from fimlsp.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_shipped_model_needs_no_torch_and_a_model_folder_says_how_to_get_it():
    from fimlsp.weights import default_model_path

    def without_torch(*args):
        return subprocess.run([sys.executable, "-c", WITHOUT_TORCH, *args], capture_output=True, text=True)

    shipped = without_torch("complete", EXAMPLE)
    assert shipped.returncode == 0 and shipped.stdout.strip(), shipped.stderr
    folder = without_torch("complete", EXAMPLE, "--model", str(default_model_path()))
    assert folder.returncode == 2 and "Traceback" not in folder.stderr, folder.stderr
    assert folder.stderr.strip().endswith("pip install 'fimlsp[torch]' (a .gguf file and the shipped model need "
                                          "neither)"), folder.stderr
