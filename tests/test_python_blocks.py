"""What CPython's compiler refuses after parsing is refused by the recognizer as it is written (`fimlsp.python.blocks`),
and a finished file is judged by `compile`, not only `ast.parse`."""

from __future__ import annotations

import ast
import functools
import random

import pytest

from fimlsp.language import named
from fimlsp.python.quotient import quotient
from fimlsp.python.syntax import compiles, parses
from fimlsp.syntax_trees import parsed

# (left, middle, right): middles that parse and that the compiler refuses, each for the block it is written in.
REFUSED = [
    ("class C:\n    def f(self):\n        pass\n\n    ", "return 1", "\n"),
    ("class C:\n    ", "yield 1", "\n"),
    ("", "return", "\n"),
    ("x = 1\n", "yield x", "\n"),
    ("for x in y:\n    pass\nelse:\n    ", "break", "\n"),
    ("for x in y:\n    def g():\n        ", "continue", "\n"),
    ("while x:\n    class K:\n        ", "break", "\n"),
    ("def f():\n    ", "await x", "\n"),
    ("async def f():\n    class C:\n        ", "await x", "\n"),
    ("def f():\n    ", "async with x: pass", "\n"),
    ("def f():\n    ", "async for a in b: pass", "\n"),
    ("", "nonlocal x", "\n"),
    ("class C:\n    ", "nonlocal x", "\n"),
    ("", "class A: return 1", "\n"),
    ("", "while 1:\n    pass\nelse: continue", "\n"),
    ("", "x: int = 1; return", "\n"),
    ("def f():\n    return 1\n", "return 2", "\n"),
]

# Middles next to them that the compiler accepts.
ACCEPTED = [
    ("def f():\n    ", "return 1", "\n"),
    ("for x in y:\n    if x:\n        ", "break", "\n"),
    ("for x in y:\n    try:\n        pass\n    finally:\n        ", "continue", "\n"),
    ("async def f():\n    ", "await x", "\n"),
    ("async def f():\n    ", "async with x: pass", "\n"),
    ("def f():\n    ", "g = (await x for x in y)", "\n"),
    ("", "g = lambda: (yield)", "\n"),
    ("", "def f(): return 1", "\n"),
    ("", "for x in y: break", "\n"),
    ("", "async def f(): await x", "\n"),
    ("def f():\n    x = 1\n    class C:\n        ", "nonlocal x", "\n"),
    ("class C:\n    def f(self):\n        pass\n\n    ", "x = 1", "\n"),
    ("class C:\n    def f(self):\n        ", "return self", "\n"),
]


def _fed(state, text):
    """The state after `text` fed a character at a time, or the index of the character it was refused at."""
    for index, char in enumerate(text):
        state = state.feed(char)
        if state is None:
            return index
    return state


@pytest.mark.parametrize("left, middle, right", REFUSED)
def test_what_the_compiler_refuses_is_refused_as_it_is_written(left, middle, right):
    assert parses(left + middle + right) and not compiles(left + middle + right)
    state = quotient(left, right)
    assert state is not None
    assert isinstance(_fed(state, middle + " "), int)  # the keyword, once it is a whole token, or its statement
    assert not named("python").parses(left + middle + right)


@pytest.mark.parametrize("left, middle, right", ACCEPTED)
def test_what_the_compiler_accepts_is_accepted(left, middle, right):
    assert compiles(left + middle + right)
    fed = _fed(quotient(left, right), middle)
    assert not isinstance(fed, int) and fed.complete
    assert named("python").parses(left + middle + right)


def test_a_return_after_a_method_at_class_level_has_a_compile_valid_finish():
    """The issue's case: a fresh line at class-body indentation after a method. `return` never starts the
    middle, and a finish after what may start it compiles."""
    left = 'class Person:\n    def __init__(self, name):\n        self.name = name\n\n    '
    right = "\n"
    state = quotient(left, right)
    assert state.feed("return ") is None
    started = state.feed("re")
    finish = started.finish(40)
    assert finish is not None and compiles(left + "re" + finish + right)


def test_complete_confirms_what_the_windows_leave_out():
    """A middle that rewrites a method's header as a `class` leaves the method's `return` far below in a class
    body: the windows hold only the statement around the cursor, and the whole file is compiled before a
    middle is called complete."""
    body = "".join(f"        x{n} = {n}\n" for n in range(200))
    left = "class C:\n    "
    right = f"\n{body}        return x0\n"
    assert compiles(left + "def f(self):" + right)
    state = quotient(left, right)
    as_method = _fed(state, "def f(self):")
    assert as_method.complete
    as_class = _fed(state, "class D:")
    assert not isinstance(as_class, int) and parses(left + "class D:" + right) and not as_class.complete


@functools.lru_cache(maxsize=1)
def _small_stdlib_files() -> tuple[str, ...]:
    from harness.corpus import stdlib_files

    return tuple(text for _name, text in stdlib_files() if len(text) < 20_000 and "\t" not in text)


def _fresh_lines(count: int, seed: int):
    """(left, right) at fresh lines after statements of class, function and loop bodies of standard-library
    files, the cursor at the body's indentation."""
    files = _small_stdlib_files()
    rng = random.Random(seed)
    while count:
        text = rng.choice(files)
        bodies = [node.body for node in ast.walk(parsed(text))
                  if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.For, ast.While))]
        if not bodies:
            continue
        body = rng.choice(bodies)
        end = rng.choice(body).end_lineno
        lines = text.splitlines(keepends=True)
        yield "".join(lines[:end]) + " " * body[0].col_offset, "\n" + "".join(lines[end:])
        count -= 1


@pytest.mark.parametrize("keyword", ["return x", "yield x", "break", "continue", "await x", "nonlocal x"])
def test_at_fresh_lines_of_real_files_a_keyword_is_refused_exactly_when_the_compiler_refuses_it(keyword):
    for left, right in _fresh_lines(8, seed=len(keyword)):
        state = quotient(left, right)
        fed = _fed(state, keyword + "\n")
        accepted = not isinstance(fed, int) and fed.complete
        assert accepted == compiles(left + keyword + "\n" + right), (left[-200:], keyword)
