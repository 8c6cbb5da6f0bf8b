"""The optimisation: a GPTBigCode model sized by the options, AdamW with warmup and cosine decay, and the loop of
steps from the last checkpoint to the planned end (or until a stop option says so), each step's loss the FIM
windows' cross-entropy with the end of a middle weighted and, when asked, repeats made unlikely."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable

import numpy as np

from fimlsp.training import checkpoints
from fimlsp.training.epochs import fim_tokens
from fimlsp.training.fim import FimTokens, middle_ends, repeat_candidates
from fimlsp.training.options import TrainOptions
from fimlsp.training.run_folder import Run
from fimlsp.training.tokenizer import EOS, FIM_PAD, special_token_ids


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


def resolve_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def parameter_groups(model, weight_decay: float) -> list[dict]:
    """Weight decay on matrices only; biases, norms and embeddings' positions decay-free (GPT convention)."""
    decay, plain = [], []
    for name, parameter in model.named_parameters():
        (decay if parameter.dim() >= 2 and "wpe" not in name else plain).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


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


@dataclasses.dataclass
class Trained:
    """Where the optimisation stopped: the model and what it took to get there."""

    model: object
    device: object
    step: int
    tokens_seen: int
    train_seconds: float


@dataclasses.dataclass(frozen=True)
class _StepResult:
    loss: float  # the plain mean cross-entropy, logged whatever the weights
    tokens: int  # the tokens that were not padding
    repeat_loss: float | None  # the repeat unlikelihood per token, when it is part of the objective


def optimise(run: Run, tokenizer, batch_of: Callable[[int], np.ndarray], started: float) -> Trained | None:
    """Train from the last checkpoint to the planned step, checkpointing on the way; the trained model, also when
    `--max-minutes` (counted from `started`) ended it early, or None when `--stop-after` paused the run."""
    import torch
    from tqdm.auto import tqdm
    from transformers import GPTBigCodeForCausalLM

    options, control = run.options, run.control
    pad = special_token_ids(tokenizer)[FIM_PAD]
    control_tokens = fim_tokens(tokenizer)
    device = resolve_device(control.device)
    torch.manual_seed(options.seed)
    model = GPTBigCodeForCausalLM(model_config(options, tokenizer)).to(device)
    optimizer = torch.optim.AdamW(parameter_groups(model, options.weight_decay), lr=options.lr, betas=(0.9, 0.95),
                                  eps=1e-8)
    state = checkpoints.load_checkpoint(run, model, optimizer, device)
    trained = Trained(model, device, state["step"], state["tokens_seen"], state["train_seconds"])
    planned = options.planned_steps
    stopped_early = False
    bar = tqdm(total=planned, initial=trained.step, unit="step", disable=not control.progress, dynamic_ncols=True)
    smoothed = None
    steps_this_run = 0
    model.train()
    while trained.step < planned:
        if control.stop_after is not None and steps_this_run >= control.stop_after:
            break
        if control.max_minutes is not None and time.monotonic() - started > control.max_minutes * 60:
            stopped_early = True
            break
        tick = time.monotonic()
        result = _step(model, optimizer, batch_of(trained.step), trained.step, options, pad, control_tokens, device)
        trained.step += 1
        steps_this_run += 1
        trained.tokens_seen += result.tokens
        elapsed = time.monotonic() - tick
        trained.train_seconds += elapsed
        smoothed = result.loss if smoothed is None else 0.95 * smoothed + 0.05 * result.loss
        lr = lr_at(trained.step - 1, options)
        bar.set_postfix(loss=f"{smoothed:.3f}", tok_s=f"{result.tokens / elapsed:.0f}", lr=f"{lr:.2e}")
        bar.update(1)
        checkpoints.log(run, {"step": trained.step, "loss": result.loss, "lr": lr, "tokens_seen": trained.tokens_seen,
                              "tokens_per_s": result.tokens / elapsed, "train_seconds": trained.train_seconds}
                        | ({"repeat_loss": result.repeat_loss} if result.repeat_loss is not None else {}))
        if trained.step % control.checkpoint_every == 0 or trained.step == planned:
            _save(run, trained, optimizer)
    bar.close()
    if trained.step < planned:
        _save(run, trained, optimizer)
        if not stopped_early:
            return None
    return trained


def _save(run: Run, trained: Trained, optimizer) -> None:
    checkpoints.save_checkpoint(run, trained.model, optimizer, trained.step, trained.tokens_seen,
                                trained.train_seconds)


def _step(model, optimizer, windows: np.ndarray, step: int, options: TrainOptions, pad: int,
          control_tokens: FimTokens, device) -> _StepResult:
    """One optimizer step on a batch of windows."""
    import torch

    batch = torch.from_numpy(windows).to(device)
    weights = torch.from_numpy(
        (1.0 + (options.eos_weight - 1.0) * middle_ends(windows, control_tokens)).astype(np.float32)
    ).to(device)
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, options)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=options.precision == "bf16"):
        logits = model(input_ids=batch[:, :-1]).logits
    token_losses = torch.nn.functional.cross_entropy(
        logits.float().flatten(0, 1), batch[:, 1:].flatten(), ignore_index=pad, reduction="none"
    )
    counted = (batch[:, 1:] != pad).sum()
    loss = token_losses.sum() / counted
    objective = (token_losses * weights.flatten()).sum()
    repeats = None
    if options.repeat_unlikelihood:
        candidates = torch.from_numpy(repeat_candidates(windows, control_tokens, options.repeat_ngram)).to(device)
        repeats = repeat_unlikelihood(logits, candidates)
        objective = objective + options.repeat_unlikelihood * repeats
    objective.div(counted).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), options.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return _StepResult(loss.item(), int((batch[:, 1:] != pad).sum()),
                       repeats.item() / float(counted) if repeats is not None else None)
