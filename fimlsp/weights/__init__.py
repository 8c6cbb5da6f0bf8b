"""The models that ship inside the package. `default` is fimlsp's own small FIM model (see default/README.md);
`default.gguf` is the same model exported for llama.cpp (`fimlsp export-gguf default`), which loads without torch
and decodes the same middles several times faster on a CPU, so it is what runs when no model is named."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DEFAULT_MODEL = "default"
DEFAULT_GGUF = "default.gguf"


def default_model_path() -> Path:
    """The folder of the shipped default model, loadable offline with `transformers` `from_pretrained`."""
    return Path(__file__).resolve().parent / DEFAULT_MODEL


def default_gguf_path() -> Path:
    """The shipped default model as a GGUF file for llama.cpp."""
    return Path(__file__).resolve().parent / DEFAULT_GGUF


def default_model(device: str | None = None) -> Path:
    """What runs when no model is named: the GGUF where llama-cpp-python is installed and the model runs on the CPU
    (no device, or `cpu`), else the transformers folder (a GPU asked for, or no llama.cpp)."""
    gguf = default_gguf_path()
    if device in (None, "cpu") and gguf.is_file() and importlib.util.find_spec("llama_cpp") is not None:
        return gguf
    return default_model_path()
