"""The model layer: the engine interface decoding talks to (`FimModel`), loading a FIM model with `transformers`,
its prompt format, and exact token-to-text mapping.

Knows nothing of Python's grammar; `fimlsp.decoding` joins this layer with `fimlsp.python`.
"""

from fimlsp.model.formats import FORMATS, FimFormat, detect_format
from fimlsp.model.backend import FimModel, PromptPass, Session
from fimlsp.model.loading import ModelError, OutOfTime, TransformersModel, load_model

__all__ = ["FORMATS", "FimFormat", "FimModel", "ModelError", "OutOfTime", "PromptPass", "Session", "TransformersModel",
           "detect_format", "load_model"]
