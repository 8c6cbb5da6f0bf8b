"""The finish search (`fimlsp.python.finish`) keeps the right context's statements in the kind of block they were
indented for: where a finish must leave a class, it opens a class for the methods that follow, not an `if` at the
module's column that would make them functions (pyright then flags their `self.x: T`)."""

from __future__ import annotations

import ast
import importlib.util

import pytest

from fimlsp.language import named
from fimlsp.python.finish_ends import dedents_below
from fimlsp.python.finish_pieces import right_block_column
from fimlsp.python.quotient import quotient
from fimlsp.syntax_trees import parsed


def _wsgi_cut() -> tuple[str, str]:
    """uvicorn's middleware/wsgi.py (held out), cut inside `_WSGIMiddleware.__call__`'s header after `-> None`,
    to the name of `WSGIResponder.__init__` (the true middle closes one class and opens the next)."""
    spec = importlib.util.find_spec("uvicorn.middleware.wsgi")
    if spec is None or spec.origin is None:
        pytest.skip("uvicorn is not installed")
    with open(spec.origin, encoding="utf-8") as source:
        text = source.read()
    end_of_left = text.find("    ) -> None:\n        assert scope")
    start_of_right = text.find("__init__(\n        self,\n        app: WSGIApp,\n        executor")
    if end_of_left < 0 or start_of_right < 0:
        pytest.skip("this uvicorn's wsgi.py is not the one the case was cut from")
    return text[:end_of_left + len("    ) -> None")], text[start_of_right:]


def _functions_outside_classes(text: str, names: set[str]) -> list[str]:
    """The functions of `names` that the module defines other than as a class's methods."""
    outside = []

    def visit(node: ast.AST, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if child.name in names and not in_class:
                    outside.append(child.name)
                visit(child, False)
            else:
                visit(child, isinstance(child, ast.ClassDef) or (in_class and not isinstance(child, ast.ClassDef)
                                                                  and isinstance(node, (ast.ClassDef, ast.If))))

    visit(parsed(text), False)
    return outside


def test_a_finish_that_leaves_a_class_opens_one_for_the_right_contexts_methods():
    """The middle shown on this cut was `:0\\nif id:\\n    def `: the class's methods that the right context defines
    again (the judges refuse a redeclaration in the class) became functions in a module-level `if`."""
    left, right = _wsgi_cut()
    python = named("python")
    guarantee, _ = python.judging_names(python.constrain(left, right), left, right)
    finish = guarantee.state.finish()
    assert finish is not None, finish
    text = left + finish + right
    compile(text, "wsgi.py", "exec")
    assert not _functions_outside_classes(text, {"sender", "start_response", "wsgi"}), finish


def test_a_header_before_a_deeper_line_stays_in_the_block_the_left_context_ends_in():
    """After a function's last line, before a comment and a line deeper than every open block: `if x:` at the
    module's column is as valid and shorter, but ends the function, whose line `y = 2` was."""
    left, right = "def f():\n    x = 1\n", "  # note\n\n        # more\n        y = 2\n"
    finish = quotient(left, right).finish()
    assert finish is not None and finish.startswith("    if x:"), finish
    assert not [node for node in parsed(left + finish + right).body if not isinstance(node, ast.FunctionDef)]


METHODS = "__init__(\n        self,\n    ):\n        pass\n\n    def g(self):\n"


@pytest.mark.parametrize("written, right, left_column, dedents", [
    (":0\nif id:\n    def ", METHODS, 4, True),
    (":0\nclass x:\n    def ", METHODS, 4, False),
    (":0\n    def ", METHODS, 4, False),
    ("\nif x:", "\n    pass\n", 0, False),  # a header at the left's column, the right context's line its body
    ("\nif x:", "\n        pass\n", 4, True),
    ("\n", "y = 1\n    z = 2\n", 4, True),  # the last line goes on with the right context's first
])
def test_a_line_left_of_the_left_contexts_block_and_the_right_contexts_next_lines_dedents_below_them(
        written, right, left_column, dedents):
    assert dedents_below(written, right, min(left_column, right_block_column(right))) is dedents
