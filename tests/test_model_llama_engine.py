"""The GGUF engine (`fimlsp.model.llama_engine`). Its threads: a prompt's batch runs on as many threads as each
token, not on every logical CPU (llama-cpp-python's default), whose threads wait on each other on a busy machine;
the log-probabilities do not depend on the thread count. Its measured prompt speed counts the tokens a pass
evaluated, not those the cache held from the last prompt."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from fimlsp.model.llama_engine import PROMPT_CHUNK, default_threads, load_gguf  # noqa: E402
from fimlsp.weights import default_gguf_path  # noqa: E402

PROMPT = "def area(width, height):\n    return width * height\n\n\n" * 4 + "total = "


def test_a_prompt_batch_runs_on_as_many_threads_as_a_token(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    model = load_gguf(default_gguf_path())
    try:
        assert model.llama.n_threads_batch == model.llama.n_threads == default_threads()
    finally:
        model.close()


def test_threads_given_or_from_omp_num_threads_are_used_for_both(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    model = load_gguf(default_gguf_path())
    try:
        assert (model.llama.n_threads, model.llama.n_threads_batch) == (3, 3)
    finally:
        model.close()


def test_the_thread_count_does_not_change_the_log_probabilities(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    results = []
    for threads in (1, 2):
        model = load_gguf(default_gguf_path(), threads=threads)
        try:
            ids = model.encode(PROMPT)
            results.append(np.stack([model.log_probs_after(ids[:end]) for end in (len(ids) // 2, len(ids))]))
        finally:
            model.close()
    np.testing.assert_array_equal(*results)


@pytest.fixture
def timed_model():
    """The shipped GGUF, with the prompt passes `timed_prompt` records (tokens, seconds)."""
    model = load_gguf(default_gguf_path())
    model.timings = []
    record = model.timed_prompt
    model.timed_prompt = lambda tokens, seconds: (model.timings.append(tokens), record(tokens, seconds))
    yield model
    model.close()


def test_a_prompt_is_timed_by_the_tokens_it_evaluated_not_those_the_cache_held(timed_model):
    ids = timed_model.encode(PROMPT * 3)
    typed = timed_model.encode(PROMPT * 3 + "width")
    assert typed[:len(ids) - 1] == ids[:-1]
    first = timed_model.prompt_pass(ids)
    again = timed_model.prompt_pass(typed)
    common = next(index for index, (old, new) in enumerate(zip(ids, typed)) if old != new)
    assert (first.evaluated, again.evaluated) == (len(ids), len(typed) - common)
    assert timed_model.timings == [len(ids), len(typed) - common]
    cached = timed_model.prompt_pass(typed)  # all held: only the last token is evaluated again, for its logits
    assert cached.evaluated == 1 and timed_model.timings[-1] == 1


def test_a_prompt_read_in_chunks_is_timed_by_all_the_tokens_it_evaluated(timed_model):
    ids = timed_model.encode(PROMPT * 3)
    assert len(ids) > 3 * PROMPT_CHUNK
    read = timed_model.prompt_pass(ids, deadline=SimpleNamespace(stopped=lambda: False))
    assert read.evaluated == len(ids) and timed_model.timings == [len(ids)]
