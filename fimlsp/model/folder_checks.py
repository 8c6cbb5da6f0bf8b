"""Check a model folder before anything of it is built: `config.json` is an object whose sizes are in sane ranges
and agree with the weights' shapes, the weights are safetensors (read from their headers, no tensor loaded), and
the model fits in the memory this machine has. Without these checks a crafted folder makes `transformers` build
a million layers until the process is killed, or fails deep inside torch with a traceback.

Only the standard library is used: a refused folder costs no torch import."""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from fimlsp.model.folder import CONFIG, PICKLED_WEIGHTS, WEIGHTS, WEIGHTS_INDEX

# Config keys by what they count, with the largest value a real model has with room to spare (the largest models
# have about 130 layers, 256k tokens, widths of 50k and contexts of 10M); every value must be a positive integer.
LAYERS = ("n_layer", "num_hidden_layers", "n_layers", "num_layers")
POSITIONS = ("n_positions", "max_position_embeddings", "n_ctx", "seq_length", "max_sequence_length")
VOCABULARY = ("vocab_size",)
HIDDEN_WIDTHS = ("n_embd", "hidden_size", "d_model")
FEED_FORWARD_WIDTHS = ("n_inner", "intermediate_size", "ffn_dim")
HEADS = ("n_head", "num_attention_heads", "num_key_value_heads", "head_dim")
LIMITS = {
    **{key: 1024 for key in LAYERS},
    **{key: 1 << 24 for key in POSITIONS},
    **{key: 1 << 22 for key in VOCABULARY},
    **{key: 1 << 18 for key in HIDDEN_WIDTHS + FEED_FORWARD_WIDTHS},
    **{key: 1 << 14 for key in HEADS},
}
# Keys of a mixture of experts, whose feed-forward width may be no dimension of any one tensor.
EXPERTS = ("num_experts", "num_local_experts", "moe_intermediate_size", "n_routed_experts")

# Names of the tensors whose rows are the vocabulary, and of learned position tables (OPT's has two rows more).
TOKEN_EMBEDDINGS = ("wte.weight", "embed_tokens.weight", "word_embeddings.weight", "tok_embeddings.weight",
                    "embed_in.weight")
POSITION_EMBEDDINGS = ("wpe.weight", "embed_positions.weight", "position_embeddings.weight")
LAYER_INDEX = re.compile(r"(?:^|\.)(?:h|layers|layer|blocks|block)\.(\d+)\.")

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
               "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8}
MAX_HEADER = 100 << 20  # bytes: the safetensors library's own limit

# Architectures that build a causal mask of positions x positions booleans at load time: once, or in every layer.
SQUARE_MASKS = {"gpt_bigcode": False, "gpt_neo": True}
GIB = 1 << 30


class FolderError(ValueError):
    """The folder cannot be a working model: one line that names the file and the problem."""


@dataclass(frozen=True)
class Tensor:
    dtype: str
    shape: tuple[int, ...]

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BYTES[self.dtype]


def check_model_folder(folder: Path, upcast: bool) -> None:
    """FolderError unless the folder's config and weights describe a model that can be built here. `upcast`: float16
    weights become float32 (fimlsp does so on the CPU), so the model needs three times their bytes."""
    config = read_config(folder)
    sizes = _sizes(config)
    tensors = read_weights(folder)
    _check_against_weights(config, sizes, tensors)
    needed = _memory_needed(config, sizes, tensors, upcast)
    available = memory_available()
    if available is not None and needed > available:
        raise FolderError(f"the model needs about {needed / GIB:.1f} GiB of memory to load and this machine has "
                          f"{available / GIB:.1f} GiB available")


def read_config(folder: Path) -> dict:
    try:
        config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # ValueError: also an integer of too many digits
        raise FolderError(f"its {CONFIG} cannot be read as JSON ({_one_line(error)})") from None
    if not isinstance(config, dict):
        raise FolderError(f"its {CONFIG} holds a JSON {type(config).__name__}, not an object")
    return config


def _sizes(config: dict) -> dict[str, int]:
    """The size keys the config sets (null: the architecture's default), each checked against its range."""
    sizes = {}
    for key, limit in LIMITS.items():
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise FolderError(f"{CONFIG}: {key} = {_short(value)} is not an integer from 1 to {limit}")
        sizes[key] = value
    return sizes


def read_weights(folder: Path) -> dict[str, Tensor]:
    """The tensors of the folder's safetensors weights, by name, from their headers; FolderError when there are
    none (a pickle such as pytorch_model.bin is never loaded: unpickling can run code) or a header is damaged."""
    index = folder / WEIGHTS_INDEX
    if (folder / WEIGHTS).is_file():
        files = [folder / WEIGHTS]
    elif index.is_file():
        files = _indexed_files(folder, index)
    else:
        pickled = [name for name in PICKLED_WEIGHTS if (folder / name).exists()]
        if pickled:
            raise FolderError(f"its weights are in {pickled[0]}, a pickle, which can run code when loaded: fimlsp "
                              f"loads only {WEIGHTS} (convert the weights to safetensors)")
        raise FolderError(f"it has no weights ({WEIGHTS})")
    tensors: dict[str, Tensor] = {}
    for file in files:
        tensors.update(_header(file))
    if not tensors:
        raise FolderError(f"its weights ({', '.join(file.name for file in files)}) hold no tensors")
    return tensors


def _indexed_files(folder: Path, index: Path) -> list[Path]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
        names = sorted(set(weight_map.values()))
    except (OSError, ValueError, RecursionError, AttributeError, TypeError):
        raise FolderError(f"its {WEIGHTS_INDEX} has no weight_map of tensor names to files") from None
    for name in names:
        if not isinstance(name, str) or Path(name).name != name or not (folder / name).is_file():
            raise FolderError(f"its {WEIGHTS_INDEX} names {_short(name)}, which is no file of the folder")
    return [folder / name for name in names]


def _header(file: Path) -> dict[str, Tensor]:
    """The tensors a safetensors file's header describes; each must lie inside the file."""
    try:
        with open(file, "rb") as stream:
            (length,) = struct.unpack("<Q", stream.read(8).ljust(8, b"\xff"))
            if length > MAX_HEADER:
                raise FolderError(f"{file.name} is not a safetensors file (its header would be {length} bytes)")
            header = json.loads(stream.read(length))
            data = file.stat().st_size - 8 - length
    except (OSError, ValueError, RecursionError) as error:  # ValueError: also an integer of too many digits
        raise FolderError(f"{file.name} is not a safetensors file ({_one_line(error)})") from None
    if not isinstance(header, dict):
        raise FolderError(f"{file.name} is not a safetensors file (its header is not an object)")
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensor = _tensor(entry)
        offsets = entry.get("data_offsets") if tensor is not None else None
        if (tensor is None or not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(offset, int) and not isinstance(offset, bool) for offset in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= data or offsets[1] - offsets[0] != tensor.bytes):
            raise FolderError(f"{file.name} is damaged: its tensor {_short(name)} does not lie in the file as its "
                              "header says")
        tensors[name] = tensor
    return tensors


def _tensor(entry) -> Tensor | None:
    if not isinstance(entry, dict) or entry.get("dtype") not in DTYPE_BYTES or not isinstance(entry.get("shape"), list):
        return None
    shape = entry["shape"]
    if not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0 for size in shape):
        return None
    return Tensor(entry["dtype"], tuple(shape))


def _check_against_weights(config: dict, sizes: dict[str, int], tensors: dict[str, Tensor]) -> None:
    """The config's sizes are those of the weights: more layers, positions or vocabulary than the weights hold
    would be built anyway, from random numbers."""
    layers = {int(match.group(1)) for name in tensors for match in [LAYER_INDEX.search(name)] if match}
    for key in _present(sizes, LAYERS):
        if layers and sizes[key] != len(layers):
            raise FolderError(f"{CONFIG}: {key} = {sizes[key]}, but the weights hold {len(layers)} layers")
    embedding = _named(tensors, TOKEN_EMBEDDINGS)
    for key in _present(sizes, VOCABULARY):
        if embedding is not None and sizes[key] != embedding.shape[0]:
            raise FolderError(f"{CONFIG}: {key} = {sizes[key]}, but the weights' token embeddings have "
                              f"{embedding.shape[0]} rows")
    for key in _present(sizes, HIDDEN_WIDTHS):
        if embedding is not None and sizes[key] != embedding.shape[1]:
            raise FolderError(f"{CONFIG}: {key} = {sizes[key]}, but the weights' token embeddings are "
                              f"{embedding.shape[1]} wide")
    positions = _named(tensors, POSITION_EMBEDDINGS)
    for key in _present(sizes, POSITIONS):
        if positions is not None and sizes[key] > positions.shape[0]:
            raise FolderError(f"{CONFIG}: {key} = {sizes[key]}, but the weights' position embeddings have "
                              f"{positions.shape[0]} rows")
    dimensions = {size for tensor in tensors.values() for size in tensor.shape}
    widths = HIDDEN_WIDTHS + VOCABULARY + (() if any(key in config for key in EXPERTS) else FEED_FORWARD_WIDTHS)
    for key in _present(sizes, widths):
        if tensors and sizes[key] not in dimensions:
            raise FolderError(f"{CONFIG}: {key} = {sizes[key]} is the size of no dimension of the weights")
    heads = next((sizes[key] for key in ("n_head", "num_attention_heads") if key in sizes), None)
    if heads is not None and sizes.get("num_key_value_heads", heads) > heads:
        raise FolderError(f"{CONFIG}: num_key_value_heads = {sizes['num_key_value_heads']} is more than the "
                          f"{heads} attention heads")
    width = next((sizes[key] for key in HIDDEN_WIDTHS if key in sizes), None)
    if heads is not None and width is not None and "head_dim" not in sizes and heads > width:
        raise FolderError(f"{CONFIG}: {heads} attention heads are more than the width {width}")


def _memory_needed(config: dict, sizes: dict[str, int], tensors: dict[str, Tensor], upcast: bool) -> int:
    """Bytes of memory that loading the model takes at its peak: the weights (float16 ones kept beside their float32
    copy when upcast), or the fewest parameters the config implies if that is more, and the causal masks
    some architectures build from the positions."""
    half = upcast and any(tensor.dtype == "F16" for tensor in tensors.values())
    stored = sum(tensor.bytes * 3 if upcast and tensor.dtype == "F16" else tensor.bytes
                 for tensor in tensors.values())
    width = _first(sizes, HIDDEN_WIDTHS, 0)
    feed_forward = _first(sizes, FEED_FORWARD_WIDTHS, width)
    parameters = (_first(sizes, VOCABULARY, 0) * width
                  + _first(sizes, LAYERS, 0) * (2 * width * width + 2 * width * feed_forward))
    word = max((DTYPE_BYTES[tensor.dtype] for tensor in tensors.values()), default=4)
    needed = max(stored, parameters * (6 if half else word))
    per_layer = SQUARE_MASKS.get(config.get("model_type"))
    if per_layer is not None:
        positions = max((sizes[key] for key in _present(sizes, POSITIONS)), default=0)
        layers = max((sizes[key] for key in _present(sizes, LAYERS)), default=1) if per_layer else 1
        needed += 2 * positions * positions * layers  # the mask, and the matrix it is cut from
    return needed


def memory_available() -> int | None:
    """Bytes of memory the machine can give without swapping (MemAvailable), None where /proc/meminfo has none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _first(sizes: dict[str, int], keys: tuple[str, ...], default: int) -> int:
    return next((sizes[key] for key in keys if key in sizes), default)


def _present(sizes: dict[str, int], keys: tuple[str, ...]) -> list[str]:
    return [key for key in keys if key in sizes]


def _named(tensors: dict[str, Tensor], endings: tuple[str, ...]) -> Tensor | None:
    return next((tensor for name, tensor in tensors.items()
                 if name.endswith(endings) and len(tensor.shape) == 2), None)


def _short(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
