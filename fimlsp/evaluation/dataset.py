"""Evaluation cases: which files, which cuts, and case files that other tools can read.

Files are kept when the running Python compiles them (Sec. VII-A of Melcer et al.). Cases come from
`fimlsp.cases`: `randspan` deletes, at a point uniform in the first 90% of the file, min(100 characters, 20% of
the file) or up to the end; `boundary` removes the text between two tokens at the same indentation level plus a
random part of the first token; `line` the rest of a line or one to three whole lines; `node` one syntax node
(an expression, a call's arguments, a statement or a block). All are deterministic for a seed and independent of the order of files on
disk: files are ranked by a hash of the seed and their content, and `--files N` takes the first N that yield a
case.

A case file holds one JSON object per line: `id`, `kind`, `file`, `draw`, `seed`, `left`, `middle`, `right`, and
where the file lies, `path` and `project` (absent or null in case files written before them, and for files known
only by their text). The `id` (`kind:file#draw`) names the case in results files. The path and project are what
a completion of the file in an editor has: the repository context (`--context`) and the judges read the project's
other files, never the case's own file on disk (it holds the true middle).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Iterable, Mapping

from fimlsp.cases import boundary_cases, line_cases, node_cases, random_span_cases
from fimlsp.language import DEFAULT_LANGUAGE, named

CUTS = {"randspan": random_span_cases, "boundary": boundary_cases, "line": line_cases, "node": node_cases}
KINDS = tuple(CUTS)


@dataclasses.dataclass(frozen=True)
class EvalCase:
    """One case of an evaluation: the model sees `left` and `right`; `middle` is the deleted text."""

    id: str
    kind: str
    file: str
    draw: int
    seed: int
    left: str
    middle: str
    right: str
    path: str | None = None  # the file's absolute path, where it was read from disk
    project: str | None = None  # its project root (a directory given to `discover`); None: found from the path

    @property
    def context_chars(self) -> int:
        return len(self.left) + len(self.right)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "EvalCase":
        fields = {field.name for field in dataclasses.fields(cls)}
        required = {field.name for field in dataclasses.fields(cls) if field.default is dataclasses.MISSING}
        missing = required - data.keys()
        if missing:
            raise ValueError(f"case without {', '.join(sorted(missing))}")
        return cls(**{name: data[name] for name in fields if name in data})


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a named file lies: its absolute path and its project root (None: the root above the path)."""

    path: str
    project: str | None = None



def locate(paths: Iterable[Path | str]) -> dict[str, Location]:
    """The Python files under `paths` by the names `discover` gives them, with where they lie: a directory given is
    its files' project; a file given alone has the project root above it."""
    found: dict[str, Location] = {}
    for given in paths:
        root = Path(given)
        if root.is_dir():
            project = str(root.resolve())
            for path in sorted(root.rglob("*.py")):
                if path.is_file():
                    found[f"{root.resolve().name}/{path.relative_to(root).as_posix()}"] = Location(
                        str(path.resolve()), project)
        elif root.is_file():
            found[root.as_posix()] = Location(str(root.resolve()))
        else:
            raise FileNotFoundError(f"no such file or directory: {given}")
    return found


def discover(paths: Iterable[Path | str], max_chars: int | None = None) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """(name, text) of the Python files under `paths` that decode as UTF-8 and that the running Python compiles.

    A directory is searched recursively for `*.py` and its files are named relative to it (prefixed by the
    directory's own name), so names do not depend on where a tree lies (`locate` says where each lies). Returns the
    files and counts of those skipped by reason.
    """
    files: dict[str, str] = {}
    skipped = {"unreadable": 0, "syntax": 0, "too_large": 0}
    for name, location in locate(paths).items():
        path = Path(location.path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            skipped["unreadable"] += 1
            continue
        if max_chars is not None and len(text) > max_chars:
            skipped["too_large"] += 1
            continue
        if not named(DEFAULT_LANGUAGE).parses(text):
            skipped["syntax"] += 1
            continue
        files[name] = text
    return sorted(files.items()), skipped


def heldout_files(model_dir: Path, labels: Iterable[str] = ()) -> tuple[list[tuple[str, Path]], int]:
    """The held-out files recorded in a model folder's `corpus.json` (as `fimlsp train` writes it) that are on this
    machine unchanged, as (manifest name, path), optionally only those whose root label (`stdlib`,
    `site-packages`, ...) is in `labels`; and how many were missing or changed."""
    from fimlsp.corpus_manifest import load_manifest, resolve_files
    from fimlsp.model.folder import CORPUS_MANIFEST

    manifest_path = Path(model_dir) / CORPUS_MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{model_dir} has no {CORPUS_MANIFEST} manifest naming its held-out files")
    found, missing = resolve_files(load_manifest(manifest_path), "heldout")
    labels = set(labels)
    if labels:
        found = [(name, path) for name, path in found if name.partition("/")[0] in labels]
    return found, missing


def read_named(paths: Iterable[tuple[str, Path]], max_chars: int | None = None) -> list[tuple[str, str]]:
    """(name, text) of named files that decode and parse, as `discover` keeps them."""
    files = []
    for name, path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if (max_chars is None or len(text) <= max_chars) and named(DEFAULT_LANGUAGE).parses(text):
            files.append((name, text))
    return sorted(files)


def build_cases(
    files: list[tuple[str, str]], kind: str, seed: int, files_limit: int | None = None, per_file: int = 1,
    locations: Mapping[str, Location] | None = None,
) -> list[EvalCase]:
    """Up to `per_file` cases from each of the first `files_limit` files (in the seed's hash order) that yield one;
    a file in `locations` gives its cases its path and project."""
    if kind not in KINDS:
        raise ValueError(f"unknown cut {kind!r}; choose one of {', '.join(KINDS)}")
    make = CUTS[kind]
    cases: list[EvalCase] = []
    used: list[str] = []
    for case in make(files, seed, None, per_file):
        if case.name not in used[-1:]:
            if files_limit is not None and len(used) >= files_limit:
                break
            used.append(case.name)
        where = (locations or {}).get(case.name)
        cases.append(EvalCase(f"{kind}:{case.name}#{case.draw}", kind, case.name, case.draw, seed,
                              case.left, case.middle, case.right, where and where.path, where and where.project))
    return cases


def schedule(cases: list[EvalCase]) -> list[EvalCase]:
    """The cases in the order to run them: every file's first draw before any file's second, kinds alternating,
    so that a run stopped early is still a sample of all files and kinds. Content and ids are unchanged."""
    position: dict[tuple[str, str], int] = {}
    files_of_kind: dict[str, int] = {}
    for case in cases:
        if (case.kind, case.file) not in position:
            position[(case.kind, case.file)] = files_of_kind.get(case.kind, 0)
            files_of_kind[case.kind] = position[(case.kind, case.file)] + 1
    kinds = list(dict.fromkeys(case.kind for case in cases))
    return sorted(cases, key=lambda c: (c.draw, position[(c.kind, c.file)], kinds.index(c.kind)))


def dump_cases(cases: Iterable[EvalCase], path: Path) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case.to_json(), ensure_ascii=False) + "\n")
            count += 1
    return count


def load_cases(path: Path) -> list[EvalCase]:
    """Cases from a case file; a line that is not a case is an error naming the line."""
    cases = []
    ids = set()
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                case = EvalCase.from_json(json.loads(line))
            except (ValueError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not a case: {error}") from None
            if case.id in ids:
                raise ValueError(f"{path}:{number}: case {case.id} appears twice")
            ids.add(case.id)
            cases.append(case)
    return cases


