"""A corpus manifest: the files a model was trained and held out on, each by its root's label, its path under
that root and a prefix of its content's SHA-256, with the roots as the training machine had them. `fimlsp train`
writes one into its run folder and every model folder it exports (`fimlsp.training.corpus`); evaluation reads the
held-out files from it, and a continued run its training files, finding them on this machine by their content.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def load_manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def resolve_files(
    manifest: dict, split: str, roots: dict[str, Path] | None = None
) -> tuple[list[tuple[str, Path]], int]:
    """Find a split's files on this machine: (name, path) of those whose content still matches, and how many did not."""
    roots = roots if roots is not None else {label: Path(p) for label, p in manifest["roots"].items()}
    found: list[tuple[str, Path]] = []
    missing = 0
    for name, sha_prefix, _size in manifest[split]:
        label, _, relative = name.partition("/")
        path = roots.get(label, Path("/nonexistent")) / relative
        try:
            data = path.read_bytes()
        except OSError:
            missing += 1
            continue
        if hashlib.sha256(data).hexdigest()[: len(sha_prefix)] != sha_prefix:
            missing += 1
            continue
        found.append((name, path))
    return found, missing


def keep_present(manifest: dict, split: str) -> dict:
    """The manifest with a split cut down to the files this machine still has unchanged, and how many went: a run
    that continues another machine's model trains on what is here, and its held-out split stays the model's."""
    found = {name for name, _path in resolve_files(manifest, split)[0]}
    rows = [row for row in manifest[split] if row[0] in found]
    return {**manifest, split: rows, f"{split}_files": len(rows), f"{split}_bytes": sum(row[2] for row in rows),
            f"{split}_files_gone": len(manifest[split]) - len(rows)}


def relocate(manifest: dict, places: dict[str, Path]) -> dict:
    """The manifest with the roots of the labels in `places` moved there (a model trained on another machine,
    whose roots were that machine's folders). A file is looked for at its relative path under its label's new
    root, and where that holds other content, by its content hash among the Python files under that root (another
    Python version or layout puts a module elsewhere); a file found by its hash is renamed to where it is."""
    unknown = sorted(set(places) - set(manifest["roots"]))
    if unknown:
        raise ValueError(f"the corpus has no root labelled {', '.join(unknown)} (its labels: "
                         f"{', '.join(sorted(manifest['roots']))})")
    by_hash: dict[str, dict[str, str]] = {}

    def place(row: list) -> list:
        name, sha_prefix, size = row
        label, _, relative = name.partition("/")
        if label not in places:
            return row
        path = places[label] / relative
        try:
            if hashlib.sha256(path.read_bytes()).hexdigest().startswith(sha_prefix):
                return row
        except OSError:
            pass
        if label not in by_hash:
            by_hash[label] = _hashes_under(places[label], len(sha_prefix))
        found = by_hash[label].get(sha_prefix)
        return [f"{label}/{found}", sha_prefix, size] if found is not None else row

    moved = {**manifest, "roots": {**manifest["roots"], **{label: str(root) for label, root in places.items()}}}
    for split in ("train", "heldout"):
        moved[split] = [place(row) for row in manifest[split]]
    return moved


def _hashes_under(root: Path, prefix_length: int) -> dict[str, str]:
    """The relative path of each Python file under `root`, by the prefix of its content's SHA-256."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:prefix_length]
        except OSError:
            continue
        found.setdefault(digest, path.relative_to(root).as_posix())
    return found
