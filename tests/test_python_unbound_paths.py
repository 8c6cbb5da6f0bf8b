"""Names the middle leaves possibly unbound (`fimlsp.python.unbound_paths`): a handler's or an `else`'s body that
does not bind what its `try` or `if` binds, read straight after; never a gap the code around the middle leaves
anyway; and no true middle of the standard library or the held-out packages owes one."""

from __future__ import annotations

import ast
import random

from fimlsp.python.names import FileNames
from fimlsp.python.quotient import quotient
from fimlsp.python.unbound_paths import left_unbound
from fimlsp.syntax_trees import parsed
from harness.corpus import package_files, stdlib_files
from tests.test_python_members import HELD_OUT


def unbound(left: str, middle: str, right: str) -> set[str]:
    text = left + middle + right
    return set(left_unbound(parsed(text), text, len(left), len(left) + len(middle)))


# uvicorn/_subprocess.py's get_subprocess: the shipped model wrote `pass` where the true middle binds the name.
SUBPROCESS_LEFT = """import sys


def get_subprocess(config):
    try:
        stdin_fileno = sys.stdin.fileno()
    except (AttributeError, OSError):
        """
SUBPROCESS_RIGHT = """

    kwargs = {"config": config, "stdin_fileno": stdin_fileno}
    return kwargs
"""


def test_a_handler_that_does_not_bind_what_the_try_binds_leaves_it_unbound():
    assert unbound(SUBPROCESS_LEFT, "stdin_fileno = None", SUBPROCESS_RIGHT) == set()
    assert unbound(SUBPROCESS_LEFT, "pass", SUBPROCESS_RIGHT) == {"stdin_fileno"}
    assert unbound(SUBPROCESS_LEFT, "pass\n    # sys.stdin may be None", SUBPROCESS_RIGHT) == {"stdin_fileno"}


def test_a_handler_that_leaves_the_function_or_may_binds_nothing_it_owes():
    for middle in ("return None", "raise", "sys.exit(1)", "print('no stdin')"):  # a call may never return
        assert unbound(SUBPROCESS_LEFT, middle, SUBPROCESS_RIGHT) == set(), middle


def test_lines_ended_by_a_carriage_return_alone_are_read_as_python_reads_them():
    """The tokenizer ends a line at `\r` too (the hostile-input test's CR-only file failed the check)."""
    for newline in ("\r", "\r\n"):
        left, right = SUBPROCESS_LEFT.replace("\n", newline), SUBPROCESS_RIGHT.replace("\n", newline)
        assert unbound(left, "pass", right) == {"stdin_fileno"}
        assert unbound(left, "stdin_fileno = None", right) == set()


def test_an_else_that_does_not_bind_what_its_if_binds_leaves_it_unbound():
    left = "def pick(a):\n    if a:\n        chosen = 1\n    else:\n        "
    assert unbound(left, "chosen = 2", "\n    return chosen\n") == set()
    assert unbound(left, "a = 2", "\n    return chosen\n") == {"chosen"}


def test_gaps_the_code_around_the_middle_leaves_are_not_the_middles():
    """A loop's variable after the loop; a name bound before the branch; a load past a condition the middle's
    branch may decide (filecmp: `except OSError: ok = 0`, then `if ok:`); a load bound again on the way."""
    assert unbound("def last(xs):\n    for x in xs:\n        ", "pass", "\n    return x\n") == set()
    before = "def f(a):\n    if a:\n        best = 0\n    try:\n        best = g()\n    except OSError:\n        "
    assert unbound(before, "pass", "\n    return best\n") == set()
    guarded = "\n    if ok:\n        return stdin_fileno\n"
    assert unbound(SUBPROCESS_LEFT.replace("    try:", "    ok = 1\n    try:"), "ok = 0", guarded) == set()
    rebound = "\n    if stdin_fileno is None:\n        stdin_fileno = 0\n    return stdin_fileno\n"
    assert unbound(SUBPROCESS_LEFT, "pass", rebound) == set()


def test_the_name_judge_refuses_to_end_where_the_middle_leaves_a_local_unbound():
    names = FileNames.of(SUBPROCESS_LEFT, SUBPROCESS_RIGHT)
    assert names.unbound(SUBPROCESS_LEFT + "pass" + SUBPROCESS_RIGHT) == {"stdin_fileno"}
    state = quotient(SUBPROCESS_LEFT, SUBPROCESS_RIGHT).judging_names(names)
    assert not state.feed("pass").complete and state.feed("stdin_fileno = None").complete


def _function_cuts(files, count: int, seed: int):
    """`count` cuts inside function bodies of `files`: half the whole of a block (a handler's, an `else`'s body),
    half random spans of up to ten lines."""
    rng = random.Random(seed)
    made = 0
    while made < count:
        _name, text = rng.choice(files)
        try:
            tree = parsed(text)
        except SyntaxError:
            continue
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not functions:
            continue
        function = rng.choice(functions)
        offsets = [0]
        for line in text.split("\n"):
            offsets.append(offsets[-1] + len(line) + 1)
        blocks = [getattr(node, part) for node in ast.walk(function) if isinstance(node, ast.stmt)
                  for part in ("body", "orelse", "finalbody") if getattr(node, part, None)]
        blocks += [handler.body for handler in ast.walk(function) if isinstance(handler, ast.ExceptHandler)]
        if made % 2 and blocks:
            block = rng.choice(blocks)
            first, last = block[0], block[-1]
            start = offsets[first.lineno - 1] + first.col_offset
            end = offsets[last.end_lineno - 1] + last.end_col_offset
        else:
            first = rng.randint(function.lineno, function.end_lineno)
            last = rng.randint(first, min(function.end_lineno, first + 10))
            start = offsets[first - 1] + rng.randint(0, offsets[first] - offsets[first - 1] - 1)
            end = max(start, offsets[last - 1] + rng.randint(0, offsets[last] - offsets[last - 1] - 1))
        made += 1
        yield text, tree, start, end


def test_no_true_middle_leaves_a_local_unbound():
    """2,000 cuts of functions of the standard library and the held-out packages, half of them whole blocks."""
    files = [each for each in stdlib_files() if "test" not in each[0]]
    files += [each for name in HELD_OUT for each in package_files(name)]
    owing = [(text[start - 60:start], text[start:end][:60], sorted(found))
             for text, tree, start, end in _function_cuts(files, 2000, seed=49)
             if (found := left_unbound(tree, text, start, end))]
    assert owing == []
