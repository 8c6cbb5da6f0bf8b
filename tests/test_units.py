"""Units without a model: FIM format detection, token bytes of both vocabulary kinds, the server's caches."""

from types import SimpleNamespace

import pytest

from fimlsp.language import FILE, named
from fimlsp.model.formats import detect_format
from fimlsp.model.token_text import completions_of, split_utf8, token_bytes
from fimlsp.server.cache import Recognizers, Suggestion, Suggestions

STARCODER = {"<fim_prefix>": 0, "<fim_suffix>": 1, "<fim_middle>": 2, "<|endoftext|>": 3}


def test_detect_format_by_control_tokens_and_then_by_name():
    assert detect_format(STARCODER, "bigcode/starcoderbase-1b").name == "starcoder"
    assert detect_format(STARCODER, "", "gpt_bigcode").name == "starcoder"
    assert detect_format(STARCODER, "fimlsp/models/default").name == "fimlsp"
    assert detect_format(STARCODER, "unknown").name == "fimlsp"  # the first format with these controls
    assert detect_format({"<PRE>", "<SUF>", "<MID>"}, "", "llama").name == "codellama"
    assert detect_format({"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"}).name == "deepseek"
    assert detect_format({"<fim_prefix>", "<fim_suffix>"}, "bigcode/starcoder") is None


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


def test_recognizers_reuse_extend_and_rebuild_promises():
    python = named("python")
    cache = Recognizers(keep=2)
    left, right = "total = valu", " + 1\n"
    built, how = cache.guarantee("a", left, right, 10_000, None, python)
    assert how == "built" and built.scope == FILE
    assert cache.guarantee("a", left, right, 10_000, None, python) == (built, "reused")
    extended, how = cache.guarantee("a", left + "e", right, 10_000, None, python)
    assert how == "extended" and extended.state.feed("").complete
    assert cache.guarantee("a", left + "e)", right, 10_000, None, python)[1] == "built"  # typing broke it
    assert cache.guarantee("a", left, right + "\n", 10_000, None, python)[1] == "built"  # another right context
    assert cache.guarantee("b", left, right, 10_000, None, python)[1] == "built"  # per document
    cache.forget("a")
    assert cache.guarantee("a", left, right + "\n", 10_000, None, python)[1] == "built"


def test_suggestions_serve_the_rest_of_a_middle_whose_start_was_typed():
    suggestions = Suggestions()
    suggestions.remember("a", "x = ", Suggestion("compute(1)", "checked: the file parses"), "\n", False)
    assert suggestions.lookup("a", "x = comp", "\n", False) == Suggestion("ute(1)", "checked: the file parses")
    assert suggestions.lookup("a", "x = ", "\n", False) == Suggestion("compute(1)", "checked: the file parses")
    assert suggestions.lookup("a", "x = compute(1)", "\n", False) is None  # all of it typed
    assert suggestions.lookup("a", "x = cax", "\n", False) is None
    assert suggestions.lookup("a", "x = comp", "\n\n", False) is None
    assert suggestions.lookup("a", "x = comp", "\n", True) is None
    assert suggestions.lookup("b", "x = comp", "\n", False) is None
    suggestions.forget("a")
    assert suggestions.lookup("a", "x = comp", "\n", False) is None


def test_read_named_keeps_the_files_that_parse(tmp_path):
    from fimlsp.evaluation.dataset import read_named

    (tmp_path / "good.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    named_paths = [("good.py", tmp_path / "good.py"), ("broken.py", tmp_path / "broken.py"),
                   ("missing.py", tmp_path / "missing.py")]
    assert read_named(named_paths) == [("good.py", "x = 1\n")]
    assert read_named(named_paths, max_chars=3) == []


@pytest.mark.parametrize("pending", [b"\xc3", b"\xe0", b"\xe2\x80", b"\xf0\x9f", b"\xf0\x9f\x98"])
def test_completions_of_an_unfinished_character_start_with_its_bytes(pending):
    chars = completions_of(pending)
    assert chars and all(char.encode("utf-8").startswith(pending) and len(char) == 1 for char in chars)


def test_completions_of_a_range_with_letters_and_symbols_give_both():
    chars = completions_of(b"\xc3")  # U+00C0 to U+00FF: letters and the signs × and ÷
    assert any(char.isidentifier() for char in chars) and any(not ("x" + char).isidentifier() for char in chars)


def test_the_server_says_why_a_middle_that_looped_has_no_valid_end():
    from fimlsp.server.completion import _why_invalid
    from fimlsp.server.config import Settings

    looped = SimpleNamespace(stop="loop", loop_chars=18, tokens=5, refusal="", unchecked=False)
    assert _why_invalid(looped, Settings()) == (
        "the model fell into a loop (18 characters cut) and no valid end was found before it")
    refused = SimpleNamespace(stop="no_candidate", loop_chars=0, tokens=3, unchecked=False,
                              refusal="after 'x' (1 characters into the middle)")
    assert _why_invalid(refused, Settings()).endswith(": after 'x' (1 characters into the middle)")
