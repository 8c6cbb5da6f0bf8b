"""No annotated redeclaration of a variable or attribute with another type (`fimlsp.python.redeclaration`, issue 49
item 4): a middle may not declare `self.x: T`, `cls.x: T` or `x: T` where its scope (the class, for attributes)
declares the name elsewhere with a type certainly not the same, which pyright reports (reportRedeclaration).
What pyright accepts is accepted, and so is what it reports but the true code writes (declarations in two arms of
an `if` or `try`, a parameter declared again in the body, a refined `Any`)."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from harness.pyright import PYRIGHT_VERSION, errors_by_file, installed_pyright
from fimlsp.language import named
from fimlsp.python.redeclaration import redeclared
from fimlsp.python.syntax import module_or_error
from harness.corpus import package_files, stdlib_files

HOLE = "@@"

# starlette 0.4x's formparsers.py, cut down around the held-out cut (`MultiPartParser.__init__`)
STARLETTE = '''from __future__ import annotations

from dataclasses import dataclass, field
from tempfile import SpooledTemporaryFile


@dataclass
class MultipartPart:
    content_disposition: bytes | None = None
    data: bytearray = field(default_factory=bytearray)


class MultiPartParser:
    spool_max_size = 1024 * 1024

    def __init__(self, max_files: int = 1000, max_part_size: int = 1024 * 1024) -> None:
        self.max_files = max_files
        self._current_part = MultipartPart()
        self._file_parts_to_write: list[tuple[MultipartPart, bytes]] = []
        self._files_to_close_on_error: list[SpooledTemporaryFile[bytes]] = []
        @@

    def on_part_begin(self) -> None:
        self._current_part = MultipartPart()

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        self._file_parts_to_write.append((self._current_part, data[start:end]))
'''

# (file with a hole, a middle pyright reports there, a middle it does not or that the true code writes,
#  whether pyright accepts the second)
CASES = {
    "starlette": (STARLETTE, "self._file_parts_to_write: list[str]", "self.max_part_size = max_part_size", True),
    "same annotation text": ("x: list[int] = []\n@@\nprint(x)\n", "x: list[str] = [1]", "x: list[int] = [1]", True),
    "typing's names for builtins": (
        "from typing import List, Optional\n\nx: List[int] = []\ny: Optional[int] = None\n@@\nprint(x, y)\n",
        "x: list[str] = []", "x: list[int] = []", True),
    "unions in any order and spelling": (
        "from typing import Optional, Union\n\ny: Optional[int] = None\nz: Union[None, int] = None\n@@\n"
        "print(y, z)\n", "y: int = 0", "y: int | None = 0\nz: None | int = 0", True),
    "a string annotation": ("x: int = 0\n@@\nprint(x)\n", 'x: "str" = ""', 'x: "int" = 1', True),
    "a class body and a method": (
        "from typing import ClassVar\n\n\nclass A:\n    x: int\n    y: ClassVar[int] = 0\n\n"
        "    def __init__(self) -> None:\n        @@\n", 'self.x: str = ""', "self.x: int = 0\n        self.y: int = 0",
        True),
    "two methods": (
        "class B:\n    def a(self) -> None:\n        self.p: int = 0\n\n    def b(this) -> None:\n        @@\n",
        'this.p: str = ""', 'this.q: str = ""', True),
    "a classmethod's cls": (
        "class B:\n    def a(self) -> None:\n        self.p: int = 0\n\n    @classmethod\n    def b(cls) -> None:\n"
        "        @@\n", 'cls.p: str = ""', "cls.p: int = 0", True),
    "a staticmethod's first parameter is no instance": (
        "class B:\n    def a(self) -> None:\n        self.p: int = 0\n\n    def b(self) -> None:\n        @@\n\n"
        "    @staticmethod\n    def c(self: B) -> None:\n        self.p: str = ''\n",
        'self.p: str = ""', "self.p: int = 1", True),
    "a nested function's self is no instance": (
        "class B:\n    def a(self) -> None:\n        self.p: int = 0\n\n        def inner() -> None:\n"
        "            self.p: str = ''\n\n        inner()\n        @@\n", 'self.p: str = ""', "self.p: int = 2",
        True),
    "the file's own classes": (
        "class Part:\n    pass\n\n\nclass Other:\n    pass\n\n\nparts: list[Part] = []\n@@\nprint(parts)\n",
        "parts: list[Other] = []", "parts: list['Part'] = []", True),
    "a bare generic class": (
        "class Part:\n    pass\n\n\nclass Holder:\n    parts: list[tuple[Part, bytes]]\n    @@\n",
        "parts: list", "names: list", True),
    "a name that may alias anything": (
        "IntList = list[int]\na: IntList = []\nb: list[int] = []\n@@\nprint(a, b)\n",
        "b: list[str] = []", "a: list[int] = []", True),
    "an unreachable declaration": (
        "import sys\n\nif sys.version_info < (3, 8):\n    y: int = 0\nx: int = 0\nif x:\n    @@\nprint(x, y)\n",
        'x: str = ""', "y: str = ''", True),
    "Final (another rule)": ("from typing import Final\n\nx: Final = 1\nz: int = 0\n@@\nprint(x, z)\n",
                             'z: str = ""', "y: Final[int] = 2", True),
    "literal values": (
        "from typing import Literal\n\nx: Literal['a', 'b'] = 'a'\ny: Literal[1] = 1\n@@\nprint(x, y)\n",
        "y: Literal[True] = True", "x: Literal['b', 'a'] = 'b'", True),
    # held out: uvicorn's _types.py, a middle that writes a TypedDict's items again with other tags and types
    "a TypedDict's literal tag and qualified item": (
        "from typing import Literal, NotRequired, TypedDict\n\n\nclass Event(TypedDict):\n    @@\n"
        "    type: Literal['close']\n    code: NotRequired[int]\n", "type: Literal['open']", "code: int", True),
    # what pyright reports but the true code writes
    "two arms of an if or try": (
        "def f(c: bool) -> None:\n    if c:\n        x: int = 1\n    else:\n        @@\n    try:\n"
        "        y: int = 1\n    except ValueError:\n        y: str = ''\n    print(x, y)\n",
        "x: str = ''\n        x: int = 1", "x: str = ''", False),
    "a parameter declared again": ("def f(x: int, y: int) -> None:\n    z: int = 0\n    @@\n    print(x, y, z)\n",
                                   "z: str = ''", "x: str = ''", False),
    "a bare generic class and one of Any, which pyright tells apart and the judge does not": (
        "from typing import Any\n\nx: dict[str, Any] = {}\ny: tuple = ()\n@@\nprint(x, y)\n",
        "y: tuple[int, ...] = ()", "x: dict = {}", False),
    "a refined Any": (
        "from typing import Any, Dict\n\n\nclass Offset:\n    pass\n\n\nclass Results:\n"
        "    _tokdict: Dict[str, Any]\n\n    def __init__(self) -> None:\n        @@\n",
        "self._tokdict: Dict[int, Offset]", "self._tokdict: Dict[str, Offset]", False),
}


def _cut(name: str, middle: str) -> tuple[str, str, str]:
    source = CASES[name][0]
    left, right = source.split(HOLE)
    return left, middle, right


@pytest.mark.parametrize("name", CASES)
def test_an_annotated_declaration_of_another_type_is_refused_and_what_the_true_code_writes_is_not(name,
                                                                                                   names_judged):
    _, refused, accepted, _ = CASES[name]
    python = named("python")
    assert names_judged(*_cut(name, refused)) == "incomplete"
    assert not python.binds_names(*_cut(name, refused))
    assert names_judged(*_cut(name, accepted)) == "complete"


def test_a_middle_that_writes_only_the_annotation_or_both_declarations_is_refused():
    left = "class A:\n    def __init__(self) -> None:\n        self.x: list[int] = []\n        self.x: "
    right = "\n\n    def run(self) -> None:\n        self.x.append(1)\n"
    python = named("python")
    assert not python.binds_names(left, "list[str] = []", right)
    assert python.binds_names(left, "list[int] = []", right)
    module = "x: int = 0\n"
    assert not python.binds_names(module, "y: int = 0\ny: str = ''\n", "print(x, y)\n")
    assert python.binds_names(module, "y: int = 0\ny: 'int' = 1\n", "print(x, y)\n")


def test_the_held_out_starlette_cut_is_refused_in_the_real_file():
    spec = importlib.util.find_spec("starlette")
    if spec is None or spec.origin is None:
        pytest.skip("starlette is not installed (the held-out package: pip install starlette)")
    text = (Path(spec.origin).parent / "formparsers.py").read_text(encoding="utf-8")
    true_middle = "self.max_part_size = max_part_size"
    start = text.find(true_middle, text.find("self._files_to_close_on_error: list"))
    if start < 0:
        pytest.skip("this starlette's formparsers.py has no such cut")
    left, right = text[:start], text[start + len(true_middle):]
    python = named("python")
    assert python.binds_names(left, true_middle, right)
    assert not python.binds_names(left, "self._file_parts_to_write: list[str]", right)


def _pyright() -> Path:
    program = installed_pyright()
    if program is None:
        pytest.skip(f"pyright {PYRIGHT_VERSION} is not installed (python -m harness.pyright installs it; needs node)")
    return program


@pytest.mark.slow
def test_pyright_reports_what_is_refused_and_accepts_what_it_is_said_to(tmp_path):
    """The cases above are pyright's: each refused middle adds reportRedeclaration; each accepted one adds none
    where the case says pyright accepts it, and the rest (what the true code writes) are reported by pyright."""
    files = {}
    for index, (name, (source, refused, accepted, _)) in enumerate(CASES.items()):
        for kind, middle in (("refused", refused), ("accepted", accepted)):
            path = tmp_path / f"case_{index}_{kind}.py"
            path.write_text(source.replace(HOLE, middle), encoding="utf-8")
            files[name, kind] = path
    errors = errors_by_file(_pyright(), tmp_path, list(files.values()))

    def redeclarations(name: str, kind: str) -> int:
        return sum(count for (rule, _), count in errors[str(files[name, kind])].items()
                   if rule == "reportRedeclaration")

    for name, (*_, pyright_accepts) in CASES.items():
        assert redeclarations(name, "refused") > 0, name
        assert (redeclarations(name, "accepted") == 0) == pyright_accepts, name


def _annotated_cuts(text: str):
    """(start, end) of every annotated declaration's lines, from the statement's first character."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)  # as CPython numbers them
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    for node in ast.walk(module_or_error(text)):
        if isinstance(node, ast.AnnAssign):
            line = lines[node.lineno - 1]
            start = line_starts[node.lineno - 1] + len(line.encode("utf-8")[:node.col_offset].decode("utf-8"))
            yield start, line_starts[node.end_lineno]


@pytest.mark.slow
def test_no_annotated_declaration_of_the_standard_library_or_the_held_out_packages_is_refused():
    """Every annotated declaration (`x: T = ...`, `self.x: T`) of the standard library's files and of every file
    of the held-out packages, its whole lines the middle, is accepted."""
    files = [text for _, text in stdlib_files()]
    files += [text for package in ("fastapi", "starlette", "uvicorn", "pyflakes", "diskcache", "gguf")
              for _, text in package_files(package, max_chars=10 ** 9)]
    judged, refused = 0, []
    for text in files:
        for start, end in _annotated_cuts(text):
            judged += 1
            if redeclared(text, start, end):
                refused.append(text[start:end])
    assert refused == []
    assert judged >= 1_000  # 1,456 with this environment's packages


@pytest.mark.slow
def test_no_annotated_declaration_of_a_name_declared_twice_in_a_dependency_is_refused():
    """The project's annotated dependencies declare far more: there every annotated declaration of a name the file
    declares with an annotation more than once (the only ones another declaration could conflict with) is accepted,
    those in two arms of one `if` (llama_cpp's `embedding`) among them."""
    judged, refused = 0, []
    for package in ("huggingface_hub", "pygls", "jedi", "pathspec", "llama_cpp", "matplotlib", "numpy"):
        for _, text in package_files(package, max_chars=10 ** 9):
            cuts = list(_annotated_cuts(text))
            names = [re.split(r"[.:\s]", text[start:end].lstrip("(").split(":")[0].strip())[-1] for start, end in cuts]
            for (start, end), name in zip(cuts, names):
                if names.count(name) > 1:
                    judged += 1
                    if redeclared(text, start, end):
                        refused.append(text[start:end])
    assert refused == []
    assert judged >= 100
