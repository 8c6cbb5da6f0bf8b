"""The server engine: a FIM model on a shared server (vLLM, llama.cpp's server, `python -m llama_cpp.server`, TGI's
OpenAI API), decoded speculatively (`fimlsp.model.speculation`): the constraint runs here, the model there.

A server does not send its vocabulary: it comes from a local source (`fimlsp.model.server_vocabulary`). Two wire
protocols: the OpenAI-compatible `POST /v1/completions` (`fimlsp.model.openai_api`) and llama.cpp's own
`POST /completion` (`fimlsp.model.llamacpp_api`).

A server cannot hold fimlsp up or fill its memory (`fimlsp.model.wire`): one deadline covers a request's connecting,
sending and whole answer (the token loop's, else `timeout`), a stop flag interrupts it at once, an answer over what
the engine can send for the top-k asked (a few MB) is refused, rows beyond those asked are ignored, and only a 2xx
answer counts (redirects are not followed).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fimlsp.model import llamacpp_api, openai_api, wire
from fimlsp.model.backend import FimModel, PromptPass
from fimlsp.model.errors import ModelError, OutOfTime
from fimlsp.model.server_vocabulary import GgufTokenizer, TokenizerFile, check_tokenization, local_vocabulary
from fimlsp.model.speculation import RemotePromptPass, Run

PROTOCOLS = ("auto", "openai", "llamacpp")
TOP_LOGPROBS = 20  # alternatives per position (vLLM's default cap); decoding picks the best valid one among them
RUN_TOKENS = 32  # tokens a speculative run asks for
TIMEOUT = 30.0  # seconds a request may take, connecting, sending and reading the whole answer
ANSWER_BYTES = 1 << 20  # bytes of an answer other than a completion's (props, models, tokenize)

_SURROGATE = re.compile("[\ud800-\udfff]")
_TOKEN_ID = re.compile(r"token_id:(\d+)")  # vLLM's `return_tokens_as_token_ids` spelling


class Interrupted(OutOfTime):
    """A request stopped because its answer is not wanted any more (the request was cancelled or superseded, the
    model abandoned): the decoding ends as at its deadline."""


class ServerError(ModelError):
    """The server answered with an HTTP error."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


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
    tokenizer: TokenizerFile | GgufTokenizer | None = None
    controls: dict[str, int] = field(default_factory=dict)  # the ids of the control and stop tokens, by name
    should_stop: Callable[[], bool] | None = field(default=None, repr=False)  # true: abandon every request
    _connection: wire.Connection | None = field(default=None, repr=False)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(_SURROGATE.sub("\ufffd", text))

    def control_id(self, piece: str) -> int:
        return self.controls[piece]

    def prompt_pass(self, ids: list[int], shared: bool = False, deadline: float | None = None) -> PromptPass:
        return RemotePromptPass(self, ids, deadline)

    def close(self) -> None:
        self._close_connection()
        if self.tokenizer is not None:
            self.tokenizer.close()
            self.tokenizer = None

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def run(self, prompt: list[int], accepted: list[int], tokens: int | None = None,
            deadline: float | None = None) -> Run:
        """A speculative run of `tokens` (default `run_tokens`) from the prompt plus the tokens accepted so far;
        `OutOfTime` when the server has not answered by `deadline`."""
        self.round_trips += 1
        api = llamacpp_api if self.protocol == "llamacpp" else openai_api
        return api.run(self, prompt + accepted, len(accepted), tokens or self.run_tokens, deadline)

    def answer_limit(self, prompt_tokens: int, tokens: int) -> int:
        """The most bytes a completion's answer may take: what a server writes for `tokens` positions of
        `top_logprobs` candidates (each token's text escaped, and its bytes as numbers) and an echo of the prompt,
        over `ANSWER_BYTES` of the rest; a few MB at most."""
        per_token = 64 + 12 * self._longest_token
        return ANSWER_BYTES + (prompt_tokens + tokens * (self.top_logprobs + 2)) * per_token

    def read(self, reader: Callable[[RemoteModel, int, dict, int], Run], start: int, answer: dict, asked: int) -> Run:
        """The run an answer holds, of at most the `asked` positions and `top_logprobs` candidates a position
        (more are ignored: each row costs the vocabulary's size), or a ModelError where it is not of the form the
        protocol has."""
        try:
            return reader(self, start, answer, asked)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise ModelError(f"the server at {self.url} answered a completion in a form fimlsp cannot read "
                             f"({type(error).__name__}: {error})") from None

    # Rows of a run ---------------------------------------------------------------------------------------------

    def ended(self, run: Run, ended: bool) -> Run:
        """`run`, with a row for the position where the server ended the text, when it reported none there
        (`llama_cpp.server` reports only the tokens it kept)."""
        if ended and len(run.rows) == len(run.taken) and not (run.taken and run.taken[-1] & self.stop_ids):
            run.rows.append(self.ended_row())
        return run

    def ended_row(self) -> np.ndarray:
        """The server ended the text here, without saying how probable that was: its end of text is the one
        candidate (as sure as greedy decoding made it)."""
        row = self.empty_row()
        row[self._end_id] = 0.0
        return row

    def empty_row(self) -> np.ndarray:
        return np.full(len(self.token_bytes), -np.inf, dtype=np.float32)

    def no_log_probabilities(self) -> ModelError:
        return ModelError(f"the server at {self.url} returned no log-probabilities: fimlsp needs them; vLLM and "
                          "llama.cpp's server give them with logprobs/n_probs")

    # The wire ----------------------------------------------------------------------------------------------------

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

    def answer_or_none(self, method: str, path: str, body: dict | None = None,
                       deadline: float | None = None) -> dict | None:
        """The server's answer, or None where it has no such endpoint (an HTTP error)."""
        try:
            return self.request(method, path, body, deadline)
        except ServerError:
            return None

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

    def ids_of(self, piece: str) -> frozenset[int]:
        """The ids a server's token string may stand for: `token_id:N` (vLLM), else the tokens whose bytes spell
        it (none for a string that a server decoded from part of a character, which names no token)."""
        spelled = _TOKEN_ID.fullmatch(piece)
        if spelled:
            return self.known([int(spelled.group(1))])
        if piece in self.controls:
            return frozenset([self.controls[piece]])
        return frozenset(self.tokens_of(piece.encode("utf-8", errors="surrogatepass")) if piece else ())

    def known(self, ids: list[int]) -> frozenset[int]:
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
    found = local_vocabulary(tokenizer, fim_format, order)
    model = RemoteModel(found.format, found.order, found.token_bytes, found.stops, found.window, found.label, base,
                        url=base, timeout=timeout, tokenizer=found.tokenizer, controls=found.controls,
                        should_stop=should_stop)
    deadline = time.perf_counter() + timeout
    try:
        properties = model.answer_or_none("GET", "/props", deadline=deadline)
        if protocol == "auto":
            protocol = "llamacpp" if properties else "openai"
        model.protocol = protocol
        served = _served_context(properties, model.answer_or_none("GET", "/v1/models", deadline=deadline))
        if served:  # the server may run the model with a shorter context than it was trained for
            model.context_window = min(model.context_window, served)
        model.status = check_tokenization(model, deadline)
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


