"""pyright, the judge of type errors in benchmarks and in tests that check what a judge refuses against it (issue
49): pinned, installed from npm into a cache, never a dependency of fimlsp."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PYRIGHT_VERSION = "1.1.414"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fimlsp" / "benchmarks"
_PROGRAM = CACHE / f"pyright-{PYRIGHT_VERSION}" / "node_modules" / ".bin" / "pyright"


def installed_pyright() -> Path | None:
    """The pinned pyright where it is installed and node can run it; None elsewhere."""
    return _PROGRAM if _PROGRAM.exists() and shutil.which("node") is not None else None


def pyright() -> Path:
    """The pinned pyright, installed from npm into the cache the first time."""
    if _PROGRAM.exists():
        return _PROGRAM
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise SystemExit("pyright needs node and npm (Debian: apt-get install nodejs npm)")
    folder = _PROGRAM.parents[2]
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                           f"pyright@{PYRIGHT_VERSION}"], capture_output=True, text=True)
    if done.returncode != 0 or not _PROGRAM.exists():
        raise SystemExit(f"npm could not install pyright@{PYRIGHT_VERSION}: {done.stderr.strip()[-500:]}")
    return _PROGRAM


def errors_by_file(program: Path, root: Path, files: list[Path]) -> dict[str, collections.Counter]:
    """pyright's errors (standard mode) in each of `files` (under `root`), keyed by (rule, message)."""
    (root / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "standard", "pythonVersion": "3.11"}))
    found: dict[str, collections.Counter] = {str(file): collections.Counter() for file in files}
    for start in range(0, len(files), 200):
        batch = files[start:start + 200]
        done = subprocess.run([str(program), "--outputjson", "--pythonpath", sys.executable, "-p", str(root),
                               *map(str, batch)], capture_output=True, text=True, cwd=root)
        try:
            diagnostics = json.loads(done.stdout)["generalDiagnostics"]
        except (ValueError, KeyError):
            raise SystemExit(f"pyright failed: {(done.stderr or done.stdout).strip()[-800:]}") from None
        for diagnostic in diagnostics:
            if diagnostic["severity"] == "error":
                key = (diagnostic.get("rule", "syntax"), diagnostic["message"].splitlines()[0])
                found.setdefault(diagnostic["file"], collections.Counter())[key] += 1
    return found


if __name__ == "__main__":
    print(pyright())
