"""Measure a FIM model on the held-out files recorded in its corpus manifest.

Prints held-out loss and bits per byte, and for held-out FIM cases of every cut kind of `fimlsp eval` the share
of greedy middles (unconstrained and constrained, through the product's decoding) with which the file parses,
that end by the model's own end of sequence, and that equal the deleted text. The model folder must hold a
`corpus.json` manifest (as `fimlsp train` exports); its held-out files are looked up on this machine and those
whose content changed are skipped. Per-case records go to `--records` (rerunning resumes them).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fimlsp.commands.train import DefaultsFormatter


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = DefaultsFormatter
    parser.add_argument("--model", type=Path, default=None,
                        help="model folder with a corpus.json manifest; the shipped default model when not given")
    parser.add_argument("--cases", type=int, default=100, help="held-out FIM cases of each cut kind")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the FIM cases")
    parser.add_argument("--eval-bytes", type=int, default=1_000_000,
                        help="held-out bytes over which loss and bits per byte are measured")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="longest middle generated, in tokens")
    parser.add_argument("--device", default="auto", help="torch device: auto, cpu, cuda, ...")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads; torch's choice when not given")
    parser.add_argument("--records", type=Path, default=None,
                        help="results file of the cases (resumed when it exists); runs/evaluation-MODEL.jsonl when "
                             "not given")
    parser.add_argument("--write-card", action="store_true",
                        help="write the figures into the model folder (evaluation.json and its README.md card)")


def run(args: argparse.Namespace) -> int:
    from fimlsp.cli import UserError
    from fimlsp.model.folder import CARD, CONFIG, CORPUS_MANIFEST, EVALUATION
    from fimlsp.weights import default_model_path

    model = args.model or default_model_path()
    manifest_path = model / CORPUS_MANIFEST
    if not (model / CONFIG).is_file():
        raise UserError(f"{model} is not a model folder (no {CONFIG})")
    if not manifest_path.is_file():
        raise UserError(f"{model} has no {CORPUS_MANIFEST} manifest naming its held-out files")
    if args.cases < 0 or args.eval_bytes <= 0 or args.max_new_tokens <= 0:
        raise UserError("--cases must not be negative; --eval-bytes and --max-new-tokens must be positive")

    import torch

    from fimlsp.corpus_manifest import load_manifest, resolve_files
    from fimlsp.evaluation.runner import ResumeError
    from fimlsp.training import evaluate
    from fimlsp.training.loop import resolve_device

    if args.threads:
        torch.set_num_threads(args.threads)
    heldout, missing = resolve_files(load_manifest(manifest_path), "heldout")
    if not heldout:
        raise UserError(f"none of the held-out files of {manifest_path} are on this machine unchanged")
    records = args.records or Path("runs") / f"evaluation-{model.resolve().name}.jsonl"
    try:
        results = evaluate.evaluate_model(
            model, heldout, records, seed=args.seed, cases=args.cases, max_bytes=args.eval_bytes,
            device=resolve_device(args.device), max_new_tokens=args.max_new_tokens, progress=True,
            skipped_files=missing,
        )
    except ResumeError as error:
        raise UserError(str(error)) from None
    loss = results["heldout"]
    print(f"held-out loss {loss['loss']:.4f} nats/token, {loss['bits_per_byte']:.4f} bits/byte "
          f"({loss['files']} files, {loss['bytes']} bytes, {loss['tokens']} tokens)")
    print(evaluate.format_figures(results["fim"]))
    if missing:
        print(f"{missing} held-out files of the manifest were missing or changed and were skipped")
    print(f"per-case records: {records}")
    if args.write_card:
        from fimlsp.training import card

        evaluate.write_results(results, model)
        card.write_card(model)
        print(f"wrote {model / EVALUATION} and {model / CARD}")
    return 0
