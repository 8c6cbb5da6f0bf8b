"""The workspace: the folders whose files a completion may read, and the open documents' unsaved text over them.

Language-agnostic. Every read of a project file goes through a `Workspace`, which is what keeps the privacy promise:
nothing outside its roots is read (a symlink that leads out is not followed), files ignored by `.gitignore` or by the
user's exclude globs are never read, and neither are binary files or files over the size limit. An open document's
text (the editor's `didOpen`/`didChange`) overrides the file on disk, so analysis sees what the user sees.

Roots come from LSP `initialize` (`workspaceFolders`, else `rootUri`), or from the CLI's `--project DIR`, whose
default is `project_root(file)`.
"""
from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

import pathspec

if os.name == "nt":
    from urllib.request import url2pathname
else:  # what urllib.request's is on POSIX, without importing it (http.client, email: 50 ms of the server's start)
    url2pathname = unquote

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_FILE_BYTES = 512 * 1024  # larger files are generated or data, not code worth a prompt's room
# Folders no one wants searched, whether or not a .gitignore says so (a virtual environment holds the packages
# the environment's resolution reads on its own terms; VCS and cache folders hold no source).
DEFAULT_EXCLUDES = (".git/", ".hg/", ".svn/", "__pycache__/", "node_modules/", ".venv/", "venv/", ".tox/", ".nox/",
                    ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", "*.egg-info/")
_BINARY_PROBE = 8192

ChangeListener = Callable[[Path], None]


def project_root(path: str | os.PathLike) -> Path:
    """The nearest folder at or above the file that holds a project marker, else the file's own folder."""
    start = Path(path).resolve()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return folder


def globs(text: str) -> list[str]:
    """The exclude globs of a setting: comma-separated, .gitignore's syntax."""
    return [each.strip() for each in text.split(",") if each.strip()]


def path_from_uri(uri: str) -> Path | None:
    """The local path of a `file:` URI; None for any other scheme (an untitled buffer, a remote file)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(url2pathname(unquote(parsed.path)))


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _is_binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start < len(head) - 4  # a probe may end inside a character
    return False


class _Ignores:
    """The `.gitignore` files of one root, each applying to the folder that holds it and below (as git reads them),
    plus the default and user excludes, which apply from the root."""

    def __init__(self, root: Path, excludes: Sequence[str]):
        self.root = root
        self._base = pathspec.GitIgnoreSpec.from_lines([*DEFAULT_EXCLUDES, *excludes])
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._lock = threading.Lock()

    def _spec(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        with self._lock:
            if folder in self._specs:
                return self._specs[folder]
        spec = None
        gitignore = folder / ".gitignore"
        try:
            if gitignore.is_file() and not gitignore.is_symlink() and gitignore.stat().st_size <= MAX_FILE_BYTES:
                spec = pathspec.GitIgnoreSpec.from_lines(gitignore.read_text("utf-8", errors="replace").splitlines())
        except OSError:
            spec = None
        with self._lock:
            self._specs[folder] = spec
        return spec

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether `path` (under the root) is ignored by itself; a caller walking down has already skipped ignored
        folders, and `ignored_anywhere` checks every folder above."""
        relative = path.relative_to(self.root).as_posix() + ("/" if is_dir else "")
        if self._base.match_file(relative):
            return True
        folder = path.parent
        while True:
            spec = self._spec(folder)
            if spec is not None and spec.match_file(path.relative_to(folder).as_posix() + ("/" if is_dir else "")):
                return True
            if folder == self.root:
                return False
            folder = folder.parent

    def ignored_anywhere(self, path: Path) -> bool:
        current = self.root
        for part in path.relative_to(self.root).parts[:-1]:
            current = current / part
            if self.ignored(current, True):
                return True
        return self.ignored(path, False)


class Workspace:
    """Roots, their readable files, and the open documents' text over the disk. Safe to use from several threads."""

    def __init__(self, roots: Iterable[str | os.PathLike], *, exclude: Sequence[str] = (),
                 max_file_bytes: int = MAX_FILE_BYTES):
        resolved: list[Path] = []
        for root in roots:
            path = Path(root).resolve()
            if path.is_dir() and not any(_within(path, kept) for kept in resolved):
                resolved = [kept for kept in resolved if not _within(kept, path)] + [path]
        self.roots: tuple[Path, ...] = tuple(resolved)
        self.exclude = tuple(exclude)
        self.max_file_bytes = max_file_bytes
        self._ignores = {root: _Ignores(root, self.exclude) for root in self.roots}
        self._overlay: dict[Path, str] = {}
        self._lock = threading.Lock()
        self._listeners: list[ChangeListener] = []

    @classmethod
    def from_initialize(cls, workspace_folders: Sequence | None, root_uri: str | None, root_path: str | None = None,
                        **options) -> Workspace:
        """LSP `initialize`: its `workspaceFolders` (objects with `uri`, or dicts), else `rootUri`, else `rootPath`."""
        roots: list[Path] = []
        for folder in workspace_folders or ():
            uri = folder.get("uri") if isinstance(folder, dict) else getattr(folder, "uri", None)
            path = path_from_uri(uri) if uri else None
            if path is not None:
                roots.append(path)
        if not roots and root_uri:
            path = path_from_uri(root_uri)
            if path is not None:
                roots.append(path)
        if not roots and root_path:
            roots.append(Path(root_path))
        return cls(roots, **options)

    @classmethod
    def for_file(cls, path: str | os.PathLike, project: str | os.PathLike | None = None, **options) -> Workspace:
        """The CLI's workspace: `--project DIR`, else the file's `project_root`."""
        return cls([project if project is not None else project_root(path)], **options)

    # -- what may be read

    def root_of(self, path: str | os.PathLike) -> Path | None:
        """The root a path lies in once every symlink is resolved; None outside every root."""
        try:
            real = Path(path).resolve()
        except (OSError, RuntimeError):
            return None
        for root in self.roots:
            if _within(real, root):
                return root
        return None

    def allowed(self, path: str | os.PathLike) -> bool:
        """Whether the file may be read: inside a root (symlinks resolved) and not ignored or excluded."""
        root = self.root_of(path)
        if root is None:
            return False
        real = Path(path).resolve()
        return real != root and not self._ignores[root].ignored_anywhere(real)

    def read(self, path: str | os.PathLike) -> str | None:
        """The file's text: an open document's unsaved text, else the disk's; None where it may not be read, is
        binary, too large, or unreadable."""
        real = Path(path).resolve()
        with self._lock:
            text = self._overlay.get(real)
        if text is not None:
            return text if self.allowed(real) else None
        if not self.allowed(real):
            return None
        return self._read_disk(real)

    def _read_disk(self, path: Path) -> str | None:
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_file_bytes:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        if len(data) > self.max_file_bytes or _is_binary(data[:_BINARY_PROBE]):
            return None
        return data.decode("utf-8", errors="replace")

    def files(self, suffixes: Sequence[str] | None = None) -> Iterator[Path]:
        """The readable files of every root (resolved paths), walking no symlinked folder and no ignored one; the
        size and binary checks are `read`'s. Open documents not yet on disk come last."""
        seen: set[Path] = set()
        for root in self.roots:
            ignores = self._ignores[root]
            for folder, dirnames, filenames in os.walk(root, followlinks=False):
                here = Path(folder)
                dirnames[:] = sorted(name for name in dirnames
                                     if not (here / name).is_symlink() and not ignores.ignored(here / name, True))
                for name in sorted(filenames):
                    if suffixes is not None and not name.endswith(tuple(suffixes)):
                        continue
                    path = here / name
                    if path.is_symlink():
                        target = self.root_of(path)
                        if target is None:
                            continue
                        path = path.resolve()
                        if not path.is_file() or not self.allowed(path):
                            continue
                    elif ignores.ignored(path, False):
                        continue
                    if path not in seen:
                        seen.add(path)
                        yield path
        with self._lock:
            unsaved = sorted(self._overlay)
        for path in unsaved:
            if path not in seen and (suffixes is None or path.name.endswith(tuple(suffixes))) and self.allowed(path):
                seen.add(path)
                yield path

    # -- open documents

    def open_documents(self) -> list[Path]:
        with self._lock:
            return list(self._overlay)

    def set_text(self, path: str | os.PathLike, text: str) -> None:
        """An open document's current text (didOpen, didChange), which overrides the disk until `close`."""
        real = Path(path).resolve()
        with self._lock:
            self._overlay[real] = text
        self._changed(real)

    def close(self, path: str | os.PathLike) -> None:
        real = Path(path).resolve()
        with self._lock:
            known = self._overlay.pop(real, None) is not None
        if known:
            self._changed(real)

    def file_changed(self, path: str | os.PathLike) -> None:
        """A file changed on disk (didSave, didChangeWatchedFiles)."""
        self._changed(Path(path).resolve())

    def on_change(self, listener: ChangeListener) -> None:
        """Call `listener(path)` after an open document's text or a file on disk changes."""
        with self._lock:
            self._listeners.append(listener)

    def _changed(self, path: Path) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(path)
