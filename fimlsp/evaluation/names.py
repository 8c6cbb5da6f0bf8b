"""Names a middle leaves undefined: what the language's static checker (for Python, `pyflakes`) reports as an
undefined name in the file with the middle and not in the file with its true middle (`fimlsp eval`'s measure of
the semantic errors a parser lets through: `self._stderr = warningStream` where nothing binds `warningStream`, a
`def` header that no longer binds a parameter the body below uses). `pyflakes` is an evaluation dependency (the
`test` extra): without it, nothing is measured."""

from __future__ import annotations

from fimlsp.language import DEFAULT_LANGUAGE, Language, named


def added_undefined_names(
    left: str, middle: str, right: str, true_middle: str, language: Language | None = None
) -> list[str] | None:
    """The names undefined with `middle` that are not with `true_middle`, sorted; None where not measured.
    `language`: the file's (Python by default)."""
    language = named(DEFAULT_LANGUAGE) if language is None else language
    with_middle = language.undefined_names(left + middle + right)
    if with_middle is None:
        return None
    with_true_middle = language.undefined_names(left + true_middle + right)
    return None if with_true_middle is None else sorted(with_middle - with_true_middle)
