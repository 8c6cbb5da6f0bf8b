"""Names a middle leaves undefined: what `pyflakes` reports as an undefined name in the file with the middle and
not in the file with its true middle (`fimlsp eval`'s measure of the semantic errors a parser lets through:
`self._stderr = warningStream` where nothing binds `warningStream`, a `def` header that no longer binds a
parameter the body below uses). `pyflakes` is an evaluation dependency (the `test` extra): without it, nothing is
measured."""

from __future__ import annotations

import ast
import warnings


def undefined_names(text: str) -> set[str] | None:
    """The names pyflakes reports undefined in `text`; None without pyflakes or where `text` does not parse."""
    try:
        from pyflakes import checker, messages
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        try:
            found = checker.Checker(tree, filename="<fim>").messages
        except RecursionError:
            return None
    return {message.message_args[0] for message in found if isinstance(message, messages.UndefinedName)}


def added_undefined_names(left: str, middle: str, right: str, true_middle: str) -> list[str] | None:
    """The names undefined with `middle` that are not with `true_middle`, sorted; None where not measured."""
    with_middle = undefined_names(left + middle + right)
    if with_middle is None:
        return None
    with_true_middle = undefined_names(left + true_middle + right)
    return None if with_true_middle is None else sorted(with_middle - with_true_middle)
