"""The Python 3.11 grammar (`fimlsp/python/python.ebnf`) against CPython's own parser.

The oracle is `ast.parse` of the running interpreter (3.11), with the source turned into the grammar's
terminals by the standard library's `tokenize` (`harness/tokens_bridge.py`). Curated snippets cover every
construct, invalid ones check the grammar's tightness, a fixed sample of standard-library files checks coverage
at scale (the whole library: `benchmarks/grammar_coverage.py`), and hypothesis compares grammar and `ast.parse`
on generated expressions, statements and match patterns in both directions.
"""

from __future__ import annotations

import functools
import sys
import textwrap
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from earley import Recognizer
from fimlsp.python.grammar import load_grammar
from fimlsp.python.lexemes import KEYWORDS, OPERATORS, SOFT_KEYWORDS, TERMINALS
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB
from harness.tokens_bridge import BridgeError, terminals

# The oracle, ast.parse and tokenize of the running interpreter, is only right for 3.11 (3.12 has new syntax and
# tokenizes f-strings into parts).
requires_311 = pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the oracle is CPython 3.11")


@functools.cache
def recognizer() -> Recognizer:
    return Recognizer(load_grammar())


def grammar_accepts(source: str | bytes) -> bool:
    return recognizer().recognizes(terminals(source))


def ast_accepts(source: str | bytes) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            parsed(source)
        except (SyntaxError, ValueError):
            return False
    return True


def source(snippet: str) -> str:
    return textwrap.dedent(snippet).strip("\n") + "\n"


# ---------------------------------------------------------------- the grammar object and the terminal contract


def test_terminals_are_exactly_the_contract():
    grammar = load_grammar()
    assert {grammar.names[symbol] for symbol in grammar.terminals} == set(TERMINALS)
    assert all(isinstance(name, str) and name for name in TERMINALS)
    assert grammar.names[grammar.start] == "file_input"


def test_load_grammar_is_cached():
    assert load_grammar() is load_grammar()


def test_keywords_are_pythons():
    import keyword

    assert set(KEYWORDS) == set(keyword.kwlist)
    assert set(SOFT_KEYWORDS) <= set(keyword.softkwlist)
    assert set(OPERATORS).isdisjoint(KEYWORDS)


@requires_311
def test_bridge_token_shape():
    assert terminals("") == []
    assert terminals("# only a comment\n\n   \n# another") == []
    assert terminals("x") == ["NAME", "NEWLINE"]  # no trailing newline: tokenize adds the NEWLINE
    assert terminals("if x:\n    match = case\n") == [
        "if", "NAME", ":", "NEWLINE", "INDENT", "match", "=", "case", "NEWLINE", "DEDENT",
    ]  # fmt: skip
    assert terminals("a ... -> := **= _ type print") == [
        "NAME", "...", "->", ":=", "**=", "NAME", "NAME", "NAME", "NEWLINE",
    ]  # fmt: skip
    assert terminals("x\U000e0100 = 1") == ["NAME", "=", "NUMBER", "NEWLINE"]  # an identifier tokenize's \\w misses


# ---------------------------------------------------------------- curated snippets

VALID = [
    # files of nothing
    "",
    "# a comment\n",
    "\n\n# comment\n   \n",
    "x = 1",  # no trailing newline
    "if x:\n    pass",  # no trailing newline, DEDENT at EOF
    "if x:\n    y = 1\n    # trailing comment, no newline",
    # simple statements
    "pass; x = 1; del x;",
    "pass\nbreak\ncontinue\n",
    "x = y = z = 1, 2",
    "x, = y",
    "x, *y = z",
    "*x, = y",
    "*a = 1\n*a\nprint(*a)",  # compile-time errors, not syntax errors
    "[a, *b, (c, d)] = e",
    "(a, [b, c]), d = e",
    "(a) = 1",
    "((a)) = 1",
    "a.b = a[1] = a[1:2] = a[*b] = a(1).b = a[0][1].c = 1",
    "'s'.x = 1",
    "x = yield",
    "x = yield from y",
    "x = await y",
    "x += 1\nx -= 1\nx *= 1\nx @= 1\nx /= 1\nx //= 1\nx %= 1\nx **= 1\nx >>= 1\nx <<= 1\nx &= 1\nx ^= 1\nx |= 1",
    "a.b += 1\na[0] -= 1\n(a) *= 2\n(a.b) |= 2",
    "x += yield",
    "x: int",
    "x: int = 1",
    "x: int = 1, 2",
    "x: int = yield",
    "a.b: int\na[0]: int = 1\n(a): int\n((a.b)): int = 2",
    "x: 'str' = ''",
    "(x + 1).a: int\n((x)+1).a: int\n(a, b).c: int\n(yield).a: int\n(f(x)).a: int\n((f(x)))[0]: int = 1",
    "(x := 1).a: int\n(not x).a: int\n(-x).a: int\n([x]).a: int\n's'.a: int\n[x][0]: int\nf().a: int",
    # rejected only after parsing (by the compiler or the symbol table), so ast.parse accepts them
    "def f(a, a): pass\nf(a=1, a=2)\nnonlocal x\nbreak\nawait x\n[(yield) for y in z]\nfrom __future__ import braces",
    "del a\ndel a, b\ndel a.b, a[0], (a), [b], (a, b), [a, [b]], ()\ndel a,",
    "assert x\nassert x, 'message'",
    "raise\nraise X\nraise X from Y\nraise X() from None",
    "return\nreturn 1\nreturn 1, 2\nreturn *a, b\nreturn *a",  # outside a function: a compile-time error
    "global a\nglobal a, b\nnonlocal a, b",
    "yield\nyield 1\nyield 1, *a\nyield from a",
    "await x\nawait x.y(1)[2]",
    "import a\nimport a.b.c\nimport a.b as c, d as e, f",
    "from a import b\nfrom a.b import c as d, e\nfrom a import (b, c as d,)\nfrom a import *",
    "from . import a\nfrom .. import a\nfrom ... import a\nfrom .... import a\nfrom .a.b import c\nfrom ...a import *",
    "from __future__ import annotations",
    # expressions
    "a if b else c if d else e",
    "a or b and not c or not not d",
    "a < b <= c == d != e > f >= g in h not in i is j is not k",
    "a | b ^ c & d << e >> f + g - h * i / j // k % l @ m ** -n",
    "-a ** -b\n~a\n+a\nnot a\n-await a\nawait a ** 2",
    "a ** b ** c",
    "(yield)\n(yield from a)\n(yield a, b)",
    "f(x)(y)[z].w",
    "a[1]\na[1:2]\na[:]\na[::]\na[1:2:3]\na[::2]\na[:2,]\na[1:2, 3]\na[...]\na[*b]\na[1, *b]\na[x := 1]",
    "a[b:=1, c]",
    "x = *a, b\nx = a, *b,\nx = [*a, *b]\nx = {*a, *b}\nx = (*a, b)\nx = (*a,)",
    "x = {}\nx = {1: 2}\nx = {1: 2, **a, 3: 4,}\nx = {**a}\nx = {1, 2}\nx = {1,}",
    "x = []\nx = [1]\nx = [1, 2,]\nx = ()\nx = (1,)\nx = (1, 2)\nx = (1)",
    "print(*args, sep='', **kwargs)\nprint >> f, x",
    "'a' 'b' f'c{d!r:>{w}}' R'e' u'f'",
    "b'a' rb'b' Br'c'",
    "x = 1 + 2j - 3.5e-3 + 0x1f + 0o7 + 0b1 + 1_000 + 1J + .5",
    "...\nx = ...\nx[...]",
    "True, False, None",
    # walrus
    "(x := 1)\nif x := f():\n    pass\nwhile (y := g()) > 0:\n    pass\nelif_ = [y := 1, y ** 2]",
    "f(x := 1)\nf(a, x := 1)\n[x := 1 for y in z]\n{x := 1 for y in z}\n(x := 1 for y in z)",
    "[y for x in z if (y := x)]",
    "@x := y\ndef f(): pass",
    "x = (y := 1)\nfoo(x=(y := f(x)))",
    # comprehensions
    "[x for x in y]\n[x for x in y if a if b for z in w]\n{x for x in y}\n{k: v for k, v in y}\n(x for x in y)",
    "[x async for x in y]\n[await x for x in y]\n[x for *a, b in c]\n[x for (a, b) in c]\n[x for a.b in c]",
    "f(x for x in y)\nf(x for x in y if z)\nsum(x * x for x in range(10))",
    "[x for x in a or b]\n[x for x in not a]\n[x for x in a if not b]",
    # lambdas
    "lambda: 0\nlambda x: x\nlambda x, y=1, *a, z, w=2, **k: 0\nlambda *, a: 0\nlambda *a: 0\nlambda **k: 0",
    "lambda a, /: 0\nlambda a, /, b: 0\nlambda a=1, /, b=2, *, c: 0\nlambda a, b=1, /, c=2: 0\nlambda a,: 0",
    "lambda **k,: 0\nlambda *a,: 0\nlambda a, *, b,: 0",
    "lambda: (yield)\nx = lambda: lambda: 0\nf(lambda x: x, key=lambda y: -y)",
    "a if b else lambda: c",
    # calls
    "f()\nf(a)\nf(a,)\nf(a, b)\nf(*a)\nf(**k)\nf(a, *b, c, *d)\nf(a=1)\nf(a=1, *b, c=2, **d, e=3, **f)",
    "f(*a if b else c)\nf(*a, *b)\nf(**a, **b)\nf(x, *y, z=1, *w, **k, v=2)\nf(match=1, case=2)",
    # compound statements, one-line bodies
    "if x: pass\nelif y: pass\nelse: pass",
    "if x: a; b\nwhile x: a = 1; b += 2;\nfor x in y: pass\nwith a: pass\nclass A: pass\ndef f(): pass",
    "try: pass\nexcept: pass",
    """\
    if a:
        pass
    elif b:
        pass
    elif c:
        pass
    else:
        if d:
            pass
    """,
    "while x:\n    break\nelse:\n    pass",
    "for x in y:\n    continue\nelse:\n    pass",
    "for x, *y in z: pass\nfor (a, b), c in d: pass\nfor a.b in c: pass\nfor a[0] in b: pass\nfor x in *a, b: pass",
    "for x in a, b,: pass\nfor x, in y: pass",
    "async def f():\n    async for x in y:\n        pass\n    async with a as b, c:\n        pass",
    "with a: pass\nwith a as b: pass\nwith a as b, c as d, e: pass\nwith a as (b, c): pass\nwith a as b.c: pass",
    "with (a): pass\nwith (a, b): pass\nwith (a as b): pass\nwith (a as b, c as d,): pass\nwith (a, b) as c: pass",
    "with (yield): pass\nwith (a as b, c): pass",
    """\
    try:
        pass
    except A:
        pass
    except (A, B) as e:
        pass
    except:
        pass
    else:
        pass
    finally:
        pass
    """,
    "try:\n    pass\nfinally:\n    pass",
    "try:\n    pass\nexcept A:\n    pass\nfinally:\n    pass",
    "try:\n    pass\nexcept* A:\n    pass\nexcept* (B, C) as e:\n    pass\nelse:\n    pass\nfinally:\n    pass",
    # definitions
    "def f(): pass\ndef f(a): pass\ndef f(a,): pass\ndef f(a, b=1): pass\ndef f(a, b=1, *c, d, e=2, **f): pass",
    "def f(*, a): pass\ndef f(*, a=1, b): pass\ndef f(*a): pass\ndef f(*a,): pass\ndef f(**k): pass\ndef f(**k,): pass",
    "def f(a, /): pass\ndef f(a, /,): pass\ndef f(a, /, b): pass\ndef f(a, b=1, /, c=2): pass\ndef f(a=1, /): pass",
    "def f(a, /, b, *, c): pass\ndef f(a, /, *b): pass\ndef f(a, /, **b): pass\ndef f(a, b=1, /, *, c): pass",
    "def f(a: int, b: str = '', *c: int, d: 'x' = 1, **e: dict) -> None: pass",
    "def f(*args: *Ts): pass\ndef f(*args: *tuple[int, ...]): pass",
    "def f(a, b):\n    return a + b\n",
    "async def f():\n    await x\n    return [y async for y in z]",
    "@dec\ndef f(): pass\n@dec.attr(1)\n@dec[0].x(y)(z)\n@(lambda f: f)\n@a or b\nclass C: pass",
    "@property\n@functools.lru_cache(maxsize=None)\nasync def f(): pass",
    "class A(): pass\nclass A(B): pass\nclass A(B, C, metaclass=M, **k): pass\nclass A(*bases): pass",
    "class A:\n    x: int = 1\n    def f(self):\n        pass\n\n    class B:\n        pass",
    # soft keywords as names
    "match = 1\ncase = 2\nmatch.x = case[0]\nmatch(x)\nprint(match, case)\nmatch[x]: int = 1",
    "def match(case): return case\nclass case: pass\nimport match\nfrom case import match as case",
    "match, case = 1, 2\nmatch * x\nmatch - x\n_ = type(x)",
    "f(match=match)\nx = [match for case in match]\nlambda match, case=1: match",
    # match statements: every pattern kind
    """\
    match x:
        case 1:
            pass
        case -1 | 1.5 | -2j | 1 + 2j | 1 - 2j | -1 + 2j:
            pass
        case 'a' | "b" 'c' | b'd' | None | True | False:
            pass
        case a.b | a.b.c:
            pass
        case y:
            pass
        case _:
            pass
    """,
    """\
    match x, y:
        case [a, b, *rest]:
            pass
        case (a, b, *_):
            pass
        case [a, [b, c], (d,)]:
            pass
        case []:
            pass
        case ():
            pass
        case a, b:
            pass
        case a, *b:
            pass
        case *a, b:
            pass
        case a,:
            pass
        case (a):
            pass
        case (a | b) as c:
            pass
        case [1, 2] | [3, 4] as y if y:
            pass
    """,
    """\
    match x:
        case {}:
            pass
        case {'a': 1, "b": [c, d], **rest}:
            pass
        case {1: _, a.b: c, None: d, -1: e, 1+2j: f,}:
            pass
        case {**rest}:
            pass
        case Point():
            pass
        case Point(1, 2):
            pass
        case Point(x=1, y=2,):
            pass
        case a.b.Point(1, y=(2 | 3)):
            pass
        case str() | bytes() as s if len(s) > (n := 3):
            pass
        case Point(x, y) if x == y:
            pass
    """,
    "match (x):\n    case 1: pass\n    case 2: return",
    "match *a, b:\n    case _: pass",
    "match x,:\n    case _: pass",
    "match a := b:\n    case _: pass",
    "match -x:\n    case match:\n        pass\n    case case:\n        pass",
    "match x:\n    case [*_]:\n        pass\n    case {'k': (1 | 2) as v}:\n        pass",
    "match f(x)[0].y:\n    case _: pass",
    # statements of nested blocks
    "def f():\n    def g():\n        class C:\n            def h(self):\n                return 1\n    return g",
    "if a:\n  if b:\n    pass\n  else:\n    pass\nelse:\n  pass",
    "x = (\n    1,\n    2,\n)\ny = [\n  3\n]\nz = {\n}\n",
    "x = 1 + \\\n    2",
]

INVALID = [
    "x = ",
    "x y",
    "= 1",
    "1 = x",
    "f() = 1",
    "a + b = c",
    "(*a) = 1",
    "del *a",
    "del f()",
    "del a + b",
    "x := 1",
    "(a.b := 1)",
    "(a[0] := 1)",
    "a[x:=1:2]",
    "[x for y in z if x := 1]",
    "[x for x in lambda: y]",
    "[x for x in a if lambda: b]",
    "f(x for x in y,)",
    "f(a, x for x in y)",
    "class A(x for x in y): pass",
    "f(**x, *y)",
    "f(a=1, b)",
    "f(**k, b)",
    "f(a=1 for a in b)",
    "f(a.b=1)",
    "await await x",
    "await -x",
    "a == not b",
    "a not b",
    "a is in b",
    "x = (*a)",
    "x = *a ** 2 < 1",
    "print x",
    "(a, b) += 1",
    "[a] += 1",
    "a, b: int",
    "(a, b): int",
    "f(): int",
    "(x).a: int",  # CPython's PEG commits to `( single_target )` and then needs the ':'
    "((a.b))[0]: int",
    "(x)(1).a: int = 1",
    "((x)).a: int",
    "(x.a[0]).b: int",
    "(x).a[0]: int",
    "lambda *: 0",
    "lambda *,: 0",
    "lambda x=1, y: 0",
    "lambda x=1, /, y: 0",
    "lambda (x): 0",
    "lambda x: int: 0",
    "def f(*): pass",
    "def f(*,): pass",
    "def f(/): pass",
    "def f(a, b=1, /, c): pass",
    "def f(a=1, b): pass",
    "def f(**k, a): pass",
    "def f(**k, *a): pass",
    "def f(*a, *b): pass",
    "def f(a, /, /): pass",
    "def f(*, /): pass",
    "def f(**k: *T): pass",
    "def f(a: *T): pass",
    "def f(a)",
    "def f(a) -> : pass",
    "def f[T](): pass",
    "type X = int",
    "class A(B): x = 1; def f(): pass",
    "if x: if y: pass",
    "if x:\npass",
    "if x: pass\nelse if y: pass",
    "else: pass",
    "elif x: pass",
    "for x in y if z: pass",
    "for f() in y: pass",
    "for x in: pass",
    "with a as f(): pass",
    "with (a as b) as c: pass",
    "with a as b as c: pass",
    "with (*a): pass",
    "try: pass",
    "try:\n    pass\nelse:\n    pass",
    "try:\n    pass\nexcept* ValueError:\n    pass\nexcept ValueError:\n    pass",
    "try:\n    pass\nexcept*:\n    pass",
    "try:\n    pass\nexcept A, B:\n    pass",
    "try:\n    pass\nfinally:\n    pass\nexcept:\n    pass",
    "from a import b,",
    "from a import (b)c",
    "from a import (*)",
    "from . import",
    "import a as b.c",
    "import .a",
    "import a.b as",
    "from .a import b as c.d",
    "global a.b",
    "global",
    "nonlocal (a)",
    "raise X from",
    "raise from X",
    "assert",
    "assert x, y, z",
    "return yield",
    "x = yield = 1",
    "x = a if b",
    "x = a if b else",
    "x = [x for]",
    "x = {**a: 1}",
    "x = {**a for b in c}",
    "x = {*a: 1}",
    "x = {a: *b}",
    "x = [**a]",
    "x = (**a)",
    "x = a[]",
    "x = a[**b]",
    "x = a.1",
    "x = 1 2",
    "x = 'a' 1",
    "x = ,",
    "x = (,)",
    "x = [,]",
    "x = (a b)",
    "@x\nx = 1",
    "@x\n",
    "@x def f(): pass",
    "async x = 1",
    "async lambda: 0",
    "async class A: pass",
    "async while x: pass",
    # match statements
    "match x:\n    pass",
    "match x: case 1: pass",
    "match x:\n    case 1: pass\n    pass",
    "match x:\n    case a + b: pass",
    "match x:\n    case f(x)(y): pass",
    "match x:\n    case f().g: pass",
    "match x:\n    case a[0]: pass",
    "match x:\n    case -a: pass",
    "match x:\n    case *a: pass",
    "match x:\n    case (*a): pass",
    "match x:\n    case **a: pass",
    "match x:\n    case {**a, 'k': v}: pass",
    "match x:\n    case {a: 1}: pass",
    "match x:\n    case {**a, **b}: pass",
    "match x:\n    case {*a}: pass",
    "match x:\n    case P(x=1, 2): pass",
    "match x:\n    case P(*a): pass",
    "match x:\n    case P(**a): pass",
    "match x:\n    case 1 as 2: pass",
    "match x:\n    case a as b.c: pass",
    "match x:\n    case a if: pass",
    "match x:\n    case [a, *b, *c] | (d := 1): pass",
    "match x:\n    case lambda: 0: pass",
    "match x:\n    case 1 + 2 + 3j: pass",
    "match x:\n    case 1 * 2j: pass",
    "match *a:\n    case _: pass",
    "match yield:\n    case _: pass",
    "match x:\ncase 1: pass",
]


@requires_311
@pytest.mark.parametrize("snippet", VALID, ids=range(len(VALID)))
def test_valid_snippet_is_recognized(snippet):
    text = textwrap.dedent(snippet)  # as written: some have no trailing newline on purpose
    assert ast_accepts(text), "the snippet itself should be valid Python 3.11"
    assert grammar_accepts(text)


@requires_311
@pytest.mark.parametrize("snippet", INVALID, ids=range(len(INVALID)))
def test_invalid_snippet_is_rejected(snippet):
    text = source(snippet)
    assert not ast_accepts(text), "the snippet itself should be invalid Python 3.11"
    try:
        names = terminals(text)
    except BridgeError:
        pytest.skip("does not tokenize")
    assert not recognizer().recognizes(names)


@requires_311
@pytest.mark.parametrize(
    "snippet",
    [
        "def f():\n    return 1\n",
        "for x in y:\n    break\n",
        "class A:\n    nonlocal_ = 1\n",
    ],
)
def test_no_trailing_newline_variants(snippet):
    assert grammar_accepts(snippet.rstrip("\n"))


# Known looseness, checked so that it stays known: a context-free grammar over these terminals cannot see a
# NUMBER's kind, a STRING's prefix, or that a NAME is `_`.
INHERENTLY_ACCEPTED = [
    "match x:\n    case 1 + 2: pass\n",  # CPython: imaginary number required in complex literal
    "match x:\n    case 1j + 2j: pass\n",  # CPython: real number required in complex literal
    "x = 'a' b'b'\n",  # CPython: cannot mix bytes and nonbytes literals
    "match x:\n    case {**_}: pass\n",  # CPython: `_` is no capture target
    "match x:\n    case y as _: pass\n",  # CPython: cannot use '_' as a target
]


@requires_311
@pytest.mark.parametrize("snippet", INHERENTLY_ACCEPTED)
def test_known_looseness(snippet):
    assert not ast_accepts(snippet)
    assert grammar_accepts(snippet)


# ---------------------------------------------------------------- standard-library sample


STDLIB_SAMPLE = [
    "typing.py",
    "dataclasses.py",
    "asyncio/base_events.py",
    "asyncio/tasks.py",
    "traceback.py",  # match statement
    "csv.py",
    "importlib/_bootstrap_external.py",
    "collections/__init__.py",
    "enum.py",
    "inspect.py",
    "argparse.py",
    "email/_header_value_parser.py",
    "ast.py",
    "functools.py",
    "contextlib.py",
    "re/_parser.py",
    "string.py",
    "zipfile.py",
    "_pydecimal.py",
    "test/test_patma.py",  # every pattern kind
    "test/test_grammar.py",
    "test/test_exception_variations.py",  # except*
    "test/test_except_star.py",
    "test/test_fstring.py",
    "test/test_positional_only_arg.py",
    "test/test_keywordonlyarg.py",
    "test/test_unparse.py",
    "test/test_coroutines.py",
    "test/test_asyncgen.py",
    "test/test_decorators.py",
    "test/test_with.py",
    "test/test_named_expressions.py",
    "test/test_unpack_ex.py",
    "test/test_genexps.py",
    "test/test_pep646_syntax.py",
    "test/test_types.py",
    "test/test_peepholer.py",
    "test/test_scope.py",
    "test/test_extcall.py",
    "test/libregrtest/single.py",
    "idlelib/idle_test/test_colorizer.py",
]


@pytest.mark.slow
@requires_311
@pytest.mark.parametrize("relative", STDLIB_SAMPLE)
def test_stdlib_file_is_recognized(relative):
    path = STDLIB / relative
    if not path.exists():
        pytest.skip(f"{relative} is not in this installation")
    data = path.read_bytes()
    assert ast_accepts(data)
    names = terminals(data)
    state = recognizer().start()
    for index, name in enumerate(names):
        state = state.feed(name)
        assert state is not None, f"rejected terminal {index} ({name}); before it: {names[max(0, index - 10):index]}"
    assert state.complete


# ---------------------------------------------------------------- differential tests with hypothesis
#
# Generated texts mix valid and invalid forms (stars, walruses, lambdas, yields, slices, keyword arguments in
# every position), so both directions of "grammar accepts iff ast.parse accepts" are exercised.

ATOMS = st.sampled_from(
    ["x", "y", "match", "case", "_", "1", "2.5", "3j", "'s'", "'s' f'{x}'", "None", "True", "...", "()", "[]", "{}"]
)
BINARY = st.sampled_from(
    ["+", "-", "*", "/", "//", "%", "@", "**", "|", "&", "^", "<<", ">>", "<", ">", "==", "!=", "<=", ">=",
     "in", "not in", "is", "is not", "and", "or"]
)  # fmt: skip
PREFIX = st.sampled_from(
    ["-", "+", "~", "not ", "await ", "*", "**", "yield ", "yield from ", "lambda: ", "lambda x, *y: "]
)
TARGETS = st.sampled_from(["x", "x, y", "(x, y)", "[x, *y]", "*x", "x.a", "x[0]", "f()", "1", "(x)", "x,"])


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(
        st.one_of(
            children,
            children.map(lambda e: f"*{e}"),
            children.map(lambda e: f"**{e}"),
            children.map(lambda e: f"k={e}"),
            children.map(lambda e: f"x := {e}"),
        ),
        max_size=3,
    )
    slice_items = st.lists(
        st.one_of(
            children,
            st.tuples(children, children).map(lambda p: f"{p[0]}:{p[1]}"),
            children.map(lambda e: f"::{e}"),
            children.map(lambda e: f"*{e}"),
        ),
        min_size=1,
        max_size=3,
    )
    comma = st.sampled_from([", ", ","])
    trailing = st.sampled_from(["", ","])
    return st.one_of(
        st.tuples(children, BINARY, children).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(PREFIX, children).map(lambda t: f"{t[0]}{t[1]}"),
        st.tuples(children, items, trailing).map(lambda t: f"{t[0]}({', '.join(t[1])}{t[2] if t[1] else ''})"),
        st.tuples(children, children).map(lambda t: f"{t[0]}({t[1]} for x in y)"),
        st.tuples(children, slice_items, trailing).map(lambda t: f"{t[0]}[{', '.join(t[1])}{t[2]}]"),
        children.map(lambda e: f"{e}.attr"),
        children.map(lambda e: f"({e})"),
        st.tuples(children, comma, children, trailing).map(lambda t: f"({t[0]}{t[1]}{t[2]}{t[3]})"),
        st.tuples(children, trailing).map(lambda t: f"[{t[0]}{t[1]}]"),
        st.tuples(children, children).map(lambda t: f"{{{t[0]}: {t[1]}}}"),
        st.tuples(children, children).map(lambda t: f"{{{t[0]}, {t[1]}}}"),
        st.tuples(children, TARGETS, children, children).map(
            lambda t: f"[{t[0]} for {t[1]} in {t[2]} if {t[3]}]"
        ),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} if {t[1]} else {t[2]}"),
        st.tuples(TARGETS, children).map(lambda t: f"{t[0]} := {t[1]}"),
        st.tuples(children, children).map(lambda t: f"{t[0]}, {t[1]}"),
    )


EXPRESSIONS = st.recursive(ATOMS, _extend, max_leaves=6)

STATEMENT_FORMS = st.sampled_from(
    [
        "{0}",
        "x = {0}",
        "{0} = x",
        "{0} = {1}",
        "{0} += 1",
        "x: {0} = {1}",
        "{0}: int",
        "del {0}",
        "return {0}",
        "for {0} in {1}: pass",
        "with {0} as {1}: pass",
        "with ({0}, {1}): pass",
        "if {0}: pass\nelif {1}: pass",
        "while {0}: pass",
        "assert {0}, {1}",
        "raise {0} from {1}",
        "@{0}\ndef f(): pass",
        "def f(a={0}) -> {1}: pass",
        "class C({0}): pass",
        "f({0}, {1})",
        "x[{0}, {1}]",
        "lambda {0}: 0",
        "match {0}:\n    case _: pass",
        "try:\n    pass\nexcept {0} as e:\n    pass",
    ]
)


def _differential(text: str) -> None:
    expected = ast_accepts(text)
    try:
        names = terminals(text)
    except BridgeError:
        assert not expected
        return
    assert recognizer().recognizes(names) == expected, f"ast.parse accepts: {expected}\n{text}"


@requires_311
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.tuples(STATEMENT_FORMS, EXPRESSIONS, EXPRESSIONS))
def test_statements_of_generated_expressions_agree_with_ast(parts):
    form, first, second = parts
    _differential(form.format(first, second) + "\n")


PARAMETERS = st.sampled_from(
    ["a", "b", "a=1", "b=2", "a: int", "a: int = 1", "*", "*a", "*a: int", "*a: *T", "**k", "**k: int", "/", ","]
)


@requires_311
@settings(max_examples=400, deadline=None)
@given(st.lists(PARAMETERS, max_size=6), st.booleans())
def test_generated_parameter_lists_agree_with_ast(parameters, is_lambda):
    joined = ", ".join(parameters).replace(", ,", ",")
    if is_lambda:
        joined = ", ".join(p for p in parameters if ":" not in p).replace(", ,", ",")
        _differential(f"lambda {joined}: 0\n")
    else:
        _differential(f"def f({joined}): pass\n")


ARGUMENTS = st.sampled_from(["a", "*a", "**a", "k=1", "x := 1", "a for a in b", "a.b=1", ","])


@requires_311
@settings(max_examples=300, deadline=None)
@given(st.lists(ARGUMENTS, max_size=5))
def test_generated_call_arguments_agree_with_ast(arguments):
    _differential(f"f({', '.join(arguments)})\n")
    _differential(f"class C({', '.join(arguments)}): pass\n")


PATTERN_ATOMS = st.sampled_from(
    ["x", "_", "match", "1", "-1", "1.5", "2j", "-1 + 2j", "'s'", "None", "True", "a.b", "a.b.c", "P()", "a.P()"]
)


def _patterns(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(st.one_of(children, st.just("*r"), st.just("*_")), max_size=3)
    trailing = st.sampled_from(["", ","])
    return st.one_of(
        st.tuples(children, children).map(lambda t: f"{t[0]} | {t[1]}"),
        children.map(lambda p: f"{p} as y"),
        children.map(lambda p: f"({p})"),
        st.tuples(items, trailing).map(lambda t: f"[{', '.join(t[0])}{t[1] if t[0] else ''}]"),
        st.tuples(items, trailing).map(lambda t: f"({', '.join(t[0])}{t[1] if t[0] else ''})"),
        st.tuples(
            st.lists(st.tuples(st.sampled_from(["'k'", "1", "a.b", "x", "-1", "None"]), children), max_size=2),
            st.sampled_from(["", "**rest"]),  # `**_` is invalid, and NAME cannot tell `_`
        ).map(lambda t: "{" + ", ".join([f"{k}: {v}" for k, v in t[0]] + ([t[1]] if t[1] else [])) + "}"),
        st.tuples(
            st.sampled_from(["P", "a.P"]),
            st.lists(st.one_of(children, children.map(lambda p: f"k={p}"), st.just("*r")), max_size=3),
        ).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(children, children).map(lambda t: f"{t[0]}, {t[1]}"),
        children.map(lambda p: f"*{p}"),
    )


PATTERNS = st.recursive(PATTERN_ATOMS, _patterns, max_leaves=5)


@requires_311
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERNS, st.sampled_from(["", " if x", " if (y := x)"]))
def test_generated_match_patterns_agree_with_ast(pattern, guard):
    _differential(f"match z:\n    case {pattern}{guard}:\n        pass\n")
