"""What a class's own text says of its instances' attributes, for the attribute debt (`fimlsp.python.members`):
whether its `__init__` sets up state, whether it says subclasses complete it, and which methods take the
instance first."""

from __future__ import annotations

import ast
import re

# Words of a class name that say subclasses complete it (`SearchDialogBase`, `BaseHandler`, `FooMixin`).
_SUBCLASSED_NAME = re.compile(r"Base|Mixin|Abstract|Interface|ABC")


def sets_up_state(holder: ast.ClassDef, left_out: int = 0) -> bool:
    """The class's `__init__` (outside the middle or in it; not on line `left_out`) assigns an attribute on its
    first parameter."""
    for method in holder.body:
        if isinstance(method, ast.FunctionDef) and method.name == "__init__" and method.args.args:
            receiver = method.args.args[0].arg
            return any(isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.lineno != left_out
                       and isinstance(node.value, ast.Name) and node.value.id == receiver
                       for node in ast.walk(method))
    return False


def meant_for_subclasses(holder: ast.ClassDef, left_out: int = 0) -> bool:
    """The class says that subclasses complete it (idlelib's `SearchDialogBase`, whose docstring says
    `default_command: set in subclasses`): its name, a docstring of it that names subclasses, or a method that
    raises NotImplementedError; not on line `left_out`."""
    docstrings = [ast.get_docstring(node) or "" for node in [holder, *holder.body]
                  if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and (not node.body or node.body[0].lineno != left_out)]
    return bool(_SUBCLASSED_NAME.search(holder.name) or any("subclass" in text.lower() for text in docstrings)
                or any(isinstance(node, ast.Raise) and node.lineno != left_out
                       and "NotImplementedError" in ast.unparse(node.exc or node) for node in ast.walk(holder)))


def binds_receiver(decorator: ast.expr) -> bool:
    """A method under this decorator still takes the instance or class first (not a staticmethod's argument)."""
    return (isinstance(decorator, ast.Name) and decorator.id in ("property", "classmethod")) or (
        isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "getter", "deleter"))
