"""Which Python environment a project runs in, found apart from reading what it imports (`environment`)."""

from __future__ import annotations

import os
import re
import site
import sys
import sysconfig
import time
from glob import glob
from pathlib import Path

from fimlsp.python import environment as environment_module  # its _RECHECK_SECONDS read at each call
from fimlsp.python.environment import ENVIRONMENTS_LOCK, Environment

_VENV_NAMES = (".venv", "venv", "env")
_FOUND: dict[tuple, tuple[float, Environment]] = {}


def find_environment(project: str | os.PathLike | None, setting: str | os.PathLike | None = None) -> Environment:
    """The environment the project's code runs in: `setting` (an interpreter or an environment's folder), else the
    process's `VIRTUAL_ENV` or `CONDA_PREFIX`, else a virtual environment in `project`, else fimlsp's own. Kept
    for a few seconds (a `.venv` created meanwhile counts then)."""
    key = (None if project is None else str(project), None if setting is None else str(setting),
           os.environ.get("VIRTUAL_ENV"), os.environ.get("CONDA_PREFIX"))
    now = time.monotonic()
    with ENVIRONMENTS_LOCK:
        found = _FOUND.get(key)
    if found is not None and now - found[0] < environment_module._RECHECK_SECONDS:
        return found[1]
    environment = _find(*key)
    with ENVIRONMENTS_LOCK:
        _FOUND[key] = (now, environment)
    return environment


def _find(project: str | None, setting: str | None, virtual_env: str | None, conda: str | None) -> Environment:
    if setting:
        return _of_setting(Path(setting).expanduser())
    for name, prefix in (("VIRTUAL_ENV", virtual_env), ("CONDA_PREFIX", conda)):
        if prefix and os.path.isdir(prefix):
            return _of_prefix(Path(prefix), name)
    if project is not None:
        venv = _project_venv(Path(project))
        if venv is not None:
            return _of_prefix(venv, "project")
    return running_environment()


def _project_venv(project: Path) -> Path | None:
    try:
        children = sorted(entry.name for entry in os.scandir(project) if entry.is_dir())
    except OSError:
        return None
    for name in [*_VENV_NAMES, *(child for child in children if child not in _VENV_NAMES)]:
        if name in children and (project / name / "pyvenv.cfg").is_file():
            return project / name
    return None


def _of_setting(path: Path) -> Environment:
    """An interpreter (`.venv/bin/python`) or an environment's folder."""
    if path.is_file():
        folder = path.parent
        for prefix in (folder, folder.parent):  # where CPython looks for pyvenv.cfg
            if (prefix / "pyvenv.cfg").is_file():
                return _of_prefix(prefix, "setting")
        if os.path.realpath(path) == os.path.realpath(sys.executable):
            return running_environment("setting")
        return _of_prefix(folder.parent if folder.name in ("bin", "Scripts") else folder, "setting")
    if path.is_dir():
        return _of_prefix(path, "setting")
    return Environment("setting", str(path), unknown=f"the interpreter setting {path} does not exist")


def running_environment(found_by: str = "fimlsp's interpreter") -> Environment:
    """The interpreter fimlsp runs on: its own folders, as `site` found them."""
    paths = sysconfig.get_paths()
    stdlib = _existing([paths["stdlib"], paths["platstdlib"], os.path.join(paths["stdlib"], "lib-dynload"),
                        os.path.join(paths["platstdlib"], "lib-dynload")])
    sites = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        sites.append(site.getusersitepackages())
    return Environment(found_by, sys.prefix, stdlib, _existing(sites), _pythonpath(),
                       (f"{sys.version_info[0]}.{sys.version_info[1]}",))


def _of_prefix(prefix: Path, found_by: str) -> Environment:
    """A virtual environment (its `pyvenv.cfg` names its base interpreter), a conda environment or an
    installation, read from its folders."""
    if prefix.resolve() == Path(sys.prefix).resolve():
        return running_environment(found_by)
    config = _pyvenv_config(prefix / "pyvenv.cfg")
    libraries = [Path(folder) for folder in sorted(glob(str(prefix / "lib*" / "python3*")))
                 if (Path(folder) / "site-packages").is_dir() or (Path(folder) / "os.py").is_file()]
    versions = {match.group(1) for folder in libraries if (match := re.match(r"python(3\.\d+)", folder.name))}
    if "version_info" in config or "version" in config:
        found = re.match(r"(3\.\d+)", config.get("version_info") or config.get("version", ""))
        if found:
            versions.add(found.group(1))
    sites = [str(folder / "site-packages") for folder in libraries] + [str(prefix / "Lib" / "site-packages")]
    stdlib = [str(folder) for folder in libraries if (folder / "os.py").is_file()]
    stdlib += [str(folder / "lib-dynload") for folder in libraries]
    stdlib += [str(prefix / "Lib"), str(prefix / "DLLs")] if (prefix / "Lib" / "os.py").is_file() else []
    if config:  # a virtual environment: its standard library is its base interpreter's
        home = Path(config.get("home", ""))
        base = home.parent if home.name in ("bin", "Scripts") else home
        for version in sorted(versions):
            stdlib += [str(base / "lib" / f"python{version}"), str(base / "lib" / f"python{version}" / "lib-dynload")]
        stdlib += [str(home / "Lib"), str(home / "DLLs")]
        if config.get("include-system-site-packages", "false").lower() == "true":
            sites += _installation_sites(base, versions)
    else:
        sites += _installation_sites(prefix, versions)
    stdlib_found = _existing(stdlib)
    sites_found = _existing(sites)
    unknown = None
    if not sites_found:
        unknown = f"no site-packages folder found in {prefix}"
    return Environment(found_by, str(prefix), stdlib_found, sites_found, _pythonpath(), tuple(sorted(versions)),
                       unknown)


def _installation_sites(prefix: Path, versions: set[str]) -> list[str]:
    """An installation's site folders (Debian's dist-packages too) and its user's."""
    found = [str(prefix / "lib" / f"python{version}" / "site-packages") for version in sorted(versions)]
    found += [str(prefix / "lib" / "python3" / "dist-packages"), str(prefix / "Lib" / "site-packages")]
    found += [str(prefix / "local" / "lib" / f"python{version}" / "dist-packages") for version in sorted(versions)]
    found += [os.path.expanduser(f"~/.local/lib/python{version}/site-packages") for version in sorted(versions)]
    return found


def _pyvenv_config(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    config = {}
    for line in lines:
        key, equals, value = line.partition("=")
        if equals:
            config[key.strip().lower()] = value.strip()
    return config


def _existing(folders) -> tuple[str, ...]:
    """The folders that exist, each once (`lib64` is often a link to `lib`)."""
    seen: dict[str, str] = {}
    for folder in folders:
        if folder and os.path.isdir(folder):
            seen.setdefault(os.path.realpath(folder), folder)
    return tuple(seen.values())


def _pythonpath() -> tuple[str, ...]:
    return _existing(os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry)
