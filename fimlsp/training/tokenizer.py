"""Train the byte-level BPE tokenizer and save it as a `transformers` fast tokenizer.

Byte-level BPE never needs an unknown token (any byte sequence is representable), which matters for a code
model that must echo arbitrary identifiers and string literals. The FIM control tokens are special tokens, so
text can never be split into them or merge across them; their ids follow StarCoder's layout (0-4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

EOS = "<|endoftext|>"
FIM_PREFIX = "<fim_prefix>"
FIM_MIDDLE = "<fim_middle>"
FIM_SUFFIX = "<fim_suffix>"
FIM_PAD = "<fim_pad>"
SPECIAL_TOKENS = (EOS, FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, FIM_PAD)


def train_tokenizer(texts: Iterable[str], vocab_size: int, output_dir: Path):
    """Train BPE on the texts, save it under output_dir, and return the loaded `transformers` tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return save_tokenizer(tokenizer, output_dir)


def save_tokenizer(tokenizer, output_dir: Path):
    """Wrap a `tokenizers.Tokenizer` as a `transformers` fast tokenizer with the FIM specials and save it."""
    from transformers import PreTrainedTokenizerFast

    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=EOS,
        eos_token=EOS,
        unk_token=EOS,
        pad_token=FIM_PAD,
        additional_special_tokens=[FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX],
        clean_up_tokenization_spaces=False,
        model_max_length=1 << 30,
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    wrapped.save_pretrained(output_dir)
    return load_tokenizer(output_dir)


def load_tokenizer(directory: Path):
    """Load a saved tokenizer without touching the network."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory), local_files_only=True, trust_remote_code=False)


def special_token_ids(tokenizer) -> dict[str, int]:
    """The ids of the FIM control tokens and EOS, checked to be single atomic tokens."""
    ids = {}
    for token in SPECIAL_TOKENS:
        token_id = tokenizer.convert_tokens_to_ids(token)
        if token_id is None or token_id == tokenizer.unk_token_id and token != EOS:
            raise ValueError(f"tokenizer has no special token {token}")
        ids[token] = token_id
    return ids
