"""Repository context in the prompt (`FimModel.prompt`'s `extra`, issue 45): each family writes other files as it
was trained to read them (`fimlsp.model.formats`), the token budget is split in one place (`backend.split_room`),
and a prompt without them is the prompt it always was."""

from __future__ import annotations

import dataclasses
import os

import pytest

from fimlsp.model.backend import FimModel, Snippet, split_local, split_room
from fimlsp.model.formats import FORMATS

MODELS = Snippet("shop/models.py", "class Order:\n    amount: int\n    customer: str\n")
UTILS = Snippet("shop/utils.py", "def total(orders):\n    return sum(order.amount for order in orders)")
LEFT, RIGHT = "from shop.models import Order\n\norder = Order(", ")\nprint(order)\n"


@dataclasses.dataclass
class ByteModel(FimModel):
    """A vocabulary of the 256 bytes and the named tokens it is given: a prompt reads back as text, its named tokens
    by name, so a test sees the whole prompt."""

    names: tuple[str, ...] = ()

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def control_id(self, piece: str) -> int:
        return 256 + self.names.index(piece) if piece in self.names else {}[piece]

    def prompt_pass(self, ids, shared=False, deadline=None):
        raise NotImplementedError("prompts only")

    def text(self, ids: list[int]) -> str:
        return b"".join(bytes([token]) if token < 256 else self.names[token - 256].encode() for token in ids).decode()


def byte_model(fmt: str, order: str = "psm", window: int = 4096, names: tuple[str, ...] | None = None,
               **fields) -> ByteModel:
    chosen = FORMATS[fmt]
    names = chosen.named_tokens if names is None else names
    table = [bytes([byte]) for byte in range(256)] + [None] * len(names)
    return ByteModel(chosen, order, table, frozenset(), window, fmt, "cpu", names=tuple(names), **fields)


STARCODER_ONE = ("<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<|endoftext|>")  # no <repo_name>, no <file_sep>


@pytest.mark.parametrize("fmt, names, expected", [
    ("starcoder", None,
     "<repo_name>myproject\n<file_sep>shop/models.py\n" + MODELS.text + "<file_sep>shop/utils.py\n" + UTILS.text
     + "<file_sep>filename\n<fim_prefix>" + LEFT + "<fim_suffix>" + RIGHT + "<fim_middle>"),
    ("qwen", None,
     "<|repo_name|>myproject\n<|file_sep|>shop/models.py\n" + MODELS.text + "<|file_sep|>shop/utils.py\n" + UTILS.text
     + "<|file_sep|>filename\n<|fim_prefix|>" + LEFT + "<|fim_suffix|>" + RIGHT + "<|fim_middle|>"),
    ("starcoder", STARCODER_ONE,
     "<fim_prefix># shop/models.py\n" + MODELS.text + "# shop/utils.py\n" + UTILS.text + "\n" + LEFT
     + "<fim_suffix>" + RIGHT + "<fim_middle>"),
    ("deepseek", None,
     "<｜fim▁begin｜>#shop/models.py\n" + MODELS.text + "#shop/utils.py\n" + UTILS.text + "\n" + LEFT
     + "<｜fim▁hole｜>" + RIGHT + "<｜fim▁end｜>"),
    ("codellama", None,
     "<PRE> # shop/models.py\n" + MODELS.text + "# shop/utils.py\n" + UTILS.text + "\n" + LEFT + " <SUF>" + RIGHT
     + " <MID>"),
    ("santacoder", None,
     "<fim-prefix># shop/models.py\n" + MODELS.text + "# shop/utils.py\n" + UTILS.text + "\n" + LEFT
     + "<fim-suffix>" + RIGHT + "<fim-middle>"),
])
def test_each_family_writes_other_files_as_it_was_trained_to_read_them(fmt, names, expected):
    """StarCoder2 and Qwen2.5-Coder: repository and file-separator tokens before the template, in llama.cpp's
    `/infill` layout; StarCoder (no such tokens), DeepSeek-Coder and the rest: path comments at the left's start."""
    model = byte_model(fmt, names=names)
    assert model.text(model.prompt(LEFT, RIGHT, 64, extra=[MODELS, UTILS])) == expected


def test_in_suffix_prefix_middle_order_the_path_comments_go_just_before_the_left_context():
    model = byte_model("fimlsp", "spm")
    assert model.text(model.prompt(LEFT, RIGHT, 64, extra=[MODELS])) == (
        "<fim_prefix><fim_suffix>" + RIGHT + "<fim_middle># shop/models.py\n" + MODELS.text + LEFT)


@pytest.mark.parametrize("fmt, order", [(name, order) for name, fmt in FORMATS.items() for order in fmt.orders])
def test_without_repository_context_the_prompt_is_the_template_around_the_contexts(fmt, order):
    """No extra context, no trace of it: the pieces of the template and the contexts, nothing else."""
    model = byte_model(fmt, order)
    pieces = []
    for piece in model.format.templates[order]:
        pieces.append(LEFT if piece == "{left}" else RIGHT if piece == "{right}" else piece)
    assert model.text(model.prompt(LEFT, RIGHT, 64)) == "".join(pieces)
    assert model.prompt(LEFT, RIGHT, 64, extra=()) == model.prompt(LEFT, RIGHT, 64)


def test_the_left_and_right_contexts_are_cut_as_before_without_extra_context():
    """Half the room each where both are long, and a short side's rest to the other: the rule of every prompt."""
    assert split_local(100, 30, 40) == (30, 40)
    assert split_local(100, 300, 400) == (50, 50)
    assert split_local(100, 20, 400) == (20, 80)
    assert split_local(100, 400, 20) == (80, 20)
    model = byte_model("starcoder", window=200)
    left, right = "a" * 500, "b" * 500
    text = model.text(model.prompt(left, right, 20))
    assert text == "<fim_prefix>" + "a" * 89 + "<fim_suffix>" + "b" * 88 + "<fim_middle>"


def test_the_left_context_keeps_its_end_and_at_least_its_share_beside_extra_context():
    """However much repository context there is, the left context's last tokens stay and the local contexts keep
    what the model's budget for extras leaves them; the extras fill at most that budget."""
    model = byte_model("starcoder", window=1024)
    left = "".join(f"line_{number} = {number}\n" for number in range(400))
    snippets = [Snippet(f"shop/module_{number}.py", f"value_{number} = {number}\n" * 6) for number in range(40)]
    ids = model.prompt(left, RIGHT, 64, extra=snippets)
    text = model.text(ids)
    budget = model.extra_tokens_budget
    assert budget == 256  # a quarter of a window under twice llama.cpp's batch
    assert len(ids) <= 1024 - 64
    assert 0 < ids.index(model.control_id("<fim_prefix>")) <= budget  # the extras and their separators
    kept_left = text[text.index("<fim_prefix>") + len("<fim_prefix>"):text.index("<fim_suffix>")]
    assert left.endswith(kept_left) and len(kept_left) + len(RIGHT) >= (1024 - 64 - 3) - budget


def test_with_no_room_beside_the_local_contexts_there_is_no_extra_context():
    """A time budget that cuts the prompt to what the local contexts fill leaves the extras out entirely; so does a
    model whose measured budget for them is 0."""
    model = byte_model("qwen", window=1024)
    left = "x = 1\n" * 400
    assert model.prompt(left, RIGHT, 64, limit=128, extra=[MODELS]) == model.prompt(left, RIGHT, 64, limit=128)
    measured = byte_model("qwen", window=1024, extra_tokens=0)
    assert measured.prompt(LEFT, RIGHT, 64, extra=[MODELS]) == measured.prompt(LEFT, RIGHT, 64)


def test_the_budget_is_split_in_one_place():
    # the local contexts come first, up to what the budget leaves of the whole room; extras fill the rest
    assert split_room(room=900, whole=900, budget=300, local=2000) == 300
    assert split_room(room=900, whole=900, budget=300, local=100) == 300  # no more than the budget
    assert split_room(room=600, whole=900, budget=300, local=2000) == 0  # a time budget's cut: no room left
    assert split_room(room=700, whole=900, budget=300, local=2000) == 100
    assert split_room(room=900, whole=900, budget=5000, local=2000) == 675  # local contexts keep a quarter


def test_a_snippet_that_does_not_fit_whole_is_left_out_and_later_ones_still_come():
    model = byte_model("qwen", window=1024, extra_tokens=120)
    large = Snippet("shop/large.py", "x = 1\n" * 40)
    small = Snippet("shop/small.py", "y = 2\n")
    text = model.text(model.prompt(LEFT, RIGHT, 64, extra=[large, small]))
    assert "shop/large.py" not in text and "<|file_sep|>shop/small.py\ny = 2\n" in text


def test_the_prompt_starts_the_same_from_keystroke_to_keystroke():
    """The extras come before the left context and do not change as the user types: an engine's cache of the last
    keystroke's prompt keeps them (llama.cpp reads only what follows the shared start)."""
    for fmt, order in (("qwen", "psm"), ("starcoder", "psm"), ("fimlsp", "spm")):
        model = byte_model(fmt, order, names=STARCODER_ONE if fmt != "qwen" else None)
        before = model.prompt(LEFT, RIGHT, 64, extra=[MODELS, UTILS])
        after = model.prompt(LEFT + "amount=", RIGHT, 64, extra=[MODELS, UTILS])
        shared = model.text(before[:len(os.path.commonprefix([before, after]))])
        assert MODELS.text in shared and UTILS.text in shared and shared.endswith(LEFT), (fmt, shared)


def test_token_healing_takes_back_the_same_bytes_with_repository_context(tiny):
    spm = dataclasses.replace(tiny, order="spm")
    for left in ("def f(x):\n    return ", "def f(x):\n    pri", "def f(x):\n    "):
        plain, taken = spm.healed_prompt(left, "\n", 16, blanks=" \t\f")
        healed, taken_with = spm.healed_prompt(left, "\n", 16, blanks=" \t\f", extra=[MODELS])
        assert taken_with == taken and taken
        middle, added = plain.index(spm.control_id("<fim_middle>")) + 1, len(healed) - len(plain)
        assert added > 0 and healed[:middle] + healed[middle + added:] == plain


def test_the_shipped_vocabulary_has_no_file_tokens_so_its_engines_write_path_comments(tiny):
    """The transformers engine and llama.cpp's read the shipped vocabulary alike: no `<file_sep>`, so path
    comments, at the left context's start (after `<fim_middle>` in its suffix-prefix-middle order)."""
    from fimlsp.model import load_model

    gguf = load_model()
    try:
        for model in (dataclasses.replace(tiny, order="spm"), gguf):
            with pytest.raises(KeyError):
                model.control_id("<file_sep>")
            plain = model.prompt(LEFT, RIGHT, 64)
            ids = model.prompt(LEFT, RIGHT, 64, extra=[MODELS])
            middle = plain.index(model.control_id("<fim_middle>")) + 1
            assert ids[:middle] == plain[:middle] and ids[len(ids) - len(plain) + middle:] == plain[middle:]
            written = b"".join(model.token_bytes[token] for token in ids[middle:len(ids) - len(plain) + middle])
            assert written == b"# shop/models.py\n" + MODELS.text.encode()
    finally:
        gguf.close()


def test_complete_middles_reads_extra_context_in_its_prompt_and_nowhere_else(tiny, monkeypatch):
    """`complete_middles(..., extra=)` hands the snippets to the prompt; the constraint still sees the document's
    own contexts, so the middle is valid where the file is."""
    from fimlsp.decoding import DecodingOptions, complete_middles
    from fimlsp.model.transformers import TransformersModel

    prompts = []
    original = TransformersModel.prompt_pass
    monkeypatch.setattr(TransformersModel, "prompt_pass", lambda self, ids, shared=False, deadline=None: (
        prompts.append(list(ids)) or original(self, ids, shared, deadline)))
    left, right = "from shop.models import Order\n\ndef total(order):\n    return ", "\n"
    options = DecodingOptions(max_tokens=8)
    complete_middles(tiny, left, right, options)
    result = complete_middles(tiny, left, right, options, extra=[MODELS])[0]
    written = tiny.encode("# shop/models.py\n" + MODELS.text)

    def holds(ids: list[int]) -> bool:
        return any(ids[start:start + len(written)] == written for start in range(len(ids)))

    assert len(prompts) == 2 and not holds(prompts[0]) and holds(prompts[1])
    assert result.valid
    compile(left + result.middle + right, "<cut>", "exec")
