"""Python behind the language seam (`fimlsp.language`): the promise of `fimlsp.python.region`, CPython's verdict
(its compiler's: a file that parses but that `compile` refuses, `return` outside a function, is not valid).

The judges read the document's place: its `path` (its folder holds the modules of its relative imports) and the
`project` root (where the project's modules are found; None: the nearest folder above the file with a project
marker). Every judge of one project asks the one workspace analysis of it (`fimlsp.python.analysis.analysis_for`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from fimlsp.language import DEFAULT_BUDGET, Caches, Guarantee, Language
from fimlsp.python.finish import comma_spaced, ends_a_comma
from fimlsp.python.analysis import Analysis, analysis_for
from fimlsp.python.jedi_thread import background_held_back
from fimlsp.python.member_lists import QUERY_SECONDS
from fimlsp.python.signatures import SignatureSource
from fimlsp.python.members import MemberSource
from fimlsp.python.names import FileNames, undefined_names
from fimlsp.python.context_cache import RightContextCache
from fimlsp.python.quotient import RightContext
from fimlsp.python.region import PythonGuarantee, constrain
from fimlsp.python.module_existence import set_unsaved
from fimlsp.python.syntax import compiles, one_parse
from fimlsp.python.waits import judge_budget
from fimlsp.python.whole_file_ends import late_refusal


class Python(Language):
    name = "python"
    language_ids = ("python",)
    suffixes = (".py", ".pyi", ".pyw")
    blanks = " \t\f"  # CPython's tokenizer: space, tab and form feed between tokens
    closers = frozenset(")]}\"'` \t\r\n")  # brackets, quotes, blanks and line breaks (\r\n, \r as the file writes them)
    line_closers = ")]}:"  # a bracket's close, or the colon of a compound statement's header
    fence = ("```python", "```")

    def constrain(self, left: str, right: str, budget: int = DEFAULT_BUDGET,
                  deadline: float | None = None, caches: Caches | None = None) -> PythonGuarantee:
        cache = None if caches is None else caches.of(self, RightContextCache)
        return constrain(left, right, budget, deadline, cache)

    def right_context(self, right: str) -> RightContext:
        return RightContext(right)

    def judging_names(self, guarantee: Guarantee, left: str, right: str, path: str | None = None,
                      project: str | None = None) -> tuple[Guarantee, str]:
        if guarantee.state is None:
            return guarantee, ""
        file = _file_names(left, right, path, project)
        return replace(guarantee, state=guarantee.state.judging_names(file)), file.relaxed or ""

    def judging_members(self, guarantee: Guarantee, left: str, right: str, path: str | None = None,
                        project: str | None = None) -> tuple[Guarantee, MemberSource | None]:
        """The promise with the member judge on (`fimlsp.python.members`): after a dot, a name must be a member of
        the receiver where its members are known. Returns it and the judge's source, whose `reason` says which
        receivers it let go (None where there is no state to judge)."""
        if guarantee.state is None:
            return guarantee, None
        analysis, document = analysis_for(path, project), _jedi_path(path)
        budget = judge_budget(analysis, document, left, right, QUERY_SECONDS)
        source = MemberSource(analysis, left, right, document, seconds=budget.seconds, budget=budget)
        return replace(guarantee, state=guarantee.state.judging_members(source)), source

    def judging_calls(self, guarantee: Guarantee, left: str, right: str, path: str | None = None,
                      project: str | None = None) -> tuple[Guarantee, SignatureSource | None]:
        """The promise with the call judge on (`fimlsp.python.calls`): a call must fit its callable's signature
        where jedi knows it. Returns it and the judge's source, whose `reason` says which calls it let go (None
        where there is no state to judge). Its queries run on the project analysis's one jedi thread."""
        if guarantee.state is None:
            return guarantee, None
        analysis, document = analysis_for(path, project), _jedi_path(path)
        members = guarantee.state.members  # one wait on jedi for both judges: a keystroke's share in all
        budget = judge_budget(analysis, document, left, right, QUERY_SECONDS) if members is None \
            else members.source.budget
        source = SignatureSource(left, right, analysis.project, document, analysis.run, budget=budget)
        return replace(guarantee, state=guarantee.state.judging_calls(source)), source

    def binds_names(self, left: str, middle: str, right: str, path: str | None = None,
                    project: str | None = None) -> bool:
        file, text = _file_names(left, right, path, project), left + middle + right
        with one_parse():
            return not file.unbound(text) and not file.redeclared(text)

    def late_refusal(self, state) -> str:
        return late_refusal(state)

    def parses(self, text: str) -> bool:
        return compiles(text)

    def undefined_names(self, text: str) -> set[str] | None:
        return undefined_names(text)

    def spaces_after_comma(self, state) -> bool:
        return ends_a_comma(state) and comma_spaced(state.text)

    def completing(self):
        return background_held_back()

    def workspace_analysis(self, root: str | os.PathLike | None) -> Analysis:
        return analysis_for(None, root)

    def document_text(self, path: str | os.PathLike, text: str | None) -> None:
        set_unsaved(path, text)
        if text is not None:  # the document's judges will ask its project's analysis: jedi gets ready meanwhile
            analysis_for(path).warm()


def _file_names(left: str, right: str, path: str | None, project: str | None) -> FileNames:
    """The names of the file at `path` (None: a file of no known place) in `project`."""
    if path is None and project is None:
        return FileNames.of(left, right)
    folder = None if path is None else str(Path(path).resolve().parent)
    return FileNames.of(left, right, folder, analysis_for(path, project).roots())


def _jedi_path(path: str | None) -> str | None:
    """The document's path as jedi takes it (absolute: its relative imports are read from its folder)."""
    return None if path is None else str(Path(path).resolve())


LANGUAGE = Python()
