"""Load a causal FIM model and its tokenizer with `transformers`, from a local folder or a hub id."""

from __future__ import annotations

import bisect
import inspect
import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fimlsp.model.formats import FORMATS, LEFT, RIGHT, FimFormat, detect_format, preferred_order
from fimlsp.model.token_text import token_bytes

# A client may send lone surrogates (JSON escapes carry them); tokenizers take only valid Unicode.
_SURROGATE = re.compile("[\ud800-\udfff]")


# Tokens at the left context's end that token healing may take back (`FimModel.healed_prompt`).
MAX_HEALED_TOKENS = 4

# The devices a model may be put on; torch accepts more names (`meta`, `xla`) on which no completion can run.
DEVICES = re.compile(r"cpu|cuda(:\d+)?|mps")
DEVICE_CHOICES = "cpu, cuda, cuda:N or mps"
# Files of a model folder whose `auto_map` names the folder's own Python code, which `transformers` would import.
CODE_MAPS = ("config.json", "tokenizer_config.json")
# Taken-back byte strings whose agreeing tokens are kept (`FimModel.tokens_agreeing`).
MAX_KEPT_AGREEING = 1024

# The fewest tokens a prompt is cut to when a time budget would leave it fewer (`FimModel.prompt_tokens_within`),
# and the shortest prompt whose forward pass measures the model's speed (shorter ones are mostly overhead).
MIN_PROMPT_TOKENS = 64

# Seconds to wait for the hub when a hub id is not in the local cache: enough for a TLS handshake on a slow link,
# short enough that an editor is not left waiting on a silent network.
HUB_TIMEOUT = 3.0


class ModelError(Exception):
    """The model cannot be used: a missing folder, no network for a hub id, not a FIM model."""


@dataclass
class FimModel:
    """A loaded model with everything decoding needs, computed once."""

    model: object
    tokenizer: object
    format: FimFormat
    order: str
    device: str
    token_bytes: list[bytes | None]
    stop_ids: frozenset[int]
    context_window: int
    name: str
    prompt_seconds_per_token: float | None = None  # measured on the latest long prompts (`timed_prompt`)

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

    def timed_prompt(self, tokens: int, seconds: float) -> None:
        """Record a prompt's forward pass: the speed `prompt_tokens_within` expects, from passes long enough to
        measure it, half the latest, half what came before (the machine's load changes)."""
        if tokens < MIN_PROMPT_TOKENS:
            return
        rate = seconds / tokens
        previous = self.prompt_seconds_per_token
        self.prompt_seconds_per_token = rate if previous is None else (rate + previous) / 2

    def prompt_tokens_within(self, seconds: float) -> int | None:
        """The most prompt tokens whose forward pass should take at most `seconds`, never fewer than
        `MIN_PROMPT_TOKENS`; None (no cut) until a pass has been measured."""
        rate = self.prompt_seconds_per_token
        if rate is None or rate <= 0:
            return None
        return max(MIN_PROMPT_TOKENS, int(seconds / rate))

    @cached_property
    def _cache_name(self) -> str:
        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    def tokens_of(self, data: bytes) -> tuple[int, ...]:
        """The ids of the tokens whose bytes are exactly `data`."""
        return self._tokens_by_bytes.get(data, ())

    @cached_property
    def _tokens_by_bytes(self) -> dict[bytes, tuple[int, ...]]:
        found: dict[bytes, list[int]] = {}
        for token, data in enumerate(self.token_bytes):
            if data and token not in self.stop_ids:
                found.setdefault(data, []).append(token)
        return {data: tuple(tokens) for data, tokens in found.items()}

    def prompt(self, left: str, right: str, reserve: int, limit: int | None = None) -> list[int]:
        """Token ids of the FIM prompt, cutting the left context's start and the right context's end by tokens
        so that `reserve` tokens of middle still fit the context window, and the prompt has at most `limit` tokens."""
        pieces = []
        for piece in self.format.templates[self.order]:
            if piece in (LEFT, RIGHT):
                pieces.append(piece)
            elif piece in self.format.controls:
                pieces.append([self.tokenizer.convert_tokens_to_ids(piece)])
            else:
                pieces.append(self.tokenizer.encode(piece, add_special_tokens=False))
        fixed = sum(len(piece) for piece in pieces if isinstance(piece, list))
        room = max(0, min(self.context_window - reserve, limit or self.context_window) - fixed)
        left_ids = self._encode_end(left, room, from_end=True)
        right_ids = self._encode_end(right, room, from_end=False)
        if len(left_ids) + len(right_ids) > room:
            keep_right = min(len(right_ids), room // 2 if len(left_ids) > room // 2 else room - len(left_ids))
            keep_left = min(len(left_ids), room - keep_right)
            left_ids = left_ids[len(left_ids) - keep_left:]
            right_ids = right_ids[:keep_right]
        ids: list[int] = []
        for piece in pieces:
            ids.extend(left_ids if piece == LEFT else right_ids if piece == RIGHT else piece)
        return ids

    def healed_prompt(self, left: str, right: str, reserve: int, limit: int | None = None) -> tuple[list[int], bytes]:
        """`prompt` with the left context's last tokens taken back, where the middle goes on from the left context
        (SPM order), and their bytes, which the middle's first tokens must write again (token healing).

        A cursor rarely falls where the tokenizer would end a token: after `return ` the prompt ends in a lone space
        token, which training text puts before a comment far more often than before code, so a model asked to go
        on from it writes a comment. Taken back, the space becomes the start of the token the model prefers there
        (` None`, ` x`). The last token is taken back, and the one before it too while what is taken back could
        still be the start of one token (`    pri` ends in ` p`, `ri`: both go, and ` print` can follow).

        So is the indentation of a line with nothing after the cursor, where an editor puts it after Enter: the
        tokenizer gives an indentation's last space to the word after it (a line break and seven spaces, then
        ` return`), so a prompt that ends in the whole indentation ends in a token that code rarely goes on from,
        and the model ended there at once (an empty middle) or wrote a stray space before its code. Nothing is
        taken back at a line's start (the middle may write its own indentation) or inside an indentation that the
        line goes on with."""
        ids = self.prompt(left, right, reserve, limit)
        last_line = left[max(left.rfind("\n"), left.rfind("\r")) + 1:]
        inside_indentation = not last_line.strip(" \t\f") and right[:1] not in ("", "\n", "\r")
        if not last_line or inside_indentation or self.format.templates[self.order][-1] != LEFT:
            return ids, b""
        taken = b""
        count = 0
        while count < min(MAX_HEALED_TOKENS, len(ids)):
            data = self.token_bytes[ids[-1 - count]] if ids[-1 - count] < len(self.token_bytes) else None
            if not data or (count and not self._starts_a_token(data + taken)):
                break
            taken, count = data + taken, count + 1
        return ids[:len(ids) - count], taken

    def _starts_a_token(self, data: bytes) -> bool:
        """Whether some text token's bytes start with `data`."""
        spelled = self._spelled_tokens
        found = bisect.bisect_left(spelled, (data,))
        return found < len(spelled) and spelled[found][0].startswith(data)

    def tokens_agreeing(self, data: bytes) -> list[int]:
        """The ids of the text tokens that write `data` again or begin to: their bytes start with it (a run of the
        tokens sorted by their bytes), or are a non-empty start of it. Kept: every attempt of every completion
        after a space asks for the same thousands of tokens."""
        found = self._agreeing.get(data)
        if found is None:
            if len(self._agreeing) >= MAX_KEPT_AGREEING:
                self._agreeing.clear()
            found = self._agreeing[data] = self._find_agreeing(data)
        return found

    @cached_property
    def _agreeing(self) -> dict[bytes, list[int]]:
        return {}

    def _find_agreeing(self, data: bytes) -> list[int]:
        spelled = self._spelled_tokens
        found = [token for length in range(1, len(data)) for token in self.tokens_of(data[:length])]
        index = bisect.bisect_left(spelled, (data,))
        while index < len(spelled) and spelled[index][0].startswith(data):
            found.append(spelled[index][1])
            index += 1
        return found

    @cached_property
    def blank_tokens(self) -> list[tuple[int, int]]:
        """(id, length in bytes) of the text tokens that write only whitespace."""
        return [(token, len(data)) for data, tokens in self._tokens_by_bytes.items() if data.isspace()
                for token in tokens]

    @cached_property
    def _spelled_tokens(self) -> list[tuple[bytes, int]]:
        """(bytes, id) of every text token, sorted."""
        return sorted((data, token) for data, tokens in self._tokens_by_bytes.items() for token in tokens)

    def _encode_end(self, text: str, tokens: int, from_end: bool) -> list[int]:
        """At least `tokens` tokens of `text` next to the cursor (all of it if shorter), without encoding a large
        file whole: the slice grows until it yields enough tokens."""
        reach = 8 * max(tokens, 1)
        while True:
            piece = text[-reach:] if from_end else text[:reach]
            ids = self.tokenizer.encode(_SURROGATE.sub("\ufffd", piece), add_special_tokens=False) if piece else []
            if len(ids) >= tokens or reach >= len(text):
                return ids
            reach *= 4


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(
    name: str | os.PathLike | None = None,
    device: str | None = None,
    fim_format: str | None = None,
    order: str | None = None,
) -> FimModel:
    """Load a model folder or hub id (default: the model shipped with fimlsp) in the dtype it was saved in.
    `order` None: the order the folder's `fim.json` names, else prefix-suffix-middle.

    A hub id in the local cache loads from it without the network; one that is not fails at once, before torch is
    imported, when the hub cannot be reached.

    No code from a model folder runs: a folder with its own code (`auto_map`) is refused before anything of it
    loads, and `transformers` is told never to trust remote code (it would ask on stdout otherwise)."""
    from fimlsp.models import default_model_path

    if name is None:
        name = default_model_path()
    location = Path(os.path.expanduser(str(name)))
    looks_local = location.exists() or str(name).startswith((".", "/", "~")) or str(name).count("/") > 1
    if looks_local and location.exists() and not location.is_dir():
        raise ModelError(f"{str(name)!r} is a file, not a model folder")
    if looks_local and not location.is_dir():
        raise ModelError(f"model folder {str(name)!r} does not exist")
    if looks_local and not (location / "config.json").is_file():
        raise ModelError(f"{str(name)!r} is not a model folder (it has no config.json)")
    if looks_local:
        _refuse_custom_code(location, str(name))
        try:
            folder_order = preferred_order(location)
        except ValueError as error:
            raise ModelError(f"model folder {str(name)!r}: {error}") from None
    if device is not None and not DEVICES.fullmatch(device):
        raise ModelError(f"device {device!r} is not one fimlsp can run a model on: use {DEVICE_CHOICES}")
    cached = not looks_local and _hub_cached_or_reachable(str(name))

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    device = device or default_device()
    _check_available(device, torch)
    source = str(location) if looks_local else str(name)
    offline = looks_local or cached
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=offline, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(source, dtype="auto", local_files_only=offline,
                                                     trust_remote_code=False)
    except (OSError, ValueError, KeyError) as error:
        where = "folder" if looks_local else "local cache" if cached else "hub"
        raise ModelError(f"cannot load model {str(name)!r} from the {where}: {_first_line(error)}") from error
    config = model.config
    if fim_format is not None:
        if fim_format not in FORMATS:
            raise ModelError(f"unknown FIM format {fim_format!r}; known: {', '.join(sorted(FORMATS))}")
        chosen = FORMATS[fim_format]
        missing = [token for token in chosen.controls if token not in tokenizer.get_vocab()]
        if missing:
            raise ModelError(f"model {str(name)!r} has no {', '.join(missing)} token for format {fim_format!r}")
    else:
        chosen = detect_format(tokenizer.get_vocab(), str(name), getattr(config, "model_type", ""))
        if chosen is None:
            raise ModelError(
                f"{str(name)!r} is not a fill-in-the-middle model: its tokenizer has none of the FIM control "
                f"tokens of {', '.join(sorted(FORMATS))}"
            )
    if order is None:
        order = folder_order if looks_local else "psm"
    if order not in chosen.orders:
        raise ModelError(f"format {chosen.name!r} supports the orders {', '.join(chosen.orders)}, not {order!r}")
    if device == "cpu" and model.dtype == torch.float16:
        model = model.float()  # half precision has no fast CPU kernels; bf16 and fp32 stay as saved
    model.to(device)
    model.eval()
    vocabulary = tokenizer.get_vocab()
    stops = {vocabulary[token] for token in chosen.stops if token in vocabulary}
    if tokenizer.eos_token_id is not None:
        stops.add(tokenizer.eos_token_id)
    window = next(
        (getattr(config, key) for key in ("max_position_embeddings", "n_positions", "n_ctx") if getattr(config, key, None)),
        2048,
    )
    return FimModel(model, tokenizer, chosen, order, device, token_bytes(tokenizer), frozenset(stops), int(window),
                    str(name))


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


def _hub_cached_or_reachable(repo_id: str) -> bool:
    """True if `repo_id` is in the local hub cache, False if it is not but the hub answers; a ModelError naming
    the ways out at once when neither holds, instead of the download's retries (48 s without a network)."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, HfHubHTTPError, RepositoryNotFoundError

    try:
        if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
            return True
    except HFValidationError as error:
        raise ModelError(f"{repo_id!r} is neither a model folder nor a hub id: {_first_line(error)}") from None
    ways_out = (f"give a model folder instead, or put the model in the hub cache ({constants.HF_HUB_CACHE}) on a "
                f"machine with a network: hf download {repo_id}")
    if constants.HF_HUB_OFFLINE:
        raise ModelError(f"model {repo_id!r} is not in the local cache and HF_HUB_OFFLINE is set: {ways_out}")
    try:
        model_info(repo_id, timeout=HUB_TIMEOUT)
    except RepositoryNotFoundError:
        raise ModelError(f"the hub has no model {repo_id!r} (or it is private or gated: hf auth login)") from None
    except HfHubHTTPError:
        pass  # the hub answered: the download says what it finds
    except Exception as error:  # no name resolution, refused, timed out: the HTTP library's errors vary
        raise ModelError(f"model {repo_id!r} is not in the local cache and the hub ({constants.ENDPOINT}) cannot be "
                         f"reached ({_first_line(error)}): {ways_out}") from None
    return False


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
