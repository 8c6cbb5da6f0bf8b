"""A call of an attribute that holds only literals (`fimlsp.python.literal_attributes.called_literals`): refused at
the call judge's end, never where something may store a callable there or the call is not the middle's, and no call
of a method through `self` in real code is refused."""

from __future__ import annotations

import ast

import pytest

from fimlsp.python.literal_attributes import called_literals
from harness.corpus import package_files, stdlib_files
from tests.end_checks import at_marker, ends_at_marker, true_spans_refused
from tests.test_python_members import HELD_OUT

# uvicorn's wsproto_impl.py, cut down around the held-out boundary cut: the shipped model called the flag
PROTOCOL = ("import asyncio\n\n\nclass WSProtocol(asyncio.Protocol):\n    def __init__(self) -> None:\n"
            "        self.close_sent = False\n        self.handshake_count = 0\n\n"
            "    def send_close(self) -> None:\n        self.close_sent = True\n\n"
            "    def handle_ping(self) -> None:\n        @@\n")


def _called(source: str, middle: str) -> frozenset[str]:
    return at_marker(called_literals, source, middle)


@pytest.mark.parametrize("middle, called", [
    ("if self.close_sent:\n            self.close_sent()", {"close_sent"}),
    ("self.handshake_count()", {"handshake_count"}),
    ("self.send_close()", set()),
    ("if self.close_sent:\n            return", set()),
    ("text = 'self.close_sent()'", set()),  # a string's text
])
def test_a_call_of_an_attribute_that_holds_only_literals_is_refused(middle, called):
    assert _called(PROTOCOL, middle) == called


@pytest.mark.parametrize("source", [
    PROTOCOL.replace("self.close_sent = True", "self.close_sent = self.make_closer()"),  # a store of anything else
    PROTOCOL.replace("self.close_sent = True", "self.close_sent += 1"),
    PROTOCOL.replace("    def send_close", "    close_sent = staticmethod(print)\n\n    def send_close"),  # the body's
    PROTOCOL.replace("    def send_close", "    def close_sent(self):\n        pass\n\n    def send_close"),
])
def test_an_attribute_that_may_hold_something_else_is_not_judged(source):
    assert _called(source, "self.close_sent()") == frozenset()


def test_a_call_the_user_wrote_before_the_middle_is_not_the_middles():
    assert _called(PROTOCOL.replace("@@", "self.close_sent()\n        @@"), "return") == frozenset()


def test_the_call_judges_end_refuses_the_middle_and_accepts_another():
    assert ends_at_marker("calls", PROTOCOL, "self.send_close()")
    assert not ends_at_marker("calls", PROTOCOL, "self.close_sent()")


@pytest.mark.slow
def test_no_call_through_self_in_real_code_is_refused():
    """Every call of `self.name(...)` in a tenth of the standard library's files and in the held-out packages as
    the middle (about 9,800; all 75,942 of the whole standard library and the typed packages the tests install
    refuse none either)."""
    files = list(stdlib_files())[::10] + [each for name in HELD_OUT for each in package_files(name, 10**9)]
    refused, judged = true_spans_refused(called_literals, files, r"\bself\s*\.\s*\w+\s*\(", lambda node: (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"))
    assert refused == [] and judged > 8_000
