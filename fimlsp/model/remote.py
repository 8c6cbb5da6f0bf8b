"""A FIM model on a shared server (vLLM, llama.cpp's server, `python -m llama_cpp.server`, TGI's OpenAI API), with
speculative constrained decoding: the constraint runs here, the model there.

A server reports only its top candidates at each position, so a session asks for a run of tokens at once, each with
its top `logprobs` alternatives. While decoding takes the token the server took, the run's next position answers
the next step without a request; where decoding takes another (the server's token was refused, or an alternative
is decoded) or the run is used up, the session asks again from the prompt plus the tokens taken (the server's
prefix cache makes that cheap). Decoding sees sparse rows (`-inf` off the top candidates) and picks among them.

A server does not send its vocabulary: it comes from a local tokenizer source (a model folder or a GGUF file with the
same vocabulary, by default the shipped model's folder), and the server's tokenization is checked against it at
connect time.

Two wire protocols: the OpenAI-compatible `POST /v1/completions` (`logprobs`), whose token strings are mapped
back to ids through the vocabulary's bytes, and llama.cpp's own `POST /completion` (`n_probs`), which gives ids.

A server cannot hold fimlsp up or fill its memory (`fimlsp.model.wire`): one deadline covers a request's connecting,
sending and whole answer (the token loop's, else `timeout`), a stop flag interrupts it at once, an answer over what
the engine can send for the top-k asked (a few MB) is refused, rows beyond those asked are ignored, and only a 2xx
answer counts (redirects are not followed).
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from fimlsp.model import wire
from fimlsp.model.backend import FimModel, PromptPass, Session
from fimlsp.model.folder import CONFIG, TOKENIZER
from fimlsp.model.formats import FIM_ORDER_KEY, FimFormat, preferred_order
from fimlsp.model.loading import GGUF_SUFFIX, ModelError, OutOfTime, choose_format
from fimlsp.model.token_text import token_bytes

PROTOCOLS = ("auto", "openai", "llamacpp")
TOP_LOGPROBS = 20  # alternatives per position (vLLM's default cap); decoding picks the best valid one among them
RUN_TOKENS = 32  # tokens a speculative run asks for
TIMEOUT = 30.0  # seconds a request may take, connecting, sending and reading the whole answer
ANSWER_BYTES = 1 << 20  # bytes of an answer other than a completion's (props, models, tokenize)
IMPOSSIBLE = -1e30  # llama.cpp writes the log of probability 0 as the lowest float (JSON has no -inf)
# A sample the server must tokenize as the local vocabulary does: code, a non-ASCII character, control tokens.
PROBE = "def f(x):\n    return {'a': x}  # é ok\n"

_SURROGATE = re.compile("[\ud800-\udfff]")
_TOKEN_ID = re.compile(r"token_id:(\d+)")  # vLLM's `return_tokens_as_token_ids` spelling


class _TokenizerFile:
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


class _GgufTokenizer:
    """A GGUF file's vocabulary read by llama.cpp (`vocab_only`: no weights, no context)."""

    def __init__(self, llama):
        self.llama = llama

    def encode(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode(), add_bos=False, special=False)

    def close(self) -> None:
        self.llama.close()


@dataclass
class _Run:
    """A speculative run: from `start` tokens after the prompt, the ids the server's token at each position may be
    (empty where its string names no token of the vocabulary) and the log-probabilities of each position."""

    start: int
    taken: list[frozenset[int]]
    rows: list[np.ndarray]


@dataclass
class RemoteModel(FimModel):
    """A FIM model served over HTTP; the vocabulary and FIM format are the local tokenizer source's."""

    url: str = ""
    protocol: str = "openai"
    token_prompts: bool = True  # the server takes the prompt as token ids (else as text)
    top_logprobs: int = TOP_LOGPROBS
    run_tokens: int = RUN_TOKENS
    timeout: float = TIMEOUT
    status: str = ""  # what connecting found that a user should know (no tokenize endpoint to check against)
    round_trips: int = 0  # completion requests sent
    speculated: int = 0  # steps answered by a run without a request
    steps: int = 0  # steps taken in all (a step is one token decoded)
    tokenizer: _TokenizerFile | _GgufTokenizer | None = None
    controls: dict[str, int] = field(default_factory=dict)  # the ids of the control and stop tokens, by name
    should_stop: Callable[[], bool] | None = field(default=None, repr=False)  # true: abandon every request
    _connection: wire.Connection | None = field(default=None, repr=False)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(_SURROGATE.sub("\ufffd", text))

    def control_id(self, piece: str) -> int:
        return self.controls[piece]

    def prompt_pass(self, ids: list[int], shared: bool = False, deadline: float | None = None) -> PromptPass:
        return _RemotePromptPass(self, ids, deadline)

    def close(self) -> None:
        self._close_connection()
        if self.tokenizer is not None:
            self.tokenizer.close()
            self.tokenizer = None

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # The wire ------------------------------------------------------------------------------------------------

    def run(self, prompt: list[int], accepted: list[int], tokens: int | None = None,
            deadline: float | None = None) -> _Run:
        """A speculative run of `tokens` (default `run_tokens`) from the prompt plus the tokens accepted so far;
        `OutOfTime` when the server has not answered by `deadline`."""
        self.round_trips += 1
        ids, tokens = prompt + accepted, tokens or self.run_tokens
        limit = self._answer_limit(len(ids), tokens)
        if self.protocol == "llamacpp":
            answer = self.request("POST", "/completion", {
                "prompt": ids, "n_predict": tokens, "n_probs": self.top_logprobs, "temperature": 0,
                "cache_prompt": True, "repeat_penalty": 1.0, "stream": False}, deadline, limit)
            return self._read(self._llamacpp_run, len(accepted), answer, tokens)
        text = None if self.token_prompts else self.text_of(ids)
        if not self.token_prompts and text is None:
            # the tokens end inside a character, which a text prompt cannot carry: no candidates here
            return _Run(len(accepted), [frozenset()], [self._empty_row()])
        answer = self.request("POST", "/v1/completions", {
            "prompt": ids if self.token_prompts else text, "max_tokens": tokens,
            "logprobs": self.top_logprobs, "temperature": 0, "echo": False, "stream": False,
            "repeat_penalty": 1.0, "return_tokens_as_token_ids": True}, deadline, limit)
        return self._read(self._openai_run, len(accepted), answer, tokens)

    def _answer_limit(self, prompt_tokens: int, tokens: int) -> int:
        """The most bytes a completion's answer may take: what a server writes for `tokens` positions of
        `top_logprobs` candidates (each token's text escaped, and its bytes as numbers) and an echo of the prompt,
        over `ANSWER_BYTES` of the rest; a few MB at most."""
        per_token = 64 + 12 * self._longest_token
        return ANSWER_BYTES + (prompt_tokens + tokens * (self.top_logprobs + 2)) * per_token

    def _read(self, reader, start: int, answer: dict, asked: int) -> _Run:
        """The run an answer holds, of at most the `asked` positions and `top_logprobs` candidates a position
        (more are ignored: each row costs the vocabulary's size), or a ModelError where it is not of the form the
        protocol has."""
        try:
            return reader(start, answer, asked)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise ModelError(f"the server at {self.url} answered a completion in a form fimlsp cannot read "
                             f"({type(error).__name__}: {error})") from None

    def _openai_run(self, start: int, answer: dict, asked: int) -> _Run:
        choice = (answer.get("choices") or [{}])[0]
        logprobs = choice.get("logprobs") or {}
        ended = choice.get("finish_reason") == "stop"
        if logprobs.get("content"):  # llama-server's: a list of entries, as its /completion gives
            entries = logprobs["content"]
            return self._ended(self._entries_run(start, entries[:asked]), ended and len(entries) <= asked)
        tokens, tops = logprobs.get("tokens"), logprobs.get("top_logprobs")
        if not tops or not tokens:
            if ended and choice.get("text") == "":
                return _Run(start, [], [self._ended_row()])  # ended at once: no token, so no row was reported
            raise self._no_log_probabilities()
        ended = ended and len(tokens) <= asked
        taken = [self._ids_of(token) for token in tokens[:asked]]
        rows = []
        for top in tops[:asked]:
            row = self._empty_row()
            for piece, log_probability in list((top or {}).items())[:self.top_logprobs + 1]:
                if log_probability is not None:
                    row[list(self._ids_of(piece))] = log_probability
            rows.append(row)
        return self._ended(_Run(start, taken, rows), ended)

    def _llamacpp_run(self, start: int, answer: dict, asked: int) -> _Run:
        positions = answer.get("completion_probabilities")
        if not positions:
            if answer.get("stop") and answer.get("stopped_eos") and answer.get("content") == "":
                return _Run(start, [], [self._ended_row()])
            raise self._no_log_probabilities()
        ended = bool(answer.get("stopped_eos")) and len(positions) <= asked
        positions = positions[:asked]
        if "top_logprobs" in positions[0]:  # llama.cpp since 2024-12: ids and log-probabilities
            return self._ended(self._entries_run(start, positions), ended)
        taken, rows = [], []
        for position in positions:  # before: token strings and probabilities
            row = self._empty_row()
            taken.append(self._ids_of(position.get("content", "")))
            for candidate in position.get("probs", [])[:self.top_logprobs + 1]:
                if candidate.get("prob", 0) > 0:
                    row[list(self._ids_of(candidate["tok_str"]))] = math.log(candidate["prob"])
            rows.append(row)
        return self._ended(_Run(start, taken, rows), ended)

    def _entries_run(self, start: int, positions: list[dict]) -> _Run:
        """llama.cpp's entries, a position each: the token taken (`id`, `token`) and its `top_logprobs`."""
        taken, rows = [], []
        for position in positions:
            taken.append(self._known([position["id"]]) if "id" in position else self._ids_of(position["token"]))
            row = self._empty_row()
            for candidate in position["top_logprobs"][:self.top_logprobs + 1]:
                if candidate["logprob"] > IMPOSSIBLE:
                    ids = self._known([candidate["id"]]) if "id" in candidate else self._ids_of(candidate["token"])
                    row[list(ids)] = candidate["logprob"]
            rows.append(row)
        return _Run(start, taken, rows)

    def _ended(self, run: _Run, ended: bool) -> _Run:
        """`run`, with a row for the position where the server ended the text, when it reported none there
        (`llama_cpp.server` reports only the tokens it kept)."""
        if ended and len(run.rows) == len(run.taken) and not (run.taken and run.taken[-1] & self.stop_ids):
            run.rows.append(self._ended_row())
        return run

    def _ended_row(self) -> np.ndarray:
        """The server ended the text here, without saying how probable that was: its end of text is the one
        candidate (as sure as greedy decoding made it)."""
        row = self._empty_row()
        row[self._end_id] = 0.0
        return row

    def _empty_row(self) -> np.ndarray:
        return np.full(len(self.token_bytes), -np.inf, dtype=np.float32)

    def _no_log_probabilities(self) -> ModelError:
        return ModelError(f"the server at {self.url} returned no log-probabilities: fimlsp needs them; vLLM and "
                          "llama.cpp's server give them with logprobs/n_probs")

    def request(self, method: str, path: str, body: dict | None = None, deadline: float | None = None,
                limit: int = ANSWER_BYTES) -> dict:
        """The server's JSON answer, all of it within `timeout` and by `deadline` (connecting, sending and the whole
        body) and at most `limit` bytes; a ModelError when it cannot be reached, fails, answers other than a 2xx
        success (redirects are not followed) or other than JSON, and `OutOfTime` when it has not answered by
        `deadline` (sooner than `timeout`) or is stopped (`should_stop`, or a `Deadline`'s flag)."""
        data = None if body is None else json.dumps(body).encode()
        now = time.perf_counter()
        budgeted = deadline is not None and deadline < now + self.timeout
        end = deadline if budgeted else now + self.timeout
        if end <= now:
            raise OutOfTime(f"the time budget ended before the server at {self.url} was asked")
        if self._connection is None:
            self._connection = wire.Connection(self.url)
        try:
            status, payload = self._connection.exchange(method, self._base_path + path, data, end, limit,
                                                        self._stop_flag(deadline))
        except wire.Interrupted:
            raise Interrupted(f"the request to the server at {self.url} was stopped") from None
        except wire.TimedOut:
            if budgeted:
                raise OutOfTime(f"the server at {self.url} did not answer within the time budget's "
                                f"{deadline - now:.2g} s") from None
            raise ModelError(f"the server at {self.url} did not answer within {self.timeout:g} s") from None
        except wire.Refused:
            raise ModelError(f"no server at {self.url} (connection refused)") from None
        except wire.Closed as error:
            raise ModelError(f"the server at {self.url} closed the connection: {error}") from None
        except wire.TooLarge as error:
            raise ModelError(f"the server at {self.url} answered {method} {path} with {error}: refused") from None
        except wire.NotHttp as error:
            raise ModelError(f"the server at {self.url} answered {method} {path} with something other than HTTP "
                             f"({error})") from None
        except OSError as error:  # no such host, no route
            raise ModelError(f"no server at {self.url}: {error.strerror or error}") from None
        if not 200 <= status < 300:
            said = "; fimlsp follows no redirects" if 300 <= status < 400 else ""
            raise ServerError(status, f"the server at {self.url} answered {status} to {method} {path}: "
                                      f"{_message(payload)}{said}")
        try:
            return json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ModelError(f"the server at {self.url} answered {method} {path} with something other than "
                             f"JSON: {payload[:80]!r}") from None

    def _stop_flag(self, deadline: float | None) -> Callable[[], bool] | None:
        """What stops a request early: the model's `should_stop` (its owner abandons it) or the deadline's."""
        flags = [flag for flag in (self.should_stop, getattr(deadline, "stopped", None)) if flag is not None]
        return (lambda: any(flag() for flag in flags)) if flags else None

    @property
    def _base_path(self) -> str:
        return urllib.parse.urlsplit(self.url).path.rstrip("/")

    # Tokens and text -----------------------------------------------------------------------------------------

    def text_of(self, ids: Sequence[int]) -> str | None:
        """The text of prompt ids (control tokens by name); None where it ends inside a character. A character that
        the prompt cuts (the contexts are cut by tokens) is dropped."""
        data = b"".join(self.token_bytes[token] or self._controls.get(token, b"") for token in ids)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        text = decoder.decode(data)
        return None if decoder.getstate()[0] else text

    def _ids_of(self, piece: str) -> frozenset[int]:
        """The ids a server's token string may stand for: `token_id:N` (vLLM), else the tokens whose bytes spell
        it (none for a string that a server decoded from part of a character, which names no token)."""
        spelled = _TOKEN_ID.fullmatch(piece)
        if spelled:
            return self._known([int(spelled.group(1))])
        if piece in self.controls:
            return frozenset([self.controls[piece]])
        return frozenset(self.tokens_of(piece.encode("utf-8", errors="surrogatepass")) if piece else ())

    def _known(self, ids: list[int]) -> frozenset[int]:
        """The ids that are in the vocabulary (a server may pad its vocabulary past it)."""
        return frozenset(token for token in ids if 0 <= token < len(self.token_bytes))

    @cached_property
    def _controls(self) -> dict[int, bytes]:
        return {token: name.encode() for name, token in self.controls.items()}

    @cached_property
    def _longest_token(self) -> int:
        return max(len(each) for each in [*self.token_bytes, *self._controls.values()] if each is not None)

    @cached_property
    def _end_id(self) -> int:
        return next(self.controls[name] for name in self.format.stops if name in self.controls)


class Interrupted(OutOfTime):
    """A request stopped because its answer is not wanted any more (the request was cancelled or superseded, the
    model abandoned): the decoding ends as at its deadline."""


class ServerError(ModelError):
    """The server answered with an HTTP error."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _RemotePromptPass(PromptPass):
    """The prompt's first run, asked for at the first use; every session starts from it."""

    def __init__(self, model: RemoteModel, ids: list[int], deadline: float | None):
        self.model, self.ids, self.deadline = model, ids, deadline
        self.seconds = 0.0
        self._first: _Run | None = None

    @property
    def log_probs(self) -> np.ndarray:
        return self._run().rows[0]

    def _run(self) -> _Run:
        if self._first is None:
            clock = time.perf_counter()
            self._first = self.model.run(self.ids, [], deadline=self.deadline)
            self.seconds = time.perf_counter() - clock
        return self._first

    def session(self, rows: int = 1) -> Session:
        if rows != 1:
            raise ValueError("a server's session holds one sequence")
        return _RemoteSession(self.model, self.ids, self._run(), self.deadline)


class _RemoteSession(Session):
    """One sequence: the tokens accepted after the prompt, and the latest run, which answers a step without a
    request while the token taken is the server's."""

    def __init__(self, model: RemoteModel, prompt: list[int], first: _Run, deadline: float | None):
        self.model, self.prompt, self.latest, self.deadline = model, prompt, first, deadline
        self.accepted: list[int] = []

    def step(self, tokens: Sequence[int]) -> list[np.ndarray]:
        (token,) = tokens
        self.accepted.append(token)
        model, run = self.model, self.latest
        model.steps += 1
        position = len(self.accepted) - run.start
        if position < len(run.rows) and token in run.taken[position - 1]:
            model.speculated += 1
            return [run.rows[position]]
        # Another token than the server's, or the run is used up: a new run from here. A run the server cut at
        # once (it ended the text) never goes past its first row, so steps always ask again there.
        self.latest = model.run(self.prompt, self.accepted, deadline=self.deadline)
        return [self.latest.rows[0]]

    def keep(self, rows: Sequence[int]) -> None:
        if list(rows) != [0]:
            raise ValueError("a server's session holds one sequence")


def _message(payload: bytes) -> str:
    """The server's own words from an error answer: OpenAI's `error.message`, FastAPI's `detail`, or the text."""
    try:
        answer = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return payload.decode(errors="replace").strip()[:300] or "(no message)"
    if isinstance(answer, dict):
        error = answer.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if answer.get("detail"):
            return json.dumps(answer["detail"])[:300]
    return json.dumps(answer)[:300]


def connect(url: str, tokenizer: str | os.PathLike | None = None, fim_format: str | None = None,
            order: str | None = None, protocol: str = "auto", timeout: float = TIMEOUT,
            should_stop: Callable[[], bool] | None = None) -> RemoteModel:
    """A model on the server at `url` (`http://host:port`, a trailing `/v1` or not), whose vocabulary is that of
    the model folder `tokenizer` (default: the shipped model). The protocol is detected (`/props` answers on
    llama.cpp's server) unless named; whether the server takes token-id prompts, gives log-probabilities and
    tokenizes as the local vocabulary does is checked here, once, all of it within `timeout`. `should_stop` true
    abandons the model: connecting, and later every request, stops at once."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelError(f"server address {url!r} is not an http:// or https:// URL")
    if protocol not in PROTOCOLS:
        raise ModelError(f"unknown server protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    try:
        parts.port
    except ValueError:
        raise ModelError(f"server address {url!r} has a port that is not a number") from None
    base = url.rstrip("/")
    base = base[:-len("/v1")] if base.endswith("/v1") else base
    model = _local_vocabulary(tokenizer, fim_format, order, base, timeout)
    model.should_stop = should_stop
    deadline = time.perf_counter() + timeout
    try:
        properties = _answers(model, "GET", "/props", deadline=deadline)
        if protocol == "auto":
            protocol = "llamacpp" if properties else "openai"
        model.protocol = protocol
        served = _served_context(properties, _answers(model, "GET", "/v1/models", deadline=deadline))
        if served:  # the server may run the model with a shorter context than it was trained for
            model.context_window = min(model.context_window, served)
        model.status = _check_tokenization(model, deadline)
        probe = [model.control_id(model.format.controls[0])] + model.encode("import os\n")
        if protocol == "openai":
            try:
                model.run(probe, [], 2, deadline)
            except ServerError:  # llama_cpp.server and TGI take only text (and say so with 422 or 500)
                model.token_prompts = False
                model.run(probe, [], 2, deadline)
        else:
            model.run(probe, [], 2, deadline)
    except Interrupted:
        model.close()
        raise ModelError(f"connecting to the server at {url} was stopped") from None
    except OutOfTime:
        model.close()
        raise ModelError(f"the server at {url} did not answer within {timeout:g} s") from None
    except ModelError:
        model.close()
        raise
    model.round_trips = 0
    return model


def _answers(model: RemoteModel, method: str, path: str, body: dict | None = None,
             deadline: float | None = None) -> dict | None:
    """The server's answer, or None where it has no such endpoint (an HTTP error)."""
    try:
        return model.request(method, path, body, deadline)
    except ServerError:
        return None


def _served_context(properties: dict | None, models: dict | None) -> int | None:
    """The context length the server runs the model with, where it says: llama.cpp's `/props`, vLLM's
    `/v1/models` (`max_model_len`)."""
    settings = (properties or {}).get("default_generation_settings")
    if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
        return settings["n_ctx"]
    listed = (models or {}).get("data")
    if isinstance(listed, list) and listed and isinstance(listed[0], dict):
        length = listed[0].get("max_model_len")
        return length if isinstance(length, int) else None
    return None


def _check_tokenization(model: RemoteModel, deadline: float | None = None) -> str:
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
        answer = _answers(model, "POST", path, body, deadline)
        if answer is None or not isinstance(answer.get("tokens"), list) or not answer["tokens"]:
            continue  # no such endpoint, or one that read another field than this body's (no tokens for the probe)
        tokens = [each["id"] if isinstance(each, dict) else each for each in answer["tokens"]]
        if tokens != expected:
            raise ModelError(f"the server at {model.url} tokenizes differently from the vocabulary of {model.name} "
                             f"({tokens[:12]} for {expected[:12]}): name the served model's folder with --model")
        return ""
    return (f"the server at {model.url} has no tokenize endpoint: its vocabulary is taken to be that of "
            f"{model.name}, unchecked")


def _local_vocabulary(name: str | os.PathLike | None, fim_format: str | None, order: str | None, url: str,
                      timeout: float) -> RemoteModel:
    """The model with the vocabulary, FIM format, prompt order and context window of the model folder or GGUF file
    `name` (default: the shipped model's folder)."""
    from fimlsp.models import default_model_path

    location = Path(os.path.expanduser(str(name))) if name is not None else default_model_path()
    label = str(name) if name is not None else str(location)
    if location.suffix == GGUF_SUFFIX:
        model = _gguf_vocabulary(location, label, fim_format, order)
    else:
        model = _folder_vocabulary(location, label, fim_format, order)
    model.url, model.device, model.timeout = url, url, timeout
    return model


def _folder_vocabulary(folder: Path, label: str, fim_format: str | None, order: str | None) -> RemoteModel:
    if not (folder / TOKENIZER).is_file():
        raise ModelError(f"{label!r} is neither a model folder with a {TOKENIZER} nor a .gguf file: --model-server takes "
                         "the served model's vocabulary from one (--model)")
    try:
        tokenizer = _TokenizerFile(folder / TOKENIZER)
    except Exception as error:  # tokenizers' own exception types vary
        raise ModelError(f"cannot read the tokenizer of {label!r}: {error}") from None
    vocabulary = tokenizer.get_vocab()
    config = _json(folder / CONFIG)
    chosen = choose_format(vocabulary, fim_format, label, str(config.get("model_type", "")))
    try:
        order = order or preferred_order(folder)
    except ValueError as error:
        raise ModelError(f"model folder {label!r}: {error}") from None
    controls = {token: vocabulary[token] for token in chosen.controls + chosen.stops if token in vocabulary}
    window = next((config[key] for key in ("max_position_embeddings", "n_positions", "n_ctx") if config.get(key)),
                  2048)
    return _vocabulary_model(chosen, order, token_bytes(tokenizer), controls, set(), int(window), label, tokenizer)


def _gguf_vocabulary(path: Path, label: str, fim_format: str | None, order: str | None) -> RemoteModel:
    """The vocabulary of a GGUF file, read by llama.cpp as the engine does (`llama_engine`), without its weights."""
    from fimlsp.model.llama_engine import gguf_format, llama_cpp_module, gguf_vocabulary

    if not path.is_file():
        raise ModelError(f"GGUF file {label!r} does not exist")
    try:
        llama = llama_cpp_module().Llama(str(path), vocab_only=True, verbose=False)
    except (ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"cannot read the vocabulary of GGUF file {label!r} with llama.cpp: {error}") from None
    tokenizer = _GgufTokenizer(llama)
    try:
        table, controls = gguf_vocabulary(llama)
        chosen = gguf_format(llama.metadata, controls, fim_format, label)
    except ModelError:
        tokenizer.close()
        raise
    metadata = llama.metadata
    window = metadata.get(f"{metadata.get('general.architecture')}.context_length", "2048")
    ends = {llama.token_eos()} - {-1}
    return _vocabulary_model(chosen, order or metadata.get(FIM_ORDER_KEY, "psm"), table, controls, ends,
                             int(window), label, tokenizer)


def _vocabulary_model(chosen: FimFormat, order: str, table: list[bytes | None], controls: dict[str, int],
                      ends: set[int], window: int, label: str, tokenizer) -> RemoteModel:
    """The model before it is connected: the vocabulary's, with the format's stop tokens (and the vocabulary's own
    `ends`) as its stops."""
    if order not in chosen.orders:
        tokenizer.close()
        raise ModelError(f"format {chosen.name!r} supports the orders {', '.join(chosen.orders)}, not {order!r}")
    named = {token: controls[token] for token in chosen.controls + chosen.stops if token in controls}
    stops = frozenset({named[token] for token in chosen.stops if token in named} | ends)
    return RemoteModel(chosen, order, table, stops, window, label, "", tokenizer=tokenizer, controls=named)


def _json(path: Path) -> dict:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}
