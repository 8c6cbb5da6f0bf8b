"""The finish search's counted work (`fimlsp.python.finish`): the whole-file checks its ends ask for are counted
with its nodes, and a word that runs on into the right context is not a name for the finish to bind."""

from __future__ import annotations

from fimlsp.language import named
from fimlsp.python import finish
from fimlsp.python.quotient import FimState, quotient


def test_a_name_that_runs_on_into_the_right_context_is_not_wanted():
    """`offset_` before `int`: an end that writes nothing between them makes `offset_int`, which nothing binds;
    the finish is `:` (an annotation), not a search for texts that bind `offset_int`, which found none."""
    left = "import dataclasses\n\n\n@dataclasses.dataclass\nclass Tensor:\n    dtype: str\n    offset_"
    right = "int\n    size: int\n\n    def end(self) -> int:\n        return self.offset_start + self.size\n"
    python = named("python")
    guarantee, reason = python.judging_names(python.constrain(left, right), left, right)
    assert not reason
    assert guarantee.state.finish(16, None, 60) == ":"


def test_the_checks_of_a_search_are_counted_with_its_nodes(monkeypatch):
    """A search that finds nothing in a big file makes no more whole-file checks than its work allows, however
    many ends a node's children offer (each check counts one node and one per `CHECK_CHARS` of the file)."""
    checks = []
    complete = FimState.complete.fget
    monkeypatch.setattr(FimState, "complete", property(lambda self: checks.append(1) or complete(self)))
    filler = "".join(f"value_{index} = {index}\n" for index in range(600))  # over 8,000 characters
    left, right = filler + "print(value_1", "\ndef g(a, a):\n    pass\n"  # duplicate parameters: no finish
    state = quotient(left, right)
    work = 40
    assert state.finish(24, None, work) is None
    assert 0 < len(checks) <= 1 + work // (1 + len(left + right) // finish.CHECK_CHARS), len(checks)
