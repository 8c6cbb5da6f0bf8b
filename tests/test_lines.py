"""The one line-break rule: `\\n`, `\\r\\n` and `\\r` end lines; form feeds, U+0085 and U+2028 do not."""

from hypothesis import given
from hypothesis import strategies as st

from fimlsp.lines import (
    after_line, first_line, line_end, line_of, line_offsets, line_start, line_starts, line_starts_backwards,
    normalize, split_lines,
)

TEXT = "a\x0cb\r\nc\u2028d\re\x85f\ng"
TEXTS = st.text(alphabet="ab \x0c\r\n\u2028\x85", max_size=40)


def test_only_cpython_line_breaks_end_lines():
    assert split_lines(TEXT) == ["a\x0cb\r\n", "c\u2028d\r", "e\x85f\n", "g"]
    assert line_starts(TEXT) == [0, 5, 9, 13]
    assert [first_line(TEXT, start) for start in line_starts(TEXT)] == ["a\x0cb", "c\u2028d", "e\x85f", "g"]
    assert normalize(TEXT) == "a\x0cb\nc\u2028d\ne\x85f\ng"


@given(TEXTS)
def test_every_view_of_the_lines_agrees(text):
    starts = line_starts(text)
    assert starts == [0, *(len("".join(split_lines(text)[:index + 1])) for index in range(len(starts) - 1))]
    assert list(line_starts_backwards(text)) == starts[::-1]
    assert line_offsets(text, list(range(1, len(starts) + 2))) == [*starts, len(text)]
    for number, start in enumerate(starts, 1):
        assert line_start(text, number) == start
        assert line_of(text, start) == number
        assert first_line(text, start) == text[start:line_end(text, starts, number - 1)]
        assert after_line(text, start) == (starts[number] if number < len(starts) else len(text))
    assert normalize(text).count("\n") == len(starts) - 1


def test_line_of_counts_a_crlf_as_one_break():
    text = "x\r\ny\rz"
    assert [line_of(text, offset) for offset in range(len(text) + 1)] == [1, 1, 1, 2, 2, 3, 3]


def test_line_start_counts_from_an_offset():
    assert line_start("ab\ncd\ref", 2, 3) == 6
    assert line_start("ab\ncd\ref", 5, 3) == 8


@given(TEXTS, st.integers(0, 40), st.lists(st.integers(0, 12), max_size=4))
def test_line_offsets_from_an_offset_agree_with_the_line_starts(text, start, lines):
    """Texts with only `\\n` breaks take a path of their own; both agree with `line_starts` of the rest."""
    start = min(start, len(text))
    lines = sorted(lines)
    starts = [start + offset for offset in line_starts(text[start:])]
    expected = [starts[max(1, line) - 1] if line <= len(starts) else len(text) for line in lines]
    assert line_offsets(text, lines, start) == expected
    assert [line_start(text, line, start) for line in lines] == expected
