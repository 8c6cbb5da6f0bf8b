"""A name the file's own text makes likely, weighed against the model's choice: a cache model's mixture.

Where the recognizer says a name is being written that the file predicts (`State.likely_names`: for Python, a
member after a dot that the file writes after the same receiver), the next token's distribution becomes
`(1 - share) * model + share * file`, where the file's part gives each likely name the share of its weight and
spreads it over the tokens that go on writing that name in proportion to the model's own probabilities for them
(the model still chooses how a name is spelled in tokens). Small code models seldom copy a name from their context
that the file repeats; a cache of the file's own names is the classic remedy (Tu, Su and Devanbu, "On the Localness
of Software", FSE 2014). It only ranks: what the judge admits is unchanged.
"""

from __future__ import annotations

import numpy as np

from fimlsp.model import FimModel


def weighed(model: FimModel, log_probs: np.ndarray, heal: bytes, begun: str, likely: dict[str, float],
            share: float) -> np.ndarray:
    """`log_probs` with the file's likely names mixed in at `share`, where `begun` of the name is written and the
    bytes `heal` are still to be written again before it; the same row where no token goes on to a likely name.
    A token gets the share of the likeliest name it goes on to, not the sum of all of them: summed, `_` (the start
    of every private name) outranked the one name the file writes most, and greedy decoding then wrote a rare one."""
    total = sum(likely.values())
    probabilities = np.exp(log_probs - log_probs.max())
    probabilities /= probabilities.sum()
    file = np.zeros_like(probabilities)
    for name, weight in likely.items():
        rest = heal + name[len(begun):].encode()
        tokens = _going_on(model, rest) if rest else _ending(model)
        mass = probabilities[tokens].sum() if len(tokens) else 0.0
        if mass > 0:
            file[tokens] = np.maximum(file[tokens], (weight / total) * probabilities[tokens] / mass)
    if not file.any():
        return log_probs
    file /= file.sum()
    with np.errstate(divide="ignore"):
        return np.log((1 - share) * probabilities + share * file)


def _going_on(model: FimModel, rest: bytes) -> list[int]:
    """The tokens that write a start of `rest` or all of it, then no more of a name (`lock` or `lock(` for `lock`,
    not `locked`)."""
    return [token for token in model.tokens_agreeing(rest)
            if not _name_goes_on(model.token_bytes[token][len(rest):len(rest) + 1])]


_ENDING: dict[int, tuple[list, np.ndarray]] = {}


def _ending(model: FimModel) -> np.ndarray:
    """The text tokens that end a name written whole: those that begin with a byte no name goes on with."""
    table = model.token_bytes
    found = _ENDING.get(id(table))
    if found is None or found[0] is not table:
        ids = [token for token, data in enumerate(table) if data and not _name_goes_on(data[:1])]
        found = _ENDING[id(table)] = (table, np.array(ids, dtype=np.int64))
    return found[1]


def _name_goes_on(after: bytes) -> bool:
    return bool(after) and (after.isalnum() or after == b"_" or after[0] >= 0x80)
