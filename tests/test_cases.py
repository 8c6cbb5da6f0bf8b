"""The random-span FIM case rule of Sec. VII-A: span size, start region, determinism, order independence."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fimlsp.cases import MAX_SPAN_CHARS, boundary_case, random_span_case, random_span_cases


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=1, max_size=3000), seed=st.integers(0, 2**32))
def test_span_respects_the_rule(text, seed):
    left, middle, right = random_span_case(text, random.Random(seed))
    assert left + middle + right == text
    assert len(middle) <= MAX_SPAN_CHARS
    assert len(middle) <= 0.2 * len(text)
    assert len(left) < max(1, int(0.9 * len(text)))
    expected = min(MAX_SPAN_CHARS, int(0.2 * len(text)), len(text) - len(left))
    assert len(middle) == expected


def test_long_file_deletes_exactly_100_characters_unless_the_file_ends():
    text = "x = 1\n" * 2000
    lengths = {len(random_span_case(text, random.Random(seed))[1]) for seed in range(200)}
    assert lengths == {100}


def test_start_point_covers_the_first_90_percent_and_no_more():
    text = "a" * 1000
    starts = [len(random_span_case(text, random.Random(seed))[0]) for seed in range(3000)]
    assert min(starts) < 50
    assert 850 < max(starts) < 900


def test_span_near_the_end_stops_at_the_end_of_the_file():
    text = "b" * 300  # span min(100, 60) = 60 characters, longer than the last 10% of the file
    cases = [random_span_case(text, random.Random(seed)) for seed in range(3000)]
    late = [(left, middle, right) for left, middle, right in cases if len(left) > 300 - 60]
    assert late
    assert all(right == "" and len(middle) == 300 - len(left) for left, middle, right in late)
    assert all(len(middle) == 60 for left, middle, right in cases if len(left) <= 300 - 60)


FILES = [(f"pkg/module_{index}.py", f"def function_{index}(x):\n    return x * {index}\n" * 20) for index in range(40)]


def test_cases_are_deterministic_for_a_seed_and_independent_of_file_order():
    first = list(random_span_cases(FILES, seed=7, count=25))
    again = list(random_span_cases(FILES, seed=7, count=25))
    shuffled = FILES[:]
    random.Random(0).shuffle(shuffled)
    reordered = list(random_span_cases(shuffled, seed=7, count=25))
    assert first == again == reordered
    assert len(first) == 25
    assert len({case.name for case in first}) == 25


def test_another_seed_gives_other_cases():
    first = [(case.name, case.left) for case in random_span_cases(FILES, seed=7, count=25)]
    other = [(case.name, case.left) for case in random_span_cases(FILES, seed=8, count=25)]
    assert first != other


def test_files_too_small_for_a_span_are_skipped():
    files = [("tiny.py", "x"), ("empty.py", ""), ("real.py", "import os\n" * 30)]
    cases = list(random_span_cases(files, seed=1))
    assert [case.name for case in cases] == ["real.py"]
    assert cases[0].left + cases[0].middle + cases[0].right == "import os\n" * 30


def test_boundary_cuts_fall_on_tokens_after_a_form_feed():
    """A form feed does not end a line for CPython: after one, cuts still start inside a token and end at one."""
    text = "alpha = 1  \x0c\nbeta = 2\n\x0cgamma = 3\ndelta = alpha\n"
    tokens = ("alpha", "=", "1", "beta", "2", "gamma", "3", "delta")
    for seed in range(40):
        left, middle, right = boundary_case(text, random.Random(seed))
        assert left + middle + right == text
        assert text[len(left)] not in " \x0c\n"
        assert right.startswith(tokens), (left, middle, right)


# Line and syntax-node cuts ---------------------------------------------------------------------------------------

import textwrap

from fimlsp.cases import MAX_NODE_CHARS, NODE_KINDS, line_case, node_case, node_spans
from fimlsp.lines import split_lines
from fimlsp.syntax_trees import parsed
from harness.corpus import stdlib_text


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab \t\f\n\r#(", max_size=200), seed=st.integers(0, 2**32))
def test_line_cut_is_the_rest_of_a_line_or_whole_lines(text, seed):
    parts = line_case(text, random.Random(seed))
    if parts is None:
        assert all(not line.strip(" \t\f\r\n") for line in split_lines(text))
        return
    left, middle, right = parts
    assert left + middle + right == text and middle.strip()
    assert right == "" or right.startswith(("\n", "\r"))  # it ends where a line ends
    before = left.replace("\r", "\n").rsplit("\n", 1)[-1]
    assert before.strip(" \t\f") or not middle.startswith((" ", "\t", "\f"))  # never inside the indentation
    assert sum(1 for line in split_lines(middle) if line.strip(" \t\f\r\n")) <= 3  # blank lines between count not


def test_line_cuts_of_a_real_file_mix_partial_and_whole_lines():
    text = stdlib_text("textwrap.py")
    cuts = [line_case(text, random.Random(seed)) for seed in range(200)]
    mid_line = [left for left, middle, _right in cuts if left[-1:] not in ("", "\n") and left.rsplit("\n", 1)[-1].strip()]
    assert 80 <= len(mid_line) <= 160  # about MID_LINE_SHARE of the cuts start inside a line's code
    assert sum("\n" in middle for _left, middle, _right in cuts) >= 20


def parses_as_expression(text):
    try:
        parsed(text, mode="eval")
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize("name", ["argparse.py", "json/decoder.py", "email/_header_value_parser.py"])
def test_node_spans_cut_out_exactly_the_nodes_text(name):
    text = stdlib_text(name)
    spans = node_spans(text)
    assert {kind for kind, _share in NODE_KINDS} == set(spans)
    for start, end in spans["expression"]:  # a slice parses in brackets, a starred expression in arguments
        assert any(parses_as_expression(template.format(text[start:end])) for template in ("({}\n)", "x[{}\n]", "f({}\n)"))
    for start, end in spans["arguments"]:
        assert parses_as_expression("f(" + text[start:end] + "\n)")
    for start, end in spans["statement"] + spans["block"]:
        indentation = text[text.rfind("\n", 0, start) + 1:start]
        statement = text[start:end]
        if statement.startswith("elif"):  # an `elif` is an `if` inside the `orelse` of another
            statement = statement[2:]
        if not indentation.strip():  # not a statement after a `;`
            parsed(textwrap.dedent(indentation + statement))


def test_node_offsets_count_characters_not_utf8_bytes():
    text = 'label = "é€𝄞"\nvalue = f(label, size=len("naïve"))\n'
    spans = node_spans(text)
    assert {text[s:e] for s, e in spans["arguments"]} == {'label, size=len("naïve")', '"naïve"'}
    assert 'len("naïve")' in {text[s:e] for s, e in spans["expression"]}


def test_node_cut_keeps_to_the_size_limit_and_reassembles():
    text = stdlib_text("argparse.py")
    for seed in range(100):
        left, middle, right = node_case(text, random.Random(seed))
        assert left + middle + right == text and 0 < len(middle) <= MAX_NODE_CHARS


def test_node_cut_of_text_that_does_not_parse_is_none():
    assert node_case("def broken(:\n    pass\n", random.Random(0)) is None
