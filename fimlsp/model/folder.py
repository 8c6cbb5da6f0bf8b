"""The files of a model folder, named once: what loading reads and the folder checks inspect, and what `fimlsp
train` writes beside them (its corpus manifest, training record, evaluation and card), so that the writer and the
readers cannot name a file two ways. Only the standard library: the folder checks import it before any torch."""

from __future__ import annotations

import json
from pathlib import Path

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"  # sharded weights (`save_pretrained` with `max_shard_size`)
# weights that unpickling would load, which can run code: never loaded
PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "model.ckpt", "model.pt")
TOKENIZER = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
FIM_SETTINGS = "fim.json"  # the format and prompt order the model was trained for

# What a model fimlsp trained holds besides: the files it was trained and held out on (by content hash), how it
# was trained, how it measured, and the card made from those; short runs that changed one option, when recorded.
CORPUS_MANIFEST = "corpus.json"
TRAINING_RECORD = "training.json"
EVALUATION = "evaluation.json"
CARD = "README.md"
ABLATION = "ablation.json"


def weight_files(folder: Path) -> list[Path]:
    """A model folder's safetensors files: `WEIGHTS`, or the shards its index names; none when it has neither or
    the index cannot be read."""
    if (folder / WEIGHTS).is_file():
        return [folder / WEIGHTS]
    try:
        index = json.loads((folder / WEIGHTS_INDEX).read_text(encoding="utf-8"))
        return [folder / name for name in sorted(set(index["weight_map"].values()))]
    except (OSError, ValueError, KeyError, AttributeError):
        return []
