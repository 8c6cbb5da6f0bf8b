"""The GGUF engine's threads: a prompt's batch runs on as many threads as each token, not on every logical CPU
(llama-cpp-python's default), whose threads wait on each other on a busy machine; the log-probabilities do not
depend on the thread count."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from fimlsp.model.llama_engine import default_threads, load_gguf  # noqa: E402
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
