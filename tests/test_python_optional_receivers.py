"""A member of an attribute its class declares optional, loaded unnarrowed (`fimlsp.python.optional_receivers`):
refused at the member judge's end where nothing in the method tested the attribute first, never where something may
have narrowed it or the file itself loads such members unnarrowed, and no true load of the held-out and typed
packages is refused."""

from __future__ import annotations

import ast

import pytest

from fimlsp.python.optional_receivers import unnarrowed
from harness.corpus import package_files
from tests.end_checks import at_marker, ends_at_marker, true_spans_refused
from tests.test_python_members import HELD_OUT

# starlette's requests.py, cut down around the held-out boundary cut: the shipped model wrote `._form.close`
REQUEST = ("class Request:\n    def __init__(self) -> None:\n        self._form: FormData | None = None\n"
           "        self._is_disconnected = False\n\n"
           "    async def close(self) -> None:\n        if self._form is not None:\n            await self._form.close()\n\n"
           "    async def is_disconnected(self) -> bool:\n        if not self@@:\n            return True\n"
           "        return False\n")


def _unnarrowed(source: str, middle: str) -> frozenset[str]:
    return at_marker(unnarrowed, source, middle)


def test_a_member_of_an_optional_attribute_nothing_narrowed_is_refused():
    assert _unnarrowed(REQUEST, "._form.close") == {"_form"}
    assert _unnarrowed(REQUEST, "._is_disconnected") == frozenset()


@pytest.mark.parametrize("source", [
    REQUEST.replace("if not self@@:", "if self._form is None:\n            return False\n        if not self@@:"),
    REQUEST.replace("if not self@@:", "assert self._form\n        if not self@@:"),
    REQUEST.replace("if not self@@:", "self._form = FormData()\n        if not self@@:"),
    REQUEST.replace("if not self@@:", "if self._form and self@@:"),  # narrowed in the statement itself
    REQUEST.replace("if not self@@:", "if not self@@ if self._form else False:"),
    REQUEST.replace("FormData | None", "FormData"),  # not optional
    REQUEST.replace("FormData | None", "'FormData | None'"),  # a string: not read
    REQUEST.replace("if not self@@:", "if not self@@:  # type: ignore"),
    REQUEST.replace("if not self@@:", "# pyrefly: ignore [missing-attribute]\n        if not self@@:"),
    REQUEST.replace("if not self@@:", "super().setup()\n        if not self@@:"),  # may set it
    # the file never shows that it tests `self._form` before it loads a member of it
    REQUEST.replace("        if self._form is not None:\n            await self._form.close()\n",
                    "        pass\n"),
    # the file loads an optional attribute's member unnarrowed itself: not held to it
    REQUEST.replace("if self._form is not None:\n            await self._form.close()", "await self._form.close()"),
])
def test_what_may_be_narrowed_or_is_the_files_habit_is_not_judged(source):
    assert source != REQUEST
    assert _unnarrowed(source, "._form.close") == frozenset()


@pytest.mark.parametrize("annotation", ["Optional[FormData]", "Union[FormData, None]", "None | FormData",
                                        "typing.Optional[FormData]"])
def test_each_spelling_of_optional_is_read(annotation):
    assert _unnarrowed(REQUEST.replace("FormData | None", annotation), "._form.close") == {"_form"}


def test_an_optional_attribute_declared_in_the_class_body_is_read():
    source = REQUEST.replace("class Request:\n", "class Request:\n    _form: FormData | None = None\n\n").replace(
        "self._form: FormData | None = None", "self._form = None")
    assert _unnarrowed(source, "._form.close") == {"_form"}


def test_the_member_judges_end_refuses_the_middle_and_accepts_another():
    assert ends_at_marker("members", REQUEST, "._is_disconnected")
    assert not ends_at_marker("members", REQUEST, "._form.close")


@pytest.mark.slow
def test_no_true_load_of_the_held_out_and_typed_packages_is_refused():
    """Every load of a member of an attribute of `self` in the files of the held-out packages and the typed
    packages the tests install that may declare something optional, its member's name as the middle (over 1,000;
    nor are the 3,584 loads of the standard library, transformers and torch too where a class of the file declares
    the attribute optional: transformers' configurations, whose `__post_init__` converts their optional fields, and
    torch's loads under `# pyrefly: ignore` were the ones refused before the rules that let them go)."""
    names = (*HELD_OUT, "pydantic", "lsprotocol", "hypothesis", "jedi")
    files = [each for name in names for each in package_files(name, 10**9)]
    refused, judged = true_spans_refused(
        unnarrowed, files, r"^[ \t]*(?:self[ \t]*\.[ \t]*)?\w+[ \t]*:[^=\n]*(?:None|Optional)", _member_of_self_attribute,
        lambda node: (node.end_lineno, node.end_col_offset - len(node.attr), node.end_lineno, node.end_col_offset))
    assert refused == [] and judged > 1_000


def _member_of_self_attribute(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name) and node.value.value.id == "self")
