"""The workspace analysis's questions (`fimlsp.python.analysis`): answers kept per analysis and key, dropped ones
never handed out, and no judge's question changing what a later import of the document reads."""

from __future__ import annotations

import ast
import threading
import time
from types import SimpleNamespace

import pytest

from fimlsp.python.analysis import Analysis, Answers, forget_answers
from fimlsp.python.jedi_thread import background_held_back
from fimlsp.python.call_results import missing_member
from fimlsp.python.inherited import BaseReader
from fimlsp.python.member_lists import member_lists
from fimlsp.python.signatures import SignatureSource
from fimlsp.syntax_trees import parsed

ON_DISK = """import collections


def count() -> int:
    return 1


total = count()


class Tally(collections.Counter):
    pass
"""
# The document as a judge's question has it: a middle made `total` a str.
ASKED = ON_DISK.replace("total = count()", "total = str(count())")


def _members_question(analysis: Analysis, document: str) -> None:
    member_lists(analysis).lookup(ASKED + "\ntotal.", "\n", "total", document, None)


def _call_result_question(analysis: Analysis, document: str) -> None:
    text = ASKED.replace("str(count())", "str(count())@@").split("@@")[0]
    missing_member(analysis, text, text + ".upper()" + ASKED[len(text):], text[:-len("str(count())")], document,
                   None)


def _signature_question(analysis: Analysis, document: str) -> None:
    SignatureSource(ASKED + "\nx = count", "()\n", analysis.project, document).lookup(("count",))


def _bases_question(analysis: Analysis, document: str) -> None:
    holder = next(node for node in parsed(ASKED).body if isinstance(node, ast.ClassDef))
    BaseReader(analysis, document)(ASKED, holder)


@pytest.mark.parametrize("question", [_members_question, _call_result_question, _signature_question,
                                      _bases_question])
def test_a_judge_s_question_leaves_the_document_as_its_importers_read_it(tmp_path, question):
    """jedi keeps the code of a path it was asked about in memory and serves it to later imports of that module:
    asked as the document, a question's code (a middle the judge may refuse, a file cut after a class head) would
    stand for the file on disk in every other module's questions."""
    (tmp_path / "pyproject.toml").write_text("")
    document = tmp_path / "shapes.py"
    document.write_text(ON_DISK)
    analysis = Analysis(tmp_path)
    question(analysis, str(document))
    found = member_lists(analysis).lookup("import shapes\n\nshapes.total.", "\n", "shapes.total",
                                          str(tmp_path / "main.py"), None)
    assert found.names is not None and "bit_length" in found.names and "upper" not in found.names


def test_a_module_read_long_ago_is_still_known_once_parso_holds_many():
    """parso drops the trees of the modules not loaded again in ten minutes once it holds 600, and jedi then failed
    (KeyError) on the ones it still reads by their path: the members of `os` (its stub star-imports posix) came back
    unknown late in the full test suite, and a misspelt `os.unlinkk` passed."""
    from parso.cache import parser_cache

    analysis = Analysis(None)
    assert member_lists(analysis).lookup("import os\n\nos.", "\n", "os", None, None).names is not None
    for entries in parser_cache.values():  # an hour later
        for item in entries.values():
            item.last_used -= 3600
    parser_cache["held"] = {f"/held/{i}.py": SimpleNamespace(last_used=time.time()) for i in range(700)}
    try:
        found = member_lists(analysis).lookup("import os\nimport json\n\nos.", "\n", "os", None, None)
    finally:
        del parser_cache["held"]
    assert found.names is not None and "unlink" in found.names, found.reason


def test_answers_are_kept_per_analysis_and_key():
    answers, runs = Answers(2), []

    def work(value):
        runs.append(value)
        return value

    first, second = Analysis(None), Analysis(None)
    assert answers.ask(first, ("a",), work, 1).result() == 1
    assert answers.ask(first, ("a",), work, 2).result() == 1  # kept: not asked again
    assert answers.ask(second, ("a",), work, 3).result() == 3  # another analysis's own answer
    answers.ask(first, ("b",), work, 4).result()  # three kept at most two: the oldest, first's "a", goes
    assert answers.ask(first, ("a",), work, 5).result() == 5
    forget_answers()  # a benchmark's first completion of a document: every kind of answer asked again
    assert answers.ask(first, ("a",), work, 6).result() == 6
    assert runs == [1, 3, 4, 5, 6]


def test_a_dropped_answer_is_asked_again_never_handed_out_cancelled():
    """An answer asked ahead (in the background) and dropped before it began is forgotten at once: the next ask of
    that key runs the work again rather than waiting on a cancelled answer."""
    answers, analysis = Answers(8), Analysis(None)
    started, release = threading.Event(), threading.Event()

    def blocking():
        started.set()
        release.wait(10)

    busy = analysis.run(blocking)  # the analysis's thread busy, so the background work waits
    assert started.wait(10)
    with background_held_back():
        dropped = answers.ask(analysis, ("ahead",), lambda: "first", background=True)
        answers.drop(analysis, ("ahead",))
        again = answers.ask(analysis, ("ahead",), lambda: "second")
        release.set()
        assert dropped.cancelled() and again.result(10) == "second"
    busy.result(10)
