"""The attempts decoded side by side: one model step a token for a batch of decoders, kept apart from choosing them."""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass

from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.model import OutOfTime, PromptPass


def decode_side_by_side(prompt_pass: PromptPass, runs: list[Generator],
                         clock: StepsClock) -> list[tuple[PartialMiddle, str, list]]:
    """Run the decoders' `steps` together, one model step for all: a session with a row each (a decoder that stops
    leaves it). The decoders' outcomes, in order; the model's time on the steps is added to `clock`. A model
    server that does not answer in time (`OutOfTime`) ends the decoders that wait on it as their clock would."""
    outcomes: list = [None] * len(runs)
    waiting = []  # the runs that wait for the model, in the order of the session's rows
    for index, run in enumerate(runs):
        try:
            next(run)
            waiting.append(index)
        except StopIteration as done:
            outcomes[index] = done.value
    if not waiting:
        return outcomes
    session = None
    try:
        rows = [prompt_pass.log_probs] * len(waiting)
        session = prompt_pass.session(len(waiting))
        while waiting:
            going, tokens = [], []
            for index, row in zip(waiting, rows):
                try:
                    tokens.append(runs[index].send(row))
                    going.append(index)
                except StopIteration as done:
                    outcomes[index] = done.value
            if not going:
                break
            if len(going) < len(waiting):
                session.keep([waiting.index(index) for index in going])
            waiting = going
            started = time.perf_counter()
            rows = session.step(tokens)
            clock.seconds += time.perf_counter() - started
    except OutOfTime as late:
        for index in waiting:
            try:
                runs[index].throw(late)
            except StopIteration as done:
                outcomes[index] = done.value
    finally:
        if session is not None:
            session.close()
    return outcomes


@dataclass
class StepsClock:
    """Seconds spent, summed over calls."""

    seconds: float = 0.0
