"""Speculative decoding against a model server (`fimlsp.model.remote`): the constraint runs here, the model there.

A server reports only its top candidates at each position, so a session asks for a run of tokens at once, each with
its top alternatives. While decoding takes the token the server took, the run's next position answers the next
step without a request; where decoding takes another (the server's token was refused, or an alternative is
decoded) or the run is used up, the session asks again from the prompt plus the tokens taken (the server's prefix
cache makes that cheap). Decoding sees sparse rows (`-inf` off the top candidates) and picks among them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fimlsp.model.backend import PromptPass, Session

if TYPE_CHECKING:
    from fimlsp.model.remote import RemoteModel


@dataclass
class Run:
    """A speculative run: from `start` tokens after the prompt, the ids the server's token at each position may be
    (empty where its string names no token of the vocabulary) and the log-probabilities of each position."""

    start: int
    taken: list[frozenset[int]]
    rows: list[np.ndarray]


class RemotePromptPass(PromptPass):
    """The prompt's first run, asked for at the first use; every session starts from it."""

    def __init__(self, model: RemoteModel, ids: list[int], deadline: float | None):
        self.model, self.ids, self.deadline = model, ids, deadline
        self.seconds = 0.0
        self._first: Run | None = None

    @property
    def log_probs(self) -> np.ndarray:
        return self._run().rows[0]

    def _run(self) -> Run:
        if self._first is None:
            clock = time.perf_counter()
            self._first = self.model.run(self.ids, [], deadline=self.deadline)
            self.seconds = time.perf_counter() - clock
        return self._first

    def session(self, rows: int = 1) -> Session:
        if rows != 1:
            raise ValueError("a server's session holds one sequence")
        return RemoteSession(self.model, self.ids, self._run(), self.deadline)


class RemoteSession(Session):
    """One sequence: the tokens accepted after the prompt, and the latest run, which answers a step without a
    request while the token taken is the server's."""

    def __init__(self, model: RemoteModel, prompt: list[int], first: Run, deadline: float | None):
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
