"""llama.cpp's own server API (`POST /completion` with `n_probs`), one wire protocol of a model server
(`fimlsp.model.remote`): the prompt as token ids, and each position's candidates as ids, or as token strings
mapped back through the vocabulary's bytes on servers from before 2024-12.

The prompt is the one every engine builds (`FimModel.prompt`), repository context included: `/infill` formats
its `input_extra` the same way for a model with repository and file-separator tokens, but puts the tokens taken so
far after the left context rather than after the middle's token, so speculation could not go on from them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fimlsp.model.speculation import Run

if TYPE_CHECKING:
    from fimlsp.model.remote import RemoteModel

PATH = "/completion"
IMPOSSIBLE = -1e30  # llama.cpp writes the log of probability 0 as the lowest float (JSON has no -inf)


def run(model: RemoteModel, ids: list[int], start: int, tokens: int, deadline: float | None) -> Run:
    """A run of `tokens` positions after `ids`, `start` tokens after the prompt."""
    answer = model.request("POST", PATH, {
        "prompt": ids, "n_predict": tokens, "n_probs": model.top_logprobs, "temperature": 0,
        "cache_prompt": True, "repeat_penalty": 1.0, "stream": False}, deadline, model.answer_limit(len(ids), tokens))
    return model.read(read, start, answer, tokens)


def read(model: RemoteModel, start: int, answer: dict, asked: int) -> Run:
    positions = answer.get("completion_probabilities")
    if not positions:
        if answer.get("stop") and answer.get("stopped_eos") and answer.get("content") == "":
            return Run(start, [], [model.ended_row()])
        raise model.no_log_probabilities()
    ended = bool(answer.get("stopped_eos")) and len(positions) <= asked
    positions = positions[:asked]
    if "top_logprobs" in positions[0]:  # llama.cpp since 2024-12: ids and log-probabilities
        return model.ended(entries_run(model, start, positions), ended)
    taken, rows = [], []
    for position in positions:  # before: token strings and probabilities
        row = model.empty_row()
        taken.append(model.ids_of(position.get("content", "")))
        for candidate in position.get("probs", [])[:model.top_logprobs + 1]:
            if candidate.get("prob", 0) > 0:
                row[list(model.ids_of(candidate["tok_str"]))] = math.log(candidate["prob"])
        rows.append(row)
    return model.ended(Run(start, taken, rows), ended)


def entries_run(model: RemoteModel, start: int, positions: list[dict]) -> Run:
    """llama.cpp's entries, a position each: the token taken (`id`, `token`) and its `top_logprobs` (its
    OpenAI-compatible API gives them too)."""
    taken, rows = [], []
    for position in positions:
        taken.append(model.known([position["id"]]) if "id" in position else model.ids_of(position["token"]))
        row = model.empty_row()
        for candidate in position["top_logprobs"][:model.top_logprobs + 1]:
            if candidate["logprob"] > IMPOSSIBLE:
                ids = model.known([candidate["id"]]) if "id" in candidate else model.ids_of(candidate["token"])
                row[list(ids)] = candidate["logprob"]
        rows.append(row)
    return Run(start, taken, rows)
