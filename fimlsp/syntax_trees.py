"""CPython's syntax trees, built one conversion at a time in the whole process.

CPython before 3.11.8 and 3.12.2 keeps the recursion depth of its conversion from the parser's tree to `ast`
objects per interpreter, not per thread (gh-106905): a conversion that another thread's interleaves with fails with
SystemError ("AST constructor recursion depth mismatch"). In the middle of a conversion the interpreter's lock passes
to another thread only through Python code that a garbage collection runs (finalizers, `gc.callbacks`), so a
conversion is safe when it runs with the collector paused and no other conversion can start while one is stopped in
such code. Guarding fimlsp's own parses was not enough: a conversion outside the guard (a test runner's report of a
failure on the main thread) stopped by a collection let fimlsp's thread convert in the middle of it, and failed. So
on those versions importing this module makes `ast.parse` itself (and with it `ast.literal_eval`) run alone with the
collector paused (`CONVERTING`): fimlsp's parses, those of the libraries it calls (jedi's literals, parso's grammar,
pyflakes' string annotations) and those of the program it runs in.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading

from fimlsp.collector import collector_paused

CONVERTING = threading.RLock()
CONVERSIONS_RACE = sys.version_info < (3, 11, 8) or (3, 12) <= sys.version_info < (3, 12, 2)


class TreeNotBuilt(SyntaxError):
    """A conversion interleaved with each try (one that called CPython's compiler without `ast.parse`): not the
    text's fault, so a cache of trees keeps no verdict on it."""


def _parse_alone(parse):
    """`parse` with the collector paused, then alone: paused first, as a collection between the two would run its
    finalizers holding the lock."""

    @functools.wraps(parse)
    def parse_alone(*args, **kwargs):
        with collector_paused(), CONVERTING:
            return parse(*args, **kwargs)

    return parse_alone


if CONVERSIONS_RACE and not hasattr(ast.parse, "__wrapped__"):
    ast.parse = _parse_alone(ast.parse)


def parsed(source: str, mode: str = "exec") -> ast.AST:
    """`ast.parse`, alone (see the module's docstring), and tried again where a conversion that went round the guard
    interleaved with it (SystemError). SyntaxError and the like as `ast.parse`."""
    for attempt in range(3):
        try:
            with collector_paused(), CONVERTING:
                return ast.parse(source, mode=mode)
        except SystemError:
            if attempt == 2:
                raise TreeNotBuilt("the syntax tree could not be built") from None
    raise AssertionError("unreachable")
