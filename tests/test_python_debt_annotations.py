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
