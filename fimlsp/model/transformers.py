"""The transformers engine: a causal FIM model and its tokenizer loaded with `transformers` and run by torch in this
process, from a local folder or a hub id (`fimlsp.model.hub`)."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from fimlsp.model.backend import FimModel, PromptPass, Session
from fimlsp.model.choices import check_device, check_order, choose_format, hub_id_of
from fimlsp.model.errors import ModelError, first_line
from fimlsp.model.folder import CONFIG, TOKENIZER_CONFIG
from fimlsp.model.formats import preferred_order
from fimlsp.model.hub import hub_snapshot
from fimlsp.model.token_text import token_bytes

# A client may send lone surrogates (JSON escapes carry them); tokenizers take only valid Unicode.
_SURROGATE = re.compile("[\ud800-\udfff]")

# Files of a model folder whose `auto_map` names the folder's own Python code, which `transformers` would import.
CODE_MAPS = (CONFIG, TOKENIZER_CONFIG)

@dataclass
class TransformersModel(FimModel):
    """A model run by `transformers` and torch in this process."""

    model: object = None
    tokenizer: object = None

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(_SURROGATE.sub("\ufffd", text), add_special_tokens=False)

    def control_id(self, piece: str) -> int:
        return self._vocabulary[piece]

    def prompt_pass(self, ids: list[int], shared: bool = False, deadline: float | None = None) -> PromptPass:
        return _TransformersPromptPass(self, ids, shared)

    def forward(self, input_ids, cache):
        """The logits after `input_ids` and the key-value cache that goes on from them (None at the start), under
        either name `transformers` has given the cache (`past_key_values`, then `cache` in 5.x)."""
        output = self.model(input_ids=input_ids, use_cache=True, **{self._cache_name: cache})
        return output.logits, getattr(output, self._cache_name)

    @cached_property
    def batches(self) -> bool:
        """Whether sequences can be decoded side by side: a `transformers` model, whose key-value cache keeps a row
        per sequence that `cache_rows` selects."""
        from transformers import PreTrainedModel

        return isinstance(self.model, PreTrainedModel)

    @staticmethod
    def cache_rows(cache, rows: list[int]):
        """The key-value cache of a batch made of the given rows of `cache` (a row may repeat), in place."""
        import torch

        cache.batch_select_indices(torch.tensor(rows, device=cache.layers[0].keys.device))
        return cache

    @cached_property
    def _vocabulary(self) -> dict[str, int]:
        return self.tokenizer.get_vocab()

    @cached_property
    def _cache_name(self) -> str:
        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"



class _TransformersPromptPass(PromptPass):
    """The prompt's forward pass, run at the first use for all attempts. A key-value cache grows in place, so each
    session goes on from a copy of it when `shared`. Every prompt is evaluated whole (`evaluated`): no cache is
    kept from one prompt to the next."""

    def __init__(self, model: TransformersModel, ids: list[int], shared: bool):
        self.model, self.ids, self.shared = model, ids, shared
        self.evaluated = len(ids)
        self.seconds = 0.0
        self._output = None

    @property
    def log_probs(self) -> np.ndarray:
        return self._run()[0]

    def _run(self):
        if self._output is None:
            import torch

            clock = time.perf_counter()
            with torch.inference_mode():
                logits, cache = self.model.forward(torch.tensor([self.ids], device=self.model.device), None)
                log_probs = _log_probs(logits[0, -1])
            self.seconds = time.perf_counter() - clock
            self.model.timed_prompt(len(self.ids), self.seconds)
            self._output = log_probs, cache
        return self._output

    def session(self, rows: int = 1) -> Session:
        _log_probs_first, cache = self._run()
        cache = copy.deepcopy(cache) if self.shared else cache
        return _TransformersSession(self.model, self.model.cache_rows(cache, [0] * rows) if rows > 1 else cache)


class _TransformersSession(Session):
    """Rows of a key-value cache, one forward pass a step for all of them. Every row holds the prompt and as many
    tokens as the others, so the rows need no padding, and each row's logits are those of its sequence alone."""

    def __init__(self, model: TransformersModel, cache):
        self.model, self.cache = model, cache

    def step(self, tokens: Sequence[int]) -> list[np.ndarray]:
        import torch

        with torch.inference_mode():
            logits, self.cache = self.model.forward(
                torch.tensor([[token] for token in tokens], device=self.model.device), self.cache)
            return [_log_probs(logits[row, -1]) for row in range(len(tokens))]

    def keep(self, rows: Sequence[int]) -> None:
        self.cache = self.model.cache_rows(self.cache, list(rows))

    def close(self) -> None:
        self.cache = None


def _log_probs(logits) -> np.ndarray:
    """A row of logits as float32 log-probabilities on the CPU."""
    import torch

    return torch.log_softmax(logits.float(), dim=-1).cpu().numpy()


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_transformers(name: str | os.PathLike, device: str | None = None, fim_format: str | None = None,
                      order: str | None = None) -> TransformersModel:
    """Load a model folder or hub id in the dtype it was saved in. `order` None: the order the folder's `fim.json`
    names, else prefix-suffix-middle.

    A hub id (`hub_id_of`) in the local cache loads from it without the network; one that is not fails at once,
    before torch is imported, when the hub cannot be reached, and is downloaded otherwise.

    The folder, or the hub model's, is checked before anything of it is built (`folder_checks`): its config's
    sizes against its safetensors weights and the machine's memory; pickled weights are never loaded.

    No code from a model folder runs: a folder with its own code (`auto_map`) is refused before anything of it
    loads, and `transformers` is told never to trust remote code (it would ask on stdout otherwise)."""
    hub_id = hub_id_of(name)
    location, folder_order = _located(name, hub_id, device)
    if hub_id is not None:
        name = hub_id
    missing = [module for module in ("torch", "transformers") if importlib.util.find_spec(module) is None]
    if missing:
        raise ModelError(f"model {str(name)!r} runs through transformers and torch, and {' and '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} not installed: pip install 'fimlsp[torch]' (a .gguf "
                         "file and the shipped model need neither)")

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    device = device or default_device()
    _check_available(device, torch)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(location), local_files_only=True, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(str(location), dtype="auto", local_files_only=True,
                                                     trust_remote_code=False, use_safetensors=True)
    except Exception as error:  # a folder that passed the checks can still fail deep inside transformers or torch
        where = "folder" if hub_id is None else "local cache"
        raise ModelError(f"cannot load model {str(name)!r} from the {where}: {first_line(error)}") from error
    config = model.config
    chosen = choose_format(tokenizer.get_vocab(), fim_format, str(name), getattr(config, "model_type", ""))
    if order is None:
        order = folder_order
    check_order(chosen, order)
    try:
        if device == "cpu" and model.dtype == torch.float16:
            model = model.float()  # half precision has no fast CPU kernels; bf16 and fp32 stay as saved
        model.to(device)
    except (RuntimeError, MemoryError) as error:  # out of memory on the device, a device that went away
        raise ModelError(f"cannot put model {str(name)!r} on {device}: {first_line(error)}") from error
    model.eval()
    vocabulary = tokenizer.get_vocab()
    stops = {vocabulary[token] for token in chosen.stops if token in vocabulary}
    if tokenizer.eos_token_id is not None:
        stops.add(tokenizer.eos_token_id)
    window = next(
        (getattr(config, key) for key in ("max_position_embeddings", "n_positions", "n_ctx") if getattr(config, key, None)),
        2048,
    )
    return TransformersModel(chosen, order, token_bytes(tokenizer), frozenset(stops), int(window), str(name), device,
                             model=model, tokenizer=tokenizer)


def _located(name: str | os.PathLike, hub_id: str | None, device: str | None) -> tuple[Path, str]:
    """The checked folder of a model folder or hub id, and the prompt order it names; ModelError before anything
    of it is built where it cannot be used here."""
    if hub_id is not None:
        check_device(device)
        location = hub_snapshot(hub_id)
        _refuse_custom_code(location, hub_id)
        _check_folder(location, f"model {hub_id!r}", device)
        return location, "psm"
    location = Path(os.path.expanduser(str(name)))
    if location.exists() and not location.is_dir():
        raise ModelError(f"{str(name)!r} is a file, not a model folder")
    if not location.is_dir():
        raise ModelError(f"model folder {str(name)!r} does not exist")
    if not (location / CONFIG).is_file():
        raise ModelError(f"{str(name)!r} is not a model folder (it has no config.json)")
    check_device(device)
    _refuse_custom_code(location, str(name))
    _check_folder(location, f"model folder {str(name)!r}", device)
    try:
        return location, preferred_order(location)
    except ValueError as error:
        raise ModelError(f"model folder {str(name)!r}: {error}") from None


def _check_folder(folder: Path, described: str, device: str | None) -> None:
    """ModelError unless the folder's config and weights can be built into a model here (`folder_checks`)."""
    from fimlsp.model.folder_checks import FolderError, check_model_folder

    try:
        check_model_folder(folder, upcast=device in (None, "cpu"))
    except FolderError as error:
        raise ModelError(f"{described}: {error}") from None


def _refuse_custom_code(location: Path, name: str) -> None:
    """ModelError if the folder names code of its own for `transformers` to import (`auto_map`): fimlsp runs none."""
    for file in CODE_MAPS:
        path = location / file
        if not path.is_file():
            continue
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ModelError(f"model folder {name!r}: its {file} cannot be read as JSON ({error})") from None
        code = settings.get("auto_map") if isinstance(settings, dict) else None
        if code:
            named = ", ".join(sorted(map(str, code))) if isinstance(code, dict) else str(code)
            raise ModelError(f"model folder {name!r} has code of its own ({file} maps {named} to it) and fimlsp "
                             "runs no code from a model folder: use a model whose architecture transformers has "
                             "built in")


def _check_available(device: str, torch) -> None:
    """ModelError unless torch can put a model on `device` here."""
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ModelError(f"device {device!r} was asked for, but no CUDA device is available")
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ModelError(f"device {device!r} was asked for, but there are {torch.cuda.device_count()} CUDA "
                             "devices (cuda:0 is the first)")
    elif device == "mps" and not torch.backends.mps.is_available():
        raise ModelError("device 'mps' was asked for, but no Apple GPU (MPS) is available")
