"""Bits per byte of model folders on the benchmarks' packages: code that no model of the project was trained on
(`fimlsp.training.corpus.BENCHMARK_PACKAGES`), so the one figure that compares models with other tokenizers and
other held-out splits on the same text.

Each file is predicted from an end of sequence in windows of the model's context (`heldout_loss`, as a model's
own evaluation does); the files are the packages' modules of at least 2,000 characters in a seeded order, up
to --bytes.

    PYTHONPATH=. python benchmarks/package_bits.py fimlsp/weights/default OTHER_MODEL_DIR [--bytes 400000]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from fimlsp.training.corpus import BENCHMARK_PACKAGES
from fimlsp.training.evaluate import heldout_loss, load_model
from fimlsp.training.tokenizer import load_tokenizer
from harness.corpus import package_files

MIN_FILE_CHARS = 2000


def package_texts(seed: int) -> list[str]:
    """The installed benchmark packages' modules, shuffled by the seed (the same list for every model)."""
    texts = [text for package in sorted(BENCHMARK_PACKAGES) for _path, text in package_files(package, 10**9)
             if len(text) >= MIN_FILE_CHARS]
    random.Random(seed).shuffle(texts)
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path, help="model folders (safetensors and tokenizer)")
    parser.add_argument("--bytes", type=int, default=400_000, help="bytes of source predicted per model")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    texts = package_texts(args.seed)
    if not texts:
        raise SystemExit(f"none of the benchmarks' packages is installed ({', '.join(sorted(BENCHMARK_PACKAGES))}):"
                         " pip install -e '.[test]'")
    print("| model | files | bytes | tokens | loss (nats/token) | bits per byte |")
    print("|---|---|---|---|---|---|")
    for folder in args.models:
        model = load_model(folder, torch.device("cpu"))
        figures = heldout_loss(model, load_tokenizer(folder), texts, model.config.n_positions, args.bytes)
        print(f"| {folder} | {figures['files']} | {figures['bytes']:,} | {figures['tokens']:,} | "
              f"{figures['loss']:.4f} | {figures['bits_per_byte']:.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
