"""Python's lexemes as one deterministic automaton: the single definition of Python's lexical rules here.

CPython's tokenizer is greedy: it extends the current token while the next character can extend it, and fails if
the token then is not complete (`0or` is an error because `0o` commits to an octal literal; `1else` because `1e`
commits to an exponent). A deterministic automaton with that rule reproduces it exactly, so the incremental lexer
never needs lookahead branches: a token in progress is one automaton state, and the right context's boundary
analysis runs the same automaton. Two quirks are beyond a deterministic automaton: CPython backs up one character
after `..` or `1e` (`BACK_UP` says how, for every lexer), and a number directly followed by a letter is an error
unless a keyword from `KEYWORDS_AFTER_NUMBER` follows (CPython's `verify_end_of_number`, in `fimlsp.python.lexer`).

States are small ints. `step(state, char)` returns the next state or `DEAD`; `KIND[state]` says what token the
state completes (`None` if it completes none); `TERMINALS_FROM[state]` the terminals it can still become.
"""

from __future__ import annotations

import re
from functools import lru_cache

KEYWORDS = frozenset(
    "False None True and as assert async await break class continue def del elif else except finally for from "
    "global if import in is lambda nonlocal not or pass raise return try while with yield".split()
)
SOFT_KEYWORDS = frozenset({"match", "case"})
KEYWORDS_AFTER_NUMBER = frozenset({"and", "else", "for", "if", "in", "is", "not", "or"})
OPERATORS = frozenset(
    "( ) [ ] { } : , ; . + - * / // % ** @ | & ^ ~ << >> < > <= >= == != = += -= *= /= //= %= **= @= |= &= ^= "
    "<<= >>= -> ... :=".split()
)
OPENING_BRACKETS = frozenset("([{")
CLOSING_BRACKETS = frozenset(")]}")
NAME, NUMBER, STRING, NEWLINE, INDENT, DEDENT = "NAME", "NUMBER", "STRING", "NEWLINE", "INDENT", "DEDENT"
TERMINALS = frozenset({NAME, NUMBER, STRING, NEWLINE, INDENT, DEDENT}) | KEYWORDS | SOFT_KEYWORDS | OPERATORS
WORD_TERMINALS = KEYWORDS | SOFT_KEYWORDS | {NAME}

WHITESPACE = " \t\f"
STRING_PREFIXES = frozenset({"r", "u", "b", "f", "br", "rb", "fr", "rf"})
DEAD = -1
START = 0

# Token kinds a state completes.
KIND_NAME, KIND_NUMBER, KIND_STRING, KIND_OPERATOR, KIND_COMMENT, KIND_CONTINUATION = range(6)


class _Builder:
    def __init__(self):
        self.kinds: list[int | None] = []
        self.names: list[str] = []
        self.operator_text: list[str | None] = []

    def state(self, name: str, kind: int | None = None, operator: str | None = None) -> int:
        self.names.append(name)
        self.kinds.append(kind)
        self.operator_text.append(operator)
        return len(self.names) - 1


_b = _Builder()
_b.state("start")
S_NAME = _b.state("name", KIND_NAME)
S_PREFIX = {prefix: _b.state(f"name/{prefix}", KIND_NAME) for prefix in sorted(STRING_PREFIXES)}
# Numbers, after CPython's tok_get: `_` must be followed by a digit, leading zeros only before . e j.
S_ZERO = _b.state("0", KIND_NUMBER)
# Zeros after the first: a radix letter is a prefix only right after the first 0 (`00or 1` is `00 or 1`).
S_ZEROS = _b.state("0 0s", KIND_NUMBER)
S_ZERO_US = _b.state("0_")
S_LEADING_ZEROS = _b.state("0 digits")
S_LEADING_ZEROS_US = _b.state("0 digits _")
S_DECIMAL = _b.state("decimal", KIND_NUMBER)
S_DECIMAL_US = _b.state("decimal _")
S_POINT = _b.state("decimal .", KIND_NUMBER)
S_FRACTION = _b.state("fraction", KIND_NUMBER)
S_FRACTION_US = _b.state("fraction _")
S_EXPONENT = _b.state("e")
S_EXPONENT_SIGN = _b.state("e sign")
S_EXPONENT_DIGITS = _b.state("exponent", KIND_NUMBER)
S_EXPONENT_US = _b.state("exponent _")
S_IMAGINARY = _b.state("imaginary", KIND_NUMBER)
_RADIX_DIGITS = {"x": "0123456789abcdefABCDEF", "o": "01234567", "b": "01"}
S_RADIX_PREFIX = {radix: _b.state(f"0{radix}") for radix in _RADIX_DIGITS}
S_RADIX = {radix: _b.state(f"0{radix} digits", KIND_NUMBER) for radix in _RADIX_DIGITS}
S_RADIX_US = {radix: _b.state(f"0{radix} digits _") for radix in _RADIX_DIGITS}
# Strings: one set of states per quote character; prefixes do not change where a string ends.
S_STRING = {}
for _quote in "'\"":
    S_STRING[_quote] = {
        part: _b.state(f"string {_quote} {part}", KIND_STRING if part in ("empty", "end") else None)
        for part in ("open", "body", "escape", "empty", "long", "long escape", "long 1", "long 2", "end")
    }
S_COMMENT = _b.state("comment", KIND_COMMENT)
S_BACKSLASH = _b.state("backslash")
S_CONTINUATION = _b.state("backslash newline", KIND_CONTINUATION)
S_DOT_DOT = _b.state("..")
S_OPERATOR: dict[str, int] = {}
for _operator in sorted(OPERATORS | {"!"}, key=len):
    S_OPERATOR[_operator] = _b.state(f"op {_operator}", KIND_OPERATOR if _operator in OPERATORS else None,
                                     _operator if _operator in OPERATORS else None)

KIND: tuple[int | None, ...] = tuple(_b.kinds)
STATE_NAMES: tuple[str, ...] = tuple(_b.names)
OPERATOR_TEXT: tuple[str | None, ...] = tuple(_b.operator_text)
N_STATES = len(KIND)
S_DOT = S_OPERATOR["."]
# Where CPython's tokenizer backs up one character when the next one cannot extend the token: `..` not followed
# by `.` is a `.` and then a token from the second `.`; `1e` with no exponent is a number and then a name from the
# `e`. State -> (the terminal of all but the last character, the state of the token the last character starts).
BACK_UP: dict[int, tuple[str, int]] = {S_DOT_DOT: (".", S_DOT), S_EXPONENT: (NUMBER, S_NAME)}

_DIGITS = "0123456789"


@lru_cache(maxsize=4096)
def is_identifier_start(char: str) -> bool:
    return char.isidentifier()


@lru_cache(maxsize=4096)
def is_identifier_char(char: str) -> bool:
    return ("a" + char).isidentifier()


def _step_number(state: int, char: str) -> int:
    if state in (S_ZERO, S_ZEROS):
        if char == "0":
            return S_ZEROS
        if char == "_":
            return S_ZERO_US
        if char in _DIGITS:
            return S_LEADING_ZEROS
        lower = char.lower()
        if lower in _RADIX_DIGITS and state == S_ZERO:
            return S_RADIX_PREFIX[lower]
        return _after_integer(char)
    if state == S_ZERO_US:
        return S_ZEROS if char == "0" else S_LEADING_ZEROS if char in _DIGITS else DEAD
    if state == S_LEADING_ZEROS:
        if char in _DIGITS:
            return S_LEADING_ZEROS
        if char == "_":
            return S_LEADING_ZEROS_US
        return _after_integer(char)
    if state == S_LEADING_ZEROS_US:
        return S_LEADING_ZEROS if char in _DIGITS else DEAD
    if state == S_DECIMAL:
        if char in _DIGITS:
            return S_DECIMAL
        if char == "_":
            return S_DECIMAL_US
        return _after_integer(char)
    if state == S_DECIMAL_US:
        return S_DECIMAL if char in _DIGITS else DEAD
    if state in (S_POINT, S_FRACTION):
        if char in _DIGITS:
            return S_FRACTION
        if char == "_" and state == S_FRACTION:
            return S_FRACTION_US
        return _after_fraction(char)
    if state == S_FRACTION_US:
        return S_FRACTION if char in _DIGITS else DEAD
    if state == S_EXPONENT:
        return S_EXPONENT_SIGN if char in "+-" else S_EXPONENT_DIGITS if char in _DIGITS else DEAD
    if state == S_EXPONENT_SIGN:
        return S_EXPONENT_DIGITS if char in _DIGITS else DEAD
    if state == S_EXPONENT_DIGITS:
        if char in _DIGITS:
            return S_EXPONENT_DIGITS
        if char == "_":
            return S_EXPONENT_US
        return S_IMAGINARY if char in "jJ" else DEAD
    if state == S_EXPONENT_US:
        return S_EXPONENT_DIGITS if char in _DIGITS else DEAD
    if state == S_IMAGINARY:
        return DEAD
    for radix, digits in _RADIX_DIGITS.items():
        if state == S_RADIX_PREFIX[radix]:
            return S_RADIX[radix] if char in digits else S_RADIX_US[radix] if char == "_" else DEAD
        if state == S_RADIX[radix]:
            return S_RADIX[radix] if char in digits else S_RADIX_US[radix] if char == "_" else DEAD
        if state == S_RADIX_US[radix]:
            return S_RADIX[radix] if char in digits else DEAD
    raise AssertionError(f"not a number state: {STATE_NAMES[state]}")


def _after_integer(char: str) -> int:
    if char == ".":
        return S_POINT
    return _after_fraction(char)


def _after_fraction(char: str) -> int:
    if char in "eE":
        return S_EXPONENT
    if char in "jJ":
        return S_IMAGINARY
    return DEAD


_NUMBER_STATES = frozenset(
    {S_ZERO, S_ZEROS, S_ZERO_US, S_LEADING_ZEROS, S_LEADING_ZEROS_US, S_DECIMAL, S_DECIMAL_US, S_POINT, S_FRACTION,
     S_FRACTION_US, S_EXPONENT, S_EXPONENT_SIGN, S_EXPONENT_DIGITS, S_EXPONENT_US, S_IMAGINARY}
    | set(S_RADIX_PREFIX.values()) | set(S_RADIX.values()) | set(S_RADIX_US.values())
)
_STRING_STATE_PARTS = {state: (quote, part) for quote, parts in S_STRING.items() for part, state in parts.items()}
STRING_STATES = frozenset(_STRING_STATE_PARTS)
_PREFIX_OF_STATE = {state: prefix for prefix, state in S_PREFIX.items()}
_OPERATOR_STATES = {state: text for text, state in S_OPERATOR.items()}


def _step_string(quote: str, part: str, char: str) -> int:
    states = S_STRING[quote]
    if part == "open":
        if char == quote:
            return states["empty"]
        return states["escape"] if char == "\\" else DEAD if char == "\n" else states["body"]
    if part == "body":
        if char == quote:
            return states["end"]
        return states["escape"] if char == "\\" else DEAD if char == "\n" else states["body"]
    if part == "escape":
        return states["body"]
    if part == "empty":
        return states["long"] if char == quote else DEAD
    if part in ("long", "long 1", "long 2"):
        if char == quote:
            return states["long 1"] if part == "long" else states["long 2"] if part == "long 1" else states["end"]
        return states["long escape"] if char == "\\" else states["long"]
    if part == "long escape":
        return states["long"]
    return DEAD


def step(state: int, char: str) -> int:
    """The automaton's transition; `DEAD` when `char` cannot extend the token."""
    found = _STEPS[state].get(char)
    if found is None:
        found = _step(state, char)
        if char < "\x80":  # a bounded table: every state's ASCII characters
            _STEPS[state][char] = found
    return found


def _step(state: int, char: str) -> int:
    """`step`, worked out: every character of every context is lexed, and this costs three table lookups."""
    if state == START:
        return _start(char)
    if state == S_NAME or state in _PREFIX_OF_STATE:
        if char in "'\"" and state != S_NAME:
            return S_STRING[char]["open"]
        if is_identifier_char(char):
            prefix = _PREFIX_OF_STATE.get(state)
            if prefix is not None and (prefix + char).lower() in STRING_PREFIXES:
                return S_PREFIX[(prefix + char).lower()]
            return S_NAME
        return DEAD
    if state in _NUMBER_STATES:
        return _step_number(state, char)
    parts = _STRING_STATE_PARTS.get(state)
    if parts is not None:
        return _step_string(parts[0], parts[1], char)
    if state == S_COMMENT:
        return DEAD if char == "\n" else S_COMMENT
    if state == S_BACKSLASH:
        return S_CONTINUATION if char == "\n" else DEAD
    if state == S_CONTINUATION:
        return DEAD
    if state == S_DOT_DOT:
        return S_OPERATOR["..."] if char == "." else DEAD
    text = _OPERATOR_STATES[state]
    if text == "." and char in _DIGITS:
        return S_FRACTION
    if text == "." and char == ".":
        return S_DOT_DOT
    return S_OPERATOR.get(text + char, DEAD)


# The transitions taken so far, by state (`DEAD`, -1, has none: stepping from it is an error).
_STEPS: list[dict[str, int] | None] = [{} for _ in range(N_STATES)] + [None]


def _start(char: str) -> int:
    if char in _DIGITS:
        return S_ZERO if char == "0" else S_DECIMAL
    if char in "'\"":
        return S_STRING[char]["open"]
    if char == "#":
        return S_COMMENT
    if char == "\\":
        return S_BACKSLASH
    operator = S_OPERATOR.get(char)
    if operator is not None:
        return operator
    if is_identifier_start(char):
        return S_PREFIX.get(char.lower(), S_NAME)
    return DEAD


def _terminals_from(state: int) -> frozenset[str]:
    """Terminals a token in this state can still become, ignoring keyword spelling (see `possible_terminals`)."""
    if state == S_NAME:
        return WORD_TERMINALS
    if state in _PREFIX_OF_STATE:
        return WORD_TERMINALS | {STRING}
    if state in _NUMBER_STATES:
        return frozenset({NUMBER})
    if state in _STRING_STATE_PARTS:
        return frozenset({STRING})
    if state in (S_COMMENT, S_BACKSLASH, S_CONTINUATION, START):
        return frozenset()
    if state == S_DOT_DOT:
        return frozenset({".", "..."})
    text = _OPERATOR_STATES[state]
    reachable = {op for op in OPERATORS if op.startswith(text)}
    return frozenset(reachable | ({NUMBER} if text == "." else set()))


TERMINALS_FROM: tuple[frozenset[str], ...] = tuple(_terminals_from(state) for state in range(N_STATES))

# States that stay the same on every character but a few: a scanner may jump to the next of those few.
SKIP_TO: dict[int, re.Pattern] = {S_COMMENT: re.compile(r"\n")}
for _quote, _states in S_STRING.items():
    SKIP_TO[_states["body"]] = re.compile(f"[{_quote}\\\\\n]")
    SKIP_TO[_states["long"]] = re.compile(f"[{_quote}\\\\]")
SKIPPED = frozenset({S_COMMENT, S_BACKSLASH, S_CONTINUATION})


def word_terminal(text: str) -> str:
    """The terminal of a complete identifier-like token."""
    if text in KEYWORDS or text in SOFT_KEYWORDS:
        return text
    return NAME


@lru_cache(maxsize=512)
def words_with_prefix(prefix: str) -> frozenset[str]:
    """Keyword terminals, and NAME, that an identifier starting with `prefix` can still become."""
    return frozenset(word for word in KEYWORDS | SOFT_KEYWORDS if word.startswith(prefix)) | {NAME}


def possible_terminals(state: int, text: str) -> frozenset[str]:
    """Terminals the token in progress (`text`, in `state`) can still become."""
    if state == S_NAME:
        return words_with_prefix(text)
    if state in _PREFIX_OF_STATE:
        return words_with_prefix(text) | {STRING}
    return TERMINALS_FROM[state]


def _shortest_texts() -> dict[str, str]:
    texts = {terminal: terminal for terminal in TERMINALS}
    texts.update({NAME: "x", NUMBER: "0", STRING: '""', NEWLINE: "\n", INDENT: "", DEDENT: ""})
    return texts


_ESCAPE_DIGITS = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def unfinished_escape(text: str) -> str:
    """What completes an escape that the string literal in progress `text` ends inside (`'\\u12` needs `00`,
    `'\\N` needs `{SP}`), so that CPython can decode it once it is closed; "" where it ends inside none."""
    opening = min(position for position in (text.find("'"), text.find('"')) if position >= 0)
    prefix = text[:opening].lower()
    if "r" in prefix:
        return ""
    position, end = opening + 1, len(text)
    while position < end:
        if text[position] != "\\" or position + 1 == end:
            position += 1
            continue
        kind = text[position + 1]
        position += 2
        if kind in _ESCAPE_DIGITS and (kind == "x" or "b" not in prefix):
            digits = 0
            while digits < _ESCAPE_DIGITS[kind] and position < end and text[position] in _HEX_DIGITS:
                digits, position = digits + 1, position + 1
            if position == end and digits < _ESCAPE_DIGITS[kind]:
                return "0" * (_ESCAPE_DIGITS[kind] - digits)
        elif kind == "N" and "b" not in prefix:
            if position == end:
                return "{SP}"
            closing = text.find("}", position)
            if text[position] == "{" and closing == -1:
                return "SP}" if position + 1 == end else "}"
    return ""


# A shortest text of each terminal. INDENT and DEDENT are written by a line's indentation, not by text of their own.
SHORTEST_TEXT: dict[str, str] = _shortest_texts()
_CLOSING_ALPHABET = ("'", '"', "0", "=", ".", "\n", "\\")


@lru_cache(maxsize=None)
def closing_text(state: int) -> str | None:
    """A shortest text that ends the token in progress in `state`, so that what follows starts a token of its own:
    an open string's quotes, a number's missing digit, a comment's or a continuation's line break. "" for a
    complete token; None if it cannot end (a dead state)."""
    if state == START:
        return ""
    if state in (S_COMMENT, S_BACKSLASH):
        return "\n"
    frontier = [(state, "")]
    seen = {state}
    while frontier:
        following = []
        for current, text in frontier:
            if KIND[current] is not None:
                return text
            for char in _CLOSING_ALPHABET:
                reached = step(current, char)
                if reached != DEAD and reached not in seen:
                    seen.add(reached)
                    following.append((reached, text + char))
        frontier = following
    return None
