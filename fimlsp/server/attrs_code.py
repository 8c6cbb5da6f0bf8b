"""The code that attrs compiles for lsprotocol's classes, kept in the user's cache folder from one server start to the
next (issue 44: the server starts fast).

Importing `lsprotocol.types` defines about 570 attrs classes, and attrs writes and compiles the source of each one's
methods (`__init__`, `__repr__`, `__eq__`, ...): the compiling is about two thirds of the import, which is the
largest part of `fimlsp serve`'s start. The compiled code depends only on that source and the Python that compiles it,
so it is kept by that source, in a file of the Python version and the package's folder, and read back at the next
start; source the cache does not hold (another version of the package or of attrs) is compiled as attrs would, and
the file then keeps only what this start used. Where attrs no longer has the function replaced here, or the cache
cannot be read or written, the import compiles all of it, as before.
"""

from __future__ import annotations

import __future__
import contextlib
import functools
import importlib.util
import marshal
import operator
import os
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

# The flags of `from __future__ import ...`: a compiled function inherits those of the module that compiles it.
_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                                for name in __future__.all_feature_names))


def cache_folder() -> Path:
    """fimlsp's folder in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fimlsp"


@contextlib.contextmanager
def attrs_code_cached(package: str) -> Iterator[None]:
    """While the block imports `package`, attrs' compiled code comes from the cache, and what it lacked is added."""
    try:
        from attr import _make

        compile_and_eval = _make._compile_and_eval
    except (ImportError, AttributeError):
        yield
        return
    spec = importlib.util.find_spec(package)
    folder = zlib.crc32(str(spec.origin if spec else package).encode())  # one file per installation of it
    path = cache_folder() / f"attrs-code-{package}-{folder:08x}-{sys.implementation.cache_tag}.marshal"
    known = _read(path)
    used: dict[tuple[str, str], object] = {}
    flags = compile_and_eval.__code__.co_flags & _FUTURE_FLAGS  # as attrs' own module compiles

    def cached(script: str, globs, locs=None, filename: str = "") -> None:
        key = (script, filename)
        code = known.get(key)
        if code is None:
            code = compile(script, filename, "exec", flags, dont_inherit=True)
        used[key] = code
        eval(code, globs, locs)

    _make._compile_and_eval = cached
    try:
        yield
    finally:
        _make._compile_and_eval = compile_and_eval
    if used.keys() != known.keys():
        _write(path, used)


def _read(path: Path) -> dict:
    """The cache's code by (source, file name); empty where it is missing, of another Python, or unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):
        return {}
    try:
        code = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return {}
    return code if isinstance(code, dict) else {}


def _write(path: Path, code: dict) -> None:
    """Replace the cache at once (a server starting meanwhile reads the old one or the new one), or leave it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(importlib.util.MAGIC_NUMBER + marshal.dumps(code))
        os.replace(name, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(name)
