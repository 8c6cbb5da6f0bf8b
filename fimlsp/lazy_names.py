"""A package's names loaded from their modules on first use (PEP 562's module `__getattr__`): importing a light
module of the package does not import its heavy ones, so that `fimlsp serve` answers `initialize` before they load."""

import importlib
import sys


def loader(package: str, homes: dict[str, str]):
    """The `__getattr__` of `package`, which finds each name of `homes` in its module `package.<home>` the first
    time it is asked for and keeps it in the package."""
    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value
    return __getattr__
