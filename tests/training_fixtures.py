"""What the training tests share: a small corpus root of standard-library modules, a tokenizer trained on it, and
tiny runs of `fimlsp train` (one layer, 32 dims, 64-token windows) that take seconds on a CPU.

A test module that uses a fixture imports it by name (`from tests.training_fixtures import sample_root`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fimlsp.training.fim import FimTokens, FimTransform, SpanMix
from fimlsp.training.options import RunControl, TrainOptions
from fimlsp.training.run_folder import LOG, RUN_OPTIONS, Run
from fimlsp.training.tokenizer import train_tokenizer
from harness.corpus import STDLIB

SAMPLE_MODULES = ["textwrap.py", "bisect.py", "string.py", "colorsys.py", "keyword.py", "this.py", "fnmatch.py",
                  "glob.py", "shlex.py", "heapq.py", "copy.py", "numbers.py", "abc.py", "types.py", "queue.py"]

TINY = ["--threads", "1", "--vocab-size", "400", "--n-layer", "1", "--n-embd", "32", "--n-head", "2",
        "--seq-len", "64", "--batch-size", "4", "--warmup-steps", "3", "--heldout-fraction", "0.2",
        "--precision", "fp32", "--eval-cases", "3", "--eval-bytes", "2000", "--no-progress", "--data-workers", "0"]


@pytest.fixture(scope="module")
def sample_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "src"
    root.mkdir()
    for name in SAMPLE_MODULES:
        (root / name).write_text((STDLIB / name).read_text(encoding="utf-8"), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def tokenizer(sample_root, tmp_path_factory):
    texts = [path.read_text(encoding="utf-8") for path in sorted(sample_root.glob("*.py"))]
    return train_tokenizer(texts, 600, tmp_path_factory.mktemp("tokenizer"))


def module_text(index: int) -> str:
    """A distinct parsable module, so tests control duplicates themselves."""
    body = "\n".join(f"    total += value * {k}" for k in range(index % 7 + 3))
    return f'"""Module {index}."""\n\n\ndef compute_{index}(value):\n    total = 0\n{body}\n    return total\n'


def train(sample_root: Path, output: Path, *extra: str) -> int:
    """`fimlsp train` of a tiny model on the sample root; its exit status."""
    from fimlsp.cli import main

    return main(["train", "--output", str(output), "--corpus-root", str(sample_root), *TINY, *extra])


def losses(output: Path) -> list[float]:
    return [json.loads(line)["loss"] for line in (output / LOG).read_text().splitlines()]


def run_of(output: Path) -> Run:
    """The run of a run folder, to call its data functions."""
    options = TrainOptions(**json.loads((output / RUN_OPTIONS).read_text()))
    return Run.of(options, RunControl(output=output, export=output / "model", roots={}))


def tiny_stage(**changes) -> TrainOptions:
    return TrainOptions(vocab_size=400, n_layer=1, n_embd=32, n_head=2, seq_len=64, batch_size=4, warmup_steps=3,
                        heldout_fraction=0.2, precision="fp32", **changes)


def fim_transform(tokenizer, fim_rate, segment_tokens=60, spans=SpanMix(line=0.35, node=0.35)) -> FimTransform:
    """FIM samples with StarCoder's control token ids, half of them in each layout."""
    ids = FimTokens(prefix=1, middle=2, suffix=3, eos=0)
    return FimTransform(tokenizer, ids, segment_tokens=segment_tokens, fim_rate=fim_rate, spm_rate=0.5, spans=spans)
