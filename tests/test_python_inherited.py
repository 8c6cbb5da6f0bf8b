"""What a class has from its bases (`fimlsp.python.inherited`), and the attribute debt of a class with bases: owed
where the whole ancestry is known, nothing where any of it is not; and over classes with bases of the standard
library and of the held-out packages, no true middle owes anything."""

from __future__ import annotations

import ast
import importlib.util
import random
from pathlib import Path

import pytest

from fimlsp.python.analysis import analysis_for
from fimlsp.python.attribute_debt import AttributeDebt
from fimlsp.python.inherited import BasesPending, BaseReader, inherited
from fimlsp.python.waits import WaitBudget
from fimlsp.syntax_trees import parsed
from harness.corpus import STDLIB, package_files, stdlib_files
from tests.test_python_attribute_debt import span_in_class
from tests.test_python_members import ENVIRONMENT, HELD_OUT, judged

# Held-out uvicorn wsproto_impl.py's shape: a typed protocol class whose `handle_events` calls `self.handle_pong`;
# the shipped model's empty middle at a boundary cut dropped `def handle_pong` (pyright: no attribute "handle_pong").
PROTOCOL = '''import asyncio


class WSProtocol(asyncio.Protocol):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None

    def data_received(self, data: bytes) -> None:
        self.handle_events(data)

    def handle_events(self, data: bytes) -> None:
        if data == b"ping":
            self.handle_ping(data)
        else:
            self.handle_pong(data)

    def handle_ping(self, data: bytes) -> None'''
PROTOCOL_RIGHT = ''':
        self.pause_writing()

    def keepalive(self) -> None:
        self.resume_writing()
'''
PROTOCOL_TRUE = ''':
        self.resume_writing()

    def handle_pong(self, data: bytes) -> None'''


def _class(text: str, name: str) -> ast.ClassDef:
    return next(node for node in ast.walk(parsed(text)) if isinstance(node, ast.ClassDef) and node.name == name)


def test_a_standard_base_s_members_are_inherited():
    """asyncio.Protocol's methods and BaseProtocol's (its base) are the class's; a method nothing defines is not."""
    found = inherited(ENVIRONMENT, PROTOCOL + PROTOCOL_RIGHT, _class(PROTOCOL + PROTOCOL_RIGHT, "WSProtocol"), None,
                      None)
    assert found is not None and not found.public_only
    assert {"data_received", "eof_received", "pause_writing", "resume_writing", "connection_made"} <= found.names
    assert "handle_pong" not in found.names


def test_a_typed_class_with_a_known_base_owes_a_method_it_loads():
    assert judged(PROTOCOL, PROTOCOL_TRUE, PROTOCOL_RIGHT) == "complete"
    assert judged(PROTOCOL, "", PROTOCOL_RIGHT) == "incomplete"
    reader = BaseReader(ENVIRONMENT, None)
    assert AttributeDebt(PROTOCOL, PROTOCOL_RIGHT, reader).owed(PROTOCOL + PROTOCOL_RIGHT) == {"handle_pong"}
    # what the base defines is no debt (`pause_writing`, `resume_writing` are asyncio.Protocol's)
    assert not AttributeDebt(PROTOCOL, PROTOCOL_RIGHT, reader).owed(PROTOCOL + PROTOCOL_TRUE + PROTOCOL_RIGHT)


# Held-out uvicorn workers.py's shape: its base is gunicorn's Worker, a distribution the environment lacks, which
# typeshed stubs and pyright reads; the shipped model's `=self` at a boundary cut dropped `async def callback_notify`.
WORKER = '''from gunicorn.workers.base import Worker


class UvicornWorker(Worker):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.settings = {"callback_notify": self.callback_notify, "timeout": self.timeout}

    def run(self) -> None:
        self.notify()

    def '''
WORKER_RIGHT = "(self) -> None:\n        self.notify()\n"


def test_a_base_from_a_distribution_the_environment_lacks_is_read_from_typeshed_s_stub():
    assert importlib.util.find_spec("gunicorn") is None, "this test reads gunicorn's stub: it must not be installed"
    text = WORKER + "callback_notify" + WORKER_RIGHT
    found = inherited(ENVIRONMENT, text, _class(text, "UvicornWorker"), None, None)
    assert found is not None and found.public_only  # a stub leaves private names out
    assert {"notify", "timeout", "cfg", "init_process"} <= found.names and "callback_notify" not in found.names
    reader = BaseReader(ENVIRONMENT, None)
    assert not AttributeDebt(WORKER, WORKER_RIGHT, reader).owed(text)
    assert AttributeDebt(WORKER, WORKER_RIGHT, reader).owed(WORKER + "handle_notify" + WORKER_RIGHT) == {
        "callback_notify"}


@pytest.mark.parametrize("header, above", [
    ("class WSProtocol(Unresolved):", ""),  # a base nothing binds
    ("class WSProtocol(asyncio.Protocol, make_base()):", ""),  # a base that is no name
    ("class WSProtocol(mock.Mock):", "from unittest import mock\n"),  # an ancestry with __getattr__
    ("class WSProtocol(argparse.Namespace):", "import argparse\n"),  # one that sets attributes (setattr)
])
def test_a_class_whose_ancestry_is_not_known_owes_nothing(header, above):
    left = PROTOCOL.replace("class WSProtocol(asyncio.Protocol):", above + header)
    assert judged(left, "", PROTOCOL_RIGHT) == "complete"


def test_a_base_defined_above_in_the_file_is_read_from_the_text():
    """A base of the document itself is read from the text being edited, not the file on disk."""
    above = "class Handler:\n    def handle_pong(self, data: bytes) -> None:\n        pass\n\n\n"
    left = PROTOCOL.replace("class WSProtocol(asyncio.Protocol):", above + "class WSProtocol(Handler):")
    assert judged(left, "", PROTOCOL_RIGHT.replace("pause_writing", "handle_ping").replace(
        "resume_writing", "handle_ping")) == "complete"
    assert judged(left.replace("def handle_pong", "def handle_other"), "", PROTOCOL_RIGHT.replace(
        "pause_writing", "handle_ping").replace("resume_writing", "handle_ping")) == "incomplete"


def test_a_late_answer_leaves_the_middle_owing_nothing_and_is_asked_again(monkeypatch):
    """Past its time the debt relaxes (never waits longer), and the next end reads the answer that came."""
    import fimlsp.python.inherited as inherited_module

    calls = []

    def late(*args):
        calls.append(args)
        raise BasesPending("late")

    monkeypatch.setattr(inherited_module, "inherited", late)
    debt = AttributeDebt(PROTOCOL, PROTOCOL_RIGHT, BaseReader(ENVIRONMENT, None, WaitBudget(0.0)))
    assert debt.owed(PROTOCOL + PROTOCOL_RIGHT) == frozenset()
    monkeypatch.undo()
    debt.bases = BaseReader(ENVIRONMENT, None)
    assert debt.owed(PROTOCOL + PROTOCOL_RIGHT) == {"handle_pong"}
    assert calls


def test_asking_about_a_file_s_bases_leaves_its_module_whole_for_later_questions():
    """The question is the file cut after a class head; jedi keeps a path's code for that module's later imports,
    so asked as threading.py, BoundedSemaphore's head would leave a threading without Thread: `Worker(threading.
    Thread)` then read Thread's stub alone, which makes its members unknown and lets a misspelt `self.target` by."""
    path = str(STDLIB / "threading.py")
    text = Path(path).read_text(encoding="utf-8")
    assert BaseReader(analysis_for(path), path)(text, _class(text, "BoundedSemaphore")) is not None
    left = "import threading\n\n\nclass Spinner(threading.Thread):\n    def run(self):\n        "
    assert judged(left, "return self._target", "\n") == "complete"
    assert judged(left, "return self.target", "\n") == "refused"


def _based_classes(files):
    """(path, text, class) for the undecorated classes with a base other than `object` of `files` (paths)."""
    for path, text in files:
        try:
            tree = parsed(text)
        except SyntaxError:
            continue
        yield from ((path, text, node) for node in ast.walk(tree)
                    if isinstance(node, ast.ClassDef) and not node.decorator_list and not node.keywords
                    and node.bases and (node.end_lineno or 0) > node.lineno + 1
                    and not all(isinstance(base, ast.Name) and base.id == "object" for base in node.bases))


@pytest.mark.slow
def test_no_true_middle_of_a_class_with_bases_owes_an_attribute():
    """600 spans of up to 30 lines in classes with bases of the standard library and the held-out packages, each
    read with its file's path (relative imports resolve): the true file owes nothing. (A one-off sweep of 2,000
    more, seed 49, found none either.)"""
    files = [(str(STDLIB / name), text) for name, text in stdlib_files() if "test" not in name]
    files += [each for name in HELD_OUT for each in package_files(name)]
    classes = list(_based_classes(files))
    rng = random.Random(7)
    owing, known = [], 0
    for _ in range(600):
        path, text, node = rng.choice(classes)
        start, end = span_in_class(rng, text, node)
        reader = BaseReader(analysis_for(path), path)
        known += reader(text, node) is not None
        if owed := AttributeDebt(text[:start], text[end:], reader).owed(text):
            owing.append((path, text.count("\n", 0, start) + 1, sorted(owed)))
    assert owing == []
    assert known > 200  # (the ancestry was known for most of them: the check is not vacuous)
