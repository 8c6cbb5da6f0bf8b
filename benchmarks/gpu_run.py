"""The next model's GPU run: `GPU_RECIPE` in at most nine minutes on one H100 or H200.

Three steps, so that the device's minutes go to training:

1. Here: `python -m benchmarks.gpu_run prepare` writes the run folder's options, corpus manifest (every usable
   file of this machine's Python installation but the benchmarks' packages) and tokenizer to
   `runs/gpu-carry/run`, and the manifest's files to `runs/gpu-carry/corpus.tar.xz` (the device machine has other
   Python files, and none of the project's). On the project machine: 13,067 training files (187 MB) and 366
   held-out ones, a 32 MiB archive, in 4 minutes.
2. There, as one device command that carries `runs/gpu-carry`:
   `PYTHONUNBUFFERED=1 python3 -m benchmarks.gpu_run device`
   unpacks the corpus, points the manifest at it, runs `fimlsp train` with the recipe's options, its data built
   by `--data-workers` in parts, and leaves the model in $OUT: the weights in safetensors parts of at most 15
   MiB, the rest of the folder (tokenizer, manifest, training record, card, log) in one archive, eight files at
   most, as the device tool returns them.
3. Here: `python -m benchmarks.gpu_run unpack FILES_AT runs/gpu/model` rebuilds the model folder; then
   `fimlsp evaluate-model --model runs/gpu/model --write-card` measures it on the FIM cases and rewrites its card.

The run that made `models/gpu-5m` took 297 s in all on one H200: the corpus unpacked in 6 s, 9,156 steps (278M
tokens past padding) in 211.5 s, at 1.3M tokens a second, the pace at which the 14 data workers build windows (a
model of this size takes them faster); the rest is the first part of the data, the export and the held-out loss.
`--max-minutes` ends training cleanly (export and card included) if anything runs slower.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from fimlsp.corpus_manifest import load_manifest, resolve_files
from fimlsp.model.folder import EVALUATION, TRAINING_RECORD
from fimlsp.training import corpus as corpus_module
from fimlsp.training import prepare as preparation
from fimlsp.training.lineage import option_flags
from fimlsp.training.options import RunControl, TrainOptions
from fimlsp.training.recipe import GPU_RECIPE
from fimlsp.training.run_folder import LOG, MANIFEST, RUN_OPTIONS, Run

CARRY = Path("runs/gpu-carry")
CORPUS_ARCHIVE = "corpus.tar.xz"
REST_ARCHIVE = "model-rest.tar.gz"  # everything of the model folder but its weights, and the run's log
MAX_RETURNED_FILES = 8
DEVICE_ROOT = Path("/tmp/fimlsp-gpu")


def recipe_options(changes: list[str]) -> TrainOptions:
    """The GPU recipe's one stage, with NAME=VALUE changes (a small model to try the steps on a CPU)."""
    (options,) = GPU_RECIPE
    updates = {}
    for change in changes:
        name, _, value = change.partition("=")
        if name not in dataclasses.asdict(options):
            raise SystemExit(f"--option {change}: TrainOptions has no {name}")
        updates[name] = type(getattr(options, name))(value)
    return dataclasses.replace(options, **updates)


def prepare(args: argparse.Namespace) -> None:
    options = recipe_options(args.option)
    roots = ({root.resolve().name: root.resolve() for root in args.corpus_root} if args.corpus_root
             else corpus_module.default_roots())
    folder = args.carry / "run"
    shutil.rmtree(args.carry, ignore_errors=True)
    run = Run.of(options, RunControl(output=folder, export=folder / "model", roots=roots))
    preparation.check_options(run)
    manifest = preparation.manifest(run)
    preparation.tokenizer(run)
    with tarfile.open(args.carry / CORPUS_ARCHIVE, "w:xz", preset=args.xz_preset) as archive:
        for split in ("train", "heldout"):
            for name, path in resolve_files(manifest, split)[0]:
                archive.add(path, arcname=name)
    carried = sum(path.stat().st_size for path in args.carry.rglob("*") if path.is_file())
    print(f"{manifest['train_files']} training files, {manifest['train_bytes'] / 1e6:.1f} MB; "
          f"{manifest['heldout_files']} held out, {manifest['heldout_bytes'] / 1e6:.1f} MB; "
          f"{args.carry} holds {carried / 2**20:.1f} MiB")


def device(args: argparse.Namespace) -> None:
    started = time.monotonic()
    out = Path(os.environ.get("OUT") or args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    with tarfile.open(args.carry / CORPUS_ARCHIVE) as archive:
        archive.extractall(work / "corpus", filter="data")
    folder = work / "run"
    shutil.copytree(args.carry / "run", folder)
    manifest = load_manifest(folder / MANIFEST)
    manifest["roots"] = {label: str(work / "corpus" / label) for label in manifest["roots"]}
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    options = TrainOptions(**json.loads((folder / RUN_OPTIONS).read_text(encoding="utf-8")))
    model = work / "model"
    command = [sys.executable, "-m", "fimlsp", "train", "--output", str(folder), "--export", str(model),
               *[part for label in manifest["roots"] for part in ("--corpus-root", str(work / "corpus" / label))],
               *option_flags(dataclasses.asdict(options)), "--device", args.device,
               "--data-workers", str(args.workers),
               "--max-shard-mib", str(args.shard_mib), "--max-minutes", str(args.minutes), "--eval-cases", "0",
               "--eval-bytes", str(args.eval_bytes), "--checkpoint-every", "1000000", "--no-progress"]
    print(f"[{time.monotonic() - started:.0f} s] corpus unpacked; running", " ".join(command[1:]), flush=True)
    # each data worker tokenizes one document at a time: no thread pools of their own on a shared machine
    subprocess.run(command, check=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    print(f"[{time.monotonic() - started:.0f} s] trained and exported", flush=True)
    weights = sorted(model.glob("*.safetensors"))
    for path in weights:
        shutil.copyfile(path, out / path.name)
    with tarfile.open(out / REST_ARCHIVE, "w:gz") as archive:
        for path in sorted(model.iterdir()):
            if path not in weights:
                archive.add(path, arcname=path.name)
        archive.add(folder / LOG, arcname="train-log.jsonl")
    returned = sorted(out.iterdir())
    for path in returned:
        print(f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB")
    if len(returned) > MAX_RETURNED_FILES or any(path.stat().st_size > 16 * 2**20 for path in returned):
        sys.exit(f"{len(returned)} files in {out}: the device tool returns {MAX_RETURNED_FILES} of at most 16 MiB")
    record = json.loads((model / TRAINING_RECORD).read_text(encoding="utf-8"))
    results = json.loads((model / EVALUATION).read_text(encoding="utf-8"))
    print(f"[{time.monotonic() - started:.0f} s] steps {record['steps']} of {record['planned_steps']}, "
          f"{record['tokens_seen']:,} tokens in {record['train_seconds']} s, final loss {record['final_loss']}, "
          f"held-out bits per byte {results['heldout']['bits_per_byte']:.4f}", flush=True)


def unpack(args: argparse.Namespace) -> None:
    """The model folder from the files the device returned: the weight parts and the archive of the rest."""
    target = args.target
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(args.files.glob("*.safetensors")):
        shutil.copyfile(path, target / path.name)
    with tarfile.open(args.files / REST_ARCHIVE) as archive:
        archive.extractall(target, filter="data")
    print(f"model folder {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--carry", type=Path, default=CARRY, help="the folder the device command carries")
    steps = parser.add_subparsers(dest="step", required=True)
    first = steps.add_parser("prepare", help="here: options, manifest, tokenizer and the corpus archive")
    first.add_argument("--corpus-root", action="append", type=Path, default=None, metavar="DIR",
                       help="instead of the standard library and site-packages (a small try on a CPU)")
    first.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                       help="change one of the recipe's options (a small try on a CPU)")
    first.add_argument("--xz-preset", type=int, default=6)
    second = steps.add_parser("device", help="there: train, export in parts, leave the model in $OUT")
    second.add_argument("--out", type=Path, default=Path("runs/gpu-out"), help="where $OUT is not set")
    second.add_argument("--work", type=Path, default=DEVICE_ROOT, help="where the corpus and the run go")
    second.add_argument("--device", default="auto")
    second.add_argument("--workers", type=int, default=14, help="data workers (the machine has 16 cores)")
    second.add_argument("--minutes", type=float, default=6.5, help="--max-minutes of the training run")
    second.add_argument("--shard-mib", type=float, default=15.0)
    second.add_argument("--eval-bytes", type=int, default=1_000_000)
    third = steps.add_parser("unpack", help="here: the model folder from the returned files")
    third.add_argument("files", type=Path, help="the folder the device's files are in (files_at)")
    third.add_argument("target", type=Path)
    args = parser.parse_args()
    {"prepare": prepare, "device": device, "unpack": unpack}[args.step](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
