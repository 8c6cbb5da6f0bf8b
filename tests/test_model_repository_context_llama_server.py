"""Prompts with repository context against llama.cpp's own server, for each prompt family's tokens (issue 45).

For a family with file tokens (StarCoder2's `<repo_name>`/`<file_sep>`, Qwen2.5-Coder's `<|repo_name|>`/
`<|file_sep|>`), fimlsp's prompt with other files' snippets is the prompt llama.cpp's `/infill` builds from the
same `input_extra`, token for token: a tiny random model whose vocabulary has the family's tokens is served by
`llama-server`, our prompt's ids are sent to `/completion`, then `/infill` is asked the same on the same slot, and
the server re-evaluates only the one token it always evaluates again (its prompt cache holds every other id of
ours), with as many tokens and the same text.

For a family without them (the shipped model, DeepSeek-Coder, Code Llama, SantaCoder) the two differ on purpose:
llama.cpp writes each snippet after a `\\n\\n--- snippet ---\\n\\n` line of its own before the FIM prefix token,
without its path; fimlsp writes the path as a comment and the text just before the left context, inside the
prefix, as DeepSeek-Coder's repository-level training wrote other files (`fimlsp.model.formats`). What is tested
there: both evaluate every token they were given, with the snippet before the left context.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fimlsp.model.backend import Snippet
from fimlsp.model.remote import connect
from harness.llama_server import INSTALL_LLAMA_SERVER, LLAMA_CPP_ENGINE, LLAMA_SERVER, llama_server

ROOT = Path(__file__).resolve().parent.parent
MODELS = Snippet("shop/models.py", "class Order:\n    amount: int\n    customer: str\n")
UTILS = Snippet("shop/utils.py", "def total(orders):\n    return sum(order.amount for order in orders)\n")
LEFT, RIGHT = "from shop.models import Order\n\n\ndef cost(order: Order) -> int:\n    return order.", "\n"
# StarCoder2's and Qwen2.5-Coder's names for the FIM and file tokens, by the shipped vocabulary's FIM token
FAMILIES = {
    "starcoder": {"<repo_name>": None, "<file_sep>": None},
    "qwen": {"<|repo_name|>": None, "<|file_sep|>": None, "<fim_prefix>": "<|fim_prefix|>",
             "<fim_suffix>": "<|fim_suffix|>", "<fim_middle>": "<|fim_middle|>", "<fim_pad>": "<|fim_pad|>"},
}


def _needs_llama_server() -> None:
    if not LLAMA_SERVER.exists():
        message = f"llama-server is not built (run {INSTALL_LLAMA_SERVER.relative_to(ROOT)})"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def family_model(folder: Path, family: str) -> Path:
    """A tiny random model of the shipped architecture whose vocabulary has `family`'s FIM and file tokens."""
    from harness.tiny_model import build_tiny_model
    from fimlsp.weights import default_model_path
    from fimlsp.training.tokenizer import load_tokenizer

    renamed = FAMILIES[family]
    tokenizer = load_tokenizer(default_model_path())
    tokenizer.add_special_tokens({"additional_special_tokens": [name for name, new in renamed.items() if new is None]})
    tokenizer.save_pretrained(folder / "tokenizer")
    model = build_tiny_model(folder / "model", folder / "tokenizer")
    for file in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        path = model / file
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for old, new in renamed.items():
                if new is not None:
                    text = text.replace(json.dumps(old), json.dumps(new))
            path.write_text(text, encoding="utf-8")
    return model


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family_server(request, tmp_path_factory):
    """(family, model folder, url): llama-server with a 256-token batch, so that `/infill` leaves the rest of the
    context to the extras."""
    _needs_llama_server()
    folder = tmp_path_factory.mktemp(request.param)
    model = family_model(folder, request.param)
    with llama_server(folder, LLAMA_CPP_ENGINE, ("--batch-size", "256", "--ubatch-size", "256"), model=model) as url:
        yield request.param, model, url


@pytest.mark.slow
def test_the_prompt_with_snippets_is_the_prompt_llama_cpp_s_infill_builds_from_input_extra(family_server):
    family, folder, url = family_server
    model = connect(url, folder, fim_format=family)
    try:
        assert model.format.repository is not None  # the family's file tokens are in the server's vocabulary
        ids = model.prompt(LEFT, RIGHT, 16, extra=[MODELS, UTILS])
        ours = model.request("POST", "/completion", {"prompt": ids, "n_predict": 1, "temperature": 0,
                                                     "cache_prompt": True})
        infill = model.request("POST", "/infill", {
            "input_prefix": LEFT, "input_suffix": RIGHT, "n_predict": 1, "temperature": 0, "cache_prompt": True,
            "input_extra": [{"filename": snippet.path, "text": snippet.text} for snippet in (MODELS, UTILS)]})
    finally:
        model.close()
    repo, file_sep = model.format.repository
    assert ours["tokens_evaluated"] == len(ids) == infill["tokens_evaluated"]
    assert infill["timings"]["prompt_n"] == 1  # every id but the last was ours, in the server's prompt cache
    assert infill["prompt"] == ours["prompt"]
    assert infill["prompt"].startswith(f"{repo}myproject\n{file_sep}shop/models.py\n{MODELS.text}{file_sep}")


@pytest.mark.slow
def test_without_file_tokens_each_writes_the_snippet_before_the_left_context_in_its_own_way(tmp_path):
    """The shipped vocabulary has no file tokens: llama.cpp writes its separator line before the prefix token,
    fimlsp a path comment just before the left context (after the middle token: the shipped model reads its suffix
    first); both evaluate every token."""
    _needs_llama_server()
    with llama_server(tmp_path, LLAMA_CPP_ENGINE, ("--batch-size", "256", "--ubatch-size", "256")) as url:
        model = connect(url)
        try:
            assert model.format.repository is None
            ids = model.prompt(LEFT, RIGHT, 16, extra=[MODELS])
            ours = model.request("POST", "/completion", {"prompt": ids, "n_predict": 1, "temperature": 0,
                                                         "cache_prompt": False})
            infill = model.request("POST", "/infill", {
                "input_prefix": LEFT, "input_suffix": RIGHT, "n_predict": 1, "temperature": 0, "cache_prompt": False,
                "input_extra": [{"filename": MODELS.path, "text": MODELS.text}]})
        finally:
            model.close()
    assert ours["tokens_evaluated"] == len(ids)
    assert f"<fim_middle># {MODELS.path}\n{MODELS.text}{LEFT}" in ours["prompt"]  # its order: suffix first
    assert infill["prompt"].startswith(f"\n\n--- snippet ---\n\n{MODELS.text}<fim_prefix>{LEFT}<fim_suffix>")
