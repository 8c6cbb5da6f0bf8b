"""The one line-break rule: `\\n`, `\\r\\n` and `\\r` end lines; form feeds, U+0085 and U+2028 do not."""

from hypothesis import given
from hypothesis import strategies as st

from fimlsp.lines import (
    LINE_BREAK, after_line, first_line, line_break_at, line_end, line_of, line_offsets, line_start, line_starts,
    line_starts_backwards, normalize, split_lines, with_line_breaks_of,
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


def test_a_middle_s_line_breaks_are_the_file_s():
    assert with_line_breaks_of("if x:\n    y\r\n", "a = 1\r\n", "b = 2\r\n") == "if x:\r\n    y\r\n"
    assert with_line_breaks_of("if x:\r\n    y\n", "a = 1\r", "b = 2\r") == "if x:\r    y\r"
    assert with_line_breaks_of("if x:\r\n    y\r", "a = 1\n", "b = 2\n") == "if x:\n    y\n"
    assert with_line_breaks_of("x\ny", "", "") == "x\ny"  # a file of one line: \n
    assert line_break_at("a\r\nb", "c") == "\r\n" and line_break_at("a\rb", "c") == "\r"
    assert line_break_at("a\nb", "c\r\nd\n") == "\r\n"  # the break that ends the cursor's line
    # A \n that completes the \r before the cursor is the file's break there, not one of the middle's.
    assert with_line_breaks_of("\nx\n", "a\r", "b\r") == "x\r"
    assert with_line_breaks_of("\nx\n", "a\r", "b\r\n") == "\nx\r\n"
    assert with_line_breaks_of("x\r", "a\n", "\nb\n") == "x"


BREAKS = st.sampled_from(["\n", "\r\n", "\r"])
LINES = st.text(alphabet="ab \x0c\r\n", max_size=12)


@given(LINES, LINES, LINES)
def test_rewritten_breaks_leave_the_file_as_cpython_reads_it(left, middle, right):
    written = with_line_breaks_of(middle, left, right)
    assert normalize(left + written + right) == normalize(left + middle + right)
    if not left.endswith("\r") and not right.startswith("\n"):  # no break of the file's at the cursor to join
        assert set(LINE_BREAK.findall(written)) <= {line_break_at(left, right)}


@given(LINES, LINES, LINES, BREAKS)
def test_in_a_file_of_one_line_break_the_middle_s_are_the_same(left, middle, right, line_break):
    left, right = (LINE_BREAK.sub(line_break, text) for text in (left, right))
    written = with_line_breaks_of(middle, left, right)
    assert normalize(left + written + right) == normalize(left + middle + right)
    if LINE_BREAK.search(left + right):
        assert set(LINE_BREAK.findall(left + written + right)) == {line_break}, (left, written, right)
