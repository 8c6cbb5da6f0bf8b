"""The byte-level BPE tokenizer: text round-trips exactly and the FIM control tokens are atomic."""

import pytest

from fimlsp.training.tokenizer import EOS, FIM_MIDDLE, FIM_PAD, FIM_PREFIX, FIM_SUFFIX, SPECIAL_TOKENS
from tests.training_fixtures import sample_root, tokenizer  # noqa: F401, F811 (pytest fixtures)


@pytest.mark.parametrize("text", [
    "def naïve(x):\n\treturn x  # ok\r\n",
    "s = '日本語 ✓ 🐍 Ω'\n    \n\n\n",
    "x = \"<fim_middle> and <|endoftext|> inside a string\"\n",
    "   leading spaces and trailing   ",
])
def test_tokenizer_round_trips_text_exactly(tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    assert tokenizer.decode(ids, clean_up_tokenization_spaces=False) == text
    assert not set(ids) & {tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}


def test_special_tokens_are_atomic_and_numbered_like_starcoder(tokenizer):
    assert [tokenizer.convert_tokens_to_ids(t) for t in (EOS, FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, FIM_PAD)] == [0, 1, 2, 3, 4]
    prompt = f"{FIM_PREFIX}def f():{FIM_SUFFIX}\n{FIM_MIDDLE}"
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert ids[0] == 1 and ids[-1] == 2 and ids.count(3) == 1
    assert tokenizer.eos_token == EOS and tokenizer.eos_token_id == 0
    assert len(tokenizer) == 600
