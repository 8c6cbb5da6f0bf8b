"""Syntax trees built one conversion at a time (`fimlsp.syntax_trees`): CPython 3.11 raises SystemError from
`ast.parse` when another thread's conversion interleaves with it (gh-106905), which is no verdict on the text.
On those versions every `ast.parse` in the process, fimlsp's, its libraries' (pyflakes, jedi) and the program's
around it (a test runner's report), runs alone with the collector paused; a parse that something going round the
guard interleaved with is tried again."""

from __future__ import annotations

import ast
import gc
import threading
import time

import pytest

from fimlsp import syntax_trees
from fimlsp.python.analysis import judges_jedi
from fimlsp.python.names import undefined_names
from fimlsp.syntax_trees import CONVERTING, TreeNotBuilt, parsed

# Many tuples: the conversion of this file's tree allocates enough objects for the collector to run inside it.
MANY_NODES = "x = [" + "(1, 2), " * 5000 + "]\n"


def racing(monkeypatch, failures: int) -> list[int]:
    """`ast.parse` raising SystemError as under the race for its first `failures` calls; the calls are counted."""
    calls, parse = [], ast.parse

    def racing_parse(source, *args, **kwargs):
        calls.append(1)
        if len(calls) <= failures:
            raise SystemError("AST constructor recursion depth mismatch (before=36, after=301)")
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(syntax_trees.ast, "parse", racing_parse)
    return calls


def _converted_while_a_collection_runs_another(parse):
    """`parse(MANY_NODES)`, with a collection that happens inside it running a conversion in another thread (what a
    finalizer that hands the interpreter's lock over does): the result or the error, and the other's trees."""
    converter, others = threading.current_thread(), []

    def convert_elsewhere(phase, _info):
        if phase == "start" and threading.current_thread() is converter and not others:
            other = threading.Thread(target=lambda: others.append(ast.parse("y = [(1, 2)]\n")))
            other.start()
            other.join()

    gc.callbacks.append(convert_elsewhere)
    try:
        return parse(MANY_NODES), others
    except SystemError as error:
        return error, others
    finally:
        gc.callbacks.remove(convert_elsewhere)


racing_versions_only = pytest.mark.skipif(not syntax_trees.CONVERSIONS_RACE,
                                          reason="this CPython converts each tree on its own count (gh-106905 fixed)")


@racing_versions_only
@pytest.mark.parametrize("parse", [parsed, ast.parse], ids=["fimlsp's", "anyone's"])
def test_a_collection_inside_a_conversion_runs_no_other_conversion_in_it(parse):
    """The race itself, made certain: CPython's own parse lets a collection inside its conversion run another
    thread's (on 3.11 it then fails); fimlsp's parse and, once fimlsp is loaded, `ast.parse` itself (what pytest's
    report of a failure calls on the main thread) pause the collector, so the tree is built."""
    unguarded = ast.parse.__wrapped__
    _result, others = _converted_while_a_collection_runs_another(unguarded)
    assert others, "no collection ran inside CPython's own conversion: the test no longer reproduces the race"
    tree, _others = _converted_while_a_collection_runs_another(parse)
    assert isinstance(tree, ast.Module) and len(tree.body[0].value.elts) == 5000


@racing_versions_only
def test_a_parse_waits_for_a_conversion_another_thread_has_begun():
    """A thread's `ast.parse` does not start while fimlsp's thread holds the conversion (`CONVERTING`)."""
    started, done = threading.Event(), threading.Event()

    def parse_elsewhere():
        started.set()
        ast.parse("z = 3\n")
        done.set()

    with CONVERTING:
        other = threading.Thread(target=parse_elsewhere)
        other.start()
        started.wait()
        assert not done.wait(0.05)
    other.join()
    assert done.is_set()


def test_the_collector_runs_again_after_a_parse_and_stays_off_where_it_was():
    assert gc.isenabled()
    parsed("x = 1\n")
    assert gc.isenabled()
    gc.disable()
    try:
        parsed("x = 1\n")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_parse_that_lost_the_race_is_tried_again(monkeypatch):
    calls = racing(monkeypatch, failures=2)
    assert isinstance(parsed("y = 2\n"), ast.Module) and len(calls) == 3


def test_a_parse_that_keeps_losing_is_no_tree_not_a_crash(monkeypatch):
    racing(monkeypatch, failures=10)
    with pytest.raises(TreeNotBuilt):
        parsed("x = 1\n")
    assert gc.isenabled()


def test_fimlsp_s_threads_build_syntax_trees_one_at_a_time(monkeypatch):
    """A parse waits for another thread's (the lock `CONVERTING`): ours never interleave, so never race."""
    inside, most, parse = [], [], ast.parse

    def slow_parse(source, *args, **kwargs):
        inside.append(1)
        most.append(len(inside))
        time.sleep(0.02)  # the interpreter's lock is free meanwhile: another thread could start its own
        inside.pop()
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(syntax_trees.ast, "parse", slow_parse)
    threads = [threading.Thread(target=parsed, args=(f"x = {n}\n",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(most) == 4 and max(most) == 1


def _held_by_the_caller() -> bool:
    """Whether the conversion lock is held (by the thread asking): another thread cannot take it."""
    taken = []

    def take():
        taken.append(CONVERTING.acquire(blocking=False))
        if taken[0]:
            CONVERTING.release()

    probe = threading.Thread(target=take)
    probe.start()
    probe.join()
    return not taken[0]


def _parses_recorded(monkeypatch) -> list[tuple[str, bool]]:
    """Every tree `ast.parse` builds from now on: its text and whether it was built alone (the conversion lock held,
    the collector paused)."""
    recorded = []

    def recording_compile(source, *args, **kwargs):
        recorded.append((source, _held_by_the_caller() and not gc.isenabled()))
        return compile(source, *args, **kwargs)

    monkeypatch.setattr(ast, "compile", recording_compile, raising=False)
    return recorded


@racing_versions_only
def test_pyflakes_parses_a_string_annotation_alone(monkeypatch):
    tree_text = "def f(x: 'Missing') -> None:\n    pass\n"
    recorded = _parses_recorded(monkeypatch)
    assert undefined_names(tree_text) == {"Missing"}
    assert ("Missing", True) in recorded and all(held for _source, held in recorded)


@racing_versions_only
def test_jedi_reads_a_docstring_alone(monkeypatch):
    jedi = judges_jedi()
    recorded = _parses_recorded(monkeypatch)
    [definition] = jedi.Script("def f():\n    'Says why.'\n\n\nf\n").infer(5, 0)
    assert "Says why." in definition.docstring()
    assert ("'Says why.'", True) in recorded and all(held for _source, held in recorded)
