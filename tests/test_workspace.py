"""The workspace reads only what it may: inside its roots, not ignored, not binary, not too large."""

import os
from pathlib import Path

import pytest

from fimlsp.workspace import Workspace, path_from_uri, project_root


def write(path: Path, text: str | bytes = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def relative_files(workspace: Workspace, root: Path, suffixes=None) -> list[str]:
    return sorted(path.relative_to(root.resolve()).as_posix() for path in workspace.files(suffixes))


def test_project_root_is_the_nearest_folder_with_a_marker(tmp_path):
    write(tmp_path / "repo" / "pyproject.toml", "")
    write(tmp_path / "repo" / "sub" / "setup.cfg", "")
    deep = write(tmp_path / "repo" / "sub" / "pkg" / "mod.py")
    top = write(tmp_path / "repo" / "top.py")
    (tmp_path / "gitrepo" / ".git").mkdir(parents=True)
    in_git = write(tmp_path / "gitrepo" / "a" / "b.py")
    assert project_root(deep) == (tmp_path / "repo" / "sub").resolve()
    assert project_root(top) == (tmp_path / "repo").resolve()
    assert project_root(in_git) == (tmp_path / "gitrepo").resolve()


def test_a_file_without_any_marker_above_gets_its_own_folder(tmp_path):
    loose = write(tmp_path / "loose" / "c.py")
    if any((folder / marker).exists() for folder in tmp_path.resolve().parents
           for marker in ("pyproject.toml", "setup.py", "setup.cfg", ".git")):
        pytest.skip("the temporary folder lies inside a project")
    assert project_root(loose) == (tmp_path / "loose").resolve()


def test_symlinks_out_of_the_root_are_neither_listed_nor_read(tmp_path):
    outside = write(tmp_path / "secret" / "keys.py", "TOKEN = 'hunter2'\n")
    write(tmp_path / "secret" / "more.py", "PASSWORD = 1\n")
    root = tmp_path / "proj"
    write(root / "main.py")
    os.symlink(outside, root / "link.py")
    os.symlink(tmp_path / "secret", root / "linked_dir")
    os.symlink(root / "main.py", root / "alias.py")  # a symlink that stays inside is fine
    workspace = Workspace([root])
    assert relative_files(workspace, root) == ["main.py"]
    assert workspace.read(root / "link.py") is None
    assert workspace.read(root / "linked_dir" / "more.py") is None
    assert workspace.read(outside) is None
    assert workspace.read(root / "alias.py") == "x = 1\n"
    assert workspace.read(root / ".." / "secret" / "keys.py") is None


def test_gitignore_is_honoured_at_every_level(tmp_path):
    root = tmp_path / "proj"
    write(root / ".gitignore", "generated/\n*.log\n/top_only.py\n!keep.log\n")
    write(root / "generated" / "big.py")
    write(root / "app.log", "log")
    write(root / "keep.log", "kept")
    write(root / "top_only.py")
    write(root / "pkg" / "top_only.py")
    write(root / "pkg" / ".gitignore", "local_*.py\n")
    write(root / "pkg" / "local_settings.py", "SECRET = 1\n")
    write(root / "local_other.py")  # the nested .gitignore does not apply above its folder
    write(root / "pkg" / "mod.py")
    workspace = Workspace([root])
    assert relative_files(workspace, root) == [".gitignore", "keep.log", "local_other.py", "pkg/.gitignore",
                                               "pkg/mod.py", "pkg/top_only.py"]
    assert workspace.read(root / "pkg" / "local_settings.py") is None
    assert workspace.read(root / "generated" / "big.py") is None
    assert workspace.read(root / "pkg" / "mod.py") == "x = 1\n"


def test_user_excludes_and_default_folders_are_skipped(tmp_path):
    root = tmp_path / "proj"
    write(root / "src" / "a.py")
    write(root / "tests" / "test_a.py")
    write(root / "vendor" / "lib.py")
    write(root / ".venv" / "lib" / "site.py")
    write(root / "src" / "__pycache__" / "a.cpython-311.pyc", b"\0\0")
    (root / ".git").mkdir()
    write(root / ".git" / "config", "[core]\n")
    workspace = Workspace([root], exclude=["vendor/", "tests/**"])
    assert relative_files(workspace, root) == ["src/a.py"]
    assert workspace.read(root / "vendor" / "lib.py") is None
    assert workspace.read(root / ".git" / "config") is None


def test_binary_and_oversized_files_are_not_read(tmp_path):
    root = tmp_path / "proj"
    write(root / "blob.py", b"x = 1\n\0\0\x01")
    write(root / "latin.py", "s = 'caf\xe9'\n".encode("latin-1") * 3)
    write(root / "big.py", "y = 2\n" * 200)
    write(root / "small.py")
    workspace = Workspace([root], max_file_bytes=1000)
    assert workspace.read(root / "blob.py") is None
    assert workspace.read(root / "latin.py") is None
    assert workspace.read(root / "big.py") is None
    assert workspace.read(root / "small.py") == "x = 1\n"
    assert workspace.read(root / "missing.py") is None


def test_open_documents_override_the_disk_and_notify(tmp_path):
    root = tmp_path / "proj"
    path = write(root / "mod.py", "on_disk = 1\n")
    workspace = Workspace([root])
    changed = []
    workspace.on_change(changed.append)
    workspace.set_text(path, "unsaved = 2\n")
    assert workspace.read(path) == "unsaved = 2\n"
    new = root / "new.py"
    workspace.set_text(new, "fresh = 3\n")
    assert "new.py" in relative_files(workspace, root)
    workspace.close(path)
    assert workspace.read(path) == "on_disk = 1\n"
    assert changed == [path.resolve(), new.resolve(), path.resolve()]


def test_open_documents_outside_the_roots_stay_out(tmp_path):
    (tmp_path / "proj").mkdir()
    workspace = Workspace([tmp_path / "proj"])
    elsewhere = tmp_path / "elsewhere.py"
    workspace.set_text(elsewhere, "secret = 1\n")
    assert workspace.read(elsewhere) is None
    assert list(workspace.files()) == []


def test_roots_from_initialize(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    write(first / "a.py")
    write(second / "b.py")
    workspace = Workspace.from_initialize([{"uri": first.as_uri(), "name": "one"}, {"uri": second.as_uri()},
                                           {"uri": (first / "nested").as_uri()}], root_uri=None)
    assert workspace.roots == (first.resolve(), second.resolve())
    assert Workspace.from_initialize(None, second.as_uri()).roots == (second.resolve(),)
    assert Workspace.from_initialize([], None).roots == ()
    assert path_from_uri("untitled:Untitled-1") is None


def test_suffix_filter_and_the_cli_workspace(tmp_path):
    root = tmp_path / "proj"
    write(root / "pyproject.toml", "")
    write(root / "pkg" / "a.py")
    write(root / "pkg" / "notes.txt", "hello")
    workspace = Workspace.for_file(root / "pkg" / "a.py")
    assert workspace.roots == (root.resolve(),)
    assert relative_files(workspace, root, (".py",)) == ["pkg/a.py"]
    assert Workspace.for_file(root / "pkg" / "a.py", project=root / "pkg").roots == ((root / "pkg").resolve(),)


@pytest.mark.parametrize("target", ["..", "/"])
def test_a_root_symlink_loop_or_escape_does_not_walk_out(tmp_path, target):
    root = tmp_path / "proj"
    write(root / "a.py")
    os.symlink(target, root / "up")
    workspace = Workspace([root])
    assert relative_files(workspace, root) == ["a.py"]
