"""The workspace analysis: one per project root (`analysis_for`), shared by every judge (members here, calls in
`fimlsp.python.signatures`, imported names in `fimlsp.python.names`) and by the repository context's declarations
(`fimlsp.context.declarations`, through `Language.workspace_analysis`), so that a project is loaded once.

It holds a `jedi.Project`: imports resolve through the workspace and the environment, and nothing of the project is
executed (jedi reads source and stubs; compiled modules of the environment are introspected in jedi's own
subprocess). jedi is not thread-safe, so all its work runs on one thread, every analysis's (`run`,
`fimlsp.python.jedi_thread`), a judge's query (urgent, inside a completion's time) before the background work: the
context's resolving, a warm-up, the member judge's questions asked ahead once a completion is written (which a
judge that then needs one hurries, and the next keystroke's drops where they have not begun).

The members of a receiver before a dot, for the member judge, are asked of it by `fimlsp.python.member_lists`
(what a member list holds, when a receiver is unknown, the cache per document and receiver); the text-level pieces
of a list (`__slots__` names, attributes stored from anywhere) are here, beside the `Lookup` they fill.
"""

from __future__ import annotations

import io
import re
import sys
import threading
import tokenize
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import fimlsp.syntax_trees  # noqa: F401  jedi's and parso's literal_eval on the analysis thread: ast.parse alone
from fimlsp.python.jedi_thread import JEDI_THREAD

_SLOTS = re.compile(r"\b__slots__\s*(?::[^=\n]*)?=\s*([\(\[\{][^\)\]\}]*[\)\]\}]|[^\n]*)", re.DOTALL)
# On one line: a sentence's period in a comment does not make the next line's assignment an attribute's.
_ATTRIBUTE_STORE = re.compile(r"\.[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")
# A name quoted in a str (what `hasattr` and `getattr` guards test); a bytes literal names no attribute, nor a key
# (`{"path": ...}`, `scope["path"]`: an ASGI scope's keys are not the protocol's attributes).
_QUOTED_NAME = re.compile(r"""(?<![bB])(?<![bB][rR])(?<![rR][bB])['"]([A-Za-z_]\w*)['"]""")
_KEY_AFTER = re.compile(r"[ \t]*:(?!=)")
_TRAILING_CHAIN = re.compile(r"[\w.]*\Z")
_SUBSCRIPT_BEFORE = re.compile(r"[\w)\]][ \t]*\[[ \t]*\Z")
_SUBSCRIPT_AFTER = re.compile(r"[ \t]*\]")
# A quoted name: what hasattr/getattr guards test (`hasattr(_curses, "COLORS")`, set only at run time).
_STRING_WORD = re.compile(r"""['"]([A-Za-z_]\w*)['"]""")
_STRING_PREFIX = re.compile(r"\w*")
_NOT_LINE_BREAKS = re.compile(r"[^\r\n]")


@dataclass(frozen=True, slots=True)
class Lookup:
    """The members of a receiver (None: not known statically) and why not, when not."""

    names: frozenset[str] | None
    reason: str = ""
    kinds: frozenset[str] = frozenset()  # jedi's types of the receiver: module, class, instance
    from_stub: bool = False  # some members come from a stub, which leaves private names out: those are not judged
    # A module whose source star-imports (os: `from posix import *`): the platform's constants there, which jedi
    # reads on this platform alone and stubs may leave out (ctypes's `_os.RTLD_MEMBER`, AIX's), are not judged.
    open_constants: bool = False
    # An instance of a built-in type without an instance dict (a set, a str, ...): it takes no new attribute, so a
    # name that is not a member is refused even where a store could make it one (`self.tasks.add_done_ = 0`).
    fixed: bool = False


def slot_names(text: str) -> set[str]:
    """The names that the `__slots__` declarations of `text` list."""
    found: set[str] = set()
    for declaration in _SLOTS.finditer(text):
        found.update(_STRING_WORD.findall(declaration.group(1)))
    return found


def quoted_names(code: str) -> set[str]:
    """The names `code` quotes other than as a key of a dict display or a subscript."""
    names = set()
    for match in _QUOTED_NAME.finditer(code):
        if _KEY_AFTER.match(code, match.end()) or (
                _SUBSCRIPT_AFTER.match(code, match.end())
                and _SUBSCRIPT_BEFORE.search(code, max(0, match.start() - 80), match.start())):
            continue
        names.add(match.group(1))
    return names


def trailing_chain(text: str) -> str:
    """The chain of names and dots that `text` ends with (`self.parser.`), read from its last line's start: from the
    text's, `re` tries every position (5 ms on 50 kB, at every keystroke)."""
    return _TRAILING_CHAIN.search(text, text.rfind("\n") + 1).group()


def stored_attributes(text: str) -> set[str]:
    """The names `text` stores as an attribute of anything (`obj.name = ...`, `obj.name: T = ...`)."""
    return set(_ATTRIBUTE_STORE.findall(text))


def after_receiver(receiver: str) -> re.Pattern:
    """What finds the names written after `receiver.` (`os . path`, a line break in brackets between)."""
    return re.compile(r"(?<![\w.])" + re.escape(receiver).replace(r"\.", r"\s*\.\s*") + r"\s*\.\s*(\w+)")


def used_after(receiver: str, text: str) -> set[str]:
    """The names written after `receiver.` anywhere in `text` (attributes that some code sets or reads there)."""
    return set(after_receiver(receiver).findall(text))


def without_prose(code: str) -> str:
    """`code` with its comments and its strings but f-strings (whose fields are code) blanked, line breaks kept, as
    far as CPython's tokenizer reads it (the rest as it is where it stops: a text cut at the cursor need not
    tokenize): a comment's `self._cache.swap(...)` is no use of a member."""
    lines: list[str] = []
    reader = io.StringIO(code).readline

    def readline() -> str:
        lines.append(reader())
        return lines[-1]

    spans = []
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.COMMENT or (
                    token.type == tokenize.STRING and "f" not in _STRING_PREFIX.match(token.string).group().lower()):
                spans.append((token.start, token.end))
    except (tokenize.TokenError, SyntaxError):
        pass
    if not spans:
        return code
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    pieces, done = [], 0
    for (row, column), (end_row, end_column) in spans:
        start, end = starts[row - 1] + column, starts[end_row - 1] + end_column
        pieces += [code[done:start], _NOT_LINE_BREAKS.sub(" ", code[start:end])]
        done = end
    return "".join(pieces) + code[done:]


class UnknownBase(Exception):
    """A class of an ancestry has a base jedi does not infer as classes."""


def ancestry(classes: list):
    """Each of jedi's class values `classes` and every class of their ancestry, once, each before its bases (which
    are read once it was looked at: a caller that stops early asks no more of jedi). Raises `UnknownBase` (with
    the class's name) where a base is not known."""
    seen: set[int] = set()
    while classes:
        current = classes.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for lazy in current.py__bases__():
            bases = lazy.infer()
            if not bases or not all(base.is_class() for base in bases):
                raise UnknownBase(current.py__name__())
            classes.extend(bases)


def judges_jedi():
    """jedi as the judges ask it: a parameter's type is never guessed from the function's callers (jedi's
    `dynamic_params`): a guess from one call site refused tokenize's `find_cookie(line)`'s true `line.decode`.
    Unannotated, a parameter is an unknown receiver."""
    import jedi
    import parso.cache

    jedi.settings.dynamic_params = False
    # parso drops the trees of the modules not loaded again in ten minutes once it holds 600, while jedi still reads
    # them by their path (`get_parso_cache_node`) and fails (KeyError): after a long session, the members of `os`
    # (whose stub star-imports posix) came back unknown, and a misspelt `os.unlinkk` passed.
    parso.cache._CACHED_SIZE_TRIGGER = sys.maxsize
    return jedi


def judges_script(code: str, document: str | Path | None, project, kind: str):
    """jedi's Script of a judge's `kind` of question about `document`'s code (cut, a line moved, a middle in it),
    and the path it is told that code stands at: beside the document (its relative imports resolve the same),
    never the document's own path, one per kind. jedi's parser keeps the code of a path it was given in memory and
    serves it to every later import of that module while the file on disk is older: asked as the document, the
    file cut after a class head stood for the module (a later question found only the stub of threading.Thread
    after threading.py was asked about its bases), and a middle the judge refused would stand there too."""
    path = None if document is None else Path(document).with_name(f"_fimlsp_{kind}_{Path(document).name}")
    return judges_jedi().Script(code, path=path, project=project), path


class Answers:
    """The answers to one kind of question on the analysis's thread, per analysis and key, the latest `kept`: a
    finish search asks the same question at several of its steps, and a keystroke the questions of the one
    before."""

    def __init__(self, kept: int):
        self.kept = kept
        self._futures: OrderedDict[tuple, tuple[Analysis, Future]] = OrderedDict()
        self._lock = threading.Lock()
        _EVERY_ANSWERS.add(self)

    def ask(self, analysis: Analysis, key: tuple, work: Callable, *args, background: bool = False) -> Future:
        """The answer to come to `key` on `analysis`: `work(*args)` run where it was not asked before, else the
        answer kept (hurried, where not asked in the `background` itself)."""
        with self._lock:
            asked, future = self._futures.get((id(analysis), key), (None, None))
            if asked is not analysis:  # (an analysis's id may be reused once it is gone)
                future = analysis.run(work, *args, background=background)
                self._futures[id(analysis), key] = analysis, future
                while len(self._futures) > self.kept:
                    self._futures.popitem(last=False)
            else:
                self._futures.move_to_end((id(analysis), key))
                if not background:
                    analysis.hurry(future)
        return future

    def drop(self, analysis: Analysis, key: tuple) -> None:
        """Cancel the work of `key`'s answer, asked in the background, and forget it, where it has not begun nor
        been hurried (at once: no one is handed the cancelled answer)."""
        with self._lock:
            asked, future = self._futures.get((id(analysis), key), (None, None))
            if asked is analysis and analysis.drop(future):
                del self._futures[id(analysis), key]

    def forget(self) -> None:
        """Drop the answers kept (`forget_answers`)."""
        with self._lock:
            self._futures.clear()


_EVERY_ANSWERS: weakref.WeakSet[Answers] = weakref.WeakSet()


def forget_answers() -> None:
    """Drop every judge's answers kept (a benchmark's first completion of a document asks jedi itself, as in an
    editor)."""
    for answers in list(_EVERY_ANSWERS):
        answers.forget()


class Analysis:
    """jedi over one project root; queries run one at a time on the analyses' one thread (jedi is not
    thread-safe)."""

    def __init__(self, root: str | Path | None):
        self.root = None if root is None else Path(root)
        self._project = None
        self._lock = threading.Lock()
        self.jobs = 0  # work run on its thread, the judges' and the context's
        self.waited = 0.0  # seconds callers spent waiting on answers
        self._warming: Future | None = None

    @property
    def project(self):
        """The `jedi.Project` of the root (None: the environment alone), made at its first use: a judge that reads
        no jedi (the name judge) does not wait for jedi's import."""
        if self._project is None and self.root is not None:
            jedi = judges_jedi()
            with self._lock:
                if self._project is None:
                    self._project = jedi.Project(self.root)
        return self._project

    def run(self, work: Callable, *args, background: bool = False) -> Future:
        """Run `work(*args)` where this project's jedi work runs, after the urgent work queued (and, `background`,
        after all other work)."""
        self.jobs += 1
        return JEDI_THREAD.submit(work, *args, background=background)

    def hurry(self, future: Future) -> None:
        """Run `future`'s work (asked with `background`) before the background work, where it has not begun."""
        JEDI_THREAD.hurry(future)

    def drop(self, future: Future) -> bool:
        """Cancel `future`'s work (asked with `background`) where it has not begun nor been hurried; whether it
        did."""
        return JEDI_THREAD.drop(future)

    def warm(self) -> Future:
        """Have jedi ready before the first question (a document opened): its import, the project, the builtins'
        stubs and a standard module read on the analysis's thread, in the background. Without it the first judge
        to ask in a fresh server waits for all of that (about a second), inside the completion's time, and a
        judged token's check (a finish search's) runs out of its share of it."""
        with self._lock:
            if self._warming is None:
                self._warming = self.run(_warm_up, self, background=True)
            return self._warming

    def roots(self) -> tuple[str, ...]:
        """Where the project's own modules are found: its root (and a `src` folder in it)."""
        if self.root is None:
            return ()
        return tuple(str(folder) for folder in (self.root, self.root / "src") if folder.is_dir())


def _warm_up(analysis: Analysis) -> None:
    script = judges_jedi().Script("import os\n\nos.path.join('a').upper()", project=analysis.project)
    script.infer(3, 24)
    script.get_signatures(3, 13)


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
