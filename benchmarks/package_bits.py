"""Bits per byte of model folders on the benchmarks' packages: code that no model of the project was trained on
(`fimlsp.training.corpus.BENCHMARK_PACKAGES`), so the one figure that compares models with other tokenizers and
other held-out splits on the same text.

Each file is predicted from an end of sequence in windows of the model's context (`heldout_loss`, as a model's
own evaluation does); the files are the packages' modules of at least 2 kB in a seeded order, up to --bytes.

    python benchmarks/package_bits.py fimlsp/weights/default OTHER_MODEL_DIR [--bytes 400000]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
from pathlib import Path

from fimlsp.training.corpus import BENCHMARK_PACKAGES
from fimlsp.training.evaluate import heldout_loss, load_model
from fimlsp.training.tokenizer import load_tokenizer

MIN_FILE_BYTES = 2000


def package_files(seed: int) -> list[Path]:
    """The installed benchmark packages' modules, shuffled by the seed (the same list for every model)."""
    files = []
    for package in sorted(BENCHMARK_PACKAGES):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            files += sorted(path for path in Path(location).rglob("*.py") if path.stat().st_size >= MIN_FILE_BYTES)
    random.Random(seed).shuffle(files)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path, help="model folders (safetensors and tokenizer)")
    parser.add_argument("--bytes", type=int, default=400_000, help="bytes of source predicted per model")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    files = package_files(args.seed)
    if not files:
        raise SystemExit(f"none of the benchmarks' packages is installed ({', '.join(sorted(BENCHMARK_PACKAGES))}):"
                         " pip install -e '.[test]'")
    texts = [path.read_text(encoding="utf-8") for path in files]
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
