"""Fill-in-the-middle prompt formats as data, one per model family.

A template is a sequence of pieces: `{left}` and `{right}` for the contexts, control-token names, and literal
text (CodeLlama puts spaces around its markers). Prefix-suffix-middle (`psm`) is what every family supports;
suffix-prefix-middle (`spm`) is offered where the family was trained on it.

Other files of the repository (`FimModel.prompt`'s `extra`) are written as the family was trained to read them:
StarCoder2 and Qwen2.5-Coder have a repository-name token and a file-separator token, and such a prompt opens with
the repository's files in llama.cpp's server's layout (`/infill`'s `input_extra`): the repository token and a name,
then each file's separator, path, line break and text, then a separator for the file being completed, all before the
template. A family without them (DeepSeek-Coder, whose repository-level data marks each file with a path comment,
and every other) reads each file as a path comment, a line break and its text, at the start of the left context.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fimlsp.model.folder import FIM_SETTINGS

LEFT, RIGHT = "{left}", "{right}"

# What llama.cpp's server writes after the repository token and after the last file separator (it has neither the
# repository's name nor the file's path): the same prompt as through its `/infill`.
REPOSITORY_NAME, CURRENT_FILE = "myproject", "filename"


@dataclass(frozen=True)
class Snippet:
    """A piece of another file of the repository for the prompt (`FimModel.prompt`'s `extra`): its path as the prompt
    names it (relative to the project or the package folder) and its text. Here, beside the formats that write it,
    so that the context makes snippets without importing the engines' interface (numpy)."""

    path: str
    text: str


@dataclass(frozen=True)
class FimFormat:
    name: str
    controls: tuple[str, ...]  # control tokens that must exist in the tokenizer's vocabulary
    templates: dict[str, tuple[str, ...]]  # order -> pieces
    stops: tuple[str, ...]  # tokens that end the middle
    families: tuple[str, ...] = field(default=())  # substrings of a model's name or `model_type` that pick this
    # The repository-name and file-separator tokens, used where the vocabulary has both (StarCoder2's, not StarCoder's)
    repository: tuple[str, str] | None = None
    path_comment: str = "# "  # what starts a file's path line where they are not used

    @property
    def orders(self) -> tuple[str, ...]:
        return tuple(self.templates)

    @property
    def named_tokens(self) -> tuple[str, ...]:
        """The tokens an engine looks up by name (`FimModel.control_id`)."""
        return self.controls + self.stops + (self.repository or ())


_STARCODER_CONTROLS = ("<fim_prefix>", "<fim_suffix>", "<fim_middle>")

FORMATS: dict[str, FimFormat] = {
    fmt.name: fmt
    for fmt in (
        FimFormat(
            "fimlsp",
            _STARCODER_CONTROLS,
            {
                "psm": ("<fim_prefix>", LEFT, "<fim_suffix>", RIGHT, "<fim_middle>"),
                "spm": ("<fim_prefix>", "<fim_suffix>", RIGHT, "<fim_middle>", LEFT),
            },
            ("<|endoftext|>",),
            ("fimlsp",),
        ),
        FimFormat(
            "starcoder",
            _STARCODER_CONTROLS,
            {
                "psm": ("<fim_prefix>", LEFT, "<fim_suffix>", RIGHT, "<fim_middle>"),
                "spm": ("<fim_prefix>", "<fim_suffix>", RIGHT, "<fim_middle>", LEFT),
            },
            ("<|endoftext|>", "<file_sep>", "<fim_pad>"),
            ("starcoder", "gpt_bigcode", "bigcode"),
            repository=("<repo_name>", "<file_sep>"),
        ),
        FimFormat(
            "santacoder",
            ("<fim-prefix>", "<fim-suffix>", "<fim-middle>"),
            {
                "psm": ("<fim-prefix>", LEFT, "<fim-suffix>", RIGHT, "<fim-middle>"),
                "spm": ("<fim-prefix>", "<fim-suffix>", RIGHT, "<fim-middle>", LEFT),
            },
            ("<|endoftext|>", "<fim-pad>"),
            ("santacoder",),
        ),
        FimFormat(
            "deepseek",
            ("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"),
            {"psm": ("<｜fim▁begin｜>", LEFT, "<｜fim▁hole｜>", RIGHT, "<｜fim▁end｜>")},
            ("<｜end▁of▁sentence｜>", "<|EOT|>"),
            ("deepseek",),
            path_comment="#",
        ),
        FimFormat(
            "codellama",
            ("<PRE>", "<SUF>", "<MID>"),
            {
                "psm": ("<PRE>", " ", LEFT, " ", "<SUF>", RIGHT, " ", "<MID>"),
                "spm": ("<PRE>", " ", "<SUF>", RIGHT, " ", "<MID>", " ", LEFT),
            },
            ("<EOT>", "</s>"),
            ("codellama", "code_llama", "llama"),
        ),
        FimFormat(
            "qwen",
            ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
            {"psm": ("<|fim_prefix|>", LEFT, "<|fim_suffix|>", RIGHT, "<|fim_middle|>")},
            ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|im_end|>"),
            ("qwen",),
            repository=("<|repo_name|>", "<|file_sep|>"),
        ),
    )
}


def detect_format(vocabulary: set[str] | dict, name: str = "", model_type: str = "") -> FimFormat | None:
    """The format whose control tokens the vocabulary has; the model's name breaks ties (ours vs StarCoder)."""
    candidates = [fmt for fmt in FORMATS.values() if all(token in vocabulary for token in fmt.controls)]
    if not candidates:
        return None
    label = f"{name} {model_type}".lower()
    for fmt in candidates:
        if any(family in label for family in fmt.families):
            return fmt
    return candidates[0]


FIM_FORMAT_KEY, FIM_ORDER_KEY = "fimlsp.fim.format", "fimlsp.fim.order"  # the same in a GGUF file's metadata


def write_fim_settings(directory: Path, fim_format: str, order: str) -> None:
    (Path(directory) / FIM_SETTINGS).write_text(json.dumps({"format": fim_format, "order": order}) + "\n",
                                                 encoding="utf-8")


def preferred_order(directory: Path) -> str:
    """The prompt order a model folder names in its `fim.json` (a model trained mostly on one order does best
    with it); prefix-suffix-middle when it names none. ValueError when the file is not JSON."""
    path = Path(directory) / FIM_SETTINGS
    if path.is_file():
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"its {FIM_SETTINGS} cannot be read as JSON ({error})") from None
        order = settings.get("order") if isinstance(settings, dict) else None
        if isinstance(order, str):
            return order
    return "psm"
