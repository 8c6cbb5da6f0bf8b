"""The loop that the judges beside the parser share: a judge's step folded over the terminals of one feed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Judge = TypeVar("Judge")


def fold(step: Callable[[Judge, str], Judge | None], judge: Judge, terminals: Iterable[str]) -> Judge | None:
    """`judge` after `step` on each of `terminals` in turn; None at the first terminal it refuses, and the
    terminals after that one are not stepped."""
    for terminal in terminals:
        judge = step(judge, terminal)
        if judge is None:
            return None
    return judge
