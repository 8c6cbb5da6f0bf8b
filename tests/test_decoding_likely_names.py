"""The file's own names weighed against the model's after a dot (`fimlsp.decoding.likely_names`,
`Members.likely`): a member the file writes after the same receiver, often and near the cursor, outranks one the
model prefers, in proportion to `member_usage`; the row stays a distribution; off the member judge nothing
changes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fimlsp.decoding import DecodingOptions, complete_middle, complete_middles
from fimlsp.decoding.likely_names import weighed
from fimlsp.python.analysis import analysis_for
from fimlsp.python.member_lists import member_lists
from fimlsp.python.members import MemberSource
from fimlsp.python.quotient import quotient
from tests.decoding_fixtures import branching

POOL = """import threading


class Pool:
    def __init__(self):
        self.closed = False
        self.lock = threading.Lock()

    def acquire(self):
        with self.lock:
            return self.lock.locked()

    def release(self):
        self.lock.release()

    def close(self):
        return self."""


def _likely(left: str, right: str = "\n", middle: str = ""):
    state = quotient(left, right).judging_members(MemberSource(analysis_for(None), left, right, seconds=None))
    for char in middle:
        state = state.feed(char)
    return state.likely_names()


AT_LINE_START = POOL.removesuffix("return self.") + "self."  # no use follows a token the cursor's chain follows


def test_after_a_dot_the_names_the_file_writes_after_the_receiver_are_likely_by_how_often():
    begun, likely = _likely(AT_LINE_START)
    assert begun == "" and set(likely) == {"lock", "closed"} and likely["lock"] > 2 * likely["closed"]
    assert _likely(AT_LINE_START, middle="lo")[0] == "lo" and set(_likely(AT_LINE_START, middle="lo")[1]) == {"lock"}
    assert set(_likely(AT_LINE_START, middle="lock")[1]) == {"lock"}  # written whole: it may end here
    assert set(_likely(AT_LINE_START, middle="lock.")[1]) == {"locked", "release"}


def test_the_uses_that_follow_the_most_of_the_tokens_the_chain_follows_are_the_likely_ones():
    """After `return self.` the file writes `self.lock` (`return self.lock.locked()`); after `return self.lock.`,
    `locked`: the names it writes after other tokens (`self.closed = False`, `self.lock.release()`) fall back."""
    begun, likely = _likely(POOL)
    assert begun == "" and set(likely) == {"lock"}
    assert set(_likely(POOL, middle="lock.")[1]) == {"locked"}
    assert set(_likely(POOL, middle="c")[1]) == {"closed"}  # what the name begun leaves: backed off to fewer tokens


def test_the_chain_s_context_is_what_the_middle_writes_before_it_on_its_logical_line():
    """The middle writes `with self.`: only `with self.lock` follows `with`. Then `return (` and a line break in the
    bracket, which ends no logical line: the chain follows `return (`, which no use shares the end of (`return
    self.lock.locked()` ends in `return`), so every use counts."""
    left = AT_LINE_START.removesuffix("self.")
    assert set(_likely(left, middle="with self.")[1]) == {"lock"}
    assert set(_likely(left, middle="return (\n            self.")[1]) == {"lock", "closed"}


def test_a_use_near_the_cursor_counts_more_than_uses_far_from_it():
    far = "class Far:\n    def a(self):\n        self.far()\n        self.far()\n" + "\n" * 100
    left = far + "    def b(self):\n        self.near()\n        return self."
    likely = _likely(left)[1]
    assert likely["near"] > likely["far"] > 0


def test_a_name_a_comment_writes_after_the_receiver_is_no_use_of_it():
    """diskcache's persistent.py: `# Like self._cache.swap(key1, key2, retry=True)` just above the cursor made `swap`,
    no member of the Cache, the likeliest name after `self._cache.` (whose type jedi does not infer: not judged)."""
    left = ("def drain(cache):\n    cache.pull()\n    # Like cache.swap(), or '#' cache.halt()\n"
            "    x = '#' + cache.peek()\n    return cache.")
    assert set(_likely(left)[1]) == {"pull", "peek"}  # a `#` in a string before a use is no comment


def test_the_name_begun_at_the_cursor_is_no_use_of_it_and_no_dot_means_no_likely_names():
    assert set(_likely(POOL + "clo")[1]) == {"closed"}
    assert _likely(POOL.removesuffix("self.")) is None
    assert _likely(POOL, middle="lock + ") is None


@pytest.mark.parametrize("share", [0.3, 1.0])
def test_the_row_stays_a_distribution_and_a_name_that_goes_on_gets_no_share(tiny, share):
    row = np.log(np.full(len(tiny.token_bytes), 1.0 / len(tiny.token_bytes)))
    mixed = np.exp(weighed(tiny, row, b"", "", {"lock": 4, "closed": 1}, share))
    assert mixed.sum() == pytest.approx(1.0)
    going_on = [token for token, data in enumerate(tiny.token_bytes)
                if data and data.startswith(b"lock") and len(data) > 4 and (data[4:5].isalnum() or data[4:5] == b"_")]
    writing = [token for token, data in enumerate(tiny.token_bytes) if data and b"lock".startswith(data)]
    assert writing, "the tokenizer spells lock in tokens"
    assert np.allclose(mixed[going_on], (1 - share) / len(tiny.token_bytes))
    assert all(mixed[token] > 1.0 / len(tiny.token_bytes) for token in writing)


def test_the_file_s_member_outranks_the_model_s_choice_in_proportion_to_the_share(tiny):
    """The model ranks `closed` first, `lock` second; the file writes `self.lock` four times, `self.closed` once."""
    model = branching(tiny, "closed", "lock")
    options = DecodingOptions(members="strict", token_healing=False, attempts=1, max_tokens=8)
    chosen = {share: complete_middle(model, POOL, "\n", replace(options, member_usage=share)) for share in (0.0, 0.5)}
    assert chosen[0.0].middle == "closed"
    assert chosen[0.5].middle == "lock"
    assert all(result.valid for result in chosen.values())


def test_once_written_a_completion_has_the_receivers_the_next_keystrokes_may_write_asked_ahead(tiny, tmp_path):
    """The file writes `self.lock.` twice: a keystroke later, a middle that writes `self.lock.` finds it answered
    (counted: jedi queries, the cursor's receiver and `self.lock`)."""
    options = DecodingOptions(members="strict", token_healing=False, attempts=1, max_tokens=8)
    complete_middles(branching(tiny, "closed", "lock"), POOL, "\n", options, place=(None, str(tmp_path)))
    analysis = analysis_for(None, tmp_path)
    assert analysis.jobs == 2
    member_lists(analysis).lookup(POOL, "\n", "self.lock", None, seconds=None)
    assert analysis.jobs == 2 and member_lists(analysis).queries == 2


def test_without_the_member_judge_the_model_s_choice_stands(tiny):
    model = branching(tiny, "closed", "lock")
    result = complete_middle(model, POOL, "\n", DecodingOptions(members="off", member_usage=1.0,
                                                                token_healing=False, attempts=1, max_tokens=8))
    assert result.middle == "closed"


def _single_bytes_row(tiny) -> np.ndarray:
    """A row where only the one-byte tokens are possible, all equally."""
    single = [token for token, data in enumerate(tiny.token_bytes) if data is not None and len(data) == 1]
    row = np.full(len(tiny.token_bytes), -np.inf)
    row[single] = -np.log(len(single))
    return row


def test_a_token_gets_the_share_of_its_likeliest_name_not_of_all_the_names_it_begins(tiny):
    """Summed, `_` would get three private names' share (3 of 5) and outrank `s` of the name written most."""
    likely = {"_form": 1, "_headers": 1, "_stream": 1, "scope": 2}
    mixed = np.exp(weighed(tiny, _single_bytes_row(tiny), b"", "", likely, 1.0))
    assert mixed[tiny.token_bytes.index(b"s")] == pytest.approx(2 / 3)
    assert mixed[tiny.token_bytes.index(b"_")] == pytest.approx(1 / 3)


def test_a_likely_name_written_whole_makes_its_end_likely(tiny):
    """After `process`, where the file writes `self.process` more than `self.processes`, the tokens that end the
    name (`.`, `(`, a space: the model says which) together outrank the one that goes on with it (`e`)."""
    mixed = np.exp(weighed(tiny, _single_bytes_row(tiny), b"", "process", {"process": 13, "processes": 10}, 0.9))
    ending = [token for token, data in enumerate(tiny.token_bytes)
              if data is not None and len(data) == 1 and not (data.isalnum() or data == b"_" or data[0] >= 0x80)]
    assert mixed[ending].sum() > mixed[tiny.token_bytes.index(b"e")] > mixed[tiny.token_bytes.index(b"x")]
    assert mixed.sum() == pytest.approx(1.0)
