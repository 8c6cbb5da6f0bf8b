"""LSP positions <-> string offsets, the documents' incremental sync, and the server's settings."""

from __future__ import annotations

import pytest
from lsprotocol import types

from fimlsp.server import config
from fimlsp.server.documents import Document, Documents
from fimlsp.server.positions import UTF8, UTF16, UTF32, PositionError, apply_change, line_starts, offset_at, position_at

EMOJI = "x = \"\U0001F60B\" + 'é'\ny = 1\n"  # 😋 is two UTF-16 code units, four UTF-8 bytes


def test_line_starts_follow_lsp_line_breaks_only():
    assert line_starts("a\nb\r\nc\rd") == [0, 2, 5, 7]
    assert line_starts("a\x0cb\u2028c\n") == [0, 6]  # a form feed and U+2028 do not end a line
    assert line_starts("") == [0]


@pytest.mark.parametrize(("encoding", "closing_quote"), [(UTF16, 7), (UTF8, 9), (UTF32, 6)])
def test_columns_count_code_units_of_the_encoding(encoding, closing_quote):
    offset = EMOJI.index('" +')
    assert offset_at(EMOJI, 0, closing_quote, encoding) == offset
    assert position_at(EMOJI, offset, encoding) == (0, closing_quote)


def test_round_trip_at_every_character_boundary():
    text = "a😋b\r\n\tcé\rz\x0cw\n"
    for encoding in (UTF8, UTF16, UTF32):
        for offset in range(len(text) + 1):
            if text[offset - 1:offset + 1] == "\r\n":
                continue  # between \r and \n is not a position
            line, character = position_at(text, offset, encoding)
            assert offset_at(text, line, character, encoding) == offset, (encoding, offset)


def test_half_a_surrogate_pair_means_the_start_of_the_character():
    assert offset_at("😋b", 0, 1, UTF16) == 0
    assert offset_at("😋b", 0, 2, UTF16) == 1


def test_a_column_past_the_line_end_means_the_line_end():
    assert offset_at("ab\r\ncd", 0, 99) == 2
    assert offset_at("ab\ncd", 1, 99) == 5


def test_lines_outside_the_document_are_rejected():
    with pytest.raises(PositionError, match="line 3 is outside"):
        offset_at("a\nb\n", 3, 0)
    assert offset_at("a\nb\n", 2, 0) == 4  # the empty line after the last line break
    with pytest.raises(PositionError):
        offset_at("a", -1, 0)


def test_apply_change_replaces_a_range_and_clamps_past_the_end():
    assert apply_change("a😋b\nc", (0, 3), (1, 0), "X", UTF16) == "a😋Xc"
    assert apply_change("ab", (5, 0), (5, 0), "!") == "ab!"


def test_documents_apply_incremental_changes_in_order():
    documents = Documents()
    documents.open("file:///t.py", "x = 1\x0c\ny = 2\n", 1, "python")
    changes = [
        types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=1, character=4), end=types.Position(line=1, character=5)),
            text="3"),
        types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            text="# c\n"),
    ]
    document = documents.change("file:///t.py", 2, changes)
    assert document.text == "# c\nx = 1\x0c\ny = 3\n" and document.version == 2
    whole = [types.TextDocumentContentChangeWholeDocument(text="z = 0\n")]
    assert documents.change("file:///t.py", 3, whole).text == "z = 0\n"
    assert documents.change("file:///other.py", 1, whole) is None


def test_a_documents_language_by_language_id_or_name():
    assert Document("file:///a.txt", "", 1, "Python").language.name == "python"
    assert Document("file:///a.py", "", 1, "markdown").language is None
    assert Document("file:///a.PYI?x=1", "", 1, "").language.name == "python"
    assert Document("file:///a.md", "", 1, "").language is None


def test_settings_accept_a_section_and_report_bad_keys():
    base = config.Settings(model="/models/base")
    settings, problems = config.update(base, {"fimlsp": {"maxTokens": 7, "singleLine": "always", "cache": False}},
                                       base)
    assert (settings.max_tokens, settings.single_line, settings.cache, settings.model) == (7, "always", False,
                                                                                          "/models/base")
    assert problems == []
    settings, problems = config.update(settings, {"maxTokens": 0, "mode": "greedy", "colour": "red", "model": None},
                                       base)
    assert settings.max_tokens == 7 and settings.mode == "constrained" and settings.model == "/models/base"
    assert len(problems) == 3 and all("\n" not in problem for problem in problems)
    assert config.update(settings, None, base) == (settings, [])
    assert config.update(settings, [1], base)[1] == ["settings must be an object, got list"]
