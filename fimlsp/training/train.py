"""Run the training: prepare corpus, tokenizer and data, optimise a GPTBigCode model, export it.

Everything a run produces lives under its output folder, so a run that is interrupted (Ctrl-C, a killed job, or
`--stop-after`) and started again with the same options continues from its last checkpoint and ends with the
same weights as a run that never stopped: the corpus manifest and tokenizer are reused, the packed data of each
epoch is a pure function of the seed, and the batch of step s depends only on s.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import platform
import random
import shutil
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

import numpy as np

from fimlsp.training import corpus as corpus_module
from fimlsp.model.formats import write_fim_settings
from fimlsp.training.fim import (
    TRAINING_FORMAT,
    FimTokens,
    FimTransform,
    SpanMix,
    middle_ends,
    pack,
    repeat_candidates,
)
from fimlsp.training.tokenizer import (
    EOS,
    FIM_MIDDLE,
    FIM_PAD,
    FIM_PREFIX,
    FIM_SUFFIX,
    load_tokenizer,
    special_token_ids,
    train_tokenizer,
)

MANIFEST = "corpus.json"
RUN_OPTIONS = "run.json"
TOKENIZER_DIR = "tokenizer"
DATA_DIR = "data"
CHECKPOINT_DIR = "checkpoints"
LOG = "log.jsonl"
EVALUATION_RECORDS = "evaluation.jsonl"
TRAINING_RECORD = "training.json"
SINGLE_WEIGHTS = "model.safetensors"
SHARDED_WEIGHTS_INDEX = "model.safetensors.index.json"
INIT_MODEL_DIR = "init-model"  # the model a continued run started from, copied so that resuming needs nothing else
# Tokens a segment leaves free in its window: the four FIM control tokens, and the few more that tokenizing the
# prefix, middle and suffix apart can take.
SAMPLE_SLACK = 12


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """Everything that determines the trained weights. Changing any of these needs a fresh output folder."""

    seed: int = 1234
    heldout_fraction: float = 0.05
    max_train_mb: float = 1000.0  # more than the machine holds: every usable file (docs/results/corpus-size.txt)
    max_heldout_mb: float = 6.0
    max_file_kb: float = 200.0
    data_parts: int = 1
    vocab_size: int = 8192
    tokenizer_mb: float = 16.0
    n_layer: int = 4
    n_embd: int = 256
    n_head: int = 4
    seq_len: int = 512
    min_segment_tokens: int = 64
    fim_rate: float = 0.9
    spm_rate: float = 1.0
    line_span_rate: float = 0.35
    node_span_rate: float = 0.35
    random_span_length: str = "uniform"
    eos_weight: float = 1.0
    repeat_unlikelihood: float = 0.0
    repeat_ngram: int = 4
    tokens: int = 14_000_000
    batch_size: int = 16
    lr: float = 1.5e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    precision: str = "bf16"

    @property
    def planned_steps(self) -> int:
        return max(1, math.ceil(self.tokens / (self.batch_size * self.seq_len)))


@dataclasses.dataclass(frozen=True)
class RunControl:
    """How this invocation runs, without changing the result: where, on what, and for how long."""

    output: Path
    export: Path
    roots: dict[str, Path]
    device: str = "auto"
    threads: int | None = None
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    max_minutes: float | None = None
    stop_after: int | None = None
    eval_cases: int = 100  # per cut kind
    eval_bytes: int = 1_000_000
    progress: bool = True
    command: str | None = None
    init_from: Path | None = None  # a model folder whose weights, tokenizer and split this run continues from
    # where the corpus roots of `init_from`'s manifest are on this machine, by label (`corpus.relocate`)
    corpus_map: dict[str, Path] = dataclasses.field(default_factory=dict)
    # processes that build the packed windows of the coming epochs while the model trains (0: built in turn, in
    # this process, when an epoch starts)
    data_workers: int = max(0, (os.cpu_count() or 1) - 1)
    # export the weights in safetensors files of at most this many MiB, with an index (None: one file), so that a
    # model can be copied through a channel that limits file sizes
    max_shard_mib: float | None = None


class TrainingError(Exception):
    """The run cannot go on as asked (e.g. resuming a folder made with other options)."""


def lr_at(step: int, options: TrainOptions) -> float:
    """Linear warmup, then cosine decay to min_lr_ratio * lr at the planned last step."""
    if step < options.warmup_steps:
        return options.lr * (step + 1) / options.warmup_steps
    span = max(1, options.planned_steps - options.warmup_steps)
    progress = min(1.0, (step - options.warmup_steps) / span)
    floor = options.lr * options.min_lr_ratio
    return floor + (options.lr - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def model_config(options: TrainOptions, tokenizer):
    """SantaCoder's architecture family: GPTBigCode with multi-query attention, sized by the options."""
    from transformers import GPTBigCodeConfig

    ids = special_token_ids(tokenizer)
    return GPTBigCodeConfig(
        vocab_size=len(tokenizer),
        n_positions=options.seq_len,
        n_embd=options.n_embd,
        n_layer=options.n_layer,
        n_head=options.n_head,
        n_inner=4 * options.n_embd,
        multi_query=True,
        activation_function="gelu_pytorch_tanh",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=ids[EOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[EOS],
        tie_word_embeddings=True,
    )


def fim_tokens(tokenizer) -> FimTokens:
    ids = special_token_ids(tokenizer)
    return FimTokens(prefix=ids[FIM_PREFIX], middle=ids[FIM_MIDDLE], suffix=ids[FIM_SUFFIX], eos=ids[EOS])


def resolve_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class TrainingRun:
    """One output folder: its preparation steps, its data, its model and its checkpoints."""

    def __init__(self, options: TrainOptions, control: RunControl):
        self.options = options
        self.control = control
        self.output = control.output
        self.started = time.monotonic()
        self.init_weights = weights_digest(control.init_from) if control.init_from else None

    @property
    def init_model(self) -> Path | None:
        return self.output / INIT_MODEL_DIR if self.init_weights else None

    def data_seed(self, *parts) -> str:
        """The seed of a random choice about the data: a continued run draws other spans and orders than the run
        that made its starting model did."""
        return ":".join(map(str, (self.options.seed, *((self.init_weights,) if self.init_weights else ()), *parts)))

    # Preparation -------------------------------------------------------------------------------------------

    def check_options(self) -> None:
        """Write the options on first use; refuse to continue a folder that was made with different ones."""
        path = self.output / RUN_OPTIONS
        current = dataclasses.asdict(self.options) | ({"init_from": self.init_weights} if self.init_weights else {})
        if path.exists():
            # An option a folder does not name did not exist when it was made; its default keeps the old behaviour.
            saved = dataclasses.asdict(TrainOptions()) | json.loads(path.read_text(encoding="utf-8"))
            changed = sorted(k for k in current.keys() | saved.keys() if saved.get(k) != current.get(k))
            if changed:
                raise TrainingError(
                    f"{self.output} was started with other options ({', '.join(changed)}); "
                    "use the same options to resume or a new --output"
                )
        else:
            self.output.mkdir(parents=True, exist_ok=True)
            if self.init_weights:
                self.copy_init_model()
            path.write_text(json.dumps(current, indent=1) + "\n", encoding="utf-8")

    def copy_init_model(self) -> None:
        """Keep the starting model in the run folder, after checking that it fits these options."""
        config = json.loads((self.control.init_from / "config.json").read_text(encoding="utf-8"))
        expected = {"n_layer": self.options.n_layer, "n_embd": self.options.n_embd, "n_head": self.options.n_head,
                    "n_positions": self.options.seq_len}
        differing = [f"{name} {config.get(name)} (not {value})" for name, value in expected.items()
                     if config.get(name) != value]
        if differing:
            raise TrainingError(f"--init-from {self.control.init_from} has {', '.join(differing)}; "
                                "give the options it was trained with")
        for needed in (MANIFEST, TRAINING_RECORD, "tokenizer.json"):
            if not (self.control.init_from / needed).exists():
                raise TrainingError(f"--init-from {self.control.init_from} has no {needed}: not a model fimlsp trained")
        staging = self.output / (INIT_MODEL_DIR + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(self.control.init_from, staging)
        shutil.rmtree(self.output / INIT_MODEL_DIR, ignore_errors=True)  # left by a run stopped before run.json
        staging.replace(self.output / INIT_MODEL_DIR)

    def manifest(self) -> dict:
        path = self.output / MANIFEST
        if not path.exists() and self.init_model:
            try:
                relocated = corpus_module.relocate(corpus_module.load_manifest(self.init_model / MANIFEST),
                                                   self.control.corpus_map)
            except ValueError as error:
                raise TrainingError(f"--corpus-map: {error}") from None
            inherited = corpus_module.keep_present(relocated, "train")
            if not inherited["train"]:
                raise TrainingError(f"none of the training files of {self.control.init_from} is on this machine "
                                    f"(its corpus roots: {', '.join(f'{label}={root}' for label, root in relocated['roots'].items())}; "
                                    "--corpus-map LABEL=DIR says where a root is here)")
            path.with_suffix(".tmp").write_text(json.dumps(inherited), encoding="utf-8")
            path.with_suffix(".tmp").replace(path)
        if not path.exists():
            built = corpus_module.build_corpus(
                self.control.roots,
                seed=self.options.seed,
                heldout_fraction=self.options.heldout_fraction,
                max_train_bytes=int(self.options.max_train_mb * 1e6),
                max_heldout_bytes=int(self.options.max_heldout_mb * 1e6),
                max_file_bytes=int(self.options.max_file_kb * 1e3),
            )
            if not built.train or not built.heldout:
                raise TrainingError("the corpus roots hold no usable Python files for both splits")
            corpus_module.write_manifest(built, path.with_suffix(".tmp"))
            path.with_suffix(".tmp").replace(path)
        return corpus_module.load_manifest(path)

    def documents(self, split: str) -> list[str]:
        manifest = self.manifest()
        paths, missing = corpus_module.resolve_files(manifest, split)
        if missing:
            raise TrainingError(f"{missing} {split} files of {self.output / MANIFEST} changed or vanished since it was made")
        return [path.read_text(encoding="utf-8") for _name, path in paths]

    def tokenizer(self):
        directory = self.output / TOKENIZER_DIR
        if not (directory / "tokenizer.json").exists() and self.init_model:
            load_tokenizer(self.init_model).save_pretrained(directory)
        if not (directory / "tokenizer.json").exists():
            staging = directory.with_name(TOKENIZER_DIR + ".tmp")
            shutil.rmtree(staging, ignore_errors=True)
            train_tokenizer(self.tokenizer_texts(), self.options.vocab_size, staging)
            shutil.rmtree(directory, ignore_errors=True)
            staging.replace(directory)
        return load_tokenizer(directory)

    def tokenizer_texts(self) -> list[str]:
        """The training files a new tokenizer learns from: the first ones, in the manifest's order, up to
        `tokenizer_mb`."""
        budget = int(self.options.tokenizer_mb * 1e6)
        texts, used = [], 0
        for text in self.documents("train"):
            if used >= budget:
                break
            texts.append(text)
            used += len(text)
        return texts

    def epoch_windows(self, epoch: int, tokenizer) -> np.ndarray:
        """The training windows (seq_len + 1 tokens each, whole samples padded) of one pass over the training
        files (cached; a function of the seed)."""
        path = self.output / DATA_DIR / f"train-epoch{epoch}.npy"
        if path.exists():
            return np.load(path, mmap_mode="r")
        transform = FimTransform(
            tokenizer,
            fim_tokens(tokenizer),
            segment_tokens=self.options.seq_len - SAMPLE_SLACK,
            min_segment_tokens=self.options.min_segment_tokens,
            fim_rate=self.options.fim_rate,
            spm_rate=self.options.spm_rate,
            spans=SpanMix(line=self.options.line_span_rate, node=self.options.node_span_rate,
                          random_length=self.options.random_span_length),
        )
        documents, rng = self.part_documents(epoch)
        pad = special_token_ids(tokenizer)[FIM_PAD]
        windows = pack(transform.samples(documents, rng), self.options.seq_len + 1, pad)
        windows = windows.astype(np.uint16 if len(tokenizer) <= 65536 else np.int32)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".tmp"), "wb") as handle:
            np.save(handle, windows)
        path.with_suffix(".tmp").replace(path)
        return windows

    def part_documents(self, epoch: int) -> tuple[list[str], random.Random]:
        """The training files of one data file, in its order, and the generator of its FIM choices. A pass over the
        files is `data_parts` data files (`epoch` counts data files), each a share of about equal bytes of the
        pass's shuffled files drawn with a generator of its own, so the parts of a pass are built in parallel and
        the first steps wait for a part rather than a pass."""
        parts = self.options.data_parts
        documents = self.documents("train")
        if parts == 1:  # the single-part seeds, so that runs from before parts existed get the same data
            random.Random(self.data_seed("order", epoch)).shuffle(documents)
            return documents, random.Random(self.data_seed("fim", epoch))
        pass_number, part = divmod(epoch, parts)
        random.Random(self.data_seed("order", pass_number)).shuffle(documents)
        chosen = split_by_size(documents, parts)[part]
        if not chosen:
            raise TrainingError(f"part {part + 1} of {parts} of a pass holds no training file: use fewer --data-parts")
        return chosen, random.Random(self.data_seed("fim", pass_number, "part", part))

    # Training ----------------------------------------------------------------------------------------------

    def build_epochs(self, epochs: range, builders: ProcessPoolExecutor) -> dict[int, Future]:
        """Start building the windows of `epochs` that are not on disk yet, in the builders' processes; each writes
        the file `epoch_windows` then reads. An epoch is a pure function of the seed, so the windows are the same
        as those built in this process."""
        return {epoch: builders.submit(_build_epoch, self, epoch) for epoch in epochs
                if not (self.output / DATA_DIR / f"train-epoch{epoch}.npy").exists()}

    def epochs_needed(self, first_step: int, windows_per_epoch: int) -> range:
        """The epochs that the steps from `first_step` to the planned end draw their windows from."""
        batch_size = self.options.batch_size
        last = (self.options.planned_steps * batch_size - 1) // windows_per_epoch
        return range(first_step * batch_size // windows_per_epoch, last + 1)

    def batches(self, tokenizer, first_step: int = 0,
                builders: ProcessPoolExecutor | None = None) -> Callable[[int], np.ndarray]:
        """A function from step number to its batch of windows, walking seeded permutations epoch by epoch. With
        `builders`, the epochs that the steps from `first_step` need are built in their processes meanwhile.

        Every epoch contributes as many windows as epoch 0 holds (later epochs, FIM-transformed with other random
        spans, differ slightly in length), so the position of a step's windows never depends on later data.
        """
        batch_size = self.options.batch_size
        cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        building: dict[int, Future] = {}
        if builders is not None:
            # Epoch 0 sets the epoch's length, which says which epochs are needed: a run from the start builds the
            # next one with it.
            building = self.build_epochs(range(0, 2 if first_step == 0 else 1), builders)

        def epoch_data(epoch: int) -> tuple[np.ndarray, np.ndarray]:
            if epoch not in cache:
                cache.clear()
                if epoch in building:
                    building.pop(epoch).result()  # a builder's error is raised here
                windows = self.epoch_windows(epoch, tokenizer)
                if len(windows) == 0:
                    raise TrainingError("the training corpus holds no sample that fits a context window")
                order = self.window_order(epoch).permutation(len(windows))
                cache[epoch] = (windows, order)
            return cache[epoch]

        windows_per_epoch = len(epoch_data(0)[1])
        if builders is not None:
            needed = self.epochs_needed(first_step, windows_per_epoch)
            building.update(self.build_epochs(range(max(2, needed.start), needed.stop), builders))

        def batch(step: int) -> np.ndarray:
            rows = []
            for position in range(step * batch_size, (step + 1) * batch_size):
                epoch, offset = divmod(position, windows_per_epoch)
                windows, order = epoch_data(epoch)
                rows.append(np.asarray(windows[int(order[offset % len(order)])], dtype=np.int64))
            return np.stack(rows)

        return batch

    def window_order(self, epoch: int) -> np.random.Generator:
        extra = [int(self.init_weights, 16)] if self.init_weights else []
        return np.random.default_rng([self.options.seed, epoch, *extra])

    def train(self) -> Path | None:
        """Train to the planned step (or until a stop option says so); returns the export folder when finished."""
        import torch

        if self.control.threads:
            torch.set_num_threads(self.control.threads)
        if not self.control.progress:
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
        self.check_options()
        tokenizer = self.tokenizer()
        state_step = self.checkpointed_step()
        builders = self.data_builders()
        try:
            return self._train(tokenizer, self.batches(tokenizer, state_step, builders))
        finally:
            if builders is not None:
                builders.shutdown(wait=True, cancel_futures=True)

    def data_builders(self) -> ProcessPoolExecutor | None:
        """The processes that build the coming epochs' windows (`RunControl.data_workers`), or None."""
        if not self.control.data_workers:
            return None
        # spawned, not forked: the training process holds torch's threads, which a fork would copy half-stopped
        return ProcessPoolExecutor(self.control.data_workers, mp_context=get_context("spawn"))

    def _train(self, tokenizer, batch_of: Callable[[int], np.ndarray]) -> Path | None:
        import torch
        from tqdm.auto import tqdm
        from transformers import GPTBigCodeForCausalLM

        pad = special_token_ids(tokenizer)[FIM_PAD]
        control_tokens = fim_tokens(tokenizer)
        device = resolve_device(self.control.device)
        torch.manual_seed(self.options.seed)
        model = GPTBigCodeForCausalLM(model_config(self.options, tokenizer)).to(device)
        optimizer = torch.optim.AdamW(
            self.parameter_groups(model), lr=self.options.lr, betas=(0.9, 0.95), eps=1e-8
        )
        state = self.load_checkpoint(model, optimizer, device)
        step, tokens_seen, train_seconds = state["step"], state["tokens_seen"], state["train_seconds"]
        planned = self.options.planned_steps
        autocast = self.options.precision == "bf16"
        stopped_early = False
        bar = tqdm(total=planned, initial=step, unit="step", disable=not self.control.progress, dynamic_ncols=True)
        smoothed = None
        steps_this_run = 0
        model.train()
        while step < planned:
            if self.control.stop_after is not None and steps_this_run >= self.control.stop_after:
                break
            if self.out_of_time():
                stopped_early = True
                break
            tick = time.monotonic()
            windows = batch_of(step)
            batch = torch.from_numpy(windows).to(device)
            weights = torch.from_numpy(
                (1.0 + (self.options.eos_weight - 1.0) * middle_ends(windows, control_tokens)).astype(np.float32)
            ).to(device)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, self.options)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
                logits = model(input_ids=batch[:, :-1]).logits
            token_losses = torch.nn.functional.cross_entropy(
                logits.float().flatten(0, 1), batch[:, 1:].flatten(), ignore_index=pad, reduction="none"
            )
            counted = (batch[:, 1:] != pad).sum()
            loss = token_losses.sum() / counted  # the plain mean, logged whatever the weights
            objective = (token_losses * weights.flatten()).sum()
            repeats = None
            if self.options.repeat_unlikelihood:
                candidates = torch.from_numpy(
                    repeat_candidates(windows, control_tokens, self.options.repeat_ngram)).to(device)
                repeats = repeat_unlikelihood(logits, candidates)
                objective = objective + self.options.repeat_unlikelihood * repeats
            objective.div(counted).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.options.grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            steps_this_run += 1
            step_tokens = int((batch[:, 1:] != pad).sum())
            tokens_seen += step_tokens
            elapsed = time.monotonic() - tick
            train_seconds += elapsed
            value = loss.item()
            smoothed = value if smoothed is None else 0.95 * smoothed + 0.05 * value
            bar.set_postfix(loss=f"{smoothed:.3f}", tok_s=f"{step_tokens / elapsed:.0f}", lr=f"{lr_at(step - 1, self.options):.2e}")
            bar.update(1)
            self.log({"step": step, "loss": value, "lr": lr_at(step - 1, self.options), "tokens_seen": tokens_seen,
                      "tokens_per_s": step_tokens / elapsed, "train_seconds": train_seconds}
                     | ({"repeat_loss": repeats.item() / float(counted)} if repeats is not None else {}))
            if step % self.control.checkpoint_every == 0 or step == planned:
                self.save_checkpoint(model, optimizer, step, tokens_seen, train_seconds)
        bar.close()
        if step < planned:
            self.save_checkpoint(model, optimizer, step, tokens_seen, train_seconds)
            if not stopped_early:
                return None
        return self.export(model, tokenizer, step, tokens_seen, train_seconds, device)

    def parameter_groups(self, model) -> list[dict]:
        """Weight decay on matrices only; biases, norms and embeddings' positions decay-free (GPT convention)."""
        decay, plain = [], []
        for name, parameter in model.named_parameters():
            (decay if parameter.dim() >= 2 and "wpe" not in name else plain).append(parameter)
        return [{"params": decay, "weight_decay": self.options.weight_decay}, {"params": plain, "weight_decay": 0.0}]

    def out_of_time(self) -> bool:
        limit = self.control.max_minutes
        return limit is not None and time.monotonic() - self.started > limit * 60

    def log(self, record: dict) -> None:
        with open(self.output / LOG, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    # Checkpoints -------------------------------------------------------------------------------------------

    def checkpoints(self) -> list[Path]:
        return sorted((self.output / CHECKPOINT_DIR).glob("step-*.pt"))

    def save_checkpoint(self, model, optimizer, step: int, tokens_seen: int, train_seconds: float) -> None:
        import torch

        directory = self.output / CHECKPOINT_DIR
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"step-{step:07d}.pt"
        staging = path.with_suffix(".tmp")
        torch.save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
             "tokens_seen": tokens_seen, "train_seconds": train_seconds},
            staging,
        )
        staging.replace(path)
        for old in self.checkpoints()[: -self.control.keep_checkpoints]:
            old.unlink()
        self.truncate_log(step)

    def load_checkpoint(self, model, optimizer, device) -> dict:
        import torch

        existing = self.checkpoints()
        if not existing:
            self.truncate_log(0)
            if self.init_model:
                self.load_init_weights(model)
            return {"step": 0, "tokens_seen": 0, "train_seconds": 0.0}
        state = torch.load(existing[-1], map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        self.truncate_log(state["step"])
        return state

    def load_init_weights(self, model) -> None:
        import torch
        from transformers import GPTBigCodeForCausalLM

        start = GPTBigCodeForCausalLM.from_pretrained(self.init_model, dtype=torch.float32, trust_remote_code=False)
        try:
            model.load_state_dict(start.state_dict())
        except RuntimeError as error:
            raise TrainingError(f"--init-from {self.control.init_from} does not fit these options: "
                                f"{str(error).splitlines()[-1].strip()}") from None

    def checkpointed_step(self) -> int:
        """The step the latest checkpoint holds (0 without one): where a resumed run goes on from."""
        checkpoints = self.checkpoints()
        return int(checkpoints[-1].stem.removeprefix("step-")) if checkpoints else 0

    def truncate_log(self, step: int) -> None:
        """Drop log lines past the last checkpoint, so a resumed run's log reads as one run."""
        path = self.output / LOG
        if not path.exists():
            return
        kept = [line for line in path.read_text(encoding="utf-8").splitlines() if json.loads(line)["step"] <= step]
        path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")

    # Export ------------------------------------------------------------------------------------------------

    def export(self, model, tokenizer, step: int, tokens_seen: int, train_seconds: float, device) -> Path:
        """Write the fp16 safetensors model, its tokenizer, corpus manifest and training record; then evaluate."""
        import torch

        from fimlsp.training import card, evaluate

        manifest = self.manifest()  # written here when the data was cached before it (a copied run folder)
        target = self.control.export
        staging = target.with_name(target.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        limit = self.control.max_shard_mib
        shards = {} if limit is None else {"max_shard_size": int(limit * 2**20)}
        copy.deepcopy(model).to(torch.float16).save_pretrained(staging, safe_serialization=True, **shards)
        tokenizer.save_pretrained(staging)
        write_fim_settings(staging, TRAINING_FORMAT.name, "spm" if self.options.spm_rate > 0.5 else "psm")
        shutil.copyfile(self.output / MANIFEST, staging / MANIFEST)
        record = {
            "options": dataclasses.asdict(self.options),
            "parameters": sum(p.numel() for p in model.parameters()),
            "steps": step,
            "planned_steps": self.options.planned_steps,
            "tokens_seen": tokens_seen,
            "train_seconds": round(train_seconds, 1),
            "hardware": hardware(device),
            "software": software(),
            "final_loss": self.recent_loss(),
            "command": self.control.command,
            "output": str(self.output),
        }
        if self.init_model:
            record["continued_from"] = json.loads((self.init_model / TRAINING_RECORD).read_text(encoding="utf-8"))
        (staging / TRAINING_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.replace(target)
        heldout, missing = corpus_module.resolve_files(manifest, "heldout")
        (self.output / EVALUATION_RECORDS).unlink(missing_ok=True)  # the records of an earlier export's weights
        results = evaluate.evaluate_model(
            target, heldout, self.output / EVALUATION_RECORDS, seed=self.options.seed, cases=self.control.eval_cases,
            max_bytes=self.control.eval_bytes, device=device, progress=self.control.progress, skipped_files=missing,
        )
        evaluate.write_results(results, target)
        card.write_card(target)
        return target

    def recent_loss(self, last: int = 50) -> float | None:
        path = self.output / LOG
        if not path.exists():
            return None
        losses = [json.loads(line)["loss"] for line in path.read_text(encoding="utf-8").splitlines()[-last:]]
        return round(sum(losses) / len(losses), 4) if losses else None


def split_by_size(documents: list[str], parts: int) -> list[list[str]]:
    """`documents` cut in order into `parts` runs of about equal total length; no run is empty while there are
    as many documents as parts."""
    total = sum(len(document) for document in documents)
    split: list[list[str]] = [[]]
    placed = 0
    for index, document in enumerate(documents):
        unopened = parts - len(split)
        if split[-1] and unopened and (placed >= total * len(split) / parts or len(documents) - index <= unopened):
            split.append([])
        split[-1].append(document)
        placed += len(document)
    return split + [[] for _ in range(parts - len(split))]


def weight_files(model: Path) -> list[Path]:
    """A model folder's safetensors files: `model.safetensors`, or the shards its index names (`save_pretrained`
    with `max_shard_size`); none when it has neither."""
    if (model / SINGLE_WEIGHTS).is_file():
        return [model / SINGLE_WEIGHTS]
    try:
        index = json.loads((model / SHARDED_WEIGHTS_INDEX).read_text(encoding="utf-8"))
        return [model / name for name in sorted(set(index["weight_map"].values()))]
    except (OSError, ValueError, KeyError, AttributeError):
        return []


def repeat_unlikelihood(logits, candidates):
    """The unlikelihood loss, summed, of the tokens that would repeat an earlier n-gram (`repeat_candidates`, -1
    where none): -log(1 - p) of each, which is near 0 while the model finds the repeat unlikely and grows without
    bound as it becomes sure of it, as it is inside a loop."""
    import torch

    where = candidates >= 0
    if not bool(where.any()):
        return logits.new_zeros((), dtype=torch.float32)
    log_probs = torch.log_softmax(logits[where].float(), dim=-1)
    chosen = log_probs.gather(-1, candidates[where].unsqueeze(-1)).squeeze(-1)
    return -torch.log1p(-chosen.exp().clamp(max=1 - 1e-6)).sum()


def weights_digest(model: Path) -> str:
    """A short content hash of a model folder's weights: which model a continued run started from."""
    import hashlib

    files = weight_files(model)
    if not files:
        raise TrainingError(f"--init-from {model}: it has neither {SINGLE_WEIGHTS} nor a readable {SHARDED_WEIGHTS_INDEX}")
    digest = hashlib.sha256()
    try:
        for path in files:
            digest.update(path.read_bytes())
    except OSError as error:
        raise TrainingError(f"--init-from {model}: cannot read its {error.filename} ({error.strerror})") from None
    return digest.hexdigest()[:16]


def hardware(device) -> dict:
    """Where the model was trained, in words a model card can quote."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    record = {
        "device": device.type,
        "cpu": cpu,
        "cpu_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }
    if device.type == "cuda":
        record["gpu"] = torch.cuda.get_device_name(device)
    return record


def software() -> dict:
    import tokenizers
    import torch
    import transformers

    return {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__}


def _build_epoch(run: TrainingRun, epoch: int) -> None:
    """A data builder's work: one epoch's windows, written to the run folder."""
    run.epoch_windows(epoch, run.tokenizer())
