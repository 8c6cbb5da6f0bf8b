"""What the tests of the judges' whole-file end checks share (`fimlsp.python.uncalled`, `rebound_receiver`,
`optional_receivers`, `literal_attributes.called_literals`): each is a function of the whole text and the middle's
span, asked of a cut-down held-out file with its middle at `@@`, and of every true span of a kind in real code."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable

from fimlsp.python.analysis import analysis_for
from fimlsp.python.members import MemberSource
from fimlsp.python.quotient import quotient
from fimlsp.python.signatures import SignatureSource
from fimlsp.python.syntax import node_offsets
from fimlsp.syntax_trees import parsed

Check = Callable[[str, int, int], frozenset[str]]


def at_marker(check: Check, source: str, middle: str) -> frozenset[str]:
    """`check`'s verdict on `middle` written at `source`'s `@@` (the file must compile with it)."""
    left, right = source.split("@@")
    text = left + middle + right
    compile(text, "<test>", "exec")
    return check(text, len(left), len(left) + len(middle))


def ends_at_marker(judge: str, source: str, middle: str) -> bool:
    """Whether `middle` written at `source`'s `@@` ends the file with the `members` or `calls` judge on, as a
    constrained decoder asks at its end."""
    left, right = source.split("@@")
    state = quotient(left, right)
    if judge == "members":
        state = state.judging_members(MemberSource(analysis_for(None, None), left, right, None))
    else:
        state = state.judging_calls(SignatureSource(left, right))
    ended = state.feed(middle)
    return ended is not None and ended.complete


def true_spans_refused(check: Check, files: Iterable[tuple[str, str]], worth_reading: str,
                       chosen: Callable[[ast.AST], bool],
                       part: Callable[[ast.AST], tuple[int, int, int, int]] | None = None) -> tuple[list[str], int]:
    """The places (`path:line`) where `check` refuses a true middle, and how many it judged: each `chosen` node of
    the `files` whose text matches the pattern `worth_reading`, the node as the middle (or its `part`: line, column,
    end line, end column)."""
    refused, judged = [], 0
    for path, text in files:
        if not re.search(worth_reading, text, re.MULTILINE):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parsed(text)
        offset = node_offsets(text)
        for node in ast.walk(tree):
            if not chosen(node):
                continue
            judged += 1
            line, column, end_line, end_column = (part(node) if part else (
                node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))
            if check(text, offset(line, column), offset(end_line, end_column)):
                refused.append(f"{path}:{line}")
    return refused, judged
