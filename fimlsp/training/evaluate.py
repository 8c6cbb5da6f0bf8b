"""Measure a FIM model: held-out loss and bits per byte, and the product's completions on held-out FIM cases.

Bits per byte is the model's total negative log-likelihood of the held-out files (in bits) divided by their
UTF-8 size, so it compares across tokenizers. The FIM figures come from the path a user's completion takes
(`fimlsp.decoding` through the runner of `fimlsp eval`), greedy, unconstrained and constrained, on every cut kind
of `fimlsp eval` (random spans and token boundaries as in Sec. VII-A of Melcer et al., lines, syntax nodes): the
share of middles with which the file parses, that the model ends by its own end of sequence, and that equal the
deleted text.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Iterable

from fimlsp.model.folder import EVALUATION
from fimlsp.training.tokenizer import EOS, load_tokenizer

MODES = ("unconstrained", "constrained")


def load_model(directory: Path, device):
    """Load a saved model offline, upcast to float32 for CPU-exact arithmetic."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True, dtype=torch.float32,
                                                 trust_remote_code=False)
    return model.to(device).eval()


def heldout_loss(model, tokenizer, texts: Iterable[str], seq_len: int, max_bytes: int) -> dict:
    """Mean loss per token and bits per byte over held-out files.

    Each file is predicted from an EOS start in non-overlapping context windows, so every token (and byte) is
    counted once; tokens at the start of a later window see less context, which makes the figures conservative.
    """
    import torch

    eos = tokenizer.convert_tokens_to_ids(EOS)
    total_nll, total_tokens, total_bytes, files = 0.0, 0, 0, 0
    device = next(model.parameters()).device
    with torch.inference_mode():
        for text in texts:
            if total_bytes >= max_bytes:
                break
            ids = [eos] + tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
            for start in range(0, len(ids) - 1, seq_len):
                chunk = torch.tensor([ids[start : start + seq_len + 1]], device=device)
                logits = model(input_ids=chunk[:, :-1]).logits.float()
                total_nll += torch.nn.functional.cross_entropy(logits[0], chunk[0, 1:], reduction="sum").item()
                total_tokens += chunk.shape[1] - 1
            total_bytes += len(text.encode("utf-8"))
            files += 1
    return {
        "files": files,
        "bytes": total_bytes,
        "tokens": total_tokens,
        "loss": total_nll / max(1, total_tokens),
        "bits_per_byte": total_nll / math.log(2) / max(1, total_bytes),
    }


def fim_figures(
    model, directory: Path, files: list[tuple[str, str]], records: Path, *, seed: int, cases_per_kind: int,
    max_new_tokens: int, device, progress: bool = False,
) -> dict:
    """Greedy completions of held-out cases of every cut kind through the product's decoding, in `MODES`.

    Per-case records go to `records` (a results file of `fimlsp eval`, so a rerun resumes it and `fimlsp eval
    --report` reads it); returns, per kind and mode, the shares that parse, that end by the model's end of
    sequence and that equal the deleted text, with the median tokens and model milliseconds per token.
    """
    from fimlsp.evaluation import dataset, report, runner

    settings = runner.RunSettings(model=str(directory), max_tokens=max_new_tokens, device=device.type, attempts=1)
    cases = dataset.schedule([case for kind in dataset.KINDS
                              for case in dataset.build_cases(files, kind, seed, files_limit=cases_per_kind)])
    started = time.monotonic()
    runner.run_cases(cases, list(MODES), settings, records, progress=progress, model=model)
    _header, found = runner.read_results(records)
    summary = report.validity(found, max_new_tokens)
    figures = {}
    for (kind, mode), group in summary.items():
        figures.setdefault(kind, {})[mode] = {
            "cases": group["n"], "parse_rate": group["rate"], "eos_rate": group["endings"].get("eos", 0) / group["n"],
            "empty_rate": group["empty"], "exact_match_rate": group["exact"], "median_tokens": group["tokens"],
            "model_ms_per_token": round(group["model_ms_per_token"], 2),
        }
    return {"cases_per_kind": cases_per_kind, "seed": seed, "max_new_tokens": max_new_tokens, "kinds": figures,
            "seconds": round(time.monotonic() - started, 1), "records": records.name}


def evaluate_model(
    directory: Path,
    heldout: list[tuple[str, Path]],
    records: Path,
    *,
    seed: int,
    cases: int,
    max_bytes: int,
    device,
    max_new_tokens: int = 128,
    progress: bool = False,
    skipped_files: int = 0,
) -> dict:
    """Held-out loss and bits per byte, then `cases` FIM cases of each cut kind from the held-out files;
    `skipped_files` held-out files of the manifest that this machine lacks are recorded beside the loss."""
    from fimlsp.evaluation.dataset import read_named
    from fimlsp.model import load_model as load_fim_model

    model = load_model(directory, device)
    tokenizer = load_tokenizer(directory)
    max_new_tokens = min(max_new_tokens, model.config.n_positions // 2)
    texts = [(name, path.read_text(encoding="utf-8")) for name, path in heldout]
    started = time.monotonic()
    loss = heldout_loss(model, tokenizer, (text for _name, text in texts), model.config.n_positions, max_bytes)
    loss["max_bytes"] = max_bytes
    loss["skipped_files"] = skipped_files
    loss_seconds = time.monotonic() - started
    fim_model = load_fim_model(Path(directory), device.type)  # as decoding loads it: its dtype, its prompt order
    fim = fim_figures(fim_model, directory, read_named(heldout), records, seed=seed, cases_per_kind=cases,
                      max_new_tokens=max_new_tokens, device=device, progress=progress)
    return {"heldout": loss, "fim": fim, "heldout_seconds": round(loss_seconds, 1),
            "examples": everyday_examples(fim_model)}


def write_results(results: dict, directory: Path) -> Path:
    path = directory / EVALUATION
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


KIND_TITLES = {"randspan": "random span", "boundary": "token boundary", "line": "line", "node": "syntax node"}


def format_figures(fim: dict) -> str:
    """The FIM figures as a Markdown table: one row per cut kind and mode."""
    rows = [
        f"FIM cases of each cut kind: {fim['cases_per_kind']} (seed {fim['seed']}), greedy, at most "
        f"{fim['max_new_tokens']} new tokens",
        "",
        "| cut | mode | cases | parses | ends by EOS | empty | exact | median tokens | model ms/token |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, modes in fim["kinds"].items():
        for mode in MODES:
            if mode in modes:
                row = modes[mode]
                shares = (row["parse_rate"], row["eos_rate"], row.get("empty_rate"), row["exact_match_rate"])
                rows.append(f"| {KIND_TITLES.get(kind, kind)} | {mode} | {row['cases']} | "
                            + " | ".join(_share(share) for share in shares)
                            + f" | {row['median_tokens']:g} | {row['model_ms_per_token']:.1f} |")
    return "\n".join(rows)


def _share(value: float | None) -> str:
    """A share in the card's table; "n/a" where the figure is missing (a model evaluated before it was recorded)."""
    return "n/a" if value is None else f"{value:.1%}"


# Everyday cursors: (left, right) of the suggestions a model card shows verbatim.
EVERYDAY_CURSORS = (
    ("def add(a, b):\n    return ", "\n"),
    ("import os\n\n\ndef read_config(path):\n    with open(", ") as handle:\n        return handle.read()\n"),
    ("class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n        self.",
     "\n\n    def pop(self):\n        return self.items.pop()\n"),
    ("def first_even(numbers):\n    for number in numbers:\n        if ", ":\n            return number\n    return None\n"),
    ("def mean(values):\n    total = sum(values)\n    ", "\n"),
)


def everyday_examples(model, max_new_tokens: int = 48) -> list[dict]:
    """The model's suggestions at `EVERYDAY_CURSORS`, as the editor server asks for them (constrained, block scope,
    ended at the statement's end, the best ended of the default attempts)."""
    from fimlsp.decoding import DecodingOptions, complete_middle

    options = DecodingOptions(mode="constrained", max_tokens=max_new_tokens, scope="block", statement_end=True)
    examples = []
    for left, right in EVERYDAY_CURSORS:
        completion = complete_middle(model, left, right, options)
        examples.append({"left_tail": left.rsplit("\n", 1)[-1], "right_head": right.split("\n", 1)[0],
                         "middle": completion.middle, "ending": completion.ending, "attempts": options.attempts})
    return examples
