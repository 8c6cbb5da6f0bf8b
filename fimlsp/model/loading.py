"""`load_model`: the engine a model's name asks for (outlines' `models/` layout: one module per engine behind the
interface, `fimlsp.model.backend`). A model on a shared server is connected to instead (`fimlsp.model.remote`)."""

from __future__ import annotations

import os

from fimlsp.model.backend import FimModel
from fimlsp.model.choices import GGUF_SUFFIX


def load_model(
    name: str | os.PathLike | None = None,
    device: str | None = None,
    fim_format: str | None = None,
    order: str | None = None,
) -> FimModel:
    """Load a model (default: the model shipped with fimlsp, `fimlsp.weights.default_model`: its GGUF on the CPU,
    where llama.cpp is installed). A path ending in `.gguf` is a GGUF file, run by llama.cpp in this process
    (`llama_engine`), and torch is not imported; anything else is a model folder or hub id for `transformers`
    (`fimlsp.model.transformers.load_transformers`). `order` None: the order the model names, else
    prefix-suffix-middle."""
    from fimlsp.weights import default_model

    if name is None:
        name = default_model(device)
    if str(name).endswith(GGUF_SUFFIX):
        from fimlsp.model.llama_engine import load_gguf

        return load_gguf(name, device, fim_format, order)
    from fimlsp.model.transformers import load_transformers

    return load_transformers(name, device, fim_format, order)
