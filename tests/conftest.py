"""Shared fixtures."""

import pytest


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A randomly initialised 2-layer, 64-dim GPTBigCode model with the shipped tokenizer, for fast tests."""
    import torch

    from fimlsp.training.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
