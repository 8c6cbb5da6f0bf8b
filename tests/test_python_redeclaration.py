"""No redeclaration of what the file defines (`fimlsp.python.redeclaration`, issue 49 item 4): with the name judge
on, a middle may not end having defined a function or class that the right context defines again in the same block,
unless the true code could (overloads, a property's setter, registrations, conditional definitions)."""

from __future__ import annotations

import pytest

from fimlsp.language import named


@pytest.mark.parametrize("left, middle, right", [
    ("import os\n\n", "def load():\n    return 1\n", "\n\ndef load():\n    return 2\n"),
    ("import os\n\n", "class Loader:\n    pass\n", "\n\nclass Loader:\n    pass\n"),
    ("class A:\n    ", "def run(self):\n        return 1\n", "\n    def run(self):\n        return 2\n"),
])
def test_a_middle_that_defines_what_the_right_context_defines_again_does_not_end(left, middle, right, names_judged):
    assert names_judged(left, middle, right) == "incomplete"
    assert not named("python").binds_names(left, middle, right)
    # the same middle under another name
    renamed = middle.replace("load", "fetch").replace("Loader", "Fetcher").replace("run", "go")
    assert names_judged(left, renamed, right) == "complete"


@pytest.mark.parametrize("left, middle, right", [
    # a model's loop: the middle writes the same method twice
    ("class A:\n    ", "def run(self):\n        return 1\n\n    def run(self):\n        return 2\n",
     "\n    def stop(self):\n        pass\n"),
    # the middle defines again what the left context defined in the same block
    ("class A:\n    def run(self):\n        return 1\n\n    ", "def run(self):\n        return 2\n",
     "\n    def stop(self):\n        pass\n"),
])
def test_a_middle_that_defines_a_name_twice_in_one_block_does_not_end(left, middle, right, names_judged):
    assert names_judged(left, middle, right) == "incomplete"
    assert names_judged(left, middle.replace("def run(self):\n        return 2", "def go(self):\n        return 2"),
                        right) == "complete"


@pytest.mark.parametrize("left, middle, right", [
    # overloads
    ("from typing import overload\n\n", "@overload\ndef f(x: int) -> int: ...\n", "\n\ndef f(x):\n    return x\n"),
    ("import typing\n\n", "@typing.overload\ndef f(x: int) -> int: ...\n", "\n\ndef f(x):\n    return x\n"),
    # a property and its setter
    ("class A:\n    ", "@property\n    def x(self):\n        return 1\n",
     "\n    @x.setter\n    def x(self, value):\n        pass\n"),
    # singledispatch registrations
    ("from functools import singledispatch\n\n\n@singledispatch\ndef f(x):\n    pass\n\n\n",
     "@f.register\ndef _(x: int):\n    pass\n", "\n\n@f.register\ndef _(x: str):\n    pass\n"),
    # the right context's definition is conditional
    ("import sys\n\n", "def f():\n    pass\n", "\n\nif sys.platform == 'win32':\n    def f():\n        pass\n"),
    ("import sys\n\n", "def f():\n    pass\n", "\n\ntry:\n    from _speedups import f\nexcept ImportError:\n"
                                               "    def f():\n        pass\n"),
    # another block: the middle closes the class that held its method
    ("class A:\n    ", "def run(self):\n        return 1\n\n\nclass B:\n",
     "    def run(self):\n        return 2\n"),
    # the first definition is used before the second
    ("import atexit\n\n", "def f():\n    pass\n\n\natexit.register(f)\n", "\n\ndef f():\n    pass\n"),
    ("import atexit\n\n\ndef f():\n    pass\n\n\n", "atexit.register(f)\n\n\ndef f():\n    pass\n", "\n"),
    # the left context's definition is in another block
    ("class A:\n    def run(self):\n        return 1\n\n\n", "class B:\n    def run(self):\n        return 2\n", "\n"),
])
def test_what_the_true_code_could_write_is_accepted(left, middle, right, names_judged):
    assert names_judged(left, middle, right) == "complete"


def test_a_form_feed_does_not_move_the_right_contexts_definition_into_the_middle():
    """CPython numbers lines by their line breaks only; `str.splitlines` also breaks at a form feed (the standard
    library's section breaks), which moved every later definition a line up, into the middle."""
    left, middle, right = "import os\n\x0c\ndef f():\n    pass\n\n\n", "def g():\n    pass\n", "def f():\n    pass\n"
    assert named("python").binds_names(left, middle, right)
    assert not named("python").binds_names(left, middle.replace("def g", "def f"), right)


def test_an_end_s_checks_parse_the_whole_file_once(middle_verdict, monkeypatch):
    """The whole file is parsed once at an end (`syntax.one_parse`): the name judge, the redeclaration check and
    the member and call judges' checks of the whole file (here the call judge's of a header the file's calls must
    still fit) read the same tree."""
    from fimlsp.language import named
    from fimlsp.python import syntax

    python = named("python")
    left, middle = "import os\n\n", "def load(path):\n    return path\n"
    right = "\n\nload('a')\nclass Loader:\n    pass\n"
    guarantee, _members = python.judging_members(python.constrain(left, right), left, right)
    guarantee, _calls = python.judging_calls(guarantee, left, right)
    guarantee, _reason = python.judging_names(guarantee, left, right)
    parses, real = [], syntax.parsed
    monkeypatch.setattr(syntax, "parsed", lambda text, *args, **kwargs: parses.append(text) or real(text, *args,
                                                                                                       **kwargs))
    assert middle_verdict(guarantee.state, middle) == "complete"
    assert parses.count(left + middle + right) == 1
