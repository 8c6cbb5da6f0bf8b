"""The names the code around the cursor needs, made likely where the middle may bind them
(`fimlsp.python.owed_names`): after `from M import`, the owed names M defines, a comma while M defines another, the
line's end once none is left; on an `import` line, the owed names that are modules; at a parameter of the header the
cursor is in, the owed names its body loads; nowhere else, and never a name the judges would refuse (it only
ranks)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fimlsp.decoding import DecodingOptions, complete_middles
from fimlsp.python.names import FileNames
from fimlsp.python.owed_names import owed_names, owed_parameters
from fimlsp.python.quotient import quotient
from tests.decoding_fixtures import branching

LEFT = '"""Tasks run after a response."""\n\n'
RIGHT = """

import functools


def task(func: Callable[..., Any], *args: Annotated[Any, "args"]) -> Any:
    wrapped = functools.partial(func, *args)
    return re.sub("x", "y", wrapped())
"""


def _likely(left: str, right: str, middle: str, folder: Path):
    state = quotient(left, right).judging_names(FileNames.of(left, right, str(folder), ()))
    for char in middle:
        state = state.feed(char)
        assert state is not None, f"{middle!r} refused at {char!r}"
    return state.likely_names()


def test_the_owed_names_are_what_the_file_loads_and_nothing_binds_by_how_often():
    assert owed_names(LEFT, RIGHT) == {"Callable": 1, "Any": 3, "Annotated": 1, "re": 1}


def test_the_words_of_the_cursor_s_line_are_not_owed_but_the_one_it_begins():
    """`Any` on the right of `from typing import |Any` is bound by the line the middle completes; `Annot`, begun at
    the cursor, is no name the file loads: the middle may finish it as `Annotated`."""
    assert set(owed_names(LEFT + "from typing import ", "Any" + RIGHT)) == {"Callable", "Annotated", "re"}
    assert set(owed_names(LEFT + "from typing import Annot", RIGHT)) == {"Callable", "Any", "Annotated", "re"}


def test_no_name_is_owed_where_the_file_without_the_cursor_s_line_does_not_parse_or_is_too_large_to_read():
    assert owed_names("def f(a,\n", "     b):\n    return a + b + c\n") == {}
    padding = "x = 1\n" * 60_000  # 360,000 characters: pyflakes would take a quarter of a second
    assert owed_names(LEFT, RIGHT + padding) == {}


def test_after_from_m_import_the_owed_names_m_defines_are_likely_not_the_modules_it_imports(tmp_path):
    """typing imports `re` (`from typing import re` runs): a module is no name of typing's to import."""
    begun, likely = _likely(LEFT, RIGHT, "from typing import ", tmp_path)
    assert begun == "" and likely == {"Callable": 1.0, "Any": 3.0, "Annotated": 1.0}
    assert _likely(LEFT, RIGHT, "from typing import Ann", tmp_path) == ("Ann", {"Annotated": 1.0})


def test_after_an_imported_name_a_comma_and_the_next_owed_name_are_likely_then_the_line_s_end(tmp_path):
    begun, likely = _likely(LEFT, RIGHT, "from typing import Any", tmp_path)
    assert begun == "Any" and likely == {"Any, Callable": 1.0, "Any, Annotated": 1.0}
    assert _likely(LEFT, RIGHT, "from typing import Any,", tmp_path) == (",", {", Callable": 1.0, ", Annotated": 1.0})
    assert _likely(LEFT, RIGHT, "from typing import Any, ", tmp_path) == ("", {"Callable": 1.0, "Annotated": 1.0})
    paid = "from typing import Any, Callable, Annotated"
    assert _likely(LEFT, RIGHT, paid, tmp_path) == ("Annotated", {"Annotated\n": 1.0})
    # where the right context goes on in the cursor's line, its text ends the middle, not a line break
    assert _likely(LEFT, " # typed" + RIGHT, paid, tmp_path) is None


def test_on_an_import_line_the_owed_names_that_are_modules_are_likely(tmp_path):
    assert _likely(LEFT, RIGHT, "import ", tmp_path) == ("", {"re": 1.0})
    assert _likely(LEFT, RIGHT, "import r", tmp_path) == ("r", {"re": 1.0})


def test_nothing_is_likely_off_an_import_list_or_from_a_module_that_cannot_be_read(tmp_path):
    assert _likely(LEFT, RIGHT, "x = ", tmp_path) is None
    assert _likely(LEFT, RIGHT, "from typing", tmp_path) is None  # the module, not its names
    assert _likely(LEFT, RIGHT, "from math import ", tmp_path) is None  # compiled: its names cannot be read
    # without the file's place, no module can be read
    state = quotient(LEFT, RIGHT).judging_names(FileNames.of(LEFT, RIGHT))
    for char in "from typing import ":
        state = state.feed(char)
    assert state.likely_names() is None


READER_LEFT = "import io\n\n\nclass Reader:\n    def read(self, "
READER_RIGHT = ("\n        with io.open(path, mode) as stream:\n            return stream.read(size) + suffix\n\n\n"
                "suffix = ''\n")


def test_the_parameters_owed_are_what_the_body_of_the_cursor_s_function_loads_unbound():
    """The cursor's line begins the function: read as `def _():`, its body's unbound loads are its parameters."""
    assert owed_parameters(READER_LEFT, READER_RIGHT) == {"path": 1, "mode": 1, "size": 1}
    # a header over several lines: the cursor's line taken out, the header's other lines still bind theirs
    left = "def read(\n    path,\n    mo"
    right = ",\n    size=-1,\n):\n    return open(path, mode, encoding=e).read(size)\n"
    assert owed_parameters(left, right) == {"mode": 1, "e": 1}
    # not in a function's header: none
    assert owed_parameters("import io\nx = ", "\nprint(path)\n") == {}
    assert owed_names("import io\nx = ", "\nprint(path)\n") == {"path": 1}


def test_at_a_parameter_s_name_the_owed_ones_are_likely_not_in_its_annotation(tmp_path):
    assert _likely(READER_LEFT, READER_RIGHT, "", tmp_path) == ("", {"path": 1.0, "mode": 1.0, "size": 1.0})
    assert _likely(READER_LEFT, READER_RIGHT, "path, m", tmp_path) == ("m", {"mode": 1.0})
    assert _likely(READER_LEFT, READER_RIGHT, "path: ", tmp_path) is None
    assert _likely(READER_LEFT, READER_RIGHT, "path: dict[str, ", tmp_path) is None
    assert _likely(READER_LEFT, READER_RIGHT, "path: str = 'a', *, ", tmp_path) == ("", {"mode": 1.0, "size": 1.0})
    assert _likely(READER_LEFT, READER_RIGHT, "path, mode, size):\n        ", tmp_path) is None


def test_the_owed_name_outranks_the_model_s_choice_and_the_middle_binds_it(tiny, tmp_path):
    """After the left context's `from typing import `, the model ranks `Union` first and `Annotated` second; the
    right context loads `Annotated` and nothing binds it. Weighed (the editors' share), the middle is `Annotated`
    and is shown; the model's own choice binds nothing the file needs and, names strict, is no suggestion."""
    left = LEFT + "from typing import "
    right = "\n\n\ndef task(size: Annotated[int, 'bytes']) -> int:\n    return size\n"
    model = branching(tiny, "Union", "Annotated")
    options = DecodingOptions(names="strict", token_healing=False, attempts=1, max_tokens=16, invented_finish=False)
    place = (str(tmp_path / "tasks.py"), str(tmp_path))
    weighed = complete_middles(model, left, right, options, place=place)[0]
    assert weighed.middle == "Annotated" and weighed.valid and weighed.guarantee != "none"
    alone = complete_middles(model, left, right, replace(options, member_usage=0.0), place=place)[0]
    assert alone.guarantee == "none"


@pytest.mark.parametrize("left, right, middle", [(LEFT, RIGHT, "from typing import Any, Callable, Annotated"),
                                                 (LEFT, RIGHT, "import re"),
                                                 (READER_LEFT, READER_RIGHT, "path, mode='r', size=-1):")])
def test_the_weighing_never_refuses_what_the_judges_admit(left, right, middle, tmp_path):
    """Every prefix of a middle that binds owed names feeds: the weighing ranks, the judges decide."""
    state = quotient(left, right).judging_names(FileNames.of(left, right, str(tmp_path), ()))
    for char in middle:
        state.likely_names()
        state = state.feed(char)
        assert state is not None
