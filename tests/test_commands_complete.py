"""`fimlsp complete`: what it prints of a decoding (the middle, what was checked, alternatives, JSON) and its
one-line errors, against the tiny model and the shipped one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fimlsp.lines import LINE_BREAK
from fimlsp.python.syntax import parses
from tests.decoding_fixtures import BROKEN_LEFT, BROKEN_RIGHT, GREET_LEFT, GREET_RIGHT


@pytest.mark.slow
def test_cli_says_what_was_checked(tiny_model_path, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN_LEFT + BROKEN_RIGHT)
    region = run_cli("complete", f"{broken}:4:16", "--model", str(tiny_model_path), "--max-tokens", "16")
    assert region.returncode == 0 and "checked lines 3-5 only" in region.stderr, region.stderr
    assert parses("def f(a):\n    return a + " + region.stdout + "\n\n")
    hopeless = tmp_path / "hopeless.py"
    hopeless.write_text("def f():\n    return (\n        1,,\n    )\n")
    unchecked = run_cli("complete", f"{hopeless}:2:13", "--model", str(tiny_model_path), "--max-tokens", "4")
    assert unchecked.returncode == 1 and not unchecked.stdout  # a middle that no check passed is not printed
    assert unchecked.stderr == ("fimlsp complete: no valid middle: no middle can make the statements around the "
                                "cursor parse (without a middle, CPython refuses line 3, column 11: invalid syntax); "
                                "the middle generated unconstrained does not compile (try --mode unconstrained)\n")


@pytest.mark.slow
def test_cli_prints_no_middle_decoded_past_the_setup_deadline_that_breaks_the_file(tiny_model_path, tmp_path):
    source = tmp_path / "greet.py"
    source.write_text(GREET_LEFT + GREET_RIGHT)
    late = run_cli("complete", f"{source}:2:15", "--model", str(tiny_model_path), "--max-tokens", "8",
                   "--setup-timeout", "1e-9", "--json")
    record = json.loads(late.stdout)
    assert not parses(GREET_LEFT + record["middle"] + GREET_RIGHT)
    assert late.returncode == 1 and record["shown"] is False  # the record says the middle is not for a user
    late = run_cli("complete", f"{source}:2:15", "--model", str(tiny_model_path), "--max-tokens", "8",
                   "--setup-timeout", "1e-9")
    assert late.returncode == 1 and not late.stdout
    assert late.stderr == ("fimlsp complete: no valid middle: the constraint could not be built within its time "
                           "budget; the middle generated unconstrained does not compile (try --mode unconstrained)\n")


# `x = 1|def g():`: every middle that makes the file valid holds a line break.
NEEDS_A_LINE_BREAK = ["import os", "x = 1def g():", "    return x", ""]


@pytest.mark.slow
@pytest.mark.parametrize("line_break", ["\r\n", "\r"])
def test_cli_writes_the_middle_s_line_breaks_as_the_file_s(tiny_model_path, tmp_path, line_break):
    source = tmp_path / "breaks.py"
    text = line_break.join(NEEDS_A_LINE_BREAK)
    source.write_bytes(text.encode())
    result = subprocess.run([sys.executable, "-m", "fimlsp", "complete", f"{source}:2:6", "--model",
                             str(tiny_model_path), "--max-tokens", "16", "--invented-finish"],  # (`1---0`: see test_server.py)
                            capture_output=True)  # bytes: breaks as written
    middle = result.stdout.decode()
    assert result.returncode == 0 and middle, result.stderr
    left, right = text.split("def g()", 1)
    assert parses(left + middle + "def g()" + right)
    assert LINE_BREAK.findall(middle) and set(LINE_BREAK.findall(middle)) == {line_break}, repr(middle)


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "fimlsp", *args], capture_output=True, text=True, input=stdin)


@pytest.mark.slow
def test_cli_json_and_errors(tiny_model_path, tmp_path):
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    return x + \n")
    result = run_cli("complete", f"{source}:2:16", "--model", str(tiny_model_path), "--max-tokens", "8", "--json")
    data = json.loads(result.stdout)
    for key in ("middle", "parses", "mode", "tokens", "candidates_tried", "model_seconds", "setup_seconds",
                "constraint_ms_per_token"):
        assert key in data
    assert result.returncode == (0 if data["shown"] else 1)
    piped = run_cli("complete", "-:1:5", "--model", str(tiny_model_path), "--max-tokens", "4", stdin="x = \n")
    assert piped.returncode in (0, 1) and "Traceback" not in piped.stderr
    for args, message in [
        ((f"{tmp_path}/missing.py:1:1",), "no such file"),
        ((f"{source}:7:1",), "line 7 is outside the file"),
        ((f"{source}:1:40",), "column 40 is outside line 1"),
        ((f"{source}:1:1", "--model", str(tmp_path / "nowhere")), "does not exist"),
        ((f"{source}:1:1", "--model", str(tmp_path)), "not a model folder"),
    ]:
        failed = run_cli("complete", *args)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr
        assert failed.stdout == ""


def test_shipped_model_completes_the_readme_fixture_offline():
    """The README's first command: the default model, no network, a constrained middle that parses."""
    from fimlsp.weights import default_model_path

    if not (default_model_path() / "model.safetensors").is_file():
        pytest.fail("the shipped model is missing from fimlsp/weights/default")
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "example.py"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "fimlsp", "complete", f"{fixture}:10:12", "--json", "--max-tokens", "120"],
        capture_output=True, text=True, env=environment,
    )
    data = json.loads(result.stdout)
    assert result.returncode == 0 and data["parses"], (data, result.stderr)
    text = fixture.read_text()
    offset = sum(len(line) for line in text.splitlines(keepends=True)[:9]) + 11
    assert parses(text[:offset] + data["middle"] + text[offset:])


@pytest.mark.slow
def test_cli_gives_a_list_of_alternatives(tiny_model_path, tmp_path):
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    return x + \n")
    result = run_cli("complete", f"{source}:2:16", "--model", str(tiny_model_path), "--max-tokens", "8", "--json",
                     "--alternatives", "2")
    data = json.loads(result.stdout)
    assert 1 <= len(data["completions"]) <= 2 and all("ending" in each for each in data["completions"])
    bad = run_cli("complete", f"{source}:2:16", "--model", str(tiny_model_path), "--alternatives", "0")
    assert bad.returncode == 2 and "--alternatives: expected an integer from 1 to 10" in bad.stderr


@pytest.mark.slow
def test_cli_scope_option(tiny_model_path, tmp_path):
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    y = x\n\n\ndef g():\n    pass\n")
    # names off: the tiny random model's middle loads names nothing binds, which strict names does not show
    result = run_cli("complete", f"{source}:2:10", "--model", str(tiny_model_path), "--max-tokens", "8", "--json",
                     "--scope", "block", "--names", "off")
    data = json.loads(result.stdout)
    assert result.returncode == 0 and data["scope"] == "block" and data["parses"], data
    bad = run_cli("complete", f"{source}:2:10", "--scope", "function")
    assert bad.returncode == 2 and "scope" in bad.stderr


@pytest.mark.slow
def test_the_cli_error_for_no_valid_middle_carries_the_refusal(tiny_model_path, tmp_path):
    source = tmp_path / "deep.py"
    source.write_text("x = " + "(" * 30 + "\n")
    result = run_cli("complete", f"{source}:1:35", "--model", str(tiny_model_path), "--max-tokens", "3")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "no valid middle found (no_candidate after" in result.stderr and "expected one of:" in result.stderr
