"""The OpenAI-compatible completions API (`POST /v1/completions` with `logprobs`: vLLM, TGI, `python -m
llama_cpp.server`, llama.cpp's server), one wire protocol of a model server (`fimlsp.model.remote`): the prompt as
token ids where the server takes them, else as text, and each position's candidates as token strings mapped back to
ids through the vocabulary's bytes (vLLM's `token_id:N` names the id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fimlsp.model.llamacpp_api import entries_run
from fimlsp.model.speculation import Run

if TYPE_CHECKING:
    from fimlsp.model.remote import RemoteModel

PATH = "/v1/completions"


def run(model: RemoteModel, ids: list[int], start: int, tokens: int, deadline: float | None) -> Run:
    """A run of `tokens` positions after `ids`, `start` tokens after the prompt."""
    text = None if model.token_prompts else model.text_of(ids)
    if not model.token_prompts and text is None:
        # the tokens end inside a character, which a text prompt cannot carry: no candidates here
        return Run(start, [frozenset()], [model.empty_row()])
    answer = model.request("POST", PATH, {
        "prompt": ids if model.token_prompts else text, "max_tokens": tokens,
        "logprobs": model.top_logprobs, "temperature": 0, "echo": False, "stream": False,
        "repeat_penalty": 1.0, "return_tokens_as_token_ids": True}, deadline, model.answer_limit(len(ids), tokens))
    return model.read(read, start, answer, tokens)


def read(model: RemoteModel, start: int, answer: dict, asked: int) -> Run:
    choice = (answer.get("choices") or [{}])[0]
    logprobs = choice.get("logprobs") or {}
    ended = choice.get("finish_reason") == "stop"
    if logprobs.get("content"):  # llama-server's: a list of entries, as its /completion gives
        entries = logprobs["content"]
        return model.ended(entries_run(model, start, entries[:asked]), ended and len(entries) <= asked)
    tokens, tops = logprobs.get("tokens"), logprobs.get("top_logprobs")
    if not tops or not tokens:
        if ended and choice.get("text") == "":
            return Run(start, [], [model.ended_row()])  # ended at once: no token, so no row was reported
        raise model.no_log_probabilities()
    ended = ended and len(tokens) <= asked
    taken = [model.ids_of(token) for token in tokens[:asked]]
    rows = []
    for top in tops[:asked]:
        row = model.empty_row()
        for piece, log_probability in list((top or {}).items())[:model.top_logprobs + 1]:
            if log_probability is not None:
                row[list(model.ids_of(piece))] = log_probability
        rows.append(row)
    return model.ended(Run(start, taken, rows), ended)
