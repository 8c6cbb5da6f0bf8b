"""Write a model folder as a GGUF file for llama.cpp: `fimlsp complete --model OUT.gguf` then runs it in-process
with llama-cpp-python, without torch.

MODEL is a GPTBigCode model folder with safetensors weights (`default`: the model shipped with fimlsp); it becomes
llama.cpp's `starcoder` architecture, its weights in the precision they were saved in, its tokenizer with the FIM
control tokens, and the FIM format and prompt order of its fim.json.

Exit status: 0 written, 2 a model this cannot convert, or an output that cannot be written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fimlsp.cli import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="model folder, or `default` for the model shipped with fimlsp")
    parser.add_argument("out", metavar="OUT.gguf", type=Path, help="the GGUF file to write")


def run(args: argparse.Namespace) -> int:
    from fimlsp.model.gguf_export import export_gguf
    from fimlsp.model.errors import ModelError
    from fimlsp.weights import DEFAULT_MODEL, default_model_path

    source = default_model_path() if args.model == DEFAULT_MODEL else Path(args.model).expanduser()
    if not source.is_dir():
        raise UserError(f"model folder {args.model!r} does not exist")
    try:
        written = export_gguf(source, args.out)
    except ModelError as error:
        raise UserError(str(error)) from error
    except OSError as error:
        raise UserError(f"{args.out}: cannot write: {error.strerror or error}") from error
    print(f"wrote {written} ({written.stat().st_size / 1e6:.1f} MB)")
    return 0
