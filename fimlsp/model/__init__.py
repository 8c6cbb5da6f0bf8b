"""The model layer: the engine interface decoding talks to (`backend.FimModel`), one module per engine behind it
(`transformers`, `llama_engine`, `remote`), `load_model` to pick one (`loading`), the FIM prompt formats as data
(`formats`), and exact token-to-text mapping (`token_text`).

Knows nothing of Python's grammar; `fimlsp.decoding` joins this layer with `fimlsp.python`.

The names below are loaded from their modules on first use: importing a light module of the package (`choices`,
`errors`) does not import numpy or an engine, so that `fimlsp serve` answers `initialize` before they load.
"""

from fimlsp.lazy_names import loader

_HOMES = {"FORMATS": "formats", "FimFormat": "formats", "detect_format": "formats",
          "FimModel": "backend", "PromptPass": "backend", "Session": "backend", "Snippet": "formats",
          "ModelError": "errors", "OutOfTime": "errors", "load_model": "loading", "TransformersModel": "transformers"}

__all__ = sorted(_HOMES)

__getattr__ = loader(__name__, _HOMES)
