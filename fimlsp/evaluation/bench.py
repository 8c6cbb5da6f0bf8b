"""The constraint's cost alone, without a model: one-time setup and per-token `feed` against context size.

For each case: `ast.parse` of the whole file (left + middle + right), the one-time setup of the constraint
(`RightContext(right)`, the right context's quotient grammar, then `start(left)`, feeding the left context), and
the cost of `feed` for model-sized pieces of 3-4 characters of the true middle, then of `distance_bound` after
each (constrained decoding asks it of every candidate it accepts). Every figure is also given as a
ratio to the same file's `ast.parse` time measured in the same run, so that it holds on a noisy machine; a
checked decoder parses the whole file at every end-of-sequence check, the constrained one feeds each token.
Setup is summarized as a multiple of that parse (median, p90, p99, max), beside what the paper's reference
implementation's published cost (270 ms + 0.28 ms per context character) would be on the same cases.

What the process builds once (the grammar's tables) is built before the first case and reported apart
(`start_up`). Times are CPU time of the process by default (`clock="cpu"`), which other processes on a shared
machine do not inflate; `clock="wall"` measures elapsed time instead.
"""

from __future__ import annotations

import ast
import json
import random
import statistics
import time
import warnings
from pathlib import Path
from typing import Iterable

from fimlsp.evaluation.dataset import EvalCase
from fimlsp.evaluation.report import fit


def pieces(text: str, rng: random.Random) -> list[str]:
    """`text` cut into pieces of 3 or 4 characters, the size of a code model's tokens."""
    result, index = [], 0
    while index < len(text):
        size = rng.choice((3, 4))
        result.append(text[index:index + size])
        index += size
    return result


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def _parse_seconds(source: str, now, repeat: int = 3) -> float:
    best = float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeat):
            clock = now()
            ast.parse(source)
            best = min(best, now() - clock)
    return best


def measure(case: EvalCase, seed: int = 0, clock: str = "cpu") -> dict:
    """Timings of one case in milliseconds: parse, right, left, setup, and each fed piece."""
    from fimlsp.language import DEFAULT_LANGUAGE, named

    now = CLOCKS[clock]
    source = case.left + case.middle + case.right
    parse_ms = 1e3 * _parse_seconds(source, now)
    clock = now()
    context = named(DEFAULT_LANGUAGE).right_context(case.right)
    right_ms = 1e3 * (now() - clock)
    clock = now()
    state = context.start(case.left)
    left_ms = 1e3 * (now() - clock)
    feed_ms: list[float] = []
    distance_ms: list[float] = []
    accepted = fed_all = state is not None
    if state is not None:
        for piece in pieces(case.middle, random.Random(f"{seed}:{case.id}")):
            clock = now()
            next_state = state.feed(piece)
            feed_ms.append(1e3 * (now() - clock))
            if next_state is None:
                fed_all = False
                break
            clock = now()
            next_state.distance_bound()
            distance_ms.append(1e3 * (now() - clock))
            state = next_state
    complete = fed_all and state.complete
    return {
        "case": case.id, "kind": case.kind, "context_chars": case.context_chars, "file_chars": len(source),
        "parse_ms": parse_ms, "right_ms": right_ms, "left_ms": left_ms, "setup_ms": right_ms + left_ms,
        "accepted_left": accepted, "fed_all": fed_all, "complete": complete,
        "feed_ms": feed_ms, "distance_ms": distance_ms,
    }


def start_up(clock: str = "cpu") -> float:
    """Milliseconds of what the process builds once, before its first setup (the language's grammar and its
    tables), measured by setting up empty contexts: nothing after it is that case's own (`run` does it first)."""
    from fimlsp.language import DEFAULT_LANGUAGE, named

    now = CLOCKS[clock]
    clock = now()
    named(DEFAULT_LANGUAGE).right_context("").start("")
    return 1e3 * (now() - clock)


def run(cases: Iterable[EvalCase], seed: int = 0, progress: bool = False, clock: str = "cpu") -> list[dict]:
    """Every case's timings (`measure`), in a process started up first (`start_up`), so that the first case does
    not carry the process's one-time cost."""
    from tqdm import tqdm

    cases = list(cases)
    start_up(clock)
    return [measure(case, seed, clock) for case in tqdm(cases, unit="case", disable=not progress)]


def summarize(rows: list[dict]) -> str:
    """Medians, ratios to `ast.parse` and fitted lines of `run`'s rows."""
    if not rows:
        return "no cases"
    usable = [row for row in rows if row["accepted_left"]]
    rejected = len(rows) - len(usable)
    contexts = [row["context_chars"] for row in usable]
    setups = [row["setup_ms"] for row in usable]
    setup_ratio = [row["setup_ms"] / row["parse_ms"] for row in usable if row["parse_ms"] > 0]
    per_token = [(row["context_chars"], statistics.fmean(row["feed_ms"]), row["parse_ms"])
                 for row in usable if row["feed_ms"]]
    all_feeds = sorted(ms for row in usable for ms in row["feed_ms"])
    token_ratio = [mean / parse for _, mean, parse in per_token if parse > 0]
    parse_per_k = [1e3 * row["parse_ms"] / row["file_chars"] for row in usable]
    setup_per_k = [1e3 * row["setup_ms"] / max(1, row["context_chars"]) for row in usable]
    kinds = sorted({row["kind"] for row in rows})
    lines = [f"cases: {len(rows)} ({', '.join(kinds)}); left context rejected by the constraint: {rejected}; "
             f"true middle fed to the end: {sum(r['fed_all'] for r in usable)}, file complete after it: "
             f"{sum(r['complete'] for r in usable)}"]
    if not usable:
        return lines[0]
    slope, intercept, r2 = fit([float(c) for c in contexts], setups)
    lines += [
        f"context size: median {statistics.median(contexts):.0f} chars, max {max(contexts)}",
        f"ast.parse of the whole file: median {statistics.median(r['parse_ms'] for r in usable):.2f} ms, "
        f"{statistics.median(parse_per_k):.3f} ms per 1,000 chars",
        f"one-time setup: median {statistics.median(setups):.1f} ms, {statistics.median(setup_per_k):.2f} ms per "
        f"1,000 context chars (right context {statistics.median(r['right_ms'] for r in usable):.1f} ms, left "
        f"{statistics.median(r['left_ms'] for r in usable):.1f} ms); median {statistics.median(setup_ratio):.0f}x "
        f"the file's ast.parse; fit y = {slope:.3g} x {'+' if intercept >= 0 else '-'} {abs(intercept):.3g} ms "
        f"(R² = {r2:.3g})",
    ]
    lines += _setup_multiples(usable)
    if per_token:
        slope, intercept, r2 = fit([float(c) for c, _, _ in per_token], [mean for _, mean, _ in per_token])
        lines.append(
            f"per token (3-4 chars): median {statistics.median(all_feeds):.3f} ms, p90 "
            f"{all_feeds[int(0.9 * len(all_feeds))]:.3f} ms over {len(all_feeds)} tokens; mean per case is median "
            f"{statistics.median(token_ratio):.3f}x the file's ast.parse; fit of the per-case mean y = {slope:.3g} x "
            f"{'+' if intercept >= 0 else '-'} {abs(intercept):.3g} ms (R² = {r2:.3g})")
        with_distance = [feed + distance for row in usable for feed, distance in
                         zip(row["feed_ms"], row.get("distance_ms", ()))]
        if with_distance:
            with_distance.sort()
            lines.append(f"per token with its distance bound: median {statistics.median(with_distance):.3f} ms, "
                         f"p90 {with_distance[int(0.9 * len(with_distance))]:.3f} ms")
        crossing = _break_even(per_token)
        if crossing == 0:
            lines.append("by the fitted lines, one feed costs less than one ast.parse of the file at every size")
        elif crossing == float("inf"):
            lines.append("by the fitted lines, one feed costs more than one ast.parse of the file at every size")
        else:
            lines.append(f"by the fitted lines, one feed costs as much as one ast.parse of the file at about "
                         f"{crossing:,.0f} context chars, and less above")
    return "\n".join(lines)


# The paper's reference implementation (amazon-science/incremental-parsing, Python + Rust), as published:
# one-time setup of 270 ms plus 0.28 ms per context character. Figures of another machine, not measured here.
REFERENCE_SETUP_MS = 270.0
REFERENCE_SETUP_MS_PER_CHAR = 0.28


def _quantiles(values: list[float], unit: str) -> str:
    ordered = sorted(values)
    picks = [("median", statistics.median(ordered))] + [
        (name, ordered[min(len(ordered) - 1, int(share * len(ordered)))]) for name, share in (("p90", 0.9), ("p99", 0.99))
    ] + [("max", ordered[-1])]
    return ", ".join(f"{name} {value:,.1f}{unit}" for name, value in picks)


def _setup_multiples(rows: list[dict]) -> list[str]:
    """Setup as a multiple of one `ast.parse` of the same file in the same run, and what the reference
    implementation's published figures would make of the same cases."""
    timed = [row for row in rows if row["parse_ms"] > 0]
    if not timed:
        return []
    ours = [row["setup_ms"] / row["parse_ms"] for row in timed]
    reference = [(REFERENCE_SETUP_MS + REFERENCE_SETUP_MS_PER_CHAR * row["context_chars"]) / row["parse_ms"]
                 for row in timed]
    return [
        f"setup as a multiple of the file's ast.parse: {_quantiles(ours, 'x')} "
        f"({_quantiles([row['setup_ms'] for row in timed], ' ms')})",
        f"  reference implementation, by its published {REFERENCE_SETUP_MS:.0f} ms + "
        f"{REFERENCE_SETUP_MS_PER_CHAR} ms per context character (not measured here): {_quantiles(reference, 'x')}",
    ]


def _break_even(per_token: list[tuple[int, float, float]]) -> float:
    xs = [float(c) for c, _, _ in per_token]
    feed_slope, feed_intercept, _ = fit(xs, [mean for _, mean, _ in per_token])
    parse_slope, parse_intercept, _ = fit(xs, [parse for _, _, parse in per_token])
    if parse_slope <= feed_slope:
        return float("inf")
    return max(0.0, (feed_intercept - parse_intercept) / (parse_slope - feed_slope))


def write_rows(rows: list[dict], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def plot(rows: list[dict], path: Path) -> Path:
    """Per-token feed cost and one-time setup against context size, with `ast.parse` of the file for scale."""
    from fimlsp.evaluation.report import plot as plot_series

    series: dict[str, tuple[list[float], list[float]]] = {
        "per-token: feed of the constraint": ([], []), "per-token: ast.parse of the file": ([], []),
        "one-time: setup of the constraint": ([], []),
    }
    for row in rows:
        if not row["accepted_left"]:
            continue
        x = float(row["context_chars"])
        if row["feed_ms"]:
            series["per-token: feed of the constraint"][0].append(x)
            series["per-token: feed of the constraint"][1].append(statistics.fmean(row["feed_ms"]))
        series["per-token: ast.parse of the file"][0].append(x)
        series["per-token: ast.parse of the file"][1].append(row["parse_ms"])
        series["one-time: setup of the constraint"][0].append(x)
        series["one-time: setup of the constraint"][1].append(row["setup_ms"])
    return plot_series({k: v for k, v in series.items() if v[0]}, path, titles=(
        "per-token cost: one feed of the constraint, and one ast.parse of the whole file",
        "one-time setup of the constraint (right-context quotient + left context)"))
