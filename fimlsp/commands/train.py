"""Train fimlsp's small fill-in-the-middle model from the Python files on this machine, export and evaluate it.

The run lives in --output: corpus manifest, tokenizer, packed data, checkpoints and log. Run the same command
again after an interruption to resume from the last checkpoint; the result is the same as an uninterrupted run.
When training ends, the model (safetensors, float16), its tokenizer, the corpus manifest, the training record,
the evaluation and a model card are written to --export.

Without result options (and without --init-from) it runs the shipped model's recipe (`fimlsp.training.recipe`):
its runs one after the other (`fimlsp.training.pipeline.run_recipe`), in --output/stage-1, stage-2, …, each
continuing the model of the one before it.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path

OPTION_HELP = {
    "seed": "seed of the file split, the FIM transformation, the data order, the initial weights and the evaluation cases",
    "heldout_fraction": "share of the deduplicated files held out from training, chosen by a seeded content hash",
    "max_train_mb": "training corpus budget in MB of source; files are taken in seeded order until it is full "
                    "(the default takes every usable file: more unique code beats more passes over less)",
    "max_heldout_mb": "held-out corpus budget in MB of source",
    "max_file_kb": "skip source files larger than this many kB (huge and data-like files)",
    "data_parts": "build each pass over the training files as this many data files of about equal size, each with "
                  "its own FIM draws and window order, so that --data-workers build the parts of a pass in parallel "
                  "and training waits for one part, not a whole pass, before its first step (a batch draws from one "
                  "part at a time)",
    "vocab_size": "byte-level BPE vocabulary size, the five special tokens included",
    "tokenizer_mb": "MB of training source used to train the tokenizer",
    "n_layer": "number of transformer layers",
    "n_embd": "hidden size: the width of the embeddings and of every layer",
    "n_head": "attention heads (queries; there is one shared key/value head: multi-query attention)",
    "seq_len": "context length in tokens, for training windows and the model's positions",
    "min_segment_tokens": "shortest training segment in tokens: segment lengths are drawn uniformly from this to "
                          "the context length, so that a middle's end is not tied to a window position",
    "fim_rate": "probability that a segment is FIM-transformed",
    "spm_rate": "share of FIM samples in suffix-prefix-middle order (the rest are prefix-suffix-middle)",
    "line_span_rate": "share of FIM samples whose middle is the rest of a line or one to three whole lines",
    "node_span_rate": "share of FIM samples whose middle is one syntax node (expression, arguments, statement, "
                      "block); the rest of the FIM samples cut at two random points",
    "random_span_length": "how the rest's middles are drawn: uniform (between two uniform points: a third of the "
                          "segment on average), log (a uniform start and a log-uniform length: mostly short "
                          "middles, after which the end of sequence is learnt; about one in ten empty) or log-nonempty "
                          "(the same from one character: no empty middles)",
    "eos_weight": "loss weight of the end of sequence that closes a FIM middle, against 1 for every other token: "
                  "one such token per sample is too rare a target for a small model to write it where a middle "
                  "ends rather than go on (a weight w moves its learnt log-odds up by about ln w)",
    "repeat_unlikelihood": "weight of an unlikelihood loss on the tokens that would repeat an earlier n-gram of the "
                           "text after <fim_middle> where the true token differs (0: none): against the loops a "
                           "small model's greedy middles end in",
    "repeat_ngram": "n of --repeat-unlikelihood: a token is a repeat when it followed the same n - 1 tokens before",
    "tokens": "training token budget; it fixes the number of steps and with it the cosine schedule",
    "batch_size": "windows per optimizer step",
    "lr": "peak learning rate of AdamW",
    "min_lr_ratio": "the cosine schedule ends at this fraction of the peak learning rate",
    "warmup_steps": "steps of linear learning-rate warmup",
    "weight_decay": "AdamW weight decay of weight matrices",
    "grad_clip": "clip the gradient norm to this value",
    "precision": "bf16: bfloat16 autocast (weights and optimizer stay float32); fp32: plain float32",
}
CHOICES = {"precision": ("bf16", "fp32")}


class _ResultOption(argparse.Action):
    """Stores a result option and notes that it was given: without any, `fimlsp train` runs the recipe."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.given_results = (getattr(namespace, "given_results", None) or set()) | {self.dest}


class DefaultsFormatter(argparse.HelpFormatter):
    """Shows an option's default in its help when it has a meaningful one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and action.option_strings:
            help_text += " (default: %(default)s)"
        return help_text


def option_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fimlsp.training.fim import RANDOM_LENGTHS
    from fimlsp.training.options import RunControl, TrainOptions

    choices = CHOICES | {"random_span_length": RANDOM_LENGTHS}
    parser.formatter_class = DefaultsFormatter
    run = parser.add_argument_group("run")
    run.add_argument("--output", type=Path, default=Path("runs/default"),
                     help="run folder: manifest, tokenizer, data, checkpoints, log; reused to resume")
    run.add_argument("--export", type=Path, default=None,
                     help="where the finished model goes; OUTPUT/model when not given")
    run.add_argument("--init-from", type=Path, default=None, metavar="MODEL",
                     help="start from this fimlsp-trained model's weights instead of random ones, with its tokenizer "
                          "and held-out split, training on its training files that this machine has: training "
                          "longer than one run, across machines")
    run.add_argument("--corpus-map", action="append", default=None, metavar="LABEL=DIR",
                     help="with --init-from: the folder on this machine that holds the corpus root its manifest "
                          "labels LABEL (repeatable); files are matched by their content hashes")
    run.add_argument("--corpus-root", action="append", type=Path, default=None, metavar="DIR",
                     help="use this folder of Python files instead of the standard library and site-packages "
                          "(repeatable; labelled by folder name)")
    run.add_argument("--device", default=RunControl.device,
                     help="torch device: auto (a GPU when present, else CPU), cpu, cuda, cuda:1, ...")
    run.add_argument("--threads", type=int, default=None, help="torch CPU threads; torch's choice when not given")
    run.add_argument("--data-workers", type=int, default=RunControl.data_workers, metavar="N",
                     help="processes that build the coming epochs' packed windows while the model trains, so that "
                          "a GPU never waits for data (0: each epoch is built when it starts); the windows are the "
                          "same either way")
    run.add_argument("--checkpoint-every", type=int, default=RunControl.checkpoint_every,
                     help="save a checkpoint every this many steps")
    run.add_argument("--keep-checkpoints", type=int, default=RunControl.keep_checkpoints,
                     help="how many recent checkpoints to keep")
    run.add_argument("--max-minutes", type=float, default=None,
                     help="wall-clock budget of this invocation: when spent, training ends cleanly (checkpoint, "
                          "export, evaluation) with the schedule still planned for --tokens")
    run.add_argument("--stop-after", type=int, default=None, metavar="STEPS",
                     help="pause after this many steps in this invocation (checkpoint, no export); rerun to resume")
    run.add_argument("--eval-cases", type=int, default=RunControl.eval_cases,
                     help="held-out FIM cases of each cut kind completed after training")
    run.add_argument("--eval-bytes", type=int, default=RunControl.eval_bytes,
                     help="held-out bytes over which loss and bits per byte are measured")
    run.add_argument("--max-shard-mib", type=float, default=None, metavar="MIB",
                     help="export the weights in safetensors files of at most this many MiB, with an index "
                          "(transformers' sharded format, which fimlsp loads like one file), so that the model can be "
                          "copied where file sizes are limited; one file when not given")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    model = parser.add_argument_group(
        "result (a run folder keeps the values it was started with; without any of them and without --init-from, "
        "the shipped model's recipe: its runs one after the other in OUTPUT/stage-1, stage-2, …)")
    for field in dataclasses.fields(TrainOptions):
        model.add_argument(option_flag(field.name), type=type(field.default), default=field.default,
                           choices=choices.get(field.name), help=OPTION_HELP[field.name], action=_ResultOption)


def options_from(args: argparse.Namespace):
    from fimlsp.training.options import TrainOptions

    return TrainOptions(**{field.name: getattr(args, field.name) for field in dataclasses.fields(TrainOptions)})


def validate(args: argparse.Namespace) -> None:
    from fimlsp.cli import UserError
    from fimlsp.model.folder import WEIGHTS, WEIGHTS_INDEX, weight_files

    positive = ["data_parts", "vocab_size", "n_layer", "n_embd", "n_head", "seq_len", "min_segment_tokens", "tokens", "batch_size",
                "warmup_steps", "checkpoint_every", "keep_checkpoints", "eval_bytes"]
    for name in positive:
        if getattr(args, name) <= 0:
            raise UserError(f"{option_flag(name)} must be positive")
    for name in ["heldout_fraction", "fim_rate", "spm_rate", "line_span_rate", "node_span_rate", "min_lr_ratio"]:
        if not 0 <= getattr(args, name) <= 1:
            raise UserError(f"{option_flag(name)} must be between 0 and 1")
    if args.eos_weight < 1:
        raise UserError("--eos-weight must be at least 1")
    if args.repeat_unlikelihood < 0:
        raise UserError("--repeat-unlikelihood must not be negative")
    if args.repeat_ngram < 2:
        raise UserError("--repeat-ngram must be at least 2")
    if args.line_span_rate + args.node_span_rate > 1:
        raise UserError("--line-span-rate and --node-span-rate must sum to at most 1")
    if args.n_embd % args.n_head:
        raise UserError("--n-embd must be a multiple of --n-head")
    if args.vocab_size < 300:
        raise UserError("--vocab-size must be at least 300 (256 bytes, 5 special tokens and some merges)")
    if args.eval_cases < 0:
        raise UserError("--eval-cases must not be negative")
    if args.data_workers < 0:
        raise UserError("--data-workers must not be negative")
    if args.stop_after is not None and args.stop_after < 0:
        raise UserError("--stop-after must not be negative")
    if args.max_minutes is not None and args.max_minutes <= 0:
        raise UserError("--max-minutes must be positive")
    if args.output.exists() and not args.output.is_dir():
        raise UserError(f"--output {args.output} is not a folder")
    if args.init_from is not None and not weight_files(args.init_from):
        raise UserError(f"--init-from {args.init_from} is not a model folder (no {WEIGHTS} or {WEIGHTS_INDEX})")
    if args.max_shard_mib is not None and args.max_shard_mib <= 0:
        raise UserError("--max-shard-mib must be positive")
    if args.init_from is not None and args.corpus_root:
        raise UserError("--init-from trains on the files of the model it continues; leave out --corpus-root")
    if args.corpus_map and args.init_from is None:
        raise UserError("--corpus-map says where the corpus of --init-from's model is; give --init-from")
    corpus_map(args)
    for root in args.corpus_root or []:
        if not root.is_dir():
            raise UserError(f"--corpus-root {root} is not a folder")
    if args.device not in ("auto", "cpu") and not args.device.startswith(("cuda", "mps", "xpu")):
        raise UserError(f"--device {args.device} is not a torch device name")


def follows_recipe(args: argparse.Namespace) -> bool:
    return args.init_from is None and not getattr(args, "given_results", None)


def corpus_map(args: argparse.Namespace) -> dict[str, Path]:
    """The --corpus-map options as labels and folders (a UserError for a malformed one)."""
    from fimlsp.cli import UserError

    places: dict[str, Path] = {}
    for given in args.corpus_map or []:
        label, equals, folder = given.partition("=")
        if not equals or not label or not folder:
            raise UserError(f"--corpus-map {given}: write LABEL=DIR")
        if not Path(folder).is_dir():
            raise UserError(f"--corpus-map {given}: {folder} is not a folder")
        places[label] = Path(folder).resolve()
    return places


def run(args: argparse.Namespace) -> int:
    from fimlsp.cli import UserError
    from fimlsp.training import corpus, pipeline, recipe
    from fimlsp.training.options import RunControl, TrainingError

    validate(args)
    if follows_recipe(args) and args.max_minutes is not None:
        raise UserError("--max-minutes would end a stage of the recipe before its planned end; interrupt or use "
                        "--stop-after, then rerun the same command to resume")
    if args.corpus_root:
        roots = {root.resolve().name: root.resolve() for root in args.corpus_root}
        if len(roots) != len(args.corpus_root):
            raise UserError("--corpus-root folders must have different names")
    else:
        roots = corpus.default_roots()
    control = RunControl(
        output=args.output,
        export=args.export or args.output / "model",
        roots=roots,
        device=args.device,
        threads=args.threads,
        data_workers=args.data_workers,
        max_shard_mib=args.max_shard_mib,
        checkpoint_every=args.checkpoint_every,
        keep_checkpoints=args.keep_checkpoints,
        max_minutes=args.max_minutes,
        stop_after=args.stop_after,
        eval_cases=args.eval_cases,
        eval_bytes=args.eval_bytes,
        progress=not args.no_progress,
        init_from=args.init_from,
        corpus_map=corpus_map(args),
        command="fimlsp train " + shlex.join(sys.argv[2:]) if sys.argv[1:2] == ["train"] else None,
    )
    try:
        if follows_recipe(args):
            result = pipeline.run_recipe(recipe.DEFAULT_RECIPE, control, lambda line: print(line, flush=True))
        else:
            result = pipeline.train(options_from(args), control)
    except TrainingError as error:
        raise UserError(str(error)) from None
    if result is None:
        print(f"paused; rerun the same command to resume from the last checkpoint in {args.output}")
    else:
        print(f"model written to {result}")
    return 0
