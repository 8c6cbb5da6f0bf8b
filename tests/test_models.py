"""The shipped model loads offline and completes a FIM prompt."""

from fimlsp.training.tokenizer import SPECIAL_TOKENS


def test_shipped_model_loads_offline_and_completes_a_fim_prompt(monkeypatch):
    import torch

    from fimlsp.decoding import DecodingOptions, complete_middle
    from fimlsp.model import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    torch.set_num_threads(1)
    left = "import os\n\n\ndef read_lines(path):\n    with open(path) as handle:\n        return handle."
    right = "\n\n\ndef main():\n    print(read_lines(os.environ['FILE']))\n"
    completion = complete_middle(load_model(), left, right, DecodingOptions(mode="unconstrained", max_tokens=24))
    assert completion.middle and not any(token in completion.middle for token in SPECIAL_TOKENS)
