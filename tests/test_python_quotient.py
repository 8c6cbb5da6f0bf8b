"""`fimlsp.quotient`: no valid middle is ever rejected, `complete` is exact, invalid prefixes die early."""

from __future__ import annotations

import gc
import math
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from earley import Deadline, DeadlineExceeded, Stopped
from fimlsp import quotient
from fimlsp.python import quotient as python_quotient
from fimlsp.python.context_cache import RightContextCache
from fimlsp.python.quotient import RightContext
from fimlsp.python.region import constrain
from fimlsp.cases import boundary_cases, random_span_cases
from fimlsp.python.syntax import compiles, parses
from fimlsp.python.window import StatementStarts, module_statement_starts
from tests.test_fuzz import fuzz, stdlib_modules, valid_modules
from tests.test_python_meaning import swallows_code
from tests.test_python_window import _next_terminals, nested_modules

SNIPPETS = {
    "strings": 'x = "a\\"b" + \'c\' + r"\\d" + b"e"\ny = """long\n"quoted" \'\'\' text"""\nz = f"{x!r:>{w}}" f\'\'\n',
    "comments": "# header\nx = 1  # trailing (\n\n    # indented comment\ny = [\n    2,  # inside brackets\n]\n",
    "numbers": "n = 0x_1F + 0o17 + 0b1 + 1_000 + 3.14e-10 + .5j + 1. + 0 + 00\nm = n if 1else 0x1for x in y\n",
    "brackets": "d = {'a': [1, (2, 3)], **e}\ns = d['a'][1:2, ::3]\nf(*args, k=lambda q, /, *r, t=1: q)\n",
    "blocks": (
        "class A(B, metaclass=M):\n    @decorator(1)\n    def f(self, a: int = 1, *b, c, **d) -> str:\n"
        "        if a:\n            return b\n        elif c:\n            pass\n        else:\n"
        "            for i in d:\n                while i:\n                    break\n            else:\n"
        "                yield from x\n        try:\n            pass\n        except* E as e:\n"
        "            raise\n        finally:\n            del a\n\n\ndef g():\n    return (yield)\n"
    ),
    "match": "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw} | Point(x=0, y=v, z=kw):\n        pass\n",
    "tabs": "if x:\n\tif y:\n\t\tz = 1\n\tw = 2\n",
    "decorators": (
        "x = compute(\n    1)\n@skip_if(\n    flag,\n)\nclass A:\n    pass\n@d\n@e(\n)\ndef f(): pass\ny = 2\n"
        "z = [\n1,\n]\nw = 3\n"
    ),
    "continuation": "total = 1 + \\\n    2\nasync def h():\n    async with a as (b, c):\n        await d\n",
}



@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_every_short_span_is_accepted(name):
    """With the cursor anywhere (inside strings, comments, numbers, names, brackets, indentation), feeding the
    deleted text one character at a time is never rejected and ends complete, but where it ends in a comment or
    string with no text of its own that would swallow code. (70 cursor positions a snippet.)"""
    text = SNIPPETS[name]
    assert parses(text)
    rng = random.Random(name)
    ends = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 70)))
    for end in ends:
        start = max(0, end - rng.randint(0, 12))
        state = quotient(text[:start], text[end:])
        assert state is not None, (text[:start], text[end:])
        for index, char in enumerate(text[start:end]):
            state = state.feed(char)
            assert state is not None, (text[:start], text[start:start + index + 1], text[end:])
        # or the span ends right after a comment's `#` (a string's quotes) that the rest reads on from as code
        # (`#| header`): the right context keeps its meaning (`fimlsp.python.meaning`)
        assert state.complete or swallows_code(state), (text[:start], text[start:end], text[end:])


@pytest.mark.parametrize(
    "left, middle, right",
    [
        ("x = [1, 2", "]]", "\n"),  # unmatched closing bracket
        ("def f():\n    if x:\n        pass\n", "  y", "\n"),  # dedent to a column never opened
        ("x = 1\n", "else:", "\n    pass\n"),  # else with no if (rejected once `else` cannot grow into a name)
        ("s = 'abc", "\n", "'\n"),  # a newline the single-quoted string cannot hold
        ("x = 0", "or", " 1\n"),  # 0o commits to an octal literal
        ("x = ", "1 2", "\n"),
        ("print(", "a b", ")\n"),
    ],
)
def test_invalid_prefix_is_rejected_as_soon_as_it_is_fed(left, middle, right):
    state = quotient(left, right)
    assert state is not None
    for char in middle[:-1]:
        state = state.feed(char)
        assert state is not None
    assert state.feed(middle[-1]) is None


def test_contexts_that_admit_no_middle():
    # The middle can comment out the rest of its line, but no middle repairs a second invalid line.
    assert quotient("x = 1\n", "\n1 = x\n1 = y\n") is None
    assert quotient("x = )", "\n") is None
    assert quotient("x = (", "]\n") is not None  # `1)\ny = [` closes both: context escape is valid Python
    assert quotient("x = 1\n", "\n  y = 2\n  z = 3\n") is not None  # a middle can open a block: `if x:`
    assert quotient("", "else:\n    pass\n") is not None  # `if x:\n    pass\n`


def test_states_are_values():
    state = quotient("result = compute(", ")\n")
    first = state.feed("a, b")
    second = state.feed("1")
    assert first.complete and second.complete
    closed_early = state.feed(")")
    assert closed_early is not None and not closed_early.complete  # `compute())` needs more: `\nf(`
    assert state.complete and state.text == "result = compute("  # the state fed from is unchanged


def test_empty_middle():
    assert quotient("x = 1", "\n").complete
    assert not quotient("x = ", "\n").complete


MIDDLE_PIECES = st.sampled_from(
    ["x", "1", " ", "\n", "    ", "(", ")", "[", "]", ",", ":", "=", "+", "if", "else", "'", '"', "#", "\\",
     "return", "pass", "def f():", "\t", "lambda", ".", "*", "yield", "await ", "break", "continue", "async ",
     "for x in y:", "while x:", "class C:", "nonlocal x", "async def g():"]
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(SNIPPETS)), st.integers(0, 10_000), st.lists(MIDDLE_PIECES, max_size=6))
def test_complete_is_exact_and_valid_middles_are_never_rejected(name, cut, pieces):
    text = SNIPPETS[name]
    cut %= len(text) + 1
    left, right = text[:cut], text[cut:]
    middle = "".join(pieces)
    state = quotient(left, right)
    assert state is not None
    for index in range(len(middle)):
        state = state.feed(middle[index])
        if state is None:
            assert not any(compiles(left + middle[: index + 1] + tail + right) for tail in ("", "\n", ")", "'"))
            return
    assert state.complete == (compiles(left + middle + right) and not swallows_code(state))


def _stdlib_sample(kind: str, count: int):
    from harness.corpus import stdlib_files

    files = [item for item in stdlib_files() if len(item[1]) < 30_000]
    make = random_span_cases if kind == "randspan" else boundary_cases
    return list(make(files, seed=7, count=count))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["randspan", "boundary"])
def test_standard_library_sample_has_no_false_rejects(kind):
    """A CI-sized sample of the correctness script (`benchmarks/quotient_correctness.py` runs thousands)."""
    for case in _stdlib_sample(kind, 60):
        state = quotient(case.left, case.right)
        assert state is not None, case.name
        for index, char in enumerate(case.middle):
            state = state.feed(char)
            assert state is not None, (case.name, case.middle[: index + 1])
        assert state.complete, (case.name, case.middle)


@pytest.mark.parametrize("left, right", [
    ("if x:\n    y = 1\ne", "lse:\n    y = 2\n"),
    ("if x:\n    y = 1\nel", "if z:\n    y = 2\n"),
    ("try:\n    y = 1\nexc", "ept:\n    y = 2\n"),
    ("try:\n    y = 1\nf", "inally:\n    y = 2\n"),
])
def test_a_cursor_inside_a_column_0_else_is_not_a_statement_start(left, right):
    """The left context's window may not start at the cursor's line when the middle can make it `else`…"""
    state = quotient(left, right)
    assert state is not None and state.complete


@pytest.mark.parametrize("blocks", [99, 100])
def test_the_indentation_limit_is_cpythons_left_and_right_of_the_cursor(blocks):
    """CPython allows 100 indentation levels, the module's included: 99 nested blocks, not 100."""
    text = "".join(" " * depth + "if x:\n" for depth in range(blocks)) + " " * blocks + "pass\n"
    cut = text.rfind("pass")
    for state in (quotient(text[:cut], text[cut:]), quotient("", text)):
        assert (state is not None and state.complete) == parses(text) == (blocks == 99)


def test_a_stopped_setup_raises_stopped_and_is_not_held_against_the_right_context():
    """A newer keystroke stops a setup (`earley.Deadline`); the right context is not remembered as too slow."""
    left = "class A:\n    def f(self):\n        table = {\n"
    right = "".join(f"            {i}: [{i}, ({i}, '{i}')],\n" for i in range(40)) + "        }\n        return table\n"
    cache = RightContextCache()
    stopped = Deadline(math.inf, lambda: True)
    with pytest.raises(Stopped):
        quotient(left, right, stopped, cache=cache)
    with pytest.raises(Stopped):
        constrain(left, right, deadline=stopped, cache=cache)
    state = quotient(left, right, Deadline(time.perf_counter() + 60, lambda: False), cache=cache)
    assert state is not None and state.feed("0: 0,\n").complete


def test_right_context_caches_share_nothing():
    """Each owner (a server, a CLI run) compiles into its own cache: what one keeps, another builds anew."""
    first, second = RightContextCache(), RightContextCache()
    context = first.right_context(")\n")
    assert first.right_context(")\n") is context
    assert quotient("x = (", ")\n", cache=first).context is context
    assert second.right_context(")\n") is not context
    assert quotient("x = (", ")\n", cache=second).context is second.right_context(")\n")
    assert quotient("x = (", ")\n").context is not context  # no cache: compiled for the call alone


def test_a_documents_statement_starts_are_kept_by_the_cache_that_parsed_them(monkeypatch):
    """One parse per document and owner: the next cursor in the same document reuses it, another owner parses, and
    an edit of the document is not parsed again: the starts on each side of the edit keep their facts."""
    import fimlsp.python.window as window_module

    parsed = []

    def counting(document):
        parsed.append(document)
        return module_statement_starts(document)

    monkeypatch.setattr(window_module, "module_statement_starts", counting)
    document = "import os\n\ndef f(x):\n    return x\n\nprint(f(1))\n"
    cache = RightContextCache()
    for cursor in (document.index("return"), document.index("print"), document.index("os")):
        assert quotient(document[:cursor], document[cursor:], cache=cache).complete
    assert parsed == [document]
    starts = module_statement_starts(document)
    assert cache.statement_starts(document) == StatementStarts(starts, starts) != StatementStarts()
    quotient(document[:10], document[10:], cache=RightContextCache())
    assert parsed == [document, document]
    cursor = document.index("x\n") + 1
    typed = document[:cursor] + " if" + document[cursor:]  # mid-typing: the document does not parse
    state = quotient(typed[:cursor + 3], typed[cursor + 3:], cache=cache)
    assert state is not None and state.feed(" y else z").complete and parsed == [document, document]
    assert cache.statement_starts(typed) == StatementStarts(starts[:2], (starts[2] + 3,))


@fuzz(150)
@given(st.one_of(nested_modules(), valid_modules(), stdlib_modules()), st.data())
def test_the_starts_an_edit_leaves_keep_their_facts(document, data):
    """Whatever the edit, `before` starts have whole statements before them and `after` starts whole statements
    from them on, in the edited text."""
    near_a_start = [max(0, start - offset) for start in module_statement_starts(document) for offset in (1, 2)]
    anywhere = st.integers(0, len(document))
    start = data.draw(st.one_of(anywhere, st.sampled_from(near_a_start)) if near_a_start else anywhere, label="start")
    end = data.draw(st.integers(start, min(len(document), start + 30)), label="end")
    inserted = data.draw(st.sampled_from(["", "x", "(", ")", "\n", "    ", "else:", '"""', "#", "\\\n", "@d\n"]))
    edited = document[:start] + inserted + document[end:]
    facts = StatementStarts.of(document).edited(document, edited)
    assert all(parses(edited[:before]) for before in facts.before), facts
    assert all(parses(edited[after:]) for after in facts.after), facts
    # and the windows they give, at the cursor after the edit, leave the quotient as the whole text gives it
    cache = RightContextCache()
    cache.statement_starts(document)
    cursor = start + len(inserted)
    windowed = quotient(edited[:cursor], edited[cursor:], cache=cache)
    whole = RightContext(edited[cursor:], window=False).start(edited[:cursor])
    assert (windowed is None) == (whole is None)
    if whole is not None:
        assert windowed.complete == whole.complete and _next_terminals(windowed) == _next_terminals(whole)


def test_a_middle_that_ends_inside_a_string_does_not_read_the_rest_of_the_file_inside_out(monkeypatch):
    """Right before a docstring, the middle may end inside a string that the docstring's quotes close; the file's
    text is then read as code and its code as strings, and that reading is dead at the first two terminals that
    Python never puts side by side (`A record`): it must not be lexed to the end of the file."""
    import fimlsp.python.right_tokens as module

    record = 'class Record:\n    """A record with a name."""\n\n    def name(self):\n        return self.x\n\n\n'
    lexed = []
    classify = module._classify
    monkeypatch.setattr(module, "_classify", lambda text, *token: lexed.append(token) or classify(text, *token))
    state = quotient("", record * 200)
    assert len(lexed) < 100  # the file has 4,000 tokens
    assert state is not None and state.complete and state.feed("x = 1\n").complete


def test_complete_judges_the_statements_in_the_windows(monkeypatch):
    """A check of `complete` costs the statement around the cursor, not the file (CPython compiles a few lines),
    refusals of what the quotient accepts included."""
    import fimlsp.python.quotient as module

    functions = "".join(f"def f{n}(a, b):\n    return [a, b]\n\n\n" for n in range(300))
    left, right = functions + "def g():\n    if a:\n        a = 1", "\n  b = 2\nc = 3\n" + functions
    state = quotient(left, right)
    parsed = []
    compiles_standing_in = module.compiles_standing_in
    monkeypatch.setattr(module, "compiles_standing_in",
                        lambda source: parsed.append(len(source)) or compiles_standing_in(source))
    assert state.feed("\nif z:").complete
    # `b` at column 2 dedents to no level: in the quotient, whose indentation is an over-approximation
    assert state.quotient_accepts() and not state.complete and not parses(left + right)
    assert parsed and max(parsed) < 200 < len(left)


@pytest.mark.parametrize("window", [True, False])
def test_two_dots_in_the_right_context_are_two_tokens(window):
    """CPython backs up after `..` not followed by a third `.`: `from .. import x` is `from . . import x`. The
    right context's lexer read a `..` that ends a token as nothing at all, and refused the file (found in
    `lib2to3/fixes/fix_isinstance.py`, with the cursor in the module's docstring)."""
    left, right = '"""Fixer ', 'docs."""\n\nfrom .. import fixer_base\nfrom ..fixer_util import token\n'
    state = RightContext(right, window=window).start(left)
    assert state is not None and state.complete and state.feed("more ").complete


def test_a_stopped_right_context_build_hands_what_it_built_over(monkeypatch):
    """A big window stopped while its NFA is built leaves tens of thousands of young objects in the exception's
    frames: freeing them, and the collector's pass over them, must not fall on the caller that stops it."""
    import fimlsp.python.collection as collection
    import fimlsp.python.quotient as module

    handed = []
    monkeypatch.setattr(collection, "discard_frames", handed.append)
    right = "".join(f"    {index}: [{index}, ({index}, 'v')],\n" for index in range(3000)) + "}\n"
    with pytest.raises(Stopped):
        module.RightContext(right, Deadline(math.inf, lambda: True))
    assert len(handed) == 1 and handed[0].tb_next is not None


@pytest.mark.parametrize("known_starts", [False, True])
def test_a_stream_that_reads_strings_as_code_does_not_widen_the_window_of_another(known_starts):
    """A cursor in a module's docstring, on a line at column 0: one stream reads the line as code, and CPython's
    error for the text from there lies near the end of the file (an unterminated string, as the strings are
    read inside out). Giving up every candidate cut before that error is right for that stream only: the
    stream after the docstring's closing quotes is still cut at the first statement, `import re` (it was cut
    26,000 characters on, and its setup took 200 ms)."""
    import sysconfig
    from pathlib import Path

    from fimlsp.python.right_context import reversed_right_context_nfa

    text = (Path(sysconfig.get_paths()["stdlib"]) / "email" / "_header_value_parser.py").read_text()
    cursor = text.index("Terminal notes x.defects")
    right = text[cursor:]
    starts = [start - cursor for start in module_statement_starts(text) if start > cursor] if known_starts else []
    windows = reversed_right_context_nfa(right, True, None, 0, starts).windows
    after_docstring = right.index('"""') + 3
    assert windows[after_docstring] == right[:right.index("import re")]


def test_the_left_context_is_fed_with_the_cycle_collector_held_off_and_it_is_back_on_after(monkeypatch):
    collecting = []
    real_window = python_quotient.left_window
    monkeypatch.setattr(python_quotient, "left_window",
                        lambda *args: collecting.append(gc.isenabled()) or real_window(*args))
    context = RightContext(")\n")
    assert context.start("x = f(") is not None
    assert collecting == [False] and gc.isenabled()
    with pytest.raises(DeadlineExceeded):
        context.start("y = 1\n" * 5000 + "x = f(", deadline=time.perf_counter() - 1)
    assert gc.isenabled()
