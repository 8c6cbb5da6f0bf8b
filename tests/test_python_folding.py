"""The judges' shared feed (`fimlsp.python.folding.fold`), through the real `Blocks` judge and lexer."""

from __future__ import annotations

from fimlsp.python.blocks import Blocks
from fimlsp.python.folding import fold
from fimlsp.python.lexer import tokenize


def counted(stepped: list[str]):
    """`Blocks._step` that records each terminal it is given."""
    def step(blocks: Blocks, terminal: str) -> Blocks | None:
        stepped.append(terminal)
        return Blocks._step(blocks, terminal)
    return step


def test_a_fold_steps_every_terminal_the_judge_accepts_and_is_the_judge_after_them():
    terminals = tokenize("def f():\n    return 1\n")
    stepped: list[str] = []
    folded = fold(counted(stepped), Blocks(), terminals)
    assert stepped == terminals
    assert folded == Blocks().feed(terminals) and folded is not None


def test_a_fold_stops_at_the_first_terminal_the_judge_refuses():
    terminals = tokenize("return 1\nx = 2\n")
    stepped: list[str] = []
    assert fold(counted(stepped), Blocks(), terminals) is None
    assert stepped == ["return"]
