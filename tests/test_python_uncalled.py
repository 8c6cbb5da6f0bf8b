"""A built-in class left uncalled where its annotation declares an instance (`fimlsp.python.uncalled`): refused at
the call judge's end, never where the annotation may hold a class or the name is not the built-in, and no true
annotated assignment of the standard library or the held-out packages is refused."""

from __future__ import annotations

import ast

import pytest

from fimlsp.python.uncalled import uncalled_classes
from harness.corpus import package_files, stdlib_files
from tests.end_checks import at_marker, ends_at_marker, true_spans_refused
from tests.test_python_members import HELD_OUT

# uvicorn's proxy_headers.py, cut down around the held-out cut: the shipped model wrote `= set`
PROXY = ("class _TrustedHosts:\n    def __init__(self, trusted_hosts: list[str] | str) -> None:\n"
         "        self.trusted_literals: set[str] = set()\n        @@\n\n"
         "        self.trusted_networks: set[str] = set()\n")


def _uncalled(source: str, middle: str) -> frozenset[str]:
    return at_marker(uncalled_classes, source, middle)


@pytest.mark.parametrize("middle, uncalled", [
    ("self.trusted_hosts: set[str] = set", {"set"}),
    ("self.trusted_hosts: set[str] | None = set  # filled in later", {"set"}),
    ("hosts: Optional[Set[str]] = set", {"set"}),
    ("count: int | str = str", {"str"}),
    ("self.trusted_hosts: set[str] = set()", set()),
    ("self.kind: type[set] = set", set()),  # a class is what it holds
    ("self.kind: Any = set", set()),
    ("self.kind: object = set", set()),
    ("self.kind: Callable[[], set] = set", set()),
    ("self.kind: 'set[str]' = set", set()),  # a string: not read
    ("self.trusted_hosts = set", set()),  # no annotation: nothing declared
])
def test_a_builtin_class_assigned_where_its_annotation_declares_an_instance_is_refused(middle, uncalled):
    assert _uncalled(PROXY, middle) == uncalled


@pytest.mark.parametrize("source, middle", [
    (PROXY.replace("class _Trusted", "set = frozenset\n\n\nclass _Trusted"), "self.hosts: set[str] = set"),
    (PROXY + "\n\nclass Set:\n    pass\n", "self.hosts: Set = set"),  # the file's own class
    (PROXY, "text = '''\n        self.hosts: set[str] = set\n        '''"),  # a string's text
    (PROXY.replace("@@", "@@: set[str] = set"), "self.hosts"),  # the user's own statement: only its target written
])
def test_what_may_not_be_the_builtin_or_is_not_the_middles_is_not_judged(source, middle):
    assert _uncalled(source, middle) == frozenset()


def test_the_call_judges_end_refuses_the_middle_and_accepts_the_called_class():
    assert ends_at_marker("calls", PROXY, "self.trusted_hosts: set[str] = set()")
    assert not ends_at_marker("calls", PROXY, "self.trusted_hosts: set[str] = set")


@pytest.mark.slow
def test_no_true_annotated_assignment_of_the_standard_library_or_the_held_out_packages_is_refused():
    """Every annotated assignment with a value in the standard library, the held-out packages and typed packages
    the tests install (pydantic, lsprotocol, hypothesis, a quarter of transformers), as the middle (about 10,000;
    all of transformers' 26,000 refused none either)."""
    typed = [each for name in ("pydantic", "lsprotocol", "hypothesis") for each in package_files(name, 10**9)]
    files = (list(stdlib_files()) + [each for name in HELD_OUT for each in package_files(name, 10**9)] + typed
             + list(package_files("transformers", 10**9)[::4]))
    refused, judged = true_spans_refused(uncalled_classes, files, r":", lambda node: (
        isinstance(node, ast.AnnAssign) and node.value is not None))
    assert refused == [] and judged > 8_000
