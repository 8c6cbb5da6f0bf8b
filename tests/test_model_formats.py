"""The FIM prompt formats, declared as data, and how a model's format is found (`fimlsp.model.formats`)."""

from __future__ import annotations

from fimlsp.model.formats import FORMATS, detect_format

STARCODER = {"<fim_prefix>": 0, "<fim_suffix>": 1, "<fim_middle>": 2, "<|endoftext|>": 3}


def test_every_format_has_psm_and_its_controls():
    for fmt in FORMATS.values():
        assert "psm" in fmt.orders
        for pieces in fmt.templates.values():
            assert all(control in pieces for control in fmt.controls)


def test_detect_format_by_control_tokens_and_then_by_name():
    assert detect_format(STARCODER, "bigcode/starcoderbase-1b").name == "starcoder"
    assert detect_format(STARCODER, "", "gpt_bigcode").name == "starcoder"
    assert detect_format(STARCODER, "fimlsp/weights/default").name == "fimlsp"
    assert detect_format(STARCODER, "unknown").name == "fimlsp"  # the first format with these controls
    assert detect_format({"<PRE>", "<SUF>", "<MID>"}, "", "llama").name == "codellama"
    assert detect_format({"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"}).name == "deepseek"
    assert detect_format({"<fim_prefix>", "<fim_suffix>"}, "bigcode/starcoder") is None
