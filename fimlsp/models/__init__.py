"""The models that ship inside the package. `default` is fimlsp's own small FIM model (see default/README.md)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_MODEL = "default"


def default_model_path() -> Path:
    """The folder of the shipped default model, loadable offline with `transformers` `from_pretrained`."""
    return Path(__file__).resolve().parent / DEFAULT_MODEL
