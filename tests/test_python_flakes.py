"""pyflakes' undefined names with each outer function body read once (`fimlsp.python.flakes`): the same loads as
pyflakes reading the whole file, however the kept bodies were read (in files that bind other names)."""

from __future__ import annotations

import ast
import random
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fimlsp.python import flakes
from fimlsp.python.flakes import forget_bodies, undefined_places

pyflakes_checker = pytest.importorskip("pyflakes.checker")
pyflakes_messages = pytest.importorskip("pyflakes.messages")


def pyflakes_own(text: str) -> list[tuple[str, int, int]]:
    """The oracle: pyflakes on the whole file, as the judge read it before."""
    return sorted((message.message_args[0], message.lineno, message.col)
                  for message in pyflakes_checker.Checker(ast.parse(text), filename="<fim>").messages
                  if isinstance(message, pyflakes_messages.UndefinedName))


def read_once(text: str) -> list[tuple[str, int, int]] | None:
    found = undefined_places(ast.parse(text), text)
    return None if found is None else sorted(found)


@pytest.fixture(autouse=True)
def nothing_kept():
    """No body kept by other tests (their files' texts count against what is kept, `_KEPT_CHARS`)."""
    forget_bodies()
    yield
    forget_bodies()


# Pieces of modules: functions whose bodies load, delete or declare names, and module code that binds them (or
# does not), each where pyflakes lets a body's verdict depend on what is around it.
BODIES = [
    "def f():\n    return a + len(b)\n",
    "def g(x=a):\n    del a\n    return x\n",
    "def h():\n    global a\n    a = 1\n",
    "def k():\n    def inner():\n        nonlocal b\n        b = 2\n    b = 1\n    return inner, c\n",
    "class C:\n    a = 1\n    def m(self):\n        return a, __class__, self\n    n = lambda self: b\n",
    "if a:\n    def f():\n        del b\n",
    "t = lambda: c\n",
    "u = [lambda: i + a for i in range(3)]\n",
    "def p(x: 'a') -> 'b':\n    y: 'c' = x\n    return y\n",
    "def w():\n    x: b = 1\n    b = int\n    return x\n",  # (the annotations future defers the annotation)
    "class D:\n    class E:\n        def m(self):\n            return b, E\n",
    "try:\n    def q():\n        return c\nexcept NameError:\n    pass\n",
]
BINDINGS = ["a = 1\n", "b = 2\n", "c: int\n", "from os import *\n", "del a\n", "import c\n", "b: int = 0\n", ""]
FUTURE = ["", "from __future__ import annotations\n"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FUTURE), st.lists(st.sampled_from(BODIES + BINDINGS), max_size=7),
       st.lists(st.sampled_from(BODIES + BINDINGS), max_size=7))
def test_a_module_of_pieces_gets_pyflakes_own_verdict_with_its_bodies_read_before(future, first, second):
    """Each module is read twice, once while its bodies are kept from the other module (another module scope)."""
    for pieces in (first, second, first):
        text = future + "".join(pieces)
        assert read_once(text) in (pyflakes_own(text), None)


@pytest.mark.parametrize("text", [
    "def f():\n    return a\n",  # a free load no module binding takes
    "a = 1\ndef f():\n    return a\n",  # the same body, bound by the module
    "from os import *\ndef f():\n    return a\n    del b\n",  # a star import: a load unjudged, a `del` still undefined
    "def f():\n    del b\n\ndef g():\n    return b\n",
    "if x:\n    def f():\n        del b\n",  # a `del` on a conditional branch is not judged
    "class C:\n    def m(self):\n        return __class__, C, m\n",
    "def f():\n    global z\n    z = 1\n\nprint(z)\n\ndef g():\n    return z\n",
    "def f():\n    return f\n\ndel f\n",  # the module binds the function's name, then no more
    "from __future__ import annotations\n\ndef w():\n    x: b = 1\n    b = int\n    return x\n",
    "print(y)\n\ndef f():\n    nonlocal_ = y\n\ndef g():\n    def h():\n        nonlocal y\n    y = 1\n",
])
def test_the_bodies_pyflakes_reads_differently_by_their_place_get_its_verdict(text):
    assert read_once(text) == pyflakes_own(text)
    assert read_once(text) == pyflakes_own(text)  # now from the kept bodies


def test_a_body_kept_from_one_file_is_judged_by_the_module_scope_of_another():
    body = "\ndef f():\n    return a, b\n"
    assert read_once("a = 1" + body) == pyflakes_own("a = 1" + body) == [("b", 3, 14)]
    assert len(flakes._kept) == 1
    assert read_once("b = 1" + body) == [("a", 3, 11)]
    assert len(flakes._kept) == 1  # (read once)


def test_a_free_load_the_module_binds_by_a_bare_annotation_is_read_by_pyflakes_whole():
    text = "a: int\n\ndef f():\n    return a\n"
    checker = flakes._FileReader(ast.parse(text), text)
    assert checker.undefined() is None
    assert sorted(undefined_places(ast.parse(text), text)) == pyflakes_own(text) == [("a", 4, 11)]


def stdlib_texts(count: int, seed: int) -> list[str]:
    folder = Path(sysconfig.get_paths()["stdlib"])
    paths = sorted(path for path in folder.glob("*.py") if 2_000 < path.stat().st_size < 60_000)
    return [path.read_text(encoding="utf-8") for path in random.Random(seed).sample(paths, count)]


EDITS = ["", "x", "foo(bar)", "global y\n", "del z\n", "lambda: q", "self.a = b\n", "nonlocal w\n", "if x:\n    pass\n"]


def test_cuts_of_the_standard_library_get_pyflakes_own_verdict_from_bodies_read_once():
    """Each file, then the same file with a few lines replaced by a middle (in the place's indentation), as a
    finish search checks its ends: most bodies come from those the first reading kept."""
    rng, checked, reads = random.Random(49), 0, []
    original = flakes._read_alone

    def counted(*args):
        reads.append(args[0])
        return original(*args)

    flakes._read_alone = counted
    try:
        for text in stdlib_texts(16, seed=49):
            lines = text.splitlines(keepends=True)
            variants = [text]
            for _ in range(4):
                at = rng.randrange(len(lines))
                indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
                middle = "".join(indent + line for line in rng.choice(EDITS).splitlines(keepends=True))
                variants.append("".join(lines[:at]) + middle + "".join(lines[at + rng.randrange(3):]))
            for variant in variants:
                try:
                    ast.parse(variant)
                except SyntaxError:
                    continue
                before = len(reads)
                assert read_once(variant) == pyflakes_own(variant)
                checked += 1
                if variant is not text:
                    assert len(reads) - before <= 2  # the edited function (and one a line break merged into it)
    finally:
        flakes._read_alone = original
    assert checked >= 50
