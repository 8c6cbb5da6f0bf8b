"""Decoding end to end: the three modes with the tiny model, and the rules that must hold whatever a model says."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from fimlsp import quotient
from fimlsp.decoding import DecodingOptions, complete_middle, shown
from fimlsp.lines import LINE_BREAK
from fimlsp.model import load_model
from fimlsp.model.formats import FORMATS
from fimlsp.models import default_model_path
from fimlsp.python.syntax import parses

LEFT = "def total(items):\n    result = sum(item.price for item in "
RIGHT = ")\n    return result\n"


@pytest.fixture(scope="module")
def tiny(tiny_model_path):
    return load_model(tiny_model_path, "cpu")


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_modes_run_end_to_end(tiny, mode):
    result = complete_middle(tiny, LEFT, RIGHT, DecodingOptions(mode=mode, max_tokens=24))
    assert result.mode == mode and 0 < result.tokens <= 24
    assert result.parses == parses(LEFT + result.middle + RIGHT)
    if mode != "unconstrained":
        assert result.parses, result  # the tiny model's noise still contains a valid prefix here
    assert result.model_seconds > 0
    assert (result.setup_seconds > 0) == (mode == "constrained")


def test_sampling_is_reproducible_and_constrained(tiny):
    options = DecodingOptions(temperature=0.8, top_p=0.9, seed=3, max_tokens=16)
    first = complete_middle(tiny, LEFT, RIGHT, options)
    again = complete_middle(tiny, LEFT, RIGHT, options)
    assert first.middle == again.middle
    assert first.parses


BROKEN_LEFT = "x = )\n\ndef f(a):\n    return a + "
BROKEN_RIGHT = "\n\ny = (\n"


def test_a_file_broken_elsewhere_is_checked_in_the_statements_around_the_cursor(tiny):
    result = complete_middle(tiny, BROKEN_LEFT, BROKEN_RIGHT, DecodingOptions(max_tokens=16))
    assert result.valid and result.guarantee == "region" and result.region == (3, 5), result
    assert result.parses is False and not result.unchecked and "does not parse" in result.reason
    assert parses("def f(a):\n    return a + " + result.middle + "\n\n")


def test_unchecked_when_not_even_the_statement_at_the_cursor_admits_a_middle(tiny):
    result = complete_middle(tiny, "def f():\n    return (", "\n        1,,\n    )\n", DecodingOptions(max_tokens=5))
    assert result.unchecked and result.guarantee == "none" and not result.valid and result.region is None
    assert result.tokens == 5 and result.mode == "constrained" and "around the cursor" in result.reason
    assert not shown(result)


GREET_LEFT = 'def greet(name, greeting="hello"):\n    message = '
GREET_RIGHT = 'f"{greeting}, {name}"\n    return message\n'


def test_a_middle_decoded_past_the_setup_deadline_is_shown_only_if_the_file_parses_with_it(tiny):
    """The setup always runs past a deadline of a nanosecond: the middle is decoded without a constraint, judged
    by the parser on the whole file, and shown exactly when the file compiles with it."""
    outcomes = set()
    for left, right in [(GREET_LEFT, GREET_RIGHT), (LEFT, RIGHT), (BROKEN_LEFT, BROKEN_RIGHT)]:
        result = complete_middle(tiny, left, right, DecodingOptions(max_tokens=8, setup_timeout=1e-9))
        assert "could not be built within its time budget" in result.reason
        assert result.parses == parses(left + result.middle + right)
        assert shown(result) == result.parses == result.valid == (result.guarantee == "file") == (not result.unchecked)
        outcomes.add(shown(result))
    assert outcomes == {True, False}, "the tiny model's unconstrained middles: one parses here, one does not"


def test_cli_says_what_was_checked(tiny_model_path, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN_LEFT + BROKEN_RIGHT)
    region = run_cli("complete", f"{broken}:4:16", "--model", str(tiny_model_path), "--max-tokens", "16")
    assert region.returncode == 0 and "checked lines 3-5 only" in region.stderr, region.stderr
    assert parses("def f(a):\n    return a + " + region.stdout + "\n\n")
    hopeless = tmp_path / "hopeless.py"
    hopeless.write_text("def f():\n    return (\n        1,,\n    )\n")
    unchecked = run_cli("complete", f"{hopeless}:2:13", "--model", str(tiny_model_path), "--max-tokens", "4")
    assert unchecked.returncode == 1 and not unchecked.stdout  # a middle that no check passed is not printed
    assert unchecked.stderr == ("fimlsp complete: no valid middle: no middle can make the statements around the "
                                "cursor parse (without a middle, CPython refuses line 3, column 11: invalid syntax); "
                                "the middle generated unconstrained does not compile (try --mode unconstrained)\n")


def test_cli_prints_no_middle_decoded_past_the_setup_deadline_that_breaks_the_file(tiny_model_path, tmp_path):
    source = tmp_path / "greet.py"
    source.write_text(GREET_LEFT + GREET_RIGHT)
    late = run_cli("complete", f"{source}:2:15", "--model", str(tiny_model_path), "--max-tokens", "8",
                   "--setup-timeout", "1e-9", "--json")
    record = json.loads(late.stdout)
    assert not parses(GREET_LEFT + record["middle"] + GREET_RIGHT)
    assert late.returncode == 1 and record["shown"] is False  # the record says the middle is not for a user
    late = run_cli("complete", f"{source}:2:15", "--model", str(tiny_model_path), "--max-tokens", "8",
                   "--setup-timeout", "1e-9")
    assert late.returncode == 1 and not late.stdout
    assert late.stderr == ("fimlsp complete: no valid middle: the constraint could not be built within its time "
                           "budget; the middle generated unconstrained does not compile (try --mode unconstrained)\n")


# `x = 1|def g():`: every middle that makes the file valid holds a line break.
NEEDS_A_LINE_BREAK = ["import os", "x = 1def g():", "    return x", ""]


@pytest.mark.parametrize("line_break", ["\r\n", "\r"])
def test_cli_writes_the_middle_s_line_breaks_as_the_file_s(tiny_model_path, tmp_path, line_break):
    source = tmp_path / "breaks.py"
    text = line_break.join(NEEDS_A_LINE_BREAK)
    source.write_bytes(text.encode())
    result = subprocess.run([sys.executable, "-m", "fimlsp", "complete", f"{source}:2:6", "--model",
                             str(tiny_model_path), "--max-tokens", "16"], capture_output=True)  # bytes: breaks as written
    middle = result.stdout.decode()
    assert result.returncode == 0 and middle, result.stderr
    left, right = text.split("def g()", 1)
    assert parses(left + middle + "def g()" + right)
    assert LINE_BREAK.findall(middle) and set(LINE_BREAK.findall(middle)) == {line_break}, repr(middle)


def test_cancellation_and_time_budget(tiny):
    calls = []  # one poll a step of each attempt: one attempt here
    result = complete_middle(
        tiny, LEFT, RIGHT, DecodingOptions(max_tokens=200, attempts=1),
        should_stop=lambda: calls.append(1) or len(calls) > 3
    )
    assert result.stop == "cancelled" and result.tokens <= 3 and result.candidates_tried >= 3
    timed = complete_middle(tiny, LEFT, RIGHT, DecodingOptions(max_tokens=4_096, timeout=0.3, loop_repeats=0))
    assert timed.stop in ("timeout", "context_full") and timed.parses


class ScriptedModel(torch.nn.Module):
    """Proposes a fixed token sequence, then end of sequence, always ranking end of sequence second. Each middle
    decoded gets the script from its start: the step is kept in the key-value cache, as a real model's position
    is, so middles that go on from one prompt's cache each start at its first step."""

    def __init__(self, script: list[int], eos: int, vocabulary: int):
        super().__init__()
        self.script, self.eos, self.vocabulary = script, eos, vocabulary

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        step = 0 if past_key_values is None else past_key_values["step"]
        logits = torch.zeros(self.vocabulary)
        wanted = self.script[step] if step < len(self.script) else self.eos
        logits[self.eos] = 5.0
        logits[wanted] = 10.0
        return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values={"step": step + 1})


def scripted(tiny, tokens: list[int]):
    return dataclasses.replace(tiny, model=ScriptedModel(tokens, min(tiny.stop_ids), len(tiny.token_bytes)))


def byte_token(tiny, value: int) -> int:
    return tiny.token_bytes.index(bytes([value]))


def test_end_of_sequence_is_refused_until_the_file_is_complete(tiny):
    """The script ends at `x = (` + `1`: the EOS offered at every step is refused until `)` closes the call."""
    script = [byte_token(tiny, ord("1")), byte_token(tiny, ord(")"))]
    left, right = "x = f(", "\n"
    result = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=10))
    assert result.stop == "eos" and result.middle == "1)" and result.parses
    # Checked mode refuses the early EOS too; unconstrained stops at once.
    checked = complete_middle(scripted(tiny, script), left, right, DecodingOptions(mode="checked", max_tokens=10))
    assert checked.middle == "1)" and checked.parses
    eager = complete_middle(scripted(tiny, []), left, right, DecodingOptions(mode="unconstrained", max_tokens=10))
    assert eager.stop == "eos" and eager.middle == "" and not eager.parses


@pytest.mark.parametrize("left, right", [("café_nam", " = 1\n"), ("s = 'caf", "'\n"), ("é = 'x", "'\n")])
def test_tokens_that_split_a_utf8_character(tiny, left, right):
    """`é` arrives as two byte tokens; the parser sees it only once both bytes are there."""
    first, second = "é".encode()
    script = [byte_token(tiny, first), byte_token(tiny, second)]
    result = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=5))
    assert result.middle == "é" and result.parses and result.stop == "eos"


def test_prompt_truncation_keeps_the_text_next_to_the_cursor(tiny):
    left = "x = 1\n" * 400
    right = "y = 2\n" * 400
    ids = tiny.prompt(left, right, reserve=100)
    assert len(ids) <= tiny.context_window - 100
    text = tiny.tokenizer.decode(ids)
    assert text.startswith("<fim_prefix>") and text.endswith("<fim_middle>")
    kept_left = text[len("<fim_prefix>"): text.index("<fim_suffix>")]
    assert left.endswith(kept_left) and len(kept_left) > 100


def test_every_format_has_psm_and_its_controls():
    for fmt in FORMATS.values():
        assert "psm" in fmt.orders
        for pieces in fmt.templates.values():
            assert all(control in pieces for control in fmt.controls)


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "fimlsp", *args], capture_output=True, text=True, input=stdin)


def test_cli_json_and_errors(tiny_model_path, tmp_path):
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    return x + \n")
    result = run_cli("complete", f"{source}:2:16", "--model", str(tiny_model_path), "--max-tokens", "8", "--json")
    data = json.loads(result.stdout)
    for key in ("middle", "parses", "mode", "tokens", "candidates_tried", "model_seconds", "setup_seconds",
                "constraint_ms_per_token"):
        assert key in data
    assert result.returncode == (0 if data["parses"] else 1)
    piped = run_cli("complete", "-:1:5", "--model", str(tiny_model_path), "--max-tokens", "4", stdin="x = \n")
    assert piped.returncode in (0, 1) and "Traceback" not in piped.stderr
    for args, message in [
        ((f"{tmp_path}/missing.py:1:1",), "no such file"),
        ((f"{source}:7:1",), "line 7 is outside the file"),
        ((f"{source}:1:40",), "column 40 is outside line 1"),
        ((f"{source}:1:1", "--model", str(tmp_path / "nowhere")), "does not exist"),
        ((f"{source}:1:1", "--model", str(tmp_path)), "not a model folder"),
    ]:
        failed = run_cli("complete", *args)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr
        assert failed.stdout == ""


def test_shipped_model_completes_the_readme_fixture_offline():
    """The README's first command: the default model, no network, a constrained middle that parses."""
    from fimlsp.models import default_model_path

    if not (default_model_path() / "model.safetensors").is_file():
        pytest.fail("the shipped model is missing from fimlsp/models/default")
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "example.py"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "fimlsp", "complete", f"{fixture}:10:12", "--json", "--max-tokens", "120"],
        capture_output=True, text=True, env=environment,
    )
    data = json.loads(result.stdout)
    assert result.returncode == 0 and data["parses"], (data, result.stderr)
    text = fixture.read_text()
    offset = sum(len(line) for line in text.splitlines(keepends=True)[:9]) + 11
    assert parses(text[:offset] + data["middle"] + text[offset:])


class FixedRankingModel(torch.nn.Module):
    """Ranks the same tokens first at every step, in the given order; the rest of the vocabulary after them."""

    def __init__(self, ranked: list[int], vocabulary: int):
        super().__init__()
        self.logits = torch.zeros(vocabulary)
        for rank, token in enumerate(ranked):
            self.logits[token] = 10.0 - rank

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        return SimpleNamespace(logits=self.logits.view(1, 1, -1), past_key_values=None)


def fixed_ranking(tiny, ranked: list[int]):
    return dataclasses.replace(tiny, model=FixedRankingModel(ranked, len(tiny.token_bytes)))


@pytest.mark.parametrize("max_tokens", [6, 10, 17])
def test_a_model_that_never_stops_is_steered_to_a_valid_end_within_the_limit(tiny, max_tokens):
    """The model always wants another `[`: the budget steers it to close them in time."""
    model = fixed_ranking(tiny, [byte_token(tiny, ord("[")), byte_token(tiny, ord("]"))])
    result = complete_middle(model, "x = ", "\n", DecodingOptions(max_tokens=max_tokens))
    assert result.parses and result.ending == "finish" and result.tokens <= max_tokens, result
    assert result.middle.startswith("[") and result.finish_chars > 0
    # the searches that steered it are part of the constraint's time, reported apart from its cost per token
    assert result.finish_searches > 0 and 0 < result.search_seconds <= result.constraint_seconds
    per_token = 1e3 * (result.constraint_seconds - result.search_seconds) / result.generated_tokens
    assert result.constraint_ms_per_token == pytest.approx(per_token)


@pytest.mark.parametrize("style", [", ", ","])
def test_a_comma_of_the_code_is_followed_as_the_file_follows_its_commas(tiny, style):
    """The model ranks `,` then `b` (no space) first: in a file that writes `, ` the middle takes the token ` b`
    instead; in one that writes `,` it keeps `b`. The comma inside the string is left as it is."""
    import re

    assert tiny.tokens_of(b" b")
    model = fixed_ranking(tiny, [byte_token(tiny, ord(",")), byte_token(tiny, ord("b"))])
    left = f"import os{style}sys\ns = 'x,y'\nt = (a"
    result = complete_middle(model, left, ")\n", DecodingOptions(max_tokens=40, attempts=1))
    assert result.parses and result.middle.startswith(",") and "b" in result.middle, result
    if style == ", ":
        assert re.search(r",[^ ]", result.middle) is None, result.middle
    else:
        assert result.middle.startswith(",b"), result.middle


def test_tied_candidates_go_to_the_lower_ids_on_every_cpu():
    """The top `top_k` among tied scores are the lowest ids, as the ranking promises: `np.argpartition` alone kept
    other tied ids on a CPU with AVX-512 (numpy's x86-simd-sort) than on others, and the never-stopping model above
    lost its end of sequence (id 0) from its candidates there."""
    import numpy as np

    from fimlsp.decoding.loop import _ranking

    scores = np.zeros(8192, dtype=np.float32)
    scores[63], scores[65] = 10.0, 9.0
    ranked = _ranking(scores, DecodingOptions(top_k=50), np.random.default_rng(0), whole_vocabulary=False)
    assert list(ranked) == [63, 65, *range(48)]


def test_searches_bounded_by_nodes_find_the_same_middles_on_a_busy_machine(tiny, monkeypatch):
    """With a search budget the finish searches count nodes, not seconds: a machine so busy that a second passes
    between two looks at the clock gives the middle an idle one gives (an eval's figures do not move with load).
    Bounded by the clock, the same searches find nothing there."""
    import time

    model = fixed_ranking(tiny, [byte_token(tiny, ord("[")), byte_token(tiny, ord("]"))])
    left, right = "x = ", "\n"
    guarantee = quotient_guarantee(left, right)
    counted = DecodingOptions(max_tokens=10, search_budget=20)
    idle = complete_middle(model, left, right, counted, guarantee=guarantee)
    assert idle.parses and idle.ending == "finish", idle
    real = time.perf_counter
    ticks = iter(range(10**9))
    monkeypatch.setattr(time, "perf_counter", lambda: real() + next(ticks))  # a second more at every look
    busy = complete_middle(model, left, right, counted, guarantee=guarantee)
    timed_busy = complete_middle(model, left, right, DecodingOptions(max_tokens=10), guarantee=guarantee)
    assert busy.middle == idle.middle and busy.finish_searches == idle.finish_searches, (busy, idle)
    assert timed_busy.middle != idle.middle, timed_busy


def quotient_guarantee(left: str, right: str):
    """The constrained mode's promise for `left` and `right`, built before a test changes the clock."""
    from fimlsp.language import named

    return named(DecodingOptions().language).constrain(left, right)


def test_an_early_end_of_sequence_starts_a_finish_written_by_the_model(tiny):
    """End of sequence is ranked first while `f(1, [2` is open: the finish takes the model's most probable tokens
    that bring the end closer (`]` before `)`), never the ones that do not (`(`)."""
    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("(")), byte_token(tiny, ord("]")),
                                 byte_token(tiny, ord(")"))])
    result = complete_middle(model, "y = f(1, [2", "\n", DecodingOptions(max_tokens=20))
    assert result.middle == "])" and result.ending == "finish" and result.finish_chars == 2, result
    assert result.stop == "eos" and result.parses


def test_past_the_top_candidates_the_finish_is_followed(tiny):
    """None of the top 3 candidates can ever be valid in `"..."` nor ends it: the finish's first character is
    found down the whole vocabulary."""
    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("\n")), byte_token(tiny, 0)])
    result = complete_middle(model, 's = "abc', "\n", DecodingOptions(max_tokens=8, top_k=3))
    assert result.middle == '"' and result.parses and result.ending == "finish", result


def test_alternatives_are_distinct_valid_and_ranked(tiny):
    from fimlsp.decoding import complete_middles, preference

    results = complete_middles(tiny, LEFT, RIGHT, DecodingOptions(max_tokens=12), n=3)
    assert 1 <= len(results) <= 3
    assert len({result.middle for result in results}) == len(results)
    assert all(result.parses for result in results)
    assert [preference(r) for r in results] == sorted((preference(r) for r in results), reverse=True)


class BranchingModel(torch.nn.Module):
    """At the cursor, ranks the first tokens of `branches` in their order; after one of them, proposes the rest of
    its branch, then end of sequence, always ranking end of sequence second (as `ScriptedModel`, the branch and
    its step kept in the key-value cache)."""

    def __init__(self, branches: list[list[int]], eos: int, vocabulary: int):
        super().__init__()
        self.branches, self.eos, self.vocabulary = branches, eos, vocabulary

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        logits = torch.zeros(self.vocabulary)
        if past_key_values is None:  # the prompt: a middle begins after it
            for rank, branch in enumerate(self.branches):
                logits[branch[0]] = 10.0 - rank
            return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values={"script": None, "step": 1})
        script = past_key_values["script"] or next(
            branch for branch in self.branches if branch[0] == int(input_ids[0, -1]))
        step = past_key_values["step"]
        wanted = script[step] if step < len(script) else self.eos
        logits[self.eos], logits[wanted] = 5.0, 10.0
        return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values={"script": script, "step": step + 1})


def branching(tiny, *branches: str):
    tokens = [[byte_token(tiny, byte) for byte in branch.encode()] for branch in branches]
    return dataclasses.replace(tiny, model=BranchingModel(tokens, min(tiny.stop_ids), len(tiny.token_bytes)))


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_attempts_return_the_middle_that_ended_not_the_greedy_one_that_looped(tiny, mode):
    """The first token of a loop is ranked a hair above the first of a statement the model ends: plain greedy
    decoding follows the loop; with two attempts the middle that ended by the model's end of sequence is first."""
    from fimlsp.decoding import complete_middles

    left, right = "def mean(values):\n    total = sum(values)\n    ", "\n"
    loop, ended = "if total and " + "total and " * 8, "return total / len(values)"
    options = DecodingOptions(mode=mode, max_tokens=60, token_healing=False, attempts=1)
    greedy = complete_middle(branching(tiny, loop, ended), left, right, options)
    assert greedy.stop == "loop" and greedy.ending in ("fallback", "none"), greedy
    results = complete_middles(branching(tiny, loop, ended), left, right, dataclasses.replace(options, attempts=2), 2)
    best = results[0]
    assert best.middle == ended and best.ending == "eos" and best.parses, best
    assert best.end_log_probability is not None and best.end_log_probability > -1  # its end of sequence, ranked first
    assert [result.middle for result in results[1:]] == [greedy.middle]


def test_no_attempt_starts_once_the_time_budget_is_spent(tiny, monkeypatch):
    """The first middle ends after the deadline (its last step began before it): a second attempt would only time
    out and spend its fallback's moment past the budget, so none starts."""
    import time as clock

    from fimlsp.decoding import loop

    class SlowScriptedModel(ScriptedModel):
        def forward(self, *args, **kwargs):
            clock.sleep(0.4)
            return super().forward(*args, **kwargs)

    complete_middle(tiny, "x = ", "\n", DecodingOptions(max_tokens=1, attempts=1))  # the grammar's tables, built
    calls = []
    steps = loop.Decoder.steps
    monkeypatch.setattr(loop.Decoder, "steps", lambda self, *args: calls.append(1) or steps(self, *args))
    model = dataclasses.replace(tiny, model=SlowScriptedModel([byte_token(tiny, ord("1"))], min(tiny.stop_ids),
                                                              len(tiny.token_bytes)))
    result = complete_middle(model, "x = ", "\n", DecodingOptions(max_tokens=4, timeout=0.7, token_healing=False))
    assert result.middle == "1" and result.stop == "eos" and len(calls) == 1, (result, calls)


def test_an_alternative_passes_over_the_end_of_sequence_too(tiny):
    """At a cursor where the model ranks its end of sequence first, the empty middle is the first attempt and the
    second writes the model's next choice; the empty middle, much more probable, stays first."""
    from fimlsp.decoding import complete_middles

    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("x")), byte_token(tiny, ord("\n"))])
    results = complete_middles(model, "a = 1\n", "", DecodingOptions(max_tokens=4, token_healing=False), n=2)
    assert [result.middle for result in results][:1] == [""] and len(results) == 2, results
    assert results[1].middle.startswith("x") and results[1].parses


def test_an_alternative_starts_only_from_the_models_top_tokens(tiny):
    """Past the top `top_k`, a first token is the model's noise (`ρ;` before `return`): an alternative that finds
    no other valid first token among the top ones is not decoded, and fewer middles come back."""
    from fimlsp.decoding import complete_middles

    eos = min(tiny.stop_ids)
    model = fixed_ranking(tiny, [eos, byte_token(tiny, ord("x")), byte_token(tiny, ord("y"))])
    options = DecodingOptions(max_tokens=4, token_healing=False, top_k=2)
    results = complete_middles(model, "a = 1\n", "", options, n=3)
    assert [result.middle[:1] for result in results] == ["", "x"], results
    wider = complete_middles(model, "a = 1\n", "", dataclasses.replace(options, top_k=3), n=3)
    assert [result.middle[:1] for result in wider] == ["", "x", "y"], wider


def test_attempts_share_the_prompts_forward_pass(tiny, monkeypatch):
    """Every attempt goes on from one forward pass over the prompt, each from its own copy of the key-value cache:
    the same middles and log-probabilities as when each attempt runs the pass again."""
    from fimlsp import decoding

    prompts = []
    forward = type(tiny).forward
    monkeypatch.setattr(type(tiny), "forward",
                        lambda self, ids, cache: prompts.append(cache is None) or forward(self, ids, cache))
    left, right = "def area(width, height):\n    return ", "\n"
    options = DecodingOptions(max_tokens=6, attempts=3)
    shared = decoding.complete_middles(tiny, left, right, options, n=3)
    assert sum(prompts) == 1 and len(shared) == 3, (prompts, shared)

    from fimlsp.model import loading

    session = loading._TransformersPromptPass.session
    monkeypatch.setattr(loading._TransformersPromptPass, "session",
                        lambda self, rows=1: (setattr(self, "_output", None), session(self, rows))[1])
    again = decoding.complete_middles(tiny, left, right, options, n=3)
    assert [(r.middle, round(r.log_probability, 4)) for r in shared] == [
        (r.middle, round(r.log_probability, 4)) for r in again]


def test_preference_ranks_valid_then_ended_then_mean_log_probability():
    from fimlsp.decoding import Completion, preference

    def completion(middle, log_probability, tokens, ending="eos", end=-0.5, guarantee="file"):
        return Completion(middle, guarantee == "file", "constrained", "eos", ending, tokens=tokens,
                          log_probability=log_probability, guarantee=guarantee, end_log_probability=end)

    long = completion("return total / len(values)", -8.0, 8)  # mean with its end: -0.94
    short = completion("pass", -2.5, 1, end=-4.0)  # a bigger sum, a worse mean: -3.25
    fallback = completion("if x", -0.5, 2, ending="fallback", end=None)
    invalid = completion("x", -0.1, 1, guarantee="none")
    empty = completion("", 0.0, 0, end=-0.7)  # worth its end's probability
    ranked = sorted([short, invalid, fallback, long, empty], key=preference, reverse=True)
    assert ranked == [empty, long, short, fallback, invalid]


def test_cli_gives_a_list_of_alternatives(tiny_model_path, tmp_path):
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    return x + \n")
    result = run_cli("complete", f"{source}:2:16", "--model", str(tiny_model_path), "--max-tokens", "8", "--json",
                     "--n", "2")
    data = json.loads(result.stdout)
    assert 1 <= len(data["completions"]) <= 2 and all("ending" in each for each in data["completions"])
    bad = run_cli("complete", f"{source}:2:16", "--model", str(tiny_model_path), "--n", "0")
    assert bad.returncode == 2 and "--n must be at least 1" in bad.stderr


@pytest.mark.parametrize("kind", ["randspan", "boundary"])
def test_a_random_model_always_ends_valid_on_standard_library_cuts(tiny, kind):
    """The tiny model is randomly initialised and never chooses to stop: every constrained middle is still
    valid, within the token limit (a CI sample; `fimlsp eval --model` with such a model runs hundreds)."""
    from tests.test_python_quotient import _stdlib_sample

    options = DecodingOptions(max_tokens=24)
    for case in _stdlib_sample(kind, 10):
        result = complete_middle(tiny, case.left, case.right, options)
        assert result.parses and result.tokens <= options.max_tokens, (case.name, result)
        assert result.ending in ("eos", "finish", "fallback"), (case.name, result)


def test_block_scope_keeps_the_middle_in_the_block_and_falls_back_to_the_file_when_it_must(tiny):
    left = "class Queue:\n    def put(self):\n        self._sem.acquire()\n        "
    right = "self._sem.release()\n        return 1\n"
    result = complete_middle(tiny, left, right, DecodingOptions(max_tokens=16, scope="block"))
    assert result.parses and result.scope == "block", result
    state = quotient(left, right).in_block().feed(result.middle)
    assert state is not None and state.complete
    cornered = complete_middle(tiny, "if a:\n    if b:\n        x = 1\n        ", "else:\n    y = 2\n",
                               DecodingOptions(max_tokens=16, scope="block"))
    assert cornered.parses and cornered.scope == "file" and "block" in cornered.reason, cornered


def test_cli_scope_option(tiny_model_path, tmp_path):
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    y = x\n\n\ndef g():\n    pass\n")
    result = run_cli("complete", f"{source}:2:10", "--model", str(tiny_model_path), "--max-tokens", "8", "--json",
                     "--scope", "block")
    data = json.loads(result.stdout)
    assert result.returncode == 0 and data["scope"] == "block" and data["parses"], data
    bad = run_cli("complete", f"{source}:2:10", "--scope", "function")
    assert bad.returncode == 2 and "scope" in bad.stderr


def scripted_text(tiny, script: str):
    return scripted(tiny, [byte_token(tiny, byte) for byte in script.encode()])


@pytest.mark.parametrize("mode", ["constrained", "checked"])
def test_a_middle_that_writes_the_right_context_again_is_cut_before_it(tiny, mode):
    left, right = "def f(x):\n    y = ", "\n    return y\n"
    result = complete_middle(scripted_text(tiny, "x + 1\n    return y"), left, right,
                             DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == "x + 1" and result.repeated_chars == len("\n    return y") and result.parses, result
    kept = complete_middle(scripted_text(tiny, "x + 1\n    return x"), left, right,
                           DecodingOptions(max_tokens=30, mode=mode))
    assert kept.middle == "x + 1\n    return x" and kept.repeated_chars == 0, kept


@pytest.mark.parametrize("mode", ["constrained", "checked"])
def test_blank_lines_that_end_a_middle_before_a_line_break_are_cut(tiny, mode):
    options = DecodingOptions(max_tokens=30, mode=mode)
    before_a_line_break = complete_middle(scripted_text(tiny, "items\n\n"), "def f(items):\n    return ",
                                          "\n\n\ndef g():\n    pass\n", options)
    assert before_a_line_break.middle == "items" and before_a_line_break.repeated_chars == 2, before_a_line_break
    assert before_a_line_break.parses
    inside_brackets = complete_middle(scripted_text(tiny, "items\n\n"), "def f(items):\n    return (", ")\n",
                                      options)
    assert inside_brackets.middle == "items\n\n" and inside_brackets.repeated_chars == 0, inside_brackets


@pytest.mark.parametrize("left, right, script, middle", [
    # a statement: it ends where the next one at its column begins
    ("def f(x):\n    y = ", "\n", "x + 1\n    return y\n", "x + 1"),
    # a block's header: the block ends where a statement at the header's column begins
    ("def f(x):", "\n\nx = 1\n", "\n    y = x\n    return y\n\ndef g():\n    pass\n", "\n    y = x\n    return y"),
    # a comment line at or below the statement's column starts what comes after it
    ("class A:\n    def f(self):\n        self.", "\n", "pop()\n\n    # The type of the type\n    x = 1\n", "pop()"),
    ("def f(x):\n    y = ", "\n", "x + 1\n    # then\n    return y\n", "x + 1"),
])
def test_a_multi_line_suggestion_ends_with_the_statement_or_block_at_the_cursor(tiny, left, right, script, middle):
    options = DecodingOptions(max_tokens=60, statement_end=True)
    result = complete_middle(scripted_text(tiny, script), left, right, options)
    assert result.middle == middle and result.ending == "statement" and result.parses, result
    whole = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60))
    assert whole.middle.startswith(middle) and len(whole.middle) > len(middle), whole


def test_a_middle_refused_everywhere_says_where_and_what_was_expected(tiny):
    """Thirty open brackets cannot be closed in three tokens: the result names the place and the expected tokens."""
    result = complete_middle(tiny, "x = " + "(" * 30, "\n", DecodingOptions(max_tokens=3))
    assert not result.valid and result.stop == "no_candidate"
    assert "at the cursor, after '((((" in result.refusal and "within the token limit" in result.refusal
    assert "expected one of: " in result.refusal and ")" in result.refusal.split("expected one of: ")[1].split(", ")


def test_the_cli_error_for_no_valid_middle_carries_the_refusal(tiny_model_path, tmp_path):
    source = tmp_path / "deep.py"
    source.write_text("x = " + "(" * 30 + "\n")
    result = run_cli("complete", f"{source}:1:35", "--model", str(tiny_model_path), "--max-tokens", "3")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "no valid middle found (no_candidate after" in result.stderr and "expected one of:" in result.stderr


def test_a_cancelled_completion_runs_no_fallback_search(tiny):
    """A superseded request's middle is not wanted: it ends at once, without searching finishes for it."""
    calls = iter(range(10**6))
    result = complete_middle(tiny, "x = f(1, [2", "\n", DecodingOptions(max_tokens=40),
                             should_stop=lambda: next(calls) >= 3)
    assert result.stop == "cancelled" and result.ending == "none" and not result.valid, result


@pytest.mark.parametrize("text, kept", [
    ("open(path, path, path, ", "open(path"),
    ("open(path, path, path, path", "open(path"),  # the run starts where the repetition does, not at a chunk edge
    ("x = self.config.config.config.", "x = self.config"),
    ("def f(\n        self,\n        self,\n        self,", "def f(\n        self"),
    ("self.set_event_event_event_ev", "self.set_event"),  # a run inside a word ends with the word's first part
    ("x = aaaaaaaaaaaaaaaa", "x = aaaa"),  # one word all through: its first chunk
    ("x = [0, 0, 0", None),  # too short to be a loop
    ('line = "===================="', None),  # no word character: a rule, not a loop
    ("a.b.c.d.e.f.g", None),
])
def test_loop_start_cuts_after_the_first_chunk_of_a_repetition(text, kept):
    from fimlsp.decoding import loop_start

    cut = loop_start(text, 3)
    assert (text[:cut] if cut is not None else None) == kept


def test_loop_start_needs_as_many_repeats_as_asked():
    from fimlsp.decoding import loop_start

    assert loop_start("open(path, path, path, ", 4) is None
    assert loop_start("open(path, path, path, path, ", 4) == len("open(path")


def test_a_fallback_that_would_invent_code_ends_at_the_last_valid_line_instead(tiny):
    """The loop is cut inside an `if` header: its finish would write a condition's end and a body (`:x`), code
    the model never wrote; the line before it is a valid end as it is, and is the middle."""
    left, right = "def f(items):\n    ", "\n    return total\n"
    script = "total = len(items)\n    if total and " + "total and " * 8
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=60, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle == "total = len(items)" and result.finish_chars == 0 and result.parses


def test_a_constrained_fallback_keeps_what_the_model_wrote_rather_than_nothing(tiny, monkeypatch):
    """When no late prefix can be finished in the tokens left (as when a real model's multi-character tokens ran
    into a string at the token limit), a valid prefix the model wrote is the suggestion, not the empty middle that the
    file is also valid with (after `open(`: `path`, not nothing)."""
    from fimlsp.decoding import fallback

    finish = fallback._fitting_finish
    monkeypatch.setattr(fallback, "_fitting_finish",
                        lambda steering, prefix: finish(steering, prefix) if not prefix.text else None)
    left, right = "with open(", ") as handle:\n    pass\n"
    script = 'path, "' + "spam " * 12  # a loop, cut inside the string
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=80, attempts=1))
    assert result.stop == "loop" and result.ending == "fallback", result
    assert result.middle and script.startswith(result.middle) and result.finish_chars == 0 and result.parses, result


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_a_model_caught_in_a_loop_is_stopped_and_its_middle_ended(tiny, mode):
    left, right = "with open(", ") as handle:\n    pass\n"
    script = "path, " * 12
    options = DecodingOptions(max_tokens=60, mode=mode, attempts=1)  # one greedy middle: the loop's own
    result = complete_middle(scripted_text(tiny, script), left, right, options)
    assert result.stop == "loop" and result.middle == "path", result
    assert result.loop_chars == len("path, path, path, ") - len("path") and result.parses
    assert result.generated_tokens == len("path, path, path, ")  # one byte token a character
    endless = complete_middle(scripted_text(tiny, script), left, right,
                              dataclasses.replace(options, loop_repeats=0))
    assert endless.stop != "loop" and endless.loop_chars == 0 and endless.middle.startswith("path, path, path, path")


def test_the_middle_shown_is_judged_on_the_whole_file(tiny, monkeypatch):
    """Decoding's checks are the recognizer's (the windows around the cursor, then the whole text); the middle it
    returns is judged on the whole file by the language once more, so a recognizer that is wrong could cost a
    suggestion but never show an invalid one."""
    from fimlsp.python.quotient import RightContext

    monkeypatch.setattr(RightContext, "valid_in_windows", lambda self, *window: True)  # a window that is wrong
    monkeypatch.setattr(RightContext, "valid", lambda self, text: True)  # and a confirmation that is wrong
    left, right = "def f():\n    a = 1\n", "    b = 2\nc = 3\n"  # `x` is in the quotient (indentation aside)
    result = complete_middle(scripted(tiny, [byte_token(tiny, ord("x"))]), left, right,
                             DecodingOptions(max_tokens=4, attempts=1))
    assert result.middle == "x" and result.stop == "eos"
    assert result.parses is False and not result.valid


def text_token(tiny, data: bytes) -> int:
    return tiny.token_bytes.index(data)


def test_token_healing_takes_back_the_tokens_the_cursor_cuts_into(tiny):
    """In SPM order the middle goes on from the left context: its last token is taken back (a lone space after
    `return`), and the one before too while both could start one token (` p`, `ri` before ` print`). So is a
    line's indentation with its line break where nothing follows on the line (the tokenizer gives its last space to
    the word after it). At a line's start, inside an indentation that the line goes on with, and in PSM order,
    where the middle does not follow the left, the prompt stays as it is."""
    spm = dataclasses.replace(tiny, order="spm")
    for left, taken, count in [("def f(x):\n    return ", b" ", 1), ("def f(x):\n    pri", b" pri", 2),
                               ("def f(x):\n    ", b"\n    ", 1)]:
        prompt = spm.prompt(left, "\n", 16)
        assert spm.healed_prompt(left, "\n", 16, blanks=" \t\f") == (prompt[:-count], taken)
        assert b"".join(spm.token_bytes[token] for token in prompt[-count:]) == taken
    for model, left, right in [(spm, "def f(x):\n", "\n"), (spm, "def f(x):\n    ", "return x\n"),
                               (tiny, "def f(x):\n    return ", "\n"), (tiny, "def f(x):\n    ", "\n")]:
        assert model.healed_prompt(left, right, 16, blanks=" \t\f") == (model.prompt(left, right, 16), b"")


@pytest.mark.parametrize("data", [b" ", b" pri", b"(", "é".encode()[:1], b"\n    "])
def test_the_tokens_agreeing_with_taken_back_bytes_write_them_again_or_begin_to(tiny, data):
    agreeing = set(tiny.tokens_agreeing(data))
    for token, spelled in enumerate(tiny.token_bytes):
        writes_again = spelled is not None and (spelled.startswith(data) or data.startswith(spelled))
        assert (token in agreeing) == (writes_again and token not in tiny.stop_ids), (token, spelled)


def test_at_a_fresh_indented_line_the_middle_writes_code_not_more_whitespace(tiny):
    """The cursor after Enter and the editor's indentation: the model ranks a deeper indentation first, then
    spaces, which would move the user's line or write a run of blanks; healed, the indentation is written again as
    the tokenizer splits it before code (the line break and three spaces, then ` return`), and then code. Once
    code is written, whitespace may follow."""
    blanks = [text_token(tiny, b"\n        "), text_token(tiny, b"  ")]
    ranked = [*blanks, text_token(tiny, b"\n   "), text_token(tiny, b" return")]
    model = dataclasses.replace(fixed_ranking(tiny, ranked), order="spm")
    result = complete_middle(model, "def f(x):\n    ", "\n", DecodingOptions(max_tokens=3, mode="unconstrained"))
    assert result.middle == "return\n        " and result.tokens == 3, result
    exact = dataclasses.replace(fixed_ranking(tiny, [*blanks, text_token(tiny, b"\n    "), text_token(tiny, b"x")]),
                                order="spm")
    result = complete_middle(exact, "def f(x):\n    ", "\n", DecodingOptions(max_tokens=2, mode="unconstrained"))
    assert result.middle == "x" and result.tokens == 2, result


@pytest.mark.parametrize("mode", ["constrained", "checked", "unconstrained"])
def test_a_healed_middle_is_what_the_model_writes_after_the_bytes_taken_back(tiny, mode):
    """After `return ` the model writes ` x`: healed, the space it writes again is the user's and the middle is
    `x`; with the prompt as it is, the middle is ` x`."""
    left, right = "def f(x):\n    return ", "\n"
    model = dataclasses.replace(scripted(tiny, [text_token(tiny, b" x")]), order="spm")
    healed = complete_middle(model, left, right, DecodingOptions(max_tokens=8, mode=mode))
    assert healed.middle == "x" and healed.parses and healed.stop == "eos", healed
    model = dataclasses.replace(scripted(tiny, [text_token(tiny, b" x")]), order="spm")
    as_it_is = complete_middle(model, left, right, DecodingOptions(max_tokens=8, mode=mode, token_healing=False))
    assert as_it_is.middle == " x" and as_it_is.parses, as_it_is


def test_a_token_that_does_not_write_the_bytes_taken_back_again_is_never_taken_first(tiny):
    """The model ranks `#` first and ` x` second at every step: `#` would drop the space the user typed, so the
    first token is ` x`; after it, `#` may follow."""
    ranked = [text_token(tiny, b"#"), text_token(tiny, b" x"), min(tiny.stop_ids)]
    model = dataclasses.replace(fixed_ranking(tiny, ranked), order="spm")
    result = complete_middle(model, "def f(x):\n    return ", "\n", DecodingOptions(max_tokens=4, mode="unconstrained"))
    assert result.middle == "x###" and result.tokens == 4, result


@pytest.mark.parametrize("mode", ["constrained", "checked"])
@pytest.mark.parametrize("left, right, script, middle", [
    ("def f(path):\n    with open(", ") as f:\n        return f.read()\n", "path) as f:\n", "path"),
    ("def f(x):\n    if ", ":\n        return x\n", "len(x) == 0:\n", "len(x) == 0"),
    # a `)` that closes the middle's own bracket is not the line's: the middle is no valid end before it
    ("x = f(", ")\n", "a(b))\n", "a(b)"),
])
def test_a_middle_ends_where_the_model_writes_the_rest_of_the_line_again(tiny, mode, left, right, script, middle):
    result = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == middle and result.ending == "right" and result.parses, result
    alone = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=30,
                                                                                        mode="unconstrained"))
    assert alone.middle.startswith(middle + script[len(middle)]), alone


@pytest.mark.parametrize("mode", ["constrained", "checked"])
@pytest.mark.parametrize("left, right, middle, token", [
    ("def f(path):\n    with open(", ") as f:\n        return f.read()\n", "path", b"):"),
    ("x = a[", "]\n", "0", b"],"),
])
def test_a_token_that_closes_the_lines_bracket_and_goes_on_ends_the_middle(tiny, mode, left, right, middle, token):
    """`):` is one token: after `open(path` it closes the call and writes a colon where the line has `) as f:`."""
    script = [*(byte_token(tiny, ord(character)) for character in middle), text_token(tiny, token),
              byte_token(tiny, ord("\n"))]
    result = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == middle and result.ending == "right" and result.parses, result


@pytest.mark.parametrize("mode", ["constrained", "checked"])
@pytest.mark.parametrize("left, right, written, token, middle", [
    ("def f(x):\n    if ", ":\n        return x\n", "isinstance(x, int", b"):", "isinstance(x, int)"),
    ("def f(path):\n    with open(", ") as f:\n        return f.read()\n", 'path, "rb', b'")', 'path, "rb"'),
])
def test_a_token_that_ends_the_middle_and_begins_the_line_ends_the_middle_inside_it(
        tiny, mode, left, right, written, token, middle):
    """`):` after `isinstance(x, int` closes the middle's own call and writes the colon the line has: the middle
    ends between the two, where it is a valid end."""
    script = [*(byte_token(tiny, ord(character)) for character in written), text_token(tiny, token),
              byte_token(tiny, ord("\n"))]
    result = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=30, mode=mode))
    assert result.middle == middle and result.ending == "right" and result.parses, result


@pytest.fixture
def python_with(request):
    """Python registered again under another name with other text facts (`Language.blanks`, `closers`,
    `line_closers`): decoding must take them from the language it decodes for, not from a list of its own."""
    from fimlsp import language
    from fimlsp.python.language import Python

    facts = type("PythonWithOtherFacts", (Python,), {"name": "python-other-facts", **request.param})
    yield language.register(facts()).name
    language.unregister(facts.name)


@pytest.mark.parametrize("python_with", [{"line_closers": ""}], indirect=True)
def test_the_line_closers_are_the_languages(tiny, python_with):
    """Without `)` among the language's line closers, `):` after `isinstance(x, int` is not the line's colon
    written again: the middle does not end inside it, as it does in Python."""
    left, right = "def f(x):\n    if ", ":\n        return x\n"
    script = [*(byte_token(tiny, ord(character)) for character in "isinstance(x, int"), text_token(tiny, b"):"),
              byte_token(tiny, ord("\n"))]
    python = complete_middle(scripted(tiny, script), left, right, DecodingOptions(max_tokens=30, attempts=1))
    other = complete_middle(scripted(tiny, script), left, right,
                            DecodingOptions(max_tokens=30, attempts=1, language=python_with))
    assert python.ending == "right" and python.middle == "isinstance(x, int)", python
    assert other.ending != "right" and other.parses, other


@pytest.mark.parametrize("python_with", [{"closers": frozenset(map(chr, range(128)))}], indirect=True)
def test_what_a_fallbacks_finish_may_write_is_the_languages(tiny, python_with, monkeypatch):
    """Where every character counts as closing, the finish that writes an `if` header's end and a body is taken
    as closing what the middle opened, and ends the middle, instead of the valid line before it. (The finish
    searches get all the time they need: one cut by its clock on a busy machine changes the middle.)"""
    from fimlsp.decoding import attempts, fallback, steering

    for module, name in ((steering, "SEARCH_SECONDS"), (attempts, "START_SEARCH_SECONDS"),
                         (fallback, "FALLBACK_SEARCH_SECONDS")):
        monkeypatch.setattr(module, name, 600.0)
    left, right = "def f(items):\n    ", "\n    return total\n"
    script = "total = len(items)\n    if total and " + "total and " * 8
    options = DecodingOptions(max_tokens=60, attempts=1)
    python = complete_middle(scripted_text(tiny, script), left, right, options)
    other = complete_middle(scripted_text(tiny, script), left, right, dataclasses.replace(options, language=python_with))
    assert python.middle == "total = len(items)" and python.finish_chars == 0, python
    assert other.ending == "fallback" and other.finish_chars > 0 and other.parses, other
    assert other.middle.startswith("total = len(items)\n    if total and"), other


@pytest.mark.parametrize("python_with", [{"blanks": ""}], indirect=True)
def test_the_blanks_before_the_rest_of_the_line_are_the_languages(tiny, python_with):
    """With no blanks, the space before `) as f:` is part of the rest of the line: the model's `)` no longer
    begins it, and the middle goes on past it instead of ending there."""
    left, right = "def f(path):\n    with open(", " ) as f:\n        return f.read()\n"
    script = "path) as f:\n"
    python = complete_middle(scripted_text(tiny, script), left, right, DecodingOptions(max_tokens=30, attempts=1))
    other = complete_middle(scripted_text(tiny, script), left, right,
                            DecodingOptions(max_tokens=30, attempts=1, language=python_with))
    assert python.ending == "right" and python.middle == "path", python
    assert other.ending != "right", other


def test_the_fresh_line_benchmark_takes_a_line_out_and_puts_the_cursor_after_its_indentation():
    from harness.corpus import fresh_lines

    files = [Path(os.__file__).parent / name for name in ("textwrap.py", "argparse.py")]
    texts = {path.read_text(encoding="utf-8") for path in files}
    cuts = list(fresh_lines(files, 30, seed=1))
    assert len(cuts) == 30
    for left, right, code in cuts:
        indentation = left[left.rfind("\n") + 1:]
        assert indentation and not indentation.strip() and right.startswith("\n") and code == code.strip()
        assert any(text.startswith(left + code) and text.endswith(right) for text in texts)


@pytest.mark.parametrize("which", ["tiny", "shipped"])
def test_attempts_decoded_as_one_batch_give_the_middles_decoded_one_after_another(tiny, which, monkeypatch):
    """The attempts go through the model side by side, one forward pass of a batch of sequences a step, and give
    the same greedy middles, in the same order, as attempts decoded one at a time, on standard-library cuts. (The
    finish searches get all the time they need: a search cut by its clock on a busy machine changes a middle.)"""
    from fimlsp.decoding import attempts, complete_middles, fallback, steering
    from fimlsp.model.loading import TransformersModel
    from tests.test_python_quotient import _stdlib_sample

    model = tiny if which == "tiny" else load_model(default_model_path(), "cpu")
    for module, name in ((steering, "SEARCH_SECONDS"), (attempts, "START_SEARCH_SECONDS"),
                         (fallback, "FALLBACK_SEARCH_SECONDS")):
        monkeypatch.setattr(module, name, 600.0)
    rows = []
    forward = TransformersModel.forward
    monkeypatch.setattr(TransformersModel, "forward",
                        lambda self, ids, cache: rows.append(len(ids)) or forward(self, ids, cache))
    options = DecodingOptions(max_tokens=12, attempts=3, statement_end=True)
    cases = _stdlib_sample("randspan", 5) + _stdlib_sample("boundary", 5)
    batched = [complete_middles(model, case.left, case.right, options, n=3) for case in cases]
    together, rows[:] = list(rows), []
    monkeypatch.setattr(TransformersModel, "batches", property(lambda self: False))
    alone = [complete_middles(model, case.left, case.right, options, n=3) for case in cases]
    for case, side_by_side, one_by_one in zip(cases, batched, alone):
        assert [result.middle for result in side_by_side] == [result.middle for result in one_by_one], case.name
        assert [result.log_probability for result in side_by_side] == pytest.approx(
            [result.log_probability for result in one_by_one], abs=1e-4), case.name
    assert max(together) == 3 and max(rows) == 1  # three sequences a pass, or one
    assert len(together) < len(rows), (len(together), len(rows))  # fewer passes than one a token each


def test_within_a_time_budget_the_prompt_is_cut_to_what_the_model_reads_in_its_share(tmp_path):
    """The speed is forced (a measured 25 ms a prompt token), not measured on a busy machine: a 5 s budget lets the
    prompt's pass take 0.4 of it, so the model reads at most 80 tokens of a prompt that would fill its context (the
    budget is long enough that the constraint's setup leaves the prompt's pass its turn on a loaded machine)."""
    from fimlsp.decoding.attempts import PROMPT_SHARE
    from fimlsp.model.backend import MIN_PROMPT_TOKENS
    from fimlsp.training.tiny import build_tiny_model

    model = load_model(build_tiny_model(tmp_path / "long-model", n_positions=4096), "cpu")
    left, right = "def f(x):\n    return x\n\n\n" * 400 + "y = ", "\n"
    passes = []
    forward = model.forward
    model.forward = lambda ids, past: passes.append(ids.shape[1]) or forward(ids, past)
    complete_middle(model, left, right, DecodingOptions(max_tokens=2, attempts=1))
    unbudgeted = passes[0]
    rate, budget = 0.025, 5.0
    model.prompt_seconds_per_token = rate
    passes.clear()
    complete_middle(model, left, right, DecodingOptions(max_tokens=2, attempts=1, timeout=budget))
    assert unbudgeted > 1000
    assert MIN_PROMPT_TOKENS <= passes[0] <= PROMPT_SHARE * budget / rate


@pytest.mark.parametrize("names, shown_", [("off", True), ("strict", False)])
def test_with_the_name_judge_an_unchecked_middle_that_loads_an_unbound_name_is_not_valid(tiny, names, shown_):
    """The setup runs out of time, so the middle is decoded unconstrained and judged on the whole file afterwards:
    `zz` compiles after `x = `, and with the name judge on it is still refused, as it loads a name nothing binds."""
    script = [byte_token(tiny, ord("z"))] * 2
    options = DecodingOptions(max_tokens=2, setup_timeout=1e-9, names=names, attempts=1)
    result = complete_middle(scripted(tiny, script), "x = ", "\n", options)
    assert result.middle == "zz" and result.parses and result.unchecked == (not shown_)
    assert shown(result) == shown_


def test_python_binds_names_is_the_name_judges_verdict_on_a_whole_middle():
    from fimlsp.language import named

    python = named("python")
    assert python.binds_names("import os\nx = ", "os.sep", "\n")
    assert not python.binds_names("x = ", "undefined_thing", "\n")
    assert not python.binds_names("def f(", "a", "):\n    return b\n")  # the body needs `b` bound by the header
    assert python.binds_names("from m import *\nx = ", "anything", "\n")  # a star import: names not judged


def test_strict_names_says_when_no_middle_within_the_limit_binds_what_the_right_context_needs(tiny):
    """Two tokens cannot bind `a_long_name_nothing_binds`: no judged middle exists, the middle is decoded again
    without the judge, and the reason says that this middle does not bind the name either."""
    right = "\nprint(a_long_name_nothing_binds)\n"
    result = complete_middle(tiny, "import os\n", right, DecodingOptions(max_tokens=2, attempts=1, names="strict",
                                                                      search_budget=20))
    assert result.parses and "decoded without the name judge" in result.reason, result
    assert "does not bind them either" in result.reason, result.reason


def test_strict_names_offers_a_middle_where_the_judge_leaves_only_the_empty_one(tiny):
    """At a statement start the random model writes names nothing binds, so the judged decoding ends empty, which
    an editor shows as no suggestion at all: the middle decoded without the judge is offered, as it would be with
    names off, and its reason says so."""
    left = "class Counter:\n    def bump(self, step=1):\n        self.count += step\n        "
    right = "return self.count\n"
    options = DecodingOptions(max_tokens=24, attempts=1, scope="block", search_budget=20)
    plain = complete_middle(tiny, left, right, dataclasses.replace(options, names="off"))
    strict = complete_middle(tiny, left, right, dataclasses.replace(options, names="strict"))
    assert plain.valid and plain.middle, plain
    assert strict.valid and strict.middle == plain.middle, strict
    assert "decoded without the name judge" in strict.reason, strict.reason
