"""The project's Python environment and the modules it can import, read without running anything (issue 49): a
module-existence judge must read the user's environment, not fimlsp's (the server's venv is not the project's, and
`import django` is fine where the project has it).

`find_environment` (in `fimlsp.python.environment_finder`) picks it: an explicit interpreter or environment path
(a setting), else the process's `VIRTUAL_ENV` or `CONDA_PREFIX`, else a virtual environment in the project's folder
(`.venv`, `venv`, `env`, or any child folder with a `pyvenv.cfg`), else the interpreter fimlsp runs on. `importable`
lists what it can import at the top level: the standard library, every entry of its site-packages folders and of
the folders their `.pth` files add, and the packages editable installs map (their finder's `MAPPING`, read with
`ast`). Where that cannot be known soundly (a `.pth` that runs code other than the well-known lines, a
`sitecustomize`, an unreadable folder) it says why, and the judge relaxes. Listings, not imports: about 20 ms for
this project's venv (its distributions' requirements read too), kept until a folder's mtime changes.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import threading
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from importlib.machinery import all_suffixes
from pathlib import Path

from fimlsp.syntax_trees import parsed

_RECHECK_SECONDS = 2.0  # how long a folder's listing is used before its mtime is read again
_MODULE_SUFFIXES = tuple(sorted(set(all_suffixes()), key=len, reverse=True))  # importable files, the longest first
# Modules of other Pythons' standard libraries than the one fimlsp runs on (removed since 3.6, added since 3.11, built
# for tests), for a project whose interpreter's own library folder cannot be found.
_OTHER_VERSIONS_STDLIB = frozenset({
    "_bootlocale", "_dummy_thread", "dummy_threading", "formatter", "macpath", "parser", "symbol", "binhex",
    "asynchat", "asyncore", "distutils", "imp", "smtpd", "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt",
    "imghdr", "mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib",
    "uu", "xdrlib", "lib2to3", "_crypt", "_msi", "tomllib", "_pylong", "_wmi", "_pyrepl", "_colorize",
    "_interpreters", "_interpchannels", "_interpqueues", "_suggestions", "_sysconfig", "_ios_support",
    "_apple_support", "_opcode_metadata", "annotationlib", "compression", "_zstd", "_testcapi", "_testinternalcapi",
    "_testbuffer", "_testimportmultiple", "_testmultiphase", "_testsinglephase", "_testclinic", "_ctypes_test",
    "_xxtestfuzz", "xxlimited", "xxlimited_35", "xxsubtype", "_xxsubinterpreters", "_xxinterpchannels",
})
_WINDOWS_STDLIB = frozenset({"_testconsole", "_msi", "_overlapped", "_winapi", "msvcrt", "nt", "winreg", "winsound"})
# The `.pth` lines known not to make modules importable, or whose modules are read below.
_DISTUTILS_SHIM = re.compile(  # setuptools' distutils-precedence.pth
    r"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, '(?:local|stdlib)'\) == 'local'; "
    r"enabled and __import__\('_distutils_hack'\)\.add_shim\(\); ?")
_EDITABLE_FINDER = re.compile(r"import (__editable___[\w.]+_finder); \1\.install\(\)\s*")
_EDITABLES_REDIRECTOR = re.compile(r"import (_editable_impl_\w+)\s*")  # hatchling's `editables`
_HARMLESS_LINES = re.compile(  # virtualenv's, and easy_install's reordering of sys.path
    r"import _virtualenv\s*|import sys; sys\.__plen = len\(sys\.path\)\s*"
    r"|import sys; new = sys\.path\[sys\.__plen:\]; del sys\.path\[sys\.__plen:\]; "
    r"p = getattr\(sys, '__egginsert', 0\); sys\.path\[p:p\] = new; sys\.__egginsert = p \+ len\(new\)\s*")
_NAMESPACE_PACKAGE = re.compile(r"import sys, types, os;.*f_locals\['sitedir'\], \*\(((?:'\w+',\s*)+)\)\).*")
_STARTUP_MODULES = ("sitecustomize", "usercustomize")
# A requirement's distribution name (`python-multipart>=0.0.18; extra == "full"`, `PySide6 (>=6.9)`).
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:[<>=!~;@(,]|$)")
_QUOTED = re.compile(r"\"([^\"\n]*)\"|'([^'\n]*)'")
_TABLE_KEY = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=", re.MULTILINE)
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "environment.yml", "environment.yaml")
# Distributions whose module is named otherwise (most are their name, or it without a `python-` or `py` prefix).
_MODULES_OF = {
    "pyyaml": "yaml", "pillow": "PIL", "beautifulsoup4": "bs4", "scikit_learn": "sklearn", "scikit_image": "skimage",
    "opencv_python": "cv2", "opencv_python_headless": "cv2", "opencv_contrib_python": "cv2", "protobuf": "google",
    "pyjwt": "jwt", "pyzmq": "zmq", "attrs": "attr", "msgpack_python": "msgpack", "faiss_cpu": "faiss",
    "faiss_gpu": "faiss", "pymupdf": "fitz", "pycryptodome": "Crypto", "pycryptodomex": "Cryptodome",
    "google_cloud_storage": "google", "grpcio": "grpc", "pywin32": "win32api", "setuptools": "pkg_resources",
    "ruamel_yaml": "ruamel", "typing_extensions": "typing_extensions", "tensorflow_gpu": "tensorflow",
    "torch_cpu": "torch", "markdown_it_py": "markdown_it", "python_dateutil": "dateutil", "dnspython": "dns",
    "pyserial": "serial", "pyusb": "usb", "pygobject": "gi", "pyopengl": "OpenGL", "ipython": "IPython",
}


@dataclass(frozen=True, slots=True)
class Environment:
    """A Python environment: where its standard library and site-packages lie, and how it was found."""

    found_by: str  # "setting", "VIRTUAL_ENV", "CONDA_PREFIX", "project", "fimlsp's interpreter"
    prefix: str | None
    stdlib: tuple[str, ...] = ()  # its standard library's folders (none found: another Python's, not listed)
    site: tuple[str, ...] = ()  # its site-packages folders, whose `.pth` files count
    extra: tuple[str, ...] = ()  # other folders on its path (the process's PYTHONPATH)
    versions: tuple[str, ...] = ()  # "3.11": the Pythons its folders are for
    unknown: str | None = None  # why what it imports cannot be known (then every module may exist)


@dataclass(frozen=True, slots=True)
class Listing:
    """A folder's entries as the import system sees them."""

    names: tuple[str, ...]  # every entry's name up to its first dot, where that is an identifier (sorted)
    folders: frozenset[str]  # its subfolders
    modules: frozenset[str]  # the modules its files are: sources, bytecode, extension modules

    def begins(self, prefix: str) -> bool:
        """Whether some name begins with `prefix`."""
        return _begins(self.names, prefix)

    def has(self, name: str) -> bool:
        return _has(self.names, name)


@dataclass(frozen=True, slots=True)
class Importable:
    """What an environment imports: its top-level names and where their packages lie."""

    names: tuple[str, ...] = ()  # sorted
    folders: tuple[str, ...] = ()  # its path: the standard library's, site-packages and the folders `.pth` files add
    mapped: dict[str, tuple[str, ...]] = field(default_factory=dict)  # dotted name -> the folders a finder maps it to
    mapped_modules: frozenset[str] = frozenset()  # dotted names a finder maps to a module's file
    opaque: frozenset[str] = frozenset()  # top-level names whose submodules cannot be listed
    declared: frozenset[str] = frozenset()  # modules its distributions require, installed or not (`module_key`)
    unknown: str | None = None

    def begins(self, prefix: str) -> bool:
        return _begins(self.names, prefix)

    def has(self, name: str) -> bool:
        return _has(self.names, name)


def _begins(names: tuple[str, ...], prefix: str) -> bool:
    at = bisect_left(names, prefix)
    return at < len(names) and names[at].startswith(prefix)


def _has(names: tuple[str, ...], name: str) -> bool:
    at = bisect_left(names, name)
    return at < len(names) and names[at] == name


_IMPORTABLE: dict[Environment, tuple[float, tuple, Importable]] = {}
_LISTINGS: dict[str, tuple[float, int, Listing | None]] = {}
ENVIRONMENTS_LOCK = threading.Lock()


def listing(folder: str) -> Listing | None:
    """A folder's entries (None where it cannot be read), listed again when its mtime has changed."""
    now = time.monotonic()
    with ENVIRONMENTS_LOCK:
        kept = _LISTINGS.get(folder)
    if kept is not None and now - kept[0] < _RECHECK_SECONDS:
        return kept[2]
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        mtime = -1
    if kept is not None and kept[1] == mtime:
        found = kept[2]
    else:
        found = _list(folder) if mtime != -1 else None
    with ENVIRONMENTS_LOCK:
        _LISTINGS[folder] = (now, mtime, found)
    return found


def _list(folder: str) -> Listing | None:
    names, folders, modules = set(), set(), set()
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                stem = entry.name.split(".", 1)[0]
                if not stem.isidentifier():
                    continue
                names.add(stem)
                try:
                    is_folder = entry.is_dir()
                except OSError:
                    is_folder = False
                if is_folder:
                    if stem == entry.name:
                        folders.add(stem)
                elif any(entry.name.endswith(suffix) for suffix in _MODULE_SUFFIXES):
                    modules.add(stem)
    except OSError:
        return None
    return Listing(tuple(sorted(names)), frozenset(folders), frozenset(modules))


def importable(environment: Environment) -> Importable:
    """What `environment` imports at the top level, listed again when one of its folders' mtime has changed."""
    if environment.unknown:
        return Importable(unknown=environment.unknown)
    now = time.monotonic()
    with ENVIRONMENTS_LOCK:
        kept = _IMPORTABLE.get(environment)
    if kept is not None and now - kept[0] < _RECHECK_SECONDS:
        return kept[2]
    if kept is not None:
        stamps = _stamps(kept[2].folders)
        if stamps == kept[1]:
            with ENVIRONMENTS_LOCK:
                _IMPORTABLE[environment] = (now, stamps, kept[2])
            return kept[2]
    found = _importable(environment)
    with ENVIRONMENTS_LOCK:
        _IMPORTABLE[environment] = (now, _stamps(found.folders), found)
    return found


def _stamps(folders: tuple[str, ...]) -> tuple[int, ...]:
    stamps = []
    for folder in folders:
        try:
            stamps.append(os.stat(folder).st_mtime_ns)
        except OSError:
            stamps.append(-1)
    return tuple(stamps)


def _importable(environment: Environment) -> Importable:
    names = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | _WINDOWS_STDLIB | {"__main__"}
    opaque = set(sys.builtin_module_names)
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if not environment.stdlib or any(version != own for version in environment.versions):
        names |= _OTHER_VERSIONS_STDLIB
    if not environment.stdlib:  # another Python's library, not found: its packages' submodules cannot be listed
        opaque |= set(sys.stdlib_module_names) | _OTHER_VERSIONS_STDLIB
    folders = list(environment.stdlib) + list(environment.site)
    mapped: dict[str, list[str]] = {}
    for site_folder in environment.site:
        found = listing(site_folder)
        if found is None:
            return Importable(unknown=f"{site_folder} cannot be read")
        if any(name in found.modules for name in _STARTUP_MODULES):
            return Importable(unknown=f"{site_folder} has a module run at start-up ({', '.join(_STARTUP_MODULES)})")
        try:
            pths = sorted(name for name in os.listdir(site_folder)
                          if name.endswith(".pth") and not name.startswith("."))
        except OSError:
            return Importable(unknown=f"{site_folder} cannot be read")
        for pth in pths:
            why = _read_pth(site_folder, pth, folders, mapped, names, opaque)
            if why is not None:
                return Importable(unknown=why)
    folders += [folder for folder in environment.extra if folder not in folders]
    for folder in folders:
        found = listing(folder)
        if found is not None:
            names.update(found.names)
    names.update(name.split(".")[0] for name in mapped)
    mapped_folders = {name: tuple(path for path in paths if os.path.isdir(path)) for name, paths in mapped.items()}
    mapped_modules = frozenset(name for name, paths in mapped.items() if not all(map(os.path.isdir, paths)))
    declared = frozenset().union(*(_required_by_distributions(folder) for folder in environment.site))
    return Importable(tuple(sorted(names)), tuple(folders), mapped_folders, mapped_modules, frozenset(opaque),
                      declared)


def _read_pth(site_folder: str, pth: str, folders: list[str], mapped: dict[str, list[str]], names: set[str],
              opaque: set[str]) -> str | None:
    """Reads one `.pth` file as `site` would run it: its path lines add folders, and its `import` lines must be
    ones known (an editable install's finder, setuptools' distutils shim); a string says why they are not."""
    path = os.path.join(site_folder, pth)
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as error:
        return f"{path} cannot be read: {error.strerror}"
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        if not line.startswith(("import ", "import\t")):
            entry = os.path.join(site_folder, line.rstrip())
            if os.path.isdir(entry) and entry not in folders:
                folders.append(entry)
            elif os.path.isfile(entry):
                return f"{path} adds {entry}, an archive that is not read"
            continue
        if _DISTUTILS_SHIM.fullmatch(line.rstrip("\r\n")):
            names.add("distutils")
            opaque.add("distutils")
        elif _HARMLESS_LINES.fullmatch(line):
            continue
        elif found := _EDITABLE_FINDER.fullmatch(line):
            why = _editable_finder(os.path.join(site_folder, found.group(1) + ".py"), mapped)
            if why is not None:
                return why
        elif found := _EDITABLES_REDIRECTOR.fullmatch(line):
            why = _editables_redirector(os.path.join(site_folder, found.group(1) + ".py"), mapped)
            if why is not None:
                return why
        elif found := _NAMESPACE_PACKAGE.fullmatch(line):
            parts = re.findall(r"'(\w+)'", found.group(1))
            mapped.setdefault(".".join(parts), []).append(os.path.join(site_folder, *parts))
        else:
            return f"{pth} runs code at start-up ({line.strip()[:60]})"
    return None


def _editable_finder(path: str, mapped: dict[str, list[str]]) -> str | None:
    """The packages a setuptools editable install's finder maps: its `MAPPING` (name -> folder or module file) and
    `NAMESPACES` (name -> folders) literals."""
    tree = _parsed(path)
    if tree is None:
        return f"{path} cannot be read"
    found = 0
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not isinstance(target, ast.Name) or target.id not in ("MAPPING", "NAMESPACES"):
            continue
        try:
            value = ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return f"{path}'s {target.id} is not a literal"
        if not isinstance(value, dict):
            return f"{path}'s {target.id} is not a dict"
        for name, where in value.items():
            places = [where] if isinstance(where, str) else where
            if not isinstance(name, str) or not all(isinstance(place, str) for place in places):
                return f"{path}'s {target.id} is not of names and paths"
            mapped.setdefault(name, []).extend(places)
        found += 1
    return None if found else f"{path} has no MAPPING"


def _editables_redirector(path: str, mapped: dict[str, list[str]]) -> str | None:
    """The modules hatchling's `editables` redirector maps: its `F.map_module("name", "path")` calls."""
    tree = _parsed(path)
    if tree is None:
        return f"{path} cannot be read"
    for node in tree.body:
        if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
            continue
        call = node.value
        method = call.func.attr if isinstance(call.func, ast.Attribute) else None
        if method == "install":
            continue
        arguments = [argument.value for argument in call.args if isinstance(argument, ast.Constant)]
        if method != "map_module" or len(arguments) != 2 or not all(isinstance(a, str) for a in arguments):
            return f"{path} does more than map modules"
        name, where = arguments
        mapped.setdefault(name, []).append(os.path.dirname(where) if where.endswith("__init__.py") else where)
    return None


def _parsed(path: str) -> ast.Module | None:
    try:
        return parsed(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def module_key(name: str) -> str:
    """How a module's or distribution's name is compared with a requirement's: lower case, `-` and `.` as `_`."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _module_keys(distribution: str) -> set[str]:
    """The modules a distribution (its `module_key`) may install: its name, without a `python_`/`py` prefix or a
    `_python`/`_py` suffix, and the well-known others."""
    keys = {distribution, distribution.removeprefix("python_"), distribution.removeprefix("py_"),
            distribution.removeprefix("py"), distribution.removesuffix("_python"), distribution.removesuffix("_py"),
            distribution.split("_")[0]}
    other = _MODULES_OF.get(distribution)
    if other is not None:
        keys.add(module_key(other))
    return {key for key in keys if key}


def _requirements(names) -> frozenset[str]:
    keys: set[str] = set()
    for name in names:
        keys |= _module_keys(module_key(name))
    return frozenset(keys)


def _required_by_distributions(site_folder: str) -> frozenset[str]:
    """The modules the distributions installed in `site_folder` require (`Requires-Dist`, extras too): a project's
    optional dependency may be installed where it runs, and its files import it."""
    try:
        entries = os.listdir(site_folder)
    except OSError:
        return frozenset()
    names = []
    for entry in entries:
        if entry.endswith(".dist-info"):
            metadata = os.path.join(site_folder, entry, "METADATA")
        elif entry.endswith(".egg-info"):
            metadata = os.path.join(site_folder, entry, "PKG-INFO") if os.path.isdir(
                os.path.join(site_folder, entry)) else os.path.join(site_folder, entry)
        else:
            continue
        try:
            with open(metadata, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    if not line.strip():
                        break  # the headers end; the description follows
                    if line.startswith("Requires-Dist:") and (found := _REQUIREMENT.match(line[14:])):
                        names.append(found.group(1))
        except OSError:
            continue
    return _requirements(names)


_DECLARED: dict[str, tuple[float, tuple, frozenset[str]]] = {}


def declared_by(project: str) -> frozenset[str]:
    """The modules (their `module_key`) the project at `project` declares it requires, installed or not: the
    requirements in its `pyproject.toml`, `setup.py`, `setup.cfg`, `Pipfile`, `environment.yml` and
    `requirements*.txt` (read loosely: more names, never fewer)."""
    now = time.monotonic()
    with ENVIRONMENTS_LOCK:
        kept = _DECLARED.get(project)
    if kept is not None and now - kept[0] < _RECHECK_SECONDS:
        return kept[2]
    paths = [os.path.join(project, name) for name in _PROJECT_FILES]
    try:
        paths += sorted(os.path.join(project, name) for name in os.listdir(project)
                        if name.startswith("requirements") and name.endswith((".txt", ".in")))
        if os.path.isdir(os.path.join(project, "requirements")):
            paths += sorted(os.path.join(project, "requirements", name)
                            for name in os.listdir(os.path.join(project, "requirements")))
    except OSError:
        pass
    stamps = tuple(_stamps(tuple(paths)))
    if kept is not None and kept[1] == stamps:
        found = kept[2]
    else:
        found = _requirements(_declared_names(paths))
    with ENVIRONMENTS_LOCK:
        _DECLARED[project] = (now, stamps, found)
    return found


def _declared_names(paths: list[str]) -> list[str]:
    names = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if path.endswith((".txt", ".in")) or os.path.basename(os.path.dirname(path)) == "requirements":
            names += [found.group(1) for line in text.splitlines()
                      if (found := _REQUIREMENT.match(line.split("#")[0])) and found.group(1)]
            continue
        names += [found.group(1) for quoted in _QUOTED.finditer(text)
                  if (found := _REQUIREMENT.fullmatch(quoted.group(1) or quoted.group(2) or "")
                      or _REQUIREMENT.match(quoted.group(1) or quoted.group(2) or ""))]
        names += _TABLE_KEY.findall(text)  # poetry's and Pipfile's `name = "^1.0"`, setup.cfg's lines
        names += [found.group(1) for line in text.splitlines() if (found := _REQUIREMENT.fullmatch(line.strip()))]
    return names
