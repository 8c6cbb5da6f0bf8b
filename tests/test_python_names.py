"""The name judge (`fimlsp.python.names`, `--names strict`): a constrained middle may not load a name that nothing in
the file or the middle binds, and every kind of binding a middle can write is accepted."""

from __future__ import annotations

import functools
import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fimlsp.cases import boundary_cases, line_cases, node_cases, random_span_cases
from fimlsp.decoding import DecodingOptions
from fimlsp.language import named
from fimlsp.python.names import FileNames, relaxed, visible_names
from fimlsp.python.quotient import quotient

LEFT = "import os\nfrom collections import OrderedDict as OD\n\nvalue = 1\n\n"
RIGHT = "\nprint(value)\n"


# Each kind of binding a middle can write, then a load of what it bound.
BINDINGS = {
    "assignment": "fresh = value\nprint(fresh)\n",
    "tuple targets": "a, (b, *c) = 1, (2, 3)\nprint(a, b, c)\n",
    "annotated": "fresh: int = 1\nprint(fresh)\n",
    "augmented after binding": "fresh = 1\nfresh += 1\n",
    "walrus": "if (fresh := value):\n    print(fresh)\n",
    "for target": "for i, j in [(1, 2)]:\n    print(i + j)\n",
    "comprehension target": "squares = [k * k for k in range(3) if k]\n",
    "nested comprehension": "pairs = {p: q for p in range(2) for q in range(p)}\n",
    "parameters": "def f(a, /, b=1, *rest, c, **more):\n    return a, b, rest, c, more\n",
    "lambda": "f = lambda t, u=1: t + u\n",
    "import": "import json\nprint(json.dumps(1))\n",
    "import as": "import os.path as osp\nprint(osp.sep)\n",
    "from import": "from json import dumps as d, loads\nprint(d, loads)\n",
    "with as": "with open('x') as fh, open('y') as (gh):\n    fh.read()\n",
    "except as": "try:\n    pass\nexcept OSError as err:\n    print(err)\n",
    "class": "class Fresh(OD):\n    size = 1\n\nprint(Fresh)\n",
    "def": "def fresh():\n    return 1\n\nfresh()\n",
    "function used before its definition": "def a():\n    return b()\n\ndef b():\n    return 1\n",
    "global": "def f():\n    global later\n    later = 1\n",
    "keyword argument": "print(value, sep='', flush=True)\n",
    "attribute": "print(os.path.anything.at_all)\n",
    "match capture": "match value:\n    case [first, *others]:\n        print(first, others)\n",
    "builtin and dunder": "print(len(__name__), __file__)\n",
    "name the right context binds, in a function": "def g():\n    return later_name()\n",
}


@pytest.mark.parametrize("middle", list(BINDINGS.values()), ids=list(BINDINGS))
def test_every_kind_of_binding_is_accepted(middle, names_judged):
    assert names_judged(LEFT, middle, RIGHT + "def later_name():\n    pass\n") == "complete"


@pytest.mark.parametrize("middle", ["x = nowhere\n", "x = nowhere.attribute\n", "nowhere()\n", "print(nowhere)\n",
                                    "x = [nowhere for k in range(2)]\n", "def f():\n    return nowhere\n",
                                    "f = lambda: nowhere\n", "x = os.path.join(value, warningStream)\n"])
def test_a_middle_that_loads_a_name_nothing_binds_is_refused(middle, names_judged):
    assert names_judged(LEFT, middle, RIGHT) in ("refused", "incomplete")
    # the same middle where the file binds the name
    assert names_judged(LEFT + "nowhere = warningStream = 0\n", middle, RIGHT) == "complete"


def test_a_load_at_module_level_is_refused_as_the_name_is_written(names_judged):
    assert names_judged(LEFT, "x = nowhere\n", RIGHT) == "refused"
    assert names_judged(LEFT, "x = nowhere.y", RIGHT) == "refused"


@pytest.mark.parametrize("text", ["from x import *\n", "globals()['a'] = 1\n", "exec(code)\n", "eval ('a')\n",
                                  "__builtins__.x = 1\n"])
def test_files_whose_names_the_text_does_not_show_relax_the_judge_and_say_why(text, names_judged):
    assert relaxed(text) is not None
    assert names_judged(text, "x = nowhere\n", RIGHT) == "complete"
    assert FileNames.of(text, RIGHT).relaxed.startswith("names not judged")


@pytest.mark.parametrize("middle", ["from x import *\nx = nowhere\n", "globals()['nowhere'] = 1\nx = nowhere\n"])
def test_a_middle_that_makes_names_unknowable_relaxes_the_judge(middle, names_judged):
    assert names_judged(LEFT, middle, RIGHT) == "complete"


def test_a_name_the_left_context_already_loads_unbound_is_not_the_middles_debt(names_judged):
    left = "def f():\n    return missing\n\n"
    assert names_judged(left, "y = 1\n", "\ndef g():\n    return missing\n") == "complete"


def test_visible_names_leave_out_attributes_only():
    names = visible_names("import a\nx = a.b\n", "def f(p):\n    return c\n")
    assert {"a", "x", "f", "p", "c", "len"} <= names
    assert "b" not in names


@pytest.mark.parametrize("left, middle", [("from json import ", "dumps, loads\nprint(dumps)\n"),
                                          ("import os.path as ", "osp\nprint(osp)\n"),
                                          ("x = os.", "anything.at_all\n"),
                                          ("for i, ", "j in []:\n    print(j)\n"),
                                          ("def f(a,\n      ", "b):\n    return b\n"),
                                          ("squares = [k for ", "k in range(3)]\n")])
def test_a_statement_begun_in_the_left_context_is_read_from_where_it_starts(left, middle, names_judged):
    assert names_judged(LEFT + left, middle, RIGHT) == "complete"


@pytest.mark.parametrize("left, middle, right", [
    ("def f(", "a):", "\n    return a + b\n"),  # the true middle binds b too
    ("", "import os\n", "\nprint(sys.argv)\n"),  # the true middle imports sys
    ("for ", "k in []:", "\n    print(k, v)\n"),
    ("def f(b):\n    return b\n\ndef g(", "a):", "\n    return a + b\n"),  # b named in the left, another scope
])
def test_an_end_that_leaves_a_name_of_the_right_context_unbound_is_refused(left, middle, right, names_judged):
    assert names_judged(left, middle, right) == "incomplete"
    assert names_judged(left, middle.replace("a)", "a, b)").replace("os", "sys").replace("k in", "k, v in"),
                        right) == "complete"


@functools.lru_cache(maxsize=1)
def _clean_stdlib_files() -> tuple[tuple[str, str], ...]:
    from harness.corpus import stdlib_files
    from fimlsp.python.names import undefined_names

    files = [(name, text) for name, text in stdlib_files() if len(text) < 20_000]
    random.Random(35).shuffle(files)
    # as in the benchmark, files where pyflakes finds no undefined name
    return tuple(itertools.islice(((name, text) for name, text in files if undefined_names(text) == set()), 60))


@pytest.mark.slow
def test_true_middles_of_real_files_are_never_refused(names_judged):
    """The benchmark's property on a few dozen cuts of each kind (`benchmarks/names_soundness.py` runs 2,000)."""
    files = _clean_stdlib_files()
    refused = []
    for make in (random_span_cases, boundary_cases, line_cases, node_cases):
        for case in make(files, 35, 15):
            if names_judged(case.left, case.middle, case.right) != "complete":
                refused.append((case.name, case.middle))
    assert refused == []


def test_the_setting_is_checked_and_the_reason_says_when_the_judge_is_off():
    with pytest.raises(ValueError, match="names"):
        DecodingOptions(names="loose")
    python = named("python")
    guarantee = python.constrain("from m import *\n", RIGHT)
    _, reason = python.judging_names(guarantee, "from m import *\n", RIGHT)
    assert "star import" in reason
    _, reason = python.judging_names(python.constrain(LEFT, RIGHT), LEFT, RIGHT)
    assert reason == ""


@pytest.mark.parametrize("left", ["# nowhere is a word of a comment\n", "'''nowhere, in a docstring'''\n",
                                  "x = 'nowhere'\n", "def f():\n    nowhere = 1\n\nz = 0\n",
                                  "class C:\n    nowhere = 1\nz = 0\n",
                                  "def f():\n    def g():\n        nowhere = 1\n    return g\n\nz = 0\n"])
def test_words_of_comments_and_strings_and_names_of_closed_bodies_are_not_bound_at_the_cursor(left, names_judged):
    assert "nowhere" not in visible_names(left, RIGHT)
    assert names_judged(LEFT + left, "y = nowhere\n", RIGHT) == "refused"


@pytest.mark.parametrize("left, middle", [
    ("def f():\n    global g\n    g = 1\n\nz = 0\n", "y = g\n"),  # a global a closed body binds
    ("x = f'{(g := 1)}'\n", "y = g\n"),  # a walrus in an f-string
    ("def f(g):\n    ", "return g\n"),  # the cursor in the body: its names are visible
    ("def f():\n    g = 1\n    def h():\n        pass\n    ", "return g\n"),
    ("class C:\n    g = 1\n    ", "h = g\n"),  # in a class body, its names
    ("class C:\n    def m(self, g):\n        pass\n\n    def n(self):\n        ", "return self\n"),
])
def test_names_of_scopes_open_at_the_cursor_and_declared_globals_stay_visible(left, middle, names_judged):
    assert names_judged(left, middle, "\n") == "complete"


@functools.lru_cache(maxsize=1)
def _clean_stdlib_texts() -> tuple[str, ...]:
    return tuple(text for _name, text in _clean_stdlib_files() if text.strip())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_true_middles_of_whole_lines_after_closed_blocks_are_never_refused(data, names_judged):
    """Cursors at the start of a line, where blocks before it have closed: the names of the closed bodies of
    functions and classes are left out of what is visible there, never one that a true middle loads."""
    text = data.draw(st.sampled_from(_clean_stdlib_texts()))
    lines = text.splitlines(keepends=True)
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, min(len(lines), start + 4)))
    left, middle, right = "".join(lines[:start]), "".join(lines[start:end]), "".join(lines[end:])
    assert names_judged(left, middle, right) == "complete"


@pytest.mark.parametrize("left, right", [
    ("import os\n", "\n    pass\n"),  # a header before the body: its condition loads a name
    ("import os\ny = [", "]\nprint(y)\n"),
    ("import os\n", "\nprint(sys.argv)\n"),  # the right context loads a name the finish must bind
    ("class A:\n    def find(cls, name=u'", "dummy'):\n        return config\n"),
    ("def f(", "a):\n    return a + b\n"),
    # a right context that reads as the rest of a `def` header, whose body loads the parameters
    ("class P:\n    @property\n    def no_proxy(self)", "from_dict(config):\n        return config\n"),
])
def test_the_finish_with_the_name_judge_on_ends_where_the_judge_accepts(left, right, names_judged):
    state = quotient(left, right).judging_names(FileNames.of(left, right))
    finish = state.finish()
    assert finish is not None
    assert names_judged(left, finish, right) == "complete"


@pytest.mark.parametrize("left, right", [
    ("environment = {}\nproxy = environment + e", "\nprint(proxy)\n"),
    ("environment = {}\n\n\ndef f():\n    return environment + e", "\n"),
])
def test_the_finish_ends_the_name_the_cursor_is_in_as_one_the_file_binds(left, right):
    """`e` is unbound: the finish completes it to a name the file binds (not a builtin such as `eval`, which the
    file does not mean) rather than trying to bind `e`."""
    state = quotient(left, right).judging_names(FileNames.of(left, right))
    assert state.finish() == "nvironment"

