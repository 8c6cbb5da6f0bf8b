"""A model folder's file names are written once (`fimlsp.model.folder`): training writes, and loading, the folder
checks, evaluation and the commands read, the same declared names, so no copy of a name can drift from it."""

import ast
from pathlib import Path

from fimlsp.model import folder
from fimlsp.syntax_trees import parsed

ROOT = Path(__file__).resolve().parent.parent
DECLARED = {value for name, value in vars(folder).items() if name.isupper() and isinstance(value, str)}
OTHER_FILES = {"fimlsp/settings/files.py": {"README.md"}}  # the VS Code extension's README, not a model card


def literal_names(path: Path) -> list[str]:
    """The declared file names that a module writes as a string of its own: a whole string constant, or a piece of
    an f-string (`f"{model}/corpus.json"`)."""
    found = []
    for node in ast.walk(parsed(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and node.value in DECLARED:
            found.append(f"{node.value} (line {node.lineno})")
        elif isinstance(node, ast.JoinedStr):
            pieces = [part.value for part in node.values if isinstance(part, ast.Constant)]
            found += [f"{name} (line {node.lineno})" for name in DECLARED
                      if any(name in piece.replace("`", " ").split() or piece.endswith("/" + name) for piece in pieces)]
    return found


def test_the_names_are_the_files_a_trained_model_folder_holds():
    assert {"config.json", "model.safetensors", "tokenizer.json", "fim.json", "corpus.json", "training.json",
            "evaluation.json", "README.md"} <= DECLARED
    shipped = {path.name for path in (ROOT / "fimlsp" / "weights" / "default").iterdir()}
    assert {folder.CONFIG, folder.WEIGHTS, folder.TOKENIZER, folder.TOKENIZER_CONFIG, folder.FIM_SETTINGS,
            folder.CORPUS_MANIFEST, folder.TRAINING_RECORD, folder.EVALUATION, folder.CARD} <= shipped


def test_no_module_of_the_package_spells_a_model_folder_file_itself():
    copies = {}
    for path in sorted((ROOT / "fimlsp").rglob("*.py")):
        if path == Path(folder.__file__):
            continue
        relative = path.relative_to(ROOT).as_posix()
        found = [name for name in literal_names(path) if name.split()[0] not in OTHER_FILES.get(relative, set())]
        if found:
            copies[relative] = found
    assert not copies, copies
