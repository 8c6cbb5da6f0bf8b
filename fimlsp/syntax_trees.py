"""CPython's syntax trees, built one conversion at a time.

CPython 3.11 keeps the recursion depth of its conversion from the parser's tree to `ast` objects per interpreter,
not per thread (gh-106905). A conversion that another thread's interleaves with fails with SystemError ("AST
constructor recursion depth mismatch"). In the middle of a conversion the interpreter's lock passes to another
thread only through Python code that a garbage collection runs (finalizers, `gc.callbacks`), so fimlsp's
conversions run with the collector paused, and one at a time (`CONVERTING`): fimlsp's threads (a completion's,
jedi's analysis, the context's) never interleave. The lock is held around other libraries' conversions on those
threads too (pyflakes' string annotations, jedi's literals), which would otherwise lose to ours.
"""

from __future__ import annotations

import ast
import threading

from fimlsp.collector import collector_paused

CONVERTING = threading.RLock()


class TreeNotBuilt(SyntaxError):
    """Another library's conversion in another thread interleaved with each try: not the text's fault, so a cache
    of trees keeps no verdict on it."""


def parsed(source: str, mode: str = "exec") -> ast.AST:
    """`ast.parse`, alone (see the module's docstring), and tried again where a conversion another library began
    in another thread interleaved with it (SystemError). SyntaxError and the like as `ast.parse`."""
    for attempt in range(3):
        try:
            with CONVERTING, collector_paused():
                return ast.parse(source, mode=mode)
        except SystemError:
            if attempt == 2:
                raise TreeNotBuilt("the syntax tree could not be built") from None
    raise AssertionError("unreachable")


def literal_value(text: str):
    """`ast.literal_eval` of a string, its tree built by `parsed`."""
    return ast.literal_eval(parsed(text.lstrip(" \t"), mode="eval"))
