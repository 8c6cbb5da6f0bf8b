"""The call judge (`fimlsp.python.calls`): a middle's call of a callable whose signature is known must fit it, and no
true middle of a real file is refused."""

from __future__ import annotations

import functools
import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout

import pytest

from fimlsp.cases import boundary_cases, line_cases, node_cases, random_span_cases
from fimlsp.language import named
from fimlsp.python import lexemes as lx
from fimlsp.python.calls import Calls
from fimlsp.python.signatures import SignatureSource
from fimlsp.python.lexer import INITIAL, advance
from fimlsp.python.waits import WaitBudget
from harness.corpus import STDLIB, package_files, stdlib_files

PYTHON = named("python")

LEFT = "import os\n\n\ndef g(a, *, b, c=0):\n    pass\n\n\n"
RIGHT = "\nprint(1)\n"


def judged(left: str, middle: str, right: str = RIGHT, path: str | None = None) -> tuple[bool, str]:
    """Whether the judge accepts `middle` written character by character after `left` (the name in progress
    checked at each one), and on into `right` until the calls the middle left open are closed; and its reason."""
    source = SignatureSource(left, right, path=path)
    lexed = advance(INITIAL, left)
    assert lexed is not None
    lexer = lexed[0]
    calls = Calls.start(source, lexed[1], lexer.token not in lx.SKIPPED and lexer.token not in lx.STRING_STATES)
    for char in middle:
        advanced = advance(lexer, char)
        assert advanced is not None
        lexer, terminals = advanced
        calls = calls.feed(terminals)
        if calls is None:
            return False, source.reason
        pending = lexer.possible_terminals()
        if pending is not None and lx.NAME in pending and not calls.admits(lexer.text):
            return False, source.reason
    open_frames = len(calls.frames)
    for char in right:
        advanced = advance(lexer, char)
        if advanced is None:
            break
        lexer, terminals = advanced
        for terminal in terminals:
            calls = calls.feed([terminal])
            if calls is None:
                return False, source.reason
            if len(calls.frames) < open_frames:
                open_frames = len(calls.frames)
        if not calls.frames or terminals and terminals[-1] == lx.NEWLINE:
            break
    return True, source.reason


@pytest.mark.parametrize("left, middle", [
    (LEFT, "os.unlink(src, dst)\n"),  # one positional parameter
    (LEFT, "os.unlink(src, ds"),  # refused as the name is written: no keyword begins with it
    (LEFT, "os.unlink()\n"),  # a required argument missing
    (LEFT + "os.unlink(src, ", "dst)\n"),  # the call's ( in the left context
    (LEFT, "open(file, moed='r')\n"),  # no such keyword, in any of open's overloads
    (LEFT, "g(1, 2)\n"),  # b is keyword-only
    (LEFT, "g(1, c=2)\n"),  # b is required
    (LEFT, "g(1, b=2, b=3)\n"),  # given twice
    (LEFT, "g(1, a=2, b=3)\n"),  # a was filled by position
    (LEFT, "len(x, y)\n"),
    (LEFT + "class A:\n    def __init__(self, x):\n        pass\n\n\n", "A(1, 2)\n"),
])
def test_a_call_that_does_not_fit_is_refused(left, middle):
    assert judged(left, middle)[0] is False


@pytest.mark.parametrize("left, middle", [
    (LEFT, "os.unlink(path)\n"),
    (LEFT, "os.unlink(path, dir_fd=3)\n"),
    (LEFT, "open(file, mode='r')\n"),
    (LEFT, "open(file, mo"),  # a keyword being written
    (LEFT, "g(1, b=2)\n"),
    (LEFT, "g(*args)\n"),  # unpacked: counts and requirements not judged
    (LEFT, "g(**options)\n"),
    (LEFT, "os.unlink(x for x, y in pairs)\n"),  # a generator's commas are not the call's
    (LEFT, "g(lambda p, q: p, b=1)\n"),  # nor a lambda's
    (LEFT, "g((1, 2), b=[3, 4])\n"),
    (LEFT, "print(1, 2, sep='', end='')\n"),  # *values
    (LEFT + "os.unlink(", "path)\n"),
    (LEFT + "def g(a, b):\n    pass\n\n\n", "g(1, 2)\n"),  # the latest definition
    (LEFT, "def g(x, y, z):\n    pass\ng(1, 2, 3)\n"),  # the middle rebinds g: let go
    (LEFT, "class A:\n    def f(self, z):\n        pass\nA().f(1)\n"),
])
def test_a_call_that_fits_or_cannot_be_judged_is_accepted(left, middle):
    assert judged(left, middle)[0] is True


@pytest.mark.parametrize("left, reason", [
    ("from unknown import deco\n\n\n@deco\ndef f(a):\n    pass\n\n\n", "decorated by deco"),
    ("import enum\n\n\nclass f(enum.Enum):\n    A = 1\n\n\n", "base Enum"),
    ("class f:\n    def __new__(cls, *args):\n        pass\n\n\n", "__new__"),
    ("from unknown import f\n", "no signature"),
    ("import contextlib\n\n\nclass A:\n    @contextlib.contextmanager\n    def f(self, a):\n        yield\n\n"
     "    def g(self):\n        ", "decorated by contextmanager"),
    ("from unknown import deco\n\n\n@deco\nasync def f(a):\n    pass\n\n\n", "decorated by deco"),
])
def test_callables_whose_signature_is_not_known_relax_and_say_why(left, reason):
    accepted, said = judged(left, ("self.f" if "self" in left else "f") + "(1, 2, 3, x=4)\n")
    assert accepted and reason in said


STATIC = "    @staticmethod\n    def f(a, b):\n        pass\n"


@pytest.mark.parametrize("above", [True, False])
def test_a_staticmethod_called_through_self_is_judged_by_all_its_parameters(above):
    """starlette's cors.py calls self.allow_explicit_origin(headers, origin), a staticmethod defined below: the query
    document's call, left open, swallowed its @staticmethod, and jedi read it as bound (origin alone)."""
    left = "class A:\n" + (STATIC + "\n" if above else "") + "    def g(self):\n        "
    right = "\n" + ("" if above else "\n" + STATIC)
    assert judged(left, "self.f(1, 2)\n", right) == (True, "")
    assert judged(left, "self.f(1, 2, 3)\n", right)[0] is False


def test_a_definition_below_a_bracket_the_query_leaves_open_is_let_go():
    """An earlier line's bracket, closed after the cursor's line, is still open where jedi is asked: the lines
    below, decorators included, read as one broken expression, so the definition is not judged."""
    left = "from unknown import deco\n\n\nclass A:\n    def g(self):\n        print(\n            1,\n            "
    right = "\n\n    @deco\n    def f(self, a):\n        pass\n"
    accepted, said = judged(left, "self.f(1, 2, 3, 4))\n", right)
    assert accepted and "left open" in said


@pytest.mark.parametrize("left, middle", [
    ("class A:\n    def close(self):\n        pass\n\n    def __exit__(self, a, ", "b):\n        self.close()\n"),
    ('x = """text\n', '"""\nos.unlink(a, b)\n'),  # asked where the left context ends: in a string
    ("def f():\n    def close(a, b):\n        pass\n    ", "return 1\n\n\ndef close():\n    pass\nclose(1, 2)\n"),
])
def test_calls_out_of_the_cursors_scope_are_let_go(left, middle):
    assert judged(LEFT + left, middle)[0] is True


@pytest.mark.parametrize("forwarding", ["def g(*args, **kwargs):\n    return os.unlink(*args, **kwargs)\n",
                                        "class g:\n    def __init__(self, *args):\n        print(*args)\n"])
def test_a_callable_that_takes_the_rest_is_let_go(forwarding):
    assert judged(LEFT + forwarding + "\n\n", "g(1, 2, 3, x=4)\n")[0] is True


def test_a_completion_asks_jedi_once_per_callable():
    source = SignatureSource(LEFT, RIGHT)
    calls = Calls.start(source, advance(INITIAL, LEFT)[1])
    lexer = advance(INITIAL, LEFT)[0]
    for char in "g(1, b=os.unlink('x')); g(2, b=3); os.unlink('y')\n":
        lexer, terminals = advance(lexer, char)
        calls = calls.feed(terminals)
    assert calls is not None and source.queries == 2


# Soundness: true middles of real files, the standard library's and held-out packages' (never trained on).

HELD_OUT = ("starlette", "uvicorn", "fastapi")


@functools.lru_cache(maxsize=None)
def _files(package: str | None, limit: int) -> tuple[tuple[str, str], ...]:
    """(path, text) of compiling files of the standard library (None) or an installed package."""
    if package is None:
        found = [(str(STDLIB / name), text) for name, text in stdlib_files() if len(text) < 30_000]
    else:
        found = package_files(package)
    return tuple(found[:limit] if package else found[::max(1, len(found) // limit)][:limit])


def _refused(files, seed: int, per_kind: int) -> list[tuple[str, str, str]]:
    refused = []
    for make in (random_span_cases, boundary_cases, line_cases, node_cases):
        for case in make(files, seed, per_kind, per_file=2):
            accepted, reason = judged(case.left, case.middle, case.right, path=case.name)
            if not accepted:
                refused.append((case.name, case.middle, reason))
    return refused


def test_true_middles_of_a_few_real_files_are_never_refused():
    assert _refused(_files(None, 40), 49, 10) == []


@pytest.mark.slow
@pytest.mark.parametrize("package, seed, per_kind", [(None, 7, 300), *((name, 8, 70) for name in HELD_OUT)])
def test_true_middles_of_real_files_are_never_refused(package, seed, per_kind):
    """Over 2,040 cuts: 1,200 of the standard library, 840 of held-out packages."""
    files = _files(package, 400)
    if not files:
        pytest.skip(f"{package} is not installed")
    assert _refused(files, seed, per_kind) == []


@pytest.mark.parametrize("left, middle, right, verdict", [
    (LEFT + "os.unlink(src, ", "dst", ")\n", "refused"),  # the cursor inside a call: its ( in the left context
    (LEFT + "os.unlink(", "src", ")\n", "complete"),
    (LEFT + "os.unlink(src, ", "dir_fd=3", ")\n", "complete"),
    (LEFT, "os.unlink(src, dst)", "\n", "refused"),
    (LEFT, "g(1", ")\n", "incomplete"),  # the ) the right context closes the call with: b missing
    (LEFT, "g(1, b=2", ")\n", "complete"),
    (LEFT, "open(file, moed='r')", "\n", "refused"),
    (LEFT, "open(file, mode='r')", "\n", "complete"),
])
def test_the_recognizer_refuses_what_the_call_judge_refuses(left, middle, right, verdict, middle_verdict):
    """Through the recognizer (`FimState.judging_calls`)."""
    from fimlsp.python.quotient import quotient

    state = quotient(left, right).judging_calls(SignatureSource(left, right))
    assert middle_verdict(state, middle) == verdict


def test_a_query_past_its_time_bound_relaxes_says_so_and_is_not_waited_on_again():
    from concurrent.futures import Future

    waited = []

    def never(function, *args) -> Future:
        waited.append(function)
        return Future()  # jedi never answers

    left = LEFT + "# answers kept from other tests are for other code\n"
    source = SignatureSource(left, RIGHT, submit=never, seconds=0.01)
    calls = Calls.start(source, advance(INITIAL, left)[1])
    lexer = advance(INITIAL, left)[0]
    for char in "os.unlink(a, b, c)\nos.unlink(d, e)\n":
        lexer, terminals = advance(lexer, char)
        calls = calls.feed(terminals)
        assert calls is not None
    assert "took more than" in source.reason and source.queries == 1


def test_a_source_s_questions_run_on_the_analysis_s_thread(monkeypatch):
    """jedi is not thread-safe: asked inline beside the analysis's thread, a question shared jedi's subprocess with
    that thread's, and the tests hung on an answer the other had read."""
    import fimlsp.python.signatures as signatures_module

    threads, real = [], signatures_module.judges_script
    monkeypatch.setattr(signatures_module, "judges_script",
                        lambda *args: threads.append(threading.current_thread().name) or real(*args))
    assert judged(LEFT + "# a question no other test asks\n", "os.unlink(a, b, c)\n")[0] is False
    assert threads == ["fimlsp-analysis"]


def test_an_async_function_of_which_jedi_reads_one_overload_is_let_go():
    """asyncio.sleep has two overloads in typeshed, `(delay)` and `(delay, result)`; jedi gives only the second."""
    left = "import asyncio\n\n\nasync def f():\n    "
    accepted, said = judged(left, "await asyncio.sleep(0.1)\n")
    assert accepted and "overloads" in said
    assert judged(LEFT, "open(file, moed='r')\n")[0] is False  # all of open's overloads read: still judged


class _Unanswered(Future):
    """A query jedi never answers, which records how long each waiter would wait for it."""

    def __init__(self, waits: list):
        super().__init__()
        self.waits = waits

    def result(self, timeout=None):
        self.waits.append(timeout)
        raise FutureTimeout


def test_the_call_judge_waits_only_what_is_left_of_the_completion_s_wait():
    """A keystroke's judges wait on jedi a share in all (`fimlsp.python.waits`), the call judge's queries from the
    member judge's budget: a callable asked after the budget is spent is let go at once, not after its own second
    (held-out uvicorn: `conn.data_to_send()` waited 1 s a keystroke before)."""
    waits: list = []
    budget = WaitBudget(0.02)
    left = LEFT + "# answers kept from other tests are for other code: spent budget\n"
    source = SignatureSource(left, RIGHT, submit=lambda *args: _Unanswered(waits), seconds=1.0, budget=budget)
    budget.waited = 0.015  # what the member judge waited already
    assert source.lookup(("os", "unlink")).signatures is None
    budget.waited = 0.02  # (the wait counted by the budget: here, all of it)
    assert source.lookup(("os", "rename")).signatures is None
    assert waits[0] == pytest.approx(0.005) and waits[1] == 0.0
    assert "took more than 0.005 s" in source.reason and "time to wait on the analysis was spent" in source.reason
    assert source.lookup(("os", "unlink")).signatures is None and len(waits) == 2  # kept: not asked again


def test_the_call_judge_shares_the_member_judge_s_wait_and_counts_its_time():
    """One budget for both judges of a completion, and each judge's time (`spent`) counted as the middle is
    judged."""
    left, right = LEFT + "os.unlink(", ")\n"
    guarantee, members = PYTHON.judging_members(PYTHON.constrain(left, right), left, right)
    guarantee, calls = PYTHON.judging_calls(guarantee, left, right)
    assert calls.budget is members.budget
    state = guarantee.state.feed("'a'")
    assert state is not None and state.complete
    assert calls.spent > 0 and members.spent > 0
