"""Strict names stay strict (issue 49, item 5): where the judged decoding finds no middle that binds its names, the
middle decoded again without the judge is shown under `names="strict"` (the editors') only if it passes the judge's
verdict on the whole middle; `names="fallback"` shows it anyway, and says so."""

from __future__ import annotations

import dataclasses

import pytest

from fimlsp.decoding import DecodingOptions, complete_middle, complete_middles, shown
from fimlsp.decoding.options import option
from fimlsp.language import named
from tests.decoding_fixtures import scripted_text

# Two tokens cannot bind the name the right context loads: no judged middle exists, and the retry's does not bind it.
LEFT, RIGHT = "import os\n", "\nprint(a_long_name_nothing_binds)\n"
OPTIONS = DecodingOptions(max_tokens=2, attempts=1, search_budget=20)


def test_strict_shows_no_middle_that_does_not_bind_its_names(tiny):
    result = complete_middle(tiny, LEFT, RIGHT, dataclasses.replace(OPTIONS, names="strict"))
    assert not named("python").binds_names(LEFT, result.middle, RIGHT)
    assert not result.valid and not shown(result), result
    assert "decoded without the name judge" in result.reason and "no suggestion (names strict)" in result.reason


def test_strict_marks_every_alternative_that_does_not_bind_its_names(tiny):
    results = complete_middles(tiny, LEFT, RIGHT, dataclasses.replace(OPTIONS, names="strict", attempts=3), n=3)
    for result in results:
        assert shown(result) == (result.parses and named("python").binds_names(LEFT, result.middle, RIGHT)), result


def test_fallback_shows_the_middle_decoded_without_the_judge_and_says_it_does_not_bind(tiny):
    result = complete_middle(tiny, LEFT, RIGHT, dataclasses.replace(OPTIONS, names="fallback"))
    assert result.parses and result.valid and shown(result), result
    assert "does not bind them either (names fallback)" in result.reason, result.reason


def test_strict_shows_a_retried_middle_that_binds_its_names(tiny):
    """After `return` the random model writes names nothing binds, so the judged decoding ends empty; the
    middle decoded without the judge is shown under strict where it binds its names, and not where it does not."""
    left = "class Counter:\n    def bump(self, step=1):\n        self.count += step\n        return "
    right = "\n"
    options = DecodingOptions(max_tokens=24, attempts=1, scope="block", search_budget=20)
    plain = complete_middle(tiny, left, right, dataclasses.replace(options, names="off"))
    strict = complete_middle(tiny, left, right, dataclasses.replace(options, names="strict"))
    assert plain.valid and plain.middle and strict.middle == plain.middle, (plain, strict)
    assert "decoded without the name judge" in strict.reason, strict.reason
    assert strict.valid == named("python").binds_names(left, plain.middle, right), strict


def test_the_retry_without_the_name_judge_keeps_the_member_judge(tiny):
    """The retry drops the name judge only: a model set on `os.nopath` writes a member of `os` in it where members
    are strict (the retry used to decode without any judge, and showed `os.nop`)."""
    options = dataclasses.replace(OPTIONS, max_tokens=6, names="fallback")
    model = scripted_text(tiny, "os.nopath = 1\n" * 3)
    unjudged = complete_middle(model, LEFT, RIGHT, options)
    judged = complete_middle(model, LEFT, RIGHT, dataclasses.replace(options, members="strict"))
    for result in (unjudged, judged):
        assert "decoded without the name judge" in result.reason and result.valid, result
    assert unjudged.middle.startswith("os.nop"), unjudged
    assert judged.middle.startswith("os.") and not judged.middle.startswith("os.nop"), judged  # os.nt, in os.py


@pytest.mark.parametrize("value", ["strict", "fallback"])
def test_the_names_option_declares_both_policies_and_the_defaults_differ(value):
    names = option("names")
    assert value in names.metadata["choices"] and value in names.metadata["help"]
    assert names.default == "off" and names.metadata["editors"] == "strict"
