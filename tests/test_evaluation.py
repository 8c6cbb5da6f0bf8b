"""`fimlsp eval` and `fimlsp bench`: case construction, case files, resume, tables and the figure."""

import dataclasses
import io
import json
import random
import tokenize

import pytest

from fimlsp.cases import random_span_cases
from fimlsp.cli import main
from fimlsp.evaluation import bench, dataset, report, runner

SOURCE = '''import os


def function_{i}(x, y):
    """Docstring {i}."""
    if x > y:
        total = x * {i} + y
        for item in range(total):
            print(item, os.sep)
    else:
        total = (x
                 + y)
    return total


class Thing{i}:
    value = {i}

    def method(self):
        return [self.value, function_{i}(1, 2)]
'''

FILES = [(f"pkg/module_{i}.py", SOURCE.format(i=i) * (1 + i % 3)) for i in range(30)]


def test_cases_are_deterministic_and_independent_of_file_order():
    for kind in dataset.KINDS:
        first = dataset.build_cases(FILES, kind, seed=3, files_limit=12, per_file=3)
        shuffled = FILES[:]
        random.Random(1).shuffle(shuffled)
        assert dataset.build_cases(shuffled, kind, seed=3, files_limit=12, per_file=3) == first
        assert len({case.file for case in first}) == 12
        assert len({case.id for case in first}) == len(first) > 24
        assert all(case.left + case.middle + case.right == dict(FILES)[case.file] for case in first)
        other = dataset.build_cases(FILES, kind, seed=4, files_limit=12, per_file=3)
        assert [(c.id, c.left) for c in other] != [(c.id, c.left) for c in first]


def test_per_file_draws_extend_the_one_case_per_file_rule():
    single = list(random_span_cases(FILES, seed=5, count=10))
    several = list(random_span_cases(FILES, seed=5, per_file=4))
    assert [case for case in several if case.draw == 0][:10] == single
    assert max(case.draw for case in several) == 3
    by_file = {}
    for case in several:
        by_file.setdefault(case.name, set()).add(len(case.left))
    assert all(len(starts) == sum(c.name == name for c in several) for name, starts in by_file.items())


def test_random_span_deletion_rule():
    cases = dataset.build_cases(FILES + [("short.py", "x = 1\n" * 40)], "randspan", seed=0, per_file=10)
    assert cases
    for case in cases:
        size = len(case.left) + len(case.middle) + len(case.right)
        assert len(case.left) < int(0.9 * size)
        assert len(case.middle) == min(100, int(0.2 * size), size - len(case.left))
    assert any(len(case.middle) < 100 for case in cases if case.file == "short.py")


def _tokens_with_levels(text):
    """(level, start offset, end offset) of the significant tokens, computed here independently."""
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    level, result = 0, []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.INDENT:
            level += 1
        elif token.type == tokenize.DEDENT:
            level -= 1
        elif token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER) and token.string:
            start = offsets[token.start[0] - 1] + token.start[1]
            result.append((level, start, offsets[token.end[0] - 1] + token.end[1]))
    return result


def test_boundary_cuts_lie_between_two_tokens_at_the_same_indentation_level():
    cases = dataset.build_cases(FILES, "boundary", seed=2, files_limit=20, per_file=5)
    assert len(cases) >= 60
    levels = set()
    for case in cases:
        tokens = _tokens_with_levels(case.left + case.middle + case.right)
        cut, end = len(case.left), len(case.left) + len(case.middle)
        first = [t for t in tokens if t[1] <= cut < t[2]]
        second = [t for t in tokens if t[1] == end]
        assert len(first) == 1 and len(second) == 1, case.id
        assert first[0][0] == second[0][0], case.id  # same indentation level
        assert second[0][1] > first[0][1]
        levels.add(first[0][0])
    assert levels >= {0, 1, 2}  # cuts at several depths


def test_discover_keeps_parsable_files_and_case_files_round_trip(tmp_path):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text(SOURCE.format(i=1))
    (root / "sub" / "b.py").write_text(SOURCE.format(i=2))
    (root / "broken.py").write_text("def f(:\n")
    (root / "notes.txt").write_text("x = 1\n")
    files, skipped = dataset.discover([root])
    assert [name for name, _ in files] == ["tree/a.py", "tree/sub/b.py"]
    assert skipped["syntax"] == 1
    cases = dataset.build_cases(files, "boundary", seed=0, per_file=2)
    path = tmp_path / "cases.jsonl"
    assert dataset.dump_cases(cases, path) == len(cases)
    assert dataset.load_cases(path) == cases
    path.write_text(path.read_text() + '{"id": "x"}\n')
    with pytest.raises(ValueError, match=f"cases.jsonl:{len(cases) + 1}"):
        dataset.load_cases(path)


def _lines(path):
    return path.read_text().splitlines()


def test_resume_skips_finished_cases_and_appends_only_new_ones(tiny, tiny_model_path, tmp_path):
    cases = dataset.build_cases(FILES, "randspan", seed=1, files_limit=4)
    settings = runner.RunSettings(str(tiny_model_path), max_tokens=3, top_k=5)
    out = tmp_path / "results.jsonl"
    assert runner.run_cases(cases[:2], list(runner.MODES), settings, out, progress=False, model=tiny) == (2, 0)
    before = _lines(out)
    assert json.loads(before[0])["type"] == "run" and len(before) == 1 + 2 * 3
    record = json.loads(before[1])
    for key in ("case", "mode", "middle", "parses", "tokens", "candidates_tried", "model_seconds", "setup_seconds",
                "constraint_ms_per_token", "context_chars", "steps"):
        assert key in record
    assert record["steps"] >= record["tokens"]
    with open(out, "a") as sink:
        sink.write('{"type": "result", "case": "cut sh')  # a crash in the middle of a line
    assert runner.run_cases(cases, list(runner.MODES), settings, out, progress=False, model=tiny) == (2, 2)
    after = _lines(out)
    assert after[:len(before)] == before and len(after) == 1 + 4 * 3
    assert {json.loads(line)["case"] for line in after[len(before):]} == {case.id for case in cases[2:]}
    assert runner.run_cases(cases, list(runner.MODES), settings, out, progress=False, model=tiny) == (0, 4)
    assert _lines(out) == after
    with pytest.raises(runner.ResumeError, match="max_tokens"):
        runner.run_cases(cases, list(runner.MODES), runner.RunSettings(str(tiny_model_path), max_tokens=9, top_k=5),
                         out, progress=False, model=tiny)


def _record(case, kind, mode, parses, context=1000, tokens=10, middle="x = 1"):
    return {"type": "result", "case": case, "kind": kind, "mode": mode, "parses": parses, "stop": "eos",
            "middle": middle, "context_chars": context, "tokens": tokens, "model_seconds": 0.01 * tokens, "exact": False,
            "setup_seconds": 0.1 + context * 1e-5 if mode == "constrained" else 0.0, "steps": tokens,
            "constraint_seconds": tokens * {"constrained": 5e-4, "checked": context * 1e-6, "unconstrained": 0.0}[mode]}


def test_report_tables_rates_and_figure_from_a_results_file(tmp_path):
    # (unconstrained, checked, constrained) outcomes and how many cases have each
    outcomes = {(True, True, True): 5, (True, True, False): 1, (False, True, True): 4, (False, True, False): 2,
                (False, False, True): 3, (False, False, False): 6, (True, False, True): 1}
    records, index = [], 0
    for (u, c, k), count in outcomes.items():
        for _ in range(count):
            index += 1
            for mode, ok in zip(("unconstrained", "checked", "constrained"), (u, c, k)):
                records.append(_record(f"randspan:f{index}.py#0", "randspan", mode, ok, context=500 * index))
    records.append(_record("randspan:only-one-mode.py#0", "randspan", "constrained", True))
    records.append({**_record("randspan:f1.py#0", "randspan", "checked", False), "error": "RecursionError: deep"})
    table = report.contingency(records, "randspan")
    assert table["rows"] == {"unconstrained ✓": {True: 6, False: 1}, "unconstrained ✗, checked ✓": {True: 4, False: 2},
                             "checked ✗": {True: 3, False: 6}}
    assert table["cases"] == 22 and table["anomalies"] == 1
    rates = report.validity(records)
    assert rates[("randspan", "unconstrained")]["valid"] == 7 and rates[("randspan", "unconstrained")]["n"] == 22
    assert rates[("randspan", "constrained")]["n"] == 23 and rates[("randspan", "constrained")]["valid"] == 14
    series = report.timing_series(records)
    xs, ys = series["per-token: checked"]
    assert report.fit(xs, ys)[:2] == pytest.approx((1e-3, 0.0), abs=1e-9)  # checked: 1e-3 ms per context char
    assert series["per-token: constrained"][1] == pytest.approx([0.5] * len(series["per-token: constrained"][1]))
    assert report.steps({"tokens": 3, "fallback": True, "stop": "max_tokens"}, 128) == 128
    slope, intercept, r2 = report.fit([1.0, 2.0, 3.0], [3.0, 5.0, 7.0])
    assert (slope, intercept, r2) == pytest.approx((2.0, 1.0, 1.0))
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in
                              [{"type": "run", "model": "m", "max_tokens": 5, "top_k": 50}] + records) + "\n")
    png = tmp_path / "figure.png"
    assert main(["eval", "--report", str(path), "--plot", str(png)]) == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    text = report.report(path)
    assert "unconstrained ✓" in text and "checked ✗" in text and "R²" in text and "1 runs raised" in text


def test_finish_searches_are_reported_per_completion_and_left_out_of_the_per_token_cost():
    searched = []
    for index, tokens in enumerate((4, 10, 40)):
        record = _record(f"boundary:f{index}.py#0", "boundary", "constrained", True, tokens=tokens)
        searched.append({**record, "search_seconds": 0.2, "constraint_seconds": record["constraint_seconds"] + 0.2})
    older = _record("boundary:old.py#0", "boundary", "constrained", True)  # written before searches were told apart
    summary = report.validity(searched)[("boundary", "constrained")]
    assert summary["search_ms"] == pytest.approx(200.0)
    # 5e-4 s a token besides the searches, whether 4 or 40 tokens share a search's 0.2 s
    assert summary["constraint_ms_per_token"] == pytest.approx(0.5)
    assert report.per_token_seconds(older) == older["constraint_seconds"]
    series = report.timing_series(searched + [older])
    assert series["one-time: finish searches"][1] == pytest.approx([200.0] * 3)
    assert "search ms" in report.format_validity(report.validity(searched))


def test_empty_middles_are_counted_apart_from_the_ends_by_eos_they_also_are():
    records = [_record(f"line:f{index}.py#0", "line", "unconstrained", True, middle="" if index < 2 else "pass")
               for index in range(8)]
    summary = report.validity(records)[("line", "unconstrained")]
    assert summary["empty"] == pytest.approx(0.25) and summary["endings"] == {"eos": 8}
    header, row = report.format_validity(report.validity(records)).splitlines()[:2]
    assert header.split()[:6] == ["cuts", "mode", "cases", "valid", "exact", "empty"]
    assert row.split()[3:6] == ["100.0%", "0.0%", "25.0%"]


def test_a_run_of_one_mode_reports_its_rates_without_empty_contingency_tables(tmp_path):
    path = tmp_path / "constrained.jsonl"
    records = [_record(f"randspan:f{index}.py#0", "randspan", "constrained", index != 0) for index in range(4)]
    path.write_text("\n".join(json.dumps(r) for r in
                              [{"type": "run", "model": "m", "max_tokens": 5, "top_k": 50}] + records) + "\n")
    text = report.report(path)
    assert "constrained ✗" not in text and "randspan  constrained" in text and "75.0%" in text


def test_cli_dump_cases_eval_report_and_bench(tiny_model_path, tmp_path, capsys):
    source = tmp_path / "src"
    source.mkdir()
    for name, text in FILES[:3]:
        (source / name.split("/")[1]).write_text(text)
    cases = tmp_path / "cases.jsonl"
    assert main(["eval", str(source), "--cuts", "randspan,boundary", "--files", "2", "--dump-cases", str(cases)]) == 0
    loaded = dataset.load_cases(cases)
    assert {case.kind for case in loaded} == {"randspan", "boundary"} and len(loaded) == 4
    out = tmp_path / "run.jsonl"
    assert main(["eval", "--cases", str(cases), "--cuts", "boundary", "--model", str(tiny_model_path),
                 "--max-tokens", "2", "--out", str(out), "--no-progress", "--device", "cpu", "--limit", "1"]) == 0
    printed = capsys.readouterr().out
    assert "boundary cuts" in printed and "random-span" not in printed
    # eval keeps its own defaults, and its run header says which are not the editors'
    assert "decoding: max_tokens=2, " in printed and "search_budget=20" in printed
    assert "not the editors' defaults: max_tokens (editors: 128)" in printed
    assert out.with_suffix(".png").is_file()
    assert len(_lines(out)) == 1 + 1 * 3
    assert main(["bench", "--cases", str(cases), "--no-progress", "--json", str(tmp_path / "bench.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "one-time setup" in printed and "setup as a multiple of the file's ast.parse: median" in printed
    assert "reference implementation" in printed and "per token with its distance bound: median" in printed
    rows = [json.loads(line) for line in _lines(tmp_path / "bench.jsonl")]
    assert len(rows) == 4
    for row in rows:  # a distance after every piece that fed, and none after one the constraint refused
        assert len(row["distance_ms"]) == len(row["feed_ms"]) - (not row["fed_all"])
    assert main(["eval", "--cases", str(cases), "--model", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert main(["eval"]) == 2


@pytest.mark.slow
def test_worker_processes_give_the_same_records(tiny_model_path, tmp_path):
    cases = dataset.build_cases(FILES, "randspan", seed=9, files_limit=2)
    settings = runner.RunSettings(str(tiny_model_path), max_tokens=2, top_k=5, device="cpu", threads=1)
    alone, parallel = tmp_path / "alone.jsonl", tmp_path / "parallel.jsonl"
    runner.run_cases(cases, ["unconstrained", "constrained"], settings, alone, workers=1, progress=False)
    runner.run_cases(cases, ["unconstrained", "constrained"], settings, parallel, workers=2, progress=False)
    key = lambda r: (r["case"], r["mode"])  # noqa: E731
    middles = lambda path: sorted((key(r), r["middle"]) for r in runner.read_results(path)[1])  # noqa: E731
    assert middles(alone) == middles(parallel) and len(middles(alone)) == 4


def test_schedule_runs_every_files_first_draw_first_and_alternates_kinds():
    cases = (dataset.build_cases(FILES, "randspan", seed=0, files_limit=5, per_file=3)
             + dataset.build_cases(FILES, "boundary", seed=0, files_limit=5, per_file=3))
    ordered = dataset.schedule(cases)
    assert sorted(ordered, key=lambda c: c.id) == sorted(cases, key=lambda c: c.id)
    assert [c.draw for c in ordered[:10]] == [0] * 10
    assert [c.kind for c in ordered[:4]] == ["randspan", "boundary", "randspan", "boundary"]
    assert [c.file for c in ordered[:10:2]] == list(dict.fromkeys(c.file for c in cases if c.kind == "randspan"))


def test_bench_reports_setup_as_multiples_of_a_parse_beside_the_reference():
    rows = [{"parse_ms": 2.0, "setup_ms": 2.0 * share, "context_chars": 1000} for share in range(1, 101)]
    ours, reference = bench._setup_multiples(rows)
    assert ours.startswith("setup as a multiple of the file's ast.parse: median 50.5x, p90 91.0x, p99 100.0x, max 100.0x")
    assert reference.endswith("median 275.0x, p90 275.0x, p99 275.0x, max 275.0x")  # (270 + 280) ms / 2 ms


def test_bench_starts_the_process_up_before_the_first_case_so_that_it_carries_only_its_own_cost(monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "start_up", lambda clock="cpu": calls.append("start-up") or 0.0)
    monkeypatch.setattr(bench, "measure", lambda case, seed, clock: calls.append(case) or {})
    bench.run(["first", "second"])
    assert calls == ["start-up", "first", "second"]


def test_a_results_file_from_before_the_later_settings_resumes_as_file_scope_without_loop_cuts_or_healing(tmp_path):
    results = tmp_path / "old.jsonl"
    results.write_text(json.dumps({"type": "run", "model": runner.RunSettings().model_name, "max_tokens": 500,
                                   "top_k": 50, "timeout": None}) + "\n")
    old = runner.RunSettings(loop_repeats=0, token_healing=False, attempts=1, search_budget=None)
    assert runner.prepare(results, old) == set()
    with pytest.raises(runner.ResumeError, match="attempts=1"):  # its middles were plain greedy ones
        runner.prepare(results, dataclasses.replace(old, attempts=3))
    with pytest.raises(runner.ResumeError, match="scope"):
        runner.prepare(results, dataclasses.replace(old, scope="block"))
    with pytest.raises(runner.ResumeError, match="loop_repeats=0"):
        runner.prepare(results, dataclasses.replace(old, loop_repeats=3))
    with pytest.raises(runner.ResumeError, match="token_healing=False"):
        runner.prepare(results, dataclasses.replace(old, token_healing=True))
    with pytest.raises(runner.ResumeError, match="search_budget=None"):  # its searches were bounded by the clock
        runner.prepare(results, dataclasses.replace(old, search_budget=runner.SEARCH_BUDGET))


def test_names_a_middle_leaves_undefined_are_those_its_true_middle_does_not():
    from fimlsp.evaluation.names import added_undefined_names

    left, right = "import os\n\ndef f(directories):\n    ", "\n    return directories\n"
    assert added_undefined_names(left, "x = warningStream", right, "x = os.sep") == ["warningStream"]
    assert added_undefined_names(left, "x = os.getcwd()", right, "x = os.sep") == []
    # a header that no longer binds what the body below uses
    assert added_undefined_names("def f(", "):", "\n    return directories\n", "directories):") == ["directories"]
    assert added_undefined_names("x = (", "", "\n", "1)") is None  # the file does not parse: not measured


def test_the_share_of_valid_middles_adding_an_undefined_name_is_reported():
    records = [{**_record(f"line:f{index}.py#0", "line", "constrained", index != 3),
                "added_undefined": ["name"] if index == 0 else []} for index in range(4)]
    records.append(_record("line:old.py#0", "line", "constrained", True))  # written before it was measured
    summary = report.validity(records)[("line", "constrained")]
    assert summary["undefined"] == pytest.approx(1 / 3)
    header, row = report.format_validity(report.validity(records)).splitlines()[:2]
    assert header.split()[6] == "undef" and row.split()[6] == "33.3%"
