"""A tiny randomly initialised FIM model with the shipped tokenizer, for tests that need speed more than quality.

Its completions are noise, but it has the real tokenizer, the real FIM control tokens and the same architecture
(`fimlsp.training.loop.model_config`) and files as the default model, so loading, prompting, decoding and serving
code can be exercised in seconds. A test fixture, not shipped: tests and benchmarks build it.
"""

from __future__ import annotations

from pathlib import Path


def build_tiny_model(
    directory: Path,
    tokenizer_dir: Path | None = None,
    *,
    seed: int = 0,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 2,
    n_positions: int = 512,
) -> Path:
    """Write config, safetensors weights and tokenizer files of a random GPTBigCode model to `directory`."""
    import torch
    from transformers import GPTBigCodeForCausalLM

    from fimlsp.weights import default_model_path
    from fimlsp.training.loop import model_config
    from fimlsp.training.options import TrainOptions
    from fimlsp.training.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir or default_model_path())
    options = TrainOptions(n_layer=n_layer, n_embd=n_embd, n_head=n_head, seq_len=n_positions)
    config = model_config(options, tokenizer)
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    model = GPTBigCodeForCausalLM(config)
    torch.random.set_rng_state(generator_state)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory
