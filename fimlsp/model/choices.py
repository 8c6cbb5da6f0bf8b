"""What a user names to get a model, the same for every engine: where it runs (a device), what it is (a model
folder, a hub id or a GGUF file), and the FIM format and prompt order it is asked with."""

from __future__ import annotations

import os
import re

from fimlsp.model.errors import ModelError
from fimlsp.model.formats import FORMATS, FimFormat, detect_format

# The devices a model may be put on; torch accepts more names (`meta`, `xla`) on which no completion can run.
DEVICES = re.compile(r"cpu|cuda(:\d+)?|mps")
DEVICE_CHOICES = "cpu, cuda, cuda:N or mps"

GGUF_SUFFIX = ".gguf"  # a model file for llama.cpp rather than a folder for transformers

HUB_PREFIX = "hf:"  # `hf:OWNER/NAME` is a hub id even where a folder OWNER/NAME exists
HUB_ID = re.compile(r"\w[\w.-]*/\w[\w.-]*", re.ASCII)  # the form of a hub id, OWNER/NAME


def check_device(device: str | None) -> None:
    """ModelError unless `device` is None (the engine's choice) or one fimlsp can run a model on."""
    if device is not None and not DEVICES.fullmatch(device):
        raise ModelError(f"device {device!r} is not one fimlsp can run a model on: use {DEVICE_CHOICES}")


def hub_id_of(name: str | os.PathLike) -> str | None:
    """The hub id that `name` names, None when it names a local path; ModelError when it could name either.

    `hf:ID` is a hub id, a `Path` is local, and a path that starts with `.`, `/` or `~` or has two slashes is local.
    A name of a hub id's form, OWNER/NAME, is a hub id unless a file of that relative path exists here: then the
    user must say which (`./OWNER/NAME` or `hf:OWNER/NAME`), since the one they meant may be the other. A bare
    name is a folder if one exists here, else a hub id (`gpt2`)."""
    if isinstance(name, os.PathLike):
        return None
    text = str(name)
    if text.startswith(HUB_PREFIX):
        if not text[len(HUB_PREFIX):]:
            raise ModelError(f"{text!r} names no hub model: write {HUB_PREFIX}OWNER/NAME")
        return text[len(HUB_PREFIX):]
    if text.startswith((".", "/", "~")) or text.count("/") > 1 or os.path.isabs(text):
        return None
    if not os.path.lexists(text):
        return text
    if HUB_ID.fullmatch(text):
        raise ModelError(f"{text!r} is both a path here and a hub id: write ./{text} for the folder, or "
                         f"{HUB_PREFIX}{text} for the model on the hub")
    return None


def choose_format(vocabulary: set[str] | dict, fim_format: str | None, name: str, model_type: str = "",
                  label: str | None = None) -> FimFormat:
    """The FIM format asked for, if the vocabulary has its control tokens, else the one its control tokens show
    (`detect_format`, ties broken by `label`, by default the name): the one rule of every engine."""
    if fim_format is not None:
        if fim_format not in FORMATS:
            raise ModelError(f"unknown FIM format {fim_format!r}; known: {', '.join(sorted(FORMATS))}")
        chosen = FORMATS[fim_format]
        missing = [token for token in chosen.controls if token not in vocabulary]
        if missing:
            raise ModelError(f"model {name!r} has no {', '.join(missing)} token for format {fim_format!r}")
        return chosen
    chosen = detect_format(vocabulary, name if label is None else label, model_type)
    if chosen is None:
        raise ModelError(f"{name!r} is not a fill-in-the-middle model: its vocabulary has none of the FIM control "
                         f"tokens of {', '.join(sorted(FORMATS))}")
    return chosen


def check_order(chosen: FimFormat, order: str) -> None:
    """ModelError unless the format has a prompt template of `order`."""
    if order not in chosen.orders:
        raise ModelError(f"format {chosen.name!r} supports the orders {', '.join(chosen.orders)}, not {order!r}")
