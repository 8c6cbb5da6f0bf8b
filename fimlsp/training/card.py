"""Write the model card (README.md of the model folder) from the training record and the evaluation results."""

from __future__ import annotations

import json
from pathlib import Path

from fimlsp.cases import MAX_NODE_CHARS
from fimlsp.model.folder import ABLATION, CARD, CONFIG, CORPUS_MANIFEST, EVALUATION, FIM_SETTINGS, TRAINING_RECORD
from fimlsp.model.formats import preferred_order
from fimlsp.training import recipe
from fimlsp.training.evaluate import KIND_TITLES, format_figures
from fimlsp.training.lineage import lineage, rebuild_commands
from fimlsp.training.run_folder import EVALUATION_RECORDS, LOG


def write_card(directory: Path) -> Path:
    """Render the card; the commands it quotes rebuild this model from the same options."""
    def read(name: str) -> dict:
        return json.loads((directory / name).read_text(encoding="utf-8"))

    record, results, manifest, config = read(TRAINING_RECORD), read(EVALUATION), read(CORPUS_MANIFEST), read(CONFIG)
    size_mb = sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) / 1e6
    lines = [
        "# fimlsp default FIM model",
        "",
        "A small fill-in-the-middle code model for Python that ships with fimlsp, so completion works offline, in CI",
        "and on a laptop without a GPU. It is built by `fimlsp train` (package `fimlsp.training`) and is far weaker",
        "than SantaCoder or StarCoder: point `--model` at real weights for useful completions.",
        "",
        *_model_section(record, config, size_mb, preferred_order(directory)),
        *_training_section(record, manifest),
        *_evaluation_section(results),
        *_ablation_section(directory / ABLATION),
        *_reproduce_section(record, results, directory),
    ]
    path = directory / CARD
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


RANDOM_SPANS = {"uniform": "a span between two random points",
                "log": "a span from a random point, its length log-uniform from zero characters to the segment's "
                       "(most are short, about one in ten empty)",
                "log-nonempty": "a span from a random point, its length log-uniform from one character to the "
                                "segment's (most are short)"}
PROMPTS = {"psm": "`<fim_prefix>` left `<fim_suffix>` right `<fim_middle>` → middle",
           "spm": "`<fim_prefix><fim_suffix>` right `<fim_middle>` left → middle (the middle goes on from the left)"}


def _model_section(record: dict, config: dict, size_mb: float, order: str) -> list[str]:
    return [
        "## Model",
        "",
        f"- Architecture: GPTBigCode (SantaCoder's family), multi-query attention, {config['n_layer']} layers, "
        f"{config['n_embd']} dims, {config['n_head']} heads, context {config['n_positions']} tokens, tied embeddings",
        f"- Parameters: {record['parameters']:,}",
        f"- Tokenizer: byte-level BPE, vocabulary {config['vocab_size']:,}, special tokens `<|endoftext|>` (EOS), "
        "`<fim_prefix>`, `<fim_middle>`, `<fim_suffix>`, `<fim_pad>` (ids 0-4)",
        f"- FIM prompt ({order.upper()}, named in `{FIM_SETTINGS}`, which decoding follows): {PROMPTS[order]}, "
        "ended by `<|endoftext|>`",
        f"- Weights: safetensors, float16; folder size {size_mb:.1f} MB",
        "",
    ]


def _training_section(record: dict, manifest: dict) -> list[str]:
    options, hardware, software = record["options"], record["hardware"], record["software"]
    where = hardware.get("gpu") or f"{hardware['cpu']}, {hardware['cpu_cores']} cores, torch threads: {hardware['torch_threads']}"
    sources = ", ".join(f"`{label}`" for label in manifest["roots"])
    stopped = "" if record["steps"] >= record["planned_steps"] else " (ended early by --max-minutes)"
    rejected = ", ".join(f"{reason} {count}" for reason, count in manifest["rejected"].items()) or "none"
    return [
        "## Training",
        "",
        f"- Corpus: Python files under {sources} on the training machine, {manifest['scanned_files']:,} "
        f"candidates scanned, left out: {rejected}. Train: {manifest['train_files']:,} files, "
        f"{manifest['train_bytes'] / 1e6:.1f} MB; held out (by file, seed {manifest['seed']}): "
        f"{manifest['heldout_files']:,} files, {manifest['heldout_bytes'] / 1e6:.1f} MB. "
        f"The file list with content hashes is `{CORPUS_MANIFEST}`.",
        f"- FIM (Bavarian et al., per context-sized segment): FIM rate {options['fim_rate']}, share in SPM order "
        f"{options['spm_rate']}, windows of whole samples; the middle is the rest of a line or one to three whole lines in "
        f"{options['line_span_rate']:.0%} of FIM samples, one syntax node (expression, call arguments, statement, "
        f"block; at most {MAX_NODE_CHARS} characters) in {options['node_span_rate']:.0%}, and "
        + RANDOM_SPANS[options.get("random_span_length", "uniform")]
        + f" in the rest; segments of {options.get('min_segment_tokens', options['seq_len'])} tokens to a "
        f"context, packed first-fit into {options['seq_len']}-token windows"
        + (f"; the end of sequence that closes a middle weighs {options['eos_weight']:g} in the loss, every other "
           "token 1" if options.get("eos_weight", 1.0) != 1.0 else "")
        + (f"; a token that would repeat an earlier {options.get('repeat_ngram', 4)}-gram of the text after "
           f"`<fim_middle>` where the true token differs adds its unlikelihood -log(1 - p), weighted "
           f"{options['repeat_unlikelihood']:g}, to the loss" if options.get("repeat_unlikelihood") else ""),
        f"- Optimiser: AdamW (β 0.9/0.95, weight decay {options['weight_decay']}), peak LR {options['lr']}, "
        f"{options['warmup_steps']} warmup steps, cosine to {options['min_lr_ratio']}×, batch "
        f"{options['batch_size']}×{options['seq_len']} tokens, {options['precision']} autocast",
        f"- Steps: {record['steps']:,} of {record['planned_steps']:,} planned{stopped}; tokens seen: "
        f"{record['tokens_seen']:,}; {record['tokens_seen'] / max(1.0, record['train_seconds']):,.0f} tokens per second",
        f"- Training time (optimizer steps): {record['train_seconds'] / 60:.1f} minutes on "
        f"{hardware['device'].upper()} ({where}); {hardware['platform']}",
        f"- Software: Python {software['python']}, torch {software['torch']}, transformers {software['transformers']}, "
        f"tokenizers {software['tokenizers']}",
        f"- Final training loss (mean of the last 50 steps): {record['final_loss']}; the loss of every step is in the "
        f"run folder's `{LOG}`",
        *_continuation_lines(record, manifest),
        "",
    ]


def _continuation_lines(record: dict, manifest: dict) -> list[str]:
    runs = lineage(record)
    if len(runs) == 1:
        return []
    gone = manifest.get("train_files_gone")
    return [
        f"- Continued training: this run started from the weights, tokenizer and held-out split of a model trained "
        f"before it (`--init-from`; its record is `continued_from` in `{TRAINING_RECORD}`)"
        + (f", on the training files still on this machine ({gone:,} of that model's were gone or changed)"
           if gone else "") + ". The runs, first first:",
        *[f"  - {run['tokens_seen']:,} tokens in {run['train_seconds'] / 60:.1f} minutes on "
          f"{run['hardware'].get('gpu') or run['hardware']['cpu']}" + (f" (`{run['command']}`)" if run.get("command") else "")
          for run in runs],
        f"- In all: {sum(run['tokens_seen'] for run in runs):,} tokens, "
        f"{sum(run['train_seconds'] for run in runs) / 60:.1f} minutes of optimizer steps",
    ]


def _evaluation_section(results: dict) -> list[str]:
    heldout, fim = results["heldout"], results["fim"]
    return [
        "## Evaluation (held-out files)",
        "",
        f"- Held-out loss: {heldout['loss']:.4f} nats/token over {heldout['tokens']:,} tokens "
        f"({heldout['files']} files, {heldout['bytes']:,} bytes"
        + (f"; {heldout['skipped_files']} held-out files of the manifest were missing or changed on the evaluating "
           f"machine and were skipped, so the files differ from the training machine's" if heldout.get("skipped_files")
           else "") + ")",
        f"- Bits per byte: {heldout['bits_per_byte']:.4f}",
        "",
        *format_figures(fim).splitlines(),
        "",
        "A middle parses when `ast.parse(left + middle + right)` succeeds. An empty middle (the model wrote its end of",
        "sequence first) counts as ending by EOS but shows a user nothing. Unconstrained decoding is the model alone;",
        "constrained decoding is what fimlsp serves (`fimlsp.decoding`, file scope). Model ms/token is the median",
        "forward pass per generated token on the evaluating machine's CPU.",
        "",
        "## Suggestions at everyday cursors",
        "",
        f"Constrained, block scope, ended at the statement's end, {_attempts(results.get('examples', []))}, as the",
        "editor server asks. `⁁` marks the cursor in its line; the middle is shown as a Python string, then how it",
        "ended:",
        "",
        *[f"- ``{example['left_tail']}⁁{example['right_head']}`` → ``{example['middle']!r}`` ({example['ending']})"
          for example in results.get("examples", [])],
        "",
    ]


def _attempts(examples: list[dict]) -> str:
    """How the everyday suggestions were decoded (examples from before `attempts` were greedy)."""
    attempts = max((example.get("attempts", 1) for example in examples), default=1)
    return f"the best ended of {attempts} greedy middles" if attempts > 1 else "greedy"


def _ablation_section(path: Path) -> list[str]:
    """Short runs that differ from this model's recipe in one option, when the folder records them (`ABLATION`:
    a list of runs, each with what it changed, its command, and the evaluation.json of its export)."""
    if not path.exists():
        return []
    runs = json.loads(path.read_text(encoding="utf-8"))
    kinds = list(runs[0]["evaluation"]["fim"]["kinds"])
    header = "| run | bits per byte | " + " | ".join(
        f"{KIND_TITLES.get(kind, kind)}: parses / EOS (unconstrained)" for kind in kinds) + " |"
    rows = []
    for run in runs:
        figures = run["evaluation"]["fim"]["kinds"]
        alone = {kind: figures[kind]["unconstrained"] for kind in kinds}
        cells = [f"{alone[kind]['parse_rate']:.0%} / {alone[kind]['eos_rate']:.0%}" for kind in kinds]
        rows.append(f"| {run['name']} | {run['evaluation']['heldout']['bits_per_byte']:.3f} | {' | '.join(cells)} |")
    cases = runs[0]["evaluation"]["fim"]["cases_per_kind"]
    return [
        "## Ablation",
        "",
        f"Short runs that change one option of this recipe; {cases} held-out cases per cut kind, greedy:",
        "",
        header,
        "|" + "---|" * (len(kinds) + 2),
        *rows,
        "",
        *[f"- {run['name']}: {run['changed']} (`{run['command']}`)" for run in runs],
        "",
    ]


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _reproduce_section(record: dict, results: dict, directory: Path) -> list[str]:
    """Commands that rebuild the model into the folder the card is in, from the run folder it was trained in; a
    folder under the working directory (the shipped model's, in a checkout) by its path from there."""
    output, export = record["output"], _shown(directory)
    heldout, fim = results["heldout"], results["fim"]
    runs = lineage(record)
    commands = rebuild_commands(record, export)
    built = [f"`{run['command']}`" for run in runs if run.get("command")]
    built_with = [f"This model was built with {', then '.join(built)}.", ""] if built else []
    if recipe.matches(runs):
        built_with += [f"These {len(runs)} runs are the recipe that `fimlsp train` runs without options "
                       "(`fimlsp.training.recipe`): one after the other, in `runs/default/stage-1`, `stage-2`, …, "
                       "the last model written to `runs/default/model`. Rerun it to resume.", ""]
    return [
        "## Reproduce",
        "",
        "Training (resumable: rerun the same command after an interruption), which also writes the evaluation and",
        "this card" + (", one run after the other, each starting from the model the one before it wrote:"
                       if len(runs) > 1 else ":"),
        "",
        "```",
        *commands,
        "```",
        "",
        *built_with,
        "Evaluation alone:",
        "",
        "```",
        f"fimlsp evaluate-model --model {export} --cases {fim['cases_per_kind']} --seed {fim['seed']} "
        f"--eval-bytes {heldout['max_bytes']} --records {output}/{EVALUATION_RECORDS} --write-card",
        "```",
        "",
    ]
