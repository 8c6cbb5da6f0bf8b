"""Every setting is declared once (`fimlsp.decoding.options` for the decoding options, `fimlsp.settings` for the
rest): the commands' flags and the server's settings are made from the declaration, so a setting reaches decoding
the same way from each, under one name."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from fimlsp import settings
from fimlsp.commands import complete, eval as evaluate, serve
from fimlsp.decoding import DecodingOptions, options
from fimlsp.evaluation import runner
from fimlsp.server import config


def other_value(name: str):
    """A valid value of the setting `name`, not None, that is not the editors' default."""
    declared = settings.declared(name)
    meta, avoid = declared.metadata, {None, declared.metadata["editors"]}
    if meta["choices"]:
        return next(choice for choice in meta["choices"] if choice not in avoid)
    if declared.type == "bool":
        return not meta["editors"]
    bounds = meta["bounds"]
    if bounds is None:
        return "other"
    middle = (bounds.least + bounds.most) // 2 if bounds.integer else (bounds.least + bounds.most) / 2
    return next(value for value in (bounds.least + 1, middle, bounds.most)
                if value in bounds and value not in avoid and value in meta["editors_bounds"])


def flags(values: dict) -> list[str]:
    """Command-line words that set `values`."""
    words = []
    for name, value in values.items():
        flag = name.replace("_", "-")
        words += [f"--{flag}" if value else f"--no-{flag}"] if isinstance(value, bool) else [f"--{flag}", str(value)]
    return words


def parsed(command, words: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return parser.parse_args(words)


def complete_options(words: list[str]) -> DecodingOptions:
    return complete.decoding_options(settings.given(parsed(complete, ["f.py:1:1", *words]), complete.SETTINGS),
                                     "python")


def test_every_option_is_a_flag_of_complete_and_reaches_the_options():
    other = {each.name: other_value(each.name) for each in options.offered()}
    assert {"max_tokens", "time_budget", "scope", "names"} <= set(other) <= set(complete.SETTINGS)
    defaults = complete_options([])
    assert all(getattr(defaults, name) != value for name, value in other.items())
    assert complete_options(flags(other)) == DecodingOptions(**other)


def test_complete_asks_for_what_the_editors_do_but_with_no_time_budget_and_eval_for_the_papers_setup():
    editors = complete_options([])
    assert editors == config.Settings().decoding_options(time_budget=None, statement_end=True)
    assert (editors.scope, editors.statement_end, editors.names) == ("block", True, "strict")
    # eval's searches count nodes, not seconds: its figures do not move with the machine's load; its prompt holds
    # the file alone (the paper's setup), not other files of the project
    run = settings.decoding_options(settings.given(parsed(evaluate, []), evaluate.SETTINGS))
    assert run == DecodingOptions(search_budget=runner.SEARCH_BUDGET, context="off")
    assert runner.RunSettings().decoding_options("constrained") == run


def test_eval_and_serve_offer_their_settings_from_the_declaration():
    some = {name: other_value(name) for name in runner.DECODING}
    given = settings.given(parsed(evaluate, flags(some)), evaluate.SETTINGS)
    assert settings.decoding_options(given) == DecodingOptions(**some)
    assert runner.RunSettings(**some).decoding_options("checked") == DecodingOptions(mode="checked", **some)
    # serve: a flag for every setting a client may send, its default the server's, its value the Settings field's
    served = {each.name: other_value(each.name) for each in dataclasses.fields(config.Settings)
              if each.metadata["check"] is not settings.model_location and each.type != "str | None"}
    assert set(serve.SETTINGS) == {each.name for each in dataclasses.fields(config.Settings)} | {"log_level"}
    assert settings.given(parsed(serve, []), serve.SETTINGS) == {**dataclasses.asdict(config.Settings()),
                                                                 "log_level": "info"}
    assert settings.given(parsed(serve, flags(served)), served) == served


def test_one_name_per_setting_across_the_commands_the_server_and_the_editors():
    keys = {each.name: each.metadata["key"] for each in dataclasses.fields(config.Settings)}
    for name, key in keys.items():
        words = name.split("_")
        assert key == words[0] + "".join(word.title() for word in words[1:]), name  # maxTokens is --max-tokens
    assert {"time_budget", "model_server", "single_line", "alternatives", "device"} <= set(keys)
    help_of = {command: parsed(command, ["f.py:1:1"] if command is complete else []) for command in
               (complete, serve, evaluate)}
    assert all(not hasattr(args, "timeout") and not hasattr(args, "server") and not hasattr(args, "n")
               for args in help_of.values())
    # single_line has one value set everywhere: the editors' auto, always, never
    assert parsed(complete, ["f.py:1:1"]).single_line == parsed(serve, []).single_line == "auto"
    assert complete_options(["--single-line", "always"]).single_line
    assert not complete_options(["--single-line", "auto"]).single_line  # fimlsp complete asks for a middle


def test_the_server_settings_that_are_options_take_their_keys_and_choices_from_the_declaration():
    decoding = [each for each in dataclasses.fields(config.Settings) if each.metadata["decoding"]]
    assert {each.name for each in decoding} == {each.name for each in options.offered() if each.metadata["setting"]}
    for each in decoding:
        declared = options.option(each.name)
        assert (each.metadata["key"], each.metadata["choices"]) == (declared.metadata["setting"],
                                                                      declared.metadata["choices"])
        assert each.default == declared.metadata["editors"]
    updated, problems = config.update(config.Settings(), {"topK": 3, "loopRepeats": 0, "scope": "file",
                                                          "names": "loose"})
    assert problems == ["setting 'names' = 'loose' ignored: expected one of off, strict, fallback"]
    held = updated.decoding_options(time_budget=1.0)
    assert (held.top_k, held.loop_repeats, held.scope, held.names, held.time_budget) == (3, 0, "file", "strict", 1.0)
    assert held.max_tokens == config.Settings().max_tokens


@pytest.mark.parametrize("words, message", [
    (["--attempts", "0"], "--attempts: expected an integer from 1 to 10, got '0'"),
    (["--attempts", "1000000"], "--attempts: expected an integer from 1 to 10"),
    (["--alternatives", "0"], "--alternatives: expected an integer from 1 to 10, got '0'"),
    (["--loop-repeats", "1"], "--loop-repeats: expected 0 (off) or an integer from 2 to 100"),
    (["--time-budget", "inf"], "--time-budget: expected a number above 0 and at most 600, got 'inf'"),
    (["--time-budget", "nan"], "--time-budget: expected a number above 0"),
    (["--time-budget", "1e308"], "--time-budget: expected a number above 0"),
    (["--top-p", "0"], "--top-p: expected a number above 0 and at most 1"),
    (["--max-tokens", "two"], "--max-tokens: expected an integer from 0 to 4,096, got 'two'"),
    (["--single-line", "yes"], "--single-line: invalid choice: 'yes'"),
])
def test_a_bad_flag_is_one_line_from_the_declarations_bounds(words, message, capsys):
    with pytest.raises(SystemExit) as exited:
        parsed(complete, ["f.py:1:1", *words])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("command", [complete, serve, evaluate])
def test_a_text_the_setting_refuses_is_refused_by_each_command_naming_its_flag(command):
    target = ["f.py:1:1"] if command is complete else []
    with pytest.raises(ValueError, match=r"^--device 'gpu': expected cpu, cuda, cuda:N or mps$"):
        settings.given(parsed(command, [*target, "--device", "gpu"]), command.SETTINGS)
    with pytest.raises(ValueError, match=r"^--model-server 'ftp://x': expected an http:// or https:// URL$"):
        settings.given(parsed(command, [*target, "--model-server", "ftp://x"]), command.SETTINGS)
    # a relative model path is the command line's to read (the setting refuses it: the workspace's files)
    assert settings.given(parsed(command, [*target, "--model", "models/x.gguf"]), command.SETTINGS)["model"]


def test_every_number_option_has_bounds_and_the_options_check_them():
    for each in settings.DECLARED.values():
        if each.type.removesuffix(" | None") in ("int", "float"):
            assert each.metadata["bounds"] is not None, each.name
    for name, value in [("attempts", 10**6), ("time_budget", float("inf")), ("time_budget", float("nan")),
                        ("setup_timeout", 1e308), ("top_k", True), ("max_tokens", 2.0), ("loop_repeats", 1)]:
        with pytest.raises(ValueError, match=f"^{name} must be "):
            DecodingOptions(**{name: value})
    assert DecodingOptions(time_budget=600, attempts=10, loop_repeats=0).time_budget == 600


def test_the_servers_bounds_are_the_declarations_and_its_flags_check_them(capsys):
    bounds = {each.name: each.metadata["bounds"] for each in dataclasses.fields(config.Settings)}
    for name in ("top_k", "size_budget", "attempts", "loop_repeats"):
        assert bounds[name] == options.option(name).metadata["bounds"], name
    assert bounds["max_tokens"] == options.option("max_tokens").metadata["bounds"].narrowed(1)  # 0 is no suggestion
    assert (bounds["time_budget"].most, bounds["alternatives"].most, bounds["attempts"].most) == (60, 10, 10)
    updated, problems = config.update(config.Settings(), {
        "alternatives": 10**6, "attempts": 10**6, "timeBudget": 10**6, "maxTokens": 0, "topK": 5})
    assert updated == config.Settings(top_k=5)
    assert problems == ["setting 'alternatives' = 1000000 ignored: expected an integer from 1 to 10",
                        "setting 'attempts' = 1000000 ignored: expected an integer from 1 to 10",
                        "setting 'timeBudget' = 1000000 ignored: expected a number above 0 and at most 60",
                        "setting 'maxTokens' = 0 ignored: expected an integer from 1 to 4,096"]
    for value in (float("inf"), float("nan"), 1e308, 10**400, -1, 0, True, "2"):
        assert config.update(config.Settings(), {"timeBudget": value})[0].time_budget == 0.6, value
    for words in (["--time-budget", "inf"], ["--max-tokens", "0"], ["--time-budget", "61"]):  # the server's bounds
        with pytest.raises(SystemExit):
            parsed(serve, words)
    err = capsys.readouterr().err
    assert "--max-tokens: expected an integer from 1 to 4,096" in err
    assert "--time-budget: expected a number above 0 and at most 60, got '61'" in err
    with pytest.raises(ValueError, match="^time_budget must be a number above 0 and at most 60"):
        config.Settings(time_budget=float("inf"))


def test_a_search_budget_a_client_sets_counts_the_searches_and_null_gives_the_clock_back():
    """searchBudget: none by default (each search ends after its share of a second), a count of nodes when set."""
    assert config.Settings().search_budget is None and config.Settings().decoding_options().search_budget is None
    counted, problems = config.update(config.Settings(), {"searchBudget": 50})
    assert problems == [] and counted.decoding_options().search_budget == 50
    assert config.update(counted, {"searchBudget": None})[0].search_budget is None
    for value in (0, -1, 2.5, "50", True):
        kept, problems = config.update(counted, {"searchBudget": value})
        assert kept.search_budget == 50 and problems == [
            f"setting 'searchBudget' = {value!r} ignored: expected an integer from 1 to 1,000,000,000"], value


def test_the_commands_values_that_are_not_the_editors_come_from_one_function():
    assert settings.differing_from_editors(settings.given(parsed(complete, ["f.py:1:1"]), complete.SETTINGS)) == {
        "time_budget": {"here": None, "editors": config.Settings().time_budget}}
    header = evaluate.decoding_header(parsed(evaluate, ["--names", "strict"]))
    assert header.startswith("decoding: max_tokens=500, top_k=50, time_budget=None, scope=file, ")
    assert header.endswith("; not the editors' defaults: max_tokens (editors: 128), time_budget (editors: 0.6), "
                           "scope (editors: block), search_budget (editors: None), calls (editors: strict), "
                           "members (editors: strict), context (editors: auto), invented_finish (editors: False)")


def test_a_runs_defaults_are_the_declarations():
    run = runner.RunSettings()
    for name in runner.DECODING:
        expected = {"search_budget": runner.SEARCH_BUDGET, "context": "off"}.get(name, options.option(name).default)
        assert getattr(run, name) == expected, name
    # results files keep the keys they had: a run written before the settings had one name resumes
    assert {"timeout", "server"} <= set(run.header()) and "time_budget" not in run.header()
