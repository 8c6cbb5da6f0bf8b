"""The cycle collector paused (`fimlsp.collector`): pauses from several threads overlap, and the one switch the
process has must stay off until the last ends (a syntax tree converted with the collector on can fail, see
`fimlsp.syntax_trees`). Settled between completions: what survived one is left out of the collections of the next,
and what dies among it is reclaimed once it has grown."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from fimlsp import collector
from fimlsp.collector import collector_paused, settle


def test_one_thread_s_pause_ending_leaves_the_collector_off_under_another_s():
    first_paused, second_paused, first_ended = threading.Event(), threading.Event(), threading.Event()
    seen_after_first_ended = []

    def first():
        with collector_paused():
            first_paused.set()
            second_paused.wait()
        first_ended.set()

    def second():
        first_paused.wait()
        with collector_paused():
            second_paused.set()
            first_ended.wait()
            seen_after_first_ended.append(gc.isenabled())

    assert gc.isenabled()
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen_after_first_ended == [False]
    assert gc.isenabled()


def test_pauses_nest_and_leave_an_off_collector_off():
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_pause_ends_when_its_block_raises():
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("the block's error")
    assert gc.isenabled()


class _Node:
    pass


def _cycle() -> tuple[_Node, weakref.ref]:
    """An object in a cycle, and a reference that does not keep it alive."""
    node = _Node()
    node.itself = node
    return node, weakref.ref(node)


@pytest.fixture
def counted_at_every_settle(monkeypatch):
    monkeypatch.setattr(collector, "_COUNTED_EVERY", 1)
    monkeypatch.setattr(collector, "_frozen_after_full", None)
    settle()  # the first count is the baseline
    yield
    gc.unfreeze()


def test_what_survived_a_completion_is_left_out_of_later_collections_until_it_grows(counted_at_every_settle):
    node, cycle = _cycle()
    settle()
    del node
    gc.collect()
    assert cycle() is not None  # frozen: no collection walks it
    collector._frozen_after_full = gc.get_freeze_count() * 10  # far from grown enough
    settle()
    assert cycle() is not None


def test_cycles_that_died_among_the_frozen_objects_are_reclaimed_once_they_have_grown(counted_at_every_settle):
    node, cycle = _cycle()
    settle()
    del node
    kept = [[] for _ in range(1000)]
    collector._frozen_after_full = int(gc.get_freeze_count() / collector._GROWTH_BEFORE_FULL) - 1
    _settled_until_reclaimed(cycle)
    assert cycle() is None
    assert gc.get_freeze_count() >= len(kept)  # what is alive is frozen again


def test_no_full_collection_runs_while_another_thread_converts(counted_at_every_settle):
    node, cycle = _cycle()
    settle()
    del node
    collector._frozen_after_full = 1
    with collector_paused():
        settle()
    assert cycle() is not None
    _settled_until_reclaimed(cycle)
    assert cycle() is None


def _settled_until_reclaimed(cycle: weakref.ref) -> None:
    """Settle until `cycle` is reclaimed, a few times at most: a conversion on another thread of the process (jedi's,
    from an earlier test) defers the full collection to the next settle."""
    for _ in range(50):
        settle()
        if cycle() is None:
            return
