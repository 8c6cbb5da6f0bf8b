"""Token bytes of both vocabulary kinds, and characters that bytes can still become (`fimlsp.model.token_text`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fimlsp.model.token_text import completions_of, split_utf8, token_bytes


class _Tokenizer(SimpleNamespace):
    """The parts of a `transformers` tokenizer that `token_bytes` reads."""

    def __len__(self):
        return len(self.get_vocab())


def test_sentencepiece_tokens_spell_spaces_and_raw_bytes():
    vocabulary = {"<s>": 0, "</s>": 1, "▁def": 2, "<0x0A>": 3, "<0xE2>": 4, "x▁y": 5, "Ġ": 6}
    backend = SimpleNamespace(pre_tokenizer="Metaspace(replacement='▁')", decoder="ByteFallback()")
    tokenizer = _Tokenizer(get_vocab=lambda: vocabulary, all_special_tokens=["<s>", "</s>"],
                           backend_tokenizer=backend, added_tokens_decoder={})
    assert token_bytes(tokenizer) == [None, None, b" def", b"\n", b"\xe2", b"x y", "Ġ".encode()]


def test_byte_level_tokens_map_stand_ins_back_to_bytes():
    vocabulary = {"Ġdef": 0, "<|endoftext|>": 1, "Ċ": 2, "Ã©": 3, "<added token>": 4, "Ġ": 5}
    tokenizer = _Tokenizer(get_vocab=lambda: vocabulary, all_special_tokens=["<|endoftext|>"],
                           added_tokens_decoder={})
    assert token_bytes(tokenizer) == [b" def", None, b"\n", "é".encode(), b"<added token>", b" "]


def test_split_utf8_keeps_an_unfinished_character_pending():
    assert split_utf8("aé".encode()[:-1]) == ("a", b"\xc3")
    assert split_utf8(b"\xc3\xa9b") == ("éb", b"")
    assert split_utf8(b"\xff") is None


@pytest.mark.parametrize("pending", [b"\xc3", b"\xe0", b"\xe2\x80", b"\xf0\x9f", b"\xf0\x9f\x98"])
def test_completions_of_an_unfinished_character_start_with_its_bytes(pending):
    chars = completions_of(pending)
    assert chars and all(char.encode("utf-8").startswith(pending) and len(char) == 1 for char in chars)


def test_completions_of_a_range_with_letters_and_symbols_give_both():
    chars = completions_of(b"\xc3")  # U+00C0 to U+00FF: letters and the signs × and ÷
    assert any(char.isidentifier() for char in chars) and any(not ("x" + char).isidentifier() for char in chars)
