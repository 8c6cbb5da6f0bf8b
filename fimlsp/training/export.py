"""Write a trained model as a model folder: float16 safetensors weights (sharded when asked), its tokenizer, the
FIM format it was trained for, the corpus manifest, and the training record that says how it was made, where and
with what. The folder replaces the export folder whole, so a reader never sees half of it."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import platform
import shutil
import sys
from pathlib import Path

from fimlsp.model.folder import TRAINING_RECORD
from fimlsp.model.formats import write_fim_settings
from fimlsp.training import prepare
from fimlsp.training.checkpoints import recent_loss
from fimlsp.training.fim import TRAINING_FORMAT
from fimlsp.training.loop import Trained
from fimlsp.training.run_folder import MANIFEST, Run


def export_model(run: Run, trained: Trained, tokenizer) -> Path:
    """Write the model folder to `run.control.export`, replacing what was there; returns it."""
    import torch

    prepare.manifest(run)  # written here when the data was cached before it (a copied run folder)
    target = run.control.export
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    limit = run.control.max_shard_mib
    shards = {} if limit is None else {"max_shard_size": int(limit * 2**20)}
    copy.deepcopy(trained.model).to(torch.float16).save_pretrained(staging, safe_serialization=True, **shards)
    tokenizer.save_pretrained(staging)
    write_fim_settings(staging, TRAINING_FORMAT.name, "spm" if run.options.spm_rate > 0.5 else "psm")
    shutil.copyfile(run.output / MANIFEST, staging / MANIFEST)
    record = training_record(run, trained)
    (staging / TRAINING_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    staging.replace(target)
    return target


def training_record(run: Run, trained: Trained) -> dict:
    """How the model was made: its options, size, steps, time, machine and software, and its command; a continued
    run keeps the record of the model it started from (`lineage.lineage` reads the chain)."""
    record = {
        "options": dataclasses.asdict(run.options),
        "parameters": sum(p.numel() for p in trained.model.parameters()),
        "steps": trained.step,
        "planned_steps": run.options.planned_steps,
        "tokens_seen": trained.tokens_seen,
        "train_seconds": round(trained.train_seconds, 1),
        "hardware": hardware(trained.device),
        "software": software(),
        "final_loss": recent_loss(run),
        "command": run.control.command,
        "output": str(run.output),
    }
    if run.init_model:
        record["continued_from"] = json.loads((run.init_model / TRAINING_RECORD).read_text(encoding="utf-8"))
    return record


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
