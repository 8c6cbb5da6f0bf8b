"""Shared fixtures."""

import pytest


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A randomly initialised 2-layer, 64-dim GPTBigCode model with the shipped tokenizer, for fast tests."""
    import torch

    from harness.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def tiny(tiny_model_path):
    """The tiny model loaded on the CPU, once per test module."""
    from fimlsp.model import load_model

    return load_model(tiny_model_path, "cpu")


@pytest.fixture
def python_with(request):
    """Python registered again under another name with other text facts (`Language.blanks`, `closers`,
    `line_closers`): decoding must take them from the language it decodes for, not from a list of its own."""
    from fimlsp import language
    from fimlsp.python.language import Python

    facts = type("PythonWithOtherFacts", (Python,), {"name": "python-other-facts", **request.param})
    yield language.register(facts()).name
    language.unregister(facts.name)
