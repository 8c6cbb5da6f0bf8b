"""What a class's instances have from its bases, for the attribute debt (`fimlsp.python.attribute_debt`): a class
with a base owes what it loads on `self` only where the whole of its ancestry is known (held-out uvicorn
wsproto_impl.py: `class WSProtocol(asyncio.Protocol)` loads `self.handle_pong`, which a middle that drops its `def`
leaves to nothing).

The bases are asked of jedi (on the analysis's thread, `Analysis.run`) in the file above the class statement, which
is all that binds them, with typeshed's stubs of the distributions the environment lacks on its path, as a type
checker reads them (`fimlsp.python.typeshed_fallback`); every class of the ancestry must be one jedi infers, read as
the member judge reads a receiver's classes (`fimlsp.python.member_lists`): the names jedi lists for an instance,
and those its source and stub bind and store (a stub alone may leave private names out, so only public names are
owed then). An ancestry that sets attributes dynamically, a base jedi does not infer as one class, or a class whose
source cannot be read, and the class is unknown: it owes nothing. Answers are kept per file head, so the keystrokes
in one class ask once.
"""

from __future__ import annotations

import ast
import hashlib
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from itertools import accumulate

from fimlsp.python.analysis import Analysis, Answers, ancestry, judges_script
from fimlsp.python.member_lists import TRUSTED_STUBS, class_sources
from fimlsp.python.typeshed_fallback import bases_project
from fimlsp.python.waits import WaitBudget

_KEPT = 64  # answers kept (one per class head asked about)


@dataclass(frozen=True)
class Inherited:
    """The names an instance of a class may have from its bases (more, never fewer); `public_only`: some class of
    the ancestry is known from a stub alone, which may leave its private names out."""

    names: frozenset[str]
    public_only: bool = False


class BasesPending(Exception):
    """The bases' answer did not come within the time given (it is kept for the next ask)."""


@dataclass(frozen=True, eq=False)
class BaseReader:
    """`inherited` for one document of an analysis, within the judge's `budget` (None: no bound): what the
    attribute debt asks of a class with bases."""

    analysis: Analysis
    path: str | None
    budget: WaitBudget | None = None

    def __call__(self, text: str, holder: ast.ClassDef, wait: bool = True) -> Inherited | None:
        """`inherited`; without `wait`, only an answer that is ready (else `BasesPending`: asked, not waited on)."""
        return inherited(self.analysis, text, holder, self.path, self.budget if wait else WaitBudget(0.0))

    @property
    def key(self) -> tuple:
        """What its answers depend on: the analysis and the document's path."""
        return id(self.analysis), self.path


_ANSWERS = Answers(_KEPT)


def inherited(analysis: Analysis, text: str, holder: ast.ClassDef, path: str | None,
              budget: WaitBudget | None) -> Inherited | None:
    """What instances of `holder` (a class statement of `text`, placed as in `text`) have from its bases; None where
    that is not known. Raises `BasesPending` where jedi does not answer within the `budget`'s time left."""
    question = _question(text, holder)
    if question is None:
        return None
    code, places = question
    key = (hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).digest(), path)
    future = _ANSWERS.ask(analysis, key, _ask, analysis, code, places, path)
    try:
        return future.result() if budget is None else budget.result(future)
    except FutureTimeout:
        raise BasesPending("the bases took more than the judge's time left") from None


def _question(text: str, holder: ast.ClassDef) -> tuple[str, list[tuple[int, int]]] | None:
    """The code jedi is asked (the file up to the class's last base, the statement closed) and each base's place in
    it (line 1-based, column of its last character); None where a base is not a name or a dotted name (`Generic[T]`
    is read by its `Generic`)."""
    names = [base.value if isinstance(base, ast.Subscript) else base for base in holder.bases]
    if not names or not all(isinstance(name, (ast.Name, ast.Attribute)) for name in names):
        return None
    lines = text.split("\n", holder.bases[-1].end_lineno)[:holder.bases[-1].end_lineno]
    starts = list(accumulate((len(line) + 1 for line in lines), initial=0))

    def offset(line: int, column: int) -> int:  # (ast's column counts UTF-8 bytes)
        return starts[line - 1] + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8", "replace"))

    ends = [offset(name.end_lineno, name.end_col_offset) for name in names]
    if any(not text.endswith(name.id if isinstance(name, ast.Name) else name.attr, 0, end)
           for name, end in zip(names, ends)):
        return None  # (lines counted otherwise than by line feeds: a lone carriage return)
    head_end = offset(holder.bases[-1].end_lineno, holder.bases[-1].end_col_offset)
    code = text[:head_end] + "):\n" + " " * (holder.col_offset + 4) + "pass\n"
    places = [(code.count("\n", 0, end) + 1, end - 1 - (code.rfind("\n", 0, end) + 1)) for end in ends]
    return code, places


def _ask(analysis: Analysis, code: str, places: list[tuple[int, int]], path: str | None) -> Inherited | None:
    try:
        return _ancestry(analysis, code, places, path)
    except Exception:  # a base not known (UnknownBase), jedi's own failures on odd code: unknown, never an error
        return None


def _ancestry(analysis: Analysis, code: str, places: list[tuple[int, int]], path: str | None) -> Inherited | None:
    script, document = judges_script(code, path, bases_project(analysis), "bases")
    classes = []
    for line, column in places:
        found = script.infer(line, column)
        values = [value for name in found for value in name._name.infer()]
        if not values or not all(value.is_class() for value in values):
            return None
        classes.extend(values)
    names: set[str] = set()
    public_only = False
    for current in ancestry(classes):
        for each in current.get_filters(is_instance=True, include_metaclasses=False):
            names.update(name.string_name for name in each.values())
        root = current.get_root_context()
        if root.py__name__() not in TRUSTED_STUBS and root.py__file__() != document:
            sources = class_sources(current)
            if not sources:  # dynamic (None), or no source nor stub to read (a compiled class)
                return None
            public_only = public_only or all(stub for _names, stub in sources)
            for source, _stub in sources:
                if "__getattribute__" in source:
                    return None
                names |= source
    if "__getattr__" in names or "__getattribute__" in code:  # (every class has object's __getattribute__)
        return None
    return Inherited(frozenset(names), public_only)
