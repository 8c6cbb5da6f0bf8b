"""Files broken away from the cursor, and what the region promise of such a file is measured by: the breaks
(`--unit` of `benchmarks/broken_elsewhere.py`, which says what each does), whether a region's cuts are
statement boundaries of the repaired file, and `evaluate`, the run over standard-library cases that the benchmark
prints and the tests check on a small sample."""

from __future__ import annotations

import ast
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from fimlsp.cases import random_span_cases
from fimlsp.python.region import FILE, NONE, REGION, constrain
from fimlsp.python.syntax import parses
from fimlsp.syntax_trees import parsed
from harness.corpus import mutate, stdlib_files

BREAKS = ("unfinished_line", "stray_bracket", "deleted_character")
UNITS = ("statement", "line", "nothing")


def break_unrelated_statement(text: str, start: int, end: int, rng: random.Random) -> tuple[str, int, int] | None:
    """The file with one top-level statement outside `text[start:end]` broken, where, and how much was inserted
    (negative: deleted); None when there is no such statement or the break did not break the file."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    statements = []
    for node in parsed(text).body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        node_start, node_end = offsets[first - 1], offsets[node.end_lineno]
        if node_end <= start or node_start >= end:
            statements.append((node_start, node_end))
    if not statements:
        return None
    node_start, node_end = rng.choice(statements)
    kind = rng.choice(BREAKS)
    if kind == "unfinished_line":
        broken, position, change = text[:node_start] + "print((\n" + text[node_start:], node_start, 8
    elif kind == "stray_bracket":
        broken, position, change = text[:node_start] + ")" + text[node_start:], node_start, 1
    else:
        position = rng.randrange(node_start, node_end)
        broken, change = text[:position] + text[position + 1:], -1
    return (broken, position, change) if not parses(broken) else None


def break_unrelated_line(text: str, start: int, end: int, rng: random.Random) -> tuple[str, int, int] | None:
    """The file with one non-blank line that `text[start:end]` does not touch broken, as
    `break_unrelated_statement` returns it; None when there is no such line or the break did not break the file."""
    lines, offset = [], 0
    for line in text.splitlines(keepends=True):
        content = len(line.rstrip("\r\n"))
        if line.strip() and (offset + len(line) <= start or offset > end):
            lines.append((offset, content))
        offset += len(line)
    if not lines:
        return None
    line_start, length = rng.choice(lines)
    kind = rng.choice(BREAKS)
    if kind == "unfinished_line":
        position = line_start + rng.randrange(length)
        broken, change = text[:position] + text[line_start + length:], position - line_start - length
    elif kind == "stray_bracket":
        position = line_start + rng.randrange(length + 1)
        broken, change = text[:position] + rng.choice("()[]{}") + text[position:], 1
    else:
        position = line_start + rng.randrange(length)
        broken, change = text[:position] + text[position + 1:], -1
    return (broken, position, change) if not parses(broken) else None


def _unbroken(text: str, start: int, end: int, rng: random.Random) -> tuple[str, int, int]:
    """The file as it is (`--unit nothing`), broken nowhere: at the cursor, by nothing."""
    return text, start, 0


_MARKER = "__region__"


def is_statement_boundary(before: str, after: str, indent: str = "") -> bool:
    """True if `before` and `after` meet at a boundary between whole statements of a block indented by `indent`
    (the module's by default): the text with a statement put there parses, and CPython finds it there as a
    statement of its own (not string content, not part of an expression). A region cut at such boundaries can
    take any run of statements of that block: the premise of a region's promise."""
    source = before + indent + _MARKER + "\n" + after
    module = _parsed(source)
    line = 1 + before.count("\n") + before.count("\r") - before.count("\r\n")
    return module is not None and any(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Name) and node.value.id == _MARKER
        and node.lineno == line and node.col_offset == len(indent)
        for node in ast.walk(module)
    )


def _parsed(source: str) -> ast.Module | None:
    try:
        return parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass
class Outcome:
    cases: int = 0
    scopes: Counter = field(default_factory=Counter)
    false_rejects: list = field(default_factory=list)  # (case, scope): the true middle refused though it fits
    cut_inside: int = 0  # region promises whose cuts are not statement boundaries of the repaired file
    misfits: int = 0  # region promises with real cuts that the true middle cannot keep (another reading)
    nested: int = 0  # region promises inside a class or function (a block, not the module)
    checked: int = 0  # middles completing under the promise, checked in the repaired file
    unsound: list = field(default_factory=list)  # (case, scope, middle) that completed but do not parse there
    setups: list = field(default_factory=list)  # CPU seconds of `constrain`
    ratios: list = field(default_factory=list)  # setup time / ast.parse of the file


def evaluate(count: int, mutations: int, seed: int, files=None, unit: str = "statement") -> Outcome:
    rng = random.Random(seed)
    outcome = Outcome()
    breaker = {"line": break_unrelated_line, "statement": break_unrelated_statement, "nothing": _unbroken}[unit]
    for case in random_span_cases(files if files is not None else stdlib_files(), seed, None):
        if outcome.cases >= count:
            break
        text = case.left + case.middle + case.right
        start, end = len(case.left), len(case.left) + len(case.middle)
        broken = breaker(text, start, end, rng)
        if broken is None:
            continue
        broken_text, position, change = broken
        shift = change if position < start else 0
        left, right = broken_text[:start + shift], broken_text[end + shift:]
        outcome.cases += 1
        clock = time.process_time()
        promise = constrain(left, right)
        setup = time.process_time() - clock
        outcome.setups.append(setup)
        clock = time.process_time()
        parses(broken_text)
        outcome.ratios.append(setup / max(1e-6, time.process_time() - clock))
        outcome.scopes[promise.scope] += 1
        if promise.scope == NONE:
            continue
        outcome.nested += promise.scope == REGION and bool(promise.indent)
        # The break outside the region moves the repaired file's text after it by `change`.
        if position < start:
            outside = position + max(change, 0) <= promise.left_cut
            left_cut = promise.left_cut - change
        else:
            outside = position - end >= promise.right_cut
            left_cut = promise.left_cut
        real_cuts = promise.scope == REGION and outside and is_statement_boundary(
            case.left[:left_cut], case.right[promise.right_cut:], promise.indent)
        outcome.cut_inside += promise.scope == REGION and not real_cuts
        fits = promise.kept_by(left, case.middle, right)
        outcome.misfits += real_cuts and not fits
        accepted = promise.state.feed(case.middle)
        if (accepted is None or not accepted.complete) and fits and (real_cuts or promise.scope == FILE):
            outcome.false_rejects.append((case.name, promise.scope))
        for middle in [case.middle] + [mutate(case.middle, rng) for _ in range(mutations)]:
            state = promise.state.feed(middle)
            if state is None or not state.complete:
                continue
            outcome.checked += 1
            kept = promise.kept_by(left, middle, right) and (not real_cuts or parses(case.left + middle + case.right))
            if not kept:
                outcome.unsound.append((case.name, promise.scope, middle))
    return outcome
