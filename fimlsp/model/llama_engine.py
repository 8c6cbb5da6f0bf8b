"""A GGUF model run in this process by llama.cpp (`llama-cpp-python`): the same exact constrained decoding as with
transformers, from the full next-token logits of each step, without torch.

One llama.cpp context holds one sequence's key-value cache. Every evaluation keeps the cache of the longest common
prefix of what the context holds and the tokens asked for, and evaluates only the rest: an attempt after the first
goes on from the prompt's cache (the tokens of the attempt before are dropped, the prompt's are not touched), and
a keystroke's prompt from the part it shares with the previous keystroke's. So a session forks from the prompt
without a copy of the cache.
"""

from __future__ import annotations

import ctypes
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fimlsp.model.backend import FimModel, PromptPass, Session
from fimlsp.model.choices import check_device, check_order, choose_format
from fimlsp.model.errors import ModelError, OutOfTime, first_line
from fimlsp.model.formats import FIM_FORMAT_KEY, FIM_ORDER_KEY, FimFormat

# A client may send lone surrogates (JSON escapes carry them); text is encoded to UTF-8 for llama.cpp.
_SURROGATE = re.compile("[\ud800-\udfff]")

# The context a GGUF model is given (its key-value cache is allocated whole at load), or the context it was trained
# for where that is less: a suggestion's prompt needs far less than a 32k-token model's window.
MAX_CONTEXT = 8192

# Tokens of a prompt read between two looks at a stop flag (`prompt_pass`).
PROMPT_CHUNK = 32

# Bytes of the longest token piece read from the vocabulary.
MAX_PIECE = 256


@dataclass
class LlamaCppModel(FimModel):
    """A GGUF model run by llama.cpp in this process."""

    llama: object = None
    controls: dict[str, int] | None = None  # control token text -> id

    def encode(self, text: str) -> list[int]:
        data = _SURROGATE.sub("\ufffd", text).encode("utf-8")
        return self.llama.tokenize(data, add_bos=False, special=False) if data else []

    def control_id(self, piece: str) -> int:
        return self.controls[piece]

    def prompt_pass(self, ids: list[int], shared: bool = False, deadline: float | None = None) -> PromptPass:
        """A `deadline` that carries a stop flag (`earley.Deadline`: a superseded request) is polled between chunks
        of `PROMPT_CHUNK` tokens, and ends the pass with `OutOfTime`; the chunks read stay in the cache, for the
        next keystroke's prompt. The model's measured speed (`timed_prompt`) counts the tokens evaluated, not
        those the cache held."""
        clock = time.perf_counter()
        common = min(self.held(ids), len(ids) - 1)  # at least the last token is evaluated, for its logits
        stopped = getattr(deadline, "stopped", None)
        if stopped is not None:
            for end in range(common + PROMPT_CHUNK, len(ids), PROMPT_CHUNK):
                if stopped():
                    raise OutOfTime("the request was stopped while its prompt was read")
                self.log_probs_after(ids[:end])
        log_probs = self.log_probs_after(ids)
        seconds = time.perf_counter() - clock
        self.timed_prompt(len(ids) - common, seconds)
        return _LlamaPromptPass(self, list(ids), log_probs, seconds, len(ids) - common)

    def held(self, ids: Sequence[int]) -> int:
        """How many of the first tokens of `ids` the context's cache holds."""
        llama = self.llama
        held = llama.input_ids[:min(llama.n_tokens, len(ids))]
        differs = np.flatnonzero(held != np.asarray(ids[:len(held)], dtype=held.dtype))
        return int(differs[0]) if len(differs) else len(held)

    def log_probs_after(self, ids: Sequence[int]) -> np.ndarray:
        """The next token's log-probabilities after `ids`, evaluating only what the context does not hold yet."""
        llama = self.llama
        llama.n_tokens = min(self.held(ids), len(ids) - 1)  # at least the last token is evaluated, for its logits
        llama.eval(ids[llama.n_tokens:])  # drops the cache past n_tokens first
        logits = np.ctypeslib.as_array(llama_cpp_module().llama_get_logits_ith(llama._ctx.ctx, -1),
                                       shape=(len(self.token_bytes),))
        shifted = logits - logits.max()
        return (shifted - np.log(np.exp(shifted).sum())).astype(np.float32)

    def close(self) -> None:
        if self.llama is not None:
            self.llama.close()
            self.llama = None


class _LlamaPromptPass(PromptPass):
    """The prompt evaluated at once; each session goes on from the context's cache of it. `evaluated`: the tokens
    its reading evaluated, the prompt's less those the cache held."""

    def __init__(self, model: LlamaCppModel, ids: list[int], log_probs: np.ndarray, seconds: float, evaluated: int):
        self.model, self.ids, self.log_probs, self.seconds, self.evaluated = model, ids, log_probs, seconds, evaluated

    def session(self, rows: int = 1) -> Session:
        if rows != 1:
            raise ValueError("a llama.cpp session holds one sequence (LlamaCppModel.batches is False)")
        return _LlamaSession(self.model, self.ids)


class _LlamaSession(Session):
    """One sequence going on from the prompt, a token a step."""

    def __init__(self, model: LlamaCppModel, ids: list[int]):
        self.model, self.ids = model, list(ids)

    def step(self, tokens: Sequence[int]) -> list[np.ndarray]:
        (token,) = tokens
        self.ids.append(token)
        return [self.model.log_probs_after(self.ids)]

    def keep(self, rows: Sequence[int]) -> None:
        if list(rows) != [0]:
            raise ValueError("a llama.cpp session holds one sequence")


def load_gguf(path: str | os.PathLike, device: str | None = None, fim_format: str | None = None,
              order: str | None = None, threads: int | None = None) -> LlamaCppModel:
    """Load a GGUF file with llama.cpp. The FIM format and order are those `fimlsp export-gguf` recorded in its
    metadata, else detected from the control tokens of its vocabulary (prefix-suffix-middle). `threads`: llama.cpp's
    CPU threads, for a prompt's batch as for each token (default: OMP_NUM_THREADS where set, as torch reads it, else
    `default_threads`)."""
    location = Path(os.path.expanduser(str(path)))
    if not location.is_file():
        raise ModelError(f"GGUF file {str(path)!r} does not exist")
    check_device(device)
    llama_cpp = llama_cpp_module()
    on_gpu = device is not None and device != "cpu"
    if on_gpu and not llama_cpp.llama_supports_gpu_offload():
        raise ModelError(f"device {device!r} was asked for, but this llama-cpp-python was built for the CPU only")
    if threads is None and os.environ.get("OMP_NUM_THREADS", "").isdigit():
        threads = int(os.environ["OMP_NUM_THREADS"]) or None
    threads = threads or default_threads()
    try:
        llama = llama_cpp.Llama(str(location), n_ctx=MAX_CONTEXT, logits_all=False, verbose=False,
                                n_gpu_layers=-1 if on_gpu else 0, n_threads=threads, n_threads_batch=threads)
    except (ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"cannot load GGUF file {str(path)!r} with llama.cpp: {first_line(error)} (a truncated "
                         "or corrupt file, or an architecture this llama.cpp does not know)") from None
    try:
        metadata = llama.metadata
        vocabulary, controls = gguf_vocabulary(llama)
        chosen = gguf_format(metadata, controls, fim_format, str(path))
        if order is None:
            order = metadata.get(FIM_ORDER_KEY, "psm")
        check_order(chosen, order)
    except ModelError:
        llama.close()
        raise
    stops = {controls[token] for token in chosen.stops if token in controls}
    stops.update(special for special in (llama.token_eos(), llama._model.token_eot()) if special >= 0)
    window = min(llama.n_ctx(), llama._model.n_ctx_train())
    return LlamaCppModel(chosen, order, vocabulary, frozenset(stops), window, str(path), device or "cpu",
                         llama=llama, controls=controls)


def default_threads() -> int:
    """Half the logical CPUs (the physical cores, where each has two), for a prompt's batch too: llama-cpp-python's
    default gives a batch every logical CPU, and its threads then wait on each other and on the machine's other
    work (a 224-token prompt of the shipped model on two busy cores: 0.26-1.35 s with 2 threads, 0.08 s with 1)."""
    return max((os.cpu_count() or 2) // 2, 1)


_quiet_log = None  # llama.cpp's log callback while fimlsp runs it: kept referenced, or ctypes would free it


def llama_cpp_module():
    """The `llama_cpp` module, its log silenced: llama.cpp logs warnings at the level llama-cpp-python shows even
    when not verbose (a context longer than the model was trained for), and fimlsp reports a load's failure itself."""
    global _quiet_log
    import llama_cpp

    if _quiet_log is None:
        _quiet_log = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_quiet_log, ctypes.c_void_p(0))
    return llama_cpp


def gguf_vocabulary(llama) -> tuple[list[bytes | None], dict[str, int]]:
    """Each token's bytes (None for control tokens, which are never text) and the ids of the control and
    user-defined tokens by their text."""
    llama_cpp = llama_cpp_module()
    vocab = llama._model.vocab
    buffer = ctypes.create_string_buffer(MAX_PIECE)
    hidden = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN | llama_cpp.LLAMA_TOKEN_ATTR_UNUSED
    table: list[bytes | None] = []
    controls: dict[str, int] = {}
    for token in range(llama.n_vocab()):
        attributes = llama_cpp.llama_vocab_get_attr(vocab, token)
        special = bool(attributes & hidden)
        length = llama_cpp.llama_token_to_piece(vocab, token, buffer, MAX_PIECE, 0, special)
        piece = buffer.raw[:max(length, 0)]
        if special or attributes & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED:
            controls[piece.decode("utf-8", "replace")] = token
        table.append(None if special or not piece else piece)
    return table, controls


def gguf_format(metadata: dict, controls: dict[str, int], fim_format: str | None, name: str) -> FimFormat:
    """The FIM format asked for, else the one the file records, else the one its control tokens show."""
    label = f"{metadata.get('general.name', '')} {Path(name).name}"  # not the folders: a path may name anything
    return choose_format(controls, fim_format or metadata.get(FIM_FORMAT_KEY), name,
                         metadata.get("general.architecture", ""), label)
