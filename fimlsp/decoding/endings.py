"""Where a middle ends before the model's end of sequence: the rest of the cursor's line written again (`right`),
the end of the first line (`line`, single-line mode) or of the cursor's statement (`statement`), a loop (`loop`),
and, once it has ended, the lines of the right context written again at its end.

A small model falls into loops (`open(path, path, path, …`, `self.config.config.config…`) that only the token
limit would end. With `loop_repeats`, a middle that comes to end in the same chunk of text that many times in a
row stops there (`stop` is `loop`) and is cut back after the first chunk's last word (`open(path`), and the
constrained modes end it as at any early stop (`open(path)`); `Completion.loop_chars` says how much was cut.
"""

from __future__ import annotations

import re

from fimlsp.decoding.judges import CheckedJudge, Judge
from fimlsp.decoding.partial_middle import PartialMiddle
from fimlsp.lines import LINE_BREAK, split_lines
from fimlsp.model import FimModel

# A loop is a chunk of at most this many characters, holding a letter or digit, whose `loop_repeats` copies make at
# least this many characters (at 3 repeats, `path, path, path, ` is one; `0, 0, 0, ` and a `====` rule are not).
LOOP_MAX_CHUNK = 64
LOOP_MIN_CHARS = 12
_ALNUM = re.compile(r"[^\W_]")
_NOT_ALNUM = re.compile(r"[\W_]")


def rest_of_line(right: str, blanks: str) -> str:
    """The rest of the cursor's line after its `blanks`: a middle that goes on to write it again ends before it."""
    line = LINE_BREAK.search(right)
    return right[:line.start() if line else len(right)].lstrip(blanks)


def right_end(judge: Judge, rest: str, prefix: PartialMiddle, following: PartialMiddle) -> PartialMiddle | None:
    """The middle, when the model begins to write `rest`, the rest of the cursor's line, after a valid end
    (`open(path` then `)` before `) as f:`; `len(x) == 0` then `:` before `:`): it ends there, rather than write the
    brackets and colons that follow the cursor twice (the constrained and checked modes; the language's
    `line_closers`).

    A token can close the line's bracket and go on (`):` before `) as f:`): after a valid end, a closing
    bracket or colon that the line begins with is the line's own, whatever the token writes after it. And a
    token can end the middle and begin the line at once (`):` before `:` after `isinstance(x, int`, `")`
    before `) as f:` after `open(path, "rb`): the middle ends inside it, where it is a valid end."""
    if not (judge.constrained or isinstance(judge, CheckedJudge)):  # the model alone is left as it is
        return None
    if prefix.heal or not rest:
        return None
    closers = judge.language.line_closers
    new = following.text[len(prefix.text):]
    written = new.lstrip(judge.language.blanks)
    if written and not written[0].isspace() and (
            rest.startswith(written) or (written[0] in closers and written[0] == rest[0])):
        return prefix if prefix.text.strip() and judge.valid_end(prefix) else None
    if rest[0] not in closers:
        return None
    inside = new.find(rest[0], 1)
    if inside < 1 or not (prefix.text + new[:inside]).strip():
        return None
    accepted, state = judge.extend(prefix, new[:inside])
    if not accepted:
        return None
    candidate = PartialMiddle(prefix.text + new[:inside], b"", state, prefix.tokens + 1, prefix.log_probability)
    return candidate if judge.valid_end(candidate) else None


def statement_end(judge: Judge, column: int, start: PartialMiddle, prefix: PartialMiddle,
                  following: PartialMiddle) -> PartialMiddle | None:
    """The middle up to the end of the statement or block that holds the cursor (at `column`), when `following`'s
    new text begins a statement or a comment line at or below its column after a logical line's end, and the file
    is valid there (a comment there starts the code after the statement, not the statement)."""
    text, blanks = following.text, judge.language.blanks
    line_start = text.rfind("\n") + 1
    line = text[line_start:]
    first = len(line) - len(line.lstrip(blanks))
    if line_start == 0 or first == len(line) or line_start + first < len(prefix.text):
        return None
    if following.state is None or following.state.statement_column() > column:
        return None
    kept = text[:line_start].rstrip(blanks + "\n")
    accepted, state = judge.extend(start, kept)
    if not accepted:
        return None
    candidate = PartialMiddle(kept, b"", state, prefix.tokens, prefix.log_probability)
    accepted, broken = judge.extend(candidate, text[len(kept):line_start])  # the blank end of the middle
    if not accepted or not broken.at_statement_start():
        return None
    return candidate if judge.valid_end(candidate) else None


def line_end(previous: PartialMiddle, text: str, judge: Judge) -> PartialMiddle | None:
    """The middle cut at a newline in the newly accepted `text`, if the file is valid there (single-line mode)."""
    if previous.pending:
        return None
    position = text.find("\n")
    while position != -1:
        accepted, state = judge.extend(previous, text[:position])
        candidate = PartialMiddle(previous.text + text[:position], b"", state, previous.tokens + 1,
                           previous.log_probability)
        if accepted and judge.valid_end(candidate):
            return candidate
        position = text.find("\n", position + 1)
    return None


def before_loop(judge: Judge, model: FimModel, repeats: int, start: PartialMiddle, prefix: PartialMiddle,
                seen: list[PartialMiddle]) -> PartialMiddle | None:
    """The middle cut back to the first chunk of the loop it ends in (`loop_start`), when it ends in one."""
    cut = loop_start(prefix.text, repeats)
    if cut is None:
        return None
    text = prefix.text[:cut]
    found = next((each for each in reversed(seen) if each.text == text and not each.pending), None)
    if found is not None:
        return found
    _accepted, state = judge.extend(start, text)  # a prefix of an accepted middle: accepted too
    tokens = len(model.encode(text)) if text else 0
    return PartialMiddle(text, b"", state, tokens, prefix.log_probability)


def repeated_chunk(text: str, repeats: int) -> str | None:
    """The shortest chunk that `text` ends in `repeats` or more times in a row, and that counts as a loop (see
    `LOOP_MAX_CHUNK`, `LOOP_MIN_CHARS`; a letter or digit in it); None when it ends in none."""
    for length in range(1, min(LOOP_MAX_CHUNK, len(text) // repeats) + 1):
        chunk = text[-length:]
        if length * repeats >= LOOP_MIN_CHARS and _ALNUM.search(chunk) and text.endswith(chunk * repeats):
            return chunk
    return None


def loop_start(text: str, repeats: int) -> int | None:
    """Where `text` should end when it ends in a loop: `repeats` or more equal chunks in a row (`repeated_chunk`),
    cut after the first chunk of the run: after its last letter or digit (`open(path, path, path, ` → `open(path`),
    or at the end of the word it ends inside (`set_event_event_event` → `set_event`). None when it ends in none."""
    chunk = repeated_chunk(text, repeats)
    if chunk is None:
        return None
    length = len(chunk)
    end = len(text) - repeats * length
    while end > 0 and text[end - 1] == text[end - 1 + length]:  # back to where the repetition begins
        end -= 1
    end += length
    if text[end - 1].isalnum() and text[end].isalnum():
        word_end = _NOT_ALNUM.search(text, end)
        return word_end.start() if word_end is not None else end  # a run inside one word: its first chunk
    while not text[end - 1].isalnum():
        end -= 1
    return end


def without_repeated_suffix(prefix: PartialMiddle, seen: list[PartialMiddle], start: PartialMiddle, right: str,
                            judge: Judge, model: FimModel) -> PartialMiddle | None:
    """The middle cut before its last lines where they write again the right context's first lines (surrounding
    whitespace and blank lines aside), if what remains is still a valid end; the longest such repetition. Blank
    lines alone count where the right context begins with a line break: a suggestion that ends in line breaks
    before one would put blank lines into the code below it (`return items` and two empty lines)."""
    lines = split_lines(prefix.text)
    following = [line.strip() for line in LINE_BREAK.split(right) if line.strip()]
    blank_lines_repeat = LINE_BREAK.match(right) is not None
    for first in range(1, len(lines) + 1):
        repeated = [line.strip() for line in lines[first:] if line.strip()]
        if not (repeated or blank_lines_repeat) or repeated != following[:len(repeated)]:
            continue
        with_break = "".join(lines[:first])
        last = lines[first - 1]
        for text in (with_break[:len(with_break) - len(last) + len(last.rstrip("\r\n"))], with_break):
            if text == prefix.text:
                continue
            candidate = next((each for each in seen if each.text == text and not each.pending), None)
            if candidate is None:
                accepted, state = judge.extend(start, text)
                if not accepted:
                    continue
                tokens = len(model.encode(text)) if text else 0
                candidate = PartialMiddle(text, b"", state, tokens, prefix.log_probability)
            if judge.valid_end(candidate):
                return candidate
    return None
