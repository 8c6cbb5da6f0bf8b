"""Block scope (`FimState.in_block`): a middle stays in the block that holds the cursor and leaves the code after
the cursor lexed as it is, checked against CPython's parser and `tokenize` on hand-made and standard-library
cuts."""

from __future__ import annotations

import random

import pytest

from harness.block_scope import function_end_cuts, lowest_new_line, relexes
from fimlsp import quotient
from fimlsp.python.region import constrain
from fimlsp.python.syntax import parses
from tests.test_python_quotient import _stdlib_sample

QUEUE_LEFT = "class Queue:\n    def put(self):\n        self._sem.acquire()\n        "
QUEUE_RIGHT = "self._sem.release()\n        return 1\n"


def test_a_comment_may_not_swallow_the_code_after_the_cursor():
    """The case a user met in `multiprocessing/queues.py`: `# the current` turned the call into a comment."""
    state = quotient(QUEUE_LEFT, QUEUE_RIGHT)
    assert state.feed("# the current").complete
    assert not state.in_block().feed("# the current").complete
    assert state.in_block().feed("x = 1\n        ").complete


def test_a_middle_may_not_dedent_below_the_cursors_block():
    state = quotient(QUEUE_LEFT, QUEUE_RIGHT)
    escaping = "x = 1\n    def other(self):\n        "
    assert state.feed(escaping).complete
    assert state.in_block().feed(escaping) is None


@pytest.mark.parametrize("left, right, inside, outside", [
    ("x = 1\n", "y = 2\n", "def g():\n    pass\n", None),  # top level: nothing is below column 0
    ("def f():\n    if a:\n        x = 1", "\n    return x\n", "\n        y = 2", "\n    y = 2"),  # nested
    ("def f():\n    x = (1,\n", "    2)\n    return x\n", "0,\n", None),  # inside brackets: no line starts
    ("def f():\n\tif a:\n\t\tx = 1", "\n\treturn x\n", "\n\t\ty = 2", "\n\ty = 2"),  # tabs
    ("def f():\n    if a:\n        x = 1\n", "    return 2\n", "    y = 1\n", "y = 1\n"),  # in the indentation
])
def test_what_block_scope_admits(left, right, inside, outside):
    state = quotient(left, right).in_block()
    assert state.feed(inside).complete and parses(left + inside + right)
    if outside is not None:
        escaped = state.feed(outside)
        assert escaped is None or not escaped.complete


@pytest.mark.parametrize("left, middle", [
    ("def t(y):\n    f(y.", "x, 1)\n    "),  # the cursor after a dot (self.assertEqual(y.|x...), ctypes' tests)
    ("def t(y):\n    z = y +", " 1\n    "),  # after an operator that could go on (+=)
    ("def t(y):\n    z = y*", "2\n    "),
    ("def t(y):\n    z = 'a'", "\n    "),  # after a closed string (its prefix-less quotes end there)
])
def test_a_middle_may_end_before_the_first_token_after_a_cursor_at_a_tokens_end(left, middle):
    """A true middle that ends a line and leaves the right context's first token (`x`) to begin the next one stays
    in the block: the token at the cursor ended there and does not run on into the right context."""
    assert quotient(left, "x = 2\n").in_block().feed(middle).complete


def test_a_cursor_in_a_comment_line_keeps_the_comments_column_as_the_floor():
    """A comment line is no logical line: its floor is its own column, not that plus the right context's
    indentation (a true middle that ends the comment and writes the block's next line was refused; ctypes' tests)."""
    state = quotient("def f():\n    y = 1\n    # al", "    w = 3\n").in_block()
    assert state.scope.floor == 4 and state.feed("ignment\n    z = 2\n").complete
    assert state.feed("ignment\nz = 2\n") is None


@pytest.mark.parametrize("left, middle, right, stays", [
    ("def f():\n    #", "abc", "\n    pass\n", True),  # a comment begins the body: its INDENT is still to come
    ("def f():\n    ", "# abc", "\n    pass\n", True),
    ("def f():\n    x = 1\n        # c", "omment\n    y = 2\n", "    return\n", True),  # a deeper comment
    ("x = 1\n    # c", "omment\ny = 2\n", "z = 3\n", True),
    ("if a:\n    #", "c\n    x = 1\ny = 2\nif b:\n", "    pass\n", False),  # a dedent below the block
    ("def f():\n    x = 1\n        # c", "omment\n    y = 2\nz = 3\n", "def g():\n    return\n", False),
])
def test_a_comment_lines_column_is_no_blocks_only_a_dedent_leaves_the_block(left, middle, right, stays):
    """A comment line makes no INDENT: a true middle in a body's first line that is a comment, or in a comment
    indented deeper than its block, was refused at its first character (socketserver's, test_unicode's comments)."""
    state = quotient(left, right)
    assert state.feed(middle).complete
    scoped = state.in_block().feed(middle)
    assert (scoped is not None and scoped.complete) == stays


def test_a_file_broken_elsewhere_is_scoped_within_its_region():
    left = "def broken(:\n    pass\n\ndef f():\n    if a:\n        x = 1"
    right = "\n    return x\n"
    guarantee = constrain(left, right)
    assert guarantee.state is not None and guarantee.scope != "file"
    state = guarantee.state.in_block()
    assert state.feed("\n        y = 2").complete
    assert state.feed("\n    y = 2") is None


def test_a_block_that_admits_no_middle_has_no_finish_while_the_file_has_one():
    """`else:` at the cursor's column pairs with no `if` there, and its body is less indented: only a middle that
    dedents, or a comment that swallows it, makes the file valid."""
    state = quotient("if a:\n    if b:\n        x = 1\n        ", "else:\n    y = 2\n")
    assert state.finish(40) is not None
    assert state.in_block().finish(40) is None


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["randspan", "boundary"])
def test_block_scoped_finishes_stay_in_the_block_and_keep_the_right_context_tokens(kind):
    """Finishes after random prefixes of true middles: valid, no logical line below the cursor's block, and
    the right context lexes to the same tokens after its first one."""
    rng = random.Random(kind)
    checked = 0
    for case in _stdlib_sample(kind, 20):
        state = quotient(case.left, case.right).in_block()
        floor = state.scope.floor
        cut = rng.randint(0, len(case.middle))
        fed = state.feed(case.middle[:cut])
        if fed is None:  # the true middle itself leaves the block (it closes a function and opens the next)
            continue
        finish = fed.finish(limit=len(case.middle) + 40)
        if finish is None:
            continue
        checked += 1
        middle = case.middle[:cut] + finish
        assert parses(case.left + middle + case.right), (case.name, middle)
        assert lowest_new_line(case.left, middle, case.right) >= floor, (case.name, middle)
        if not relexes(case.left, case.middle, case.right):
            # (a cut inside a string lexes the right context differently without its middle: no reference)
            assert not relexes(case.left, middle, case.right), (case.name, middle)
    assert checked >= 10


def test_block_scoped_finishes_at_the_end_of_function_bodies_stay_in_the_function():
    from harness.corpus import stdlib_files

    files = [item for item in stdlib_files() if len(item[1]) < 30_000][:40]
    for name, left, right, indentation in function_end_cuts(files, 15, seed=1):
        state = quotient(left, right).in_block()
        middle = "\n" + " " * indentation + "x = (1,"  # a statement in the body, left open
        fed = state.feed(middle)
        assert fed is not None, name
        finish = fed.finish(limit=60)
        assert finish is not None, name
        assert parses(left + middle + finish + right), (name, finish)
        assert lowest_new_line(left, middle + finish, right) >= indentation, (name, finish)
        assert not relexes(left, middle + finish, right), (name, finish)
