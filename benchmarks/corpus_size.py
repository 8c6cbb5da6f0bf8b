"""Held-out loss against corpus size at a fixed token budget: does more unique code beat more passes?

Trains one small model per training-corpus size with `fimlsp train` (the same options but `--max-train-mb`, so the
same token budget), then reads each export's held-out loss and measures, with the same function, its loss on the
first training files (the same files in every run: a smaller corpus is the start of a larger one in the seeded
order). The gap between the two shows memorisation.

The runs share one scan of the corpus roots and one tokenizer, written into each run folder before `fimlsp train`
starts, which then reuses them: the manifests are what `build_corpus` gives for each size, and the tokenizer is
trained on the first `--tokenizer-mb` of training files, which this script checks are the same files for every
size (so each run would have built the same tokenizer itself). It also checks that the held-out files are the same.

    OMP_NUM_THREADS=1 python -m benchmarks.corpus_size --output runs/corpus-size --sizes 1,2,4,8 --tokens 2600000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fimlsp.corpus_manifest import load_manifest, resolve_files
from fimlsp.model.folder import EVALUATION, TRAINING_RECORD
from fimlsp.training import corpus as corpus_module
from fimlsp.training import prepare as preparation
from fimlsp.training.options import RunControl, TrainOptions
from fimlsp.training.run_folder import MANIFEST, TOKENIZER_DIR, Run

SMALL_MODEL = ["--vocab-size", "4096", "--n-layer", "2", "--n-embd", "128", "--n-head", "4", "--seq-len", "256",
               "--batch-size", "16", "--lr", "0.002", "--warmup-steps", "50", "--precision", "fp32"]
CONTROL = ["--threads", "1", "--data-workers", "0", "--eval-cases", "0", "--no-progress",
           "--checkpoint-every", "100000"]


def size_flags(size: float, tokens: int, tokenizer_mb: float) -> list[str]:
    return [*SMALL_MODEL, "--tokenizer-mb", str(tokenizer_mb), "--max-train-mb", f"{size:g}", "--tokens", str(tokens)]


def options_of(flags: list[str]) -> TrainOptions:
    from fimlsp.commands.train import add_arguments, options_from

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return options_from(parser.parse_args(flags))


def prepare(output: Path, sizes: list[float], tokens: int, tokenizer_mb: float) -> None:
    """Write each size's manifest (from one scan of the roots) and the shared tokenizer into its run folder."""
    roots = corpus_module.default_roots()
    candidates = list(corpus_module.iter_candidates(roots, int(TrainOptions.max_file_kb * 1e3)))
    scan = corpus_module.iter_candidates
    corpus_module.iter_candidates = lambda _roots, _max_bytes: iter(candidates)
    try:
        manifests, tokenizer_texts = {}, {}
        for size in sizes:
            options = options_of(size_flags(size, tokens, tokenizer_mb))
            run = Run.of(options, RunControl(output=output / f"{size:g}mb", export=output / f"{size:g}mb/model",
                                             roots=roots))
            preparation.check_options(run)
            manifests[size] = preparation.manifest(run)
            tokenizer_texts[size] = tuple(preparation.tokenizer_texts(run))
    finally:
        corpus_module.iter_candidates = scan
    heldout = {size: [row[0] for row in manifest["heldout"]] for size, manifest in manifests.items()}
    assert len({tuple(names) for names in heldout.values()}) == 1, "held-out files differ between sizes"
    assert len(set(tokenizer_texts.values())) == 1, "tokenizer files differ between sizes"
    first = sizes[0]
    shared = Run.of(options_of(size_flags(first, tokens, tokenizer_mb)),
                    RunControl(output=output / f"{first:g}mb", export=output / f"{first:g}mb/model", roots=roots))
    tokenizer = preparation.tokenizer(shared)
    for size in sizes[1:]:
        target = output / f"{size:g}mb" / TOKENIZER_DIR
        if not target.exists():
            shutil.copytree(output / f"{first:g}mb" / TOKENIZER_DIR, target)
    sample = "".join(path.read_text(encoding="utf-8")
                     for _name, path in resolve_files(manifests[first], "train")[0][:200])
    for size, manifest in manifests.items():
        print(f"{size:g} MB: {manifest['train_files']} train files, {manifest['train_bytes'] / 1e6:.2f} MB; "
              f"{manifest['heldout_files']} held-out files, {manifest['heldout_bytes'] / 1e6:.2f} MB", flush=True)
    print(f"bytes per token (first 200 training files): "
          f"{len(sample.encode()) / len(tokenizer(sample)['input_ids']):.2f}", flush=True)


def train_loss(model_dir: Path, manifest: dict, max_bytes: int) -> dict:
    """The held-out measure applied to the first training files (the same files in every run)."""
    import torch

    from fimlsp.training.evaluate import heldout_loss, load_model
    from fimlsp.training.tokenizer import load_tokenizer

    torch.set_num_threads(1)
    model = load_model(model_dir, torch.device("cpu"))
    texts = (path.read_text(encoding="utf-8") for _name, path in resolve_files(manifest, "train")[0])
    return heldout_loss(model, load_tokenizer(model_dir), texts, model.config.n_positions, max_bytes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("runs/corpus-size"))
    parser.add_argument("--sizes", default="1,2,4,8", help="training corpus sizes in MB, comma-separated")
    parser.add_argument("--tokens", type=int, default=2_600_000)
    parser.add_argument("--tokenizer-mb", type=float, default=0.5)
    parser.add_argument("--eval-bytes", type=int, default=500_000)
    parser.add_argument("--prepare-only", action="store_true")
    args = parser.parse_args()
    sizes = [float(size) for size in args.sizes.split(",")]
    prepare(args.output, sizes, args.tokens, args.tokenizer_mb)
    if args.prepare_only:
        return 0
    rows = []
    for size in sizes:
        folder = args.output / f"{size:g}mb"
        command = [sys.executable, "-m", "fimlsp", "train", "--output", str(folder), *CONTROL,
                   "--eval-bytes", str(args.eval_bytes), *size_flags(size, args.tokens, args.tokenizer_mb)]
        print("$", " ".join(command[1:]), flush=True)
        started = time.monotonic()
        subprocess.run(command, check=True)
        wall = time.monotonic() - started
        model = folder / "model"
        record = json.loads((model / TRAINING_RECORD).read_text())
        heldout = json.loads((model / EVALUATION).read_text())["heldout"]
        manifest = load_manifest(folder / MANIFEST)
        seen = train_loss(model, manifest, args.eval_bytes)
        row = {"size_mb": size, "train_bytes": manifest["train_bytes"], "tokens_seen": record["tokens_seen"],
               "train_seconds": record["train_seconds"], "wall_seconds": round(wall, 1),
               "final_fim_loss": record["final_loss"], "heldout_loss": heldout["loss"],
               "heldout_bpb": heldout["bits_per_byte"], "train_files_loss": seen["loss"],
               "train_files_bpb": seen["bits_per_byte"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
        with (args.output / "results.jsonl").open("a", encoding="utf-8") as results:
            results.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
