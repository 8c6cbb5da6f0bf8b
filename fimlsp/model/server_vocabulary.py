"""The vocabulary of a model on a server (`fimlsp.model.remote`), which a server does not send: it comes from a local
source with the same vocabulary (a model folder or a GGUF file, by default the shipped model's folder), and the
server's tokenization is checked against it at connect time (`check_tokenization`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fimlsp.model.choices import GGUF_SUFFIX, check_order, choose_format
from fimlsp.model.errors import ModelError
from fimlsp.model.folder import CONFIG, TOKENIZER
from fimlsp.model.formats import FIM_ORDER_KEY, FimFormat, preferred_order
from fimlsp.model.token_text import token_bytes

if TYPE_CHECKING:
    from fimlsp.model.remote import RemoteModel

# A sample the server must tokenize as the local vocabulary does: code, a non-ASCII character, control tokens.
PROBE = "def f(x):\n    return {'a': x}  # é ok\n"


class TokenizerFile:
    """A model folder's `tokenizer.json` read with `tokenizers` alone (no `transformers`, no torch), with what
    `token_bytes` asks of a tokenizer."""

    def __init__(self, path: Path):
        from tokenizers import Tokenizer

        self.backend_tokenizer = Tokenizer.from_file(str(path))
        added = self.backend_tokenizer.get_added_tokens_decoder().values()
        self.all_special_tokens = [token.content for token in added if token.special]

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    def __len__(self) -> int:
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return self.backend_tokenizer.encode(text, add_special_tokens=False).ids

    def close(self) -> None:
        pass


class GgufTokenizer:
    """A GGUF file's vocabulary read by llama.cpp (`vocab_only`: no weights, no context)."""

    def __init__(self, llama):
        self.llama = llama

    def encode(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode(), add_bos=False, special=False)

    def close(self) -> None:
        self.llama.close()


@dataclass
class LocalVocabulary:
    """What a served model is known by here: its FIM format and order, each token's bytes, the ids of its control
    and stop tokens by name, its stops, its context window, and the tokenizer that encodes prompts."""

    format: FimFormat
    order: str
    token_bytes: list[bytes | None]
    controls: dict[str, int]
    stops: frozenset[int]
    window: int
    label: str
    tokenizer: TokenizerFile | GgufTokenizer


def local_vocabulary(name: str | os.PathLike | None, fim_format: str | None, order: str | None) -> LocalVocabulary:
    """The vocabulary, FIM format, prompt order and context window of the model folder or GGUF file `name`
    (default: the shipped model's folder)."""
    from fimlsp.weights import default_model_path

    location = Path(os.path.expanduser(str(name))) if name is not None else default_model_path()
    label = str(name) if name is not None else str(location)
    if location.suffix == GGUF_SUFFIX:
        return _gguf_vocabulary(location, label, fim_format, order)
    return _folder_vocabulary(location, label, fim_format, order)


def _folder_vocabulary(folder: Path, label: str, fim_format: str | None, order: str | None) -> LocalVocabulary:
    if not (folder / TOKENIZER).is_file():
        raise ModelError(f"{label!r} is neither a model folder with a {TOKENIZER} nor a .gguf file: --model-server takes "
                         "the served model's vocabulary from one (--model)")
    try:
        tokenizer = TokenizerFile(folder / TOKENIZER)
    except Exception as error:  # tokenizers' own exception types vary
        raise ModelError(f"cannot read the tokenizer of {label!r}: {error}") from None
    vocabulary = tokenizer.get_vocab()
    config = _json(folder / CONFIG)
    chosen = choose_format(vocabulary, fim_format, label, str(config.get("model_type", "")))
    try:
        order = order or preferred_order(folder)
    except ValueError as error:
        raise ModelError(f"model folder {label!r}: {error}") from None
    controls = {token: vocabulary[token] for token in chosen.named_tokens if token in vocabulary}
    window = next((config[key] for key in ("max_position_embeddings", "n_positions", "n_ctx") if config.get(key)),
                  2048)
    return _vocabulary(chosen, order, token_bytes(tokenizer), controls, set(), int(window), label, tokenizer)


def _gguf_vocabulary(path: Path, label: str, fim_format: str | None, order: str | None) -> LocalVocabulary:
    """The vocabulary of a GGUF file, read by llama.cpp as the engine does (`llama_engine`), without its weights."""
    from fimlsp.model.llama_engine import gguf_format, gguf_vocabulary, llama_cpp_module

    if not path.is_file():
        raise ModelError(f"GGUF file {label!r} does not exist")
    try:
        llama = llama_cpp_module().Llama(str(path), vocab_only=True, verbose=False)
    except (ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"cannot read the vocabulary of GGUF file {label!r} with llama.cpp: {error}") from None
    tokenizer = GgufTokenizer(llama)
    try:
        table, controls = gguf_vocabulary(llama)
        chosen = gguf_format(llama.metadata, controls, fim_format, label)
    except ModelError:
        tokenizer.close()
        raise
    metadata = llama.metadata
    window = metadata.get(f"{metadata.get('general.architecture')}.context_length", "2048")
    ends = {llama.token_eos()} - {-1}
    return _vocabulary(chosen, order or metadata.get(FIM_ORDER_KEY, "psm"), table, controls, ends, int(window),
                       label, tokenizer)


def _vocabulary(chosen: FimFormat, order: str, table: list[bytes | None], controls: dict[str, int], ends: set[int],
                window: int, label: str, tokenizer) -> LocalVocabulary:
    """The vocabulary with the format's stop tokens (and the vocabulary's own `ends`) as its stops."""
    try:
        check_order(chosen, order)
    except ModelError:
        tokenizer.close()
        raise
    named = {token: controls[token] for token in chosen.named_tokens if token in controls}
    stops = frozenset({named[token] for token in chosen.stops if token in named} | ends)
    return LocalVocabulary(chosen, order, table, named, stops, window, label, tokenizer)


def _json(path: Path) -> dict:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}


def check_tokenization(model: RemoteModel, deadline: float | None = None) -> str:
    """Refuse a server whose tokenization differs from the local vocabulary's; the status note where the server has
    no endpoint to check with (llama.cpp's `/tokenize`, llama_cpp.server's `/extras/tokenize`, vLLM's
    `/tokenize`, whatever the protocol: llama-server may be asked through its OpenAI-compatible API)."""
    controls = model.format.controls
    text = controls[0] + PROBE + controls[1]
    expected = [model.control_id(controls[0])] + model.encode(PROBE) + [model.control_id(controls[1])]
    asks = [("/tokenize", {"content": text, "add_special": False, "parse_special": True}),
            ("/extras/tokenize", {"input": text}),
            ("/tokenize", {"prompt": text, "add_special_tokens": False})]
    for path, body in asks:
        answer = model.answer_or_none("POST", path, body, deadline)
        if answer is None or not isinstance(answer.get("tokens"), list) or not answer["tokens"]:
            continue  # no such endpoint, or one that read another field than this body's (no tokens for the probe)
        tokens = [each["id"] if isinstance(each, dict) else each for each in answer["tokens"]]
        if tokens != expected:
            raise ModelError(f"the server at {model.url} tokenizes differently from the vocabulary of {model.name} "
                             f"({tokens[:12]} for {expected[:12]}): name the served model's folder with --model")
        return ""
    return (f"the server at {model.url} has no tokenize endpoint: its vocabulary is taken to be that of "
            f"{model.name}, unchecked")
