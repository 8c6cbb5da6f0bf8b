"""A local annotation's load is not owed (`fimlsp.python.debt`: never evaluated), but it says nothing of how the
writer uses the name elsewhere: a middle that drops the import of a name the code after it also calls is refused
(held-out uvicorn wsproto_impl.py's `from io import BytesIO, StringIO`, replaced by `from typing import Any`,
where `self.value: BytesIO | StringIO | None` and `BytesIO()` load it)."""

from __future__ import annotations

from fimlsp.python.names import FileNames

LEFT = "from __future__ import annotations\n\nimport asyncio\n"
RIGHT = ("\n\n\nclass Buffer:\n    def __init__(self) -> None:\n        self.value: BytesIO | StringIO | None = None\n\n"
         "    def add(self, text: bool) -> None:\n        self.value = StringIO() if text else BytesIO()\n")


def _owed(middle: str, right: str = RIGHT) -> frozenset[str]:
    return FileNames.of(LEFT, right).unbound(LEFT + middle + right)


def test_a_name_an_annotation_and_a_call_load_is_owed_by_the_middle_that_dropped_its_import():
    assert _owed("from io import BytesIO, StringIO") == frozenset()
    assert _owed("from typing import Any") == {"BytesIO", "StringIO"}


def test_a_name_only_local_annotations_load_is_still_not_owed():
    right = RIGHT.replace("StringIO() if text else BytesIO()", "None")
    assert _owed("from typing import Any", right) == frozenset()


def test_the_middles_own_local_annotation_of_a_name_nothing_binds_is_owed():
    left = "def f():\n    "
    names = FileNames.of(left, "\n    return x\n")
    assert names.unbound(left + "x: Missing = 1" + "\n    return x\n") == {"Missing"}


def test_a_name_the_middle_ends_in_a_local_annotation_is_the_middles_own():
    """Held-out starlette _exception_handler.py: the left ends `status_handlers: StatusHandle` and the middle `r |
    None` makes `StatusHandler`, which nothing binds; `rs` makes the module's `StatusHandlers`."""
    left = "StatusHandlers = dict[int, str]\n\n\ndef wrap(conn):\n    status_handlers: StatusHandle"
    right = "\n    status_handlers = conn.scope['handlers']\n    return status_handlers\n"
    names = FileNames.of(left, right)
    assert names.unbound(left + "rs" + right) == frozenset()
    assert names.unbound(left + "r | None" + right) == {"StatusHandler"}
    assert names.unbound(left + "" + right) == frozenset()  # an empty middle writes no name


def test_a_name_the_left_context_ends_before_the_middle_is_not_the_middles():
    left = "def wrap(conn):\n    handlers: Missing"
    right = "\n    return handlers\n"
    assert FileNames.of(left, right).unbound(left + " = {}" + right) == frozenset()
