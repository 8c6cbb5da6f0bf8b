"""The cycle collector paused (`fimlsp.collector`): pauses from several threads overlap, and the one switch the
process has must stay off until the last ends (a syntax tree converted with the collector on can fail, see
`fimlsp.syntax_trees`)."""

from __future__ import annotations

import gc
import threading

import pytest

from fimlsp.collector import collector_paused


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
