"""The attribute debt (`fimlsp.python.attribute_debt`): a typed class owes the methods and attributes it loads
anywhere, an untyped one only what `__init__` was to set up; and over classes of the standard library and of the
held-out packages, no true middle owes anything."""

from __future__ import annotations

import ast
import random

from fimlsp.python import attribute_debt as attribute_debt_module
from fimlsp.python.analysis import slot_names
from fimlsp.python.attribute_debt import AttributeDebt
from fimlsp.python.class_text import in_plain_class
from fimlsp.python.syntax import node_offsets
from fimlsp.syntax_trees import parsed
from harness.corpus import package_files, stdlib_files
from tests.test_python_members import HELD_OUT, judged

# uvicorn/supervisors/basereload.py's shape: typed, named as a base, its `run` calls `self.startup()`.
RELOAD = """import threading
from pathlib import Path


class BaseReload:
    def __init__(self, config) -> None:
        self.config = config
        self.should_exit = threading.Event()

    def run(self) -> None:
        self.startup()
        for changes in self:
            if changes:
                self.restart()

    def __iter__(self) -> "BaseReload":
        return self

    def __ne"""
RELOAD_RIGHT = """:
        print("started")

    def restart(self) -> None:
        print("restarted")

    def should_restart(self) -> list[Path] | None:
        raise NotImplementedError("Reload strategies should override should_restart()")
"""
RELOAD_TRUE = """xt__(self) -> list[Path] | None:
        return self.should_restart()

    def startup(self) -> None"""


def test_a_typed_class_owes_a_method_it_loads_before_the_middle():
    """The shipped model wrote `xt__(self) -> Iterator[Path]` there, which drops `def startup` (pyright: no
    attribute "startup")."""
    assert judged(RELOAD, RELOAD_TRUE, RELOAD_RIGHT) == "complete"
    assert judged(RELOAD, "xt__(self) -> list[Path] | None", RELOAD_RIGHT) == "incomplete"
    middle = RELOAD_TRUE.replace("startup", "start")
    assert AttributeDebt(RELOAD, RELOAD_RIGHT).owed(RELOAD + middle + RELOAD_RIGHT) == {"startup"}


def test_an_untyped_class_or_one_with_a_base_owes_no_method():
    """Untyped code may load what subclasses elsewhere define (idlelib); a base may define it."""
    untyped = RELOAD.replace(") -> None:", "):").replace(') -> "BaseReload":', "):")
    assert judged(untyped, "xt__(self) -> list[Path] | None", RELOAD_RIGHT.replace(") -> None:", "):")) == "complete"
    based = RELOAD.replace("class BaseReload:", "class BaseReload(Supervisor):")
    assert judged(based, "xt__(self) -> list[Path] | None", RELOAD_RIGHT) == "complete"
    ignored = RELOAD.replace("self.startup()", "self.startup()  # type: ignore[attr-defined]")
    assert judged(ignored, "xt__(self) -> list[Path] | None", RELOAD_RIGHT) == "complete"


def test_a_dict_key_that_spells_the_attribute_pays_no_debt():
    """held-out uvicorn workers.py: `{"callback_notify": self.callback_notify}` in `__init__`, and a middle that
    drops `async def callback_notify` (pyright: no attribute "callback_notify"). A key names no attribute; a name
    `getattr` or `hasattr` is given may be one, and `vars(...)` may set any."""
    middle = RELOAD_TRUE.replace("startup", "start")
    keyed = RELOAD.replace("self.should_exit = threading.Event()",
                           'self.should_exit = threading.Event()\n        self.hooks = {"startup": 1}')
    assert AttributeDebt(keyed, RELOAD_RIGHT).owed(keyed + middle + RELOAD_RIGHT) == {"startup"}
    looked_up = keyed.replace('{"startup": 1}', 'hooks["startup"]')
    assert AttributeDebt(looked_up, RELOAD_RIGHT).owed(looked_up + middle + RELOAD_RIGHT) == {"startup"}
    for excuse in ('getattr(self, "startup", None)', 'vars(self).update(hooks)'):
        excused = RELOAD.replace("self.should_exit = threading.Event()",
                                 f"self.should_exit = threading.Event()\n        {excuse}")
        assert not AttributeDebt(excused, RELOAD_RIGHT).owed(excused + middle + RELOAD_RIGHT), excuse


def test_a_middle_that_ends_in_a_comment_line_still_owes_its_class_s_debt():
    """held-out uvicorn workers.py: a middle that ended `# Don't let the SIG_DFLAGS` on a line of its own, which
    ast places after the class's last statement, in no class."""
    left = RELOAD + ("xt__(self) -> list[Path] | None:\n        return self.should_restart()\n\n"
                     "    def should_restart(self) -> list[Path] | None:\n        return print(")
    right = ")\n\n\nclass Other:\n    pass\n"
    text = left + '"checked")\n\n    # the end' + right
    assert compile(text, "<middle>", "exec")
    assert AttributeDebt(left, right).owed(text) == {"startup", "restart"}


def test_what_a_subclass_or_another_class_of_the_file_defines_is_no_debt():
    """pathlib's _Selector.select_from calls self._select_from, which its subclasses define; xmlrpc's
    XMLRPCDocGenerator, a mixin, calls self.system_listMethods, which SimpleXMLRPCDispatcher defines."""
    left = "class Selector:\n    def __init__(self, parts):\n        "
    right = ("\n\n    def select_from(self, path):\n        return self._select_from(path)\n\n\n"
             "class WildcardSelector(Selector):\n    def _select_from(self, path):\n        return path\n")
    text = left + "self.parts = parts" + right
    assert not AttributeDebt(left, right).owed(text)
    sibling = right.replace("class WildcardSelector(Selector):", "class Dispatcher:")
    assert not AttributeDebt(left, sibling).owed(left + "self.parts = parts" + sibling)


def test_a_middle_that_begins_inside_a_name_stores_what_its_line_says():
    """_bootsubprocess's Popen: `self._cm` + `d = cmd` stores `_cmd`, which `wait` loads."""
    left = "class Popen:\n    def __init__(self, cmd):\n        self._cm"
    right = "\n\n    def wait(self):\n        return self._cmd\n"
    assert not AttributeDebt(left, right).owed(left + "d = cmd" + right)
    assert AttributeDebt(left, right).owed(left + "dx = cmd" + right) == {"_cmd"}


def _corpus() -> list[tuple[str, str]]:
    """The standard library's files but its tests, and the held-out packages'."""
    files = [each for each in stdlib_files() if "test" not in each[0]]
    return files + [each for name in HELD_OUT for each in package_files(name)]


def _plain_classes(files):
    """(text, class) for the classes without a base or a decorator of the `files` that parse."""
    for _name, text in files:
        try:
            tree = parsed(text)
        except SyntaxError:
            continue
        yield from ((text, node) for node in ast.walk(tree)
                    if isinstance(node, ast.ClassDef) and not node.bases and not node.decorator_list)


def _class_cuts(files, count: int, seed: int):
    """`count` random spans inside plain classes (no base, no decorator) of `files`, of up to 30 lines: as
    (left, middle, right)."""
    rng = random.Random(seed)
    classes = [(text, node) for text, node in _plain_classes(files) if (node.end_lineno or 0) > node.lineno + 1]
    for _ in range(count):
        text, node = rng.choice(classes)
        start, end = span_in_class(rng, text, node)
        yield text[:start], text[start:end], text[end:]


def span_in_class(rng: random.Random, text: str, node: ast.ClassDef) -> tuple[int, int]:
    """A random span (start, end offsets) of up to 30 lines inside the body of the class `node` of `text`."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    first = rng.randint(node.lineno + 1, node.end_lineno)
    last = rng.randint(first, min(node.end_lineno, first + 30))
    start = offsets[first - 1] + rng.randint(0, len(lines[first - 1]))
    return start, max(start, offsets[last - 1] + rng.randint(0, len(lines[last - 1])))


def test_no_true_middle_owes_an_attribute():
    """2,000 spans of classes of the standard library and the held-out packages (typed ones among them): the true
    file owes nothing."""
    owing = [(left[-60:], middle[:60], sorted(owed)) for left, middle, right in _class_cuts(_corpus(), 2000, seed=49)
             if (owed := AttributeDebt(left, right).owed(left + middle + right))]
    assert owing == []


def test_the_class_around_a_line_is_read_once_for_every_keystroke_on_it(monkeypatch):
    """What a middle of one line owes whatever it is is kept by the text outside its line: typing on the line reads
    the class no more (counted), and owes what a fresh reading owes."""
    monkeypatch.setattr(attribute_debt_module, "_OUTSIDE", type(attribute_debt_module._OUTSIDE)())
    readings = []
    real = attribute_debt_module.attribute_debt
    monkeypatch.setattr(attribute_debt_module, "attribute_debt",
                        lambda *args, **kwargs: readings.append(args[1]) or real(*args, **kwargs))
    left = "class Popen:\n    def __init__(self, cmd):\n        self.ar"
    right = "\n\n    def wait(self):\n        return self._cmd\n"
    assert AttributeDebt(left, right).owed(left + "gs = cmd" + right) == {"_cmd"}
    assert AttributeDebt(left + "g", right).owed(left + "gs = cmd" + right) == {"_cmd"}
    assert AttributeDebt(left + "g", right).owed(left + "g._cmd = cmd" + right) == frozenset()
    assert len(readings) == 1


def _possibly_owed_of_the_whole_file(left: str, right: str) -> frozenset[str]:
    """`_possibly_owed` (without bases) as it read the whole file at once: the oracle of its reading by parts."""
    around = left + right
    loads = set(attribute_debt_module._LOADED.findall(right))
    if in_plain_class(left, left.count("\n") + 1):
        loads |= set(attribute_debt_module._SELF_LOADED.findall(left))
    return frozenset(loads - attribute_debt_module._taken(around) - set(dir(object)))


def test_the_file_read_by_parts_around_the_cursor_s_line_owes_what_it_read_whole():
    """`_possibly_owed` reads the lines above and below the cursor's once per line: over 600 cursors in classes of
    the standard library and the held-out packages it finds what a reading of the whole file finds, but the names
    of a `__slots__` declaration that the cursor's line splits (owed, never fewer)."""
    for left, middle, right in _class_cuts(_corpus(), 600, seed=7):
        whole = _possibly_owed_of_the_whole_file(left, middle + right)
        parts = attribute_debt_module._possibly_owed(left, middle + right, None)
        assert whole <= parts and parts - whole <= slot_names(left + middle + right), (left[-80:], middle[:40])


def test_the_lines_around_the_cursor_s_are_read_once_for_every_keystroke_on_it(monkeypatch):
    left = "class Popen:\n    def __init__(self, cmd):\n        self.ar"
    right = "\n\n    def wait(self):\n        return self._cmd\n"
    typed = ("", "g", "gs", "gs ")
    expected = [_possibly_owed_of_the_whole_file(left + each, right) for each in typed]
    attribute_debt_module._around_line.cache_clear()
    read, taken = [], attribute_debt_module._taken
    monkeypatch.setattr(attribute_debt_module, "_taken", lambda text: read.append(text) or taken(text))
    assert [attribute_debt_module._possibly_owed(left + each, right, None) for each in typed] == expected
    assert "_cmd" in expected[0]
    assert len(read) == 2 + len(typed)  # the lines above and below once, the cursor's line at each keystroke


def _stores_in_init(files, count: int, seed: int):
    """`count` lines of plain classes' `__init__` of `files` that store an attribute on `self`, cut inside the
    attribute's name: (left, true middle, the middle storing another name, right)."""
    rng = random.Random(seed)
    found, read, offset = [], None, None
    for text, node in _plain_classes(files):
        if text is not read:  # (a file's classes come one after another)
            read, offset = text, node_offsets(text)
        for method in node.body:
            if isinstance(method, ast.FunctionDef) and method.name == "__init__":
                for store in ast.walk(method):
                    if (isinstance(store, ast.Attribute) and isinstance(store.ctx, ast.Store)
                            and isinstance(store.value, ast.Name) and store.value.id == "self"
                            and store.lineno == store.end_lineno and len(store.attr) > 1):
                        start = offset(store.end_lineno, store.end_col_offset) - len(store.attr) + 1
                        found.append((text, start, text.find("\n", start) % (len(text) + 1)))
    for text, start, line_end in rng.sample(found, min(count, len(found))):
        middle = text[start:line_end]
        yield text[:start], middle, "_elsewhere" + middle, text[line_end:]


def test_a_line_s_debt_kept_across_keystrokes_is_what_each_middle_owes_read_afresh():
    """Over `__init__` stores of the standard library and the held-out packages, a middle that stores the true
    attribute and one that stores another, judged one after the other on the line (either first), owe what each
    owes with nothing kept."""
    cases = list(_stores_in_init(_corpus(), 300, seed=49))
    assert len(cases) == 300
    owing = 0
    for left, true, other, right in cases:
        fresh = []
        for middle in (true, other):
            attribute_debt_module._OUTSIDE.clear()
            fresh.append(AttributeDebt(left, right).owed(left + middle + right))
        owing += bool(fresh[1])
        for order in ((0, 1), (1, 0)):
            attribute_debt_module._OUTSIDE.clear()
            kept = [AttributeDebt(left, right).owed(left + (true, other)[index] + right) for index in order]
            assert kept == [fresh[index] for index in order], (left[-80:], true, other)
    assert owing > 0  # (the other name leaves what the class loads unassigned somewhere)
