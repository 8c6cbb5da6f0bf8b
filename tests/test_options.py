"""The decoding options are declared once (`fimlsp.decoding.options`): the commands' flags and the server's
settings are made from the declaration, so an option reaches decoding the same way from each."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from fimlsp.commands import complete, eval as evaluate, serve
from fimlsp.decoding import DecodingOptions, options
from fimlsp.evaluation import runner
from fimlsp.server import config

# A valid value, other than every default, for each option the commands offer.
OTHER = {"mode": "checked", "max_tokens": 7, "top_k": 3, "temperature": 0.5, "top_p": 0.9, "timeout": 4.0,
         "seed": 2, "single_line": True, "statement_end": False, "size_budget": 99, "setup_timeout": 3.0,
         "scope": "file", "loop_repeats": 5, "token_healing": False, "attempts": 2, "names": "off",
         "search_budget": 50}


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


def test_every_option_is_a_flag_of_complete_and_reaches_the_options():
    assert set(OTHER) == {each.name for each in options.offered()}
    defaults = options.from_arguments(parsed(complete, ["f.py:1:1"]))
    assert all(getattr(defaults, name) != value for name, value in OTHER.items())
    given = options.from_arguments(parsed(complete, ["f.py:1:1", *flags(OTHER)]))
    assert given == DecodingOptions(**OTHER)


def test_complete_asks_for_what_the_editors_do_and_eval_for_the_papers_setup():
    editors = options.from_arguments(parsed(complete, ["f.py:1:1"]))
    assert (editors.scope, editors.statement_end) == ("block", True)
    # eval's searches count nodes, not seconds: its figures do not move with the machine's load
    assert options.from_arguments(parsed(evaluate, []), evaluate.DECODING) == DecodingOptions(
        search_budget=runner.SEARCH_BUDGET)
    assert runner.RunSettings().decoding_options("constrained").search_budget == runner.SEARCH_BUDGET


def test_eval_and_serve_offer_their_options_from_the_declaration():
    some = {name: OTHER[name] for name in evaluate.DECODING}
    assert options.from_arguments(parsed(evaluate, flags(some)), evaluate.DECODING) == DecodingOptions(**some)
    assert runner.RunSettings(**some).decoding_options("checked") == DecodingOptions(mode="checked", **some)
    served = parsed(serve, flags({"mode": "checked", "max_tokens": 7, "size_budget": 99}))
    assert (served.mode, served.max_tokens, served.size_budget) == ("checked", 7, 99)
    assert parsed(serve, []).max_tokens == config.Settings().max_tokens  # the server's default, not the library's


def test_the_server_settings_that_are_options_take_their_keys_and_choices_from_the_declaration():
    decoding = [each for each in dataclasses.fields(config.Settings) if each.metadata["decoding"]]
    assert {each.name for each in decoding} == {"mode", "scope", "names", "max_tokens", "top_k", "size_budget",
                                                "attempts", "loop_repeats"}
    for each in decoding:
        declared = options.option(each.name).metadata
        assert (each.metadata["key"], each.metadata["choices"]) == (declared["setting"], declared["choices"])
    settings, problems = config.update(config.Settings(), {"topK": 3, "loopRepeats": 0, "scope": "file",
                                                           "names": "loose"})
    assert problems == ["setting 'names' = 'loose' ignored: expected one of off, strict"]
    held = settings.decoding_options(timeout=1.0)
    assert (held.top_k, held.loop_repeats, held.scope, held.names, held.timeout) == (3, 0, "file", "strict", 1.0)
    assert held.max_tokens == config.Settings().max_tokens


@pytest.mark.parametrize("words, message", [
    (["--attempts", "0"], "--attempts: expected an integer from 1 to 10, got '0'"),
    (["--attempts", "1000000"], "--attempts: expected an integer from 1 to 10"),
    (["--loop-repeats", "1"], "--loop-repeats: expected 0 (off) or an integer from 2 to 100"),
    (["--timeout", "inf"], "--timeout: expected a number above 0 and at most 600, got 'inf'"),
    (["--timeout", "nan"], "--timeout: expected a number above 0"),
    (["--timeout", "1e308"], "--timeout: expected a number above 0"),
    (["--top-p", "0"], "--top-p: expected a number above 0 and at most 1"),
    (["--max-tokens", "two"], "--max-tokens: expected an integer from 0 to 4,096, got 'two'"),
])
def test_a_bad_flag_is_one_line_from_the_declarations_bounds(words, message, capsys):
    with pytest.raises(SystemExit) as exited:
        parsed(complete, ["f.py:1:1", *words])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]


def test_every_number_option_has_bounds_and_the_options_check_them():
    for each in options.offered():
        if each.type not in ("bool", "str"):
            assert each.metadata["bounds"] is not None, each.name
    for name, value in [("attempts", 10**6), ("timeout", float("inf")), ("timeout", float("nan")),
                        ("setup_timeout", 1e308), ("top_k", True), ("max_tokens", 2.0), ("loop_repeats", 1)]:
        with pytest.raises(ValueError, match=f"^{name} must be "):
            DecodingOptions(**{name: value})
    assert DecodingOptions(timeout=600, attempts=10, loop_repeats=0).timeout == 600


def test_the_servers_bounds_are_the_declarations_and_its_flags_check_them(capsys):
    bounds = {each.name: each.metadata["bounds"] for each in dataclasses.fields(config.Settings)}
    for name in ("top_k", "size_budget", "attempts", "loop_repeats"):
        assert bounds[name] == options.option(name).metadata["bounds"], name
    assert bounds["max_tokens"] == options.option("max_tokens").metadata["bounds"].narrowed(1)  # 0 is no suggestion
    assert (bounds["time_budget"].most, bounds["alternatives"].most, bounds["attempts"].most) == (60, 10, 10)
    settings, problems = config.update(config.Settings(), {
        "alternatives": 10**6, "attempts": 10**6, "timeBudget": 10**6, "maxTokens": 0, "topK": 5})
    assert settings == config.Settings(top_k=5)
    assert problems == ["setting 'alternatives' = 1000000 ignored: expected an integer from 1 to 10",
                        "setting 'attempts' = 1000000 ignored: expected an integer from 1 to 10",
                        "setting 'timeBudget' = 1000000 ignored: expected a number above 0 and at most 60",
                        "setting 'maxTokens' = 0 ignored: expected an integer from 1 to 4,096"]
    for value in (float("inf"), float("nan"), 1e308, 10**400, -1, 0, True, "2"):
        assert config.update(config.Settings(), {"timeBudget": value})[0].time_budget == 2.0, value
    for words in (["--time-budget", "inf"], ["--max-tokens", "0"]):  # the server's bounds, not the library's
        with pytest.raises(SystemExit):
            parsed(serve, words)
    assert "--max-tokens: expected an integer from 1 to 4,096" in capsys.readouterr().err
    with pytest.raises(ValueError, match="^time_budget must be a number above 0 and at most 60"):
        config.Settings(time_budget=float("inf"))
