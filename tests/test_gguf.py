"""The shipped model exported as a GGUF file (`fimlsp export-gguf`) and run by llama.cpp in-process
(`fimlsp.model.llama_engine`), checked against the same model run by transformers: identical tokenization and
vocabulary bytes, close next-token distributions, valid middles through the CLI with no torch imported, greedy
middles that mostly agree."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fimlsp.cases import line_cases
from fimlsp.decoding import DecodingOptions, complete_middle
from fimlsp.decoding.steering import UNTIMED_SEARCH_BUDGET
from fimlsp.model import ModelError, load_model
from fimlsp.model.formats import FIM_FORMAT_KEY
from fimlsp.model.gguf_export import export_gguf
from fimlsp.model.llama_engine import LlamaCppModel, load_gguf
from fimlsp.syntax_trees import parsed
from fimlsp.weights import default_gguf_path, default_model, default_model_path
from harness.corpus import STDLIB

CORPUS = ("textwrap.py", "ast.py", "json/decoder.py", "string.py", "difflib.py", "shlex.py")
AGREEMENT_FILES = ("textwrap.py", "shlex.py", "string.py", "fnmatch.py", "glob.py", "bisect.py", "colorsys.py",
                   "heapq.py", "keyword.py", "copy.py", "graphlib.py", "numbers.py")


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory) -> Path:
    return export_gguf(default_model_path(), tmp_path_factory.mktemp("gguf") / "default.gguf")


@pytest.fixture(scope="module")
def gguf_model(gguf_path) -> LlamaCppModel:
    model = load_gguf(gguf_path, threads=1)
    yield model
    model.close()


@pytest.fixture(scope="module")
def hf_model():
    import torch

    torch.set_num_threads(1)
    return load_model(default_model_path(), "cpu")


def test_a_gguf_path_loads_with_llama_cpp_under_the_folders_fim_settings(gguf_path, hf_model):
    model = load_model(gguf_path)
    try:
        assert isinstance(model, LlamaCppModel)
        assert (model.format.name, model.order) == (hf_model.format.name, hf_model.order) == ("fimlsp", "spm")
        assert model.context_window == hf_model.context_window == 512
        assert model.stop_ids == hf_model.stop_ids
        assert model.token_bytes == hf_model.token_bytes
        assert [model.control_id(piece) for piece in model.format.controls] == [
            hf_model.control_id(piece) for piece in hf_model.format.controls]
    finally:
        model.close()


def test_the_shipped_gguf_is_the_shipped_folder_exported(gguf_path):
    """`default.gguf` runs when no model is named: it must be the folder's weights, byte for byte, as
    `fimlsp export-gguf default` writes them today (a retrained folder without a new export fails here)."""
    assert default_gguf_path().read_bytes() == gguf_path.read_bytes()


def test_no_model_named_runs_the_shipped_gguf_on_the_cpu_and_the_folder_elsewhere(monkeypatch):
    assert default_model() == default_model("cpu") == default_gguf_path()
    assert default_model("cuda") == default_model_path()
    model = load_model()
    try:
        assert isinstance(model, LlamaCppModel) and model.name == str(default_gguf_path())
    finally:
        model.close()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None)  # llama-cpp-python not installed
    assert default_model() == default_model_path()


@pytest.mark.parametrize("name", CORPUS)
def test_tokenization_is_identical_on_stdlib_files(name, gguf_model, hf_model):
    text = (STDLIB / name).read_text(encoding="utf-8")
    assert gguf_model.encode(text) == hf_model.encode(text)


def _prompts(hf_model) -> list[list[int]]:
    cases = list(line_cases([(name, (STDLIB / name).read_text()) for name in AGREEMENT_FILES[:6]], seed=1))
    return [hf_model.prompt(case.left, case.right, 64) for case in cases]


def test_next_token_log_probs_are_close_to_transformers(gguf_model, hf_model):
    differences, agree = [], 0
    prompts = _prompts(hf_model)
    for ids in prompts:
        ours, theirs = gguf_model.prompt_pass(ids).log_probs, hf_model.prompt_pass(ids).log_probs
        differences.append(float(np.abs(ours - theirs).max()))
        agree += int(ours.argmax() == theirs.argmax())
    assert max(differences) < 0.05, differences
    assert agree == len(prompts), f"top-1 agreement {agree}/{len(prompts)}"


def test_sessions_go_on_from_the_prompt_and_a_later_prompt_reuses_the_shared_prefix(gguf_model, hf_model):
    ids = _prompts(hf_model)[0]
    following = [hf_model.encode("x = 1\n")[0], hf_model.encode(" return")[0], hf_model.encode("(")[0]]
    prompt_pass = gguf_model.prompt_pass(ids, shared=True)
    first = _steps(prompt_pass.session(), following)
    second = _steps(prompt_pass.session(), following[:1] + following[2:])
    hf_pass = hf_model.prompt_pass(ids, shared=True)
    expected_first = _steps(hf_pass.session(), following)
    expected_second = _steps(hf_pass.session(), following[:1] + following[2:])
    for ours, theirs in zip(first + second, expected_first + expected_second):
        assert np.abs(ours - theirs).max() < 0.05

    evaluated = []
    original = gguf_model.llama.eval
    gguf_model.llama.eval = lambda tokens: (evaluated.append(len(tokens)), original(tokens))[1]
    try:
        typed = ids[:-3] + following  # the next keystroke's prompt shares all but the prompt's last 3 tokens
        reused = gguf_model.prompt_pass(typed).log_probs
    finally:
        del gguf_model.llama.eval
    assert evaluated == [3]
    assert np.abs(reused - hf_model.prompt_pass(typed).log_probs).max() < 0.05


def _steps(session, tokens) -> list[np.ndarray]:
    return [session.step([token])[0] for token in tokens]


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    """`fimlsp` in a fresh interpreter that then says whether torch or transformers was imported."""
    code = ("import sys; from fimlsp.cli import main; status = main(sys.argv[1:]); "
            "heavy = sorted(name for name in ('torch', 'transformers') if name in sys.modules); "
            "print(json.dumps(heavy), file=sys.stderr) if heavy else None; sys.exit(status)")
    return subprocess.run([sys.executable, "-c", "import json; " + code, *args], capture_output=True, text=True,
                          timeout=120)


def test_complete_with_a_gguf_model_gives_a_valid_middle_without_importing_torch(gguf_path, tmp_path):
    text = (STDLIB / "textwrap.py").read_text()
    lines = text.splitlines(keepends=True)
    line = next(index for index, each in enumerate(lines, 1) if each.strip().startswith("return ") and index > 100)
    column = lines[line - 1].index("return ") + len("return ") + 1
    source = tmp_path / "wrapped.py"
    source.write_text(text)
    result = _run_cli("complete", f"{source}:{line}:{column}", "--model", str(gguf_path), "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # neither torch nor transformers was imported, nor did llama.cpp log
    completion = json.loads(result.stdout)
    assert completion["shown"] and completion["middle"]
    offset = sum(len(each) for each in lines[:line - 1]) + column - 1
    parsed(text[:offset] + completion["middle"] + text[offset:])


@pytest.mark.slow
def test_greedy_middles_mostly_agree_with_transformers(gguf_model, hf_model):
    files = [(name, (STDLIB / name).read_text()) for name in AGREEMENT_FILES]
    cases = list(line_cases(files, seed=3, count=10))
    options = DecodingOptions(max_tokens=48, statement_end=True)
    same = 0
    for case in cases:
        ours = complete_middle(gguf_model, case.left, case.right, options)
        theirs = complete_middle(hf_model, case.left, case.right, options)
        assert ours.parses
        parsed(case.left + ours.middle + case.right)
        same += ours.middle == theirs.middle
    assert len(cases) == 10 and same >= 7, f"greedy middles equal to transformers': {same}/{len(cases)}"


def test_a_missing_or_corrupt_gguf_file_is_a_one_line_error(gguf_path, tmp_path):
    target = f"{STDLIB / 'textwrap.py'}:10:1"
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(gguf_path.read_bytes()[:100_000])
    for model, says in ((tmp_path / "missing.gguf", "does not exist"), (truncated, "cannot load GGUF file")):
        result = _run_cli("complete", target, "--model", str(model))
        assert result.returncode == 2
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr


def test_export_refuses_a_model_llama_cpp_cannot_run_as_starcoder(tmp_path):
    folder = tmp_path / "llama-like"
    shutil.copytree(default_model_path(), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "llama"}))
    with pytest.raises(ModelError, match="GPTBigCode"):
        export_gguf(folder, tmp_path / "out.gguf")
    (folder / "config.json").write_text(json.dumps({**config, "activation_function": "relu"}))
    with pytest.raises(ModelError, match="activation"):
        export_gguf(folder, tmp_path / "out.gguf")
    result = _run_cli("export-gguf", str(tmp_path / "no-such-folder"), str(tmp_path / "out.gguf"))
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_language_server_completes_with_a_gguf_model(gguf_path):
    from tests.test_server import (POSITIONS, SOURCE, inline_params, open_document, options_for, parses, serve,
                                   split)

    # searches counted, not timed: a busy machine's 0.1 s searches failed and left (17, 6) without a middle
    async with serve(options_for(gguf_path, searchBudget=UNTIMED_SEARCH_BUDGET)) as client:
        open_document(client, SOURCE)
        shown = 0
        for line, character in POSITIONS:
            left, right = split(SOURCE, line, character)
            inline = await client.text_document_inline_completion_async(inline_params(line, character))
            for item in inline.items:
                assert parses(left + item.insert_text + right), (line, character, item.insert_text)
            suggested = any(item.insert_text for item in inline.items)
            shown += suggested
            # nothing is shown only where the model itself ends at once (a fallback's middle never outranks that)
            assert suggested or "the model's best middle here is empty" in client.statuses[-1][3], client.statuses
        assert shown >= len(POSITIONS) - 2


def test_a_gguf_without_fimlsp_settings_gets_the_format_its_control_tokens_show(tmp_path):
    folder = tmp_path / "starcoder-like"
    shutil.copytree(default_model_path(), folder)
    (folder / "fim.json").unlink()
    model = load_model(export_gguf(folder, tmp_path / "starcoder-like.gguf"))
    try:
        assert FIM_FORMAT_KEY not in model.llama.metadata  # detected, as for a GGUF from the hub
        assert (model.format.name, model.order) == ("starcoder", "psm")
        assert model.stop_ids == {model.control_id("<|endoftext|>"), model.control_id("<fim_pad>")}
        text = (STDLIB / "textwrap.py").read_text()
        case = next(iter(line_cases([("textwrap.py", text)], seed=5)))
        result = complete_middle(model, case.left, case.right, DecodingOptions(max_tokens=32, statement_end=True))
        parsed(case.left + result.middle + case.right)
    finally:
        model.close()
