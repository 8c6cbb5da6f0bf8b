"""Write a GPTBigCode model folder (the shipped default model) as a GGUF file that llama.cpp runs as its `starcoder`
architecture: the hyperparameters, the weights under llama.cpp's tensor names, the byte-level BPE tokenizer with
its FIM control tokens, and the FIM format and prompt order of the folder's `fim.json` (a model fimlsp trained)
under keys of our own; without them the loader detects the format from the control tokens, as for a hub GGUF.

Reads the folder with `safetensors` into NumPy and writes with the `gguf` package: no torch, no transformers.
Weight matrices keep their saved precision (f16 or f32); norms and biases are written as f32, as llama.cpp's own
converter does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fimlsp.model.folder import CONFIG, TOKENIZER, TOKENIZER_CONFIG
from fimlsp.model.formats import FIM_FORMAT_KEY, FIM_ORDER_KEY, FIM_SETTINGS, FORMATS, detect_format, preferred_order
from fimlsp.model.errors import ModelError

# GPTBigCode activations that are llama.cpp's GELU (the tanh approximation) under other names.
TANH_GELU = ("gelu_pytorch_tanh", "gelu_new", "gelu_fast")

# Tokenizer token ids llama.cpp reads from the metadata, by the FIM control token (of any format) that holds them.
_FIM_KEYS = {
    "fim_pre": ("<fim_prefix>", "<fim-prefix>"),
    "fim_suf": ("<fim_suffix>", "<fim-suffix>"),
    "fim_mid": ("<fim_middle>", "<fim-middle>"),
    "fim_pad": ("<fim_pad>", "<fim-pad>"),
    "fim_sep": ("<file_sep>",),
    "fim_rep": ("<repo_name>", "<reponame>"),
}


def export_gguf(model_dir: Path, out: Path) -> Path:
    """Write the GPTBigCode model in `model_dir` to `out` as a llama.cpp `starcoder` GGUF file; the path written.
    ModelError for a folder this cannot convert (another architecture, no safetensors weights, a tokenizer that is
    not byte-level BPE)."""
    import gguf

    model_dir, out = Path(model_dir), Path(out)
    config = _json(model_dir, CONFIG)
    _check_convertible(config, model_dir)
    tokenizer = _json(model_dir, TOKENIZER)
    tokens, types, merges, special = _vocabulary(tokenizer, int(config.get("vocab_size", 0)), model_dir)
    tensors = _tensors(model_dir, int(config["n_layer"]))
    fim_settings = _fim_settings(model_dir, set(tokens))

    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(out), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.STARCODER])
    half = any(array.dtype == np.float16 for array in tensors.values())
    embedding = int(config["n_embd"])
    heads = int(config["n_head"])
    writer.add_name(model_dir.resolve().name)
    writer.add_context_length(int(config["n_positions"]))
    writer.add_embedding_length(embedding)
    writer.add_feed_forward_length(int(config.get("n_inner") or 4 * embedding))
    writer.add_block_count(int(config["n_layer"]))
    writer.add_head_count(heads)
    writer.add_head_count_kv(1 if config.get("multi_query", True) else heads)
    writer.add_layer_norm_eps(float(config.get("layer_norm_epsilon", 1e-5)))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if half else gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")  # a plain ByteLevel pre-tokenizer splits with GPT-2's pattern
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    eos = special.get(_token_name(model_dir, "eos_token"), config.get("eos_token_id"))
    bos = special.get(_token_name(model_dir, "bos_token"), config.get("bos_token_id"))
    if bos is not None:
        writer.add_bos_token_id(int(bos))
    if eos is not None:
        writer.add_eos_token_id(int(eos))
    pad = special.get(_token_name(model_dir, "pad_token"))
    if pad is not None:
        writer.add_pad_token_id(int(pad))
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    for key, names in _FIM_KEYS.items():
        found = next((special[name] for name in names if name in special), None)
        if found is not None:
            writer.add_uint32(f"tokenizer.ggml.{key}_token_id", int(found))
    if fim_settings is not None:
        writer.add_string(FIM_FORMAT_KEY, fim_settings[0])
        writer.add_string(FIM_ORDER_KEY, fim_settings[1])

    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _json(model_dir: Path, file: str) -> dict:
    path = model_dir / file
    if not path.is_file():
        raise ModelError(f"{str(model_dir)!r} is not a model folder fimlsp can convert: it has no {file}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelError(f"model folder {str(model_dir)!r}: its {file} cannot be read as JSON ({error})") from None
    if not isinstance(data, dict):
        raise ModelError(f"model folder {str(model_dir)!r}: its {file} is not a JSON object")
    return data


def _check_convertible(config: dict, model_dir: Path) -> None:
    """ModelError unless the config is a GPTBigCode model that llama.cpp's `starcoder` graph computes as is."""
    kind = config.get("model_type")
    if kind != "gpt_bigcode":
        raise ModelError(f"model folder {str(model_dir)!r} is a {kind!r} model: export-gguf converts GPTBigCode "
                         "(gpt_bigcode) models only; for others use llama.cpp's convert_hf_to_gguf.py")
    missing = [key for key in ("n_embd", "n_head", "n_layer", "n_positions") if not isinstance(config.get(key), int)]
    if missing:
        raise ModelError(f"model folder {str(model_dir)!r}: its {CONFIG} lacks {', '.join(missing)}")
    activation = config.get("activation_function", "gelu_pytorch_tanh")
    if activation not in TANH_GELU:
        raise ModelError(f"model folder {str(model_dir)!r} uses the activation {activation!r}; llama.cpp's starcoder "
                         f"architecture computes {TANH_GELU[0]} only")
    if config.get("scale_attn_weights", True) is False:
        raise ModelError(f"model folder {str(model_dir)!r} does not scale its attention weights, which llama.cpp's "
                         "starcoder architecture always does")


def _vocabulary(tokenizer: dict, vocab_size: int, model_dir: Path) -> tuple[list[str], list[int], list[str], dict]:
    """The tokens by id in their byte-level spelling, their llama.cpp token types, the merges as `a b` lines, and
    the ids of the special tokens by name."""
    import gguf

    model = tokenizer.get("model") or {}
    described = json.dumps(tokenizer.get("pre_tokenizer")) + json.dumps(tokenizer.get("decoder"))
    if model.get("type") != "BPE" or "ByteLevel" not in described:
        raise ModelError(f"model folder {str(model_dir)!r}: its tokenizer is not byte-level BPE, which export-gguf "
                         "writes as llama.cpp's gpt2 tokenizer")
    vocabulary: dict[str, int] = dict(model.get("vocab") or {})
    special: dict[str, int] = {}
    for added in tokenizer.get("added_tokens") or []:
        vocabulary[added["content"]] = added["id"]
        if added.get("special"):
            special[added["content"]] = added["id"]
    size = max(vocab_size, max(vocabulary.values()) + 1)
    tokens = [f"[PAD{index}]" for index in range(size)]
    types = [int(gguf.TokenType.UNUSED)] * size
    for token, index in vocabulary.items():
        tokens[index] = token
        types[index] = int(gguf.TokenType.CONTROL if token in special else gguf.TokenType.NORMAL)
    merges = [merge if isinstance(merge, str) else " ".join(merge) for merge in model.get("merges") or []]
    return tokens, types, merges, special


def _tensors(model_dir: Path, blocks: int) -> dict[str, np.ndarray]:
    """The weights by llama.cpp tensor name; ModelError for a tensor llama.cpp's starcoder graph has no place for."""
    import gguf
    from safetensors.numpy import load_file

    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise ModelError(f"model folder {str(model_dir)!r} has no .safetensors weights, which export-gguf reads")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.STARCODER, blocks)
    tensors: dict[str, np.ndarray] = {}
    for file in files:
        for key, array in load_file(str(file)).items():
            if key.endswith(".attn.bias") or key.endswith(".masked_bias"):
                continue  # the causal mask, a buffer rather than a weight
            name = names.get_name(key, try_suffixes=(".weight", ".bias"))
            if name is None:
                raise ModelError(f"model folder {str(model_dir)!r} has a tensor {key!r} that llama.cpp's starcoder "
                                 "architecture has no place for")
            if array.ndim < 2 or array.dtype not in (np.float16, np.float32):
                array = array.astype(np.float32)
            tensors[name] = array
    return tensors


def _token_name(model_dir: Path, key: str) -> str | None:
    """A special token's text as tokenizer_config.json names it (`eos_token`), if it does."""
    path = model_dir / TOKENIZER_CONFIG
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return None
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _fim_settings(model_dir: Path, vocabulary: set[str]) -> tuple[str, str] | None:
    """The FIM format and prompt order the folder's `fim.json` names, None without one; ModelError for a model with
    none of the FIM control tokens."""
    if detect_format(vocabulary) is None:
        raise ModelError(f"{str(model_dir)!r} is not a fill-in-the-middle model: its tokenizer has none of the FIM "
                         f"control tokens of {', '.join(sorted(FORMATS))}")
    if not (model_dir / FIM_SETTINGS).is_file():
        return None
    named = _json(model_dir, FIM_SETTINGS).get("format")
    if named not in FORMATS or not all(token in vocabulary for token in FORMATS[named].controls):
        raise ModelError(f"model folder {str(model_dir)!r}: its {FIM_SETTINGS} names the format {named!r}, which its "
                         "tokenizer does not have")
    try:
        order = preferred_order(model_dir)
    except ValueError as error:
        raise ModelError(f"model folder {str(model_dir)!r}: {error}") from None
    if order not in FORMATS[named].orders:
        raise ModelError(f"model folder {str(model_dir)!r}: its {FIM_SETTINGS} names the order {order!r}, which "
                         f"format {named!r} does not have")
    return named, order
