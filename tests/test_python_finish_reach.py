"""How far the finish search (`fimlsp.python.finish`) has to go, in counted nodes and whole-file checks, where its
estimate is flat: ends the quotient accepts and CPython or the name judge refuses."""

from __future__ import annotations

from fimlsp.python.names import FileNames
from fimlsp.python.quotient import FimState, quotient


def _counting_checks(monkeypatch) -> list[int]:
    checks: list[int] = []
    complete = FimState.complete.fget
    monkeypatch.setattr(FimState, "complete", property(lambda self: checks.append(1) or complete(self)))
    return checks


def test_a_return_annotation_binds_nothing_for_the_search(monkeypatch):
    """`def no_proxy(self)` before `from_dict(config):`: the right context loads `config`, which only a `def`
    before it binds. An end in the return annotation (`->config`, `->from_dict%config`) loads the names it writes:
    the search does not check the plateau of those ends (it checked 370 and found nothing in 400 nodes), and checks
    an end that makes the right context's first line a def."""
    checks = _counting_checks(monkeypatch)
    left, right = "class P:\n    @property\n    def no_proxy(self)", "from_dict(config):\n        return config\n"
    finish = quotient(left, right).judging_names(FileNames.of(left, right)).finish(work=100)
    assert finish is not None and finish.endswith("def "), finish
    assert len(checks) <= 10, len(checks)


def test_an_end_the_file_check_refused_is_no_shortcut_for_the_greedy_search():
    """After `else:` and a line of indentation, the right context's next line is deeper than every open block:
    every end on the cursor's line is refused (an unexpected indent), though the quotient accepts it, its estimate
    0. The greedy search counts such an end as one character from a finish at least, and reaches the `if x:` branch
    (its header then the deeper line) in 20 nodes; it spent 400 on the plateau of `(+-~` before."""
    left = "def f(self, prefix):\n    while True:\n        if prefix:\n            return\n        else:\n          "
    right = (' "end-1c")\n                self.text.insert("iomark", prefix)\n            pointer = None\n'
             "        break\n")
    finish = quotient(left, right).finish(work=20)
    assert finish is not None and "if x:" in finish, finish
