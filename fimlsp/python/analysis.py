"""The workspace analysis: one per project root (`analysis_for`), shared by every judge (members here, calls in
`fimlsp.python.signatures`, imported names in `fimlsp.python.names`) and by the repository context's declarations
(`fimlsp.context.declarations`, through `Language.workspace_analysis`), so that a project is loaded once.

It holds a `jedi.Project`: imports resolve through the workspace and the environment, and nothing of the project is
executed (jedi reads source and stubs; compiled modules of the environment are introspected in jedi's own
subprocess). jedi is not thread-safe, so all its work runs on the analysis's one thread (`run`), a judge's query
(urgent, inside a completion's time) before the context's background resolving.

The members of a receiver before a dot, for the member judge (`fimlsp.python.members`), are answered here. A member
list is an over-approximation on purpose: jedi's members, the names written after the same receiver anywhere in the
file, the names it quotes (what hasattr and getattr guards test), the names the file stores as an attribute of
anything (attributes set from outside the class), and the names of every `__slots__` the file or the receiver's
module declares. A receiver whose members cannot be known statically is unknown (None), with the reason: no
inferred type or several, an instance other than `self`'s or a builtin type's (jedi infers other instances from
their assignments and call sites, not surely enough: `self._sock` in asyncio lacked `getsockopt`), a base class
jedi cannot infer, `Any`, a mock, a function, a class or module with
`__getattr__` or a custom `__getattribute__`, a file that uses `setattr`, `__dict__` or `__getattr__`. Answers
are cached per (code, receiver), and a query that runs past its time bound answers None ("timed out") while jedi
finishes in the background for the next ask.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

# The time one query may take before the judge relaxes (seconds); jedi's first query in a workspace loads stubs.
QUERY_SECONDS = 1.0
_JUDGED_TYPES = frozenset({"module", "class", "instance"})
_DYNAMIC_TEXT = re.compile(r"\bsetattr\s*\(|\b__dict__\b|\b__getattr__\b|\b__getattribute__\b")
_SLOTS = re.compile(r"\b__slots__\s*(?::[^=\n]*)?=\s*([\(\[\{][^\)\]\}]*[\)\]\}]|[^\n]*)", re.DOTALL)
_ATTRIBUTE_STORE = re.compile(r"\.\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)")
# A quoted name: what hasattr/getattr guards test (`hasattr(_curses, "COLORS")`, set only at run time).
_QUOTED_NAME = re.compile(r"""['"]([A-Za-z_]\w*)['"]""")
_STRING_WORD = re.compile(r"""['"]([A-Za-z_]\w*)['"]""")
_SELF = ("self", "cls")
_UNKNOWN_ROOTS = ("unittest.mock", "mock.", "typing.Any", "typing_extensions.Any")


@dataclass(frozen=True, slots=True)
class Lookup:
    """The members of a receiver (None: not known statically) and why not, when not."""

    names: frozenset[str] | None
    reason: str = ""
    kinds: frozenset[str] = frozenset()  # jedi's types of the receiver: module, class, instance
    from_stub: bool = False  # some members come from a stub, which leaves private names out: those are not judged


def slot_names(text: str) -> set[str]:
    """The names that the `__slots__` declarations of `text` list."""
    found: set[str] = set()
    for declaration in _SLOTS.finditer(text):
        found.update(_STRING_WORD.findall(declaration.group(1)))
    return found


def stored_attributes(text: str) -> set[str]:
    """The names `text` stores as an attribute of anything (`obj.name = ...`, `obj.name: T = ...`)."""
    return set(_ATTRIBUTE_STORE.findall(text))


def used_after(receiver: str, text: str) -> set[str]:
    """The names written after `receiver.` anywhere in `text` (attributes that some code sets or reads there)."""
    return set(re.findall(r"(?<![\w.])" + re.escape(receiver).replace(r"\.", r"\s*\.\s*") + r"\s*\.\s*(\w+)", text))


class _Worker:
    """One daemon thread running work in order, urgent work (a judge's query) before background work (the
    context's resolving); started at the first work."""

    def __init__(self, name: str):
        self._name = name
        self._urgent: deque = deque()
        self._background: deque = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, work: Callable, *args, background: bool = False) -> Future:
        future: Future = Future()
        with self._wake:
            (self._background if background else self._urgent).append((future, work, args))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._wake.notify()
        return future

    def _loop(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._urgent or self._background)
                future, work, args = (self._urgent or self._background).popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work(*args))
            except BaseException as error:  # the caller's future carries it
                future.set_exception(error)


class Analysis:
    """jedi over one project root; queries run one at a time on its worker thread (jedi is not thread-safe)."""

    def __init__(self, root: str | Path | None):
        self.root = None if root is None else Path(root)
        self._project = None
        self._worker = _Worker("fimlsp-analysis")
        self._answers: dict[tuple[str, str], Future] = {}
        self._lock = threading.Lock()
        self.queries = 0  # jedi queries made (counted bound: at most one per code and receiver)
        self.jobs = 0  # work run on its thread, the judges' and the context's
        self.waited = 0.0  # seconds callers spent waiting on answers

    @property
    def project(self):
        """The `jedi.Project` of the root (None: the environment alone), made at its first use: a judge that reads
        no jedi (the name judge) does not wait for jedi's import."""
        if self._project is None and self.root is not None:
            import jedi

            with self._lock:
                if self._project is None:
                    self._project = jedi.Project(self.root)
        return self._project

    def run(self, work: Callable, *args, background: bool = False) -> Future:
        """Run `work(*args)` where this project's jedi work runs, after the urgent work queued (and, `background`,
        after all other work)."""
        self.jobs += 1
        return self._worker.submit(work, *args, background=background)

    def roots(self) -> tuple[str, ...]:
        """Where the project's own modules are found: its root (and a `src` folder in it)."""
        if self.root is None:
            return ()
        return tuple(str(folder) for folder in (self.root, self.root / "src") if folder.is_dir())

    def members(self, code: str, line: int, column: int, path: str | None = None) -> frozenset[str] | None:
        """The members of the receiver that ends just before the dot at `line` (1-based), `column` (0-based,
        the dot's column + 1) of `code`; None where they are not known statically."""
        return self.lookup(code, line, column, path, seconds=None).names

    def lookup(self, code: str, line: int, column: int, path: str | None = None,
               seconds: float | None = QUERY_SECONDS, receiver: str = "") -> Lookup:
        """`members` with the reason, within `seconds` (None: however long jedi takes)."""
        key = (hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(),
               f"{line}:{column}:{path}")
        with self._lock:
            future = self._answers.get(key)
            if future is None:
                future = self.run(self._ask, code, line, column, path, receiver)
                self._answers[key] = future
        clock = time.perf_counter()
        try:
            return future.result(seconds)
        except FutureTimeout:
            return Lookup(None, f"the analysis took more than {seconds:g} s")
        finally:
            self.waited += time.perf_counter() - clock

    def _ask(self, code: str, line: int, column: int, path: str | None, receiver: str) -> Lookup:
        self.queries += 1
        try:
            return self._infer(code, line, column, path, receiver)
        except Exception as error:  # jedi's own failures on odd code: the receiver is unknown, never an error
            return Lookup(None, f"the analysis failed ({type(error).__name__})")

    def _infer(self, code: str, line: int, column: int, path: str | None, receiver: str) -> Lookup:
        import jedi

        script = jedi.Script(code, path=path, project=self.project)
        inferred = script.infer(line, max(column - 1, 0))
        if not inferred:
            return Lookup(None, "no type inferred")
        if len({each.full_name for each in inferred}) > 1:  # jedi lists the members of a union unreliably
            return Lookup(None, "several types inferred")
        kinds = set()
        from_stub = False
        extra: set[str] = set()
        for each in inferred:
            full_name = each.full_name or ""
            if each.type not in _JUDGED_TYPES:
                return Lookup(None, f"a {each.type} receiver")
            if full_name.startswith(_UNKNOWN_ROOTS):
                return Lookup(None, f"a dynamic receiver ({full_name})")
            if each.type == "instance" and receiver not in _SELF and not full_name.startswith("builtins."):
                return Lookup(None, "an instance other than self's or a builtin type's (jedi's inference of other "
                                    "instances is not sure enough)")
            kinds.add(each.type)
            ancestry = _ancestry(each) if each.type != "module" else ()
            if ancestry is None:
                return Lookup(None, f"a base class of {full_name or each.name} is not known")
            from_stub = from_stub or any(str(path).endswith(".pyi") for path in ancestry)
            module_path = each.module_path
            from_stub = from_stub or str(module_path).endswith(".pyi")
            if module_path is not None and str(module_path).endswith(".py") and each.type != "module":
                try:
                    extra |= slot_names(Path(module_path).read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    pass
        if kinds != {"module"} and _DYNAMIC_TEXT.search(code):
            return Lookup(None, "the file sets attributes dynamically (setattr, __dict__, __getattr__)")
        completions = script.complete(line, column)
        names = {completion.name for completion in completions}
        if "__getattr__" in names:
            return Lookup(None, "the receiver defines __getattr__")
        for completion in completions:
            if completion.name == "__getattribute__" and not (completion.full_name or "").startswith(
                    ("builtins.", "types.")):
                return Lookup(None, "the receiver defines __getattribute__")
        if not names:
            return Lookup(None, "no members listed")
        names |= extra | slot_names(code) | stored_attributes(code) | set(_QUOTED_NAME.findall(code))
        if receiver:
            names |= used_after(receiver, code)
        return Lookup(frozenset(names), "", frozenset(kinds), from_stub)


def _ancestry(name) -> list | None:
    """The files of every class in the inferred class's (or instance's class's) ancestry; None where jedi does not
    know one of them: a base it cannot infer (a compiled base without a stub: io's _io._BufferedIOBase) leaves its
    members out of the list."""
    try:
        files = []
        classes = [value if value.is_class() else value.class_value for value in name._name.infer()]
        seen: set[int] = set()
        while classes:
            current = classes.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if current.py__name__() != "object":  # every class's base: its stub holds no private name of theirs
                files.append(current.get_root_context().py__file__())
            for lazy in current.py__bases__():
                bases = lazy.infer()
                if not bases or not all(base.is_class() for base in bases):
                    return False
                classes.extend(bases)
        return files
    except Exception:  # jedi's inner API on odd values: not known
        return None


_ANALYSES: dict[Path | None, Analysis] = {}
_ANALYSES_LOCK = threading.Lock()


def analysis_for(path: str | Path | None, project: str | Path | None = None) -> Analysis:
    """The one analysis of the project `project` (a folder), else of the project that holds `path` (a file or folder:
    the nearest folder above it with a project marker, `fimlsp.workspace.project_root`); with neither, of no
    project (the environment)."""
    from fimlsp.workspace import project_root

    root = (Path(project).resolve() if project is not None else None if path is None else project_root(path))
    with _ANALYSES_LOCK:
        found = _ANALYSES.get(root)
        if found is None:
            found = _ANALYSES[root] = Analysis(root)
        return found
