"""The model layer: the engine interface decoding talks to (`backend.FimModel`), one module per engine behind it
(`transformers`, `llama_engine`, `remote`), `load_model` to pick one (`loading`), the FIM prompt formats as data
(`formats`), and exact token-to-text mapping (`token_text`).

Knows nothing of Python's grammar; `fimlsp.decoding` joins this layer with `fimlsp.python`.
"""

from fimlsp.model.formats import FORMATS, FimFormat, detect_format
from fimlsp.model.backend import FimModel, PromptPass, Session, Snippet
from fimlsp.model.errors import ModelError, OutOfTime
from fimlsp.model.loading import load_model
from fimlsp.model.transformers import TransformersModel

__all__ = ["FORMATS", "FimFormat", "FimModel", "ModelError", "OutOfTime", "PromptPass", "Session", "Snippet",
           "TransformersModel", "detect_format", "load_model"]
