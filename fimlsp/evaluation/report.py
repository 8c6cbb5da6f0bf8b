"""Tables and the timing figure of an evaluation's results file (Tables I-II and Fig. 11 of Melcer et al.).

The contingency table of a cut kind counts the cases that have a record in all three modes. Its rows partition
them as in the paper: unconstrained ✓; unconstrained ✗ but checked ✓; checked ✗ (then unconstrained ✗ too, as
checked decoding succeeds on a superset of cases; a case where unconstrained succeeds and checked fails, which
only a timing-dependent stop can cause, is counted in the first row and reported under the table). Its columns
are constrained ✓/✗. "✓" means CPython compiles `left + middle + right`.

The figure has, against context size (characters of left plus right context): the mean constraint overhead per
generated token of the constrained and checked modes (with the model's own time per token for scale), and the
one-time overheads of the constrained mode: the quotient of the contexts (checked decoding has none), and the
shortest-finish searches, a few a completion whatever its length, which the per-token figure leaves out. Lines
are least-squares fits y = a x + b, drawn on the log-log axes and printed with R².
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from fimlsp.evaluation.runner import MODES, read_results

ROWS = ("unconstrained ✓", "unconstrained ✗, checked ✓", "checked ✗")
TITLES = {"randspan": "random-span cuts (cf. Table II, STACK-RANDSPAN)",
          "boundary": "boundary cuts (cf. Table I, STACK-BOUNDARY)",
          "line": "line cuts (the rest of a line, or whole lines)",
          "node": "syntax-node cuts (an expression, arguments, a statement or a block)"}


def by_case(records: list[dict]) -> dict[str, dict[str, dict]]:
    """case id -> mode -> record (the last record wins if a pair appears twice); records of a decoder that
    raised (`error`) are left out, as they say nothing of validity or cost."""
    cases: dict[str, dict[str, dict]] = defaultdict(dict)
    for record in records:
        if "error" not in record:
            cases[record["case"]][record["mode"]] = record
    return cases


def contingency(records: list[dict], kind: str | None = None) -> dict:
    """Counts `table[row][constrained ok]` over the cases (of `kind`) run in all three modes, plus `anomalies`:
    cases where unconstrained parses and checked does not."""
    table = {row: {True: 0, False: 0} for row in ROWS}
    anomalies = 0
    for modes in by_case(records).values():
        if not all(mode in modes for mode in MODES):
            continue
        if kind is not None and modes["constrained"]["kind"] != kind:
            continue
        unconstrained, checked = modes["unconstrained"]["parses"], modes["checked"]["parses"]
        constrained = bool(modes["constrained"]["parses"])
        if unconstrained:
            row = ROWS[0]
            anomalies += not checked
        else:
            row = ROWS[1] if checked else ROWS[2]
        table[row][constrained] += 1
    return {"rows": table, "anomalies": anomalies, "cases": sum(sum(row.values()) for row in table.values())}


def format_table(result: dict, title: str) -> str:
    rows = result["rows"]
    width = max(len(row) for row in ROWS) + 2
    lines = [f"{title}: {result['cases']} cases",
             f"{'':{width}}{'constrained ✓':>15}{'constrained ✗':>15}{'total':>8}"]
    for row in ROWS:
        ok, failed = rows[row][True], rows[row][False]
        lines.append(f"{row:{width}}{ok:>15}{failed:>15}{ok + failed:>8}")
    ok = sum(rows[row][True] for row in ROWS)
    failed = sum(rows[row][False] for row in ROWS)
    lines.append(f"{'total':{width}}{ok:>15}{failed:>15}{ok + failed:>8}")
    if result["anomalies"]:
        lines.append(f"({result['anomalies']} cases in the first row parse unconstrained but not checked)")
    return "\n".join(lines)


def validity(records: list[dict], max_tokens: int | None = None) -> dict[tuple[str, str], dict]:
    """(kind, mode) -> n, valid, rate, exact (share equal to the deleted text), empty (share of empty middles: the
    model ended at once, which counts as its end of sequence but shows a user nothing), median tokens, stops, and
    undefined (the share of valid middles that add a name pyflakes reports undefined, `fimlsp.evaluation.names`)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for record in by_case_records(records):
        groups[(record["kind"], record["mode"])].append(record)
    summary = {}
    for key, group in sorted(groups.items()):
        valid = sum(1 for r in group if r["parses"])
        stops: dict[str, int] = defaultdict(int)
        endings: dict[str, int] = defaultdict(int)
        for r in group:
            stops[r["stop"]] += 1
            endings[ending(r)] += 1
        finished = [r["finish_chars"] for r in group if r.get("finish_chars") and ending(r) in ("finish", "fallback")]
        measured = [r["added_undefined"] for r in group if r["parses"] and r.get("added_undefined") is not None]
        summary[key] = {
            "n": len(group), "valid": valid, "rate": valid / len(group),
            "exact": sum(1 for r in group if r.get("exact")) / len(group),
            "empty": sum(1 for r in group if not r["middle"]) / len(group),
            "tokens": statistics.median(steps(r, max_tokens) for r in group),
            "model_ms_per_token": _median(per_step_ms(r, r["model_seconds"], max_tokens) for r in group),
            "constraint_ms_per_token": _median(per_step_ms(r, per_token_seconds(r), max_tokens) for r in group),
            "setup_ms": statistics.median(1e3 * r["setup_seconds"] for r in group),
            "search_ms": statistics.median(1e3 * r.get("search_seconds", 0.0) for r in group),
            "stops": dict(sorted(stops.items(), key=lambda item: -item[1])),
            "endings": dict(sorted(endings.items(), key=lambda item: -item[1])),
            "finish_chars": statistics.median(finished) if finished else 0,
            "repeat_cuts": sum(1 for r in group if r.get("repeated_chars")),
            # of the valid middles pyflakes could judge, the share that adds an undefined name (None: none judged)
            "undefined": sum(1 for names in measured if names) / len(measured) if measured else None,
        }
    return summary


def ending(record: dict) -> str:
    """How the middle ended (`fimlsp.decoding.Completion.ending`); records written before it existed say it
    through their stop and fallback."""
    if "ending" in record:
        return record["ending"]
    if record.get("fallback"):
        return "fallback"
    return record["stop"] if record["stop"] in ("eos", "line") and record.get("parses") else "none"


def _median(values) -> float:
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else 0.0


def by_case_records(records: list[dict]) -> list[dict]:
    return [record for modes in by_case(records).values() for record in modes.values()]


def format_validity(summary: dict) -> str:
    lines = [f"{'cuts':<10}{'mode':<15}{'cases':>6}{'valid':>8}{'exact':>8}{'empty':>8}{'undef':>8}{'steps':>8}"
             f"{'model ms/tok':>14}{'constraint ms/tok':>19}{'setup ms':>10}{'search ms':>11}  stops"]
    for (kind, mode), s in summary.items():
        stops = ", ".join(f"{name} {count}" for name, count in s["stops"].items())
        undefined = "n/a" if s.get("undefined") is None else f"{s['undefined']:.1%}"
        lines.append(f"{kind:<10}{mode:<15}{s['n']:>6}{s['rate']:>8.1%}{s['exact']:>8.1%}{s['empty']:>8.1%}"
                     f"{undefined:>8}{s['tokens']:>8.0f}"
                     f"{s['model_ms_per_token']:>14.2f}{s['constraint_ms_per_token']:>19.3f}{s['setup_ms']:>10.1f}"
                     f"{s['search_ms']:>11.1f}  {stops}")
    lines += ["", f"{'cuts':<10}{'mode':<15}{'finish chars':>13}{'repeat cuts':>13}  how the middles ended"]
    for (kind, mode), s in summary.items():
        endings = ", ".join(f"{name} {count}" for name, count in s["endings"].items())
        lines.append(f"{kind:<10}{mode:<15}{s['finish_chars']:>13.0f}{s['repeat_cuts']:>13}  {endings}")
    return "\n".join(lines)


def fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least-squares line y = a x + b and its R²."""
    if len(xs) < 2:
        return 0.0, (ys[0] if ys else 0.0), 0.0
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    syy = sum((y - mean_y) ** 2 for y in ys)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    slope = sxy / sxx if sxx else 0.0
    r2 = (sxy * sxy) / (sxx * syy) if sxx and syy else 0.0
    return slope, mean_y - slope * mean_x, r2


def steps(record: dict, max_tokens: int | None = None) -> int:
    """Decoding steps (tokens generated) of a record: the model's forward passes where recorded (`steps`);
    otherwise `tokens` unless the middle is a shorter fallback prefix of a run that hit the token limit (then
    `max_tokens`). Only a fallback after another stop (no candidate, time-out) is then undercounted."""
    if "steps" in record:
        return record["steps"]
    if record.get("fallback") and record.get("stop") == "max_tokens" and max_tokens:
        return max_tokens
    return record["tokens"]


def per_step_ms(record: dict, seconds: float, max_tokens: int | None = None) -> float | None:
    count = steps(record, max_tokens)
    return 1e3 * seconds / count if count > 0 else None


def per_token_seconds(record: dict) -> float:
    """The constraint's time that grows with the tokens generated: its searches (`search_seconds`, recorded since
    they were told apart) are a cost per completion."""
    return record["constraint_seconds"] - record.get("search_seconds", 0.0)


def timing_series(records: list[dict], max_tokens: int | None = None) -> dict[str, tuple[list[float], list[float]]]:
    """Named (context chars, milliseconds) series of the figure: per-token figures are per decoding step
    (`steps`), records with none are left out of them."""
    series: dict[str, tuple[list[float], list[float]]] = {}

    def add(name: str, x: float, y: float) -> None:
        series.setdefault(name, ([], []))
        series[name][0].append(x)
        series[name][1].append(y)

    for record in by_case_records(records):
        x = float(record["context_chars"])
        constraint = per_step_ms(record, per_token_seconds(record), max_tokens)
        model = per_step_ms(record, record["model_seconds"], max_tokens)
        if record["mode"] in ("constrained", "checked") and constraint is not None:
            add(f"per-token: {record['mode']}", x, constraint)
        if model is not None:
            add("per-token: model", x, model)
        if record["mode"] == "constrained":
            add("one-time: constrained", x, 1e3 * record["setup_seconds"])
            if "search_seconds" in record:
                add("one-time: finish searches", x, 1e3 * record["search_seconds"])
    return series


def format_fits(series: dict) -> str:
    lines = ["fitted lines, y in ms, x = context size in characters:"]
    for name, (xs, ys) in sorted(series.items()):
        slope, intercept, r2 = fit(xs, ys)
        lines.append(f"  {name:<24} y = {slope:.3g} x {'+' if intercept >= 0 else '-'} {abs(intercept):.3g}"
                     f"  (R² = {r2:.3g}, n = {len(xs)}, median y {statistics.median(ys):.3g} ms)")
    return "\n".join(lines)


STYLE = {"per-token: constrained": ("tab:blue", "o"), "per-token: checked": ("tab:orange", "s"),
         "per-token: model": ("0.45", "x"), "one-time: constrained": ("tab:blue", "o"),
         "one-time: finish searches": ("tab:green", "^"),
         "per-token: ast.parse of the file": ("tab:orange", "s"),
         "per-token: feed of the constraint": ("tab:blue", "o"),
         "one-time: setup of the constraint": ("tab:blue", "o")}


def plot(series: dict, path: Path, title: str = "", titles: tuple[str, str] | None = None) -> Path:
    """Write the two-panel timing figure (the analogue of Fig. 11) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 1, figsize=(7.5, 9), constrained_layout=True)
    for axis, prefix, label in ((axes[0], "per-token", "mean overhead per generated token (ms)"),
                                (axes[1], "one-time", "one-time overhead (ms)")):
        drawn = False
        for name, (xs, ys) in sorted(series.items()):
            if not name.startswith(prefix):
                continue
            points = [(x, y) for x, y in zip(xs, ys) if x > 0 and y > 0]
            if not points:
                continue
            color, marker = STYLE.get(name, ("k", "."))
            slope, intercept, r2 = fit(xs, ys)
            axis.scatter([p[0] for p in points], [p[1] for p in points], s=10, c=color, marker=marker, alpha=0.5,
                         linewidths=0 if marker != "x" else 0.8,
                         label=f"{name.split(': ')[1]}: y = {slope:.3g}x {'+' if intercept >= 0 else '-'} "
                               f"{abs(intercept):.3g} (R² = {r2:.2g})")
            low, high = min(p[0] for p in points), max(p[0] for p in points)
            grid = [low * (high / low) ** (i / 99) for i in range(100)] if high > low else [low]
            line = [(x, slope * x + intercept) for x in grid if slope * x + intercept > 0]
            if line:
                axis.plot([p[0] for p in line], [p[1] for p in line], color=color, linewidth=1.5)
            drawn = True
        axis.set_xscale("log")
        if drawn:
            axis.set_yscale("log")
            axis.legend(fontsize=8, loc="best")
        axis.set_xlabel("context size (characters of left + right context)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.2)
    titles = titles or ("per-token overhead: constraint of each mode, and the model itself",
                        "one-time overheads of constrained decoding (checked decoding has none)")
    axes[0].set_title(titles[0] + (f"\n{title}" if title else ""), fontsize=10)
    axes[1].set_title(titles[1], fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def report(results: Path, png: Path | None = None) -> str:
    """The text report of a results file; writes the figure to `png` when given."""
    header, records = read_results(results)
    if header is None:
        raise ValueError(f"{results} is not a results file of fimlsp eval")
    timeout = f", timeout {header['timeout']} s" if header.get("timeout") else ""
    scope = f", constrained scope {header['scope']}" if header.get("scope", "file") != "file" else ""
    scope += f", names {header['names']}" if header.get("names", "off") != "off" else ""
    loops = f", loops cut at {header['loop_repeats']} repeats" if header.get("loop_repeats") else ""
    healing = ", token healing" if header.get("token_healing") else ""
    attempts = header.get("attempts", 1)
    attempts = f", best ended of {attempts} greedy middles" if attempts > 1 else ", greedy"
    parts = [f"model {header.get('model')}, max tokens {header.get('max_tokens')}, top-k {header.get('top_k')}"
             f"{timeout}{scope}{loops}{healing}{attempts}; "
             f"{len(by_case(records))} cases, {len(by_case_records(records))} records"]
    errors = [record for record in records if "error" in record]
    if errors:
        parts.append(f"{len(errors)} runs raised and are left out, e.g. {errors[0]['case']} {errors[0]['mode']}: "
                     f"{errors[0]['error']}")
    kinds = sorted({record["kind"] for record in records}, key=lambda k: (k != "randspan", k))
    for kind in kinds:
        table = contingency(records, kind)
        if table["cases"]:  # a run of fewer modes has no contingency table
            parts.append(format_table(table, TITLES.get(kind, kind)))
    if records:
        parts.append(format_validity(validity(records, header.get("max_tokens"))))
        parts.append("steps: tokens generated (medians); ms/tok: per generated token, searches left out; setup: "
                     "one-time, constrained; search: the shortest-finish searches of a completion")
        series = timing_series(records, header.get("max_tokens"))
        parts.append(format_fits(series))
        if png is not None:
            plot(series, png, title=f"{Path(str(header.get('model'))).name}, {len(by_case(records))} cases")
            parts.append(f"figure: {png}")
    return "\n\n".join(parts)
