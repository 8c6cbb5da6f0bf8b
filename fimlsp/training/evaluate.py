"""Measure a FIM model: held-out loss and bits per byte, and greedy middles on random-span FIM cases.

Bits per byte is the model's total negative log-likelihood of the held-out files (in bits) divided by their
UTF-8 size, so it compares across tokenizers. The FIM figures follow Sec. VII-A of Melcer et al.: the share of
greedy unconstrained middles with which the file parses again, and the share that equal the deleted text.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Iterable

from fimlsp.cases import Case, random_span_cases
from fimlsp.python.syntax import parses
from fimlsp.training.tokenizer import (
    EOS,
    FIM_MIDDLE,
    FIM_PREFIX,
    FIM_SUFFIX,
    SPECIAL_TOKENS,
    load_tokenizer,
    special_token_ids,
)

RESULTS = "evaluation.json"


@dataclasses.dataclass
class CaseResult:
    name: str
    expected: str
    generated: str
    parses: bool
    exact: bool


def load_model(directory: Path, device):
    """Load a saved model offline, upcast to float32 for CPU-exact arithmetic."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True, dtype=torch.float32)
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


def fim_prompt(tokenizer, left: str, right: str, budget: int) -> list[int]:
    """PSM prompt, keeping the end of the left and the start of the right context within `budget` tokens."""
    ids = special_token_ids(tokenizer)
    left_ids, right_ids = tokenizer([left, right], add_special_tokens=False, split_special_tokens=True)["input_ids"]
    room = budget - 3
    keep_right = min(len(right_ids), max(room // 2, room - len(left_ids)))
    keep_left = min(len(left_ids), room - keep_right)
    left_ids = left_ids[len(left_ids) - keep_left :]
    right_ids = right_ids[:keep_right]
    return [ids[FIM_PREFIX], *left_ids, ids[FIM_SUFFIX], *right_ids, ids[FIM_MIDDLE]]


def greedy_middle(model, tokenizer, left: str, right: str, max_new_tokens: int) -> str:
    """Greedy unconstrained decoding with the KV cache, stopping at EOS or any control token."""
    import torch

    context = model.config.n_positions
    prompt = fim_prompt(tokenizer, left, right, context - max_new_tokens)
    stops = [tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS]
    device = next(model.parameters()).device
    with torch.inference_mode():
        output = model.generate(
            input_ids=torch.tensor([prompt], device=device),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long, device=device),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            use_cache=True,
            eos_token_id=stops,
            pad_token_id=stops[0],
        )
    generated = [t for t in output[0, len(prompt) :].tolist() if t not in stops]
    return tokenizer.decode(generated, skip_special_tokens=True, clean_up_tokenization_spaces=False)



def evaluate_cases(model, tokenizer, cases: Iterable[Case], max_new_tokens: int, progress: bool = False) -> list[CaseResult]:
    from tqdm.auto import tqdm

    cases = list(cases)
    results = []
    for case in tqdm(cases, desc="FIM cases", unit="case", disable=not progress, dynamic_ncols=True):
        middle = greedy_middle(model, tokenizer, case.left, case.right, max_new_tokens)
        results.append(CaseResult(case.name, case.middle, middle, parses(case.left + middle + case.right), middle == case.middle))
    return results


def evaluate_model(
    directory: Path,
    heldout: list[tuple[str, Path]],
    *,
    seed: int,
    cases: int,
    max_bytes: int,
    device,
    max_new_tokens: int = 128,
    progress: bool = False,
) -> dict:
    """Held-out loss and bits per byte, then `cases` random-span FIM cases from the held-out files."""
    model = load_model(directory, device)
    tokenizer = load_tokenizer(directory)
    max_new_tokens = min(max_new_tokens, model.config.n_positions // 2)
    texts = [(name, path.read_text(encoding="utf-8")) for name, path in heldout]
    started = time.monotonic()
    loss = heldout_loss(model, tokenizer, (text for _name, text in texts), model.config.n_positions, max_bytes)
    loss["max_bytes"] = max_bytes
    loss_seconds = time.monotonic() - started
    started = time.monotonic()
    results = evaluate_cases(model, tokenizer, random_span_cases(texts, seed, cases), max_new_tokens, progress)
    count = len(results)
    return {
        "heldout": loss,
        "fim": {
            "cases": count,
            "seed": seed,
            "max_new_tokens": max_new_tokens,
            "parse_rate": sum(r.parses for r in results) / max(1, count),
            "exact_match_rate": sum(r.exact for r in results) / max(1, count),
            "seconds": round(time.monotonic() - started, 1),
        },
        "heldout_seconds": round(loss_seconds, 1),
        "examples": [dataclasses.asdict(r) for r in results[:5]],
    }


def write_results(results: dict, directory: Path) -> Path:
    path = directory / RESULTS
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
