"""Shared fixtures."""

import pytest

# Loaded before any test: the test process's own syntax trees (pytest's reports of failures on the main thread) are
# built alone too while fimlsp's threads build theirs (CPython 3.11's gh-106905, see the module)
import fimlsp.syntax_trees  # noqa: F401


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A randomly initialised 2-layer, 64-dim GPTBigCode model with the shipped tokenizer, for fast tests."""
    import torch

    from harness.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def tiny(tiny_model_path):
    """The tiny model loaded on the CPU, once per test module."""
    from fimlsp.model import load_model

    return load_model(tiny_model_path, "cpu")


@pytest.fixture
def python_with(request):
    """Python registered again under another name with other text facts (`Language.blanks`, `closers`,
    `line_closers`): decoding must take them from the language it decodes for, not from a list of its own."""
    from fimlsp import language
    from fimlsp.python.language import Python

    facts = type("PythonWithOtherFacts", (Python,), {"name": "python-other-facts", **request.param})
    yield language.register(facts()).name
    language.unregister(facts.name)


@pytest.fixture(scope="session")
def middle_verdict():
    """What a recognizer state makes of `middle` fed a character at a time (any token may end mid-name):
    "refused" (a character refused), "incomplete" (every character fed, the end refused) or "complete"."""
    def verdict(state, middle: str) -> str:
        for char in middle:
            state = state.feed(char)
            if state is None:
                return "refused"
        return "complete" if state.complete else "incomplete"
    return verdict


@pytest.fixture(scope="session")
def names_judged(middle_verdict):
    """The recognizer's verdict on `middle` between `left` and `right` with the name judge on."""
    from fimlsp.python.names import FileNames
    from fimlsp.python.quotient import quotient

    def judged(left: str, middle: str, right: str) -> str:
        return middle_verdict(quotient(left, right).judging_names(FileNames.of(left, right)), middle)
    return judged
