"""The server's caches (`fimlsp.server.cache`): promises reused, extended or rebuilt, and suggestions served as their
start is typed."""

from __future__ import annotations

from fimlsp.language import FILE, named
from fimlsp.server.cache import Recognizers, Suggestion, Suggestions


def test_recognizers_reuse_extend_and_rebuild_promises():
    python = named("python")
    cache = Recognizers(keep=2)
    left, right = "total = valu", " + 1\n"
    built, how = cache.guarantee("a", left, right, 10_000, None, python)
    assert how == "built" and built.scope == FILE
    assert cache.guarantee("a", left, right, 10_000, None, python) == (built, "reused")
    extended, how = cache.guarantee("a", left + "e", right, 10_000, None, python)
    assert how == "extended" and extended.state.feed("").complete
    assert cache.guarantee("a", left + "e)", right, 10_000, None, python)[1] == "built"  # typing broke it
    assert cache.guarantee("a", left, right + "\n", 10_000, None, python)[1] == "built"  # another right context
    assert cache.guarantee("b", left, right, 10_000, None, python)[1] == "built"  # per document
    cache.forget("a")
    assert cache.guarantee("a", left, right + "\n", 10_000, None, python)[1] == "built"


def test_suggestions_serve_the_rest_of_a_middle_whose_start_was_typed():
    suggestions = Suggestions()
    suggestions.remember("a", "x = ", Suggestion("compute(1)", "checked: the file parses"), "\n", False)
    assert suggestions.lookup("a", "x = comp", "\n", False) == Suggestion("ute(1)", "checked: the file parses")
    assert suggestions.lookup("a", "x = ", "\n", False) == Suggestion("compute(1)", "checked: the file parses")
    assert suggestions.lookup("a", "x = compute(1)", "\n", False) is None  # all of it typed
    assert suggestions.lookup("a", "x = cax", "\n", False) is None
    assert suggestions.lookup("a", "x = comp", "\n\n", False) is None
    assert suggestions.lookup("a", "x = comp", "\n", True) is None
    assert suggestions.lookup("b", "x = comp", "\n", False) is None
    suggestions.forget("a")
    assert suggestions.lookup("a", "x = comp", "\n", False) is None
