"""Eval's cases know where their files lie, and `fimlsp eval --context` puts the case's project into the prompt
the way `fimlsp complete --project` does (issue 45): the cross-file measurement runs the product's own path."""

import json
from pathlib import Path

from fimlsp.cli import main
from fimlsp.evaluation import dataset, runner
from fimlsp.model.transformers import TransformersModel

HELPERS = 'def shipping_cost(weight, zone):\n    """Cost in cents, by weight and zone."""\n    return weight * zone\n'
MAIN = ("from shop.helpers import shipping_cost\n\n\ndef total(order):\n    cost = shipping_cost(order.weight, 3)\n"
        "    return cost + order.amount\n")


def shop(tmp_path: Path) -> Path:
    """A project: a package whose `main` calls what `helpers` defines."""
    root = tmp_path / "shop"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text(HELPERS)
    (root / "main.py").write_text(MAIN)
    return root


def main_case(root: Path) -> dataset.EvalCase:
    """A cut of main.py from the call of `shipping_cost` to the end of its line."""
    start = MAIN.index("shipping_cost(order")
    end = MAIN.index("\n", start)
    return dataset.EvalCase("line:shop/main.py#0", "line", "shop/main.py", 0, 0, MAIN[:start], MAIN[start:end],
                            MAIN[end:], str(root / "main.py"), str(root))


def test_cases_of_a_directory_carry_their_path_and_the_directory_as_project(tmp_path):
    root = shop(tmp_path)
    files, _ = dataset.discover([root])
    located = dataset.locate([root, root / "main.py"])
    assert located["shop/main.py"] == dataset.Location(str((root / "main.py").resolve()), str(root.resolve()))
    assert located[(root / "main.py").as_posix()].project is None  # a file alone: its project is found from it
    cases = dataset.build_cases(files, "line", seed=0, per_file=2, locations=located)
    assert cases and all(Path(case.path).read_text() == case.left + case.middle + case.right for case in cases)
    assert {case.project for case in cases} == {str(root.resolve())}
    assert all(case.path is None for case in dataset.build_cases(files, "line", seed=0))  # text alone: no path


def test_a_case_file_keeps_the_paths_and_reads_cases_written_before_them(tmp_path):
    case = main_case(shop(tmp_path))
    cases = tmp_path / "cases.jsonl"
    dataset.dump_cases([case], cases)
    assert dataset.load_cases(cases) == [case]
    old = {key: value for key, value in case.to_json().items() if key not in ("path", "project")}
    cases.write_text(json.dumps(old) + "\n")
    assert dataset.load_cases(cases)[0].path is None


def test_a_run_with_workspace_context_prompts_with_the_other_file_and_off_without(tiny, tmp_path, monkeypatch):
    """The record says what went into the prompt, and the prompt's ids hold the declaration of the other file, as
    `fimlsp complete --context workspace` writes it; the case's own file (it holds the true middle) is no source."""
    root = shop(tmp_path)
    case = main_case(root)
    prompts = []
    original = TransformersModel.prompt_pass
    monkeypatch.setattr(TransformersModel, "prompt_pass", lambda self, ids, shared=False, deadline=None: (
        prompts.append(list(ids)) or original(self, ids, shared, deadline)))
    records = {}
    for context in ("off", "workspace"):
        settings = runner.RunSettings(max_tokens=4, context=context, attempts=1)
        records[context] = runner.run_case(case, ["constrained"], tiny, settings)[0]
    assert records["off"]["context"] == []
    assert [each["path"] for each in records["workspace"]["context"]] == ["helpers.py"]
    declaration = tiny.encode('def shipping_cost(weight, zone):\n    """Cost in cents, by weight and zone."""')

    def holds(ids):
        return any(ids[start:start + len(declaration)] == declaration for start in range(len(ids)))

    assert not holds(prompts[0]) and holds(prompts[-1])
    assert records["workspace"]["parses"]


def test_a_worker_indexes_a_project_once_for_all_its_cases(tiny, tmp_path, monkeypatch):
    from fimlsp.context.search import SearchIndex

    root = shop(tmp_path)
    builds = []
    original = SearchIndex.build
    monkeypatch.setattr(SearchIndex, "build", lambda self, paths, **kw: (builds.append(1), original(self, paths, **kw)))
    worker = runner._Worker(tiny, runner.RunSettings(max_tokens=2, context="workspace", attempts=1))
    case = main_case(root)
    for _ in range(3):
        worker.run(case, ["unconstrained"])
    assert len(builds) == 1


def test_cli_eval_takes_context_and_refuses_it_for_cases_without_paths(tiny_model_path, tmp_path, capsys):
    root = shop(tmp_path)
    out = tmp_path / "run.jsonl"
    assert main(["eval", str(root), "--cuts", "line", "--model", str(tiny_model_path), "--max-tokens", "2",
                 "--modes", "unconstrained", "--context", "workspace", "--out", str(out), "--no-progress",
                 "--device", "cpu"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["context"] == "workspace"
    by_file = {record["file"]: record for record in lines[1:]}
    assert [each["path"] for each in by_file["shop/main.py"]["context"]][:1] == ["helpers.py"]
    capsys.readouterr()
    cases = tmp_path / "old.jsonl"
    old = {key: value for key, value in main_case(root).to_json().items() if key not in ("path", "project")}
    cases.write_text(json.dumps(old) + "\n")
    assert main(["eval", "--cases", str(cases), "--model", str(tiny_model_path), "--context", "workspace",
                 "--out", str(tmp_path / "other.jsonl")]) == 2
    assert "do not say where their files lie" in capsys.readouterr().err


def test_auto_turns_the_context_off_for_the_shipped_model_s_window_and_on_for_a_large_one():
    """`context: auto` is chosen per model by its window: the shipped model's 512 tokens are the file's own."""
    from fimlsp.context import effective
    from fimlsp.model import load_model

    shipped = load_model(None, "cpu")
    assert shipped.context_window == 512 and effective("auto", shipped.context_window) == "off"
    assert effective("auto", 16384) == "workspace"
